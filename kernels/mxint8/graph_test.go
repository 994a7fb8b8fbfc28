package mxint8

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/quant"
)

// runDequantizeGraph executes DequantizeGraph on p's data on the default
// backend.
func runDequantizeGraph(t *testing.T, p *Packed) []bfloat16.BFloat16 {
	t.Helper()
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	var buildErr error
	exec, err := graph.NewExec(be, func(m, e *graph.Node) *graph.Node {
		out, err := DequantizeGraph(m, e, p.GroupSize())
		if err != nil {
			buildErr = err
			return graph.ConvertDType(m, dtypes.BFloat16)
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Call(tensors.FromValue(p.Mantissas()), tensors.FromValue(p.Exponents()))
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res[0].DType() != dtypes.BFloat16 || res[0].Shape().Size() != p.Len() {
		t.Fatalf("graph output %s, want bfloat16 [%d]", res[0].Shape(), p.Len())
	}
	out, err := tensors.CopyFlatData[bfloat16.BFloat16](res[0])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDequantizeGraphBitExact runs the graph op on the Go backend for every
// group size, with full and partial last groups, on random data and on
// every canonical (mantissa, exponent) pair, against the bit-trick loop.
func TestDequantizeGraphBitExact(t *testing.T) {
	for _, gs := range GroupSizes {
		var ps []*Packed
		for _, n := range []int{3 * gs, 5*gs + 13} {
			p, err := Pack(testValues(n, uint64(7*n+gs)), gs)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		// Every canonical (mantissa, exponent) pair.
		ps = append(ps, everyEncoding(t, gs))
		for _, p := range ps {
			got := runDequantizeGraph(t, p)
			want := DequantizeReference(p)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("gs %d n %d: value %d (m %d, E %d): graph %#04x, reference %#04x",
						gs, p.Len(), i, p.Mantissas()[i], p.Exponents()[i/gs], uint16(got[i]), uint16(want[i]))
				}
			}
		}
	}
}

// TestDequantizeGraphErrors checks the op's argument errors.
func TestDequantizeGraphErrors(t *testing.T) {
	type args struct {
		mDType, eDType dtypes.DType
		mDims, eDims   []int
		gs             int
	}
	cases := []struct {
		a    args
		want string
	}{
		{args{dtypes.Int8, dtypes.Uint8, []int{64}, []int{2}, 12}, "group size 12 is not supported (allowed: 8, 16, 32, 64, 128, 256, 512)"},
		{args{dtypes.Float32, dtypes.Uint8, []int{64}, []int{2}, 32}, "mantissas are (Float32)[64] (allowed: int8 of rank 1)"},
		{args{dtypes.Int8, dtypes.Uint8, []int{2, 32}, []int{2}, 32}, "mantissas are (Int8)[2, 32] (allowed: int8 of rank 1)"},
		{args{dtypes.Int8, dtypes.Int8, []int{64}, []int{2}, 32}, "exponents are (Int8)[2] (allowed: uint8 of rank 1)"},
		{args{dtypes.Int8, dtypes.Uint8, []int{65}, []int{2}, 32}, "2 exponents for 65 mantissas in groups of 32 (allowed: at least one mantissa and one exponent per group, 3)"},
	}
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		g := graph.NewGraph(be, "dequantize_errors")
		m := graph.Parameter(g, "m", shapes.Make(tc.a.mDType, tc.a.mDims...))
		e := graph.Parameter(g, "e", shapes.Make(tc.a.eDType, tc.a.eDims...))
		_, err := DequantizeGraph(m, e, tc.a.gs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.a, err, tc.want)
		}
	}
	if _, err := DequantizeGraph(nil, nil, 32); err == nil || !strings.Contains(err.Error(), "must be nodes") {
		t.Errorf("nil nodes: %v", err)
	}
}

// TestMatchesFakeQuantGraph: Pack then dequantise gives exactly the values
// of mase/quant's MXINT8 fake-quantisation graph (what quantized.Linear's
// "mxint8" config applies to a weight), for every group size, on the Go
// backend.
func TestMatchesFakeQuantGraph(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, gs := range GroupSizes {
		x := testValues(4096, uint64(gs))
		var buildErr error
		exec, err := graph.NewExec(be, func(xn *graph.Node) *graph.Node {
			q, err := quant.Spec{Format: quant.MXInt8, GroupSize: gs}.Graph(xn, nil)
			if err != nil {
				buildErr = err
				return xn
			}
			return q
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := exec.Call(tensors.FromValue(x))
		if err != nil || buildErr != nil {
			t.Fatal(err, buildErr)
		}
		got, err := tensors.CopyFlatData[float32](res[0])
		if err != nil {
			t.Fatal(err)
		}
		p, err := Pack(x, gs)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range p.Float32s() {
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("gs %d: value %d (%g): fake-quant graph %g, packed %g", gs, i, x[i], got[i], want)
			}
		}
	}
}
