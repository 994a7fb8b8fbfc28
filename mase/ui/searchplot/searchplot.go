// Package searchplot draws the plots of Labs 2 and 3 from the trials of
// search studies: the sampler comparison (best-so-far accuracy against the
// trial number, one curve per sampler), the trial scatter (every completed
// trial as a point, optionally with its study's best-so-far line), the
// per-precision curves of the mixed-precision search (BestSoFarChart with
// one study per precision), and the distribution of layer types in the best
// mixed-precision model.
//
// The charts are plot.Chart and plot.BarChart values: render them with
// plot.LineSVG and plot.BarSVG, and change their fields (YLabel, Width, …)
// before rendering to relabel or resize them.
//
//	trials, err := study.Trials()
//	chart := searchplot.BestSoFarChart("Task 1: best-so-far accuracy vs trial", search.Maximize,
//		[]searchplot.Named{{Name: "TPE", Trials: trials}, {Name: "random", Trials: randomTrials}})
//	svg, err := plot.LineSVG(chart)
//
// Only Complete trials give values: failed and pruned trials keep the
// best-so-far curves flat, and running trials are left out.
package searchplot

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/ui/plot"
)

// Named is one study's trials under the name its curve or points get in the
// legend (the sampler, say, or the precision).
type Named struct {
	Name   string
	Trials []search.FrozenTrial
}

// Metric gives the number to plot for a Complete trial, and false when the
// trial has none (the trial is then treated like a failed one). It is only
// called for Complete trials; non-finite numbers are dropped.
type Metric func(search.FrozenTrial) (float64, bool)

// Value is the Metric of the objective value, the default.
func Value(t search.FrozenTrial) (float64, bool) { return t.Value, true }

// UserAttr returns the Metric that reads the numeric user attribute key
// (say "accuracy" when the objective returns a penalised score). It accepts
// every Go integer and float type and json.Number, so it reads attributes
// both from an in-memory study and back from a journal, which decodes
// numbers as float64. Trials without the attribute, or with a non-numeric
// one, have no value.
func UserAttr(key string) Metric {
	return func(t search.FrozenTrial) (float64, bool) { return number(t.UserAttrs[key]) }
}

// number converts a numeric attribute value to float64.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case int:
		return float64(v), true
	case int8:
		return float64(v), true
	case int16:
		return float64(v), true
	case int32:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint:
		return float64(v), true
	case uint8:
		return float64(v), true
	case uint16:
		return float64(v), true
	case uint32:
		return float64(v), true
	case uint64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// Option changes what a chart of this package plots.
type Option func(*options)

type options struct {
	metric    Metric
	bestSoFar bool
	dir       search.Direction
}

// WithMetric plots m of every Complete trial instead of its objective value.
func WithMetric(m Metric) Option { return func(o *options) { o.metric = m } }

// WithBestSoFar adds to TrialScatterChart each study's best-so-far line in
// direction dir, in the colour of the study's points. BestSoFarChart, which
// draws those lines anyway, ignores it.
func WithBestSoFar(dir search.Direction) Option {
	return func(o *options) { o.bestSoFar, o.dir = true, dir }
}

func newOptions(opts []Option) options {
	o := options{metric: Value}
	for _, f := range opts {
		f(&o)
	}
	if o.metric == nil {
		o.metric = Value
	}
	return o
}

// better reports whether a beats b in direction dir (any Direction other
// than Maximize counts as Minimize, its zero value).
func better(dir search.Direction, a, b float64) bool {
	if dir == search.Maximize {
		return a > b
	}
	return a < b
}

// byNumber returns the trials sorted by trial number, leaving trials as it is.
func byNumber(trials []search.FrozenTrial) []search.FrozenTrial {
	s := slices.Clone(trials)
	slices.SortStableFunc(s, func(a, b search.FrozenTrial) int { return cmp.Compare(a.Number, b.Number) })
	return s
}

// metricOf returns m of t when t is Complete and m gives a finite number.
func metricOf(m Metric, t search.FrozenTrial) (float64, bool) {
	if t.State != search.Complete {
		return 0, false
	}
	v, ok := m(t)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// BestSoFar returns the best-so-far curve of the trials' objective values in
// direction dir: for every finished trial, in trial-number order, x is its
// number (0-based, as in Optuna) and y the best value of the Complete trials
// up to and including it. Trials before the first Complete one are left
// out; failed and pruned trials repeat the previous best; running trials
// are left out. With no Complete trial both slices are empty (nil).
func BestSoFar(trials []search.FrozenTrial, dir search.Direction) (x, y []float64) {
	return BestSoFarOf(trials, dir, Value)
}

// BestSoFarOf is BestSoFar of the metric m instead of the objective value;
// a Complete trial for which m gives no finite number counts as failed.
func BestSoFarOf(trials []search.FrozenTrial, dir search.Direction, m Metric) (x, y []float64) {
	if m == nil {
		m = Value
	}
	best, have := 0.0, false
	for _, t := range byNumber(trials) {
		if !t.State.IsFinished() {
			continue
		}
		if v, ok := metricOf(m, t); ok && (!have || better(dir, v, best)) {
			best, have = v, true
		}
		if have {
			x = append(x, float64(t.Number))
			y = append(y, best)
		}
	}
	return x, y
}

// BestSoFarChart returns the chart of each study's best-so-far curve in
// direction dir, one line per study named after it: the sampler comparison
// of Lab 2 (one study per sampler) or the per-precision curves of Lab 3
// (one study per precision). The axes read "trial" and "best accuracy so
// far", the x axis ticked at whole trial numbers only (IntegerX); set the
// chart's YLabel for another metric. WithMetric plots a metric other than
// the objective value. A study with no Complete trial has an empty series,
// which plot.LineSVG leaves out, legend entry included. Every other line is
// dashed, so curves that coincide stay visible.
func BestSoFarChart(title string, dir search.Direction, studies []Named, opts ...Option) plot.Chart {
	o := newOptions(opts)
	c := plot.Chart{Title: title, XLabel: "trial", YLabel: "best accuracy so far",
		IntegerX: true}
	for i, s := range studies {
		x, y := BestSoFarOf(s.Trials, dir, o.metric)
		// Studies that share their first trials (one seed, two samplers)
		// share their first steps too: every other line is dashed, so the
		// one drawn last does not hide the other.
		c.Series = append(c.Series, plot.Series{Name: s.Name, X: x, Y: y, Dashed: i%2 == 1})
	}
	return c
}

// TrialScatterChart returns the chart of every Complete trial's value as a
// point at its trial number, one scatter series per study named after it,
// in the palette's colours in the studies' order. The axes read "trial"
// (ticked at whole trial numbers only: IntegerX) and "accuracy"; set the
// chart's YLabel for another metric. WithMetric plots a metric other than
// the objective value; WithBestSoFar adds each study's best-so-far line, in
// its colour and without a legend entry of its own. A study with no
// Complete trial has empty series, which plot.LineSVG leaves out, legend
// entry included.
func TrialScatterChart(title string, studies []Named, opts ...Option) plot.Chart {
	o := newOptions(opts)
	c := plot.Chart{Title: title, XLabel: "trial", YLabel: "accuracy", IntegerX: true}
	var lines []plot.Series
	for i, s := range studies {
		col := plot.PaletteColor(i)
		pts := plot.Series{Name: s.Name, Scatter: true, Color: col}
		for _, t := range byNumber(s.Trials) {
			if v, ok := metricOf(o.metric, t); ok {
				pts.X = append(pts.X, float64(t.Number))
				pts.Y = append(pts.Y, v)
			}
		}
		c.Series = append(c.Series, pts)
		if o.bestSoFar {
			x, y := BestSoFarOf(s.Trials, o.dir, o.metric)
			lines = append(lines, plot.Series{X: x, Y: y, Color: col})
		}
	}
	// Lines after all the points, so every line is drawn on top of the dots.
	c.Series = append(c.Series, lines...)
	return c
}

// LayerTypeChart returns the bar chart of counts, the number of layers of
// each type (MASE class name) in a mixed-precision model, such as the
// "layer_types" user attribute of the best trial (see LayerTypeCounts).
// The categories are "Linear", the float layer, first, then the others in
// alphabetical order; each bar is labelled with its count. Empty counts give
// a chart with no categories, and plot.BarSVG rejects that with an error, as
// it does a negative count.
func LayerTypeChart(title string, counts map[string]int) plot.BarChart {
	cats := make([]string, 0, len(counts))
	for k := range counts {
		cats = append(cats, k)
	}
	sort.Slice(cats, func(i, j int) bool {
		if (cats[i] == "Linear") != (cats[j] == "Linear") {
			return cats[i] == "Linear"
		}
		return cats[i] < cats[j]
	})
	vals := make([]float64, len(cats))
	for i, k := range cats {
		vals[i] = float64(counts[k])
	}
	return plot.BarChart{Title: title, XLabel: "layer type", YLabel: "layers", Categories: cats,
		Groups: []plot.BarGroup{{Name: "layers", Values: vals}}, ShowValues: true}
}

// LayerTypeCounts reads the "layer_types" user attribute of a trial (set by
// the mixed-precision objective) as counts for LayerTypeChart. It accepts
// the map[string]int an in-memory study holds and the map[string]any of
// float64 a journal gives back; a missing attribute, another type or a
// count that is not a whole number ≥ 0 is an error.
func LayerTypeCounts(t search.FrozenTrial) (map[string]int, error) {
	v, ok := t.UserAttrs["layer_types"]
	if !ok {
		return nil, fmt.Errorf("searchplot: trial %d has no \"layer_types\" user attribute (set by the mixed-precision objective)", t.Number)
	}
	switch v := v.(type) {
	case map[string]int:
		out := make(map[string]int, len(v))
		for k, n := range v {
			if n < 0 {
				return nil, fmt.Errorf("searchplot: trial %d: layer type %q has count %d; counts must be ≥ 0", t.Number, k, n)
			}
			out[k] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]int, len(v))
		for k, a := range v {
			f, ok := number(a)
			if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
				return nil, fmt.Errorf("searchplot: trial %d: layer type %q has count %v (%T); counts must be whole numbers ≥ 0", t.Number, k, a, a)
			}
			out[k] = int(f)
		}
		return out, nil
	}
	return nil, fmt.Errorf("searchplot: trial %d: \"layer_types\" user attribute is a %T, want a map of layer type to count", t.Number, v)
}
