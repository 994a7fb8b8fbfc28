package emit_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
	"github.com/gomase/gomase/rtl"
	"github.com/gomase/gomase/rtl/emit"
)

// labMLP is the hardware lab's graph (spec §8.1): the MLP quantized to
// fixed Q(8,3) everywhere, with hardware metadata for max parallelism par.
func labMLP(t *testing.T, par int) *ir.MaseGraph {
	t.Helper()
	m, err := models.NewMLP(0)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := emit.Prepare(m, emit.PrepareOptions{DummyIn: emit.LabInput(), Parallelism: par})
	if err != nil {
		t.Fatal(err)
	}
	return mg
}

// TestVerilogLabMLP checks the emitted files of the lab's MLP at
// parallelism 4 against spec §8.3–8.5 and §9 items 37–38.
func TestVerilogLabMLP(t *testing.T) {
	dir := t.TempDir()
	d, err := emit.Verilog(labMLP(t, 4), dir, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "top.sv"))
	if err != nil {
		t.Fatal(err)
	}
	top := string(b)
	if n := len(regexp.MustCompile(`(?m)^    parameter `).FindAllString(top, -1)); n != 49 || len(d.TopParams) != 49 {
		t.Errorf("top.sv declares %d parameters (design %d), want 49", n, len(d.TopParams))
	}
	for _, want := range []string{
		"module top #(\n    parameter fc1_DATA_IN_0_PRECISION_0 = 8,\n    parameter fc1_DATA_IN_0_PRECISION_1 = 3,\n",
		"    parameter fc1_WEIGHT_TENSOR_SIZE_DIM_0 = 4,\n    parameter fc1_WEIGHT_PARALLELISM_DIM_0 = 4,\n    parameter fc1_WEIGHT_TENSOR_SIZE_DIM_1 = 8,\n    parameter fc1_WEIGHT_PARALLELISM_DIM_1 = 4,\n",
		"    parameter relu_INPLACE = 0,\n",
		"    parameter DATA_IN_0_TENSOR_SIZE_DIM_0 = 4,\n",
		"    parameter DATA_OUT_0_PARALLELISM_DIM_1 = 1\n    /* verilator lint_on UNUSEDPARAM */\n) (\n",
		"    input  [DATA_IN_0_PRECISION_0-1:0] data_in_0 [DATA_IN_0_PARALLELISM_DIM_0*DATA_IN_0_PARALLELISM_DIM_1-1:0],\n",
		"logic [fc1_WEIGHT_PRECISION_0-1:0]  fc1_weight        [fc1_WEIGHT_PARALLELISM_DIM_0*fc1_WEIGHT_PARALLELISM_DIM_1-1:0];\n",
		"fixed_linear #(\n    .DATA_IN_0_PRECISION_0(fc1_DATA_IN_0_PRECISION_0),\n",
		") fc1_inst (\n    .clk(clk),\n    .rst(rst),\n    .data_in_0(fc1_data_in_0),\n",
		"fc1_weight_source #(\n    .WEIGHT_PRECISION_0(fc1_WEIGHT_PRECISION_0),\n",
		") fc1_bias_source_0 (\n",
		"    .INPLACE(relu_INPLACE),\n",
		") relu_inst (\n",
		"assign data_in_0_ready = fc1_data_in_0_ready;\nassign fc1_data_in_0_valid    = data_in_0_valid;\nassign fc1_data_in_0    = data_in_0;\n",
		"assign data_out_0_valid = relu_data_out_0_valid;\nassign relu_data_out_0_ready    = data_out_0_ready;\nassign data_out_0 = relu_data_out_0;\n",
		"assign fc1_data_out_0_ready  = relu_data_in_0_ready;\nassign relu_data_in_0_valid    = fc1_data_out_0_valid;\nassign relu_data_in_0 = fc1_data_out_0;\n",
	} {
		if !strings.Contains(top, want) {
			t.Errorf("top.sv lacks\n%s", want)
		}
	}
	// Item 38: weight ROM 2 lines of 32 hex digits, bias ROM 2 of 8.
	for name, digits := range map[string]int{"fc1_weight_rom.dat": 32, "fc1_bias_rom.dat": 8} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || len(lines[0]) != digits || len(lines[1]) != digits {
			t.Errorf("%s = %q, want 2 lines of %d hex digits", name, b, digits)
		}
	}
	// The weight ROM holds the layer's quantized weights, row-major, element 0 leftmost.
	l := d.Layers[0]
	want := string(rtl.ROMFile(rtl.LinearWeightWords(l.Weight, 4, 4), 8))
	if b, _ := os.ReadFile(filepath.Join(dir, "fc1_weight_rom.dat")); string(b) != want || !strings.HasPrefix(want, rtl.Hex(l.Weight[0][0], 8)+rtl.Hex(l.Weight[0][1], 8)) {
		t.Errorf("weight ROM %q, want %q", b, want)
	}
	for _, f := range append(append(append([]string{}, d.Sources...), d.ROMs...), d.Testbench, emit.DesignFile) {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if d.Input != (emit.Stream{Node: "fc1", Format: rtl.Format{Width: 8, Frac: 3}, Size: 4, Par0: 4, Par1: 1}) ||
		d.Output != (emit.Stream{Node: "relu", Format: rtl.Format{Width: 8, Frac: 3}, Size: 8, Par0: 4, Par1: 1}) {
		t.Errorf("ports %+v %+v", d.Input, d.Output)
	}
	back, err := emit.LoadDesign(dir)
	if err != nil || len(back.Layers) != 2 || back.Layers[0].Weight[3][2] != l.Weight[3][2] {
		t.Errorf("LoadDesign: %v", err)
	}
}

// TestReferenceItem39 runs spec §9 item 39 through Design.Reference.
func TestReferenceItem39(t *testing.T) {
	q := rtl.Format{Width: 8, Frac: 3}
	d := &emit.Design{Input: emit.Stream{Format: q, Size: 4, Par0: 4, Par1: 1}, Layers: []emit.Layer{
		{Node: "fc1", Op: "linear", In: q, Out: q, WeightFormat: &q, BiasFormat: &q,
			Weight: [][]int64{{4, -8, 2, 1}, {4, -8, 2, 1}}, Bias: []int64{2, 20}},
		{Node: "relu", Op: "relu", In: q, Out: q},
	}}
	y, err := d.Reference([]int64{3, 6, 0, 1})
	if err != nil || len(y) != 2 || y[0] != 0 || y[1] != 15 {
		t.Errorf("Reference = %v, %v; want [0 15] (linear -3 → relu 0, and 15)", y, err)
	}
	d.Layers[1] = emit.Layer{Node: "lrelu", Op: "leaky_relu", In: q, Out: q, SlopeValue: 1, SlopeFrac: 4}
	if y, _ := d.Reference([]int64{3, 6, 0, 1}); y[0] != -1 || y[1] != 15 {
		t.Errorf("leaky Reference = %v, want [-1 15] (floor(-3/16))", y)
	}
	if _, err := d.Reference([]int64{1}); err == nil {
		t.Error("a short input vector was accepted")
	}
}

// TestSimulateLabMLP simulates the lab's design at full rate (no stalls).
func TestSimulateLabMLP(t *testing.T) {
	// A directory relative to the working directory, as `mase sim d` gets.
	t.Chdir(t.TempDir())
	dir := "design"
	if _, err := emit.Verilog(labMLP(t, 4), dir, emit.Options{}); err != nil {
		t.Fatal(err)
	}
	res, err := emit.Simulate(context.Background(), dir, emit.SimOptions{Vectors: 300, Seed: 3, PValid: 100, PReady: 100, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Beats != 600 {
		t.Errorf("%d of %d vectors matched, %d beats: %v", res.Matched, res.Vectors, res.Beats, res.Mismatches)
	}
}

// geluNet is flatten → fc1 → F.gelu: an op the hardware library lacks.
type geluNet struct{ nn.Container }

func (m *geluNet) InputNames() []string    { return []string{"x"} }
func (m *geluNet) DefaultInputs() []string { return []string{"x"} }
func (m *geluNet) Forward(t *trace.Tracer, in map[string]*ir.Node) error {
	flat := t.FnKw("flatten", []any{in["x"]}, map[string]any{"start_dim": 1, "end_dim": -1})
	t.Output(t.Fn("gelu", t.Module("fc1", flat)))
	return nil
}

// TestUnsupportedOp: a graph with an op outside the library fails, naming
// the node and the op — in the metadata pass (Prepare) and, for a graph
// whose metadata claims it anyway, in Verilog.
func TestUnsupportedOp(t *testing.T) {
	m, err := nn.NewModel(&geluNet{nn.Container{Type: "GeluNet", Kids: []nn.Named{{Name: "fc1", Module: nn.NewLinear(4, 8, true)}}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = emit.Prepare(m, emit.PrepareOptions{DummyIn: emit.LabInput()})
	if err == nil || !strings.Contains(err.Error(), "node gelu") || !strings.Contains(err.Error(), `"gelu"`) {
		t.Errorf("Prepare of flatten → fc1 → gelu: %v; want an error naming node gelu and op gelu", err)
	}
	mg := labMLP(t, 4)
	relu := mg.Graph.Node("relu")
	relu.Meta.Common.MaseOp, relu.Meta.Hardware.Module = "gelu", "fixed_gelu"
	_, err = emit.Verilog(mg, t.TempDir(), emit.Options{})
	if err == nil || !strings.Contains(err.Error(), "node relu: op gelu (module fixed_gelu)") {
		t.Errorf("Verilog with op gelu: %v", err)
	}
	mg = labMLP(t, 4)
	mg.Graph.Node("fc1").Meta.Hardware.VerilogParam["WEIGHT_PRECISION_0"] = 2.5
	if _, err = emit.Verilog(mg, t.TempDir(), emit.Options{}); err == nil || !strings.Contains(err.Error(), "WEIGHT_PRECISION_0 = 2.5") {
		t.Errorf("Verilog with a fractional parameter: %v", err)
	}
}

// TestLintTop runs verilator --lint-only -Wall on the emitted top.sv with
// its parameter sources and library components: no warnings.
func TestLintTop(t *testing.T) {
	verilator, err := exec.LookPath("verilator")
	if err != nil {
		t.Fatal("verilator is not on PATH (make setup installs it)")
	}
	for _, act := range []string{"relu", "leaky_relu"} {
		m, err := models.NewMLPWith(0, models.MLPOptions{Activation: act})
		if err != nil {
			t.Fatal(err)
		}
		mg, err := emit.Prepare(m, emit.PrepareOptions{DummyIn: emit.LabInput()})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		d, err := emit.Verilog(mg, dir, emit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(verilator, append([]string{"--lint-only", "-Wall", "--top-module", "top"}, d.Sources...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("%s: verilator --lint-only -Wall top.sv: %v\n%s", act, err, out)
		}
	}
}
