//go:build cgo && linux

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// The few CUDA driver API types and entry points used here, declared by
// hand: the driver library is opened at run time, no CUDA header needed.
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;

typedef struct {
	void *lib;
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned int, int *, void **);
	CUresult (*cuModuleUnload)(CUmodule);
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                           unsigned, CUstream, void **, void **);
	CUresult (*cuEventCreate)(CUevent *, unsigned int);
	CUresult (*cuEventRecord)(CUevent, CUstream);
	CUresult (*cuEventSynchronize)(CUevent);
	CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*cuEventDestroy)(CUevent);
	CUresult (*cuGetErrorString)(CUresult, const char **);
} gomase_cuda;

// gomase_cuda_open fills d from the driver library; it returns NULL or
// the name of what failed (dlerror's message, or the missing symbol).
static const char *gomase_cuda_open(gomase_cuda *d, const char *path) {
	memset(d, 0, sizeof *d);
	d->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) return dlerror();
#define SYM(field, name) if (!(*(void **)&d->field = dlsym(d->lib, name))) return name
	SYM(cuInit, "cuInit");
	SYM(cuDeviceGet, "cuDeviceGet");
	SYM(cuDeviceGetCount, "cuDeviceGetCount");
	SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
	SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
	SYM(cuCtxSynchronize, "cuCtxSynchronize");
	SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx");
	SYM(cuModuleUnload, "cuModuleUnload");
	SYM(cuModuleGetFunction, "cuModuleGetFunction");
	SYM(cuMemAlloc, "cuMemAlloc_v2");
	SYM(cuMemFree, "cuMemFree_v2");
	SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
	SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	SYM(cuLaunchKernel, "cuLaunchKernel");
	SYM(cuEventCreate, "cuEventCreate");
	SYM(cuEventRecord, "cuEventRecord");
	SYM(cuEventSynchronize, "cuEventSynchronize");
	SYM(cuEventElapsedTime, "cuEventElapsedTime");
	SYM(cuEventDestroy, "cuEventDestroy_v2");
	SYM(cuGetErrorString, "cuGetErrorString");
#undef SYM
	return NULL;
}

static const char *gomase_cuda_error(gomase_cuda *d, CUresult r) {
	const char *s = NULL;
	if (d->cuGetErrorString(r, &s) != 0 || !s) return "unknown CUDA error";
	return s;
}

static CUresult gomase_cuda_init(gomase_cuda *d) { return d->cuInit(0); }
static CUresult gomase_cuda_count(gomase_cuda *d, int *n) { return d->cuDeviceGetCount(n); }

// gomase_cuda_context makes device ordinal's primary context current and
// reads its compute capability.
static CUresult gomase_cuda_context(gomase_cuda *d, int ordinal, CUdevice *dev, CUcontext *ctx, int *major, int *minor) {
	CUresult r = d->cuDeviceGet(dev, ordinal);
	if (r) return r;
	if ((r = d->cuDeviceGetAttribute(major, 75, *dev))) return r; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	if ((r = d->cuDeviceGetAttribute(minor, 76, *dev))) return r; // ..._MINOR
	if ((r = d->cuDevicePrimaryCtxRetain(ctx, *dev))) return r;
	return d->cuCtxSetCurrent(*ctx);
}

static CUresult gomase_cuda_release(gomase_cuda *d, CUdevice dev) { return d->cuDevicePrimaryCtxRelease(dev); }
static CUresult gomase_cuda_sync(gomase_cuda *d) { return d->cuCtxSynchronize(); }

// gomase_cuda_load loads a PTX module, JIT-compiling it for the device;
// the JIT's error log goes to log (size bytes).
static CUresult gomase_cuda_load(gomase_cuda *d, CUmodule *mod, const char *ptx, char *log, size_t size) {
	int opts[2] = {5, 6}; // CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	void *vals[2] = {log, (void *)size};
	return d->cuModuleLoadDataEx(mod, ptx, 2, opts, vals);
}

static CUresult gomase_cuda_unload(gomase_cuda *d, CUmodule mod) { return d->cuModuleUnload(mod); }
static CUresult gomase_cuda_function(gomase_cuda *d, CUfunction *f, CUmodule mod, const char *name) {
	return d->cuModuleGetFunction(f, mod, name);
}
static CUresult gomase_cuda_alloc(gomase_cuda *d, CUdeviceptr *p, size_t n) { return d->cuMemAlloc(p, n); }
static CUresult gomase_cuda_free(gomase_cuda *d, CUdeviceptr p) { return d->cuMemFree(p); }
static CUresult gomase_cuda_to_device(gomase_cuda *d, CUdeviceptr dst, const void *src, size_t n) {
	return d->cuMemcpyHtoD(dst, src, n);
}
static CUresult gomase_cuda_to_host(gomase_cuda *d, void *dst, CUdeviceptr src, size_t n) {
	return d->cuMemcpyDtoH(dst, src, n);
}

// gomase_cuda_launch_mxint8 launches gomase_mxint8_dequantize on the
// default stream.
static CUresult gomase_cuda_launch_mxint8(gomase_cuda *d, CUfunction f, unsigned grid, unsigned block,
                                          CUdeviceptr m, CUdeviceptr e, CUdeviceptr out, long long n, int gs) {
	void *params[5] = {&m, &e, &out, &n, &gs};
	return d->cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL);
}

// gomase_cuda_time_mxint8 times reps launches with device events and
// returns the milliseconds they took in *ms.
static CUresult gomase_cuda_time_mxint8(gomase_cuda *d, CUfunction f, unsigned grid, unsigned block,
                                        CUdeviceptr m, CUdeviceptr e, CUdeviceptr out, long long n, int gs,
                                        int reps, float *ms) {
	CUevent start, stop;
	CUresult r = d->cuEventCreate(&start, 0);
	if (r) return r;
	if ((r = d->cuEventCreate(&stop, 0))) { d->cuEventDestroy(start); return r; }
	r = d->cuEventRecord(start, NULL);
	for (int i = 0; !r && i < reps; i++) r = gomase_cuda_launch_mxint8(d, f, grid, block, m, e, out, n, gs);
	if (!r) r = d->cuEventRecord(stop, NULL);
	if (!r) r = d->cuEventSynchronize(stop);
	if (!r) r = d->cuEventElapsedTime(ms, start, stop);
	d->cuEventDestroy(start);
	d->cuEventDestroy(stop);
	return r;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"
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
	c.Major, c.Minor = int(major), int(minor)
	return c, nil
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

// mxint8Launch is the grid of a dequantisation of n values: 256 threads a
// block, 4 values a thread, at most 65,535 blocks (the grid-stride loop
// covers the rest).
func mxint8Launch(n int) (grid, block C.uint) {
	blocks := min((n/4+255)/256, 65535)
	return C.uint(max(blocks, 1)), 256
}

// DequantizeMXInt8 runs the MXINT8 kernel (m: n int8 mantissas, e: the
// exponents, out: n bfloat16 values) and waits for it.
func (m *Module) DequantizeMXInt8(mant, exp, out *Buffer, n, groupSize int) error {
	if m.k.Entry != MXInt8.Entry {
		return fmt.Errorf("cuda: module %s is not the MXINT8 kernel", m.k.Name)
	}
	grid, block := mxint8Launch(n)
	if err := m.c.dr.check("cuLaunchKernel("+m.k.Entry+")", C.gomase_cuda_launch_mxint8(m.c.dr.d, m.fn, grid, block,
		mant.ptr, exp.ptr, out.ptr, C.longlong(n), C.int(groupSize))); err != nil {
		return err
	}
	return m.c.Synchronize()
}

// TimeMXInt8 launches the MXINT8 kernel reps times back to back and
// returns the device time per launch (CUDA events: no host in between).
func (m *Module) TimeMXInt8(mant, exp, out *Buffer, n, groupSize, reps int) (time.Duration, error) {
	grid, block := mxint8Launch(n)
	var ms C.float
	if err := m.c.dr.check("timing "+m.k.Entry, C.gomase_cuda_time_mxint8(m.c.dr.d, m.fn, grid, block,
		mant.ptr, exp.ptr, out.ptr, C.longlong(n), C.int(groupSize), C.int(reps), &ms)); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * 1e6 / float64(reps)), nil
}
