//go:build cgo && linux

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include <dlfcn.h>
#include "cuda_driver.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gomlx/compute/dtypes"
)

// Driver is the CUDA driver, opened from its library at run time.
type Driver struct {
	d *C.gomase_cuda
}

var (
	openOnce   sync.Once
	openDriver *Driver
	openErr    error
)

// OpenDriver opens the CUDA driver (libcuda.so.1, found as the dynamic
// loader finds libraries) and initialises it, once per process. On a
// machine without an NVIDIA driver it returns a one-line error saying so.
func OpenDriver() (*Driver, error) {
	openOnce.Do(func() { openDriver, openErr = openLibrary("libcuda.so.1") })
	return openDriver, openErr
}

func openLibrary(path string) (*Driver, error) {
	d := (*C.gomase_cuda)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gomase_cuda{}))))
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.gomase_cuda_open(d, cpath); msg != nil {
		why := C.GoString(msg)
		if d.lib != nil {
			C.dlclose(d.lib)
		}
		C.free(unsafe.Pointer(d))
		if !strings.Contains(why, path) {
			why = fmt.Sprintf("%s lacks %s (a driver too old for gomase's kernels)", path, why)
		}
		return nil, fmt.Errorf("cuda: no usable NVIDIA driver: %s (the CUDA kernels need a machine with an NVIDIA GPU and its driver)", oneLine(why))
	}
	dr := &Driver{d: d}
	if err := dr.check("cuInit", C.gomase_cuda_init(d)); err != nil {
		return nil, err
	}
	return dr, nil
}

// oneLine keeps an error message on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// check turns a CUDA result into an error naming the call.
func (dr *Driver) check(call string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s (CUDA error %d)", call, C.GoString(C.gomase_cuda_error(dr.d, r)), int(r))
}

// Devices is the number of CUDA devices.
func (dr *Driver) Devices() (int, error) {
	var n C.int
	err := dr.check("cuDeviceGetCount", C.gomase_cuda_count(dr.d, &n))
	return int(n), err
}

// Context is a device's primary context, current on the calling thread
// (callers run on a locked OS thread, see runtime.LockOSThread).
type Context struct {
	dr           *Driver
	dev          C.CUdevice
	ctx          C.CUcontext
	Major, Minor int // compute capability
}

// Context makes device ordinal's primary context current.
func (dr *Driver) Context(ordinal int) (*Context, error) {
	c := &Context{dr: dr}
	var ctx C.CUcontext
	var major, minor C.int
	if err := dr.check("cuDevicePrimaryCtxRetain", C.gomase_cuda_context(dr.d, C.int(ordinal), &c.dev, &ctx, &major, &minor)); err != nil {
		return nil, err
	}
	c.ctx = ctx
	c.Major, c.Minor = int(major), int(minor)
	return c, nil
}

// MakeCurrent makes the context current on the calling OS thread. A
// goroutine that did not open the context (a sub-benchmark, a subtest)
// calls it after runtime.LockOSThread before touching the device: CUDA's
// current context is per thread, and without one every call fails.
func (c *Context) MakeCurrent() error {
	return c.dr.check("cuCtxSetCurrent", C.gomase_cuda_set_current(c.dr.d, c.ctx))
}

// Close releases the primary context.
func (c *Context) Close() error {
	return c.dr.check("cuDevicePrimaryCtxRelease", C.gomase_cuda_release(c.dr.d, c.dev))
}

// Synchronize waits for the device.
func (c *Context) Synchronize() error {
	return c.dr.check("cuCtxSynchronize", C.gomase_cuda_sync(c.dr.d))
}

// Module is a loaded PTX module's kernel.
type Module struct {
	c   *Context
	mod C.CUmodule
	fn  C.CUfunction
	k   Kernel
}

// Load JIT-compiles k's PTX for the device and finds its entry point.
// PTX for an architecture the driver does not know is an error carrying
// the JIT's log.
func (c *Context) Load(k Kernel) (*Module, error) {
	if err := k.Check(); err != nil {
		return nil, err
	}
	ptx := C.CString(k.PTX)
	defer C.free(unsafe.Pointer(ptx))
	const logSize = 4096
	log := (*C.char)(C.calloc(logSize, 1))
	defer C.free(unsafe.Pointer(log))
	m := &Module{c: c, k: k}
	if r := C.gomase_cuda_load(c.dr.d, &m.mod, ptx, log, logSize); r != 0 {
		return nil, fmt.Errorf("%w; JIT log: %s (device compute capability %d.%d)", c.dr.check("cuModuleLoadDataEx("+k.Name+")", r), oneLine(C.GoString(log)), c.Major, c.Minor)
	}
	entry := C.CString(k.Entry)
	defer C.free(unsafe.Pointer(entry))
	if err := c.dr.check("cuModuleGetFunction("+k.Entry+")", C.gomase_cuda_function(c.dr.d, &m.fn, m.mod, entry)); err != nil {
		C.gomase_cuda_unload(c.dr.d, m.mod)
		return nil, err
	}
	if k.DynamicShared > 48<<10 {
		if err := c.dr.check("cuFuncSetAttribute("+k.Entry+", max dynamic shared memory)", C.gomase_cuda_set_shared(c.dr.d, m.fn, C.int(k.DynamicShared))); err != nil {
			C.gomase_cuda_unload(c.dr.d, m.mod)
			return nil, err
		}
	}
	return m, nil
}

// Close unloads the module.
func (m *Module) Close() error {
	return m.c.dr.check("cuModuleUnload", C.gomase_cuda_unload(m.c.dr.d, m.mod))
}

// Buffer is device memory.
type Buffer struct {
	c     *Context
	ptr   C.CUdeviceptr
	Bytes int
}

// Alloc allocates n bytes on the device.
func (c *Context) Alloc(n int) (*Buffer, error) {
	b := &Buffer{c: c, Bytes: n}
	return b, c.dr.check("cuMemAlloc", C.gomase_cuda_alloc(c.dr.d, &b.ptr, C.size_t(n)))
}

// Free frees the buffer.
func (b *Buffer) Free() error { return b.c.dr.check("cuMemFree", C.gomase_cuda_free(b.c.dr.d, b.ptr)) }

// CopyIn copies len(src) bytes from the host to the start of b.
func (b *Buffer) CopyIn(src []byte) error {
	if len(src) > b.Bytes || len(src) == 0 {
		return fmt.Errorf("cuda: copying %d bytes into a buffer of %d", len(src), b.Bytes)
	}
	return b.c.dr.check("cuMemcpyHtoD", C.gomase_cuda_to_device(b.c.dr.d, b.ptr, unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

// CopyOut copies len(dst) bytes from the start of b to the host.
func (b *Buffer) CopyOut(dst []byte) error {
	if len(dst) > b.Bytes || len(dst) == 0 {
		return fmt.Errorf("cuda: copying %d bytes out of a buffer of %d", len(dst), b.Bytes)
	}
	return b.c.dr.check("cuMemcpyDtoH", C.gomase_cuda_to_host(b.c.dr.d, unsafe.Pointer(&dst[0]), b.ptr, C.size_t(len(dst))))
}

// DequantizeMXInt8 runs the MXINT8 kernel (m: n int8 mantissas, e: the
// exponents, out: n bfloat16 values) and waits for it.
func (m *Module) DequantizeMXInt8(mant, exp, out *Buffer, n, groupSize int) error {
	if m.k.Entry != MXInt8.Entry {
		return fmt.Errorf("cuda: module %s is not the MXINT8 kernel", m.k.Name)
	}
	if err := m.c.dr.check("cuLaunchKernel("+m.k.Entry+")", C.gomase_cuda_launch_mxint8(m.c.dr.d, m.fn, nil,
		mant.ptr, exp.ptr, out.ptr, C.longlong(n), C.int(groupSize))); err != nil {
		return err
	}
	return m.c.Synchronize()
}

// TimeMXInt8 launches the MXINT8 kernel reps times back to back and
// returns the device time per launch (CUDA events: no host in between).
func (m *Module) TimeMXInt8(mant, exp, out *Buffer, n, groupSize, reps int) (time.Duration, error) {
	var ms C.float
	if err := m.c.dr.check("timing "+m.k.Entry, C.gomase_cuda_time_mxint8(m.c.dr.d, m.fn,
		mant.ptr, exp.ptr, out.ptr, C.longlong(n), C.int(groupSize), C.int(reps), &ms)); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * 1e6 / float64(reps)), nil
}

// sdpaArgs checks that m is the SDPA kernel of c's dtype and that the
// buffers hold c's tensors (mask nil without one), and returns the
// kernel's arguments in C memory (free them with C.free).
func (m *Module) sdpaArgs(c SDPAConfig, q, k, v, mask, out *Buffer) (*C.gomase_sdpa_args, error) {
	call, err := SDPACall(c)
	if err != nil {
		return nil, err
	}
	c, _ = ParseSDPAConfig(call.Config)
	want := SDPAFloat32
	if c.DType == dtypes.Float16 {
		want = SDPAFloat16
	}
	if m.k.Entry != want.Entry {
		return nil, fmt.Errorf("cuda: module %s is not the %s SDPA kernel (%s)", m.k.Name, c.DType, want.Name)
	}
	bufs := []*Buffer{q, k, v, mask}
	if c.MaskDims == nil {
		if mask != nil {
			return nil, fmt.Errorf("cuda: SDPA: a mask buffer for a call without a mask")
		}
		bufs = bufs[:3]
	}
	for i, b := range append(bufs, out) {
		s := call.Results[0]
		if i < len(bufs) {
			s = call.Operands[i]
		}
		if b == nil || b.Bytes < int(s.Memory()) {
			return nil, fmt.Errorf("cuda: SDPA: buffer %d (of q, k, v[, mask], out) is smaller than %s", i, s)
		}
	}
	a := (*C.gomase_sdpa_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gomase_sdpa_args{}))))
	var mp C.CUdeviceptr
	if c.MaskDims != nil {
		mp = mask.ptr
	}
	C.gomase_sdpa_set_buffers(a, q.ptr, k.ptr, v.ptr, mp, out.ptr)
	for i, s := range c.MaskStrides() {
		a.mask_stride[i] = C.longlong(s)
	}
	a.batch, a.heads, a.seq_q, a.seq_k, a.head_dim = C.int(c.Batch), C.int(c.Heads), C.int(c.SeqQ), C.int(c.SeqK), C.int(c.HeadDim)
	a.scale = C.float(c.Scale)
	return a, nil
}

// SDPA runs the SDPA kernel (m loaded from SDPAFloat32 or SDPAFloat16, as
// c.DType) on device buffers q, k, v, mask (nil when c has none) into out,
// and waits for it.
func (m *Module) SDPA(c SDPAConfig, q, k, v, mask, out *Buffer) error {
	a, err := m.sdpaArgs(c, q, k, v, mask, out)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(a))
	if err := m.c.dr.check("cuLaunchKernel("+m.k.Entry+")", C.gomase_cuda_launch_sdpa(m.c.dr.d, m.fn, nil, a)); err != nil {
		return err
	}
	return m.c.Synchronize()
}

// TimeSDPA launches the SDPA kernel reps times back to back and returns
// the device time per launch (CUDA events).
func (m *Module) TimeSDPA(c SDPAConfig, q, k, v, mask, out *Buffer, reps int) (time.Duration, error) {
	a, err := m.sdpaArgs(c, q, k, v, mask, out)
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(a))
	var ms C.float
	if err := m.c.dr.check("timing "+m.k.Entry, C.gomase_cuda_time_sdpa(m.c.dr.d, m.fn, a, C.int(reps), &ms)); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * 1e6 / float64(reps)), nil
}
