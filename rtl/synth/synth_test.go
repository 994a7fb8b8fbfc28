package synth

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// requireYosys fails (never skips) when yosys is missing: CI runs
// `make setup` first, which installs it.
func requireYosys(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("yosys"); err != nil {
		t.Fatalf("%v", ErrNoYosys)
	}
}

// lab is the lab's Q5.3 layer: 4 inputs, 8 outputs, parallelism 4.
var lab = map[string]int{
	"DATA_IN_0_PRECISION_0": 8, "DATA_IN_0_PRECISION_1": 3,
	"DATA_IN_0_TENSOR_SIZE_DIM_0": 4, "DATA_IN_0_PARALLELISM_DIM_0": 4,
}

func labParams(extra map[string]int) map[string]int {
	p := map[string]int{}
	for k, v := range lab {
		p[k] = v
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func synth(t *testing.T, component string, params map[string]int) *Stats {
	t.Helper()
	requireYosys(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Component(ctx, component, params, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(s)
	t.Logf("cell types: %v", s.CellTypes)
	if s.Cells != s.LUTs+s.FlipFlops+s.Latches+s.Other() || s.Other() < 0 {
		t.Errorf("cell counts do not add up: %+v", s)
	}
	if s.Latches != 0 {
		t.Errorf("%s: %d latches, want none", component, s.Latches)
	}
	if !strings.Contains(s.Version, "Yosys") {
		t.Errorf("version %q", s.Version)
	}
	return s
}

func TestSkidBuffer(t *testing.T) {
	t.Parallel()
	for _, w := range []int{8, 32} {
		s := synth(t, "skid_buffer", map[string]int{"DATA_WIDTH": w})
		// data_out and spare (W bits each) plus the two valid bits
		if s.FlipFlops < 2*w || s.FlipFlops > 2*w+2 {
			t.Errorf("DATA_WIDTH=%d: %d flip-flops, want 2*W..2*W+2", w, s.FlipFlops)
		}
		if s.LUTs < 1 || s.LUTs > 4*w {
			t.Errorf("DATA_WIDTH=%d: %d LUTs, implausible", w, s.LUTs)
		}
	}
}

func TestFixedReLU(t *testing.T) {
	t.Parallel()
	s := synth(t, "fixed_relu", labParams(nil))
	if s.FlipFlops != 0 {
		t.Errorf("fixed_relu has %d flip-flops, want 0 (combinational)", s.FlipFlops)
	}
	// one LUT per non-sign bit and lane: 4 lanes of 7 bits, give or take
	if s.LUTs < 4 || s.LUTs > 4*8 {
		t.Errorf("fixed_relu: %d LUTs, implausible for 4 lanes of 8 bits", s.LUTs)
	}
	// the parameters reach the design: twice the lanes, about twice the LUTs
	s8 := synth(t, "fixed_relu", labParams(map[string]int{"DATA_IN_0_PARALLELISM_DIM_0": 8, "DATA_IN_0_TENSOR_SIZE_DIM_0": 8}))
	if s8.LUTs < 2*s.LUTs-2 || s8.LUTs > 2*s.LUTs+2 {
		t.Errorf("fixed_relu with 8 lanes: %d LUTs, with 4: %d", s8.LUTs, s.LUTs)
	}
}

func TestFixedLeakyReLU(t *testing.T) {
	t.Parallel()
	s := synth(t, "fixed_leaky_relu", labParams(map[string]int{
		"NEGATIVE_SLOPE_PRECISION_0": 8, "NEGATIVE_SLOPE_PRECISION_1": 4, "NEGATIVE_SLOPE_VALUE": 3,
	}))
	if s.FlipFlops != 0 {
		t.Errorf("fixed_leaky_relu has %d flip-flops, want 0 (combinational)", s.FlipFlops)
	}
	relu := synth(t, "fixed_relu", labParams(nil))
	if s.LUTs <= relu.LUTs || s.LUTs > 400 {
		t.Errorf("fixed_leaky_relu: %d LUTs (fixed_relu: %d), implausible", s.LUTs, relu.LUTs)
	}
}

func TestFixedLinear(t *testing.T) {
	t.Parallel()
	s := synth(t, "fixed_linear", labParams(map[string]int{
		"WEIGHT_PRECISION_0": 8, "WEIGHT_PRECISION_1": 3,
		"WEIGHT_TENSOR_SIZE_DIM_1": 8, "WEIGHT_PARALLELISM_DIM_1": 4,
		"BIAS_PRECISION_0": 8, "BIAS_PRECISION_1": 3,
		"DATA_OUT_0_PRECISION_0": 8, "DATA_OUT_0_PRECISION_1": 3,
	}))
	// registers: the buffered row (4×8), 4 accumulators of 18 bits, the
	// output skid buffer (2×4×8 + 2) and a few control bits
	if s.FlipFlops < 4*8+2*4*8 || s.FlipFlops > 400 {
		t.Errorf("fixed_linear: %d flip-flops, implausible", s.FlipFlops)
	}
	// 16 8×8 multipliers mapped to LUTs: thousands
	if s.LUTs < 16*30 || s.LUTs > 20000 {
		t.Errorf("fixed_linear: %d LUTs, implausible for 16 8x8 multipliers", s.LUTs)
	}
}

func TestBadDesign(t *testing.T) {
	t.Parallel()
	requireYosys(t)
	ctx := context.Background()
	_, err := Run(ctx, Design{Top: "bad", Sources: map[string]string{
		"bad.sv": "module bad(input logic a, output logic b);\n  assign b = a &;\nendmodule\n",
	}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "bad.sv:2: ERROR: syntax error") {
		t.Fatalf("want yosys's syntax error at bad.sv:2, got %v", err)
	}
	_, err = Run(ctx, Design{Top: "no_such_module"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "no_such_module") || !strings.Contains(err.Error(), "ERROR") {
		t.Fatalf("want yosys's error about the missing top, got %v", err)
	}
	if _, err := Component(ctx, "nope", nil, Options{}); err == nil || !strings.Contains(err.Error(), "unknown component") {
		t.Fatalf("unknown component: %v", err)
	}
}

func TestMissingYosys(t *testing.T) {
	_, err := Component(context.Background(), "skid_buffer", nil, Options{Yosys: "/nonexistent/yosys"})
	if !errors.Is(err, ErrNoYosys) || !strings.Contains(err.Error(), "make setup") {
		t.Fatalf("want ErrNoYosys mentioning make setup, got %v", err)
	}
}

func TestFlattenArrays(t *testing.T) {
	src := `module m (
    input  logic [W-1:0] a [N-1:0],
    output logic [V-1:0] y [N-1:0]
);
  logic signed [P-1:0] p[N-1:0];
  logic [7:0] rom[DEPTH];
  assign y[i] = a[i][W-1] ? '0 : a[i];
  always_comb p[i] = x;
  assign z = 8'(p[j+1]);
  assign q = rom[3];
endmodule
`
	got, err := flattenArrays(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"input  logic [(N)*(W)-1:0] a ,",
		"output logic [(N)*(V)-1:0] y ",
		"logic signed [(N)*(P)-1:0] p;",
		"logic [7:0] rom[DEPTH];",
		"assign y[(i)*(V) +: (V)] = a[(i)*(W) + (W-1)] ? '0 : a[(i)*(W) +: (W)];",
		"always_comb p[(i)*(P) +: (P)] = x;",
		"assign z = 8'($signed(p[(j+1)*(P) +: (P)]));",
		"assign q = rom[3];",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if _, err := flattenArrays("logic [W-1:0] a [N-1:0];\nassign b = a[1:0];\n"); err == nil {
		t.Error("a range select of an array should be refused")
	}
}

// TestFixedAdder: the residual add synthesises with no hand edits; its
// flip-flops are the two input skid buffers (two beats each), its LUTs the
// aligned adders and casts.
func TestFixedAdder(t *testing.T) {
	t.Parallel()
	s := synth(t, "fixed_adder", labParams(map[string]int{"DATA_IN_1_PRECISION_1": 5}))
	// 4 lanes of 8 bits per input: two skid buffers of 2×32 data bits, plus
	// valid bits — less the two lowest bits of Q(8,5)'s lanes, which never
	// reach a Q(8,3) output (floor, no carry from the zeros beside them):
	// 128 - 2×2×4 = 112.
	if s.FlipFlops < 112 || s.FlipFlops > 112+8 {
		t.Errorf("fixed_adder: %d flip-flops, want the skid buffers' 112 live data bits and a few valid bits", s.FlipFlops)
	}
	same := synth(t, "fixed_adder", labParams(nil))
	if same.FlipFlops < 128 || same.FlipFlops > 128+8 {
		t.Errorf("fixed_adder of equal formats: %d flip-flops, want 128 data bits and a few valid bits", same.FlipFlops)
	}
	if s.LUTs < 4*8 || s.LUTs > 4*200 {
		t.Errorf("fixed_adder: %d LUTs, implausible for 4 lanes of 8-bit adds and casts", s.LUTs)
	}
}

// TestFixedGELU: the integer GELU synthesises with no hand edits, as
// combinational logic (its multipliers are LUTs under synth -lut 4).
func TestFixedGELU(t *testing.T) {
	t.Parallel()
	s := synth(t, "fixed_gelu", labParams(map[string]int{"DATA_IN_0_PRECISION_1": 4}))
	if s.FlipFlops != 0 {
		t.Errorf("fixed_gelu has %d flip-flops, want 0 (combinational)", s.FlipFlops)
	}
	relu := synth(t, "fixed_relu", labParams(nil))
	if s.LUTs <= 10*relu.LUTs {
		t.Errorf("fixed_gelu: %d LUTs (fixed_relu: %d): its products are missing", s.LUTs, relu.LUTs)
	}
}
