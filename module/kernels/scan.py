"""Scans (cumulative sums and products) in the kernel language, planned and
launched by module/lib/reduce/mod_stats.c (docs/reductions.md has the forms).

Every kernel takes the same compile-time parameters:
  OP       the operator, one of reduce.py's device functions (add, multiply;
           bit_or, bit_and for bool)
  ACC      the accumulator's dtype: the result's, uint8 for bool
  ID       OP's identity (0 or 1)
  BOOLEAN  a bool scan (NumPy's add.accumulate with dtype=bool: a logical
           or; multiply: and): elements of x count as `x != 0`, and results
           are stored as `a != 0` into bool arrays
A row of K elements lies `inner` apart; out's rows hold Ko = K + inc (inc 1:
element 0 is the identity, an exclusive scan of the whole row). Indices are
uint64, so that no negative index is ever wrapped.
"""
import numpy as np
import offload as ol

# ---- runs form: each work-item scans one run of one row -------------------


@ol.kernel
def scan_runs(item, x, out, tot, M, K, Ko, inner, inc, S,
              OP: ol.constexpr, ACC: ol.constexpr, ID: ol.constexpr, BOOLEAN: ol.constexpr):
    """Work-item w scans run w // M (of S) of row w % M; with S > 1 its
    total goes to tot."""
    w = item.get_id(0)
    s = w // M
    m = w % M
    o = m // inner
    r = m % inner
    c = (K + S - 1) // S
    k = s * c
    hi = min(k + c, K)
    a = ACC(ID)
    if inc == 1 and s == 0:
        out[np.uint64(o * Ko * inner + r)] = (ID != 0) if BOOLEAN else ACC(ID)
    i = (o * K + k) * inner + r
    j = (o * Ko + inc + k) * inner + r
    while k < hi:
        a = OP(a, ACC(x[np.uint64(i)] != 0) if BOOLEAN else ACC(x[np.uint64(i)]))
        out[np.uint64(j)] = (a != 0) if BOOLEAN else a
        i += inner
        j += inner
        k += 1
    if S > 1:
        tot[np.uint64(s * M + m)] = (a != 0) if BOOLEAN else a


@ol.kernel
def scan_totals(item, tot, M, S,
                OP: ol.constexpr, ACC: ol.constexpr, ID: ol.constexpr, BOOLEAN: ol.constexpr):
    """The S run totals of row m, scanned in place."""
    m = item.get_id(0)
    a = ACC(ID)
    for s in range(S):
        a = OP(a, ACC(tot[np.uint64(s * M + m)]))
        tot[np.uint64(s * M + m)] = (a != 0) if BOOLEAN else a


@ol.kernel
def scan_add_runs(item, out, tot, M, K, Ko, inner, inc, S,
                  OP: ol.constexpr, ACC: ol.constexpr, ID: ol.constexpr, BOOLEAN: ol.constexpr):
    """Run s + 1 of row m gets the total of runs 0..s."""
    w = item.get_id(0)
    s = w // M + 1
    m = w % M
    o = m // inner
    r = m % inner
    c = (K + S - 1) // S
    k = s * c
    hi = min(k + c, K)
    p = ACC(tot[np.uint64((s - 1) * M + m)])
    j = (o * Ko + inc + k) * inner + r
    while k < hi:
        v = OP(p, ACC(out[np.uint64(j)]))
        out[np.uint64(j)] = (v != 0) if BOOLEAN else v
        j += inner
        k += 1


# ---- blocks form: work-groups scan spans of a row, tile by tile ------------
# Group g works on span g % Gr (C elements from k0, the last shorter) of row
# g // Gr. GROUP: the most work-items a group has (the local arrays' size);
# P: elements per work-item of a tile.


@ol.device_func
def padded(q):
    """Local index of tile element q: one word of padding per 32, so that
    work-item l's run (l * P + e) meets no bank twice."""
    return q + (q >> 5)


@ol.kernel
def scan_reduce(item, x, tot, K, inner, Gr, C, OP: ol.constexpr, ACC: ol.constexpr,
                ID: ol.constexpr, BOOLEAN: ol.constexpr, GROUP: ol.constexpr, P: ol.constexpr):
    """Only when a row has several spans: tot[g] = the total of group g's
    span. Neighbouring work-items take neighbouring elements; full rounds of
    P loads are unconditional, so that their loads are all in flight."""
    li = item.get_local_id(0)
    grp = item.get_group()
    g = grp.get_group_id(0)
    L = item.get_local_range(0)
    m = g // Gr
    b = g % Gr
    o = m // inner
    r = m % inner
    k0 = b * C
    k1 = min(k0 + C, K)
    ib = o * K * inner + r
    a = ACC(ID)
    kk = k0 + li
    i = ib + kk * inner
    step = L * inner
    while kk + (P - 1) * L < k1:
        for e in range(P):
            v = x[np.uint64(i + e * step)]
            a = OP(a, ACC(v != 0) if BOOLEAN else ACC(v))
        kk += P * L
        i += P * step
    while kk < k1:
        a = OP(a, ACC(x[np.uint64(i)] != 0) if BOOLEAN else ACC(x[np.uint64(i)]))
        kk += L
        i += step
    red = ol.local_array(GROUP, ACC)
    red[li] = a
    ol.group_barrier(grp)
    h = L // 2
    while h > 0:
        if li < h:
            red[li] = OP(red[li], red[li + h])
        ol.group_barrier(grp)
        h = h // 2
    if li == 0:
        tot[g] = (red[0] != 0) if BOOLEAN else red[0]


@ol.kernel
def scan_blocks(item, x, out, tot, K, Ko, inner, inc, Gr, C, OP: ol.constexpr, ACC: ol.constexpr,
                ID: ol.constexpr, BOOLEAN: ol.constexpr, GROUP: ol.constexpr, P: ol.constexpr,
                EXCLUSIVE: ol.constexpr):
    """Group g starts from the total of the spans before its own (tot,
    summed by the group), then scans its span tile by tile of L * P elements
    in local memory -- coalesced loads, a sequential run per work-item, a
    Hillis-Steele tree (ping-pong, one barrier a step) over the runs'
    totals, coalesced stores -- carrying the total from tile to tile.
    EXCLUSIVE: element k gets the total before it (the sort's scans, in
    place: a tile is read before it is written)."""
    li = item.get_local_id(0)
    grp = item.get_group()
    g = grp.get_group_id(0)
    L = item.get_local_range(0)
    m = g // Gr
    b = g % Gr
    o = m // inner
    r = m % inner
    k0 = b * C
    k1 = min(k0 + C, K)
    ib = o * K * inner + r
    ob = (o * Ko + inc) * inner + r
    red = ol.local_array(GROUP, ACC)
    buf = ol.local_array(GROUP * P + GROUP * P // 32, ACC)
    sc = ol.local_array(2 * GROUP, ACC)
    a = ACC(ID)
    j = li
    while j < b:
        a = OP(a, ACC(tot[np.uint64(m * Gr + j)]))
        j += L
    red[li] = a
    ol.group_barrier(grp)
    h = L // 2
    while h > 0:
        if li < h:
            red[li] = OP(red[li], red[li + h])
        ol.group_barrier(grp)
        h = h // 2
    p = red[0]
    if inc == 1 and b == 0 and li == 0:
        out[np.uint64(o * Ko * inner + r)] = (ID != 0) if BOOLEAN else ACC(ID)
    t0 = k0
    while t0 < k1:
        for e in range(P):
            q = e * L + li
            kk = t0 + q
            v = ACC(ID)
            if kk < k1:
                u = x[np.uint64(ib + kk * inner)]
                v = ACC(u != 0) if BOOLEAN else ACC(u)
            buf[padded(q)] = v
        ol.group_barrier(grp)
        a = ACC(ID)
        for e in range(P):
            q = li * P + e
            v = buf[padded(q)]
            if EXCLUSIVE:
                buf[padded(q)] = a
                a = OP(a, v)
            else:
                a = OP(a, v)
                buf[padded(q)] = a
        sc[li] = a
        ol.group_barrier(grp)
        c = 0
        d = 1
        while d < L:
            v = sc[c + li]
            if li >= d:
                v = OP(sc[c + li - d], v)
            sc[L - c + li] = v
            ol.group_barrier(grp)
            c = L - c
            d *= 2
        s = p
        if li > 0:
            s = OP(p, sc[c + li - 1])
        for e in range(P):
            q = li * P + e
            buf[padded(q)] = OP(s, buf[padded(q)])
        p = OP(p, sc[c + L - 1])
        ol.group_barrier(grp)
        for e in range(P):
            q = e * L + li
            kk = t0 + q
            if kk < k1:
                out[np.uint64(ob + kk * inner)] = (buf[padded(q)] != 0) if BOOLEAN else buf[padded(q)]
        ol.group_barrier(grp)
        t0 += L * P
