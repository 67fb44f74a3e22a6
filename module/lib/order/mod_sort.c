/* mod_sort: sorting, searching and the set functions of the array API
 * 2024.12 -- offload.sort argsort searchsorted unique_values unique_counts
 * unique_inverse unique_all, and ndarray's sort() and argsort() methods.
 * Registered by mod_lib.c (mod_sort_add_functions).
 *
 * Every sort is one stable LSD radix sort on the device, over the array
 * copied C-contiguous with the sorted axis last (rows of n elements). Keys
 * are unsigned words, least significant first, whose order is NumPy 2's
 * (NaNs last; descending: the ascending order reversed, ties kept in
 * order). A digit that every key shares needs no pass. A pass is "runs"
 * (pass_runs) or, on a GPU with 64-bit atomics, "tiles" with a decoupled
 * look-back (pass_tiles). unique_* sort, mark the runs of equal values
 * (each NaN its own), scan and scatter; searchsorted is a binary search
 * per element.
 * The device code is module/kernels/sort.py's; this file plans the work
 * (forms, buffers, grids, the words and digits to sort) and launches it.
 * The algorithm, the key maps and the measured reasons: docs/radix-sort.md */
#include "lib/order/mod_order.h"
#include "lib/elementwise/mod_elementwise.h"
#include "lib/reduce/mod_reduce.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_CHUNK 64 /* elements a work-item sums in a scan's first pass */
/* At most this many, a CPU's scan is one work-item's loop: there a launch
 * costs more than thousands of adds. */
#define SCAN_SERIAL_CPU 4096

/* ---- launches of sort.py's kernels ---- */

/* Range(items), or an NdRange of groups of `local` work-items (local > 0). */
static mod_shape grid(Py_ssize_t items, Py_ssize_t local) {
    mod_shape r = {.ndim = 1, .size = {items}};
    if (local > 0) r.nd = true, r.local[0] = local;
    return r;
}

/* sort.py's device function `name` (borrowed), or NULL with an exception. */
static PyObject *fn(const char *name) { return mod_library_get("sort", name); }

/* A NumPy scalar of dtype holding v (new reference): a compile-time value
 * of the kernels' (FLIP), or a shift count in the keys' type, so that
 * key >> sh stays unsigned. */
static PyObject *np_scalar(PyObject *dtype, unsigned long long v) {
    return PyObject_CallMethod(mod_numpy_borrowed(), mod_dtype_name(dtype), "K", v);
}

static PyObject *int64_dtype(void) { return mod_dtype_find_borrowed('i', 8); }
static PyObject *uint_dtype(int bytes) { return mod_dtype_find_borrowed('u', bytes); }

static PyObject *new_1d(ofl_device *dev, PyObject *dtype, Py_ssize_t n) {
    return mod_array_new_empty(dev, dtype, 1, &n);
}

/* A 1-D array of n zeros, filled on its device. */
static PyObject *new_zeros(ofl_device *dev, PyObject *dtype, Py_ssize_t n) {
    PyObject *a = new_1d(dev, dtype, n);
    if (a && mod_array_assign((mod_array *)a, Py_False) < 0) Py_CLEAR(a);
    return a;
}

/* A 1-D view of a C-contiguous array's n elements (as dtype when given:
 * the same bytes read as another type of the same width). */
static PyObject *flat_view(mod_array *a, Py_ssize_t n, PyObject *dtype) {
    Py_ssize_t stride = a->itemsize;
    PyObject *v = mod_array_view(a, 1, &n, &stride, a->offset);
    if (v && dtype) Py_SETREF(((mod_array *)v)->dtype, Py_NewRef(dtype));
    return v;
}

/* ---- exclusive scan of an int64 array, in place ---- */

/* a[0..m) becomes its exclusive prefix sums. A GPU's: the scans' blocks
 * form (mod_stats.c; OFFLOAD_SCAN_FORM=blocks takes it on a CPU too); a
 * CPU's: chunks' sums, their scan (recursively), then each chunk's scan
 * from its start. */
static int exclusive_scan(mod_array *a, Py_ssize_t m) {
    ofl_device *dev = mod_array_device(a);
    const char *f = getenv("OFFLOAD_SCAN_FORM");
    if (ofl_device_get_info(dev)->type != OFL_CPU || (f && !strcmp(f, "blocks")))
        return mod_stats_exclusive_scan(a, m);
    if (m <= SCAN_SERIAL_CPU) {
        mod_shape one = grid(1, 0);
        return mod_library_launch("sort", "scan_serial", &one, "On", a, m);
    }
    Py_ssize_t chunks = (m + SCAN_CHUNK - 1) / SCAN_CHUNK;
    PyObject *sums = new_1d(dev, int64_dtype(), chunks);
    if (!sums) return -1;
    mod_shape r = grid(chunks, 0);
    int rc =
        mod_library_launch("sort", "scan_sums", &r, "OOnn", a, sums, m, (Py_ssize_t)SCAN_CHUNK);
    if (rc == 0) rc = exclusive_scan((mod_array *)sums, chunks);
    if (rc == 0)
        rc = mod_library_launch("sort", "scan_apply", &r, "OOnn", a, sums, m,
                                (Py_ssize_t)SCAN_CHUNK);
    Py_DECREF(sums);
    return rc;
}

/* ---- the radix sort ---- */

/* A sort's plan: the key dtype, how wide a digit is, and the device's form. */
typedef struct {
    ofl_device *dev;
    bool tiles;                /* the GPU form (tiles in local memory), else the CPU form */
    int digit_bits;            /* 8: both forms */
    Py_ssize_t N, n;           /* elements, row length */
    PyObject *kdt, *idt;       /* key dtype (uint32/uint64), index dtype (int32/int64); borrowed */
    PyObject *key[2], *idx[2]; /* ping-pong buffers; owned (idx NULL: keys alone) */
    int cur;                   /* key[cur], idx[cur] hold the keys and indices now */
    bool iota;      /* tiles: idx[cur] is unwritten, the identity: the next pass makes it up */
    PyObject *raw;  /* tiles, keys alone: the values' bits (borrowed), while no key is
                       written: the next pass makes the keys up as it loads them */
    PyObject *hist; /* runs: counts per (digit, run); tiles: starts per (position, digit); owned */
    PyObject *status, *ctr; /* tiles: the look-back's words, the tile counters; owned */
    PyObject *res;          /* the key kernel's bit reductions (fold_bits's ORs); owned */
    bool fresh;             /* hist and res still zero (plan_init's fill) */
    int epoch;              /* tiles: passes so far (a pass's epoch tags its status words) */
    Py_ssize_t runs, per;   /* runs form: runs of per elements */
    Py_ssize_t tile_t;      /* tiles form: work-items of a tile's group (sort.py's TILE) */
    Py_ssize_t tile_k;      /* tiles form: keys per work-item (a tile: tile_t * tile_k) */
    Py_ssize_t ntiles;
    /* keys alone: the last pass writes the values (their bits) into out */
    PyObject *out;    /* borrowed; NULL: the index form */
    int kbits;        /* 32 or 64 */
    bool vfloat;      /* the keys of floats, else bits ^ flip (sort.py's key maps) */
    PyObject *flip;   /* the map's XOR, a scalar of kdt (0 in the index form); owned */
    PyObject *vdt;    /* out's dtype: unsigned, the values' width (kdt in the index form) */
    PyObject *key_of; /* sort.py's map from value bits to keys, and back; borrowed */
    PyObject *bits_of;
    /* the index form of one row: the last pass writes the indices into pos
     * (argsort's int64 result) and sets pos_done */
    PyObject *pos; /* borrowed; NULL: into idx */
    bool pos_done;
} plan_t;

#define CPU_RUN_MIN 16384 /* the runs form: elements a run walks at least */

/* The words of a sort's key, least significant first. A complex number
 * orders as NumPy 2's: lexicographic on (real, imag) with NaN parts last,
 * in classes -- no NaN, NaN imag (by real), NaN real (by imag), both -- so
 * its words are imag, real (a NaN part keyed 0: its class decides) and the
 * class. Several rows add the row number as the most significant word. */
enum { W_VALUE, W_IMAG, W_REAL, W_CLASS, W_ROW };

/* sort.py's key_* device function of word `word` of elements of dtype. */
static const char *key_name(PyObject *dtype, int word) {
    Py_ssize_t size = mod_dtype_itemsize(dtype);
    if (word == W_ROW) return "key_row";
    if (word == W_CLASS) return "key_class";
    if (word == W_IMAG) return size == 16 ? "key_imag64" : "key_imag32";
    if (word == W_REAL) return size == 16 ? "key_real64" : "key_real32";
    switch (mod_kit_kind(dtype)) {
    case 'b': return "key_bool";
    case 'u': return size == 8 ? "key_uint64" : "key_uint32";
    case 'i':
        return size == 1   ? "key_int8"
               : size == 2 ? "key_int16"
               : size == 4 ? "key_int32"
                           : "key_int64";
    default: return size == 8 ? "key_float64" : "key_float32";
    }
}

/* A descending word's XOR (new reference): all the key's bits -- a 64-bit
 * one's as a uint64, else a uint32 of the element's bits (the class's 2,
 * a bool's 1); 0 ascending and for the row. */
static PyObject *key_flip(PyObject *dtype, int word, bool descending) {
    char kind = mod_kit_kind(dtype);
    int bits = (int)mod_dtype_itemsize(dtype) * (kind == 'c' ? 4 : 8);
    if (!descending || word == W_ROW) return np_scalar(uint_dtype(4), 0);
    if (bits == 64) return np_scalar(uint_dtype(8), ~0ULL);
    return np_scalar(uint_dtype(4), word == W_CLASS ? 3 : kind == 'b' ? 1 : (1ULL << bits) - 1);
}

/* part (owned, taken): G ORs of keys, then G ORs of their complements
 * (a bit set in both varies), uint32 or uint64, after a launch that returned
 * rc. Reads it back and folds it into the bits in which the keys differ.
 * ORs only: the parts start at zero, which a fill sets without an upload
 * (an upload waits for the device). */
static int fold_bits(int rc, PyObject *part, Py_ssize_t G, uint64_t *mask) {
    PyObject *h = rc == 0 ? mod_array_asnumpy((mod_array *)part) : NULL;
    Py_DECREF(part);
    if (!h) return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(h, &view, PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(h);
        return -1;
    }
    uint64_t o = 0, z = 0;
    for (Py_ssize_t g = 0; g < G; g++) {
        uint64_t vo, vz;
        if (view.itemsize == 4)
            vo = ((uint32_t *)view.buf)[g], vz = ((uint32_t *)view.buf)[G + g];
        else
            vo = ((uint64_t *)view.buf)[g], vz = ((uint64_t *)view.buf)[G + g];
        o |= vo, z |= vz;
    }
    PyBuffer_Release(&view);
    Py_DECREF(h);
    *mask = o & z;
    return 0;
}

/* The tiles form's key kernels (keys_grouped, keys_alone_grouped) run over
 * grouped_range's work-items in groups of 256, each of which reduces in
 * local memory and counts the histogram of a word (sort.py's count_run).
 * At most `most` groups. */
static void grouped_range(const plan_t *p, Py_ssize_t most, Py_ssize_t *G, Py_ssize_t *per) {
    *G = (p->N + 255) / 256 * 256;
    if (*G > most * 256) *G = most * 256;
    *per = (p->N + *G - 1) / *G;
}

/* p->hist: the counts of every digit at the 8-bit positions of a word of
 * `bits` bits -> each digit's global start there. */
static int tile_starts(plan_t *p, int bits) {
    mod_shape r = grid(256 * ((bits + 7) / 8), 256);
    return mod_library_launch("sort", "tile_starts", &r, "O", p->hist);
}

/* Zeroes hist (tiles) and res for a word's key kernel, unless still zero. */
static int clear_counts(plan_t *p) {
    if (!p->fresh && ((p->tiles && mod_array_assign((mod_array *)p->hist, Py_False) < 0) ||
                      mod_array_assign((mod_array *)p->res, Py_False) < 0))
        return -1;
    p->fresh = false;
    return 0;
}

/* The tiles form's key kernel and varying_bits in one: many work-items (a
 * GPU needs them to keep its memory busy) make the keys of word `word`
 * (key function kfn, descending XOR flip), reduce their ORs in local
 * memory (one atomic per group into res) and count the histogram of a word
 * of `bits` bits; the digit starts follow, then the read back. */
static int keys_grouped(plan_t *p, PyObject *kfn, PyObject *flip, bool first, PyObject *x,
                        PyObject *bitsv, Py_ssize_t n, int bits, uint64_t *mask) {
    Py_ssize_t G, per;
    grouped_range(p, 1024, &G, &per); /* enough to keep a GPU's memory busy */
    if (clear_counts(p) < 0) return -1;
    mod_shape r = grid(G, 256);
    int rc = mod_library_launch("sort", "keys_grouped", &r, "OOOOOOnnnnOOOOOOi", x, bitsv,
                                p->key[p->cur], p->idx[p->cur], p->res, p->hist, n, p->N, G, per,
                                kfn, p->kdt, p->idt, flip, mod_kit_bool(first),
                                mod_kit_bool(p->iota), (bits + 7) / 8);
    return fold_bits(rc == 0 ? tile_starts(p, bits) : rc, Py_NewRef(p->res), 1, mask);
}

/* The runs form's bits in which the current keys differ (fold_bits): a
 * digit all keys share needs no pass. One small read back per word; the
 * tiles form has keys_grouped. */
static int varying_bits(plan_t *p, uint64_t *mask) {
    Py_ssize_t G = p->runs, per = p->per, a = per, b = 1;
    PyObject *part = new_1d(p->dev, p->kdt, 2 * G);
    if (!part) return -1;
    mod_shape r = grid(G, 0);
    int rc = mod_library_launch("sort", "varying_bits", &r, "OOnnnnn", p->key[p->cur], part, p->N,
                                G, a, b, per);
    return fold_bits(rc, part, G, mask);
}

/* ---- the CPU form: a pass over runs ----
 * A few work-items each count the digits of a long run of keys into
 * hist[digit][run], one exclusive scan gives each run its start per digit,
 * and each run moves its keys there in order: stable, as LSD needs. The
 * algorithm: docs/radix-sort.md */
static int pass_runs(plan_t *p, int sh, bool last) {
    PyObject *key = p->key[p->cur], *idx = p->idx[p->cur];
    PyObject *key2 = p->key[!p->cur], *idx2 = p->idx[!p->cur];
    bool with_idx = idx != NULL, values = last && p->out;
    PyObject *shift = np_scalar(p->kdt, (unsigned long long)sh);
    if (!shift) return -1;
    mod_shape r = grid(p->runs, 0);
    /* without indices (keys alone) the keys stand in for them, unread */
    int rc = mod_library_launch("sort", "run_count", &r, "OOnnnO", key, p->hist, p->N, p->runs,
                                p->per, shift);
    if (rc == 0) rc = exclusive_scan((mod_array *)p->hist, 256 * p->runs);
    if (rc == 0)
        rc = mod_library_launch("sort", "run_scatter", &r, "OOOOOnnnOOOOOO", key,
                                with_idx ? idx : key, values ? p->out : key2,
                                !with_idx        ? key2
                                : last && p->pos ? p->pos
                                                 : idx2,
                                p->hist, p->N, p->runs, p->per, shift, mod_kit_bool(with_idx),
                                mod_kit_bool(values), p->bits_of, p->flip, p->vdt);
    Py_DECREF(shift);
    if (rc < 0) return -1;
    p->pos_done = last && p->pos;
    p->cur = !p->cur;
    return 0;
}

/* ---- the GPU form: a pass over tiles (CUB's onesweep) ----
 * sort.py's tile_pass: a group sorts a tile of tile_t * tile_k keys in
 * local memory by the digit and finds where each digit's keys go by a
 * look-back over the tiles before it. A pass of keys alone (p->idx NULL)
 * moves no indices; the last one of a value sort (p->out) writes values.
 * The algorithm: docs/radix-sort.md */

#define MAX_EPOCHS 64 /* passes a sort may take: 4 words of 8 digits, and to spare */

static int pass_tiles(plan_t *p, int sh, bool last) {
    PyObject *key = p->raw ? p->raw : p->key[p->cur], *idx = p->idx[p->cur];
    PyObject *key2 = p->key[!p->cur], *idx2 = p->idx[!p->cur];
    bool with_idx = idx != NULL, values = last && p->out;
    if (++p->epoch >= MAX_EPOCHS) {
        PyErr_SetString(PyExc_SystemError, "offload: a sort took more passes than planned");
        return -1;
    }
    PyObject *s0 = np_scalar(p->kdt, (unsigned long long)sh);
    PyObject *s4 = np_scalar(p->kdt, (unsigned long long)sh + 4);
    /* 32-bit keys alone take the launch bounds (sort.py says why) */
    const char *name = !with_idx && p->kbits == 32 ? "tile_pass_bounded" : "tile_pass";
    mod_shape r = grid(p->ntiles * p->tile_t, p->tile_t);
    int rc = s0 && s4 ? mod_library_launch("sort", name, &r, "OOOOOOOnOOinOOnOOOOOOOO", key,
                                           with_idx ? idx : key, values ? p->out : key2,
                                           !with_idx        ? key2
                                           : last && p->pos ? p->pos
                                                            : idx2,
                                           p->hist, p->status, p->ctr, p->N, s0, s4, p->epoch,
                                           (Py_ssize_t)256 * (sh / 8), p->kdt, p->idt, p->tile_k,
                                           mod_kit_bool(with_idx), mod_kit_bool(p->iota),
                                           mod_kit_bool(p->raw), mod_kit_bool(values), p->key_of,
                                           p->bits_of, p->flip, p->vdt)
                      : -1;
    Py_XDECREF(s0);
    Py_XDECREF(s4);
    if (rc < 0) return -1;
    p->pos_done = last && p->pos;
    p->cur = !p->cur;
    p->iota = false;
    p->raw = NULL;
    return 0;
}

/* Whether sorts on dev take the tiles form: GPUs with 64-bit atomics (the
 * look-back's status words); OFFLOAD_SORT_FORM=tiles or runs overrides (the
 * tests run both forms on CPU devices). */
static bool use_tiles(ofl_device *dev) {
    const char *f = getenv("OFFLOAD_SORT_FORM");
    const ofl_device_info *info = ofl_device_get_info(dev);
    if (!info->has_atomic64 || (f && !strcmp(f, "runs"))) return false;
    return (f && !strcmp(f, "tiles")) || info->type != OFL_CPU;
}

/* Keys a tile's work-item holds: the most (16, 8, ...) whose tile fits the
 * device's local memory (48 KB at most: CUDA's static limit). Never more
 * than 16: tile_pass keeps each key's rank in 4 bits of one 64-bit word. */
static Py_ssize_t tile_keys(ofl_device *dev, Py_ssize_t T, Py_ssize_t ksz, Py_ssize_t isz) {
    uint64_t lm = ofl_device_get_info(dev)->local_mem_size;
    if (lm > 48 * 1024) lm = 48 * 1024;
    Py_ssize_t K = 16;
    while (K > 1 && (uint64_t)(T * K * 33 / 32 * (ksz + isz) + 19 * T * 4 + 256 * 8 + 64) > lm)
        K /= 2;
    return K;
}

#define RES_WORDS 5 /* keys_alone's reductions; keys_grouped uses 2 */

/* The next n elements of dtype in a (from byte *off on, which it advances):
 * a new view. */
static PyObject *part_view(PyObject *a, Py_ssize_t *off, Py_ssize_t n, PyObject *dtype) {
    mod_array *m = (mod_array *)a;
    Py_ssize_t size = mod_dtype_itemsize(dtype);
    mod_array *v = (mod_array *)mod_array_view(m, 1, &n, &size, m->offset + *off);
    if (v) {
        Py_SETREF(v->dtype, Py_NewRef(dtype));
        v->itemsize = size;
    }
    *off += n * size;
    return (PyObject *)v;
}

/* p's form, buffers (indices too when with_idx) and counts, and the key map
 * of the index form (none: radix_values sets its own); -1 on failure
 * (plan_free frees what there is). */
static int plan_init(plan_t *p, ofl_device *dev, Py_ssize_t N, Py_ssize_t n, bool wide,
                     bool with_idx) {
    *p = (plan_t){.dev = dev, .N = N, .n = n};
    p->tiles = use_tiles(dev);
    p->digit_bits = 8;
    p->kbits = wide ? 64 : 32;
    p->kdt = uint_dtype(wide ? 8 : 4);
    p->idt = mod_dtype_find_borrowed('i', N < ((Py_ssize_t)1 << 31) ? 4 : 8);
    p->vdt = p->kdt;
    if (!(p->flip = np_scalar(p->kdt, 0)) || !(p->key_of = fn("int_key_of")) ||
        !(p->bits_of = fn("int_bits_of")))
        return -1;
    Py_ssize_t hn;
    p->fresh = true;
    if (p->tiles) {
        if ((p->tile_t = mod_library_int("sort", "TILE")) < 0) return -1;
        p->tile_k =
            tile_keys(dev, p->tile_t, wide ? 8 : 4, with_idx ? mod_dtype_itemsize(p->idt) : 0);
        p->ntiles = (N + p->tile_t * p->tile_k - 1) / (p->tile_t * p->tile_k);
        hn = 256 * (p->kbits / 8);
        /* one zeroed allocation (an allocation and a fill cost a small sort
         * as much host time as a launch): status, hist, ctr, res */
        Py_ssize_t ns = 256 * p->ntiles, nc = MAX_EPOCHS / 2, off = 0;
        PyObject *all = new_zeros(dev, int64_dtype(), ns + hn + nc + RES_WORDS);
        if (!all) return -1;
        p->status = part_view(all, &off, ns, int64_dtype());
        p->hist = part_view(all, &off, hn, int64_dtype());
        p->ctr = part_view(all, &off, MAX_EPOCHS, mod_dtype_find_borrowed('i', 4));
        p->res = part_view(all, &off, RES_WORDS, p->kdt);
        Py_DECREF(all);
        if (!p->status || !p->hist || !p->ctr || !p->res) return -1;
    } else {
        Py_ssize_t most = 4 * (Py_ssize_t)ofl_device_get_info(dev)->max_compute_units;
        p->runs = (N + CPU_RUN_MIN - 1) / CPU_RUN_MIN;
        if (p->runs > most) p->runs = most;
        if (p->runs < 1) p->runs = 1;
        p->per = (N + p->runs - 1) / p->runs;
        hn = 256 * p->runs;
        if (!(p->hist = new_1d(dev, int64_dtype(), hn)) ||
            !(p->res = new_zeros(dev, p->kdt, RES_WORDS)))
            return -1;
    }
    for (int i = 0; i < 2; i++) {
        if (!(p->key[i] = new_1d(dev, p->kdt, N))) return -1;
        if (with_idx && !(p->idx[i] = new_1d(dev, p->idt, N))) return -1;
    }
    return 0;
}

static void plan_free(plan_t *p) {
    for (int i = 0; i < 2; i++) {
        Py_CLEAR(p->key[i]);
        Py_CLEAR(p->idx[i]);
    }
    Py_CLEAR(p->hist);
    Py_CLEAR(p->status);
    Py_CLEAR(p->ctr);
    Py_CLEAR(p->res);
    Py_CLEAR(p->flip);
}

/* The passes over the digits of a word of `bits` bits that vary (mask);
 * the last writes values when p->out. The number of passes, or -1. */
static int passes(plan_t *p, uint64_t mask, int bits) {
    int last = -1, done = 0;
    for (int sh = 0; sh < bits; sh += p->digit_bits)
        if ((mask >> sh) & ((1u << p->digit_bits) - 1)) last = sh;
    for (int sh = 0; sh <= last; sh += p->digit_bits) {
        if (!((mask >> sh) & ((1u << p->digit_bits) - 1))) continue; /* one digit for all */
        if ((p->tiles ? pass_tiles(p, sh, sh == last) : pass_runs(p, sh, sh == last)) < 0)
            return -1;
        done++;
    }
    return done;
}

/* idx[cur] = the identity, where no pass made it up. */
static int write_iota(plan_t *p) {
    p->iota = false;
    mod_shape r = grid(p->N, 0);
    return mod_library_launch("sort", "iota", &r, "OO", p->idx[p->cur], p->idt);
}

/* The sorted order of c (C-contiguous, N elements in rows of n): a new 1-D
 * array (int32 or int64) of flat indices into c, row by row; or pos (a new
 * reference: an int64 array of N) where the last pass wrote them there --
 * one row of a real dtype with at least one pass. */
static PyObject *radix_order(mod_array *c, Py_ssize_t N, Py_ssize_t n, bool descending,
                             PyObject *pos) {
    ofl_device *dev = mod_array_device(c);
    PyObject *dtype = c->dtype;
    char kind = mod_kit_kind(dtype);
    Py_ssize_t rows = n ? N / n : 0;
    bool wide = c->itemsize == 8 && kind != 'c';
    wide |= kind == 'c' && c->itemsize == 16;
    plan_t p;
    PyObject *x = NULL, *bitsv = NULL, *result = NULL;
    if (plan_init(&p, dev, N, n, wide, true) < 0) goto out;
    if (kind == 'c') { /* the parts, as 2N floats */
        Py_ssize_t two = 2 * N, half = c->itemsize / 2;
        PyObject *fdt = mod_dtype_find_borrowed('f', half);
        x = mod_array_view(c, 1, &two, &half, c->offset);
        if (x) Py_SETREF(((mod_array *)x)->dtype, Py_NewRef(fdt));
        bitsv = x ? mod_array_view(c, 1, &two, &half, c->offset) : NULL;
        if (bitsv) Py_SETREF(((mod_array *)bitsv)->dtype, Py_NewRef(uint_dtype((int)half)));
    } else {
        x = flat_view(c, N, NULL);
        bitsv = x && kind == 'f' ? flat_view(c, N, uint_dtype((int)c->itemsize)) : Py_XNewRef(x);
    }
    if (!x || !bitsv) goto out;
    int words[4], nw = 0;
    if (kind == 'c') {
        words[nw++] = W_IMAG;
        words[nw++] = W_REAL;
        words[nw++] = W_CLASS;
    } else {
        words[nw++] = W_VALUE;
    }
    if (rows > 1) words[nw++] = W_ROW;
    if (nw == 1) p.pos = pos;
    for (int w = 0; w < nw; w++) {
        PyObject *kfn = fn(key_name(dtype, words[w]));
        PyObject *flip = kfn ? key_flip(dtype, words[w], descending) : NULL;
        if (!flip) goto out;
        p.iota = p.tiles && w == 0;
        uint64_t mask;
        int bits = words[w] == W_CLASS ? 2 : wide ? 64 : 32, rc;
        if (p.tiles) {
            rc = keys_grouped(&p, kfn, flip, w == 0, x, bitsv, n, bits, &mask);
        } else {
            mod_shape r = grid(N, 0);
            rc = mod_library_launch("sort", "keys", &r, "OOOOnOOOOO", x, bitsv, p.key[p.cur],
                                    p.idx[p.cur], n, kfn, p.kdt, p.idt, flip, mod_kit_bool(w == 0));
            if (rc == 0) rc = varying_bits(&p, &mask);
        }
        Py_DECREF(flip);
        if (rc < 0 || passes(&p, mask, bits) < 0 || (p.iota && write_iota(&p) < 0)) goto out;
    }
    result = Py_NewRef(p.pos_done ? p.pos : p.idx[p.cur]);
out:
    plan_free(&p);
    Py_XDECREF(x);
    Py_XDECREF(bitsv);
    return result;
}

/* ---- value sorts of keys alone ----
 * A value sort of one row of a real dtype sorts keys alone, which the last
 * pass turns back into values (an invertible map: sort.py's *_key_of and
 * *_bits_of), where that is exact: not where -0.0 and +0.0, or NaNs of
 * different bits, occur together (equal in NumPy's order, not in bits).
 * The key kernel reports those, and the index form sorts them. The maps:
 * docs/radix-sort.md */

/* The tiles form's key kernel of keys alone: sort.py's ALONE_UNROLL loads
 * a work-item in flight, in KEY_GROUPS groups a compute unit, launched with
 * that bound, all resident at once (1024 groups of one load at a time:
 * 0.15 ms more for 2^26 float32 on an H100). */

/* The key kernel of a sort of keys alone: key[i] from the bits of element
 * i, and into res (zeroed; ORs of the keys, of their complements, of
 * flags, of NaN keys, of their complements: as fold_bits's) what tells the
 * passes and whether keys alone are exact. flags: 1 -0.0, 2 +0.0, 4 NaN.
 * In the tiles form groups reduce in local memory first and count the
 * histogram, and the digit starts follow; there no key is written
 * (p->raw): the first pass makes them up as it loads the bits, which saves
 * writing and reading them once (0.1 ms of 2^26 float32). */
static int keys_alone_keys(plan_t *p, PyObject *bits) {
    if (clear_counts(p) < 0) return -1;
    if (!p->tiles) {
        mod_shape r = grid(p->runs, 0);
        return mod_library_launch("sort", "keys_alone", &r, "OOOnnnnOOOO", bits, p->key[0], p->res,
                                  p->N, p->per, (Py_ssize_t)1, p->per, p->kdt, p->key_of, p->flip,
                                  mod_kit_bool(p->vfloat));
    }
    Py_ssize_t G, per, units = ofl_device_get_info(p->dev)->max_compute_units;
    Py_ssize_t unroll = mod_library_int("sort", "ALONE_UNROLL");
    Py_ssize_t groups = unroll < 0 ? -1 : mod_library_int("sort", "KEY_GROUPS");
    if (groups < 0) return -1;
    grouped_range(p, (units > 0 ? units : 1) * groups, &G, &per);
    per = (per + unroll - 1) / unroll;
    mod_shape r = grid(G, 256);
    int rc = mod_library_launch("sort", "keys_alone_grouped", &r, "OOOnnnnOOOOi", bits, p->res,
                                p->hist, p->N, G, unroll * G, per, p->kdt, p->key_of, p->flip,
                                mod_kit_bool(p->vfloat), p->kbits / 8);
    p->raw = bits;
    return rc == 0 ? tile_starts(p, p->kbits) : rc;
}

/* out = the keys' values (their bits), when no pass wrote them: from the
 * keys, or the values' bits where no key was written (keys and back, as a
 * pass would have them). */
static int keys_to_values(plan_t *p) {
    mod_shape r = grid(p->N, 0);
    return mod_library_launch("sort", "keys_values", &r, "OOOOOOOO",
                              p->raw ? p->raw : p->key[p->cur], p->out, p->kdt,
                              mod_kit_bool(p->raw), p->key_of, p->bits_of, p->flip, p->vdt);
}

/* The sorted values of c (C-contiguous, one row of N > 0 elements, not
 * complex): a new 1-D array, or Py_None (a new reference) where keys alone
 * would not be exact (then the index form sorts). OFFLOAD_SORT_KEYS=index
 * always answers None (tests). */
static PyObject *radix_values(mod_array *c, Py_ssize_t N, bool descending) {
    const char *f = getenv("OFFLOAD_SORT_KEYS");
    char kind = mod_kit_kind(c->dtype);
    if ((f && !strcmp(f, "index")) || kind == 'c') Py_RETURN_NONE;
    ofl_device *dev = mod_array_device(c);
    int vbits = (int)c->itemsize * 8;
    bool wide = vbits == 64, vfloat = kind == 'f';
    PyObject *udt = uint_dtype((int)c->itemsize);
    plan_t p;
    PyObject *bits = NULL, *h = NULL, *outv = NULL, *result = NULL;
    if (plan_init(&p, dev, N, N, wide, false) < 0) goto out;
    p.vfloat = vfloat;
    p.vdt = udt;
    uint64_t all = wide ? ~0ULL : 0xffffffffULL, vxor;
    if (vfloat)
        vxor = descending ? all : 0;
    else
        vxor = (kind == 'i' ? 1ULL << (vbits - 1) : 0) ^
               (descending ? (vbits == 64 ? ~0ULL : (1ULL << (kind == 'b' ? 1 : vbits)) - 1) : 0);
    Py_SETREF(p.flip, np_scalar(p.kdt, vxor));
    if (vfloat) {
        p.key_of = fn(wide ? "float64_key_of" : "float32_key_of");
        p.bits_of = p.key_of ? fn(wide ? "float64_bits_of" : "float32_bits_of") : NULL;
    }
    if (!p.flip || !p.key_of || !p.bits_of || !(bits = flat_view(c, N, udt))) goto out;
    if (keys_alone_keys(&p, bits) < 0 || !(h = mod_array_asnumpy((mod_array *)p.res))) goto out;
    uint64_t r[5];
    {
        Py_buffer view;
        if (PyObject_GetBuffer(h, &view, PyBUF_C_CONTIGUOUS) < 0) goto out;
        for (int i = 0; i < 5; i++)
            r[i] = wide ? ((uint64_t *)view.buf)[i] : ((uint32_t *)view.buf)[i];
        PyBuffer_Release(&view);
    }
    if (vfloat && ((r[2] & 3) == 3 || ((r[2] & 4) && (r[3] & r[4])))) {
        result = Py_NewRef(Py_None);
        goto out;
    }
    if (!(outv = new_1d(dev, c->dtype, N))) goto out;
    PyObject *ov = flat_view((mod_array *)outv, N, udt);
    if (!ov) goto out;
    p.out = ov;
    int done = passes(&p, r[0] & r[1], p.kbits);
    if (done == 0) done = keys_to_values(&p);
    Py_DECREF(ov);
    if (done >= 0) result = Py_NewRef(outv);
out:
    plan_free(&p);
    Py_XDECREF(bits);
    Py_XDECREF(h);
    Py_XDECREF(outv);
    return result;
}

/* out[i] = x[idx[i]] (values) or idx[i] % n (positions in the row). */
static int gather(PyObject *out, PyObject *x, PyObject *idx, Py_ssize_t N, Py_ssize_t n,
                  bool positions) {
    mod_shape r = grid(N, 0);
    return positions ? mod_library_launch("sort", "positions", &r, "OOn", out, idx, n)
                     : mod_library_launch("sort", "gather", &r, "OOO", out, x, idx);
}

/* ---- sort and argsort ---- */

/* x's shape and strides with axis moved last (into shape, strides). */
static void move_last(const mod_array *x, int axis, Py_ssize_t *shape, Py_ssize_t *strides) {
    int k = 0;
    for (int d = 0; d < x->nd; d++)
        if (d != axis) shape[k] = x->shape[d], strides[k++] = x->strides[d];
    shape[k] = x->shape[axis];
    strides[k] = x->strides[axis];
}

/* The sort of x along axis (a valid axis of x, which has nd >= 1): its
 * values (positions false) or argsort's positions, a new C-contiguous array
 * of x's shape. */
static PyObject *sort_along(mod_array *x, int axis, bool descending, bool positions) {
    ofl_device *dev = mod_array_device(x);
    int nd = x->nd;
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS], N = 1, n = x->shape[axis];
    move_last(x, axis, shape, strides);
    for (int d = 0; d < nd; d++) N *= shape[d];
    PyObject *dtype = positions ? int64_dtype() : x->dtype;
    if (N == 0) return mod_array_new_empty(dev, dtype, nd, x->shape);
    PyObject *moved = mod_array_new_empty(dev, dtype, nd, shape);
    if (!moved) return NULL;
    PyObject *view = mod_array_view(x, nd, shape, strides, x->offset);
    PyObject *c = !view ? NULL
                  : mod_array_is_c_contiguous((mod_array *)view)
                      ? Py_NewRef(view)
                      : mod_ops_copy((mod_array *)view, NULL);
    if (c && !positions && n == N) { /* one row: keys alone where exact */
        PyObject *v = radix_values((mod_array *)c, N, descending);
        if (v != Py_None) {
            Py_ssize_t cs[MOD_MAXDIMS], s = ((mod_array *)moved)->itemsize;
            for (int d = nd - 1; d >= 0; d--) cs[d] = s, s *= x->shape[d];
            PyObject *r =
                v ? mod_array_view((mod_array *)v, nd, x->shape, cs, ((mod_array *)v)->offset)
                  : NULL;
            Py_XDECREF(v);
            Py_XDECREF(view);
            Py_DECREF(c);
            Py_DECREF(moved);
            return r;
        }
        Py_DECREF(v);
    }
    PyObject *out = c ? flat_view((mod_array *)moved, N, NULL) : NULL;
    PyObject *order =
        out ? radix_order((mod_array *)c, N, n, descending, positions ? out : NULL) : NULL;
    PyObject *cflat = order ? flat_view((mod_array *)c, N, NULL) : NULL;
    int rc = !cflat ? -1 : order == out ? 0 : gather(out, cflat, order, N, n, positions);
    Py_XDECREF(view);
    Py_XDECREF(c);
    Py_XDECREF(order);
    Py_XDECREF(out);
    Py_XDECREF(cflat);
    if (rc < 0) {
        Py_DECREF(moved);
        return NULL;
    }
    if (axis == nd - 1) return moved;
    /* back to x's axis order: a view of moved with the last axis at `axis` */
    mod_array *m = (mod_array *)moved;
    Py_ssize_t bshape[MOD_MAXDIMS], bstrides[MOD_MAXDIMS];
    for (int d = 0, k = 0; d < nd; d++) {
        int from = d == axis ? nd - 1 : k++;
        bshape[d] = m->shape[from];
        bstrides[d] = m->strides[from];
    }
    PyObject *back = mod_array_view(m, nd, bshape, bstrides, m->offset);
    PyObject *r = back ? mod_ops_copy((mod_array *)back, NULL) : NULL;
    Py_XDECREF(back);
    Py_DECREF(moved);
    return r;
}

/* kind= as NumPy spells it; every kind is this one stable sort. */
static int check_kind(PyObject *kind, PyObject *order) {
    if (order && order != Py_None) {
        PyErr_SetString(PyExc_ValueError, "Cannot specify order when the array has no fields.");
        return -1;
    }
    if (!kind || kind == Py_None) return 0;
    const char *k = PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : NULL;
    if (k && (k[0] == 'q' || k[0] == 'Q' || k[0] == 'h' || k[0] == 'H' || k[0] == 's' ||
              k[0] == 'S' || k[0] == 'm' || k[0] == 'M'))
        return 0;
    PyErr_Format(PyExc_ValueError, "sort kind must be one of 'quick', 'heap', or 'stable' (got %R)",
                 kind);
    return -1;
}

/* sort/argsort of xo: axis an int or None (flattened), as NumPy. */
static PyObject *sort_impl(PyObject *xo, PyObject *axis_o, bool descending, bool positions,
                           const char *fn) {
    mod_array *x = mod_kit_array_arg(xo, fn);
    if (!x) return NULL;
    if (axis_o == Py_None) { /* NumPy: the flattened array */
        Py_ssize_t N = 1;
        for (int d = 0; d < x->nd; d++) N *= x->shape[d];
        PyObject *c = mod_ops_copy(x, NULL);
        PyObject *flat = c ? flat_view((mod_array *)c, N, NULL) : NULL;
        PyObject *r = flat ? sort_along((mod_array *)flat, 0, descending, positions) : NULL;
        Py_XDECREF(c);
        Py_XDECREF(flat);
        return r;
    }
    Py_ssize_t a = PyNumber_AsSsize_t(axis_o, PyExc_OverflowError);
    if (a == -1 && PyErr_Occurred()) return NULL;
    if (x->nd == 0 && positions && (a == 0 || a == -1)) {
        /* NumPy's argsort of a 0-d array: array([0]) */
        Py_ssize_t one = 1;
        PyObject *r = mod_array_new_empty(mod_array_device(x), int64_dtype(), 1, &one);
        int64_t zero = 0;
        if (r && mod_array_fill((mod_array *)r, &zero) < 0) Py_CLEAR(r);
        return r;
    }
    if (a < -x->nd || a >= x->nd) {
        mod_kit_axis_error(a, x->nd, NULL);
        return NULL;
    }
    return sort_along(x, (int)(a < 0 ? a + x->nd : a), descending, positions);
}

/* sort(a, axis=-1, kind=None, order=None, *, descending=False, stable=None) */
static PyObject *parse_sort(PyObject *self, PyObject *args, PyObject *kw, bool positions,
                            bool method) {
    static char *fkw[] = {"a", "axis", "kind", "order", "descending", "stable", NULL};
    PyObject *x = self, *axis = NULL, *kind = Py_None, *order = Py_None, *stable = Py_None;
    int descending = 0;
    const char *fn = positions ? "argsort" : "sort";
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%s|OOO$pO:%s", method ? "" : "O", fn);
    int ok = method ? PyArg_ParseTupleAndKeywords(args, kw, fmt, fkw + 1, &axis, &kind, &order,
                                                  &descending, &stable)
                    : PyArg_ParseTupleAndKeywords(args, kw, fmt, fkw, &x, &axis, &kind, &order,
                                                  &descending, &stable);
    if (!ok || check_kind(kind, order) < 0) return NULL;
    PyObject *minus1 = NULL;
    if (!axis) axis = minus1 = PyLong_FromLong(-1);
    PyObject *r = axis ? sort_impl(x, axis, descending, positions, fn) : NULL;
    Py_XDECREF(minus1);
    return r;
}

static PyObject *f_sort(PyObject *m, PyObject *a, PyObject *k) {
    return parse_sort(NULL, a, k, false, false);
}
static PyObject *f_argsort(PyObject *m, PyObject *a, PyObject *k) {
    return parse_sort(NULL, a, k, true, false);
}
static PyObject *m_argsort(PyObject *x, PyObject *a, PyObject *k) {
    return parse_sort(x, a, k, true, true);
}

/* ndarray.sort(axis=-1, kind=None, order=None, *, descending=False,
 * stable=None): in place, returns None, as NumPy's. */
static PyObject *m_sort(PyObject *x, PyObject *a, PyObject *k) {
    PyObject *s = parse_sort(x, a, k, false, true);
    if (!s) return NULL;
    int rc = mod_ops_copy_into((mod_array *)x, s);
    Py_DECREF(s);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---- searchsorted ---- */

/* The common dtype NumPy compares in: result_type, bool searched as uint8
 * (kernels order integers, not bools). */
static PyObject *common_dtype(PyObject *a, PyObject *b) {
    PyObject *rt = PyObject_CallMethod(mod_numpy_borrowed(), "result_type", "OO", a, b);
    PyObject *d = rt ? mod_dtype_new(rt) : NULL;
    Py_XDECREF(rt);
    if (d && mod_kit_kind(d) == 'b') Py_SETREF(d, Py_NewRef(mod_dtype_find_borrowed('u', 1)));
    return d;
}

static PyObject *f_searchsorted(PyObject *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"x1", "x2", "side", "sorter", NULL};
    PyObject *x1o, *x2o, *sorter_o = Py_None;
    const char *side = "left";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sO:searchsorted", kwlist, &x1o, &x2o, &side,
                                     &sorter_o))
        return NULL;
    bool right;
    if (!strcmp(side, "left") || !strcmp(side, "l") || !strcmp(side, "L"))
        right = false;
    else if (!strcmp(side, "right") || !strcmp(side, "r") || !strcmp(side, "R"))
        right = true;
    else
        return PyErr_Format(PyExc_ValueError, "side must be 'left' or 'right' (got '%s')", side);
    mod_array *x1 = mod_kit_array_arg(x1o, "searchsorted");
    if (!x1) return NULL;
    ofl_device *dev = mod_array_device(x1);
    if (x1->nd != 1) return PyErr_Format(PyExc_ValueError, "object too deep for desired array");
    PyObject *x2_own = NULL;
    if (!mod_array_check(x2o)) {
        if (mod_is_numpy_array(x2o) || PyList_Check(x2o) || PyTuple_Check(x2o))
            return PyErr_Format(PyExc_TypeError,
                                "offload.searchsorted: x2 must be an offload array, not %.100s "
                                "(call offload.asarray(...) on it first)",
                                Py_TYPE(x2o)->tp_name);
        if (!(PyLong_Check(x2o) || PyFloat_Check(x2o) || PyComplex_Check(x2o) ||
              mod_is_numpy_scalar(x2o)))
            return PyErr_Format(PyExc_TypeError,
                                "offload.searchsorted: x2 must be an offload array or a scalar, "
                                "not %.100s",
                                Py_TYPE(x2o)->tp_name);
        /* a Python scalar is weak (NEP 50): in x1's dtype, as NumPy converts it */
        PyObject *h =
            PyObject_CallMethod(mod_numpy_borrowed(), "asarray", "OO", x2o,
                                PyLong_Check(x2o) || PyFloat_Check(x2o) ||
                                        (PyComplex_Check(x2o) && mod_kit_kind(x1->dtype) == 'c')
                                    ? x1->dtype
                                    : Py_None);
        x2_own = h ? mod_array_from_host(h, dev) : NULL;
        Py_XDECREF(h);
        if (!x2_own) return NULL;
        x2o = x2_own;
    }
    mod_array *x2 = (mod_array *)x2o;
    if (mod_array_device(x2) != dev) {
        Py_XDECREF(x2_own);
        return PyErr_Format(mod_ExecutionPlacementError,
                            "searchsorted: x1 lives on %s and x2 on %s; move one with "
                            ".to_device(...)",
                            ofl_device_get_info(dev)->filter,
                            ofl_device_get_info(mod_array_device(x2))->filter);
    }
    Py_ssize_t n = x1->shape[0], M = 1;
    for (int d = 0; d < x2->nd; d++) M *= x2->shape[d];
    PyObject *dt = common_dtype(x1->dtype, x2->dtype);
    PyObject *a = NULL, *v = NULL, *vflat = NULL, *out = NULL, *outflat = NULL, *result = NULL;
    if (!dt) goto done;
    if (sorter_o != Py_None) {
        mod_array *s = mod_kit_array_arg(sorter_o, "searchsorted");
        if (!s) goto done;
        if (mod_array_device(s) != dev) {
            PyErr_Format(
                mod_ExecutionPlacementError, "searchsorted: x1 lives on %s and sorter on %s",
                ofl_device_get_info(dev)->filter, ofl_device_get_info(mod_array_device(s))->filter);
            goto done;
        }
        if (s->nd != 1 || s->shape[0] != n) {
            PyErr_SetString(PyExc_ValueError, "sorter.size must equal a.size");
            goto done;
        }
        if (mod_kit_kind(s->dtype) != 'i' && mod_kit_kind(s->dtype) != 'u') {
            PyErr_SetString(PyExc_TypeError, "sorter must only contain integers");
            goto done;
        }
        /* a = x1[sorter], in the common dtype. NumPy does not check
         * sorter's indices; here an index out of range reads x1's nearest
         * end rather than memory past it (negative ones count from the end) */
        PyObject *sc = mod_ops_copy(s, int64_dtype());
        PyObject *x1c = sc ? mod_ops_copy(x1, dt) : NULL;
        a = x1c ? new_1d(dev, dt, n) : NULL;
        mod_shape r = grid(n, 0);
        int rc = a ? 0 : -1;
        if (a && n > 0) rc = mod_library_launch("sort", "take_sorter", &r, "OOOn", a, x1c, sc, n);
        Py_XDECREF(sc);
        Py_XDECREF(x1c);
        if (rc < 0) goto done;
    } else if (!(a = mod_ops_copy(x1, dt))) {
        goto done;
    }
    if (!(v = mod_ops_copy(x2, dt)) ||
        !(out = mod_array_new_empty(dev, int64_dtype(), x2->nd, x2->shape)))
        goto done;
    if (M > 0) {
        if (!(vflat = flat_view((mod_array *)v, M, NULL)) ||
            !(outflat = flat_view((mod_array *)out, M, NULL)))
            goto done;
        char k = mod_kit_kind(dt);
        PyObject *less = fn(k == 'c' ? "less_complex" : k == 'f' ? "less_float" : "less_int");
        mod_shape r = grid(M, 0);
        if (!less || mod_library_launch("sort", "searchsorted", &r, "OOOnOO", outflat, a, vflat, n,
                                        less, mod_kit_bool(right)) < 0)
            goto done;
    }
    result = Py_NewRef(out);
done:
    Py_XDECREF(x2_own);
    Py_XDECREF(dt);
    Py_XDECREF(a);
    Py_XDECREF(v);
    Py_XDECREF(vflat);
    Py_XDECREF(out);
    Py_XDECREF(outflat);
    return result;
}

/* ---- unique_* ---- */

enum { U_VALUES, U_COUNTS, U_INVERSE, U_ALL };

/* The namedtuple classes NumPy 2 names its results with, for the process */
static PyObject *result_types[4];

static PyObject *f_unique(int what, PyObject *xo) {
    static const char *fns[] = {"unique_values", "unique_counts", "unique_inverse", "unique_all"};
    mod_array *x = mod_kit_array_arg(xo, fns[what]);
    if (!x) return NULL;
    ofl_device *dev = mod_array_device(x);
    Py_ssize_t N = 1;
    for (int d = 0; d < x->nd; d++) N *= x->shape[d];
    PyObject *c = NULL, *cflat = NULL, *order = NULL, *sv = NULL, *g = NULL, *values = NULL,
             *indices = NULL, *starts = NULL, *counts = NULL, *inverse = NULL, *inv_flat = NULL,
             *result = NULL;
    Py_ssize_t m = 0;
    bool more = what != U_VALUES; /* unique_values writes the values alone */
    if (more && !(inverse = mod_array_new_empty(dev, int64_dtype(), x->nd, x->shape))) goto done;
    if (N > 0) {
        if (!(c = mod_ops_copy(x, NULL)) || !(cflat = flat_view((mod_array *)c, N, NULL)) ||
            !(sv = more ? Py_NewRef(Py_None) : radix_values((mod_array *)c, N, false)))
            goto done;
        if (sv == Py_None) { /* the index form: the order, then the values in it */
            Py_CLEAR(sv);
            if (!(order = radix_order((mod_array *)c, N, N, false, NULL)) ||
                !(sv = new_1d(dev, x->dtype, N)) || gather(sv, cflat, order, N, N, false) < 0)
                goto done;
        }
        if (!(g = new_1d(dev, int64_dtype(), N + 1))) goto done;
        /* g: 1 where sv starts a run of equal values, and its exclusive
         * scan: each run's place, and the count at g[N] */
        mod_shape r = grid(N, 0);
        if (mod_library_launch("sort", "unique_marks", &r, "OOn", g, sv, N) < 0 ||
            exclusive_scan((mod_array *)g, N + 1) < 0)
            goto done;
        Py_ssize_t one = 1, stride = 8;
        PyObject *last =
            mod_array_view((mod_array *)g, 1, &one, &stride, ((mod_array *)g)->offset + N * stride);
        PyObject *h = last ? mod_array_asnumpy((mod_array *)last) : NULL;
        PyObject *item = h ? PyObject_CallMethod(h, "item", NULL) : NULL;
        m = item ? PyLong_AsSsize_t(item) : -1;
        Py_XDECREF(last);
        Py_XDECREF(h);
        Py_XDECREF(item);
        if (m < 0) goto done;
    }
    if (!(values = new_1d(dev, x->dtype, m))) goto done;
    if (more &&
        (!(indices = new_1d(dev, int64_dtype(), m)) || !(starts = new_1d(dev, int64_dtype(), m)) ||
         !(counts = new_1d(dev, int64_dtype(), m))))
        goto done;
    mod_shape r = grid(N, 0);
    if (N > 0 && !more) {
        if (mod_library_launch("sort", "unique_values", &r, "OOO", sv, g, values) < 0) goto done;
    } else if (N > 0) {
        mod_shape rm = grid(m, 0);
        if (!(inv_flat = flat_view((mod_array *)inverse, N, NULL)) ||
            mod_library_launch("sort", "unique_scatter", &r, "OOOOOOO", sv, order, g, values,
                               indices, starts, inv_flat) < 0 ||
            mod_library_launch("sort", "unique_counts", &rm, "OOnn", counts, starts, m, N) < 0)
            goto done;
    }
    switch (what) {
    case U_VALUES: result = Py_NewRef(values); break;
    case U_COUNTS:
        result = PyObject_CallFunctionObjArgs(result_types[what], values, counts, NULL);
        break;
    case U_INVERSE:
        result = PyObject_CallFunctionObjArgs(result_types[what], values, inverse, NULL);
        break;
    default:
        result = PyObject_CallFunctionObjArgs(result_types[what], values, indices, inverse, counts,
                                              NULL);
    }
done:
    Py_XDECREF(c);
    Py_XDECREF(cflat);
    Py_XDECREF(order);
    Py_XDECREF(sv);
    Py_XDECREF(g);
    Py_XDECREF(values);
    Py_XDECREF(indices);
    Py_XDECREF(starts);
    Py_XDECREF(counts);
    Py_XDECREF(inverse);
    Py_XDECREF(inv_flat);
    return result;
}

static PyObject *f_unique_values(PyObject *m, PyObject *x) { return f_unique(U_VALUES, x); }
static PyObject *f_unique_counts(PyObject *m, PyObject *x) { return f_unique(U_COUNTS, x); }
static PyObject *f_unique_inverse(PyObject *m, PyObject *x) { return f_unique(U_INVERSE, x); }
static PyObject *f_unique_all(PyObject *m, PyObject *x) { return f_unique(U_ALL, x); }

/* ---- the namespace ---- */

static PyMethodDef functions[] = {
    {"sort", MOD_KWFUNC(f_sort),
     "sort(x, /, axis=-1, kind=None, order=None, *, descending=False, stable=None) -> ndarray\n\n"
     "A sorted copy of x along axis (None: the flattened array), on x's device. Always stable; "
     "NaNs last (first when descending: the ascending order reversed, ties kept in order). "
     "Complex numbers in NumPy's order (real, then imag; NaN parts last). kind= is accepted for "
     "NumPy's sake; order= must be None."},
    {"argsort", MOD_KWFUNC(f_argsort),
     "argsort(x, /, axis=-1, kind=None, order=None, *, descending=False, stable=None) -> int64 "
     "ndarray\n\nThe indices that sort x along axis, as sort orders it: equal elements keep "
     "their order, also when descending."},
    {"searchsorted", MOD_KWFUNC(f_searchsorted),
     "searchsorted(x1, x2, /, side='left', sorter=None) -> int64 ndarray\n\nWhere to insert "
     "each element of x2 in the sorted 1-D x1 (or x1[sorter]) to keep it sorted: the first "
     "place (side='left') or the last ('right'). Compares in NumPy's common dtype, NaN last. "
     "As NumPy, sorter's indices are not checked (one out of range reads x1's nearest end)."},
    {"unique_values", (PyCFunction)f_unique_values, METH_O,
     "unique_values(x, /) -> ndarray\n\nThe sorted distinct elements of x (flattened); each "
     "NaN is distinct."},
    {"unique_counts", (PyCFunction)f_unique_counts, METH_O,
     "unique_counts(x, /) -> (values, counts)\n\nThe distinct elements and how often each "
     "occurs."},
    {"unique_inverse", (PyCFunction)f_unique_inverse, METH_O,
     "unique_inverse(x, /) -> (values, inverse_indices)\n\nThe distinct elements, and for each "
     "element of x the index of its value (x's shape)."},
    {"unique_all", (PyCFunction)f_unique_all, METH_O,
     "unique_all(x, /) -> (values, indices, inverse_indices, counts)\n\nunique_counts and "
     "unique_inverse together, with the index of each value's first occurrence in x."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef methods[] = {
    {"sort", MOD_KWFUNC(m_sort),
     "sort(axis=-1, kind=None, order=None, *, descending=False, stable=None) -> None\n\nSorts "
     "the array in place along axis, as offload.sort."},
    {"argsort", MOD_KWFUNC(m_argsort),
     "argsort(axis=-1, kind=None, order=None, *, descending=False, stable=None) -> int64 "
     "ndarray: offload.argsort(self, ...)"},
    {NULL, NULL, 0, NULL},
};

int mod_sort_add_functions(PyObject *module) {
    static const char *names[4][2] = {
        {NULL, NULL},
        {"UniqueCountsResult", "values counts"},
        {"UniqueInverseResult", "values inverse_indices"},
        {"UniqueAllResult", "values indices inverse_indices counts"},
    };
    PyObject *collections = PyImport_ImportModule("collections");
    PyObject *namedtuple = collections ? PyObject_GetAttrString(collections, "namedtuple") : NULL;
    PyObject *kw = Py_BuildValue("{ss}", "module", "offload");
    int rc = namedtuple && kw ? 0 : -1;
    for (int i = 1; i < 4 && rc == 0; i++) {
        if (result_types[i]) continue;
        PyObject *args = Py_BuildValue("(ss)", names[i][0], names[i][1]);
        if (!args || !(result_types[i] = PyObject_Call(namedtuple, args, kw))) rc = -1;
        Py_XDECREF(args);
    }
    Py_XDECREF(collections);
    Py_XDECREF(namedtuple);
    Py_XDECREF(kw);
    if (rc < 0) return -1;
    if (mod_type_add_methods(&mod_ArrayType, methods) < 0) return -1;
    return PyModule_AddFunctions(module, functions);
}
