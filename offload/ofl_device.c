/* ofl_device: one device object -- made by a backend's discovery, listed by
 * the registry -- and its lock, which opens the device at first use. Above
 * ofl_util only, so that backends, waits and memory can all use it. */
#include <stdlib.h>

#include "ofl_backend.h"

ofl_device *ofl_device_new(const ofl_backend_ops *ops) {
    ofl_device *dev = calloc(1, sizeof *dev);
    if (!dev) return NULL;
    if (pthread_mutex_init(&dev->lock, NULL) != 0) {
        free(dev);
        return NULL;
    }
    dev->ops = ops;
    dev->pci_domain = -1;
    dev->info.cuda_ordinal = -1;
    return dev;
}

void ofl_device_delete(ofl_device *dev) {
    if (!dev) return;
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

bool ofl_devlist_add(ofl_devlist *list, ofl_device *dev) {
    if (list->n == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 8;
        ofl_device **v = realloc(list->v, cap * sizeof *v);
        if (!v) {
            ofl_device_delete(dev);
            return false;
        }
        list->v = v, list->cap = cap;
    }
    list->v[list->n++] = dev;
    return true;
}

int ofl_device_lock(ofl_device *dev, ofl_error *err) {
    if (!dev) return ofl_fail(err, OFL_ERR_INVALID, "no device given");
    pthread_mutex_lock(&dev->lock);
    if (!dev->opened) {
        int rc = dev->ops->open(dev, err);
        if (rc) {
            pthread_mutex_unlock(&dev->lock);
            return rc;
        }
        dev->opened = true;
    }
    return 0;
}

void ofl_device_unlock(ofl_device *dev) { pthread_mutex_unlock(&dev->lock); }

int ofl_stale_fail(ofl_error *err, const ofl_device *dev, const char *what,
                   const char *consequence) {
    ofl_fail(err, OFL_ERR_DEVICE, "%s in %s's context that was reset after %s; %s", what,
             dev->info.filter, dev->reset_after[0] ? dev->reset_after : "a fault", consequence);
    if (dev->lost)
        ofl_append(err,
                   " (and %s cannot be used again in this process: restart the Jupyter "
                   "kernel, or Python, to use it)",
                   dev->info.filter);
    return OFL_ERR_DEVICE;
}
