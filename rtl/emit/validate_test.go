package emit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gomase/gomase/rtl"
)

// smallDesign is a valid two-layer design: a 2 → 3 Linear, then ReLU.
func smallDesign() *Design {
	q := rtl.Format{Width: 8, Frac: 3}
	wf, bf := rtl.Format{Width: 8, Frac: 4}, rtl.Format{Width: 8, Frac: 4}
	return &Design{
		Top:    "top",
		Input:  Stream{Node: "fc1", Format: q, Size: 2, Par0: 2, Par1: 1},
		Output: Stream{Node: "relu", Format: q, Size: 3, Par0: 3, Par1: 1},
		Layers: []Layer{
			{Node: "fc1", Op: "linear", Module: "fixed_linear", In: q, Out: q, InSize: 2, OutSize: 3, WeightFormat: &wf, BiasFormat: &bf,
				Weight: [][]int64{{1, -2}, {3, 4}, {-5, 6}}, Bias: []int64{0, 1, -1}, Params: []Param{{Name: "DATA_IN_0_PRECISION_0", Value: 8}}},
			{Node: "relu", Op: "relu", Module: "fixed_relu", In: q, Out: q, InSize: 3, OutSize: 3},
		},
		Sources: []string{"top.sv", "rtl/fixed_linear.sv"}, Testbench: "top_tb.sv", ROMs: []string{"fc1_weight.dat"},
	}
}

// TestValidateDesign: every doctored field of a design.json is refused by
// name before the Go model or the simulator reads it.
func TestValidateDesign(t *testing.T) {
	if err := smallDesign().Validate(); err != nil {
		t.Fatalf("the valid design: %v", err)
	}
	if y, err := smallDesign().Reference([]int64{8, -8}); err != nil || len(y) != 3 {
		t.Fatalf("Reference = %v, %v", y, err)
	}
	for _, c := range []struct {
		name   string
		change func(d *Design)
		want   string
	}{
		{"width 64", func(d *Design) { d.Input.Format.Width = 64 }, "input: format Q(64,3) (allowed: width 1 to 32"},
		{"width 0", func(d *Design) { d.Layers[0].Out.Width = 0 }, "output: format Q(0,3)"},
		{"size −1", func(d *Design) { d.Input.Size = -1 }, "input size -1 is out of range"},
		{"size 10¹⁰", func(d *Design) { d.Layers[0].OutSize = 1e10 }, "out_size 10000000000 is out of range"},
		{"in_size against the weights", func(d *Design) { d.Layers[0].InSize = 3 }, "in_size 3, but the stream before it carries 2"},
		{"a duplicated layer", func(d *Design) { d.Layers = append(d.Layers, d.Layers[1]) }, "the node is listed twice"},
		{"parallelism −1", func(d *Design) { d.Output.Par0 = -1 }, "output parallelism -1 × 1 for 3 elements"},
		{"a parallelism that does not divide", func(d *Design) { d.Input.Par0 = 3 }, "input parallelism 3 × 1 for 2 elements"},
		{"a short weight row", func(d *Design) { d.Layers[0].Weight[1] = []int64{3} }, "weight row 1 has 1 values for in_size 2"},
		{"a weight outside its format", func(d *Design) { d.Layers[0].Weight[2][0] = 1000 }, "weight [2][0] = 1000 is outside its format"},
		{"no bias format", func(d *Design) { d.Layers[0].BiasFormat = nil }, "without weight_format or bias_format"},
		{"an unknown op", func(d *Design) { d.Layers[1].Op = "gelu" }, `op "gelu" has no Go model`},
		{"relu that changes size", func(d *Design) { d.Layers[1].OutSize = 4; d.Output.Size = 4; d.Output.Par0 = 4 }, "relu maps 3 elements to 4"},
		{"last layer against the port", func(d *Design) { d.Output.Size = 6; d.Output.Par0 = 6 }, "the last layer gives 3 elements"},
		{"a path out of the folder", func(d *Design) { d.Sources = append(d.Sources, "../../etc/passwd") }, `file "../../etc/passwd" is not a path inside`},
		{"an absolute path", func(d *Design) { d.Testbench = "/tmp/tb.sv" }, `file "/tmp/tb.sv" is not a path inside`},
		{"a top that is not an identifier", func(d *Design) { d.Top = "top; $finish" }, "is not a Verilog identifier"},
		{"no layers", func(d *Design) { d.Layers = nil }, "0 layers (allowed: 1 to 1024)"},
		{"sums past 64 bits", func(d *Design) {
			wide := rtl.Format{Width: 32, Frac: 0}
			d.Input.Format, d.Layers[0].In, d.Layers[0].WeightFormat = wide, wide, &wide
		}, "its sums need 70 bits, more than the model's 62-bit accumulator"},
	} {
		d := smallDesign()
		c.change(d)
		if err := d.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestLoadDesignRefusesHostileFiles: design.json as a FIFO, /dev/zero or a
// doctored file is refused in one line, without blocking or reading it whole.
func TestLoadDesignRefusesHostileFiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(path string) error
		want  string
	}{
		{"a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file"},
		{"/dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file"},
		{"a doctored size", func(p string) error {
			d := smallDesign()
			d.Layers[0].OutSize = -1
			b, _ := json.Marshal(d)
			return os.WriteFile(p, b, 0o644)
		}, "out_size -1 is out of range"},
	} {
		dir := t.TempDir()
		if err := c.plant(filepath.Join(dir, DesignFile)); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadDesign(dir); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: LoadDesign = %v, want one line with %q", c.name, err, c.want)
		}
	}
}

// FuzzDesignJSON: any design.json either fails to decode, is refused by
// Validate, or runs through the Go model without a panic.
func FuzzDesignJSON(f *testing.F) {
	good, err := json.Marshal(smallDesign())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"top":"top","layers":[{"op":"linear"}]}`))
	f.Add([]byte(strings.Replace(string(good), `"Width":8`, `"Width":64`, 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Design
		if json.Unmarshal(b, &d) != nil || d.Validate() != nil {
			return
		}
		x := make([]int64, d.Input.Size)
		for i := range x {
			x[i] = d.Input.Format.Min()
		}
		if _, err := d.Reference(x); err != nil {
			t.Errorf("a valid design fails its model: %v", err)
		}
	})
}
