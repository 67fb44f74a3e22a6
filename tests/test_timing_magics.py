"""%time, %timeit (line and cell forms) and %kernels, through jupyter_client as
a notebook would, on CI's device (PoCL's CPU device, opencl:cpu:0); and the
module functions behind them (offload.DeviceTimer, offload.kernel_table).

Nothing here asserts how fast anything is: only that the numbers exist, parse,
are positive and agree with each other (best <= mean, counts as launched).
"""

from __future__ import annotations

import html
import re

import pytest

from kernel_testlib import describe, eval_text, execute, of_type, result_text, stream_text, strip_ansi
from offload_fixtures import CPU_FILTER, ol  # noqa: F401  (fixture)

DEFINE = """\
import numpy as np, offload as ol

@ol.kernel
def tm_add(item, x):
    i = item.get_id(0)
    x[i] = x[i] + 1.0

tm_x = ol.asarray(np.zeros(4096, dtype=np.float32), device="opencl:cpu:0")
tm_add[ol.Range(4096)](tm_x)   # compiled here, not inside a timed loop
ol.synchronize("opencl:cpu:0")
"""

UNIT = {"s": 1.0, "ms": 1e-3, "\u00b5s": 1e-6, "ns": 1e-9}
TIME = r"([0-9.]+(?:e[+-]?[0-9]+)?) (s|ms|\u00b5s|ns)"
HOST_LINE = re.compile(
    TIME + r" \u00b1 " + TIME + r" per loop \(mean \u00b1 std\. dev\. of (\d+) runs?, ([\d,]+) loops? each\), "
    r"best " + TIME
)
DEVICE_LINE = re.compile(
    r"device " + TIME + r" \u00b1 " + TIME + r" per loop, best " + TIME + r" \(([0-9.e+]+) kernel launch(?:es)? per loop"
)


def seconds(value: str, unit: str) -> float:
    return float(value) * UNIT[unit]


def ok(kc, code: str):
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", f"{code!r} failed:\n{describe(reply, msgs)}"
    return msgs


def error_of(kc, code: str) -> tuple[str, str]:
    reply, msgs = execute(kc, code)
    c = reply["content"]
    assert c["status"] == "error", f"{code!r} did not fail:\n{describe(reply, msgs)}"
    # shown once: a traceback, or for a UsageError IPython's one line on stderr
    shown = len(of_type(msgs, "error")) + ("UsageError" in stream_text(msgs, "stderr"))
    assert shown == 1, describe(reply, msgs)
    return c["ename"], strip_ansi(c["evalue"] + "\n" + "\n".join(c.get("traceback", [])))


def parse_timeit(text: str) -> dict:
    """The numbers %timeit printed: host mean/std/best, runs, loops, and the device's when there."""
    m = HOST_LINE.search(text)
    assert m, f"no IPython-style result line in:\n{text}"
    out = {
        "mean": seconds(m[1], m[2]),
        "std": seconds(m[3], m[4]),
        "runs": int(m[5]),
        "loops": int(m[6].replace(",", "")),
        "best": seconds(m[7], m[8]),
    }
    d = DEVICE_LINE.search(text)
    if d:
        out.update(
            device_mean=seconds(d[1], d[2]),
            device_std=seconds(d[3], d[4]),
            device_best=seconds(d[5], d[6]),
            launches_per_loop=float(d[7]),
        )
    return out


def check_consistent(r: dict) -> None:
    # printed with 3 significant digits: allow the rounding
    assert r["mean"] > 0 and r["best"] > 0 and r["std"] >= 0, r
    assert r["best"] <= r["mean"] * 1.005, r
    if "device_mean" in r:
        assert r["device_mean"] > 0 and r["device_best"] > 0 and r["device_std"] >= 0, r
        assert r["device_best"] <= r["device_mean"] * 1.005, r


@pytest.fixture(scope="module")
def defined(kernel):
    ok(kernel.kc, DEFINE)
    return kernel.kc


# ---------------------------------------------------------------- %timeit


def test_timeit_kernel_launch_reports_device_time(defined):
    msgs = ok(defined, "%timeit -n 20 -r 3 tm_add[ol.Range(4096)](tm_x)")
    text = stream_text(msgs)
    r = parse_timeit(text)
    assert r["runs"] == 3 and r["loops"] == 20, text
    assert "device_mean" in r, f"no device time reported for a kernel launch:\n{text}"
    assert r["launches_per_loop"] == 1, text
    check_consistent(r)


def test_timeit_host_only(defined):
    """-d: launches go untimed (timing costs a CUDA launch an event pair), the devices are
    still waited for, and no device line is printed."""
    ok(defined, "tm_z = ol.zeros(100, dtype=np.float32, device='opencl:cpu:0')")
    text = stream_text(ok(defined, "%timeit -d -n 5 -r 2 tm_add[ol.Range(100)](tm_z)"))
    r = parse_timeit(text)
    assert "device_mean" not in r and "device" not in text.split("\n", 1)[1], text
    check_consistent(r)
    assert eval_text(defined, "float(ol.asnumpy(tm_z)[99])") == "10.0"
    ok(defined, "%timeit -o -q -d -n 2 -r 2 tm_add[ol.Range(100)](tm_z)")
    assert eval_text(defined, "(_.device_average, _.loops)") == "(None, 2)"


def test_timeit_without_device_work_says_so(defined):
    text = stream_text(ok(defined, "%timeit -n 10 -r 2 sum(range(100))"))
    r = parse_timeit(text)
    assert "device_mean" not in r and "no device time" in text, text
    check_consistent(r)


def test_timeit_respects_n_and_r(defined):
    ok(defined, "tm_calls = 0\ndef tm_bump():\n    global tm_calls\n    tm_calls += 1\n")
    text = stream_text(ok(defined, "%timeit -n 4 -r 3 tm_bump()"))
    assert eval_text(defined, "tm_calls") == "12", text
    r = parse_timeit(text)
    assert (r["runs"], r["loops"]) == (3, 4), text
    ok(defined, "tm_calls = 0")
    ok(defined, "%timeit -n7 -r1 tm_bump()")  # getopt style, as IPython takes it
    assert eval_text(defined, "tm_calls") == "7"


def test_timeit_chooses_n_when_not_given(defined):
    ok(defined, "import time as tm_time\ntm_calls = 0\ndef tm_slow():\n    global tm_calls\n    tm_calls += 1\n"
                "    tm_time.sleep(0.03)\n")
    text = stream_text(ok(defined, "%timeit -r 2 tm_slow()"))
    r = parse_timeit(text)
    # IPython's choice: the first power of ten whose run takes 0.2 s (10 loops of 30 ms, unless
    # the machine stalls); the calibration runs 1, 10, ... loops first
    assert r["runs"] == 2 and r["loops"] in (1, 10, 100), text
    calibration = sum(10**p for p in range(len(str(r["loops"]))))
    assert int(eval_text(defined, "tm_calls")) == calibration + 2 * r["loops"], text


def test_timeit_o_returns_result_object(defined):
    msgs = ok(defined, "%timeit -o -q -n 5 -r 3 tm_add[ol.Range(4096)](tm_x)")
    assert stream_text(msgs).strip() == "", "-q printed something"
    assert "TimeitResult" in (result_text(msgs) or ""), describe({}, msgs)
    ok(defined, "tm_res = _")
    got = eval_text(
        defined,
        "(tm_res.loops, tm_res.repeat, len(tm_res.all_runs), len(tm_res.timings), len(tm_res.device_all_runs),"
        " tm_res.launches_per_loop)",
    )
    assert got == "(5, 3, 3, 3, 3, 1.0)", got
    checks = eval_text(
        defined,
        "(0 < tm_res.best <= tm_res.average <= tm_res.worst, tm_res.stdev >= 0,"
        " 0 < tm_res.device_best <= tm_res.device_average <= tm_res.device_worst, tm_res.device_stdev >= 0,"
        " abs(min(tm_res.all_runs) / tm_res.loops - tm_res.best) < 1e-12,"
        " abs(min(tm_res.device_all_runs) / tm_res.loops - tm_res.device_best) < 1e-12)",
    )
    assert checks == "(True, True, True, True, True, True)", checks
    # no device work: the device attributes are None
    ok(defined, "%timeit -o -q -n 2 -r 2 pass")
    assert eval_text(defined, "(_.device_average, _.device_best, _.launches_per_loop, _.loops)") == "(None, None, 0.0, 2)"


def test_magic_values_assign_as_in_ipython(defined):
    """`name = %magic ...` assigns the magic's value; comparisons and strings are left alone."""
    ok(defined, "tm_r = %timeit -o -q -n 2 -r 2 pass\ntm_v, = %time [sum(range(10))]\ntm_obj = type('O', (), {})()\n"
                "tm_obj.t = %time 6 * 7\ntm_s = 'a = %time 1'\ntm_eq = 3 == 3")
    got = eval_text(defined, "(tm_r.loops, len(tm_r.all_runs), tm_v, tm_obj.t, tm_s, tm_eq)")
    assert got == "(2, 2, 45, 42, 'a = %time 1', True)", got


def test_cell_timeit(defined):
    ok(defined, "tm_setups = 0")
    msgs = ok(defined, "%%timeit -n 3 -r 2 tm_setups += 1\ntm_add[ol.Range(4096)](tm_x)\ntm_add[ol.Range(4096)](tm_x)\n")
    text = stream_text(msgs)
    r = parse_timeit(text)
    assert (r["runs"], r["loops"]) == (2, 3), text
    assert r.get("launches_per_loop") == 2, text
    check_consistent(r)
    assert eval_text(defined, "tm_setups") == "2", "the setup line runs once per run"


def test_timeit_synchronises_so_results_are_done(defined):
    """After %timeit returns, every launch it made has finished: the array holds their sum."""
    ok(defined, "tm_y = ol.zeros(1000, dtype=np.float32, device='opencl:cpu:0')")
    ok(defined, "%timeit -q -n 10 -r 3 tm_add[ol.Range(1000)](tm_y)")
    assert eval_text(defined, "float(ol.asnumpy(tm_y)[0]), float(ol.asnumpy(tm_y)[-1])") == "(30.0, 30.0)"


# ---------------------------------------------------------------- %time


def test_time_with_device_work(defined):
    text = stream_text(ok(defined, "%time tm_add[ol.Range(4096)](tm_x)"))
    assert re.search(r"CPU times: user .+, sys: .+, total: .+\nWall time: " + TIME, text), text
    m = re.search(r"Device time: " + TIME + r" \(1 kernel launch, summed\)", text)
    assert m and seconds(m[1], m[2]) > 0, text
    text = stream_text(ok(defined, "%%time\nfor _ in range(3):\n    tm_add[ol.Range(4096)](tm_x)\n"))
    assert "(3 kernel launches, summed)" in text, text


def test_time_without_device_work_and_value(defined):
    msgs = ok(defined, "%time sum(range(10))")
    text = stream_text(msgs)
    assert "Wall time:" in text and "Device time" not in text, text
    assert result_text(msgs) == "45"


# ---------------------------------------------------------------- %kernels


def kernels_display(kc) -> tuple[str, str]:
    msgs = ok(kc, "%kernels")
    shown = [m for m in of_type(msgs, "display_data") if "text/html" in m["content"]["data"]]
    assert len(shown) == 1, f"%kernels: expected one display with HTML\n{describe({}, msgs)}"
    data = shown[0]["content"]["data"]
    assert "text/plain" in data, "no text/plain fallback"
    return data["text/plain"], data["text/html"]


def text_rows(text: str, name: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.split(" ", 1)[0] == name]


def test_kernels_table(defined):
    ok(defined, """\
@ol.kernel
def tk_three(item, x):
    i = item.get_id(0)
    x[i] = x[i] * 2.0

@ol.kernel
def tk_once(item, a, x):
    i = item.get_id(0)
    x[i] = a + x[i]

tk_x = ol.ones(64, dtype=np.float32, device="opencl:cpu:0")
for _ in range(3):
    tk_three[ol.Range(64)](tk_x)
tk_once[ol.Range(64)](1.5, tk_x)
""")
    text, page = kernels_display(defined)
    rows = {r["name"]: r for r in eval_expr_list(defined, "[r for r in ol.kernel_table() if r['name'].startswith('tk_')]")}
    assert set(rows) == {"tk_three", "tk_once"}, rows
    sig_three = eval_text(defined, "tk_three.signatures[0]").strip("'").split(" on ")[0]
    sig_once = eval_text(defined, "tk_once.signatures[0]").strip("'").split(" on ")[0]
    assert rows["tk_three"]["signature"] == sig_three and rows["tk_once"]["signature"] == sig_once, rows
    assert (rows["tk_three"]["launches"], rows["tk_once"]["launches"]) == (3, 1), rows
    assert rows["tk_three"]["memory_hits"] == 2 and rows["tk_once"]["memory_hits"] == 0, rows
    for r in rows.values():
        assert r["device"] == CPU_FILTER and r["target"].split()[0] == CPU_FILTER, r
        assert r["target"].split()[1] in ("spirv", "spir1.2"), r
        assert r["code_size"] > 0 and r["compile_ms"] > 0, r
        assert r["device_ms"] is None and r["timed_launches"] == 0, "nothing was timed yet"
    # the text table: one row each, with the same signature, target and counts
    for name, sig, launches in (("tk_three", sig_three, 3), ("tk_once", sig_once, 1)):
        lines = text_rows(text, name)
        assert len(lines) == 1, text
        line = lines[0]
        assert sig in line and rows[name]["target"] in line, line
        cells = re.split(r"\s{2,}", line.split(sig, 1)[1].strip())
        # target, code bytes, compile ms, launches, device ms, memory hits, disk hit
        assert cells[0] == rows[name]["target"], cells
        assert int(cells[1].replace(",", "")) == rows[name]["code_size"] > 0, cells
        assert int(cells[3]) == launches and cells[4] == "-", cells
    plain = html.unescape(re.sub(r"<[^>]+>", " ", page))
    for name in ("tk_three", "tk_once"):
        assert name in plain and rows[name]["target"] in plain, page
    assert "tk_three" in text and "<table" in page


def eval_expr_list(kc, expr: str) -> list:
    import ast

    return ast.literal_eval(eval_text(kc, expr))


def test_kernels_cache_hit_and_device_time(defined):
    ok(defined, """\
@ol.kernel
def tc_k(item, x):
    i = item.get_id(0)
    x[i] = x[i] + 3.0

tc_x = ol.zeros(32, dtype=np.float32, device="opencl:cpu:0")
tc_k[ol.Range(32)](tc_x)
""")
    row = "[(r['launches'], r['memory_hits'], r['timed_launches']) for r in ol.kernel_table() if r['name'] == 'tc_k']"
    assert eval_text(defined, row) == "[(1, 0, 0)]"
    ok(defined, "tc_k[ol.Range(32)](tc_x)")  # the same kernel object, the same types: found compiled
    assert eval_text(defined, row) == "[(2, 1, 0)]"
    ok(defined, "tc_k[ol.Range(8)](ol.zeros(8, dtype=np.float64, device='opencl:cpu:0'))")  # new types
    assert eval_text(defined, row) == "[(2, 1, 0), (1, 0, 0)]"
    # launches under %timeit are timed: their device time shows in the table
    ok(defined, "%timeit -q -n 4 -r 2 tc_k[ol.Range(32)](tc_x)")
    assert eval_text(defined, row) == "[(10, 9, 8), (1, 0, 0)]"
    assert eval_text(defined, "[r['device_ms'] for r in ol.kernel_table() if r['name'] == 'tc_k'][0] > 0") == "True"
    text, _ = kernels_display(defined)
    line = text_rows(text, "tc_k")[0]
    assert re.search(r"\s10\s+[0-9.e+-]+ \(8 timed\)\s+9\s", line), line
    assert "device ms:" in text  # the note on what is timed


def test_kernels_before_any_kernel(tmp_path):
    from kernel_testlib import start_kernel

    k = start_kernel(tmp_path / "kernel.stderr")
    try:
        text = stream_text(ok(k.kc, "%kernels"))
        assert "No kernels compiled yet" in text, text
        ename, msg = error_of(k.kc, "%kernels --bogus")
        assert ename == "UsageError" and "%kernels" in msg, msg
    finally:
        k.shutdown()


# ---------------------------------------------------------------- %lsmagic and errors


def test_lsmagic_lists_every_magic(kc):
    msgs = ok(kc, "%lsmagic")
    text = stream_text(msgs) or result_text(msgs)  # IPython's %lsmagic is a result; the kernel's own prints
    line_part, _, cell_part = text.partition("cell magics")
    for name in ("kernels", "time", "timeit", "lsplatform", "devices", "device", "lsmagic", "matplotlib"):
        assert re.search(rf"%{name}\s", line_part), f"%{name} missing from %lsmagic:\n{text}"
    for name in ("time", "timeit"):
        assert re.search(rf"%%{name}\s", cell_part), f"%%{name} missing from %lsmagic:\n{text}"


@pytest.mark.parametrize(
    "code, needle",
    [
        ("%timeit -n x pass", "'x'"),
        ("%timeit -n 0 pass", "'0'"),
        ("%timeit -r -3 pass", "'-3'"),
        ("%timeit -n", "-n needs"),
        ("%timeit -z pass", "unknown option -z"),
        ("%timeit", "nothing to time"),
        ("%%timeit -n 2\n\n", "nothing to time"),
    ],
)
def test_timeit_usage_errors(kernel, kc, code, needle):
    ename, text = error_of(kc, code)
    assert ename == "UsageError", text
    assert needle in text, text
    kernel.assert_alive(code)
    assert eval_text(kc, "6 * 7") == "42"


def test_error_in_timed_code_leaves_kernel_usable(kernel, defined):
    ename, _ = error_of(defined, "%timeit -n 1 -r 1 1 / 0")
    assert ename == "ZeroDivisionError"
    ename, _ = error_of(defined, "%time undefined_name_tm")
    assert ename == "NameError"
    kernel.assert_alive("errors inside %timeit and %time")
    r = parse_timeit(stream_text(ok(defined, "%timeit -n 3 -r 2 tm_add[ol.Range(4096)](tm_x)")))
    assert r.get("launches_per_loop") == 1
    assert eval_text(defined, "__import__('gc').isenabled()") == "True", "%timeit left the collector off"


# ---------------------------------------------------------------- the module functions


def test_device_timer_and_kernel_table_in_module(ol):  # noqa: F811
    import numpy as np

    @ol.kernel
    def dt_add(item, x):
        i = item.get_id(0)
        x[i] = x[i] + 1.0  # the name is its __qualname__: test_...<locals>.dt_add

    x = ol.zeros(256, dtype=np.float32, device=CPU_FILTER)
    dt_add[ol.Range(256)](x)
    with ol.DeviceTimer() as t:
        for _ in range(5):
            dt_add[ol.Range(256)](x)
        ev = ol.call_kernel_async(dt_add, ol.Range(256), x)  # the caller's event and the timer's both
    assert t.launches == 6 and t.seconds > 0 and not t.open, t
    assert ev.elapsed >= 0
    assert float(ol.asnumpy(x)[0]) == 7.0
    (row,) = [r for r in ol.kernel_table() if r["name"].endswith(".dt_add")]
    assert (row["launches"], row["timed_launches"], row["memory_hits"]) == (7, 6, 6), row
    assert row["device_ms"] == pytest.approx(t.seconds * 1e3, rel=1e-6), (row, t.seconds)
    # outside a timer nothing is timed; laps split the time between them
    dt_add[ol.Range(256)](x)
    t = ol.DeviceTimer()
    dt_add[ol.Range(256)](x)
    t.sync()
    s1, n1 = t.lap()
    s2, n2 = t.lap()
    t.close()
    assert (n1, n2, s2) == (1, 0, 0.0) and s1 > 0
    with pytest.raises(ValueError):
        t.lap()
    # record=False: waits, times nothing
    t = ol.DeviceTimer(record=False)
    dt_add[ol.Range(256)](x)
    t.sync()
    assert t.lap() == (0.0, 0) and not t.recording
    t.close()
    # a collected kernel leaves the table with its programs
    del dt_add
    import gc

    gc.collect()
    assert not [r for r in ol.kernel_table() if r["name"].endswith(".dt_add")]


def test_device_timer_past_the_record_bound(ol):  # noqa: F811
    """More timed launches than a device keeps records for (65536): launches collect the
    finished ones as they go, and none is lost."""
    import numpy as np

    @ol.kernel
    def bound_inc(item, x):
        i = item.get_id(0)
        x[i] = x[i] + 2.0

    x = ol.zeros(1, dtype=np.float32, device=CPU_FILTER)
    bound_inc[ol.Range(1)](x)
    m = 70000
    with ol.DeviceTimer() as t:
        for _ in range(m):
            bound_inc[ol.Range(1)](x)
    assert t.launches == m and t.seconds > 0, t
    assert float(ol.asnumpy(x)[0]) == 2.0 * (m + 1)
