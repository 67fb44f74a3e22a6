/* ofl_opencl: the OpenCL backend, through the ICD loader -- every platform
 * and device the machine has (PoCL on the CPU, Intel, NVIDIA, ...). One
 * context and one in-order profiling queue per device, made at first use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "offload/ofl_build_key.h"
#include "ofl_backend.h"

/* Extension queries, defined here because older cl_ext.h may lack them. */
#ifndef CL_DEVICE_UUID_KHR
#define CL_DEVICE_UUID_KHR 0x106A
#endif
#ifndef CL_DEVICE_PCI_BUS_INFO_KHR
#define CL_DEVICE_PCI_BUS_INFO_KHR 0x410F
#endif
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#define CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

/* ---- error names ---- */

static const char *cl_error_name(cl_int rc) {
    static const char *names[] = {
        "CL_SUCCESS",
        "CL_DEVICE_NOT_FOUND",
        "CL_DEVICE_NOT_AVAILABLE",
        "CL_COMPILER_NOT_AVAILABLE",
        "CL_MEM_OBJECT_ALLOCATION_FAILURE",
        "CL_OUT_OF_RESOURCES",
        "CL_OUT_OF_HOST_MEMORY",
        "CL_PROFILING_INFO_NOT_AVAILABLE",
        "CL_MEM_COPY_OVERLAP",
        "CL_IMAGE_FORMAT_MISMATCH",
        "CL_IMAGE_FORMAT_NOT_SUPPORTED",
        "CL_BUILD_PROGRAM_FAILURE",
        "CL_MAP_FAILURE",
        "CL_MISALIGNED_SUB_BUFFER_OFFSET",
        "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST",
        "CL_COMPILE_PROGRAM_FAILURE",
        "CL_LINKER_NOT_AVAILABLE",
        "CL_LINK_PROGRAM_FAILURE",
        "CL_DEVICE_PARTITION_FAILED",
        "CL_KERNEL_ARG_INFO_NOT_AVAILABLE", /* 0 .. -19 */
    };
    static const char *invalid[] = {
        "CL_INVALID_VALUE",
        "CL_INVALID_DEVICE_TYPE",
        "CL_INVALID_PLATFORM",
        "CL_INVALID_DEVICE",
        "CL_INVALID_CONTEXT",
        "CL_INVALID_QUEUE_PROPERTIES",
        "CL_INVALID_COMMAND_QUEUE",
        "CL_INVALID_HOST_PTR",
        "CL_INVALID_MEM_OBJECT",
        "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR",
        "CL_INVALID_IMAGE_SIZE",
        "CL_INVALID_SAMPLER",
        "CL_INVALID_BINARY",
        "CL_INVALID_BUILD_OPTIONS",
        "CL_INVALID_PROGRAM",
        "CL_INVALID_PROGRAM_EXECUTABLE",
        "CL_INVALID_KERNEL_NAME",
        "CL_INVALID_KERNEL_DEFINITION",
        "CL_INVALID_KERNEL",
        "CL_INVALID_ARG_INDEX",
        "CL_INVALID_ARG_VALUE",
        "CL_INVALID_ARG_SIZE",
        "CL_INVALID_KERNEL_ARGS",
        "CL_INVALID_WORK_DIMENSION",
        "CL_INVALID_WORK_GROUP_SIZE",
        "CL_INVALID_WORK_ITEM_SIZE",
        "CL_INVALID_GLOBAL_OFFSET",
        "CL_INVALID_EVENT_WAIT_LIST",
        "CL_INVALID_EVENT",
        "CL_INVALID_OPERATION",
        "CL_INVALID_GL_OBJECT",
        "CL_INVALID_BUFFER_SIZE",
        "CL_INVALID_MIP_LEVEL",
        "CL_INVALID_GLOBAL_WORK_SIZE",
        "CL_INVALID_PROPERTY",
        "CL_INVALID_IMAGE_DESCRIPTOR",
        "CL_INVALID_COMPILER_OPTIONS",
        "CL_INVALID_LINKER_OPTIONS",
        "CL_INVALID_DEVICE_PARTITION_COUNT",
        "CL_INVALID_PIPE_SIZE",
        "CL_INVALID_DEVICE_QUEUE",
        "CL_INVALID_SPEC_ID",
        "CL_MAX_SIZE_RESTRICTION_EXCEEDED", /* -30 .. -72 */
    };
    if (rc <= 0 && rc > -(cl_int)(sizeof names / sizeof *names)) return names[-rc];
    if (rc <= -30 && rc > -30 - (cl_int)(sizeof invalid / sizeof *invalid))
        return invalid[-30 - rc];
    if (rc == CL_PLATFORM_NOT_FOUND_KHR) return "CL_PLATFORM_NOT_FOUND_KHR";
    return "an unknown OpenCL error";
}

static bool is_oom(cl_int rc) {
    return rc == CL_MEM_OBJECT_ALLOCATION_FAILURE || rc == CL_OUT_OF_RESOURCES ||
           rc == CL_OUT_OF_HOST_MEMORY || rc == CL_INVALID_BUFFER_SIZE;
}

static int cl_fail(ofl_error *err, const ofl_device *dev, const char *call, cl_int rc) {
    return ofl_fail(err, OFL_ERR_DEVICE, "%s (%s): %s failed with %s (%d)", dev->info.filter,
                    dev->info.name, call, cl_error_name(rc), rc);
}

/* A wait that reports queued work's failure: most likely a kernel's, and
 * the user wrote that, so it is named. With the lock held. */
static int queue_fail(ofl_error *err, const ofl_device *dev, const char *call, cl_int rc) {
    if (!dev->last_kernel[0]) return cl_fail(err, dev, call, rc);
    return ofl_fail(err, OFL_ERR_DEVICE,
                    "kernel '%s' failed on %s (%s): %s reported %s (%d) (it is the last kernel "
                    "launched there)",
                    dev->last_kernel, dev->info.filter, dev->info.name, call, cl_error_name(rc),
                    rc);
}

/* ---- discovery ---- */

/* A string query, whatever its length; NULL when it fails. Caller frees. */
static char *query_str(cl_device_id d, cl_platform_id p, cl_uint param) {
    size_t n = 0;
    cl_int rc =
        d ? clGetDeviceInfo(d, param, 0, NULL, &n) : clGetPlatformInfo(p, param, 0, NULL, &n);
    char *s = rc == CL_SUCCESS ? malloc(n + 1) : NULL;
    if (!s) return NULL;
    rc = d ? clGetDeviceInfo(d, param, n, s, NULL) : clGetPlatformInfo(p, param, n, s, NULL);
    if (rc != CL_SUCCESS) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

/* Copies a query's answer into a fixed field, without surrounding spaces
 * (some drivers pad device names). */
static void get_str(cl_device_id d, cl_platform_id p, cl_uint param, char *out, size_t len) {
    char *s = query_str(d, p, param), *b = s;
    out[0] = '\0';
    if (!s) return;
    while (*b == ' ') b++;
    size_t n = strlen(b);
    while (n && (b[n - 1] == ' ' || b[n - 1] == '\n')) n--;
    snprintf(out, len, "%.*s", (int)n, b);
    free(s);
}

static uint64_t get_num(cl_device_id d, cl_device_info param, size_t size) {
    union {
        cl_uint u;
        cl_ulong ul;
        size_t z;
        cl_bitfield b;
    } v;
    memset(&v, 0, sizeof v);
    if (clGetDeviceInfo(d, param, size, &v, NULL) != CL_SUCCESS) return 0;
    return size == sizeof(cl_uint) ? v.u : size == sizeof(size_t) ? (uint64_t)v.z : v.ul;
}

static bool has_ext(const char *exts, const char *name) {
    size_t n = strlen(name);
    for (const char *p = exts; p && (p = strstr(p, name)) != NULL; p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

/* "OpenCL 2.1 ..." -> 210; 0 when unreadable. */
static int parse_version(const char *s) {
    int major = 0, minor = 0;
    if (sscanf(s, "OpenCL %d.%d", &major, &minor) != 2) return 0;
    return major * 100 + minor * 10;
}

static void identify(ofl_device *dev, cl_device_id d, const char *exts) {
    ofl_device_info *in = &dev->info;
    if (has_ext(exts, "cl_khr_device_uuid") &&
        clGetDeviceInfo(d, CL_DEVICE_UUID_KHR, 16, dev->uuid, NULL) == CL_SUCCESS)
        dev->has_uuid = true;
    cl_uint pci[4]; /* cl_device_pci_bus_info_khr: domain, bus, device, function */
    cl_uint bus, slot, domain;
    if (has_ext(exts, "cl_khr_pci_bus_info") &&
        clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof pci, pci, NULL) == CL_SUCCESS) {
        dev->has_pci = true;
        dev->pci_domain = (int)pci[0], dev->pci_bus = pci[1];
        dev->pci_dev = pci[2], dev->pci_fn = pci[3];
    } else if (has_ext(exts, "cl_nv_device_attribute_query") &&
               clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_ID_NV, sizeof bus, &bus, NULL) == 0 &&
               clGetDeviceInfo(d, CL_DEVICE_PCI_SLOT_ID_NV, sizeof slot, &slot, NULL) == 0) {
        /* NVIDIA packs device and function into the slot id; older drivers
         * do not answer the domain query, so the domain may stay unknown */
        dev->has_pci = true;
        dev->pci_bus = bus & 0xff, dev->pci_dev = (slot >> 3) & 0xff, dev->pci_fn = slot & 7;
        if (clGetDeviceInfo(d, CL_DEVICE_PCI_DOMAIN_ID_NV, sizeof domain, &domain, NULL) == 0)
            dev->pci_domain = (int)domain;
    }
    if (dev->has_pci)
        snprintf(in->pci_bus_id, sizeof in->pci_bus_id, "%04x:%02x:%02x.%x",
                 dev->pci_domain < 0 ? 0 : (unsigned)dev->pci_domain, dev->pci_bus, dev->pci_dev,
                 dev->pci_fn);
}

static ofl_device *describe(cl_platform_id p, cl_device_id d, const char *platform_name,
                            int platform_version) {
    ofl_device *dev = ofl_device_new(&ofl_opencl_ops);
    if (!dev) return NULL;
    ofl_device_info *in = &dev->info;
    dev->h.cl.platform = p, dev->h.cl.id = d, dev->h.cl.platform_version = platform_version;
    in->backend = OFL_OPENCL;
    snprintf(in->platform, sizeof in->platform, "%s", platform_name);
    get_str(d, NULL, CL_DEVICE_NAME, in->name, sizeof in->name);
    get_str(d, NULL, CL_DEVICE_VENDOR, in->vendor, sizeof in->vendor);
    get_str(d, NULL, CL_DRIVER_VERSION, in->driver_version, sizeof in->driver_version);
    get_str(d, NULL, CL_DEVICE_VERSION, in->version, sizeof in->version);
    /* CL_DEVICE_IL_VERSION is 2.1+; a 1.x device answers CL_INVALID_VALUE,
     * which get_str turns into "" (no IL) */
    get_str(d, NULL, CL_DEVICE_IL_VERSION, in->il_version, sizeof in->il_version);

    cl_device_type t = get_num(d, CL_DEVICE_TYPE, sizeof(cl_device_type));
    in->type = t & CL_DEVICE_TYPE_GPU           ? OFL_GPU
               : t & CL_DEVICE_TYPE_CPU         ? OFL_CPU
               : t & CL_DEVICE_TYPE_ACCELERATOR ? OFL_ACCELERATOR
                                                : OFL_CUSTOM;
    in->max_compute_units = (unsigned)get_num(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cl_uint));
    in->max_work_group_size = get_num(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(size_t));
    size_t sizes[16] = {0};
    cl_uint dims = (cl_uint)get_num(d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof(cl_uint));
    if (dims > 16) dims = 16;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t), sizes, NULL);
    for (int i = 0; i < 3; i++) in->max_work_item_sizes[i] = (cl_uint)i < dims ? sizes[i] : 1;
    in->global_mem_size = get_num(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(cl_ulong));
    in->local_mem_size = get_num(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(cl_ulong));
    in->max_mem_alloc_size = get_num(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(cl_ulong));

    char *exts = query_str(d, NULL, CL_DEVICE_EXTENSIONS);
    in->has_fp64 = has_ext(exts, "cl_khr_fp64") ||
                   get_num(d, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof(cl_device_fp_config)) != 0;
    in->has_fp16 = has_ext(exts, "cl_khr_fp16");
    in->has_atomic64 = has_ext(exts, "cl_khr_int64_base_atomics");
    in->has_spir = has_ext(exts, "cl_khr_spir");
    identify(dev, d, exts);
    free(exts);
    return dev;
}

void ofl_opencl_discover(ofl_devlist *list, char *note, size_t notelen) {
    enum { MAX_PLATFORMS = 64 };
    cl_platform_id ps[MAX_PLATFORMS];
    cl_uint np = 0;
    note[0] = '\0';
    if (clGetPlatformIDs(MAX_PLATFORMS, ps, &np) != CL_SUCCESS) np = 0;
    np = np > MAX_PLATFORMS ? MAX_PLATFORMS : np;
    np = ofl_icd_add_platforms(ps, np, MAX_PLATFORMS, note, notelen);
    if (np == 0) {
        if (!note[0])
            snprintf(note, notelen,
                     "no OpenCL platform (no driver registered in /etc/OpenCL/vendors)");
        return;
    }
    size_t before = list->n;
    for (cl_uint i = 0; i < np; i++) {
        char name[256], version[128];
        get_str(NULL, ps[i], CL_PLATFORM_NAME, name, sizeof name);
        get_str(NULL, ps[i], CL_PLATFORM_VERSION, version, sizeof version);
        cl_uint nd = 0;
        if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0)
            continue; /* CL_DEVICE_NOT_FOUND: a platform with nothing plugged in */
        cl_device_id *ds = calloc(nd, sizeof *ds);
        if (ds && clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, nd, ds, NULL) == CL_SUCCESS) {
            for (cl_uint j = 0; j < nd; j++) {
                ofl_device *dev = describe(ps[i], ds[j], name, parse_version(version));
                if (dev) ofl_devlist_add(list, dev);
            }
        }
        free(ds);
    }
    if (list->n == before && !note[0])
        snprintf(note, notelen, "OpenCL platforms found, but they list no devices");
}

/* ---- the queue ---- */

/* The cancel flag (ofl_runtime.h): a page of host memory that the buffer
 * uses in place (CL_MEM_USE_HOST_PTR; page-aligned, so that PoCL and Intel's
 * CPU runtime take the pointer as it is rather than a copy), so that a
 * kernel on a CPU device sees the host's store while it runs. A GPU may
 * cache a copy instead: it gets the flag, but may never see it set. Without
 * memory, dev->cancel stays NULL and launches that need it fail. */
static void open_cancel(ofl_device *dev) {
    enum { PAGE = 4096 };
    int *word = aligned_alloc(PAGE, PAGE);
    ofl_buffer *buf = word ? ofl_cancel_buffer(dev) : NULL;
    cl_int rc = CL_OUT_OF_HOST_MEMORY;
    if (buf) {
        memset(word, 0, PAGE);
        buf->h.mem =
            clCreateBuffer(dev->h.cl.ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, PAGE, word, &rc);
    }
    if (rc == CL_SUCCESS) {
        dev->cancel_word = word; /* both live until exit, as the device does */
        return;
    }
    free(word);
    if (buf) dev->cancel = NULL, free(buf);
}

static int cl_open(ofl_device *dev, ofl_error *err) {
    cl_int rc;
    cl_device_id d = dev->h.cl.id;
    /* No CL_CONTEXT_PLATFORM: the device names its platform, and Debian's
     * ocl-icd refuses a platform it did not list itself (ofl_icd.c's). */
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &rc);
    if (!ctx) return cl_fail(err, dev, "clCreateContext", rc);
    cl_command_queue q;
    if (dev->h.cl.platform_version >= 200) {
        cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
        q = clCreateCommandQueueWithProperties(ctx, d, qp, &rc);
    } else { /* a 1.x platform lacks the 2.0 entry point */
        q = clCreateCommandQueue(ctx, d, CL_QUEUE_PROFILING_ENABLE, &rc);
    }
    if (!q) {
        clReleaseContext(ctx);
        return cl_fail(err, dev, "clCreateCommandQueue", rc);
    }
    dev->h.cl.ctx = ctx, dev->h.cl.queue = q;
    open_cancel(dev);
    /* PoCL's CPU driver has a worker thread per core of its own; Intel's
     * keeps a core's slot for the thread that waits (ofl_wait.c) */
    bool pocl = strstr(dev->info.platform, "Portable Computing Language") != NULL;
    dev->lend_waits = dev->info.type == OFL_CPU && !pocl;
    if (pocl && !dev->h.cl.builds_at_launch) { /* reopened after a reset: the lock is there */
        pthread_mutex_init(&dev->h.cl.watch_lock, NULL);
        dev->h.cl.builds_at_launch = true;
    }
    /* Intel's CPU compiler has crashed on valid SPIR-V (ofl_buildproc.c) */
    if (dev->lend_waits && dev->info.il_version[0] && !dev->h.cl.builder)
        dev->h.cl.builder = ofl_buildproc_open(dev->h.cl.platform, dev->info.name);
    return 0;
}

static void cl_lend(ofl_device *dev) { clFinish(dev->h.cl.queue); }

/* Released buffers of 64 KiB and more are kept (16 at most, an eighth of
 * the device's memory and 1 GiB at most) and handed out again for the same
 * size: a CPU runtime backs a new buffer with fresh pages at its first use,
 * and faulting them in cost more than the work on them (Intel's runtime:
 * 8.4 ms for ol.zeros of 16 MiB, 1.3 ms from the pool). Reuse is safe as the
 * queue is in order: what used the buffer before runs first. The pool is
 * kept oldest first: a release that finds it full lets the oldest go (a pool
 * full of sizes a notebook no longer uses made every x + y of 2^22 float32
 * fault its result in, 0.97 -> 1.6 ms), and a take gives the newest of its
 * size, whose memory is the likeliest still in the caches. */
#define POOL_MIN (64u << 10)
#define POOL_MOST ((size_t)1 << 30)
#define POOL_SLOTS ((int)(sizeof dev->h.cl.pool / sizeof dev->h.cl.pool[0]))

static void pool_remove(ofl_device *dev, int i) {
    dev->h.cl.pooled -= dev->h.cl.pool[i].size;
    dev->h.cl.npool--;
    memmove(&dev->h.cl.pool[i], &dev->h.cl.pool[i + 1],
            (size_t)(dev->h.cl.npool - i) * sizeof dev->h.cl.pool[0]);
}

static cl_mem pool_take(ofl_device *dev, size_t bytes) {
    for (int i = dev->h.cl.npool - 1; i >= 0; i--) {
        if (dev->h.cl.pool[i].size != bytes) continue;
        cl_mem mem = dev->h.cl.pool[i].mem;
        pool_remove(dev, i);
        return mem;
    }
    return NULL;
}

static bool pool_give(ofl_device *dev, cl_mem mem, size_t bytes) {
    size_t most =
        dev->info.global_mem_size / 8 < POOL_MOST ? dev->info.global_mem_size / 8 : POOL_MOST;
    if (bytes < POOL_MIN || bytes > most) return false;
    while (dev->h.cl.npool == POOL_SLOTS || dev->h.cl.pooled + bytes > most) {
        clReleaseMemObject(dev->h.cl.pool[0].mem);
        pool_remove(dev, 0);
    }
    dev->h.cl.pool[dev->h.cl.npool].mem = mem, dev->h.cl.pool[dev->h.cl.npool].size = bytes;
    dev->h.cl.npool++;
    dev->h.cl.pooled += bytes;
    return true;
}

static void pool_drain(ofl_device *dev) {
    for (int i = 0; i < dev->h.cl.npool; i++) clReleaseMemObject(dev->h.cl.pool[i].mem);
    dev->h.cl.npool = 0;
    dev->h.cl.pooled = 0;
}

static void CL_CALLBACK free_host_memory(cl_mem mem, void *host) {
    (void)mem;
    free(host);
}

/* A new buffer. On a CPU device its memory is host memory either way; taken
 * from malloc (CL_MEM_USE_HOST_PTR) it is faulted in by the first writer,
 * as NumPy's is, where both runtimes' own made the first write of 128 MiB
 * cost 54-71 ms (np.copy: 12-22 ms). The runtime calls free_host_memory once
 * it is done with the memory. */
static cl_mem new_buffer(ofl_device *dev, size_t bytes, cl_int *rc) {
    if (dev->info.type != OFL_CPU)
        return clCreateBuffer(dev->h.cl.ctx, CL_MEM_READ_WRITE, bytes, NULL, rc);
    /* both CPU runtimes use page-aligned memory in place; huge pages, as NumPy
     * asks for its arrays of 4 MiB and more, fault in 512 times fewer */
    enum { PAGE = 4096, HUGE = 2 << 20 };
    bool huge = bytes >= 2 * (size_t)HUGE;
    void *host = NULL;
    if (posix_memalign(&host, huge ? HUGE : PAGE, bytes)) {
        *rc = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (huge) madvise(host, bytes / HUGE * HUGE, MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
    cl_mem mem =
        clCreateBuffer(dev->h.cl.ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, host, rc);
    if (mem && (*rc = clSetMemObjectDestructorCallback(mem, free_host_memory, host)) != CL_SUCCESS)
        clReleaseMemObject(mem), mem = NULL; /* nothing used it yet */
    if (!mem) free(host);
    return mem;
}

static int cl_alloc(ofl_device *dev, size_t bytes, ofl_buffer *buf, ofl_error *err) {
    cl_int rc = CL_SUCCESS;
    buf->h.mem = pool_take(dev, bytes);
    if (!buf->h.mem) buf->h.mem = new_buffer(dev, bytes, &rc);
    if (!buf->h.mem && is_oom(rc) && dev->h.cl.pooled) { /* the pool's memory first */
        pool_drain(dev);
        buf->h.mem = new_buffer(dev, bytes, &rc);
    }
    buf->queue_ordered =
        true; /* the memory outlives the release until queued commands using it finish */
    if (buf->h.mem) return 0;
    if (is_oom(rc)) {
        char sz[32];
        return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "cannot allocate %s on %s (%s): %s",
                        ofl_size_str(bytes, sz, sizeof sz), dev->info.filter, dev->info.name,
                        cl_error_name(rc));
    }
    return cl_fail(err, dev, "clCreateBuffer", rc);
}

static void cl_free(ofl_buffer *buf) {
    if (buf->host || !pool_give(buf->dev, buf->h.mem, buf->size ? buf->size : 1))
        clReleaseMemObject(buf->h.mem);
}

/* PoCL and others back a buffer with memory only at its first use, so an
 * allocation that "succeeded" can fail at the first write or copy. */
static int transfer_fail(ofl_error *err, const ofl_buffer *buf, const char *call, cl_int rc) {
    if (rc == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        return queue_fail(err, buf->dev, call, rc); /* the queued work before it failed */
    if (!is_oom(rc)) return cl_fail(err, buf->dev, call, rc);
    char sz[32];
    return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY,
                    "%s (%s) could not find memory for a %s buffer at its first use "
                    "(this OpenCL driver allocates lazily): %s failed with %s",
                    buf->dev->info.filter, buf->dev->info.name,
                    ofl_size_str(buf->size, sz, sizeof sz), call, cl_error_name(rc));
}

/* CL_MEM_USE_HOST_PTR: a CPU device computes in the host's memory itself
 * (PoCL and Intel's runtime do for memory aligned as they like it; otherwise
 * they keep a copy, which cl_sync_host's map brings back). */
static int cl_wrap_host(ofl_device *dev, void *host, size_t bytes, ofl_buffer *buf,
                        ofl_error *err) {
    cl_int rc;
    buf->h.mem =
        clCreateBuffer(dev->h.cl.ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, host, &rc);
    return buf->h.mem ? 0 : cl_fail(err, dev, "clCreateBuffer(CL_MEM_USE_HOST_PTR)", rc);
}

/* A CPU device's memory is the host's: a map hands out its address, and
 * memcpy in this thread runs at the machine's speed, where PoCL's own read
 * into pageable memory managed 0.9 GB/s (asnumpy of 128 MB: 150 ms, now 15
 * as np.copy). Writes stay the runtime's: both copy with several threads,
 * faster than one memcpy (ol.asarray of 128 MB: 7-9 ms against 12). */
static int cl_map_read(ofl_buffer *buf, size_t off, void *to, size_t n, ofl_error *err) {
    cl_int rc;
    cl_command_queue q = buf->dev->h.cl.queue;
    void *p = clEnqueueMapBuffer(q, buf->h.mem, CL_TRUE, CL_MAP_READ, off, n, 0, NULL, NULL, &rc);
    if (!p) return transfer_fail(err, buf, "clEnqueueMapBuffer", rc);
    if (to) memcpy(to, p, n);
    rc = clEnqueueUnmapMemObject(q, buf->h.mem, p, 0, NULL, NULL);
    if (rc == CL_SUCCESS) rc = clFinish(q);
    return rc ? transfer_fail(err, buf, "clEnqueueUnmapMemObject", rc) : 0;
}

/* The map alone makes a CL_MEM_USE_HOST_PTR buffer's host memory hold what
 * the device wrote (a no-op where the device used it in place). Only the
 * given span: the rest of the buffer may be bytes the host has reused. */
static int cl_sync_host(ofl_buffer *buf, size_t off, size_t n, ofl_error *err) {
    return cl_map_read(buf, off, NULL, n, err);
}

/* The CPU device's buffers are host memory: a map hands out its address
 * (the memory itself where the runtime used it in place) for host code --
 * NumPy's BLAS -- to compute in, and the unmap makes what it wrote the
 * device's. */
static void *cl_map(ofl_buffer *buf, bool write, bool blocking, ofl_error *err) {
    cl_int rc;
    size_t n = buf->size ? buf->size : 1;
    void *p = clEnqueueMapBuffer(buf->dev->h.cl.queue, buf->h.mem, blocking ? CL_TRUE : CL_FALSE,
                                 write ? CL_MAP_READ | CL_MAP_WRITE : CL_MAP_READ, 0, n, 0, NULL,
                                 NULL, &rc);
    if (!p) transfer_fail(err, buf, "clEnqueueMapBuffer", rc);
    return p;
}

/* Queued, not waited for: the in-order queue runs later commands after it
 * (PoCL takes tens of microseconds per wait: a 512^2 product's fifth). */
static int cl_unmap(ofl_buffer *buf, void *p, ofl_error *err) {
    cl_int rc = clEnqueueUnmapMemObject(buf->dev->h.cl.queue, buf->h.mem, p, 0, NULL, NULL);
    return rc ? transfer_fail(err, buf, "clEnqueueUnmapMemObject", rc) : 0;
}

static int cl_write(ofl_buffer *dst, size_t off, const void *src, size_t n, ofl_error *err) {
    cl_int rc =
        clEnqueueWriteBuffer(dst->dev->h.cl.queue, dst->h.mem, CL_TRUE, off, n, src, 0, NULL, NULL);
    return rc ? transfer_fail(err, dst, "clEnqueueWriteBuffer", rc) : 0;
}

static int cl_read(ofl_buffer *src, size_t off, void *dst, size_t n, ofl_error *err) {
    if (src->dev->info.type == OFL_CPU) return cl_map_read(src, off, dst, n, err);
    cl_int rc =
        clEnqueueReadBuffer(src->dev->h.cl.queue, src->h.mem, CL_TRUE, off, n, dst, 0, NULL, NULL);
    return rc ? transfer_fail(err, src, "clEnqueueReadBuffer", rc) : 0;
}

static int cl_copy(ofl_buffer *dst, size_t doff, ofl_buffer *src, size_t soff, size_t n,
                   ofl_error *err) {
    cl_command_queue q = dst->dev->h.cl.queue;
    cl_int rc = clEnqueueCopyBuffer(q, src->h.mem, dst->h.mem, soff, doff, n, 0, NULL, NULL);
    if (rc == CL_SUCCESS) rc = clFinish(q); /* copies are blocking (ofl_runtime.h) */
    return rc ? transfer_fail(err, dst, "clEnqueueCopyBuffer", rc) : 0;
}

static int cl_synchronize(ofl_device *dev, ofl_error *err) {
    cl_int rc = clFinish(dev->h.cl.queue);
    return rc ? queue_fail(err, dev, "clFinish", rc) : 0;
}

/* ---- events ---- */

static int cl_mark(ofl_event *ev, bool end, ofl_error *err) {
    cl_event e;
    cl_int rc = clEnqueueMarkerWithWaitList(ev->dev->h.cl.queue, 0, NULL, &e);
    if (rc) return cl_fail(err, ev->dev, "clEnqueueMarkerWithWaitList", rc);
    if (end) {
        if (ev->h.cl.last && ev->h.cl.last != ev->h.cl.first) clReleaseEvent(ev->h.cl.last);
        ev->h.cl.last = e;
    } else {
        ev->h.cl.first = e;
    }
    return 0;
}

static int cl_event_wait(ofl_event *ev, ofl_error *err) {
    cl_event e = ev->h.cl.last ? ev->h.cl.last : ev->h.cl.first;
    if (!e) return 0;
    cl_int rc = clWaitForEvents(1, &e), status = CL_COMPLETE;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    if (rc == CL_SUCCESS && status < 0) rc = status; /* the command's own error */
    if (rc == CL_SUCCESS) return 0;
    pthread_mutex_lock(&ev->dev->lock); /* for last_kernel */
    int st = queue_fail(err, ev->dev, "a queued command", rc);
    pthread_mutex_unlock(&ev->dev->lock);
    return st;
}

/* Without blocking. The queue's emptiness is a marker's completion: one per
 * wait, dropped by the next launch (it would no longer follow the queue). */
/* ---- builds at launch (PoCL) ----
 *
 * PoCL 3.1 runs LLVM at clBuildProgram only as far as a linked module; the
 * work-group function and its machine code are made at the first launch of
 * each (kernel, work-group size, grid of fewer than 65535 work-items or not),
 * in PoCL's worker thread, with the launch's event CL_SUBMITTED until they
 * are done (pocl_check_kernel_dlhandle_cache, before the event runs). That
 * build cannot run in a helper process: a program binary from one carries
 * the module, from which PoCL makes each new shape's code in this process
 * again, and its generic code (POCL_WORK_GROUP_SPECIALIZATION=0) cost 1.7x
 * on a 1024^2 float32 matmul. Nor can it be stopped. So such launches are
 * watched: a wait that sees one building for longer than the build timeout
 * (ofl_build_timeout) fails with a DeviceError naming the kernel, and so
 * does every wait on the device while it still builds -- the queue's later
 * work waits behind it, and a wait that blocked would never return (an all()
 * whose build looped in LLVM 15 held pytest's report of it so). An interrupt
 * ends the wait as any other. Once the build ends, the device works on. */

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The shape a PoCL work-group function is made for: the work-group size and
 * the "smallgrid" bit, as PoCL 3.1 reckons it (its third term squares the
 * local size) and as a later one may (the global size): both, so that no new
 * build goes unwatched. */
static uint64_t launch_shape(const size_t g[3], const size_t l[3]) {
    size_t pocl = g[0] > g[1] ? g[0] : g[1], plain = pocl;
    if (l[2] * l[2] > pocl) pocl = l[2] * l[2];
    if (g[2] > plain) plain = g[2];
    return (uint64_t)(l[0] & 0xfffff) | (uint64_t)(l[1] & 0xfffff) << 20 |
           (uint64_t)(l[2] & 0xfffff) << 40 | (uint64_t)(pocl < 65535) << 60 |
           (uint64_t)(plain < 65535) << 61;
}

/* Whether prog has launched with this shape (key) before; if not, its
 * launch may build. With the device's lock held, as launches are. */
static bool shape_seen(const ofl_program *prog, uint64_t key) {
    for (int i = 0; i < prog->h.cl.nshapes; i++)
        if (prog->h.cl.shapes[i] == key) return true;
    return false;
}

static void shape_add(ofl_program *prog, uint64_t key) {
    if (prog->h.cl.nshapes < (int)(sizeof prog->h.cl.shapes / sizeof prog->h.cl.shapes[0]))
        prog->h.cl.shapes[prog->h.cl.nshapes++] = key;
}

/* Watches the launch of event e (retained here) of kernel name. A full
 * watch list leaves it unwatched: eight builds queued at once. */
static void watch_add(ofl_device *dev, cl_event e, const char *name) {
    pthread_mutex_lock(&dev->h.cl.watch_lock);
    int n = dev->h.cl.nwatch;
    if (n < (int)(sizeof dev->h.cl.watch / sizeof dev->h.cl.watch[0]) &&
        clRetainEvent(e) == CL_SUCCESS) {
        dev->h.cl.watch[n].ev = e;
        dev->h.cl.watch[n].since = 0;
        snprintf(dev->h.cl.watch[n].kernel, sizeof dev->h.cl.watch[n].kernel, "%s", name);
        __atomic_store_n(&dev->h.cl.nwatch, n + 1, __ATOMIC_RELAXED); /* read without the lock */
    }
    pthread_mutex_unlock(&dev->h.cl.watch_lock);
}

/* Drops the watched launches whose builds have ended; OFL_ERR_DEVICE where
 * one has been building for longer than the timeout (limit < 0: never). */
static int watch_refresh(ofl_device *dev, double limit, ofl_error *err) {
    int rc = 0;
    pthread_mutex_lock(&dev->h.cl.watch_lock);
    int kept = 0;
    for (int i = 0; i < dev->h.cl.nwatch; i++) {
        cl_int status = CL_COMPLETE;
        if (clGetEventInfo(dev->h.cl.watch[i].ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                           &status, NULL) != CL_SUCCESS)
            status = CL_COMPLETE;
        if (status != CL_SUBMITTED && status != CL_QUEUED) { /* running, done, failed: built */
            clReleaseEvent(dev->h.cl.watch[i].ev);
            continue;
        }
        double t = mono_s();
        if (status == CL_SUBMITTED && dev->h.cl.watch[i].since == 0) dev->h.cl.watch[i].since = t;
        double took = dev->h.cl.watch[i].since ? t - dev->h.cl.watch[i].since : 0;
        if (!rc && limit >= 0 && took > limit)
            rc = ofl_fail(err, OFL_ERR_DEVICE,
                          "kernel '%s' has been building for %s (%s) for %.3g s, longer than "
                          "OFFLOAD_BUILD_TIMEOUT (%g s): PoCL's compiler, which builds a kernel "
                          "at its first launch in this process, seems never to end; the work "
                          "queued on %s waits behind it, so the device fails its waits until the "
                          "build ends (other devices work on; if it never ends, restart the "
                          "kernel to use %s again)",
                          dev->h.cl.watch[i].kernel, dev->info.filter, dev->info.name, took, limit,
                          dev->info.filter, dev->info.filter);
        dev->h.cl.watch[kept++] = dev->h.cl.watch[i];
    }
    __atomic_store_n(&dev->h.cl.nwatch, kept, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&dev->h.cl.watch_lock);
    return rc;
}

static int watch_check(ofl_device *dev, ofl_error *err) {
    if (!__atomic_load_n(&dev->h.cl.nwatch, __ATOMIC_RELAXED)) return 0;
    double limit;
    ofl_build_timeout(&limit, NULL); /* a bad value was reported by the build */
    return watch_refresh(dev, limit, err);
}

/* Whether a watched build may still run: PoCL's release of any program
 * takes the lock its compiler holds, so releasing one then would wait for
 * that build -- for ever where it loops (at exit, too). */
static bool watch_pending(ofl_device *dev) {
    if (!dev->h.cl.builds_at_launch || !__atomic_load_n(&dev->h.cl.nwatch, __ATOMIC_RELAXED))
        return false;
    watch_refresh(dev, -1, NULL);
    return __atomic_load_n(&dev->h.cl.nwatch, __ATOMIC_RELAXED) > 0;
}

static int cl_poll(ofl_device *dev, ofl_event *ev, bool *done, ofl_error *err) {
    if (dev->h.cl.builds_at_launch) {
        int st = watch_check(dev, err);
        if (st) return st;
    }
    cl_event e = ev ? (ev->h.cl.last ? ev->h.cl.last : ev->h.cl.first) : dev->h.cl.drain;
    cl_int rc = CL_SUCCESS, status = CL_COMPLETE;
    if (!ev && !e) {
        rc = clEnqueueMarkerWithWaitList(dev->h.cl.queue, 0, NULL, &dev->h.cl.drain);
        if (rc == CL_SUCCESS)
            rc = clFlush(dev->h.cl.queue); /* a marker never sent never completes */
        if (rc != CL_SUCCESS) return queue_fail(err, dev, "clEnqueueMarkerWithWaitList", rc);
        e = dev->h.cl.drain;
    }
    if (e) rc = clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    /* a failed command (status < 0) is done too: the blocking wait after reports it */
    *done = rc != CL_SUCCESS || status == CL_COMPLETE || status < 0;
    if (*done && !ev && e) {
        clReleaseEvent(e);
        dev->h.cl.drain = NULL;
    }
    return 0;
}

static double cl_event_elapsed(ofl_event *ev) {
    cl_event first = ev->h.cl.first, last = ev->h.cl.last;
    if (!first || !last) return -1.0;
    /* one command: its own start to end; two markers: end of one to the other */
    cl_profiling_info from = first == last ? CL_PROFILING_COMMAND_START : CL_PROFILING_COMMAND_END;
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(first, from, sizeof t0, &t0, NULL) != CL_SUCCESS ||
        clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
        return -1.0;
    return t1 >= t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
}

static void cl_event_release(ofl_event *ev) {
    if (ev->h.cl.last && ev->h.cl.last != ev->h.cl.first) clReleaseEvent(ev->h.cl.last);
    if (ev->h.cl.first) clReleaseEvent(ev->h.cl.first);
    ev->h.cl.first = ev->h.cl.last = NULL;
}

/* ---- programs and launches ---- */

/* clCreateProgramWithIL is OpenCL 2.1; a 1.2 platform with cl_khr_il_program
 * has it under the extension's name, and the ICD loader must not be asked to
 * dispatch a 2.1 call to a platform without it. */
typedef cl_program (*create_with_il_fn)(cl_context, const void *, size_t, cl_int *);

static cl_program create_with_il(const ofl_device *dev, const void *bin, size_t size, cl_int *rc) {
    if (dev->h.cl.platform_version >= 210)
        return clCreateProgramWithIL(dev->h.cl.ctx, bin, size, rc);
    create_with_il_fn f = (create_with_il_fn)clGetExtensionFunctionAddressForPlatform(
        dev->h.cl.platform, "clCreateProgramWithILKHR");
    if (!f) {
        *rc = CL_INVALID_OPERATION;
        return NULL;
    }
    return f(dev->h.cl.ctx, bin, size, rc);
}

/* A program's string query (build log, kernel names); NULL when it fails. */
static char *program_str(cl_program p, cl_device_id d, cl_uint param) {
    size_t n = 0;
    cl_int rc = d ? clGetProgramBuildInfo(p, d, param, 0, NULL, &n)
                  : clGetProgramInfo(p, param, 0, NULL, &n);
    char *s = rc == CL_SUCCESS ? malloc(n + 1) : NULL;
    if (!s) return NULL;
    rc =
        d ? clGetProgramBuildInfo(p, d, param, n, s, NULL) : clGetProgramInfo(p, param, n, s, NULL);
    s[rc == CL_SUCCESS ? n : 0] = '\0';
    return s;
}

static int build_failed(ofl_program *prog, cl_int rc, const char *log, ofl_error *err) {
    const ofl_device_info *in = &prog->dev->info;
    ofl_fail(err, OFL_ERR_DEVICE,
             "cannot build kernel '%s' for %s (%s): clBuildProgram failed with %s (%d)", prog->name,
             in->filter, in->name, cl_error_name(rc), rc);
    ofl_append_log(err, "; the build log says:\n", log ? log : "");
    return OFL_ERR_DEVICE;
}

/* ---- in-process builds, bounded ----
 *
 * clBuildProgram in this process (PoCL's front end and module passes, or any
 * runtime without a helper) runs on a thread of its own while the caller
 * waits for it in slices, checking for an interrupt and the build timeout
 * (ofl_build_timeout). A compiler cannot be stopped: one that outlasts the
 * wait is left to finish on its thread, which then releases the program --
 * the caller must not (PoCL's release takes the lock its compiler holds). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs; /* the caller's and the thread's */
    bool done;
    bool abandoned; /* the caller left: the program is the thread's to release */
    cl_program p;
    cl_device_id d;
    const char *options; /* a literal */
    cl_int rc;
} bg_build;

static void bg_unref(bg_build *b) { /* with b->mu held; unlocks it */
    bool last = --b->refs == 0;
    pthread_mutex_unlock(&b->mu);
    if (!last) return;
    if (b->abandoned) clReleaseProgram(b->p);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

static void *bg_main(void *arg) {
    bg_build *b = arg;
    cl_int rc = clBuildProgram(b->p, 1, &b->d, b->options, NULL, NULL);
    pthread_mutex_lock(&b->mu);
    b->rc = rc, b->done = true;
    pthread_cond_signal(&b->cv);
    bg_unref(b);
    return NULL;
}

/* clBuildProgram(p) bounded: CL_SUCCESS or its error, with *ended = false
 * when the wait ended first (then p is no longer the caller's, and
 * *interrupted says whether an interrupt or the timeout ended it). */
static cl_int build_bounded(cl_program p, cl_device_id d, const char *options, double limit,
                            bool *ended, bool *interrupted) {
    *ended = true, *interrupted = false;
    bg_build *b = calloc(1, sizeof *b);
    pthread_attr_t attr;
    pthread_t t;
    if (!b || pthread_attr_init(&attr) != 0) {
        free(b);
        return clBuildProgram(p, 1, &d, options, NULL, NULL); /* unbounded, as before */
    }
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->refs = 2, b->p = p, b->d = d, b->options = options;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* LLVM recurses deeply on large functions: the main thread's 8 MiB */
    pthread_attr_setstacksize(&attr, (size_t)8 << 20);
    int started = pthread_create(&t, &attr, bg_main, b);
    pthread_attr_destroy(&attr);
    if (started != 0) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return clBuildProgram(p, 1, &d, options, NULL, NULL);
    }
    double end = mono_s() + limit;
    pthread_mutex_lock(&b->mu);
    while (!b->done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L; /* the interrupt check's period, as a wait's */
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&b->cv, &b->mu, &ts);
        if (b->done) break;
        pthread_mutex_unlock(&b->mu);
        bool hit = ofl_interrupted(); /* may take the GIL: not with b->mu held */
        pthread_mutex_lock(&b->mu);
        if (b->done) break;
        if (hit || mono_s() >= end) {
            *ended = false, *interrupted = hit;
            b->abandoned = true;
            bg_unref(b);
            return CL_BUILD_PROGRAM_FAILURE;
        }
    }
    cl_int rc = b->rc;
    bg_unref(b);
    return rc;
}

/* The binary cache's key of SPIR-V for dev (ofl_bincache.c); false where
 * the cache is off. The vectorizer's mode, which a user may set for Intel's
 * runtime, changes the code the helper builds; the build's key of the
 * runtime's and the JIT's sources (offload/ofl_build_key.h, made by the
 * build) covers how this code asks for the build. */
static bool binary_key(const ofl_device *dev, const void *il, size_t size, ofl_binkey *key) {
    char platform[256] = "";
    clGetPlatformInfo(dev->h.cl.platform, CL_PLATFORM_VERSION, sizeof platform, platform, NULL);
    const char *mode = getenv("CL_CONFIG_CPU_VECTORIZER_MODE");
    const char *parts[] = {"spirv",          dev->info.name, dev->info.driver_version, platform, "",
                           mode ? mode : "", OFL_BUILD_KEY};
    return ofl_bincache_key(key, il, size, parts, sizeof parts / sizeof parts[0]);
}

/* A program of a device's own binary, built (no compiler runs); NULL with
 * *rc and *call saying why not. */
static cl_program from_binary(const ofl_device *dev, const unsigned char *b, size_t size,
                              cl_int *rc, const char **call) {
    cl_device_id d = dev->h.cl.id;
    cl_int status = CL_SUCCESS;
    *call = "clCreateProgramWithBinary";
    cl_program p = clCreateProgramWithBinary(dev->h.cl.ctx, 1, &d, &size, &b, &status, rc);
    if (p && status != CL_SUCCESS) *rc = status;
    if (p && *rc == CL_SUCCESS) {
        *call = "clBuildProgram";
        *rc = clBuildProgram(p, 1, &d, "", NULL, NULL);
    }
    if (p && *rc != CL_SUCCESS) {
        clReleaseProgram(p);
        p = NULL;
    }
    return p;
}

/* The program built for prog: its kernel and what a launch needs of it. */
static int take_program(ofl_program *prog, cl_program p, ofl_error *err) {
    ofl_device *dev = prog->dev;
    const ofl_device_info *in = &dev->info;
    cl_device_id d = dev->h.cl.id;
    cl_int rc;
    cl_kernel k = clCreateKernel(p, prog->name, &rc);
    if (!k) {
        int st;
        if (rc == CL_INVALID_KERNEL_NAME) {
            char *names = program_str(p, NULL, CL_PROGRAM_KERNEL_NAMES);
            st = ofl_fail(err, OFL_ERR_INVALID,
                          "no kernel named '%s' in the program built for %s (%s)%s%.400s%s",
                          prog->name, in->filter, in->name, names && names[0] ? " (it has: " : "",
                          names ? names : "", names && names[0] ? ")" : "");
            free(names);
        } else {
            st = cl_fail(err, dev, "clCreateKernel", rc);
        }
        clReleaseProgram(p);
        return st;
    }
    size_t most = 0;
    if (clGetKernelWorkGroupInfo(k, d, CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most, NULL) != 0 ||
        most == 0)
        most = in->max_work_group_size;
    prog->max_threads = most;
    cl_uint nargs = 0;
    if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL) == CL_SUCCESS)
        prog->nparams = (long)nargs;
    prog->h.cl.program = p;
    prog->h.cl.kernel = k;
    return 0;
}

enum { VECTORIZER_OFF = 1 }; /* a cached binary's flag: built so after a crash */

static int cl_build(ofl_program *prog, ofl_binary_kind kind, const void *bin, size_t size,
                    ofl_error *err) {
    ofl_device *dev = prog->dev;
    const ofl_device_info *in = &dev->info;
    cl_device_id d = dev->h.cl.id;
    cl_int rc = CL_SUCCESS;
    double limit; /* its bad value is told here, at the first build */
    int bad = ofl_build_timeout(&limit, err);
    if (bad) return bad;
    const char *call;
    /* SPIR-V that a helper process compiles comes back as a program binary,
     * kept on disk: a later process loads it, and starts no helper */
    unsigned char *built = NULL;
    if (kind == OFL_BIN_SPIRV && dev->h.cl.builder) {
        ofl_binkey key;
        bool keyed = binary_key(dev, bin, size, &key);
        size_t n = 0;
        uint32_t flags = 0;
        unsigned char *hit = keyed ? ofl_bincache_load(&key, &n, &flags) : NULL;
        if (hit) {
            cl_program p = from_binary(dev, hit, n, &rc, &call);
            free(hit);
            if (p) {
                prog->vectorizer_off = flags & VECTORIZER_OFF;
                return take_program(prog, p, err);
            }
            ofl_bincache_drop(&key); /* another runtime's, or damaged: built again */
        }
        int st = ofl_buildproc_build(dev->h.cl.builder, prog, bin, size, &rc, &built, &n, err);
        if (st > 0) return st;
        if (st == 0 && rc != CL_SUCCESS) {
            st = build_failed(prog, rc, (char *)built, err);
            free(built);
            return st;
        }
        if (built && keyed)
            ofl_bincache_store(&key, built, n, prog->vectorizer_off ? VECTORIZER_OFF : 0);
        if (built) bin = built, size = n;
    }
    cl_program p;
    if (built) {
        p = from_binary(dev, built, size, &rc, &call);
        free(built);
        if (!p && strcmp(call, "clBuildProgram") == 0) return build_failed(prog, rc, NULL, err);
    } else if (kind == OFL_BIN_SPIRV) {
        call = "clCreateProgramWithIL";
        p = create_with_il(dev, bin, size, &rc);
    } else {
        call = "clCreateProgramWithBinary";
        const unsigned char *b = bin;
        cl_int status = CL_SUCCESS;
        p = clCreateProgramWithBinary(dev->h.cl.ctx, 1, &d, &size, &b, &status, &rc);
        if (p && status != CL_SUCCESS) {
            clReleaseProgram(p);
            p = NULL, rc = status;
        }
    }
    if (!p)
        return ofl_fail(err, OFL_ERR_DEVICE,
                        "cannot build kernel '%s' for %s (%s): %s refused the %zu-byte binary "
                        "with %s (%d)",
                        prog->name, in->filter, in->name, call, size, cl_error_name(rc), rc);
    if (!built) {
        /* PoCL takes SPIR 1.2 bitcode through its OpenCL C front end */
        bool ended, interrupted;
        rc = build_bounded(p, d, kind == OFL_BIN_SPIR12 ? "-x spir -spir-std=1.2" : "", limit,
                           &ended, &interrupted);
        if (!ended && interrupted)
            return ofl_fail(err, OFL_ERR_INTERRUPTED,
                            "interrupted: the build of kernel '%s' for %s was left to end by "
                            "itself (its compiler runs in this process and cannot be stopped)",
                            prog->name, in->filter);
        if (!ended)
            return ofl_fail(err, OFL_ERR_DEVICE,
                            "cannot build kernel '%s' for %s (%s): its OpenCL compiler, which runs "
                            "in this process, did not finish in %g s (OFFLOAD_BUILD_TIMEOUT) and "
                            "was left to end by itself",
                            prog->name, in->filter, in->name, limit);
        if (rc != CL_SUCCESS) {
            char *log = program_str(p, d, CL_PROGRAM_BUILD_LOG);
            int st = build_failed(prog, rc, log, err);
            free(log);
            clReleaseProgram(p);
            return st;
        }
    }
    return take_program(prog, p, err);
}

/* Queued launches hold their own references to the kernel. While PoCL may
 * still be building at launch (watch_pending), the program is left to the
 * process: its memory against a wait without end. */
static void cl_program_release(ofl_program *prog) {
    if (watch_pending(prog->dev)) return;
    if (prog->h.cl.kernel) clReleaseKernel(prog->h.cl.kernel);
    if (prog->h.cl.program) clReleaseProgram(prog->h.cl.program);
}

static int cl_launch(ofl_program *prog, unsigned ndim, const size_t g[3], const size_t l[3],
                     const ofl_arg *args, size_t nargs, ofl_event *ev, ofl_error *err) {
    ofl_device *dev = prog->dev;
    cl_kernel k = prog->h.cl.kernel;
    for (size_t i = 0; i < nargs; i++) {
        const ofl_arg *a = &args[i];
        cl_int rc = a->buffer ? clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &a->buffer->h.mem)
                              : clSetKernelArg(k, (cl_uint)i, a->size, a->value);
        if (rc != CL_SUCCESS) {
            bool theirs = rc == CL_INVALID_ARG_SIZE || rc == CL_INVALID_ARG_VALUE ||
                          rc == CL_INVALID_ARG_INDEX || rc == CL_INVALID_MEM_OBJECT;
            return ofl_fail(err, theirs ? OFL_ERR_INVALID : OFL_ERR_DEVICE,
                            "cannot pass argument %zu (%s%zu bytes) to kernel '%s' on %s (%s): "
                            "clSetKernelArg failed with %s (%d)",
                            i, a->buffer ? "an array, " : "", a->buffer ? sizeof(cl_mem) : a->size,
                            prog->name, dev->info.filter, dev->info.name, cl_error_name(rc), rc);
        }
    }
    /* the kernel's own event: its profiling times are the kernel's alone */
    cl_event *e = ev ? &ev->h.cl.first : NULL, mine = NULL;
    uint64_t shape = dev->h.cl.builds_at_launch ? launch_shape(g, l) : 0;
    bool watched = dev->h.cl.builds_at_launch && !shape_seen(prog, shape);
    if (watched && !e) e = &mine;
    if (dev->h.cl.drain) { /* it marks an emptiness that this launch ends */
        clReleaseEvent(dev->h.cl.drain);
        dev->h.cl.drain = NULL;
    }
    cl_int rc = clEnqueueNDRangeKernel(dev->h.cl.queue, k, ndim, NULL, g, l, 0, NULL, e);
    if (rc != CL_SUCCESS)
        return ofl_fail(err, OFL_ERR_DEVICE,
                        "cannot launch kernel '%s' on %s (%s): clEnqueueNDRangeKernel failed "
                        "with %s (%d)",
                        prog->name, dev->info.filter, dev->info.name, cl_error_name(rc), rc);
    if (watched) {
        shape_add(prog, shape);
        watch_add(dev, *e, prog->name);
    }
    if (mine) clReleaseEvent(mine);
    if (ev) ev->h.cl.last = ev->h.cl.first;
    return 0;
}

const ofl_backend_ops ofl_opencl_ops = {
    "opencl",  cl_open,          cl_alloc,         cl_free,  cl_write,
    cl_read,   cl_copy,          cl_synchronize,   cl_mark,  cl_event_wait,
    cl_poll,   cl_event_elapsed, cl_event_release, cl_build, cl_program_release,
    cl_launch, cl_wrap_host,     cl_sync_host,     cl_map,   cl_unmap,
    NULL, /* between devices: through the host */
    cl_lend,
};
