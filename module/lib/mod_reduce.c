/* mod_reduce: reductions of offload arrays -- offload.sum prod min max mean
 * argmin argmax any all count_nonzero and the ndarray methods of the same
 * names (count_nonzero has none, as NumPy), with NumPy 2's
 * arguments, result dtypes, errors and NaN rules. The functions are added
 * by mod_lib_add_functions; the methods (mod_reduce_methods) go to ndarray
 * through mod_lib_array_kernels.
 *
 * Every reduction runs as generated JIT kernels (mod_gen): one text per
 * form, operation and dtypes, which sees the input as a 1-D view and gets
 * its layout as numbers (geometry: the kept axes merged into at most two
 * groups, the reduced ones into at most three), so any shape and strides
 * reuse one compiled kernel. The tree form (kernel_text) serves every
 * shape, on a GPU and wherever no other form does; a CPU device takes runs
 * of contiguous elements in forms of its own (cpu_kernel_text, "the CPU
 * form"; across outputs; rows into partials). Where outputs are few, k is
 * split over groups and a second launch reduces the partials. Layouts that
 * do not fit are copied, looped or reduced in steps (reduce_into).
 * argmin/argmax keep the smallest index among equal values, the first NaN
 * winning; min/max propagate NaN. The forms, the dtype and NaN rules and
 * the measured reasons: docs/reductions.md */
#include "mod_lib.h"

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

/* A canonical dtype's numpy.dtype.kind: 'b' 'i' 'u' 'f' 'c'. */
static char kind_of(PyObject *dtype) {
    const char *n = mod_dtype_name(dtype);
    return n[0] == 'b' ? 'b' : n[0] == 'i' ? 'i' : n[0] == 'u' ? 'u' : n[0] == 'c' ? 'c' : 'f';
}

/* Floating or complex: NaN is a value, and a mean divides in its own kind. */
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
    char k = kind_of(in);
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
        t->cast = kind_of(in) == 'b' ? NULL : mod_dtype_find_borrowed('b', 1);
        t->out = op == RED_COUNT ? t->acc : mod_dtype_find_borrowed('b', 1);
        return;
    }
    if (!has_identity(op)) { /* min, max, argmin, argmax: the input's own type (bool as 0/1) */
        /* bool and integers narrower than 32 bits in int32, exact: in uint8
         * and int8 accumulators PoCL 3.1's LLVM 15 never ended its code
         * generation (docs/reductions.md) */
        char k = kind_of(in);
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
        elem = kind_of(in) == 'c' ? c128 : f64;
    char k = kind_of(elem);
    t->out = elem;
    t->acc = k == 'f' ? f64 : k == 'c' ? c128 : mod_dtype_find_borrowed(k == 'u' ? 'u' : 'i', 8);
    if (op == RED_MEAN && !inexact(k)) t->acc = f64; /* NumPy's mean divides in floating point */
    /* Elements are cast to `elem` only where that changes the result: to bool
     * (a sum of bools is a logical or) and from floating to integer
     * (truncation). Narrower integers wrap the same either way, and floats
     * are added in the wider accumulator. */
    char ki = kind_of(in);
    t->cast = (k == 'b' && ki != 'b') || ((k == 'i' || k == 'u') && ki == 'f') ? elem : NULL;
    if (op == RED_MEAN) t->cast = NULL;
}

/* The identity of the accumulation as a NumPy scalar of the accumulator's dtype. */
static PyObject *identity_scalar(red_op op, PyObject *acc) {
    char k = kind_of(acc);
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

/* ---- kernel text ---- */

/* What makes one kernel text differ from another. */
typedef struct {
    red_op op;
    const char *acc, *cast, *out; /* dtype names; cast may be NULL */
    const char *in;               /* the input's dtype name (the CPU form's blocks depend on it) */
    bool acc_float;
} text_key;

/* "var = <element at index expression idx, as the accumulator's type>" */
static void put_load(mod_text *t, const text_key *key, int ind, const char *var, const char *idx) {
    if (key->cast && !strcmp(key->cast, "bool"))
        mod_text_put(t, "%*s%s = np.%s(x[%s] != 0)\n", ind, "", var, key->acc, idx);
    else if (key->cast)
        mod_text_put(t, "%*s%s = np.%s(np.%s(x[%s]))\n", ind, "", var, key->acc, key->cast, idx);
    else
        mod_text_put(t, "%*s%s = np.%s(x[%s])\n", ind, "", var, key->acc, idx);
}

/* a = a (op) v, for the plain reductions. min/max propagate NaN: a NaN v is
 * taken, and a NaN a stays (no comparison with it holds). `|`, not `or`: no
 * branch, so that CPU compilers make one vector select of it (Intel: a max
 * of 2**22 float32 0.37 -> 0.27 ms). */
static void put_combine(mod_text *t, const text_key *key, int ind, const char *a, const char *v) {
    char nan[40] = "";
    if (key->acc_float) snprintf(nan, sizeof nan, " | (%s != %s)", v, v);
    const char *better = key->op == RED_MIN ? "<" : ">";
    switch (key->op) {
    case RED_SUM:
    case RED_MEAN: mod_text_put(t, "%*s%s = %s + %s\n", ind, "", a, a, v); break;
    case RED_PROD: mod_text_put(t, "%*s%s = %s * %s\n", ind, "", a, a, v); break;
    case RED_COUNT: mod_text_put(t, "%*s%s = %s + %s\n", ind, "", a, a, v); break;
    case RED_ANY: mod_text_put(t, "%*s%s = %s | %s\n", ind, "", a, a, v); break;
    case RED_ALL: mod_text_put(t, "%*s%s = %s & %s\n", ind, "", a, a, v); break;
    default:
        mod_text_put(t, "%*s%s = %s if (%s %s %s)%s else %s\n", ind, "", a, v, v, better, a, nan,
                     a);
    }
}

/* argmin/argmax: (a, i) takes (v, c) when v is better, or as good and
 * earlier. NaN is the best value, and among NaNs the earliest. */
static void put_arg_combine(mod_text *t, const text_key *key, int ind, const char *a, const char *i,
                            const char *v, const char *c) {
    const char *lt = key->op == RED_ARGMIN ? "<" : ">";
    if (key->acc_float)
        mod_text_put(
            t,
            "%*sif %s %s %s or (%s == %s and %s < %s) or (%s != %s and (%s == %s or %s < %s)):\n",
            ind, "", v, lt, a, v, a, c, i, v, v, a, a, c, i);
    else
        mod_text_put(t, "%*sif %s %s %s or (%s == %s and %s < %s):\n", ind, "", v, lt, a, v, a, c,
                     i);
    mod_text_put(t, "%*s%s = %s\n%*s%s = %s\n", ind + 4, "", a, v, ind + 4, "", i, c);
}

static void put_step(mod_text *t, const text_key *key, int ind, int u) {
    char a[16], v[16], i[16], c[16];
    snprintf(a, sizeof a, "a%d", u), snprintf(v, sizeof v, "v%d", u);
    snprintf(i, sizeof i, "i%d", u), snprintf(c, sizeof c, "c%d", u);
    if (is_arg(key->op))
        put_arg_combine(t, key, ind, a, i, v, c);
    else
        put_combine(t, key, ind, a, v);
}

/* Accumulators per work-item, and so loads in flight per work-item. On an
 * H100, 16 reach 0.92-0.95x of CuPy's float32 sum where 4 gave a third of it
 * (the loads of one iteration go out together); argmin/argmax keep
 * (value, index) pairs, twice the registers, so fewer. */
static int unroll_of(red_op op) { return is_arg(op) ? 4 : 16; }

/* The loop of one work-item over its k range at indent ind: `unroll`
 * elements an iteration, then one at a time. at: the element index of k
 * (printf, each %s = k). Indices are unsigned: an int64 index would be
 * checked for Python's negative-index wrap on every load; negative strides
 * still land right, modulo 2**64. */
static void put_loop(mod_text *t, const text_key *key, int ind, const char *at, int unroll) {
    bool arg = is_arg(key->op);
    char kk[32], idx[200], v[16];
    if (unroll > 1) {
        mod_text_put(t, "%*swhile k + %d * step < n:\n", ind, "", unroll - 1);
        for (int u = 0; u < unroll; u++) {
            snprintf(kk, sizeof kk, u ? "(k + %d * step)" : "k", u);
            snprintf(v, sizeof v, "v%d", u);
            snprintf(idx, sizeof idx, at, kk, kk, kk);
            put_load(t, key, ind + 4, v, idx);
        }
        if (arg) {
            mod_text_put(t, "%*sif fromp:\n", ind + 4, "");
            for (int u = 0; u < unroll; u++) {
                snprintf(kk, sizeof kk, u ? "(k + %d * step)" : "k", u);
                snprintf(idx, sizeof idx, at, kk, kk, kk);
                mod_text_put(t, "%*sc%d = xi[%s]\n", ind + 8, "", u, idx);
            }
            mod_text_put(t, "%*selse:\n", ind + 4, "");
            for (int u = 0; u < unroll; u++)
                mod_text_put(t, u ? "%*sc%d = k + %d * step\n" : "%*sc%d = k\n", ind + 8, "", u, u);
        }
        for (int u = 0; u < unroll; u++) put_step(t, key, ind + 4, u);
        mod_text_put(t, "%*sk += %d * step\n", ind + 4, "", unroll);
    }
    mod_text_put(t, "%*swhile k < n:\n", ind, "");
    snprintf(idx, sizeof idx, at, "k", "k", "k");
    put_load(t, key, ind + 4, "v0", idx);
    if (arg)
        mod_text_put(t, "%*sc0 = k\n%*sif fromp:\n%*sc0 = xi[%s]\n", ind + 4, "", ind + 4, "",
                     ind + 8, "", idx);
    put_step(t, key, ind + 4, 0);
    mod_text_put(t, "%*sk += step\n", ind + 4, "");
}

/* The value written to the result from the accumulator acc. */
static void put_final(mod_text *t, const text_key *key, const char *acc) {
    char v[96];
    if (key->op == RED_MEAN)
        snprintf(v, sizeof v, key->acc_float ? "%s / count" : "np.float64(%s) / count", acc);
    else
        snprintf(v, sizeof v, "%s", acc);
    if (is_arg(key->op))
        mod_text_put(t, "out[np.uint64(m)] = bi[li]\n");
    else if (!strcmp(key->out, "bool"))
        mod_text_put(t, "out[np.uint64(m)] = %s != 0\n", v);
    else if (!strcmp(key->out, key->acc))
        mod_text_put(t, "out[np.uint64(m)] = %s\n", v);
    else
        mod_text_put(t, "out[np.uint64(m)] = np.%s(%s)\n", key->out, v);
}

/* The kernel: one 1-D NdRange; x, out and the partials are 1-D arrays and
 * the layout comes as numbers, so a kernel is compiled once per element
 * type whatever the shape and strides. Output m reads x[o + kk] with
 * o = base + (m // Q) * sp + (m % Q) * sq, kk the reduced axes' offset of
 * k, the C-order index over them, (n / (n1 * n2), n1, n2) strided
 * (t0, t1, t2) -- one axis (n2 == n) is the quick case. */
static void kernel_text(mod_text *t, const text_key *key, char *name, size_t namelen) {
    bool arg = is_arg(key->op);
    if (arg)
        snprintf(name, namelen, "reduce_%s_%s", OPS[key->op].name, key->acc);
    else
        snprintf(name, namelen, "reduce_%s_%s_to_%s", OPS[key->op].name, key->acc, key->out);
    t->n = 0;
    mod_text_put(
        t,
        "def %s(item, x, %sout, part, %sbase, Q, sp, sq, n1, n2, t0, t1, t2, n, nsplit, nk, kst, "
        "qst, %sident, "
        "final%s):\n",
        name, arg ? "xi, " : "", arg ? "parti, " : "", arg ? "" : "count, ", arg ? ", fromp" : "");
    mod_text_put(t, "    # offload.%s (module/mod_reduce.c)\n", OPS[key->op].name);
    mod_text_put(t, "    grp = item.get_group()\n"
                    "    li = item.get_local_id(0)\n"
                    "    nq = item.get_local_range(0) // nk\n"
                    "    g = grp.get_group_id(0)\n"
                    "    s = g %% nsplit\n"
                    "    lk = (li // kst) %% nk\n"
                    "    m = (g // nsplit) * nq + (li // qst) %% nq\n"
                    "    o = base + (m // Q) * sp + (m %% Q) * sq\n"
                    "    step = nsplit * nk\n"
                    "    k = s * nk + lk\n");
    int unroll = unroll_of(key->op);
    for (int u = 0; u < unroll; u++) {
        mod_text_put(t, "    a%d = ident\n", u);
        if (arg) mod_text_put(t, "    i%d = 9223372036854775807\n", u);
    }
    mod_text_put(t, "    if m < out.shape[0]:\n"
                    "        if n2 == n:\n");
    put_loop(t, key, 12, "np.uint64(o + %s * t2)", unroll);
    mod_text_put(t, "        else:\n"
                    "            n12 = n1 * n2\n");
    /* several reduced axes: divisions dominate, so no unrolling */
    put_loop(t, key, 12,
             "np.uint64(o + (%s // n12) * t0 + ((%s // n2) %% n1) * t1 + (%s %% n2) * t2)", 1);
    for (int h = unroll / 2; h > 0; h /= 2) /* the accumulators, pairwise */
        for (int j = 0; j < h; j++) {
            char a[16], v[16], i[16], c[16];
            snprintf(a, sizeof a, "a%d", j), snprintf(v, sizeof v, "a%d", j + h);
            snprintf(i, sizeof i, "i%d", j), snprintf(c, sizeof c, "i%d", j + h);
            if (arg)
                put_arg_combine(t, key, 4, a, i, v, c);
            else
                put_combine(t, key, 4, a, v);
        }
    /* the nk work-items of an output (kst apart) combine in local memory */
    mod_text_put(t, "    bv = ol.local_array(%d, np.%s)\n    bv[li] = a0\n", GROUP_MAX, key->acc);
    if (arg) mod_text_put(t, "    bi = ol.local_array(%d, np.int64)\n    bi[li] = i0\n", GROUP_MAX);
    mod_text_put(t, "    ol.group_barrier(grp)\n"
                    "    h = nk // 2\n"
                    "    while h > 0:\n"
                    "        if lk < h:\n"
                    "            a0 = bv[li]\n"
                    "            v0 = bv[li + h * kst]\n");
    if (arg) mod_text_put(t, "            i0 = bi[li]\n            c0 = bi[li + h * kst]\n");
    put_step(t, key, 12, 0);
    mod_text_put(t, "            bv[li] = a0\n");
    if (arg) mod_text_put(t, "            bi[li] = i0\n");
    mod_text_put(t, "        ol.group_barrier(grp)\n"
                    "        h //= 2\n"
                    "    if lk == 0 and m < out.shape[0]:\n"
                    "        if final:\n"
                    "            ");
    put_final(t, key, "bv[li]");
    mod_text_put(t, "        else:\n"
                    "            part[m * nsplit + s] = bv[li]\n");
    if (arg) mod_text_put(t, "            parti[m * nsplit + s] = bi[li]\n");
}

/* ---- the CPU form ----
 * A CPU runs the tree above one work-item at a time (a float32 sum of 2**24:
 * 27-60 ms, NumPy 3). So where an output's elements lie contiguous, a CPU
 * reduces them in a few runs (four per core, at least CPU_MIN_RUN elements
 * each), a work-group each, walked in blocks of CPU_ROWS x CPU_LANES: in
 * lanes where the device vectorises across work-items (Intel's runtime,
 * mod_device_cpu_lanes), lane l taking the block's column l; else (PoCL) in
 * one work-item with CPU_LANES accumulators, one per column. The runs'
 * partials meet in the tree kernel's second pass. The forms and their
 * measurements: docs/reductions.md */
#define CPU_LANES 16
#define CPU_ROWS 8
#define CPU_MIN_RUN 4096

/* The type a block accumulates in: float32 for float32 sums of float32 (the
 * block is short; its total goes on in float64), else the accumulator's (a
 * float32 sum asked for in float64 is added in float64 throughout). */
static const char *block_type(const text_key *key) {
    bool sum = key->op == RED_SUM || key->op == RED_MEAN;
    return sum && key->acc_float && !key->cast && !strcmp(key->in, "float32") &&
                   !strcmp(key->out, "float32")
               ? "float32"
               : key->acc;
}

/* The CPU form's work-item in a run: lane l of run r % S of output m, whose
 * elements from o are its k range [k, hi) (whole blocks, but the run's last),
 * and total, its accumulator. */
static void put_run_start(mod_text *t) {
    const int B = CPU_LANES * CPU_ROWS;
    mod_text_put(t,
                 "    l = item.get_local_id(0)\n"
                 "    r = item.get_group().get_group_id(0)\n"
                 "    m = r // S\n"
                 "    o = base + (m // Q) * sp + (m %% Q) * sq\n"
                 "    c = (K + S - 1) // S\n"
                 "    c = (c + %d) // %d * %d\n"
                 "    k = (r %% S) * c\n"
                 "    hi = min(k + c, K)\n"
                 "    total = ident\n",
                 B - 1, B, B);
}

/* The end of a block (where the run was walked in blocks), then the loop
 * over the run's last elements (fewer than a block), lane l taking l,
 * l + lanes, ...: v0 is each. */
static void put_run_tail(mod_text *t, const text_key *key, bool blocks) {
    if (blocks) mod_text_put(t, "        k += %d\n", CPU_LANES * CPU_ROWS);
    mod_text_put(t, "    k += l\n"
                    "    while k < hi:\n");
    put_load(t, key, 8, "v0", "np.uint64(o + k)");
}

/* (a, i) takes (v, c) where c comes after i: when v is better, or v is the
 * first NaN, or (from_ident) a is still the identity, which an element equal
 * to it must replace. Selects, not branches (put_combine says why). */
static void put_arg_combine_in_order(mod_text *t, const text_key *key, int ind, const char *a,
                                     const char *i, const char *v, const char *c, bool from_ident) {
    const char *better = key->op == RED_ARGMIN ? "<" : ">";
    char first[64] = "";
    if (from_ident) snprintf(first, sizeof first, " | (%s == 9223372036854775807)", i);
    if (key->acc_float)
        mod_text_put(t, "%*stake = (%s %s %s) | ((%s != %s) & (%s == %s))%s\n", ind, "", v, better,
                     a, v, v, a, a, first);
    else
        mod_text_put(t, "%*stake = (%s %s %s)%s\n", ind, "", v, better, a, first);
    mod_text_put(t, "%*s%s = %s if take else %s\n%*s%s = %s if take else %s\n", ind, "", a, v, a,
                 ind, "", i, c, i);
}

/* The loop over a run's whole blocks at indent ind, for argmin/argmax,
 * keeping the first NaN (put_arg_blocks_fast is the loop that ignores NaN). */
static void put_arg_blocks(mod_text *t, const text_key *key, int lanes, int ind) {
    mod_text_put(t, "%*swhile k + %d < hi:\n", ind, "", CPU_LANES * CPU_ROWS - 1);
    /* lanes: lane l takes the block's column l; else one work-item takes every
     * column u in its own (a_u, i_u), and the columns meet at the block's end */
    int cols = lanes > 1 ? 1 : CPU_LANES;
    char idx[64], a[16], i[16], v[16], c[16];
    for (int row = 0; row < CPU_ROWS; row++)
        for (int u = 0; u < cols; u++) {
            int at = row * CPU_LANES + u;
            snprintf(a, sizeof a, "a%d", u), snprintf(i, sizeof i, "i%d", u);
            snprintf(v, sizeof v, "v%d", u), snprintf(c, sizeof c, "c%d", u);
            snprintf(idx, sizeof idx,
                     lanes > 1 ? "np.uint64(o + k + %d + l)" : "np.uint64(o + k + %d)", at);
            put_load(t, key, ind + 4, row ? v : a, idx);
            mod_text_put(t, lanes > 1 ? "%*s%s = k + %d + l\n" : "%*s%s = k + %d\n", ind + 4, "",
                         row ? c : i, at);
            if (row) put_arg_combine_in_order(t, key, ind + 4, a, i, v, c, false);
        }
    for (int h = cols / 2; h > 0; h /= 2) /* columns: any order, so ties go by index */
        for (int j = 0; j < h; j++) {
            snprintf(a, sizeof a, "a%d", j), snprintf(i, sizeof i, "i%d", j);
            snprintf(v, sizeof v, "a%d", j + h), snprintf(c, sizeof c, "i%d", j + h);
            put_arg_combine(t, key, ind + 4, a, i, v, c);
        }
    put_arg_combine_in_order(t, key, ind + 4, "total", "ti", "a0", "i0", true);
    mod_text_put(t, "%*sk += %d\n", ind + 4, "", CPU_LANES * CPU_ROWS);
}

/* The fast loop of argmin/argmax with lanes over a run's whole blocks (the
 * slow one of put_arg_blocks runs again where seen_nan): lane l keeps only
 * its best value and the first block that reached it -- a compare and a
 * select an element, where carrying the index took three more -- and at
 * the end finds its first element of that block equal to the best. Equal
 * values (-0.0 and +0.0 too) resolve to the first, as NumPy's. */
static void put_arg_blocks_fast(mod_text *t, const text_key *key) {
    const char *better = key->op == RED_ARGMIN ? "<" : ">";
    mod_text_put(t, "    tb = -1\n    while k + %d < hi:\n", CPU_LANES * CPU_ROWS - 1);
    char idx[64];
    for (int row = 0; row < CPU_ROWS; row++) {
        const char *v = row ? "v0" : "a0";
        snprintf(idx, sizeof idx, "np.uint64(o + k + %d + l)", row * CPU_LANES);
        put_load(t, key, 8, v, idx);
        mod_text_put(t, "        seen_nan = seen_nan | (%s != %s)\n", v, v);
        if (row) mod_text_put(t, "        a0 = v0 if v0 %s a0 else a0\n", better);
    }
    mod_text_put(t,
                 "        take = (a0 %s total) | (tb == -1)\n"
                 "        total = a0 if take else total\n"
                 "        tb = k if take else tb\n"
                 "        k += %d\n"
                 "    if tb >= 0:\n",
                 better, CPU_LANES * CPU_ROWS);
    for (int row = CPU_ROWS - 1; row >= 0; row--) { /* the last match written is the first */
        snprintf(idx, sizeof idx, "np.uint64(o + tb + %d + l)", row * CPU_LANES);
        put_load(t, key, 8, "v0", idx);
        mod_text_put(t, "        ti = tb + %d + l if v0 == total else ti\n", row * CPU_LANES);
    }
}

/* argmin/argmax in the CPU form: each column of the blocks (a lane's, or an
 * accumulator pair of the one work-item) keeps (value, index), visiting its
 * elements in order (so a tie keeps the earlier); the run leaves its best
 * as partials for the tree kernel's second pass, which picks the best and,
 * among equals, the first. */
static void cpu_arg_kernel_text(mod_text *t, const text_key *key, int lanes, const char *name) {
    mod_text_put(t, "def %s(item, x, part, parti, base, Q, sp, sq, K, t2, S, ident):\n", name);
    mod_text_put(t, "    # offload.%s on a CPU device (module/lib/mod_reduce.c)\n",
                 OPS[key->op].name);
    put_run_start(t);
    mod_text_put(t, "    ti = 9223372036854775807\n");
    bool fast = lanes > 1 && key->acc_float; /* PoCL made the flag scalar (see min/max) */
    if (fast) { /* where a NaN was seen, the run again, keeping the first NaN */
        mod_text_put(t, "    k0 = k\n    seen_nan = False\n");
        put_arg_blocks_fast(t, key);
        mod_text_put(t, "    if seen_nan:\n"
                        "        k = k0\n"
                        "        total = ident\n"
                        "        ti = 9223372036854775807\n");
        put_arg_blocks(t, key, lanes, 8);
    } else {
        put_arg_blocks(t, key, lanes, 4);
    }
    mod_text_put(t, "    k += l\n    while k < hi:\n");
    put_load(t, key, 8, "v0", "np.uint64(o + k)");
    mod_text_put(t, "        c0 = k\n");
    put_arg_combine_in_order(t, key, 8, "total", "ti", "v0", "c0", true);
    mod_text_put(t,
                 "        k += %d\n"
                 "    part[r * %d + l] = total\n"
                 "    parti[r * %d + l] = ti\n",
                 lanes, lanes, lanes);
}

/* The kernel: S runs (work-groups) of `lanes` work-items per output, g->K
 * elements per output, contiguous from o. Each run leaves `lanes` partials,
 * or with one run of one work-item, when final, the result. */
static void cpu_kernel_text(mod_text *t, const text_key *key, int lanes, char *name,
                            size_t namelen) {
    text_key blk = *key;
    blk.acc = block_type(key);
    const int B = CPU_LANES * CPU_ROWS; /* elements per block */
    snprintf(name, namelen, "reduce_cpu%s_%s_%s_to_%s%s%s", lanes > 1 ? "_lanes" : "",
             OPS[key->op].name, key->acc, key->out, blk.acc != key->acc ? "_in_blocks_of_" : "",
             blk.acc != key->acc ? blk.acc : "");
    t->n = 0;
    if (is_arg(key->op)) {
        cpu_arg_kernel_text(t, key, lanes, name);
        return;
    }
    mod_text_put(t, "def %s(item, x, out, part, base, Q, sp, sq, K, t2, S, ident, count, final):\n",
                 name);
    mod_text_put(t, "    # offload.%s on a CPU device (module/lib/mod_reduce.c)\n",
                 OPS[key->op].name);
    put_run_start(t);
    /* float min/max in lanes: within a block a plain select and a flag that a
     * NaN was seen, which makes the result NaN at the end (Intel: a max of 2**22
     * float32 0.30 -> 0.22 ms); PoCL made the flag scalar (2.2 -> 14 ms) */
    bool flag = lanes > 1 && key->acc_float && (key->op == RED_MIN || key->op == RED_MAX);
    if (flag) mod_text_put(t, "    seen_nan = False\n");
    /* all() in one work-item (PoCL) walks its run in the plain loop alone:
     * the block of 16 uint8 flags and-ed 8 rows deep sent PoCL 3.1's LLVM 15
     * into a loop, never ending on a cold cache; the plain loop builds in
     * 0.4 s and runs at NumPy's speed (docs/reductions.md) */
    bool blocks = !(key->op == RED_ALL && lanes == 1);
    if (blocks) mod_text_put(t, "    while k + %d < hi:\n", B - 1);
    char var[16], idx[64], a[16], v[16];
    for (int row = 0; blocks && row < CPU_ROWS; row++)
        for (int u = 0; u < (lanes > 1 ? 1 : CPU_LANES); u++) {
            /* lanes: lane l takes the block's column l; else CPU_LANES
             * accumulators, one per column, then pairwise */
            snprintf(idx, sizeof idx,
                     lanes > 1 ? "np.uint64(o + k + %d + l)" : "np.uint64(o + k + %d)",
                     row * CPU_LANES + u);
            snprintf(var, sizeof var, row ? "v%d" : "a%d", u);
            put_load(t, &blk, 8, var, idx);
            if (!row) continue;
            snprintf(a, sizeof a, "a%d", u), snprintf(v, sizeof v, "v%d", u);
            if (flag)
                mod_text_put(
                    t,
                    "        %s = %s if %s %s %s else %s\n        seen_nan = seen_nan | (%s != "
                    "%s)\n",
                    a, v, v, key->op == RED_MIN ? "<" : ">", a, a, v, v);
            else
                put_combine(t, &blk, 8, a, v);
        }
    if (blocks && lanes == 1) {
        for (int h = CPU_LANES / 2; h > 0; h /= 2)
            for (int j = 0; j < h; j++) {
                snprintf(a, sizeof a, "a%d", j), snprintf(v, sizeof v, "a%d", j + h);
                put_combine(t, &blk, 8, a, v);
            }
    }
    if (blocks) {
        mod_text_put(t, "        v0 = np.%s(a0)\n", key->acc);
        put_combine(t, key, 8, "total", "v0");
    }
    put_run_tail(t, key, blocks);
    put_combine(t, key, 8, "total", "v0");
    mod_text_put(t, "        k += %d\n", lanes);
    if (flag) mod_text_put(t, "    if seen_nan:\n        total = np.%s(math.nan)\n", key->acc);
    mod_text_put(t, "    if final:\n        ");
    put_final(t, key, "total");
    mod_text_put(t,
                 "    else:\n"
                 "        part[r * %d + l] = total\n",
                 lanes);
}

/* The CPU form across outputs (cpu_cols_form: a sum over axis 0 of a
 * C-contiguous matrix): a tile of `width` neighbouring outputs (cols_width)
 * walks its k range together, a row of the tile per k step, in lanes or in
 * one work-item's accumulators; the last tile is moved back to end at M (it
 * recomputes a few outputs of its neighbour, writing the same values). The
 * tree took 3.7 ms for a 2048^2 float32 sum over axis 0 on Intel's runtime,
 * NumPy 0.3; unit outputs 2.3 -> 1.8 ms (docs/reductions.md). */
static void cpu_cols_kernel_text(mod_text *t, const text_key *key, int lanes, int width, bool unit,
                                 char *name, size_t namelen) {
    snprintf(name, namelen, "reduce_cpu_cols%d%s%s_%s_%s_to_%s", width, lanes > 1 ? "_lanes" : "",
             unit ? "_unit" : "", OPS[key->op].name, key->acc, key->out);
    t->n = 0;
    mod_text_put(t, "def %s(item, x, out, part, base, Q, sp, sq, K, t2, S, ident, count, final):\n",
                 name);
    mod_text_put(t, "    # offload.%s on a CPU device, across outputs (module/lib/mod_reduce.c)\n",
                 OPS[key->op].name);
    mod_text_put(t,
                 "    l = item.get_local_id(0)\n"
                 "    r = item.get_group().get_group_id(0)\n"
                 "    m0 = min((r // S) * %d, out.shape[0] - %d)\n"
                 "    c = (K + S - 1) // S\n"
                 "    k = (r %% S) * c\n"
                 "    hi = min(k + c, K)\n",
                 width, width);
    int accs = width / lanes;
    char m[CPU_LANES][32], a[16], idx[96]; /* accs <= CPU_LANES */
    for (int u = 0; u < accs; u++) {
        snprintf(m[u], sizeof m[u], lanes > 1 ? "m0 + l + %d" : "m0 + %d", u * lanes);
        mod_text_put(t, "    a%d = ident\n", u);
    }
    mod_text_put(t, "    while k < hi:\n");
    for (int u = 0; u < accs; u++) {
        /* unit: outputs one element apart, which the text must say for the
         * device compiler to see a run (with `* sq` it gathers) */
        snprintf(idx, sizeof idx,
                 unit ? "np.uint64(base + %s + k * t2)" : "np.uint64(base + (%s) * sq + k * t2)",
                 m[u]);
        put_load(t, key, 8, "v0", idx);
        snprintf(a, sizeof a, "a%d", u);
        put_combine(t, key, 8, a, "v0");
    }
    mod_text_put(t, "        k += 1\n");
    for (int u = 0; u < accs; u++) {
        snprintf(a, sizeof a, "a%d", u);
        mod_text_put(t, "    m = %s\n    if final:\n        ", m[u]);
        put_final(t, key, a);
        mod_text_put(t, "    else:\n        part[m * S + r %% S] = %s\n", a);
    }
}

/* The CPU form into partials (rows_in in run()), over the outer axis of a
 * C-contiguous block (unit outputs): S runs, a work-group each, add every
 * row of their band of K into a row of partials, part[r * M + m], which
 * stays in cache while x streams through in address order, as NumPy does
 * (out += row): a 2048^2 float32 sum over axis 0, 0.19-0.29 ms, down the
 * columns 0.29-0.37 (Intel); PoCL 0.63-0.66 -> 0.19 ms. The partials then go
 * through the form above over their axis 0. Lane l takes the outputs l,
 * l + lanes, ... */
static void cpu_acc_kernel_text(mod_text *t, const text_key *key, int lanes, char *name,
                                size_t namelen) {
    snprintf(name, namelen, "reduce_cpu_acc%d_%s_%s", lanes, OPS[key->op].name, key->acc);
    t->n = 0;
    mod_text_put(t, "def %s(item, x, part, base, M, K, t2, S, ident):\n", name);
    mod_text_put(t,
                 "    # offload.%s on a CPU device, rows into partials (module/lib/mod_reduce.c)\n",
                 OPS[key->op].name);
    mod_text_put(t,
                 "    l = item.get_local_id(0)\n"
                 "    r = item.get_group().get_group_id(0)\n"
                 "    c = (K + S - 1) // S\n"
                 "    k = r * c\n"
                 "    hi = min(k + c, K)\n"
                 "    p = r * M\n"
                 "    e = M - M %% %d\n"
                 "    for j in range(0, e, %d):\n"
                 "        part[np.uint64(p + j + l)] = ident\n"
                 "    if e + l < M:\n"
                 "        part[np.uint64(p + e + l)] = ident\n",
                 lanes, lanes);
    /* the full steps; then, in a loop of their own (a branch on the lane in
     * the first made Intel's code masked throughout: 0.2 -> 0.6 ms), the
     * lanes of the last, partial step */
    for (int tail = 0; tail < 2; tail++) {
        const char *at = tail ? "e" : "j";
        int ind = tail ? 12 : 16;
        char idx[64];
        if (tail)
            mod_text_put(t, "    if e + l < M:\n"
                            "        k = r * c\n"
                            "        while k < hi:\n"
                            "            o = base + k * t2\n");
        else
            mod_text_put(t,
                         "    while k < hi:\n"
                         "        o = base + k * t2\n"
                         "        for j in range(0, e, %d):\n",
                         lanes);
        snprintf(idx, sizeof idx, "np.uint64(o + %s + l)", at);
        put_load(t, key, ind, "v0", idx);
        mod_text_put(t, "%*sa0 = part[np.uint64(p + %s + l)]\n", ind, "", at);
        put_combine(t, key, ind, "a0", "v0");
        mod_text_put(t, "%*spart[np.uint64(p + %s + l)] = a0\n", ind, "", at);
        mod_text_put(t, "%*sk += 1\n", tail ? 12 : 8, "");
    }
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

static Py_ssize_t size_of(int nd, const Py_ssize_t *shape) {
    Py_ssize_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    return n;
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

/* The kernel of a form (FORM_*) for key: remembered by a short key naming
 * all the text depends on, written and compiled at the first call. The CPU
 * forms' loops are bounded by the array: they run to the end (no cancel
 * checks, mod_kernel_runs_to_end). */
enum { FORM_TREE, FORM_CPU_ROWS, FORM_CPU_COLS, FORM_CPU_ACC };

static PyObject *kernel_of(const text_key *key, int form, int lanes, int width, bool unit) {
    char memo[160];
    snprintf(memo, sizeof memo, "reduce %d %d %s %s %s %s %d %d %d", form, (int)key->op, key->in,
             key->acc, key->cast ? key->cast : "-", key->out, lanes, width, (int)unit);
    PyObject *k = mod_gen_kernel_by_key_borrowed(memo);
    if (k) return k;
    mod_text *t = PyMem_Malloc(sizeof *t);
    if (!t) return PyErr_NoMemory();
    char name[128];
    if (form == FORM_CPU_COLS)
        cpu_cols_kernel_text(t, key, lanes, width, unit, name, sizeof name);
    else if (form == FORM_CPU_ACC)
        cpu_acc_kernel_text(t, key, lanes, name, sizeof name);
    else if (form == FORM_CPU_ROWS)
        cpu_kernel_text(t, key, lanes, name, sizeof name);
    else
        kernel_text(t, key, name, sizeof name);
    if (mod_text_ok(t, name) && (k = mod_gen_kernel_borrowed(name, t->s)) &&
        mod_gen_remember(memo, k) < 0)
        k = NULL;
    PyMem_Free(t);
    if (k && form != FORM_TREE) mod_kernel_runs_to_end(k); /* before its first launch */
    return k;
}

/* One launch over pl, reading g. arrays: (x, out, part) or, for
 * argmin/argmax, (x, xi, out, part, parti). */
static int launch(const text_key *key, const red_plan *pl, const geometry *g,
                  PyObject *const *arrays, Py_ssize_t count, PyObject *ident, bool final,
                  bool fromp) {
    PyObject *k = kernel_of(key, FORM_TREE, 1, 0, false);
    if (!k) return -1;
    bool arg = is_arg(key->op);
    Py_ssize_t nums[] = {g->base,
                         g->Q,
                         g->sp,
                         g->sq,
                         g->n1,
                         g->n2,
                         g->t0,
                         g->t1,
                         g->t2,
                         g->K,
                         pl->nsplit,
                         pl->nk,
                         pl->kfast ? 1 : pl->nq,
                         pl->kfast ? pl->nk : 1,
                         count};
    enum { NNUMS = sizeof nums / sizeof nums[0] };
    PyObject *args[5 + NNUMS + 3];
    int n = 0, rc = -1, na = arg ? 5 : 3, nn = arg ? NNUMS - 1 : NNUMS; /* count: mean's divisor */
    for (int i = 0; i < na; i++) args[n++] = arrays[i];
    for (int i = 0; i < nn; i++)
        if (!(args[n++] = PyLong_FromSsize_t(nums[i]))) goto out;
    args[n++] = ident;
    args[n++] = final ? Py_True : Py_False;
    if (arg) args[n++] = fromp ? Py_True : Py_False;
    mod_shape range = {.ndim = 1, .nd = true, .size = {pl->groups * pl->L}, .local = {pl->L}};
    PyObject *r = mod_kernel_launch(k, &range, args, n, false);
    rc = r ? 0 : -1;
    Py_XDECREF(r);
out:
    for (int i = na; i < n && i < na + nn; i++) Py_XDECREF(args[i]);
    return rc;
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
 * always leave partials. */
static int launch_cpu(const text_key *key, const geometry *g, bool cols, Py_ssize_t S, int lanes,
                      PyObject *const *arrays, PyObject *ident, Py_ssize_t count) {
    int width = cols ? cols_width(lanes, g->M) : 0;
    PyObject *k =
        kernel_of(key, cols ? FORM_CPU_COLS : FORM_CPU_ROWS, lanes, width, cols && g->sq == 1);
    if (!k) return -1;
    bool arg = is_arg(key->op);
    /* the numbers, then (not for argmin/argmax) count, mean's divisor */
    Py_ssize_t nums[] = {g->base, g->Q, g->sp, g->sq, g->K, g->t2, S, count};
    enum { NNUMS = sizeof nums / sizeof nums[0] };
    PyObject *num[NNUMS] = {NULL};
    int nn = arg ? NNUMS - 1 : NNUMS, rc = -1;
    for (int i = 0; i < nn; i++)
        if (!(num[i] = PyLong_FromSsize_t(nums[i]))) goto out;
    Py_ssize_t groups = (cols ? (g->M + width - 1) / width : g->M) * S;
    bool final = S == 1 && (cols || lanes == 1); /* each output from one lane alone */
    PyObject *args[] = {arrays[0],
                        arrays[1],
                        arrays[2],
                        num[0],
                        num[1],
                        num[2],
                        num[3],
                        num[4],
                        num[5],
                        num[6],
                        ident,
                        num[7],
                        final ? Py_True : Py_False};
    mod_shape range = {.ndim = 1, .nd = true, .size = {groups * lanes}, .local = {lanes}};
    PyObject *r = mod_kernel_launch(k, &range, args, arg ? 11 : 13, false);
    rc = r ? 0 : -1;
    Py_XDECREF(r);
out:
    for (int i = 0; i < NNUMS; i++) Py_XDECREF(num[i]);
    return rc;
}

/* The CPU form into partials: S runs of `lanes` work-items, run r adding
 * its band of rows into part[r * M ...]. */
static int launch_cpu_acc(const text_key *key, const geometry *g, Py_ssize_t S, int lanes,
                          PyObject *x, PyObject *part, PyObject *ident) {
    PyObject *k = kernel_of(key, FORM_CPU_ACC, lanes, 0, true);
    if (!k) return -1;
    Py_ssize_t nums[] = {g->base, g->M, g->K, g->t2, S};
    enum { NNUMS = sizeof nums / sizeof nums[0] };
    PyObject *num[NNUMS] = {NULL};
    int rc = -1;
    for (int i = 0; i < NNUMS; i++)
        if (!(num[i] = PyLong_FromSsize_t(nums[i]))) goto out;
    PyObject *args[] = {x, part, num[0], num[1], num[2], num[3], num[4], ident};
    mod_shape range = {.ndim = 1, .nd = true, .size = {S * lanes}, .local = {lanes}};
    PyObject *r = mod_kernel_launch(k, &range, args, sizeof args / sizeof args[0], false);
    rc = r ? 0 : -1;
    Py_XDECREF(r);
out:
    for (int i = 0; i < NNUMS; i++) Py_XDECREF(num[i]);
    return rc;
}

static PyObject *view1(mod_array *a, Py_ssize_t n, Py_ssize_t offset) {
    Py_ssize_t strides[1] = {a->itemsize};
    return mod_array_view(a, 1, &n, strides, offset);
}

/* The reduction g of x into the first g->M elements of out. */
static int run(red_op op, const red_types *t, mod_array *x, const geometry *g, mod_array *out) {
    ofl_device *dev = mod_array_device(x);
    bool arg = is_arg(op);
    text_key key = {.op = op,
                    .in = mod_dtype_name(x->dtype),
                    .acc = mod_dtype_name(t->acc),
                    .cast = t->cast ? mod_dtype_name(t->cast) : NULL,
                    .out = mod_dtype_name(t->out),
                    .acc_float = inexact(kind_of(t->acc))};
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
    text_key key_rows = key;
    if (rows_in) key_rows.acc = block_type(&key);
    PyObject *part_type =
        key_rows.acc == key.acc ? t->acc : mod_dtype_find_borrowed('f', 4); /* block_type's */
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
    int first_rc = rows_in       ? launch_cpu_acc(&key_rows, g, runs, lanes, x1, p1, ident)
                   : cpu || cols ? launch_cpu(&key, g, cols, runs, lanes, cpu_arrays, ident, g->K)
                                 : launch(&key, &pl, g, first, g->K, ident, pl.nsplit == 1, false);
    if (first_rc < 0) goto out;
    if (rows_in) { /* the runs' rows of partials, summed over their axis 0 */
        text_key key2 = key;
        key2.cast = NULL;
        key2.in = key_rows.acc;
        geometry g2 = {.M = g->M, .Q = g->M, .sq = 1, .K = runs, .n1 = 1, .n2 = runs, .t2 = g->M};
        PyObject *second[3] = {p1, o1, p1};
        if (launch_cpu(&key2, &g2, true, 1, lanes, second, ident, g->K) < 0) goto out;
    } else if (second) { /* the partials, nsplit per output, in the accumulator's type */
        text_key key2 = key;
        key2.cast = NULL;
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
        if (mod_lib_axis(axis, nd, NULL, &a) < 0) return -1;
        red[a] = true;
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(axis); i++) {
        int a;
        if (mod_lib_axis(PyTuple_GET_ITEM(axis, i), nd, NULL, &a) < 0) return -1;
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
    if (out && size_of(nd, shape) > 0 && reduce_into(op, &t, x, red, (mod_array *)out) < 0)
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

#define KWFUNC(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef functions[] = {
    {"sum", KWFUNC(f_sum),
     "sum(a, axis=None, dtype=None, out=None, keepdims=False) -> ndarray\n\nSum of the elements "
     "over all axes or "
     "the given ones, on a's device (0-d for a full sum). NumPy's dtypes: bool and integers sum to "
     "int64 "
     "(unsigned: uint64). out= must be None."},
    {"prod", KWFUNC(f_prod),
     "prod(a, axis=None, dtype=None, out=None, keepdims=False) -> ndarray: product, as sum"},
    {"min", KWFUNC(f_min),
     "min(a, axis=None, out=None, keepdims=False) -> ndarray\n\nMinimum, in a's dtype; NaN "
     "propagates; "
     "ValueError for an empty reduction."},
    {"max", KWFUNC(f_max),
     "max(a, axis=None, out=None, keepdims=False) -> ndarray: maximum, as min"},
    {"mean", KWFUNC(f_mean),
     "mean(a, axis=None, dtype=None, out=None, keepdims=False) -> ndarray\n\nArithmetic mean; "
     "float64 for "
     "integer inputs; NaN (with a RuntimeWarning) for an empty reduction."},
    {"argmin", KWFUNC(f_argmin),
     "argmin(a, axis=None, out=None, *, keepdims=False) -> int64 ndarray\n\nIndex of the first "
     "minimum (in C "
     "order for axis=None); the first NaN if there is one."},
    {"argmax", KWFUNC(f_argmax),
     "argmax(a, axis=None, out=None, *, keepdims=False) -> int64 ndarray: index of the first "
     "maximum, as argmin"},
    {"any", KWFUNC(f_any),
     "any(a, axis=None, out=None, keepdims=False) -> bool ndarray\n\nWhether any element over "
     "all axes or the given ones is nonzero (NaN counts); False for an empty reduction."},
    {"all", KWFUNC(f_all),
     "all(a, axis=None, out=None, keepdims=False) -> bool ndarray\n\nWhether every element over "
     "all axes or the given ones is nonzero (NaN counts); True for an empty reduction."},
    {"count_nonzero", KWFUNC(f_count_nonzero),
     "count_nonzero(a, axis=None, *, keepdims=False) -> int64 ndarray\n\nThe number of nonzero "
     "elements (NaN counts) over all axes or the given ones; a 0-d array for axis=None."},
    {NULL, NULL, 0, NULL},
};

/* ndarray's methods: NumPy's, with self as a */
PyMethodDef mod_reduce_methods[] = {
    {"sum", KWFUNC(m_sum),
     "sum(axis=None, dtype=None, out=None, keepdims=False) -> ndarray: offload.sum(self, ...)"},
    {"prod", KWFUNC(m_prod),
     "prod(axis=None, dtype=None, out=None, keepdims=False) -> ndarray: offload.prod(self, ...)"},
    {"min", KWFUNC(m_min),
     "min(axis=None, out=None, keepdims=False) -> ndarray: offload.min(self, ...)"},
    {"max", KWFUNC(m_max),
     "max(axis=None, out=None, keepdims=False) -> ndarray: offload.max(self, ...)"},
    {"mean", KWFUNC(m_mean),
     "mean(axis=None, dtype=None, out=None, keepdims=False) -> ndarray: offload.mean(self, ...)"},
    {"argmin", KWFUNC(m_argmin),
     "argmin(axis=None, out=None, *, keepdims=False) -> int64 ndarray: offload.argmin(self, ...)"},
    {"argmax", KWFUNC(m_argmax),
     "argmax(axis=None, out=None, *, keepdims=False) -> int64 ndarray: offload.argmax(self, ...)"},
    {"any", KWFUNC(m_any),
     "any(axis=None, out=None, keepdims=False) -> bool ndarray: offload.any(self, ...)"},
    {"all", KWFUNC(m_all),
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
