/* ofl_memory: buffers, copies, synchronisation and events, independent of the
 * backend: argument and range checks, the device's lock, opening a device at
 * its first use, copies between devices through the host. The backends do
 * the rest (see ofl_backend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_backend.h"

/* Host bounce buffer for copies between devices: big enough to keep the
 * transfers efficient, small enough not to double a large array in RAM. */
#define BOUNCE (64u << 20)

/* With the buffer's device locked. */
static int check_current(const ofl_buffer *buf, ofl_error *err) {
    if (buf->generation == buf->dev->generation) return 0;
    return ofl_stale_fail(err, buf->dev, "this array lived", "its contents are lost");
}

int ofl_alloc(ofl_device *dev, size_t bytes, ofl_buffer **out, ofl_error *err) {
    *out = NULL;
    if (!dev) return ofl_fail(err, OFL_ERR_INVALID, "no device given");
    const ofl_device_info *in = &dev->info;
    if (bytes > in->max_mem_alloc_size) {
        char want[32], most[32];
        return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY,
                        "cannot allocate %s on %s (%s): one allocation there may be at "
                        "most %s (max_mem_alloc_size)",
                        ofl_size_str(bytes, want, sizeof want), in->filter, in->name,
                        ofl_size_str(in->max_mem_alloc_size, most, sizeof most));
    }
    ofl_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory allocating a buffer");
    buf->dev = dev;
    buf->size = bytes;
    int rc = ofl_device_lock(dev, err);
    if (rc == 0) {
        buf->generation = dev->generation;
        rc = dev->ops->alloc(dev, bytes ? bytes : 1, buf, err); /* drivers refuse 0 */
        ofl_device_unlock(dev);
    }
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    return 0;
}

void ofl_free(ofl_buffer *buf) {
    if (!buf) return;
    ofl_device *dev = buf->dev;
    pthread_mutex_lock(&dev->lock); /* a buffer exists only on an opened device */
    /* Queued work may still use the buffer, unless the backend frees in queue
     * order: wait for it (its failure is reported by the next ofl_synchronize
     * or read, not here). Foreign memory goes back to its owner after this. */
    if (dev->opened && (buf->foreign || !buf->queue_ordered)) dev->ops->synchronize(dev, NULL);
    /* a stale buffer's memory went with its context (and so may the device's
     * open state, should reopening after the reset have failed) */
    if (!buf->foreign && buf->generation == dev->generation) dev->ops->free(buf);
    pthread_mutex_unlock(&dev->lock);
    free(buf);
}

ofl_device *ofl_buffer_device(const ofl_buffer *buf) { return buf ? buf->dev : NULL; }
size_t ofl_buffer_size(const ofl_buffer *buf) { return buf ? buf->size : 0; }

uint64_t ofl_buffer_address(const ofl_buffer *buf) {
    return buf && buf->dev->info.backend == OFL_CUDA ? (uint64_t)buf->h.ptr : 0;
}

int ofl_buffer_wrap(ofl_device *dev, uint64_t address, size_t bytes, ofl_buffer **out,
                    ofl_error *err) {
    *out = NULL;
    if (!dev) return ofl_fail(err, OFL_ERR_INVALID, "no device given");
    if (dev->info.backend != OFL_CUDA)
        return ofl_fail(err, OFL_ERR_INVALID,
                        "%s (%s): only CUDA memory can be wrapped (OpenCL memory has no address)",
                        dev->info.filter, dev->info.name);
    if (!address && bytes)
        return ofl_fail(err, OFL_ERR_INVALID, "%s: cannot wrap a null address", dev->info.filter);
    ofl_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory wrapping a buffer");
    int rc = ofl_device_lock(dev, err); /* opens it: copies and ofl_free need its context */
    if (rc) {
        free(buf);
        return rc;
    }
    buf->generation = dev->generation;
    ofl_device_unlock(dev);
    buf->dev = dev;
    buf->size = bytes;
    buf->foreign = true;
    buf->h.ptr = (CUdeviceptr)address;
    *out = buf;
    return 0;
}

int ofl_buffer_wrap_host(ofl_device *dev, void *host, size_t bytes, ofl_buffer **out,
                         ofl_error *err) {
    *out = NULL;
    if (!dev) return ofl_fail(err, OFL_ERR_INVALID, "no device given");
    if (!dev->ops->wrap_host || dev->info.type != OFL_CPU)
        return ofl_fail(err, OFL_ERR_INVALID,
                        "%s (%s): only an OpenCL CPU device uses host memory in place",
                        dev->info.filter, dev->info.name);
    if (!host || !bytes)
        return ofl_fail(err, OFL_ERR_INVALID, "%s: no host memory to use", dev->info.filter);
    ofl_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory wrapping a buffer");
    buf->dev = dev;
    buf->size = bytes;
    buf->host = host; /* queue_ordered stays false: ofl_free waits before the memory goes */
    int rc = ofl_device_lock(dev, err);
    if (rc == 0) {
        buf->generation = dev->generation;
        rc = dev->ops->wrap_host(dev, host, bytes, buf, err);
        ofl_device_unlock(dev);
    }
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    return 0;
}

void *ofl_buffer_host(const ofl_buffer *buf) { return buf ? buf->host : NULL; }

/* With the lock held, before a blocking transfer: queued kernels finish
 * first, interruptibly (the driver's blocking call would wait for them with
 * no ear for an interrupt, however long they run). */
static int drain(ofl_device *dev, ofl_error *err) {
    return dev->busy || dev->cancelling ? ofl_wait_queue(dev, err) : 0;
}

static int check_range(const ofl_buffer *buf, size_t off, size_t n, const char *what,
                       ofl_error *err) {
    if (!buf) return ofl_fail(err, OFL_ERR_INVALID, "%s: no buffer given", what);
    if (off > buf->size || n > buf->size - off)
        return ofl_fail(err, OFL_ERR_INVALID,
                        "%s: bytes %zu to %zu are outside the %zu-byte buffer on %s (%s)", what,
                        off, off + n, buf->size, buf->dev->info.filter, buf->dev->info.name);
    return 0;
}

int ofl_write(ofl_buffer *dst, size_t offset, const void *src, size_t bytes, ofl_error *err) {
    int rc = check_range(dst, offset, bytes, "write", err);
    if (rc || bytes == 0) return rc;
    if (!src) return ofl_fail(err, OFL_ERR_INVALID, "write: no source given");
    if ((rc = ofl_device_lock(dst->dev, err)) != 0) return rc;
    if ((rc = check_current(dst, err)) == 0 && (rc = drain(dst->dev, err)) == 0)
        rc = dst->dev->ops->write(dst, offset, src, bytes, err);
    ofl_device_unlock(dst->dev);
    return rc;
}

int ofl_read(ofl_buffer *src, size_t offset, void *dst, size_t bytes, ofl_error *err) {
    int rc = check_range(src, offset, bytes, "read", err);
    if (rc || bytes == 0) return rc;
    if (!dst) return ofl_fail(err, OFL_ERR_INVALID, "read: no destination given");
    if ((rc = ofl_device_lock(src->dev, err)) != 0) return rc;
    if ((rc = check_current(src, err)) == 0 && (rc = drain(src->dev, err)) == 0)
        rc = src->dev->ops->read(src, offset, dst, bytes, err);
    ofl_device_unlock(src->dev);
    return rc;
}

int ofl_buffer_sync_host(ofl_buffer *buf, size_t offset, size_t bytes, ofl_error *err) {
    if (!buf || !buf->host) return ofl_fail(err, OFL_ERR_INVALID, "sync: no host-memory buffer");
    int rc = check_range(buf, offset, bytes, "sync", err);
    if (rc || bytes == 0) return rc;
    if ((rc = ofl_device_lock(buf->dev, err)) != 0) return rc;
    if ((rc = check_current(buf, err)) == 0 && (rc = drain(buf->dev, err)) == 0)
        rc = buf->dev->ops->sync_host(buf, offset, bytes, err);
    ofl_device_unlock(buf->dev);
    return rc;
}

int ofl_buffers_map(ofl_buffer *const *bufs, const bool *write, void **out, int n, ofl_error *err) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    if (n == 0) return 0;
    ofl_device *dev = bufs[0]->dev;
    for (int i = 0; i < n; i++)
        if (bufs[i]->dev != dev || !dev->ops->map || dev->info.type != OFL_CPU)
            return ofl_fail(err, OFL_ERR_INVALID, "%s (%s): its memory is not the host's to map",
                            bufs[i]->dev->info.filter, bufs[i]->dev->info.name);
    int rc = ofl_device_lock(dev, err);
    if (rc) return rc;
    for (int i = 0; i < n && rc == 0; i++) rc = check_current(bufs[i], err);
    if (rc == 0) rc = drain(dev, err);
    /* queued together and waited for once: PoCL's wait costs more than a map */
    for (int i = 0; i < n && rc == 0; i++)
        if (!(out[i] = dev->ops->map(bufs[i], write[i], false, err))) rc = OFL_ERR_DEVICE;
    if (rc == 0) rc = dev->ops->synchronize(dev, err);
    for (int i = 0; i < n && rc; i++)
        if (out[i]) dev->ops->unmap(bufs[i], out[i], NULL), out[i] = NULL;
    ofl_device_unlock(dev);
    return rc;
}

int ofl_buffer_unmap(ofl_buffer *buf, void *p, ofl_error *err) {
    int rc = ofl_device_lock(buf->dev, err);
    if (rc == 0) {
        rc = buf->dev->ops->unmap(buf, p, err);
        ofl_device_unlock(buf->dev);
    }
    return rc;
}

/* Through host memory, in pieces; backwards when the regions overlap with the
 * destination after the source, so that the result is memmove's. */
static int copy_via_host(ofl_buffer *dst, size_t doff, ofl_buffer *src, size_t soff, size_t n,
                         ofl_error *err) {
    size_t chunk = n < BOUNCE ? n : BOUNCE;
    char *tmp = malloc(chunk);
    if (!tmp) {
        char sz[32];
        return ofl_fail(
            err, OFL_ERR_OUT_OF_MEMORY, "out of host memory for a %s copy buffer between %s and %s",
            ofl_size_str(chunk, sz, sizeof sz), src->dev->info.filter, dst->dev->info.filter);
    }
    bool backward = dst == src && doff > soff;
    int rc = 0;
    for (size_t done = 0; done < n && rc == 0; done += chunk) {
        size_t k = n - done < chunk ? n - done : chunk;
        size_t at = backward ? n - done - k : done;
        rc = ofl_read(src, soff + at, tmp, k, err);
        if (rc == 0) rc = ofl_write(dst, doff + at, tmp, k, err);
    }
    free(tmp);
    return rc;
}

/* Device to device where the backend can (GPU peers): src's queue drained
 * under its lock, then the copy under dst's, never both locks at once. */
static int copy_peer(ofl_buffer *dst, size_t doff, ofl_buffer *src, size_t soff, size_t n,
                     ofl_error *err) {
    int rc = ofl_device_lock(src->dev, err);
    if (rc) return rc;
    if ((rc = check_current(src, err)) == 0) rc = drain(src->dev, err);
    ofl_device_unlock(src->dev);
    if (rc || (rc = ofl_device_lock(dst->dev, err)) != 0) return rc;
    if ((rc = check_current(dst, err)) == 0 && (rc = drain(dst->dev, err)) == 0)
        rc = dst->dev->ops->copy_peer(dst, doff, src, soff, n, err);
    ofl_device_unlock(dst->dev);
    return rc;
}

int ofl_copy(ofl_buffer *dst, size_t dst_offset, ofl_buffer *src, size_t src_offset, size_t bytes,
             ofl_error *err) {
    int rc = check_range(dst, dst_offset, bytes, "copy to", err);
    if (rc == 0) rc = check_range(src, src_offset, bytes, "copy from", err);
    if (rc || bytes == 0 || (dst == src && dst_offset == src_offset)) return rc;
    bool overlap = dst == src && dst_offset < src_offset + bytes &&
                   src_offset < dst_offset + bytes; /* drivers refuse or misbehave */
    if (dst->dev != src->dev && dst->dev->ops == src->dev->ops && dst->dev->ops->copy_peer)
        return copy_peer(dst, dst_offset, src, src_offset, bytes, err);
    if (dst->dev != src->dev || overlap)
        return copy_via_host(dst, dst_offset, src, src_offset, bytes, err);
    if ((rc = ofl_device_lock(dst->dev, err)) != 0) return rc;
    if ((rc = check_current(dst, err)) == 0 && (rc = check_current(src, err)) == 0 &&
        (rc = drain(dst->dev, err)) == 0)
        rc = dst->dev->ops->copy(dst, dst_offset, src, src_offset, bytes, err);
    ofl_device_unlock(dst->dev);
    return rc;
}

/* ---- events ---- */

int ofl_event_begin(ofl_device *dev, ofl_event **out, ofl_error *err) {
    *out = NULL;
    ofl_event *ev = calloc(1, sizeof *ev);
    if (!ev) return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory for an event");
    ev->dev = dev;
    int rc = ofl_device_lock(dev, err);
    if (rc == 0) {
        ev->generation = dev->generation;
        rc = dev->ops->mark(ev, false, err);
        ofl_device_unlock(dev);
    }
    if (rc) {
        if (dev) dev->ops->event_release(ev);
        free(ev);
        return rc;
    }
    *out = ev;
    return 0;
}

int ofl_event_end(ofl_event *ev, ofl_error *err) {
    if (!ev) return ofl_fail(err, OFL_ERR_INVALID, "no event given");
    int rc = ofl_device_lock(ev->dev, err);
    if (rc) return rc;
    rc = ev->generation != ev->dev->generation
             ? ofl_stale_fail(err, ev->dev, "this event began", "what it timed is lost")
             : ev->dev->ops->mark(ev, true, err);
    ofl_device_unlock(ev->dev);
    return rc;
}

double ofl_event_elapsed(ofl_event *ev) { return ev ? ev->dev->ops->event_elapsed(ev) : -1.0; }

void ofl_event_release(ofl_event *ev) {
    if (!ev) return;
    ev->dev->ops->event_release(ev);
    free(ev);
}
