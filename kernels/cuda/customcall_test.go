package cuda

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"

	xlashapes "github.com/gomlx/go-xla/types/shapes"

	"github.com/gomlx/go-xla/stablehlo"
)

// render emits call into a StableHLO program as go-xla does and returns
// its text.
func render(t *testing.T, call Call) string {
	t.Helper()
	b := stablehlo.New(t.Name())
	fn := b.Main()
	var ins []*stablehlo.Value
	for _, s := range call.Operands {
		v, err := fn.Input(xlashapes.Make(s.DType, s.Dimensions...))
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, v)
	}
	var results []xlashapes.Shape
	for _, s := range call.Results {
		results = append(results, xlashapes.Make(s.DType, s.Dimensions...))
	}
	outs, err := stablehlo.CustomCallV2(call.Target, call.Config, ins, Layouts(call.Operands), results, Layouts(call.Results))
	if err != nil {
		t.Fatal(err)
	}
	if err := fn.Return(outs...); err != nil {
		t.Fatal(err)
	}
	mlir, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return string(mlir)
}

// TestMXInt8CallEmitted renders the MXINT8 custom call as go-xla emits it
// into a StableHLO program and checks its target, operands, layouts and
// payload.
func TestMXInt8CallEmitted(t *testing.T) {
	call, err := MXInt8Call(1000, 32)
	if err != nil {
		t.Fatal(err)
	}
	text := render(t, call)
	for _, want := range []string{
		`"stablehlo.custom_call"(%arg0, %arg1)`,
		`call_target_name = "gomase_mxint8_dequantize"`,
		`backend_config = "n=1000 group_size=32"`,
		`api_version = 2 : i32`,
		`operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>]`,
		`result_layouts = [dense<0> : tensor<1xindex>]`,
		`(tensor<1000xi8>, tensor<32xui8>) -> tensor<1000xbf16>`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the program lacks %q:\n%s", want, text)
		}
	}
	n, gs, err := ParseMXInt8Config(call.Config)
	if err != nil || n != 1000 || gs != 32 {
		t.Errorf("payload round trip: %d, %d, %v", n, gs, err)
	}
}

func TestMXInt8CallErrors(t *testing.T) {
	for _, tc := range []struct{ n, gs int }{{0, 32}, {10, 24}, {10, 1024}, {10, 4}} {
		if _, err := MXInt8Call(tc.n, tc.gs); err == nil || !strings.Contains(err.Error(), "allowed:") {
			t.Errorf("MXInt8Call(%d, %d): %v", tc.n, tc.gs, err)
		}
	}
	for _, cfg := range []string{"", "n=10", "n=10 group_size=24", "group_size=32 n=10"} {
		if _, _, err := ParseMXInt8Config(cfg); err == nil {
			t.Errorf("payload %q accepted", cfg)
		}
	}
}

// TestSDPACallEmitted renders the SDPA custom call, with and without a
// mask, and reads its payload back.
func TestSDPACallEmitted(t *testing.T) {
	c := SDPAConfig{Batch: 2, Heads: 4, SeqQ: 100, SeqK: 77, HeadDim: 64, DType: dtypes.Float16, MaskDims: []int{2, 1, 1, 77}}
	call, err := SDPACall(c)
	if err != nil {
		t.Fatal(err)
	}
	text := render(t, call)
	for _, want := range []string{
		`"stablehlo.custom_call"(%arg0, %arg1, %arg2, %arg3)`,
		`call_target_name = "gomase_sdpa"`,
		`backend_config = "b=2 h=4 sq=100 sk=77 d=64 dtype=f16 scale=0x3e000000 mask=77,0,0,1"`,
		`api_version = 2 : i32`,
		`operand_layouts = [dense<[3, 2, 1, 0]> : tensor<4xindex>, dense<[3, 2, 1, 0]> : tensor<4xindex>, dense<[3, 2, 1, 0]> : tensor<4xindex>, dense<[3, 2, 1, 0]> : tensor<4xindex>]`,
		`result_layouts = [dense<[3, 2, 1, 0]> : tensor<4xindex>]`,
		`(tensor<2x4x100x64xf16>, tensor<2x4x77x64xf16>, tensor<2x4x77x64xf16>, tensor<2x1x1x77xf32>) -> tensor<2x4x100x64xf16>`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the program lacks %q:\n%s", want, text)
		}
	}
	got, err := ParseSDPAConfig(call.Config)
	c.Scale = 0.125
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("payload round trip: %+v, %v (want %+v)", got, err, c)
	}
	// No mask, float32, a scale with all its bits.
	c = SDPAConfig{Batch: 1, Heads: 1, SeqQ: 3, SeqK: 5, HeadDim: 128, DType: dtypes.Float32, Scale: 0.1}
	call, err = SDPACall(c)
	if err != nil {
		t.Fatal(err)
	}
	text = render(t, call)
	for _, want := range []string{
		`backend_config = "b=1 h=1 sq=3 sk=5 d=128 dtype=f32 scale=0x3dcccccd mask=none"`,
		`(tensor<1x1x3x128xf32>, tensor<1x1x5x128xf32>, tensor<1x1x5x128xf32>) -> tensor<1x1x3x128xf32>`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the program lacks %q:\n%s", want, text)
		}
	}
	if got, err := ParseSDPAConfig(call.Config); err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("payload round trip: %+v, %v (want %+v)", got, err, c)
	}
	// Full masks: strides 0 on the broadcast axes.
	for _, tc := range []struct {
		dims []int
		want string
	}{{[]int{1, 1, 3, 5}, "mask=0,0,5,1"}, {[]int{2, 4, 3, 5}, "mask=60,15,5,1"}, {[]int{1, 4, 3, 5}, "mask=0,15,5,1"}, {[]int{2, 1, 3, 5}, "mask=15,0,5,1"}} {
		c := SDPAConfig{Batch: 2, Heads: 4, SeqQ: 3, SeqK: 5, HeadDim: 32, DType: dtypes.Float32, MaskDims: tc.dims}
		call, err := SDPACall(c)
		if err != nil || !strings.HasSuffix(call.Config, tc.want) {
			t.Errorf("mask %v: %q, %v (want %s)", tc.dims, call.Config, err, tc.want)
			continue
		}
		if got, err := ParseSDPAConfig(call.Config); err != nil || !reflect.DeepEqual(got.MaskDims, tc.dims) {
			t.Errorf("mask %v read back as %v, %v", tc.dims, got.MaskDims, err)
		}
	}
}

func TestSDPACallErrors(t *testing.T) {
	ok := SDPAConfig{Batch: 2, Heads: 4, SeqQ: 3, SeqK: 5, HeadDim: 64, DType: dtypes.Float32}
	for _, edit := range []func(*SDPAConfig){
		func(c *SDPAConfig) { c.Batch = 0 },
		func(c *SDPAConfig) { c.SeqK = 0 },
		func(c *SDPAConfig) { c.Batch, c.Heads = 300, 300 },
		func(c *SDPAConfig) { c.HeadDim = 0 },
		func(c *SDPAConfig) { c.HeadDim = 129 },
		func(c *SDPAConfig) { c.DType = dtypes.BFloat16 },
		func(c *SDPAConfig) { c.Scale = float32(math.Inf(1)) },
		func(c *SDPAConfig) { c.MaskDims = []int{2, 1, 5} },
		func(c *SDPAConfig) { c.MaskDims = []int{2, 2, 1, 5} },
	} {
		c := ok
		edit(&c)
		_, err := SDPACall(c)
		if err == nil || !strings.Contains(err.Error(), "allowed:") || strings.Contains(err.Error(), "\n") {
			t.Errorf("SDPACall(%+v): %v", c, err)
		}
	}
	for _, p := range []string{
		"",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=bf16 scale=0x3e000000 mask=none",
		"b=2 h=4 sq=3 sk=5 d=256 dtype=f32 scale=0x3e000000 mask=none",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x00000000 mask=none",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=7,0,0,1",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=5,0,0",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3e000000 mask=none trailing",
		"b=2 h=4 sq=3 sk=5 d=64 dtype=f32 scale=0x3E000000 mask=none",
	} {
		if _, err := ParseSDPAConfig(p); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("payload %q: %v", p, err)
		}
	}
}
