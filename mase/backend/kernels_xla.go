//go:build cgo && linux && (amd64 || arm64) && !noxla

package backend

import (
	"fmt"
	"os"
	_ "unsafe" // go:linkname

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/go-xla/compute/xla"

	"github.com/gomase/gomase/kernels/cuda"
)

// xlaCustomCall is go-xla's unexported (*xla.Function).customCall, the only
// way into a StableHLO custom call from a graph being built (its callers
// are go-xla's cuDNN ops). The signature is not checked by the compiler:
// it is that of go-xla v0.4.1, which TestXLACustomCallPinned holds to.
//
//go:linkname xlaCustomCall github.com/gomlx/go-xla/compute/xla.(*Function).customCall
func xlaCustomCall(f *xla.Function, target string, backendConfig string,
	operandLayouts [][]int, outputShapes []shapes.Shape, outputLayouts [][]int,
	operands ...compute.Value) ([]compute.Value, error)

// pinnedGoXLA is the go-xla version xlaCustomCall was written against.
const pinnedGoXLA = "v0.4.1"

// emitXLA adds call to an XLA function as a custom call (API version 2).
func emitXLA(fn compute.Function, call cuda.Call, operands ...compute.Value) ([]compute.Value, error) {
	xf, ok := fn.(*xla.Function)
	if !ok {
		return nil, notImplemented("custom call %s on a %T function (want go-xla's)", call.Target, fn)
	}
	if len(operands) != len(call.Operands) {
		return nil, fmt.Errorf("custom call %s: %d operands, want %d", call.Target, len(operands), len(call.Operands))
	}
	return xlaCustomCall(xf, call.Target, call.Config, cuda.Layouts(call.Operands), call.Results, cuda.Layouts(call.Results), operands...)
}

// withCUDAKernels registers gomase's CUDA kernels with the CUDA PJRT plugin
// at pluginPath, which be (an XLA backend) loaded, runs each kernel once on
// a probe (cuda.Probes) and wraps be so that its graphs call the kernels
// that passed. When they cannot be registered (no driver, no GPU extension
// in the plugin, GOMASE_CUDA_KERNELS=off) or a probe fails, the graphs run
// the GoMLX ops instead, and Kernels(be) says why.
func withCUDAKernels(be compute.Backend, pluginPath string) compute.Backend {
	if os.Getenv(KernelsEnv) == "off" {
		return withKernels(be, KernelSet{Reason: KernelsEnv + "=off"}, emitXLA)
	}
	if err := cuda.RegisterWithPJRT(pluginPath); err != nil {
		return withKernels(be, KernelSet{Reason: err.Error()}, emitXLA)
	}
	probes, err := cuda.Probes()
	if err != nil {
		return withKernels(be, KernelSet{Reason: err.Error()}, emitXLA)
	}
	return withKernels(be, probeKernels(be, KernelSet{MXInt8: true, SDPA: true}, emitXLA, probes, cuda.CallError), emitXLA)
}
