package rtl

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
)

// AdderCase is one configuration of fixed_adder, checked lane by lane
// against its Go integer model (Add) by the testbench tb_fixed_adder: two
// input streams of their own formats, driven independently with random
// stalls, and output backpressure.
type AdderCase struct {
	// In0, In1 and Out are DATA_IN_0's, DATA_IN_1's and DATA_OUT_0's formats.
	In0, In1, Out Format
	// P0 and P1 are the parallelism (P0·P1 lanes; 0 means 4 and 1).
	P0, P1 int
	// PValid and PReady are the percent of cycles each driver offers a beat
	// and the sink is ready (0 means 70 and 60).
	PValid, PReady int
}

// String names the case: "fixed_adder Q(8,3) + Q(8,5) → Q(8,3), 4×1 lanes".
func (c AdderCase) String() string {
	p0, p1 := c.lanes()
	return fmt.Sprintf("fixed_adder %v + %v → %v, %d×%d lanes", c.In0, c.In1, c.Out, p0, p1)
}

func (c AdderCase) lanes() (p0, p1 int) {
	return cmp.Or(c.P0, 4), cmp.Or(c.P1, 1)
}

func (c AdderCase) check() error {
	ok := func(f Format) bool { return f.Width >= 2 && f.Width <= 32 && f.Frac >= 0 && f.Frac <= 30 }
	if !ok(c.In0) || !ok(c.In1) || !ok(c.Out) {
		return fmt.Errorf("rtl: %v: formats need 2 <= width <= 32 and 0 <= frac <= 30", c)
	}
	if p0, p1 := c.lanes(); p0 < 1 || p1 < 1 || p0*p1 > 64 {
		return fmt.Errorf("rtl: %v: parallelism %d×%d (want 1..64 lanes)", c, p0, p1)
	}
	if v, r := cmp.Or(c.PValid, 70), cmp.Or(c.PReady, 60); v < 1 || v > 100 || r < 1 || r > 100 {
		return fmt.Errorf("rtl: %v: valid/ready percentages %d/%d (want 1..100)", c, v, r)
	}
	return nil
}

// Model is the Go reference for one lane: Add(a, In0, b, In1, Out).
func (c AdderCase) Model(a, b int64) int64 { return Add(a, c.In0, b, c.In1, c.Out) }

// Inputs returns the lane pairs the check streams: every pair of the two
// input formats' integers when there are at most 2^16 of them, else both
// formats' extremes, zero and ±1 against each other and 10^4 random pairs;
// then random pairs up to a whole number of beats.
func (c AdderCase) Inputs(seed uint64) (as, bs []int64) {
	rng := rand.New(rand.NewPCG(seed, 0xadd))
	random := func(f Format) int64 { return f.Min() + rng.Int64N(f.Max()-f.Min()+1) }
	span0, span1 := c.In0.Max()-c.In0.Min()+1, c.In1.Max()-c.In1.Min()+1
	if span0*span1 <= 1<<16 {
		for a := c.In0.Min(); a <= c.In0.Max(); a++ {
			for b := c.In1.Min(); b <= c.In1.Max(); b++ {
				as, bs = append(as, a), append(bs, b)
			}
		}
	} else {
		edges := func(f Format) []int64 { return []int64{f.Min(), f.Min() + 1, -1, 0, 1, f.Max() - 1, f.Max()} }
		for _, a := range edges(c.In0) {
			for _, b := range edges(c.In1) {
				as, bs = append(as, a), append(bs, b)
			}
		}
		for range 10000 {
			as, bs = append(as, random(c.In0)), append(bs, random(c.In1))
		}
	}
	p0, p1 := c.lanes()
	for len(as)%(p0*p1) != 0 {
		as, bs = append(as, random(c.In0)), append(bs, random(c.In1))
	}
	return as, bs
}

// Testbench is tb_fixed_adder with the case's parameters, streaming beats
// beats.
func (c AdderCase) Testbench(beats int) Testbench {
	p0, p1 := c.lanes()
	return Testbench{Top: "tb_fixed_adder", Params: map[string]int{
		"W0": c.In0.Width, "F0": c.In0.Frac, "W1": c.In1.Width, "F1": c.In1.Frac, "OW": c.Out.Width, "OF": c.Out.Frac,
		"P0": p0, "P1": p1, "BEATS": beats, "P_VALID": cmp.Or(c.PValid, 70), "P_READY": cmp.Or(c.PReady, 60),
	}}
}

// Files are the testbench's a.hex and b.hex (the inputs, lane by lane) and
// y.hex (Model of each pair).
func (c AdderCase) Files(as, bs []int64) map[string][]byte {
	ys := make([]int64, len(as))
	for i := range as {
		ys[i] = c.Model(as[i], bs[i])
	}
	return map[string][]byte{"a.hex": HexFile(as, c.In0.Width), "b.hex": HexFile(bs, c.In1.Width), "y.hex": HexFile(ys, c.Out.Width)}
}

// CheckAdder builds tb_fixed_adder for c (in a temporary folder, removed
// afterwards), streams c.Inputs(seed) through fixed_adder and compares
// every lane with c.Model. The result's Passed says whether all matched.
func CheckAdder(ctx context.Context, c AdderCase, seed uint32) (*Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	as, bs := c.Inputs(uint64(seed))
	p0, p1 := c.lanes()
	sim, err := FindSimulator()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gomase-adder-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b, err := sim.NewBuild(ctx, c.Testbench(len(as)/(p0*p1)), dir)
	if err != nil {
		return nil, err
	}
	return b.Run(ctx, c.Files(as, bs), seed)
}
