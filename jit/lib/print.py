"""jit/lib/print.py -- how print() in a kernel shows a float, in the kernel language.

The JIT's device library (as complex.py): float_repr is the device function
that jit_cg_print calls for each float a print() shows. It finds the
shortest digits that read back as the same value and lays them out as
repr() does for float64 and NumPy's str() for float32, as the six values
of the printf conversions "%s%.0ld%s%.0ld%s%.0ld" (docs/float-printing.md:
the algorithm, its sources and the forms).

What the language cannot say stays in C (jit_print.c): the bits of x
(there is no reinterpreting cast), and the strings: the words and point
slots out[0], out[2] and out[4] are indices, which C turns into addresses
in its table of strings. A device function returns no tuple, so the parts
go into out, a private int64 array of 6, and the double-doubles (hi, lo)
into private arrays of 2.

Each step is the operation the builder code before this file emitted, in
the same order, so the digits are the same bit for bit. Selects rather than
branches where the builder selected: the SPIR-V translator rejects the
reductions LLVM makes of independent terms.

This file must stay ASCII; names starting with _ are helpers.
"""

import numpy as np

import offload as ol

# The word indices (jit_print.c's table, in its order).
W_EMPTY = 0
W_MINUS = 1
W_ZERO = 2
W_MZERO = 3
W_INF = 4
W_MINF = 5
W_NAN = 6
W_EP = 7
W_EP0 = 8
W_EM = 9
W_EM0 = 10

INF = float("inf")
BELOW_END = 1.0 - 2.0**-36  # a distance this close to an end is decided in integers
ABOVE_END = 1.0 + 2.0**-36
TINY = 2.0**-500
HUGE = 2.0**500
UP512 = 2.0**512
DOWN512 = 2.0**-512


def _udiv(a, b):
    """a // b of non-negative a and positive b, as one unsigned division (the
    language's // of signed integers floors, which costs a remainder and fixups)."""
    return int(np.uint64(a) // np.uint64(b))


def _urem(a, b):
    """a % b of non-negative a and positive b, unsigned."""
    return int(np.uint64(a) % np.uint64(b))


def _pow10_step(t, neg, mag, i, uh, ul, dh, dl):
    """t *= 10^(2^i) (10^-(2^i) when neg) in double-double, when bit i of mag is set."""
    fh = dh if neg else uh
    fl = dl if neg else ul
    th = t[0]
    tl = t[1]
    p = th * fh
    e = ol.fma(th, fh, -p)
    c = e + (th * fl + tl * fh)
    s = p + c
    lo = c - (s - p)
    bit = ((mag >> i) & 1) == 1
    t[0] = s if bit else th
    t[1] = lo if bit else tl


def _pow10(k, s, t):
    """t = s * 10^k (abs(k) < 512) as a double-double, by the binary digits of abs(k):
    every factor on the same side of 1, so no partial product over- or
    underflows where the result does not; exact for 0 <= k <= 22 and s a power of two."""
    neg = k < 0
    nk = -k
    mag = nk if neg else k
    t[0] = s
    t[1] = 0.0
    _pow10_step(t, neg, mag, 0, 10.0, 0.0, 0.1, -5.551115123125783e-18)
    _pow10_step(t, neg, mag, 1, 100.0, 0.0, 0.01, -2.0816681711721684e-19)
    _pow10_step(t, neg, mag, 2, 10000.0, 0.0, 0.0001, -4.79217360238593e-21)
    _pow10_step(t, neg, mag, 3, 100000000.0, 0.0, 1e-08, -2.092256083012847e-25)
    _pow10_step(t, neg, mag, 4, 1e16, 0.0, 1e-16, 2.0902213275965398e-33)
    _pow10_step(t, neg, mag, 5, 1e32, -5366162204393472.0, 1e-32, -5.59673099762419e-49)
    _pow10_step(t, neg, mag, 6, 1e64, -2.1320419009454396e47, 1e-64, 3.469426116645307e-81)
    _pow10_step(t, neg, mag, 7, 1e128, -7.51744869165182e111, 1e-128, -5.401408859568103e-145)
    _pow10_step(t, neg, mag, 8, 1e256, -3.012765990014054e239, 1e-256, 2.2671708827212437e-273)


def _mul_d(t, d, out):
    """out = t * d, t a double-double."""
    p = t[0] * d
    e = ol.fma(t[0], d, -p)
    c = e + t[1] * d
    s = p + c
    out[0] = s
    out[1] = c - (s - p)


def _upow(b, w):
    """b^w for 0 <= w < 32, by w's binary digits: b, b^2, b^4, ... multiply in
    where w has a 1 (the caller keeps b^w within int64)."""
    v = 1
    for k in ol.static_range(5):
        if k > 0:
            b = b * b
        g = v * b
        v = g if (w & (1 << k)) != 0 else v
    return v


def _ndigits(v):
    """The number of decimal digits of 0 < v < 10^18 (1 for 0)."""
    n = 1
    p = 10
    while (v >= p) & (n < 18):
        n += 1
        p *= 10
    return n


def _reads_back(mc, dc, hu, hd, q, even, vu, eu, vd, ed):
    """Whether the decimal mc * 10^q, at dc = mc - S from S = x * 10^-q, reads
    back as x: strictly inside the interval (half-gaps hu above, hd below, in
    S's scale), or exactly on an end when x is even (round half to even:
    1e+23 lies half a gap from its double, and Python prints it so). A
    distance within 2^-36 of the end is decided exactly, in integers: the end
    v * 2^ev equals mc * 5^q * 2^q, which only an integer decimal (q >= 0) can."""
    above = dc >= 0.0
    ndc = -dc
    dist = dc if above else ndc
    h = hu if above else hd
    inside = dist < h * BELOW_END
    near = dist <= h * ABOVE_END
    v = vu if above else vd
    ev = eu if above else ed
    small = (q >= 0) & (q <= 23)
    qq = q if small else 0
    f5 = _upow(5, qq)
    t = ev - q
    shift = (t >= 0) & (t <= 62)
    ts = t if shift else 0
    odd = mc >> ts
    exact = small & shift & ((odd << ts) == mc) & (_urem(v, f5) == 0) & (_udiv(v, f5) == odd)
    return inside | (near & even & exact)


def float_repr(x, bits, single, out):
    """The six printf parts of x (a float64, or a float32 widened when single is
    1; bits: x's own bits, of its own width) into out: prefix word, integer A,
    point slot, integer B, exponent word, integer C. Digits: the first p at
    which the nearest p-digit decimal, or its other neighbour, reads back as x
    (17, 9 for float32, always do)."""
    ax = abs(x)
    sign = np.signbit(x)
    out[1] = 0
    out[3] = 0
    out[4] = W_EMPTY
    out[5] = 0
    if (x != x) | (ax == INF) | (ax == 0.0):
        # nan, inf and zero: a prefix word, and ".0" after a zero
        pfx = W_MZERO if sign else W_ZERO
        ipfx = W_MINF if sign else W_INF
        pfx = ipfx if ax == INF else pfx
        out[0] = W_NAN if x != x else pfx
        out[2] = 2 if ax == 0.0 else 0
        return

    # x = m * 2^e2i (m an integer); the ends of the interval of reals that
    # read back as x are vu * 2^eu above it and vd * 2^ed below (odd numerators)
    mant = 23 if single != 0 else 52
    bias = 127 if single != 0 else 1023
    mask = 0x7FFFFFFF if single != 0 else 0x7FFFFFFFFFFFFFFF
    ab = bits & mask
    expf = ab >> mant
    frac = ab & ((1 << mant) - 1)
    normal = expf != 0
    mn = frac | (1 << mant)
    m = mn if normal else frac
    ef = expf if normal else 1
    e2i = ef - (bias + mant)
    # a power of two above the smallest normal has its lower neighbour at half the distance
    pow2 = (frac == 0) & (expf > 1)
    m2 = m << 1
    even = (m & 1) == 0
    vu = m2 + 1
    eu = e2i - 1
    vd2 = (m << 2) - 1
    vd1 = m2 - 1
    vd = vd2 if pow2 else vd1
    half = 1 if pow2 else 0
    ed = e2i - 1 - half

    # x scaled by 2^sxe so that x and the powers of ten stay normal in
    # double-double; the half-gaps to x's neighbours in its own type in that
    # scale (at the largest value, the one above is taken equal to the one below)
    tiny = ax < TINY
    huge = ax > HUGE
    sx = DOWN512 if huge else 1.0
    sx = UP512 if tiny else sx
    s0 = UP512 if huge else 1.0
    s0 = DOWN512 if tiny else s0
    sxe = -512 if huge else 0
    sxe = 512 if tiny else sxe
    axp = ax * sx
    hu = np.ldexp(1.0, e2i + sxe - 1)
    hd = np.ldexp(1.0, e2i - half + sxe - 1)
    # x's decimal exponent e: floor(log10(2^e2)) = e2 * 78913 >> 18 for
    # abs(e2) < 2^11, and one more when x * 10^-e >= 10
    lg = mant if normal else 0
    while (m >> (lg + 1)) != 0:
        lg += 1
    e2 = lg + e2i
    e = (e2 * 78913) >> 18
    t = ol.private_array(2, np.float64)
    s = ol.private_array(2, np.float64)
    _pow10(-e, s0, t)
    _mul_d(t, axp, s)
    ge = (s[0] > 10.0) | ((s[0] == 10.0) & (s[1] >= 0.0))
    e1 = e + 1
    e = e1 if ge else e

    # p digits: S = x * 10^-q, q = e-p+1, lies in [10^(p-1), 10^p); exact
    # when 10^-q is an exact double, so that a tie between two decimals
    # (S = n + 1/2) goes to the even digit, as in Python. M = rint(S).
    last = 9 if single != 0 else 17
    p = 1
    more = True
    sm = 0
    sq = 0
    while more:
        q = e - p + 1
        _pow10(-q, s0, t)
        _mul_d(t, axp, s)
        rr = np.rint(s[0])
        a = s[0] - rr
        fh = a + s[1]  # S - rr, exactly (Knuth's two-sum)
        bb = fh - a
        fl = (a - (fh - bb)) + (s[1] - bb)
        rf = np.rint(fh)
        d = (rf - fh) - fl  # M - S
        mm = int(rr) + int(rf)
        hu_q = t[0] * hu
        hd_q = t[0] * hd
        ok_m = _reads_back(mm, d, hu_q, hd_q, q, even, vu, eu, vd, ed)
        # else the other neighbour: M+1 when M is below S, M-1 when above
        above = d >= 0.0
        mdown = mm - 1
        mup = mm + 1
        nn = mdown if above else mup
        ddown = d - 1.0
        dup = d + 1.0
        dn = ddown if above else dup
        ok_n = _reads_back(nn, dn, hu_q, hd_q, q, even, vu, eu, vd, ed)
        sm = nn if (not ok_m) & ok_n else mm
        sq = q
        more = not (ok_m | ok_n | (p == last))
        p += 1

    # x ~ sm * 10^sq without sm's trailing zeros (sm = 10^p after rounding up)
    while _urem(sm, 10) == 0:
        sm = _udiv(sm, 10)
        sq += 1

    # The six parts [prefix][A][point slot][B][exponent word][C] of each form.
    n = _ndigits(sm)
    big_e = sq + n - 1  # x ~ d.ddd * 10^E
    minus = W_MINUS if sign else W_EMPTY
    # fixed for 1e-4 <= abs(x) < 1e16, by the digits (Python's repr); for
    # float32 for 1e-4 <= abs(x) < 1e6, by the value (NumPy's str)
    fixed64 = (big_e >= -4) & (big_e < 16)
    fixed32 = (ax >= 1e-4) & (ax < 1e6)
    fixed = fixed32 if single != 0 else fixed64
    big = big_e >= 0
    # fixed, abs(x) >= 1: int digits, then w fraction digits or ".0"
    w = n - big_e - 1
    whole = w <= 0
    nw = -w
    pw = _upow(10, nw if whole else w)
    up_a = sm * pw
    div_a = _udiv(sm, pw)
    big_a = up_a if whole else div_a
    rem_b = _urem(sm, pw)
    big_b = 0 if whole else rem_b
    frac_point = 1 + (w - _ndigits(big_b))
    big_point = 2 if whole else frac_point
    # fixed, abs(x) < 1: "0", "." and -E-1 zeros, the digits
    small_pfx = W_MZERO if sign else W_ZERO
    small_point = -big_e
    # scientific: a digit, the others after a point, then the exponent
    pe = _upow(10, n - 1)
    sci_a = _udiv(sm, pe)
    sci_b = _urem(sm, pe)
    several = n > 1
    sci_digits = n - _ndigits(sci_b)
    sci_point = sci_digits if several else 0
    eneg = big_e < 0
    neg_e = -big_e
    eabs = neg_e if eneg else big_e
    one_digit = eabs < 10
    eword_m = W_EM0 if one_digit else W_EM
    eword_p = W_EP0 if one_digit else W_EP
    eword = eword_m if eneg else eword_p
    fbig = fixed & big
    fsmall = fixed & (not big)
    out[0] = small_pfx if fsmall else minus
    part_a = 0 if fsmall else sci_a
    out[1] = big_a if fbig else part_a
    point = small_point if fsmall else sci_point
    out[2] = big_point if fbig else point
    sci_bb = sci_b if several else 0
    part_b = sm if fsmall else sci_bb
    out[3] = big_b if fbig else part_b
    out[4] = W_EMPTY if fixed else eword
    out[5] = 0 if fixed else eabs
