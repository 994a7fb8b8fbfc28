package cuda

import (
	"strings"
	"testing"

	xlashapes "github.com/gomlx/go-xla/types/shapes"

	"github.com/gomlx/go-xla/stablehlo"
)

// TestMXInt8CallEmitted renders the MXINT8 custom call as go-xla emits it
// into a StableHLO program and checks its target, operands, layouts and
// payload.
func TestMXInt8CallEmitted(t *testing.T) {
	call, err := MXInt8Call(1000, 32)
	if err != nil {
		t.Fatal(err)
	}
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
	text := string(mlir)
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
