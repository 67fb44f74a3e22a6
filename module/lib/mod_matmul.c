/* mod_matmul: offload.matmul(a, b) and the @ operator on offload arrays.
 *
 * Owns NumPy's matmul rules (1-D operands as a row or a column whose
 * dimension leaves the result, stacks of matrices broadcast, the result
 * dtype, the error messages), the refusal to mix with host data, and the
 * choice of who computes a float product: cuBLAS on a CUDA device (one
 * strided-batched call through mod_vendor), NumPy's BLAS on an OpenCL CPU
 * device's buffers mapped in place (that memory is the host's, and OpenBLAS
 * beats any kernel there), else -- integers, other devices, or
 * OFFLOAD_MATMUL=kernel -- the kernel below, launched once per matrix of a
 * stack. Nothing here waits for the device but the host copies.
 *
 * Called by: mod_lib_add_functions (offload.matmul) and ndarray's
 * nb_matrix_multiply slot (mod_matmul_operator, set by mod_lib.c), which also
 * serves the reflected form: CPython calls the slot with the offload array
 * on either side.
 *
 * The kernel: a tiled nd-range kernel written here as Python text, compiled
 * through mod_gen (once per text) and specialised by the JIT per operand
 * dtypes and layouts (a C-contiguous operand gets the contiguous
 * specialisation). A work-group of TY x TX work-items computes a BM x BN block of
 * the result (BM = TY*TM, BN = TX*TN): each work-item a TM x TN register
 * block, held in scalar locals the text names one by one (c0_0 ... ), so no
 * compiler has to prove a private array's indices constant. Per BK-wide
 * step along k the group copies a BM x BK slab of a and a BK x BN slab of b
 * into local memory (zeros past the edges, so any m, n, k work and the
 * inner loop has no bounds tests), waits at a barrier, and each work-item
 * reads TM + TN values per k and does TM*TN multiply-adds (offload.fma for
 * floats: one instruction each). The a slab is
 * stored transposed (k-major) so both reads in the inner loop are runs of
 * consecutive elements (vector loads on CUDA); rows are padded by 4
 * elements so the transposing stores do not collide in shared-memory banks.
 * Copies into local memory walk each operand along its smaller stride, so
 * a transposed view (.T) still reads memory in runs. Index arithmetic is
 * done in uint64: unsigned indices need no negative-index wrap-around, and
 * divisions by the (power of two) tile sizes are shifts. Row blocks beyond
 * CUDA's 65535 grid rows are walked by a loop over the groups' rows.
 *
 * On a device whose compiler makes vectors of neighbouring work-items
 * (Intel's CPU runtime) the CPU form of module/kernels/matmul.py serves
 * instead, unless b is walked by columns; that file says why.
 *
 * The tiling per device is choose_tiles'; OFFLOAD_MATMUL_TILES overrides it
 * (a knob for tuning on a device, read at each product; it implies the
 * kernel), and the private offload._matmul_source shows the text a product
 * would run. */
#include "mod_lib.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MM_PAD 4                /* elements added to each local row (bank conflicts) */
#define MM_MAX_ROW_GROUPS 32768 /* row blocks launched; more are looped over */

/* The tiling of one kernel text. */
typedef struct {
    int ty, tx;              /* work-group: TY rows x TX columns of work-items */
    int tm, tn;              /* register block of each work-item */
    int bk;                  /* k step (elements of k per local slab) */
    bool a_by_col, b_by_col; /* copy the slab walking dimension 0 fastest (a .T view) */
    bool ahead;              /* read the next slabs during the multiply (more registers) */
} mm_tiles;

/* ---- the kernel text ---- */

typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} mm_text;

static void put(mm_text *t, const char *fmt, ...) {
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if (t->s && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap ? t->cap * 2 : 16384) + (size_t)n;
        char *s = PyMem_Realloc(t->s, cap);
        if (!s) {
            t->failed = true;
            return;
        }
        t->s = s, t->cap = cap;
    }
}

/* One operand's slab: rows x cols elements (rows along the operand's
 * dimension 0), nt work-items each taking every nt-th (nt divides the
 * count). Work-item t's share sits at fixed places in the slab, named once
 * (<i><p>, <j><p>); by_col walks the slab's dimension 0 fastest. */
typedef struct {
    const char *arr, *local, *i, *j,
        *v; /* names: operand, local array, slab row, slab column, value */
    int rows, cols, per_item;
    bool by_col, local_transposed; /* local_transposed: local[j, i] */
} mm_slab;

static void put_slab_places(mm_text *t, const mm_slab *s, int nt) {
    for (int p = 0; p < s->per_item; p++) {
        char e[32];
        snprintf(e, sizeof e, p ? "(t + %d)" : "t", p * nt);
        if (s->by_col)
            put(t, "    %s%d = %s %% %d\n    %s%d = %s // %d\n", s->i, p, e, s->rows, s->j, p, e,
                s->rows);
        else
            put(t, "    %s%d = %s // %d\n    %s%d = %s %% %d\n", s->i, p, e, s->cols, s->j, p, e,
                s->cols);
    }
}

/* The share's values read into registers (zeros past the operand's edges),
 * the slab starting at (row0, col0) of the operand; "0" as an origin is left out. */
static void put_slab_fetch(mm_text *t, const mm_slab *s, const char *ind, const char *row0,
                           const char *rows_end, const char *col0, const char *cols_end) {
    for (int p = 0; p < s->per_item; p++) {
        char r[64], c[64];
        snprintf(r, sizeof r, strcmp(row0, "0") ? "%s + %s%d" : "%.0s%s%d", row0, s->i, p);
        snprintf(c, sizeof c, strcmp(col0, "0") ? "%s + %s%d" : "%.0s%s%d", col0, s->j, p);
        put(t, "%s%s%d = %s[%s, %s] if %s < %s and %s < %s else 0\n", ind, s->v, p, s->arr, r, c, r,
            rows_end, c, cols_end);
    }
}

static void put_slab_store(mm_text *t, const mm_slab *s, const char *ind) {
    for (int p = 0; p < s->per_item; p++) {
        if (s->local_transposed)
            put(t, "%s%s[%s%d, %s%d] = %s%d\n", ind, s->local, s->j, p, s->i, p, s->v, p);
        else
            put(t, "%s%s[%s%d, %s%d] = %s%d\n", ind, s->local, s->i, p, s->j, p, s->v, p);
    }
}

/* Python text of `def name(item, a, b, c)`: c = a @ b for 2-D a (m x k),
 * b (k x n), c (m x n), accumulating in dtype (c's, or a wider integer
 * type: integer products and sums wrap the same modulo 2^8 (2^16) whether
 * they are computed in 8 (16) or 32 bits, so the store's truncation gives
 * NumPy's result). With z->ahead the next slabs are read into registers
 * while the current ones are multiplied, so global memory's latency hides
 * behind arithmetic; one barrier guards each side of the local slabs' use. */
static char *kernel_text(const char *name, const char *dtype, const mm_tiles *z) {
    int bm = z->ty * z->tm, bn = z->tx * z->tn, nt = z->ty * z->tx;
    /* a work-item's columns come in runs of (at most) 4, the runs TX * 4 apart:
     * a quarter-warp's 128-bit reads of Bs then cover 128 consecutive bytes,
     * one per bank, and its stores to c are runs too */
    int chunk = z->tn < 4 ? z->tn : 4;
#define COL_OFFSET(j) ((j) / chunk * z->tx * chunk + (j) % chunk)
    mm_slab sa = {.arr = "a",
                  .local = "As",
                  .i = "ia",
                  .j = "ka",
                  .v = "va",
                  .rows = bm,
                  .cols = z->bk,
                  .per_item = bm * z->bk / nt,
                  .by_col = z->a_by_col,
                  .local_transposed = true};
    mm_slab sb = {.arr = "b",
                  .local = "Bs",
                  .i = "kb",
                  .j = "jb",
                  .v = "vb",
                  .rows = z->bk,
                  .cols = bn,
                  .per_item = bn * z->bk / nt,
                  .by_col = z->b_by_col};
    mm_text t = {0};
    put(&t, "def %s(item, a, b, c):\n", name);
    put(&t, "    ty = ol.uint64(item.get_local_id(0))\n");
    put(&t, "    tx = ol.uint64(item.get_local_id(1))\n");
    put(&t, "    t = ty * %d + tx\n", z->tx);
    put(&t, "    ti = ty * %d\n", z->tm); /* the work-item's block: rows ti.., columns from tj */
    put(&t, "    tj = tx * %d\n", chunk);
    put(&t, "    g = item.get_group()\n");
    put(&t, "    m = ol.uint64(c.shape[0])\n");
    put(&t, "    n = ol.uint64(c.shape[1])\n");
    put(&t, "    k = ol.uint64(a.shape[1])\n");
    put(&t, "    col0 = ol.uint64(g.get_group_id(1)) * %d\n", bn);
    put(&t, "    As = ol.local_array((%d, %d), np.%s)\n", z->bk, bm + MM_PAD, dtype);
    put(&t, "    Bs = ol.local_array((%d, %d), np.%s)\n", z->bk, bn + MM_PAD, dtype);
    put_slab_places(&t, &sa, nt);
    put_slab_places(&t, &sb, nt);
    /* the outer loop: more row blocks than the grid has rows (CUDA: 65535) */
    put(&t,
        "    for rb in range(ol.uint64(g.get_group_id(0)), (m + %d) // %d, "
        "ol.uint64(g.get_group_range(0))):\n",
        bm - 1, bm);
    put(&t, "        row0 = rb * %d\n", bm);
    for (int r = 0; r < z->tm; r++)
        for (int j = 0; j < z->tn; j++) put(&t, "        c%d_%d = np.%s(0)\n", r, j, dtype);
    if (z->ahead) {
        put_slab_fetch(&t, &sa, "        ", "row0", "m", "0", "k");
        put_slab_fetch(&t, &sb, "        ", "0", "k", "col0", "n");
    }
    put(&t, "        for k0 in range(ol.uint64(0), k, %d):\n", z->bk);
    if (!z->ahead) {
        put_slab_fetch(&t, &sa, "            ", "row0", "m", "k0", "k");
        put_slab_fetch(&t, &sb, "            ", "k0", "k", "col0", "n");
    }
    put_slab_store(&t, &sa, "            ");
    put_slab_store(&t, &sb, "            ");
    put(&t, "            ol.group_barrier(g)\n");
    if (z->ahead) {
        put(&t, "            k1 = k0 + %d\n", z->bk);
        put_slab_fetch(&t, &sa, "            ", "row0", "m", "k1", "k");
        put_slab_fetch(&t, &sb, "            ", "k1", "k", "col0", "n");
    }
    put(&t, "            for q in range(%d):\n", z->bk);
    for (int r = 0; r < z->tm; r++)
        put(&t, r ? "                a%d = As[q, ti + %d]\n" : "                a%d = As[q, ti]\n",
            r, r);
    for (int j = 0; j < z->tn; j++)
        put(&t, j ? "                b%d = Bs[q, tj + %d]\n" : "                b%d = Bs[q, tj]\n",
            j, COL_OFFSET(j));
    /* floats: one rounding per step, and the fused instruction (twice the flops) */
    bool fused = dtype[0] == 'f';
    for (int r = 0; r < z->tm; r++)
        for (int j = 0; j < z->tn; j++)
            put(&t,
                fused ? "                c%d_%d = ol.fma(a%d, b%d, c%d_%d)\n"
                      : "                c%d_%d += a%d * b%d\n",
                r, j, r, j, r, j);
    put(&t, "            ol.group_barrier(g)\n");
    for (int r = 0; r < z->tm; r++) {
        put(&t, "        i = row0 + ti + %d\n", r);
        put(&t, "        if i < m:\n");
        for (int j = 0; j < z->tn; j++) {
            put(&t, "            j = col0 + tj + %d\n", COL_OFFSET(j));
            put(&t, "            if j < n:\n");
            put(&t, "                c[i, j] = c%d_%d\n", r, j);
        }
    }
#undef COL_OFFSET
    if (t.failed) {
        PyMem_Free(t.s);
        PyErr_NoMemory();
        return NULL;
    }
    return t.s;
}

/* The CPU form (mod_device_cpu_lanes devices: Intel's CPU runtime) is
 * module/kernels/matmul.py's (which says why it takes this shape): blocks of
 * CPU_ROWS rows by CPU_COLS columns of c, then the edges. */
#define CPU_ROWS 16
#define CPU_COLS 16

/* ---- tiling per device ---- */

/* Walks x's slab along dimension 0 when that is x's smaller stride. */
static bool by_col(const mod_array *x) {
    if (x->shape[0] < 2 || x->shape[1] < 2) return false;
    Py_ssize_t s0 = x->strides[0] < 0 ? -x->strides[0] : x->strides[0];
    Py_ssize_t s1 = x->strides[1] < 0 ? -x->strides[1] : x->strides[1];
    return s0 < s1;
}

/* The limits choose_tiles reads: a device's, or a typical one's. */
typedef struct {
    bool cuda;
    bool cpu_lanes;              /* mod_device_cpu_lanes: the CPU form serves */
    size_t most, most_x, most_y; /* work-items per group, and along x and y */
    uint64_t local_mem;
} mm_limits;

static mm_limits device_limits(ofl_device *dev) {
    const ofl_device_info *in = ofl_device_get_info(dev);
    return (mm_limits){.cuda = ofl_device_binary_kind(dev) == OFL_BIN_PTX,
                       .cpu_lanes = mod_device_cpu_lanes(dev),
                       .most = in->max_work_group_size,
                       .most_x = in->max_work_item_sizes[0],
                       .most_y = in->max_work_item_sizes[1],
                       .local_mem = in->local_mem_size};
}

/* CUDA: 16 x 16 work-items of 8 x 8 (4-byte types) or 4 x 4 results.
 * Elsewhere (SPIR-V, SPIR): 4 x 4 per work-item -- LLVM's SLP vectoriser
 * turns a register block into one vector, and the SPIR-V translator aborts
 * the process on vectors wider than 16 -- over 16 x 16 work-items (PoCL
 * runs a work-group's items as loops, so larger groups buy nothing).
 * Smaller work-groups where the device allows fewer. OFFLOAD_MATMUL_TILES
 * overrides the choice (within those limits); -1 with ValueError when it is
 * malformed. */
static int choose_tiles(const mm_limits *l, Py_ssize_t itemsize, mm_tiles *z) {
    *z = (mm_tiles){.ty = 16, .tx = 16, .tm = 4, .tn = 4, .bk = 8, .ahead = true};
    /* float32 on an H100, 4096^2 with fused multiply-adds (bench/bench_linalg.py): 32 x 8
     * items of 4 x 8, 32.7 TFLOP/s; 16 x 16 of 8 x 8, 30.3 (k step 8) and 32.0 (16) */
    if (l->cuda && itemsize <= 4)
        z->ty = 32, z->tx = 8, z->tm = 4, z->tn = 8;
    else if (l->cuda)
        z->bk = 16;
    /* a tuning knob for benchmarks on devices not seen here; kept to the device's limits below */
    const char *env = getenv("OFFLOAD_MATMUL_TILES");
    if (env && *env) {
        int v[6] = {0, 0, 0, 0, 0, 1}, used = 0,
            got = sscanf(env, "%d,%d,%d,%d,%d%n,%d%n", &v[0], &v[1], &v[2], &v[3], &v[4], &used,
                         &v[5], &used);
        if (got < 5 || env[used] || (v[5] != 0 && v[5] != 1) || v[0] < 1 || v[1] < 1 || v[2] < 1 ||
            v[3] < 1 || v[4] < 1 || v[0] * v[1] > 4096 || v[2] * v[3] > 64 || v[4] > 256) {
            PyErr_Format(
                PyExc_ValueError,
                "OFFLOAD_MATMUL_TILES=%s: want TY,TX,TM,TN,BK[,AHEAD] (work-group rows and "
                "columns, "
                "each work-item's block of results, the k step, and 1 or 0: read the next slabs "
                "during the multiply or not), e.g. 16,16,8,8,8,1, with TM*TN <= 64",
                env);
            return -1;
        }
        if (!l->cuda && v[2] * v[3] > 16) {
            PyErr_Format(
                PyExc_ValueError,
                "OFFLOAD_MATMUL_TILES=%s: TM*TN is at most 16 on OpenCL devices (a larger block "
                "becomes a vector the SPIR-V translator cannot take)",
                env);
            return -1;
        }
        *z = (mm_tiles){.ty = v[0], .tx = v[1], .tm = v[2], .tn = v[3], .bk = v[4], .ahead = v[5]};
    }
    size_t most = l->most ? l->most : 256, most_x = l->most_x ? l->most_x : 16;
    size_t most_y = l->most_y ? l->most_y : 16;
    while ((size_t)(z->ty * z->tx) > most || (size_t)z->tx > most_x || (size_t)z->ty > most_y) {
        if (z->ty > 1 && (z->ty >= z->tx || (size_t)z->ty > most_y))
            z->ty /= 2;
        else if (z->tx > 1)
            z->tx /= 2;
        else
            break;
    }
    /* local memory: the two slabs must fit (they do on every device seen; this is for odd ones) */
    uint64_t local_mem = l->local_mem ? l->local_mem : 16384;
    while (z->bk > 1 &&
           (uint64_t)(z->bk * (z->ty * z->tm + z->tx * z->tn + 2 * MM_PAD) * itemsize) > local_mem)
        z->bk /= 2;
    /* each work-item copies a whole number of each slab's elements */
    while ((z->tm * z->bk) % z->tx || (z->tn * z->bk) % z->ty) {
        z->tx = z->tx > 1 ? z->tx / 2 : 1;
        z->ty = z->ty > 1 ? z->ty / 2 : 1;
    }
    return 0;
}

/* ---- operands ---- */

/* 1: an offload array; 0: no operand of ours (the operator's NotImplemented);
 * -1 with an exception: host data (never copied behind the user's back) or a
 * scalar (NumPy's own ValueError: a scalar has no dimensions). */
static int classify(PyObject *o, int i, bool function) {
    if (mod_array_check(o)) return 1;
    if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o) ||
        mod_is_numpy_scalar(o)) {
        PyErr_Format(
            PyExc_ValueError,
            "matmul: Input operand %d does not have enough dimensions (has 0, gufunc core with "
            "signature (n?,k),(k,m?)->(n?,m?) requires 1)",
            i);
        return -1;
    }
    if (function || mod_is_numpy_array(o) || PyList_Check(o) || PyTuple_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "matmul: operand %d is a %s, not an offload array; call offload.asarray(...) "
                     "on it first "
                     "(offload never copies to the device behind your back)",
                     i, Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

/* x with two dimensions or more: a 1-D vector becomes a row (as the left
 * operand) or a column (as the right one), as NumPy's matmul treats it. New
 * reference. */
static mod_array *as_2d(mod_array *x, bool left) {
    if (x->nd >= 2) return (mod_array *)Py_NewRef(x);
    Py_ssize_t shape[2], strides[2];
    int v = left ? 1 : 0; /* the vector's dimension */
    shape[v] = x->shape[0], strides[v] = x->strides[0];
    shape[1 - v] = 1, strides[1 - v] = x->shape[0] * x->itemsize; /* never stepped over */
    return (mod_array *)mod_array_view(x, 2, shape, strides, x->offset);
}

/* The result dtype (NumPy's), or TypeError when offload's matmul has no kernel for it. */
static PyObject *result_dtype(mod_array *a, mod_array *b) {
    const char *an = mod_dtype_name(a->dtype), *bn = mod_dtype_name(b->dtype);
    if (!strcmp(an, "bool") || !strcmp(bn, "bool"))
        return PyErr_Format(
            PyExc_TypeError,
            "offload.matmul supports float32, float64 and integer arrays, not %s @ %s "
            "(convert with .astype(...) first)",
            an, bn);
    PyObject *args = PyTuple_Pack(2, a->dtype, b->dtype);
    PyObject *rt = args ? mod_np_call("result_type", args, NULL) : NULL;
    PyObject *dt = rt ? mod_dtype_new(rt) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(rt);
    return dt;
}

/* What a result of dtype (canonical) is summed in, borrowed: 8- and 16-bit
 * sums go in 32 bits, as LLVM turns narrow ones into llvm.vector.reduce.add,
 * which the SPIR-V translator rejects by exiting the process. */
static PyObject *accumulator_of(PyObject *dtype) {
    if (mod_dtype_itemsize(dtype) >= 4) return dtype;
    return mod_dtype_find_borrowed(mod_dtype_name(dtype)[0] == 'u' ? 'u' : 'i', 4);
}

/* Whether the CPU form serves: it reads b's rows across lanes, so a b walked
 * by columns takes the tiles (as OFFLOAD_MATMUL_TILES asks everywhere). */
static bool cpu_form(const mm_limits *lim, bool b_by_col) {
    const char *env = getenv("OFFLOAD_MATMUL_TILES");
    return lim->cpu_lanes && !b_by_col && !(env && *env);
}

/* The tiled kernel's text for a result of dtype (canonical) and its
 * tiling; name gets the kernel's name. PyMem_Free the text. */
static char *source_for(PyObject *dtype, const mm_limits *lim, bool a_by_col, bool b_by_col,
                        mm_tiles *z, char *name, size_t namelen) {
    PyObject *acc = accumulator_of(dtype);
    snprintf(name, namelen, "matmul_%s", mod_dtype_name(dtype));
    if (choose_tiles(lim, mod_dtype_itemsize(acc), z) < 0) return NULL;
    z->a_by_col = a_by_col;
    z->b_by_col = b_by_col;
    return kernel_text(name, mod_dtype_name(acc), z);
}

/* The CPU form's launches: the whole CPU_ROWS x CPU_COLS blocks of c, then
 * its bottom rows and right columns past them with the edge kernel. */
static int launch_cpu(PyObject *const *abc, const mod_array *c) {
    Py_ssize_t m = c->shape[0], n = c->shape[1];
    Py_ssize_t m0 = m / CPU_ROWS * CPU_ROWS, n0 = n / CPU_COLS * CPU_COLS;
    PyObject *acc = accumulator_of(c->dtype);
    PyObject *rows = PyLong_FromLong(CPU_ROWS);
    PyObject *k = mod_library_get("matmul", "matmul_cpu");
    PyObject *edge = mod_library_get("matmul", "matmul_cpu_edge");
    int rc = acc && rows && k && edge ? 0 : -1;
    if (rc == 0 && m0 && n0) {
        mod_shape range = {
            .ndim = 2, .nd = true, .size = {m0 / CPU_ROWS, n0}, .local = {1, CPU_COLS}};
        PyObject *args[5] = {abc[0], abc[1], abc[2], acc, rows};
        PyObject *r = mod_kernel_launch(k, &range, args, 5, false);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    /* (rows, columns, first row, first column): below the blocks, then right of them */
    Py_ssize_t strips[2][4] = {{m - m0, n, m0, 0}, {m0, n - n0, 0, n0}};
    for (int s = 0; rc == 0 && s < 2; s++) {
        if (!strips[s][0] || !strips[s][1]) continue;
        PyObject *i0 = PyLong_FromSsize_t(strips[s][2]), *j0 = PyLong_FromSsize_t(strips[s][3]);
        PyObject *args[6] = {abc[0], abc[1], abc[2], i0, j0, acc};
        mod_shape range = {.ndim = 2, .size = {strips[s][0], strips[s][1]}};
        PyObject *r = i0 && j0 ? mod_kernel_launch(edge, &range, args, 6, false) : NULL;
        rc = r ? 0 : -1;
        Py_XDECREF(i0);
        Py_XDECREF(j0);
        Py_XDECREF(r);
    }
    Py_XDECREF(rows);
    return rc;
}

/* Queues c = a @ b (2-D, same device, dtypes checked) on the device. */
static int launch(mod_array *a, mod_array *b, mod_array *c) {
    mm_limits lim = device_limits(mod_array_device(c));
    PyObject *args[3] = {(PyObject *)a, (PyObject *)b, (PyObject *)c};
    if (cpu_form(&lim, by_col(b))) return launch_cpu(args, c);
    mm_tiles z;
    char name[64];
    char *text = source_for(c->dtype, &lim, by_col(a), by_col(b), &z, name, sizeof name);
    if (!text) return -1;
    PyObject *k = mod_gen_kernel_borrowed(name, text);
    PyMem_Free(text);
    if (!k) return -1;
    int bm = z.ty * z.tm, bn = z.tx * z.tn;
    Py_ssize_t row_blocks = (c->shape[0] + bm - 1) / bm, col_blocks = (c->shape[1] + bn - 1) / bn;
    if (row_blocks > MM_MAX_ROW_GROUPS) row_blocks = MM_MAX_ROW_GROUPS;
    mod_shape range = {.ndim = 2,
                       .nd = true,
                       .size = {row_blocks * z.ty, col_blocks * z.tx},
                       .local = {z.ty, z.tx}};
    PyObject *r = mod_kernel_launch(k, &range, args, 3, false);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* The batch dimensions of a and b (all but their last two) broadcast as
 * NumPy's: 0 with nb and shape filled, or -1 with NumPy's ValueError. */
static int batch_shape(const mod_array *a, const mod_array *b, int *nb, Py_ssize_t *shape) {
    int na = a->nd - 2, nbb = b->nd - 2;
    *nb = na > nbb ? na : nbb;
    for (int d = 0; d < *nb; d++) {
        int da = d - (*nb - na), db = d - (*nb - nbb);
        Py_ssize_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
        if (x != y && x != 1 && y != 1) {
            PyErr_Format(PyExc_ValueError,
                         "matmul: the stacks of matrices do not broadcast: dimension %d has "
                         "size %zd in operand 0 and %zd in operand 1",
                         d, x, y);
            return -1;
        }
        shape[d] = x == 1 ? y : x;
    }
    return 0;
}

/* x (2-D or more) as a view with the batch dimensions bshape[0..nb), steps
 * of 0 where it is broadcast. New reference. */
static mod_array *batch_view(mod_array *x, int nb, const Py_ssize_t *bshape) {
    Py_ssize_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
    int lead = nb - (x->nd - 2);
    for (int d = 0; d < nb; d++) {
        int dx = d - lead;
        shape[d] = bshape[d];
        strides[d] = dx >= 0 && x->shape[dx] == bshape[d] ? x->strides[dx] : 0;
    }
    for (int d = 0; d < 2; d++)
        shape[nb + d] = x->shape[x->nd - 2 + d], strides[nb + d] = x->strides[x->nd - 2 + d];
    return (mod_array *)mod_array_view(x, nb + 2, shape, strides, x->offset);
}

/* Matrix i (C order over the batch) of a stack of nb batch dimensions, as a 2-D view. */
static mod_array *matrix_at(mod_array *x, int nb, Py_ssize_t i) {
    Py_ssize_t offset = x->offset;
    for (int d = nb - 1; d >= 0; d--) {
        offset += (i % x->shape[d]) * x->strides[d];
        i /= x->shape[d];
    }
    return (mod_array *)mod_array_view(x, 2, x->shape + nb, x->strides + nb, offset);
}

/* x in dtype: itself, or a converted copy. New reference. */
static mod_array *in_dtype(mod_array *x, PyObject *dtype) {
    if (x->dtype == dtype) return (mod_array *)Py_NewRef(x);
    return (mod_array *)mod_ops_copy(x, dtype);
}

/* Who computes a product of dtype on dev: the kernel, cuBLAS (a CUDA device
 * that has it), or NumPy's BLAS on the host's copies (an OpenCL CPU device,
 * whose memory is the host's: OpenBLAS beats any kernel there). Floating
 * results only (BLAS has no integer GEMM); OFFLOAD_MATMUL=kernel, or a
 * tiling to tune the kernel with, keeps the kernel. */
enum { BY_KERNEL, BY_CUBLAS, BY_HOST_BLAS };
static int computed_by(ofl_device *dev, PyObject *dtype) {
    char kind = mod_dtype_name(dtype)[0];
    const char *tiles = getenv("OFFLOAD_MATMUL_TILES"), *how = getenv("OFFLOAD_MATMUL");
    if ((tiles && *tiles) || (how && !strcmp(how, "kernel")) || (kind != 'f' && kind != 'c'))
        return BY_KERNEL;
    const ofl_device_info *in = ofl_device_get_info(dev);
    if (in->backend == OFL_OPENCL && in->type == OFL_CPU) return BY_HOST_BLAS;
    return mod_vendor_blas_ready(dev) ? BY_CUBLAS : BY_KERNEL;
}

/* c = a @ b by NumPy's matmul (its BLAS) on the CPU device's memory in place:
 * a and b mapped for reading, c for writing, no copies. */
static PyObject *host_blas(mod_array *a, mod_array *b, int nb) {
    Py_ssize_t shape[MOD_MAXDIMS];
    memcpy(shape, a->shape, sizeof(Py_ssize_t) * (size_t)nb);
    shape[nb] = a->shape[nb], shape[nb + 1] = b->shape[nb + 1];
    mod_array *c = (mod_array *)mod_array_new_empty(mod_array_device(a), a->dtype, nb + 2, shape);
    if (!c) return NULL;
    mod_array *abc[3] = {a, b, c};
    static const bool write[3] = {false, false, true};
    PyObject *v[3];
    mod_host_map maps[3];
    if (mod_arrays_map_host(abc, write, 3, v, maps) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    PyObject *args = PyTuple_Pack(2, v[0], v[1]);
    PyObject *kw = args ? Py_BuildValue("{s:O}", "out", v[2]) : NULL;
    PyObject *r = kw ? mod_np_call("matmul", args, kw) : NULL;
    Py_XDECREF(r);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    int rc = 0;
    for (int i = 0; i < 3; i++) { /* the views go first, then every mapping, even after a failure */
        Py_DECREF(v[i]);
        rc |= mod_array_unmap_host(&maps[i]);
    }
    if (!r || rc) Py_CLEAR(c);
    return (PyObject *)c;
}

/* c = a @ b for stacks with equal batch shapes: cuBLAS at once, NumPy's BLAS
 * in place, or the kernel per matrix. */
static PyObject *stacked(mod_array *a, mod_array *b, PyObject *dtype, int nb) {
    ofl_device *dev = mod_array_device(a);
    int by = computed_by(dev, dtype);
    if (by != BY_KERNEL) {
        mod_array *ac = in_dtype(a, dtype), *bc = ac ? in_dtype(b, dtype) : NULL;
        PyObject *c = !bc               ? NULL
                      : by == BY_CUBLAS ? mod_vendor_matmul(ac, bc)
                                        : host_blas(ac, bc, nb);
        Py_XDECREF(ac);
        Py_XDECREF(bc);
        return c;
    }
    Py_ssize_t shape[MOD_MAXDIMS], count = 1;
    for (int d = 0; d < nb; d++) shape[d] = a->shape[d], count *= a->shape[d];
    shape[nb] = a->shape[nb], shape[nb + 1] = b->shape[nb + 1];
    mod_array *c = (mod_array *)mod_array_new_empty(dev, dtype, nb + 2, shape);
    if (!c || shape[nb] == 0 || shape[nb + 1] == 0) return (PyObject *)c;
    for (Py_ssize_t i = 0; i < count; i++) {
        mod_array *ai = matrix_at(a, nb, i), *bi = ai ? matrix_at(b, nb, i) : NULL;
        mod_array *ci = bi ? matrix_at(c, nb, i) : NULL;
        int rc = ci ? launch(ai, bi, ci) : -1;
        Py_XDECREF(ai);
        Py_XDECREF(bi);
        Py_XDECREF(ci);
        if (rc < 0) {
            Py_DECREF(c);
            return NULL;
        }
    }
    return (PyObject *)c;
}

/* a @ b for two offload arrays, as NumPy's matmul: 1-D operands as a row or
 * a column whose dimension leaves the result, stacks broadcast. */
static PyObject *matmul(mod_array *a, mod_array *b) {
    ofl_device *dev = mod_array_device(a);
    if (mod_array_device(b) != dev) {
        const ofl_device_info *x = ofl_device_get_info(dev),
                              *y = ofl_device_get_info(mod_array_device(b));
        return PyErr_Format(
            mod_ExecutionPlacementError,
            "matmul: operand 0 is on %s (%s) and operand 1 on %s (%s); move one with "
            ".to_device(...) first",
            x->filter, x->name, y->filter, y->name);
    }
    mod_array *ops[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (ops[i]->nd == 0)
            return PyErr_Format(
                PyExc_ValueError,
                "matmul: Input operand %d does not have enough dimensions (has 0, gufunc core "
                "with signature (n?,k),(k,m?)->(n?,m?) requires 1)",
                i);
    Py_ssize_t ka = a->shape[a->nd - 1], kb = b->shape[b->nd == 1 ? 0 : b->nd - 2];
    if (ka != kb)
        return PyErr_Format(
            PyExc_ValueError,
            "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
            "signature (n?,k),(k,m?)->(n?,m?) (size %zd is different from %zd)",
            kb, ka);
    PyObject *dtype = result_dtype(a, b);
    if (!dtype) return NULL;
    int nb = 0;
    Py_ssize_t bshape[MOD_MAXDIMS];
    mod_array *a2 = as_2d(a, true), *b2 = a2 ? as_2d(b, false) : NULL;
    mod_array *av = NULL, *bv = NULL, *c = NULL;
    if (b2 && batch_shape(a2, b2, &nb, bshape) == 0 && (av = batch_view(a2, nb, bshape)) &&
        (bv = batch_view(b2, nb, bshape)))
        c = (mod_array *)stacked(av, bv, dtype, nb);
    Py_DECREF(dtype);
    PyObject *r = NULL;
    if (c) {
        /* a 1-D operand's dimension goes, as in NumPy: (..., n), (..., m) or a 0-d array */
        int nd = nb;
        Py_ssize_t rshape[MOD_MAXDIMS], rstrides[MOD_MAXDIMS];
        memcpy(rshape, c->shape, sizeof(Py_ssize_t) * (size_t)nb);
        memcpy(rstrides, c->strides, sizeof(Py_ssize_t) * (size_t)nb);
        for (int d = 0; d < 2; d++)
            if ((d == 0 && a->nd >= 2) || (d == 1 && b->nd >= 2))
                rshape[nd] = c->shape[nb + d], rstrides[nd++] = c->strides[nb + d];
        r = nd == c->nd ? Py_NewRef(c) : mod_array_view(c, nd, rshape, rstrides, c->offset);
    }
    Py_XDECREF(a2);
    Py_XDECREF(b2);
    Py_XDECREF(av);
    Py_XDECREF(bv);
    Py_XDECREF(c);
    return r;
}

PyObject *mod_matmul_operator(PyObject *a, PyObject *b) {
    int ka = classify(a, 0, false);
    int kb = ka < 0 ? -1 : classify(b, 1, false);
    if (ka < 0 || kb < 0) return NULL;
    if (!ka || !kb) Py_RETURN_NOTIMPLEMENTED;
    return matmul((mod_array *)a, (mod_array *)b);
}

static PyObject *f_matmul(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "matmul(x1, x2) takes 2 arguments (%zd given)", nargs);
    if (classify(args[0], 0, true) < 0 || classify(args[1], 1, true) < 0) return NULL;
    return matmul((mod_array *)args[0], (mod_array *)args[1]);
}

/* _matmul_source(dtype, device=None, a_by_col=False, b_by_col=False) ->
 * (source, local size): the kernel text matmul runs for that result dtype
 * (the CPU form's: kernels/matmul.py's matmul_cpu, from its source) on device (a Device, a filter,
 * or "ptx": the tiling of a CUDA GPU, so that the text's PTX can be read where none exists). For
 * tests and inspect_ptx; not API. */
static PyObject *f_matmul_source(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dtype", "device", "a_by_col", "b_by_col", NULL};
    PyObject *spec, *device = Py_None;
    int a_by_col = 0, b_by_col = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Opp:_matmul_source", kwlist, &spec, &device,
                                     &a_by_col, &b_by_col))
        return NULL;
    mm_limits lim = {
        .cuda = true, .most = 1024, .most_x = 1024, .most_y = 1024, .local_mem = 49152};
    ofl_device *dev;
    if (!(PyUnicode_Check(device) && PyUnicode_CompareWithASCIIString(device, "ptx") == 0)) {
        if (mod_device_resolve(device, &dev) < 0) return NULL;
        lim = device_limits(dev);
    }
    PyObject *dtype = mod_dtype_new(spec);
    if (!dtype) return NULL;
    if (cpu_form(&lim, b_by_col)) { /* kernels/matmul.py's, whatever the dtype */
        Py_DECREF(dtype);
        PyObject *k = mod_library_get("matmul", "matmul_cpu");
        PyObject *fn = k ? PyObject_GetAttrString(k, "py_func") : NULL;
        PyObject *inspect = fn ? PyImport_ImportModule("inspect") : NULL;
        PyObject *src = inspect ? PyObject_CallMethod(inspect, "getsource", "O", fn) : NULL;
        PyObject *r = src ? Py_BuildValue("(O(ii))", src, 1, CPU_COLS) : NULL;
        Py_XDECREF(fn);
        Py_XDECREF(inspect);
        Py_XDECREF(src);
        return r;
    }
    mm_tiles z;
    char name[64];
    char *text = source_for(dtype, &lim, a_by_col, b_by_col, &z, name, sizeof name);
    Py_DECREF(dtype);
    if (!text) return NULL;
    PyObject *r = Py_BuildValue("(s(ii))", text, z.ty, z.tx);
    PyMem_Free(text);
    return r;
}

static PyMethodDef functions[] = {
    {"matmul", (PyCFunction)(void (*)(void))f_matmul, METH_FASTCALL,
     "matmul(x1, x2, /) -> ndarray: the matrix product x1 @ x2 on the operands' device\n\n"
     "1-D and 2-D offload arrays of float32, float64 or integer dtypes, NumPy's shape rules and "
     "result "
     "dtype (float32 @ float64 is float64); a 1-D operand is a vector, and vector @ vector is a "
     "0-d array. "
     "Computed asynchronously by a tiled kernel; the result is a new C-contiguous array."},
    {"_matmul_source", (PyCFunction)(void (*)(void))f_matmul_source, METH_VARARGS | METH_KEYWORDS,
     "_matmul_source(dtype, device=None, a_by_col=False, b_by_col=False) -> (source, (ty, tx)): "
     "the kernel "
     "text matmul uses for that result dtype on device ('ptx': as on a CUDA GPU), and its "
     "work-group. "
     "For tests and kernel.inspect_ptx."},
    {NULL, NULL, 0, NULL},
};

int mod_matmul_add_functions(PyObject *module) { return PyModule_AddFunctions(module, functions); }
