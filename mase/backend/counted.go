package backend

import (
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
)

// Counted wraps a backend so that it counts its live buffers: every buffer
// it hands out (uploads, shared buffers, execution outputs, copies to
// another device) counts until it is finalized or donated to an execution.
// Every backend Open and Default return is counted, so a test can see
// whether the runners, the trainer and the passes release what they own
// (LiveBuffers). The count costs one atomic add per buffer. It also counts
// the reads of its buffers' data to the host (HostReads), so a test can
// check that a runner hands tensors from one executable to the next
// without reading them; a tensor that lives in the Go backend's shared
// host memory from the start (an uploaded input) is read without a count.
//
// The wrapped backend behaves as the one inside (Unwrap returns it): its
// buffers and executables are wrapped only to keep the count.
func Counted(be compute.Backend) compute.Backend {
	if _, ok := be.(*countedBackend); ok {
		return be
	}
	return &countedBackend{Backend: be}
}

// LiveBuffers returns the number of buffers of a Counted backend that are
// neither finalized nor donated, and false for a backend that does not
// count.
func LiveBuffers(be compute.Backend) (int64, bool) {
	cb, ok := be.(*countedBackend)
	if !ok {
		return 0, false
	}
	return cb.live.Load(), true
}

// HostReads returns the number of times the data of a Counted backend's
// buffers was read or copied to the host (Buffer.Data, Buffer.ToFlatData:
// what reading a tensor's values costs on a device), and false for a
// backend that does not count.
func HostReads(be compute.Backend) (int64, bool) {
	cb, ok := be.(*countedBackend)
	if !ok {
		return 0, false
	}
	return cb.reads.Load(), true
}

// Unwrap returns the backend inside a Counted one (be itself otherwise).
func Unwrap(be compute.Backend) compute.Backend {
	if cb, ok := be.(*countedBackend); ok {
		return cb.Backend
	}
	return be
}

type countedBackend struct {
	compute.Backend
	live  atomic.Int64
	reads atomic.Int64
}

func (b *countedBackend) wrap(buf compute.Buffer) compute.Buffer {
	if buf == nil {
		return nil
	}
	b.live.Add(1)
	return &countedBuffer{Buffer: buf, owner: b}
}

// BufferFromFlatData implements compute.DataInterface.
func (b *countedBackend) BufferFromFlatData(dev compute.DeviceNum, flat any, shape shapes.Shape) (compute.Buffer, error) {
	buf, err := b.Backend.BufferFromFlatData(dev, flat, shape)
	if err != nil {
		return nil, err
	}
	return b.wrap(buf), nil
}

// NewSharedBuffer implements compute.DataInterface.
func (b *countedBackend) NewSharedBuffer(dev compute.DeviceNum, shape shapes.Shape) (compute.Buffer, any, error) {
	buf, flat, err := b.Backend.NewSharedBuffer(dev, shape)
	if err != nil {
		return nil, nil, err
	}
	return b.wrap(buf), flat, nil
}

// Builder implements compute.Backend: its executables count their outputs.
func (b *countedBackend) Builder(name string) compute.Builder {
	return &countedBuilder{Builder: b.Backend.Builder(name), owner: b}
}

type countedBuilder struct {
	compute.Builder
	owner *countedBackend
}

// Compile implements compute.Builder.
func (cb *countedBuilder) Compile() (compute.Executable, error) {
	exe, err := cb.Builder.Compile()
	if err != nil {
		return nil, err
	}
	return &countedExecutable{Executable: exe, owner: cb.owner}, nil
}

type countedExecutable struct {
	compute.Executable
	owner *countedBackend
}

// Execute implements compute.Executable: it passes the wrapped buffers'
// insides, counts donated inputs as gone and wraps the outputs.
func (e *countedExecutable) Execute(inputs []compute.Buffer, donate []bool, dev compute.DeviceNum) ([]compute.Buffer, error) {
	inner := make([]compute.Buffer, len(inputs))
	for i, in := range inputs {
		inner[i] = unwrapBuffer(in)
	}
	outs, err := e.Executable.Execute(inner, donate, dev)
	for i, in := range inputs {
		if i < len(donate) && donate[i] {
			if cb, ok := in.(*countedBuffer); ok {
				cb.release()
			}
		}
	}
	if err != nil {
		return nil, err
	}
	for i, o := range outs {
		outs[i] = e.owner.wrap(o)
	}
	return outs, nil
}

func unwrapBuffer(buf compute.Buffer) compute.Buffer {
	if cb, ok := buf.(*countedBuffer); ok {
		return cb.Buffer
	}
	return buf
}

type countedBuffer struct {
	compute.Buffer
	owner *countedBackend
	gone  atomic.Bool
}

// release takes the buffer out of the count, once.
func (cb *countedBuffer) release() {
	if cb.gone.CompareAndSwap(false, true) {
		cb.owner.live.Add(-1)
	}
}

// Backend implements compute.Buffer: the counted backend, so tensors
// built from the buffer stay on it.
func (cb *countedBuffer) Backend() compute.Backend { return cb.owner }

// Finalize implements compute.Buffer.
func (cb *countedBuffer) Finalize() error {
	cb.release()
	return cb.Buffer.Finalize()
}

// Data implements compute.Buffer: a host read.
func (cb *countedBuffer) Data() (any, error) {
	cb.owner.reads.Add(1)
	return cb.Buffer.Data()
}

// ToFlatData implements compute.Buffer: a host read.
func (cb *countedBuffer) ToFlatData(flat any) error {
	cb.owner.reads.Add(1)
	return cb.Buffer.ToFlatData(flat)
}

// CopyToDevice implements compute.Buffer.
func (cb *countedBuffer) CopyToDevice(dev compute.DeviceNum) (compute.Buffer, error) {
	buf, err := cb.Buffer.CopyToDevice(dev)
	if err != nil {
		return nil, err
	}
	return cb.owner.wrap(buf), nil
}
