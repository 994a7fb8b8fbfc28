// Package profileview draws a profile (mase/perf) for a notebook or an
// HTML report: the timeline as an SVG whose bars name their node, shapes
// and time on hover, the roofline as a log-log chart, and the tables of
// the top nodes and of the compiles. Everything is self-contained SVG and
// HTML, so a report shows it offline.
package profileview

import (
	"fmt"
	"html"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/perf"
	"github.com/gomase/gomase/mase/timeline"
	"github.com/gomase/gomase/mase/train"
	"github.com/gomase/gomase/mase/ui/plot"
)

// categoryColors colours the bars by what they are.
var categoryColors = map[string]string{
	"run":     "#d0d7de",
	"execute": "#1f77b4",
	"compile": "#d62728",
	"host":    "#ff7f0e",
}

const (
	rowHeight  = 16
	labelWidth = 70
	axisHeight = 22
)

// TimelineSVG draws events as bars on one row per track and nesting depth
// (a span inside another goes one row lower), across width pixels; a bar's
// tooltip gives its name, category, duration and arguments. Only spans
// from `from` on are drawn (0: all), so a caller can show the timed runs
// without the first, compiling one.
func TimelineSVG(events []timeline.Event, from time.Duration, width int) string {
	var evs []timeline.Event
	for _, e := range events {
		if e.Start >= from {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 || width < labelWidth+100 {
		return `<svg xmlns="http://www.w3.org/2000/svg" width="300" height="20"><text x="4" y="14" font-size="12">no spans recorded</text></svg>`
	}
	t0, t1 := evs[0].Start, evs[0].End()
	var tracks []string
	for _, e := range evs {
		t0, t1 = min(t0, e.Start), max(t1, e.End())
		if !slices.Contains(tracks, e.Track) {
			tracks = append(tracks, e.Track)
		}
	}
	span := float64(t1 - t0)
	if span <= 0 {
		span = 1
	}
	plotW := float64(width - labelWidth)
	x := func(d time.Duration) float64 { return labelWidth + plotW*float64(d-t0)/span }
	// depth of each event: how many open spans of its track hold it.
	type placed struct {
		e     timeline.Event
		row   int
		depth int
	}
	var bars []placed
	row0 := 0
	var labels strings.Builder
	for _, tr := range tracks {
		var open []timeline.Event
		maxDepth := 0
		for _, e := range evs {
			if e.Track != tr {
				continue
			}
			for len(open) > 0 && open[len(open)-1].End() <= e.Start {
				open = open[:len(open)-1]
			}
			for len(open) > 0 && e.End() > open[len(open)-1].End() {
				open = open[:len(open)-1]
			}
			d := len(open)
			bars = append(bars, placed{e, row0 + d, d})
			maxDepth = max(maxDepth, d)
			open = append(open, e)
		}
		fmt.Fprintf(&labels, `<text x="2" y="%d" font-size="11" fill="#333">%s</text>`, axisHeight+row0*rowHeight+12, html.EscapeString(tr))
		row0 += maxDepth + 1
	}
	height := axisHeight + row0*rowHeight + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">`, width, height)
	b.WriteString(labels.String())
	// time axis: five ticks
	for i := 0; i <= 4; i++ {
		d := t0 + time.Duration(float64(t1-t0)*float64(i)/4)
		xx := x(d)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/><text x="%.1f" y="12" font-size="10" text-anchor="%s" fill="#555">%s</text>`,
			xx, axisHeight-4, xx, height, xx, anchor(i), formatDur(d-t0))
	}
	for _, p := range bars {
		x0, x1 := x(p.e.Start), x(p.e.End())
		w := math.Max(x1-x0, 0.5)
		col := categoryColors[p.e.Cat]
		if col == "" {
			col = "#2ca02c"
		}
		y := axisHeight + p.row*rowHeight
		fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" stroke="#fff" stroke-width="0.3"><title>%s</title></rect>`,
			x0, y, w, rowHeight-2, col, html.EscapeString(tooltip(p.e)))
		if w > 60 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" fill="#fff" clip-path="none">%s</text>`, x0+2, y+11, html.EscapeString(clip(p.e.Name, int(w/6))))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func anchor(i int) string {
	switch i {
	case 0:
		return "start"
	case 4:
		return "end"
	}
	return "middle"
}

func tooltip(e timeline.Event) string {
	s := fmt.Sprintf("%s (%s) %s", e.Name, e.Cat, formatDur(e.Dur))
	keys := make([]string, 0, len(e.Args))
	for k := range e.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fmt.Sprint(e.Args[k])
		s += "\n" + k + ": " + clip(v, 300)
	}
	return s
}

func formatDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}

func clip(s string, n int) string {
	r := []rune(s)
	if n < 2 {
		return ""
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// RooflineSVG draws the roofline of pk (the memory slope up to the ridge,
// then the compute ceiling) with each profile's stages as points, one
// colour a profile (named by its mode).
func RooflineSVG(pk *perf.Peaks, profiles ...*perf.RunProfile) ([]byte, error) {
	lo, hi := pk.Ridge/1000, pk.Ridge*1000
	var series []plot.Series
	for _, p := range profiles {
		s := plot.Series{Name: p.Mode, Scatter: true}
		for _, pt := range p.Roofline(pk) {
			if pt.GFlopsPerS <= 0 {
				continue
			}
			s.X, s.Y = append(s.X, pt.Intensity), append(s.Y, pt.GFlopsPerS)
			lo, hi = math.Min(lo, pt.Intensity), math.Max(hi, pt.Intensity)
		}
		series = append(series, s)
	}
	roof := plot.Series{Name: fmt.Sprintf("roof: %.0f GB/s, %.0f GFLOP/s", pk.CopyGBs, pk.MatmulGFlops),
		X: []float64{lo, pk.Ridge, hi}, Y: []float64{lo * pk.CopyGBs, pk.MatmulGFlops, pk.MatmulGFlops}, Color: plotGrey}
	return plot.LineSVG(plot.Chart{Title: fmt.Sprintf("Roofline (ridge at %.1f FLOP/byte)", pk.Ridge),
		XLabel: "arithmetic intensity (FLOP/byte)", YLabel: "GFLOP/s", LogLog: true,
		Series: append([]plot.Series{roof}, series...)})
}

// StagesHTML is the table of p's top stages by time (all when top is 0).
func StagesHTML(p *perf.RunProfile, top int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<table><caption>%s, %s mode: %.3f ms a run over %d runs; %.3f GFLOP, %.1f MB</caption>`,
		html.EscapeString(p.Workload), html.EscapeString(p.Mode), p.WallS*1e3, p.Runs, float64(p.Flops)/1e9, float64(p.Bytes)/1e6)
	b.WriteString(`<tr><th>node</th><th>op</th><th>calls</th><th>mean µs</th><th>share</th><th>GFLOP</th><th>MB</th><th>GFLOP/s</th><th>GB/s</th></tr>`)
	for i, s := range p.Stages {
		if top > 0 && i == top {
			fmt.Fprintf(&b, `<tr><td colspan="9">… %d more</td></tr>`, len(p.Stages)-top)
			break
		}
		fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td>%d</td><td>%.1f</td><td>%.1f%%</td><td>%.4f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td></tr>`,
			html.EscapeString(s.Name), html.EscapeString(s.Op), s.Calls, s.MeanS*1e6, 100*s.Share,
			float64(s.Flops+s.ElementwiseFlops)/1e9, float64(s.Bytes)/1e6, s.GFlopsPerS, s.GBPerS)
	}
	b.WriteString(`</table>`)
	return b.String()
}

// CompilesHTML is the compile report of p: one row per executable built,
// with the input shapes that caused it and its first call's seconds.
func CompilesHTML(p *perf.RunProfile) string {
	var b strings.Builder
	var total float64
	for _, c := range p.Compiles {
		total += c.Seconds
	}
	fmt.Fprintf(&b, `<table><caption>%s mode: %s compiled, %.2f s (first calls: build, compile, one run); %s found theirs compiled</caption><tr><th>stage</th><th>input shapes</th><th>s</th></tr>`,
		html.EscapeString(p.Mode), count(len(p.Compiles), "executable"), total, count(p.CacheHits, "call"))
	for _, c := range p.Compiles {
		fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td>%.3f</td></tr>`, html.EscapeString(c.Stage), html.EscapeString(c.Shapes), c.Seconds)
	}
	b.WriteString(`</table>`)
	return b.String()
}

// TrainingCompilesHTML is the compile report of a trainer (train.Trainer's
// Compiles and CompileLog): how many executables training and evaluation
// compiled, the input shapes that caused each, its seconds, and how many
// calls found theirs compiled.
func TrainingCompilesHTML(training, evaluation train.Compiles, trainingLog, evaluationLog []train.CompileEvent) string {
	var b strings.Builder
	for _, part := range []struct {
		name string
		n    train.Compiles
		log  []train.CompileEvent
	}{{"training", training, trainingLog}, {"evaluation", evaluation, evaluationLog}} {
		fmt.Fprintf(&b, `<table><caption>%s: %s compiled, %.2f s; %s found theirs compiled</caption><tr><th>input shapes</th><th>s</th></tr>`,
			part.name, count(part.n.Count, "executable"), part.n.Seconds, count(part.n.Hits, "call"))
		for _, e := range part.log {
			fmt.Fprintf(&b, `<tr><td>%s</td><td>%.3f</td></tr>`, html.EscapeString(e.Shapes), e.Seconds)
		}
		b.WriteString(`</table>`)
	}
	return b.String()
}

// HLOHTML shows the modules XLA compiled (perf.ReadHLODump of a folder
// backend.EnableXLADump named), each a collapsed section with its
// optimised HLO text: the fusions XLA formed and the kernels it chose.
func HLOHTML(mods []perf.HLOModule) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<div><p>%d modules compiled by XLA, after its optimisations</p>`, len(mods))
	for _, m := range mods {
		cut := ""
		if m.Truncated {
			cut = fmt.Sprintf(", first %d bytes shown", len(m.Text))
		}
		fmt.Fprintf(&b, `<details><summary>%s (%d bytes%s)</summary><pre>%s</pre></details>`,
			html.EscapeString(m.Name), m.Bytes, cut, html.EscapeString(m.Text))
	}
	b.WriteString(`</div>`)
	return b.String()
}

// count writes n things, with the noun in the plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
