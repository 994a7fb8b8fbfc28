package stats

import (
	"math"
	"testing"
)

func TestAccuracyError(t *testing.T) {
	// √(0.7·0.3/872) = 0.015519…
	if got := AccuracyError(0.7, 872); math.Abs(got-0.015519) > 1e-6 {
		t.Errorf("AccuracyError(0.7, 872) = %v, want 0.015519", got)
	}
	for _, c := range []struct {
		p float64
		n int
	}{{0.5, 0}, {0, 100}, {1, 100}, {math.NaN(), 100}, {-1, 10}} {
		if got := AccuracyError(c.p, c.n); got != 0 {
			t.Errorf("AccuracyError(%v, %d) = %v, want 0", c.p, c.n, got)
		}
	}
}

func TestCompare(t *testing.T) {
	// Near 0.7 on 872 the bound is 2·√2·0.0155 ≈ 0.0439.
	if b := Bound(0.7, 0.7, 872); math.Abs(b-0.04389) > 1e-4 {
		t.Errorf("Bound = %v, want 0.0439", b)
	}
	for _, c := range []struct {
		a, b float64
		n    int
		want Order
	}{
		{0.6640, 0.6617, 872, Within},
		{0.75, 0.70, 872, Higher},
		{0.64, 0.70, 872, Lower},
		{0.75, 0.70, 100, Within}, // the same gap on fewer examples
		{0.5, 0.5, 0, Within},
	} {
		if got := Compare(c.a, c.b, c.n); got != c.want {
			t.Errorf("Compare(%v, %v, %d) = %v, want %v", c.a, c.b, c.n, got, c.want)
		}
	}
	if Points(0.0123) != "+1.2 points" || Points(-0.05) != "-5.0 points" {
		t.Errorf("Points: %q %q", Points(0.0123), Points(-0.05))
	}
}
