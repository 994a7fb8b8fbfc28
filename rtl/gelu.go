package rtl

// The integer GELU of fixed_gelu, after I-BERT's i-GELU (Kim et al., ICML
// 2021): GELU(x) ≈ x · ½ · (1 + L(x/√2)) with the second-order erf
// approximation L(u) = sgn(u) · (a · (min(|u|, −b) + b)² + 1), a = −0.2888,
// b = −1.769. Its constants are integers of GELUFrac fraction bits, and
// every step floors at a fixed place, so the RTL computes the same bits.
const (
	// GELUFrac is the fraction width of the constants and of L.
	GELUFrac = 16
	// geluInvSqrt2 is round(2^16 / √2), geluB round(1.769 · 2^16) and
	// geluA round(0.2888 · 2^16).
	geluInvSqrt2 = 46341
	geluB        = 115933
	geluA        = 18927
)

// GELU is the integer model of fixed_gelu for one lane, x of format in,
// the result in format out:
//
//	m  = |x|                              (frac in.Frac)
//	u  = ⌊m · 46341 / 2^in.Frac⌋          |x|/√2, frac 16
//	e  = 115933 − min(u, 115933)          −(min(|u|, 1.769) − 1.769) ≥ 0
//	p  = ⌊0.2888·2^16 · ⌊e² / 2^16⌋ / 2^16⌋
//	l  = 2^16 − p                         |L|, frac 16
//	h  = 2^16 + sgn(x) · l                1 + L, frac 16
//	y  = ⌊x · h / 2^17⌋                   x · (1 + L) / 2, frac in.Frac
//
// then y is cast to out (floor, saturation). Formats are at most 32 bits
// wide, so every product fits an int64.
func GELU(x int64, in, out Format) int64 {
	m := x
	if m < 0 {
		m = -m
	}
	u := m * geluInvSqrt2 >> in.Frac
	e := geluB - min(u, geluB)
	p := geluA * (e * e >> GELUFrac) >> GELUFrac
	l := int64(1)<<GELUFrac - p
	h := int64(1) << GELUFrac
	switch {
	case x > 0:
		h += l
	case x < 0:
		h -= l
	}
	return Cast(x*h>>(GELUFrac+1), Format{Width: 63, Frac: in.Frac}, out)
}
