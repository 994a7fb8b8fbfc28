package rtl

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The fixed_adder cases checked against the Go model.
var adderCases = map[string]AdderCase{
	// Equal formats, every pair of Q(4,1) integers, at full rate.
	"equal": {In0: Format{4, 1}, In1: Format{4, 1}, Out: Format{4, 1}, PValid: 100, PReady: 100},
	// A residual add of two fraction widths into the first's format: every
	// pair of Q(8,3) and Q(8,5) integers (floor and saturation on the way).
	"residual": {In0: Format{8, 3}, In1: Format{8, 5}, Out: Format{8, 3}},
	// Wide, mixed inputs into a narrower output with more fraction bits
	// than one input, two rows of two lanes, edges and random pairs.
	"mixed": {In0: Format{16, 8}, In1: Format{12, 2}, Out: Format{10, 4}, P0: 2, P1: 2, PValid: 40, PReady: 30},
}

// TestAddModel: values worked out by hand.
func TestAddModel(t *testing.T) {
	for _, c := range []struct {
		a      int64
		af     Format
		b      int64
		bf     Format
		out    Format
		want   int64
		reason string
	}{
		{5, Format{8, 3}, 7, Format{8, 5}, Format{8, 3}, 6, "0.625 + 0.21875 = 0.84375, floored to 0.75"},
		{127, Format{8, 3}, 127, Format{8, 3}, Format{8, 3}, 127, "15.875 + 15.875 saturates"},
		{-128, Format{8, 3}, -1, Format{8, 5}, Format{8, 3}, -128, "-16 - 0.03125 saturates"},
		{0, Format{8, 3}, -1, Format{8, 5}, Format{8, 3}, -1, "-0.03125 floors to -0.125"},
		{3, Format{4, 1}, 1, Format{4, 2}, Format{8, 4}, 28, "1.5 + 0.25 = 1.75, exact with 4 fraction bits"},
		{-3, Format{4, 1}, 2, Format{4, 1}, Format{4, 0}, -1, "-1.5 + 1 = -0.5 floors to -1"},
	} {
		if got := Add(c.a, c.af, c.b, c.bf, c.out); got != c.want {
			t.Errorf("Add(%d %v, %d %v → %v) = %d, want %d: %s", c.a, c.af, c.b, c.bf, c.out, got, c.want, c.reason)
		}
	}
	if as, bs := adderCases["equal"].Inputs(1); len(as) != 256 || len(bs) != 256 || as[0] != -8 || bs[255] != 7 {
		t.Errorf("equal: %d pairs, want all 256 of Q(4,1)", len(as))
	}
}

// TestFixedAdder streams the cases through fixed_adder with random stalls
// on both inputs and backpressure, every lane compared with Add ("equal"
// runs through CheckAdder below).
func TestFixedAdder(t *testing.T) {
	requireSimulator(t)
	for name, c := range adderCases {
		if name == "equal" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			as, bs := c.Inputs(3)
			p0, p1 := c.lanes()
			res := runPass(t, build(t, c.Testbench(len(as)/(p0*p1))), c.Files(as, bs), 3)
			if res.Checks < len(as) {
				t.Errorf("%v: %d checks for %d lanes", c, res.Checks, len(as))
			}
		})
	}
}

// TestCheckAdderFailsOnAWrongExpectation: CheckAdder passes the equal
// case, and one planted wrong lane in the residual case's y.hex fails its
// build (shared with TestFixedAdder), the lane named.
func TestCheckAdderFailsOnAWrongExpectation(t *testing.T) {
	requireSimulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := adderCases["equal"]
	res, err := CheckAdder(ctx, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed || res.Checks < 256 {
		t.Errorf("%v: passed=%v after %d checks: %v", c, res.Passed, res.Checks, res.Mismatches)
	}
	c = adderCases["residual"]
	as, bs := c.Inputs(3)
	b := build(t, c.Testbench(len(as)/4))
	files := c.Files(as, bs)
	lines := strings.Split(string(files["y.hex"]), "\n")
	lines[37] = map[bool]string{true: "0", false: "1"}[lines[37] != "0"]
	files["y.hex"] = []byte(strings.Join(lines, "\n"))
	bad, err := b.Run(ctx, files, 3)
	if err != nil {
		t.Fatal(err)
	}
	if bad.Passed || bad.Failures != 1 || len(bad.Mismatches) != 1 || !strings.Contains(bad.Mismatches[0], "beat 9 lane 1") {
		t.Errorf("a planted wrong lane: passed=%v, %d failures: %v", bad.Passed, bad.Failures, bad.Mismatches)
	}
}
