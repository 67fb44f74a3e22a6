/* mod_reduce: reductions of offload arrays -- offload.sum prod min max mean
 * argmin argmax any all count_nonzero and the ndarray methods of the same
 * names (count_nonzero has none, as NumPy), with NumPy 2's
 * arguments, result dtypes, errors and NaN rules. The functions are added
 * by mod_lib_add_functions; the methods (mod_reduce_methods) go to ndarray
 * through mod_lib_array_kernels.
 *
 * Every reduction runs as the kernels of module/kernels/reduce.py,
 * specialised on the operator and the dtypes (red_key). A kernel sees the
 * input as a 1-D view and gets its layout as numbers (geometry: the kept
 * axes merged into at most two groups, the reduced ones into at most
 * three), so any shape and strides reuse one compiled kernel. The tree form
 * serves every shape, on a GPU and wherever no other form does; a CPU
 * device takes runs of contiguous elements in forms of its own (the CPU
 * form; across outputs; rows into partials). Where outputs are few, k is
 * split over groups and a second launch reduces the partials. Layouts that
 * do not fit are copied, looped or reduced in steps (reduce_into).
 * argmin/argmax keep the smallest index among equal values, the first NaN
 * winning; min/max propagate NaN. The forms, the dtype and NaN rules and
 * the measured reasons: docs/reductions.md */
#include "lib/reduce/mod_reduce.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define GROUP_MAX 256 /* work-items per group, and the length of the local arrays */
/* Elements a work-item keeps at least when k is split over groups: below
 * that, on an H100, the second launch and the partials cost more than the
 * parallelism gains (a 2048 x 2048 sum: 3x slower split 8 ways). */
#define MIN_PER_ITEM 256

/* RED_ANY, RED_ALL and RED_COUNT (count_nonzero) load each element as
 * `x != 0` (NaN counts as true) and then or, and, or add. */
typedef enum {
    RED_SUM,
    RED_PROD,
    RED_MIN,
    RED_MAX,
    RED_MEAN,
    RED_ARGMIN,
    RED_ARGMAX,
    RED_ANY,
    RED_ALL,
    RED_COUNT
} red_op;

static const struct {
    const char *name;
    const char *numpy_name; /* for NumPy's messages: "minimum" */
} OPS[] = {
    [RED_SUM] = {"sum", "add"},          [RED_PROD] = {"prod", "multiply"},
    [RED_MIN] = {"min", "minimum"},      [RED_MAX] = {"max", "maximum"},
    [RED_MEAN] = {"mean", "add"},        [RED_ARGMIN] = {"argmin", "argmin"},
    [RED_ARGMAX] = {"argmax", "argmax"}, [RED_ANY] = {"any", "logical_or"},
    [RED_ALL] = {"all", "logical_and"},  [RED_COUNT] = {"count_nonzero", "add"},
};

static bool is_arg(red_op op) { return op == RED_ARGMIN || op == RED_ARGMAX; }
static bool has_identity(red_op op) { return op == RED_SUM || op == RED_PROD || op == RED_MEAN; }
static bool is_logical(red_op op) { return op == RED_ANY || op == RED_ALL || op == RED_COUNT; }

/* ---- dtypes ---- */

/* Floating or complex (a kind): NaN is a value, and a mean divides in its own kind. */
static bool inexact(char k) { return k == 'f' || k == 'c'; }

/* What one reduction computes in; canonical dtypes (borrowed: they live for
 * the process). */
typedef struct {
    PyObject *acc;  /* accumulators, partials, and the identity */
    PyObject *cast; /* elements go through this dtype first (NumPy's dtype= semantics), or NULL */
    PyObject *out;  /* the result */
} red_types;

/* sum/prod/mean with dtype=None: NumPy 2's result dtype for input `in`. */
static PyObject *default_out(red_op op, PyObject *in) {
    char k = mod_kit_kind(in);
    if (op == RED_MEAN) return inexact(k) ? in : mod_dtype_find_borrowed('f', 8);
    if (op == RED_SUM || op == RED_PROD)
        return inexact(k) ? in : mod_dtype_find_borrowed(k == 'u' ? 'u' : 'i', 8);
    if (is_arg(op)) return mod_dtype_find_borrowed('i', 8);
    return in;
}

/* want: the dtype= argument as a canonical dtype, or NULL. */
static void types_for(red_op op, PyObject *in, PyObject *want, bool fp64, red_types *t) {
    /* f64: the widest float the device computes in */
    PyObject *f64 = mod_dtype_find_borrowed('f', fp64 ? 8 : 4),
             *u8 = mod_dtype_find_borrowed('u', 1);
    if (is_logical(op)) { /* flags (uint8: or/and) or counts (int64) of `x != 0` */
        t->acc = op == RED_COUNT ? mod_dtype_find_borrowed('i', 8) : u8;
        t->cast = mod_kit_kind(in) == 'b' ? NULL : mod_dtype_find_borrowed('b', 1);
        t->out = op == RED_COUNT ? t->acc : mod_dtype_find_borrowed('b', 1);
        return;
    }
    if (!has_identity(op)) { /* min, max, argmin, argmax: the input's own type (bool as 0/1) */
        /* bool and integers narrower than 32 bits in int32, exact: in uint8
         * and int8 accumulators PoCL 3.1's LLVM 15 never ended its code
         * generation (docs/reductions.md) */
        char k = mod_kit_kind(in);
        bool narrow = k == 'b' || ((k == 'i' || k == 'u') && mod_dtype_itemsize(in) < 4);
        t->acc = narrow ? mod_dtype_find_borrowed('i', 4) : in;
        t->cast = NULL;
        t->out = default_out(op, in);
        return;
    }
    /* complex sums accumulate in complex128 (complex64 without float64) */
    PyObject *c128 = mod_dtype_find_borrowed('c', fp64 ? 16 : 8);
    PyObject *elem = want ? want : default_out(op, in);
    if (op == RED_MEAN && !want && !fp64) /* float32 there, as dpnp does */
        elem = mod_kit_kind(in) == 'c' ? c128 : f64;
    char k = mod_kit_kind(elem);
    t->out = elem;
    t->acc = k == 'f' ? f64 : k == 'c' ? c128 : mod_dtype_find_borrowed(k == 'u' ? 'u' : 'i', 8);
    if (op == RED_MEAN && !inexact(k)) t->acc = f64; /* NumPy's mean divides in floating point */
    /* Elements are cast to `elem` only where that changes the result: to bool
     * (a sum of bools is a logical or) and from floating to integer
     * (truncation). Narrower integers wrap the same either way, and floats
     * are added in the wider accumulator. */
    char ki = mod_kit_kind(in);
    t->cast = (k == 'b' && ki != 'b') || ((k == 'i' || k == 'u') && ki == 'f') ? elem : NULL;
    if (op == RED_MEAN) t->cast = NULL;
}

/* The identity of the accumulation as a NumPy scalar of the accumulator's dtype. */
static PyObject *identity_scalar(red_op op, PyObject *acc) {
    char k = mod_kit_kind(acc);
    int bits = 8 * (int)mod_dtype_itemsize(acc);
    bool low = op == RED_MAX || op == RED_ARGMAX; /* max starts from the lowest value */
    PyObject *v;
    if (op == RED_SUM || op == RED_MEAN || op == RED_ANY || op == RED_COUNT)
        v = PyLong_FromLong(0);
    else if (op == RED_PROD || op == RED_ALL)
        v = PyLong_FromLong(1);
    else if (inexact(k)) /* complex: (+-inf, 0), which lexicographic order puts nearly last */
        v = PyFloat_FromDouble(low ? -INFINITY : INFINITY);
    else if (k == 'u')
        v = low ? PyLong_FromLong(0)
                : PyLong_FromUnsignedLongLong(bits == 64 ? ~0ULL : (1ULL << bits) - 1);
    else if (bits == 64)
        v = PyLong_FromLongLong(low ? INT64_MIN : INT64_MAX);
    else
        v = PyLong_FromLongLong(low ? -(1LL << (bits - 1)) : (1LL << (bits - 1)) - 1);
    PyObject *type = v ? PyObject_GetAttrString(acc, "type") : NULL;
    PyObject *r = type ? PyObject_CallOneArg(type, v) : NULL;
    Py_XDECREF(v);
    Py_XDECREF(type);
    return r;
}

/* ---- the kernels' compile-time arguments ---- */

/* What one reduction's kernels are specialised on (module/kernels/reduce.py
 * says what each means); dtypes borrowed. */
typedef struct {
    red_op op;
    PyObject *in;   /* the input's dtype: what it is read as where cast is NULL */
    PyObject *acc;  /* accumulators, partials, ident */
    PyObject *cast; /* the dtype elements go through first, or NULL */
    PyObject *out;  /* the result's */
} red_key;

/* OP (BETTER for argmin/argmax): reduce.py's device function, borrowed. */
static PyObject *operator_of(red_op op) {
    static const char *const names[] = {
        [RED_SUM] = "add",     [RED_PROD] = "multiply", [RED_MIN] = "minimum",
        [RED_MAX] = "maximum", [RED_MEAN] = "add",      [RED_ARGMIN] = "lt",
        [RED_ARGMAX] = "gt",   [RED_ANY] = "bit_or",    [RED_ALL] = "bit_and",
        [RED_COUNT] = "add"};
    return mod_library_get("reduce", names[op]);
}

static PyObject *elem_of(const red_key *key) { return key->cast ? key->cast : key->in; }

/* ---- the CPU forms ----
 * A CPU runs the tree kernel one work-item at a time (a float32 sum of
 * 2**24: 27-60 ms, NumPy 3). So where an output's elements lie contiguous,
 * a CPU reduces them in runs of blocks of CPU_ROWS x CPU_LANES (reduce.py's
 * reduce_cpu), in lanes where the device vectorises across work-items
 * (Intel's runtime, mod_device_cpu_lanes), else in one work-item (PoCL).
 * The forms and their measurements: docs/reductions.md */
#define CPU_LANES 16
#define CPU_ROWS 8
#define CPU_MIN_RUN 4096

/* Accumulators per work-item of the tree, and so loads in flight per
 * work-item. On an H100, 16 reach 0.92-0.95x of CuPy's float32 sum where 4
 * gave a third of it; argmin/argmax keep (value, index) pairs, twice the
 * registers, so fewer. */
static int unroll_of(red_op op) { return is_arg(op) ? 4 : 16; }

/* The type a CPU block accumulates in: float32 for float32 sums of float32
 * (the block is short; its total goes on in float64), else the
 * accumulator's (a float32 sum asked for in float64 is added in float64
 * throughout). */
static PyObject *block_type(const red_key *key) {
    bool sum = key->op == RED_SUM || key->op == RED_MEAN;
    return sum && inexact(mod_kit_kind(key->acc)) && !key->cast &&
                   !strcmp(mod_dtype_name(key->in), "float32") &&
                   !strcmp(mod_dtype_name(key->out), "float32")
               ? mod_dtype_find_borrowed('f', 4)
               : key->acc;
}

/* ---- scratch: partials kept per (device, dtype, slot) for the process ----
 * Reusing one buffer is safe because a device's queue runs in order: the
 * next reduction's first pass starts after this one's second pass has read
 * it. A reduction takes the buffer out of the cache while it queues its
 * launches (so another thread's reduction, queued in between, uses its
 * own) and puts it back after. Freeing device memory waits for the queue,
 * which is why partials are not simply temporary arrays. */

static PyObject *scratch; /* dict: (Device, dtype, slot) -> 1-D ndarray */

static PyObject *scratch_key(ofl_device *dev, PyObject *dtype, int slot) {
    PyObject *d = mod_device_new(dev);
    PyObject *key = d ? Py_BuildValue("(OOi)", d, dtype, slot) : NULL;
    Py_XDECREF(d);
    return key;
}

/* A 1-D array of at least n elements (a new reference, out of the cache). */
static PyObject *scratch_take(ofl_device *dev, PyObject *dtype, int slot, Py_ssize_t n) {
    PyObject *key = scratch_key(dev, dtype, slot);
    if (!key) return NULL;
    PyObject *a = PyDict_GetItemWithError(scratch, key); /* borrowed */
    if (a && ((mod_array *)a)->shape[0] >= n) {
        Py_INCREF(a);
        if (PyDict_DelItem(scratch, key) < 0) Py_CLEAR(a);
    } else if (!PyErr_Occurred()) {
        Py_ssize_t size = 4096;
        while (size < n) size *= 2;
        a = mod_array_new_empty(dev, dtype, 1, &size);
    } else {
        a = NULL;
    }
    Py_DECREF(key);
    return a;
}

/* Puts a back (steals it); a larger one already there stays. The smaller
 * one is freed, which waits for the queue: only when partials outgrow the
 * buffer (it doubles) or two threads reduced at once. */
static void scratch_give(ofl_device *dev, PyObject *dtype, int slot, PyObject *a) {
    PyObject *type, *value, *tb; /* a failed reduction's exception stays the caller's */
    PyErr_Fetch(&type, &value, &tb);
    PyObject *key = scratch_key(dev, dtype, slot);
    PyObject *have = key ? PyDict_GetItemWithError(scratch, key) : NULL;
    if (key && !PyErr_Occurred() &&
        (!have || ((mod_array *)have)->shape[0] < ((mod_array *)a)->shape[0]))
        PyDict_SetItem(scratch, key, a);
    PyErr_Clear(); /* losing the cache entry costs only a later allocation */
    Py_XDECREF(key);
    Py_DECREF(a);
    PyErr_Restore(type, value, tb);
}

static PyObject *release_scratch(PyObject *self, PyObject *unused) {
    PyDict_Clear(scratch);
    Py_RETURN_NONE;
}

static PyMethodDef release_def = {"_release_reduce_scratch", release_scratch, METH_NOARGS, NULL};

/* ---- layouts ---- */

/* How x is read: outputs m in [0, M) at base + (m // Q) * sp + (m % Q) * sq,
 * and from there K elements, the C-order walk over (K / (n1 * n2), n1, n2)
 * strided (t0, t1, t2) -- all in elements of a 1-D view of the `span`
 * elements from byte `lo` that hold x. */
typedef struct {
    Py_ssize_t M, Q, sp, sq;
    Py_ssize_t K, n1, n2, t0, t1, t2;
    Py_ssize_t lo, span, base;
    bool kfast; /* the reduced walk is x's innermost: an output's work-items take neighbours */
} geometry;

typedef struct {
    int nd;
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
} dims;

/* Merges neighbours that step as one (C order kept). No length-1 axes come here. */
static void merge_dims(dims *d) {
    int n = 0;
    for (int i = 0; i < d->nd; i++) {
        if (n > 0 && d->strides[n - 1] == d->strides[i] * d->shape[i]) {
            d->shape[n - 1] *= d->shape[i];
            d->strides[n - 1] = d->strides[i];
        } else {
            d->shape[n] = d->shape[i], d->strides[n] = d->strides[i], n++;
        }
    }
    d->nd = n;
}

enum {
    GEO_OK,
    GEO_KEPT,
    GEO_REDUCED,
    GEO_STRIDES
}; /* what does not fit: > 2 kept, > 3 reduced groups */

/* any_order: the operation does not care in which order elements come
 * (not argmin/argmax), so the reduced axes are walked forwards, largest
 * stride outermost, which merges them more often. */
static int plan_geometry(const mod_array *x, const bool *red, bool any_order, geometry *g) {
    Py_ssize_t isz = x->itemsize, lo = x->offset, hi = x->offset, M = 1, K = 1;
    dims kept = {0}, rd = {0};
    for (int i = 0; i < x->nd; i++) {
        if (red[i])
            K *= x->shape[i];
        else
            M *= x->shape[i];
    }
    *g = (geometry){.M = M, .Q = 1, .K = K, .n1 = 1, .n2 = K, .lo = x->offset};
    if (M == 0 || K == 0) return GEO_OK; /* nothing to read */
    for (int i = 0; i < x->nd; i++) {
        if (x->shape[i] == 1) continue; /* its stride means nothing */
        if (x->strides[i] % isz) return GEO_STRIDES;
        Py_ssize_t ext = x->strides[i] * (x->shape[i] - 1);
        if (ext < 0)
            lo += ext;
        else
            hi += ext;
        dims *d = red[i] ? &rd : &kept;
        d->shape[d->nd] = x->shape[i], d->strides[d->nd++] = x->strides[i] / isz;
    }
    g->lo = lo;
    g->span = (hi - lo) / isz + 1;
    g->base = (x->offset - lo) / isz;
    if (any_order) {
        for (int i = 0; i < rd.nd; i++)
            if (rd.strides[i] < 0)
                g->base += rd.strides[i] * (rd.shape[i] - 1), rd.strides[i] = -rd.strides[i];
        for (int i = 1; i < rd.nd; i++)
            for (int k = i; k > 0 && rd.strides[k] > rd.strides[k - 1]; k--) {
                Py_ssize_t n = rd.shape[k], st = rd.strides[k];
                rd.shape[k] = rd.shape[k - 1], rd.strides[k] = rd.strides[k - 1];
                rd.shape[k - 1] = n, rd.strides[k - 1] = st;
            }
    }
    merge_dims(&kept);
    merge_dims(&rd);
    if (kept.nd > 2) return GEO_KEPT;
    if (rd.nd > 3) return GEO_REDUCED;
    if (kept.nd) g->Q = kept.shape[kept.nd - 1], g->sq = kept.strides[kept.nd - 1];
    if (kept.nd == 2) g->sp = kept.strides[0];
    Py_ssize_t r[3] = {1, 1, 1}, t[3] = {0, 0, 0};
    for (int i = 0; i < rd.nd; i++)
        r[3 - rd.nd + i] = rd.shape[i], t[3 - rd.nd + i] = rd.strides[i];
    g->n1 = r[1], g->n2 = r[2], g->t0 = t[0], g->t1 = t[1], g->t2 = t[2];
    g->kfast = K > 1;
    for (int i = 0; g->kfast && M > 1 && i < kept.nd; i++)
        if (llabs((long long)kept.strides[i]) < llabs((long long)g->t2)) g->kfast = false;
    return GEO_OK;
}

/* ---- launches ---- */

typedef struct {
    Py_ssize_t L;      /* work-items per group */
    Py_ssize_t nk, nq; /* work-items per output, outputs per group: nk * nq = L */
    Py_ssize_t nsplit; /* groups that share one output's k range */
    Py_ssize_t groups;
    bool kfast; /* an output's work-items are adjacent (else its outputs are) */
} red_plan;

static Py_ssize_t pow2_at_least(Py_ssize_t n) {
    Py_ssize_t p = 1;
    while (p < n) p *= 2;
    return p;
}

static Py_ssize_t group_size(ofl_device *dev) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    size_t most = in->max_work_group_size;
    if (in->max_work_item_sizes[0] && in->max_work_item_sizes[0] < most)
        most = in->max_work_item_sizes[0];
    Py_ssize_t L = GROUP_MAX;
    while (L > 1 && (size_t)L > most) L /= 2;
    return L;
}

/* M outputs of K elements each. may_split: k may be spread over groups
 * (the first pass); the second pass takes its partials in one. */
static void make_plan(ofl_device *dev, Py_ssize_t M, Py_ssize_t K, bool kfast, bool may_split,
                      red_plan *pl) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    pl->L = group_size(dev);
    pl->kfast = kfast;
    /* enough groups to fill the device: a GPU keeps about 2048 work-items
     * per compute unit in flight, a CPU wants a few groups per core */
    Py_ssize_t cus = in->max_compute_units ? (Py_ssize_t)in->max_compute_units : 1;
    Py_ssize_t want = in->type == OFL_GPU ? cus * (pl->L < 2048 ? 2048 / pl->L : 1) : cus * 4;
    if (kfast) {
        /* about sqrt(K)/4 work-items per output, each taking ~4 sqrt(K)
         * elements: measured best on an H100 from K = 64 (2 work-items) to
         * K = 8192 (32), and a whole group for a full reduction */
        pl->nk = pow2_at_least((Py_ssize_t)sqrt((double)K) / 4);
        Py_ssize_t busy = pl->L / pow2_at_least(M); /* no group holds more outputs than exist */
        if (pl->nk < busy) pl->nk = busy;
        if (pl->nk > pl->L) pl->nk = pl->L;
        pl->nq = pl->L / pl->nk;
    } else {
        pl->nq = pow2_at_least(M);
        if (pl->nq > pl->L) pl->nq = pl->L;
        pl->nk = pl->L / pl->nq;
    }
    Py_ssize_t blocks = (M + pl->nq - 1) / pl->nq;
    Py_ssize_t split = 1;
    if (may_split && blocks < want) {
        split = (want + blocks - 1) / blocks;
        Py_ssize_t most = K / (pl->nk * MIN_PER_ITEM);
        if (split > most) split = most;
        if (split > 4 * GROUP_MAX)
            split = 4 * GROUP_MAX; /* the second pass: one group per output */
        if (split < 1) split = 1;
    }
    pl->nsplit = split;
    pl->groups = blocks * split;
}

/* The tree kernel's launch over pl, reading g. arrays: (x, out, part) or,
 * for argmin/argmax, (x, xi, out, part, parti). count: mean's divisor. */
static int launch(const red_key *key, const red_plan *pl, const geometry *g,
                  PyObject *const *arrays, Py_ssize_t count, PyObject *ident, bool final,
                  bool fromp) {
    PyObject *op = operator_of(key->op);
    if (!op) return -1;
    mod_shape range = {.ndim = 1, .nd = true, .size = {pl->groups * pl->L}, .local = {pl->L}};
    Py_ssize_t kst = pl->kfast ? 1 : pl->nq, qst = pl->kfast ? pl->nk : 1;
    if (is_arg(key->op))
        return mod_library_launch("reduce", "argreduce_tree", &range,
                                  "OOOOO"
                                  "nnnnnnnnnnnnnn"
                                  "OOO"
                                  "OOii",
                                  arrays[0], arrays[1], arrays[2], arrays[3], arrays[4], g->base,
                                  g->Q, g->sp, g->sq, g->n1, g->n2, g->t0, g->t1, g->t2, g->K,
                                  pl->nsplit, pl->nk, kst, qst, ident, mod_kit_bool(final),
                                  mod_kit_bool(fromp), op, key->acc, unroll_of(key->op), GROUP_MAX);
    return mod_library_launch("reduce", "reduce_tree", &range,
                              "OOO"
                              "nnnnnnnnnnnnnn"
                              "OnO"
                              "OOOOOii",
                              arrays[0], arrays[1], arrays[2], g->base, g->Q, g->sp, g->sq, g->n1,
                              g->n2, g->t0, g->t1, g->t2, g->K, pl->nsplit, pl->nk, kst, qst, ident,
                              count, mod_kit_bool(final), op, key->acc, elem_of(key), key->out,
                              mod_kit_bool(key->op == RED_MEAN), unroll_of(key->op), GROUP_MAX);
}

/* Whether the CPU form serves: a CPU device, and each output's elements
 * contiguous and many. */
static bool cpu_form(ofl_device *dev, const geometry *g) {
    return ofl_device_get_info(dev)->type == OFL_CPU && g->n2 == g->K && g->t2 == 1 &&
           g->K >= CPU_LANES * CPU_ROWS;
}

/* Whether the CPU form across outputs serves: one reduced axis and one kept
 * one, the kept one the closer together, and a tile of outputs at least. */
static bool cpu_cols_form(ofl_device *dev, red_op op, const geometry *g) {
    return ofl_device_get_info(dev)->type == OFL_CPU && !is_arg(op) && g->n2 == g->K &&
           g->Q == g->M && g->M >= CPU_LANES && !g->kfast;
}

/* Outputs per tile of the CPU form across outputs: in lanes, up to 8 runs of
 * CPU_LANES (a row of a tile is then 512 bytes of float32, which the
 * hardware prefetches; a column of 64-byte rows 8 KB apart it did not:
 * 2048^2 float32 over axis 0, 1.8 -> 0.3 ms, NumPy 0.22-0.28), at most M. */
static int cols_width(int lanes, Py_ssize_t M) {
    if (lanes == 1) return CPU_LANES;
    int w = lanes * 8;
    while (w > lanes && w > M) w /= 2;
    return w;
}

/* A CPU form's launch: S runs of `lanes` work-items, a work-group each, for
 * each of g->M outputs (rows) or each tile of cols_width outputs (cols).
 * arrays: (x, out, part), or (x, part, parti) for argmin/argmax, which
 * always leave partials. count: mean's divisor. */
static int launch_cpu(const red_key *key, const geometry *g, bool cols, Py_ssize_t S, int lanes,
                      PyObject *const *arrays, PyObject *ident, Py_ssize_t count) {
    PyObject *op = operator_of(key->op);
    if (!op) return -1;
    int width = cols ? cols_width(lanes, g->M) : 0;
    Py_ssize_t groups = (cols ? (g->M + width - 1) / width : g->M) * S;
    bool final = S == 1 && (cols || lanes == 1); /* each output from one lane alone */
    mod_shape range = {.ndim = 1, .nd = true, .size = {groups * lanes}, .local = {lanes}};
    PyObject *mean = mod_kit_bool(key->op == RED_MEAN);
    if (is_arg(key->op))
        return mod_library_launch("reduce", "argreduce_cpu", &range,
                                  "OOO"
                                  "nnnnnnn"
                                  "O"
                                  "OOiii",
                                  arrays[0], arrays[1], arrays[2], g->base, g->Q, g->sp, g->sq,
                                  g->K, g->t2, S, ident, op, key->acc, lanes, CPU_LANES, CPU_ROWS);
    if (cols)
        return mod_library_launch("reduce", "reduce_cpu_cols", &range,
                                  "OOO"
                                  "nnnnnnn"
                                  "OnO"
                                  "OOOOOiiO",
                                  arrays[0], arrays[1], arrays[2], g->base, g->Q, g->sp, g->sq,
                                  g->K, g->t2, S, ident, count, mod_kit_bool(final), op, key->acc,
                                  elem_of(key), key->out, mean, lanes, width,
                                  mod_kit_bool(g->sq == 1));
    return mod_library_launch("reduce", "reduce_cpu", &range,
                              "OOO"
                              "nnnnnnn"
                              "OnO"
                              "OOOOOOiii",
                              arrays[0], arrays[1], arrays[2], g->base, g->Q, g->sp, g->sq, g->K,
                              g->t2, S, ident, count, mod_kit_bool(final), op, key->acc,
                              elem_of(key), key->out, mean, block_type(key), lanes, CPU_LANES,
                              CPU_ROWS);
}

/* The CPU form into partials: S runs of `lanes` work-items, run r adding
 * its band of rows into part[r * M ...] in acc. */
static int launch_cpu_acc(const red_key *key, PyObject *acc, const geometry *g, Py_ssize_t S,
                          int lanes, PyObject *x, PyObject *part, PyObject *ident) {
    PyObject *op = operator_of(key->op);
    if (!op) return -1;
    mod_shape range = {.ndim = 1, .nd = true, .size = {S * lanes}, .local = {lanes}};
    return mod_library_launch("reduce", "reduce_cpu_acc", &range,
                              "OO"
                              "nnnnn"
                              "O"
                              "OOOi",
                              x, part, g->base, g->M, g->K, g->t2, S, ident, op, acc, elem_of(key),
                              lanes);
}

static PyObject *view1(mod_array *a, Py_ssize_t n, Py_ssize_t offset) {
    Py_ssize_t strides[1] = {a->itemsize};
    return mod_array_view(a, 1, &n, strides, offset);
}

/* The reduction g of x into the first g->M elements of out. */
static int run(red_op op, const red_types *t, mod_array *x, const geometry *g, mod_array *out) {
    ofl_device *dev = mod_array_device(x);
    bool arg = is_arg(op);
    red_key key = {.op = op, .in = x->dtype, .acc = t->acc, .cast = t->cast, .out = t->out};
    red_plan pl;
    bool cpu = cpu_form(dev, g), cols = !cpu && cpu_cols_form(dev, op, g);
    int lanes = (cpu || cols) && mod_device_cpu_lanes(dev) ? CPU_LANES : 1;
    Py_ssize_t runs = 1;  /* a CPU form's runs per output */
    bool rows_in = false; /* the CPU form into partials, runs of whole rows */
    make_plan(dev, g->M, g->K, g->kfast, true, &pl);
    if (cpu || cols) { /* fill the cores, each run CPU_MIN_RUN long at least */
        const ofl_device_info *in = ofl_device_get_info(dev);
        Py_ssize_t want = 4 * (Py_ssize_t)(in->max_compute_units ? in->max_compute_units : 1);
        Py_ssize_t width = cols ? cols_width(lanes, g->M) : 1;
        Py_ssize_t units = (g->M + width - 1) / width;
        Py_ssize_t S = (want + units - 1) / units, most = g->K / CPU_MIN_RUN;
        /* into partials when a run of rows is long enough: its elements count */
        Py_ssize_t most_rows = g->K * g->M / CPU_MIN_RUN;
        if (most_rows > g->K) most_rows = g->K;
        rows_in = cols && g->sq == 1 && most_rows >= 2;
        if (rows_in) S = want, most = most_rows;
        runs = S < most ? S : most < 1 ? 1 : most;
        pl.nsplit = cols ? runs : runs * lanes; /* partials per output */
    }
    /* argmin/argmax's CPU form always leaves partials, for the second pass */
    bool second = pl.nsplit > 1 || (cpu && arg);
    Py_ssize_t nparts = second ? g->M * pl.nsplit : 1;
    PyObject *i64 = mod_dtype_find_borrowed('i', 8);
    PyObject *ident = identity_scalar(op, t->acc);
    /* runs of rows add a float32 sum's rows in float32 (a run is a few
     * hundred rows; NumPy adds all of them so) and their partials in float64 */
    PyObject *part_type = rows_in ? block_type(&key) : t->acc;
    PyObject *part = ident ? scratch_take(dev, part_type, 0, nparts) : NULL;
    PyObject *parti = part && arg ? scratch_take(dev, i64, 1, nparts) : NULL;
    PyObject *x1 = NULL, *o1 = NULL, *p1 = NULL, *pi1 = NULL;
    int rc = -1;
    if (!part || (arg && !parti)) goto out;
    x1 = view1(x, g->span, g->lo);
    o1 = view1(out, g->M, out->offset);
    p1 = view1((mod_array *)part, nparts, 0);
    pi1 = arg ? view1((mod_array *)parti, nparts, 0) : NULL;
    if (!x1 || !o1 || !p1 || (arg && !pi1)) goto out;
    /* arguments a launch does not use still need an array of their type: the partials */
    PyObject *first[5] = {x1, o1, p1};
    if (arg) first[1] = pi1, first[2] = o1, first[3] = p1, first[4] = pi1;
    PyObject *cpu_arrays[3] = {x1, arg ? p1 : o1, arg ? pi1 : p1};
    int first_rc = rows_in       ? launch_cpu_acc(&key, part_type, g, runs, lanes, x1, p1, ident)
                   : cpu || cols ? launch_cpu(&key, g, cols, runs, lanes, cpu_arrays, ident, g->K)
                                 : launch(&key, &pl, g, first, g->K, ident, pl.nsplit == 1, false);
    if (first_rc < 0) goto out;
    if (rows_in) { /* the runs' rows of partials, summed over their axis 0 */
        red_key key2 = {.op = op, .in = part_type, .acc = t->acc, .out = t->out};
        geometry g2 = {.M = g->M, .Q = g->M, .sq = 1, .K = runs, .n1 = 1, .n2 = runs, .t2 = g->M};
        PyObject *second[3] = {p1, o1, p1};
        if (launch_cpu(&key2, &g2, true, 1, lanes, second, ident, g->K) < 0) goto out;
    } else if (second) { /* the partials, nsplit per output, in the accumulator's type */
        red_key key2 = {.op = op, .in = t->acc, .acc = t->acc, .out = t->out};
        geometry g2 = {
            .M = g->M, .Q = 1, .sp = pl.nsplit, .K = pl.nsplit, .n1 = 1, .n2 = pl.nsplit, .t2 = 1};
        red_plan pl2;
        make_plan(dev, g->M, pl.nsplit, true, false, &pl2);
        PyObject *second[5] = {p1, o1, p1};
        if (arg) second[1] = pi1, second[2] = o1, second[3] = p1, second[4] = pi1;
        if (launch(&key2, &pl2, &g2, second, g->K, ident, true, true) < 0) goto out;
    }
    rc = 0;
out:
    Py_XDECREF(x1);
    Py_XDECREF(o1);
    Py_XDECREF(p1);
    Py_XDECREF(pi1);
    if (part) scratch_give(dev, part_type, 0, part);
    if (parti) scratch_give(dev, i64, 1, parti);
    Py_XDECREF(ident);
    return rc;
}

/* Reduces the axes red[] of x into out's first M elements (M: the size of
 * the kept axes, whose C order out follows). */
static int reduce_into(red_op op, const red_types *t, mod_array *x, const bool *red,
                       mod_array *out) {
    geometry g;
    int fit = plan_geometry(x, red, !is_arg(op), &g);
    if (fit == GEO_OK) return g.M ? run(op, t, x, &g, out) : 0;
    if (!mod_array_is_c_contiguous(x)) { /* a C-contiguous copy merges more axes */
        PyObject *c = PyObject_CallMethod((PyObject *)x, "copy", NULL);
        int rc = c ? reduce_into(op, t, (mod_array *)c, red, out) : -1;
        Py_XDECREF(c);
        return rc;
    }
    if (fit == GEO_KEPT) { /* one reduction per index of the first kept axis */
        int d0 = 0;
        while (red[d0]) d0++;
        Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS], per = g.M / x->shape[d0];
        bool sub_red[MOD_MAXDIMS];
        for (int i = 0, j = 0; i < x->nd; i++)
            if (i != d0) shape[j] = x->shape[i], strides[j] = x->strides[i], sub_red[j++] = red[i];
        for (Py_ssize_t i = 0; i < x->shape[d0]; i++) {
            PyObject *xs =
                mod_array_view(x, x->nd - 1, shape, strides, x->offset + i * x->strides[d0]);
            PyObject *os = xs ? view1(out, per, out->offset + i * per * out->itemsize) : NULL;
            int rc = os ? reduce_into(op, t, (mod_array *)xs, sub_red, (mod_array *)os) : -1;
            Py_XDECREF(xs);
            Py_XDECREF(os);
            if (rc < 0) return -1;
        }
        return 0;
    }
    /* more than three groups of reduced axes: the last one first, into a temporary */
    int last = x->nd - 1;
    while (!red[last]) last--;
    Py_ssize_t shape[MOD_MAXDIMS];
    for (int i = 0; i < x->nd; i++) shape[i] = i == last ? 1 : x->shape[i];
    bool one[MOD_MAXDIMS], rest[MOD_MAXDIMS];
    for (int i = 0; i < x->nd; i++) one[i] = i == last, rest[i] = red[i] && i != last;
    PyObject *tmp = mod_array_new_empty(mod_array_device(x), t->out, x->nd, shape);
    int rc = tmp ? reduce_into(op, t, x, one, (mod_array *)tmp) : -1;
    if (rc == 0) {
        /* the same operation on the partial result, in its dtype; counts add up */
        red_op op2 = op == RED_COUNT ? RED_SUM : op;
        red_types t2;
        types_for(op2, t->out, t->out, ofl_device_get_info(mod_array_device(x))->has_fp64, &t2);
        rc = reduce_into(op2, &t2, (mod_array *)tmp, rest, out);
    }
    Py_XDECREF(tmp);
    return rc;
}

/* ---- the Python surface ---- */

/* axis= as a mask of the reduced axes: None (all), an integer, or (not for
 * argmin/argmax, as in NumPy) a tuple of them. */
static int parse_axes(PyObject *axis, int nd, bool tuples, bool red[MOD_MAXDIMS]) {
    for (int i = 0; i < nd; i++) red[i] = axis == Py_None;
    if (axis == Py_None) return 0;
    if (!tuples || !PyTuple_Check(axis)) {
        int a;
        if (mod_kit_axis(axis, nd, NULL, &a) < 0) return -1;
        red[a] = true;
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(axis); i++) {
        int a;
        if (mod_kit_axis(PyTuple_GET_ITEM(axis, i), nd, NULL, &a) < 0) return -1;
        if (red[a]) {
            PyErr_SetString(PyExc_ValueError, "duplicate value in 'axis'");
            return -1;
        }
        red[a] = true;
    }
    return 0;
}

/* NumPy's errors for reductions of nothing; mean's warning. */
static int check_empty(red_op op) {
    if (op == RED_MIN || op == RED_MAX) {
        PyErr_Format(PyExc_ValueError,
                     "zero-size array to reduction operation %s which has no identity",
                     OPS[op].numpy_name);
        return -1;
    }
    if (is_arg(op)) {
        PyErr_Format(PyExc_ValueError, "attempt to get %s of an empty sequence", OPS[op].name);
        return -1;
    }
    if (op == RED_MEAN) return PyErr_WarnEx(PyExc_RuntimeWarning, "Mean of empty slice", 2);
    return 0;
}

/* op(x, axis, dtype, out, keepdims) */
static PyObject *reduce(red_op op, PyObject *xo, PyObject *axis, PyObject *dtype_arg,
                        PyObject *out_arg, int keepdims) {
    if (!mod_array_check(xo))
        return PyErr_Format(
            PyExc_TypeError,
            "offload.%s takes an offload.ndarray, not %.100s (offload.asarray(x) makes one)",
            OPS[op].name, Py_TYPE(xo)->tp_name);
    if (out_arg && out_arg != Py_None)
        return PyErr_Format(PyExc_TypeError,
                            "offload.%s: out= is not supported; use the returned array",
                            OPS[op].name);
    mod_array *x = (mod_array *)xo;
    ofl_device *dev = mod_array_device(x);
    PyObject *want = NULL;
    if (dtype_arg && dtype_arg != Py_None && !(want = mod_dtype_new(dtype_arg))) return NULL;
    red_types t;
    types_for(op, x->dtype, want, ofl_device_get_info(dev)->has_fp64, &t);
    Py_XDECREF(want); /* canonical dtypes live for the process: t's pointers stay good */
    bool red[MOD_MAXDIMS];
    if (parse_axes(axis ? axis : Py_None, x->nd, !is_arg(op), red) < 0) return NULL;
    Py_ssize_t K = 1, shape[MOD_MAXDIMS];
    int nd = 0;
    for (int i = 0; i < x->nd; i++) {
        if (red[i]) K *= x->shape[i];
        if (!red[i] || keepdims) shape[nd++] = red[i] ? 1 : x->shape[i];
    }
    if (K == 0 && check_empty(op) < 0) return NULL;
    PyObject *out = mod_array_new_empty(dev, t.out, nd, shape);
    if (out && mod_kit_size(nd, shape) > 0 && reduce_into(op, &t, x, red, (mod_array *)out) < 0)
        Py_CLEAR(out);
    return out;
}

/* The functions' and methods' arguments, as NumPy's: sum(a, axis=None,
 * dtype=None, out=None, keepdims=False); min(a, axis=None, out=None,
 * keepdims=False); argmin(a, axis=None, out=None, *, keepdims=False).
 * self: the array for a method, NULL for a function. */
static PyObject *parse_and_reduce(red_op op, PyObject *self, PyObject *args, PyObject *kw) {
    static char *with_dtype[] = {"a", "axis", "dtype", "out", "keepdims", NULL};
    static char *without[] = {"a", "axis", "out", "keepdims", NULL};
    static char *count[] = {"a", "axis", "keepdims", NULL};
    bool dt = has_identity(op);
    char fmt[40];
    snprintf(fmt, sizeof fmt, "%s|O%sO%sp:%s", self ? "" : "O", dt ? "O" : "",
             is_arg(op) ? "$" : "", OPS[op].name);
    char **kwlist = (dt ? with_dtype : without) + (self ? 1 : 0);
    if (op == RED_COUNT) { /* no out=, and keepdims by keyword only */
        PyObject *x = NULL, *axis = Py_None;
        int keepdims = 0;
        if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$p:count_nonzero", count, &x, &axis,
                                         &keepdims))
            return NULL;
        return reduce(op, x, axis, NULL, NULL, keepdims);
    }
    PyObject *x = self, *axis = Py_None, *dtype = Py_None, *out = Py_None;
    int keepdims = 0;
    int ok =
        self
            ? (dt ? PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &axis, &dtype, &out,
                                                &keepdims)
                  : PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &axis, &out, &keepdims))
            : (dt ? PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &x, &axis, &dtype, &out,
                                                &keepdims)
                  : PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &x, &axis, &out, &keepdims));
    return ok ? reduce(op, x, axis, dtype, out, keepdims) : NULL;
}

#define REDUCER(op, fname)                                                                         \
    static PyObject *f_##fname(PyObject *m, PyObject *a, PyObject *k) {                            \
        return parse_and_reduce(op, NULL, a, k);                                                   \
    }                                                                                              \
    static PyObject *m_##fname(PyObject *x, PyObject *a, PyObject *k) {                            \
        return parse_and_reduce(op, x, a, k);                                                      \
    }
REDUCER(RED_SUM, sum)
REDUCER(RED_PROD, prod)
REDUCER(RED_MIN, min)
REDUCER(RED_MAX, max)
REDUCER(RED_MEAN, mean)
REDUCER(RED_ARGMIN, argmin)
REDUCER(RED_ARGMAX, argmax)
REDUCER(RED_ANY, any)
REDUCER(RED_ALL, all)
#undef REDUCER
static PyObject *f_count_nonzero(PyObject *m, PyObject *a, PyObject *k) {
    return parse_and_reduce(RED_COUNT, NULL, a, k);
}

PyObject *mod_reduce_named(const char *name, PyObject *x, PyObject *axis, PyObject *dtype,
                           bool keepdims) {
    for (size_t op = 0; op < sizeof OPS / sizeof OPS[0]; op++)
        if (!strcmp(OPS[op].name, name)) return reduce((red_op)op, x, axis, dtype, NULL, keepdims);
    return PyErr_Format(PyExc_SystemError, "offload: no reduction named %s", name);
}

static PyMethodDef functions[] = {
    {"sum", MOD_KWFUNC(f_sum),
     "sum(a, axis=None, dtype=None, out=None, keepdims=False) -> ndarray\n\nSum of the elements "
     "over all axes or "
     "the given ones, on a's device (0-d for a full sum). NumPy's dtypes: bool and integers sum to "
     "int64 "
     "(unsigned: uint64). out= must be None."},
    {"prod", MOD_KWFUNC(f_prod),
     "prod(a, axis=None, dtype=None, out=None, keepdims=False) -> ndarray: product, as sum"},
    {"min", MOD_KWFUNC(f_min),
     "min(a, axis=None, out=None, keepdims=False) -> ndarray\n\nMinimum, in a's dtype; NaN "
     "propagates; "
     "ValueError for an empty reduction."},
    {"max", MOD_KWFUNC(f_max),
     "max(a, axis=None, out=None, keepdims=False) -> ndarray: maximum, as min"},
    {"mean", MOD_KWFUNC(f_mean),
     "mean(a, axis=None, dtype=None, out=None, keepdims=False) -> ndarray\n\nArithmetic mean; "
     "float64 for "
     "integer inputs; NaN (with a RuntimeWarning) for an empty reduction."},
    {"argmin", MOD_KWFUNC(f_argmin),
     "argmin(a, axis=None, out=None, *, keepdims=False) -> int64 ndarray\n\nIndex of the first "
     "minimum (in C "
     "order for axis=None); the first NaN if there is one."},
    {"argmax", MOD_KWFUNC(f_argmax),
     "argmax(a, axis=None, out=None, *, keepdims=False) -> int64 ndarray: index of the first "
     "maximum, as argmin"},
    {"any", MOD_KWFUNC(f_any),
     "any(a, axis=None, out=None, keepdims=False) -> bool ndarray\n\nWhether any element over "
     "all axes or the given ones is nonzero (NaN counts); False for an empty reduction."},
    {"all", MOD_KWFUNC(f_all),
     "all(a, axis=None, out=None, keepdims=False) -> bool ndarray\n\nWhether every element over "
     "all axes or the given ones is nonzero (NaN counts); True for an empty reduction."},
    {"count_nonzero", MOD_KWFUNC(f_count_nonzero),
     "count_nonzero(a, axis=None, *, keepdims=False) -> int64 ndarray\n\nThe number of nonzero "
     "elements (NaN counts) over all axes or the given ones; a 0-d array for axis=None."},
    {NULL, NULL, 0, NULL},
};

/* ndarray's methods: NumPy's, with self as a */
PyMethodDef mod_reduce_methods[] = {
    {"sum", MOD_KWFUNC(m_sum),
     "sum(axis=None, dtype=None, out=None, keepdims=False) -> ndarray: offload.sum(self, ...)"},
    {"prod", MOD_KWFUNC(m_prod),
     "prod(axis=None, dtype=None, out=None, keepdims=False) -> ndarray: offload.prod(self, ...)"},
    {"min", MOD_KWFUNC(m_min),
     "min(axis=None, out=None, keepdims=False) -> ndarray: offload.min(self, ...)"},
    {"max", MOD_KWFUNC(m_max),
     "max(axis=None, out=None, keepdims=False) -> ndarray: offload.max(self, ...)"},
    {"mean", MOD_KWFUNC(m_mean),
     "mean(axis=None, dtype=None, out=None, keepdims=False) -> ndarray: offload.mean(self, ...)"},
    {"argmin", MOD_KWFUNC(m_argmin),
     "argmin(axis=None, out=None, *, keepdims=False) -> int64 ndarray: offload.argmin(self, ...)"},
    {"argmax", MOD_KWFUNC(m_argmax),
     "argmax(axis=None, out=None, *, keepdims=False) -> int64 ndarray: offload.argmax(self, ...)"},
    {"any", MOD_KWFUNC(m_any),
     "any(axis=None, out=None, keepdims=False) -> bool ndarray: offload.any(self, ...)"},
    {"all", MOD_KWFUNC(m_all),
     "all(axis=None, out=None, keepdims=False) -> bool ndarray: offload.all(self, ...)"},
    {NULL, NULL, 0, NULL},
};

int mod_reduce_add_functions(PyObject *module) {
    if (!scratch) {
        if (!(scratch = PyDict_New())) return -1;
        if (mod_atexit(&release_def) < 0)
            return -1; /* the scratch arrays free their device memory */
    }
    return PyModule_AddFunctions(module, functions);
}
