//go:build cgo && linux

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
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

// gomase_cuda_time_mxint8 times reps launches with device events and
// returns the milliseconds they took in *ms.
CUresult gomase_cuda_time_mxint8(gomase_cuda *d, CUfunction f, CUdeviceptr m, CUdeviceptr e, CUdeviceptr out,
                                 long long n, int gs, int reps, float *ms) {
	CUevent start, stop;
	CUresult r = d->cuEventCreate(&start, 0);
	if (r) return r;
	if ((r = d->cuEventCreate(&stop, 0))) { d->cuEventDestroy(start); return r; }
	r = d->cuEventRecord(start, NULL);
	for (int i = 0; !r && i < reps; i++) r = gomase_cuda_launch_mxint8(d, f, NULL, m, e, out, n, gs);
	if (!r) r = d->cuEventRecord(stop, NULL);
	if (!r) r = d->cuEventSynchronize(stop);
	if (!r) r = d->cuEventElapsedTime(ms, start, stop);
	d->cuEventDestroy(start);
	d->cuEventDestroy(stop);
	return r;
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
} gomase_register_args;

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
	gomase_register_args args = {sizeof args, name, strlen(name), 0, NULL, NULL, NULL, handler};
	void *err = ((gomase_gpu_ext *)e)->custom_call(&args);
	if (!err) return NULL;
	gomase_error_message_args m = {sizeof m, NULL, err, NULL, 0};
	a->error_message(&m);
	snprintf(g_error, sizeof g_error, "the plugin refused the custom call: %.*s", (int)m.message_size, m.message ? m.message : "");
	gomase_error_destroy_args d = {sizeof d, NULL, err};
	a->error_destroy(&d);
	return g_error;
}

// The driver and the PTX the handler uses, set once by gomase_xla_init,
// and the module loaded per CUDA context.
static gomase_cuda *g_driver;
static const char *g_mxint8_ptx;
#define GOMASE_MAX_CONTEXTS 16
static struct {
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
} g_loaded[GOMASE_MAX_CONTEXTS];
static int g_nloaded;

void gomase_xla_init(gomase_cuda *d, const char *mxint8_ptx) {
	pthread_mutex_lock(&g_mu);
	g_driver = d;
	g_mxint8_ptx = mxint8_ptx;
	pthread_mutex_unlock(&g_mu);
}

// mxint8_function returns the kernel in stream's context, loading the PTX
// there the first time; NULL after recording an error.
static CUfunction mxint8_function(CUstream stream) {
	CUcontext ctx;
	CUresult r = g_driver->cuStreamGetCtx(stream, &ctx);
	if (r) {
		set_error("cuStreamGetCtx: %s", gomase_cuda_error(g_driver, r));
		return NULL;
	}
	CUfunction fn = NULL;
	pthread_mutex_lock(&g_mu);
	for (int i = 0; i < g_nloaded; i++)
		if (g_loaded[i].ctx == ctx) fn = g_loaded[i].fn;
	pthread_mutex_unlock(&g_mu);
	if (fn) return fn;
	char log[2048] = "";
	CUmodule mod;
	if ((r = g_driver->cuCtxPushCurrent(ctx))) {
		set_error("cuCtxPushCurrent: %s", gomase_cuda_error(g_driver, r));
		return NULL;
	}
	r = gomase_cuda_load(g_driver, &mod, g_mxint8_ptx, log, sizeof log);
	if (!r) r = g_driver->cuModuleGetFunction(&fn, mod, "gomase_mxint8_dequantize");
	CUcontext popped;
	g_driver->cuCtxPopCurrent(&popped);
	if (r) {
		set_error("loading the MXINT8 kernel: %s; JIT log: %s", gomase_cuda_error(g_driver, r), log);
		return NULL;
	}
	pthread_mutex_lock(&g_mu);
	if (g_nloaded < GOMASE_MAX_CONTEXTS) {
		g_loaded[g_nloaded].ctx = ctx;
		g_loaded[g_nloaded].mod = mod;
		g_loaded[g_nloaded].fn = fn;
		g_nloaded++;
	}
	pthread_mutex_unlock(&g_mu);
	return fn;
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
	CUfunction fn = mxint8_function(stream);
	if (!fn) {
		if (g_set_failure && status) g_set_failure(status, "gomase_mxint8_dequantize: the kernel could not be loaded", 54);
		return;
	}
	CUresult r = gomase_cuda_launch_mxint8(g_driver, fn, stream, (CUdeviceptr)buffers[0], (CUdeviceptr)buffers[1],
	                                       (CUdeviceptr)buffers[2], n, gs);
	if (r) fail(status, "gomase_mxint8_dequantize: cuLaunchKernel: %s", gomase_cuda_error(g_driver, r));
}

// A fake PJRT_Api for the tests: its GPU extension records what it was
// asked to register, or refuses.
static struct {
	gomase_pjrt_api api;
	gomase_ext other;
	gomase_gpu_ext gpu;
	int refuse;
	char name[64];
	int api_version;
	void *handler;
} g_fake;

static const char g_fake_message[] = "fake refusal";

static void *fake_custom_call(gomase_register_args *a) {
	snprintf(g_fake.name, sizeof g_fake.name, "%.*s", (int)a->function_name_size, a->function_name);
	g_fake.api_version = a->api_version;
	g_fake.handler = a->handler_execute;
	return g_fake.refuse ? (void *)g_fake_message : NULL;
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

const char *gomase_pjrt_fake_registered(int *api_version, void **handler) {
	*api_version = g_fake.api_version;
	*handler = g_fake.handler;
	return g_fake.name;
}
