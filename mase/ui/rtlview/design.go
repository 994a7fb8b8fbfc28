package rtlview

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gomase/gomase/rtl"
	"github.com/gomase/gomase/rtl/emit"
)

// instanceRE finds the instance names of top.sv: the line after a module's
// parameter list, ") fc1_inst (" or ") fc1_weight_source_0 (".
var instanceRE = regexp.MustCompile(`(?m)^\)\s*(\w+_inst|\w+_source_\d+)\s*\(`)

// DesignParam returns the top module's parameter called name and whether
// the design has it.
func DesignParam(d *emit.Design, name string) (int64, bool) {
	for _, p := range d.TopParams {
		if p.Name == name {
			return p.Value, true
		}
	}
	return 0, false
}

// Instances lists the instance names in a top.sv text, in order.
func Instances(top string) []string {
	var out []string
	for _, m := range instanceRE.FindAllStringSubmatch(top, -1) {
		out = append(out, m[1])
	}
	return out
}

// Instance returns the instantiation of module in a top.sv text, from the
// module name to the instance name ("fixed_leaky_relu #( ... ) leaky_relu_inst"),
// or "" when top has none.
func Instance(top, module string) string {
	re := regexp.MustCompile(`(?s)\n(` + regexp.QuoteMeta(module) + ` #\(.*?\) \w+_inst)`)
	if m := re.FindStringSubmatch(top); m != nil {
		return m[1]
	}
	return ""
}

// EmitSummary says what emit.Verilog wrote into dir: the sources, the
// testbench, the ROMs, top.sv's size and its instances.
func EmitSummary(dir string) (string, error) {
	d, err := emit.LoadDesign(dir)
	if err != nil {
		return "", err
	}
	top, err := os.ReadFile(filepath.Join(dir, "top.sv"))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%d** sources (%s), testbench `%s`, ROMs %v, `%s`.\n\n", len(d.Sources), strings.Join(d.Sources, ", "), d.Testbench, d.ROMs, emit.DesignFile)
	fmt.Fprintf(&b, "`top.sv`: %d lines, %d `parameter` declarations, instances:", strings.Count(string(top), "\n"), strings.Count(string(top), "parameter "))
	for _, i := range Instances(string(top)) {
		fmt.Fprintf(&b, " `%s`", i)
	}
	b.WriteString(".\n")
	return b.String(), nil
}

// ROMShape returns how many words (lines) a ROM file of dir has and how
// many hex digits the first one has.
func ROMShape(dir, rom string) (lines, digits int, err error) {
	b, err := os.ReadFile(filepath.Join(dir, rom))
	if err != nil {
		return 0, 0, err
	}
	words := strings.Fields(string(b))
	if len(words) == 0 {
		return 0, 0, fmt.Errorf("rtlview: %s is empty", rom)
	}
	return len(words), len(words[0]), nil
}

// ROMs shows the ROM images of the design in dir and the first linear
// layer's quantized weight and bias (integers and real values).
func ROMs(dir string) (string, error) {
	d, err := emit.LoadDesign(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, rom := range d.ROMs {
		text, err := os.ReadFile(filepath.Join(dir, rom))
		if err != nil {
			return "", err
		}
		lines := strings.Fields(string(text))
		fmt.Fprintf(&b, "**%s**: %d lines × %d hex digits\n\n```\n%s\n```\n\n", rom, len(lines), len(lines[0]), strings.Join(lines, "\n"))
	}
	for _, l := range d.Layers {
		if l.Op != "linear" {
			continue
		}
		wf := *l.WeightFormat
		fmt.Fprintf(&b, "`%s`'s quantized weight (Q%d.%d integers, W[out, in]) and bias, from `%s`:\n\n```\n", l.Node, wf.Width-wf.Frac, wf.Frac, emit.DesignFile)
		for i, row := range l.Weight {
			fmt.Fprintf(&b, "W[%d] = %3d   real %s\n", i, row, Reals(row, wf))
		}
		fmt.Fprintf(&b, "b    = %v   real %s\n```\n", l.Bias, Reals(l.Bias, *l.BiasFormat))
		break
	}
	return b.String(), nil
}

// SimFiles are the vectors a simulation of a design used and produced,
// read back from its files (sim/in.hex, sim/expected.hex, sim/out.hex):
// one row per vector, as integers of the stream's format.
type SimFiles struct {
	In, Want, Got [][]int64
}

// ReadSimFiles reads the files the last emit.Simulate of dir left.
func ReadSimFiles(dir string) (*SimFiles, error) {
	d, err := emit.LoadDesign(dir)
	if err != nil {
		return nil, err
	}
	read := func(name string, s emit.Stream) ([][]int64, error) {
		beats, err := readLanes(filepath.Join(dir, emit.SimDir, name), s.Format.Width)
		if err != nil {
			return nil, err
		}
		return vectors(beats, s), nil
	}
	var f SimFiles
	if f.In, err = read("in.hex", d.Input); err != nil {
		return nil, err
	}
	if f.Want, err = read("expected.hex", d.Output); err != nil {
		return nil, err
	}
	if f.Got, err = read("out.hex", d.Output); err != nil {
		return nil, err
	}
	return &f, nil
}

// readLanes reads a hex file of the simulation (one beat per line, lanes
// separated by blanks, lane 0 first) as signed integers of width bits.
func readLanes(path string, width int) ([][]int64, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var beats [][]int64
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		var beat []int64
		for _, h := range strings.Fields(line) {
			u, err := strconv.ParseUint(h, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("rtlview: %s: %w", path, err)
			}
			beat = append(beat, rtl.Wrap(int64(u), width))
		}
		beats = append(beats, beat)
	}
	return beats, nil
}

// vectors regroups beats into vectors of s.Size elements (one row per
// vector: PARALLELISM_DIM_1 = 1), dropping the padding lanes.
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

// SimReport shows the outcome of a simulation of the design in dir: the
// counts from res, then the first rows vectors read back from the files the
// run used and wrote — input, the Go model's expected output and the RTL's
// output as real numbers — and any mismatch.
func SimReport(title, dir string, res *emit.SimResult, rows int) (string, error) {
	d, err := emit.LoadDesign(dir)
	if err != nil {
		return "", err
	}
	f, err := ReadSimFiles(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: Verilator build %s, simulation %s\n\n", title, res.BuildTime.Round(100*time.Millisecond), res.RunTime.Round(time.Millisecond))
	b.WriteString("| vectors sent | vectors matched | output beats (expected) | mismatches / protocol errors | verdict |\n|---|---|---|---|---|\n")
	verdict := "PASS: every output bit equals the Go model"
	if !res.OK() {
		verdict = "**FAIL**"
	}
	fmt.Fprintf(&b, "| %d | %d | %d (%d) | %d | %s |\n\n", res.Vectors, res.Matched, res.Beats, res.WantBeats, len(res.Mismatches), verdict)
	b.WriteString("| vector | input (real) | expected, Go model (real) | got, RTL (real) | equal |\n|---|---|---|---|---|\n")
	for i := 0; i < rows && i < len(f.In) && i < len(f.Want) && i < len(f.Got); i++ {
		eq := "yes"
		if fmt.Sprint(f.Want[i]) != fmt.Sprint(f.Got[i]) {
			eq = "**no**"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i, Reals(f.In[i], d.Input.Format), Reals(f.Want[i], d.Output.Format), Reals(f.Got[i], d.Output.Format), eq)
	}
	for _, m := range res.Mismatches {
		fmt.Fprintf(&b, "\n- MISMATCH %s", m)
	}
	return b.String(), nil
}

// NegativeOutputs counts the expected outputs of the last simulation of dir
// that are negative, of all outputs: how often a Leaky ReLU's slope was at
// work (ReLU outputs 0 there).
func NegativeOutputs(dir string) (negative, total int, err error) {
	f, err := ReadSimFiles(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, v := range f.Want {
		for _, y := range v {
			if y < 0 {
				negative++
			}
		}
		total += len(v)
	}
	return negative, total, nil
}
