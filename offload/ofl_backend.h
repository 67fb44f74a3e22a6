/* ofl_backend: what the runtime's backends (OpenCL, CUDA) share with the
 * registry and the memory layer, and what the launcher will build on. Internal:
 * the offload Python module uses ofl_runtime.h only.
 *
 * A backend discovers its devices into a list and fills one table of
 * operations. The registry orders, deduplicates and names the devices; the
 * memory layer checks arguments, takes the device's lock, opens the device at
 * its first use and then calls the table. Backend operations therefore run
 * with the device's lock held (except the event ones) and may assume valid
 * ranges and a nonzero size. */
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
    double (*event_elapsed)(ofl_event *ev); /* seconds; < 0 when not available */
    void (*event_release)(ofl_event *ev);
} ofl_backend_ops;

struct ofl_device {
    ofl_device_info info;
    const ofl_backend_ops *ops;
    pthread_mutex_t lock; /* guards the queue, and opening */
    bool opened;
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
        } cl;
        struct {
            CUdevice dev;
            CUcontext ctx; /* the primary context, retained at open */
            CUstream stream;
            void *stage[2];    /* pinned chunks for large uploads (ofl_cuda.c); NULL until used */
            CUevent staged[2]; /* each chunk's upload has left it */
        } cu;
    } h;
};

struct ofl_buffer {
    ofl_device *dev;
    size_t size; /* as asked; a zero-size buffer holds one byte underneath */
    bool foreign; /* ofl_buffer_wrap: the memory is someone else's, never freed here */
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
    union {
        struct {
            cl_event first, last;
        } cl;
        struct {
            CUevent start, end;
        } cu;
    } h;
};

/* ---- for backends (ofl_registry.c) ---- */

typedef struct {
    ofl_device **v;
    size_t n, cap;
} ofl_devlist;

ofl_device *ofl_device_new(const ofl_backend_ops *ops); /* zeroed, lock ready; NULL: no memory */
void ofl_device_delete(ofl_device *dev);
bool ofl_devlist_add(ofl_devlist *list, ofl_device *dev); /* false: no memory (dev deleted) */

/* Each fills list with its devices in the driver's order; note gets a short
 * reason when the backend has none ("no CUDA driver (...)"), else "". */
void ofl_opencl_discover(ofl_devlist *list, char *note, size_t notelen);
void ofl_cuda_discover(ofl_devlist *list, char *note, size_t notelen);
extern const ofl_backend_ops ofl_opencl_ops, ofl_cuda_ops;

/* The backend's note from discovery ("" when it found devices). */
const char *ofl_backend_note(ofl_backend backend);

/* ---- errors and words for messages ---- */

/* Fills err (may be NULL) and returns code, so that callers can write
 * `return ofl_fail(err, OFL_ERR_INVALID, "...", ...);`. */
int ofl_fail(ofl_error *err, ofl_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends to err->msg (truncating), for messages built in steps. */
void ofl_append(ofl_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "1.5 GiB", "512 bytes": powers of 1024, into buf (32 bytes is plenty). */
const char *ofl_size_str(uint64_t bytes, char *buf, size_t len);
const char *ofl_type_word(ofl_device_type type); /* "gpu" */
const char *ofl_backend_word(ofl_backend backend); /* "cuda" */

/* ---- for the launcher ---- */

/* Takes dev's lock and opens it at first use; unlock with ofl_device_unlock. */
int ofl_device_lock(ofl_device *dev, ofl_error *err);
void ofl_device_unlock(ofl_device *dev);
/* Times the work queued between the two calls (each takes the lock itself):
 * ofl_event_begin, enqueue, ofl_event_end, then ofl_event_wait / _elapsed. */
int ofl_event_begin(ofl_device *dev, ofl_event **out, ofl_error *err);
int ofl_event_end(ofl_event *ev, ofl_error *err);

#endif
