// dl.c: the table of libcuda.so.1's entry points and the wrappers that
// call through it (declared in dl.h).
#include <dlfcn.h>
#include <string.h>

#include "dl.h"

// GP_ENTRY_POINTS lists each entry point by its exported (versioned) name
// with its parameters, as the CUDA headers declare them.
#define GP_ENTRY_POINTS(X)                                                   \
	X(cuInit, (unsigned int flags))                                          \
	X(cuDriverGetVersion, (int *version))                                    \
	X(cuGetErrorName, (CUresult r, const char **name))                       \
	X(cuDeviceGetByPCIBusId, (CUdevice *dev, const char *busID))             \
	X(cuDeviceGetAttribute, (int *v, int attr, CUdevice dev))                \
	X(cuDeviceCanAccessPeer, (int *can, CUdevice dev, CUdevice peer))        \
	X(cuDevicePrimaryCtxRetain, (CUcontext *ctx, CUdevice dev))              \
	X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev))                          \
	X(cuCtxSetCurrent, (CUcontext ctx))                                      \
	X(cuCtxEnablePeerAccess, (CUcontext peer, unsigned int flags))           \
	X(cuMemAlloc_v2, (CUdeviceptr *p, size_t n))                             \
	X(cuMemFree_v2, (CUdeviceptr p))                                         \
	X(cuMemHostAlloc, (void **p, size_t n, unsigned int flags))              \
	X(cuMemFreeHost, (void *p))                                              \
	X(cuModuleLoadData, (CUmodule *mod, const void *image))                  \
	X(cuModuleGetFunction, (CUfunction *fn, CUmodule mod, const char *name)) \
	X(cuModuleUnload, (CUmodule mod))                                        \
	X(cuLaunchKernel, (CUfunction fn, unsigned gx, unsigned gy, unsigned gz, \
	                   unsigned bx, unsigned by, unsigned bz, unsigned shmem, \
	                   CUstream s, void **params, void **extra))             \
	X(cuStreamCreate, (CUstream *s, unsigned int flags))                     \
	X(cuStreamSynchronize, (CUstream s))                                     \
	X(cuStreamDestroy_v2, (CUstream s))                                      \
	X(cuEventCreate, (CUevent *e, unsigned int flags))                       \
	X(cuEventRecord, (CUevent e, CUstream s))                                \
	X(cuEventSynchronize, (CUevent e))                                       \
	X(cuEventElapsedTime, (float *ms, CUevent start, CUevent end))           \
	X(cuEventDestroy_v2, (CUevent e))                                        \
	X(cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void *src, size_t n,     \
	                         CUstream s))                                    \
	X(cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr src, size_t n,           \
	                         CUstream s))                                    \
	X(cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n,     \
	                         CUstream s))                                    \
	X(cuMemcpyPeerAsync, (CUdeviceptr dst, CUcontext dstCtx,                 \
	                      CUdeviceptr src, CUcontext srcCtx, size_t n,       \
	                      CUstream s))

#define GP_FIELD(name, params) CUresult (*name) params;
struct gp_entry_points {
	GP_ENTRY_POINTS(GP_FIELD)
};
#undef GP_FIELD

// gp is the loaded driver's table: all NULL until gp_load succeeds.
struct gp_entry_points gp;

// gp_load dlopens lib (RTLD_NOW | RTLD_LOCAL) and resolves every entry point
// (dlsym); only if all are there does it fill gp, and keeps the library
// loaded for good. It returns 0, or -1 with *dlerr (malloc'd; the caller
// frees it) when dlopen fails, or with *missing naming the entry point that
// the library lacks.
int gp_load(const char *lib, char **dlerr, const char **missing) {
	struct gp_entry_points t;
	void *h;
	const char *e;

	dlerror();
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		e = dlerror();
		*dlerr = strdup(e != NULL ? e : "dlopen failed");
		return -1;
	}
#define GP_RESOLVE(name, params)                          \
	t.name = (__typeof__(t.name))dlsym(h, #name);         \
	if (t.name == NULL) {                                 \
		*missing = #name;                                 \
		dlclose(h);                                       \
		return -1;                                        \
	}
	GP_ENTRY_POINTS(GP_RESOLVE)
#undef GP_RESOLVE
	gp = t;
	return 0;
}

// gp_errorName is cuGetErrorName: NULL for a result the driver doesn't
// know, or before gp_load.
const char *gp_errorName(CUresult r) {
	const char *s = NULL;
	if (gp.cuGetErrorName == NULL || gp.cuGetErrorName(r, &s) != 0) {
		return NULL;
	}
	return s;
}

CUresult gp_cuInit(unsigned int flags) { return gp.cuInit(flags); }

CUresult gp_cuDriverGetVersion(int *v) { return gp.cuDriverGetVersion(v); }

CUresult gp_cuDeviceGetByPCIBusId(CUdevice *dev, const char *busID) {
	return gp.cuDeviceGetByPCIBusId(dev, busID);
}

CUresult gp_cuDeviceGetAttribute(int *v, int attr, CUdevice dev) {
	return gp.cuDeviceGetAttribute(v, attr, dev);
}

CUresult gp_cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
	return gp.cuDeviceCanAccessPeer(can, dev, peer);
}

CUresult gp_cuDevicePrimaryCtxRetain(uintptr_t *ctx, CUdevice dev) {
	CUcontext c = NULL;
	CUresult r = gp.cuDevicePrimaryCtxRetain(&c, dev);
	*ctx = (uintptr_t)c;
	return r;
}

CUresult gp_cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
	return gp.cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult gp_cuCtxSetCurrent(uintptr_t ctx) {
	return gp.cuCtxSetCurrent((CUcontext)ctx);
}

CUresult gp_cuCtxEnablePeerAccess(uintptr_t peer) {
	return gp.cuCtxEnablePeerAccess((CUcontext)peer, 0);
}

CUresult gp_cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return gp.cuMemAlloc_v2(p, n); }

CUresult gp_cuMemFree_v2(CUdeviceptr p) { return gp.cuMemFree_v2(p); }

CUresult gp_cuMemHostAlloc(uintptr_t *p, size_t n) {
	void *q = NULL;
	CUresult r = gp.cuMemHostAlloc(&q, n, GP_MEMHOSTALLOC_PORTABLE);
	*p = (uintptr_t)q;
	return r;
}

CUresult gp_cuMemFreeHost(uintptr_t p) { return gp.cuMemFreeHost((void *)p); }

CUresult gp_cuModuleLoadData(uintptr_t *mod, const char *image) {
	CUmodule m = NULL;
	CUresult r = gp.cuModuleLoadData(&m, image);
	*mod = (uintptr_t)m;
	return r;
}

CUresult gp_cuModuleGetFunction(uintptr_t *fn, uintptr_t mod, const char *name) {
	CUfunction f = NULL;
	CUresult r = gp.cuModuleGetFunction(&f, (CUmodule)mod, name);
	*fn = (uintptr_t)f;
	return r;
}

CUresult gp_cuModuleUnload(uintptr_t mod) { return gp.cuModuleUnload((CUmodule)mod); }

// gp_launch is cuLaunchKernel with a 1-D grid and block, no shared memory,
// and n arguments of 8 bytes each at args (each value at the start of its
// slot, in the machine's byte order). The values and the kernelParams
// array are copied into malloc'd memory for the call (the driver copies
// them in turn before cuLaunchKernel returns) and freed after it.
CUresult gp_launch(uintptr_t fn, unsigned grid, unsigned block, uintptr_t s,
                          const void *args, int n) {
	uint64_t *vals = NULL;
	void **params = NULL;
	CUresult r;
	int i;

	if (n > 0) {
		vals = malloc((size_t)n * sizeof *vals);
		params = malloc((size_t)n * sizeof *params);
		if (vals == NULL || params == NULL) {
			free(vals);
			free(params);
			return GP_NO_ARG_MEMORY;
		}
		memcpy(vals, args, (size_t)n * sizeof *vals);
		for (i = 0; i < n; i++) {
			params[i] = &vals[i];
		}
	}
	r = gp.cuLaunchKernel((CUfunction)fn, grid, 1, 1, block, 1, 1, 0, (CUstream)s,
	                      params, NULL);
	free(params);
	free(vals);
	return r;
}

CUresult gp_cuStreamCreate(uintptr_t *s) {
	CUstream q = NULL;
	CUresult r = gp.cuStreamCreate(&q, GP_STREAM_NON_BLOCKING);
	*s = (uintptr_t)q;
	return r;
}

CUresult gp_cuStreamSynchronize(uintptr_t s) {
	return gp.cuStreamSynchronize((CUstream)s);
}

CUresult gp_cuStreamDestroy_v2(uintptr_t s) { return gp.cuStreamDestroy_v2((CUstream)s); }

CUresult gp_cuEventCreate(uintptr_t *e) {
	CUevent v = NULL;
	CUresult r = gp.cuEventCreate(&v, 0);
	*e = (uintptr_t)v;
	return r;
}

CUresult gp_cuEventRecord(uintptr_t e, uintptr_t s) {
	return gp.cuEventRecord((CUevent)e, (CUstream)s);
}

CUresult gp_cuEventSynchronize(uintptr_t e) { return gp.cuEventSynchronize((CUevent)e); }

CUresult gp_cuEventElapsedTime(float *ms, uintptr_t start, uintptr_t end) {
	return gp.cuEventElapsedTime(ms, (CUevent)start, (CUevent)end);
}

CUresult gp_cuEventDestroy_v2(uintptr_t e) { return gp.cuEventDestroy_v2((CUevent)e); }

CUresult gp_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, uintptr_t src, size_t n, uintptr_t s) {
	return gp.cuMemcpyHtoDAsync_v2(dst, (const void *)src, n, (CUstream)s);
}

CUresult gp_cuMemcpyDtoHAsync_v2(uintptr_t dst, CUdeviceptr src, size_t n, uintptr_t s) {
	return gp.cuMemcpyDtoHAsync_v2((void *)dst, src, n, (CUstream)s);
}

CUresult gp_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, uintptr_t s) {
	return gp.cuMemcpyDtoDAsync_v2(dst, src, n, (CUstream)s);
}

CUresult gp_cuMemcpyPeerAsync(CUdeviceptr dst, uintptr_t dstCtx, CUdeviceptr src,
                                     uintptr_t srcCtx, size_t n, uintptr_t s) {
	return gp.cuMemcpyPeerAsync(dst, (CUcontext)dstCtx, src, (CUcontext)srcCtx, n, (CUstream)s);
}
