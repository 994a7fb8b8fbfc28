package rtlview

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/ui/widget"
	"github.com/gomase/gomase/rtl"
	"github.com/gomase/gomase/rtl/emit"
)

// SideBySide shows widgets next to each other, each taking an equal share of
// the width (and scrolling sideways when its content is wider).
func SideBySide(ws ...widget.Widget) widget.Widget {
	var b strings.Builder
	b.WriteString(`<div style="display:flex;gap:10px;align-items:flex-start">`)
	for _, w := range ws {
		b.WriteString(`<div style="flex:1 1 0;min-width:0;overflow-x:auto">`)
		b.WriteString(w.HTML())
		b.WriteString(`</div>`)
	}
	b.WriteString(`</div>`)
	return widget.HTMLWidget(widget.DedupeAssets(b.String()))
}

// ComponentSource is a library component's SystemVerilog (rtl.Source) as a
// highlighted listing headed by its file name.
func ComponentSource(module string, maxHeight int) (*widget.Source, error) {
	text, err := rtl.Source(module)
	if err != nil {
		return nil, err
	}
	return &widget.Source{Name: "rtl/" + module + ".sv", Language: "systemverilog", Text: text, MaxHeight: maxHeight}, nil
}

// activationTestbench is the testbench that checks an activation component
// against its Go model (rtl.ActivationCase).
const activationTestbench = "tb_fixed_activation"

// Registration reads, from the tables this program runs with, where the
// component of a mase_op (an activation: relu, leaky_relu) is registered —
// one row per place a new component is listed — and says "missing" where
// it is not.
func Registration(op string) string {
	comp, _ := ops.Hardware(op)
	module := comp.Module
	missing := "**missing**"
	var b strings.Builder
	fmt.Fprintf(&b, "| step | where | `%s` |\n|---|---|---|\n", op)
	row := func(step, where, what string) { fmt.Fprintf(&b, "| %s | %s | %s |\n", step, where, what) }

	src := missing
	if text, err := rtl.Source(module); err == nil {
		src = fmt.Sprintf("%d lines, embedded in the Go package (`rtl.Source(%q)`)", strings.Count(text, "\n"), module)
	}
	row("1. write the component", fmt.Sprintf("`rtl/%s.sv`", cmp.Or(module, "<module>")), src)
	listed := missing
	if slices.Contains(rtl.Components, module) {
		listed = "listed"
	}
	row("2. add it to the library", "`rtl.Components`", listed)
	deps := "none"
	if d := rtl.Dependencies[module]; len(d) > 0 {
		deps = "`" + strings.Join(d, "`, `") + "`"
	}
	row("2. name the modules it instantiates", "`rtl.Dependencies`", deps)
	row("3. its bit-exact Go model", "`emit.Design.Reference` (the model every simulation checks against)", probeModel(op))
	var tbs []string
	for _, tb := range rtl.Testbenches {
		if tb == "tb_"+module || tb == activationTestbench && (module == "fixed_relu" || module == "fixed_leaky_relu") {
			tbs = append(tbs, "`"+tb+"`")
		}
	}
	row("3. test the RTL against the model", "`rtl.Testbenches`", cmp.Or(strings.Join(tbs, ", "), missing))
	hw := missing
	if module != "" {
		hw = fmt.Sprintf("`%s` → `%s` (%d files)", op, module, len(comp.Files))
	}
	row("4. map the op to the module", "the op table's hardware column (`ops.Hardware`), which the hardware metadata pass and the emitter both read", hw)
	return b.String()
}

// probeModel runs a one-layer design of op through Design.Reference on
// Q(8,4) inputs −64 and 40 (slope 1/16 for leaky_relu).
func probeModel(op string) string {
	q := rtl.Format{Width: 8, Frac: 4}
	d := &emit.Design{Input: emit.Stream{Format: q, Size: 2, Par0: 2, Par1: 1}, Output: emit.Stream{Format: q, Size: 2, Par0: 2, Par1: 1},
		Layers: []emit.Layer{{Node: op, Op: op, In: q, Out: q, InSize: 2, OutSize: 2, SlopeValue: 1, SlopeFrac: 4}}}
	x := []int64{-64, 40}
	y, err := d.Reference(x)
	if err != nil {
		return "**missing**: " + err.Error()
	}
	slope := ""
	if op == "leaky_relu" {
		slope = ", slope 1/16"
	}
	return fmt.Sprintf("Q(8,4)%s: %s → %s", slope, Reals(x, q), Reals(y, q))
}

// ActivationReport shows the outcome of rtl.CheckActivation: what was
// streamed and checked, the verdict, and the Go model's output for the
// example inputs.
func ActivationReport(chk *rtl.ActivationCheck, examples []int64) string {
	c := chk.Case
	var b strings.Builder
	every := "values"
	if n := int64(len(chk.Inputs)); n >= c.In.Max()-c.In.Min()+1 {
		every = fmt.Sprintf("values (every %v integer)", c.In)
	}
	verdict := "PASS: every lane equals the Go model."
	if !chk.Passed {
		verdict = fmt.Sprintf("**FAIL**: %d mismatches", chk.Failures)
	}
	slope := ""
	if c.Leaky {
		slope = fmt.Sprintf(" (= %g)", float64(c.SlopeValue)/float64(int64(1)<<c.SlopeFrac))
	}
	fmt.Fprintf(&b, "**%s**%s, alone, against its Go model: %d input %s streamed with random valid and ready; %d checks (every lane, and valid/ready passing through); Verilator build %s, run %s. %s\n\n",
		c, slope, len(chk.Inputs), every, chk.Checks, chk.Build.Duration.Round(100*time.Millisecond), chk.Duration.Round(time.Millisecond), verdict)
	for _, m := range chk.Mismatches {
		fmt.Fprintf(&b, "- %s\n", m)
	}
	b.WriteString("| x (integer) | x (real) | Go model y (integer) | y (real) |\n|---|---|---|---|\n")
	for _, x := range examples {
		y := c.Model(x)
		fmt.Fprintf(&b, "| %d | %g | %d | %g |\n", x, rtl.Value(x, c.In), y, rtl.Value(y, c.Out))
	}
	return b.String()
}
