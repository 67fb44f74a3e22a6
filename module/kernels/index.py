"""Advanced indexing in the kernel language -- masks, nonzero, x[key],
x[key] = value, take -- planned and launched by module/lib/order/mod_index.c.

A mask is compacted in three kernels over work-groups of GROUP work-items,
each taking GROUP * PER elements: nz_count counts each group's nonzero
elements, nz_scan turns the counts into each group's first output (offs)
and their total, and nz_scatter (coordinates) or mask_take (the values
themselves) writes every group's elements from there in order.

access reads or writes x at the elements a key selects: the result's
dimensions, merged where every operand steps as one, come in meta with the
operands' strides, so one kernel serves every shape; the index arrays come
as one tuple I (C-contiguous int64, one per advanced index). Indices are
uint64 where they address memory, so that no negative index is ever
wrapped.
"""
import numpy as np
import offload as ol

# ---- compacting a mask ------------------------------------------------------


@ol.kernel
def nz_count(item, m, counts, n, GROUP: ol.constexpr, PER: ol.constexpr):
    """counts[g]: the nonzero elements of m[g * GROUP * PER, (g + 1) *
    GROUP * PER), summed by a tree in local memory. Neighbouring
    work-items read neighbouring elements."""
    grp = item.get_group()
    li = item.get_local_id(0)
    g = grp.get_group_id(0)
    c = np.int64(0)
    for e in range(PER):
        j = g * (GROUP * PER) + e * GROUP + li
        if j < n:
            if m[np.uint64(j)] != 0:
                c += 1
    buf = ol.local_array(GROUP, np.int64)
    buf[li] = c
    ol.group_barrier(grp)
    h = GROUP // 2
    while h > 0:
        if li < h:
            buf[li] = buf[li] + buf[li + h]
        ol.group_barrier(grp)
        h = h // 2
    if li == 0:
        counts[g] = buf[0]


@ol.device_func
def inclusive_scan(grp, li, buf, GROUP):
    """buf (GROUP int64 in local memory) becomes its inclusive scan
    (Hillis-Steele, in place: a barrier between reading and writing)."""
    h = 1
    while h < GROUP:
        v = np.int64(0)
        if li >= h:
            v = buf[li - h]
        ol.group_barrier(grp)
        buf[li] = buf[li] + v
        ol.group_barrier(grp)
        h = h * 2


@ol.kernel
def nz_scan(item, counts, offs, total, G, GROUP: ol.constexpr):
    """One group: offs = the exclusive scan of counts[0..G), total[0] =
    their sum. Work-item l takes a run of consecutive counts."""
    grp = item.get_group()
    li = item.get_local_id(0)
    per = (G + GROUP - 1) // GROUP
    lo = li * per
    hi = min(lo + per, G)
    s = np.int64(0)
    j = lo
    while j < hi:
        s += counts[np.uint64(j)]
        j += 1
    buf = ol.local_array(GROUP, np.int64)
    buf[li] = s
    ol.group_barrier(grp)
    inclusive_scan(grp, li, buf, GROUP)
    run = buf[li] - s
    j = lo
    while j < hi:
        offs[np.uint64(j)] = run
        run += counts[np.uint64(j)]
        j += 1
    if li == GROUP - 1:
        total[0] = buf[GROUP - 1]


@ol.kernel
def nz_scatter(item, m, offs, out, shp, k, n, total, GROUP: ol.constexpr, PER: ol.constexpr):
    """Group g writes the coordinates (in m's shape: its k dimensions in
    shp) of its nonzero elements, in C order from offs[g]: out[d * total +
    pos] for axis d. Each round of GROUP elements ranks its marks with a
    scan in local memory."""
    grp = item.get_group()
    li = item.get_local_id(0)
    g = grp.get_group_id(0)
    run = offs[g]
    buf = ol.local_array(GROUP, np.int64)
    for e in range(PER):
        j = g * (GROUP * PER) + e * GROUP + li
        f = np.int64(0)
        if j < n:
            if m[np.uint64(j)] != 0:
                f = np.int64(1)
        buf[li] = f
        ol.group_barrier(grp)
        inclusive_scan(grp, li, buf, GROUP)
        if f == 1:
            pos = run + buf[li] - 1
            rem = np.int64(j)
            d = k - 1
            while d >= 0:
                s = shp[np.uint64(d)]
                out[np.uint64(d * total + pos)] = rem % s
                rem = rem // s
                d -= 1
        run += buf[GROUP - 1]
        ol.group_barrier(grp)


@ol.kernel
def mask_take(item, m, x, offs, out, n, GROUP: ol.constexpr, PER: ol.constexpr,
              DT: ol.constexpr):
    """x[mask], both of one shape: group g copies the selected elements of
    x[g * GROUP * PER, ...) to out from offs[g]. Work-item l takes PER
    consecutive elements; a scan of the work-items' counts (Hillis-Steele,
    ping-pong) places them in local memory in order, and the group writes
    them out coalesced. DT: x's dtype."""
    grp = item.get_group()
    li = item.get_local_id(0)
    g = grp.get_group_id(0)
    base = g * (GROUP * PER) + li * PER
    c = np.int32(0)
    for e in range(PER):
        j = base + e
        if j < n:
            if m[np.uint64(j)] != 0:
                c += 1
    sc = ol.local_array(2 * GROUP, np.int32)
    vals = ol.local_array(GROUP * PER, DT)
    sc[li] = c
    ol.group_barrier(grp)
    s = 0
    d = 1
    while d < GROUP:
        v = sc[s + li]
        if li >= d:
            v = v + sc[s + li - d]
        sc[GROUP - s + li] = v
        ol.group_barrier(grp)
        s = GROUP - s
        d *= 2
    q = sc[s + li] - c
    for e in range(PER):
        j = base + e
        if j < n:
            if m[np.uint64(j)] != 0:
                vals[q] = x[np.uint64(j)]
                q += 1
    tot = sc[s + GROUP - 1]
    ol.group_barrier(grp)
    run = offs[g]
    i = li
    while i < tot:
        out[np.uint64(run + i)] = vals[i]
        i += GROUP


# ---- x[key] and x[key] = value ---------------------------------------------


@ol.kernel
def check(item, idx, n, flags, slot, FLAG: ol.constexpr):
    """An index array's bounds, before a scatter writes anything:
    flags[slot] keeps the first position whose index is outside [-n, n).
    FLAG: flags' dtype (int64 only for index arrays too long for int32)."""
    j = item.get_id(0)
    v = idx[j]
    if v < -n or v >= n:
        ol.AtomicRef(flags, slot).fetch_min(FLAG(j))


@ol.kernel
def access(item, dst, src, I, meta, nd, xb, vb, flags, MODE: ol.constexpr, FLAT: ol.constexpr,
           CHECK: ol.constexpr, FLAG: ol.constexpr):
    """Work-item o handles element o of the result, in C order.

    MODE 0, a gather: dst[o] = src[...] (dst the new C-contiguous result,
    src x's memory, 1-D). MODE 1, a scatter of an array: dst[...] =
    src[...] (dst x's memory, src the value's). MODE 2, a scatter of a
    scalar: dst[...] = src.

    meta: per merged result dimension d (from row 0), W numbers -- its
    length, x's stride, in MODE 1 the value's stride, then each index
    array's stride; after them, per index array its x stride and the
    length of the axis it indexes. xb, vb: the element of x's and the
    value's memory that coordinates and indices 0 read. FLAT: one merged
    dimension, whose coordinate is o itself (no division).

    CHECK[k]: the flag of index array k (gathers check as they read:
    an index out of range reads nothing, and flags[CHECK[k]] keeps its
    first position), -1 for arrays not checked here; flags is then any
    array, never read. FLAG: flags' dtype."""
    vcol = 1 if MODE == 1 else 0  # the value's stride has a column of meta
    width = 2 + vcol + len(I)  # meta's numbers per dimension
    o = item.get_id(0)
    rem = np.int64(o)
    xo = np.int64(xb)
    vo = np.int64(vb)
    p = ol.private_array(len(I), np.int64)  # each index array's position
    for k in ol.static_range(len(I)):
        p[k] = np.int64(0)
    d = 0 if FLAT else nd - 1
    while d >= 0:
        r = np.uint64(d * width)
        c = rem
        if not FLAT:
            s = meta[r]
            c = rem % s
            rem = rem // s
        xo += c * meta[r + 1]
        if MODE == 1:
            vo += c * meta[r + 2]
        for k in ol.static_range(len(I)):
            p[k] += c * meta[r + 2 + vcol + k]
        d -= 1
    e = np.uint64(nd * width)
    ok = True
    for k in ol.static_range(len(I)):
        w = I[k][np.uint64(p[k])]
        if CHECK[k] >= 0:
            if w < -meta[e + 2 * k + 1] or w >= meta[e + 2 * k + 1]:
                ol.AtomicRef(flags, CHECK[k]).fetch_min(FLAG(p[k]))
                ok = False
        if w < 0:
            w += meta[e + 2 * k + 1]
        xo += w * meta[e + 2 * k]
    if MODE == 0:
        if ok:
            dst[o] = src[np.uint64(xo)]
    elif MODE == 1:
        dst[np.uint64(xo)] = src[np.uint64(vo)]
    else:
        dst[np.uint64(xo)] = src
