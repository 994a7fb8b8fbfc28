package quant

import "math"

// BlockShape resolves MASE's block_size against a tensor shape (utils.block
// in src/chop/nn/quantizers): the block shape is right-aligned with the
// tensor shape (missing leading entries are -1, extra leading entries are
// dropped), and -1 or a size larger than the dimension means the whole
// dimension. With skipFirstDim (activations) and rank ≥ 2, the first axis
// gets blocks of 1, so blocks never mix batch entries. Rank-1 tensors ignore
// skipFirstDim (MASE asserts it is False for them).
//
// This gives MASE's cases: a 1-D bias of n → blocks of min(b, n); a 2-D
// weight with [1, 16] → 16 consecutive inputs of one output row (with [16]
// → 16 columns of every row, MASE's unfold tile); a 2-D activation with
// skip_first_dim → per row, blocks of block_size[-1]; a 3-D [B, T, H]
// activation with skip_first_dim → [1, T, 16] tiles for [16] and 1×16 for
// [1, 16]. MASE stops at 3-D (and has no 3-D weights); gomase applies the
// same rule to any rank.
func BlockShape(shape, blockSize []int, skipFirstDim bool) []int {
	n := len(shape)
	bs := make([]int, n)
	for i := range n {
		b := -1
		if j := len(blockSize) - n + i; j >= 0 {
			b = blockSize[j]
		}
		if b == -1 || b > shape[i] {
			b = shape[i]
		}
		bs[i] = b
	}
	if skipFirstDim && n >= 2 {
		bs[0] = min(1, shape[0])
	}
	return bs
}

// blockIDs numbers the blocks of a tensor tiled by bs (the tensor
// zero-padded at the end of each axis to a multiple of the block) and
// returns each element's block, in row-major order, and the number of
// blocks. Padding elements are zeros: they never raise a block's max, so
// they are not materialised.
func blockIDs(shape, bs []int) (ids []int, nBlocks int) {
	n := 1
	counts := make([]int, len(shape))
	nBlocks = 1
	for i, d := range shape {
		n *= d
		if bs[i] > 0 {
			counts[i] = (d + bs[i] - 1) / bs[i]
		}
		nBlocks *= counts[i]
	}
	ids = make([]int, n)
	idx := make([]int, len(shape))
	for flat := range n {
		id := 0
		for i := range shape {
			id = id*counts[i] + idx[i]/bs[i]
		}
		ids[flat] = id
		for i := len(shape) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return ids, nBlocks
}

// blockMaxima returns each element's block max |x|, with MASE's rule for
// all-zero blocks: they take the smallest non-zero block max of the
// tensor, or 1 when every block is zero.
func blockMaxima(x []float64, shape, blockSize []int, skipFirstDim bool) []float64 {
	ids, nBlocks := blockIDs(shape, BlockShape(shape, blockSize, skipFirstDim))
	maxes := make([]float64, nBlocks)
	for i, v := range x {
		maxes[ids[i]] = math.Max(maxes[ids[i]], math.Abs(v))
	}
	minNZ := math.Inf(1)
	for _, m := range maxes {
		if m > 0 {
			minNZ = math.Min(minNZ, m)
		}
	}
	if math.IsInf(minNZ, 1) {
		minNZ = 1
	}
	out := make([]float64, len(x))
	for i := range x {
		m := maxes[ids[i]]
		if m == 0 {
			m = minNZ
		}
		out[i] = m
	}
	return out
}

// QuantizeBlockFP is block_fp_quantizer (MSFP, spec §6.5) on a tensor x of
// the given shape (row-major): each block of BlockShape(shape, blockSize,
// skipFirstDim) shares the exponent e = clamp(⌈log2 max|x|⌉, −bias,
// 2^E − 1 − bias) (E = exponentWidth), and each element keeps a sign and
// M = width − 1 mantissa bits: Q = sign(x)·2^e·k/2^M with
// k = clamp(round(|x|·2^(M−e)), 0, 2^M − 1). A block max at a power of two
// saturates (1.0 → 0.9921875 at width 8). |x| ≤ 1e-8 is kept as is.
//
// MASE adds 1e-9 to |x| before rounding the mantissa (to keep log2 away
// from 0); the reference leaves it out, as float32 does for |x| ≥ 2^−5, so
// ties round half to even.
func QuantizeBlockFP(x []float64, shape []int, width, exponentWidth, exponentBias int, blockSize []int, skipFirstDim bool) []float64 {
	maxes := blockMaxima(x, shape, blockSize, skipFirstDim)
	m := width - 1
	eMin, eMax := -exponentBias, 1<<exponentWidth-1-exponentBias
	kMax := math.Ldexp(1, m) - 1
	out := make([]float64, len(x))
	for i, v := range x {
		if math.Abs(v) <= closeToZero {
			out[i] = v
			continue
		}
		e := clampInt(ceilLog2(maxes[i]), eMin, eMax)
		k := clampF(math.RoundToEven(math.Ldexp(math.Abs(v), m-e)), 0, kMax)
		out[i] = signOf(v) * math.Ldexp(k, e-m)
	}
	return out
}

// QuantizeBlockMinifloat is block_minifloat_quantizer (spec §6.6): each
// block's exponent bias is clamp(⌊log2 max|x|⌋, 0, 2^exponentBiasWidth − 1)
// and its elements are QuantizeMinifloatIEEE with that bias. As coded in
// MASE the bias is never negative, so blocks whose max is below 1 get bias
// 0 and their values fall into the coarse lowest binade.
func QuantizeBlockMinifloat(x []float64, shape []int, width, exponentWidth, exponentBiasWidth int, blockSize []int, skipFirstDim bool) []float64 {
	maxes := blockMaxima(x, shape, blockSize, skipFirstDim)
	out := make([]float64, len(x))
	for i, v := range x {
		bias := clampInt(floorLog2(maxes[i]), 0, 1<<exponentBiasWidth-1)
		out[i] = QuantizeMinifloatIEEE(v, width, exponentWidth, bias)
	}
	return out
}

// QuantizeBlockLog is block_log_quantizer (spec §6.7): each block's bias is
// clamp(2^(width−1) − 1 − ⌈log2 max|x|⌉, 0, 2^exponentBiasWidth − 1), which
// puts the top of the block's exponent range at ⌈log2 max⌉, and its
// elements are QuantizeLog with that bias.
func QuantizeBlockLog(x []float64, shape []int, width, exponentBiasWidth int, blockSize []int, skipFirstDim bool) []float64 {
	maxes := blockMaxima(x, shape, blockSize, skipFirstDim)
	out := make([]float64, len(x))
	for i, v := range x {
		bias := clampInt(1<<(width-1)-1-ceilLog2(maxes[i]), 0, 1<<exponentBiasWidth-1)
		out[i] = QuantizeLog(v, width, bias)
	}
	return out
}

// slices splits a tensor into the slices its per-sample statistics use:
// one per index of the first axis for rank ≥ 2, the whole tensor for rank
// 0 and 1. It returns the slice length (the slices are consecutive).
func sliceLen(n int, shape []int) int {
	if len(shape) >= 2 && shape[0] > 0 {
		return n / shape[0]
	}
	return n
}

// QuantizeBinaryZeroScaled is MASE's non-bipolar binary quantiser
// (BinaryZeroScaled, spec §6.8): Q = α·[x > 0] with α = mean(|x|) per
// sample. MASE needs a 4-D tensor (α over dims 1..3); gomase takes α over
// each first-axis slice of a tensor of rank ≥ 2 (a Linear weight [out, in]
// gets one α per output row) and over the whole tensor for rank 0 and 1.
func QuantizeBinaryZeroScaled(x []float64, shape []int) []float64 {
	out := make([]float64, len(x))
	if len(x) == 0 {
		return out
	}
	step := sliceLen(len(x), shape)
	for s := 0; s < len(x); s += step {
		row := x[s : s+step]
		alpha := meanAbs(row, nil)
		for i, v := range row {
			if v > 0 {
				out[s+i] = alpha
			}
		}
	}
	return out
}

// QuantizeBinaryStochastic is MASE's stochastic binary quantiser, given one
// uniform u in [0, 1) per element: p = clamp((x+1)/2, 0, 1); bipolar gives
// +1 when p ≥ u and −1 otherwise. Non-bipolar applies the zero-scaled
// quantiser to p (MASE passes u as a threshold that the op ignores, so the
// result does not depend on u).
func QuantizeBinaryStochastic(x, u []float64, shape []int, bipolar bool) []float64 {
	p := make([]float64, len(x))
	for i, v := range x {
		p[i] = clampF((v+1)/2, 0, 1)
	}
	if !bipolar {
		return QuantizeBinaryZeroScaled(p, shape)
	}
	out := make([]float64, len(x))
	for i := range p {
		if p[i] >= u[i] {
			out[i] = 1
		} else {
			out[i] = -1
		}
	}
	return out
}

// QuantizeTernary is MASE's ternary quantiser as its ops compute it (spec
// §6.10; the threshold argument is ignored): Δ = 0.75·mean(|x|),
// α = mean(|x| where |x| > Δ), Q = +1 for x > Δ, −1 for x < −Δ, 0
// otherwise, times α when scaling. MASE takes the statistics per sample of
// a 4-D tensor and fails on 2-D Linear weights; gomase takes them per
// first-axis slice for rank ≥ 2 (one per output row of a weight) and over
// the whole tensor for rank 0 and 1. A slice with no |x| > Δ (all zeros)
// has α = 0 (MASE divides by zero).
func QuantizeTernary(x []float64, shape []int, scaling bool) []float64 {
	out := make([]float64, len(x))
	if len(x) == 0 {
		return out
	}
	step := sliceLen(len(x), shape)
	for s := 0; s < len(x); s += step {
		row := x[s : s+step]
		delta := 0.75 * meanAbs(row, nil)
		alpha := meanAbs(row, func(v float64) bool { return math.Abs(v) > delta })
		for i, v := range row {
			q := 0.0
			if v > delta {
				q = 1
			} else if v < -delta {
				q = -1
			}
			if scaling {
				q *= alpha
			}
			out[s+i] = q
		}
	}
	return out
}

// meanAbs is the mean of |v| over the values keep accepts (nil: all); 0
// when none is kept. It is sum/n, as MASE computes it, unless the sum
// overflows (values near the float64 maximum): then it sums |v|/n, which
// cannot overflow for finite inputs.
func meanAbs(vals []float64, keep func(float64) bool) float64 {
	n, sum := 0, 0.0
	for _, v := range vals {
		if keep == nil || keep(v) {
			n++
			sum += math.Abs(v)
		}
	}
	if n == 0 {
		return 0
	}
	if !math.IsInf(sum, 0) {
		return sum / float64(n)
	}
	m := 0.0
	for _, v := range vals {
		if keep == nil || keep(v) {
			m += math.Abs(v) / float64(n)
		}
	}
	return m
}
