/* mod_matmul: offload.matmul(a, b) and the @ operator on offload arrays.
 *
 * Owns NumPy's matmul rules for 1-D and 2-D operands (shapes, the result
 * dtype, the error messages), the refusal to mix with host data, and the
 * kernel: a tiled nd-range kernel written here as Python text, compiled
 * through mod_gen (once per text) and specialised by the JIT per operand
 * dtypes and layouts (a C-contiguous operand gets the contiguous
 * specialisation). The launch is queued on the operands' device like any
 * other: nothing here waits for the device.
 *
 * Called by: PyInit_offload (mod_matmul_add_functions) and ndarray's
 * nb_matrix_multiply slot (mod_matmul_operator, in mod_array.c), which also
 * serves the reflected form: CPython calls the slot with the offload array
 * on either side.
 *
 * The kernel. A work-group of TY x TX work-items computes a BM x BN block of
 * the result (BM = TY*TM, BN = TX*TN): each work-item a TM x TN register
 * block, held in scalar locals the text names one by one (c0_0 ... ), so no
 * compiler has to prove a private array's indices constant. Per BK-wide
 * step along k the group copies a BM x BK slab of a and a BK x BN slab of b
 * into local memory (zeros past the edges, so any m, n, k work and the
 * inner loop has no bounds tests), waits at a barrier, and each work-item
 * reads TM + TN values per k and does TM*TN multiply-adds. The a slab is
 * stored transposed (k-major) so both reads in the inner loop are runs of
 * consecutive elements (vector loads on CUDA); rows are padded by 4
 * elements so the transposing stores do not collide in shared-memory banks.
 * Copies into local memory walk each operand along its smaller stride, so
 * a transposed view (.T) still reads memory in runs. Index arithmetic is
 * done in uint64: unsigned indices need no negative-index wrap-around, and
 * divisions by the (power of two) tile sizes are shifts. Row blocks beyond
 * CUDA's 65535 grid rows are walked by a loop over the groups' rows. */
#include "mod_module.h"
#include "mod_kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MM_PAD 4           /* elements added to each local row (bank conflicts) */
#define MM_MAX_ROW_GROUPS 32768 /* row blocks launched; more are looped over */

/* The tiling of one kernel text. */
typedef struct {
    int ty, tx; /* work-group: TY rows x TX columns of work-items */
    int tm, tn; /* register block of each work-item */
    int bk;     /* k step (elements of k per local slab) */
    bool a_by_col, b_by_col; /* copy the slab walking dimension 0 fastest (a .T view) */
} mm_tiles;

/* ---- the kernel text ---- */

typedef struct {
    char *s;
    size_t len, cap;
    bool failed;
} mm_text;

static void put(mm_text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
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

/* The copy of one operand's slab into local memory: `count` elements of a
 * rows x cols slab (rows along the operand's dimension 0), work-item `t`
 * taking every NT-th one. by_col walks the slab's dimension 0 fastest.
 * Elements past the operand's edges become zeros. */
static void put_slab_copy(mm_text *t, const char *arr, const char *local, int rows, int cols, int nt, bool by_col,
                          const char *row0, const char *rows_end, const char *col0, const char *cols_end,
                          bool local_transposed)
{
    int count = rows * cols;
    for (int p = 0; p < (count + nt - 1) / nt; p++) {
        const char *ind = "        ";
        if ((p + 1) * nt > count) { /* only when nt does not divide the slab */
            put(t, "        if t + %d < %d:\n", p * nt, count);
            ind = "            ";
        }
        if (by_col)
            put(t, "%sr = (t + %d) %% %d\n%sq = (t + %d) // %d\n", ind, p * nt, rows, ind, p * nt, rows);
        else
            put(t, "%sr = (t + %d) // %d\n%sq = (t + %d) %% %d\n", ind, p * nt, cols, ind, p * nt, cols);
        put(t, "%sif %s + r < %s and %s + q < %s:\n", ind, row0, rows_end, col0, cols_end);
        put(t, "%s    %s[%s] = %s[%s + r, %s + q]\n", ind, local, local_transposed ? "q, r" : "r, q", arr, row0,
            col0);
        put(t, "%selse:\n%s    %s[%s] = 0\n", ind, ind, local, local_transposed ? "q, r" : "r, q");
    }
}

/* Python text of `def name(item, a, b, c)`: c = a @ b for 2-D a (m x k),
 * b (k x n), c (m x n), accumulating in dtype (c's, or a wider integer
 * type: integer products and sums wrap the same modulo 2^8 (2^16) whether
 * they are computed in 8 (16) or 32 bits, so the store's truncation gives NumPy's result). */
static char *kernel_text(const char *name, const char *dtype, const mm_tiles *z)
{
    int bm = z->ty * z->tm, bn = z->tx * z->tn, nt = z->ty * z->tx;
    mm_text t = {0};
    put(&t, "def %s(item, a, b, c):\n", name);
    put(&t, "    ty = ol.uint64(item.get_local_id(0))\n");
    put(&t, "    tx = ol.uint64(item.get_local_id(1))\n");
    put(&t, "    t = ty * %d + tx\n", z->tx);
    put(&t, "    g = item.get_group()\n");
    put(&t, "    m = ol.uint64(c.shape[0])\n");
    put(&t, "    n = ol.uint64(c.shape[1])\n");
    put(&t, "    k = ol.uint64(a.shape[1])\n");
    put(&t, "    col0 = ol.uint64(g.get_group_id(1)) * %d\n", bn);
    put(&t, "    As = ol.local_array((%d, %d), np.%s)\n", z->bk, bm + MM_PAD, dtype);
    put(&t, "    Bs = ol.local_array((%d, %d), np.%s)\n", z->bk, bn + MM_PAD, dtype);
    /* the outer loop: more row blocks than the grid has rows (CUDA: 65535) */
    put(&t, "    for rb in range(ol.uint64(g.get_group_id(0)), (m + %d) // %d, ol.uint64(g.get_group_range(0))):\n",
        bm - 1, bm);
    put(&t, "        row0 = rb * %d\n", bm);
    for (int r = 0; r < z->tm; r++)
        for (int j = 0; j < z->tn; j++)
            put(&t, "        c%d_%d = np.%s(0)\n", r, j, dtype);
    put(&t, "        for k0 in range(ol.uint64(0), k, %d):\n", z->bk);
    mm_text body = {0}; /* the slab copies, indented one level deeper below */
    put_slab_copy(&body, "a", "As", bm, z->bk, nt, z->a_by_col, "row0", "m", "k0", "k", true);
    put_slab_copy(&body, "b", "Bs", z->bk, bn, nt, z->b_by_col, "k0", "k", "col0", "n", false);
    if (body.failed || t.failed) {
        PyMem_Free(body.s);
        PyMem_Free(t.s);
        PyErr_NoMemory();
        return NULL;
    }
    for (char *line = body.s, *end; line && *line; line = end + 1) { /* add 4 spaces to each line */
        end = strchr(line, '\n');
        put(&t, "    %.*s\n", (int)(end - line), line);
    }
    PyMem_Free(body.s);
    put(&t, "            ol.group_barrier(g)\n");
    put(&t, "            for q in range(%d):\n", z->bk);
    for (int r = 0; r < z->tm; r++)
        put(&t, "                a%d = As[q, ty * %d + %d]\n", r, z->tm, r);
    for (int j = 0; j < z->tn; j++)
        put(&t, "                b%d = Bs[q, tx * %d + %d]\n", j, z->tn, j);
    for (int r = 0; r < z->tm; r++)
        for (int j = 0; j < z->tn; j++)
            put(&t, "                c%d_%d += a%d * b%d\n", r, j, r, j);
    put(&t, "            ol.group_barrier(g)\n");
    for (int r = 0; r < z->tm; r++) {
        put(&t, "        i = row0 + ty * %d + %d\n", z->tm, r);
        put(&t, "        if i < m:\n");
        for (int j = 0; j < z->tn; j++) {
            put(&t, "            j = col0 + tx * %d + %d\n", z->tn, j);
            put(&t, "            if j < n:\n");
            put(&t, "                c[i, j] = c%d_%d\n", r, j);
        }
    }
    if (t.failed) {
        PyMem_Free(t.s);
        PyErr_NoMemory();
        return NULL;
    }
    return t.s;
}

/* ---- tiling per device ---- */

/* Walks x's slab along dimension 0 when that is x's smaller stride. */
static bool by_col(const mod_array *x)
{
    if (x->shape[0] < 2 || x->shape[1] < 2)
        return false;
    Py_ssize_t s0 = x->strides[0] < 0 ? -x->strides[0] : x->strides[0];
    Py_ssize_t s1 = x->strides[1] < 0 ? -x->strides[1] : x->strides[1];
    return s0 < s1;
}

/* CUDA: 16 x 16 work-items of 8 x 8 (4-byte types) or 4 x 4 results.
 * Elsewhere (SPIR-V, SPIR): 4 x 4 per work-item -- LLVM's SLP vectoriser
 * turns a register block into one vector, and the SPIR-V translator aborts
 * the process on vectors wider than 16 -- over 16 x 16 work-items (PoCL
 * runs a work-group's items as loops, so larger groups buy nothing).
 * Smaller work-groups where the device allows fewer. */
static void choose_tiles(ofl_device *dev, Py_ssize_t itemsize, mm_tiles *z)
{
    const ofl_device_info *in = ofl_device_get_info(dev);
    bool cuda = ofl_device_binary_kind(dev) == OFL_BIN_PTX;
    *z = (mm_tiles){.ty = 16, .tx = 16, .tm = 4, .tn = 4, .bk = 8};
    if (cuda && itemsize <= 4)
        z->tm = z->tn = 8;
    else if (cuda)
        z->bk = 16;
    size_t most = in->max_work_group_size ? in->max_work_group_size : 256;
    size_t most_x = in->max_work_item_sizes[0] ? in->max_work_item_sizes[0] : 16;
    size_t most_y = in->max_work_item_sizes[1] ? in->max_work_item_sizes[1] : 16;
    while ((size_t)(z->ty * z->tx) > most || (size_t)z->tx > most_x || (size_t)z->ty > most_y) {
        if (z->ty > 1 && (z->ty >= z->tx || (size_t)z->ty > most_y))
            z->ty /= 2;
        else if (z->tx > 1)
            z->tx /= 2;
        else
            break;
    }
    /* local memory: the two slabs must fit (they do on every device seen; this is for odd ones) */
    while (z->bk > 1 && (uint64_t)(z->bk * (z->ty * z->tm + z->tx * z->tn + 2 * MM_PAD) * itemsize) >
                            (in->local_mem_size ? in->local_mem_size : 16384))
        z->bk /= 2;
}

/* ---- operands ---- */

static bool is_instance_of_numpy(PyObject *o, const char *type_name)
{
    PyObject *type = PyObject_GetAttrString(mod_numpy_borrowed(), type_name);
    int r = type ? PyObject_IsInstance(o, type) : -1;
    Py_XDECREF(type);
    PyErr_Clear();
    return r == 1;
}

/* 1: an offload array; 0: no operand of ours (the operator's NotImplemented);
 * -1 with an exception: host data (never copied behind the user's back) or a
 * scalar (NumPy's own ValueError: a scalar has no dimensions). */
static int classify(PyObject *o, int i, bool function)
{
    if (mod_array_check(o))
        return 1;
    if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o) ||
        is_instance_of_numpy(o, "generic")) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: Input operand %d does not have enough dimensions (has 0, gufunc core with "
                     "signature (n?,k),(k,m?)->(n?,m?) requires 1)",
                     i);
        return -1;
    }
    if (function || is_instance_of_numpy(o, "ndarray") || PyList_Check(o) || PyTuple_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "matmul: operand %d is a %s, not an offload array; call offload.asarray(...) on it first "
                     "(offload never copies to the device behind your back)",
                     i, Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

/* x as a 2-D view: a 1-D vector becomes a row (as the left operand) or a
 * column (as the right one), as NumPy's matmul treats it. New reference. */
static mod_array *as_2d(mod_array *x, bool left)
{
    if (x->nd == 2)
        return (mod_array *)Py_NewRef(x);
    Py_ssize_t shape[2], strides[2];
    int v = left ? 1 : 0; /* the vector's dimension */
    shape[v] = x->shape[0], strides[v] = x->strides[0];
    shape[1 - v] = 1, strides[1 - v] = x->shape[0] * x->itemsize; /* never stepped over */
    return (mod_array *)mod_array_view(x, 2, shape, strides, x->offset);
}

/* The result dtype (NumPy's), or TypeError when offload's matmul has no kernel for it. */
static PyObject *result_dtype(mod_array *a, mod_array *b)
{
    const char *an = mod_dtype_name(a->dtype), *bn = mod_dtype_name(b->dtype);
    if (!strcmp(an, "bool") || !strcmp(bn, "bool"))
        return PyErr_Format(PyExc_TypeError,
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

/* Queues c = a @ b (2-D, same device, dtypes checked) on the device. */
static int launch(mod_array *a, mod_array *b, mod_array *c)
{
    ofl_device *dev = mod_array_device(c);
    mm_tiles z;
    choose_tiles(dev, c->itemsize, &z);
    z.a_by_col = by_col(a);
    z.b_by_col = by_col(b);
    const char *dtype = mod_dtype_name(c->dtype);
    char name[64];
    snprintf(name, sizeof name, "matmul_%s", dtype);
    /* 8- and 16-bit sums go in 32 bits: LLVM turns narrow ones into
     * llvm.vector.reduce.add, which the SPIR-V translator rejects by
     * exiting the process */
    if (c->itemsize < 4)
        dtype = dtype[0] == 'u' ? "uint32" : "int32";
    char *text = kernel_text(name, dtype, &z);
    if (!text)
        return -1;
    PyObject *k = mod_gen_kernel_borrowed(name, text);
    PyMem_Free(text);
    if (!k)
        return -1;
    int bm = z.ty * z.tm, bn = z.tx * z.tn;
    Py_ssize_t row_blocks = (c->shape[0] + bm - 1) / bm, col_blocks = (c->shape[1] + bn - 1) / bn;
    if (row_blocks > MM_MAX_ROW_GROUPS)
        row_blocks = MM_MAX_ROW_GROUPS;
    mod_shape range = {.ndim = 2, .nd = true, .size = {row_blocks * z.ty, col_blocks * z.tx}, .local = {z.ty, z.tx}};
    PyObject *args[3] = {(PyObject *)a, (PyObject *)b, (PyObject *)c};
    PyObject *r = mod_kernel_launch(k, &range, args, 3, false);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* a @ b for two offload arrays. */
static PyObject *matmul(mod_array *a, mod_array *b)
{
    ofl_device *dev = mod_array_device(a);
    if (mod_array_device(b) != dev) {
        const ofl_device_info *x = ofl_device_get_info(dev), *y = ofl_device_get_info(mod_array_device(b));
        return PyErr_Format(mod_ExecutionPlacementError,
                            "matmul: operand 0 is on %s (%s) and operand 1 on %s (%s); move one with "
                            ".to_device(...) first",
                            x->filter, x->name, y->filter, y->name);
    }
    mod_array *ops[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (ops[i]->nd == 0)
            return PyErr_Format(PyExc_ValueError,
                                "matmul: Input operand %d does not have enough dimensions (has 0, gufunc core "
                                "with signature (n?,k),(k,m?)->(n?,m?) requires 1)",
                                i);
        if (ops[i]->nd > 2)
            return PyErr_Format(PyExc_ValueError,
                                "offload.matmul: operand %d has %d dimensions; offload's matmul takes 1-D and "
                                "2-D arrays (stacks of matrices are not supported yet)",
                                i, ops[i]->nd);
    }
    Py_ssize_t ka = a->shape[a->nd - 1], kb = b->shape[0];
    if (ka != kb)
        return PyErr_Format(PyExc_ValueError,
                            "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
                            "signature (n?,k),(k,m?)->(n?,m?) (size %zd is different from %zd)",
                            kb, ka);
    PyObject *dtype = result_dtype(a, b);
    if (!dtype)
        return NULL;
    mod_array *a2 = as_2d(a, true), *b2 = a2 ? as_2d(b, false) : NULL;
    Py_ssize_t shape[2] = {a2 ? a2->shape[0] : 0, b2 ? b2->shape[1] : 0};
    mod_array *c = b2 ? (mod_array *)mod_array_new_empty(dev, dtype, 2, shape) : NULL;
    Py_DECREF(dtype);
    PyObject *r = NULL;
    if (c && (shape[0] == 0 || shape[1] == 0 || launch(a2, b2, c) == 0)) {
        /* a 1-D operand's dimension goes, as in NumPy: (n,), (m,) or a 0-d array */
        int nd = 0;
        Py_ssize_t rshape[2], rstrides[2];
        for (int d = 0; d < 2; d++)
            if ((d == 0 && a->nd == 2) || (d == 1 && b->nd == 2))
                rshape[nd] = c->shape[d], rstrides[nd++] = c->strides[d];
        r = nd == 2 ? Py_NewRef(c) : mod_array_view(c, nd, rshape, rstrides, c->offset);
    }
    Py_XDECREF(a2);
    Py_XDECREF(b2);
    Py_XDECREF(c);
    return r;
}

PyObject *mod_matmul_operator(PyObject *a, PyObject *b)
{
    int ka = classify(a, 0, false);
    int kb = ka < 0 ? -1 : classify(b, 1, false);
    if (ka < 0 || kb < 0)
        return NULL;
    if (!ka || !kb)
        Py_RETURN_NOTIMPLEMENTED;
    return matmul((mod_array *)a, (mod_array *)b);
}

static PyObject *f_matmul(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "matmul(x1, x2) takes 2 arguments (%zd given)", nargs);
    if (classify(args[0], 0, true) < 0 || classify(args[1], 1, true) < 0)
        return NULL;
    return matmul((mod_array *)args[0], (mod_array *)args[1]);
}

static PyMethodDef functions[] = {
    {"matmul", (PyCFunction)(void (*)(void))f_matmul, METH_FASTCALL,
     "matmul(x1, x2, /) -> ndarray: the matrix product x1 @ x2 on the operands' device\n\n"
     "1-D and 2-D offload arrays of float32, float64 or integer dtypes, NumPy's shape rules and result "
     "dtype (float32 @ float64 is float64); a 1-D operand is a vector, and vector @ vector is a 0-d array. "
     "Computed asynchronously by a tiled kernel; the result is a new C-contiguous array."},
    {NULL, NULL, 0, NULL},
};

int mod_matmul_add_functions(PyObject *module) { return PyModule_AddFunctions(module, functions); }
