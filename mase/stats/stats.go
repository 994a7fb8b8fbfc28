// Package stats says how far a measured accuracy can be trusted: its
// sampling error on the examples it was measured on, and whether two
// accuracies differ by more than that error.
package stats

import (
	"fmt"
	"math"
)

// AccuracyError is the standard error of an accuracy p measured on n
// examples, √(p(1−p)/n): about 0.016 at p = 0.7 on 872 sentences. It is 0
// for n ≤ 0 and for p outside (0, 1).
func AccuracyError(p float64, n int) float64 {
	if n <= 0 || !(p > 0 && p < 1) {
		return 0
	}
	return math.Sqrt(p * (1 - p) / float64(n))
}

// Order is what a comparison of two accuracies shows.
type Order int

const (
	// Within: the difference is inside twice the combined sampling error,
	// so the run does not tell the two apart.
	Within Order = iota
	// Higher: the first is higher by more than twice the combined error.
	Higher
	// Lower: the first is lower by more than twice the combined error.
	Lower
)

// String is "within the sampling error", "higher" or "lower".
func (o Order) String() string {
	switch o {
	case Higher:
		return "higher"
	case Lower:
		return "lower"
	}
	return "within the sampling error"
}

// Compare orders accuracy a against b, each measured on n examples. The
// bound is two standard errors of the difference of two independent
// measurements, 2·√(σa² + σb²) (about 4.5 points near 0.7 on 872
// sentences); two models scored on the same test set err together in part,
// so the bound is on the cautious side.
func Compare(a, b float64, n int) Order {
	bound := Bound(a, b, n)
	switch {
	case a-b > bound:
		return Higher
	case b-a > bound:
		return Lower
	}
	return Within
}

// Bound is the difference Compare needs before it orders a and b:
// 2·√(σa² + σb²).
func Bound(a, b float64, n int) float64 {
	ea, eb := AccuracyError(a, n), AccuracyError(b, n)
	return 2 * math.Sqrt(ea*ea+eb*eb)
}

// Points is an accuracy difference in percentage points, signed, with one
// decimal: "+1.2 points".
func Points(d float64) string { return fmt.Sprintf("%+.1f points", 100*d) }
