"""Element-wise operations' device code, in the kernel language, planned
and launched by module/lib/elementwise/mod_ops.c.

One device function per NumPy loop: `add` computes an element of
numpy.add from operands already in the loop's dtype; `add_bool`,
`add_int` and `add_complex` are the bool, integer and complex loops where
they differ (NumPy answers the dtypes: ufunc.resolve_dtypes). The one
kernel, `elementwise`, takes the function as a compile-time parameter.
"""
import math

import numpy as np
import offload as ol


@ol.kernel
def elementwise(it, out, x0, x1, x2, F: ol.constexpr, T: ol.constexpr, ND: ol.constexpr,
                U: ol.constexpr):
    """out = F(x0, ..., x<len(T) - 1>) element by element over an ND-dimensional
    range (ND <= 3; mod_ops merges what it can and loops over the rest).
    T[k] is the loop dtype that array operand k is cast to, or None for a
    scalar, passed already in it; operands beyond len(T) are stand-ins,
    never read. With ND == 1 and U > 1 (a GPU) a work-item does U
    elements, m apart, loading all before storing any: on an H100 that
    takes x * 4.0 from 80 % to the device copy's bandwidth. A CPU device
    vectorises across work-items instead, and the unrolled body with its
    tail loop defeats that (Intel: x * 4 over 2**22 float32 4.3 ms, 1 ms
    with one element a work-item)."""
    if ND == 1 and U > 1:
        i = it.get_id(0)
        m = it.get_range(0)
        n = out.shape[0]
        if i + (U - 1) * m < n:
            if T[0] is not None:
                a0 = ol.private_array(U, T[0])
                for u in ol.static_range(U):
                    a0[u] = T[0](x0[i + u * m])
            if len(T) > 1 and T[1] is not None:
                a1 = ol.private_array(U, T[1])
                for u in ol.static_range(U):
                    a1[u] = T[1](x1[i + u * m])
            if len(T) > 2 and T[2] is not None:
                a2 = ol.private_array(U, T[2])
                for u in ol.static_range(U):
                    a2[u] = T[2](x2[i + u * m])
            for u in ol.static_range(U):
                v0 = x0 if T[0] is None else a0[u]
                if len(T) > 1:
                    v1 = x1 if T[1] is None else a1[u]
                if len(T) > 2:
                    v2 = x2 if T[2] is None else a2[u]
                out[i + u * m] = (F(v0) if len(T) == 1 else
                                  F(v0, v1) if len(T) == 2 else F(v0, v1, v2))
        else:
            for k in range(i, n, m):
                v0 = x0 if T[0] is None else T[0](x0[k])
                if len(T) > 1:
                    v1 = x1 if T[1] is None else T[1](x1[k])
                if len(T) > 2:
                    v2 = x2 if T[2] is None else T[2](x2[k])
                out[k] = F(v0) if len(T) == 1 else F(v0, v1) if len(T) == 2 else F(v0, v1, v2)
    elif ND == 1:
        i = it.get_id(0)
        v0 = x0 if T[0] is None else T[0](x0[i])
        if len(T) > 1:
            v1 = x1 if T[1] is None else T[1](x1[i])
        if len(T) > 2:
            v2 = x2 if T[2] is None else T[2](x2[i])
        out[i] = F(v0) if len(T) == 1 else F(v0, v1) if len(T) == 2 else F(v0, v1, v2)
    elif ND == 2:
        i = it.get_id(0)
        j = it.get_id(1)
        v0 = x0 if T[0] is None else T[0](x0[i, j])
        if len(T) > 1:
            v1 = x1 if T[1] is None else T[1](x1[i, j])
        if len(T) > 2:
            v2 = x2 if T[2] is None else T[2](x2[i, j])
        out[i, j] = F(v0) if len(T) == 1 else F(v0, v1) if len(T) == 2 else F(v0, v1, v2)
    else:
        i = it.get_id(0)
        j = it.get_id(1)
        k = it.get_id(2)
        v0 = x0 if T[0] is None else T[0](x0[i, j, k])
        if len(T) > 1:
            v1 = x1 if T[1] is None else T[1](x1[i, j, k])
        if len(T) > 2:
            v2 = x2 if T[2] is None else T[2](x2[i, j, k])
        out[i, j, k] = F(v0) if len(T) == 1 else F(v0, v1) if len(T) == 2 else F(v0, v1, v2)


# ---- the loops ---------------------------------------------------------------


@ol.device_func
def add(a, b):
    return a + b


@ol.device_func
def add_bool(a, b):
    return a or b


@ol.device_func
def subtract(a, b):
    return a - b


@ol.device_func
def multiply(a, b):
    return a * b


@ol.device_func
def multiply_bool(a, b):
    return a and b


@ol.device_func
def divide(a, b):
    return a / b


@ol.device_func
def floor_divide(a, b):
    return a // b


@ol.device_func
def remainder(a, b):
    return a % b


@ol.device_func
def power(a, b):
    return a ** b


@ol.device_func
def bitwise_and(a, b):
    return a & b


@ol.device_func
def bitwise_or(a, b):
    return a | b


@ol.device_func
def bitwise_xor(a, b):
    return a ^ b


@ol.device_func
def left_shift(a, b):
    return a << b


@ol.device_func
def right_shift(a, b):
    return a >> b


@ol.device_func
def equal(a, b):
    return a == b


@ol.device_func
def not_equal(a, b):
    return a != b


@ol.device_func
def less(a, b):
    return a < b


@ol.device_func
def less_equal(a, b):
    return a <= b


@ol.device_func
def greater(a, b):
    return a > b


@ol.device_func
def greater_equal(a, b):
    return a >= b


@ol.device_func
def negative(a):
    return -a


@ol.device_func
def positive(a):
    return +a


@ol.device_func
def invert(a):
    return ~a


@ol.device_func
def invert_bool(a):
    return not a


@ol.device_func
def absolute(a):
    return abs(a)


@ol.device_func
def absolute_bool(a):
    return a


@ol.device_func
def sqrt(a):
    return np.sqrt(a)


@ol.device_func
def exp(a):
    return np.exp(a)


@ol.device_func
def log(a):
    return np.log(a)


@ol.device_func
def log1p(a):
    return np.log1p(a)


@ol.device_func
def sin(a):
    return np.sin(a)


@ol.device_func
def cos(a):
    return np.cos(a)


@ol.device_func
def tan(a):
    return np.tan(a)


@ol.device_func
def tanh(a):
    return np.tanh(a)


@ol.device_func
def arctan2(a, b):
    return np.arctan2(a, b)


@ol.device_func
def floor(a):
    return np.floor(a)


@ol.device_func
def ceil(a):
    return np.ceil(a)


@ol.device_func
def minimum(a, b):
    return np.minimum(a, b)


@ol.device_func
def minimum_bool(a, b):
    return a and b


@ol.device_func
def minimum_complex(a, b):
    return (a if (a <= b or a != a) else b)


@ol.device_func
def maximum(a, b):
    return np.maximum(a, b)


@ol.device_func
def maximum_bool(a, b):
    return a or b


# complex orderings are lexicographic with NaN propagating, as NumPy's
# complex loops (CGE, CLE)
@ol.device_func
def maximum_complex(a, b):
    return (a if (a >= b or a != a) else b)


@ol.device_func
def isnan(a):
    return np.isnan(a)


@ol.device_func
def isfinite(a):
    return np.isfinite(a)


@ol.device_func
def arcsin(a):
    return np.arcsin(a)


@ol.device_func
def arccos(a):
    return np.arccos(a)


@ol.device_func
def arctan(a):
    return np.arctan(a)


@ol.device_func
def sinh(a):
    return np.sinh(a)


@ol.device_func
def cosh(a):
    return np.cosh(a)


@ol.device_func
def arcsinh(a):
    return np.arcsinh(a)


@ol.device_func
def arccosh(a):
    return np.arccosh(a)


@ol.device_func
def arctanh(a):
    return np.arctanh(a)


@ol.device_func
def expm1(a):
    return np.expm1(a)


@ol.device_func
def exp2(a):
    return np.exp2(a)


@ol.device_func
def log2(a):
    return np.log2(a)


@ol.device_func
def log10(a):
    return np.log10(a)


@ol.device_func
def cbrt(a):
    return np.cbrt(a)


@ol.device_func
def trunc(a):
    return np.trunc(a)


@ol.device_func
def rint(a):
    return np.rint(a)


@ol.device_func
def rint_complex(a):
    return complex(np.rint(a.real), np.rint(a.imag))


@ol.device_func
def fabs(a):
    return np.fabs(a)


@ol.device_func
def isinf(a):
    return np.isinf(a)


@ol.device_func
def signbit(a):
    return np.signbit(a)


# NumPy's: NaN stays NaN, -0.0 gives 0.0
@ol.device_func
def sign(a):
    return (np.int8(a > 0) - np.int8(a < 0)) if a == a else a


@ol.device_func
def sign_int(a):
    return np.int8(a > 0) - np.int8(a < 0)


@ol.device_func
def sign_complex(a):
    # NumPy 2's: z / |z|; 0 for 0; NaN for NaN or both parts infinite; one
    # infinite part gives its sign
    if a == 0:
        return complex(0.0, 0.0)
    if abs(a) < math.inf:
        return complex(a.real / abs(a), a.imag / abs(a))
    if abs(a) != abs(a) or (np.isinf(a.real) and np.isinf(a.imag)):
        return complex(math.nan, math.nan)
    if np.isinf(a.real):
        return complex(math.copysign(1.0, a.real), 0.0)
    return complex(0.0, math.copysign(1.0, a.imag))


@ol.device_func
def square(a):
    return a * a


@ol.device_func
def reciprocal(a):
    return 1 / a


# NumPy's integer loop converts 1.0 / x: 1 and -1 stay, the rest truncate to
# 0 (x = 0 gives what the host's conversion of inf gives: 0 here)
@ol.device_func
def reciprocal_int(a):
    return a if abs(a) == 1 else 0


@ol.device_func
def reciprocal_complex(a):
    # NumPy's loop: Smith's 1 / z
    if abs(a.imag) <= abs(a.real):
        r = a.imag / a.real
        return complex(1 / (a.real + a.imag * r), -r / (a.real + a.imag * r))
    r = a.real / a.imag
    return complex(r / (a.real * r + a.imag), -1 / (a.real * r + a.imag))


@ol.device_func
def conjugate(a):
    return a


@ol.device_func
def conjugate_complex(a):
    return a.conjugate()


@ol.device_func
def copysign(a, b):
    return np.copysign(a, b)


@ol.device_func
def hypot(a, b):
    return np.hypot(a, b)


@ol.device_func
def nextafter(a, b):
    return np.nextafter(a, b)


# NumPy's npy_logaddexp: equal operands (infinities of one sign too) add
# log(2); otherwise the larger plus log1p(exp(-|difference|)), NaN
# propagating through np.maximum
@ol.device_func
def logaddexp(a, b):
    return a + 0.6931471805599453 if a == b else np.maximum(a, b) + np.log1p(np.exp(-abs(a - b)))


@ol.device_func
def logaddexp2(a, b):
    if a == b:
        return a + 1
    return np.maximum(a, b) + np.log1p(np.exp2(-abs(a - b))) * 1.4426950408889634


@ol.device_func
def logical_and(a, b):
    return (a != 0) and (b != 0)


@ol.device_func
def logical_or(a, b):
    return (a != 0) or (b != 0)


@ol.device_func
def logical_xor(a, b):
    return (a != 0) != (b != 0)


@ol.device_func
def logical_not(a):
    return a == 0


# fmax, fmin: NaN loses unless both are
@ol.device_func
def fmax(a, b):
    return b if a != a else (a if b != b else np.maximum(a, b))


fmax_bool = maximum_bool  # NaN is no bool


@ol.device_func
def fmax_complex(a, b):
    return (a if (a >= b or b != b) else b)


@ol.device_func
def fmin(a, b):
    return b if a != a else (a if b != b else np.minimum(a, b))


fmin_bool = minimum_bool  # NaN is no bool


@ol.device_func
def fmin_complex(a, b):
    return (a if (a <= b or b != b) else b)


@ol.device_func
def fmod(a, b):
    return math.fmod(a, b)


# C's fmod of integers: the remainder of truncating division, 0 by 0
@ol.device_func
def fmod_int(a, b):
    return 0 if b == 0 else (a % b - b if (a % b != 0 and (a < 0) != (b < 0)) else a % b)


@ol.device_func
def heaviside(a, b):
    return b if a == 0 else (0 if a < 0 else (1 if a > 0 else a))


@ol.device_func
def deg2rad(a):
    return a * 0.017453292519943295


@ol.device_func
def rad2deg(a):
    return a * 57.29577951308232


@ol.device_func
def float_power(a, b):
    return a ** b


@ol.device_func
def clip(a, b, c):
    return np.minimum(np.maximum(a, b), c)


@ol.device_func
def clip_bool(a, b, c):
    return (a or b) and c


@ol.device_func
def clip_complex(a, b, c):
    return minimum_complex(maximum_complex(a, b), c)


@ol.device_func
def where(a, b, c):
    return b if a else c


@ol.device_func
def copy(a):
    return a


# NumPy's round: by a power of ten (a Python float, weak), rint, back
@ol.device_func
def round_up(a, b):
    return np.rint(a * b) / b


@ol.device_func
def round_up_complex(a, b):
    return complex(np.rint(a.real * b.real) / b.real, np.rint(a.imag * b.real) / b.real)


@ol.device_func
def round_down(a, b):
    return np.rint(a / b) * b


@ol.device_func
def round_down_complex(a, b):
    return complex(np.rint(a.real / b.real) * b.real, np.rint(a.imag / b.real) * b.real)


# a complex array into a real one: NumPy's cast drops the imaginary part
@ol.device_func
def copy_real(a):
    return a.real
