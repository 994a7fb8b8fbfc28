from nbgen import code, md, write

md(r"""
# Lab 4 (hardware stream) — from a MaseGraph to SystemVerilog, simulated and synthesised

MASE's Lab 4 hardware stream in Go. The lab's toy MLP (`flatten → Linear(4, 8) → ReLU`) is quantized to Q5.3 (8 bits,
3 of them fractional), annotated with hardware metadata, emitted as a SystemVerilog `top` module with ROMs for its
weight and bias, and simulated with Verilator against a bit-exact Go model of the same integer arithmetic. The lab's
extension task — a new layer type, Leaky ReLU — is a change of the model (`F.leaky_relu`) that the passes carry
through, not a hand edit of `top.sv`. Last, Yosys synthesises the designs, so the questions about cost can be answered
with numbers.

| MASE (PyTorch) | gomase (Go) |
|---|---|
| `MaseGraph(model=MLP())`, `init_metadata_analysis_pass`, `add_common_metadata_analysis_pass` | `models.NewMLP(seed)`, `mase.NewMaseGraph`, `passes.InitMetadata`, `passes.AddCommonMetadata` |
| `quantize_transform_pass` with `fixed.toml`, then the loops forcing every tensor to `fixed [8, 3]` | `emit.QuantizeFixed(mg, 8, 3)` (`emit.FixedConfig`: floor rounding) |
| `add_hardware_metadata_analysis_pass(mg)` | `passes.AddHardwareMetadata(mg, passes.HardwareArgs{Parallelism: 4})`; `passes.OrderedVerilogParams`, `passes.TopVerilogParams` |
| `emit_verilog_top_transform_pass`, `emit_internal_rtl_transform_pass`, `emit_bram_transform_pass` | `emit.Verilog(mg, dir, emit.Options{})` → `*emit.Design`: `top.sv`, the library `.sv` files, `*_source.sv` + `*_rom.dat` |
| `emit_cocotb_transform_pass` (cocotb `test.py`, `tb_obj.dill`) | `top_tb.sv` (SystemVerilog testbench) and `design.json`, written by `emit.Verilog` |
| `simulate(skip_build=False, skip_test=False)` | `emit.Simulate(ctx, dir, emit.SimOptions{Vectors, Seed, Wave})`: every output compared bit for bit with `Design.Reference` |
| GTKWave on `sim_build/*.fst` | `vcd.Parse` + `vcd.SVG` (a static waveform drawn here) |
| (not in the lab) | `synth.Run` / `synth.Component` (Yosys 0.23): LUTs, flip-flops, cells |
| the extension task: hand-written `fixed_leaky_relu` spliced into `top.sv` | `models.NewMLPWith(seed, models.MLPOptions{Activation: "leaky_relu"})`, then the same passes |
| CLI: none | `mase emit --model mlp [--activation leaky_relu] --out DIR`, `mase sim DIR [--vectors N] [--wave F.vcd]` |

**Differences from MASE** (docs/lab4.md, "Hardware stream"): the simulation **checks values** — MASE's generated
cocotb monitor runs with `check=False`, so its test passes on beat count and timing alone; here every output element of
every vector is compared with the Go fixed-point model, and any difference fails. The top-level `DATA_IN_0_*` parameters
describe the real input (`DATA_IN_0_TENSOR_SIZE_DIM_0` = 4; MASE lets the ReLU overwrite it with 8). Rounding is
**floor** everywhere on the hardware path (ROMs, model, RTL); MASE's software model and ROM generator round to nearest
while its RTL floors. Lanes are in order (element e on lane e; MASE's ROM source reverses them; the `.dat` text is the
same). Operators without a hardware component are errors, not silent HLS placeholders. The components are gomase's own
(rtl/README.md); the testbench is SystemVerilog, not cocotb; no date in `top.sv`.

**Scale.** The standard scale (the default without a GPU) and the full scale are the same here: 1000 random vectors per
design and synthesis at parallelism 1, 2 and 4 for both activations (each Verilator build takes about 8 s on two cores,
each Yosys run of the whole design a few seconds). The quick scale (CI) simulates 200 vectors and synthesises
parallelism 4 only.
""")

code(r"""
import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/labsetup"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/ui/display"
	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/widget"
	"github.com/gomase/gomase/rtl"
	"github.com/gomase/gomase/rtl/emit"
	"github.com/gomase/gomase/rtl/synth"
	"github.com/gomase/gomase/rtl/vcd"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// must1 returns v, panicking on err.
func must1[T any](v T, err error) T {
	must(err)
	return v
}


// showBars renders a bar chart inline (and in the HTML report).
func showBars(b plot.BarChart) { widget.Show(must1(widget.BarChart(b))) }

// workDir is where every design of this notebook is emitted. GoNB runs every cell as a program of its own, so
// what one cell leaves for a later one (the designs, a few measured facts) lives here; the first cell empties it.
// It is inside the kernel's own temporary directory (GoNB's $GONB_TMP_DIR, removed when the kernel stops), so two
// kernels running this notebook at once do not share it.
var workDir = filepath.Join(cmp.Or(os.Getenv("GONB_TMP_DIR"), os.TempDir()), "gomase-lab4hw")

// saveFact and fact pass a measured result (Markdown text) from one cell to a later one.
func saveFact(name, text string) { must(os.WriteFile(filepath.Join(workDir, name+".fact"), []byte(text), 0o644)) }
func fact(name string) string    { return string(must1(os.ReadFile(filepath.Join(workDir, name+".fact")))) }

// prepare runs the lab's pass sequence (trace, metadata, Q(width, frac) quantization, hardware metadata) on
// the MLP with the given activation and emits it into workDir/name.
func prepare(name string, opts models.MLPOptions, parallelism int) (*mase.MaseGraph, *emit.Design, string) {
	m := must1(models.NewMLPWith(0, opts))
	mg := must1(emit.Prepare(m, emit.PrepareOptions{DummyIn: emit.LabInput(), Width: 8, Frac: 3, Parallelism: parallelism}))
	dir := filepath.Join(workDir, name)
	return mg, must1(emit.Verilog(mg, dir, emit.Options{})), dir
}

// readLanes reads a hex file the simulation wrote or read (one beat per line, lanes separated by blanks, lane 0
// first) as signed integers of the given width.
func readLanes(path string, width int) [][]int64 {
	var beats [][]int64
	for _, line := range strings.Split(strings.TrimSpace(string(must1(os.ReadFile(path)))), "\n") {
		var beat []int64
		for _, h := range strings.Fields(line) {
			u := must1(strconv.ParseUint(h, 16, 64))
			v := int64(u)
			if u>>(width-1)&1 == 1 {
				v -= 1 << width
			}
			beat = append(beat, v)
		}
		beats = append(beats, beat)
	}
	return beats
}

// vectors regroups beats of a stream into vectors of s.Size elements (one row per vector: PARALLELISM_DIM_1 = 1).
func vectors(beats [][]int64, s emit.Stream) [][]int64 {
	var flat []int64
	for _, b := range beats {
		flat = append(flat, b...)
	}
	per := (s.Size + s.Par0 - 1) / s.Par0 * s.Par0
	var out [][]int64
	for i := 0; i+per <= len(flat); i += per {
		out = append(out, flat[i:i+s.Size])
	}
	return out
}

// real formats fixed-point integers as their real values.
func reals(xs []int64, f rtl.Format) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(float64(x)/float64(int64(1)<<f.Frac), 'g', -1, 64)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// simulate runs n random vectors through the design in dir (random input gaps and output backpressure: the
// testbench's defaults, 70% valid and 60% ready) and shows the outcome: the counts from the result and example
// rows read back from the simulation's own input, expected and output files.
func simulate(title, dir string, d *emit.Design, n int) *emit.SimResult {
	res := must1(emit.Simulate(context.Background(), dir, emit.SimOptions{Vectors: n, Seed: 1}))
	in := vectors(readLanes(filepath.Join(dir, emit.SimDir, "in.hex"), d.Input.Format.Width), d.Input)
	want := vectors(readLanes(filepath.Join(dir, emit.SimDir, "expected.hex"), d.Output.Format.Width), d.Output)
	got := vectors(readLanes(filepath.Join(dir, emit.SimDir, "out.hex"), d.Output.Format.Width), d.Output)
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: Verilator build %s, simulation %s\n\n", title, res.BuildTime.Round(100*time.Millisecond), res.RunTime.Round(time.Millisecond))
	b.WriteString("| vectors sent | vectors matched | output beats (expected) | mismatches / protocol errors | verdict |\n|---|---|---|---|---|\n")
	verdict := "PASS: every output bit equals the Go model"
	if !res.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "| %d | %d | %d (%d) | %d | %s |\n\n", res.Vectors, res.Matched, res.Beats, res.WantBeats, len(res.Mismatches), verdict)
	b.WriteString("| vector | input (real) | expected, Go model (real) | got, RTL (real) | equal |\n|---|---|---|---|---|\n")
	for i := 0; i < 5 && i < len(in) && i < len(got); i++ {
		eq := "yes"
		if fmt.Sprint(want[i]) != fmt.Sprint(got[i]) {
			eq = "**no**"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i, reals(in[i], d.Input.Format), reals(want[i], d.Output.Format), reals(got[i], d.Output.Format), eq)
	}
	for _, m := range res.Mismatches {
		fmt.Fprintf(&b, "\n- MISMATCH %s", m)
	}
	display.Markdown(b.String())
	if !res.OK() {
		panic(fmt.Sprintf("%s: %d of %d vectors matched", title, res.Matched, res.Vectors))
	}
	return res
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// dash writes "—" for an empty cell.
func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// layerParams returns a layer's Verilog parameters as synth.Component wants them.
func layerParams(l emit.Layer) map[string]int {
	ps := map[string]int{}
	for _, p := range l.Params {
		ps[p.Name] = int(p.Value)
	}
	return ps
}
""")

md(r"""
## 1. The MLP, Q5.3 and the hardware metadata

The lab's model: `x` of shape [1, 2, 2] is flattened to 4 features, `fc1 = Linear(4, 8)` and a ReLU. The pass sequence
is the lab's, one call per MASE pass: trace, `InitMetadata`, `AddCommonMetadata` with the lab's dummy input,
`QuantizeFixed` (the quantize pass with `configs/tests/quantize/fixed.toml`: every Linear to fixed Q(8, 3) with floor
rounding, then every tensor argument and result forced to fixed [8, 3], as the notebook's two loops do) and
`AddHardwareMetadata` with the lab's max parallelism 4.
""")

code(r"""
%%
must(os.RemoveAll(workDir))
must(os.MkdirAll(workDir, 0o755))
m := must1(models.NewMLP(0))
mg := must1(mase.NewMaseGraph(m, nil))
_, _, err := passes.InitMetadata(mg)
must(err)
_, _, err = passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: emit.LabInput()})
must(err)
must(emit.QuantizeFixed(mg, 8, 3))
_, info, err := passes.AddHardwareMetadata(mg, passes.HardwareArgs{Parallelism: 4})
must(err)

var b strings.Builder
b.WriteString("| node | kind | mase_type | mase_op | precision (results) | is_implicit | toolchain | module | interface | dependence_files |\n|---|---|---|---|---|---|---|---|---|---|\n")
for _, n := range mg.Nodes() {
	c, hw := n.Meta.Common, n.Meta.Hardware
	prec := "—"
	if r := c.Results.Get("data_out_0"); r != nil && r.Type != "" {
		prec = fmt.Sprintf("%s %v", r.Type, r.Precision)
	}
	var iface []string
	for _, k := range sortedKeys(hw.Interface) {
		iface = append(iface, fmt.Sprintf("%s: %v", k, hw.Interface[k]))
	}
	fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %v | %s | %s | %s | %s |\n", n.Name, n.Op, c.MaseType, c.MaseOp, prec,
		hw.IsImplicit, dash(hw.Toolchain), dash(hw.Module), dash(strings.Join(iface, "; ")), dash(strings.Join(hw.DependenceFiles, " ")))
}
fmt.Fprintf(&b, "\n`nodes_in` = %v, `nodes_out` = %v (the pass's info: %v)\n", mg.Graph.Meta.NodesIn, mg.Graph.Meta.NodesOut, info["nodes_in"])
display.Markdown(b.String())

// The verilog_param lists, in MASE's emission order.
for _, n := range mg.Nodes() {
	if n.Meta.Hardware.IsImplicit {
		continue
	}
	ps := passes.OrderedVerilogParams(n)
	var t strings.Builder
	fmt.Fprintf(&t, "**%s** (`%s`): %d verilog parameters\n\n| parameter | value | parameter | value | parameter | value |\n|---|---|---|---|---|---|\n", n.Name, n.Meta.Hardware.Module, len(ps))
	for i := 0; i < len(ps); i += 3 {
		t.WriteString("|")
		for j := i; j < i+3; j++ {
			if j < len(ps) {
				fmt.Fprintf(&t, " `%s` | %v |", ps[j].Name, ps[j].Value)
			} else {
				t.WriteString(" | |")
			}
		}
		t.WriteString("\n")
	}
	display.Markdown(t.String())
}

top := must1(passes.TopVerilogParams(mg))
val := map[string]any{}
for _, p := range top {
	val[p.Name] = p.Value
}
display.Markdown(fmt.Sprintf("The top module gets **%d** parameters (MASE: 49): every node's, prefixed with the node name, then the "+
	"unprefixed interface parameters. `DATA_IN_0_TENSOR_SIZE_DIM_0` = **%v** (MASE: 8, because MASE copies every "+
	"`DATA_IN`/`DATA_OUT` key of nodes_in + nodes_out in turn and the ReLU, processed last, overwrites fc1's 4 with its own "+
	"input size; here `DATA_IN_*` come from the input node and `DATA_OUT_*` from the output node — our documented "+
	"difference). `DATA_OUT_0_TENSOR_SIZE_DIM_0` = %v; the ports are `data_in_0[%v]` and `data_out_0[%v]` of %v bits.",
	len(top), val["DATA_IN_0_TENSOR_SIZE_DIM_0"], val["DATA_OUT_0_TENSOR_SIZE_DIM_0"],
	val["DATA_IN_0_PARALLELISM_DIM_0"], val["DATA_OUT_0_PARALLELISM_DIM_0"], val["DATA_IN_0_PRECISION_0"]))
// Emit this graph (Part 2 shows what was written).
must1(emit.Verilog(mg, filepath.Join(workDir, "relu_p4"), emit.Options{}))
""")


md(r"""
## 2. Emitting SystemVerilog

`emit.Verilog` does the work of MASE's `emit_verilog_top`, `emit_internal_rtl` and `emit_bram` passes (and writes the
testbench `emit_cocotb` would): `top.sv` with MASE's structure and names, one parameter-source wrapper and ROM image per
weight and bias, the library components the nodes' `dependence_files` name, `top_tb.sv` and `design.json`.
""")

code(r"""
%%
dir := filepath.Join(workDir, "relu_p4")
d := must1(emit.LoadDesign(dir)) // emit.Verilog(mg, dir, emit.Options{}) ran at the end of the cell above
var b strings.Builder
fmt.Fprintf(&b, "Emitted into a temporary directory: **%d** sources (%s), testbench `%s`, ROMs %v, `%s`.\n\n",
	len(d.Sources), strings.Join(d.Sources, ", "), d.Testbench, d.ROMs, emit.DesignFile)
top := string(must1(os.ReadFile(filepath.Join(dir, "top.sv"))))
fmt.Fprintf(&b, "`top.sv`: %d lines, %d `parameter` declarations, instances: ", strings.Count(top, "\n"), strings.Count(top, "parameter "))
for _, m := range regexp.MustCompile(`(?m)^\)\s*(\w+_inst|\w+_source_0)\s*\(`).FindAllStringSubmatch(top, -1) {
	fmt.Fprintf(&b, "`%s` ", m[1])
}
display.Markdown(b.String())
widget.Show(&widget.Source{Name: "top.sv", Language: "systemverilog", Text: top, MaxHeight: 520})
""")

md(r"""
The ROM images, in MASE's `*_rom.dat` format: one line per ROM word, element 0 of the word leftmost, each element as
two's-complement hex of its floor-quantized Q5.3 integer. The weight [8, 4] streams as beats of 4 × 4 elements
(WEIGHT_PARALLELISM 4 × 4), the bias [8] as beats of 4 — spec item 38: 2 lines of 32 hex digits and 2 lines of 8.
""")

code(r"""
%%
d := must1(emit.LoadDesign(filepath.Join(workDir, "relu_p4")))
var b strings.Builder
for _, rom := range d.ROMs {
	lines := strings.Fields(string(must1(os.ReadFile(filepath.Join(workDir, "relu_p4", rom)))))
	fmt.Fprintf(&b, "**%s**: %d lines × %d hex digits\n\n```\n%s\n```\n\n", rom, len(lines), len(lines[0]), strings.Join(lines, "\n"))
}
l := d.Layers[0]
fmt.Fprintf(&b, "`%s`'s quantized weight (Q%d.%d integers, W[out, in]) and bias, from `design.json`:\n\n```\n", l.Node, l.WeightFormat.Width-l.WeightFormat.Frac, l.WeightFormat.Frac)
for i, row := range l.Weight {
	fmt.Fprintf(&b, "W[%d] = %3d   real %s\n", i, row, reals(row, *l.WeightFormat))
}
fmt.Fprintf(&b, "b    = %v   real %s\n```\n", l.Bias, reals(l.Bias, *l.BiasFormat))
display.Markdown(b.String())
""")

md(r"""
## 3. Simulation: every output checked

`emit.Simulate` draws random input vectors (uniform over the Q5.3 integers, seeded), computes what the design must
output with `Design.Reference` — the integer models of package `rtl`: `y = clamp(floor((Σ x·w + b·2^3) / 2^3))`, then
ReLU — builds the testbench with Verilator, streams the vectors with random gaps on the input (70% valid) and random
backpressure on the output (60% ready), and compares every element. The table's counts come from the simulation
result; the example rows are read back from the files the run used (`sim/in.hex`, `sim/expected.hex`) and wrote
(`sim/out.hex`).
""")

code(r"""
%%
d := must1(emit.LoadDesign(filepath.Join(workDir, "relu_p4")))
res := simulate("ReLU MLP, parallelism 4", filepath.Join(workDir, "relu_p4"), d, labsetup.ByScale(200, 1000, 1000))
saveFact("relu_sim", fmt.Sprintf("%d/%d", res.Matched, res.Vectors))
fmt.Printf("the same from the command line: bin/mase emit --model mlp --out DIR && bin/mase sim DIR --vectors %d --seed 1\n", res.Vectors)
""")


md(r"""
## 4. The waveform

A few vectors again, this time with `Wave` set: the testbench is rebuilt with `--trace` and dumps every signal to a VCD
file, which `vcd.Parse` reads and `vcd.SVG` draws — the picture the lab asks for from GTKWave. This run streams at full
rate (valid and ready always high), so the pipeline's latency and initiation interval can be read off the picture and
are measured from the dump below it. Verilator declares each element of an unpacked array port as its own signal,
`name[i] [7:0]`, which is how the cell names the lanes.
""")

code(r"""
%%
dir := filepath.Join(workDir, "relu_p4")
wave := filepath.Join(workDir, "relu_p4.vcd")
res := must1(emit.Simulate(context.Background(), dir, emit.SimOptions{Vectors: 4, Seed: 3, Wave: wave, PValid: 100, PReady: 100}))
if !res.OK() {
	panic(fmt.Sprint("waveform run failed: ", res.Mismatches))
}
dump := must1(vcd.Parse(bytes.NewReader(must1(os.ReadFile(wave)))))
p := "TOP.top_tb.dut."
signals := []string{p + "clk", p + "rst", p + "data_in_0_valid", p + "data_in_0_ready"}
for i := 0; i < 4; i++ {
	signals = append(signals, fmt.Sprintf("%sdata_in_0[%d]", p, i))
}
signals = append(signals, p+"fc1_weight_valid", p+"data_out_0_valid", p+"data_out_0_ready")
for i := 0; i < 4; i++ {
	signals = append(signals, fmt.Sprintf("%sdata_out_0[%d]", p, i))
}

// Handshakes on rising clock edges: when each input and output beat was taken.
clk := dump.Signal(p + "clk")
edges := clk.RisingEdges()
period := edges[1] - edges[0]
high := func(name string, t uint64) bool { v, ok := dump.Signal(name).Uint(t - 1); return ok && v == 1 }
var inAt, outAt []int
for i, t := range edges {
	if high(p+"data_in_0_valid", t) && high(p+"data_in_0_ready", t) {
		inAt = append(inAt, i)
	}
	if high(p+"data_out_0_valid", t) && high(p+"data_out_0_ready", t) {
		outAt = append(outAt, i)
	}
}
start := uint64(0)
if len(inAt) > 0 && inAt[0] > 3 {
	start = edges[inAt[0]-3]
}
end := edges[min(len(edges)-1, outAt[len(outAt)-1]+3)]
widget.Show(must1(widget.Waveform("Waveform: "+filepath.Base(wave), dump, vcd.Options{Signals: signals, Start: start, End: end, Width: 1100, Radix: vcd.Signed})))
latency := outAt[0] - inAt[0]
interval := inAt[1] - inAt[0]
unit := dump.Timescale
periodText := fmt.Sprintf("%d × %s", period, unit)
if unit == "1ps" {
	periodText = fmt.Sprintf("%g ns", float64(period)/1000)
}
waveFacts := fmt.Sprintf("Clock period %s; input beats taken at cycles %v, output beats at %v: the first output beat "+
	"comes **%d cycles** after its input beat was taken, and a new input vector is taken every **%d cycles** "+
	"(%d output beats of %d lanes per vector).", periodText, inAt, outAt, latency, interval, res.WantBeats/res.Vectors, must1(emit.LoadDesign(dir)).Output.Lanes())
display.Markdown(fmt.Sprintf("%d vectors at full rate, all matched (%d/%d); %s", res.Vectors, res.Matched, res.Vectors, waveFacts))
saveFact("wave", waveFacts)
""")


md(r"""
## 5. The extension: Leaky ReLU

The lab's main task is a new layer in hardware; its suggestion is Leaky ReLU, spliced into `top.sv` by hand in place of
`fixed_relu` (MASE's metadata passes reject `F.leaky_relu`, and the cocotb expectation would still be ReLU's). Here it is
a change of the model: `models.NewMLPWith(0, models.MLPOptions{Activation: "leaky_relu"})` traces
`F.leaky_relu(fc1(x), negative_slope=0.01)`, and the same passes carry it through. The hardware metadata pass maps it to
the library's `fixed_leaky_relu` and converts the slope to fixed point (`passes.FixedSlope`: the most fraction bits for
which the rounded slope still fits in 8 bits), the emitter instantiates it, and the Go model — hence the check — uses
the same slope.
""")

code(r"""
%%
mg, d, dir := prepare("leaky_p4", models.MLPOptions{Activation: "leaky_relu"}, 4)
var b strings.Builder
for _, n := range mg.Nodes() {
	if n.Meta.Hardware.IsImplicit || n.Meta.Common.MaseOp == "linear" {
		continue
	}
	ps := passes.OrderedVerilogParams(n)
	fmt.Fprintf(&b, "Node **%s**: mase_op `%s`, module `%s`, %d verilog parameters:\n\n", n.Name, n.Meta.Common.MaseOp, n.Meta.Hardware.Module, len(ps))
	for _, p := range ps {
		fmt.Fprintf(&b, "`%s`=%v ", p.Name, p.Value)
	}
	b.WriteString("\n\n")
}
l := d.Layers[len(d.Layers)-1]
slope := float64(l.SlopeValue) / math.Exp2(float64(l.SlopeFrac))
fmt.Fprintf(&b, "negative_slope 0.01 → `NEGATIVE_SLOPE_VALUE` = %d, fraction bits %d: the hardware multiplies by %d / 2^%d = %.12g "+
	"(error %.2g).\n\n", l.SlopeValue, l.SlopeFrac, l.SlopeValue, l.SlopeFrac, slope, slope-0.01)
top := string(must1(os.ReadFile(filepath.Join(dir, "top.sv"))))
inst := regexp.MustCompile(`(?s)// \w+\n(fixed_leaky_relu #\(.*?\) \w+_inst)`).FindStringSubmatch(top)
display.Markdown(b.String())
if inst != nil {
	widget.Show(&widget.Source{Name: "top.sv: the Leaky ReLU instance", Language: "systemverilog", Text: inst[1], MaxHeight: 400})
}
simulate("Leaky ReLU MLP, parallelism 4", dir, d, labsetup.ByScale(200, 1000, 1000))

// How many outputs actually exercised the negative branch?
want := vectors(readLanes(filepath.Join(dir, emit.SimDir, "expected.hex"), d.Output.Format.Width), d.Output)
neg, negNonzero := 0, 0
for _, v := range want {
	for _, y := range v {
		if y < 0 {
			negNonzero++
		}
	}
	neg += len(v)
}
leakyFacts := fmt.Sprintf("%d of the %d outputs checked are negative (Leaky ReLU's slope at work; ReLU would output 0 there)", negNonzero, neg)
display.Markdown(leakyFacts + ".")
saveFact("leaky", leakyFacts)
fmt.Println("the same from the command line: bin/mase emit --model mlp --activation leaky_relu --out DIR && bin/mase sim DIR")
""")


md(r"""
### Floor, not round (spec §9 item 40)

The hardware computes `(VALUE · x) >>> PRECISION_1`: an arithmetic shift, i.e. **floor**. With Q(8, 4) and slope 1/16
(VALUE 1, 4 fraction bits), x = −4.0 (integer −64) gives −4 (−0.25) either way, but x = −0.0625 (integer −1) gives
floor(−1/16) = −1, i.e. −0.0625, where PyTorch's `F.leaky_relu` followed by a round-to-nearest quantizer gives 0. The
table is computed with `rtl.LeakyReLU`, the integer model the simulation checks against.
""")

code(r"""
%%
q84 := rtl.Format{Width: 8, Frac: 4}
var b strings.Builder
b.WriteString("| x (real) | x (Q4.4 integer) | `rtl.LeakyReLU` = floor (integer) | real | torch: round(x · 1/16 · 2^4) (integer) | real |\n|---|---|---|---|---|---|\n")
for _, x := range []int64{-64, -17, -8, -1, 5} {
	hw := rtl.LeakyReLU(x, q84, 1, 4, q84)
	torch := x
	if x < 0 {
		torch = int64(math.RoundToEven(float64(x) / 16))
	}
	fmt.Fprintf(&b, "| %g | %d | %d | %g | %d | %g |\n", float64(x)/16, x, hw, float64(hw)/16, torch, float64(torch)/16)
}
display.Markdown(b.String())
""")

md(r"""
## 6. Synthesis with Yosys

`synth.Run` synthesises with Yosys's technology-independent flow (`synth -flatten -lut 4`, then `stat`): every piece
of logic, adders and multipliers included, becomes 4-input LUTs; registers are counted one flip-flop per bit. The whole
emitted design is synthesised as written with `emit.Synthesize` — `top.sv`, the parameter sources with their ROMs
(constant data, so they fold into logic) and the components; `rtl/synth` flattens the array ports that Yosys 0.23 cannot
read and runs Yosys in the design's directory so that the ROM files are found as the simulator finds them. The components are also synthesised alone, with the design's parameters (`synth.Component`), to show where
the cost goes. The quick scale synthesises parallelism 4 only; the others add parallelism 1 and 2 (the weight ROM then
streams 1×1 or 2×2 elements per beat and the linear layer computes that many products per cycle).
""")

code(r"""
%%
type row struct {
	name             string
	par              int
	luts, ffs, cells int
	took             time.Duration
}
var rows []row
designs := map[string]*emit.Design{}
for _, par := range labsetup.ByScale([]int{4}, []int{1, 2, 4}, []int{1, 2, 4}) {
	for _, act := range []string{"relu", "leaky_relu"} {
		_, d, dir := prepare(fmt.Sprintf("synth_%s_p%d", act, par), models.MLPOptions{Activation: act}, par)
		t := time.Now()
		s := must1(emit.Synthesize(context.Background(), dir, synth.Options{}))
		rows = append(rows, row{act, par, s.LUTs, s.FlipFlops, s.Cells, time.Since(t)})
		designs[fmt.Sprintf("%s_p%d", act, par)] = d
		fmt.Printf("%s, parallelism %d: %s (%s)\n", act, par, s, time.Since(t).Round(100*time.Millisecond))
	}
}
whole := widget.NewTable("Whole design (top, Yosys synth -flatten -lut 4)", "activation", "parallelism", "LUT4", "flip-flops", "cells", "Yosys time (s)")
for _, r := range rows {
	must(whole.AddRow(r.name, r.par, r.luts, r.ffs, r.cells, r.took.Round(100*time.Millisecond).Seconds()))
}

// The components alone, with the parallelism-4 designs' parameters.
parts := widget.NewTable("Components alone (parallelism 4, the designs' parameters)", "component", "node", "LUT4", "flip-flops", "cells")
comp := map[string]*synth.Stats{}
for i, key := range []string{"relu_p4", "leaky_relu_p4"} {
	for j, l := range designs[key].Layers {
		if i == 1 && j == 0 {
			continue // the same fixed_linear as the ReLU design's
		}
		s := must1(synth.Component(context.Background(), l.Module, layerParams(l), synth.Options{}))
		comp[l.Module] = s
		must(parts.AddRow(l.Module, l.Node, s.LUTs, s.FlipFlops, s.Cells))
	}
}
widget.Show(whole, parts)

cats := []string{}
var luts, ffs []float64
for _, r := range rows {
	cats = append(cats, fmt.Sprintf("%s P=%d", r.name, r.par))
	luts = append(luts, float64(r.luts))
	ffs = append(ffs, float64(r.ffs))
}
showBars(plot.BarChart{Title: "Yosys: the whole MLP design", YLabel: "count", Categories: cats, ShowValues: true,
	Groups: []plot.BarGroup{{Name: "LUT4", Values: luts}, {Name: "flip-flops", Values: ffs}}})

get := func(name string, par int) row {
	for _, r := range rows {
		if r.name == name && r.par == par {
			return r
		}
	}
	return row{}
}
r4, l4 := get("relu", 4), get("leaky_relu", 4)
synthFacts := fmt.Sprintf("At parallelism 4 the ReLU design synthesises to %d LUT4 and %d flip-flops; Leaky ReLU costs %+d LUTs "+
	"(%+.0f%%) and %+d flip-flops: `fixed_relu` alone is %d LUTs, `fixed_leaky_relu` %d (four 8-bit × 8-bit products by a constant "+
	"slope, floored), while `fixed_linear` alone, with its weight and bias as inputs, is %d LUTs and %d flip-flops — more than the whole "+
	"design, because in the design they come from ROMs of two constant words each and Yosys folds those constants into the "+
	"multipliers. The linear layer dominates either way.",
	r4.luts, r4.ffs, l4.luts-r4.luts, 100*float64(l4.luts-r4.luts)/float64(r4.luts), l4.ffs-r4.ffs,
	comp["fixed_relu"].LUTs, comp["fixed_leaky_relu"].LUTs, comp["fixed_linear"].LUTs, comp["fixed_linear"].FlipFlops)
if r1 := get("relu", 1); r1.luts > 0 {
	r2 := get("relu", 2)
	synthFacts += fmt.Sprintf(" Parallelism 1 → 2 → 4 (ReLU): %d → %d → %d LUTs, %d → %d → %d flip-flops.", r1.luts, r2.luts, r4.luts, r1.ffs, r2.ffs, r4.ffs)
}
display.Markdown(synthFacts)
saveFact("synth", synthFacts)
""")


md(r"""
## 7. The lab's questions, answered from the measurements
""")

code(r"""
%%
d := must1(emit.LoadDesign(filepath.Join(workDir, "relu_p4")))
fc1 := d.Layers[0]
romLines := func(rom string) int {
	return len(strings.Fields(string(must1(os.ReadFile(filepath.Join(workDir, "relu_p4", rom))))))
}
var b strings.Builder
fmt.Fprintf(&b, "**Why a hardware metadata pass, and how does it differ from the software metadata?** Software metadata "+
	"describes what a node computes (op, shapes, formats) and leaves scheduling and storage to the runtime. Hardware needs "+
	"all of it fixed at elaboration time: which module implements the node (`%s`, `%s`), which nodes are only wiring "+
	"(`is_implicit`: x, flatten, output), where parameters live (`interface`: weight and bias in BRAM/ROM), which "+
	"files to compile (`dependence_files`) and every size, width and parallelism as a Verilog parameter — %d for fc1, "+
	"%d for the ReLU, %d at the top.\n\n", fc1.Module, d.Layers[1].Module, len(fc1.Params), len(d.Layers[1].Params), len(d.TopParams))
fmt.Fprintf(&b, "**How does the MLP map to hardware?** `fc1` is a streaming `fixed_linear` fed by two parameter sources "+
	"whose ROMs hold the floor-quantized weight (%d words) and bias (%d words); its output stream is wired straight into "+
	"`fixed_relu` (combinational, zero latency), whose output is the top's `data_out_0`. An input vector of %d elements "+
	"is one beat of %d lanes; its %d outputs leave as %d beats of %d lanes. Ready runs backwards and valid forwards, so "+
	"backpressure stalls the whole chain: in the simulation above the output was ready only 60%% of the cycles, "+
	"the input offered a beat 70%% of the time, and all %s vectors still matched the Go model bit for bit.\n\n",
	romLines(d.ROMs[0]), romLines(d.ROMs[1]), d.Input.Size, d.Input.Lanes(), d.Output.Size,
	(d.Output.Size+d.Output.Lanes()-1)/d.Output.Lanes(), d.Output.Lanes(), fact("relu_sim"))
fmt.Fprintf(&b, "**What does the waveform show?** %s The row is buffered when it is taken; then each of the %d weight "+
	"beats (4 output neurons × 4 inputs) yields one output beat, through the output register, one per cycle; the next "+
	"input is not accepted until the row is done (no double buffering).\n\n", fact("wave"), (fc1.OutSize+3)/4)
fmt.Fprintf(&b, "**A new layer in hardware (Leaky ReLU).** The library's `fixed_leaky_relu` replaces `fixed_relu` through the "+
	"passes (no hand edit), with the slope as parameters; %s, and every one matched. Floor matters: x = −1/16 with slope "+
	"1/16 in Q4.4 gives %d/16 in hardware where round-to-nearest gives 0.\n\n", fact("leaky"), rtl.LeakyReLU(-1, rtl.Format{Width: 8, Frac: 4}, 1, 4, rtl.Format{Width: 8, Frac: 4}))
fmt.Fprintf(&b, "**What does it cost?** %s\n", fact("synth"))
display.Markdown(b.String())
fmt.Println("every figure above was measured in this run; designs and waveform in", workDir)
""")

md(r"""
The same steps from the command line: `bin/mase emit --model mlp [--activation leaky_relu] [--parallelism 4] --out DIR`,
then `bin/mase sim DIR --vectors 1000 [--wave DIR/wave.vcd]`. docs/lab4.md ("Hardware stream") lists the MASE calls
and their gomase equivalents and the deliberate differences.
""")

write()
