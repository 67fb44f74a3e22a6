/* ofl_cuda_api: the CUDA driver's entry points, found with dlopen/dlsym the
 * first time a caller asks (ofl_cuda_api.h). Both the backend (ofl_cuda.c)
 * and its compiler threads (ofl_cuda_compiler.c) call through ofl_cu; this
 * file calls no other file of the runtime. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ofl_cuda_api.h"

ofl_cuda_api ofl_cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_why[256];

/* Exported names, in order of preference: the newest ABI first. */
static const struct {
    size_t offset;
    const char *names[2];
    bool optional;
} symbols[] = {
#define SYM(field, ...)                                                                            \
    { offsetof(ofl_cuda_api, field), {__VA_ARGS__}, false }
#define OPT(field, ...)                                                                            \
    { offsetof(ofl_cuda_api, field), {__VA_ARGS__}, true }
    SYM(cuGetErrorName, "cuGetErrorName"),
    SYM(cuGetErrorString, "cuGetErrorString"),
    SYM(cuInit, "cuInit"),
    SYM(cuDriverGetVersion, "cuDriverGetVersion"),
    SYM(cuDeviceGetCount, "cuDeviceGetCount"),
    SYM(cuDeviceGet, "cuDeviceGet"),
    SYM(cuDeviceGetName, "cuDeviceGetName"),
    SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
    OPT(cuDeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
    OPT(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId"),
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(cuCtxPushCurrent, "cuCtxPushCurrent_v2"),
    SYM(cuCtxPopCurrent, "cuCtxPopCurrent_v2"),
    SYM(cuStreamCreate, "cuStreamCreate"),
    SYM(cuStreamSynchronize, "cuStreamSynchronize"),
    SYM(cuMemGetInfo, "cuMemGetInfo_v2"),
    SYM(cuMemAlloc, "cuMemAlloc_v2"),
    SYM(cuMemFree, "cuMemFree_v2"),
    OPT(cuMemHostAlloc, "cuMemHostAlloc"),
    OPT(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2"),
    OPT(cuStreamQuery, "cuStreamQuery"),
    OPT(cuEventQuery, "cuEventQuery"),
    SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    SYM(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    SYM(cuMemcpyPeerAsync, "cuMemcpyPeerAsync"),
    OPT(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer"),
    OPT(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess"),
    SYM(cuEventCreate, "cuEventCreate"),
    SYM(cuEventRecord, "cuEventRecord"),
    SYM(cuEventSynchronize, "cuEventSynchronize"),
    SYM(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
    SYM(cuEventDestroy, "cuEventDestroy_v2"),
    OPT(cuModuleLoadData, "cuModuleLoadData"),
    OPT(cuModuleLoadDataEx, "cuModuleLoadDataEx"),
    OPT(cuModuleUnload, "cuModuleUnload"),
    OPT(cuModuleGetFunction, "cuModuleGetFunction"),
    OPT(cuFuncGetAttribute, "cuFuncGetAttribute"),
    OPT(cuFuncGetParamInfo, "cuFuncGetParamInfo"),
    OPT(cuLibraryLoadData, "cuLibraryLoadData"),
    OPT(cuLibraryUnload, "cuLibraryUnload"),
    OPT(cuLibraryGetKernel, "cuLibraryGetKernel"),
    OPT(cuKernelGetFunction, "cuKernelGetFunction"),
    OPT(cuLaunchKernel, "cuLaunchKernel"),
    OPT(cuMemAllocAsync, "cuMemAllocAsync"),
    OPT(cuMemFreeAsync, "cuMemFreeAsync"),
    OPT(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool"),
    OPT(cuMemPoolSetAttribute, "cuMemPoolSetAttribute"),
    OPT(cuMemPoolTrimTo, "cuMemPoolTrimTo"),
    OPT(cuMemPoolSetAccess, "cuMemPoolSetAccess"),
    OPT(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
    OPT(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset"),
#undef SYM
#undef OPT
};

const char *ofl_cuda_strerror(CUresult rc, char *buf, size_t len) {
    const char *name = NULL, *text = NULL;
    if (ofl_cu.cuGetErrorName) ofl_cu.cuGetErrorName(rc, &name);
    if (ofl_cu.cuGetErrorString) ofl_cu.cuGetErrorString(rc, &text);
    snprintf(buf, len, "%s (%d)%s%s", name ? name : "CUDA error", rc, text ? ": " : "",
             text ? text : "");
    return buf;
}

static void load(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(load_why, sizeof load_why, "no CUDA driver (%s)", dlerror());
        return;
    }
    for (size_t i = 0; i < sizeof symbols / sizeof *symbols; i++) {
        void *f = NULL;
        for (int k = 0; k < 2 && !f && symbols[i].names[k]; k++)
            f = dlsym(lib, symbols[i].names[k]);
        if (!f && !symbols[i].optional) {
            snprintf(load_why, sizeof load_why, "the CUDA driver is too old: libcuda.so.1 lacks %s",
                     symbols[i].names[0]);
            memset(&ofl_cu, 0, sizeof ofl_cu);
            return; /* the library stays open: closing a driver is never worth the risk */
        }
        memcpy((char *)&ofl_cu + symbols[i].offset, &f, sizeof f);
    }
    CUresult rc = ofl_cu.cuInit(0);
    if (rc != CUDA_SUCCESS) {
        char e[160];
        snprintf(load_why, sizeof load_why, "%s (cuInit: %s)",
                 rc == CUDA_ERROR_NO_DEVICE ? "a CUDA driver but no CUDA device"
                                            : "the CUDA driver does not start",
                 ofl_cuda_strerror(rc, e, sizeof e));
        return;
    }
    loaded = true;
}

bool ofl_cuda_load(const char **why) {
    pthread_once(&load_once, load);
    if (why) *why = load_why;
    return loaded;
}
