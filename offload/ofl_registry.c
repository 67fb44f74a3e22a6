/* ofl_registry: the list of devices. Discovery runs once, at the first call
 * that needs it: both backends list their devices, an NVIDIA GPU that OpenCL
 * also lists is kept once (as cuda), and the rest are ordered GPUs first
 * (CUDA, then OpenCL), then CPUs, then accelerators and custom devices, and
 * named by canonical filter strings ("opencl:cpu:0"). The waits and the
 * cancellation that span every device live here too, beside the list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_backend.h"

static ofl_device **devices;
static size_t ndevices;
static char note_cl[256], note_cu[256], why_none[1024];
static pthread_once_t once = PTHREAD_ONCE_INIT;

const char *ofl_backend_note(ofl_backend backend) {
    size_t n;
    ofl_devices(&n, NULL);
    return backend == OFL_CUDA ? note_cu : note_cl;
}

/* Is the OpenCL device cl the CUDA device cu? UUID first (exact), then PCI
 * address, then -- for an NVIDIA driver that answers neither -- the name. */
static bool same_gpu(const ofl_device *cl, const ofl_device *cu) {
    if (cl->has_uuid && cu->has_uuid) return memcmp(cl->uuid, cu->uuid, 16) == 0;
    if (cl->has_pci && cu->has_pci)
        return cl->pci_bus == cu->pci_bus && cl->pci_dev == cu->pci_dev &&
               cl->pci_fn == cu->pci_fn && (cl->pci_domain < 0 || cl->pci_domain == cu->pci_domain);
    return strstr(cl->info.vendor, "NVIDIA") && strcmp(cl->info.name, cu->info.name) == 0;
}

static bool listed_by_cuda(const ofl_device *cl, const ofl_devlist *cu) {
    if (cl->info.type != OFL_GPU) return false;
    for (size_t i = 0; i < cu->n; i++)
        if (same_gpu(cl, cu->v[i])) return true;
    return false;
}

/* OFFLOAD_WITHOUT=fp64,atomic64: every device reports it lacks these, so a
 * notebook can be checked on a laptop for the devices that do lack them (many
 * integrated and mobile GPUs); the JIT then refuses such kernels as it would
 * there. Unknown words are ignored. */
static void apply_without(void) {
    const char *env = getenv("OFFLOAD_WITHOUT");
    if (!env) return;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *save = NULL, *w = strtok_r(buf, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
        for (size_t i = 0; i < ndevices; i++) {
            ofl_device_info *in = &devices[i]->info;
            if (strcmp(w, "fp64") == 0)
                in->has_fp64 = false;
            else if (strcmp(w, "fp16") == 0)
                in->has_fp16 = false;
            else if (strcmp(w, "atomic64") == 0)
                in->has_atomic64 = false;
        }
}

/* The order among OpenCL devices of a type, and so the default CPU: those
 * that take SPIR-V as it is (an IL version: Intel's runtimes) before those
 * that take it translated to SPIR 1.2 (PoCL). Measured on 2 cores with
 * Intel's CPU runtime 2026.2 beside PoCL 3.1: a launch + wait 11-16 us
 * against 117-132 us, a new kernel 20-26 ms against 38-350 ms, streaming
 * kernels and sums at par (BENCHMARKS.md, bench_cpu.py). */
static bool takes_il_late(const ofl_device *dev) {
    return dev->info.backend == OFL_OPENCL && !dev->info.il_version[0];
}

static void discover(void) {
    ofl_devlist cu = {0}, cl = {0};
    ofl_cuda_discover(&cu, note_cu, sizeof note_cu);
    ofl_opencl_discover(&cl, note_cl, sizeof note_cl);

    size_t kept = 0;
    for (size_t i = 0; i < cl.n; i++) {
        if (listed_by_cuda(cl.v[i], &cu))
            ofl_device_delete(cl.v[i]);
        else
            cl.v[kept++] = cl.v[i];
    }
    cl.n = kept;

    devices = calloc(cu.n + cl.n + 1, sizeof *devices);
    static const ofl_device_type order[] = {OFL_GPU, OFL_CPU, OFL_ACCELERATOR, OFL_CUSTOM};
    for (size_t t = 0; devices && t < 4; t++) {
        const ofl_devlist *lists[] = {&cu, &cl, &cl};
        for (size_t l = 0; l < 3; l++) {
            for (size_t i = 0; i < lists[l]->n; i++) {
                ofl_device *dev = lists[l]->v[i];
                if (dev->info.type != order[t] || takes_il_late(dev) != (l == 2)) continue;
                int index = 0;
                for (size_t j = 0; j < ndevices; j++)
                    index += devices[j]->info.backend == dev->info.backend &&
                             devices[j]->info.type == dev->info.type;
                dev->info.index = index;
                snprintf(dev->info.filter, sizeof dev->info.filter, "%s:%s:%d",
                         ofl_backend_word(dev->info.backend), ofl_type_word(dev->info.type), index);
                devices[ndevices++] = dev;
            }
        }
    }
    free(cu.v);
    free(cl.v);
    apply_without();

    if (ndevices == 0)
        snprintf(why_none, sizeof why_none,
                 "%s; %s. Install pocl-opencl-icd (Debian) for the CPU, and a GPU "
                 "driver: the NVIDIA driver for CUDA, intel-opencl-icd for Intel GPUs.",
                 note_cl[0] ? note_cl : "no OpenCL device",
                 note_cu[0] ? note_cu : "no CUDA device");
    else if (note_cl[0] || note_cu[0])
        snprintf(why_none, sizeof why_none, "%s%s%s", note_cl, note_cl[0] && note_cu[0] ? "; " : "",
                 note_cu);
}

ofl_device *const *ofl_devices(size_t *count, const char **why) {
    pthread_once(&once, discover);
    if (count) *count = ndevices;
    if (why) *why = why_none;
    return devices;
}

const ofl_device_info *ofl_device_get_info(const ofl_device *dev) {
    return dev ? &dev->info : NULL;
}

void ofl_describe_devices(char *out, size_t outlen) {
    size_t n, used = 0;
    const char *why;
    ofl_device *const *devs = ofl_devices(&n, &why);
    if (!out || outlen == 0) return;
    out[0] = '\0';
    if (n == 0) {
        snprintf(out, outlen, "  (none: %s)", why);
        return;
    }
    for (size_t i = 0; i < n && used < outlen; i++) {
        const ofl_device_info *in = &devs[i]->info;
        int k = snprintf(out + used, outlen - used, "%s  %-14s %s (%s)", i ? "\n" : "", in->filter,
                         in->name, in->platform);
        if (k < 0) break;
        used += (size_t)k;
    }
}

/* ---- every device ---- */

int ofl_synchronize_all(ofl_error *err) {
    size_t n = 0;
    ofl_device *const *devs = ofl_devices(&n, NULL);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        int r = ofl_synchronize(devs[i], rc ? NULL : err);
        if (r == OFL_ERR_INTERRUPTED) return r; /* the user wants control back, not more waits */
        if (!rc) rc = r;
    }
    return rc;
}

void ofl_cancel_queued(void) {
    size_t n = 0;
    ofl_device *const *devs = ofl_devices(&n, NULL);
    for (size_t i = 0; i < n; i++) ofl_cancel_device(devs[i]);
}
