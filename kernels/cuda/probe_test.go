package cuda

import (
	"testing"

	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"

	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/kernels/sdpa"
)

// TestProbesAgreeWithReferences feeds each probe the reference's answer
// (kernels/mxint8, kernels/sdpa): it passes, and a result one value off
// fails.
func TestProbesAgreeWithReferences(t *testing.T) {
	if !HostBuild {
		if _, err := Probes(); err == nil {
			t.Error("Probes without a host build: no error")
		}
		t.Skip("built without cgo")
	}
	probes, err := Probes()
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 3 {
		t.Fatalf("%d probes, want 3", len(probes))
	}
	for _, p := range probes {
		var ref, off any
		switch p.Call.Target {
		case MXInt8Target:
			pk, err := mxint8.NewPacked(p.Inputs[0].([]int8), p.Inputs[1].([]uint8), 32)
			if err != nil {
				t.Fatal(err)
			}
			r := mxint8.DequantizeReference(pk)
			o := append([]bfloat16.BFloat16(nil), r...)
			o[100] = bfloat16.FromBits(o[100].Bits() ^ 1)
			ref, off = r, o
		case SDPATarget:
			c, err := ParseSDPAConfig(p.Call.Config)
			if err != nil {
				t.Fatal(err)
			}
			var q, k, v []float64
			half := false
			widen := func(in any) []float64 {
				var out []float64
				switch s := in.(type) {
				case []float32:
					for _, f := range s {
						out = append(out, float64(f))
					}
				case []float16.Float16:
					half = true
					for _, f := range s {
						out = append(out, float64(f.Float32()))
					}
				}
				return out
			}
			q, k, v = widen(p.Inputs[0]), widen(p.Inputs[1]), widen(p.Inputs[2])
			r, err := sdpa.Reference(q, k, v, sdpa.NewShape(c.Batch, c.Heads, c.SeqQ, c.SeqK, c.HeadDim),
				&sdpa.Options{Scale: float64(c.Scale), KeyBias: p.Inputs[3].([]float32)})
			if err != nil {
				t.Fatal(err)
			}
			if half {
				rh, oh := make([]float16.Float16, len(r)), make([]float16.Float16, len(r))
				for i, x := range r {
					rh[i] = float16.FromFloat64(x)
					oh[i] = rh[i]
				}
				oh[7] = float16.FromFloat64(r[7] + 0.01)
				ref, off = rh, oh
			} else {
				rf, of := make([]float32, len(r)), make([]float32, len(r))
				for i, x := range r {
					rf[i], of[i] = float32(x), float32(x)
				}
				of[7] += 1e-4
				ref, off = rf, of
			}
		}
		if err := p.Check(ref); err != nil {
			t.Errorf("%s: the reference's answer fails: %v", p.Kernel, err)
		}
		if err := p.Check(off); err == nil {
			t.Errorf("%s: an answer one value off passes", p.Kernel)
		}
	}
}
