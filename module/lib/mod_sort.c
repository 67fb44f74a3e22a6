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
 * The algorithm, the key maps and the measured reasons: docs/radix-sort.md */
#include "mod_lib.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_CHUNK 64 /* elements a work-item sums in a scan's first pass */
/* At most this many, a CPU's scan is one work-item's loop: there a launch
 * costs more than thousands of adds. */
#define SCAN_SERIAL_CPU 4096

/* ---- kernel texts and launches ---- */

/* A launch's arguments, each an owned reference; a failed add poisons it. */
typedef struct {
    PyObject *v[12];
    int n;
    bool bad;
} argv_t;

static void arg_obj(argv_t *a, PyObject *o) { a->v[a->n++] = Py_XNewRef(o); }
static void arg_int(argv_t *a, Py_ssize_t i) {
    PyObject *o = PyLong_FromSsize_t(i);
    a->bad |= !o;
    a->v[a->n++] = o;
}
static void args_clear(argv_t *a) {
    for (int i = 0; i < a->n; i++) Py_XDECREF(a->v[i]);
    a->n = 0;
}

/* Launches kernel k over Range(items), or an NdRange of groups of `local`
 * work-items (local > 0), with launch bounds (local, min_groups) when
 * min_groups > 0; clears a. Nothing for no items. Every loop in these texts
 * is bounded by the arrays: no cancel checks (see mod_launch.h). */
static int run(PyObject *k, Py_ssize_t items, Py_ssize_t local, int min_groups, argv_t *a) {
    int rc = -1;
    if (!a->bad && items <= 0) {
        rc = 0;
    } else if (!a->bad && k) {
        mod_kernel_runs_to_end(k);
        if (min_groups > 0) mod_kernel_launch_bounds(k, (int)local, min_groups);
        mod_shape range = {.ndim = 1, .size = {items}};
        if (local > 0) range.nd = true, range.local[0] = local;
        PyObject *r = mod_kernel_launch(k, &range, a->v, a->n, false);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    args_clear(a);
    return rc;
}

/* run() for the text's kernel `name`, without launch bounds. */
static int launch(const char *name, const mod_text *t, Py_ssize_t items, Py_ssize_t local,
                  argv_t *a) {
    a->bad |= !mod_text_ok(t, name);
    PyObject *k = !a->bad && items > 0 ? mod_gen_kernel_borrowed(name, t->s) : NULL;
    return run(k, items, local, 0, a);
}

/* The big kernels of a sort (its key kernels and passes) are remembered by
 * a memo key (memo_key): their texts (10-30 KB) cost more host time to
 * write and hash than a launch, and the first pass's is written between the
 * read back and its launch, while the GPU waits. */
typedef struct plan plan_t;
typedef void text_fn(mod_text *t, const plan_t *p, const char *name, const void *arg);
static void memo_key(char *buf, size_t len, const char *name, const plan_t *p);

/* The kernel `name` of plan p: remembered, or written by write(arg) and
 * compiled; NULL with an exception. */
static PyObject *sort_kernel(const plan_t *p, const char *name, text_fn *write, const void *arg) {
    char mk[256];
    memo_key(mk, sizeof mk, name, p);
    PyObject *k = mod_gen_kernel_by_key_borrowed(mk);
    if (k) return k;
    mod_text t;
    t.n = 0;
    write(&t, p, name, arg);
    k = mod_text_ok(&t, name) ? mod_gen_kernel_borrowed(name, t.s) : NULL;
    return k && mod_gen_remember(mk, k) < 0 ? NULL : k;
}

static PyObject *int64_dtype(void) { return mod_dtype_find_borrowed('i', 8); }

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

static char kind_of(PyObject *dtype) {
    const char *name = mod_dtype_name(dtype);
    return name[0] == 'b'   ? 'b'
           : name[0] == 'u' ? 'u'
           : name[0] == 'i' ? 'i'
           : name[0] == 'c' ? 'c'
                            : 'f';
}

/* ---- exclusive scan of an int64 array, in place ---- */

static int scan_serial(mod_array *a, Py_ssize_t m) {
    mod_text t;
    t.n = 0;
    mod_text_put(&t, "def sort_scan_serial(it, a, m):\n"
                     "    s = np.int64(0)\n"
                     "    for i in range(m):\n"
                     "        v = a[i]\n"
                     "        a[i] = s\n"
                     "        s += v\n");
    argv_t av = {.n = 0};
    arg_obj(&av, (PyObject *)a);
    arg_int(&av, m);
    return launch("sort_scan_serial", &t, 1, 0, &av);
}

/* a[0..m) becomes its exclusive prefix sums. A GPU's: the scans' blocks
 * form (mod_stats.c; OFFLOAD_SCAN_FORM=blocks takes it on a CPU too); a
 * CPU's: chunks' sums, their scan (recursively), then each chunk's scan
 * from its start. */
static int exclusive_scan(mod_array *a, Py_ssize_t m) {
    ofl_device *dev = mod_array_device(a);
    const char *f = getenv("OFFLOAD_SCAN_FORM");
    if (ofl_device_get_info(dev)->type != OFL_CPU || (f && !strcmp(f, "blocks")))
        return mod_lib_exclusive_scan(a, m);
    if (m <= SCAN_SERIAL_CPU) return scan_serial(a, m);
    Py_ssize_t chunks = (m + SCAN_CHUNK - 1) / SCAN_CHUNK;
    PyObject *sums = new_1d(dev, int64_dtype(), chunks);
    if (!sums) return -1;
    mod_text t;
    t.n = 0;
    mod_text_put(&t, "def sort_scan_sums(it, a, sums, m, c):\n"
                     "    j = it.get_id(0)\n"
                     "    s = np.int64(0)\n"
                     "    for i in range(j * c, min(j * c + c, m)):\n"
                     "        s += a[np.uint64(i)]\n"
                     "    sums[j] = s\n");
    argv_t av = {.n = 0};
    arg_obj(&av, (PyObject *)a);
    arg_obj(&av, sums);
    arg_int(&av, m);
    arg_int(&av, SCAN_CHUNK);
    int rc = launch("sort_scan_sums", &t, chunks, 0, &av);
    if (rc == 0) rc = exclusive_scan((mod_array *)sums, chunks);
    if (rc == 0) {
        t.n = 0;
        mod_text_put(&t, "def sort_scan_apply(it, a, sums, m, c):\n"
                         "    j = it.get_id(0)\n"
                         "    s = sums[j]\n"
                         "    for i in range(j * c, min(j * c + c, m)):\n"
                         "        v = a[np.uint64(i)]\n"
                         "        a[np.uint64(i)] = s\n"
                         "        s += v\n");
        arg_obj(&av, (PyObject *)a);
        arg_obj(&av, sums);
        arg_int(&av, m);
        arg_int(&av, SCAN_CHUNK);
        rc = launch("sort_scan_apply", &t, chunks, 0, &av);
    }
    Py_DECREF(sums);
    return rc;
}

/* ---- the radix sort ---- */

/* A sort's plan: the key dtype, how wide a digit is, and the device's form. */
struct plan {
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
    Py_ssize_t tile_k;      /* tiles form: keys per work-item (a tile: TILE_T * tile_k) */
    Py_ssize_t ntiles;
    /* keys alone: the last pass writes the values (their bits) into out */
    PyObject *out;   /* borrowed; NULL: the index form */
    int kbits;       /* 32 or 64 */
    bool vfloat;     /* the keys of floats (see float_key_alone), else bits ^ vxor */
    uint64_t vxor;   /* ints: the bits' XOR; floats: all ones for descending, else 0 */
    const char *vdt; /* out's dtype: unsigned, the values' width */
    /* the index form of one row: the last pass writes the indices into pos
     * (argsort's int64 result) and sets pos_done */
    PyObject *pos; /* borrowed; NULL: into idx */
    bool pos_done;
};

/* A sort kernel's memo key (see sort_kernel()): its name, which says its form,
 * and every field of the plan that its text reads. */
static void memo_key(char *buf, size_t len, const char *name, const plan_t *p) {
    snprintf(buf, len, "sort %s %d %s %d %llx %s %zd", name, p->kbits, mod_dtype_name(p->idt),
             (int)p->vfloat, (unsigned long long)p->vxor, p->vdt ? p->vdt : "-", p->tile_k);
}

/* "np.uintB(c)" as the kernel language reads it (no literal past int64). */
static void const_expr(char *buf, size_t len, int bits, uint64_t c) {
    if (bits == 64 && c > 0x7fffffffULL)
        snprintf(buf, len, "((np.uint64(%llu) << np.uint64(32)) | np.uint64(%llu))",
                 (unsigned long long)(c >> 32), (unsigned long long)(c & 0xffffffffULL));
    else
        snprintf(buf, len, "np.uint%d(%llu)", bits, (unsigned long long)c);
}

/* The key map's constants as the kernel language reads them: all ones, the
 * top bit, the shift (2**23 - 1, 2**52 - 1) and the XOR (p->vxor). Each
 * buffer holds 96 bytes. */
static void key_consts(const plan_t *p, char *all, char *top, char *shift, char *flip) {
    const_expr(all, 96, p->kbits, p->kbits == 64 ? ~0ULL : 0xffffffffULL);
    const_expr(top, 96, p->kbits, 1ULL << (p->kbits - 1));
    const_expr(shift, 96, p->kbits, p->kbits == 64 ? (1ULL << 52) - 1 : (1ULL << 23) - 1);
    const_expr(flip, 96, p->kbits, p->vxor);
}

/* "w = the value bits of key k" (a keys-alone sort's key, inverted), at
 * indent ind. */
static void put_inverse(mod_text *t, const plan_t *p, const char *ind) {
    const char *kt = mod_dtype_name(p->kdt);
    char all[96], top[96], shift[96], flip[96];
    key_consts(p, all, top, shift, flip);
    if (!p->vfloat) {
        mod_text_put(t, "%sw = np.%s(k ^ %s)\n", ind, p->vdt, flip);
        return;
    }
    mod_text_put(t,
                 "%sw = (k ^ %s) + %s\n"
                 "%sif w >= %s:\n"
                 "%s    w = w ^ %s\n"
                 "%selse:\n"
                 "%s    w = w ^ %s\n"
                 "%sw = np.%s(w)\n",
                 ind, flip, shift, ind, top, ind, top, ind, ind, all, ind, kt);
}

/* "kvar = the key of value bits uexpr" for a sort of keys alone (the map
 * keys_alone_keys describes), at indent ind; put_inverse undoes it. */
static void put_key_of(mod_text *t, const plan_t *p, const char *ind, const char *uexpr,
                       const char *kvar) {
    const char *kt = mod_dtype_name(p->kdt);
    char all[96], top[96], shift[96], flip[96];
    key_consts(p, all, top, shift, flip);
    mod_text_put(t, "%s%s = np.%s(%s)\n", ind, kvar, kt, uexpr);
    if (!p->vfloat) {
        mod_text_put(t, "%s%s = %s ^ %s\n", ind, kvar, kvar, flip);
        return;
    }
    mod_text_put(t,
                 "%sif %s >= %s:\n"
                 "%s    %s = %s ^ %s\n"
                 "%selse:\n"
                 "%s    %s = %s | %s\n"
                 "%s%s = (%s - %s) ^ %s\n",
                 ind, kvar, top, ind, kvar, kvar, all, ind, ind, kvar, kvar, top, ind, kvar, kvar,
                 shift, flip);
}

#define TILE_T 256        /* work-items of a tile's group */
#define CPU_RUN_MIN 16384 /* the runs form: elements a run walks at least */

/* A numpy scalar of dtype holding v (a shift count in the keys' type, so
 * that key >> sh stays unsigned). */
static void arg_typed(argv_t *a, PyObject *dtype, Py_ssize_t v) {
    PyObject *o = PyObject_CallMethod(mod_numpy_borrowed(), mod_dtype_name(dtype), "n", v);
    a->bad |= !o;
    a->v[a->n++] = o;
}

/* The words of a sort's key, least significant first. A complex number
 * orders as NumPy 2's: lexicographic on (real, imag) with NaN parts last,
 * in classes -- no NaN, NaN imag (by real), NaN real (by imag), both -- so
 * its words are imag, real (a NaN part keyed 0: its class decides) and the
 * class. Several rows add the row number as the most significant word. */
enum { W_VALUE, W_IMAG, W_REAL, W_CLASS, W_ROW };

/* "k = <the key of float v, bits b>" for 32 or 64 bits: the sign flipped
 * (all bits for negatives), -0.0 as +0.0, NaN as nan_key. */
static void put_float_key(mod_text *t, int bits, const char *v, const char *b, bool nan_max) {
    const char *u = bits == 32 ? "uint32" : "uint64";
    const char *top = bits == 32 ? "np.uint32(2147483648)" : "(np.uint64(1) << np.uint64(63))";
    mod_text_put(t,
                 "    top = %s\n"
                 "    if %s != %s:\n"
                 "        k = %s\n"
                 "    elif %s == 0:\n"
                 "        k = top\n"
                 "    elif %s >= top:\n"
                 "        k = %s ^ (top | (top - np.%s(1)))\n"
                 "    else:\n"
                 "        k = %s | top\n",
                 top, v, v, nan_max ? "top | (top - np.uint64(1))" : "np.uint64(0)", v, b, b, u, b);
    if (bits == 32) mod_text_put(t, "    k = np.uint32(k)\n");
}

/* The key kernel's body for one word, at indent 4: k and key[i] from the
 * element idx[i] (first: from element i, and idx[i] = i unless iota: the
 * first pass makes it up), where x is the flat input (complex: as 2N
 * parts), bits the same memory as unsigned integers (floats only) and n the
 * row length. name: the kernel's. */
static void key_body(mod_text *t, PyObject *dtype, int word, bool descending, bool first, bool iota,
                     PyObject *kdt, PyObject *idt, char *name, size_t len) {
    const char *dn = mod_dtype_name(dtype), *kt = mod_dtype_name(kdt);
    char kind = kind_of(dtype);
    int bits = (int)mod_dtype_itemsize(dtype) * (kind == 'c' ? 4 : 8);
    static const char *wn[] = {"value", "imag", "real", "class", "row"};
    snprintf(name, len, "sort_key_%s_%s%s%s", word == W_ROW ? "any" : dn, wn[word],
             descending ? "_desc" : "", first ? (iota ? "_iota" : "_first") : "");
    if (first && iota)
        mod_text_put(t, "    j = i\n");
    else if (first)
        mod_text_put(t, "    j = i\n    idx[i] = np.%s(i)\n", mod_dtype_name(idt));
    else
        mod_text_put(t, "    j = np.int64(idx[i])\n");
    if (word == W_ROW) {
        mod_text_put(t, "    k = np.%s(j // n)\n    key[i] = k\n", kt);
        return;
    }
    unsigned long long flip = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
    if (kind == 'c') {
        const char *part = word == W_IMAG ? "np.uint64(2 * j + 1)" : "np.uint64(2 * j)";
        if (word == W_CLASS) {
            mod_text_put(t,
                         "    re = x[np.uint64(2 * j)]\n"
                         "    im = x[np.uint64(2 * j + 1)]\n"
                         "    k = np.%s(0)\n"
                         "    if re != re:\n"
                         "        k = np.%s(2)\n"
                         "    if im != im:\n"
                         "        k = k | np.%s(1)\n",
                         kt, kt, kt);
            flip = 3;
        } else {
            mod_text_put(t, "    v = x[%s]\n    b = bits[%s]\n", part, part);
            put_float_key(t, bits, "v", "b", false);
        }
    } else {
        mod_text_put(t, "    v = x[j]\n");
        if (kind == 'b') {
            mod_text_put(t, "    k = np.uint32(1) if v else np.uint32(0)\n");
            flip = 1;
        } else if (kind == 'u') {
            mod_text_put(t, "    k = np.%s(v)\n", bits == 64 ? "uint64" : "uint32");
        } else if (kind == 'i' && bits < 64) {
            mod_text_put(t, "    k = np.uint32(np.int64(v) + %lld)\n", 1LL << (bits - 1));
        } else if (kind == 'i') {
            mod_text_put(t, "    k = np.uint64(v) ^ (np.uint64(1) << np.uint64(63))\n");
        } else {
            mod_text_put(t, "    b = bits[j]\n");
            put_float_key(t, bits, "v", "b", true);
        }
    }
    if (descending && bits == 64)
        mod_text_put(
            t, "    k = k ^ ((np.uint64(1) << np.uint64(63)) | ((np.uint64(1) << np.uint64(63)) - "
               "np.uint64(1)))\n");
    else if (descending)
        mod_text_put(t, "    k = k ^ np.uint32(%llu)\n", flip);
    mod_text_put(t, "    k = np.%s(k)\n    key[i] = k\n", kt);
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

/* The tiles form's key kernels (keys_alone_keys, keys_grouped) run over
 * grouped_range's work-items in groups of 256, each of which ORs its
 * work-items' nres reductions in the local lr, then into res (p->res), and
 * counts the histogram: every 8-bit position of key k (npos of them) into
 * the local h, then into gh (p->hist, zeroed: [position][digit]). A
 * work-item counts runs of one digit and adds a run at its end, so that a
 * byte all keys share (small integers) costs an atomic per work-item, not
 * per key. At most `most` groups. */
static void grouped_range(const plan_t *p, Py_ssize_t most, Py_ssize_t *G, Py_ssize_t *per) {
    *G = (p->N + 255) / 256 * 256;
    if (*G > most * 256) *G = most * 256;
    *per = (p->N + *G - 1) / *G;
}

/* The group's start, after grp and l; ends with the group's barrier. */
static void put_group_start(mod_text *t, const char *kt, int nres, int npos) {
    mod_text_put(t,
                 "    lr = ol.local_array(%d, np.%s)\n"
                 "    if l < %d:\n"
                 "        lr[l] = np.%s(0)\n"
                 "    h = ol.local_array(%d, np.int32)\n"
                 "    for c in range(%d):\n"
                 "        h[c * 256 + l] = 0\n",
                 nres, kt, nres, kt, 256 * npos, npos);
    for (int c = 0; c < npos; c++)
        mod_text_put(t, "    d%d = np.int32(0)\n    r%d = np.int32(0)\n", c, c);
    mod_text_put(t, "    ol.group_barrier(grp)\n");
}

/* Key k into the work-item's runs, at indent ind. */
static void put_group_key(mod_text *t, const char *kt, int npos, const char *ind) {
    for (int c = 0; c < npos; c++)
        mod_text_put(t,
                     "%sdc = np.int32((k >> np.%s(%d)) & np.%s(255))\n"
                     "%sif dc == d%d:\n"
                     "%s    r%d += 1\n"
                     "%selse:\n"
                     "%s    if r%d != 0:\n"
                     "%s        ol.AtomicRef(h, %d + d%d).fetch_add(r%d)\n"
                     "%s    d%d = dc\n"
                     "%s    r%d = 1\n",
                     ind, kt, 8 * c, kt, ind, c, ind, c, ind, ind, c, ind, 256 * c, c, c, ind, c,
                     ind, c);
}

/* After the loop over the keys, once the work-items' ORs are in lr. */
static void put_group_end(mod_text *t, int nres, int npos) {
    for (int c = 0; c < npos; c++)
        mod_text_put(t,
                     "    if r%d != 0:\n"
                     "        ol.AtomicRef(h, %d + d%d).fetch_add(r%d)\n",
                     c, 256 * c, c, c);
    mod_text_put(t,
                 "    ol.group_barrier(grp)\n"
                 "    for c in range(%d):\n"
                 "        hv = h[c * 256 + l]\n"
                 "        if hv != 0:\n"
                 "            ol.AtomicRef(gh, c * 256 + l).fetch_add(np.int64(hv))\n"
                 "    if l < %d:\n"
                 "        ol.AtomicRef(res, l).fetch_or(lr[l])\n",
                 npos, nres);
}

/* p->hist: the counts of every digit at the 8-bit positions of a word of
 * `bits` bits (put_group_*) -> each digit's global start there. */
static int tile_starts(plan_t *p, int bits) {
    int npos = (bits + 7) / 8;
    mod_text t;
    t.n = 0;
    mod_text_put(&t, "def sort_tile_starts(item, gh):\n"
                     "    grp = item.get_group()\n"
                     "    l = item.get_local_id(0)\n"
                     "    g = grp.get_group_id(0)\n"
                     "    s = ol.local_array(256, np.int64)\n"
                     "    c = gh[g * 256 + l]\n"
                     "    s[l] = c\n"
                     "    ol.group_barrier(grp)\n"
                     "    h = 1\n"
                     "    while h < 256:\n"
                     "        v = np.int64(0)\n"
                     "        if l >= h:\n"
                     "            v = s[l - h]\n"
                     "        ol.group_barrier(grp)\n"
                     "        s[l] = s[l] + v\n"
                     "        ol.group_barrier(grp)\n"
                     "        h = h * 2\n"
                     "    gh[g * 256 + l] = s[l] - c\n");
    argv_t av = {.n = 0};
    arg_obj(&av, p->hist);
    return launch("sort_tile_starts", &t, 256 * npos, 256, &av);
}

/* Zeroes hist (tiles) and res for a word's key kernel, unless still zero. */
static int clear_counts(plan_t *p) {
    if (!p->fresh && ((p->tiles && mod_array_assign((mod_array *)p->hist, Py_False) < 0) ||
                      mod_array_assign((mod_array *)p->res, Py_False) < 0))
        return -1;
    p->fresh = false;
    return 0;
}

/* keys_grouped's kernel text (name: its form): the key body, npos
 * positions of the histogram. */
typedef struct {
    const mod_text *body;
    int npos;
} grouped_arg;

static void grouped_text(mod_text *t, const plan_t *p, const char *name, const void *arg) {
    const mod_text *body = ((const grouped_arg *)arg)->body;
    int npos = ((const grouped_arg *)arg)->npos;
    const char *kt = mod_dtype_name(p->kdt);
    mod_text_put(t,
                 "def %s(item, x, bits, key, idx, res, gh, n, N, G, per):\n"
                 "    grp = item.get_group()\n"
                 "    l = item.get_local_id(0)\n"
                 "    g = item.get_global_id(0)\n",
                 name);
    put_group_start(t, kt, 2, npos);
    mod_text_put(t,
                 "    o = np.%s(0)\n"
                 "    z = np.%s(0)\n"
                 "    for jj in range(per):\n"
                 "        i = g + jj * G\n"
                 "        if i < N:\n",
                 kt, kt);
    for (const char *line = body->s; *line;) { /* the body, 8 deeper: in the loop's if */
        size_t len = strcspn(line, "\n");
        mod_text_put(t, "        %.*s\n", (int)len, line);
        line += len + (line[len] == '\n');
    }
    mod_text_put(t, "            o = o | k\n"
                    "            z = z | ~k\n");
    put_group_key(t, kt, npos, "            ");
    mod_text_put(t, "    ol.AtomicRef(lr, 0).fetch_or(o)\n"
                    "    ol.AtomicRef(lr, 1).fetch_or(z)\n");
    put_group_end(t, 2, npos);
}

/* The tiles form's key kernel (body: key_body's) and varying_bits in one:
 * many work-items (a GPU needs them to keep its memory busy) make the keys,
 * reduce their ORs in local memory (one atomic per group into res) and
 * count the histogram of a word of `bits` bits (put_group_*); the digit
 * starts follow, then the read back. */
static int keys_grouped(plan_t *p, const mod_text *body, const char *kname, PyObject *x,
                        PyObject *bitsv, Py_ssize_t n, int bits, uint64_t *mask) {
    Py_ssize_t G, per;
    grouped_range(p, 1024, &G, &per); /* enough to keep a GPU's memory busy */
    int npos = (bits + 7) / 8;
    char name[96];
    snprintf(name, sizeof name, "%s_grouped_%d", kname, npos);
    PyObject *k = sort_kernel(p, name, grouped_text, &(grouped_arg){body, npos});
    if (!k || clear_counts(p) < 0) return -1;
    argv_t av = {.n = 0};
    arg_obj(&av, x);
    arg_obj(&av, bitsv);
    arg_obj(&av, p->key[p->cur]);
    arg_obj(&av, p->idx[p->cur]);
    arg_obj(&av, p->res);
    arg_obj(&av, p->hist);
    arg_int(&av, n);
    arg_int(&av, p->N);
    arg_int(&av, G);
    arg_int(&av, per);
    int rc = run(k, G, 256, 0, &av);
    return fold_bits(rc == 0 ? tile_starts(p, bits) : rc, Py_NewRef(p->res), 1, mask);
}

/* The runs form's bits in which the current keys differ (fold_bits): a
 * digit all keys share needs no pass. One small read back per word; the
 * tiles form has keys_grouped. */
static int varying_bits(plan_t *p, uint64_t *mask) {
    Py_ssize_t G = p->runs, per = p->per, a = per, b = 1;
    PyObject *part = new_1d(p->dev, p->kdt, 2 * G);
    if (!part) return -1;
    mod_text t;
    t.n = 0;
    mod_text_put(&t, "def sort_bits(it, key, part, n, G, a, b, per):\n"
                     "    g = it.get_id(0)\n"
                     "    o = key[0]\n"
                     "    z = ~key[0]\n"
                     "    for j in range(per):\n"
                     "        i = g * a + j * b\n"
                     "        if i < n:\n"
                     "            v = key[np.uint64(i)]\n"
                     "            o = o | v\n"
                     "            z = z | ~v\n"
                     "    part[g] = o\n"
                     "    part[np.uint64(G + g)] = z\n");
    argv_t av = {.n = 0};
    arg_obj(&av, p->key[p->cur]);
    arg_obj(&av, part);
    arg_int(&av, p->N);
    arg_int(&av, G);
    arg_int(&av, a);
    arg_int(&av, b);
    arg_int(&av, per);
    return fold_bits(launch("sort_bits", &t, G, 0, &av), part, G, mask);
}

/* The digit of key k at shift sh, as an int64 expression. */
#define DIGIT(kvar, shvar, mask) "np.int64((" kvar " >> " shvar ") & np.uint8(" mask "))"

/* ---- the CPU form: a pass over runs ----
 * A few work-items each count the digits of a long run of keys into
 * hist[digit][run], one exclusive scan gives each run its start per digit,
 * and each run moves its keys there in order: stable, as LSD needs. The
 * algorithm: docs/radix-sort.md */
static int pass_runs(plan_t *p, int sh, bool last) {
    PyObject *key = p->key[p->cur], *idx = p->idx[p->cur];
    PyObject *key2 = p->key[!p->cur], *idx2 = p->idx[!p->cur];
    mod_text t;
    t.n = 0;
    mod_text_put(
        &t, "def sort_run_count(it, key, hist, n, runs, per, sh):\n"
            "    r = it.get_id(0)\n"
            "    c = ol.private_array(256, np.int64)\n"
            "    for d in range(256):\n"
            "        c[d] = 0\n"
            "    for i in range(r * per, min(r * per + per, n)):\n"
            "        k = key[np.uint64(i)]\n"
            "        c[" DIGIT("k", "sh", "255") "] += 1\n"
                                                 "    for d in range(256):\n"
                                                 "        hist[np.uint64(d * runs + r)] = c[d]\n");
    argv_t av = {.n = 0};
    arg_obj(&av, key);
    arg_obj(&av, p->hist);
    arg_int(&av, p->N);
    arg_int(&av, p->runs);
    arg_int(&av, p->per);
    arg_typed(&av, p->kdt, sh);
    if (launch("sort_run_count", &t, p->runs, 0, &av) < 0 ||
        exclusive_scan((mod_array *)p->hist, 256 * p->runs) < 0)
        return -1;
    t.n = 0;
    bool with_idx = idx != NULL, values = last && p->out;
    char name[64];
    snprintf(name, sizeof name, "sort_run_scatter%s%s", with_idx ? "_idx" : "",
             values ? "_values" : "");
    mod_text_put(&t,
                 "def %s(it, key, %sout, %shist, n, runs, per, sh):\n"
                 "    r = it.get_id(0)\n"
                 "    c = ol.private_array(256, np.int64)\n"
                 "    for d in range(256):\n"
                 "        c[d] = hist[np.uint64(d * runs + r)]\n"
                 "    for i in range(r * per, min(r * per + per, n)):\n"
                 "        k = key[np.uint64(i)]\n"
                 "        d = " DIGIT("k", "sh", "255") "\n"
                                                        "        q = np.uint64(c[d])\n"
                                                        "        c[d] += 1\n",
                 name, with_idx ? "idx, " : "", with_idx ? "idx2, " : "");
    if (values) {
        put_inverse(&t, p, "        ");
        mod_text_put(&t, "        out[q] = w\n");
    } else {
        mod_text_put(&t, "        out[q] = k\n");
    }
    if (with_idx) mod_text_put(&t, "        idx2[q] = idx[np.uint64(i)]\n");
    arg_obj(&av, key);
    if (with_idx) arg_obj(&av, idx);
    arg_obj(&av, values ? p->out : key2);
    if (with_idx) arg_obj(&av, last && p->pos ? p->pos : idx2);
    arg_obj(&av, p->hist);
    arg_int(&av, p->N);
    arg_int(&av, p->runs);
    arg_int(&av, p->per);
    arg_typed(&av, p->kdt, sh);
    if (launch(name, &t, p->runs, 0, &av) < 0) return -1;
    p->pos_done = last && p->pos;
    p->cur = !p->cur;
    return 0;
}

/* ---- the GPU form: a pass over tiles ----
 * One kernel a pass (CUB's onesweep): a group takes the next tile from an
 * atomic counter (tiles start in order, so every tile it waits for is
 * running), loads TILE_T * K keys coalesced into local memory, counts their
 * digits, publishes its count of each digit in status[tile][digit], sorts
 * the tile stably by the digit (two 4-bit splits), looks back over the
 * tiles before it for each digit's prefix, and writes the tile out
 * coalesced. The digits' global starts come from the word's histogram
 * (put_group_*, tile_starts). A status word holds the pass's epoch, so one
 * array, zeroed once, serves every pass. Local arrays are padded (one word
 * per 32 keys, per 16 counters) against bank conflicts. A pass of keys
 * alone (p->idx NULL) moves no indices; the last one of a value sort
 * (p->out) writes values. The algorithm: docs/radix-sort.md */

#define STATUS_VALUE_BITS 38 /* epoch << 40 | flag << 38 | value; flag 1 count, 2 prefix */
#define MAX_EPOCHS 64        /* passes a sort may take: 4 words of 8 digits, and to spare */
/* Launch bounds of a pass of 32-bit keys alone, 4 groups of TILE_T an SM:
 * ptxas keeps it to 64 registers, not 69 (H100: 0.623 -> 0.585 ms a pass of
 * 2^26 uint32); the index form runs best unbounded (docs/radix-sort.md). */
#define PASS_MIN_GROUPS 4

/* The digit of key kvar at shift svar (masked to the key's width) as a
 * uint32 expression: mask 255 (the pass's digit) or 15 (a split's). */
static void digit_expr(char *buf, size_t len, int kbits, const char *kvar, const char *svar,
                       int mask) {
    if (kbits == 64)
        snprintf(buf, len, "np.uint32((%s >> %s) & np.uint64(%d))", kvar, svar, mask);
    else
        snprintf(buf, len, "((%s >> %s) & np.uint32(%d))", kvar, svar, mask);
}

/* A tile's local sort by the nibble at shift svar: count (column l of sc,
 * nibble-major), raking scan, stable scatter. The keys (and indices) pass
 * through private arrays between the count and the scatter, and each key's
 * rank among the work-item's keys of its nibble (its column's count before
 * it, < 16) through the nibbles of rk: the scatter then only reads sc, so
 * its reads need not wait for each other. In the first split the scan also
 * turns hc, the tile's digit counts, into inclusive prefixes (no barrier of
 * its own). */
static void put_split(mod_text *t, const plan_t *p, const char *svar, bool with_idx, bool first) {
    const int T = TILE_T, K = (int)p->tile_k;
    char nib[96];
    digit_expr(nib, sizeof nib, p->kbits, "kk", svar, 15);
    mod_text_put(t,
                 "    for d in range(16):\n"
                 "        f = np.uint32(d * %d) + lu\n"
                 "        sc[f + (f >> np.uint32(4))] = np.uint32(0)\n"
                 "    ol.group_barrier(grp)\n"
                 "    rk = np.uint64(0)\n"
                 "    for j in range(%d):\n"
                 "        q = lu * np.uint32(%d) + np.uint32(j)\n"
                 "        kk = sk[q + (q >> np.uint32(5))]\n"
                 "        pk[j] = kk\n",
                 T, K, K);
    if (with_idx) mod_text_put(t, "        pi[j] = si[q + (q >> np.uint32(5))]\n");
    mod_text_put(t,
                 "        f = %s * np.uint32(%d) + lu\n"
                 "        c = f + (f >> np.uint32(4))\n"
                 "        v = sc[c]\n"
                 "        sc[c] = v + np.uint32(1)\n"
                 "        rk = rk | (np.uint64(v) << np.uint64(j * 4))\n"
                 "    ol.group_barrier(grp)\n"
                 "    r = np.uint32(0)\n"
                 "    for e in range(16):\n"
                 "        r += sc[lu * np.uint32(17) + np.uint32(e)]\n"
                 "    tot[lu] = r\n"
                 "    ol.group_barrier(grp)\n"
                 "    h = np.uint32(1)\n"
                 "    while h < np.uint32(%d):\n"
                 "        v = np.uint32(0)\n"
                 "%s"
                 "        if lu >= h:\n"
                 "            v = tot[lu - h]\n"
                 "%s"
                 "        ol.group_barrier(grp)\n"
                 "        tot[lu] = tot[lu] + v\n"
                 "%s"
                 "        ol.group_barrier(grp)\n"
                 "        h = h * np.uint32(2)\n"
                 "    r = tot[lu] - r\n"
                 "    for e in range(16):\n"
                 "        c = lu * np.uint32(17) + np.uint32(e)\n"
                 "        v = sc[c]\n"
                 "        sc[c] = r\n"
                 "        r += v\n"
                 "    ol.group_barrier(grp)\n"
                 "    for j in range(%d):\n"
                 "        kk = pk[j]\n"
                 "        f = %s * np.uint32(%d) + lu\n"
                 "        q = sc[f + (f >> np.uint32(4))] + np.uint32((rk >> np.uint64(j * 4)) & "
                 "np.uint64(15))\n"
                 "        sk[q + (q >> np.uint32(5))] = kk\n",
                 nib, T, T, first ? "        w = np.uint32(0)\n" : "",
                 first ? "            w = hc[lu - h]\n" : "",
                 first ? "        hc[lu] = hc[lu] + w\n" : "", K, nib, T);
    if (with_idx) mod_text_put(t, "        si[q + (q >> np.uint32(5))] = pi[j]\n");
    mod_text_put(t, "    ol.group_barrier(grp)\n");
}

/* pass_tiles's kernel text (name: its form; arg: whether the last pass
 * writes the values). */
static void pass_text(mod_text *t, const plan_t *p, const char *name, const void *arg) {
    bool with_idx = p->idx[p->cur] != NULL, values = *(const bool *)arg;
    const int T = TILE_T, K = (int)p->tile_k, TK = T * K, TKP = TK + TK / 32;
    const char *kt = mod_dtype_name(p->kdt), *it = with_idx ? mod_dtype_name(p->idt) : "";
    char dg[96];
    /* Local indices are uint32: no wrap of a negative index to pay for, and
     * 32-bit arithmetic. Each work-item's nibble counts live in its column
     * of sc (l fastest), not in a private array: Intel's CPU compiler gets
     * a private array indexed by digit wrong across these barriers
     * (measured). */
    mod_text_put(t,
                 "def %s(item, key, %sout, %sstarts, status, ctr, n, sh, sh4, ep, so):\n"
                 "    grp = item.get_group()\n"
                 "    l = item.get_local_id(0)\n"
                 "    lu = np.uint32(l)\n"
                 "    s0 = sh & np.%s(%d)\n"
                 "    s4 = sh4 & np.%s(%d)\n"
                 "    sk = ol.local_array(%d, np.%s)\n"
                 "    sc = ol.local_array(%d, np.uint32)\n"
                 "    tot = ol.local_array(%d, np.uint32)\n"
                 "    hc = ol.local_array(256, np.uint32)\n"
                 "    ds = ol.local_array(256, np.int64)\n"
                 "    tl = ol.local_array(1, np.int64)\n"
                 "    pk = ol.private_array(%d, np.%s)\n",
                 name, with_idx ? "idx, " : "", with_idx ? "idx2, " : "", kt, p->kbits - 1, kt,
                 p->kbits - 1, TKP, kt, 17 * T, T, K, kt);
    if (with_idx)
        mod_text_put(t,
                     "    si = ol.local_array(%d, np.%s)\n"
                     "    pi = ol.private_array(%d, np.%s)\n",
                     TKP, it, K, it);
    digit_expr(dg, sizeof dg, p->kbits, "k%d", "s0", 255);
    /* A whole tile's loads are all in flight at once (a pass is bound by
     * their latency: 0.732 -> 0.658 ms on an H100); a tile's tail is padded
     * with keys of all ones, which sort after every real key, so that the
     * splits need no bounds. */
    mod_text_put(t,
                 "    if l == 0:\n"
                 "        tl[0] = np.int64(ol.AtomicRef(ctr, ep).fetch_add(1))\n"
                 "    hc[lu] = np.uint32(0)\n"
                 "    ol.group_barrier(grp)\n"
                 "    g = tl[0]\n"
                 "    base = g * %d\n"
                 "    m = np.uint32(min(n - base, %d))\n"
                 "    if m == np.uint32(%d):\n",
                 TK, TK, TK);
    for (int j = 0; j < K; j++) {
        if (p->raw) {
            char kv[16], load[96];
            snprintf(kv, sizeof kv, "k%d", j);
            snprintf(load, sizeof load, "key[np.uint64(base + %d) + np.uint64(lu)]", j * T);
            put_key_of(t, p, "        ", load, kv);
        } else {
            mod_text_put(t, "        k%d = key[np.uint64(base + %d) + np.uint64(lu)]\n", j, j * T);
        }
        if (p->iota)
            mod_text_put(t, "        i%d = np.%s(base + %d) + np.%s(lu)\n", j, it, j * T, it);
        else if (with_idx)
            mod_text_put(t, "        i%d = idx[np.uint64(base + %d) + np.uint64(lu)]\n", j, j * T);
    }
    for (int j = 0; j < K; j++) {
        char d[96];
        snprintf(d, sizeof d, dg, j);
        int q = j * T;
        mod_text_put(t,
                     "        sk[np.uint32(%d) + lu + (lu >> np.uint32(5))] = k%d\n"
                     "        ol.AtomicRef(hc, %s).fetch_add(np.uint32(1))\n",
                     q + (q >> 5), j, d);
        if (with_idx)
            mod_text_put(t, "        si[np.uint32(%d) + lu + (lu >> np.uint32(5))] = i%d\n",
                         q + (q >> 5), j);
    }
    digit_expr(dg, sizeof dg, p->kbits, "k", "s0", 255);
    mod_text_put(t,
                 "    else:\n"
                 "        for j in range(%d):\n"
                 "            q = np.uint32(j * %d) + lu\n"
                 "            k = ~np.%s(0)\n"
                 "            if q < m:\n",
                 K, T, kt);
    if (p->raw)
        put_key_of(t, p, "                ", "key[np.uint64(base) + np.uint64(q)]", "k");
    else
        mod_text_put(t, "                k = key[np.uint64(base) + np.uint64(q)]\n");
    mod_text_put(t,
                 "                ol.AtomicRef(hc, %s).fetch_add(np.uint32(1))\n"
                 "            sk[q + (q >> np.uint32(5))] = k\n",
                 dg);
    if (p->iota)
        mod_text_put(t, "            si[q + (q >> np.uint32(5))] = np.%s(base) + np.%s(q)\n", it,
                     it);
    else if (with_idx)
        mod_text_put(t, "            if q < m:\n"
                        "                si[q + (q >> np.uint32(5))] = idx[np.uint64(base) + "
                        "np.uint64(q)]\n");
    /* The look-back, work-item l for digit l: the tile's count is published
     * now; the walk over the tiles before waits until the tile is sorted,
     * so that their prefixes have had that long to arrive (H100: 3% less a
     * pass, 4% less an argsort than walking first). */
    mod_text_put(t,
                 "    ol.group_barrier(grp)\n"
                 "    cn = np.int64(hc[lu])\n"
                 "    ev = np.int64(ep) << np.int64(40)\n"
                 "    me = np.uint64(g * 256) + np.uint64(lu)\n"
                 "    fl = np.int64(1)\n"
                 "    if g == 0:\n"
                 "        fl = np.int64(2)\n"
                 "    ol.AtomicRef(status, me).store(ev | (fl << np.int64(%d)) | cn)\n",
                 STATUS_VALUE_BITS);
    put_split(t, p, "s0", with_idx, true);
    put_split(t, p, "s4", with_idx, false);
    /* hc now holds inclusive prefixes: digit l's first position in the
     * sorted tile is hc[l] - cn */
    mod_text_put(
        t,
        "    pre = np.int64(0)\n"
        "    if g != 0:\n"
        "        j = g - 1\n"
        "        while j >= 0:\n"
        "            sw = ol.AtomicRef(status, np.uint64(j * 256) + np.uint64(lu)).load()\n"
        "            if (sw >> np.int64(40)) == np.int64(ep):\n"
        "                pre += sw & np.int64(%lld)\n"
        "                if ((sw >> np.int64(%d)) & np.int64(3)) == np.int64(2):\n"
        "                    j = np.int64(-1)\n"
        "                else:\n"
        "                    j -= 1\n"
        "        ol.AtomicRef(status, me).store(ev | (np.int64(2) << np.int64(%d)) | "
        "(pre + cn))\n"
        "    ds[lu] = starts[so + l] + pre - (np.int64(hc[lu]) - cn)\n"
        "    ol.group_barrier(grp)\n",
        (long long)((1LL << STATUS_VALUE_BITS) - 1), STATUS_VALUE_BITS, STATUS_VALUE_BITS);
    /* the sorted tile, written out coalesced */
    mod_text_put(t,
                 "    for j in range(%d):\n"
                 "        q = np.uint32(j * %d) + lu\n"
                 "        if q < m:\n"
                 "            k = sk[q + (q >> np.uint32(5))]\n"
                 "            o = np.uint64(ds[%s] + np.int64(q))\n",
                 K, T, dg);
    if (values) {
        put_inverse(t, p, "            ");
        mod_text_put(t, "            out[o] = w\n");
    } else {
        mod_text_put(t, "            out[o] = k\n");
    }
    if (with_idx) mod_text_put(t, "            idx2[o] = si[q + (q >> np.uint32(5))]\n");
}

static int pass_tiles(plan_t *p, int sh, bool last) {
    PyObject *key = p->raw ? p->raw : p->key[p->cur], *idx = p->idx[p->cur];
    PyObject *key2 = p->key[!p->cur], *idx2 = p->idx[!p->cur];
    bool with_idx = idx != NULL, values = last && p->out;
    if (++p->epoch >= MAX_EPOCHS) {
        PyErr_SetString(PyExc_SystemError, "offload: a sort took more passes than planned");
        return -1;
    }
    char name[80];
    snprintf(name, sizeof name, "sort_tile_pass_%d%s%s%s", (int)p->tile_k,
             p->iota    ? "_iota"
             : with_idx ? "_idx"
                        : "",
             p->raw ? "_raw" : "", values ? "_values" : "");
    PyObject *k = sort_kernel(p, name, pass_text, &values);
    if (!k) return -1;
    argv_t av = {.n = 0};
    arg_obj(&av, key);
    if (with_idx) arg_obj(&av, idx);
    arg_obj(&av, values ? p->out : key2);
    if (with_idx) arg_obj(&av, last && p->pos ? p->pos : idx2);
    arg_obj(&av, p->hist);
    arg_obj(&av, p->status);
    arg_obj(&av, p->ctr);
    arg_int(&av, p->N);
    arg_typed(&av, p->kdt, sh);
    arg_typed(&av, p->kdt, sh + 4);
    arg_int(&av, p->epoch);
    arg_int(&av, 256 * (sh / 8));
    int groups = !with_idx && p->kbits == 32 ? PASS_MIN_GROUPS : 0;
    if (run(k, p->ntiles * TILE_T, TILE_T, groups, &av) < 0) return -1;
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
 * than 16: put_split keeps each key's rank in 4 bits of one 64-bit word. */
static Py_ssize_t tile_keys(ofl_device *dev, Py_ssize_t ksz, Py_ssize_t isz) {
    uint64_t lm = ofl_device_get_info(dev)->local_mem_size;
    if (lm > 48 * 1024) lm = 48 * 1024;
    Py_ssize_t K = 16;
    while (K > 1 &&
           (uint64_t)(TILE_T * K * 33 / 32 * (ksz + isz) + 19 * TILE_T * 4 + 256 * 8 + 64) > lm)
        K /= 2;
    return K;
}

#define RES_WORDS 5 /* keys_alone_keys's reductions; keys_grouped uses 2 */

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

/* p's form, buffers (indices too when with_idx) and counts; -1 on failure
 * (plan_free frees what there is). */
static int plan_init(plan_t *p, ofl_device *dev, Py_ssize_t N, Py_ssize_t n, bool wide,
                     bool with_idx) {
    *p = (plan_t){.dev = dev, .N = N, .n = n};
    p->tiles = use_tiles(dev);
    p->digit_bits = 8;
    p->kbits = wide ? 64 : 32;
    p->kdt = mod_dtype_find_borrowed('u', wide ? 8 : 4);
    p->idt = mod_dtype_find_borrowed('i', N < ((Py_ssize_t)1 << 31) ? 4 : 8);
    Py_ssize_t hn;
    p->fresh = true;
    if (p->tiles) {
        p->tile_k = tile_keys(dev, wide ? 8 : 4, with_idx ? mod_dtype_itemsize(p->idt) : 0);
        p->ntiles = (N + TILE_T * p->tile_k - 1) / (TILE_T * p->tile_k);
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
    mod_text t;
    t.n = 0;
    mod_text_put(&t,
                 "def sort_iota(it, idx):\n"
                 "    i = it.get_id(0)\n"
                 "    idx[i] = np.%s(i)\n",
                 mod_dtype_name(p->idt));
    argv_t av = {.n = 0};
    arg_obj(&av, p->idx[p->cur]);
    p->iota = false;
    return launch("sort_iota", &t, p->N, 0, &av);
}

/* The sorted order of c (C-contiguous, N elements in rows of n): a new 1-D
 * array (int32 or int64) of flat indices into c, row by row; or pos (a new
 * reference: an int64 array of N) where the last pass wrote them there --
 * one row of a real dtype with at least one pass. */
static PyObject *radix_order(mod_array *c, Py_ssize_t N, Py_ssize_t n, bool descending,
                             PyObject *pos) {
    ofl_device *dev = mod_array_device(c);
    PyObject *dtype = c->dtype;
    char kind = kind_of(dtype);
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
        if (bitsv)
            Py_SETREF(((mod_array *)bitsv)->dtype, Py_NewRef(mod_dtype_find_borrowed('u', half)));
    } else {
        x = flat_view(c, N, NULL);
        bitsv = x && kind == 'f' ? flat_view(c, N, mod_dtype_find_borrowed('u', c->itemsize))
                                 : Py_XNewRef(x);
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
        mod_text body, t;
        body.n = t.n = 0;
        char name[64];
        p.iota = p.tiles && w == 0;
        key_body(&body, dtype, words[w], descending && words[w] != W_ROW, w == 0, p.iota, p.kdt,
                 p.idt, name, sizeof name);
        uint64_t mask;
        int bits = words[w] == W_CLASS ? 2 : wide ? 64 : 32;
        if (p.tiles) {
            if (keys_grouped(&p, &body, name, x, bitsv, n, bits, &mask) < 0) goto out;
        } else {
            mod_text_put(&t, "def %s(it, x, bits, key, idx, n):\n    i = it.get_id(0)\n%s", name,
                         body.s);
            argv_t av = {.n = 0};
            arg_obj(&av, x);
            arg_obj(&av, bitsv);
            arg_obj(&av, p.key[p.cur]);
            arg_obj(&av, p.idx[p.cur]);
            arg_int(&av, n);
            if (launch(name, &t, N, 0, &av) < 0 || varying_bits(&p, &mask) < 0) goto out;
        }
        if (passes(&p, mask, bits) < 0 || (p.iota && write_iota(&p) < 0)) goto out;
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
 * pass turns back into values (an invertible map: put_key_of, put_inverse),
 * where that is exact: not where -0.0 and +0.0, or NaNs of different bits,
 * occur together (equal in NumPy's order, not in bits). The key kernel
 * reports those, and the index form sorts them. The maps:
 * docs/radix-sort.md */

/* keys_alone_keys's work on value bits u, at indent ind: k, the flags and
 * NaN keys, the ORs, and key[i] = k (runs form) or k into the runs (tiles). */
static void put_alone_key(mod_text *t, const plan_t *p, const char *ind, bool grouped) {
    const char *kt = mod_dtype_name(p->kdt);
    int kb = p->kbits;
    put_key_of(t, p, ind, "u", "k");
    if (p->vfloat) {
        char inf[96], absm[96];
        const_expr(inf, sizeof inf, kb, kb == 64 ? 0x7ff0000000000000ULL : 0x7f800000ULL);
        const_expr(absm, sizeof absm, kb, (1ULL << (kb - 1)) - 1);
        mod_text_put(t,
                     "%sm = u & %s\n"
                     "%sif m > %s:\n"
                     "%s    fl = fl | np.%s(4)\n"
                     "%s    no = no | k\n"
                     "%s    nz = nz | ~k\n"
                     "%selif m == np.%s(0):\n"
                     "%s    if u == np.%s(0):\n"
                     "%s        fl = fl | np.%s(2)\n"
                     "%s    else:\n"
                     "%s        fl = fl | np.%s(1)\n",
                     ind, absm, ind, inf, ind, kt, ind, ind, ind, kt, ind, kt, ind, kt, ind, ind,
                     kt);
    }
    if (!grouped) mod_text_put(t, "%skey[np.uint64(i)] = k\n", ind);
    mod_text_put(t, "%so = o | k\n%sz = z | ~k\n", ind, ind);
    if (grouped) put_group_key(t, kt, kb / 8, ind);
}

/* The tiles form's key kernel of keys alone: ALONE_UNROLL loads a
 * work-item in flight, in KEY_GROUPS groups a compute unit, launched with
 * that bound, all resident at once (1024 groups of one load at a time:
 * 0.15 ms more for 2^26 float32 on an H100). */
#define ALONE_UNROLL 8
#define KEY_GROUPS 4

/* keys_alone_keys's kernel text (name: its form). */
static void alone_text(mod_text *t, const plan_t *p, const char *name, const void *unused) {
    (void)unused;
    const char *kt = mod_dtype_name(p->kdt);
    bool grouped = p->tiles;
    const int U = ALONE_UNROLL, npos = p->kbits / 8;
    mod_text_put(t, "def %s(item, bits, %sres, %sn, a, b, per):\n", name, grouped ? "" : "key, ",
                 grouped ? "gh, " : "");
    if (grouped) {
        mod_text_put(t, "    grp = item.get_group()\n"
                        "    l = item.get_local_id(0)\n"
                        "    g = item.get_global_id(0)\n");
        put_group_start(t, kt, RES_WORDS, npos);
    } else {
        mod_text_put(t, "    g = item.get_id(0)\n");
    }
    mod_text_put(t,
                 "    o = np.%s(0)\n"
                 "    z = np.%s(0)\n"
                 "    fl = np.%s(0)\n"
                 "    no = np.%s(0)\n"
                 "    nz = np.%s(0)\n"
                 "    for j in range(per):\n",
                 kt, kt, kt, kt, kt);
    if (grouped) { /* U keys a step, a apart; all U loads first */
        mod_text_put(t,
                     "        i = g + j * b\n"
                     "        if i + %d * a < n:\n",
                     U - 1);
        for (int e = 0; e < U; e++)
            mod_text_put(t, "            u%d = np.%s(bits[np.uint64(i + %d * a)])\n", e, kt, e);
        for (int e = 0; e < U; e++) {
            mod_text_put(t, "            u = u%d\n", e);
            put_alone_key(t, p, "            ", true);
        }
        mod_text_put(t,
                     "        else:\n"
                     "            for e in range(%d):\n"
                     "                if i + e * a < n:\n"
                     "                    u = np.%s(bits[np.uint64(i + e * a)])\n",
                     U, kt);
        put_alone_key(t, p, "                    ", true);
    } else {
        mod_text_put(t,
                     "        i = g * a + j * b\n"
                     "        if i < n:\n"
                     "            u = np.%s(bits[np.uint64(i)])\n",
                     kt);
        put_alone_key(t, p, "            ", false);
    }
    const char *dst = grouped ? "lr" : "res";
    mod_text_put(t,
                 "    ol.AtomicRef(%s, 0).fetch_or(o)\n"
                 "    ol.AtomicRef(%s, 1).fetch_or(z)\n"
                 "    ol.AtomicRef(%s, 2).fetch_or(fl)\n"
                 "    ol.AtomicRef(%s, 3).fetch_or(no)\n"
                 "    ol.AtomicRef(%s, 4).fetch_or(nz)\n",
                 dst, dst, dst, dst, dst);
    if (grouped) put_group_end(t, RES_WORDS, npos);
}

/* The key kernel of a sort of keys alone: key[i] from the bits of element
 * i, and into res (zeroed; ORs of the keys, of their complements, of
 * flags, of NaN keys, of their complements: as fold_bits's) what tells the
 * passes and whether keys alone are exact. flags: 1 -0.0, 2 +0.0, 4 NaN.
 * In the tiles form groups reduce in local memory first and count the
 * histogram (put_group_*), and the digit starts follow; there no key is
 * written (p->raw): the first pass makes them up as it loads the bits,
 * which saves writing and reading them once (0.1 ms of 2^26 float32). */
static int keys_alone_keys(plan_t *p, PyObject *bits, int vbits, bool descending) {
    bool grouped = p->tiles;
    Py_ssize_t G, a, b, per, local = 0;
    if (grouped) {
        Py_ssize_t units = ofl_device_get_info(p->dev)->max_compute_units;
        grouped_range(p, (units > 0 ? units : 1) * KEY_GROUPS, &G, &per);
        local = 256, a = G, b = ALONE_UNROLL * G, per = (per + ALONE_UNROLL - 1) / ALONE_UNROLL;
    } else {
        G = p->runs, per = p->per, a = per, b = 1;
    }
    char name[64];
    snprintf(name, sizeof name, "sort_keys_alone_%s%d%s%s", p->vfloat ? "f" : "u", vbits,
             descending ? "_desc" : "", grouped ? "_grouped" : "");
    PyObject *k = sort_kernel(p, name, alone_text, NULL);
    if (!k || clear_counts(p) < 0) return -1;
    argv_t av = {.n = 0};
    arg_obj(&av, bits);
    if (!grouped) arg_obj(&av, p->key[0]);
    arg_obj(&av, p->res);
    if (grouped) arg_obj(&av, p->hist);
    arg_int(&av, p->N);
    arg_int(&av, a);
    arg_int(&av, b);
    arg_int(&av, per);
    int rc = run(k, G, local, grouped ? KEY_GROUPS : 0, &av);
    if (grouped) p->raw = bits;
    return rc == 0 && grouped ? tile_starts(p, p->kbits) : rc;
}

/* out = the keys' values (their bits), when no pass wrote them: from the
 * keys, or the values' bits where no key was written (keys and back, as a
 * pass would have them). */
static int keys_to_values(plan_t *p) {
    mod_text t;
    t.n = 0;
    const char *name = p->raw ? "sort_bits_values" : "sort_keys_values";
    mod_text_put(&t,
                 "def %s(it, key, out):\n"
                 "    i = it.get_id(0)\n",
                 name);
    if (p->raw)
        put_key_of(&t, p, "    ", "key[i]", "k");
    else
        mod_text_put(&t, "    k = key[i]\n");
    put_inverse(&t, p, "    ");
    mod_text_put(&t, "    out[i] = w\n");
    argv_t av = {.n = 0};
    arg_obj(&av, p->raw ? p->raw : p->key[p->cur]);
    arg_obj(&av, p->out);
    return launch(name, &t, p->N, 0, &av);
}

/* The sorted values of c (C-contiguous, one row of N > 0 elements, not
 * complex): a new 1-D array, or Py_None (a new reference) where keys alone
 * would not be exact (then the index form sorts). OFFLOAD_SORT_KEYS=index
 * always answers None (tests). */
static PyObject *radix_values(mod_array *c, Py_ssize_t N, bool descending) {
    const char *f = getenv("OFFLOAD_SORT_KEYS");
    char kind = kind_of(c->dtype);
    if ((f && !strcmp(f, "index")) || kind == 'c') Py_RETURN_NONE;
    ofl_device *dev = mod_array_device(c);
    int vbits = (int)c->itemsize * 8;
    bool wide = vbits == 64, vfloat = kind == 'f';
    PyObject *udt = mod_dtype_find_borrowed('u', c->itemsize);
    plan_t p;
    PyObject *bits = NULL, *h = NULL, *outv = NULL, *result = NULL;
    if (plan_init(&p, dev, N, N, wide, false) < 0) goto out;
    p.vfloat = vfloat;
    p.vdt = mod_dtype_name(udt);
    uint64_t all = wide ? ~0ULL : 0xffffffffULL;
    if (vfloat)
        p.vxor = descending ? all : 0;
    else
        p.vxor = (kind == 'i' ? 1ULL << (vbits - 1) : 0) ^
                 (descending ? (vbits == 64 ? ~0ULL : (1ULL << (kind == 'b' ? 1 : vbits)) - 1) : 0);
    if (!(bits = flat_view(c, N, udt))) goto out;
    if (keys_alone_keys(&p, bits, vbits, descending) < 0 ||
        !(h = mod_array_asnumpy((mod_array *)p.res)))
        goto out;
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
    mod_text t;
    t.n = 0;
    const char *name = positions ? "sort_positions" : "sort_gather";
    mod_text_put(&t, "def %s(it, out, x, idx, n):\n    i = it.get_id(0)\n", name);
    mod_text_put(&t,
                 positions ? "    out[i] = idx[i] %% n\n" : "    out[i] = x[np.uint64(idx[i])]\n");
    argv_t av = {.n = 0};
    arg_obj(&av, out);
    arg_obj(&av, x);
    arg_obj(&av, idx);
    arg_int(&av, n);
    return launch(name, &t, N, 0, &av);
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
    mod_array *x = mod_lib_array_arg(xo, fn);
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
        mod_lib_axis_error(a, x->nd, NULL);
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
    if (d && kind_of(d) == 'b') Py_SETREF(d, Py_NewRef(mod_dtype_find_borrowed('u', 1)));
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
    mod_array *x1 = mod_lib_array_arg(x1o, "searchsorted");
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
                                        (PyComplex_Check(x2o) && kind_of(x1->dtype) == 'c')
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
        mod_array *s = mod_lib_array_arg(sorter_o, "searchsorted");
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
        if (kind_of(s->dtype) != 'i' && kind_of(s->dtype) != 'u') {
            PyErr_SetString(PyExc_TypeError, "sorter must only contain integers");
            goto done;
        }
        /* a = x1[sorter], in the common dtype. NumPy does not check
         * sorter's indices; here an index out of range reads x1's nearest
         * end rather than memory past it (negative ones count from the end) */
        PyObject *sc = mod_ops_copy(s, int64_dtype());
        PyObject *x1c = sc ? mod_ops_copy(x1, dt) : NULL;
        a = x1c ? new_1d(dev, dt, n) : NULL;
        mod_text t;
        t.n = 0;
        mod_text_put(&t, "def searchsorted_sorter(it, out, x, s, n):\n"
                         "    i = it.get_id(0)\n"
                         "    j = s[i]\n"
                         "    if j < 0:\n"
                         "        j += n\n"
                         "    j = min(max(j, 0), n - 1)\n"
                         "    out[i] = x[np.uint64(j)]\n");
        argv_t av = {.n = 0};
        arg_obj(&av, a);
        arg_obj(&av, x1c);
        arg_obj(&av, sc);
        arg_int(&av, n);
        int rc = a ? launch("searchsorted_sorter", &t, n, 0, &av) : (args_clear(&av), -1);
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
        /* lt(p, q): p before q in NumPy's sort order, NaN last */
        const char *lt = kind_of(dt) != 'i' && kind_of(dt) != 'u'
                             ? "(%s < %s or (%s != %s and %s == %s))"
                             : "%s < %s";
        char cond[160];
        if (kind_of(dt) != 'i' && kind_of(dt) != 'u')
            snprintf(cond, sizeof cond, lt, right ? "x" : "y", right ? "y" : "x", right ? "y" : "x",
                     right ? "y" : "x", right ? "x" : "y", right ? "x" : "y");
        else
            snprintf(cond, sizeof cond, lt, right ? "x" : "y", right ? "y" : "x");
        mod_text t;
        t.n = 0;
        char name[64];
        snprintf(name, sizeof name, "searchsorted_%s_%s", right ? "right" : "left",
                 mod_dtype_name(dt));
        mod_text_put(&t,
                     "def %s(it, out, a, v, n):\n"
                     "    i = it.get_id(0)\n"
                     "    x = v[i]\n"
                     "    lo = np.int64(0)\n"
                     "    hi = n\n"
                     "    while lo < hi:\n"
                     "        mid = (lo + hi) // 2\n"
                     "        y = a[np.uint64(mid)]\n",
                     name);
        if (kind_of(dt) == 'c') {
            /* NumPy's complex order (npysort's CLT): lexicographic, then
             * NaN imag (by real), NaN real (by imag), both NaN */
            const char *p = right ? "x" : "y", *q = right ? "y" : "x";
            mod_text_put(&t,
                         "        pr = %s.real\n"
                         "        pi = %s.imag\n"
                         "        qr = %s.real\n"
                         "        qi = %s.imag\n"
                         "        if pr < qr:\n"
                         "            b = pi == pi or qi != qi\n"
                         "        elif pr > qr:\n"
                         "            b = qi != qi and pi == pi\n"
                         "        elif pr == qr or (pr != pr and qr != qr):\n"
                         "            b = pi < qi or (qi != qi and pi == pi)\n"
                         "        else:\n"
                         "            b = qr != qr\n",
                         p, p, q, q);
        } else {
            mod_text_put(&t, "        b = %s\n", cond);
        }
        mod_text_put(&t,
                     "        if %sb:\n"
                     "            lo = mid + 1\n"
                     "        else:\n"
                     "            hi = mid\n"
                     "    out[i] = lo\n",
                     right ? "not " : "");
        argv_t av = {.n = 0};
        arg_obj(&av, outflat);
        arg_obj(&av, a);
        arg_obj(&av, vflat);
        arg_int(&av, n);
        if (launch(name, &t, M, 0, &av) < 0) goto done;
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
    mod_array *x = mod_lib_array_arg(xo, fns[what]);
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
        /* g[i]: 1 where sv[i] starts a run of equal values (NaN != NaN);
         * g[N] = 0, so that its exclusive scan ends with the count */
        mod_text t;
        t.n = 0;
        mod_text_put(&t, "def unique_marks(it, g, sv, n):\n"
                         "    i = it.get_id(0)\n"
                         "    if i == 0:\n"
                         "        g[i] = 1\n"
                         "        g[n] = 0\n"
                         "    elif sv[i] != sv[np.uint64(i - 1)]:\n"
                         "        g[i] = 1\n"
                         "    else:\n"
                         "        g[i] = 0\n");
        argv_t av = {.n = 0};
        arg_obj(&av, g);
        arg_obj(&av, sv);
        arg_int(&av, N);
        if (launch("unique_marks", &t, N, 0, &av) < 0 || exclusive_scan((mod_array *)g, N + 1) < 0)
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
    if (N > 0 && !more) {
        mod_text t;
        t.n = 0;
        mod_text_put(&t, "def unique_values_scatter(it, sv, g, values):\n"
                         "    i = it.get_id(0)\n"
                         "    first = i == 0\n"
                         "    if i > 0:\n"
                         "        first = sv[i] != sv[np.uint64(i - 1)]\n"
                         "    if first:\n"
                         "        values[np.uint64(g[i])] = sv[i]\n");
        argv_t av = {.n = 0};
        arg_obj(&av, sv);
        arg_obj(&av, g);
        arg_obj(&av, values);
        if (launch("unique_values_scatter", &t, N, 0, &av) < 0) goto done;
    } else if (N > 0) {
        if (!(inv_flat = flat_view((mod_array *)inverse, N, NULL))) goto done;
        mod_text t;
        t.n = 0;
        mod_text_put(&t, "def unique_scatter(it, sv, order, g, values, indices, starts, inverse):\n"
                         "    i = it.get_id(0)\n"
                         "    j = g[i]\n"
                         "    first = i == 0\n"
                         "    if i > 0:\n"
                         "        first = sv[i] != sv[np.uint64(i - 1)]\n"
                         "    p = order[i]\n"
                         "    if first:\n"
                         "        values[np.uint64(j)] = sv[i]\n"
                         "        indices[np.uint64(j)] = p\n"
                         "        starts[np.uint64(j)] = i\n"
                         "        inverse[np.uint64(p)] = j\n"
                         "    else:\n"
                         "        inverse[np.uint64(p)] = j - 1\n");
        argv_t av = {.n = 0};
        arg_obj(&av, sv);
        arg_obj(&av, order);
        arg_obj(&av, g);
        arg_obj(&av, values);
        arg_obj(&av, indices);
        arg_obj(&av, starts);
        arg_obj(&av, inv_flat);
        if (launch("unique_scatter", &t, N, 0, &av) < 0) goto done;
        t.n = 0;
        mod_text_put(&t, "def unique_counts(it, counts, starts, m, n):\n"
                         "    j = it.get_id(0)\n"
                         "    e = n\n"
                         "    if j + 1 < m:\n"
                         "        e = starts[np.uint64(j + 1)]\n"
                         "    counts[j] = e - starts[j]\n");
        arg_obj(&av, counts);
        arg_obj(&av, starts);
        arg_int(&av, m);
        arg_int(&av, N);
        if (launch("unique_counts", &t, m, 0, &av) < 0) goto done;
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

#define KWFUNC(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef functions[] = {
    {"sort", KWFUNC(f_sort),
     "sort(x, /, axis=-1, kind=None, order=None, *, descending=False, stable=None) -> ndarray\n\n"
     "A sorted copy of x along axis (None: the flattened array), on x's device. Always stable; "
     "NaNs last (first when descending: the ascending order reversed, ties kept in order). "
     "Complex numbers in NumPy's order (real, then imag; NaN parts last). kind= is accepted for "
     "NumPy's sake; order= must be None."},
    {"argsort", KWFUNC(f_argsort),
     "argsort(x, /, axis=-1, kind=None, order=None, *, descending=False, stable=None) -> int64 "
     "ndarray\n\nThe indices that sort x along axis, as sort orders it: equal elements keep "
     "their order, also when descending."},
    {"searchsorted", KWFUNC(f_searchsorted),
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
    {"sort", KWFUNC(m_sort),
     "sort(axis=-1, kind=None, order=None, *, descending=False, stable=None) -> None\n\nSorts "
     "the array in place along axis, as offload.sort."},
    {"argsort", KWFUNC(m_argsort),
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
