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

/* ---- device time of launches (ofl_runtime.h says what and when) ----
 *
 * The state lives here, beside the launch that records: an entry per device
 * (the device list is fixed once discovered), made at the first launch, and
 * the totals of each program with timed launches. ofl_backend.h's structs are
 * left as they are, so a launch finds its device's entry by a short scan. */

/* Records a device keeps before a launch collects those already finished:
 * a bound on the events held, high enough that a %timeit run seldom pays for
 * a collection inside its timed loop. */
#define TIMED_BATCH 65536

typedef struct {
    ofl_event *ev;
    const ofl_program *prog; /* its totals get the time; alive until collected */
} timed_launch;

typedef struct { /* fields guarded by dev->lock */
    ofl_device *dev;
    bool launched;   /* work queued since the last ofl_synchronize_launched */
    timed_launch *v; /* recorded launches, oldest first (the queue's order) */
    size_t n, cap;
    size_t next; /* a launch that makes n reach this collects */
} dev_timing;

typedef struct {
    const ofl_program *prog;
    uint64_t ns, n;
} prog_time;

static struct {
    int on; /* ofl_timing_start minus ofl_timing_stop; atomic */
    pthread_once_t once;
    dev_timing *devs; /* one per device of ofl_devices(); published once (atomic); NULL: none yet */
    size_t ndevs;
    /* The rest under lock, held by one collector at a time and taken before
     * any device's lock: a record's event and program stay alive while it is
     * held (only collectors free events; a program's release collects first). */
    pthread_mutex_t lock;
    prog_time *progs;
    size_t nprogs, cap, last; /* last: the entry found last, tried first */
    uint64_t ns, n;           /* the process's totals */
    bool failed;              /* a collection met a failure no caller asked about yet */
    ofl_error err;
} timing = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void timing_init(void) {
    size_t n = 0;
    ofl_device *const *devs = ofl_devices(&n, NULL);
    dev_timing *t = n ? calloc(n, sizeof *t) : NULL;
    if (!t) return; /* launches then go unrecorded, never failed */
    for (size_t i = 0; i < n; i++) t[i].dev = devs[i], t[i].next = TIMED_BATCH;
    timing.ndevs = n;
    __atomic_store_n(&timing.devs, t, __ATOMIC_RELEASE);
}

/* The entries, or NULL before any launch (then nothing was recorded). */
static dev_timing *timing_devs(size_t *n) {
    dev_timing *d = __atomic_load_n(&timing.devs, __ATOMIC_ACQUIRE);
    *n = d ? timing.ndevs : 0;
    return d;
}

/* dev's entry, made with the others at the first call; NULL without memory. */
static dev_timing *timing_of(const ofl_device *dev) {
    pthread_once(&timing.once, timing_init);
    size_t n;
    dev_timing *d = timing_devs(&n);
    for (size_t i = 0; i < n; i++)
        if (d[i].dev == dev) return &d[i];
    return NULL;
}

/* prog's totals, made when asked to; with timing.lock held. */
static prog_time *prog_slot(const ofl_program *prog, bool make) {
    if (timing.last < timing.nprogs && timing.progs[timing.last].prog == prog)
        return &timing.progs[timing.last];
    for (size_t i = 0; i < timing.nprogs; i++)
        if (timing.progs[i].prog == prog) return &timing.progs[timing.last = i];
    if (!make) return NULL;
    if (timing.nprogs == timing.cap) {
        size_t cap = timing.cap ? timing.cap * 2 : 16;
        prog_time *p = realloc(timing.progs, cap * sizeof *p);
        if (!p) return NULL; /* the process's totals still get the time */
        timing.progs = p, timing.cap = cap;
    }
    timing.progs[timing.nprogs] = (prog_time){prog, 0, 0};
    return &timing.progs[timing.last = timing.nprogs++];
}

/* Moves dt's first `done` records into the totals, then those after them
 * whose launches have finished (an event that is not done yet gives no time);
 * drops the records moved. With timing.lock and the device's lock held. */
static void take_records(dev_timing *dt, size_t done) {
    ofl_device *dev = dt->dev;
    size_t k = 0;
    for (; k < dt->n; k++) {
        ofl_event *ev = dt->v[k].ev;
        double s = dev->ops->event_elapsed(ev);
        if (s < 0 && k >= done) break;
        if (s >= 0) { /* < 0 among the done ones: untimed (a reset context's, say) */
            uint64_t ns = (uint64_t)(s * 1e9 + 0.5);
            timing.ns += ns, timing.n++;
            /* a library's span has no program (ofl_timing_span_begin) */
            prog_time *p = dt->v[k].prog ? prog_slot(dt->v[k].prog, true) : NULL;
            if (p) p->ns += ns, p->n++;
        }
        dev->ops->event_release(ev);
        free(ev);
    }
    memmove(dt->v, dt->v + k, (dt->n - k) * sizeof *dt->v);
    dt->n -= k;
    dt->next = dt->n + TIMED_BATCH;
}

/* Collects dt's records, first waiting for the newest when wait is set (the
 * queue is in order: the others are then done too). With timing.lock held,
 * not the device's: the wait may be long, and a CUDA event's wait takes the
 * device's lock to explain a fault. */
static void collect(dev_timing *dt, bool wait) {
    ofl_device *dev = dt->dev;
    pthread_mutex_lock(&dev->lock);
    size_t done = wait ? dt->n : 0;
    ofl_event *newest = done ? dt->v[done - 1].ev : NULL;
    /* a reset context's event: its work is lost, and its fault was told */
    if (newest && newest->generation != dev->generation) newest = NULL;
    pthread_mutex_unlock(&dev->lock);
    ofl_error err;
    if (newest && dev->ops->event_wait(newest, &err) != 0 && !timing.failed) {
        timing.failed = true;
        timing.err = err;
    }
    pthread_mutex_lock(&dev->lock);
    if (dt->n) take_records(dt, done);
    pthread_mutex_unlock(&dev->lock);
}

/* Appends a record; false without memory for it. With dev->lock held. */
static bool record(dev_timing *dt, ofl_event *ev, const ofl_program *prog) {
    if (dt->n == dt->cap) {
        size_t cap = dt->cap ? dt->cap * 2 : 64;
        timed_launch *v = realloc(dt->v, cap * sizeof *v);
        if (!v) return false;
        dt->v = v, dt->cap = cap;
    }
    dt->v[dt->n++] = (timed_launch){ev, prog};
    return true;
}

/* Before prog is freed: its records are collected and its totals dropped. */
static void timing_forget(const ofl_program *prog) {
    size_t n;
    dev_timing *d = timing_devs(&n);
    if (!d) return;
    pthread_mutex_lock(&timing.lock);
    for (size_t i = 0; i < n; i++)
        if (d[i].dev == prog->dev) collect(&d[i], true);
    prog_time *p = prog_slot(prog, false);
    if (p) {
        *p = timing.progs[--timing.nprogs];
        timing.last = 0;
    }
    pthread_mutex_unlock(&timing.lock);
}

void ofl_timing_start(void) { __atomic_add_fetch(&timing.on, 1, __ATOMIC_RELAXED); }

void ofl_timing_stop(void) {
    int on = __atomic_load_n(&timing.on, __ATOMIC_RELAXED);
    while (on > 0 && !__atomic_compare_exchange_n(&timing.on, &on, on - 1, false, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED)) {
    }
}

int ofl_timing_totals(uint64_t *ns, uint64_t *launches, ofl_error *err) {
    size_t n;
    dev_timing *d = timing_devs(&n);
    pthread_mutex_lock(&timing.lock);
    for (size_t i = 0; i < n; i++) collect(&d[i], true);
    if (ns) *ns = timing.ns;
    if (launches) *launches = timing.n;
    int rc = 0;
    if (timing.failed) {
        timing.failed = false;
        rc = timing.err.code;
        if (err) *err = timing.err;
    }
    pthread_mutex_unlock(&timing.lock);
    return rc;
}

void ofl_program_device_time(const ofl_program *prog, uint64_t *ns, uint64_t *launches) {
    pthread_mutex_lock(&timing.lock);
    prog_time *p = prog ? prog_slot(prog, false) : NULL;
    *ns = p ? p->ns : 0;
    *launches = p ? p->n : 0;
    pthread_mutex_unlock(&timing.lock);
}

ofl_event *ofl_timing_span_begin(ofl_device *dev) {
    dev_timing *dt = timing_of(dev);
    ofl_event *tev = NULL;
    if (!dt || __atomic_load_n(&timing.on, __ATOMIC_RELAXED) <= 0 ||
        !(tev = calloc(1, sizeof *tev)))
        return NULL;
    tev->dev = dev;
    tev->generation = dev->generation;
    if (dev->ops->mark(tev, false, NULL) == 0) return tev;
    dev->ops->event_release(tev);
    free(tev);
    return NULL; /* timing never fails the work: it goes untimed */
}

void ofl_timing_span_end(ofl_device *dev, ofl_event *tev, bool queued) {
    dev_timing *dt = timing_of(dev);
    if (dt && queued) dt->launched = true;
    if (!tev) return;
    if (queued && dt && dev->ops->mark(tev, true, NULL) == 0 && record(dt, tev, NULL)) return;
    dev->ops->event_release(tev);
    free(tev);
}

int ofl_synchronize_launched(ofl_error *err) {
    size_t n;
    dev_timing *d = timing_devs(&n);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        ofl_device *dev = d[i].dev;
        pthread_mutex_lock(&dev->lock);
        int r = d[i].launched ? ofl_wait_queue(dev, rc ? NULL : err) : 0;
        if (r != OFL_ERR_INTERRUPTED) d[i].launched = false; /* else a later wait still owes it */
        pthread_mutex_unlock(&dev->lock);
        if (r == OFL_ERR_INTERRUPTED) return r; /* control back to the user now */
        if (!rc) rc = r;
    }
    return rc;
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
    timing_forget(prog);
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

bool ofl_program_vectorizer_off(const ofl_program *prog) { return prog && prog->vectorizer_off; }

bool ofl_program_is_stale(const ofl_program *prog) {
    return prog && prog->generation != __atomic_load_n(&prog->dev->generation, __ATOMIC_ACQUIRE);
}

/* ---- launches ---- */

static int check_args(const ofl_program *prog, const ofl_arg *args, size_t nargs, ofl_error *err) {
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
    if (ndim == 1)
        snprintf(buf, len, "%zu", v[0]);
    else if (ndim == 2)
        snprintf(buf, len, "%zu x %zu", v[0], v[1]);
    else
        snprintf(buf, len, "%zu x %zu x %zu", v[0], v[1], v[2]);
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
                        prog->name, threads, shape, prog->max_threads, in->filter, in->name);
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

static size_t pow2_ceil(size_t n) {
    size_t p = 1;
    while (p < n && p <= SIZE_MAX / 2) p *= 2;
    return p;
}

/* The runtime's work-group sizes. GPUs get 256 work-items (enough to hide
 * latency, few enough to run anywhere). On a CPU device a work-group is one
 * task that the compiler runs as a vector loop: larger groups cut the
 * per-task overhead (Intel's runtime: 4.0 -> 3.3 ms for x*4+1 over 2^24
 * float32 going from 256 to 8192), as long as every core still gets a few
 * groups. Shaped for the dimensions, never larger than the global size, and
 * the threads a short dimension leaves over go to dimension 0, the fastest. */
#define GROUP 256
#define CPU_GROUP_MOST 8192

static size_t group_size(const ofl_device_info *in, unsigned ndim, const size_t g[3]) {
    if (in->type != OFL_CPU) return GROUP;
    size_t total = 1;
    for (unsigned d = 0; d < ndim; d++) total = total > SIZE_MAX / g[d] ? SIZE_MAX : total * g[d];
    size_t tasks = 4 * (size_t)(in->max_compute_units ? in->max_compute_units : 1);
    size_t x = pow2_floor(total / tasks ? total / tasks : 1);
    return x < GROUP ? GROUP : x > CPU_GROUP_MOST ? CPU_GROUP_MOST : x;
}

static void pick_local(const ofl_program *prog, unsigned ndim, const size_t g[3], size_t l[3]) {
    const ofl_device_info *in = &prog->dev->info;
    bool cuda = in->backend == OFL_CUDA;
    static const size_t shape_cu[3][3] = {{GROUP, 1, 1}, {32, 8, 1}, {32, 4, 2}};
    static const size_t shape_cl[3][3] = {{GROUP, 1, 1}, {16, 16, 1}, {16, 4, 4}};
    const size_t *shape = cuda ? shape_cu[ndim - 1] : shape_cl[ndim - 1];
    size_t most = prog->max_threads;
    if (in->max_work_group_size && in->max_work_group_size < most) most = in->max_work_group_size;
    /* OpenCL: a global size below the group's is rounded up to a power of two,
     * not taken as is -- PoCL builds a work-group function per local size
     * (~40 ms), and arrays of many small lengths would each pay it */
    size_t rest = 1;
    for (unsigned d = 1; d < 3; d++) {
        l[d] = d < ndim ? min_z(shape[d], cuda ? g[d] : pow2_ceil(g[d])) : 1;
        if (in->max_work_item_sizes[d]) l[d] = min_z(l[d], in->max_work_item_sizes[d]);
        if (l[d] == 0) l[d] = 1;
        rest *= l[d];
    }
    size_t x = group_size(in, ndim, g) / rest;
    /* CUDA schedules warps of 32 threads: keep x a whole number of them, and a
     * small global in x costs one warp, not a group of 256 */
    if (cuda)
        x = min_z(x / 32 * 32, round_up(g[0], 32));
    else
        x = min_z(pow2_floor(x), pow2_ceil(g[0]));
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
static int check_grid(const ofl_program *prog, unsigned ndim, const size_t g[3], const size_t l[3],
                      ofl_error *err) {
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
                        "launch of kernel '%s' over %u dimensions: a launch has 1 to 3", prog->name,
                        global ? ndim : 0);
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
    /* While timing is on, the launch is recorded with an event of its own
     * (tev; the caller's, if any, is the caller's to release). Timing never
     * fails a launch: without memory for it, the launch goes untimed. */
    dev_timing *dt = timing_of(dev);
    ofl_event *tev = NULL;
    if (dt && __atomic_load_n(&timing.on, __ATOMIC_RELAXED) > 0 && (tev = calloc(1, sizeof *tev)))
        tev->dev = dev;
    bool drop_tev = false, collect_now = false;
    /* One hold of the lock for the event's marks and the launch, so that no
     * other thread's work lands inside the timed span. */
    rc = ofl_device_lock(dev, err);
    if (rc) {
        free(ev);
        free(tev);
        return rc;
    }
    rc = check_current(prog, args, nargs, err);
    if (rc == 0) rc = ofl_wait_settle(dev, err); /* cancelled work ends before this runs */
    if (rc == 0) {
        dev->busy = true;
        if (ev) ev->generation = dev->generation;
        if (tev) tev->generation = dev->generation;
        /* with the caller's event taking the launch's own timestamps, the
         * record gets a span of markers around it */
        bool around = ev && tev;
        if (around && dev->ops->mark(tev, false, NULL) != 0) around = false, drop_tev = true;
        ofl_event *kev = ev ? ev : drop_tev ? NULL : tev;
        if (!empty) {
            rc = dev->ops->launch(prog, ndim, g, l, args, nargs, kev, err);
            if (rc == 0) { /* for the message should it fault later */
                size_t n = min_z(prog->name_len, sizeof dev->last_kernel - 1);
                memcpy(dev->last_kernel, prog->name, n);
                dev->last_kernel[n] = '\0';
            }
        } else if (kev && (rc = dev->ops->mark(kev, false, err)) == 0) {
            rc = dev->ops->mark(kev, true, err);
        }
        if (rc == 0 && dt) {
            dt->launched = true;
            if (around && dev->ops->mark(tev, true, NULL) != 0) drop_tev = true;
            if (tev && !drop_tev && !record(dt, tev, prog)) drop_tev = true;
            collect_now = tev && !drop_tev && dt->n >= dt->next;
        }
    }
    ofl_device_unlock(dev);
    if (tev && (rc || drop_tev)) {
        dev->ops->event_release(tev);
        free(tev);
    }
    if (rc) {
        if (ev) {
            dev->ops->event_release(ev);
            free(ev);
        }
        return rc;
    }
    /* only what has finished, and only if no collector is busy: a launch
     * does not wait for the device */
    if (collect_now && pthread_mutex_trylock(&timing.lock) == 0) {
        collect(dt, false);
        pthread_mutex_unlock(&timing.lock);
    }
    if (ev_out) *ev_out = ev;
    return 0;
}
