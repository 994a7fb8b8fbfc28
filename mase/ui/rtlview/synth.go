package rtlview

import (
	"context"
	"fmt"
	"time"

	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/widget"
	"github.com/gomase/gomase/rtl/emit"
	"github.com/gomase/gomase/rtl/synth"
)

// SynthRow is one synthesised design: its activation and parallelism, what
// Yosys counted and how long it took.
type SynthRow struct {
	Activation  string
	Parallelism int
	Stats       *synth.Stats
	Took        time.Duration
}

// Synthesize runs emit.Synthesize on the design in dir and times it.
func Synthesize(ctx context.Context, dir, activation string, parallelism int) (SynthRow, error) {
	start := time.Now()
	s, err := emit.Synthesize(ctx, dir, synth.Options{})
	if err != nil {
		return SynthRow{}, err
	}
	return SynthRow{Activation: activation, Parallelism: parallelism, Stats: s, Took: time.Since(start)}, nil
}

// SynthTable is the table of whole designs.
func SynthTable(rows []SynthRow) (*widget.Table, error) {
	t := widget.NewTable("Whole design (top, Yosys synth -flatten -lut 4)", "activation", "parallelism", "LUT4", "flip-flops", "cells", "Yosys time (s)")
	for _, r := range rows {
		if err := t.AddRow(r.Activation, r.Parallelism, r.Stats.LUTs, r.Stats.FlipFlops, r.Stats.Cells, r.Took.Round(100*time.Millisecond).Seconds()); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// SynthBars charts the LUTs and flip-flops of each design.
func SynthBars(rows []SynthRow) plot.BarChart {
	var cats []string
	var luts, ffs []float64
	for _, r := range rows {
		cats = append(cats, fmt.Sprintf("%s P=%d", r.Activation, r.Parallelism))
		luts = append(luts, float64(r.Stats.LUTs))
		ffs = append(ffs, float64(r.Stats.FlipFlops))
	}
	return plot.BarChart{Title: "Yosys: the whole MLP design", YLabel: "count", Categories: cats, ShowValues: true,
		Groups: []plot.BarGroup{{Name: "LUT4", Values: luts}, {Name: "flip-flops", Values: ffs}}}
}

// ComponentStat is one library component synthesised alone.
type ComponentStat struct {
	Module, Node string
	Stats        *synth.Stats
}

// SynthComponents synthesises, alone and with their designs' parameters,
// the components of the designs emitted in dirs (each module once).
func SynthComponents(ctx context.Context, dirs ...string) ([]ComponentStat, error) {
	var out []ComponentStat
	seen := map[string]bool{}
	for _, dir := range dirs {
		d, err := emit.LoadDesign(dir)
		if err != nil {
			return nil, err
		}
		for _, l := range d.Layers {
			if seen[l.Module] {
				continue
			}
			seen[l.Module] = true
			ps := map[string]int{}
			for _, p := range l.Params {
				ps[p.Name] = int(p.Value)
			}
			s, err := synth.Component(ctx, l.Module, ps, synth.Options{})
			if err != nil {
				return nil, err
			}
			out = append(out, ComponentStat{Module: l.Module, Node: l.Node, Stats: s})
		}
	}
	return out, nil
}

// ComponentTable is the table of components alone.
func ComponentTable(parts []ComponentStat) (*widget.Table, error) {
	t := widget.NewTable("Components alone (the designs' parameters)", "component", "node", "LUT4", "flip-flops", "cells")
	for _, c := range parts {
		if err := t.AddRow(c.Module, c.Node, c.Stats.LUTs, c.Stats.FlipFlops, c.Stats.Cells); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// SynthSummary says what the synthesis shows: the two activations at
// parallelism 4, the components alone, and the growth with parallelism
// when the rows have it.
func SynthSummary(rows []SynthRow, parts []ComponentStat) (string, error) {
	get := func(act string, par int) *synth.Stats {
		for _, r := range rows {
			if r.Activation == act && r.Parallelism == par {
				return r.Stats
			}
		}
		return nil
	}
	part := func(module string) *synth.Stats {
		for _, c := range parts {
			if c.Module == module {
				return c.Stats
			}
		}
		return nil
	}
	r4, l4 := get("relu", 4), get("leaky_relu", 4)
	relu, leaky, linear := part("fixed_relu"), part("fixed_leaky_relu"), part("fixed_linear")
	if r4 == nil || l4 == nil || relu == nil || leaky == nil || linear == nil {
		return "", fmt.Errorf("rtlview: the summary needs both activations at parallelism 4 and fixed_relu, fixed_leaky_relu, fixed_linear alone")
	}
	s := fmt.Sprintf("At parallelism 4 the ReLU design synthesises to %d LUT4 and %d flip-flops; Leaky ReLU costs %+d LUTs (%+.0f%%) and %+d flip-flops. "+
		"Alone, `fixed_relu` is %d LUTs and `fixed_leaky_relu` %d (four products by a constant slope, floored); `fixed_linear` alone, with its weight and bias as inputs, is %d LUTs and %d flip-flops",
		r4.LUTs, r4.FlipFlops, l4.LUTs-r4.LUTs, 100*float64(l4.LUTs-r4.LUTs)/float64(r4.LUTs), l4.FlipFlops-r4.FlipFlops,
		relu.LUTs, leaky.LUTs, linear.LUTs, linear.FlipFlops)
	if linear.LUTs > r4.LUTs {
		s += " — more than the whole design, because in the design the weight and bias come from ROMs of constant words and Yosys folds those constants into the multipliers"
	}
	s += "."
	if linear.LUTs > leaky.LUTs && linear.LUTs > relu.LUTs {
		s += " The linear layer dominates either way."
	}
	if r1, r2 := get("relu", 1), get("relu", 2); r1 != nil && r2 != nil {
		s += fmt.Sprintf(" Parallelism 1 → 2 → 4 (ReLU): %d → %d → %d LUTs, %d → %d → %d flip-flops.", r1.LUTs, r2.LUTs, r4.LUTs, r1.FlipFlops, r2.FlipFlops, r4.FlipFlops)
	}
	return s, nil
}
