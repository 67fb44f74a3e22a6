/* ofl_cuda: the CUDA backend, through the driver API opened with dlopen at
 * first discovery, so that offload builds and runs where no NVIDIA driver is
 * (then there are simply no CUDA devices). Each device uses its primary
 * context -- the one the CUDA runtime, CuPy and Numba share -- pushed onto
 * the calling thread around every call and popped after, since the kernel's
 * main thread and user threads all come here and may have their own current
 * context. One stream per device, in order; copies are queued on it and
 * waited for, so they order with launches on the same stream. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_backend.h"

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
#define SYM(field, ...) {offsetof(ofl_cuda_api, field), {__VA_ARGS__}, false}
#define OPT(field, ...) {offsetof(ofl_cuda_api, field), {__VA_ARGS__}, true}
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
    SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    SYM(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    SYM(cuEventCreate, "cuEventCreate"),
    SYM(cuEventRecord, "cuEventRecord"),
    SYM(cuEventSynchronize, "cuEventSynchronize"),
    SYM(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
    SYM(cuEventDestroy, "cuEventDestroy_v2"),
    OPT(cuModuleLoadData, "cuModuleLoadData"),
    OPT(cuModuleUnload, "cuModuleUnload"),
    OPT(cuModuleGetFunction, "cuModuleGetFunction"),
    OPT(cuFuncGetAttribute, "cuFuncGetAttribute"),
    OPT(cuLaunchKernel, "cuLaunchKernel"),
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
            snprintf(load_why, sizeof load_why,
                     "the CUDA driver is too old: libcuda.so.1 lacks %s", symbols[i].names[0]);
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

/* ---- discovery ---- */

static int attr(CUdevice d, int which) {
    int v = 0;
    return ofl_cu.cuDeviceGetAttribute(&v, which, d) == CUDA_SUCCESS ? v : 0;
}

static ofl_device *describe(CUdevice d, int driver) {
    ofl_device *dev = ofl_device_new(&ofl_cuda_ops);
    if (!dev) return NULL;
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
    in->cuda_cc_major = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    in->cuda_cc_minor = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    snprintf(in->version, sizeof in->version, "CUDA compute capability %d.%d",
             in->cuda_cc_major, in->cuda_cc_minor);
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
    snprintf(in->pci_bus_id, sizeof in->pci_bus_id, "%04x:%02x:%02x.%x",
             (unsigned)dev->pci_domain, dev->pci_bus, dev->pci_dev, dev->pci_fn);
    return dev;
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
    for (int i = 0; i < n; i++) {
        CUdevice d;
        if (ofl_cu.cuDeviceGet(&d, i) != CUDA_SUCCESS) continue;
        ofl_device *dev = describe(d, driver);
        if (dev) ofl_devlist_add(list, dev);
    }
}

/* ---- calls with the device's context current ---- */

static int cu_fail(ofl_error *err, const ofl_device *dev, const char *call, CUresult rc) {
    char e[256];
    return ofl_fail(err, rc == CUDA_ERROR_OUT_OF_MEMORY ? OFL_ERR_OUT_OF_MEMORY : OFL_ERR_DEVICE,
                    "%s (%s): %s failed with %s", dev->info.filter, dev->info.name, call,
                    ofl_cuda_strerror(rc, e, sizeof e));
}

static int enter(const ofl_device *dev, ofl_error *err) {
    CUresult rc = ofl_cu.cuCtxPushCurrent(dev->h.cu.ctx);
    return rc ? cu_fail(err, dev, "cuCtxPushCurrent", rc) : 0;
}

static void leave(void) {
    CUcontext ctx;
    ofl_cu.cuCtxPopCurrent(&ctx);
}

/* Runs the stream to completion and reports call's failure, else the
 * stream's (which may be an earlier launch's). Inside enter/leave. */
static int finish(const ofl_device *dev, const char *call, CUresult rc, ofl_error *err) {
    if (rc != CUDA_SUCCESS) return cu_fail(err, dev, call, rc);
    rc = ofl_cu.cuStreamSynchronize(dev->h.cu.stream);
    return rc ? cu_fail(err, dev, "cuStreamSynchronize", rc) : 0;
}

static int cu_open(ofl_device *dev, ofl_error *err) {
    CUresult rc = ofl_cu.cuDevicePrimaryCtxRetain(&dev->h.cu.ctx, dev->h.cu.dev);
    if (rc) return cu_fail(err, dev, "cuDevicePrimaryCtxRetain", rc);
    int st = enter(dev, err);
    if (st) return st;
    rc = ofl_cu.cuStreamCreate(&dev->h.cu.stream, CU_STREAM_DEFAULT);
    leave();
    /* the primary context stays retained: devices live until exit */
    return rc ? cu_fail(err, dev, "cuStreamCreate", rc) : 0;
}

static int cu_alloc(ofl_device *dev, size_t bytes, ofl_buffer *buf, ofl_error *err) {
    int st = enter(dev, err);
    if (st) return st;
    CUresult rc = ofl_cu.cuMemAlloc(&buf->h.ptr, bytes);
    size_t avail = 0, total = 0;
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) ofl_cu.cuMemGetInfo(&avail, &total);
    leave();
    if (rc == CUDA_SUCCESS) return 0;
    if (rc != CUDA_ERROR_OUT_OF_MEMORY) return cu_fail(err, dev, "cuMemAlloc", rc);
    char want[32], fr[32], tot[32];
    return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "cannot allocate %s on %s (%s): %s free of %s",
                    ofl_size_str(bytes, want, sizeof want), dev->info.filter, dev->info.name,
                    ofl_size_str(avail, fr, sizeof fr), ofl_size_str(total, tot, sizeof tot));
}

static void cu_free(ofl_buffer *buf) {
    if (enter(buf->dev, NULL)) return;
    ofl_cu.cuMemFree(buf->h.ptr);
    leave();
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
    st = finish(dev, "cuMemcpyHtoD", rc, err);
    leave();
    return st;
}

/* Large downloads the same way round: the DMA fills one pinned chunk while
 * threads copy the other out. Into a fresh NumPy array that also spreads its
 * first-touch page faults, which bound a single-threaded copy (3 GB/s). */
static CUresult download_chunk(ofl_device *dev, size_t i, CUdeviceptr src, size_t n) {
    size_t off = i * STAGE_CHUNK, len = n - off < STAGE_CHUNK ? n - off : STAGE_CHUNK;
    CUresult rc = ofl_cu.cuMemcpyDtoHAsync(dev->h.cu.stage[i & 1], src + off, len, dev->h.cu.stream);
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
    st = finish(dev, "cuMemcpyDtoH", rc, err);
    leave();
    return st;
}

static int cu_copy(ofl_buffer *dst, size_t doff, ofl_buffer *src, size_t soff, size_t n,
                   ofl_error *err) {
    const ofl_device *dev = dst->dev;
    int st = enter(dev, err);
    if (st) return st;
    CUresult rc =
        ofl_cu.cuMemcpyDtoDAsync(dst->h.ptr + doff, src->h.ptr + soff, n, dev->h.cu.stream);
    st = finish(dev, "cuMemcpyDtoD", rc, err);
    leave();
    return st;
}

static int cu_synchronize(ofl_device *dev, ofl_error *err) {
    int st = enter(dev, err);
    if (st) return st;
    st = finish(dev, "cuStreamSynchronize", CUDA_SUCCESS, err);
    leave();
    return st;
}

/* ---- events ---- */

static int cu_mark(ofl_event *ev, bool end, ofl_error *err) {
    const ofl_device *dev = ev->dev;
    CUevent *e = end ? &ev->h.cu.end : &ev->h.cu.start;
    int st = enter(dev, err);
    if (st) return st;
    CUresult rc = *e ? CUDA_SUCCESS : ofl_cu.cuEventCreate(e, CU_EVENT_DEFAULT);
    const char *call = "cuEventCreate";
    if (rc == CUDA_SUCCESS) rc = ofl_cu.cuEventRecord(*e, dev->h.cu.stream), call = "cuEventRecord";
    leave();
    return rc ? cu_fail(err, dev, call, rc) : 0;
}

static int cu_event_wait(ofl_event *ev, ofl_error *err) {
    CUevent e = ev->h.cu.end ? ev->h.cu.end : ev->h.cu.start;
    if (!e) return 0;
    int st = enter(ev->dev, err);
    if (st) return st;
    CUresult rc = ofl_cu.cuEventSynchronize(e);
    leave();
    return rc ? cu_fail(err, ev->dev, "cuEventSynchronize", rc) : 0;
}

static double cu_event_elapsed(ofl_event *ev) {
    float ms = 0;
    if (!ev->h.cu.start || !ev->h.cu.end || enter(ev->dev, NULL)) return -1.0;
    CUresult rc = ofl_cu.cuEventElapsedTime(&ms, ev->h.cu.start, ev->h.cu.end);
    leave();
    return rc == CUDA_SUCCESS ? ms * 1e-3 : -1.0;
}

static void cu_event_release(ofl_event *ev) {
    if ((!ev->h.cu.start && !ev->h.cu.end) || enter(ev->dev, NULL)) return;
    if (ev->h.cu.start) ofl_cu.cuEventDestroy(ev->h.cu.start);
    if (ev->h.cu.end) ofl_cu.cuEventDestroy(ev->h.cu.end);
    ev->h.cu.start = ev->h.cu.end = NULL;
    leave();
}

const ofl_backend_ops ofl_cuda_ops = {
    "cuda", cu_open, cu_alloc, cu_free, cu_write, cu_read, cu_copy, cu_synchronize,
    cu_mark, cu_event_wait, cu_event_elapsed, cu_event_release,
};
