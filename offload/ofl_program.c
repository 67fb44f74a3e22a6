/* ofl_program: programs and launches, independent of the backend: which
 * binary a device takes, argument checks, the choice of work-group size, the
 * device's lock, the event around a launch, and refusing programs and buffers
 * of a context that was reset. The backends load and queue (ofl_backend.h).
 *
 * A launch is on the hot path of every Python-level kernel call, so it
 * allocates nothing (but the event when one is asked for) and asks the
 * driver nothing: what it needs to know was asked once, at the build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofl_backend.h"

ofl_binary_kind ofl_device_binary_kind(const ofl_device *dev) {
    if (!dev) return OFL_BIN_NONE;
    const ofl_device_info *in = &dev->info;
    if (in->backend == OFL_CUDA) return OFL_BIN_PTX;
    if (in->backend != OFL_OPENCL) return OFL_BIN_NONE;
    if (in->il_version[0] && strstr(in->il_version, "SPIR-V")) return OFL_BIN_SPIRV;
    return in->has_spir ? OFL_BIN_SPIR12 : OFL_BIN_NONE;
}

/* A device with both SPIR-V and cl_khr_spir takes either; the JIT is told
 * the preferred one by ofl_device_binary_kind. */
static bool device_takes(const ofl_device *dev, ofl_binary_kind kind) {
    const ofl_device_info *in = &dev->info;
    switch (kind) {
    case OFL_BIN_PTX: return in->backend == OFL_CUDA;
    case OFL_BIN_SPIRV: return ofl_device_binary_kind(dev) == OFL_BIN_SPIRV;
    case OFL_BIN_SPIR12: return in->backend == OFL_OPENCL && in->has_spir;
    case OFL_BIN_NONE: break;
    }
    return false;
}

static const char *kind_word(ofl_binary_kind kind) {
    switch (kind) {
    case OFL_BIN_SPIRV: return "SPIR-V";
    case OFL_BIN_SPIR12: return "SPIR 1.2 bitcode";
    case OFL_BIN_PTX: return "PTX";
    case OFL_BIN_NONE: break;
    }
    return "no binary form offload knows";
}

void ofl_append_log(ofl_error *err, const char *intro, const char *log) {
    if (!err) return;
    while (*log == ' ' || *log == '\n' || *log == '\r' || *log == '\t') log++;
    size_t n = strlen(log);
    while (n && (log[n - 1] == ' ' || log[n - 1] == '\n' || log[n - 1] == '\r')) n--;
    if (n == 0) {
        ofl_append(err, " (the driver gave no log)");
        return;
    }
    /* the first lines hold the first error, the one worth reading: keep the
     * head and say where it was cut */
    size_t used = strlen(err->msg), intro_len = strlen(intro);
    size_t room = sizeof err->msg - 1 - used;
    if (room < intro_len + 16) return;
    if (intro_len + n > room) {
        static const char cut[] = " [...]";
        n = room - intro_len - (sizeof cut - 1);
        ofl_append(err, "%s%.*s%s", intro, (int)n, log, cut);
    } else {
        ofl_append(err, "%s%.*s", intro, (int)n, log);
    }
}

int ofl_program_build(ofl_device *dev, ofl_binary_kind kind, const void *bin, size_t size,
                      const char *entry, ofl_program **out, ofl_error *err) {
    if (!out) return ofl_fail(err, OFL_ERR_INVALID, "no place given for the program");
    *out = NULL;
    if (!dev) return ofl_fail(err, OFL_ERR_INVALID, "no device given");
    const ofl_device_info *in = &dev->info;
    if (!entry || !entry[0])
        return ofl_fail(err, OFL_ERR_INVALID, "no kernel name given to build for %s", in->filter);
    if (!bin || size == 0)
        return ofl_fail(err, OFL_ERR_INVALID, "kernel '%s': an empty binary cannot be built for %s",
                        entry, in->filter);
    if (!device_takes(dev, kind))
        return ofl_fail(err, OFL_ERR_INVALID, "kernel '%s': %s (%s) takes %s, not %s", entry,
                        in->filter, in->name, kind_word(ofl_device_binary_kind(dev)),
                        kind_word(kind));
    size_t n = strlen(entry);
    ofl_program *prog = calloc(1, sizeof *prog + n + 1);
    if (!prog) return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory for a program");
    prog->dev = dev;
    prog->nparams = -1;
    prog->name_len = n;
    memcpy(prog->name, entry, n + 1);
    int rc = ofl_device_lock(dev, err); /* opens the device: the build needs its context */
    if (rc == 0) {
        prog->generation = dev->generation;
        ofl_device_unlock(dev);
        rc = dev->ops->build(prog, kind, bin, size, err);
    }
    if (rc) {
        free(prog->param_size);
        free(prog);
        return rc;
    }
    if (prog->max_threads == 0) prog->max_threads = 1;
    *out = prog;
    return 0;
}

void ofl_program_release(ofl_program *prog) {
    if (!prog) return;
    ofl_device *dev = prog->dev;
    /* the lock orders the release after launches queued by other threads */
    pthread_mutex_lock(&dev->lock);
    dev->ops->program_release(prog);
    pthread_mutex_unlock(&dev->lock);
    free(prog->param_size);
    free(prog);
}

ofl_device *ofl_program_device(const ofl_program *prog) { return prog ? prog->dev : NULL; }

size_t ofl_program_max_work_group_size(const ofl_program *prog) {
    return prog ? prog->max_threads : 0;
}

bool ofl_program_is_stale(const ofl_program *prog) {
    return prog && prog->generation != __atomic_load_n(&prog->dev->generation, __ATOMIC_ACQUIRE);
}

/* ---- launches ---- */

static int check_args(const ofl_program *prog, const ofl_arg *args, size_t nargs,
                      ofl_error *err) {
    const ofl_device *dev = prog->dev;
    if (prog->nparams >= 0 && (size_t)prog->nparams != nargs)
        return ofl_fail(err, OFL_ERR_INVALID, "kernel '%s' takes %ld argument%s, %zu given",
                        prog->name, prog->nparams, prog->nparams == 1 ? "" : "s", nargs);
    for (size_t i = 0; i < nargs; i++) {
        const ofl_arg *a = &args[i];
        size_t have = a->size;
        if (a->buffer) {
            const ofl_device *on = a->buffer->dev;
            if (on != dev)
                return ofl_fail(err, OFL_ERR_INVALID,
                                "argument %zu of kernel '%s' is an array on %s (%s), but the "
                                "kernel runs on %s (%s): copy the array there first",
                                i, prog->name, on->info.filter, on->info.name, dev->info.filter,
                                dev->info.name);
            have = sizeof(CUdeviceptr);
        } else if (!a->value || !a->size) {
            return ofl_fail(err, OFL_ERR_INVALID, "argument %zu of kernel '%s' has no value", i,
                            prog->name);
        }
        /* a wrong size would make the driver read past the value */
        if (prog->param_size && prog->param_size[i] != have)
            return ofl_fail(err, OFL_ERR_INVALID,
                            "argument %zu of kernel '%s' is %zu bytes, but the kernel takes %zu "
                            "there",
                            i, prog->name, have, prog->param_size[i]);
    }
    return 0;
}

static void shape_str(unsigned ndim, const size_t v[3], char *buf, size_t len) {
    if (ndim == 1) snprintf(buf, len, "%zu", v[0]);
    else if (ndim == 2) snprintf(buf, len, "%zu x %zu", v[0], v[1]);
    else snprintf(buf, len, "%zu x %zu x %zu", v[0], v[1], v[2]);
}

static int check_local(const ofl_program *prog, unsigned ndim, const size_t g[3],
                       const size_t *local, size_t l[3], ofl_error *err) {
    const ofl_device_info *in = &prog->dev->info;
    size_t threads = 1;
    for (unsigned d = 0; d < ndim; d++) {
        if (local[d] == 0)
            return ofl_fail(err, OFL_ERR_INVALID,
                            "launch of kernel '%s': the work-group size is 0 in dimension %u",
                            prog->name, d);
        if (g[d] % local[d])
            return ofl_fail(err, OFL_ERR_INVALID,
                            "launch of kernel '%s' on %s: the global size %zu is not a multiple "
                            "of the work-group size %zu in dimension %u (round it up and guard "
                            "the tail, or let the runtime choose the work-group size)",
                            prog->name, in->filter, g[d], local[d], d);
        if (in->max_work_item_sizes[d] && local[d] > in->max_work_item_sizes[d])
            return ofl_fail(err, OFL_ERR_INVALID,
                            "launch of kernel '%s': a work-group of %zu in dimension %u exceeds "
                            "the %zu that %s (%s) allows there",
                            prog->name, local[d], d, in->max_work_item_sizes[d], in->filter,
                            in->name);
        l[d] = local[d];
        threads = threads > SIZE_MAX / local[d] ? SIZE_MAX : threads * local[d];
    }
    if (threads > prog->max_threads) {
        char shape[80];
        shape_str(ndim, l, shape, sizeof shape);
        return ofl_fail(err, OFL_ERR_INVALID,
                        "launch of kernel '%s': a work-group of %zu work-items (%s) exceeds the "
                        "%zu that this kernel allows on %s (%s)",
                        prog->name, threads, shape,
                        prog->max_threads, in->filter, in->name);
    }
    return 0;
}

static size_t min_z(size_t a, size_t b) { return a < b ? a : b; }
static size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }
static size_t pow2_floor(size_t v) {
    size_t p = 1;
    while (p <= v / 2) p *= 2;
    return p;
}

/* The runtime's work-group sizes. Both start from 256 work-items (enough to
 * hide latency on a GPU, few enough to run anywhere; on PoCL's CPU device one
 * work-group is one task, so larger 1-D groups cut its per-group overhead),
 * shaped for the dimensions, never larger than the global size, and give the
 * threads a short dimension leaves over to dimension 0, the fastest. */
#define GROUP 256

static void pick_local(const ofl_program *prog, unsigned ndim, const size_t g[3], size_t l[3]) {
    const ofl_device_info *in = &prog->dev->info;
    bool cuda = in->backend == OFL_CUDA;
    static const size_t shape_cu[3][3] = {{GROUP, 1, 1}, {32, 8, 1}, {32, 4, 2}};
    static const size_t shape_cl[3][3] = {{GROUP, 1, 1}, {16, 16, 1}, {16, 4, 4}};
    const size_t *shape = cuda ? shape_cu[ndim - 1] : shape_cl[ndim - 1];
    size_t most = prog->max_threads;
    if (in->max_work_group_size && in->max_work_group_size < most) most = in->max_work_group_size;
    size_t rest = 1;
    for (unsigned d = 1; d < 3; d++) {
        l[d] = d < ndim ? min_z(shape[d], g[d]) : 1;
        if (in->max_work_item_sizes[d]) l[d] = min_z(l[d], in->max_work_item_sizes[d]);
        if (l[d] == 0) l[d] = 1;
        rest *= l[d];
    }
    size_t x = GROUP / rest;
    /* CUDA schedules warps of 32 threads: keep x a whole number of them, and a
     * small global in x costs one warp, not a group of 256 */
    if (cuda) x = min_z(x / 32 * 32, round_up(g[0], 32));
    else x = min_z(pow2_floor(x), g[0]);
    if (in->max_work_item_sizes[0]) x = min_z(x, in->max_work_item_sizes[0]);
    l[0] = x ? x : 1;
    if (l[0] * rest <= most) return;
    /* the kernel allows fewer (registers, the device's limit): take threads
     * from the slow dimensions first, then from x */
    while (rest > 1 && most / rest < (cuda ? 32u : 1u)) {
        int d = l[1] >= l[2] ? 1 : 2;
        l[d] = l[d] / 2 ? l[d] / 2 : 1;
        rest = l[1] * l[2];
    }
    x = most / rest;
    if (cuda && x >= 32) x = x / 32 * 32;
    if (x < l[0]) l[0] = x ? x : 1;
}

/* CUDA's grid: 2^31-1 blocks in x, 65535 in y and z. */
static int check_grid(const ofl_program *prog, unsigned ndim, const size_t g[3],
                      const size_t l[3], ofl_error *err) {
    static const size_t most[3] = {2147483647u, 65535u, 65535u};
    for (unsigned d = 0; d < ndim; d++) {
        size_t blocks = g[d] / l[d];
        if (blocks > most[d])
            return ofl_fail(err, OFL_ERR_INVALID,
                            "launch of kernel '%s' on %s: %zu blocks in dimension %u (global "
                            "size %zu / work-group %zu) exceed CUDA's limit of %zu there%s",
                            prog->name, prog->dev->info.filter, blocks, d, g[d], l[d], most[d],
                            d ? "; give the largest extent to dimension 0 (the last SYCL "
                                "dimension, the fastest)"
                              : "");
    }
    return 0;
}

/* With the lock held: the program and its arrays must be of the device's
 * current context. */
static int check_current(const ofl_program *prog, const ofl_arg *args, size_t nargs,
                         ofl_error *err) {
    const ofl_device *dev = prog->dev;
    if (prog->generation != dev->generation) {
        char what[200];
        snprintf(what, sizeof what, "kernel '%.100s' was built", prog->name);
        return ofl_stale_fail(err, dev, what,
                              "the program is stale: release it and build it again");
    }
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].buffer && args[i].buffer->generation != dev->generation) {
            char what[200];
            snprintf(what, sizeof what, "this array (argument %zu of kernel '%.100s') lived", i,
                     prog->name);
            return ofl_stale_fail(err, dev, what, "its contents are lost");
        }
    }
    return 0;
}

int ofl_launch(ofl_program *prog, unsigned ndim, const size_t global[], const size_t *local,
               const ofl_arg *args, size_t nargs, ofl_event **ev_out, ofl_error *err) {
    if (ev_out) *ev_out = NULL;
    if (!prog) return ofl_fail(err, OFL_ERR_INVALID, "no program given to launch");
    ofl_device *dev = prog->dev;
    if (ndim < 1 || ndim > 3 || !global)
        return ofl_fail(err, OFL_ERR_INVALID,
                        "launch of kernel '%s' over %u dimensions: a launch has 1 to 3",
                        prog->name, global ? ndim : 0);
    if (nargs && !args)
        return ofl_fail(err, OFL_ERR_INVALID, "launch of kernel '%s': no arguments given",
                        prog->name);
    size_t g[3] = {1, 1, 1}, l[3] = {1, 1, 1};
    bool empty = false; /* nothing to run, but still ordered and timed */
    for (unsigned d = 0; d < ndim; d++) {
        g[d] = global[d];
        empty |= g[d] == 0;
    }
    int rc = check_args(prog, args, nargs, err);
    if (rc) return rc;
    if (!empty) {
        if (local) {
            rc = check_local(prog, ndim, g, local, l, err);
        } else {
            pick_local(prog, ndim, g, l);
            for (unsigned d = 0; d < ndim && rc == 0; d++) {
                if (g[d] > SIZE_MAX - l[d])
                    rc = ofl_fail(err, OFL_ERR_INVALID,
                                  "launch of kernel '%s': the global size %zu is too large",
                                  prog->name, g[d]);
                else
                    g[d] = round_up(g[d], l[d]); /* the kernel guards the tail */
            }
        }
        if (rc == 0 && dev->info.backend == OFL_CUDA) rc = check_grid(prog, ndim, g, l, err);
        if (rc) return rc;
    }
    ofl_event *ev = NULL;
    if (ev_out && !(ev = calloc(1, sizeof *ev)))
        return ofl_fail(err, OFL_ERR_OUT_OF_MEMORY, "out of host memory for an event");
    if (ev) ev->dev = dev;
    /* One hold of the lock for the event's marks and the launch, so that no
     * other thread's work lands inside the timed span. */
    rc = ofl_device_lock(dev, err);
    if (rc) {
        free(ev);
        return rc;
    }
    rc = check_current(prog, args, nargs, err);
    if (rc == 0) {
        if (ev) ev->generation = dev->generation;
        if (!empty) {
            rc = dev->ops->launch(prog, ndim, g, l, args, nargs, ev, err);
            if (rc == 0) { /* for the message should it fault later */
                size_t n = min_z(prog->name_len, sizeof dev->last_kernel - 1);
                memcpy(dev->last_kernel, prog->name, n);
                dev->last_kernel[n] = '\0';
            }
        } else if (ev && (rc = dev->ops->mark(ev, false, err)) == 0) {
            rc = dev->ops->mark(ev, true, err);
        }
    }
    ofl_device_unlock(dev);
    if (rc) {
        if (ev) {
            dev->ops->event_release(ev);
            free(ev);
        }
        return rc;
    }
    if (ev_out) *ev_out = ev;
    return 0;
}
