package vcd

import (
	"errors"
	"strings"
	"testing"
)

const sample = `$date today $end
$version hand written $end
$timescale 1 ns $end
$scope module top $end
$var wire 1 ! clk $end
$var wire 1 " valid $end
$var wire 4 # data [3:0] $end
$scope module dut $end
$var wire 1 ! clk $end
$var reg 8 $% q[7:0] $end
$var real 64 ( gain $end
$upscope $end
$upscope $end
$enddefinitions $end
$comment the initial values $end
#0
$dumpvars
0!
x"
bx #
b0 $%
r0.5 (
$end
#5
1!
1"
b1010 #
b1 $%
#10
0!
b11111111 $%
r-1.25 (
#15
1!
z"
bz #
#20
0!
`

func TestParseSample(t *testing.T) {
	d, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if d.Timescale != "1ns" || d.End != 20 || d.Date != "today" || d.Version != "hand written" {
		t.Errorf("header: %q end %d date %q version %q", d.Timescale, d.End, d.Date, d.Version)
	}
	if len(d.Signals) != 6 {
		t.Fatalf("%d signals, want 6", len(d.Signals))
	}
	clk := d.Signal("top.clk")
	alias := d.Signal("top.dut.clk")
	if clk == nil || alias == nil || clk == alias {
		t.Fatal("top.clk and its alias top.dut.clk should be two signals")
	}
	if d.Signal("clk") != nil {
		t.Error(`"clk" is ambiguous and should find nothing`)
	}
	if got := clk.RisingEdges(); len(got) != 2 || got[0] != 5 || got[1] != 15 {
		t.Errorf("rising edges %v", got)
	}
	if len(alias.Changes) != len(clk.Changes) {
		t.Errorf("alias has %d changes, clk %d", len(alias.Changes), len(clk.Changes))
	}
	data := d.Signal("data")
	if data == nil || data.Width != 4 || data.MSB != 3 || data.LSB != 0 || data.Ref != "data" || data.Scope != "top" {
		t.Fatalf("data: %+v", data)
	}
	q := d.Signal("dut.q")
	if q == nil || q.ID != "$%" || q.Width != 8 {
		t.Fatalf("q: %+v", q)
	}
	for _, c := range []struct {
		s    *Signal
		t    uint64
		want string
	}{
		{data, 0, "xxxx"}, {data, 4, "xxxx"}, {data, 5, "1010"}, {data, 14, "1010"}, {data, 15, "zzzz"}, {data, 100, "zzzz"},
		{q, 0, "00000000"}, {q, 7, "00000001"}, {q, 10, "11111111"},
		{d.Signal("valid"), 0, "x"}, {d.Signal("valid"), 5, "1"}, {d.Signal("valid"), 16, "z"},
		{d.Signal("gain"), 3, "0.5"}, {d.Signal("gain"), 12, "-1.25"},
	} {
		if got := c.s.At(c.t); got != c.want {
			t.Errorf("%s at %d = %q, want %q", c.s.Name, c.t, got, c.want)
		}
	}
	if v, ok := q.Int(10); !ok || v != -1 {
		t.Errorf("q as signed at 10: %d %v", v, ok)
	}
	if v, ok := q.Uint(10); !ok || v != 255 {
		t.Errorf("q as unsigned at 10: %d %v", v, ok)
	}
	if _, ok := data.Uint(0); ok {
		t.Error("x bits must not convert")
	}
	if got := len(d.Match("top.dut.")); got != 3 {
		t.Errorf("prefix top.dut. matches %d signals, want 3", got)
	}
	if h := BitsHex("1x0000000"); h != "1X0" {
		t.Errorf("BitsHex = %q", h)
	}
}

func TestParseErrors(t *testing.T) {
	head := "$timescale 1ps $end\n$scope module t $end\n$var wire 2 a v $end\n$upscope $end\n$enddefinitions $end\n"
	for _, c := range []struct{ name, text, want string }{
		{"undeclared id", head + "#0\nb00 a\n1q\n", "line 8: value change for undeclared identifier \"q\""},
		{"too wide", head + "#0\nb101 a\n", "line 7: value \"101\" has 3 bits"},
		{"bad time", head + "#0\n#1x\n", "line 7: bad time \"#1x\""},
		{"time back", head + "#5\n#3\n", "line 7: time 3 goes back"},
		{"bad vector", head + "#0\nb12 a\n", "line 7: bad vector value \"b12\""},
		{"no id", head + "#0\nb01\n", "line 7: value \"b01\" has no identifier"},
		{"junk", head + "#0\nhello\n", "line 7: unexpected \"hello\""},
		{"no $end", "$timescale 1ps $end\n$scope module t $end\n$var wire 1 ! x\n", "line 3: $var without $end"},
		{"bad size", "$scope module t $end\n$var wire w ! x $end\n", "line 2: $var size \"w\""},
		{"upscope", "$upscope $end\n", "line 1: $upscope without $scope"},
		{"unclosed scope", "$scope module t $end\n$var wire 1 ! x $end\n$enddefinitions $end\n", "line 3: $enddefinitions inside $scope t"},
		{"not vcd", "hello world\n", "line 1: unexpected \"hello\" in the header"},
		{"empty", "", "no $var declarations"},
		{"unknown command", "$frobnicate x $end\n", "line 1: unknown command $frobnicate"},
		{"real to bits", head + "#0\nr1.5 a\n", "line 7: real value for wire t.v"},
	} {
		_, err := Parse(strings.NewReader(c.text))
		var pe *ParseError
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		} else if c.name != "empty" && !errors.As(err, &pe) {
			t.Errorf("%s: %T is not a *ParseError", c.name, err)
		}
	}
}

// TestArrayElementReferences reads Verilator's declarations of unpacked
// array elements: the index is part of the name, the range follows.
func TestArrayElementReferences(t *testing.T) {
	src := `$timescale 1ps $end
$scope module top $end
$var wire 8 ! held[0] [7:0] $end
$var wire 8 " held[1] [7:0] $end
$var wire 1 # flags [2] $end
$upscope $end
$enddefinitions $end
#0
b00000101 !
b11111111 "
1#
`
	d, err := Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	h0, h1, f := d.Signal("top.held[0]"), d.Signal("top.held[1]"), d.Signal("top.flags[2]")
	if h0 == nil || h1 == nil || f == nil {
		t.Fatalf("signals %v", d.Signals)
	}
	if h0.Width != 8 || h0.MSB != 7 || h0.LSB != 0 {
		t.Errorf("held[0]: width %d [%d:%d]", h0.Width, h0.MSB, h0.LSB)
	}
	if v, _ := h1.Int(0); v != -1 {
		t.Errorf("held[1] = %d, want -1", v)
	}
	if v, _ := h0.Uint(0); v != 5 {
		t.Errorf("held[0] = %d, want 5", v)
	}
	if f.MSB != 2 || f.LSB != 2 {
		t.Errorf("flags[2]: [%d:%d]", f.MSB, f.LSB)
	}
}

func TestHandshakes(t *testing.T) {
	const src = `$timescale 1ns $end
$scope module tb $end
$var wire 1 ! clk $end
$var wire 1 " valid $end
$var wire 1 # ready $end
$upscope $end
$enddefinitions $end
#0
0!
0"
1#
#5
1!
#10
0!
1"
#15
1!
#20
0!
0#
#25
1!
#30
0!
1#
#35
1!
#40
0!
`
	d, err := Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	// Edges at 5 (valid 0), 15 (beat), 25 (ready 0), 35 (beat).
	got, err := d.Handshakes("clk", "valid", "ready")
	if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("Handshakes = %v, %v; want [1 3]", got, err)
	}
	if _, err := d.Handshakes("clk", "nope", "ready"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("a missing signal: %v", err)
	}
}
