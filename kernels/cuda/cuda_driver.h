//go:build cgo && linux

// cuda_driver.h: the CUDA driver API as gomase uses it, opened at run time
// with dlopen (no CUDA header or toolkit needed), and the custom-call
// handler the CUDA PJRT plugin calls (see xla_cgo.go).
#ifndef GOMASE_CUDA_DRIVER_H
#define GOMASE_CUDA_DRIVER_H

#include <stddef.h>

#include "sdpa_block.h"

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
	CUresult (*cuStreamGetCtx)(CUstream, CUcontext *);
	CUresult (*cuCtxPushCurrent)(CUcontext);
	CUresult (*cuCtxPopCurrent)(CUcontext *);
	CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
} gomase_cuda;

const char *gomase_cuda_open(gomase_cuda *d, const char *path);
const char *gomase_cuda_error(gomase_cuda *d, CUresult r);
CUresult gomase_cuda_init(gomase_cuda *d);
CUresult gomase_cuda_count(gomase_cuda *d, int *n);
CUresult gomase_cuda_context(gomase_cuda *d, int ordinal, CUdevice *dev, CUcontext *ctx, int *major, int *minor);
CUresult gomase_cuda_set_current(gomase_cuda *d, CUcontext ctx);
CUresult gomase_cuda_release(gomase_cuda *d, CUdevice dev);
CUresult gomase_cuda_sync(gomase_cuda *d);
CUresult gomase_cuda_load(gomase_cuda *d, CUmodule *mod, const char *ptx, char *log, size_t size);
CUresult gomase_cuda_unload(gomase_cuda *d, CUmodule mod);
CUresult gomase_cuda_function(gomase_cuda *d, CUfunction *f, CUmodule mod, const char *name);
CUresult gomase_cuda_alloc(gomase_cuda *d, CUdeviceptr *p, size_t n);
CUresult gomase_cuda_free(gomase_cuda *d, CUdeviceptr p);
CUresult gomase_cuda_to_device(gomase_cuda *d, CUdeviceptr dst, const void *src, size_t n);
CUresult gomase_cuda_to_host(gomase_cuda *d, void *dst, CUdeviceptr src, size_t n);
void gomase_mxint8_grid(long long n, unsigned *grid, unsigned *block);
CUresult gomase_cuda_launch_mxint8(gomase_cuda *d, CUfunction f, CUstream stream, CUdeviceptr m, CUdeviceptr e,
                                   CUdeviceptr out, long long n, int gs);
CUresult gomase_cuda_time_mxint8(gomase_cuda *d, CUfunction f, CUdeviceptr m, CUdeviceptr e, CUdeviceptr out,
                                 long long n, int gs, int reps, float *ms);
CUresult gomase_cuda_set_shared(gomase_cuda *d, CUfunction f, int bytes);
void gomase_sdpa_set_buffers(gomase_sdpa_args *a, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr mask,
                             CUdeviceptr out);
CUresult gomase_cuda_launch_sdpa(gomase_cuda *d, CUfunction f, CUstream stream, const gomase_sdpa_args *a);
CUresult gomase_cuda_time_sdpa(gomase_cuda *d, CUfunction f, const gomase_sdpa_args *a, int reps, float *ms);

// The custom-call side (XLA's CUDA PJRT plugin calls gomase's kernels).
const char *gomase_pjrt_open(const char *plugin_path, void **api);
const char *gomase_pjrt_register(void *api, const char *name, void *handler);
void gomase_xla_init(gomase_cuda *d, const char *mxint8_ptx, const char *sdpa_ptx);
void gomase_xla_mxint8(CUstream stream, void **buffers, const char *opaque, size_t opaque_len, void *status);
void gomase_xla_sdpa(CUstream stream, void **buffers, const char *opaque, size_t opaque_len, void *status);
int gomase_sdpa_parse(const char *opaque, size_t opaque_len, gomase_sdpa_args *a, int *half, int *masked);
int gomase_xla_take_error(char *buf, size_t size);
int gomase_mxint8_parse(const char *opaque, size_t opaque_len, long long *n, int *gs);
void *gomase_pjrt_fake(int with_gpu_extension, int refuse);
const char *gomase_pjrt_fake_registered(int i, int *api_version, size_t *struct_size, void **handler);

#endif
