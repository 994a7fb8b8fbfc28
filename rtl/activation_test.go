package rtl

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The activation cases checked against the Go models, every input value.
var activationCases = map[string]ActivationCase{
	// The lab's Leaky ReLU: Q5.3, torch's default slope 0.01 as
	// passes.FixedSlope gives it at 8 bits (41/2^12: more fraction bits
	// than the slope's width).
	"lab": {Leaky: true, In: q53, Out: q53, SlopeWidth: 8, SlopeValue: 41, SlopeFrac: 12},
	// Q(8,4), slope 1/16 (-64 -> -4, -1 -> -1), two rows of two lanes.
	"sixteenth": {Leaky: true, In: Format{8, 4}, Out: Format{8, 4}, SlopeWidth: 8, SlopeValue: 1, SlopeFrac: 4, P0: 2, P1: 2},
	// A slope above 1 (3/2) into a narrower output, saturating on both
	// sides, three lanes (the inputs padded to whole beats).
	"steep": {Leaky: true, In: Format{8, 3}, Out: Format{6, 2}, SlopeWidth: 4, SlopeValue: 3, SlopeFrac: 1, P0: 3},
	// A negative slope (-1/4): negative inputs come out positive.
	"negative": {Leaky: true, In: Format{7, 2}, Out: Format{7, 2}, SlopeWidth: 4, SlopeValue: -1, SlopeFrac: 2},
	// ReLU through the same testbench.
	"relu": {In: Format{10, 4}, Out: Format{6, 2}},
	// GELU: every Q(10,6) input into a narrower output, two rows of two
	// lanes.
	"gelu": {GELU: true, In: Format{10, 6}, Out: Format{8, 4}, P0: 2, P1: 2},
	// GELU on wide inputs, where every constant's last bit shows in some
	// outputs (narrow inputs hide it): Q(16,12), edges and random values.
	"gelu-wide": {GELU: true, In: Format{16, 12}, Out: Format{16, 12}},
}

func TestActivationModels(t *testing.T) {
	c := activationCases["sixteenth"]
	for x, want := range map[int64]int64{-64: -4, -1: -1, 0: 0, 5: 5, 127: 127, -128: -8} {
		if got := c.Model(x); got != want {
			t.Errorf("%v: Model(%d) = %d, want %d", c, x, got, want)
		}
	}
	if got := activationCases["steep"].Model(-100); got != -32 {
		t.Errorf("steep: Model(-100) = %d, want -32 (saturated)", got)
	}
	if got := activationCases["negative"].Model(-8); got != 2 {
		t.Errorf("negative slope: Model(-8) = %d, want 2", got)
	}
	if xs := activationCases["steep"].Inputs(1); len(xs) != 258 || xs[0] != -128 || xs[255] != 127 {
		t.Errorf("steep: Inputs has %d values from %d to %d, want every Q(8,3) integer padded to 258", len(xs), xs[0], xs[255])
	}
}

// Every case but the lab's, which TestCheckActivation runs.
func TestActivationAgainstGoModel(t *testing.T) {
	requireSimulator(t)
	for name, c := range activationCases {
		if name == "lab" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			xs := c.Inputs(7)
			p0, p1 := c.lanes()
			runPass(t, build(t, c.Testbench(len(xs)/(p0*p1))), c.Files(xs), 7)
		})
	}
}

// CheckActivation is what the notebook runs; a planted wrong expectation
// must fail with exactly that lane named.
func TestCheckActivation(t *testing.T) {
	requireSimulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := activationCases["lab"]
	res, err := CheckActivation(ctx, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Passed || res.Checks != 256+2*64 {
		t.Errorf("%v: passed=%v after %d checks: %v", c, res.Passed, res.Checks, res.Mismatches)
	}
	// On the Q(8,4) case's build (2×2 lanes), shared with TestActivationAgainstGoModel.
	c = activationCases["sixteenth"]
	xs := c.Inputs(7)
	b := build(t, c.Testbench(len(xs)/4))
	files := c.Files(xs)
	lines := strings.Split(string(files["y.hex"]), "\n")
	lines[5] = Hex(c.Model(xs[5])+1, 8) // lane 1 of beat 1, x = -123
	files["y.hex"] = []byte(strings.Join(lines, "\n"))
	bad, err := b.Run(ctx, files, 7)
	if err != nil {
		t.Fatal(err)
	}
	if bad.Passed || len(bad.Mismatches) != 1 || !strings.Contains(bad.Mismatches[0], "beat 1 lane 1 x=-123") {
		t.Errorf("planted mismatch: passed=%v, mismatches %q", bad.Passed, bad.Mismatches)
	}
	if _, err := CheckActivation(ctx, ActivationCase{Leaky: true, In: q53, Out: q53, SlopeWidth: 4, SlopeValue: 41, SlopeFrac: 12}, 1); err == nil ||
		!strings.Contains(err.Error(), "does not fit in a signed 4-bit") {
		t.Errorf("a slope too wide for its width: %v", err)
	}
}

func TestFindTools(t *testing.T) {
	found, err := FindTools(Tool{Name: "sh", For: "testing"}, Tool{Name: "gomase-no-such-tool", For: "nothing", Install: "make setup"})
	if len(found) != 1 || found[0].Name != "sh" || found[0].Path == "" {
		t.Errorf("found %+v, want sh", found)
	}
	if err == nil || !strings.Contains(err.Error(), "gomase-no-such-tool (nothing): install it with `make setup`") || strings.Contains(err.Error(), "sh (") {
		t.Errorf("error %v: want exactly the missing tool named with its install command", err)
	}
	if _, err := FindTools(Tool{Name: "sh"}); err != nil {
		t.Errorf("nothing missing: %v", err)
	}
}
