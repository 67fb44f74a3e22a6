"""Sorting, searching and the set functions' device code in the kernel
language, planned and launched by module/lib/order/mod_sort.c. The algorithm (a
stable LSD radix sort of unsigned keys, 8-bit digits, a runs form for CPUs
and a tiles form with a decoupled look-back for GPUs) and the key maps are
in docs/radix-sort.md.

Compile-time parameters that several kernels share:
  KT      the keys' dtype, uint32 or uint64
  IT      the indices' dtype, int32 or int64 (an argsort's order)
  KEY     the key of an element (an index sort): one of the key_* device
          functions, by the input's dtype and the key's word
  FLIP    a descending key's XOR (a KT or uint32 scalar), 0 ascending
  KEY_OF  the key of value bits u (a sort of keys alone): int_key_of,
          float32_key_of or float64_key_of; BITS_OF undoes it
  VT      the values' bits' dtype (unsigned, the values' width)
Keys and values of a sort of keys alone map with FLIP, as KEY_OF's
parameter. Indices into global arrays are uint64 where a negative one would
cost a wrap.
"""
import numpy as np
import offload as ol

TILE = 256  # work-items of a tile's group (mod_sort.c's plans read it)
PASS_MIN_GROUPS = 4  # groups an SM of a pass of 32-bit keys alone (its launch bounds)
KEY_GROUPS = 4  # groups an SM of keys_alone_grouped (its launch bounds)
ALONE_UNROLL = 8  # loads a work-item of keys_alone_grouped has in flight
STATUS_VALUE_BITS = 38  # a look-back word: epoch << 40 | flag << 38 | value
STATUS_EPOCH_SHIFT = 40
STATUS_VALUE_MASK = (1 << STATUS_VALUE_BITS) - 1

TOP32 = np.uint32(1 << 31)
TOP64 = np.uint64(1 << 63)
ALL32 = np.uint32((1 << 32) - 1)
MANT32 = np.uint32((1 << 23) - 1)
MANT64 = np.uint64((1 << 52) - 1)
INF32 = np.uint32(0x7F800000)
INF64 = np.uint64(0x7FF0000000000000)

# ---- exclusive scans of int64 arrays, in place (a CPU's; a GPU's are scan.py's) ----


@ol.kernel
def scan_serial(item, a, m):
    """One work-item's loop: a small scan costs less so than a launch."""
    s = np.int64(0)
    for i in range(m):
        v = a[i]
        a[i] = s
        s += v


@ol.kernel
def scan_sums(item, a, sums, m, c):
    """sums[j] = the sum of chunk j (c elements)."""
    j = item.get_id(0)
    s = np.int64(0)
    for i in range(j * c, min(j * c + c, m)):
        s += a[np.uint64(i)]
    sums[j] = s


@ol.kernel
def scan_apply(item, a, sums, m, c):
    """Chunk j scanned from sums[j], its start."""
    j = item.get_id(0)
    s = sums[j]
    for i in range(j * c, min(j * c + c, m)):
        v = a[np.uint64(i)]
        a[np.uint64(i)] = s
        s += v


# ---- the keys of an index sort: each a key_* of element j ----
# x is the flat input (a complex one as 2N parts), bits the same memory as
# unsigned integers (floats' keys are made of their bits), n the row length.
# A float's key: the sign flipped (all bits for negatives), -0.0 as +0.0,
# NaN as nan_key (the largest key alone, 0 in a complex part: there the
# complex key's class word decides).


@ol.device_func
def float_key(v, b, top, nan_key):
    if v != v:
        k = nan_key
    elif v == 0:
        k = top
    elif b >= top:
        k = b ^ (top | (top - 1))
    else:
        k = b | top
    return k


@ol.device_func
def key_bool(x, bits, j, n):
    return np.uint32(1) if x[j] else np.uint32(0)


@ol.device_func
def key_uint32(x, bits, j, n):
    return np.uint32(x[j])


@ol.device_func
def key_uint64(x, bits, j, n):
    return np.uint64(x[j])


@ol.device_func
def key_int8(x, bits, j, n):
    return np.uint32(np.int64(x[j]) + 128)


@ol.device_func
def key_int16(x, bits, j, n):
    return np.uint32(np.int64(x[j]) + 32768)


@ol.device_func
def key_int32(x, bits, j, n):
    return np.uint32(np.int64(x[j]) + 2147483648)


@ol.device_func
def key_int64(x, bits, j, n):
    return np.uint64(x[j]) ^ TOP64


@ol.device_func
def key_float32(x, bits, j, n):
    return float_key(x[j], bits[j], TOP32, ALL32)


@ol.device_func
def key_float64(x, bits, j, n):
    return float_key(x[j], bits[j], TOP64, ~np.uint64(0))


@ol.device_func
def key_real32(x, bits, j, n):
    q = np.uint64(2 * j)
    return float_key(x[q], bits[q], TOP32, np.uint32(0))


@ol.device_func
def key_imag32(x, bits, j, n):
    q = np.uint64(2 * j + 1)
    return float_key(x[q], bits[q], TOP32, np.uint32(0))


@ol.device_func
def key_real64(x, bits, j, n):
    q = np.uint64(2 * j)
    return float_key(x[q], bits[q], TOP64, np.uint64(0))


@ol.device_func
def key_imag64(x, bits, j, n):
    q = np.uint64(2 * j + 1)
    return float_key(x[q], bits[q], TOP64, np.uint64(0))


@ol.device_func
def key_class(x, bits, j, n):
    """A complex number's class: 0 no NaN, 1 NaN imag, 2 NaN real, 3 both."""
    re = x[np.uint64(2 * j)]
    im = x[np.uint64(2 * j + 1)]
    k = np.uint32(0)
    if re != re:
        k = np.uint32(2)
    if im != im:
        k = k | np.uint32(1)
    return k


@ol.device_func
def key_row(x, bits, j, n):
    """The row: the most significant word of a sort of several rows."""
    return j // n


@ol.kernel
def keys(item, x, bits, key, idx, n, KEY: ol.constexpr, KT: ol.constexpr, IT: ol.constexpr,
         FLIP: ol.constexpr, FIRST: ol.constexpr):
    """The runs form's key kernel: key[i] from element idx[i] (the first
    word's: from element i, and idx[i] = i)."""
    i = item.get_id(0)
    j = i
    if FIRST:
        idx[i] = IT(i)
    else:
        j = np.int64(idx[i])
    k = KEY(x, bits, j, n)
    if FLIP != 0:
        k = k ^ FLIP
    key[i] = KT(k)


# ---- the tiles form's histogram, in the key kernels ----
# Groups of TILE work-items count every 8-bit position c of their keys into
# the local h (then into gh: [position][digit]). A work-item counts runs of
# one digit (d[c], r[c]) and adds a run at its end, so that a byte all keys
# share (small integers) costs an atomic per work-item, not per key.


@ol.device_func
def count_run(h, d, r, dc, c):
    """Digit dc at position c into the work-item's runs."""
    if dc == d[c]:
        r[c] += 1
    else:
        if r[c] != 0:
            ol.AtomicRef(h, 256 * c + d[c]).fetch_add(r[c])
        d[c] = dc
        r[c] = 1


@ol.kernel
def tile_starts(item, gh):
    """Each position's digit counts (a group's) -> their exclusive scan,
    the digits' global starts."""
    grp = item.get_group()
    l = item.get_local_id(0)
    g = grp.get_group_id(0)
    s = ol.local_array(256, np.int64)
    c = gh[g * 256 + l]
    s[l] = c
    ol.group_barrier(grp)
    h = 1
    while h < 256:
        v = np.int64(0)
        if l >= h:
            v = s[l - h]
        ol.group_barrier(grp)
        s[l] = s[l] + v
        ol.group_barrier(grp)
        h = h * 2
    gh[g * 256 + l] = s[l] - c


@ol.kernel
def keys_grouped(item, x, bits, key, idx, res, gh, n, N, G, per, KEY: ol.constexpr,
                 KT: ol.constexpr, IT: ol.constexpr, FLIP: ol.constexpr, FIRST: ol.constexpr,
                 IOTA: ol.constexpr, NPOS: ol.constexpr):
    """The tiles form's key kernel: keys as keys() makes them (IOTA: idx
    left to the first pass), G work-items each per of them, G apart; res
    gets the ORs of the keys and of their complements (a bit set in both
    varies), gh the histogram of NPOS positions."""
    grp = item.get_group()
    l = item.get_local_id(0)
    g = item.get_global_id(0)
    lr = ol.local_array(2, KT)
    if l < 2:
        lr[l] = KT(0)
    h = ol.local_array(256 * NPOS, np.int32)
    for c in range(NPOS):
        h[c * 256 + l] = 0
    d = ol.private_array(NPOS, np.int32)
    r = ol.private_array(NPOS, np.int32)
    for pos in ol.static_range(NPOS):
        d[pos] = np.int32(0)
        r[pos] = np.int32(0)
    ol.group_barrier(grp)
    o = KT(0)
    z = KT(0)
    for jj in range(per):
        i = g + jj * G
        if i < N:
            j = i
            if FIRST and not IOTA:
                idx[i] = IT(i)
            elif not FIRST:
                j = np.int64(idx[i])
            v = KEY(x, bits, j, n)
            if FLIP != 0:
                v = v ^ FLIP
            k = KT(v)
            key[i] = k
            o = o | k
            z = z | ~k
            for pos in ol.static_range(NPOS):
                count_run(h, d, r, np.int32((k >> KT(8 * pos)) & KT(255)), pos)
    ol.AtomicRef(lr, 0).fetch_or(o)
    ol.AtomicRef(lr, 1).fetch_or(z)
    for pos in ol.static_range(NPOS):
        if r[pos] != 0:
            ol.AtomicRef(h, 256 * pos + d[pos]).fetch_add(r[pos])
    ol.group_barrier(grp)
    for c in range(NPOS):
        hv = h[c * 256 + l]
        if hv != 0:
            ol.AtomicRef(gh, c * 256 + l).fetch_add(np.int64(hv))
    if l < 2:
        ol.AtomicRef(res, l).fetch_or(lr[l])


@ol.kernel
def varying_bits(item, key, part, n, G, a, b, per):
    """The runs form's ORs of the keys and of their complements, G partial
    ones (work-item g: per keys from g * a, b apart)."""
    g = item.get_id(0)
    o = key[0]
    z = ~key[0]
    for j in range(per):
        i = g * a + j * b
        if i < n:
            v = key[np.uint64(i)]
            o = o | v
            z = z | ~v
    part[g] = o
    part[np.uint64(G + g)] = z


# ---- sorts of keys alone: the maps between value bits and keys ----
# Invertible, so that the last pass writes values (docs/radix-sort.md):
# integers' bits XOR flip; floats' as below, where -0.0 and +0.0 (and NaNs of
# different bits) stay apart -- the key kernel reports those.


@ol.device_func
def float_key_of(u, top, mant, flip):
    k = ~u if u >= top else u | top
    return (k - mant) ^ flip


@ol.device_func
def float_bits_of(k, top, mant, flip):
    w = (k ^ flip) + mant
    return w ^ top if w >= top else ~w


@ol.device_func
def int_key_of(u, flip):
    return u ^ flip


@ol.device_func
def int_bits_of(k, flip):
    return k ^ flip


@ol.device_func
def float32_key_of(u, flip):
    return float_key_of(u, TOP32, MANT32, flip)


@ol.device_func
def float32_bits_of(k, flip):
    return float_bits_of(k, TOP32, MANT32, flip)


@ol.device_func
def float64_key_of(u, flip):
    return float_key_of(u, TOP64, MANT64, flip)


@ol.device_func
def float64_bits_of(k, flip):
    return float_bits_of(k, TOP64, MANT64, flip)


@ol.device_func
def note_alone(acc, u, k, vfloat, top, inf):
    """Key k of value bits u into acc: the ORs of the keys (0) and of their
    complements (1), the flags (2: 1 -0.0, 2 +0.0, 4 NaN) and the ORs of
    NaN keys (3) and of their complements (4)."""
    if vfloat:
        m = u & (top - 1)
        if m > inf:
            acc[2] = acc[2] | 4
            acc[3] = acc[3] | k
            acc[4] = acc[4] | ~k
        elif m == 0:
            if u == 0:
                acc[2] = acc[2] | 2
            else:
                acc[2] = acc[2] | 1
    acc[0] = acc[0] | k
    acc[1] = acc[1] | ~k


@ol.kernel
def keys_alone(item, bits, key, res, n, a, b, per, KT: ol.constexpr, KEY_OF: ol.constexpr,
               FLIP: ol.constexpr, VFLOAT: ol.constexpr):
    """The runs form's key kernel of keys alone: key[i] from the bits of
    element i, and into res (zeroed) the ORs of note_alone, which tell the
    passes and whether keys alone are exact. Work-item g: per elements from
    g * a, b apart."""
    g = item.get_id(0)
    top = TOP64 if KT == np.uint64 else TOP32
    inf = INF64 if KT == np.uint64 else INF32
    acc = ol.private_array(5, KT)
    for t in ol.static_range(5):
        acc[t] = KT(0)
    for j in range(per):
        i = g * a + j * b
        if i < n:
            u = KT(bits[np.uint64(i)])
            k = KEY_OF(u, FLIP)
            key[np.uint64(i)] = k
            note_alone(acc, u, k, VFLOAT, top, inf)
    for t in ol.static_range(5):
        ol.AtomicRef(res, t).fetch_or(acc[t])


@ol.kernel(launch_bounds=(TILE, KEY_GROUPS))
def keys_alone_grouped(item, bits, res, gh, n, a, b, per, KT: ol.constexpr,
                       KEY_OF: ol.constexpr, FLIP: ol.constexpr, VFLOAT: ol.constexpr,
                       NPOS: ol.constexpr):
    """The tiles form's key kernel of keys alone: keys_alone's reductions,
    in local memory first, and the histogram; no key is written (the first
    pass makes them up as it loads the bits). Steps of ALONE_UNROLL keys a
    apart, all their loads first; G = a work-items, KEY_GROUPS groups a
    compute unit, all resident at once."""
    grp = item.get_group()
    l = item.get_local_id(0)
    g = item.get_global_id(0)
    top = TOP64 if KT == np.uint64 else TOP32
    inf = INF64 if KT == np.uint64 else INF32
    lr = ol.local_array(5, KT)
    if l < 5:
        lr[l] = KT(0)
    h = ol.local_array(256 * NPOS, np.int32)
    for c in range(NPOS):
        h[c * 256 + l] = 0
    d = ol.private_array(NPOS, np.int32)
    r = ol.private_array(NPOS, np.int32)
    for pos in ol.static_range(NPOS):
        d[pos] = np.int32(0)
        r[pos] = np.int32(0)
    ol.group_barrier(grp)
    acc = ol.private_array(5, KT)
    for t in ol.static_range(5):
        acc[t] = KT(0)
    us = ol.private_array(ALONE_UNROLL, KT)
    for j in range(per):
        i = g + j * b
        if i + (ALONE_UNROLL - 1) * a < n:
            for t in ol.static_range(ALONE_UNROLL):
                us[t] = KT(bits[np.uint64(i + t * a)])
            for t in ol.static_range(ALONE_UNROLL):
                u = us[t]
                k = KEY_OF(u, FLIP)
                note_alone(acc, u, k, VFLOAT, top, inf)
                for pos in ol.static_range(NPOS):
                    count_run(h, d, r, np.int32((k >> KT(8 * pos)) & KT(255)), pos)
        else:
            for e in range(ALONE_UNROLL):
                if i + e * a < n:
                    u = KT(bits[np.uint64(i + e * a)])
                    k = KEY_OF(u, FLIP)
                    note_alone(acc, u, k, VFLOAT, top, inf)
                    for pos in ol.static_range(NPOS):
                        count_run(h, d, r, np.int32((k >> KT(8 * pos)) & KT(255)), pos)
    for t in ol.static_range(5):
        ol.AtomicRef(lr, t).fetch_or(acc[t])
    for pos in ol.static_range(NPOS):
        if r[pos] != 0:
            ol.AtomicRef(h, 256 * pos + d[pos]).fetch_add(r[pos])
    ol.group_barrier(grp)
    for c in range(NPOS):
        hv = h[c * 256 + l]
        if hv != 0:
            ol.AtomicRef(gh, c * 256 + l).fetch_add(np.int64(hv))
    if l < 5:
        ol.AtomicRef(res, l).fetch_or(lr[l])


@ol.kernel
def keys_values(item, key, out, KT: ol.constexpr, RAW: ol.constexpr, KEY_OF: ol.constexpr,
                BITS_OF: ol.constexpr, FLIP: ol.constexpr, VT: ol.constexpr):
    """out = the values of the keys, where no pass wrote them: from the keys,
    or (RAW) from the values' bits, keys and back, as a pass would have them."""
    i = item.get_id(0)
    k = KEY_OF(KT(key[i]), FLIP) if RAW else key[i]
    out[i] = VT(BITS_OF(k, FLIP))


# ---- the runs form: a pass over runs (CPUs) ----
# A few work-items each count the digits of a long run of keys into
# hist[digit][run], one exclusive scan gives each run its start per digit,
# and each run moves its keys there in order: stable, as LSD needs. sh: the
# digit's shift, a scalar of the keys' type.


@ol.kernel
def run_count(item, key, hist, n, runs, per, sh):
    r = item.get_id(0)
    c = ol.private_array(256, np.int64)
    for d in range(256):
        c[d] = 0
    for i in range(r * per, min(r * per + per, n)):
        k = key[np.uint64(i)]
        c[np.int64((k >> sh) & np.uint8(255))] += 1
    for d in range(256):
        hist[np.uint64(d * runs + r)] = c[d]


@ol.kernel
def run_scatter(item, key, idx, out, idx2, hist, n, runs, per, sh, WITH_IDX: ol.constexpr,
                VALUES: ol.constexpr, BITS_OF: ol.constexpr, FLIP: ol.constexpr,
                VT: ol.constexpr):
    """Run r's keys (and indices, WITH_IDX) to their places; VALUES: the
    last pass of keys alone writes the values' bits."""
    r = item.get_id(0)
    c = ol.private_array(256, np.int64)
    for d in range(256):
        c[d] = hist[np.uint64(d * runs + r)]
    for i in range(r * per, min(r * per + per, n)):
        k = key[np.uint64(i)]
        d = np.int64((k >> sh) & np.uint8(255))
        q = np.uint64(c[d])
        c[d] += 1
        if VALUES:
            out[q] = VT(BITS_OF(k, FLIP))
        else:
            out[q] = k
        if WITH_IDX:
            idx2[q] = idx[np.uint64(i)]


# ---- the tiles form: one kernel a pass (GPUs) ----
# A group takes the next tile from an atomic counter (tiles start in order,
# so every tile it waits for is running), loads TILE * K keys coalesced into
# local memory, counts their digits, publishes its count of each digit in
# status[tile][digit], sorts the tile stably by the digit (two 4-bit
# splits), looks back over the tiles before it for each digit's prefix, and
# writes the tile out coalesced. The digits' global starts (starts[so + d])
# come from the word's histogram (keys_grouped or keys_alone_grouped, then
# tile_starts). A status word holds the pass's epoch ep, so one array,
# zeroed once, serves every pass. Local arrays are padded (one word per 32
# keys, per 16 counters) against bank conflicts. Local indices are uint32:
# no wrap of a negative index to pay for, and 32-bit arithmetic.


@ol.device_func
def digit(k, s, mask):
    """The bits of key k at shift s under mask (k's type), as a uint32."""
    return np.uint32((k >> s) & mask)


def tile_pass_body(item, key, idx, out, idx2, starts, status, ctr, n, sh, sh4, ep, so,
                   KT: ol.constexpr, IT: ol.constexpr, K: ol.constexpr, WITH_IDX: ol.constexpr,
                   IOTA: ol.constexpr, RAW: ol.constexpr, VALUES: ol.constexpr,
                   KEY_OF: ol.constexpr, BITS_OF: ol.constexpr, FLIP: ol.constexpr,
                   VT: ol.constexpr):
    """One pass over the digit at shift sh (sh4 = sh + 4) of keys key (RAW:
    the values' bits, made keys as they load) and indices idx (IOTA: the
    identity, made up) into out and idx2 (VALUES: the values' bits).
    Without WITH_IDX, idx and idx2 are unused."""
    grp = item.get_group()
    l = item.get_local_id(0)
    lu = np.uint32(l)
    hi = KT(63) if KT == np.uint64 else KT(31)
    s0 = sh & hi
    s4 = sh4 & hi
    sk = ol.local_array(TILE * K + TILE * K // 32, KT)
    # Each work-item's nibble counts live in its column of sc (l fastest),
    # not in a private array: Intel's CPU compiler gets a private array
    # indexed by digit wrong across these barriers (measured).
    sc = ol.local_array(17 * TILE, np.uint32)
    tot = ol.local_array(TILE, np.uint32)
    hc = ol.local_array(256, np.uint32)
    ds = ol.local_array(256, np.int64)
    tl = ol.local_array(1, np.int64)
    pk = ol.private_array(K, KT)
    ks = ol.private_array(K, KT)  # a full tile's keys, loaded before any is stored
    if WITH_IDX:
        si = ol.local_array(TILE * K + TILE * K // 32, IT)
        pi = ol.private_array(K, IT)
        js = ol.private_array(K, IT)
    if l == 0:
        tl[0] = np.int64(ol.AtomicRef(ctr, ep).fetch_add(1))
    hc[lu] = np.uint32(0)
    ol.group_barrier(grp)
    g = tl[0]
    base = g * (TILE * K)
    m = np.uint32(min(n - base, TILE * K))
    # A whole tile's loads are all in flight at once (a pass is bound by
    # their latency: 0.732 -> 0.658 ms on an H100); a tile's tail is padded
    # with keys of all ones, which sort after every real key, so that the
    # splits need no bounds.
    if m == np.uint32(TILE * K):
        for t in ol.static_range(K):
            if RAW:
                ks[t] = KEY_OF(KT(key[np.uint64(base + t * TILE) + np.uint64(lu)]), FLIP)
            else:
                ks[t] = key[np.uint64(base + t * TILE) + np.uint64(lu)]
            if IOTA:
                js[t] = IT(base + t * TILE) + IT(lu)
            elif WITH_IDX:
                js[t] = idx[np.uint64(base + t * TILE) + np.uint64(lu)]
        for t in ol.static_range(K):
            sk[np.uint32(t * TILE + (t * TILE >> 5)) + lu + (lu >> np.uint32(5))] = ks[t]
            ol.AtomicRef(hc, digit(ks[t], s0, KT(255))).fetch_add(np.uint32(1))
            if WITH_IDX:
                si[np.uint32(t * TILE + (t * TILE >> 5)) + lu + (lu >> np.uint32(5))] = js[t]
    else:
        for j in range(K):
            q = np.uint32(j * TILE) + lu
            k = ~KT(0)
            if q < m:
                if RAW:
                    k = KEY_OF(KT(key[np.uint64(base) + np.uint64(q)]), FLIP)
                else:
                    k = key[np.uint64(base) + np.uint64(q)]
                ol.AtomicRef(hc, digit(k, s0, KT(255))).fetch_add(np.uint32(1))
            sk[q + (q >> np.uint32(5))] = k
            if IOTA:
                si[q + (q >> np.uint32(5))] = IT(base) + IT(q)
            elif WITH_IDX:
                if q < m:
                    si[q + (q >> np.uint32(5))] = idx[np.uint64(base) + np.uint64(q)]
    # The look-back, work-item l for digit l: the tile's count is published
    # now; the walk over the tiles before waits until the tile is sorted,
    # so that their prefixes have had that long to arrive (H100: 3% less a
    # pass, 4% less an argsort than walking first).
    ol.group_barrier(grp)
    cn = np.int64(hc[lu])
    ev = np.int64(ep) << np.int64(STATUS_EPOCH_SHIFT)
    me = np.uint64(g * 256) + np.uint64(lu)
    fl = np.int64(1)
    if g == 0:
        fl = np.int64(2)
    ol.AtomicRef(status, me).store(ev | (fl << np.int64(STATUS_VALUE_BITS)) | cn)
    # The tile's local sort, by the nibble at s0, then at s4: count (column
    # l of sc, nibble-major), raking scan, stable scatter. The keys (and
    # indices) pass through private arrays between the count and the
    # scatter, and each key's rank among the work-item's keys of its nibble
    # (its column's count before it, < 16) through the nibbles of rk: the
    # scatter then only reads sc, so that its reads need not wait for each
    # other. In the first split the scan also turns hc, the tile's digit
    # counts, into inclusive prefixes (no barrier of its own).
    for split in ol.static_range(2):
        s = s0 if split == 0 else s4
        for e in range(16):
            f = np.uint32(e * TILE) + lu
            sc[f + (f >> np.uint32(4))] = np.uint32(0)
        ol.group_barrier(grp)
        rk = np.uint64(0)
        for j in range(K):
            q = lu * np.uint32(K) + np.uint32(j)
            kk = sk[q + (q >> np.uint32(5))]
            pk[j] = kk
            if WITH_IDX:
                pi[j] = si[q + (q >> np.uint32(5))]
            f = digit(kk, s, KT(15)) * np.uint32(TILE) + lu
            c = f + (f >> np.uint32(4))
            v = sc[c]
            sc[c] = v + np.uint32(1)
            rk = rk | (np.uint64(v) << np.uint64(j * 4))
        ol.group_barrier(grp)
        r = np.uint32(0)
        for e in range(16):
            r += sc[lu * np.uint32(17) + np.uint32(e)]
        tot[lu] = r
        ol.group_barrier(grp)
        h = np.uint32(1)
        while h < np.uint32(TILE):
            v = np.uint32(0)
            if split == 0:
                w = np.uint32(0)
            if lu >= h:
                v = tot[lu - h]
                if split == 0:
                    w = hc[lu - h]
            ol.group_barrier(grp)
            tot[lu] = tot[lu] + v
            if split == 0:
                hc[lu] = hc[lu] + w
            ol.group_barrier(grp)
            h = h * np.uint32(2)
        r = tot[lu] - r
        for e in range(16):
            c = lu * np.uint32(17) + np.uint32(e)
            v = sc[c]
            sc[c] = r
            r += v
        ol.group_barrier(grp)
        for j in range(K):
            kk = pk[j]
            f = digit(kk, s, KT(15)) * np.uint32(TILE) + lu
            q = sc[f + (f >> np.uint32(4))] + np.uint32((rk >> np.uint64(j * 4)) & np.uint64(15))
            sk[q + (q >> np.uint32(5))] = kk
            if WITH_IDX:
                si[q + (q >> np.uint32(5))] = pi[j]
        ol.group_barrier(grp)
    # hc now holds inclusive prefixes: digit l's first position in the
    # sorted tile is hc[l] - cn
    pre = np.int64(0)
    if g != 0:
        j = g - 1
        while j >= 0:
            sw = ol.AtomicRef(status, np.uint64(j * 256) + np.uint64(lu)).load()
            if (sw >> np.int64(STATUS_EPOCH_SHIFT)) == np.int64(ep):
                pre += sw & np.int64(STATUS_VALUE_MASK)
                if ((sw >> np.int64(STATUS_VALUE_BITS)) & np.int64(3)) == np.int64(2):
                    j = np.int64(-1)
                else:
                    j -= 1
        ol.AtomicRef(status, me).store(ev | (np.int64(2) << np.int64(STATUS_VALUE_BITS)) |
                                       (pre + cn))
    ds[lu] = starts[so + l] + pre - (np.int64(hc[lu]) - cn)
    ol.group_barrier(grp)
    # the sorted tile, written out coalesced
    for j in range(K):
        q = np.uint32(j * TILE) + lu
        if q < m:
            k = sk[q + (q >> np.uint32(5))]
            o = np.uint64(ds[digit(k, s0, KT(255))] + np.int64(q))
            if VALUES:
                out[o] = VT(BITS_OF(k, FLIP))
            else:
                out[o] = k
            if WITH_IDX:
                idx2[o] = si[q + (q >> np.uint32(5))]


tile_pass = ol.kernel(tile_pass_body)
# A pass of 32-bit keys alone, 4 groups of TILE an SM: ptxas keeps it to 64
# registers, not 69 (H100: 0.623 -> 0.585 ms a pass of 2^26 uint32); the
# index form runs best unbounded (docs/radix-sort.md).
tile_pass_bounded = ol.kernel(launch_bounds=(TILE, PASS_MIN_GROUPS))(tile_pass_body)


@ol.kernel
def iota(item, idx, IT: ol.constexpr):
    """idx = the identity, where no pass made it up."""
    i = item.get_id(0)
    idx[i] = IT(i)


@ol.kernel
def gather(item, out, x, idx):
    """out[i] = x[idx[i]]: the values in the sorted order."""
    i = item.get_id(0)
    out[i] = x[np.uint64(idx[i])]


@ol.kernel
def positions(item, out, idx, n):
    """out[i] = idx[i] % n: argsort's positions in the row."""
    i = item.get_id(0)
    out[i] = idx[i] % n


# ---- searchsorted: a binary search per element ----
# less(p, q): p before q in NumPy's sort order, NaN last.


@ol.device_func
def less_int(p, q):
    return p < q


@ol.device_func
def less_float(p, q):
    return p < q or (q != q and p == p)


@ol.device_func
def less_complex(p, q):
    """NumPy's complex order (npysort's CLT): lexicographic, then NaN imag
    (by real), NaN real (by imag), both NaN."""
    pr = p.real
    pi = p.imag
    qr = q.real
    qi = q.imag
    if pr < qr:
        b = pi == pi or qi != qi
    elif pr > qr:
        b = qi != qi and pi == pi
    elif pr == qr or (pr != pr and qr != qr):
        b = pi < qi or (qi != qi and pi == pi)
    else:
        b = qr != qr
    return b


@ol.kernel
def searchsorted(item, out, a, v, n, LESS: ol.constexpr, RIGHT: ol.constexpr):
    """out[i] = where v[i] goes in the sorted a: the first place, or the
    last (RIGHT)."""
    i = item.get_id(0)
    x = v[i]
    lo = np.int64(0)
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        y = a[np.uint64(mid)]
        after = not LESS(x, y) if RIGHT else LESS(y, x)
        if after:
            lo = mid + 1
        else:
            hi = mid
    out[i] = lo


@ol.kernel
def take_sorter(item, out, x, s, n):
    """out[i] = x[s[i]]; NumPy does not check sorter's indices: here one out
    of range reads x's nearest end (a negative one counts from the end)."""
    i = item.get_id(0)
    j = s[i]
    if j < 0:
        j += n
    j = min(max(j, 0), n - 1)
    out[i] = x[np.uint64(j)]


# ---- unique_*: the runs of equal values of the sorted sv ----


@ol.kernel
def unique_marks(item, g, sv, n):
    """g[i] = 1 where sv[i] starts a run of equal values (NaN != NaN);
    g[n] = 0, so that g's exclusive scan ends with the count."""
    i = item.get_id(0)
    if i == 0:
        g[i] = 1
        g[n] = 0
    elif sv[i] != sv[np.uint64(i - 1)]:
        g[i] = 1
    else:
        g[i] = 0


@ol.kernel
def unique_values(item, sv, g, values):
    """Each run's value to its place g[i] (g: the marks' exclusive scan)."""
    i = item.get_id(0)
    first = i == 0
    if i > 0:
        first = sv[i] != sv[np.uint64(i - 1)]
    if first:
        values[np.uint64(g[i])] = sv[i]


@ol.kernel
def unique_scatter(item, sv, order, g, values, indices, starts, inverse):
    """unique_values, with each run's first index into x (order: sv's
    positions in x) and start in sv, and every element's run (inverse)."""
    i = item.get_id(0)
    j = g[i]
    first = i == 0
    if i > 0:
        first = sv[i] != sv[np.uint64(i - 1)]
    p = order[i]
    if first:
        values[np.uint64(j)] = sv[i]
        indices[np.uint64(j)] = p
        starts[np.uint64(j)] = i
        inverse[np.uint64(p)] = j
    else:
        inverse[np.uint64(p)] = j - 1


@ol.kernel
def unique_counts(item, counts, starts, m, n):
    """Each of the m runs' length, from their starts (n elements)."""
    j = item.get_id(0)
    e = n
    if j + 1 < m:
        e = starts[np.uint64(j + 1)]
    counts[j] = e - starts[j]
