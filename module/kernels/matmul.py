"""The matmul fallback's kernels in the kernel language, planned and
launched by module/lib/linalg/mod_matmul.c: c = a @ b for 2-D a (m x k), b (k x n)
and c (m x n), any strides.

matmul_tiled serves GPUs and PoCL. A work-group of TY x TX work-items
computes a BM x BN block of c (BM = TY*TM, BN = TX*TN): each work-item a
TM x TN register block (a private array indexed only by unrolled loops, so
every element is a register). Per BK-wide step along k the group copies a
BM x BK slab of a and a BK x BN slab of b into local memory (zeros past the
edges, so any m, n, k work and the inner loop has no bounds tests), waits at
a barrier, and each work-item reads TM + TN values per k and does TM*TN
multiply-adds (offload.fma for floats: one rounding and one instruction
each). The a slab is stored transposed (k-major) so both reads in the inner
loop are runs of consecutive elements (vector loads on CUDA); rows are
padded by PAD elements so the transposing stores do not collide in
shared-memory banks. A work-item's columns come in runs of (at most) 4, the
runs TX * 4 apart: a quarter-warp's 128-bit reads of the b slab then cover
128 consecutive bytes, one per bank, and its stores to c are runs too.
Copies into local memory walk an operand along its smaller stride
(A_BY_COL, B_BY_COL: its dimension 0 fastest), so a transposed view (.T)
still reads memory in runs. With AHEAD the next slabs are read into
registers while the current ones are multiplied, so global memory's latency
hides behind arithmetic; one barrier guards each side of the slabs' use.
Index arithmetic is in uint64: unsigned indices need no negative-index
wrap-around, and divisions by the (power of two) tile sizes are shifts. Row
blocks beyond the grid's rows (CUDA: 65535) are walked by a loop over the
groups' rows. AT and BT are a's and b's dtypes, which the values read
ahead keep until their store (a narrow register, widened once).

On devices whose compiler makes vectors of neighbouring work-items (Intel's
CPU runtime) the CPU form serves instead, unless b is walked by columns.
A work-group is 16 work-items along a row of c, which the device runs as the
lanes of one vector; each work-item computes ROWS rows of its column, so per
k step the group loads one run of b's row (a vector), reads ROWS elements of
a that every lane shares, and does ROWS vector multiply-adds. The tiled
kernel's barriers and local copies run one work-item at a time there
(1024^2 float32: 99 ms against OpenBLAS's 9; this form 18-22 ms). matmul_cpu
covers c's whole blocks; matmul_cpu_edge, an element per work-item, the rows
and columns past them (branches or clamped indices for edges in the one
kernel cost the vector form half its speed).

ACC, in every kernel: the accumulator's dtype (c's, or int32 / uint32 for 8-
and 16-bit results, whose products and sums wrap alike).
"""
import numpy as np
import offload as ol

PAD = 4  # elements added to each local row (bank conflicts)


@ol.kernel
def matmul_cpu(item, a, b, c, ACC: ol.constexpr, ROWS: ol.constexpr):
    j = item.get_global_id(1)
    i0 = item.get_global_id(0) * ROWS
    K = a.shape[1]
    acc = ol.private_array(ROWS, ACC)  # unrolled indices: registers
    for r in ol.static_range(ROWS):
        acc[r] = ACC(0)
    for k in range(K):
        bk = b[k, j]
        for r in ol.static_range(ROWS):
            acc[r] += a[i0 + r, k] * bk
    for r in ol.static_range(ROWS):
        c[i0 + r, j] = acc[r]


@ol.kernel
def matmul_cpu_edge(item, a, b, c, i0, j0, ACC: ol.constexpr):
    """c's elements from (i0, j0) on, one per work-item."""
    i = i0 + item.get_id(0)
    j = j0 + item.get_id(1)
    s = ACC(0)
    for k in range(a.shape[1]):
        s += a[i, k] * b[k, j]
    c[i, j] = s


@ol.device_func
def slab_value(x, i, j, ni, nj):
    """x[i, j], or 0 past x's edges (ni rows, nj columns)."""
    return x[i, j] if i < ni and j < nj else 0


@ol.kernel
def matmul_tiled(item, a, b, c, ACC: ol.constexpr, AT: ol.constexpr, BT: ol.constexpr,
                 TY: ol.constexpr, TX: ol.constexpr, TM: ol.constexpr, TN: ol.constexpr,
                 BK: ol.constexpr, A_BY_COL: ol.constexpr, B_BY_COL: ol.constexpr,
                 AHEAD: ol.constexpr):
    ty = ol.uint64(item.get_local_id(0))
    tx = ol.uint64(item.get_local_id(1))
    t = ty * TX + tx
    ti = ty * TM  # the work-item's block: rows ti.., columns from tj
    tj = tx * min(TN, 4)
    g = item.get_group()
    m = ol.uint64(c.shape[0])
    n = ol.uint64(c.shape[1])
    k = ol.uint64(a.shape[1])
    col0 = ol.uint64(g.get_group_id(1)) * (TX * TN)
    As = ol.local_array((BK, TY * TM + PAD), ACC)
    Bs = ol.local_array((BK, TX * TN + PAD), ACC)
    # the work-item's share of each slab: element t, t + TY*TX, ..., at fixed places
    ia = ol.private_array(TM * BK // TX, np.uint64)
    ka = ol.private_array(TM * BK // TX, np.uint64)
    kb = ol.private_array(TN * BK // TY, np.uint64)
    jb = ol.private_array(TN * BK // TY, np.uint64)
    cr = ol.private_array((TM, TN), ACC)
    va = ol.private_array(TM * BK // TX, AT)
    vb = ol.private_array(TN * BK // TY, BT)
    for p in ol.static_range(TM * BK // TX):
        if A_BY_COL:
            ia[p] = (t + p * (TY * TX)) % (TY * TM)
            ka[p] = (t + p * (TY * TX)) // (TY * TM)
        else:
            ia[p] = (t + p * (TY * TX)) // BK
            ka[p] = (t + p * (TY * TX)) % BK
    for p in ol.static_range(TN * BK // TY):
        if B_BY_COL:
            kb[p] = (t + p * (TY * TX)) % BK
            jb[p] = (t + p * (TY * TX)) // BK
        else:
            kb[p] = (t + p * (TY * TX)) // (TX * TN)
            jb[p] = (t + p * (TY * TX)) % (TX * TN)
    for rb in range(ol.uint64(g.get_group_id(0)), (m + (TY * TM - 1)) // (TY * TM),
                    ol.uint64(g.get_group_range(0))):
        row0 = rb * (TY * TM)
        for r in ol.static_range(TM):
            for j in ol.static_range(TN):
                cr[r, j] = ACC(0)
        if AHEAD:
            for p in ol.static_range(TM * BK // TX):
                va[p] = slab_value(a, row0 + ia[p], ka[p], m, k)
            for p in ol.static_range(TN * BK // TY):
                vb[p] = slab_value(b, kb[p], col0 + jb[p], k, n)
        for k0 in range(ol.uint64(0), k, BK):
            if not AHEAD:
                for p in ol.static_range(TM * BK // TX):
                    va[p] = slab_value(a, row0 + ia[p], k0 + ka[p], m, k)
                for p in ol.static_range(TN * BK // TY):
                    vb[p] = slab_value(b, k0 + kb[p], col0 + jb[p], k, n)
            for p in ol.static_range(TM * BK // TX):
                As[ka[p], ia[p]] = va[p]
            for p in ol.static_range(TN * BK // TY):
                Bs[kb[p], jb[p]] = vb[p]
            ol.group_barrier(g)
            if AHEAD:
                k1 = k0 + BK
                for p in ol.static_range(TM * BK // TX):
                    va[p] = slab_value(a, row0 + ia[p], k1 + ka[p], m, k)
                for p in ol.static_range(TN * BK // TY):
                    vb[p] = slab_value(b, k1 + kb[p], col0 + jb[p], k, n)
            for q in range(BK):
                ar = ol.private_array(TM, ACC)
                br = ol.private_array(TN, ACC)
                for r in ol.static_range(TM):
                    ar[r] = As[q, ti + r]
                for j in ol.static_range(TN):
                    br[j] = Bs[q, tj + (j // min(TN, 4) * TX * min(TN, 4) + j % min(TN, 4))]
                for r in ol.static_range(TM):
                    for j in ol.static_range(TN):
                        if np.dtype(ACC).kind == "f":
                            cr[r, j] = ol.fma(ar[r], br[j], cr[r, j])
                        else:
                            cr[r, j] += ar[r] * br[j]
            ol.group_barrier(g)
        for r in ol.static_range(TM):
            i = row0 + ti + r
            if i < m:
                for j in ol.static_range(TN):
                    jc = col0 + tj + (j // min(TN, 4) * TX * min(TN, 4) + j % min(TN, 4))
                    if jc < n:
                        c[i, jc] = cr[r, j]
