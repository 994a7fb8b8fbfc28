// Package vcd reads Value Change Dump files (IEEE 1364 §18) as Verilator
// and Icarus Verilog write them, and draws waveforms from them as static SVG
// (SVG).
//
// Parse reads the header ($timescale, $scope/$upscope, $var) and the value
// changes (#time, scalar 0/1/x/z changes, b… vector changes, r… real
// changes) into a Dump: one Signal per $var, named by its dot-separated
// hierarchical path (TOP.tb_skid_buffer.dut.data_in_valid), each with its
// list of changes. Values are bit strings, most significant bit first,
// always of the signal's width (shorter vector values are extended as the
// standard says: with 0, or with x/z when the leftmost given bit is x/z);
// real values keep their text. Identifiers shared by several $var lines
// (aliases, which Verilator emits for nets connected through ports) feed
// every signal that declares them.
//
// Malformed input gives an error naming the line. rtl.Testbench.Trace makes
// the simulation driver write a dump of a testbench run.
package vcd

import (
	"bufio"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// Dump is a parsed VCD file.
type Dump struct {
	Timescale string    // the $timescale text, e.g. "1ps"
	Date      string    // the $date text, if any
	Version   string    // the $version text, if any
	Signals   []*Signal // in declaration order
	End       uint64    // the last #time in the file
	byName    map[string]*Signal
}

// Signal is one declared variable and its value changes.
type Signal struct {
	Name    string   // hierarchical name, scopes joined by "."
	Scope   string   // the enclosing scopes, joined by "."
	Ref     string   // the name in its scope, without the bit range
	Kind    string   // the $var type: wire, reg, logic, integer, real, ...
	Width   int      // bits (the $var size)
	MSB     int      // left bound of the declared range (Width-1 if none)
	LSB     int      // right bound of the declared range (0 if none)
	ID      string   // the identifier code
	Changes []Change // in time order, at most one per time
}

// Change is the value of a signal from Time on.
type Change struct {
	Time  uint64
	Value string // bits, MSB first, Width long ('0','1','x','z'); text for reals
}

// Real reports whether the signal carries real values.
func (s *Signal) Real() bool { return s.Kind == "real" || s.Kind == "realtime" }

// At returns the signal's value at time t: that of the last change at or
// before t, or all x before the first change.
func (s *Signal) At(t uint64) string {
	i := sort.Search(len(s.Changes), func(i int) bool { return s.Changes[i].Time > t })
	if i == 0 {
		if s.Real() {
			return "x"
		}
		return strings.Repeat("x", s.Width)
	}
	return s.Changes[i-1].Value
}

// Uint returns the value at time t as an unsigned integer; ok is false when
// it has x or z bits or is wider than 64 bits.
func (s *Signal) Uint(t uint64) (v uint64, ok bool) {
	return BitsUint(s.At(t))
}

// Int returns the value at time t as a two's complement signed integer; ok
// is false when it has x or z bits or is wider than 64 bits.
func (s *Signal) Int(t uint64) (v int64, ok bool) {
	return BitsInt(s.At(t))
}

// BitsUint converts a bit string (MSB first) to an unsigned integer; ok is
// false when it has x or z bits or more than 64 bits.
func BitsUint(bits string) (uint64, bool) {
	if len(bits) == 0 || len(bits) > 64 {
		return 0, false
	}
	v, err := strconv.ParseUint(bits, 2, 64)
	return v, err == nil
}

// BitsInt converts a bit string (MSB first) to a two's complement signed
// integer; ok is false when it has x or z bits or more than 64 bits.
func BitsInt(bits string) (int64, bool) {
	u, ok := BitsUint(bits)
	if !ok {
		return 0, false
	}
	n := len(bits)
	if n < 64 && bits[0] == '1' {
		return int64(u) - int64(1)<<n, true
	}
	return int64(u), true
}

// BitsHex writes a bit string in hexadecimal, one digit per 4 bits (x or z
// for a digit whose bits are all x or z, X or Z when only some are).
func BitsHex(bits string) string {
	if !strings.ContainsAny(bits, "xXzZ") {
		n, ok := new(big.Int).SetString(bits, 2)
		if !ok {
			return bits
		}
		return n.Text(16)
	}
	pad := (4 - len(bits)%4) % 4
	b := strings.Repeat("0", pad) + strings.ToLower(bits)
	var out strings.Builder
	for i := 0; i < len(b); i += 4 {
		d := b[i : i+4]
		switch {
		case d == "xxxx":
			out.WriteByte('x')
		case d == "zzzz":
			out.WriteByte('z')
		case strings.Contains(d, "x"):
			out.WriteByte('X')
		case strings.Contains(d, "z"):
			out.WriteByte('Z')
		default:
			v, _ := strconv.ParseUint(d, 2, 8)
			out.WriteString(strconv.FormatUint(v, 16))
		}
	}
	s := strings.TrimLeft(out.String(), "0")
	if s == "" {
		s = "0"
	}
	return s
}

// Signal returns the signal with this hierarchical name, or else the only
// signal whose name ends in "."+name (so "dut.data_in_valid" finds
// "TOP.tb.dut.data_in_valid"); nil when there is none or the suffix is
// ambiguous.
func (d *Dump) Signal(name string) *Signal {
	if s := d.byName[name]; s != nil {
		return s
	}
	var found *Signal
	for _, s := range d.Signals {
		if strings.HasSuffix(s.Name, "."+name) {
			if found != nil {
				return nil
			}
			found = s
		}
	}
	return found
}

// Match returns the signals named by pattern, in declaration order: the one
// signal Signal(pattern) finds, or else every signal whose hierarchical name
// starts with pattern (a scope prefix such as "TOP.tb.dut." or "TOP.tb.dut").
func (d *Dump) Match(pattern string) []*Signal {
	if s := d.Signal(pattern); s != nil {
		return []*Signal{s}
	}
	var out []*Signal
	for _, s := range d.Signals {
		if strings.HasPrefix(s.Name, pattern) {
			out = append(out, s)
		}
	}
	return out
}

// RisingEdges returns the times at which a 1-bit signal (a clock) changes
// from 0 to 1.
func (s *Signal) RisingEdges() []uint64 {
	var out []uint64
	prev := ""
	for _, c := range s.Changes {
		if c.Value == "1" && prev == "0" {
			out = append(out, c.Time)
		}
		prev = c.Value
	}
	return out
}

// ParseError is a malformed-input error with its line number.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("vcd: line %d: %s", e.Line, e.Msg) }

type token struct {
	text string
	line int
}

// tokenizer yields whitespace-separated tokens with their line numbers.
type tokenizer struct {
	sc     *bufio.Scanner
	line   int
	fields []string
}

func (tz *tokenizer) next() (token, bool, error) {
	for len(tz.fields) == 0 {
		if !tz.sc.Scan() {
			return token{}, false, tz.sc.Err()
		}
		tz.line++
		tz.fields = strings.Fields(tz.sc.Text())
	}
	t := token{tz.fields[0], tz.line}
	tz.fields = tz.fields[1:]
	return t, true, nil
}

// Parse reads a VCD file.
func Parse(r io.Reader) (*Dump, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	p := &parser{tz: &tokenizer{sc: sc}, d: &Dump{byName: map[string]*Signal{}}, ids: map[string][]*Signal{}}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.d, nil
}

type parser struct {
	tz     *tokenizer
	d      *Dump
	ids    map[string][]*Signal
	scopes []string
	inData bool
	now    uint64
	seenT  bool
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &ParseError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) next() (token, bool, error) {
	t, ok, err := p.tz.next()
	if err != nil {
		return t, false, fmt.Errorf("vcd: line %d: %v", p.tz.line, err)
	}
	return t, ok, nil
}

// body reads the tokens of a command up to its $end.
func (p *parser) body(cmd token) ([]token, error) {
	var out []token
	for {
		t, ok, err := p.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, p.errf(cmd.line, "%s without $end", cmd.text)
		}
		if t.text == "$end" {
			return out, nil
		}
		out = append(out, t)
	}
}

func join(ts []token) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.text
	}
	return strings.Join(s, " ")
}

func (p *parser) run() error {
	for {
		t, ok, err := p.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := p.token(t); err != nil {
			return err
		}
	}
	if !p.inData && len(p.d.Signals) == 0 {
		return p.errf(p.tz.line, "no $var declarations: not a VCD file")
	}
	if len(p.scopes) != 0 && !p.inData {
		return p.errf(p.tz.line, "$scope %s not closed", strings.Join(p.scopes, "."))
	}
	return nil
}

func (p *parser) token(t token) error {
	s := t.text
	switch {
	case strings.HasPrefix(s, "$"):
		return p.command(t)
	case !p.inData:
		return p.errf(t.line, "unexpected %q in the header (before $enddefinitions)", s)
	case s[0] == '#':
		v, err := strconv.ParseUint(s[1:], 10, 64)
		if err != nil {
			return p.errf(t.line, "bad time %q", s)
		}
		if p.seenT && v < p.now {
			return p.errf(t.line, "time %d goes back (after %d)", v, p.now)
		}
		p.now, p.seenT = v, true
		if v > p.d.End {
			p.d.End = v
		}
		return nil
	case strings.ContainsRune("01xXzZ", rune(s[0])):
		if len(s) < 2 {
			return p.errf(t.line, "scalar change %q has no identifier", s)
		}
		return p.change(t, s[1:], strings.ToLower(s[:1]), false)
	case s[0] == 'b' || s[0] == 'B' || s[0] == 'r' || s[0] == 'R':
		id, ok, err := p.next()
		if err != nil {
			return err
		}
		if !ok {
			return p.errf(t.line, "value %q has no identifier", s)
		}
		if s[0] == 'r' || s[0] == 'R' {
			if _, err := strconv.ParseFloat(s[1:], 64); err != nil {
				return p.errf(t.line, "bad real value %q", s)
			}
			return p.change(id, id.text, s[1:], true)
		}
		bits := strings.ToLower(s[1:])
		if bits == "" || strings.Trim(bits, "01xz") != "" {
			return p.errf(t.line, "bad vector value %q", s)
		}
		return p.change(id, id.text, bits, false)
	default:
		return p.errf(t.line, "unexpected %q", s)
	}
}

func (p *parser) change(t token, id, value string, real bool) error {
	sigs := p.ids[id]
	if len(sigs) == 0 {
		return p.errf(t.line, "value change for undeclared identifier %q", id)
	}
	for _, sig := range sigs {
		v := value
		if real != sig.Real() {
			return p.errf(t.line, "%s value for %s %s (%s)", map[bool]string{true: "real", false: "bit"}[real], sig.Kind, sig.Name, id)
		}
		if !real {
			if len(v) > sig.Width {
				return p.errf(t.line, "value %q has %d bits, %s is %d wide", v, len(v), sig.Name, sig.Width)
			}
			if len(v) < sig.Width {
				fill := "0"
				if v[0] == 'x' || v[0] == 'z' {
					fill = v[:1]
				}
				v = strings.Repeat(fill, sig.Width-len(v)) + v
			}
		}
		if n := len(sig.Changes); n > 0 && sig.Changes[n-1].Time == p.now {
			sig.Changes[n-1].Value = v
			if n > 1 && sig.Changes[n-2].Value == v {
				sig.Changes = sig.Changes[:n-1]
			}
			continue
		}
		if n := len(sig.Changes); n > 0 && sig.Changes[n-1].Value == v {
			continue // no change (a $dumpall or a repeated value)
		}
		sig.Changes = append(sig.Changes, Change{Time: p.now, Value: v})
	}
	return nil
}

func (p *parser) command(t token) error {
	switch t.text {
	case "$end":
		return nil // closes $dumpvars / $dumpall / $dumpon / $dumpoff
	case "$dumpvars", "$dumpall", "$dumpon", "$dumpoff":
		if !p.inData {
			return p.errf(t.line, "%s before $enddefinitions", t.text)
		}
		return nil
	}
	body, err := p.body(t)
	if err != nil {
		return err
	}
	switch t.text {
	case "$comment":
	case "$date":
		p.d.Date = join(body)
	case "$version":
		p.d.Version = join(body)
	case "$timescale":
		p.d.Timescale = strings.ReplaceAll(join(body), " ", "")
		if p.d.Timescale == "" {
			return p.errf(t.line, "empty $timescale")
		}
	case "$scope":
		if len(body) < 2 {
			return p.errf(t.line, "$scope needs a type and a name")
		}
		p.scopes = append(p.scopes, body[1].text)
	case "$upscope":
		if len(p.scopes) == 0 {
			return p.errf(t.line, "$upscope without $scope")
		}
		p.scopes = p.scopes[:len(p.scopes)-1]
	case "$var":
		return p.variable(t, body)
	case "$enddefinitions":
		if len(p.scopes) != 0 {
			return p.errf(t.line, "$enddefinitions inside $scope %s", strings.Join(p.scopes, "."))
		}
		p.inData = true
	default:
		return p.errf(t.line, "unknown command %s", t.text)
	}
	return nil
}

func (p *parser) variable(t token, body []token) error {
	if p.inData {
		return p.errf(t.line, "$var after $enddefinitions")
	}
	if len(body) < 4 {
		return p.errf(t.line, "$var needs type, size, identifier and name, got %q", join(body))
	}
	width, err := strconv.Atoi(body[1].text)
	if err != nil || width < 1 {
		return p.errf(t.line, "$var size %q is not a positive number", body[1].text)
	}
	ref := join(body[3:])
	sig := &Signal{Kind: body[0].text, Width: width, ID: body[2].text, MSB: width - 1}
	// The reference is a name, then optionally a bit range or a bit
	// select in brackets. The name itself may hold array indices, as
	// Verilator writes elements of unpacked arrays: "held[0] [7:0]".
	// Only the last bracket group can be the range.
	if i := strings.LastIndexByte(ref, '['); i >= 0 {
		rng := strings.TrimSpace(ref[i:])
		name := strings.TrimSpace(ref[:i])
		if !strings.HasSuffix(rng, "]") {
			return p.errf(t.line, "bad range %q", rng)
		}
		inner := strings.ReplaceAll(rng[1:len(rng)-1], " ", "")
		hi, lo, isRange := strings.Cut(inner, ":")
		msb, err1 := strconv.Atoi(hi)
		lsb := msb
		var err2 error
		if isRange {
			lsb, err2 = strconv.Atoi(lo)
		}
		switch {
		case err1 != nil || err2 != nil || name == "":
			return p.errf(t.line, "bad range %q", rng)
		case isRange:
			sig.MSB, sig.LSB = msb, lsb
			ref = name
		default:
			// A single index: a bit select of a vector (kept in the
			// name) or an array element; the signal's bits are its own.
			sig.MSB, sig.LSB = msb, msb
			if width > 1 {
				sig.MSB, sig.LSB = width-1, 0
			}
			ref = name + rng
		}
	}
	if sig.Real() {
		sig.MSB, sig.LSB = 0, 0
	}
	sig.Ref = ref
	sig.Scope = strings.Join(p.scopes, ".")
	sig.Name = ref
	if sig.Scope != "" {
		sig.Name = sig.Scope + "." + ref
	}
	if _, dup := p.d.byName[sig.Name]; dup {
		return p.errf(t.line, "signal %s declared twice", sig.Name)
	}
	p.d.byName[sig.Name] = sig
	p.d.Signals = append(p.d.Signals, sig)
	p.ids[sig.ID] = append(p.ids[sig.ID], sig)
	return nil
}

// Handshakes returns the rising edges of clk (counted from 0, as in
// RisingEdges) at which a valid/ready stream moved a beat: valid and ready
// both 1 just before the edge. Each name is looked up as Signal does; the
// error names a signal the dump lacks.
func (d *Dump) Handshakes(clk, valid, ready string) ([]int, error) {
	var sigs [3]*Signal
	for i, name := range []string{clk, valid, ready} {
		if sigs[i] = d.Signal(name); sigs[i] == nil {
			return nil, fmt.Errorf("vcd: no signal %q in the dump (or more than one ends so)", name)
		}
	}
	high := func(s *Signal, t uint64) bool {
		if t == 0 {
			return false
		}
		v, ok := s.Uint(t - 1)
		return ok && v == 1
	}
	var out []int
	for i, t := range sigs[0].RisingEdges() {
		if high(sigs[1], t) && high(sigs[2], t) {
			out = append(out, i)
		}
	}
	return out, nil
}
