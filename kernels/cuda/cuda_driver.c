//go:build cgo && linux

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

// gomase_cuda_open fills d from the driver library; it returns NULL or
// the name of what failed (dlerror's message, or the missing symbol).
const char *gomase_cuda_open(gomase_cuda *d, const char *path) {
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
	SYM(cuStreamGetCtx, "cuStreamGetCtx");
	SYM(cuCtxPushCurrent, "cuCtxPushCurrent_v2");
	SYM(cuCtxPopCurrent, "cuCtxPopCurrent_v2");
	SYM(cuFuncSetAttribute, "cuFuncSetAttribute");
#undef SYM
	return NULL;
}

const char *gomase_cuda_error(gomase_cuda *d, CUresult r) {
	const char *s = NULL;
	if (d->cuGetErrorString(r, &s) != 0 || !s) return "unknown CUDA error";
	return s;
}

CUresult gomase_cuda_init(gomase_cuda *d) { return d->cuInit(0); }
CUresult gomase_cuda_count(gomase_cuda *d, int *n) { return d->cuDeviceGetCount(n); }

// gomase_cuda_context makes device ordinal's primary context current and
// reads its compute capability.
CUresult gomase_cuda_context(gomase_cuda *d, int ordinal, CUdevice *dev, CUcontext *ctx, int *major, int *minor) {
	CUresult r = d->cuDeviceGet(dev, ordinal);
	if (r) return r;
	if ((r = d->cuDeviceGetAttribute(major, 75, *dev))) return r; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	if ((r = d->cuDeviceGetAttribute(minor, 76, *dev))) return r; // ..._MINOR
	if ((r = d->cuDevicePrimaryCtxRetain(ctx, *dev))) return r;
	return d->cuCtxSetCurrent(*ctx);
}

CUresult gomase_cuda_set_current(gomase_cuda *d, CUcontext ctx) { return d->cuCtxSetCurrent(ctx); }
CUresult gomase_cuda_release(gomase_cuda *d, CUdevice dev) { return d->cuDevicePrimaryCtxRelease(dev); }
CUresult gomase_cuda_sync(gomase_cuda *d) { return d->cuCtxSynchronize(); }

// gomase_cuda_load loads a PTX module, JIT-compiling it for the device;
// the JIT's error log goes to log (size bytes).
CUresult gomase_cuda_load(gomase_cuda *d, CUmodule *mod, const char *ptx, char *log, size_t size) {
	int opts[2] = {5, 6}; // CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	void *vals[2] = {log, (void *)size};
	return d->cuModuleLoadDataEx(mod, ptx, 2, opts, vals);
}

CUresult gomase_cuda_unload(gomase_cuda *d, CUmodule mod) { return d->cuModuleUnload(mod); }
CUresult gomase_cuda_function(gomase_cuda *d, CUfunction *f, CUmodule mod, const char *name) {
	return d->cuModuleGetFunction(f, mod, name);
}
CUresult gomase_cuda_alloc(gomase_cuda *d, CUdeviceptr *p, size_t n) { return d->cuMemAlloc(p, n); }
CUresult gomase_cuda_free(gomase_cuda *d, CUdeviceptr p) { return d->cuMemFree(p); }
CUresult gomase_cuda_to_device(gomase_cuda *d, CUdeviceptr dst, const void *src, size_t n) {
	return d->cuMemcpyHtoD(dst, src, n);
}
CUresult gomase_cuda_to_host(gomase_cuda *d, void *dst, CUdeviceptr src, size_t n) {
	return d->cuMemcpyDtoH(dst, src, n);
}

// gomase_mxint8_grid is the grid of a dequantisation of n values: 256
// threads a block, 4 values a thread, at most 65,535 blocks (the
// grid-stride loop covers the rest).
void gomase_mxint8_grid(long long n, unsigned *grid, unsigned *block) {
	long long blocks = (n / 4 + 255) / 256;
	*grid = blocks < 1 ? 1 : blocks > 65535 ? 65535 : (unsigned)blocks;
	*block = 256;
}

// gomase_cuda_launch_mxint8 launches gomase_mxint8_dequantize on stream.
CUresult gomase_cuda_launch_mxint8(gomase_cuda *d, CUfunction f, CUstream stream, CUdeviceptr m, CUdeviceptr e,
                                   CUdeviceptr out, long long n, int gs) {
	unsigned grid, block;
	gomase_mxint8_grid(n, &grid, &block);
	void *params[5] = {&m, &e, &out, &n, &gs};
	return d->cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, stream, params, NULL);
}

// time_launches times reps launches of f (grid gx × gy, block threads,
// smem bytes of dynamic shared memory) with device events and returns the
// milliseconds they took in *ms.
static CUresult time_launches(gomase_cuda *d, CUfunction f, unsigned gx, unsigned gy, unsigned block, unsigned smem,
                              void **params, int reps, float *ms) {
	CUevent start, stop;
	CUresult r = d->cuEventCreate(&start, 0);
	if (r) return r;
	if ((r = d->cuEventCreate(&stop, 0))) { d->cuEventDestroy(start); return r; }
	r = d->cuEventRecord(start, NULL);
	for (int i = 0; !r && i < reps; i++) r = d->cuLaunchKernel(f, gx, gy, 1, block, 1, 1, smem, NULL, params, NULL);
	if (!r) r = d->cuEventRecord(stop, NULL);
	if (!r) r = d->cuEventSynchronize(stop);
	if (!r) r = d->cuEventElapsedTime(ms, start, stop);
	d->cuEventDestroy(start);
	d->cuEventDestroy(stop);
	return r;
}

// gomase_cuda_time_mxint8 times reps launches of gomase_mxint8_dequantize.
CUresult gomase_cuda_time_mxint8(gomase_cuda *d, CUfunction f, CUdeviceptr m, CUdeviceptr e, CUdeviceptr out,
                                 long long n, int gs, int reps, float *ms) {
	unsigned grid, block;
	gomase_mxint8_grid(n, &grid, &block);
	void *params[5] = {&m, &e, &out, &n, &gs};
	return time_launches(d, f, grid, 1, block, 0, params, reps, ms);
}

// gomase_cuda_set_shared lets f take bytes of dynamic shared memory
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; needed above 48 KB).
CUresult gomase_cuda_set_shared(gomase_cuda *d, CUfunction f, int bytes) { return d->cuFuncSetAttribute(f, 8, bytes); }

// gomase_sdpa_set_buffers points a at device buffers (mask 0: none).
void gomase_sdpa_set_buffers(gomase_sdpa_args *a, CUdeviceptr q, CUdeviceptr k, CUdeviceptr v, CUdeviceptr mask,
                             CUdeviceptr out) {
	a->q = (const void *)q;
	a->k = (const void *)k;
	a->v = (const void *)v;
	a->mask = (const float *)mask;
	a->out = (void *)out;
}

// sdpa_grid is the launch of gomase_sdpa_f32/_f16 for a: grid
// (ceil(seq_q / 64), batch·heads) of 256 threads, with the shared memory
// of the head_dim.
static void sdpa_grid(const gomase_sdpa_args *a, unsigned *gx, unsigned *gy, unsigned *smem) {
	*gx = (unsigned)((a->seq_q + GOMASE_SDPA_ROWS - 1) / GOMASE_SDPA_ROWS);
	*gy = (unsigned)(a->batch * a->heads);
	*smem = (unsigned)(sizeof(float) * gomase_sdpa_smem_floats(a->head_dim));
}

// gomase_cuda_launch_sdpa launches gomase_sdpa_f32 or _f16 (f) on stream.
// The arguments are copied at launch.
CUresult gomase_cuda_launch_sdpa(gomase_cuda *d, CUfunction f, CUstream stream, const gomase_sdpa_args *a) {
	unsigned gx, gy, smem;
	sdpa_grid(a, &gx, &gy, &smem);
	void *params[1] = {(void *)a};
	return d->cuLaunchKernel(f, gx, gy, 1, GOMASE_SDPA_THREADS, 1, 1, smem, stream, params, NULL);
}

// gomase_cuda_time_sdpa times reps launches of gomase_sdpa_f32 or _f16.
CUresult gomase_cuda_time_sdpa(gomase_cuda *d, CUfunction f, const gomase_sdpa_args *a, int reps, float *ms) {
	unsigned gx, gy, smem;
	sdpa_grid(a, &gx, &gy, &smem);
	void *params[1] = {(void *)a};
	return time_launches(d, f, gx, gy, GOMASE_SDPA_THREADS, smem, params, reps, ms);
}

// ---------------------------------------------------------------------------
// XLA custom calls. The CUDA PJRT plugin has its own custom-call registry,
// reached through the GPU extension of its PJRT_Api (OpenXLA's
// pjrt_c_api_gpu_extension.h, version 2); the structs below declare the
// parts used, laid out as there.

typedef struct gomase_ext {
	size_t struct_size;
	int type; // PJRT_Extension_Type; 0 is PJRT_Extension_Type_Gpu_Custom_Call
	struct gomase_ext *next;
} gomase_ext;

typedef struct {
	size_t struct_size;
	const char *function_name;
	size_t function_name_size;
	int api_version; // 0: untyped (legacy) handler, 1: typed FFI
	void *handler_instantiate, *handler_prepare, *handler_initialize, *handler_execute;
	uint32_t traits; // version 3 of the extension; zero: none
} gomase_register_args;

// The size sent: up to the end of traits (68 bytes), as OpenXLA's struct
// traits count it. Version 2 of the extension accepts any size from its 64
// bytes up; version 3 wants the 68.
#define GOMASE_REGISTER_ARGS_SIZE (offsetof(gomase_register_args, traits) + sizeof(uint32_t))

typedef struct {
	gomase_ext base;
	void *(*custom_call)(gomase_register_args *); // returns a PJRT_Error*, NULL on success
} gomase_gpu_ext;

typedef struct {
	size_t struct_size;
	void *extension_start;
	const void *error;
	const char *message; // out
	size_t message_size; // out
} gomase_error_message_args;

typedef struct {
	size_t struct_size;
	void *extension_start;
	void *error;
} gomase_error_destroy_args;

// The start of PJRT_Api: its size, the extension chain, the version, then
// the first two functions (PJRT_Error_Destroy, PJRT_Error_Message).
typedef struct {
	size_t struct_size;
	gomase_ext *extension_start;
	struct {
		size_t struct_size;
		void *extension_start;
		int major, minor;
	} version;
	void (*error_destroy)(gomase_error_destroy_args *);
	void (*error_message)(gomase_error_message_args *);
} gomase_pjrt_api;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_error[512];     // the last failure of a handler, or of registration
static int g_has_error;
static void (*g_set_failure)(void *status, const char *message, size_t size); // XlaCustomCallStatusSetFailure, when exported

static void set_error(const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	pthread_mutex_lock(&g_mu);
	vsnprintf(g_error, sizeof g_error, format, ap);
	g_has_error = 1;
	pthread_mutex_unlock(&g_mu);
	va_end(ap);
}

// gomase_xla_take_error copies the last failure into buf and clears it; it
// returns 0 when there was none.
int gomase_xla_take_error(char *buf, size_t size) {
	pthread_mutex_lock(&g_mu);
	int had = g_has_error;
	if (had) snprintf(buf, size, "%s", g_error);
	g_has_error = 0;
	pthread_mutex_unlock(&g_mu);
	return had;
}

// gomase_pjrt_open finds the PJRT_Api of the plugin at plugin_path. dlopen
// of the path the XLA backend loaded returns the same library, so this is
// the API (and the custom-call registry) the backend compiles with.
const char *gomase_pjrt_open(const char *plugin_path, void **api) {
	void *lib = dlopen(plugin_path, RTLD_LAZY | RTLD_LOCAL);
	if (!lib) return dlerror();
	void *(*get)(void) = NULL;
	*(void **)&get = dlsym(lib, "GetPjrtApi");
	if (!get) return "the library has no GetPjrtApi: not a PJRT plugin";
	*api = get();
	if (!*api) return "GetPjrtApi returned no API";
	*(void **)&g_set_failure = dlsym(lib, "XlaCustomCallStatusSetFailure");
	return NULL;
}

// gomase_pjrt_register registers handler (an untyped, status-returning
// custom call) under name with api's GPU extension. It returns NULL or
// what went wrong.
const char *gomase_pjrt_register(void *api, const char *name, void *handler) {
	gomase_pjrt_api *a = api;
	gomase_ext *e = a->extension_start;
	while (e && e->type != 0) e = e->next;
	if (!e) return "the PJRT plugin has no GPU custom-call extension (not a CUDA or ROCm plugin)";
	gomase_register_args args = {GOMASE_REGISTER_ARGS_SIZE, name, strlen(name), 0, NULL, NULL, NULL, handler, 0};
	void *err = ((gomase_gpu_ext *)e)->custom_call(&args);
	if (!err) return NULL;
	gomase_error_message_args m = {sizeof m, NULL, err, NULL, 0};
	a->error_message(&m);
	snprintf(g_error, sizeof g_error, "the plugin refused the custom call: %.*s", (int)m.message_size, m.message ? m.message : "");
	gomase_error_destroy_args d = {sizeof d, NULL, err};
	a->error_destroy(&d);
	return g_error;
}

// The driver and the PTX the handlers use, set once by gomase_xla_init,
// and the modules loaded per CUDA context: module 0 is MXINT8's (function
// 0), module 1 SDPA's (functions 0 and 1: float32, float16).
static gomase_cuda *g_driver;
static const char *g_ptx[2];
static const char *const g_module_name[2] = {"MXINT8", "SDPA"};
static const char *const g_entries[2][2] = {{"gomase_mxint8_dequantize", NULL}, {"gomase_sdpa_f32", "gomase_sdpa_f16"}};
#define GOMASE_MAX_CONTEXTS 16
static struct {
	CUcontext ctx;
	int module;
	CUmodule mod;
	CUfunction fn[2];
} g_loaded[2 * GOMASE_MAX_CONTEXTS];
static int g_nloaded;

void gomase_xla_init(gomase_cuda *d, const char *mxint8_ptx, const char *sdpa_ptx) {
	pthread_mutex_lock(&g_mu);
	g_driver = d;
	g_ptx[0] = mxint8_ptx;
	g_ptx[1] = sdpa_ptx;
	pthread_mutex_unlock(&g_mu);
}

// kernel_function returns function fn of module in stream's context,
// loading the PTX there the first time (and raising the SDPA functions'
// dynamic shared memory limit); NULL after recording an error.
static CUfunction kernel_function(CUstream stream, int module, int fn_index) {
	CUcontext ctx;
	CUresult r = g_driver->cuStreamGetCtx(stream, &ctx);
	if (r) {
		set_error("cuStreamGetCtx: %s", gomase_cuda_error(g_driver, r));
		return NULL;
	}
	CUfunction fn = NULL;
	pthread_mutex_lock(&g_mu);
	for (int i = 0; i < g_nloaded; i++)
		if (g_loaded[i].ctx == ctx && g_loaded[i].module == module) fn = g_loaded[i].fn[fn_index];
	pthread_mutex_unlock(&g_mu);
	if (fn) return fn;
	char log[2048] = "";
	CUmodule mod;
	CUfunction fns[2] = {NULL, NULL};
	if ((r = g_driver->cuCtxPushCurrent(ctx))) {
		set_error("cuCtxPushCurrent: %s", gomase_cuda_error(g_driver, r));
		return NULL;
	}
	r = gomase_cuda_load(g_driver, &mod, g_ptx[module], log, sizeof log);
	for (int i = 0; !r && i < 2 && g_entries[module][i]; i++) {
		r = g_driver->cuModuleGetFunction(&fns[i], mod, g_entries[module][i]);
		if (!r && module == 1) r = gomase_cuda_set_shared(g_driver, fns[i], (int)(sizeof(float) * gomase_sdpa_smem_floats(GOMASE_SDPA_MAX_D)));
	}
	CUcontext popped;
	g_driver->cuCtxPopCurrent(&popped);
	if (r) {
		set_error("loading the %s kernel: %s; JIT log: %s", g_module_name[module], gomase_cuda_error(g_driver, r), log);
		return NULL;
	}
	pthread_mutex_lock(&g_mu);
	if (g_nloaded < 2 * GOMASE_MAX_CONTEXTS) {
		g_loaded[g_nloaded].ctx = ctx;
		g_loaded[g_nloaded].module = module;
		g_loaded[g_nloaded].mod = mod;
		g_loaded[g_nloaded].fn[0] = fns[0];
		g_loaded[g_nloaded].fn[1] = fns[1];
		g_nloaded++;
	}
	pthread_mutex_unlock(&g_mu);
	return fns[fn_index];
}

// gomase_mxint8_parse reads "n=N group_size=G" from a custom call's
// payload (not NUL-terminated); it returns 0 on success.
int gomase_mxint8_parse(const char *opaque, size_t opaque_len, long long *n, int *gs) {
	char buf[64];
	if (opaque_len >= sizeof buf) return -1;
	memcpy(buf, opaque, opaque_len);
	buf[opaque_len] = 0;
	if (sscanf(buf, "n=%lld group_size=%d", n, gs) != 2 || *n < 1 || *gs < 8 || *gs > 512 || (*gs & (*gs - 1))) return -1;
	return 0;
}

static void fail(void *status, const char *format, ...) {
	char msg[512];
	va_list ap;
	va_start(ap, format);
	vsnprintf(msg, sizeof msg, format, ap);
	va_end(ap);
	set_error("%s", msg);
	if (g_set_failure && status) g_set_failure(status, msg, strlen(msg));
}

// gomase_xla_mxint8 is the handler of the MXINT8 custom call (XLA's
// untyped, status-returning form): buffers are the mantissas, the
// exponents and the output; it launches the kernel on XLA's stream and
// returns without waiting.
void gomase_xla_mxint8(CUstream stream, void **buffers, const char *opaque, size_t opaque_len, void *status) {
	long long n;
	int gs;
	if (!g_driver) {
		fail(status, "gomase_mxint8_dequantize: the handler was not initialised");
		return;
	}
	if (gomase_mxint8_parse(opaque, opaque_len, &n, &gs)) {
		fail(status, "gomase_mxint8_dequantize: bad payload %.*s", (int)opaque_len, opaque);
		return;
	}
	CUfunction fn = kernel_function(stream, 0, 0);
	if (!fn) {
		if (g_set_failure && status) g_set_failure(status, "gomase_mxint8_dequantize: the kernel could not be loaded", 54);
		return;
	}
	CUresult r = gomase_cuda_launch_mxint8(g_driver, fn, stream, (CUdeviceptr)buffers[0], (CUdeviceptr)buffers[1],
	                                       (CUdeviceptr)buffers[2], n, gs);
	if (r) fail(status, "gomase_mxint8_dequantize: cuLaunchKernel: %s", gomase_cuda_error(g_driver, r));
}

// gomase_sdpa_parse reads an SDPA call's payload (cuda.SDPACall's form,
// not NUL-terminated) into a's sizes, scale and mask strides; it returns 0
// on success, with *half set for float16 and *masked when the call has a
// mask operand.
int gomase_sdpa_parse(const char *opaque, size_t opaque_len, gomase_sdpa_args *a, int *half, int *masked) {
	char buf[256], dtype[8], mask[128];
	unsigned int scale;
	int used = 0;
	if (opaque_len >= sizeof buf) return -1;
	memcpy(buf, opaque, opaque_len);
	buf[opaque_len] = 0;
	memset(a, 0, sizeof *a);
	if (sscanf(buf, "b=%d h=%d sq=%d sk=%d d=%d dtype=%7s scale=0x%x mask=%127s%n", &a->batch, &a->heads, &a->seq_q,
	           &a->seq_k, &a->head_dim, dtype, &scale, mask, &used) != 8 || buf[used] != 0)
		return -1;
	if (a->batch < 1 || a->heads < 1 || a->seq_q < 1 || a->seq_k < 1 || (long long)a->batch * a->heads > 65535 ||
	    a->seq_q > 1 << 30 || a->seq_k > 1 << 30 || a->head_dim < 1 || a->head_dim > GOMASE_SDPA_MAX_D)
		return -1;
	if (!strcmp(dtype, "f32")) *half = 0;
	else if (!strcmp(dtype, "f16")) *half = 1;
	else return -1;
	memcpy(&a->scale, &scale, sizeof a->scale);
	if (!(a->scale == a->scale) || a->scale == 0 || a->scale - a->scale != 0) return -1; // NaN, 0, ±Inf
	*masked = strcmp(mask, "none") != 0;
	if (*masked) {
		long long *st = a->mask_stride;
		used = 0;
		if (sscanf(mask, "%lld,%lld,%lld,%lld%n", &st[0], &st[1], &st[2], &st[3], &used) != 4 || mask[used] != 0) return -1;
		// Row-major strides of a mask broadcast to [B, H, Sq, Sk]: 0 or the product of the later dimensions.
		long long full[4] = {a->batch, a->heads, a->seq_q, a->seq_k}, n = 1;
		for (int i = 3; i >= 0; i--) {
			if (st[i] != 0 && st[i] != n) return -1;
			if (st[i]) n *= full[i];
		}
	}
	return 0;
}

// gomase_xla_sdpa is the handler of the SDPA custom call: buffers are q, k,
// v, the mask when the payload names one, and the output; it launches the
// kernel on XLA's stream and returns without waiting.
void gomase_xla_sdpa(CUstream stream, void **buffers, const char *opaque, size_t opaque_len, void *status) {
	gomase_sdpa_args a;
	int half, masked;
	if (!g_driver) {
		fail(status, "gomase_sdpa: the handler was not initialised");
		return;
	}
	if (gomase_sdpa_parse(opaque, opaque_len, &a, &half, &masked)) {
		fail(status, "gomase_sdpa: bad payload %.*s", (int)opaque_len, opaque);
		return;
	}
	CUfunction fn = kernel_function(stream, 1, half);
	if (!fn) {
		if (g_set_failure && status) g_set_failure(status, "gomase_sdpa: the kernel could not be loaded", 42);
		return;
	}
	a.q = buffers[0];
	a.k = buffers[1];
	a.v = buffers[2];
	a.mask = masked ? buffers[3] : NULL;
	a.out = buffers[masked ? 4 : 3];
	CUresult r = gomase_cuda_launch_sdpa(g_driver, fn, stream, &a);
	if (r) fail(status, "gomase_sdpa: cuLaunchKernel: %s", gomase_cuda_error(g_driver, r));
}

// A fake PJRT_Api for the tests: its GPU extension records what it was
// asked to register, or refuses.
static struct {
	gomase_pjrt_api api;
	gomase_ext other;
	gomase_gpu_ext gpu;
	int refuse;
	int n;
	char name[4][64];
	int api_version[4];
	size_t struct_size[4];
	void *handler[4];
} g_fake;

static const char g_fake_message[] = "fake refusal";

static const char g_fake_size_message[] = "struct_size below the 64 bytes of version 2";

static void *fake_custom_call(gomase_register_args *a) {
	if (g_fake.refuse) return (void *)g_fake_message;
	if (a->struct_size < 64) return (void *)g_fake_size_message;
	if (g_fake.n < 4) {
		g_fake.struct_size[g_fake.n] = a->struct_size;
		snprintf(g_fake.name[g_fake.n], sizeof g_fake.name[0], "%.*s", (int)a->function_name_size, a->function_name);
		g_fake.api_version[g_fake.n] = a->api_version;
		g_fake.handler[g_fake.n] = a->handler_execute;
		g_fake.n++;
	}
	return NULL;
}

static void fake_error_message(gomase_error_message_args *m) {
	m->message = m->error;
	m->message_size = strlen(m->error);
}

static void fake_error_destroy(gomase_error_destroy_args *d) { (void)d; }

void *gomase_pjrt_fake(int with_gpu_extension, int refuse) {
	memset(&g_fake, 0, sizeof g_fake);
	g_fake.refuse = refuse;
	g_fake.api.struct_size = sizeof g_fake.api;
	g_fake.api.error_message = fake_error_message;
	g_fake.api.error_destroy = fake_error_destroy;
	g_fake.other = (gomase_ext){sizeof g_fake.other, 7, NULL}; // another extension first
	g_fake.api.extension_start = &g_fake.other;
	if (with_gpu_extension) {
		g_fake.gpu.base = (gomase_ext){sizeof g_fake.gpu, 0, NULL};
		g_fake.gpu.custom_call = fake_custom_call;
		g_fake.other.next = &g_fake.gpu.base;
	}
	return &g_fake.api;
}

// gomase_pjrt_fake_registered returns the name of registration i (NULL
// past the last) and its API version and handler.
const char *gomase_pjrt_fake_registered(int i, int *api_version, size_t *struct_size, void **handler) {
	if (i < 0 || i >= g_fake.n) return NULL;
	*struct_size = g_fake.struct_size[i];
	*api_version = g_fake.api_version[i];
	*handler = g_fake.handler[i];
	return g_fake.name[i];
}
