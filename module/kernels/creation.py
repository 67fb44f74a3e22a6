"""The creation functions that compute their elements -- fills, eye, tril
and triu, linspace -- in the kernel language, planned and launched by
module/lib/namespace/mod_namespace.c.

Compile-time parameters:
  DT  the result's dtype, which eye's and the triangles' zeros and ones
      are cast to
  CT  linspace's computation dtype (float64, or float32 on a device
      without float64), OT its result's
"""
import numpy as np
import offload as ol


@ol.kernel
def fill(it, out, v):
    """out[i] = v for a 1-D out: v is a NumPy scalar of out's dtype, passed
    by value, so its type picks the variant."""
    out[it.get_id(0)] = v


@ol.kernel
def eye(it, out, k, DT: ol.constexpr):
    """out[i, j] = 1 on the k-th diagonal (j - i == k), 0 elsewhere."""
    i = it.get_id(0)
    j = it.get_id(1)
    out[i, j] = DT(j - i == k)


@ol.kernel
def triangle(it, out, x, k, LOWER: ol.constexpr, DT: ol.constexpr):
    """out[b] = tril(x[b], k) (LOWER) or triu(x[b], k), over (stack, row,
    column): x's element where j - i <= k (j - i >= k), zero elsewhere."""
    b = it.get_id(0)
    i = it.get_id(1)
    j = it.get_id(2)
    if LOWER:
        keep = j - i <= k
    else:
        keep = j - i >= k
    out[b, i, j] = x[b, i, j] if keep else DT(0)


@ol.kernel
def linspace(it, out, start, stop, step, delta, div, last, FORM: ol.constexpr, CT: ol.constexpr,
             OT: ol.constexpr):
    """NumPy's linspace element i, each operation rounded in CT as NumPy
    rounds it: FORM 0 (one interval or none: NumPy's step is nan) i *
    delta + start, FORM 1 (step underflowed to 0) i / div * delta + start,
    FORM 2 i * step + start; element `last` is stop exactly (-1 for none),
    and an integer result is floored before the cast to OT. start, stop,
    step, delta and div are CT scalars."""
    i = it.get_id(0)
    if FORM == 0:
        y = CT(i) * delta + start
    elif FORM == 1:
        y = CT(i) / div * delta + start
    else:
        y = CT(i) * step + start
    if i == last:
        y = stop
    if np.dtype(OT).kind in "iu":
        out[i] = OT(np.floor(y))
    else:
        out[i] = OT(y)
