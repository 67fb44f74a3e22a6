"""Reductions' device code, in the kernel language, planned and launched by
module/lib/reduce/mod_reduce.c (docs/reductions.md has the forms and their
measured reasons).

The operators are device functions that a kernel takes as a compile-time
parameter, so one kernel serves every operator and dtype. minimum and
maximum keep a NaN, as NumPy's do. The reduction kernels share these
compile-time parameters:
  OP    the operator: add (sum, mean, count_nonzero), multiply, minimum,
        maximum, bit_or (any), bit_and (all)
  ACC   the accumulator's dtype (of the partials and of ident too)
  CAST  the dtype each element goes through first: NumPy's dtype= (bool
        counts `x != 0`), or x's own
  OUT   the result's dtype
  MEAN  the result is the total divided by count
argmin and argmax take BETTER (lt, gt) instead of OP and keep the smallest
index among equal values, the first NaN winning.

A reduction sees its input as a 1-D view and gets the layout as numbers:
output m reads x[o + kk] from o = base + (m // Q) * sp + (m % Q) * sq.
Indices are uint64: an int64 index would be checked for Python's
negative-index wrap on every load; negative strides still land right,
modulo 2**64.
"""
import math

import numpy as np
import offload as ol

INDEX_NONE = 9223372036854775807  # an argmin/argmax pair that has taken no element


@ol.device_func
def add(a, b):
    return a + b


@ol.device_func
def multiply(a, b):
    return a * b


@ol.device_func
def bit_or(a, b):
    return a | b


@ol.device_func
def bit_and(a, b):
    return a & b


# `|`, not `or`: no branch, so that CPU compilers make one vector select of
# it (Intel: a max of 2**22 float32 0.37 -> 0.27 ms). A NaN b is taken, and
# a NaN a stays (no comparison with it holds).
@ol.device_func
def minimum(a, b):
    return b if (b < a) | (b != b) else a


@ol.device_func
def maximum(a, b):
    return b if (b > a) | (b != b) else a


@ol.device_func
def lt(a, b):
    return a < b


@ol.device_func
def gt(a, b):
    return a > b


def nan_flagged(OP, ACC, LANES):
    """Whether a CPU run of float min/max in lanes selects without NaN tests
    and keeps a flag that a NaN was seen, which makes the result NaN at the
    end (Intel: a max of 2**22 float32 0.30 -> 0.22 ms). PoCL made the flag
    scalar (2.2 -> 14 ms), so in one work-item it does not."""
    return LANES > 1 and np.dtype(ACC).kind in "fc" and (OP is minimum or OP is maximum)


# ---- prange loops' GPU reductions (module/launch/mod_loops.c) --------------


@ol.kernel
def combine_strided(item, part, n, S, out, OP: ol.constexpr, DT: ol.constexpr, G: ol.constexpr):
    """One work-group of G work-items folds part[0], part[S], ...,
    part[(n - 1) * S] (of dtype DT) by OP into out[0]: each work-item folds
    every G-th, then a tree in local memory."""
    l = item.get_local_id(0)
    a = part[min(l, n - 1) * S]
    if OP is add or OP is multiply:  # a spare work-item's is the identity
        if l >= n:
            a = DT(1 if OP is multiply else 0)
    for k in range(l + G, n, G):
        a = OP(a, part[k * S])
    loc = ol.local_array(G, DT)
    loc[l] = a
    ol.group_barrier(item.get_group())
    for h in ol.static_range(G.bit_length() - 2, -1, -1):
        if l < (1 << h):
            loc[l] = OP(loc[l], loc[l + (1 << h)])
        ol.group_barrier(item.get_group())
    if l == 0:
        out[0] = loc[0]


# ---- the tree form: every device, every layout, every second pass ---------


@ol.kernel
def reduce_tree(item, x, out, part, base, Q, sp, sq, n1, n2, t0, t1, t2, n, nsplit, nk, kst, qst,
                ident, count, final, OP: ol.constexpr, ACC: ol.constexpr, CAST: ol.constexpr,
                OUT: ol.constexpr, MEAN: ol.constexpr, U: ol.constexpr, G: ol.constexpr):
    """One 1-D NdRange of groups of at most G: output m's nk work-items
    (kst apart) each walk every step-th element of its k range in U
    accumulators (16 loads in flight reach CuPy's float32 sum on an H100,
    4 a third of it), then meet in local memory. The reduced axes' offset
    of k is its C-order index over (n / (n1 * n2), n1, n2) strided
    (t0, t1, t2); one axis (n2 == n) is the quick case. With nsplit > 1
    each group leaves a partial, part[m * nsplit + s], for a second pass."""
    grp = item.get_group()
    li = item.get_local_id(0)
    nq = item.get_local_range(0) // nk
    g = grp.get_group_id(0)
    s = g % nsplit
    lk = (li // kst) % nk
    m = (g // nsplit) * nq + (li // qst) % nq
    o = base + (m // Q) * sp + (m % Q) * sq
    step = nsplit * nk
    k = s * nk + lk
    a = ol.private_array(U, ACC)  # unrolled indices: registers
    v = ol.private_array(U, ACC)
    for u in ol.static_range(U):
        a[u] = ident
    if m < out.shape[0]:
        if n2 == n:
            while k + (U - 1) * step < n:
                for u in ol.static_range(U):  # the loads go out together
                    v[u] = ACC(CAST(x[np.uint64(o + (k + u * step) * t2)]))
                for u in ol.static_range(U):
                    a[u] = OP(a[u], v[u])
                k += U * step
            while k < n:
                a[0] = OP(a[0], ACC(CAST(x[np.uint64(o + k * t2)])))
                k += step
        else:  # several reduced axes: divisions dominate, so no unrolling
            n12 = n1 * n2
            while k < n:
                kk = (k // n12) * t0 + ((k // n2) % n1) * t1 + (k % n2) * t2
                a[0] = OP(a[0], ACC(CAST(x[np.uint64(o + kk)])))
                k += step
    for e in ol.static_range(U.bit_length() - 2, -1, -1):  # the accumulators, pairwise
        for j in ol.static_range(1 << e):
            a[j] = OP(a[j], a[j + (1 << e)])
    bv = ol.local_array(G, ACC)
    bv[li] = a[0]
    ol.group_barrier(grp)
    h = nk // 2
    while h > 0:
        if lk < h:
            bv[li] = OP(bv[li], bv[li + h * kst])
        ol.group_barrier(grp)
        h //= 2
    if lk == 0 and m < out.shape[0]:
        if final:
            out[np.uint64(m)] = OUT(bv[li] / count) if MEAN else OUT(bv[li])
        else:
            part[m * nsplit + s] = bv[li]


@ol.device_func
def arg_takes(a, i, v, c, better):
    """Whether (a, i) takes (v, c) in any order: v is better, or as good and
    earlier; NaN is the best value, and among NaNs the earliest. better:
    whether v is strictly better than a."""
    return better or (v == a and c < i) or (v != v and (a == a or c < i))


@ol.kernel
def argreduce_tree(item, x, xi, out, part, parti, base, Q, sp, sq, n1, n2, t0, t1, t2, n, nsplit,
                   nk, kst, qst, ident, final, fromp, BETTER: ol.constexpr, ACC: ol.constexpr,
                   U: ol.constexpr, G: ol.constexpr):
    """reduce_tree for argmin/argmax, carrying each value's index: k itself,
    or, reducing partials (fromp), xi's entry beside it."""
    grp = item.get_group()
    li = item.get_local_id(0)
    nq = item.get_local_range(0) // nk
    g = grp.get_group_id(0)
    s = g % nsplit
    lk = (li // kst) % nk
    m = (g // nsplit) * nq + (li // qst) % nq
    o = base + (m // Q) * sp + (m % Q) * sq
    step = nsplit * nk
    k = s * nk + lk
    a = ol.private_array(U, ACC)
    i = ol.private_array(U, np.int64)
    v = ol.private_array(U, ACC)
    c = ol.private_array(U, np.int64)
    for u in ol.static_range(U):
        a[u] = ident
        i[u] = INDEX_NONE
    if m < out.shape[0]:
        if n2 == n:
            while k + (U - 1) * step < n:
                for u in ol.static_range(U):
                    v[u] = ACC(x[np.uint64(o + (k + u * step) * t2)])
                if fromp:
                    for u in ol.static_range(U):
                        c[u] = xi[np.uint64(o + (k + u * step) * t2)]
                else:
                    for u in ol.static_range(U):
                        c[u] = k + u * step
                for u in ol.static_range(U):
                    if arg_takes(a[u], i[u], v[u], c[u], BETTER(v[u], a[u])):
                        a[u] = v[u]
                        i[u] = c[u]
                k += U * step
            while k < n:
                at = np.uint64(o + k * t2)
                v[0] = ACC(x[at])
                c[0] = k
                if fromp:  # a branch: xi is a stand-in of another size otherwise
                    c[0] = xi[at]
                if arg_takes(a[0], i[0], v[0], c[0], BETTER(v[0], a[0])):
                    a[0] = v[0]
                    i[0] = c[0]
                k += step
        else:
            n12 = n1 * n2
            while k < n:
                at = np.uint64(o + (k // n12) * t0 + ((k // n2) % n1) * t1 + (k % n2) * t2)
                v[0] = ACC(x[at])
                c[0] = k
                if fromp:
                    c[0] = xi[at]
                if arg_takes(a[0], i[0], v[0], c[0], BETTER(v[0], a[0])):
                    a[0] = v[0]
                    i[0] = c[0]
                k += step
    for e in ol.static_range(U.bit_length() - 2, -1, -1):
        for j in ol.static_range(1 << e):
            h = j + (1 << e)
            if arg_takes(a[j], i[j], a[h], i[h], BETTER(a[h], a[j])):
                a[j] = a[h]
                i[j] = i[h]
    bv = ol.local_array(G, ACC)
    bi = ol.local_array(G, np.int64)
    bv[li] = a[0]
    bi[li] = i[0]
    ol.group_barrier(grp)
    h = nk // 2
    while h > 0:
        if lk < h:
            w = bv[li + h * kst]
            d = bi[li + h * kst]
            if arg_takes(bv[li], bi[li], w, d, BETTER(w, bv[li])):
                bv[li] = w
                bi[li] = d
        ol.group_barrier(grp)
        h //= 2
    if lk == 0 and m < out.shape[0]:
        if final:
            out[np.uint64(m)] = bi[li]
        else:
            part[m * nsplit + s] = bv[li]
            parti[m * nsplit + s] = bi[li]


# ---- the CPU forms ----------------------------------------------------------
# A CPU runs the tree one work-item at a time (a float32 sum of 2**24: 27-60
# ms, NumPy 3). Where an output's elements lie contiguous, a CPU reduces
# them in S runs per output, a work-group each, walked in blocks of ROWS x
# COLS: in LANES = COLS work-items where the device vectorises across
# work-items (Intel's runtime), lane l taking the block's column l; else
# (PoCL) in one work-item with COLS accumulators, one per column. The runs'
# partials meet in the tree's second pass.


@ol.kernel
def reduce_cpu(item, x, out, part, base, Q, sp, sq, K, t2, S, ident, count, final,
               OP: ol.constexpr, ACC: ol.constexpr, CAST: ol.constexpr, OUT: ol.constexpr,
               MEAN: ol.constexpr, BLK: ol.constexpr, LANES: ol.constexpr, COLS: ol.constexpr,
               ROWS: ol.constexpr):
    """Run r % S of output m = r // S: its k range [k, hi) is whole blocks
    but the run's last; each block adds up in BLK (float32 for float32 sums
    of float32: the block is short, its total goes on in ACC) and the last
    elements one by one, lane l taking l, l + LANES, ... Leaves LANES
    partials, or with one run of one work-item, when final, the result."""
    l = item.get_local_id(0)
    r = item.get_group().get_group_id(0)
    lane = l if LANES > 1 else 0
    m = r // S
    o = base + (m // Q) * sp + (m % Q) * sq
    c = (K + S - 1) // S
    c = (c + ROWS * COLS - 1) // (ROWS * COLS) * (ROWS * COLS)
    k = (r % S) * c
    hi = min(k + c, K)
    total = ident
    if nan_flagged(OP, ACC, LANES):
        seen_nan = False
    # all() in one work-item walks its run in the plain loop alone: the block
    # of 16 uint8 flags and-ed 8 rows deep sent PoCL 3.1's LLVM 15 into a
    # loop, never ending on a cold cache (docs/reductions.md)
    if not (OP is bit_and and LANES == 1):
        a = ol.private_array(COLS, BLK)
        while k + ROWS * COLS - 1 < hi:
            for row in ol.static_range(ROWS):
                for u in ol.static_range(1 if LANES > 1 else COLS):
                    w = BLK(CAST(x[np.uint64(o + k + row * COLS + u + lane)]))
                    if row == 0:
                        a[u] = w
                    elif nan_flagged(OP, ACC, LANES):
                        if OP is minimum:
                            a[u] = w if w < a[u] else a[u]
                        else:
                            a[u] = w if w > a[u] else a[u]
                        seen_nan = seen_nan | (w != w)
                    else:
                        a[u] = OP(a[u], w)
            if LANES == 1:
                for e in ol.static_range(COLS.bit_length() - 2, -1, -1):
                    for j in ol.static_range(1 << e):
                        a[j] = OP(a[j], a[j + (1 << e)])
            total = OP(total, ACC(a[0]))
            k += ROWS * COLS
    k += l
    while k < hi:
        total = OP(total, ACC(CAST(x[np.uint64(o + k)])))
        k += LANES
    if nan_flagged(OP, ACC, LANES):
        if seen_nan:
            total = ACC(math.nan)
    if final:
        out[np.uint64(m)] = OUT(total / count) if MEAN else OUT(total)
    else:
        part[r * LANES + l] = total


@ol.device_func
def arg_takes_in_order(a, i, v, c, better):
    """Whether (a, i) takes (v, c), c coming after i: v is better, or v is
    the first NaN, or a is still the identity (i is INDEX_NONE), which an
    element equal to it must replace. `|`, not `or`: selects, not branches."""
    return better | ((v != v) & (a == a)) | (i == INDEX_NONE)


@ol.kernel
def argreduce_cpu(item, x, part, parti, base, Q, sp, sq, K, t2, S, ident,
                  BETTER: ol.constexpr, ACC: ol.constexpr, LANES: ol.constexpr,
                  COLS: ol.constexpr, ROWS: ol.constexpr):
    """reduce_cpu for argmin/argmax: each column of the blocks (a lane's, or
    an accumulator pair of the one work-item) keeps (value, index), visiting
    its elements in order, so a tie keeps the earlier; the run always
    leaves its best as partials for the tree's second pass, which picks the
    best and, among equals, the first."""
    l = item.get_local_id(0)
    r = item.get_group().get_group_id(0)
    lane = l if LANES > 1 else 0
    m = r // S
    o = base + (m // Q) * sp + (m % Q) * sq
    c = (K + S - 1) // S
    c = (c + ROWS * COLS - 1) // (ROWS * COLS) * (ROWS * COLS)
    k = (r % S) * c
    hi = min(k + c, K)
    total = ident
    ti = INDEX_NONE
    slow = True
    if LANES > 1 and np.dtype(ACC).kind in "fc":
        # Lane l keeps only its best value and the first block that reached
        # it -- a compare and a select an element, where carrying the index
        # took three more -- and at the end finds its first element of that
        # block equal to the best. Equal values (-0.0 and +0.0 too) resolve
        # to the first, as NumPy's. Where a NaN was seen the run goes again
        # in the loop that keeps the first NaN.
        k0 = k
        seen_nan = False
        tb = -1
        while k + ROWS * COLS - 1 < hi:
            b = ACC(x[np.uint64(o + k + l)])
            seen_nan = seen_nan | (b != b)
            for row in ol.static_range(1, ROWS):
                w = ACC(x[np.uint64(o + k + row * COLS + l)])
                seen_nan = seen_nan | (w != w)
                b = w if BETTER(w, b) else b
            take = BETTER(b, total) | (tb == -1)
            total = b if take else total
            tb = k if take else tb
            k += ROWS * COLS
        if tb >= 0:
            for row in ol.static_range(ROWS - 1, -1, -1):  # the last match written is the first
                w = ACC(x[np.uint64(o + tb + row * COLS + l)])
                ti = tb + row * COLS + l if w == total else ti
        slow = seen_nan
        if seen_nan:
            k = k0
            total = ident
            ti = INDEX_NONE
    if slow:
        a = ol.private_array(COLS, ACC)
        i = ol.private_array(COLS, np.int64)
        while k + ROWS * COLS - 1 < hi:
            for row in ol.static_range(ROWS):
                for u in ol.static_range(1 if LANES > 1 else COLS):
                    at = k + row * COLS + u + lane
                    w = ACC(x[np.uint64(o + at)])
                    if row == 0:
                        a[u] = w
                        i[u] = at
                    else:
                        take = BETTER(w, a[u]) | ((w != w) & (a[u] == a[u]))
                        a[u] = w if take else a[u]
                        i[u] = at if take else i[u]
            if LANES == 1:  # the columns, in any order: ties go by index
                for e in ol.static_range(COLS.bit_length() - 2, -1, -1):
                    for j in ol.static_range(1 << e):
                        h = j + (1 << e)
                        if arg_takes(a[j], i[j], a[h], i[h], BETTER(a[h], a[j])):
                            a[j] = a[h]
                            i[j] = i[h]
            take = arg_takes_in_order(total, ti, a[0], i[0], BETTER(a[0], total))
            total = a[0] if take else total
            ti = i[0] if take else ti
            k += ROWS * COLS
    k += l
    while k < hi:
        w = ACC(x[np.uint64(o + k)])
        take = arg_takes_in_order(total, ti, w, k, BETTER(w, total))
        total = w if take else total
        ti = k if take else ti
        k += LANES
    part[r * LANES + l] = total
    parti[r * LANES + l] = ti


@ol.kernel
def reduce_cpu_cols(item, x, out, part, base, Q, sp, sq, K, t2, S, ident, count, final,
                    OP: ol.constexpr, ACC: ol.constexpr, CAST: ol.constexpr, OUT: ol.constexpr,
                    MEAN: ol.constexpr, LANES: ol.constexpr, WIDTH: ol.constexpr,
                    UNIT: ol.constexpr):
    """The CPU form across outputs (a sum over axis 0 of a C-contiguous
    matrix): a tile of WIDTH neighbouring outputs walks run r % S of its k
    range together, a row of the tile per k step, in lanes or in one
    work-item's accumulators; the last tile is moved back to end at the
    last output (it recomputes a few of its neighbour's, writing the same
    values). UNIT: outputs one element apart, which the index must say for
    the device compiler to see a run (with `* sq` it gathers)."""
    l = item.get_local_id(0)
    r = item.get_group().get_group_id(0)
    lane = l if LANES > 1 else 0
    m0 = min((r // S) * WIDTH, out.shape[0] - WIDTH)
    c = (K + S - 1) // S
    k = (r % S) * c
    hi = min(k + c, K)
    a = ol.private_array(WIDTH // LANES, ACC)
    for u in ol.static_range(WIDTH // LANES):
        a[u] = ident
    while k < hi:
        for u in ol.static_range(WIDTH // LANES):
            if UNIT:
                w = ACC(CAST(x[np.uint64(base + m0 + lane + u * LANES + k * t2)]))
            else:
                w = ACC(CAST(x[np.uint64(base + (m0 + lane + u * LANES) * sq + k * t2)]))
            a[u] = OP(a[u], w)
        k += 1
    for u in ol.static_range(WIDTH // LANES):
        m = m0 + lane + u * LANES
        if final:
            out[np.uint64(m)] = OUT(a[u] / count) if MEAN else OUT(a[u])
        else:
            part[m * S + r % S] = a[u]


@ol.kernel
def reduce_cpu_acc(item, x, part, base, M, K, t2, S, ident,
                   OP: ol.constexpr, ACC: ol.constexpr, CAST: ol.constexpr,
                   LANES: ol.constexpr):
    """The CPU form into partials, over the outer axis of a C-contiguous
    block (outputs one element apart): run r adds every row of its band of
    K into a row of partials, part[r * M + m], which stays in cache while x
    streams through in address order, as NumPy does (out += row). Lane l
    takes the outputs l, l + LANES, ..."""
    l = item.get_local_id(0)
    r = item.get_group().get_group_id(0)
    c = (K + S - 1) // S
    k = r * c
    hi = min(k + c, K)
    p = r * M
    e = M - M % LANES
    for j in range(0, e, LANES):
        part[np.uint64(p + j + l)] = ident
    if e + l < M:
        part[np.uint64(p + e + l)] = ident
    # the full steps; then, in a loop of their own (a branch on the lane in
    # the first made Intel's code masked throughout: 0.2 -> 0.6 ms), the
    # lanes of the last, partial step
    while k < hi:
        o = base + k * t2
        for j in range(0, e, LANES):
            w = ACC(CAST(x[np.uint64(o + j + l)]))
            part[np.uint64(p + j + l)] = OP(part[np.uint64(p + j + l)], w)
        k += 1
    if e + l < M:
        k = r * c
        while k < hi:
            w = ACC(CAST(x[np.uint64(base + k * t2 + e + l)]))
            part[np.uint64(p + e + l)] = OP(part[np.uint64(p + e + l)], w)
            k += 1
