"""Compile-time parameters (`N: ol.constexpr`), `ol.static_range` and the
branches and tuples the JIT settles at compile time, from notebook cells
through jupyter_client. Results are compared with NumPy on fresh random data,
into poisoned outputs; every mistake is a CompileError or a TypeError that
names it, and the kernel lives on.
"""

from __future__ import annotations

import json

import pytest

from kernel_testlib import cell_error, cell_ok, merged
from offload_fixtures import CPU_FILTER

DEVICE = CPU_FILTER  # the CPU device every run has (the sanitizer runs see PoCL alone)

GENERIC = f"""\
import numpy as np, offload as ol, math
dev = ol.Device("{DEVICE}")

@ol.device_func
def plus(a, b):
    return a + b

@ol.device_func
def most(a, b):
    return a if a > b else b

@ol.kernel
def fold_rows(item, x, out, OP: ol.constexpr, DT: ol.constexpr, W: ol.constexpr):
    # each row of W columns folded by OP, unrolled; the start is OP's identity
    i = item.get_id(0)
    if OP is plus:
        acc = DT(0)
    else:
        acc = x[i, 0]
    for k in ol.static_range(W):
        acc = OP(acc, DT(x[i, k]))
    out[i] = acc
"""


def stdout(msgs) -> str:
    return "".join(t for kind, t in merged(msgs) if kind == "stdout")


def result(kc, code: str):
    """Runs code whose last line prints json.dumps(...); that value."""
    return json.loads(stdout(cell_ok(kc, code)).strip().splitlines()[-1])


def test_one_kernel_specialised_by_operator_dtype_and_width(kc):
    cell_ok(kc, GENERIC)
    got = result(kc, """\
import json
rng = np.random.default_rng()
x = rng.standard_normal((37, 5)).astype(np.float32)
checks = []
for op, dt, ref in ((plus, np.float64, lambda r: r.astype(np.float64).sum(1)),
                    (most, np.float32, lambda r: r.max(1)),
                    (plus, np.float32, lambda r: r.sum(1, dtype=np.float32))):
    for w in (1, 3, 5):
        out = np.full(37, np.nan, dt)
        fold_rows[ol.Range(37)](ol.asarray(x, device=dev), out, op, dt, w)
        checks.append(bool(np.allclose(out, ref(x[:, :w]), rtol=1e-5)))
# the same values again: no new compile
before = fold_rows.stats["compiles"] + fold_rows.stats["disk_hits"]
fold_rows[ol.Range(37)](ol.asarray(x, device=dev), np.empty(37), plus, np.float64, 3)
again = fold_rows.stats["compiles"] + fold_rows.stats["disk_hits"] - before
print(json.dumps([checks, again, len(fold_rows.signatures)]))
""")
    checks, again, nsigs = got
    assert checks == [True] * 9
    assert again == 0
    assert nsigs == 9


def test_signature_shows_the_compile_time_values(kc):
    cell_ok(kc, GENERIC)
    sigs = result(kc, """\
import json
out = np.empty(4, np.float32)
fold_rows[ol.Range(4)](ol.zeros((4, 2), dtype=np.float32, device=dev), out, most, np.dtype("float32"), 2)
print(json.dumps([s for s in fold_rows.signatures if "OP=most" in s]))
""")
    assert len(sigs) == 1 and sigs[0].endswith(f"[OP=most, DT=float32, W=2] on {DEVICE}"), sigs


def test_static_if_drops_the_branch_not_taken(kc):
    """The branch not taken may not even compile for these values (Python's rule)."""
    got = result(kc, f"""\
import json, numpy as np, offload as ol
@ol.kernel
def pick(item, x, out, SQUARE: ol.constexpr, LIMIT: ol.constexpr):
    i = item.get_id(0)
    if SQUARE and LIMIT > 2:
        out[i] = x[i] * x[i]
    elif LIMIT == 0:
        out[i] = undefined_name(x[i])
    else:
        out[i] = -x[i]
    out[i] *= 1.0 if LIMIT > 0 else undefined_name(1)   # an expression's too
    if (SQUARE is True) != SQUARE:                        # `is` of compile-time values
        out[i] = undefined_name(2)
rng = np.random.default_rng()
x = rng.standard_normal(50)
a = np.full(50, np.nan); b = np.full(50, np.nan)
pick[ol.Range(50)](ol.asarray(x, device="{DEVICE}"), a, True, 3)
pick[ol.Range(50)](ol.asarray(x, device="{DEVICE}"), b, False, 3)
print(json.dumps([bool(np.array_equal(a, x * x)), bool(np.array_equal(b, -x))]))
""")
    assert got == [True, True]


def test_static_range_and_tuples_unroll(kc):
    got = result(kc, f"""\
import json, numpy as np, offload as ol
COEFFS = (0.5, -1.25, 2.0)

@ol.kernel
def stencil(item, x, out, TAPS: ol.constexpr):
    i = item.get_id(0) + len(TAPS) // 2
    acc = 0.0
    for k in ol.static_range(len(TAPS)):
        acc += TAPS[k] * x[i + k - len(TAPS) // 2]
    for c in COEFFS:        # a global tuple unrolls too
        acc += c
    out[i] = acc

rng = np.random.default_rng()
x = rng.standard_normal(64)
ok = []
for taps in ((1.0, -2.0, 1.0), (0.25, 0.5, 0.0, -0.5, -0.25)):
    h = len(taps) // 2
    out = np.full(64, np.nan)
    stencil[ol.Range(64 - 2 * h)](ol.asarray(x, device="{DEVICE}"), out, taps)
    ref = np.convolve(x, taps[::-1], mode="valid") + sum(COEFFS)
    ok.append(bool(np.allclose(out[h:64 - h], ref)) and bool(np.isnan(out[:h]).all()))
print(json.dumps(ok))
""")
    assert got == [True, True]


def test_static_range_steps_and_loop_variable_after(kc):
    got = result(kc, f"""\
import json, numpy as np, offload as ol
@ol.kernel
def steps(item, out, START: ol.constexpr, STOP: ol.constexpr, STEP: ol.constexpr):
    s = 0
    for k in ol.static_range(START, STOP, STEP):
        for j in ol.static_range(k):
            s += j
    out[0] = s
    out[1] = k      # the last value, as after a Python loop
out = np.zeros(2, np.int64)
steps[ol.Range(1)](out, 7, 1, -2)
ref = sum(sum(range(k)) for k in range(7, 1, -2))
print(json.dumps([int(out[0]), int(out[1]), ref, list(ol.static_range(7, 1, -2))]))
""")
    assert got[0] == got[2] and got[1] == 3 and got[3] == [7, 5, 3]


def test_postponed_annotations_and_numpy_scalars(kc):
    """`from __future__ import annotations` leaves the annotation a string."""
    got = result(kc, f"""\
from __future__ import annotations
import json, numpy as np, offload as ol
@ol.kernel
def fill(item, out, V: ol.constexpr):
    out[item.get_id(0)] = V
out = np.zeros(8, np.float32)
fill[ol.Range(8)](out, np.float32(1.5))
fill[ol.Range(4)](out, np.float32(-2.0))
print(json.dumps([out.tolist(), len(fill.signatures)]))
""")
    assert got == [[-2.0] * 4 + [1.5] * 4, 2]


@pytest.mark.parametrize(
    "body,call,words",
    [
        # a compile-time parameter assigned in the kernel
        ("    N = 3\n    out[0] = N", "out, 2", ["'N' is a compile-time parameter", "cannot be assigned"]),
        # static_range over a run-time value
        ("    for k in ol.static_range(out.shape[0]):\n        out[k] = N", "out, 2",
         ["static_range() takes compile-time integers"]),
        # break out of an unrolled loop
        ("    for k in ol.static_range(N):\n        if out[k] > 0:\n            break\n        out[k] = 1",
         "out, 2", ["break cannot leave a loop unrolled"]),
        # a tuple used as a run-time value
        ("    out[0] = N", "out, (1, 2)", ["'N' is a tuple", "compile-time"]),
        # a tuple indexed at run time
        ("    out[0] = N[item.get_id(0)]", "out, (1, 2)", ["compile-time tuple takes compile-time indices"]),
        # a value kernels cannot use
        ("    out[0] = N", "out, [1, 2]", ["'N' is a list"]),
        # too many unrolled statements
        ("    for k in ol.static_range(N):\n        out[0] += k", "out, 100000", ["more than the 4096"]),
    ],
)
def test_compile_time_mistakes_are_compile_errors(kc, body, call, words):
    cell_ok(kc, f"import numpy as np, offload as ol\n@ol.kernel\ndef bad(item, out, N: ol.constexpr):\n{body}\n")
    ename, evalue, _ = cell_error(kc, f"out = np.zeros(4)\nbad[ol.Range(1)]({call})")
    assert ename == "CompileError", evalue
    for w in words:
        assert w in evalue, evalue
    assert stdout(cell_ok(kc, "print(1 + 1)")).strip() == "2"


def test_wrong_argument_count_names_the_compile_time_parameters(kc):
    cell_ok(kc, GENERIC)
    ename, evalue, _ = cell_error(kc, "fold_rows[ol.Range(1)](np.zeros((1, 1)), np.zeros(1), plus)")
    assert ename == "TypeError", evalue
    assert "fold_rows() takes 5 arguments after the item (3 of them compile-time: ('OP', 'DT', 'W')), got 3" in evalue


def test_device_functions_take_no_compile_time_parameters(kc):
    cell_ok(kc, """\
import numpy as np, offload as ol
@ol.device_func
def twice(a, K: ol.constexpr):
    return a * K
@ol.kernel
def uses(item, out):
    out[0] = twice(out[0], 2)
""")
    ename, evalue, _ = cell_error(kc, "uses[ol.Range(1)](np.ones(1))")
    assert ename == "CompileError", evalue
    assert "'K' of device function 'twice' is a compile-time parameter (ol.constexpr), which only kernels take" in evalue


def test_each_value_is_its_own_disk_cache_entry(tmp_path):
    """A new process with a warm disk cache gets each value's own kernel back."""
    from offload_fixtures import run_python

    (tmp_path / "put_values.py").write_text("""\
import numpy as np, offload as ol
@ol.kernel
def put(item, out, V: ol.constexpr, NEG: ol.constexpr):
    out[item.get_id(0)] = -V if NEG else V
outs = []
for v, neg in ((3, False), (4, False), (3, True), (2.5, False)):
    out = np.zeros(2)
    put[ol.Range(2)](out, v, neg)
    outs.append(out.tolist())
""")
    code = f"""
sys.path.insert(0, {str(tmp_path)!r})
import put_values
result["outs"] = put_values.outs
result["stats"] = put_values.put.stats
"""
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "OFFLOAD_DEVICE": DEVICE}
    first = run_python(code, env=env, timeout=300)
    second = run_python(code, env=env, timeout=300)
    want = [[3.0, 3.0], [4.0, 4.0], [-3.0, -3.0], [2.5, 2.5]]
    assert first["outs"] == want and second["outs"] == want
    assert first["stats"]["compiles"] == 4 and first["stats"]["disk_hits"] == 0
    assert second["stats"]["disk_hits"] == 4 and second["stats"]["compiles"] == 0
