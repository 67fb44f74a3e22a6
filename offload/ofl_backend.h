/* ofl_backend: what the runtime's backends (OpenCL, CUDA) share with the
 * registry, the memory layer and the launcher (ofl_program.c). Internal: the
 * offload Python module uses ofl_runtime.h only.
 *
 * A backend discovers its devices into a list and fills one table of
 * operations. The registry orders, deduplicates and names the devices; the
 * memory layer checks arguments, takes the device's lock, opens the device at
 * its first use and then calls the table. Backend operations therefore run
 * with the device's lock held (except the event ones) and may assume valid
 * ranges and a nonzero size.
 *
 * A CUDA kernel's fault poisons its context for good, so the CUDA backend
 * resets the device's primary context to recover, which destroys everything
 * made in it. Each device therefore counts its contexts (generation); buffers,
 * programs and events remember the generation they were made in, and one from
 * an older generation is refused (never freed: its handle died with the
 * context). Where the driver keeps the fault for the whole process (580 does)
 * the reset cannot help and the device is marked lost. OpenCL devices stay at
 * generation 0. */
#ifndef OFL_BACKEND_H
#define OFL_BACKEND_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS /* clCreateCommandQueue for 1.x platforms */
#include <CL/cl.h>
#include <pthread.h>
#include <stdarg.h>

#include "ofl_cuda_api.h"
#include "ofl_runtime.h"

typedef struct {
    const char *name; /* "opencl", "cuda" */
    /* Context and queue, at the device's first use (not at discovery: a CUDA
     * context costs hundreds of milliseconds and device memory). */
    int (*open)(ofl_device *dev, ofl_error *err);
    int (*alloc)(ofl_device *dev, size_t bytes, ofl_buffer *buf, ofl_error *err);
    void (*free)(ofl_buffer *buf);
    int (*write)(ofl_buffer *dst, size_t off, const void *src, size_t n, ofl_error *err);
    int (*read)(ofl_buffer *src, size_t off, void *dst, size_t n, ofl_error *err);
    int (*copy)(ofl_buffer *dst, size_t doff, ofl_buffer *src, size_t soff, size_t n,
                ofl_error *err); /* same device; regions do not overlap */
    int (*synchronize)(ofl_device *dev, ofl_error *err);
    /* Records a point on the queue: the event's start (end false) or end. */
    int (*mark)(ofl_event *ev, bool end, ofl_error *err);
    int (*event_wait)(ofl_event *ev, ofl_error *err);
    /* Without blocking: *done when ev (NULL: everything queued on dev, lock
     * held) has finished; the failure of finished work is for event_wait or
     * synchronize to report. ofl_wait.c polls this so that waits stay
     * interruptible. */
    int (*poll)(ofl_device *dev, ofl_event *ev, bool *done, ofl_error *err);
    double (*event_elapsed)(ofl_event *ev); /* seconds; < 0 when not available */
    void (*event_release)(ofl_event *ev);
    /* Loads bin and finds prog->name, filling prog->h and the limits. Called
     * WITHOUT the lock, the device opened: an OpenCL build may take a second
     * and needs no queue; the CUDA backend takes the lock itself. */
    int (*build)(ofl_program *prog, ofl_binary_kind kind, const void *bin, size_t size,
                 ofl_error *err);
    void (*program_release)(ofl_program *prog); /* lock held; prog may be stale */
    /* Queues prog: arguments checked, buffers and prog current, every
     * global[d] a multiple of local[d] (unused dimensions 1). ev non-NULL:
     * record the launch's device time into it. */
    int (*launch)(ofl_program *prog, unsigned ndim, const size_t global[3], const size_t local[3],
                  const ofl_arg *args, size_t nargs, ofl_event *ev, ofl_error *err);
    /* Host memory as a buffer the device uses in place where it can (NULL:
     * the backend cannot), and making the device's writes to it visible to
     * the host; lock held, queue drained. */
    int (*wrap_host)(ofl_device *dev, void *host, size_t bytes, ofl_buffer *buf, ofl_error *err);
    int (*sync_host)(ofl_buffer *buf, size_t off, size_t n, ofl_error *err);
    /* The whole buffer mapped into the host's address space (NULL: the
     * backend cannot), and unmapped; lock held, queue drained. A map that
     * does not block is valid after the next synchronize. */
    void *(*map)(ofl_buffer *buf, bool write, bool blocking, ofl_error *err);
    int (*unmap)(ofl_buffer *buf, void *p, ofl_error *err);
    /* Between two devices of this backend (NULL: through the host): dst's
     * lock held and its queue drained, src's queue drained; waited for. */
    int (*copy_peer)(ofl_buffer *dst, size_t doff, ofl_buffer *src, size_t soff, size_t n,
                     ofl_error *err);
    /* Blocks in the runtime's own wait until what was queued before the call
     * has run, so that the runtime can put the calling thread to work (for
     * devices that say lend_waits; errors are for the waits to report).
     * Called WITHOUT the lock, by ofl_wait.c's helper thread. */
    void (*lend)(ofl_device *dev);
} ofl_backend_ops;

struct ofl_lender; /* ofl_wait.c */

typedef struct ofl_cuda_compiler ofl_cuda_compiler; /* ofl_cuda_compiler.h */

struct ofl_device {
    ofl_device_info info;
    const ofl_backend_ops *ops;
    pthread_mutex_t lock; /* guards the queue, and opening */
    bool opened;
    unsigned generation;   /* contexts reset so far; written with the lock (and CUDA's gate) */
    char last_kernel[128]; /* the last kernel launched, for fault messages; "" before any */
    char reset_after[160]; /* why the last reset happened: "kernel 'k' faulted" */
    bool lost; /* unusable for the rest of the process (a CUDA driver that keeps faults) */
    /* ofl_wait.c: the cancel flag (made by the backend's open, and again
     * after a CUDA reset), and the queue's state, with the lock */
    volatile int *cancel_word; /* the host's view of the flag; NULL: none */
    ofl_buffer *cancel;        /* the kernels' view, passed by ofl_cancel_arg */
    bool busy;                 /* work was queued since the queue was last seen empty */
    bool cancelling;           /* the flag is set and cancelled work may still run */
    /* The runtime works on the threads that wait in its blocking calls too
     * (Intel's CPU runtime): long waits lend it a thread (ops->lend), which
     * ofl_wait.c starts at the first; set by the backend's open. */
    bool lend_waits;
    struct ofl_lender *lender;
    /* identity, to list an NVIDIA GPU once when OpenCL shows it too */
    bool has_uuid, has_pci;
    unsigned char uuid[16];
    int pci_domain; /* -1: unknown (NVIDIA's OpenCL query may lack it) */
    unsigned pci_bus, pci_dev, pci_fn;
    union {
        struct {
            cl_platform_id platform;
            cl_device_id id;
            int platform_version; /* 120, 200, 300 ... */
            cl_context ctx;
            cl_command_queue queue;
            cl_event drain; /* the marker poll(NULL) waits for; NULL: none queued */
            /* builds SPIR-V apart (ofl_buildproc.c); NULL: in this process */
            struct ofl_buildproc *builder;
            /* PoCL builds a kernel's code at its first launch for each
             * work-group size, in its own worker thread; those launches are
             * watched (ofl_opencl.c, "builds at launch"), oldest first, under
             * watch_lock (never held across a wait) */
            bool builds_at_launch;
            pthread_mutex_t watch_lock;
            struct {
                cl_event ev;  /* the launch's, retained */
                double since; /* monotonic seconds when first seen building; 0: not yet */
                char kernel[96];
            } watch[8];
            int nwatch;
            /* released buffers kept for reuse, oldest first (ofl_opencl.c says why) */
            struct {
                cl_mem mem;
                size_t size;
            } pool[16];
            int npool;
            size_t pooled; /* their bytes */
        } cl;
        struct {
            CUdevice dev;
            CUcontext ctx; /* the primary context, retained at open */
            CUstream stream;
            void *stage[2];    /* pinned chunks for large uploads (ofl_cuda.c); NULL until used */
            CUevent staged[2]; /* each chunk's upload has left it */
            CUresult fault;    /* a sticky fault seen under the lock; leaving resets */
            CUresult lost;     /* the fault that the reset could not clear (see lost) */
            /* Event calls run without the lock (a wait may be long); they
             * hold this for reading, the context reset for writing. */
            pthread_rwlock_t gate;
            ofl_cuda_compiler *compiler; /* the thread that loads PTX; NULL: none */
            /* GPUs (bit: CUDA ordinal) whose memory this context asked to
             * reach directly; cleared by a reset */
            uint64_t peers_asked;
            struct ofl_cuda_math *math; /* vendor libraries' handles (ofl_cuda_math.c) */
        } cu;
    } h;
};

struct ofl_buffer {
    ofl_device *dev;
    size_t size;         /* as asked; a zero-size buffer holds one byte underneath */
    bool foreign;        /* ofl_buffer_wrap: the memory is someone else's, never freed here */
    void *host;          /* ofl_buffer_wrap_host: the host memory it stands for, else NULL */
    bool queue_ordered;  /* freeing it waits for nothing: the queue's earlier work still sees
                            it (OpenCL's release; CUDA's stream-ordered pool), set by alloc */
    unsigned generation; /* dev->generation at allocation */
    union {
        cl_mem mem;
        CUdeviceptr ptr;
    } h;
};

/* A span of queued work on one device. OpenCL: first and last are command
 * events (the same event for a single command; two markers for a span), and
 * the span runs from first's start (single) or end (markers) to last's end.
 * CUDA: two timing events recorded on the device's stream. */
struct ofl_event {
    ofl_device *dev;
    unsigned generation; /* dev->generation at its first mark */
    union {
        struct {
            cl_event first, last;
        } cl;
        struct {
            CUevent start, end;
        } cu;
    } h;
};

/* One entry point on one device. What a launch needs is asked once, at the
 * build, so that a launch makes no driver query. */
struct ofl_program {
    ofl_device *dev;
    unsigned generation; /* dev->generation at the build */
    size_t max_threads;  /* the largest work-group the kernel can run with there (>= 1) */
    long nparams;        /* the kernel's parameter count; -1 when the driver cannot say */
    bool vectorizer_off; /* built so after its compiler crashed (ofl_buildproc.c) */
    size_t *param_size;  /* each parameter's size in bytes (CUDA 12.4+); else NULL */
    union {
        struct {
            cl_program program;
            cl_kernel kernel;
            /* the launch shapes PoCL has built code for (builds at launch);
             * once full, every later new shape is watched */
            uint64_t shapes[8];
            int nshapes;
        } cl;
        struct {
            CUmodule module;
            CUfunction fn;
            /* The full build that replaces a quick first one (ofl_cuda_compiler.c):
             * set once, by the tuner thread, tuned_fn last (atomically); launches
             * take it when their work-group fits tuned_max. */
            CUlibrary tuned_lib; /* context-independent: outlives a reset */
            CUfunction tuned_fn;
            size_t tuned_max;
        } cu;
    } h;
    size_t name_len;
    char name[]; /* the entry point */
};

/* The files below call downward only, in this order (scripts/check-layers):
 *   ofl_filter > ofl_cuda_math > ofl_program > ofl_memory > ofl_registry >
 *   ofl_opencl, ofl_cuda > ofl_buildproc, ofl_bincache, ofl_cuda_compiler > ofl_wait > ofl_device >
 *   ofl_util,
 *   ofl_cuda_api. */

/* ---- ofl_program.c, for work queued outside ofl_launch ---- */

/* Work queued outside ofl_launch (the vendor libraries', ofl_cuda_math.c),
 * with dev's lock held: a span begun before it and ended after (queued: the
 * work was queued) counts as a launch -- ofl_synchronize_launched waits for
 * it, and while timing is on its device time is recorded (no program's). */
ofl_event *ofl_timing_span_begin(ofl_device *dev); /* NULL: not timed */
void ofl_timing_span_end(ofl_device *dev, ofl_event *tev, bool queued);

/* ---- ofl_util.c: errors and words for messages ---- */

/* Fills err (may be NULL) and returns code, so that callers can write
 * `return ofl_fail(err, OFL_ERR_INVALID, "...", ...);`. */
int ofl_fail(ofl_error *err, ofl_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends to err->msg (truncating), for messages built in steps. */
void ofl_append(ofl_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends intro and a driver's build log to err->msg, trimmed to fit (the
 * head kept: it holds the first error), or " (the driver gave no log)". */
void ofl_append_log(ofl_error *err, const char *intro, const char *log);
/* "1.5 GiB", "512 bytes": powers of 1024, into buf (32 bytes is plenty). */
const char *ofl_size_str(uint64_t bytes, char *buf, size_t len);
/* The most seconds one build of a kernel may take (OFFLOAD_BUILD_TIMEOUT,
 * else OFL_BUILD_TIMEOUT_DEFAULT: some 20 times the slowest real build seen,
 * PoCL's 5 s count_nonzero on a loaded machine). A compiler that runs past
 * it is taken to loop: its build is a DeviceError. OFL_ERR_INVALID (and the
 * default in *seconds) where the variable is not a positive number. */
#define OFL_BUILD_TIMEOUT_DEFAULT 120
int ofl_build_timeout(double *seconds, ofl_error *err);
const char *ofl_type_word(ofl_device_type type);   /* "gpu" */
const char *ofl_backend_word(ofl_backend backend); /* "cuda" */

/* ---- ofl_device.c: the device object and its lock ---- */

typedef struct {
    ofl_device **v;
    size_t n, cap;
} ofl_devlist;

ofl_device *ofl_device_new(const ofl_backend_ops *ops); /* zeroed, lock ready; NULL: no memory */
void ofl_device_delete(ofl_device *dev);
bool ofl_devlist_add(ofl_devlist *list, ofl_device *dev); /* false: no memory (dev deleted) */
/* Takes dev's lock and opens it at first use; unlock with ofl_device_unlock. */
int ofl_device_lock(ofl_device *dev, ofl_error *err);
void ofl_device_unlock(ofl_device *dev);
/* For a buffer, program or event of an older generation than its device:
 * OFL_ERR_DEVICE, "<what> in cuda:gpu:0's context that was reset after kernel
 * 'k' faulted; <consequence>". Call with the device's lock held. */
int ofl_stale_fail(ofl_error *err, const ofl_device *dev, const char *what,
                   const char *consequence);

/* ---- ofl_wait.c: interruptible waits and cancellation, one device ---- */

/* With dev's lock held: waits for everything queued there, in slices, asking
 * the interrupt check between them (ofl_runtime.h says what an interrupt
 * does), then reports queued work's failure as synchronize does. The cancel
 * flag of work cancelled earlier is cleared on the way. */
int ofl_wait_queue(ofl_device *dev, ofl_error *err);
/* With the lock held, before queueing work: waits for cancelled work still
 * running (interruptibly) and clears the flag, so the new work runs whole. */
int ofl_wait_settle(ofl_device *dev, ofl_error *err);
/* For a wait on something other than a device (a build in a helper
 * process), every 20 ms as device waits do: whether an interrupt came (it is
 * taken). Call without the GIL, and without a lock that a thread holding the
 * GIL may wait for. */
bool ofl_interrupted(void);
/* For a backend's open: dev->cancel, a foreign buffer (never freed) that
 * the backend then points at the flag; NULL without memory. */
ofl_buffer *ofl_cancel_buffer(ofl_device *dev);
/* Raises dev's cancel flag when it has work queued (ofl_cancel_queued). */
void ofl_cancel_device(ofl_device *dev);

/* ---- the backends, for the registry ---- */

/* Each fills list with its devices in the driver's order; note gets a short
 * reason when the backend has none ("no CUDA driver (...)"), else "". */
void ofl_opencl_discover(ofl_devlist *list, char *note, size_t notelen);
/* ofl_icd.c: appends to ps[0..np) (at most max) the platforms of OpenCL
 * runtimes installed under the prefixes ofl_set_runtime_prefixes named, those
 * not there already; returns the new count. A runtime that does not load adds
 * a sentence to note. */
cl_uint ofl_icd_add_platforms(cl_platform_id *ps, cl_uint np, cl_uint max, char *note,
                              size_t notelen);
/* The same for one vendor library that dlopen opened (also used by
 * offload-clbuild, which links ofl_icd.c alone). */
cl_uint ofl_icd_library_platforms(void *lib, cl_platform_id *ps, cl_uint np, cl_uint max);
/* ofl_buildproc.c: SPIR-V builds in a helper process, for a compiler that
 * may crash. open: NULL where no helper can serve the device (none
 * installed, a platform whose vendor library is unknown, or
 * OFFLOAD_BUILD_IN_PROCESS set); it lives as long as the process, and
 * starts no helper: the first build does. build: 0 when the compiler answered: *status is
 * clBuildProgram's, *bytes (malloc'd, *n of them and a NUL) the program
 * binary or, on failure, the build log; prog->vectorizer_off is set when
 * the answer came with the vectorizer off, after a crash. OFL_ERR_DEVICE
 * when it crashed both ways (err quotes it); OFL_BUILDPROC_HERE when no
 * helper runs: build in this process. */
typedef struct ofl_buildproc ofl_buildproc;
enum { OFL_BUILDPROC_HERE = -1 };
ofl_buildproc *ofl_buildproc_open(cl_platform_id platform, const char *device);
int ofl_buildproc_build(ofl_buildproc *b, ofl_program *prog, const void *il, size_t size,
                        cl_int *status, unsigned char **bytes, size_t *n, ofl_error *err);
/* ofl_bincache.c: built program binaries on disk (its header says where
 * and why). key: false where the cache is off (OFFLOAD_CACHE=0); parts are
 * the strings besides the source that decide the binary (device, driver and
 * platform versions, options). load: the binary (malloc'd, *n bytes; *flags
 * as stored) or NULL for a miss, deleting an entry that does not check out.
 * store: written whole or not at all. drop: deletes the entry (a binary the
 * driver refused). */
typedef struct {
    unsigned char digest[32];
} ofl_binkey;
bool ofl_bincache_key(ofl_binkey *k, const void *src, size_t n, const char *const parts[],
                      size_t nparts);
unsigned char *ofl_bincache_load(const ofl_binkey *k, size_t *n, uint32_t *flags);
void ofl_bincache_store(const ofl_binkey *k, const void *bin, size_t n, uint32_t flags);
void ofl_bincache_drop(const ofl_binkey *k);
void ofl_cuda_discover(ofl_devlist *list, char *note, size_t notelen);
/* fn(dev, arg, err) with dev's lock held and its context current, for
 * ofl_cuda_math.c's vendor calls, which queue on dev->h.cu.stream; a fault
 * fn reports with ofl_cuda_fail resets the context as a launch's would. */
int ofl_cuda_call(ofl_device *dev, int (*fn)(ofl_device *, void *, ofl_error *), void *arg,
                  ofl_error *err);
int ofl_cuda_fail(ofl_error *err, ofl_device *dev, const char *call, CUresult rc);
/* Stream-ordered scratch memory from dev's pool (plain cuMemAlloc where the
 * driver has none); inside ofl_cuda_call. Freed in stream order. */
int ofl_cuda_scratch(ofl_device *dev, size_t bytes, CUdeviceptr *out, ofl_error *err);
void ofl_cuda_scratch_free(ofl_device *dev, CUdeviceptr p);
extern const ofl_backend_ops ofl_opencl_ops, ofl_cuda_ops;

/* ---- ofl_registry.c ---- */

/* The backend's note from discovery ("" when it found devices). */
const char *ofl_backend_note(ofl_backend backend);

/* ---- ofl_memory.c, for the launcher ---- */

/* Times the work queued between the two calls (each takes the lock itself):
 * ofl_event_begin, enqueue, ofl_event_end, then ofl_event_wait / _elapsed. */
int ofl_event_begin(ofl_device *dev, ofl_event **out, ofl_error *err);
int ofl_event_end(ofl_event *ev, ofl_error *err);

#endif
