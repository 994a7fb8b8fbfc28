package rtlview

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/rtl"
	"github.com/gomase/gomase/rtl/emit"
	"github.com/gomase/gomase/rtl/synth"
	"github.com/gomase/gomase/rtl/vcd"
)

func labGraph(t *testing.T, activation string) *ir.MaseGraph {
	t.Helper()
	m, err := models.NewMLPWith(0, models.MLPOptions{Activation: activation})
	if err != nil {
		t.Fatal(err)
	}
	mg, err := emit.Prepare(m, emit.PrepareOptions{DummyIn: emit.LabInput(), Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	return mg
}

func TestWorkspace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	w := NewWorkspace(dir)
	if err := w.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Fact("nope"); err == nil || !strings.Contains(err.Error(), "run the cells above first") {
		t.Errorf("a missing fact: %v", err)
	}
	if err := w.Save("sim", "200/200"); err != nil {
		t.Fatal(err)
	}
	if f, err := w.Fact("sim"); f != "200/200" || err != nil {
		t.Errorf("Fact = %q, %v", f, err)
	}
	if err := w.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Fact("sim"); err == nil {
		t.Error("Reset kept a fact")
	}
	if w.Design("relu_p4") != filepath.Join(dir, "relu_p4") {
		t.Errorf("Design dir %s", w.Design("relu_p4"))
	}
}

func TestToolTable(t *testing.T) {
	found := []rtl.FoundTool{{Tool: rtl.Tool{Name: "verilator", For: "simulation"}, Version: "Verilator 5.006"}}
	md := ToolTable(found, errors.New("missing tools, not on PATH:\n  - yosys (synthesis): install it with `make setup`"))
	for _, want := range []string{"| `verilator` | Verilator 5.006 | simulation |", "yosys (synthesis): install it with `make setup`"} {
		if !strings.Contains(md, want) {
			t.Errorf("ToolTable lacks %q:\n%s", want, md)
		}
	}
}

func TestTables(t *testing.T) {
	mg := labGraph(t, "leaky_relu")
	nodes := NodeTable(mg)
	for _, want := range []string{"| fc1 | call_module | module_related_func | linear | fixed [8 3] | false | INTERNAL_RTL | fixed_linear |", "`nodes_in` = [fc1]",
		"bias (storage = BRAM, transpose = false); weight (storage = BRAM, transpose = false)"} {
		if !strings.Contains(nodes, want) {
			t.Errorf("NodeTable lacks %q:\n%s", want, nodes)
		}
	}
	if strings.Contains(nodes, "map[") {
		t.Errorf("NodeTable writes Go map syntax:\n%s", nodes)
	}
	ps := VerilogParams(mg, "leaky_relu")
	if strings.Contains(ps, "fixed_linear") || !strings.Contains(ps, "`NEGATIVE_SLOPE_VALUE` | 41 |") {
		t.Errorf("VerilogParams(leaky_relu):\n%s", ps)
	}
	reg := Registration("leaky_relu")
	if strings.Contains(reg, "missing") || !strings.Contains(reg, "[-4, 2.5] → [-0.25, 2.5]") || !strings.Contains(reg, "`tb_fixed_leaky_relu`, `tb_fixed_activation`") ||
		!strings.Contains(reg, "`leaky_relu` → `fixed_leaky_relu` (2 files)") {
		t.Errorf("Registration(leaky_relu):\n%s", reg)
	}
	if reg := Registration("gelu"); strings.Count(reg, "**missing**") < 5 {
		t.Errorf("Registration(gelu) should say missing:\n%s", reg)
	}
	if Reals([]int64{-3, 12}, rtl.Format{Width: 8, Frac: 3}) != "[-0.375, 1.5]" {
		t.Error("Reals")
	}
	w, err := ComponentSource("fixed_leaky_relu", 0)
	if err != nil || !strings.Contains(SideBySide(w, w).HTML(), "flex:1 1 0") {
		t.Errorf("SideBySide: %v", err)
	}
}

// TestDesignAndSimulation emits the lab's Leaky ReLU MLP, simulates four
// vectors at full rate with a waveform, and reads everything back.
func TestDesignAndSimulation(t *testing.T) {
	dir := t.TempDir()
	if _, err := emit.Verilog(labGraph(t, "leaky_relu"), dir, emit.Options{}); err != nil {
		t.Fatal(err)
	}
	sum, err := EmitSummary(dir)
	if err != nil || !strings.Contains(sum, "`fc1_inst` `fc1_weight_source_0` `fc1_bias_source_0` `leaky_relu_inst`") {
		t.Errorf("EmitSummary: %v\n%s", err, sum)
	}
	top, _ := os.ReadFile(filepath.Join(dir, "top.sv"))
	if inst := Instance(string(top), "fixed_leaky_relu"); !strings.HasPrefix(inst, "fixed_leaky_relu #(") || !strings.HasSuffix(inst, ") leaky_relu_inst") {
		t.Errorf("Instance: %q", inst)
	}
	if lines, digits, err := ROMShape(dir, "fc1_weight_rom.dat"); lines != 2 || digits != 32 || err != nil {
		t.Errorf("weight ROM %d × %d, %v; want 2 × 32", lines, digits, err)
	}
	if roms, err := ROMs(dir); err != nil || !strings.Contains(roms, "fc1_bias_rom.dat**: 2 lines × 8 hex digits") {
		t.Errorf("ROMs: %v\n%s", err, roms)
	}
	if _, err := rtl.FindSimulator(); err != nil {
		t.Fatal(err)
	}
	wave := filepath.Join(dir, "w.vcd")
	res, err := emit.Simulate(context.Background(), dir, emit.SimOptions{Vectors: 4, Seed: 3, Wave: wave, PValid: 100, PReady: 100})
	if err != nil || res.Err() != nil {
		t.Fatalf("simulate: %v, %v", err, res.Err())
	}
	md, err := SimReport("leaky", dir, res, 3)
	if err != nil || !strings.Contains(md, "| 4 | 4 | 8 (8) | 0 | PASS") || strings.Count(md, "| yes |") != 3 {
		t.Errorf("SimReport: %v\n%s", err, md)
	}
	if neg, total, err := NegativeOutputs(dir); err != nil || total != 32 || neg == 0 {
		t.Errorf("NegativeOutputs = %d of %d, %v", neg, total, err)
	}
	text, _ := os.ReadFile(wave)
	dump, err := vcd.Parse(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	tm, err := MeasureTiming(dump, "TOP.top_tb.dut.", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.InAt) != 4 || len(tm.OutAt) != 8 || tm.Latency < 1 || tm.Interval < 2 || tm.OutAt[1] != tm.OutAt[0]+1 {
		t.Errorf("timing %+v", tm)
	}
	if !strings.Contains(tm.String(), "cycles** after its input beat") {
		t.Errorf("Timing.String: %s", tm)
	}
	if sigs := WaveSignals("TOP.top_tb.dut.", 4, 4); len(sigs) != 15 || dump.Signal(sigs[5]) == nil {
		t.Errorf("WaveSignals %v", sigs)
	}
}

func TestSynthSummary(t *testing.T) {
	st := func(luts, ffs int) *synth.Stats { return &synth.Stats{LUTs: luts, FlipFlops: ffs, Cells: luts + ffs} }
	rows := []SynthRow{{"relu", 4, st(100, 50), 0}, {"leaky_relu", 4, st(120, 50), 0}}
	parts := []ComponentStat{{"fixed_linear", "fc1", st(300, 80)}, {"fixed_relu", "relu", st(4, 0)}, {"fixed_leaky_relu", "leaky_relu", st(24, 0)}}
	s, err := SynthSummary(rows, parts)
	if err != nil || !strings.Contains(s, "Leaky ReLU costs +20 LUTs (+20%) and +0 flip-flops") || !strings.Contains(s, "more than the whole design") || strings.Contains(s, "Parallelism 1") {
		t.Errorf("SynthSummary: %v\n%s", err, s)
	}
	rows = append(rows, SynthRow{"relu", 1, st(40, 30), 0}, SynthRow{"relu", 2, st(60, 40), 0})
	if s, _ := SynthSummary(rows, parts); !strings.Contains(s, "40 → 60 → 100 LUTs") {
		t.Errorf("SynthSummary with parallelism 1, 2:\n%s", s)
	}
	if _, err := SynthSummary(rows[:1], parts); err == nil {
		t.Error("a summary without Leaky ReLU")
	}
	if tb, err := SynthTable(rows); err != nil || tb.Rows() != 4 {
		t.Errorf("SynthTable: %v", err)
	}
	if b := SynthBars(rows); len(b.Categories) != 4 || b.Groups[0].Values[1] != 120 {
		t.Errorf("SynthBars %+v", b)
	}
}

func TestInts(t *testing.T) {
	if s := Ints([]int64{127, -4}); s != "[127, -4]" {
		t.Errorf("Ints = %q", s)
	}
}
