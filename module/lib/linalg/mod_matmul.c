/* mod_matmul: offload.matmul(a, b) and the @ operator on offload arrays.
 *
 * Owns NumPy's matmul rules (1-D operands as a row or a column whose
 * dimension leaves the result, stacks of matrices broadcast, the result
 * dtype, the error messages), the refusal to mix with host data, and the
 * choice of who computes a float product: cuBLAS on a CUDA device (one
 * strided-batched call through mod_vendor), NumPy's BLAS on an OpenCL CPU
 * device's buffers mapped in place (that memory is the host's, and OpenBLAS
 * beats any kernel there), else -- integers, other devices, or
 * OFFLOAD_MATMUL=kernel -- the library's kernel, launched once per matrix of a
 * stack. Nothing here waits for the device but the host copies.
 *
 * Called by: mod_lib_add_functions (offload.matmul) and ndarray's
 * nb_matrix_multiply slot (mod_matmul_operator, set by mod_lib.c), which also
 * serves the reflected form: CPython calls the slot with the offload array
 * on either side.
 *
 * The kernel: module/kernels/matmul.py's matmul_tiled, a tiled nd-range
 * kernel (that file says how it computes), specialised by the JIT per tiling
 * (its compile-time parameters), operand dtypes and layouts (a C-contiguous
 * operand gets the contiguous specialisation). This file picks the tiling
 * per device and whether each operand's slab is copied walking dimension 0
 * (a .T view), and launches a grid of at most MM_MAX_ROW_GROUPS row blocks
 * (the kernel loops over the rest).
 *
 * On a device whose compiler makes vectors of neighbouring work-items
 * (Intel's CPU runtime) the CPU form of module/kernels/matmul.py serves
 * instead, unless b is walked by columns; that file says why.
 *
 * The tiling per device is choose_tiles'; OFFLOAD_MATMUL_TILES overrides it
 * (a knob for tuning on a device, read at each product; it implies the
 * kernel), and the private offload._matmul_plan shows the kernel and
 * compile-time arguments a product would take. */
#include "lib/linalg/mod_linalg.h"
#include "lib/elementwise/mod_elementwise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MM_MAX_ROW_GROUPS 32768 /* row blocks launched; more are looped over */

/* The tiling of one product: matmul_tiled's compile-time parameters. */
typedef struct {
    int ty, tx; /* work-group: TY rows x TX columns of work-items */
    int tm, tn; /* register block of each work-item */
    int bk;     /* k step (elements of k per local slab) */
    bool ahead; /* read the next slabs during the multiply (more registers) */
} mm_tiles;

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
    /* local memory: the two slabs, their rows padded by matmul.py's PAD, must fit (they do on
     * every device seen; this is for odd ones) */
    uint64_t local_mem = l->local_mem ? l->local_mem : 16384;
    Py_ssize_t pad = mod_library_int("matmul", "PAD");
    if (pad < 0) return -1;
    while (z->bk > 1 &&
           (uint64_t)(z->bk * (z->ty * z->tm + z->tx * z->tn + 2 * pad) * itemsize) > local_mem)
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
    PyObject *acc = accumulator_of(c->dtype);
    mm_tiles z;
    if (choose_tiles(&lim, mod_dtype_itemsize(acc), &z) < 0) return -1;
    int bm = z.ty * z.tm, bn = z.tx * z.tn;
    Py_ssize_t row_blocks = (c->shape[0] + bm - 1) / bm, col_blocks = (c->shape[1] + bn - 1) / bn;
    if (row_blocks > MM_MAX_ROW_GROUPS) row_blocks = MM_MAX_ROW_GROUPS;
    mod_shape range = {.ndim = 2,
                       .nd = true,
                       .size = {row_blocks * z.ty, col_blocks * z.tx},
                       .local = {z.ty, z.tx}};
    /* matmul_tiled(a, b, c, ACC, AT, BT, TY, TX, TM, TN, BK, A_BY_COL, B_BY_COL, AHEAD) */
    return mod_library_launch("matmul", "matmul_tiled", &range, "OOOOOOiiiiiOOO", a, b, c, acc,
                              a->dtype, b->dtype, z.ty, z.tx, z.tm, z.tn, z.bk,
                              mod_kit_bool(by_col(a)), mod_kit_bool(by_col(b)),
                              mod_kit_bool(z.ahead));
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

/* _matmul_plan(dtype, device=None, a_by_col=False, b_by_col=False) ->
 * (name, compile-time arguments, local size): the kernel of
 * kernels/matmul.py that matmul launches for a product of two dtype operands
 * (the CPU form's matmul_cpu for its blocks), the values of its
 * compile-time parameters and its work-group, on device (a Device, a
 * filter, or "ptx": the tiling of a CUDA GPU, so that its PTX can be read
 * where none exists). For tests and inspect_ptx; not API. */
static PyObject *f_matmul_plan(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dtype", "device", "a_by_col", "b_by_col", NULL};
    PyObject *spec, *device = Py_None;
    int a_by_col = 0, b_by_col = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Opp:_matmul_plan", kwlist, &spec, &device,
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
    PyObject *acc = accumulator_of(dtype), *r = NULL;
    mm_tiles z;
    if (cpu_form(&lim, b_by_col))
        r = Py_BuildValue("(s(Oi)(ii))", "matmul_cpu", acc, CPU_ROWS, 1, CPU_COLS);
    else if (choose_tiles(&lim, mod_dtype_itemsize(acc), &z) == 0)
        r = Py_BuildValue("(s(OOOiiiiiOOO)(ii))", "matmul_tiled", acc, dtype, dtype, z.ty, z.tx,
                          z.tm, z.tn, z.bk, mod_kit_bool(a_by_col), mod_kit_bool(b_by_col),
                          mod_kit_bool(z.ahead), z.ty, z.tx);
    Py_DECREF(dtype);
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
    {"_matmul_plan", MOD_KWFUNC(f_matmul_plan),
     "_matmul_plan(dtype, device=None, a_by_col=False, b_by_col=False) -> (name, constexprs, "
     "(ty, tx)): the kernel of kernels/matmul.py that matmul launches for that result dtype on "
     "device ('ptx': as on a CUDA GPU), its compile-time arguments and its work-group. For tests "
     "and kernel.inspect_ptx."},
    {NULL, NULL, 0, NULL},
};

int mod_matmul_add_functions(PyObject *module) { return PyModule_AddFunctions(module, functions); }
