// dl.h: the C side of the real driver (dl*.go). It declares the few CUDA driver types gpuprep
// needs (there are no CUDA headers on the build machines) and the small
// wrappers Go calls; dl.c loads libcuda.so.1 with dlopen, resolves the
// entry points with dlsym into one table, and calls through that table.
//
// Handles (CUcontext, CUmodule, CUfunction, CUstream, CUevent) and host
// pointers cross into Go as uintptr_t, so that Go never holds them as Go
// pointers. dl.c holds the table and the wrappers; every Go file of the
// real driver includes this header.
#ifndef GPUPREP_CUDA_DL_H
#define GPUPREP_CUDA_DL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef unsigned long long CUdeviceptr;

#define GP_MEMHOSTALLOC_PORTABLE 0x01 // CU_MEMHOSTALLOC_PORTABLE
#define GP_STREAM_NON_BLOCKING 0x1    // CU_STREAM_NON_BLOCKING
#define GP_NO_ARG_MEMORY (-1)         // gp_launch: malloc failed (no CUresult)

// The wrappers (dl.c): each returns the entry point's CUresult.
int gp_load(const char *lib, char **dlerr, const char **missing);
const char *gp_errorName(CUresult r);
CUresult gp_cuInit(unsigned int flags);
CUresult gp_cuDriverGetVersion(int *v);
CUresult gp_cuDeviceGetByPCIBusId(CUdevice *dev, const char *busID);
CUresult gp_cuDeviceGetAttribute(int *v, int attr, CUdevice dev);
CUresult gp_cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer);
CUresult gp_cuDevicePrimaryCtxRetain(uintptr_t *ctx, CUdevice dev);
CUresult gp_cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult gp_cuCtxSetCurrent(uintptr_t ctx);
CUresult gp_cuCtxEnablePeerAccess(uintptr_t peer);
CUresult gp_cuMemAlloc_v2(CUdeviceptr *p, size_t n);
CUresult gp_cuMemFree_v2(CUdeviceptr p);
CUresult gp_cuMemHostAlloc(uintptr_t *p, size_t n);
CUresult gp_cuMemFreeHost(uintptr_t p);
CUresult gp_cuModuleLoadData(uintptr_t *mod, const char *image);
CUresult gp_cuModuleGetFunction(uintptr_t *fn, uintptr_t mod, const char *name);
CUresult gp_cuModuleUnload(uintptr_t mod);
CUresult gp_launch(uintptr_t fn, unsigned grid, unsigned block, uintptr_t s, const void *args, int n);
CUresult gp_cuStreamCreate(uintptr_t *s);
CUresult gp_cuStreamSynchronize(uintptr_t s);
CUresult gp_cuStreamDestroy_v2(uintptr_t s);
CUresult gp_cuEventCreate(uintptr_t *e);
CUresult gp_cuEventRecord(uintptr_t e, uintptr_t s);
CUresult gp_cuEventSynchronize(uintptr_t e);
CUresult gp_cuEventElapsedTime(float *ms, uintptr_t start, uintptr_t end);
CUresult gp_cuEventDestroy_v2(uintptr_t e);
CUresult gp_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, uintptr_t src, size_t n, uintptr_t s);
CUresult gp_cuMemcpyDtoHAsync_v2(uintptr_t dst, CUdeviceptr src, size_t n, uintptr_t s);
CUresult gp_cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, uintptr_t s);
CUresult gp_cuMemcpyPeerAsync(CUdeviceptr dst, uintptr_t dstCtx, CUdeviceptr src, uintptr_t srcCtx, size_t n, uintptr_t s);

#endif
