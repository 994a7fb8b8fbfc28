package rtl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
)

// ActivationCase is one configuration of fixed_relu, fixed_leaky_relu or
// fixed_gelu,
// checked lane by lane against its Go integer model (ReLU, LeakyReLU) by the
// testbench tb_fixed_activation. It is how a new activation component is
// tested: the Go model is the reference, the RTL must equal it bit for bit.
type ActivationCase struct {
	// Leaky picks fixed_leaky_relu, GELU fixed_gelu (else fixed_relu).
	Leaky, GELU bool
	// In and Out are DATA_IN_0's and DATA_OUT_0's formats.
	In, Out Format
	// The negative slope (Leaky only) is SlopeValue / 2^SlopeFrac,
	// SlopeValue a signed SlopeWidth-bit integer: fixed_leaky_relu's
	// NEGATIVE_SLOPE_VALUE, NEGATIVE_SLOPE_PRECISION_1 and _0.
	SlopeWidth int
	SlopeValue int64
	SlopeFrac  int
	// P0 and P1 are the parallelism (P0·P1 lanes; 0 means 4 and 1).
	P0, P1 int
}

// String names the case: "fixed_leaky_relu Q(8,3) → Q(8,3), slope 41/2^12".
func (c ActivationCase) String() string {
	if c.GELU {
		return fmt.Sprintf("fixed_gelu %v → %v", c.In, c.Out)
	}
	if c.Leaky {
		return fmt.Sprintf("fixed_leaky_relu %v → %v, slope %d/2^%d", c.In, c.Out, c.SlopeValue, c.SlopeFrac)
	}
	return fmt.Sprintf("fixed_relu %v → %v", c.In, c.Out)
}

// Module is the component under test.
func (c ActivationCase) Module() string {
	if c.GELU {
		return "fixed_gelu"
	}
	if c.Leaky {
		return "fixed_leaky_relu"
	}
	return "fixed_relu"
}

func (c ActivationCase) lanes() (p0, p1 int) {
	p0, p1 = c.P0, c.P1
	if p0 == 0 {
		p0 = 4
	}
	if p1 == 0 {
		p1 = 1
	}
	return p0, p1
}

func (c ActivationCase) check() error {
	ok := func(f Format) bool { return f.Width >= 2 && f.Width <= 32 && f.Frac >= 0 && f.Frac <= 30 }
	if !ok(c.In) || !ok(c.Out) {
		return fmt.Errorf("rtl: %v: formats need 2 <= width <= 32 and 0 <= frac <= 30", c)
	}
	if c.Leaky && c.GELU {
		return fmt.Errorf("rtl: %v: Leaky and GELU are two components; pick one", c)
	}
	if p0, p1 := c.lanes(); p0 < 1 || p1 < 1 || p0*p1 > 64 {
		return fmt.Errorf("rtl: %v: parallelism %d×%d (want 1..64 lanes)", c, p0, p1)
	}
	if c.Leaky {
		if c.SlopeWidth < 2 || c.SlopeWidth > 32 || c.SlopeFrac < 0 || c.SlopeFrac > 30 {
			return fmt.Errorf("rtl: %v: slope width %d, fraction %d (want 2..32 and 0..30)", c, c.SlopeWidth, c.SlopeFrac)
		}
		if Wrap(c.SlopeValue, c.SlopeWidth) != c.SlopeValue {
			return fmt.Errorf("rtl: %v: slope value %d does not fit in a signed %d-bit integer", c, c.SlopeValue, c.SlopeWidth)
		}
	}
	return nil
}

// Model is the Go reference for one lane: ReLU(x, In, Out),
// LeakyReLU(x, In, SlopeValue, SlopeFrac, Out) or GELU(x, In, Out).
func (c ActivationCase) Model(x int64) int64 {
	if c.GELU {
		return GELU(x, c.In, c.Out)
	}
	if c.Leaky {
		return LeakyReLU(x, c.In, c.SlopeValue, c.SlopeFrac, c.Out)
	}
	return ReLU(x, c.In, c.Out)
}

// maxExhaustiveWidth bounds the input widths Inputs enumerates completely.
const maxExhaustiveWidth = 12

// Inputs returns the lane values the check streams: every integer of the
// input format in order (widths up to 12 bits), else its extremes, zero and
// ±1 and 4096 values drawn with seed; then random values up to a whole
// number of beats.
func (c ActivationCase) Inputs(seed uint64) []int64 {
	rng := rand.New(rand.NewPCG(seed, 0xac7))
	random := func() int64 { return c.In.Min() + rng.Int64N(c.In.Max()-c.In.Min()+1) }
	var xs []int64
	if c.In.Width <= maxExhaustiveWidth {
		for v := c.In.Min(); v <= c.In.Max(); v++ {
			xs = append(xs, v)
		}
	} else {
		xs = append(xs, c.In.Min(), c.In.Min()+1, -1, 0, 1, c.In.Max())
		for range 4096 {
			xs = append(xs, random())
		}
	}
	p0, p1 := c.lanes()
	for len(xs)%(p0*p1) != 0 {
		xs = append(xs, random())
	}
	return xs
}

// Testbench is tb_fixed_activation with the case's parameters, streaming
// beats beats.
func (c ActivationCase) Testbench(beats int) Testbench {
	p0, p1 := c.lanes()
	kind, sw := 0, 8
	switch {
	case c.Leaky:
		kind, sw = 1, c.SlopeWidth
	case c.GELU:
		kind = 2
	}
	return Testbench{Top: "tb_fixed_activation", Params: map[string]int{
		"LEAKY": kind, "IN_W": c.In.Width, "IN_F": c.In.Frac, "OUT_W": c.Out.Width, "OUT_F": c.Out.Frac,
		"S_W": sw, "S_F": c.SlopeFrac, "S_V": int(c.SlopeValue), "P0": p0, "P1": p1, "BEATS": beats,
	}}
}

// Files are the testbench's x.hex (the inputs, lane by lane) and y.hex
// (Model of each input).
func (c ActivationCase) Files(xs []int64) map[string][]byte {
	ys := make([]int64, len(xs))
	for i, x := range xs {
		ys[i] = c.Model(x)
	}
	return map[string][]byte{"x.hex": HexFile(xs, c.In.Width), "y.hex": HexFile(ys, c.Out.Width)}
}

// ActivationCheck is the outcome of CheckActivation.
type ActivationCheck struct {
	Case   ActivationCase
	Inputs []int64 // the lane values streamed
	Build  *Build
	*Result
}

// CheckActivation builds tb_fixed_activation for c with Verilator (in a
// temporary directory, removed afterwards), streams c.Inputs(seed) through
// the component with random valid/ready and compares every lane with
// c.Model. The result's Passed says whether all matched; its Mismatches
// name the beat, lane and input of the first 50 that did not.
func CheckActivation(ctx context.Context, c ActivationCase, seed uint32) (*ActivationCheck, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	xs := c.Inputs(uint64(seed))
	p0, p1 := c.lanes()
	sim, err := FindSimulator()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gomase-activation-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b, err := sim.NewBuild(ctx, c.Testbench(len(xs)/(p0*p1)), dir)
	if err != nil {
		return nil, err
	}
	res, err := b.Run(ctx, c.Files(xs), seed)
	if err != nil {
		return nil, err
	}
	return &ActivationCheck{Case: c, Inputs: xs, Build: b, Result: res}, nil
}
