package cuda

import (
	"errors"
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
)

// A Probe is one small call of a kernel with fixed inputs and a check of
// its result against the kernel's host build (the same C body, which the
// package's tests hold to the references): what a backend runs once after
// registering the kernels, before its graphs rely on them.
type Probe struct {
	// Kernel names what is probed ("MXINT8 dequantisation").
	Kernel string
	Call   Call
	// Inputs holds one flat Go slice per operand of Call, of its dtype.
	Inputs []any
	// Check is given the result as a flat Go slice of Call's result dtype.
	Check func(result any) error
}

// Probes returns a probe of every kernel and dtype the backends call: the
// MXINT8 kernel on 8 groups of 32 values (exponents 0, 1 and 254 among
// them, every mantissa), bit for bit; flash attention in float32 and
// float16 on 2 × 2 heads, 5 queries, 37 keys (a partial tile), head_dim 40,
// a key-padding mask and scale 0.3, within 1e-5 (float32) or 2e-3
// (float16). It fails in a binary built without cgo (no host build).
func Probes() ([]Probe, error) {
	if !HostBuild {
		return nil, errors.New("cuda: built without cgo: the kernels' probes need their host build")
	}
	mx, err := mxint8Probe()
	if err != nil {
		return nil, err
	}
	probes := []Probe{mx}
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float16} {
		p, err := sdpaProbe(dt)
		if err != nil {
			return nil, err
		}
		probes = append(probes, p)
	}
	return probes, nil
}

func mxint8Probe() (Probe, error) {
	const gs = 32
	exps := []uint8{0, 1, 60, 127, 128, 200, 253, 254}
	mant := make([]int8, gs*len(exps))
	for i := range mant {
		if exps[i/gs] != 0 { // exponent 0 holds only zeros
			mant[i] = int8((i*53)%255 - 127)
		}
	}
	want, err := dequantizeOnHost(mant, exps, gs, 7)
	if err != nil {
		return Probe{}, err
	}
	call, err := MXInt8Call(len(mant), gs)
	if err != nil {
		return Probe{}, err
	}
	check := func(result any) error {
		got, ok := result.([]bfloat16.BFloat16)
		if !ok || len(got) != len(want) {
			return fmt.Errorf("result %T (want %d bfloat16 values)", result, len(want))
		}
		for i := range want {
			if got[i].Bits() != want[i] {
				return fmt.Errorf("value %d (mantissa %d, exponent %d) is %v, the host build's %v",
					i, mant[i], exps[i/gs], got[i], bfloat16.FromBits(want[i]))
			}
		}
		return nil
	}
	return Probe{Kernel: "MXINT8 dequantisation", Call: call, Inputs: []any{mant, exps}, Check: check}, nil
}

func sdpaProbe(dtype dtypes.DType) (Probe, error) {
	cfg := SDPAConfig{Batch: 2, Heads: 2, SeqQ: 5, SeqK: 37, HeadDim: 40, DType: dtype, Scale: 0.3, MaskDims: []int{2, 1, 1, 37}}
	values := func(n int, phase float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.37+phase) * 1.5)
		}
		return x
	}
	nq, nkv := cfg.Batch*cfg.Heads*cfg.SeqQ*cfg.HeadDim, cfg.Batch*cfg.Heads*cfg.SeqK*cfg.HeadDim
	q, k, v := values(nq, 0), values(nkv, 1), values(nkv, 2)
	mask := make([]float32, cfg.Batch*cfg.SeqK)
	for j := cfg.SeqK - 9; j < cfg.SeqK; j++ {
		mask[cfg.SeqK+j] = -1e4 // batch 1 loses its last 9 keys
	}
	call, err := SDPACall(cfg)
	if err != nil {
		return Probe{}, err
	}
	var want []float64
	var inputs []any
	tol := 1e-5
	if dtype == dtypes.Float16 {
		tol = 2e-3
		h := func(x []float32) []float16.Float16 {
			out := make([]float16.Float16, len(x))
			for i, f := range x {
				out[i] = float16.FromFloat32(f)
			}
			return out
		}
		bits := func(x []float16.Float16) []uint16 {
			out := make([]uint16, len(x))
			for i, f := range x {
				out[i] = f.Bits()
			}
			return out
		}
		qh, kh, vh := h(q), h(k), h(v)
		got, err := sdpaOnHost(cfg, bits(qh), bits(kh), bits(vh), mask)
		if err != nil {
			return Probe{}, err
		}
		for _, b := range got {
			want = append(want, float64(float16.FromBits(b).Float32()))
		}
		inputs = []any{qh, kh, vh, mask}
	} else {
		got, err := sdpaOnHost(cfg, q, k, v, mask)
		if err != nil {
			return Probe{}, err
		}
		for _, x := range got {
			want = append(want, float64(x))
		}
		inputs = []any{q, k, v, mask}
	}
	check := func(result any) error {
		var got []float64
		switch r := result.(type) {
		case []float32:
			for _, x := range r {
				got = append(got, float64(x))
			}
		case []float16.Float16:
			for _, x := range r {
				got = append(got, float64(x.Float32()))
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("result %T (want %d %s values)", result, len(want), dtype)
		}
		for i := range want {
			if d := math.Abs(got[i] - want[i]); !(d <= tol) {
				return fmt.Errorf("output %d is %g, the host build's %g (allowed error %g)", i, got[i], want[i], tol)
			}
		}
		return nil
	}
	return Probe{Kernel: "flash attention (" + dtype.String() + ")", Call: call, Inputs: inputs, Check: check}, nil
}
