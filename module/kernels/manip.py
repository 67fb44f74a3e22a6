"""repeat by an array of counts, in the kernel language, planned and
launched by module/lib/manip/mod_manip.c (the other manipulation functions are
views or mod_ops' copies).

The counts' running sums come in blocks of L counts a work-item:
repeat_sums writes each block's sum (-1 for a block with a negative
count), repeat_starts turns those into the blocks' starts and the total
(-1 if any count is negative), and repeat_cumsum writes each block's
running sums from its start. repeat_gather then copies each element of
the result from the input element whose run of counts holds it. Indices
into global arrays are uint64 where a negative one would cost a wrap.
"""
import numpy as np
import offload as ol


@ol.kernel
def repeat_sums(it, part, r, n, L):
    """part[b]: the sum of r[b * L, min((b + 1) * L, n)), or -1 if one of
    them is negative."""
    b = it.get_id(0)
    lo = b * L
    hi = min(lo + L, n)
    s = np.int64(0)
    bad = False
    for k in range(lo, hi):
        v = np.int64(r[np.uint64(k)])
        if v < 0:
            bad = True
        s += v
    if bad:
        s = np.int64(-1)
    part[np.uint64(b)] = s


@ol.kernel
def repeat_starts(it, part, nb, total):
    """One work-item: part[0..nb) becomes its exclusive scan, total[0] its
    sum (-1 if a block said -1)."""
    s = np.int64(0)
    bad = False
    for b in range(nb):
        v = part[np.uint64(b)]
        if v < 0:
            bad = True
        part[np.uint64(b)] = s
        s += v
    if bad:
        s = np.int64(-1)
    total[0] = s


@ol.kernel
def repeat_cumsum(it, cum, part, r, n, L):
    """cum[k] = r[0] + ... + r[k] for the k of block b, from its start
    part[b]."""
    b = it.get_id(0)
    lo = b * L
    hi = min(lo + L, n)
    s = part[np.uint64(b)]
    for k in range(lo, hi):
        s += np.int64(r[np.uint64(k)])
        cum[np.uint64(k)] = s


@ol.kernel
def repeat_gather(it, out, x, cum, n, ND: ol.constexpr):
    """out[p, j(, q)] = x[p, i(, q)] for the i whose run of counts holds j:
    the first i with cum[i] > j, by bisection. ND: 2 when the axis is the
    last (no q), else 3."""
    p = it.get_id(0)
    j = np.int64(it.get_id(1))
    lo = np.int64(0)
    hi = np.int64(n)
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[np.uint64(mid)] > j:
            hi = mid
        else:
            lo = mid + 1
    if ND == 2:
        out[p, np.uint64(j)] = x[p, np.uint64(lo)]
    else:
        q = it.get_id(2)
        out[p, np.uint64(j), q] = x[p, np.uint64(lo), q]
