"""Array operations on odd inputs, offload against NumPy.

Each case draws operands (empty, 0-d, size-1 axes that broadcast, negative
strides and other views, bool/uint8/int8/int32/int64/uint64/float32/float64,
NaN/inf/-0.0, the dtype's extremes) and one operation (a binary operator or
ufunc, a Python scalar on either side, a unary function, a reduction with an
axis, astype, where, clip, an in-place operator whose operands overlap), runs it
on NumPy arrays and on offload arrays holding the same data, and compares:
the same exception class where NumPy raises (TypeError where NumPy's result
would be float16 or complex, which offload arrays do not hold); otherwise the
same dtype, shape and values (exact for ints and bools; float results within a
few ulps, NaN where NumPy has NaN), and for in-place operators the same
contents of the whole base array afterwards.

The cases run in a child python (a crash is a finding naming the case, and the
child restarts after it). Case k of a seed is drawn from Random((seed, k)), so
a finding is replayed with OFFLOAD_FUZZ_SEED=<seed> and reported as code.
"""

from __future__ import annotations

import json
import math
import operator
import random
import warnings

import numpy as np
import pytest

from fuzzlib import HERE, Budget, announce, run_script, seed_ids, seeds

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "uint64", "float32", "float64"]
SHAPES = [(), (0,), (1,), (5,), (3, 1), (1, 4), (2, 0), (3, 4), (2, 1, 3), (4, 5)]

# ----------------------------------------------------------------------------
# Operands: values, then a view of them


def values(r: random.Random, dtype: str, n: int) -> list:
    """n values of dtype, often the awkward ones."""
    dt = np.dtype(dtype)
    out = []
    for _ in range(n):
        if dt.kind == "b":
            out.append(r.random() < 0.5)
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            out.append(r.choice([0, 1, info.max, info.min, info.max - 1, r.randint(int(info.min), int(info.max)),
                                 r.randint(-3, 3) if dt.kind == "i" else r.randint(0, 5)]))
        else:
            fi = np.finfo(dt)
            out.append(r.choice([0.0, -0.0, 1.0, -1.5, math.nan, math.inf, -math.inf, float(fi.max), float(fi.tiny),
                                 r.uniform(-10, 10), r.uniform(-1e30, 1e30) if dt.itemsize == 4 else r.uniform(-1e300, 1e300)]))
    return out


# A view applied identically to the NumPy and the offload array: (label, base shape
# from the wanted shape, function). Views make negative and zero-skipping strides.
def view_of(r: random.Random, shape: tuple):
    """(base_shape, code) such that eval(code, {'a': base}) has `shape`."""
    nd = len(shape)
    kinds = ["plain"]
    if nd >= 1:
        kinds += ["rev", "step", "slice"]
    if nd >= 2:
        kinds += ["T"]
    k = r.choice(kinds)
    if k == "plain":
        return shape, "a"
    if k == "rev":  # negative stride on the last axis
        return shape, "a[..., ::-1]"
    if k == "step":  # every other element of a twice-as-long first axis, backwards
        return (2 * shape[0] + 1,) + shape[1:], "a[::-2][:%d]" % shape[0] if shape[0] else "a[:0]"
    if k == "slice":
        return (shape[0] + 2,) + shape[1:], "a[1:-1]"
    return tuple(reversed(shape)), "a.T"


class Operand:
    """A base array and a view expression; build() gives (numpy view, numpy base)."""

    def __init__(self, r: random.Random, dtype: str, shape: tuple):
        self.dtype = dtype
        self.base_shape, self.view = view_of(r, shape)
        n = int(np.prod(self.base_shape))
        self.vals = values(r, dtype, n)

    def numpy_base(self) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.array(self.vals, dtype=self.dtype).reshape(self.base_shape)

    def code(self, name: str) -> str:
        """Python that rebuilds it (for reproducers)."""
        return f"{name}_base = np.array({self.vals!r}, dtype=np.{self.dtype}).reshape({self.base_shape})"


def broadcast_partner(r: random.Random, shape: tuple) -> tuple:
    """A shape that broadcasts with `shape`: equal, ones here and there, shorter, or
    (rarely) incompatible, where both must raise ValueError."""
    k = r.randrange(5)
    if k == 0:
        return shape
    if k == 1:
        return tuple(1 if r.random() < 0.5 else s for s in shape)
    if k == 2:
        return shape[r.randint(0, len(shape)):]
    if k == 3:
        return ()
    return tuple(s + 1 for s in shape) or (2,)


# ----------------------------------------------------------------------------
# Operations. Each is (name, arity, function of numpy-like module & operands).

BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt, ">=": operator.ge,
}
INPLACE = {"+": operator.iadd, "-": operator.isub, "*": operator.imul, "//": operator.ifloordiv,
           "%": operator.imod, "&": operator.iand, "|": operator.ior, "^": operator.ixor, "/": operator.itruediv}
UFUNC2 = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "arctan2", "power", "remainder"]
UFUNC1 = ["negative", "abs", "sqrt", "exp", "log", "log1p", "sin", "floor", "ceil", "isnan", "isfinite", "invert", "tanh"]
REDUCE = ["sum", "prod", "min", "max", "mean", "argmax", "argmin"]
SCALARS = [0, 1, -1, 2, 300, -129, 2**63, 2**64, 0.5, -0.0, math.nan, math.inf, True, False, 1e300]


def gen_case(r: random.Random) -> dict:
    """One case, as data: operands and the operation, so it can be replayed and printed."""
    kind = r.choice(["binary", "binary", "scalar", "unary", "reduce", "inplace", "astype", "where", "clip"])
    shape = r.choice(SHAPES)
    case = {"kind": kind, "x": Operand(r, r.choice(DTYPES), shape)}
    if kind in ("binary", "inplace", "where", "clip"):
        other = broadcast_partner(r, shape) if kind != "inplace" else r.choice([shape, shape[1:], ()])
        case["y"] = Operand(r, r.choice(DTYPES), other)
    if kind == "binary":
        case["op"] = r.choice(list(BINARY) + UFUNC2)
    elif kind == "scalar":
        case["op"] = r.choice(list(BINARY))
        case["s"] = r.choice(SCALARS)
        case["left"] = r.random() < 0.5
    elif kind == "unary":
        case["op"] = r.choice(UFUNC1)
    elif kind == "reduce":
        case["op"] = r.choice(REDUCE)
        case["axis"] = r.choice([None, 0, -1]) if shape else None
        case["keepdims"] = r.random() < 0.3 and case["op"] not in ("argmax", "argmin")
    elif kind == "inplace":
        case["op"] = r.choice(list(INPLACE))
        # overlap: the right operand is a view of the left one's base (x[1:] += x[:-1]
        # style), else an array of its own
        case["overlap"] = r.choice([None, "x_base[..., ::-1]", "x_base"]) if not shape or len(shape) >= 1 else None
    elif kind == "astype":
        case["dtype"] = r.choice(DTYPES)
    elif kind == "clip":
        case["lo"], case["hi"] = sorted(r.sample([-1, 0, 2, 5, 0.5, -2.5], 2))
    return case


def apply(case: dict, xp, x, y, x_base):
    """The operation with module xp (numpy or offload) on operands x, y."""
    k, op = case["kind"], case.get("op")
    if k == "binary":
        return BINARY[op](x, y) if op in BINARY else getattr(xp, op)(x, y)
    if k == "scalar":
        return BINARY[op](case["s"], x) if case["left"] else BINARY[op](x, case["s"])
    if k == "unary":
        return getattr(xp, op)(x)
    if k == "reduce":
        kw = {"axis": case["axis"]}
        if case["keepdims"]:
            kw["keepdims"] = True
        return getattr(xp, op)(x, **kw)
    if k == "inplace":
        rhs = y if case["overlap"] is None else eval(case["overlap"], {"x_base": x_base})
        if case["overlap"] == "x_base" and rhs.shape != x.shape:
            rhs = y
        INPLACE[op](x, rhs)
        return x_base
    if k == "astype":
        return x.astype(case["dtype"])
    if k == "where":
        return xp.where(x > 0 if x.dtype != bool else x, x, y)
    if k == "clip":
        return xp.clip(x, case["lo"], case["hi"])
    raise AssertionError(k)


def reproducer(case: dict) -> str:
    """The case as a few lines of Python, for the report."""
    lines = ["import numpy as np, offload as ol", case["x"].code("x")]
    if "y" in case:
        lines.append(case["y"].code("y"))
    lines.append(f"case = {json.dumps({k: v for k, v in case.items() if k not in ('x', 'y')}, default=repr)}")
    lines.append(f"x = eval({case['x'].view!r}, {{'a': x_base}})  # and the same on ol.asarray(x_base)")
    if "y" in case:
        lines.append(f"y = eval({case['y'].view!r}, {{'a': y_base}})")
    return "\n".join(lines)


# ----------------------------------------------------------------------------
# Comparing


def error_class(e: BaseException) -> type:
    """The builtin class an error must share: NumPy's UFuncTypeError is a TypeError, ..."""
    for cls in (OverflowError, ZeroDivisionError, IndexError, TypeError, ValueError):
        if isinstance(e, cls):
            return cls
    return type(e)


TRANSCENDENTAL = {"exp", "log", "log1p", "sin", "tanh", "arctan2", "power", "**", "mean", "sum", "prod", "/"}


def order_decides(case: dict) -> bool:
    """Whether a reduction's value depends on the order of its terms: its input has
    magnitudes whose products or sums leave the float range (inf * 0 is NaN, a tiny
    product underflows to 0) -- the device adds in its own order, NumPy pairwise."""
    x = np.asarray(case["x"].numpy_base())
    if x.dtype.kind in "iu":  # the mean adds them as float64, exact only up to 2**53
        return case["op"] == "mean" and bool(x.size) and float(np.abs(x.astype(np.float64)).max()) > 2.0**53
    if x.dtype.kind != "f":
        return False
    with np.errstate(all="ignore"):
        mag = np.abs(x[np.isfinite(x) & (x != 0)])
    fi = np.finfo(x.dtype)
    return bool(mag.size) and (mag.max() > np.sqrt(fi.max) or mag.min() < np.sqrt(fi.tiny))


def compare(case: dict, want, got) -> str | None:
    """None if offload's result `got` (converted to NumPy) matches NumPy's `want`."""
    want = np.asarray(want)
    got = np.asarray(got)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, NumPy {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape}, NumPy {want.shape}"
    if want.dtype.kind != "f":
        if not np.array_equal(got, want):
            return f"values\n got {got!r}\nwant {want!r}"
        return None
    if case.get("op") in ("sum", "prod", "mean") and order_decides(case):
        return None  # which partial result overflows or underflows depends on the order of the terms
    nan_w, nan_g = np.isnan(want), np.isnan(got)
    if not np.array_equal(nan_w, nan_g):
        return f"NaN where NumPy has none, or the reverse\n got {got!r}\nwant {want!r}"
    loose = case.get("op") in TRANSCENDENTAL
    fi = np.finfo(want.dtype)
    rtol = (64 if loose else 2) * fi.eps
    with np.errstate(all="ignore"):
        ok = (got == want) | nan_w | (np.abs(got - want) <= rtol * np.abs(want) + (fi.tiny if not loose else 1e-30))
        if case.get("op") in ("sum", "prod", "mean"):  # order of additions is the device's own
            ok |= np.isclose(got, want, rtol=1e-4 if want.dtype == np.float32 else 1e-10, atol=0)
            # near the largest float, whether a partial sum overflows depends on that order too
            near_max = np.abs(np.where(np.isinf(want), got, want)) > fi.max / 8
            ok |= (np.isinf(got) | np.isinf(want)) & near_max
    if not ok.all():
        return f"values\n got {got!r}\nwant {want!r}"
    return None


def run_case(ol, case: dict) -> str | None:
    """Run one case on NumPy and on offload; None if they agree."""
    xb = case["x"].numpy_base()
    yb = case["y"].numpy_base() if "y" in case else None
    view = lambda b, o: eval(o.view, {"a": b})  # noqa: E731
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = apply(case, np, view(xb, case["x"]), None if yb is None else view(yb, case["y"]), xb)
            want = np.array(want, copy=True)
            np_err = None
        except Exception as e:  # noqa: BLE001
            np_err = e
    if np_err is None and want.dtype.kind in "cf" and (want.dtype.itemsize == 2 or want.dtype.kind == "c"):
        np_err = TypeError("NumPy's result is float16 or complex")
    oxb = ol.asarray(case["x"].numpy_base())
    oyb = ol.asarray(yb) if yb is not None else None
    try:
        got = apply(case, ol, view(oxb, case["x"]), None if oyb is None else view(oyb, case["y"]), oxb)
        got = ol.asnumpy(got) if isinstance(got, ol.ndarray) else got
        ol_err = None
    except Exception as e:  # noqa: BLE001
        ol_err = e
    if np_err is not None and "negative integer powers" in str(np_err):
        return None  # offload computes C's value instead: accepted (test_array_ops.py)
    if np_err is not None:
        if ol_err is not None and "which offload arrays do not hold" in str(ol_err):
            return None  # offload refuses float16/complex before NumPy's other checks: both refuse
        if ol_err is None:
            return f"NumPy raises {type(np_err).__name__}: {np_err}; offload returns {got!r}"
        if not isinstance(ol_err, error_class(np_err)):
            return f"NumPy raises {type(np_err).__name__}: {np_err}; offload {type(ol_err).__name__}: {ol_err}"
        return None
    if ol_err is not None:
        return f"offload raises {type(ol_err).__name__}: {ol_err}; NumPy gives {want!r}"
    if case["kind"] == "astype" and np.dtype(case["dtype"]).kind in "biu" and xb.dtype.kind == "f":
        # float -> int of NaN, inf or an out-of-range value is undefined (C's cast; NumPy's
        # answer is the CPU's): compare the elements that fit only
        src = np.asarray(view(xb, case["x"]), np.float64)
        info = np.iinfo(case["dtype"]) if np.dtype(case["dtype"]).kind != "b" else None
        fits = np.isfinite(src) if info is None else (np.isfinite(src) & (src > float(info.min) - 1) & (src < float(info.max) + 1))
        if fits.shape == np.shape(got) and np.asarray(got).dtype == want.dtype:
            return None if np.array_equal(np.asarray(got)[fits], want[fits]) else f"values\n got {got!r}\nwant {want!r}"
    return compare(case, want, got)


# ----------------------------------------------------------------------------
# The child loop and the test


def case_rng(seed: int, k: int) -> random.Random:
    return random.Random(seed * 1_000_003 + k)


def child_main(seed: int, start: int, seconds: float) -> None:
    """Runs cases start, start+1, ... for `seconds`; prints CASE/FINDING/DONE lines."""
    import offload as ol

    budget = Budget(seconds)
    k = start
    while budget:
        case = gen_case(case_rng(seed, k))
        print("CASE", k, flush=True)
        problem = run_case(ol, case)
        if problem:
            print("FINDING", json.dumps({"k": k, "problem": problem[:2000], "repro": reproducer(case)}), flush=True)
        k += 1
    print("DONE", k - start, flush=True)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [s for _, s in seeds()], ids=seed_ids())
def test_array_ops_match_numpy(seed, tmp_path):
    announce("test_fuzz_arrays", seed)
    budget = Budget()
    findings, start, ran = [], 0, 0
    while budget and len(findings) < 8:
        seconds = max(budget.left(), 0.5)
        # the child starts cases for `seconds`; a minute more covers its start and one slow
        # case (and 120 s in all at least, as before, for the sanitizer stage), so that only
        # a case that hangs is killed: a fixed 120 s killed every child of a budget near that
        child = run_script(
            f"import sys\nsys.path.insert(0, {str(HERE)!r})\nimport test_fuzz_arrays as m\n"
            f"m.child_main({seed}, {start}, {seconds})\n",
            directory=tmp_path, timeout=max(120, seconds + 60))
        last = None
        for line in child.stdout.splitlines():
            if line.startswith("CASE "):
                last, ran = int(line.split()[1]), ran + 1
            elif line.startswith("FINDING "):
                f = json.loads(line[8:])
                findings.append(f"--- case {f['k']} of seed {seed}: {f['problem']}\n{f['repro']}")
                last = None
            elif line.startswith("DONE"):
                last = "done"
        if last == "done":
            break
        if last is None:
            raise AssertionError(f"the fuzz child failed outside a case: {child.describe()}")
        case = gen_case(case_rng(seed, last))
        findings.append(f"--- case {last} of seed {seed}: CRASH, {child.describe(1500)}\n{reproducer(case)}")
        start = last + 1
    print(f"{ran} cases, {len(findings)} findings")
    assert not findings, f"{len(findings)} array operations disagree with NumPy (seed {seed}):\n" + "\n".join(findings)
