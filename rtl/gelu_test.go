package rtl

import (
	"math"
	"testing"
)

// TestGELUModel: values worked through the steps by hand, and the error
// against float GELU over every Q(10,6) input within I-BERT's polynomial
// error (about 0.02 at its worst) plus the output's rounding.
func TestGELUModel(t *testing.T) {
	q := Format{Width: 8, Frac: 4}
	for _, c := range []struct {
		x, want int64
		why     string
	}{
		{0, 0, "GELU(0) = 0"},
		// x = 1 (16): u = ⌊16·46341/16⌋ = 46341, e = 69592, e²>>16 = 73899,
		// p = ⌊18927·73899/65536⌋ = 21342, l = 44194, h = 109730,
		// y = ⌊16·109730/131072⌋ = 13 (0.8125; GELU(1) = 0.8413).
		{16, 13, "x = 1"},
		// x = −1: h = 65536 − 44194 = 21342, y = ⌊−16·21342/131072⌋ = −3
		// (−0.1875; GELU(−1) = −0.1587).
		{-16, -3, "x = −1"},
		// x = 4 (64): u ≥ 1.769, e = 0, l = 1, h = 2^17: y = x.
		{64, 64, "x = 4 passes"},
		// x = −8 (−128): h = 0, y = 0.
		{-128, 0, "x = −8 vanishes"},
	} {
		if got := GELU(c.x, q, q); got != c.want {
			t.Errorf("GELU(%d Q(8,4)) = %d, want %d (%s)", c.x, got, c.want, c.why)
		}
	}
	in, out := Format{Width: 10, Frac: 6}, Format{Width: 10, Frac: 6}
	worst, at := 0.0, 0.0
	for x := in.Min(); x <= in.Max(); x++ {
		v := Value(x, in)
		exact := v * 0.5 * (1 + math.Erf(v/math.Sqrt2))
		if d := math.Abs(Value(GELU(x, in, out), out) - exact); d > worst {
			worst, at = d, v
		}
	}
	t.Logf("integer GELU on Q(10,6): largest error against float GELU %.4f at x = %.4f", worst, at)
	if bound := 0.025 + math.Ldexp(1, -out.Frac); worst > bound {
		t.Errorf("largest error %.4f at x = %.4f, above %.4f", worst, at, bound)
	}
}
