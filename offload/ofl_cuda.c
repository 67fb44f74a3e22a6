/* ofl_cuda: the CUDA backend, through the driver API opened with dlopen at
 * first discovery, so that offload builds and runs where no NVIDIA driver is
 * (then there are simply no CUDA devices). Each device uses its primary
 * context -- the one the CUDA runtime, CuPy and Numba share -- pushed onto
 * the calling thread around every call and popped after, since the kernel's
 * main thread and user threads all come here and may have their own current
 * context. One stream per device, in order; copies are queued on it and
 * waited for, so they order with launches on the same stream. PTX is
 * compiled on the device's own compiler thread (ofl_cuda_compiler.c). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_backend.h"
#include "ofl_cuda_compiler.h"

/* ---- discovery ---- */

static int attr(CUdevice d, int which) {
    int v = 0;
    return ofl_cu.cuDeviceGetAttribute(&v, which, d) == CUDA_SUCCESS ? v : 0;
}

static ofl_device *describe(CUdevice d, int driver) {
    ofl_device *dev = ofl_device_new(&ofl_cuda_ops);
    if (!dev) return NULL;
    if (pthread_rwlock_init(&dev->h.cu.gate, NULL) != 0) {
        ofl_device_delete(dev);
        return NULL;
    }
    ofl_device_info *in = &dev->info;
    dev->h.cu.dev = d;
    in->backend = OFL_CUDA;
    in->type = OFL_GPU;
    if (ofl_cu.cuDeviceGetName(in->name, (int)sizeof in->name, d) != CUDA_SUCCESS)
        snprintf(in->name, sizeof in->name, "CUDA device %d", (int)d);
    snprintf(in->vendor, sizeof in->vendor, "NVIDIA Corporation");
    snprintf(in->platform, sizeof in->platform, "CUDA");
    snprintf(in->driver_version, sizeof in->driver_version, "%d.%d", driver / 1000,
             driver % 1000 / 10);
    in->cuda_ordinal = d;
    in->cuda_cc_major = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    in->cuda_cc_minor = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    snprintf(in->version, sizeof in->version, "CUDA compute capability %d.%d", in->cuda_cc_major,
             in->cuda_cc_minor);
    in->max_compute_units = (unsigned)attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    in->max_work_group_size = (size_t)attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    /* index 0 is the fastest-varying dimension, as in OpenCL: CUDA's x */
    in->max_work_item_sizes[0] = (size_t)attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
    in->max_work_item_sizes[1] = (size_t)attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
    in->max_work_item_sizes[2] = (size_t)attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
    size_t total = 0;
    ofl_cu.cuDeviceTotalMem(&total, d);
    in->global_mem_size = in->max_mem_alloc_size = total;
    in->local_mem_size = (uint64_t)attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    in->has_fp64 = in->has_fp16 = in->has_atomic64 = true;

    CUuuid uuid;
    if (ofl_cu.cuDeviceGetUuid && ofl_cu.cuDeviceGetUuid(&uuid, d) == CUDA_SUCCESS) {
        memcpy(dev->uuid, uuid.bytes, 16);
        dev->has_uuid = true;
    }
    /* the attributes give numbers to compare with OpenCL's answer; the
     * function is bus:device only, always 0 for a CUDA device */
    dev->pci_domain = attr(d, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
    dev->pci_bus = (unsigned)attr(d, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
    dev->pci_dev = (unsigned)attr(d, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
    dev->pci_fn = 0;
    dev->has_pci = true;
    snprintf(in->pci_bus_id, sizeof in->pci_bus_id, "%04x:%02x:%02x.%x", (unsigned)dev->pci_domain,
             dev->pci_bus, dev->pci_dev, dev->pci_fn);
    return dev;
}

/* The driver numbers GPUs fastest first unless CUDA_DEVICE_ORDER says
 * otherwise, so cuda:gpu:N follows the PCI address instead: the order
 * nvidia-smi shows, the same in every process on the machine. */
static int by_pci_address(const void *a, const void *b) {
    const ofl_device *x = *(ofl_device *const *)a, *y = *(ofl_device *const *)b;
    if (x->pci_domain != y->pci_domain) return x->pci_domain < y->pci_domain ? -1 : 1;
    if (x->pci_bus != y->pci_bus) return x->pci_bus < y->pci_bus ? -1 : 1;
    if (x->pci_dev != y->pci_dev) return x->pci_dev < y->pci_dev ? -1 : 1;
    return x->h.cu.dev < y->h.cu.dev ? -1 : x->h.cu.dev > y->h.cu.dev;
}

void ofl_cuda_discover(ofl_devlist *list, char *note, size_t notelen) {
    const char *why;
    note[0] = '\0';
    if (!ofl_cuda_load(&why)) {
        snprintf(note, notelen, "%s", why);
        return;
    }
    int n = 0, driver = 0;
    ofl_cu.cuDriverGetVersion(&driver);
    if (ofl_cu.cuDeviceGetCount(&n) != CUDA_SUCCESS || n == 0) {
        snprintf(note, notelen, "a CUDA driver but no CUDA device");
        return;
    }
    size_t first = list->n;
    for (int i = 0; i < n; i++) {
        CUdevice d;
        if (ofl_cu.cuDeviceGet(&d, i) != CUDA_SUCCESS) continue;
        ofl_device *dev = describe(d, driver);
        if (dev) ofl_devlist_add(list, dev);
    }
    qsort(list->v + first, list->n - first, sizeof *list->v, by_pci_address);
}

/* ---- calls with the device's context current ---- */

/* The errors a kernel's fault leaves behind: every later call in the context
 * returns the same one, until the context is destroyed. */
static bool is_fault(CUresult rc) {
    switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK: return true;
    default: return false;
    }
}

/* With the lock held: names the last kernel launched as the culprit and
 * marks the context for the reset that leave() does. */
static int kernel_fault(ofl_error *err, ofl_device *dev, const char *call, CUresult rc) {
    const char *name = NULL, *text = NULL;
    if (ofl_cu.cuGetErrorName) ofl_cu.cuGetErrorName(rc, &name);
    if (ofl_cu.cuGetErrorString) ofl_cu.cuGetErrorString(rc, &text);
    dev->h.cu.fault = rc;
    char who[140]; /* fits reset_after with " faulted" */
    if (dev->last_kernel[0])
        snprintf(who, sizeof who, "kernel '%s'", dev->last_kernel);
    else
        snprintf(who, sizeof who, "queued work");
    snprintf(dev->reset_after, sizeof dev->reset_after, "%s faulted", who);
    ofl_fail(err, OFL_ERR_DEVICE, "%s failed on %s: %s (%s, %d), reported by %s%s", who,
             dev->info.filter, text ? text : "a device fault", name ? name : "CUDA error", rc, call,
             dev->last_kernel[0] ? " (it is the last kernel launched there)." : ".");
    /* the context is unusable after such a fault; reset() below says whether
     * it could be made anew or the process must restart */
    if (rc == CUDA_ERROR_ILLEGAL_ADDRESS || rc == CUDA_ERROR_MISALIGNED_ADDRESS)
        ofl_append(err, " An index out of range is the usual cause: "
                        "@offload.kernel(boundscheck=True) or %%%%offload --boundscheck finds it.");
    return OFL_ERR_DEVICE;
}

/* With the lock held (a fault resets the context), except where said. */
int ofl_cuda_fail(ofl_error *err, ofl_device *dev, const char *call, CUresult rc) {
    if (is_fault(rc)) return kernel_fault(err, dev, call, rc);
    char e[256];
    return ofl_fail(err, rc == CUDA_ERROR_OUT_OF_MEMORY ? OFL_ERR_OUT_OF_MEMORY : OFL_ERR_DEVICE,
                    "%s (%s): %s failed with %s", dev->info.filter, dev->info.name, call,
                    ofl_cuda_strerror(rc, e, sizeof e));
}

static void pop(void) {
    CUcontext ctx;
    ofl_cu.cuCtxPopCurrent(&ctx);
}

static int lost_fail(ofl_error *err, const ofl_device *dev);
static void reset(ofl_device *dev, ofl_error *err);

/* Pushes the device's context; with the lock held. */
static int enter(ofl_device *dev, ofl_error *err) {
    if (dev->h.cu.lost) return lost_fail(err, dev);
    CUresult rc = ofl_cu.cuCtxPushCurrent(dev->h.cu.ctx);
    if (rc == CUDA_SUCCESS) return 0;
    int st = ofl_cuda_fail(err, dev, "cuCtxPushCurrent", rc);
    if (dev->h.cu.fault) reset(dev, err); /* no leave() follows */
    return st;
}

/* Pops the context; after a kernel's fault, resets it. Returns st. */
static int leave(ofl_device *dev, int st, ofl_error *err) {
    pop();
    if (dev->h.cu.fault) reset(dev, err);
    return st;
}

/* Runs the stream to completion and reports call's failure, else the
 * stream's (which may be an earlier launch's). Inside enter/leave. */
static int finish(ofl_device *dev, const char *call, CUresult rc, ofl_error *err) {
    if (rc != CUDA_SUCCESS) return ofl_cuda_fail(err, dev, call, rc);
    rc = ofl_cu.cuStreamSynchronize(dev->h.cu.stream);
    return rc ? ofl_cuda_fail(err, dev, "cuStreamSynchronize", rc) : 0;
}

/* The cancel flag (ofl_runtime.h): mapped host memory, which kernels read
 * with volatile loads (every so many loop iterations: each read crosses the
 * bus) and the host writes while they run. In the context, so made again
 * after a reset (the old memory went with the old context). Without it,
 * dev->cancel_word stays NULL and the flag a zeroed word of device memory
 * that nothing sets: an interrupt then returns control, the kernel runs on. */
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
static void open_cancel(ofl_device *dev) {
    static const int zero[16];
    ofl_buffer *buf = ofl_cancel_buffer(dev);
    void *host = NULL;
    CUdeviceptr p = 0;
    dev->cancel_word = NULL;
    if (!buf) return;
    if (ofl_cu.cuMemHostAlloc && ofl_cu.cuMemHostGetDevicePointer &&
        ofl_cu.cuMemHostAlloc(&host, sizeof zero, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS &&
        ofl_cu.cuMemHostGetDevicePointer(&p, host, 0) == CUDA_SUCCESS) {
        memset(host, 0, sizeof zero);
        dev->cancel_word = host;
    } else if (ofl_cu.cuMemAlloc(&p, sizeof zero) != CUDA_SUCCESS ||
               ofl_cu.cuMemcpyHtoDAsync(p, zero, sizeof zero, dev->h.cu.stream) != CUDA_SUCCESS ||
               ofl_cu.cuStreamSynchronize(dev->h.cu.stream) != CUDA_SUCCESS) {
        p = 0; /* launches of kernels that need the flag fail, saying so */
    }
    buf->h.ptr = p;
    if (!p) dev->cancel = NULL, free(buf);
}

/* Retains the primary context and makes the stream; also after a reset.
 * *call: the call that failed. */
static CUresult open_ctx(ofl_device *dev, const char **call) {
    *call = "cuDevicePrimaryCtxRetain";
    CUresult rc = ofl_cu.cuDevicePrimaryCtxRetain(&dev->h.cu.ctx, dev->h.cu.dev);
    if (rc == CUDA_SUCCESS) {
        *call = "cuCtxPushCurrent";
        rc = ofl_cu.cuCtxPushCurrent(dev->h.cu.ctx);
        if (rc == CUDA_SUCCESS) {
            *call = "cuStreamCreate";
            rc = ofl_cu.cuStreamCreate(&dev->h.cu.stream, CU_STREAM_DEFAULT);
            if (rc == CUDA_SUCCESS) open_cancel(dev);
            pop();
        }
    }
    /* the primary context stays retained: devices live until exit */
    return rc;
}

static int cu_open(ofl_device *dev, ofl_error *err) {
    const char *call;
    CUresult rc = open_ctx(dev, &call);
    if (rc == CUDA_SUCCESS) {
        ofl_cuda_compiler_start(dev);
        return 0;
    }
    char e[256];
    return ofl_fail(err, OFL_ERR_DEVICE, "%s (%s): %s failed with %s", dev->info.filter,
                    dev->info.name, call, ofl_cuda_strerror(rc, e, sizeof e));
}

/* What every call on a lost device says. */
static int lost_fail(ofl_error *err, const ofl_device *dev) {
    const char *name = NULL;
    if (ofl_cu.cuGetErrorName) ofl_cu.cuGetErrorName(dev->h.cu.lost, &name);
    return ofl_fail(err, OFL_ERR_DEVICE,
                    "%s (%s) cannot be used again in this process since %s (%s): the CUDA "
                    "driver keeps such a fault for the life of the process; restart the "
                    "Jupyter kernel (or Python) to use the GPU again",
                    dev->info.filter, dev->info.name,
                    dev->reset_after[0] ? dev->reset_after : "a kernel faulted",
                    name ? name : "a sticky CUDA error");
}

/* After a kernel's fault the context is unusable for good (every call
 * returns the fault), so it is destroyed and made anew, as cudaDeviceReset
 * does. Everything made in it goes with it: the stream, the staging memory
 * and events (forgotten here, remade at their next use), and the caller's
 * buffers, programs and events, which the new generation marks stale.
 *
 * Recent drivers (580, CUDA 13, on an H100) keep the fault for the whole
 * process instead: the reset succeeds but the new context's first call
 * returns the fault again. Then the device is lost -- every later call fails
 * at once with lost_fail -- and the user must restart the process.
 * With the lock held and the context popped. */
static void reset(ofl_device *dev, ofl_error *err) {
    CUresult fault = dev->h.cu.fault;
    dev->h.cu.fault = CUDA_SUCCESS;
    pthread_rwlock_wrlock(&dev->h.cu.gate); /* no event call inside the old context */
    dev->h.cu.stream = NULL;
    dev->h.cu.peers_asked = 0;
    for (int k = 0; k < 2; k++) dev->h.cu.stage[k] = NULL, dev->h.cu.staged[k] = NULL;
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    bool was_reset = false;
    const char *call = "cuDevicePrimaryCtxReset";
    if (ofl_cu.cuDevicePrimaryCtxRelease && ofl_cu.cuDevicePrimaryCtxReset) {
        ofl_cu.cuDevicePrimaryCtxRelease(dev->h.cu.dev); /* the retain of cu_open */
        rc = ofl_cu.cuDevicePrimaryCtxReset(dev->h.cu.dev);
        was_reset = rc == CUDA_SUCCESS;
        if (was_reset) rc = open_ctx(dev, &call);
    }
    __atomic_add_fetch(&dev->generation, 1, __ATOMIC_RELEASE);
    if (rc == CUDA_SUCCESS) {
        dev->opened = true;
        pthread_rwlock_unlock(&dev->h.cu.gate);
        ofl_append(err,
                   " The context of %s was reset to recover: its arrays and compiled "
                   "kernels are lost (should the GPU fail again, restart the Jupyter "
                   "kernel).",
                   dev->info.filter);
        return;
    }
    if (!was_reset || rc == fault || is_fault(rc)) {
        /* opened stays true: enter() refuses at once, and nothing reopens */
        dev->h.cu.lost = fault;
        dev->lost = true;
        pthread_rwlock_unlock(&dev->h.cu.gate);
        ofl_append(err,
                   " The CUDA driver keeps this fault for the life of the process: %s "
                   "cannot be used again, and its arrays are lost; restart the Jupyter "
                   "kernel (or Python) to use the GPU again.",
                   dev->info.filter);
        return;
    }
    /* something else (no memory for the context?): the next call tries again */
    dev->opened = false;
    pthread_rwlock_unlock(&dev->h.cu.gate);
    char e[256];
    ofl_append(err,
               " Its context was reset, but making it anew failed (%s: %s); its arrays "
               "are lost.",
               call, ofl_cuda_strerror(rc, e, sizeof e));
}

/* The device's memory pool, when the driver has stream-ordered allocation:
 * array operations make and drop a temporary per expression, and
 * cuMemAlloc/cuMemFree would cost a synchronisation and a trip to the
 * driver's allocator for each (CuPy keeps a pool for the same reason). The
 * pool keeps what is freed (release threshold: never), and memory freed on
 * the stream is reused by later work on the same stream in order. */
static CUmemoryPool pool_of(ofl_device *dev) {
    CUmemoryPool pool = NULL;
    if (!ofl_cu.cuMemAllocAsync || !ofl_cu.cuMemFreeAsync || !ofl_cu.cuDeviceGetDefaultMemPool ||
        !ofl_cu.cuMemPoolSetAttribute || !ofl_cu.cuMemPoolTrimTo ||
        ofl_cu.cuDeviceGetDefaultMemPool(&pool, dev->h.cu.dev) != CUDA_SUCCESS)
        return NULL;
    unsigned long long keep_all = ~0ull;
    return ofl_cu.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all) ==
                   CUDA_SUCCESS
               ? pool
               : NULL;
}

static CUresult alloc_from_pool(ofl_device *dev, CUmemoryPool pool, CUdeviceptr *ptr,
                                size_t bytes) {
    CUresult rc = ofl_cu.cuMemAllocAsync(ptr, bytes, dev->h.cu.stream);
    if (rc != CUDA_ERROR_OUT_OF_MEMORY) return rc;
    /* what the pool keeps may be what is missing: hand it back and try once more */
    if ((rc = ofl_cu.cuStreamSynchronize(dev->h.cu.stream)) != CUDA_SUCCESS) return rc;
    ofl_cu.cuMemPoolTrimTo(pool, 0);
    return ofl_cu.cuMemAllocAsync(ptr, bytes, dev->h.cu.stream);
}

static int cu_alloc(ofl_device *dev, size_t bytes, ofl_buffer *buf, ofl_error *err) {
    int st = enter(dev, err);
    if (st) return st;
    CUmemoryPool pool = pool_of(dev);
    CUresult rc = pool ? alloc_from_pool(dev, pool, &buf->h.ptr, bytes)
                       : ofl_cu.cuMemAlloc(&buf->h.ptr, bytes);
    buf->queue_ordered = pool != NULL;
    size_t avail = 0, total = 0;
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        char want[32], fr[32], tot[32];
        ofl_cu.cuMemGetInfo(&avail, &total);
        st = ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "cannot allocate %s on %s (%s): %s free of %s",
                      ofl_size_str(bytes, want, sizeof want), dev->info.filter, dev->info.name,
                      ofl_size_str(avail, fr, sizeof fr), ofl_size_str(total, tot, sizeof tot));
    } else if (rc != CUDA_SUCCESS) {
        st = ofl_cuda_fail(err, dev, pool ? "cuMemAllocAsync" : "cuMemAlloc", rc);
    }
    return leave(dev, st, err);
}

int ofl_cuda_scratch(ofl_device *dev, size_t bytes, CUdeviceptr *out, ofl_error *err) {
    CUmemoryPool pool = pool_of(dev);
    CUresult rc = pool ? alloc_from_pool(dev, pool, out, bytes ? bytes : 1)
                       : ofl_cu.cuMemAlloc(out, bytes ? bytes : 1);
    return rc ? ofl_cuda_fail(err, dev, pool ? "cuMemAllocAsync" : "cuMemAlloc", rc) : 0;
}

void ofl_cuda_scratch_free(ofl_device *dev, CUdeviceptr p) {
    if (!p) return;
    if (pool_of(dev)) {
        ofl_cu.cuMemFreeAsync(p, dev->h.cu.stream);
    } else { /* cuMemFree does not wait for the stream */
        ofl_cu.cuStreamSynchronize(dev->h.cu.stream);
        ofl_cu.cuMemFree(p);
    }
}

int ofl_cuda_call(ofl_device *dev, int (*fn)(ofl_device *, void *, ofl_error *), void *arg,
                  ofl_error *err) {
    int st = ofl_device_lock(dev, err);
    if (st) return st;
    if (!(st = enter(dev, err))) st = leave(dev, fn(dev, arg, err), err);
    ofl_device_unlock(dev);
    return st;
}

static void cu_free(ofl_buffer *buf) {
    if (enter(buf->dev, NULL)) return;
    CUresult rc = buf->queue_ordered ? ofl_cu.cuMemFreeAsync(buf->h.ptr, buf->dev->h.cu.stream)
                                     : ofl_cu.cuMemFree(buf->h.ptr);
    if (is_fault(rc))
        kernel_fault(NULL, buf->dev, buf->queue_ordered ? "cuMemFreeAsync" : "cuMemFree", rc);
    leave(buf->dev, 0, NULL);
}

/* Large copies between the device and pageable memory. The driver stages
 * them through its own pinned buffers with one thread's memcpy (7.7 GB/s for
 * 1 GiB up on an H100 VM, where CuPy's pinned pool reaches 9.8). Here several
 * threads fill one pinned chunk while the DMA drains the other: 20 GB/s
 * (bench/bench_transfers.py measures it). */
#define STAGE_MIN ((size_t)32 << 20)
#define STAGE_CHUNK ((size_t)16 << 20)
#define STAGE_THREADS 4

typedef struct {
    char *dst;
    const char *src;
    size_t n;
} slice;

static void *copy_slice(void *arg) {
    slice *s = arg;
    memcpy(s->dst, s->src, s->n);
    return NULL;
}

/* One core cannot saturate host memory bandwidth; the helpers take no signals. */
static void parallel_memcpy(char *dst, const char *src, size_t n) {
    slice part[STAGE_THREADS];
    pthread_t tid[STAGE_THREADS];
    bool started[STAGE_THREADS] = {false};
    size_t per = ((n + STAGE_THREADS - 1) / STAGE_THREADS + 4095) & ~(size_t)4095;
    for (int t = 0; t < STAGE_THREADS; t++) {
        size_t at = per * (size_t)t < n ? per * (size_t)t : n;
        part[t] = (slice){dst + at, src + at, n - at < per ? n - at : per};
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (int t = 1; t < STAGE_THREADS; t++)
        started[t] = part[t].n && pthread_create(&tid[t], NULL, copy_slice, &part[t]) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (int t = 0; t < STAGE_THREADS; t++)
        if (!started[t]) copy_slice(&part[t]);
    for (int t = 1; t < STAGE_THREADS; t++)
        if (started[t]) pthread_join(tid[t], NULL);
}

static bool have_staging(ofl_device *dev) {
    if (dev->h.cu.staged[1]) return true;
    if (!ofl_cu.cuMemHostAlloc) return false;
    for (int k = 0; k < 2; k++) {
        if (!dev->h.cu.stage[k] && ofl_cu.cuMemHostAlloc(&dev->h.cu.stage[k], STAGE_CHUNK, 0))
            return false; /* no pinned memory to spare: the driver's own path it is */
        if (!dev->h.cu.staged[k] && ofl_cu.cuEventCreate(&dev->h.cu.staged[k], CU_EVENT_DEFAULT))
            return false;
    }
    return true;
}

static CUresult staged_upload(ofl_device *dev, CUdeviceptr dst, const char *src, size_t n) {
    bool used[2] = {false, false};
    CUresult rc = CUDA_SUCCESS;
    for (size_t off = 0, k = 0; rc == CUDA_SUCCESS && off < n; off += STAGE_CHUNK, k ^= 1) {
        size_t len = n - off < STAGE_CHUNK ? n - off : STAGE_CHUNK;
        if (used[k] && (rc = ofl_cu.cuEventSynchronize(dev->h.cu.staged[k]))) break;
        parallel_memcpy(dev->h.cu.stage[k], src + off, len);
        rc = ofl_cu.cuMemcpyHtoDAsync(dst + off, dev->h.cu.stage[k], len, dev->h.cu.stream);
        if (rc == CUDA_SUCCESS) rc = ofl_cu.cuEventRecord(dev->h.cu.staged[k], dev->h.cu.stream);
        used[k] = true;
    }
    return rc;
}

static int cu_write(ofl_buffer *dst, size_t off, const void *src, size_t n, ofl_error *err) {
    ofl_device *dev = dst->dev;
    int st = enter(dev, err);
    if (st) return st;
    CUresult rc = n >= STAGE_MIN && have_staging(dev)
                      ? staged_upload(dev, dst->h.ptr + off, src, n)
                      : ofl_cu.cuMemcpyHtoDAsync(dst->h.ptr + off, src, n, dev->h.cu.stream);
    return leave(dev, finish(dev, "cuMemcpyHtoD", rc, err), err);
}

/* Large downloads the same way round: the DMA fills one pinned chunk while
 * threads copy the other out. Into a fresh NumPy array that also spreads its
 * first-touch page faults, which bound a single-threaded copy (3 GB/s). */
static CUresult download_chunk(ofl_device *dev, size_t i, CUdeviceptr src, size_t n) {
    size_t off = i * STAGE_CHUNK, len = n - off < STAGE_CHUNK ? n - off : STAGE_CHUNK;
    CUresult rc =
        ofl_cu.cuMemcpyDtoHAsync(dev->h.cu.stage[i & 1], src + off, len, dev->h.cu.stream);
    return rc ? rc : ofl_cu.cuEventRecord(dev->h.cu.staged[i & 1], dev->h.cu.stream);
}

static CUresult staged_download(ofl_device *dev, char *dst, CUdeviceptr src, size_t n) {
    size_t chunks = (n + STAGE_CHUNK - 1) / STAGE_CHUNK;
    CUresult rc = download_chunk(dev, 0, src, n);
    for (size_t i = 0; rc == CUDA_SUCCESS && i < chunks; i++) {
        /* chunk i+1 reuses the buffer that chunk i-1 was copied out of, already */
        if (i + 1 < chunks && (rc = download_chunk(dev, i + 1, src, n))) break;
        if ((rc = ofl_cu.cuEventSynchronize(dev->h.cu.staged[i & 1]))) break;
        size_t off = i * STAGE_CHUNK, len = n - off < STAGE_CHUNK ? n - off : STAGE_CHUNK;
        parallel_memcpy(dst + off, dev->h.cu.stage[i & 1], len);
    }
    return rc;
}

static int cu_read(ofl_buffer *src, size_t off, void *dst, size_t n, ofl_error *err) {
    ofl_device *dev = src->dev;
    int st = enter(dev, err);
    if (st) return st;
    CUresult rc = n >= STAGE_MIN && have_staging(dev)
                      ? staged_download(dev, dst, src->h.ptr + off, n)
                      : ofl_cu.cuMemcpyDtoHAsync(dst, src->h.ptr + off, n, dev->h.cu.stream);
    return leave(dev, finish(dev, "cuMemcpyDtoH", rc, err), err);
}

static int cu_copy(ofl_buffer *dst, size_t doff, ofl_buffer *src, size_t soff, size_t n,
                   ofl_error *err) {
    ofl_device *dev = dst->dev;
    int st = enter(dev, err);
    if (st) return st;
    CUresult rc =
        ofl_cu.cuMemcpyDtoDAsync(dst->h.ptr + doff, src->h.ptr + soff, n, dev->h.cu.stream);
    return leave(dev, finish(dev, "cuMemcpyDtoD", rc, err), err);
}

static CUmemoryPool pool_of(ofl_device *dev);

/* Asks once per pair (and per context) for direct access to the peer's
 * memory, which turns the driver's copy through the host into one over
 * NVLink or PCIe; in dst's context. Two grants: the context's, for memory
 * from cuMemAlloc, and the peer's pool's, without which its stream-ordered
 * memory stays out of reach (measured on two H100s: 37 GB/s staged against
 * ~380 over NVLink). A pair that cannot, or a refusal, leaves the staged
 * copy, which still works. */
static void reach_peer(ofl_device *dev, ofl_device *peer) {
    int ord = peer->h.cu.dev, can = 0;
    if (ord < 0 || ord >= 64 || (dev->h.cu.peers_asked >> ord & 1) ||
        !ofl_cu.cuDeviceCanAccessPeer || !ofl_cu.cuCtxEnablePeerAccess)
        return;
    dev->h.cu.peers_asked |= UINT64_C(1) << ord;
    if (ofl_cu.cuDeviceCanAccessPeer(&can, dev->h.cu.dev, peer->h.cu.dev) != CUDA_SUCCESS || !can)
        return;
    CUresult rc = ofl_cu.cuCtxEnablePeerAccess(peer->h.cu.ctx, 0);
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return;
    CUmemoryPool pool = pool_of(peer);
    CUmemAccessDesc grant = {{CU_MEM_LOCATION_TYPE_DEVICE, dev->h.cu.dev},
                             CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if (pool && ofl_cu.cuMemPoolSetAccess) ofl_cu.cuMemPoolSetAccess(pool, &grant, 1);
}

/* On dst's stream, after its earlier work; src's queue was drained first
 * (ofl_copy), and the wait here keeps src's memory untouched until the copy
 * is done -- src's own stream knows nothing of it. */
static int cu_copy_peer(ofl_buffer *dst, size_t doff, ofl_buffer *src, size_t soff, size_t n,
                        ofl_error *err) {
    ofl_device *dev = dst->dev;
    int st = enter(dev, err);
    if (st) return st;
    reach_peer(dev, src->dev);
    CUresult rc = ofl_cu.cuMemcpyPeerAsync(dst->h.ptr + doff, dev->h.cu.ctx, src->h.ptr + soff,
                                           src->dev->h.cu.ctx, n, dev->h.cu.stream);
    return leave(dev, finish(dev, "cuMemcpyPeerAsync", rc, err), err);
}

static int cu_synchronize(ofl_device *dev, ofl_error *err) {
    int st = enter(dev, err);
    if (st) return st;
    return leave(dev, finish(dev, "cuStreamSynchronize", CUDA_SUCCESS, err), err);
}

/* ---- events ---- */

static int cu_mark(ofl_event *ev, bool end, ofl_error *err) {
    ofl_device *dev = ev->dev;
    CUevent *e = end ? &ev->h.cu.end : &ev->h.cu.start;
    int st = enter(dev, err);
    if (st) return st;
    CUresult rc = *e ? CUDA_SUCCESS : ofl_cu.cuEventCreate(e, CU_EVENT_DEFAULT);
    const char *call = "cuEventCreate";
    if (rc == CUDA_SUCCESS) rc = ofl_cu.cuEventRecord(*e, dev->h.cu.stream), call = "cuEventRecord";
    return leave(dev, rc ? ofl_cuda_fail(err, dev, call, rc) : 0, err);
}

/* The event calls below run without the device's lock (a wait may be long),
 * inside the gate instead, so that no reset destroys the context under them;
 * an event of an older context is never touched: its handles died with it.
 * True: inside the event's context (gate_leave after). */
static bool gate_enter(const ofl_event *ev, CUresult *rc) {
    ofl_device *dev = ev->dev;
    pthread_rwlock_rdlock(&dev->h.cu.gate);
    *rc = CUDA_SUCCESS;
    if (ev->generation == dev->generation &&
        (*rc = ofl_cu.cuCtxPushCurrent(dev->h.cu.ctx)) == CUDA_SUCCESS)
        return true;
    pthread_rwlock_unlock(&dev->h.cu.gate);
    return false;
}

static void gate_leave(const ofl_event *ev) {
    pop();
    pthread_rwlock_unlock(&ev->dev->h.cu.gate);
}

static int cu_event_wait(ofl_event *ev, ofl_error *err) {
    ofl_device *dev = ev->dev;
    CUevent e = ev->h.cu.end ? ev->h.cu.end : ev->h.cu.start;
    if (!e) return 0;
    CUresult rc;
    const char *call = "cuCtxPushCurrent";
    if (gate_enter(ev, &rc)) {
        call = "cuEventSynchronize";
        rc = ofl_cu.cuEventSynchronize(e);
        gate_leave(ev);
        if (rc == CUDA_SUCCESS) return 0;
    }
    /* explained, and a fault recovered from, under the lock -- unless another
     * thread saw the fault first and has reset the context already */
    pthread_mutex_lock(&dev->lock);
    int st;
    if (ev->generation != dev->generation) {
        st = ofl_stale_fail(err, dev, "this event was recorded", "the work it followed is lost");
    } else {
        st = ofl_cuda_fail(err, dev, call, rc);
        if (dev->h.cu.fault) reset(dev, err);
    }
    pthread_mutex_unlock(&dev->lock);
    return st;
}

/* Without blocking; a driver without the query calls says done (the
 * blocking wait after it then waits, uninterruptibly, as before). */
static int cu_poll(ofl_device *dev, ofl_event *ev, bool *done, ofl_error *err) {
    CUresult rc;
    *done = true;
    if (ev) { /* without the lock, inside the gate, as the event calls */
        CUevent e = ev->h.cu.end ? ev->h.cu.end : ev->h.cu.start;
        if (!e || !ofl_cu.cuEventQuery || !gate_enter(ev, &rc)) return 0;
        rc = ofl_cu.cuEventQuery(e);
        gate_leave(ev);
        *done = rc != CUDA_ERROR_NOT_READY; /* a failure: event_wait reports it */
        return 0;
    }
    if (!ofl_cu.cuStreamQuery) return 0;
    int st = enter(dev, err);
    if (st) return st;
    rc = ofl_cu.cuStreamQuery(dev->h.cu.stream);
    *done = rc != CUDA_ERROR_NOT_READY;
    st = rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_READY
             ? 0
             : ofl_cuda_fail(err, dev, "cuStreamQuery", rc);
    return leave(dev, st, err);
}

static double cu_event_elapsed(ofl_event *ev) {
    float ms = 0;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (!ev->h.cu.start || !ev->h.cu.end || !gate_enter(ev, &rc)) return -1.0;
    rc = ofl_cu.cuEventElapsedTime(&ms, ev->h.cu.start, ev->h.cu.end);
    gate_leave(ev);
    return rc == CUDA_SUCCESS ? ms * 1e-3 : -1.0;
}

static void cu_event_release(ofl_event *ev) {
    CUresult rc;
    if ((ev->h.cu.start || ev->h.cu.end) && gate_enter(ev, &rc)) {
        if (ev->h.cu.start) ofl_cu.cuEventDestroy(ev->h.cu.start);
        if (ev->h.cu.end) ofl_cu.cuEventDestroy(ev->h.cu.end);
        gate_leave(ev);
    }
    ev->h.cu.start = ev->h.cu.end = NULL;
}

/* ---- programs and launches ---- */

/* Each parameter's size, so that a launch can refuse arguments the driver
 * would read past. Only a count that ends in CUDA_ERROR_INVALID_VALUE (the
 * index past the last) is trusted. Inside enter/leave. */
static void param_sizes(ofl_program *prog, CUfunction fn) {
    size_t n = 0, off, size;
    CUresult rc;
    while ((rc = ofl_cu.cuFuncGetParamInfo(fn, n, &off, &size)) == CUDA_SUCCESS && n < 65536) n++;
    if (rc != CUDA_ERROR_INVALID_VALUE) return;
    size_t *sizes = malloc((n ? n : 1) * sizeof *sizes);
    if (!sizes) return; /* then launches go unchecked, as on older drivers */
    for (size_t i = 0; i < n; i++) {
        if (ofl_cu.cuFuncGetParamInfo(fn, i, &off, &sizes[i]) != CUDA_SUCCESS) {
            free(sizes);
            return;
        }
    }
    prog->param_size = sizes;
    prog->nparams = (long)n;
}

/* Takes prog from the tuner and unloads its full build, if it has one: a
 * library, which needs no context and outlives a reset. */
static void drop_tuned(ofl_program *prog) {
    ofl_cuda_forget(prog);
    if (prog->h.cu.tuned_lib) ofl_cu.cuLibraryUnload(prog->h.cu.tuned_lib);
}

/* Inside enter/leave. */
static int load_module(ofl_program *prog, const char *image, ofl_error *err) {
    ofl_device *dev = prog->dev;
    char log[8192] = "";
    CUmodule mod = NULL;
    const char *call = ofl_cu.cuModuleLoadDataEx ? "cuModuleLoadDataEx" : "cuModuleLoadData";
    CUresult rc = ofl_cuda_load_ptx(prog, &mod, image, log, sizeof log);
    if (rc != CUDA_SUCCESS) {
        if (is_fault(rc)) return kernel_fault(err, dev, call, rc);
        char e[256];
        int code =
            ofl_fail(err, rc == CUDA_ERROR_OUT_OF_MEMORY ? OFL_ERR_OUT_OF_MEMORY : OFL_ERR_DEVICE,
                     "cannot build kernel '%s' for %s (%s): %s failed with %s", prog->name,
                     dev->info.filter, dev->info.name, call, ofl_cuda_strerror(rc, e, sizeof e));
        log[sizeof log - 1] = '\0';
        if (ofl_cu.cuModuleLoadDataEx) ofl_append_log(err, "; the PTX compiler says:\n", log);
        return code;
    }
    CUfunction fn = NULL;
    rc = ofl_cu.cuModuleGetFunction(&fn, mod, prog->name);
    if (rc != CUDA_SUCCESS) {
        ofl_cu.cuModuleUnload(mod);
        drop_tuned(prog); /* the build fails: no release follows */
        if (rc == CUDA_ERROR_NOT_FOUND)
            return ofl_fail(err, OFL_ERR_INVALID,
                            "no kernel named '%s' in the PTX module built for %s (%s): the name "
                            "must be one of the module's .entry functions",
                            prog->name, dev->info.filter, dev->info.name);
        return ofl_cuda_fail(err, dev, "cuModuleGetFunction", rc);
    }
    int most = 0;
    if (!ofl_cu.cuFuncGetAttribute ||
        ofl_cu.cuFuncGetAttribute(&most, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn) != 0 ||
        most <= 0)
        most = (int)dev->info.max_work_group_size;
    prog->max_threads = (size_t)most;
    if (ofl_cu.cuFuncGetParamInfo) param_sizes(prog, fn);
    prog->h.cu.module = mod;
    prog->h.cu.fn = fn;
    return 0;
}

static int cu_build(ofl_program *prog, ofl_binary_kind kind, const void *bin, size_t size,
                    ofl_error *err) {
    (void)kind; /* PTX: ofl_program_build checked */
    ofl_device *dev = prog->dev;
    if (!ofl_cu.cuModuleGetFunction || !ofl_cu.cuModuleUnload || !ofl_cu.cuLaunchKernel ||
        (!ofl_cu.cuModuleLoadDataEx && !ofl_cu.cuModuleLoadData))
        return ofl_fail(err, OFL_ERR_DEVICE,
                        "%s (%s): this CUDA driver lacks cuModuleLoadData, cuModuleGetFunction "
                        "or cuLaunchKernel; update the NVIDIA driver",
                        dev->info.filter, dev->info.name);
    /* the driver reads PTX text up to its '\0' */
    const char *image = bin;
    char *copy = NULL;
    if (image[size - 1] != '\0') {
        if (!(copy = malloc(size + 1)))
            return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory for PTX text");
        memcpy(copy, bin, size);
        copy[size] = '\0';
        image = copy;
    }
    /* under the lock, unlike OpenCL's build: a reset must not destroy the
     * context while the module loads into it */
    int st = ofl_device_lock(dev, err);
    if (st == 0) {
        prog->generation = dev->generation;
        if ((st = enter(dev, err)) == 0) st = leave(dev, load_module(prog, image, err), err);
        ofl_device_unlock(dev);
    }
    free(copy);
    return st;
}

static void cu_program_release(ofl_program *prog) {
    ofl_device *dev = prog->dev;
    if (prog->h.cu.module && prog->generation == dev->generation && dev->opened &&
        enter(dev, NULL) == 0) {
        /* launches of it may still be queued */
        CUresult rc = ofl_cu.cuStreamSynchronize(dev->h.cu.stream);
        if (rc == CUDA_SUCCESS)
            ofl_cu.cuModuleUnload(prog->h.cu.module);
        else
            ofl_cuda_fail(NULL, dev, "cuStreamSynchronize", rc); /* a fault: the reset frees it */
        leave(dev, 0, NULL);
    }
    drop_tuned(prog); /* its launches are over, or died with the context */
}

static int launch_fail(ofl_error *err, ofl_program *prog, const char *call, CUresult rc) {
    ofl_device *dev = prog->dev;
    if (is_fault(rc)) return kernel_fault(err, dev, call, rc); /* an earlier kernel's */
    char e[256];
    return ofl_fail(err, OFL_ERR_DEVICE,
                    "cannot launch kernel '%s' on %s (%s): %s failed with %s%s", prog->name,
                    dev->info.filter, dev->info.name, call, ofl_cuda_strerror(rc, e, sizeof e),
                    rc == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
                        ? " (a work-group too large for the registers the kernel uses, or "
                          "arguments of the wrong size)"
                        : "");
}

/* The tuner's build once there is one, unless the work-group is too large
 * for it (it may use more registers than the quick one). */
static CUfunction launch_fn(const ofl_program *prog, const size_t l[3]) {
    CUfunction tuned = __atomic_load_n(&prog->h.cu.tuned_fn, __ATOMIC_ACQUIRE);
    return tuned && l[0] * l[1] * l[2] <= prog->h.cu.tuned_max ? tuned : prog->h.cu.fn;
}

/* Up to this many arguments, a launch allocates nothing. */
#define ARGS_ON_STACK 64

static int cu_launch(ofl_program *prog, unsigned ndim, const size_t g[3], const size_t l[3],
                     const ofl_arg *args, size_t nargs, ofl_event *ev, ofl_error *err) {
    (void)ndim; /* unused dimensions are 1 */
    ofl_device *dev = prog->dev;
    void *params_here[ARGS_ON_STACK], *heap = NULL;
    CUdeviceptr ptrs_here[ARGS_ON_STACK];
    void **params = params_here;
    CUdeviceptr *ptrs = ptrs_here;
    if (nargs > ARGS_ON_STACK) {
        if (!(heap = malloc(nargs * (sizeof *params + sizeof *ptrs))))
            return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory for %zu arguments",
                            nargs);
        params = heap;
        ptrs = (CUdeviceptr *)(params + nargs);
    }
    /* the driver wants a pointer to each argument's value */
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].buffer) {
            ptrs[i] = args[i].buffer->h.ptr;
            params[i] = &ptrs[i];
        } else {
            params[i] = (void *)args[i].value;
        }
    }
    int st = enter(dev, err);
    if (st == 0) {
        CUstream s = dev->h.cu.stream;
        CUresult rc = CUDA_SUCCESS;
        const char *call = "cuEventCreate";
        if (ev) {
            if (!ev->h.cu.start) rc = ofl_cu.cuEventCreate(&ev->h.cu.start, CU_EVENT_DEFAULT);
            if (!rc && !ev->h.cu.end) rc = ofl_cu.cuEventCreate(&ev->h.cu.end, CU_EVENT_DEFAULT);
            if (!rc) call = "cuEventRecord", rc = ofl_cu.cuEventRecord(ev->h.cu.start, s);
        }
        if (!rc) {
            call = "cuLaunchKernel";
            rc = ofl_cu.cuLaunchKernel(launch_fn(prog, l), (unsigned)(g[0] / l[0]),
                                       (unsigned)(g[1] / l[1]), (unsigned)(g[2] / l[2]),
                                       (unsigned)l[0], (unsigned)l[1], (unsigned)l[2], 0, s, params,
                                       NULL);
        }
        if (!rc && ev) call = "cuEventRecord", rc = ofl_cu.cuEventRecord(ev->h.cu.end, s);
        if (rc) st = launch_fail(err, prog, call, rc);
        st = leave(dev, st, err);
    }
    free(heap);
    return st;
}

const ofl_backend_ops ofl_cuda_ops = {
    "cuda",
    cu_open,
    cu_alloc,
    cu_free,
    cu_write,
    cu_read,
    cu_copy,
    cu_synchronize,
    cu_mark,
    cu_event_wait,
    cu_poll,
    cu_event_elapsed,
    cu_event_release,
    cu_build,
    cu_program_release,
    cu_launch,
    NULL,
    NULL, /* no host memory in place */
    NULL,
    NULL,
    cu_copy_peer,
    NULL, /* the driver's own threads: a wait has nothing to lend */
};
