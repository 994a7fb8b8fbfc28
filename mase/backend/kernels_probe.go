package backend

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"

	"github.com/gomase/gomase/kernels/cuda"
)

// probeKernels runs each probe of a kernel in set once on be (the backend
// the kernels were registered with), through emit, and returns set without
// the kernels whose probe failed, saying why in Reason. handlerError
// (cuda.CallError) returns and clears what a kernel's handler recorded
// when it failed: XLA does not always pass it on, so each probe reads it.
func probeKernels(be compute.Backend, set KernelSet, emit emitFunc, probes []cuda.Probe, handlerError func() error) KernelSet {
	var failed []string
	for _, p := range probes {
		on := &set.MXInt8
		if p.Call.Target == cuda.SDPATarget {
			on = &set.SDPA
		}
		if !*on {
			continue
		}
		_ = handlerError() // an earlier call's, not this probe's
		err := runProbe(be, emit, p)
		if herr := handlerError(); herr != nil {
			if err == nil {
				err = herr
			} else {
				err = fmt.Errorf("%w (the handler: %v)", err, herr)
			}
		}
		if err != nil {
			*on = false
			failed = append(failed, fmt.Sprintf("%s failed its check on this device, so it is off: %v", p.Kernel, err))
		}
	}
	if len(failed) > 0 {
		set.Reason = strings.Join(failed, "; ")
	}
	return set
}

// runProbe builds a computation of p's one call on be, runs it on p's
// inputs and checks the result.
func runProbe(be compute.Backend, emit emitFunc, p cuda.Probe) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	b := be.Builder("gomase_kernel_probe")
	if b == nil {
		return fmt.Errorf("the backend gave no builder")
	}
	fn := b.Main()
	params := make([]compute.Value, len(p.Call.Operands))
	for i, s := range p.Call.Operands {
		if params[i], err = fn.Parameter(fmt.Sprintf("x%d", i), s, nil); err != nil {
			return err
		}
	}
	outs, err := emit(fn, p.Call, params...)
	if err != nil {
		return err
	}
	if err := fn.Return(outs, nil); err != nil {
		return err
	}
	exe, err := b.Compile()
	if err != nil {
		return err
	}
	defer exe.Finalize()
	ins := make([]compute.Buffer, len(params))
	for i, s := range p.Call.Operands {
		if ins[i], err = be.BufferFromFlatData(0, p.Inputs[i], s); err != nil {
			return err
		}
		defer ins[i].Finalize()
	}
	res, err := exe.Execute(ins, nil, 0)
	if err != nil {
		return err
	}
	for _, r := range res {
		defer r.Finalize()
	}
	result := p.Call.Results[0]
	flat := dtypes.MakeAnySlice(result.DType, result.Size())
	if err := res[0].ToFlatData(flat); err != nil {
		return err
	}
	return p.Check(flat)
}
