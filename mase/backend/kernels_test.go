package backend_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/modeltest"
	"github.com/gomase/gomase/kernels/cuda"
	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn/packed"
	"github.com/gomase/gomase/mase/passes"
)

// dequantizeWithOps is an emitter that answers the MXINT8 custom call with
// the backend's own ops (m·2^(E−133), rounded to bfloat16) and records the
// calls: the kernel-calling graphs run on the Go backend, without a GPU.
func dequantizeWithOps(calls *[]cuda.Call) backend.EmitFunc { return dequantizeWithOffset(calls, 133) }

// dequantizeWithOffset is dequantizeWithOps with m·2^(E−offset).
func dequantizeWithOffset(calls *[]cuda.Call, offset float32) backend.EmitFunc {
	return func(fn compute.Function, call cuda.Call, operands ...compute.Value) ([]compute.Value, error) {
		*calls = append(*calls, call)
		n, gs, err := cuda.ParseMXInt8Config(call.Config)
		if err != nil {
			return nil, err
		}
		groups := n / gs
		m, err := fn.ConvertDType(operands[0], dtypes.Float32)
		if err != nil {
			return nil, err
		}
		e, err := fn.ConvertDType(operands[1], dtypes.Float32)
		if err != nil {
			return nil, err
		}
		constant := func(x float32) (compute.Value, error) {
			c, err := fn.Constant([]float32{x})
			if err != nil {
				return nil, err
			}
			c, err = fn.Reshape(c)
			if err != nil {
				return nil, err
			}
			return fn.BroadcastInDim(c, shapes.Make(dtypes.Float32, groups), nil)
		}
		bias, err := constant(offset)
		if err != nil {
			return nil, err
		}
		two, err := constant(2)
		if err != nil {
			return nil, err
		}
		if e, err = fn.Sub(e, bias); err != nil {
			return nil, err
		}
		if e, err = fn.Pow(two, e); err != nil {
			return nil, err
		}
		if e, err = fn.BroadcastInDim(e, shapes.Make(dtypes.Float32, groups, gs), []int{0}); err != nil {
			return nil, err
		}
		if e, err = fn.Reshape(e, n); err != nil {
			return nil, err
		}
		y, err := fn.Mul(m, e)
		if err != nil {
			return nil, err
		}
		y, err = fn.ConvertDType(y, dtypes.BFloat16)
		return []compute.Value{y}, err
	}
}

// openGo opens a Go backend of the test's own, finalized when it ends.
func openGo(t *testing.T) compute.Backend {
	t.Helper()
	be, err := backend.Open("go")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(be.Finalize)
	return be
}

// packedBertTiny is bert-tiny with every Linear and embedding packed as
// MXINT8 in groups of 32.
func packedBertTiny(t *testing.T) *ir.MaseGraph {
	t.Helper()
	m, err := models.NewBertTiny(11)
	if err != nil {
		t.Fatal(err)
	}
	modeltest.RandomLinearBiases(t, m, rand.New(rand.NewPCG(5, 6)))
	mg, err := mase.NewMaseGraph(m, []string{"input_ids"})
	if err != nil {
		t.Fatal(err)
	}
	if mg, _, err = passes.PackLinears(mg, passes.PackOptions{GroupSize: 32, Embeddings: true}); err != nil {
		t.Fatal(err)
	}
	return mg
}

// forward runs mg compiled on be and returns its first output.
func forward(t *testing.T, be compute.Backend, mg *ir.MaseGraph) []float32 {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]int32, 2*12)
	for i := range ids {
		ids[i] = int32(rng.IntN(30522))
	}
	r, err := execute.CompileOn(be, mg, execute.Mode{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	in := tensors.FromFlatDataAndDimensions(ids, 2, 12)
	defer in.FinalizeAll()
	outs, err := r.Run(map[string]*tensors.Tensor{"input_ids": in})
	if err != nil {
		t.Fatal(err)
	}
	defer execute.Finalize(outs...)
	v, err := tensors.CopyFlatData[float32](outs[0])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPackedModelCallsKernels runs packed bert-tiny on a backend whose
// graphs call the MXINT8 kernel (answered by dequantizeWithOps): every
// packed Linear and embedding makes one call, and the logits equal those
// of the GoMLX graph.
func TestPackedModelCallsKernels(t *testing.T) {
	goBE := openGo(t)
	mg := packedBertTiny(t)
	want := forward(t, goBE, mg)

	var calls []cuda.Call
	kb := backend.WithKernels(goBE, backend.KernelSet{MXInt8: true}, dequantizeWithOps(&calls))
	if !backend.Kernels(kb).MXInt8 || !backend.Kernels(backend.Counted(kb)).MXInt8 || backend.Kernels(goBE).MXInt8 {
		t.Fatal("Kernels does not see the kernels of the wrapped backend only")
	}
	mg = packedBertTiny(t) // a store of its own: tensors stay on one backend
	got := forward(t, kb, mg)

	var linears, embeddings int
	for _, nm := range mg.Model.Modules() {
		switch nm.Module.(type) {
		case *packed.Linear:
			linears++
		case *packed.Embedding:
			embeddings++
		}
	}
	if linears == 0 || embeddings == 0 || len(calls) != linears+embeddings {
		t.Errorf("%d kernel calls for %d packed Linears and %d packed embeddings", len(calls), linears, embeddings)
	}
	for _, c := range calls {
		if c.Target != cuda.MXInt8Target || !strings.HasSuffix(c.Config, "group_size=32") {
			t.Errorf("call %+v", c)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d logits, want %d", len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 {
			t.Fatalf("logit %d: %g with the kernel calls, %g with the GoMLX graph", i, got[i], want[i])
		}
	}

	// Without the kernel, the wrapper calls nothing.
	calls = nil
	off := backend.WithKernels(goBE, backend.KernelSet{Reason: "no driver"}, dequantizeWithOps(&calls))
	_ = forward(t, off, packedBertTiny(t))
	if len(calls) != 0 {
		t.Errorf("%d kernel calls on a backend without kernels", len(calls))
	}
	if s := backend.Kernels(off).String(); s != "CUDA kernels: none (no driver)" {
		t.Errorf("Kernels(...).String() = %q", s)
	}
}

// byTarget answers each call with the emitter of its target.
func byTarget(emitters map[string]backend.EmitFunc) backend.EmitFunc {
	return func(fn compute.Function, call cuda.Call, operands ...compute.Value) ([]compute.Value, error) {
		return emitters[call.Target](fn, call, operands...)
	}
}

// TestProbeKernels runs the kernels' probes through emitters on the Go
// backend: right answers keep both kernels, a wrong MXINT8 exponent offset
// or a refused attention call switches that kernel off and says why, with
// the handler's own error when it recorded one.
func TestProbeKernels(t *testing.T) {
	goBE := openGo(t)
	probes, err := cuda.Probes()
	if err != nil {
		t.Skip(err)
	}
	var calls []cuda.Call
	var sdpaCalls []cuda.SDPAConfig
	both := backend.KernelSet{MXInt8: true, SDPA: true}
	good := byTarget(map[string]backend.EmitFunc{cuda.MXInt8Target: dequantizeWithOps(&calls), cuda.SDPATarget: attentionWithOps(&sdpaCalls)})
	noHandlerError := func() error { return nil }
	if got := backend.ProbeKernels(goBE, both, good, probes, noHandlerError); got != both {
		t.Errorf("right answers: %+v", got)
	}
	if len(calls) != 1 || len(sdpaCalls) != 2 {
		t.Errorf("probes made %d MXINT8 and %d attention calls, want 1 and 2", len(calls), len(sdpaCalls))
	}
	refused := func(compute.Function, cuda.Call, ...compute.Value) ([]compute.Value, error) {
		return nil, errors.New("custom call target not found")
	}
	bad := byTarget(map[string]backend.EmitFunc{cuda.MXInt8Target: dequantizeWithOffset(&calls, 132), cuda.SDPATarget: refused})
	got := backend.ProbeKernels(goBE, both, bad, probes, noHandlerError)
	if got.MXInt8 || got.SDPA || !strings.Contains(got.Reason, "MXINT8 dequantisation failed its check on this device, so it is off: value") ||
		!strings.Contains(got.Reason, "flash attention (Float32) failed its check on this device, so it is off: custom call target not found") {
		t.Errorf("wrong answers: %+v", got)
	}
	onlyAttention := backend.ProbeKernels(goBE, both, byTarget(map[string]backend.EmitFunc{cuda.MXInt8Target: dequantizeWithOffset(&calls, 134), cuda.SDPATarget: good}), probes, noHandlerError)
	if onlyAttention.MXInt8 || !onlyAttention.SDPA || !strings.HasPrefix(onlyAttention.String(), "CUDA kernels: flash attention (MXINT8 dequantisation failed") {
		t.Errorf("one wrong: %+v, %q", onlyAttention, onlyAttention.String())
	}

	// A handler that fails records its error and leaves the output as it
	// was: the probe names the handler's error, not only the wrong value;
	// one recorded before the probes is not blamed on them.
	var pending error
	stale := errors.New("cuda: custom call: from an earlier graph")
	failing := func(fn compute.Function, call cuda.Call, operands ...compute.Value) ([]compute.Value, error) {
		if call.Target == cuda.MXInt8Target {
			pending = errors.New("cuda: custom call: gomase_mxint8: cuLaunchKernel: CUDA_ERROR_INVALID_VALUE")
			return dequantizeWithOffset(&calls, 132)(fn, call, operands...)
		}
		return good(fn, call, operands...)
	}
	pending = stale
	take := func() error { err := pending; pending = nil; return err }
	withHandler := backend.ProbeKernels(goBE, both, failing, probes, take)
	if withHandler.MXInt8 || !withHandler.SDPA || !strings.Contains(withHandler.Reason, "(the handler: cuda: custom call: gomase_mxint8: cuLaunchKernel: CUDA_ERROR_INVALID_VALUE)") ||
		strings.Contains(withHandler.Reason, "earlier graph") {
		t.Errorf("a failing handler: %+v", withHandler)
	}
}
