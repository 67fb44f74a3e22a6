/* ofl_cuda_api: the few CUDA driver API types and entry points offload uses,
 * declared here so that neither the build nor the product needs cuda.h or a
 * CUDA toolkit; libcuda.so.1 is opened with dlopen at first discovery.
 *
 * Types and values are copied from the ABI of cuda.h (CUDA 13.0, 64-bit): the
 * driver keeps these stable, and each entry point is resolved by its exported
 * name ("cuMemAlloc_v2"), which is what fixes its ABI, never by the unversioned
 * name that cuda.h redirects with macros. */
#ifndef OFL_CUDA_API_H
#define OFL_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>

typedef int CUresult; /* an enum in cuda.h: int-sized on every ABI CUDA runs on */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 on 64-bit hosts */
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct {
    char bytes[16];
} CUuuid;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
#define CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4 /* CUmemPool_attribute; the value is a cuuint64_t */
typedef struct {
    int type; /* CUmemLocationType: 1, a device */
    int id;   /* its ordinal */
} CUmemLocation;
typedef struct {
    CUmemLocation location;
    int flags; /* CUmemAccess_flags: 3, read and write */
} CUmemAccessDesc;
enum { CU_MEM_LOCATION_TYPE_DEVICE = 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 };

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    /* A kernel's fault: "sticky", every later call in the context returns it
     * until the context is destroyed (ofl_cuda.c resets the primary context;
     * driver 580 keeps it for the life of the process even so). */
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701, /* not sticky: the launch was refused */
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704, /* not an error for us */
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_TENSOR_MEMORY_LEAK = 721,
};

enum { /* CUdevice_attribute */
       CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
       CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
       CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
       CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
       CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
       CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
       CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
       CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

enum { CU_STREAM_DEFAULT = 0, CU_EVENT_DEFAULT = 0 };

enum { CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0 }; /* CUfunction_attribute */

enum { /* CUjit_option */
       CU_JIT_INFO_LOG_BUFFER = 3,
       CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
       CU_JIT_ERROR_LOG_BUFFER = 5,
       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
       CU_JIT_OPTIMIZATION_LEVEL = 7, /* 0-4, the value an unsigned int; 4 by default */
};

/* Every pointer is NULL until ofl_cuda_load() succeeds. The launcher's entry
 * points (module, function, launch) are optional: NULL on a driver without
 * them, which no driver that passes cuInit lacks in practice. */
typedef struct {
    CUresult (*cuGetErrorName)(CUresult error, const char **str);
    CUresult (*cuGetErrorString)(CUresult error, const char **str);
    CUresult (*cuInit)(unsigned flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*cuDeviceGetAttribute)(int *value, int attrib, CUdevice dev);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev); /* _v2 */
    CUresult (*cuDeviceGetUuid)(CUuuid *uuid, CUdevice dev);   /* _v2, else v1 */
    CUresult (*cuDeviceGetPCIBusId)(char *id, int len, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*cuCtxPushCurrent)(CUcontext ctx); /* _v2 */
    CUresult (*cuCtxPopCurrent)(CUcontext *ctx); /* _v2 */
    CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
    CUresult (*cuStreamSynchronize)(CUstream stream);
    CUresult (*cuMemGetInfo)(size_t *free, size_t *total);  /* _v2 */
    CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes); /* _v2 */
    CUresult (*cuMemFree)(CUdeviceptr ptr);                 /* _v2 */
    CUresult (*cuMemHostAlloc)(void **ptr, size_t bytes, unsigned flags);
    /* optional: the cancel flag (mapped host memory) and polling waits (ofl_wait.c) */
    CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr *dptr, void *p, unsigned flags); /* _v2 */
    CUresult (*cuStreamQuery)(CUstream stream);
    CUresult (*cuEventQuery)(CUevent ev);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t n, CUstream s); /* _v2 */
    CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t n, CUstream s);       /* _v2 */
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s); /* _v2 */
    CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                  size_t n, CUstream s);
    /* optional: direct copies between GPUs (without them the driver stages through the host) */
    CUresult (*cuDeviceCanAccessPeer)(int *can, CUdevice dev, CUdevice peer);
    CUresult (*cuCtxEnablePeerAccess)(CUcontext peer, unsigned flags); /* of the current context */
    CUresult (*cuEventCreate)(CUevent *ev, unsigned flags);
    CUresult (*cuEventRecord)(CUevent ev, CUstream stream);
    CUresult (*cuEventSynchronize)(CUevent ev);
    CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end); /* _v2, else v1 */
    CUresult (*cuEventDestroy)(CUevent ev);                                /* _v2 */
    /* optional, for the launcher */
    CUresult (*cuModuleLoadData)(CUmodule *mod, const void *image);
    /* options: CUjit_option values (an int-sized enum) */
    CUresult (*cuModuleLoadDataEx)(CUmodule *mod, const void *image, unsigned noptions,
                                   int *options, void **values);
    CUresult (*cuModuleUnload)(CUmodule mod);
    CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
    CUresult (*cuFuncGetAttribute)(int *value, int attrib, CUfunction fn);
    /* CUDA 12.4+: lets a launch check its arguments' count and sizes */
    CUresult (*cuFuncGetParamInfo)(CUfunction fn, size_t index, size_t *offset, size_t *size);
    /* optional (CUDA 12.0+), context-independent loading (ofl_cuda_compiler.c) */
    CUresult (*cuLibraryLoadData)(CUlibrary *lib, const void *code, int *jit_options,
                                  void **jit_values, unsigned njit, int *lib_options,
                                  void **lib_values, unsigned nlib);
    CUresult (*cuLibraryUnload)(CUlibrary lib);
    CUresult (*cuLibraryGetKernel)(CUkernel *kernel, CUlibrary lib, const char *name);
    CUresult (*cuKernelGetFunction)(CUfunction *fn, CUkernel kernel); /* in the current context */
    CUresult (*cuLaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared_bytes, CUstream stream,
                               void **params, void **extra);
    /* optional (CUDA 11.2+), stream-ordered allocation from the device's pool */
    CUresult (*cuMemAllocAsync)(CUdeviceptr *ptr, size_t bytes, CUstream s);
    CUresult (*cuMemFreeAsync)(CUdeviceptr ptr, CUstream s);
    CUresult (*cuDeviceGetDefaultMemPool)(CUmemoryPool *pool, CUdevice dev);
    CUresult (*cuMemPoolSetAttribute)(CUmemoryPool pool, int attr, void *value);
    CUresult (*cuMemPoolTrimTo)(CUmemoryPool pool, size_t keep);
    /* a pool's memory is reached by a peer only where the pool allows it */
    CUresult (*cuMemPoolSetAccess)(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count);
    /* optional, to recover from a kernel's fault */
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev); /* _v2, else v1 */
    CUresult (*cuDevicePrimaryCtxReset)(CUdevice dev);   /* _v2, else v1 */
} ofl_cuda_api;

extern ofl_cuda_api ofl_cu;

/* Opens the driver and calls cuInit once; false (with *why set to a sentence
 * such as "no CUDA driver (libcuda.so.1: cannot open ...)") when there is no
 * usable driver. Thread-safe; later calls return the first answer. */
bool ofl_cuda_load(const char **why);

/* "CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" into buf, for messages. */
const char *ofl_cuda_strerror(CUresult rc, char *buf, size_t len);

#endif
