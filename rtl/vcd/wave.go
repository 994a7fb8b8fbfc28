package vcd

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Radix selects how bus values are written inside their segments.
type Radix int

// The radixes of bus labels.
const (
	Hex      Radix = iota // hexadecimal (the default)
	Signed                // two's complement signed decimal
	Unsigned              // unsigned decimal
)

// Options choose what SVG draws.
type Options struct {
	// Signals names the signals to draw, top to bottom: each entry is a
	// name or a prefix as Dump.Match takes it. Empty means every signal.
	Signals []string
	// Start and End bound the time window; End 0 means the dump's end.
	Start, End uint64
	Width      float64 // picture width in pixels; 0 means 1000
	Radix      Radix   // how bus values are written
	// Clocks names 1-bit signals to draw as clocks; when empty, 1-bit
	// signals whose name is clk, clock, or ends in _clk are clocks.
	Clocks []string
}

// Geometry of the picture, in pixels.
const (
	rowHeight  = 24.0
	waveHeight = 16.0
	fontSize   = 11.0
	charWidth  = 0.6 * fontSize // monospace advance
	axisHeight = 28.0
	slant      = 3.0 // bus hexagon corners
	margin     = 6.0
)

// SVG renders the chosen signals of a dump over a time window as a static,
// self-contained SVG image: no scripts, no external fonts or style sheets
// (text uses the generic monospace family), so it reads offline in a
// notebook or an HTML report. Each signal is one row (a <g class="row">
// carrying data-signal) with its name on the left; clocks are square waves,
// other 1-bit signals high/low lines, buses hexagon-style segments (<g
// class="seg"> with data-t0, the time the value starts) with the value
// written inside where it fits; x is drawn red, z as a middle line. A time
// axis in the dump's time unit runs along the bottom. Every segment has a
// <title> (the full value and its time span), shown as a tooltip.
func SVG(d *Dump, opts Options) ([]byte, error) {
	sigs, err := choose(d, opts.Signals)
	if err != nil {
		return nil, err
	}
	start, end := opts.Start, opts.End
	if end == 0 {
		end = d.End
	}
	if end <= start {
		return nil, fmt.Errorf("vcd: empty time window [%d, %d]", start, end)
	}
	width := opts.Width
	if width == 0 {
		width = 1000
	}
	names := shortNames(sigs)
	nameW := 0.0
	for _, n := range names {
		nameW = math.Max(nameW, float64(len(n))*charWidth)
	}
	left := margin + nameW + 2*margin
	right := width - margin
	if right-left < 50 {
		return nil, fmt.Errorf("vcd: width %.0f leaves no room for waves next to names %.0f px wide", width, nameW)
	}
	scale := (right - left) / float64(end-start)
	x := func(t uint64) float64 { return left + float64(t-start)*scale }
	height := float64(len(sigs))*rowHeight + axisHeight + margin

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="monospace" font-size="%s">`+"\n",
		num(width), num(height), num(width), num(height), num(fontSize))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" fill="white"/>`+"\n", num(width), num(height))
	isClock := clockSet(sigs, opts.Clocks)
	for i, s := range sigs {
		top := float64(i) * rowHeight
		hi, lo := top+(rowHeight-waveHeight)/2, top+(rowHeight+waveHeight)/2
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="0" y="%s" width="%s" height="%s" fill="#f4f6f8"/>`+"\n", num(top), num(width), num(rowHeight))
		}
		fmt.Fprintf(&b, `<g class="row" data-signal="%s">`+"\n", esc(s.Name))
		fmt.Fprintf(&b, `<text class="name" x="%s" y="%s" dominant-baseline="middle"><title>%s</title>%s</text>`+"\n",
			num(margin), num(top+rowHeight/2), esc(s.Name), esc(names[i]))
		segs := segments(s, start, end)
		switch {
		case s.Width == 1 && !s.Real():
			color := "#1f77b4"
			if isClock[s] {
				color = "#2ca02c"
			}
			drawBit(&b, segs, x, hi, lo, color)
		default:
			drawBus(&b, s, segs, x, hi, lo, opts.Radix)
		}
		b.WriteString("</g>\n")
	}
	drawAxis(&b, d, start, end, x, float64(len(sigs))*rowHeight, left, right)
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

// choose resolves the signal names and prefixes of the options.
func choose(d *Dump, patterns []string) ([]*Signal, error) {
	if len(patterns) == 0 {
		if len(d.Signals) == 0 {
			return nil, errors.New("vcd: the dump has no signals")
		}
		return d.Signals, nil
	}
	var out []*Signal
	seen := map[*Signal]bool{}
	for _, p := range patterns {
		m := d.Match(p)
		if len(m) == 0 {
			return nil, fmt.Errorf("vcd: no signal matches %q", p)
		}
		for _, s := range m {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// shortNames drops the scope prefix all signals share.
func shortNames(sigs []*Signal) []string {
	prefix := sigs[0].Scope
	for _, s := range sigs[1:] {
		for prefix != "" && s.Scope != prefix && !strings.HasPrefix(s.Scope, prefix+".") {
			i := strings.LastIndexByte(prefix, '.')
			if i < 0 {
				prefix = ""
			} else {
				prefix = prefix[:i]
			}
		}
	}
	out := make([]string, len(sigs))
	for i, s := range sigs {
		n := s.Name
		if prefix != "" {
			n = strings.TrimPrefix(n, prefix+".")
		}
		if s.Width > 1 && !s.Real() {
			n += fmt.Sprintf("[%d:%d]", s.MSB, s.LSB)
		}
		out[i] = n
	}
	return out
}

func clockSet(sigs []*Signal, clocks []string) map[*Signal]bool {
	set := map[*Signal]bool{}
	for _, s := range sigs {
		if s.Width != 1 {
			continue
		}
		if len(clocks) == 0 {
			if s.Ref == "clk" || s.Ref == "clock" || strings.HasSuffix(s.Ref, "_clk") {
				set[s] = true
			}
			continue
		}
		for _, c := range clocks {
			if s.Name == c || strings.HasSuffix(s.Name, "."+c) {
				set[s] = true
			}
		}
	}
	return set
}

type segment struct {
	t0, t1 uint64
	value  string
}

// segments cuts a signal's changes to the window [start, end].
func segments(s *Signal, start, end uint64) []segment {
	var out []segment
	cur := segment{t0: start, value: s.At(start)}
	for _, c := range s.Changes {
		if c.Time <= start {
			continue
		}
		if c.Time >= end {
			break
		}
		cur.t1 = c.Time
		out = append(out, cur)
		cur = segment{t0: c.Time, value: c.Value}
	}
	cur.t1 = end
	return append(out, cur)
}

func drawBit(b *bytes.Buffer, segs []segment, x func(uint64) float64, hi, lo float64, color string) {
	mid := (hi + lo) / 2
	level := func(v string) float64 {
		switch v {
		case "1":
			return hi
		case "0":
			return lo
		}
		return mid
	}
	var path strings.Builder
	for i, sg := range segs {
		y := level(sg.value)
		if i == 0 {
			fmt.Fprintf(&path, "M%s %s", num(x(sg.t0)), num(y))
		} else {
			fmt.Fprintf(&path, "V%s", num(y))
		}
		fmt.Fprintf(&path, "H%s", num(x(sg.t1)))
	}
	fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", path.String(), color)
	for _, sg := range segs {
		if sg.value == "x" {
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="#d62728" fill-opacity="0.3"/>`+"\n",
				num(x(sg.t0)), num(hi), num(x(sg.t1)-x(sg.t0)), num(lo-hi))
		}
	}
}

// Label returns a bus value as SVG writes it inside a segment: in the radix
// asked for, or in hex when the value has x or z bits (or is real text).
func Label(value string, r Radix) string {
	if strings.Trim(value, "01") != "" || len(value) > 64 {
		if strings.Trim(value, "01xz") == "" {
			return BitsHex(value)
		}
		return value // a real
	}
	switch r {
	case Signed:
		v, _ := BitsInt(value)
		return strconv.FormatInt(v, 10)
	case Unsigned:
		v, _ := BitsUint(value)
		return strconv.FormatUint(v, 10)
	}
	return BitsHex(value)
}

func drawBus(b *bytes.Buffer, s *Signal, segs []segment, x func(uint64) float64, hi, lo float64, r Radix) {
	mid := (hi + lo) / 2
	for _, sg := range segs {
		x0, x1 := x(sg.t0), x(sg.t1)
		c := math.Min(slant, (x1-x0)/2)
		fill, stroke := "#e8f0fa", "#1f77b4"
		switch {
		case strings.Contains(sg.value, "x"):
			fill, stroke = "#f6d5d5", "#d62728"
		case strings.Trim(sg.value, "z") == "":
			fill, stroke = "none", "#ff7f0e"
		}
		label := Label(sg.value, r)
		fmt.Fprintf(b, `<g class="seg" data-t0="%d"><title>%s = %s @ %d..%d</title>`, sg.t0, esc(s.Ref), esc(label), sg.t0, sg.t1)
		if fill == "none" {
			fmt.Fprintf(b, `<path d="M%s %sH%s" stroke="%s" fill="none"/>`, num(x0), num(mid), num(x1), stroke)
		} else {
			fmt.Fprintf(b, `<polygon points="%s,%s %s,%s %s,%s %s,%s %s,%s %s,%s" fill="%s" stroke="%s"/>`,
				num(x0), num(mid), num(x0+c), num(hi), num(x1-c), num(hi), num(x1), num(mid), num(x1-c), num(lo), num(x0+c), num(lo),
				fill, stroke)
		}
		if float64(len(label))*charWidth+2*slant+2 <= x1-x0 {
			fmt.Fprintf(b, `<text class="value" x="%s" y="%s" text-anchor="middle" dominant-baseline="middle">%s</text>`,
				num((x0+x1)/2), num(mid), esc(label))
		}
		b.WriteString("</g>\n")
	}
}

func drawAxis(b *bytes.Buffer, d *Dump, start, end uint64, x func(uint64) float64, top, left, right float64) {
	y := top + 4
	fmt.Fprintf(b, `<g class="axis"><path d="M%s %sH%s" stroke="#555"/>`+"\n", num(left), num(y), num(right))
	step := niceStep(float64(end-start) / math.Max(1, math.Floor((right-left)/90)))
	first := (start + step - 1) / step * step
	perTick, unit := axisUnit(d.Timescale, step)
	for t := first; t <= end; t += step {
		fmt.Fprintf(b, `<path d="M%s %sV%s" stroke="#555"/><path d="M%s 0V%s" stroke="#ccc" stroke-dasharray="2,3"/><text x="%s" y="%s" text-anchor="middle" fill="#333">%s</text>`+"\n",
			num(x(t)), num(y), num(y+4), num(x(t)), num(top), num(x(t)), num(y+15), strconv.FormatFloat(float64(t)*perTick, 'g', 6, 64))
	}
	fmt.Fprintf(b, `<text x="%s" y="%s" fill="#333">time (%s)</text>`+"\n", num(margin), num(y+15), esc(unit))
	b.WriteString("</g>\n")
}

// timeUnits are the SI time units a VCD timescale names, by power of ten.
var timeUnits = []struct {
	name string
	exp  int
}{{"s", 0}, {"ms", -3}, {"us", -6}, {"ns", -9}, {"ps", -12}, {"fs", -15}}

// axisUnit picks the unit the time axis is labelled in: the largest SI
// unit in which a tick step of step dump units is at least 1, so that a
// 1ps dump ticking every 20000 is labelled 20, 40, … ns. It returns the
// factor from dump units to that unit and its name; a timescale it cannot
// read keeps the dump's units, named by the timescale ("?" when empty).
func axisUnit(timescale string, step uint64) (float64, string) {
	ts := strings.ReplaceAll(strings.TrimSpace(timescale), " ", "")
	i := strings.IndexFunc(ts, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return 1, cmp.Or(timescale, "?")
	}
	mult, err := strconv.Atoi(ts[:i])
	if err != nil || mult <= 0 {
		return 1, timescale
	}
	exp, ok := 0, false
	for _, u := range timeUnits {
		if u.name == ts[i:] {
			exp, ok = u.exp, true
		}
	}
	if !ok {
		return 1, timescale
	}
	for _, u := range timeUnits {
		f := float64(mult) * math.Pow(10, float64(exp-u.exp))
		if float64(step)*f >= 1-1e-9 {
			name := u.name
			if name == "us" {
				name = "µs"
			}
			return f, name
		}
	}
	return float64(mult), ts[i:]
}

// niceStep rounds a tick spacing up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) uint64 {
	if raw <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return uint64(m * p)
		}
	}
	return uint64(10 * p)
}

func num(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

func esc(s string) string { return html.EscapeString(s) }
