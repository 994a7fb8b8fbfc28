package rtl

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// Format is a signed two's-complement fixed-point format: Width bits, Frac of
// them after the binary point (MASE's precision [Width, Frac]; Q5.3 is
// Format{8, 3}). A value is held as its integer v, meaning v / 2^Frac.
// The helpers here use int64 and are exact for widths up to 62 bits.
type Format struct {
	Width int // total bits, sign included
	Frac  int // fraction bits
}

// String renders the format as Q(width,frac).
func (f Format) String() string { return fmt.Sprintf("Q(%d,%d)", f.Width, f.Frac) }

// Min is the most negative integer of the format, -2^(Width-1).
func (f Format) Min() int64 { return -(int64(1) << (f.Width - 1)) }

// Max is the largest integer of the format, 2^(Width-1) - 1.
func (f Format) Max() int64 { return int64(1)<<(f.Width-1) - 1 }

// Saturate clamps v to the range of a width-bit signed integer.
func Saturate(v int64, width int) int64 {
	f := Format{Width: width}
	return min(max(v, f.Min()), f.Max())
}

// Cast converts the integer v of format from to format to as the RTL
// fixed_cast does: fewer fraction bits round towards minus infinity (an
// arithmetic right shift), more fraction bits shift left exactly, and the
// result saturates to to's range. from.Width is not used: v may be any
// int64 (for example an exact accumulator).
func Cast(v int64, from, to Format) int64 {
	shift := to.Frac - from.Frac
	if shift <= 0 {
		if -shift >= 63 {
			v >>= 63
		} else {
			v >>= -shift // Go's >> on signed integers floors
		}
		return Saturate(v, to.Width)
	}
	if v == 0 {
		return 0
	}
	if shift >= 62 {
		if v > 0 {
			return to.Max()
		}
		return to.Min()
	}
	hi := to.Max() >> shift       // v·2^s <= Max  <=>  v <= floor(Max / 2^s)
	lo := -((-to.Min()) >> shift) // v·2^s >= Min  <=>  v >= ceil(Min / 2^s)
	switch {
	case v > hi:
		return to.Max()
	case v < lo:
		return to.Min()
	}
	return v << shift
}

// Quantize maps a real number to format f with floor rounding and saturation:
// clamp(floor(x · 2^Frac)), MASE's integer_floor_quantizer_for_hw.
func Quantize(x float64, f Format) int64 {
	r := math.Floor(x * math.Ldexp(1, f.Frac))
	if r <= float64(f.Min()) {
		return f.Min()
	}
	if r >= float64(f.Max()) {
		return f.Max()
	}
	return int64(r)
}

// Value is the real number the integer v stands for in format f.
func Value(v int64, f Format) float64 { return math.Ldexp(float64(v), -f.Frac) }

// Wrap reinterprets the low width bits of v as a signed integer (what a
// width-bit register holds after truncation).
func Wrap(v int64, width int) int64 {
	s := 64 - width
	return v << s >> s
}

// Hex writes the low width bits of v (two's complement) as ceil(width/4)
// lower-case hex digits, as $readmemh and MASE's ROM files expect.
func Hex(v int64, width int) string {
	digits := (width + 3) / 4
	u := uint64(v)
	if width < 64 {
		u &= uint64(1)<<width - 1
	}
	return fmt.Sprintf("%0*x", digits, u)
}

// AccumulatorWidth is the width of fixed_linear's exact accumulator for k
// input elements: in.Width + w.Width + ceil(log2(k)) (18 bits for Q5.3
// data, Q5.3 weights and k = 4; fraction in.Frac + w.Frac = 6).
func AccumulatorWidth(in, w Format, k int) int {
	return in.Width + w.Width + clog2(k)
}

// clog2 is Verilog's $clog2: the smallest b with 2^b >= n (0 for n <= 1).
func clog2(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

// Linear is the integer model of fixed_linear for one input row x (K
// elements of format in): y[n] = cast(Σ_k x[k]·w[n][k] + align(b[n])) into
// out, with the exact sum at fraction in.Frac + wf.Frac, the bias aligned to
// the larger of that and bf.Frac, floor rounding and saturation. b may be nil
// (no bias). Spec §9 item 39: x = [3,6,0,1], w = [4,-8,2,1], b = 2, all Q5.3
// -> -3; with b = 20 -> 15.
func Linear(x []int64, w [][]int64, b []int64, in, wf, bf, out Format) []int64 {
	accFrac := in.Frac + wf.Frac
	sumFrac := max(accFrac, bf.Frac)
	y := make([]int64, len(w))
	for n, row := range w {
		if len(row) != len(x) {
			panic(fmt.Sprintf("rtl.Linear: weight row %d has %d elements, input has %d", n, len(row), len(x)))
		}
		var acc int64
		for k, xv := range x {
			acc += xv * row[k]
		}
		total := acc << (sumFrac - accFrac)
		if b != nil {
			total += b[n] << (sumFrac - bf.Frac)
		}
		y[n] = Cast(total, Format{Width: 63, Frac: sumFrac}, out)
	}
	return y
}

// Add is the integer model of fixed_adder, a residual add: a (format af)
// and b (format bf) are aligned exactly to the larger fraction width, summed
// exactly, and the sum is cast to out (floor rounding, saturation). Formats
// are at most 32 bits wide with fractions of at most 30 bits, so the aligned
// sum fits an int64.
func Add(a int64, af Format, b int64, bf Format, out Format) int64 {
	frac := max(af.Frac, bf.Frac)
	sum := a<<(frac-af.Frac) + b<<(frac-bf.Frac)
	return Cast(sum, Format{Width: 63, Frac: frac}, out)
}

// ReLU is the integer model of fixed_relu: cast(max(x, 0)) from in to out.
func ReLU(x int64, in, out Format) int64 { return Cast(max(x, 0), in, out) }

// LeakyReLU is the integer model of fixed_leaky_relu with the negative slope
// slopeValue / 2^slopeFrac: for x < 0 the exact product x·slopeValue (fraction
// in.Frac + slopeFrac) is cast to out, floor rounding and saturating; x >= 0
// is cast unchanged. Spec §9 item 40 (Q(8,4), slope 1/16): -64 -> -4,
// -1 -> -1.
func LeakyReLU(x int64, in Format, slopeValue int64, slopeFrac int, out Format) int64 {
	from := Format{Width: 63, Frac: in.Frac + slopeFrac}
	if x < 0 {
		return Cast(x*slopeValue, from, out)
	}
	return Cast(x<<slopeFrac, from, out)
}

// ROMFile renders ROM words in MASE's *_rom.dat format, the input of
// fixed_param_source: one line per word, the word being the concatenation of
// its elements' width-bit two's complements with element 0 most significant,
// written as ceil(len·width/4) hex digits. When width is a multiple of 4
// (as in MASE, which writes width/4 digits per element) this is each element
// in hex, element 0 leftmost.
func ROMFile(words [][]int64, width int) []byte {
	var sb strings.Builder
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(width)), big.NewInt(1))
	for _, word := range words {
		acc := new(big.Int)
		for _, e := range word {
			acc.Lsh(acc, uint(width))
			acc.Or(acc, new(big.Int).And(big.NewInt(e), mask))
		}
		fmt.Fprintf(&sb, "%0*x\n", (len(word)*width+3)/4, acc)
	}
	return []byte(sb.String())
}

// HexFile renders values one per line (two's complement hex), for $readmemh
// into an array of width-bit elements.
func HexFile(values []int64, width int) []byte {
	var sb strings.Builder
	for _, v := range values {
		sb.WriteString(Hex(v, width))
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
}

// LinearWeightWords arranges an N×K weight matrix into the beats that
// fixed_linear consumes, with pk = WEIGHT_PARALLELISM_DIM_0 and
// pn = WEIGHT_PARALLELISM_DIM_1: for each output block nb, for each input
// block kb, a word whose lane n·pk + c is w[nb·pn + n][kb·pk + c] (0 past
// the matrix edge). For K = pk it is MASE's row-major chunking of W.
func LinearWeightWords(w [][]int64, pk, pn int) [][]int64 {
	n := len(w)
	k := 0
	if n > 0 {
		k = len(w[0])
	}
	var words [][]int64
	for nb := 0; nb < ceilDiv(n, pn); nb++ {
		for kb := 0; kb < ceilDiv(k, pk); kb++ {
			word := make([]int64, pn*pk)
			for r := 0; r < pn; r++ {
				for c := 0; c < pk; c++ {
					if i, j := nb*pn+r, kb*pk+c; i < n && j < k {
						word[r*pk+c] = w[i][j]
					}
				}
			}
			words = append(words, word)
		}
	}
	return words
}

// VectorWords splits a vector into words of p elements, zero padding the
// last (the bias stream of fixed_linear, one word per output block).
func VectorWords(v []int64, p int) [][]int64 {
	var words [][]int64
	for i := 0; i < ceilDiv(len(v), p); i++ {
		word := make([]int64, p)
		for j := range p {
			if i*p+j < len(v) {
				word[j] = v[i*p+j]
			}
		}
		words = append(words, word)
	}
	return words
}

// RowBeats splits rows (each of the same length) into the beats of a stream
// with parallelism p0 along a row and p1 rows side by side: for each group of
// p1 rows, for each block b of p0 columns, a beat whose lane r·p0 + c is
// rows[g·p1 + r][b·p0 + c] (0 where that is outside the data). This is the
// order of fixed_linear's data_in_0 and data_out_0.
func RowBeats(rows [][]int64, p0, p1 int) [][]int64 {
	cols := 0
	if len(rows) > 0 {
		cols = len(rows[0])
	}
	var beats [][]int64
	for g := 0; g < ceilDiv(len(rows), p1); g++ {
		for b := 0; b < ceilDiv(cols, p0); b++ {
			beat := make([]int64, p0*p1)
			for r := 0; r < p1; r++ {
				for c := 0; c < p0; c++ {
					if i, j := g*p1+r, b*p0+c; i < len(rows) && j < cols {
						beat[r*p0+c] = rows[i][j]
					}
				}
			}
			beats = append(beats, beat)
		}
	}
	return beats
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
