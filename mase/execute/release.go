package execute

import (
	"github.com/gomlx/gomlx/core/tensors"
)

// Device memory: a runner frees what it owns as soon as it is done with
// it, rather than leaving buffers to Go's garbage collector (which on a
// GPU runs far too rarely: device memory is not Go heap). It owns the
// device copies of inputs it uploaded, the intermediate tensors between
// stages and outputs it does not return; the tensors Run returns are the
// caller's, who finalizes them (tensors.Tensor.FinalizeAll) when done.

// FreeUploads notes which of a call's inputs have no device copy yet (the
// call will upload them); the function it returns frees the device copies
// the call made, keeping the host data. Use it as
// defer FreeUploads(args...)() around a call. A tensor in a backend's
// shared host memory (the Go backend's) has no separate copy and stays as
// it is; arguments that are not tensors are ignored.
func FreeUploads(args ...any) func() {
	var host []*tensors.Tensor
	for _, a := range args {
		if t, ok := a.(*tensors.Tensor); ok && t != nil && t.Ok() && !t.IsOnAnyDevice() {
			host = append(host, t)
		}
	}
	return func() {
		for _, t := range host {
			if t.Ok() {
				_ = t.InvalidateOnDevice()
			}
		}
	}
}

// Finalize frees tensors now (nil ones are skipped): outputs a caller is
// done with, values nobody will see.
func Finalize(ts ...*tensors.Tensor) {
	for _, t := range ts {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
}

// heldTensors counts, per tensor, the node values of a staged run that
// hold it (a host function may return its argument, a tuple may share a
// tensor with another node): a tensor is freed when the last value
// holding it dies. The run's inputs are never freed.
type heldTensors struct {
	count  map[*tensors.Tensor]int
	inputs map[*tensors.Tensor]bool
}

func newHeldTensors(inputs []*tensors.Tensor) *heldTensors {
	h := &heldTensors{count: map[*tensors.Tensor]int{}, inputs: map[*tensors.Tensor]bool{}}
	for _, t := range inputs {
		h.inputs[t] = true
	}
	return h
}

// hold counts the tensors inside a value.
func (h *heldTensors) hold(v any) {
	ForEachTensor(v, func(t *tensors.Tensor) { h.count[t]++ })
}

// drop uncounts the tensors inside a value and frees those no value holds.
func (h *heldTensors) drop(v any) {
	ForEachTensor(v, func(t *tensors.Tensor) {
		h.count[t]--
		if h.count[t] <= 0 {
			delete(h.count, t)
			if !h.inputs[t] {
				_ = t.FinalizeAll()
			}
		}
	})
}

// releaseAll frees every held tensor (a run that failed).
func (h *heldTensors) releaseAll() {
	for t := range h.count {
		if !h.inputs[t] {
			_ = t.FinalizeAll()
		}
	}
	clear(h.count)
}

// ForEachTensor calls f on every tensor leaf of a value, as Run and
// RunCapture give them (a tensor, or a []any tuple of values).
func ForEachTensor(v any, f func(*tensors.Tensor)) {
	switch x := v.(type) {
	case *tensors.Tensor:
		f(x)
	case []any:
		for _, e := range x {
			ForEachTensor(e, f)
		}
	}
}
