package passes_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
)

// labFixed is configs/tests/quantize/fixed.toml's [passes.quantize]: Q5.3
// everywhere, by type, as the default config.
const labFixed = `by = "type"
[default.config]
name = "fixed"
data_in_width = 8
data_in_frac_width = 3
weight_width = 8
weight_frac_width = 3
bias_width = 8
bias_frac_width = 3
data_out_width = 8
data_out_frac_width = 3
floor = true
`

// labMLP runs the lab's steps up to the quantize pass (spec §8.1).
func labMLP(t *testing.T, opts models.MLPOptions) *ir.MaseGraph {
	t.Helper()
	m, err := models.NewMLPWith(0, opts)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	mg, _, _ = passes.InitMetadata(mg)
	x := tensors.FromFlatDataAndDimensions([]float32{0.3, -1.2, 0.7, 2.1}, 1, 2, 2)
	if mg, _, err = passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: map[string]*tensors.Tensor{"x": x}}); err != nil {
		t.Fatal(err)
	}
	qa, err := passes.QuantizeArgsFromTOML([]byte(labFixed))
	if err != nil {
		t.Fatal(err)
	}
	if mg, _, err = passes.QuantizeTransform(mg, qa); err != nil {
		t.Fatal(err)
	}
	return mg
}

func dump(ps []passes.VerilogParam) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s=%v\n", p.Name, p.Value)
	}
	return b.String()
}

// Spec §9 item 36.
func TestHardwareMetadataLabMLP(t *testing.T) {
	mg := labMLP(t, models.MLPOptions{})
	mg, info, err := passes.AddHardwareMetadata(mg, passes.HardwareArgs{})
	if err != nil {
		t.Fatal(err)
	}
	implicit := map[string]bool{"x": true, "flatten": true, "output": true, "fc1": false, "relu": false}
	for _, n := range mg.Nodes() {
		want, ok := implicit[n.Name]
		if !ok {
			t.Fatalf("unexpected node %s", n.Name)
		}
		if n.Meta.Hardware.IsImplicit != want {
			t.Errorf("%s: is_implicit %v, want %v", n.Name, n.Meta.Hardware.IsImplicit, want)
		}
	}
	if gm := mg.Graph.Meta; fmt.Sprint(gm.NodesIn, gm.NodesOut) != "[fc1] [relu]" {
		t.Errorf("nodes_in/out %v %v", gm.NodesIn, gm.NodesOut)
	}
	if fmt.Sprint(info["verilog_sources"]) != "[fixed_cast.sv fixed_dot_product.sv skid_buffer.sv fixed_param_source.sv fixed_linear.sv fixed_relu.sv]" {
		t.Errorf("verilog_sources %v", info["verilog_sources"])
	}
	fc1 := mg.Graph.Node("fc1").Meta.Hardware
	if fc1.Toolchain != "INTERNAL_RTL" || fc1.Module != "fixed_linear" || fc1.DeviceID != -1 ||
		fmt.Sprint(fc1.Interface) != "map[bias:map[storage:BRAM transpose:false] weight:map[storage:BRAM transpose:false]]" {
		t.Errorf("fc1 hardware %+v", fc1)
	}
	if fmt.Sprint(fc1.MaxParallelism, fc1.Parallelism) != "[4 4 4 4] map[bias:[4 1] data_in_0:[4 1] data_out_0:[4 1] weight:[4 4]]" {
		t.Errorf("fc1 parallelism %v %v", fc1.MaxParallelism, fc1.Parallelism)
	}
	relu := mg.Graph.Node("relu").Meta.Hardware
	if relu.Module != "fixed_relu" || fmt.Sprint(relu.Interface) != "map[inplace:map[]]" || relu.VerilogParam["INPLACE"] != 0 ||
		fmt.Sprint(relu.DependenceFiles) != "[fixed_cast.sv fixed_relu.sv]" {
		t.Errorf("relu hardware %+v", relu)
	}
}

const fc1Params4 = `DATA_IN_0_PRECISION_0=8
DATA_IN_0_PRECISION_1=3
DATA_IN_0_TENSOR_SIZE_DIM_0=4
DATA_IN_0_PARALLELISM_DIM_0=4
DATA_IN_0_TENSOR_SIZE_DIM_1=1
DATA_IN_0_PARALLELISM_DIM_1=1
WEIGHT_PRECISION_0=8
WEIGHT_PRECISION_1=3
WEIGHT_TENSOR_SIZE_DIM_0=4
WEIGHT_PARALLELISM_DIM_0=4
WEIGHT_TENSOR_SIZE_DIM_1=8
WEIGHT_PARALLELISM_DIM_1=4
BIAS_PRECISION_0=8
BIAS_PRECISION_1=3
BIAS_TENSOR_SIZE_DIM_0=8
BIAS_PARALLELISM_DIM_0=4
BIAS_TENSOR_SIZE_DIM_1=1
BIAS_PARALLELISM_DIM_1=1
DATA_OUT_0_PRECISION_0=8
DATA_OUT_0_PRECISION_1=3
DATA_OUT_0_TENSOR_SIZE_DIM_0=8
DATA_OUT_0_PARALLELISM_DIM_0=4
DATA_OUT_0_TENSOR_SIZE_DIM_1=1
DATA_OUT_0_PARALLELISM_DIM_1=1
`

const reluParams4 = `DATA_IN_0_PRECISION_0=8
DATA_IN_0_PRECISION_1=3
DATA_IN_0_TENSOR_SIZE_DIM_0=8
DATA_IN_0_PARALLELISM_DIM_0=4
DATA_IN_0_TENSOR_SIZE_DIM_1=1
DATA_IN_0_PARALLELISM_DIM_1=1
INPLACE=0
DATA_OUT_0_PRECISION_0=8
DATA_OUT_0_PRECISION_1=3
DATA_OUT_0_TENSOR_SIZE_DIM_0=8
DATA_OUT_0_PARALLELISM_DIM_0=4
DATA_OUT_0_TENSOR_SIZE_DIM_1=1
DATA_OUT_0_PARALLELISM_DIM_1=1
`

const leakyParams4 = `DATA_IN_0_PRECISION_0=8
DATA_IN_0_PRECISION_1=3
DATA_IN_0_TENSOR_SIZE_DIM_0=8
DATA_IN_0_PARALLELISM_DIM_0=4
DATA_IN_0_TENSOR_SIZE_DIM_1=1
DATA_IN_0_PARALLELISM_DIM_1=1
INPLACE=0
NEGATIVE_SLOPE_PRECISION_0=8
NEGATIVE_SLOPE_PRECISION_1=12
NEGATIVE_SLOPE_VALUE=41
DATA_OUT_0_PRECISION_0=8
DATA_OUT_0_PRECISION_1=3
DATA_OUT_0_TENSOR_SIZE_DIM_0=8
DATA_OUT_0_PARALLELISM_DIM_0=4
DATA_OUT_0_TENSOR_SIZE_DIM_1=1
DATA_OUT_0_PARALLELISM_DIM_1=1
`

// topInterface4 is the unprefixed part of the top level. MASE has
// DATA_IN_0_TENSOR_SIZE_DIM_0=8 here (relu overwrites fc1's 4, spec §9
// item 37); gomase takes DATA_IN_* from the input node fc1.
const topInterface4 = `DATA_IN_0_PRECISION_0=8
DATA_IN_0_PRECISION_1=3
DATA_IN_0_TENSOR_SIZE_DIM_0=4
DATA_IN_0_PARALLELISM_DIM_0=4
DATA_IN_0_TENSOR_SIZE_DIM_1=1
DATA_IN_0_PARALLELISM_DIM_1=1
DATA_OUT_0_PRECISION_0=8
DATA_OUT_0_PRECISION_1=3
DATA_OUT_0_TENSOR_SIZE_DIM_0=8
DATA_OUT_0_PARALLELISM_DIM_0=4
DATA_OUT_0_TENSOR_SIZE_DIM_1=1
DATA_OUT_0_PARALLELISM_DIM_1=1
`

func prefixed(prefix, params string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(params, "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// Spec §9 item 37, with gomase's DATA_IN fix; and the leaky variant.
func TestHardwareVerilogParams(t *testing.T) {
	for _, c := range []struct {
		opts       models.MLPOptions
		act        string
		actParams  string
		count      int
		actModule  string
		actDepends string
	}{
		{models.MLPOptions{}, "relu", reluParams4, 49, "fixed_relu", "[fixed_cast.sv fixed_relu.sv]"},
		{models.MLPOptions{Activation: "leaky_relu"}, "leaky_relu", leakyParams4, 52, "fixed_leaky_relu", "[fixed_cast.sv fixed_leaky_relu.sv]"},
	} {
		mg := labMLP(t, c.opts)
		mg, _, err := passes.AddHardwareMetadata(mg, passes.HardwareArgs{Parallelism: 4})
		if err != nil {
			t.Fatal(err)
		}
		if got := dump(passes.OrderedVerilogParams(mg.Graph.Node("fc1"))); got != fc1Params4 {
			t.Errorf("%s: fc1 params\n%s\nwant\n%s", c.act, got, fc1Params4)
		}
		a := mg.Graph.Node(c.act)
		if got := dump(passes.OrderedVerilogParams(a)); got != c.actParams {
			t.Errorf("%s params\n%s\nwant\n%s", c.act, got, c.actParams)
		}
		if hw := a.Meta.Hardware; hw.Module != c.actModule || fmt.Sprint(hw.DependenceFiles) != c.actDepends {
			t.Errorf("%s: module %s %v", c.act, hw.Module, hw.DependenceFiles)
		}
		top, err := passes.TopVerilogParams(mg)
		if err != nil {
			t.Fatal(err)
		}
		want := prefixed("fc1_", fc1Params4) + prefixed(c.act+"_", c.actParams) + topInterface4
		if got := dump(top); got != want {
			t.Errorf("%s: top params\n%s\nwant\n%s", c.act, got, want)
		}
		// MASE counts 49 for the relu MLP too (24 + 13 + 12): the same
		// keys, only DATA_IN_0_TENSOR_SIZE_DIM_0 differs (4 here, 8 in MASE).
		if len(top) != c.count {
			t.Errorf("%s: %d top-level parameters, want %d", c.act, len(top), c.count)
		}
	}
}

func TestHardwareParallelism(t *testing.T) {
	for _, p := range []int{1, 2, 4, 8} {
		mg := labMLP(t, models.MLPOptions{Activation: "leaky_relu", NegativeSlope: 0.125})
		mg, _, err := passes.AddHardwareMetadata(mg, passes.HardwareArgs{Parallelism: p})
		if err != nil {
			t.Fatal(err)
		}
		fc1 := mg.Graph.Node("fc1").Meta.Hardware.VerilogParam
		pk, pn := min(p, 4), min(p, 8)
		for k, want := range map[string]int{"DATA_IN_0_PARALLELISM_DIM_0": pk, "WEIGHT_PARALLELISM_DIM_0": pk, "WEIGHT_PARALLELISM_DIM_1": pn,
			"BIAS_PARALLELISM_DIM_0": pn, "DATA_OUT_0_PARALLELISM_DIM_0": pn, "DATA_IN_0_PARALLELISM_DIM_1": 1, "DATA_OUT_0_PARALLELISM_DIM_1": 1} {
			if fc1[k] != want {
				t.Errorf("p=%d: fc1 %s = %v, want %d", p, k, fc1[k], want)
			}
		}
		act := mg.Graph.Node("leaky_relu").Meta.Hardware.VerilogParam
		if act["DATA_IN_0_PARALLELISM_DIM_0"] != pn || act["DATA_OUT_0_PARALLELISM_DIM_0"] != pn ||
			act["NEGATIVE_SLOPE_VALUE"] != 1 || act["NEGATIVE_SLOPE_PRECISION_1"] != 3 {
			t.Errorf("p=%d: leaky_relu %v", p, act)
		}
	}
	// MASE's pass_args through the pipeline step.
	p, err := passes.Standard().Pipeline(passes.AddHardwareMetadataPass)
	if err != nil {
		t.Fatal(err)
	}
	mg := labMLP(t, models.MLPOptions{})
	if mg, _, err = p.Run(mg, map[string]any{passes.AddHardwareMetadataPass: map[string]any{"max_parallelism": []any{2.0, 2.0, 2.0, 2.0}}}); err != nil {
		t.Fatal(err)
	}
	if v := mg.Graph.Node("relu").Meta.Hardware.VerilogParam["DATA_OUT_0_PARALLELISM_DIM_0"]; v != 2 {
		t.Errorf("pipeline max_parallelism 2: %v", v)
	}
	if _, err := passes.ParseHardwareArgs(map[string]any{"paralelism": 4}); err == nil || !strings.Contains(err.Error(), `unknown argument "paralelism"`) {
		t.Errorf("bad key: %v", err)
	}
	if _, err := passes.ParseHardwareArgs(map[string]any{"parallelism": -1}); err == nil {
		t.Error("no error for parallelism -1")
	}
	if _, err := passes.Standard().Lookup("add_hw"); err == nil || !strings.Contains(err.Error(), "add_hardware_metadata") {
		t.Errorf("unknown pass: %v", err)
	}
}

func TestHardwareMetadataErrors(t *testing.T) {
	mg := labMLP(t, models.MLPOptions{})
	mg.Graph.Node("relu").Meta.Common.MaseOp = "tanh"
	if _, _, err := passes.AddHardwareMetadata(mg, passes.HardwareArgs{}); err == nil || !strings.Contains(err.Error(), `node relu: op "tanh"`) {
		t.Errorf("unsupported op: %v", err)
	}
	// Not quantized: float metadata is an error naming node and argument.
	m, _ := models.NewMLP(0)
	fmg, _ := mase.NewMaseGraph(m, nil)
	fmg, _, _ = passes.InitMetadata(fmg)
	x := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4}, 1, 2, 2)
	fmg, _, _ = passes.AddCommonMetadata(fmg, passes.CommonMetadataArgs{DummyIn: map[string]*tensors.Tensor{"x": x}})
	if _, _, err := passes.AddHardwareMetadata(fmg, passes.HardwareArgs{}); err == nil || !strings.Contains(err.Error(), "node fc1 (op linear): data_in_0 is float [32]") {
		t.Errorf("float graph: %v", err)
	}
	// A failed pass leaves the hardware metadata untouched.
	if fmg.Graph.Node("fc1").Meta.Hardware.Module != "" {
		t.Error("failed pass wrote metadata")
	}
}

// Spec §9 item 40's slope, and the conversion of torch's default.
func TestFixedSlope(t *testing.T) {
	for _, c := range []struct {
		slope       float64
		width       int
		value, frac int
	}{
		{1.0 / 16, 8, 1, 4}, {0.01, 8, 41, 12}, {0, 8, 0, 0}, {-0.5, 8, -1, 1}, {0.2, 8, 51, 8}, {13.0 / 32, 8, 13, 5}, {100, 8, 100, 0},
	} {
		v, f, err := passes.FixedSlope(c.slope, c.width)
		if err != nil || int(v) != c.value || f != c.frac {
			t.Errorf("FixedSlope(%v, %d) = %d, %d, %v; want %d, %d", c.slope, c.width, v, f, err, c.value, c.frac)
		}
		if err == nil && c.slope != 0 && math.Abs(float64(v)/math.Ldexp(1, f)-c.slope) > math.Ldexp(1, -f) {
			t.Errorf("FixedSlope(%v) = %d/2^%d is not within one step", c.slope, v, f)
		}
	}
	if _, _, err := passes.FixedSlope(200, 8); err == nil {
		t.Error("no error for a slope of 200 in 8 bits")
	}
}

// The leaky MLP: quantize gives relu/leaky_relu the config's fixed-point
// format (metadata only), and the float run matches a float64 reference.
func TestQuantizeLeakyMLP(t *testing.T) {
	mg := labMLP(t, models.MLPOptions{Activation: "leaky_relu", NegativeSlope: 0.1})
	n := mg.Graph.Node("leaky_relu")
	if n == nil || n.Meta.Common.MaseOp != "leaky_relu" || n.Meta.Common.MaseType != "module_related_func" {
		t.Fatalf("leaky_relu node %v", n)
	}
	for _, a := range []string{"data_in_0", "data_out_0"} {
		info := n.Meta.Common.Args.Get(a)
		if info == nil {
			info = n.Meta.Common.Results.Get(a)
		}
		if info.Type != "fixed" || fmt.Sprint(info.Precision) != "[8 3]" {
			t.Errorf("%s: %s %v", a, info.Type, info.Precision)
		}
	}
	if s := n.Meta.Common.Args.Get("negative_slope"); s == nil || s.Value != 0.1 {
		t.Errorf("negative_slope arg %+v", s)
	}
	// A non-fixed-point format for the activation is an error.
	qa := passes.QuantizeArgs{By: "type", Entries: []passes.QuantizeEntry{{Key: "leaky_relu", Config: map[string]any{"name": "minifloat_ieee", "data_in_width": 8}}}}
	if _, _, err := passes.QuantizeTransform(mg, qa); err == nil || !strings.Contains(err.Error(), "only to fixed point") {
		t.Errorf("minifloat leaky_relu: %v", err)
	}
	qa = passes.QuantizeArgs{By: "type", Entries: []passes.QuantizeEntry{{Key: "relu", Config: map[string]any{"name": "integer", "data_in_width": 8}}}}
	if _, _, err := passes.QuantizeTransform(labMLP(t, models.MLPOptions{}), qa); err == nil || !strings.Contains(err.Error(), "data_in_frac_width") {
		t.Errorf("missing frac width: %v", err)
	}

	// Float run against float64: y = leaky(W·x + b).
	m, _ := models.NewMLPWith(3, models.MLPOptions{Activation: "leaky_relu", NegativeSlope: 0.1})
	fmg, err := mase.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{0.5, -1, 2, -3}
	out, err := execute.Run(fmg, map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(x, 1, 2, 2)})
	if err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[float32](out[0])
	w, _, _ := m.ParamValues("fc1.weight")
	b, _, _ := m.ParamValues("fc1.bias")
	negatives := 0
	for o := range 8 {
		acc := float64(b[o])
		for i := range 4 {
			acc += float64(w[o*4+i]) * float64(x[i])
		}
		want := acc
		if acc < 0 {
			want, negatives = 0.1*acc, negatives+1
		}
		if math.Abs(float64(got[o])-want) > 1e-5 {
			t.Errorf("y[%d] = %v, want %v", o, got[o], want)
		}
	}
	if negatives == 0 || negatives == 8 {
		t.Logf("only %d negative pre-activations", negatives)
	}
}
