"""Reductions' device code, in the kernel language.

The operators are device functions that a kernel takes as a compile-time
parameter, so one kernel serves every operator and dtype. minimum and
maximum keep a NaN, as NumPy's do.
"""
import offload as ol


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


@ol.device_func
def minimum(a, b):
    return b if (b < a) | (b != b) else a


@ol.device_func
def maximum(a, b):
    return b if (b > a) | (b != b) else a


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
