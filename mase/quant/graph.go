package quant

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Graph builds the quantiser on x with GoMLX ops, in x's dtype (float16
// and bfloat16 inputs are computed in float32 and converted back). Its
// forward value is the reference's for the same input whenever the
// format's values fit the dtype (float32 graphs: element widths up to 24
// significant bits and exponents inside float32's range); statistics
// (means, thresholds) are accumulated in the dtype. Its gradient is the
// straight-through estimator: the output is StopGradient(q) + (x −
// StopGradient(x)), so grad_in = grad_out for every format.
//
// random gives U[0, 1) values of the given dimensions; only stochastic
// bipolar binary draws from it, and it may be nil otherwise (stochastic
// bipolar binary with a nil random is an error). mxint8 needs the element
// count to be divisible by group_size.
func (s Spec) Graph(x *graph.Node, random func(dims ...int) *graph.Node) (out *graph.Node, err error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	dt := x.DType()
	if !dt.IsFloat() {
		return nil, fmt.Errorf("%s quantiser: input dtype %s (allowed: float16, bfloat16, float32, float64)", s.Format, dt)
	}
	n := x.Shape().Size()
	if s.canonical() == MXInt8 {
		if err := checkMXInt8Group(n, s.GroupSize); err != nil {
			return nil, err
		}
	}
	if s.canonical() == Binary && s.Stochastic && s.Bipolar && random == nil {
		return nil, fmt.Errorf("stochastic bipolar binary needs a random source (nil given: use train mode, or set stochastic false)")
	}
	if n == 0 {
		return x, nil
	}
	if e := exceptions.TryCatch[error](func() {
		work := x
		if dt.IsHalfPrecision() {
			work = graph.ConvertDType(x, dtypes.Float32)
		}
		dims := work.Shape().Dimensions
		if len(dims) == 0 {
			work = graph.Reshape(work, 1)
		}
		q := s.build(work, random)
		if len(dims) == 0 {
			q = graph.Reshape(q, dims...)
		}
		if dt.IsHalfPrecision() {
			q = graph.ConvertDType(q, dt)
		}
		out = StraightThrough(x, q)
	}); e != nil {
		return nil, fmt.Errorf("building the %s quantiser graph: %w", s.Format, e)
	}
	return out, nil
}

// StraightThrough returns a node with q's value and x's gradient
// (grad_in = grad_out): StopGradient(q) + (x − StopGradient(x)). Unlike
// x + StopGradient(q − x), the forward value is exactly q (a −0 becomes +0).
func StraightThrough(x, q *graph.Node) *graph.Node {
	return graph.Add(graph.StopGradient(q), graph.Sub(x, graph.StopGradient(x)))
}

// build is the forward computation of the quantiser on x (rank ≥ 1).
func (s Spec) build(x *graph.Node, random func(dims ...int) *graph.Node) *graph.Node {
	dims := x.Shape().Dimensions
	switch s.canonical() {
	case Integer:
		lo, hi := -math.Ldexp(1, s.Width-1), math.Ldexp(1, s.Width-1)-1
		v := graph.MulScalar(x, math.Ldexp(1, s.FracWidth))
		if s.Floor {
			v = graph.Floor(v)
		} else {
			v = graph.Round(v)
		}
		return graph.MulScalar(graph.ClipScalar(v, lo, hi), math.Ldexp(1, -s.FracWidth))
	case MinifloatIEEE:
		return minifloatIEEEGraph(x, s.Width, s.ExponentWidth, scalar(x, float64(s.bias())))
	case MinifloatDenorm:
		return minifloatDenormGraph(x, s.Width, s.ExponentWidth, s.bias())
	case Log:
		return logGraph(x, s.Width, scalar(x, float64(s.bias())))
	case BlockFP:
		ax := graph.Abs(x)
		bm := blockMaxGraph(ax, BlockShape(dims, s.BlockSize, s.SkipFirstDim))
		m := s.Width - 1
		bias := s.bias()
		e := graph.ClipScalar(ceilLog2Graph(bm), float64(-bias), float64(int(1)<<s.ExponentWidth-1-bias))
		p := pow2Graph(e)
		k := graph.ClipScalar(graph.Round(graph.MulScalar(graph.Div(ax, p), math.Ldexp(1, m))), 0, math.Ldexp(1, m)-1)
		q := graph.Mul(signGraph(x), graph.Mul(graph.MulScalar(k, math.Ldexp(1, -m)), p))
		return graph.Where(graph.LessOrEqual(ax, scalar(x, closeToZero)), x, q)
	case BlockMinifloat:
		bm := blockMaxGraph(graph.Abs(x), BlockShape(dims, s.BlockSize, s.SkipFirstDim))
		bias := graph.ClipScalar(floorLog2Graph(bm), 0, float64(int(1)<<s.ExponentBiasWidth-1))
		return minifloatIEEEGraph(x, s.Width, s.ExponentWidth, bias)
	case BlockLog:
		bm := blockMaxGraph(graph.Abs(x), BlockShape(dims, s.BlockSize, s.SkipFirstDim))
		top := scalar(x, float64(int(1)<<(s.Width-1)-1))
		bias := graph.ClipScalar(graph.Sub(top, ceilLog2Graph(bm)), 0, float64(int(1)<<s.ExponentBiasWidth-1))
		return logGraph(x, s.Width, bias)
	case Binary:
		if s.Stochastic {
			p := graph.ClipScalar(graph.MulScalar(graph.AddScalar(x, 1), 0.5), 0, 1)
			if !s.Bipolar {
				return zeroScaledGraph(p)
			}
			u := graph.ConvertDType(random(dims...), x.DType())
			return graph.Where(graph.GreaterOrEqual(p, u), scalar(x, 1), scalar(x, -1))
		}
		if s.Bipolar {
			return graph.Where(graph.GreaterOrEqual(x, scalar(x, 0)), scalar(x, 1), scalar(x, -1))
		}
		return zeroScaledGraph(x)
	case BinaryResidual:
		out, r := graph.ZerosLike(x), x
		for _, mu := range s.means() {
			o := graph.MulScalar(graph.Sign(graph.ClipScalar(r, -1, 1)), math.Abs(mu))
			out = graph.Add(out, o)
			r = graph.Sub(r, o)
		}
		return out
	case Ternary:
		return ternaryGraph(x, s.ScalingFactor)
	case MXInt8:
		return mxint8Graph(x, s.GroupSize)
	}
	panic(fmt.Sprintf("format %q has no graph quantiser", s.Format)) // unreachable after Validate
}

// scalar is a constant of x's dtype.
func scalar(x *graph.Node, v float64) *graph.Node { return graph.Scalar(x.Graph(), x.DType(), v) }

// boolTo converts a boolean node to 0/1 in dtype of like.
func boolTo(b, like *graph.Node) *graph.Node { return graph.ConvertDType(b, like.DType()) }

// signGraph is +1 for x ≥ 0 and −1 otherwise (MASE's sign(x + 1e-9)).
func signGraph(x *graph.Node) *graph.Node {
	return graph.Where(graph.LessThan(x, scalar(x, 0)), scalar(x, -1), scalar(x, 1))
}

// pow2Graph is 2^e for integral e (exact on the Go backend).
func pow2Graph(e *graph.Node) *graph.Node { return graph.Pow(graph.AddScalar(graph.OnesLike(e), 1), e) }

// floorLog2Graph is ⌊log2 v⌋, exactly, for v > 0: the log estimate is
// corrected by comparing with exact powers of two.
func floorLog2Graph(v *graph.Node) *graph.Node {
	l := graph.Floor(graph.MulScalar(graph.Log(v), 1/math.Ln2))
	l = graph.Sub(l, boolTo(graph.GreaterThan(pow2Graph(l), v), v))
	return graph.Add(l, boolTo(graph.LessOrEqual(pow2Graph(graph.AddScalar(l, 1)), v), v))
}

// ceilLog2Graph is ⌈log2 v⌉, exactly, for v > 0.
func ceilLog2Graph(v *graph.Node) *graph.Node {
	l := floorLog2Graph(v)
	return graph.Add(l, boolTo(graph.LessThan(pow2Graph(l), v), v))
}

// safePositive replaces non-positive values by 1 (before a log2).
func safePositive(v *graph.Node) *graph.Node {
	return graph.Where(graph.GreaterThan(v, scalar(v, 0)), v, graph.OnesLike(v))
}

// minifloatIEEEGraph is QuantizeMinifloatIEEE with a bias node (a scalar,
// or one bias per element for block minifloat).
func minifloatIEEEGraph(x *graph.Node, width, exponentWidth int, bias *graph.Node) *graph.Node {
	m := width - exponentWidth - 1
	eMin := graph.Neg(bias)
	eMax := graph.Sub(scalar(x, float64(int(1)<<exponentWidth-1)), bias)
	v := graph.Abs(x)
	small := graph.LessOrEqual(v, scalar(x, closeToZero))
	vs := graph.Where(small, graph.OnesLike(v), v)
	e := graph.Min(graph.Max(floorLog2Graph(vs), eMin), eMax)
	p := pow2Graph(e)
	mant := graph.Div(vs, p)
	kMax := math.Ldexp(1, m) - 1
	kN := graph.ClipScalar(graph.Round(graph.AddScalar(graph.MulScalar(mant, math.Ldexp(1, m)), -math.Ldexp(1, m))), 0, kMax)
	qN := graph.Mul(p, graph.AddScalar(graph.MulScalar(kN, math.Ldexp(1, -m)), 1))
	kS := graph.ClipScalar(graph.Round(graph.MulScalar(mant, math.Ldexp(1, m-1))), 0, kMax)
	qS := graph.Mul(p, graph.MulScalar(kS, math.Ldexp(1, 1-m)))
	isSub := graph.Equal(e, graph.BroadcastToShape(eMin, e.Shape()))
	q := graph.Mul(signGraph(x), graph.Where(isSub, qS, qN))
	return graph.Where(small, x, q)
}

// minifloatDenormGraph is QuantizeMinifloatDenorm.
func minifloatDenormGraph(x *graph.Node, width, exponentWidth, bias int) *graph.Node {
	m := width - exponentWidth - 1
	v := graph.Abs(x)
	small := graph.LessOrEqual(v, scalar(x, closeToZero))
	vs := graph.Where(small, graph.OnesLike(v), v)
	e := graph.ClipScalar(graph.AddScalar(floorLog2Graph(vs), 1), float64(-bias), float64(int(1)<<exponentWidth-1-bias))
	p := pow2Graph(e)
	k := graph.ClipScalar(graph.Round(graph.MulScalar(graph.Div(vs, p), math.Ldexp(1, m))), 0, math.Ldexp(1, m)-1)
	q := graph.Mul(signGraph(x), graph.Mul(graph.MulScalar(k, math.Ldexp(1, -m)), p))
	return graph.Where(small, x, q)
}

// sqrt2Above is the least value of dtype above √2: the threshold of
// log-domain rounding (frac ≥ it ⟺ frac > √2).
func sqrt2Above(dt dtypes.DType) float64 {
	if dt == dtypes.Float32 {
		v := float32(math.Sqrt2)
		if float64(v) < math.Sqrt2 {
			v = math.Nextafter32(v, 2)
		}
		return float64(v)
	}
	return math.Sqrt2 // float64(√2) is above √2
}

// logGraph is QuantizeLog with a bias node (scalar or per element).
func logGraph(x *graph.Node, width int, bias *graph.Node) *graph.Node {
	eMin := graph.Neg(bias)
	eMax := graph.Sub(scalar(x, float64(int(1)<<(width-1)-1)), bias)
	eps := graph.MulScalar(pow2Graph(eMin), 0.1)
	s := graph.Sign(graph.Add(x, eps))
	a := safePositive(graph.Add(graph.Abs(x), eps))
	l := floorLog2Graph(a)
	up := graph.GreaterOrEqual(graph.Div(a, pow2Graph(l)), scalar(x, sqrt2Above(x.DType())))
	e := graph.Min(graph.Max(graph.Add(l, boolTo(up, x)), eMin), eMax)
	return graph.Mul(s, pow2Graph(e))
}

// blockMaxGraph returns each element's block max (ax is |x|), with MASE's
// all-zero-block rule (see blockMaxima).
func blockMaxGraph(ax *graph.Node, bs []int) *graph.Node {
	dims := ax.Shape().Dimensions
	pads := make([]compute.PadAxis, len(dims))
	padded := make([]int, len(dims))
	var split, reduce []int
	for i, d := range dims {
		p := (d + bs[i] - 1) / bs[i] * bs[i]
		pads[i] = compute.PadAxis{End: p - d}
		padded[i] = p
		split = append(split, p/bs[i], bs[i])
		reduce = append(reduce, 2*i+1)
	}
	tiles := graph.Reshape(graph.Pad(ax, scalar(ax, 0), pads...), split...)
	bm := graph.ReduceAndKeep(tiles, graph.ReduceMax, reduce...)
	nz := graph.GreaterThan(bm, scalar(ax, 0))
	minNZ := graph.ReduceAllMin(graph.Where(nz, bm, graph.Infinity(ax.Graph(), ax.DType(), 1)))
	repl := graph.Where(graph.IsFinite(minNZ), minNZ, scalar(ax, 1))
	bm = graph.Where(nz, bm, repl)
	full := graph.Reshape(graph.BroadcastToDims(bm, split...), padded...)
	ranges := make([]graph.SliceAxisSpec, len(dims))
	for i, d := range dims {
		ranges[i] = graph.AxisRange(0, d)
	}
	return graph.Slice(full, ranges...)
}

// rowsOf reshapes x to [slices, slice length] for per-first-axis-slice
// statistics (one slice for rank 1).
func rowsOf(x *graph.Node) *graph.Node {
	dims := x.Shape().Dimensions
	if len(dims) >= 2 {
		return graph.Reshape(x, dims[0], x.Shape().Size()/dims[0])
	}
	return graph.Reshape(x, 1, x.Shape().Size())
}

// zeroScaledGraph is QuantizeBinaryZeroScaled.
func zeroScaledGraph(x *graph.Node) *graph.Node {
	rows := rowsOf(x)
	alpha := graph.ReduceAndKeep(graph.Abs(rows), graph.ReduceMean, 1)
	q := graph.Mul(alpha, boolTo(graph.GreaterThan(rows, scalar(x, 0)), x))
	return graph.Reshape(q, x.Shape().Dimensions...)
}

// ternaryGraph is QuantizeTernary.
func ternaryGraph(x *graph.Node, scaling bool) *graph.Node {
	rows := rowsOf(x)
	a := graph.Abs(rows)
	delta := graph.MulScalar(graph.ReduceAndKeep(a, graph.ReduceMean, 1), 0.75)
	q := graph.Sub(boolTo(graph.GreaterThan(rows, delta), x), boolTo(graph.LessThan(rows, graph.Neg(delta)), x))
	if scaling {
		mask := boolTo(graph.GreaterThan(a, delta), x)
		count := graph.ReduceAndKeep(mask, graph.ReduceSum, 1)
		sum := graph.ReduceAndKeep(graph.Mul(a, mask), graph.ReduceSum, 1)
		alpha := graph.Where(graph.GreaterThan(count, scalar(x, 0)), graph.Div(sum, graph.MaxScalar(count, 1)), scalar(x, 0))
		q = graph.Mul(q, alpha)
	}
	return graph.Reshape(q, x.Shape().Dimensions...)
}

// roundBF16Graph is RoundBF16.
func roundBF16Graph(v *graph.Node) *graph.Node {
	a := graph.Abs(v)
	e := graph.MaxScalar(floorLog2Graph(safePositive(a)), -126)
	ulp := pow2Graph(graph.AddScalar(e, -7))
	r := graph.MinScalar(graph.Mul(graph.Round(graph.Div(a, ulp)), ulp), maxBF16)
	r = graph.Where(graph.GreaterThan(a, scalar(v, 0)), r, graph.ZerosLike(r))
	return graph.Where(graph.LessThan(v, scalar(v, 0)), graph.Neg(r), r)
}

// mxint8Graph is QuantizeMXInt8 (the dequantised values).
func mxint8Graph(x *graph.Node, groupSize int) *graph.Node {
	groups := graph.Reshape(x, x.Shape().Size()/groupSize, groupSize)
	w := roundBF16Graph(groups)
	a := graph.Abs(w)
	a = graph.Where(graph.LessThan(a, scalar(x, minNormal32)), graph.ZerosLike(a), a)
	gmax := graph.ReduceAndKeep(a, graph.ReduceMax, 1)
	gmax = graph.Where(graph.GreaterThan(gmax, scalar(x, 0)), gmax, graph.MulScalar(graph.OnesLike(gmax), minNormal32))
	div := pow2Graph(floorLog2Graph(gmax)) // 2^(E−127); 2^−126 for an all-zero group
	m := graph.ClipScalar(graph.Round(graph.MulScalar(graph.Div(a, div), 64)), 0, mxint8MantissaMax)
	q := graph.Mul(signGraph(w), graph.Mul(graph.MulScalar(m, 1.0/64), div))
	return graph.Reshape(q, x.Shape().Dimensions...)
}
