"""jit/lib/complex.py -- complex arithmetic and functions in the kernel language.

The JIT's own device library: every function here is a device function that
jit_codegen calls where a kernel divides complex numbers, raises one to a
power known only at run time, or calls a math function on one (the rows of
jit_builtins name them). The build embeds this file (scripts/embed-kernels);
jit_parse parses it once per process, and each kernel inlines what it calls.
The algorithms, their special values and their sources: docs/complex.md.

Each function takes and returns complex numbers of one dtype, complex64 or
complex128, and computes on their parts in that precision. Two idioms keep
it so:
  - _make(z, re, im) is a complex of z's dtype: complex(re, im) alone is a
    Python complex (weak, held as complex128), and a variable takes the
    promotion of what is assigned to it, so assigning z first types it.
  - _wide(x) is True for float64 parts: a variable typed by x holds 1e300
    (inf in float32). After inlining it is a constant, and so is every
    threshold chosen by it.
The formulas compute every candidate first and then choose with
conditional expressions whose two sides are variables or constants, which
compile to selects (jit_cg_expr), in the order the special cases override
one another: straight-line code, as the builder code before this file
emitted, with the same operations, so the same results bit for bit.
Operand order matters where both operands may be NaN (the first one's sign
and payload survive on x86), so it is kept as written.

This file must stay ASCII; names starting with _ are helpers.
"""

import math

import numpy as np

import offload as ol

INF = math.inf
NAN = -math.nan  # C's 0.0 / 0.0 and x86's default NaN: the sign bit set
HALF_PI = 1.5707963267948966
QUARTER_PI = 0.7853981633974483
THREE_QUARTER_PI = 2.356194490192345
LOG2_E = 1.4426950408889634
LOG10_E = 0.4342944819032518
SQRT_BIG64 = 2.0**1020  # csqrt scales its argument past these
SQRT_BIG32 = 2.0**124
ATANH_FAR64 = 3.3519519824856493e153  # sqrt(max) / 4: catanh's 1/z from here
ATANH_FAR32 = 4.611686e18
ATANH_RHO64 = 1.0 / ATANH_FAR64
ATANH_RHO32 = 1.0 / ATANH_FAR32


def _make(z, re, im):
    w = z
    w = complex(re, im)
    return w


def _wide(x):
    k = x
    k = 1e300
    return k != INF


def cdiv(p, q):
    """p / q by Smith's algorithm, as NumPy."""
    a = p.real
    b = p.imag
    c = q.real
    d = q.imag
    ac = abs(c)
    ad = abs(d)
    rat1 = d / c
    scl1 = 1.0 / (c + d * rat1)
    re1 = (a + b * rat1) * scl1
    im1 = (b - a * rat1) * scl1
    zero = (ac == 0.0) & (ad == 0.0)
    re0 = a / ac
    im0 = b / ac
    re1 = re0 if zero else re1
    im1 = im0 if zero else im1
    rat2 = c / d
    scl2 = 1.0 / (d + c * rat2)
    re2 = (a * rat2 + b) * scl2
    im2 = (b * rat2 - a) * scl2
    first = ac >= ad
    re = re1 if first else re2
    im = im1 if first else im2
    return _make(p, re, im)


def cexp(z):
    """C99 cexp."""
    a = z.real
    b = z.imag
    e = math.exp(a)
    r = e * math.cos(b)
    i = e * math.sin(b)
    breal = b == 0.0
    r = e if breal else r
    i = b if breal else i
    bbad = not (abs(b) < INF)
    pinf = bbad & (a == INF)
    ninf = bbad & (a == -INF)
    bmb = b - b
    zb = math.copysign(0.0, b)
    r = 0.0 if ninf else r
    i = zb if ninf else i
    r = INF if pinf else r
    i = bmb if pinf else i
    return _make(z, r, i)


def clog(z):
    """log|z| + i arg z; near |z| = 1 from log1p."""
    a = z.real
    b = z.imag
    aa = abs(a)
    ab = abs(b)
    hi = max(aa, ab)
    lo = min(aa, ab)
    far = math.log(math.hypot(a, b))
    t = (hi - 1.0) * (hi + 1.0) + lo * lo
    near = 0.5 * math.log1p(t)
    is_near = ((hi > 0.5) & (hi < 2.0)) & (not (math.isnan(a) | math.isnan(b)))
    r = near if is_near else far
    i = math.atan2(b, a)
    return _make(z, r, i)


def clog2(z):
    w = clog(z)
    return _make(z, w.real * LOG2_E, w.imag * LOG2_E)


def clog10(z):
    w = clog(z)
    return _make(z, w.real * LOG10_E, w.imag * LOG10_E)


def clog1p(z):
    """NumPy's nc_log1p."""
    a1 = z.real + 1.0
    b = z.imag
    return _make(z, math.log(math.hypot(a1, b)), math.atan2(b, a1))


def cexpm1(z):
    """NumPy's nc_expm1."""
    a = z.real
    b = z.imag
    h = math.sin(b * 0.5)
    re = math.expm1(a) * math.cos(b) - 2.0 * h * h
    im = math.exp(a) * math.sin(b)
    return _make(z, re, im)


def csqrt(z):
    """C99 csqrt, scaled where a + |z| would overflow."""
    a = z.real
    b = z.imag
    aa = abs(a)
    ab = abs(b)
    big_at = SQRT_BIG64 if _wide(a) else SQRT_BIG32
    big = (aa > big_at) | (ab > big_at)
    a4 = a * 0.25
    b4 = b * 0.25
    sa = a4 if big else a
    sb = b4 if big else b
    h = math.hypot(sa, sb)
    tp = math.sqrt((sa + h) * 0.5)
    tn = math.sqrt((h - sa) * 0.5)
    pos = a >= 0.0
    rn = abs(sb) / (2.0 * tn)
    ip = sb / (2.0 * tp)
    tns = math.copysign(tn, sb)
    r = tp if pos else rn
    i = ip if pos else tns
    r2 = r * 2.0
    i2 = i * 2.0
    r = r2 if big else r
    i = i2 if big else i
    # special values, the most binding last
    bmb = b - b  # 0, or NaN for an infinite or NaN b
    ninf = a == -INF
    abmb = abs(bmb)
    inf_b = math.copysign(INF, b)
    r = abmb if ninf else r
    i = inf_b if ninf else i
    pinf = a == INF
    bmb_b = math.copysign(bmb, b)
    r = a if pinf else r
    i = bmb_b if pinf else i
    anan = math.isnan(a)
    apb = a + b
    r = a if anan else r
    i = apb if anan else i
    binf = ab == INF
    r = INF if binf else r
    i = b if binf else i
    zz = (a == 0.0) & (b == 0.0)
    r = 0.0 if zz else r
    i = b if zz else i
    return _make(z, r, i)


def csin(z):
    """sin a cosh b + i cos a sinh b."""
    a = z.real
    b = z.imag
    sa = math.sin(a)
    ca = math.cos(a)
    chb = math.cosh(b)
    shb = math.sinh(b)
    azero = a == 0.0
    bzero_abad = (b == 0.0) & (not (abs(a) < INF))
    both_bad = (not (abs(a) < INF)) & (abs(b) == INF)
    sc = sa * chb
    cs = ca * shb
    r = a if azero else sc
    i = b if bzero_abad else cs
    r = NAN if both_bad else r
    i = INF if both_bad else i
    return _make(z, r, i)


def ccos(z):
    """cos a cosh b - i sin a sinh b, with glibc's ccosh(-b + ai) special values."""
    a = z.real
    b = z.imag
    sa = math.sin(a)
    ca = math.cos(a)
    chb = math.cosh(b)
    shb = math.sinh(b)
    azero = a == 0.0
    both_bad = (not (abs(a) < INF)) & (abs(b) == INF)
    r = ca * chb
    i0 = -(a * math.copysign(1.0, b))
    nss = -(sa * shb)
    i = i0 if azero else nss
    abad_bfin = (not (abs(a) < INF)) & (abs(b) < INF)
    bzero = b == 0.0
    i_ab = 0.0 if bzero else NAN
    i = i_ab if abad_bfin else i
    r = NAN if abad_bfin else r
    azero_bnan = azero & math.isnan(b)
    i = a if azero_bnan else i
    r = INF if both_bad else r
    i = NAN if both_bad else i
    return _make(z, r, i)


def ctanh(z):
    """Kahan's formula (as FreeBSD's ctanh); past |a| of 22 (9 for float32)
    tanh a is 1 to the last bit."""
    a = z.real
    b = z.imag
    t = math.tan(b)
    s = math.sinh(a)
    beta = 1.0 + t * t
    rho = math.sqrt(1.0 + s * s)
    den = 1.0 + beta * s * s
    r = beta * rho * s / den
    i = t / den
    big = abs(a) >= (22 if _wide(a) else 9)
    ib = 4.0 * math.sin(b) * math.cos(b) * math.exp(-2.0 * abs(a))
    zb = math.copysign(0.0, b)
    ib = ib if abs(b) < INF else zb
    one_a = math.copysign(1.0, a)
    r = one_a if big else r
    i = ib if big else i
    breal = b == 0.0
    th = math.tanh(a)
    r = th if breal else r
    i = b if breal else i
    aimag = a == 0.0  # i tan b, a's zero kept
    r = a if aimag else r
    i = t if aimag else i
    # glibc's: a not infinite and not zero, b infinite or NaN: NaN
    nan_case = ((abs(a) != INF) & (a != 0.0)) & (not (abs(b) < INF))
    r = NAN if nan_case else r
    i = NAN if nan_case else i
    return _make(z, r, i)


def casin(z):
    """Kahan's: atan2(a, Re(p q)) + i asinh(Im(conj(p) q)), p = sqrt(1 - z),
    q = sqrt(1 + z)."""
    a = z.real
    b = z.imag
    p = csqrt(_make(z, 1.0 - a, -b))
    q = csqrt(_make(z, 1.0 + a, b))
    pr = p.real
    pi = p.imag
    qr = q.real
    qi = q.imag
    bnan = math.isnan(b)
    ainf = abs(a) == INF
    binf = abs(b) == INF
    r = math.atan2(a, pr * qr - pi * qi)
    r = a if a == 0.0 else r
    hp_a = math.copysign(HALF_PI, a)
    r = hp_a if ainf else r
    i = math.asinh(math.copysign(pr * qi - pi * qr, b))
    # both infinite: (+-pi/4, b); a infinite, b NaN: (NaN, inf)
    both = ainf & binf
    qp_a = math.copysign(QUARTER_PI, a)
    r = qp_a if both else r
    i = b if both else i
    anb = ainf & bnan
    r = b if anb else r
    i = INF if anb else i
    return _make(z, r, i)


def cacos(z):
    """Kahan's: 2 atan2(Re p, Re q) + i asinh(Im(conj(q) p)), with C99's
    (glibc's) special values."""
    a = z.real
    b = z.imag
    p = csqrt(_make(z, 1.0 - a, -b))
    q = csqrt(_make(z, 1.0 + a, b))
    pr = p.real
    pi = p.imag
    qr = q.real
    qi = q.imag
    anan = math.isnan(a)
    bnan = math.isnan(b)
    ainf = abs(a) == INF
    binf = abs(b) == INF
    r = 2.0 * math.atan2(pr, qr)
    i = math.asinh(qr * pi - qi * pr)
    # a NaN a gives (NaN, -b) for an infinite b, else NaN; a NaN b gives
    # (NaN, -inf) for an infinite a, (pi/2, b) for a zero a, else NaN
    azero = a == 0.0
    bn_r = HALF_PI if azero else b
    bn_i = -INF if ainf else b
    r = bn_r if bnan else r
    i = bn_i if bnan else i
    r = a if anan else r
    i_an = -b if binf else a
    i = i_an if anan else i
    # both infinite: (pi/4 or 3 pi/4, -b)
    both = ainf & binf
    r_both = QUARTER_PI if a > 0.0 else THREE_QUARTER_PI
    r = r_both if both else r
    i = -b if both else i
    # zero: (pi/2, -b)
    zz = azero & (b == 0.0)
    r = HALF_PI if zz else r
    i = -b if zz else i
    return _make(z, r, i)


def catanh(z):
    """Kahan's (as Julia's): past sqrt(max)/4, 1/z's real part + i pi/2;
    else from |a| (the result's signs follow a)."""
    a = z.real
    b = z.imag
    wide = _wide(a)
    theta = ATANH_FAR64 if wide else ATANH_FAR32
    rho = ATANH_RHO64 if wide else ATANH_RHO32
    ax = abs(a)
    ay = abs(b)
    # far out: Re(1/z) by Smith's division, i pi/2 with b's sign
    q1 = b / a
    q2 = a / b
    f1 = 1.0 / (a + b * q1)
    f2 = q2 / (a * q2 + b)
    far_r = f1 if ax >= ay else f2
    far_i = math.copysign(HALF_PI, b)
    binf = ay == INF
    bnan = math.isnan(b)
    ainf = ax == INF
    za = math.copysign(0.0, a)
    far_r = za if binf | (bnan & ainf) else far_r
    far_i = b if bnan else far_i
    # a NaN a and a finite b: NaN (C99)
    far_i = a if math.isnan(a) & (not binf) else far_i
    far = (ax > theta) | (ay > theta)
    # near: z times the sign of a
    beta = math.copysign(1.0, a)
    xr = ax
    y = b * beta
    ayr = ay + rho
    ysq = ayr * ayr
    omx = 1.0 - xr
    xi = math.log1p(4.0 * xr / (omx * omx + ysq)) * 0.25
    xi = xr if xr == 0.0 else xi
    eta = math.atan2(2.0 * y, omx * (1.0 + xr) - ysq) * 0.5
    # x = 1: log(sqrt(sqrt(4 + y^2)) / sqrt|y|), (pi/2 + atan(|y| / 2)) / 2
    xone = xr == 1.0
    xi1 = math.log(math.sqrt(math.sqrt(4.0 + y * y)) / math.sqrt(ay))
    eta1 = math.copysign(HALF_PI + math.atan(ay * 0.5), y) * 0.5
    yzero = y == 0.0
    xi1 = INF if yzero else xi1
    eta1 = y if yzero else eta1
    xi = xi1 if xone else xi
    eta = eta1 if xone else eta
    nr = beta * xi
    ni = beta * eta
    r = far_r if far else nr
    i = far_i if far else ni
    return _make(z, r, i)


# C99's identities through i z = -b + ai: sinh z = -i sin(iz), tan z =
# -i tanh(iz), asinh z = -i asin(iz), atan z = -i atanh(iz); cosh z =
# cos(-iz) = cos(b - ai) (glibc's ccos(w) is ccosh(iw), and ccosh is not even
# in its NaNs' zeros); acosh z = +-i acos z, the real part >= 0, b's sign.
def csinh(z):
    w = csin(_make(z, -z.imag, z.real))
    return _make(z, w.imag, -w.real)


def ccosh(z):
    return ccos(_make(z, z.imag, -z.real))


def ctan(z):
    w = ctanh(_make(z, -z.imag, z.real))
    return _make(z, w.imag, -w.real)


def casinh(z):
    w = casin(_make(z, -z.imag, z.real))
    return _make(z, w.imag, -w.real)


def catan(z):
    w = catanh(_make(z, -z.imag, z.real))
    return _make(z, w.imag, -w.real)


def cacosh(z):
    w = cacos(z)
    return _make(z, abs(w.imag), math.copysign(w.real, z.imag))


def crint(z):
    """numpy.rint: both parts."""
    return _make(z, np.rint(z.real), np.rint(z.imag))


def _ipow(p, qr):
    """p ** n for an integral qr, |qr| < 100, as NumPy's npy_cpow: by
    squaring, all seven bits (NumPy's products per bit), 1 / p ** -n for a
    negative one; n = 1, 2, 3 skip the leading 1 * p (NaN for an infinite p)."""
    n = int(abs(qr))
    one = _make(p, 1.0, 0.0)
    sq = p * p
    acc = one
    pw = p
    for b in ol.static_range(7):  # the squaring after the last bit is dead code
        m = acc * pw
        acc = m if n & (1 << b) else acc
        pw = pw * pw
    p3 = p * sq
    r = acc
    r = p3 if n == 3 else r
    r = sq if n == 2 else r
    r = p if n == 1 else r
    inv = cdiv(one, r)
    return inv if qr < 0.0 else r


def cpow(p, q):
    """p ** q as NumPy's npy_cpow for an exponent known at run time:
    exp(q log p), an integral real exponent below 100 in magnitude by
    squaring, 0 ** q as NumPy (0 for a positive real q, NaN otherwise)."""
    e = cexp(q * clog(p))
    qr = q.real
    qi = q.imag
    # any other qr is replaced by 0 before int() (which of NaN is undefined)
    integral = ((qi == 0.0) & (qr == np.rint(qr))) & (abs(qr) < 100.0)
    ip = _ipow(p, qr if integral else 0.0)
    er = ip.real if integral else e.real
    ei = ip.imag if integral else e.imag
    pzero = (p.real == 0.0) & (p.imag == 0.0)
    qpos = (qr > 0.0) & (qi == 0.0)
    zr = 0.0 if qpos else NAN
    er = zr if pzero else er
    ei = zr if pzero else ei
    qzero = (qr == 0.0) & (qi == 0.0)
    one = _make(p, 1.0, 0.0)
    w = _make(p, er, ei)
    return one if qzero else w
