"""IPython's shell inside the kernel (issue 17): notebooks written for ipykernel run unchanged.

The main referee is tests/notebooks/everyday_idioms.ipynb, run with nbclient under
ipykernel and under offload: every cell must give the same kinds of output and the
same error-or-not. The other tests cover what a notebook cannot show: interrupts of
shell commands, %debug through stdin, extensions, the event order, %run of a file
with a device kernel, widgets over comms, libraries that look for a notebook, and a
kernel without IPython.
"""

from __future__ import annotations

import ast
import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from kernel_testlib import (
    REPO,
    cell_error,
    cell_ok,
    drain,
    eval_text,
    execute,
    of_type,
    request,
    result_text,
    start_kernel,
    stream_text,
    strip_ansi,
    wait_for_stream,
    wait_reply,
    wait_stdin_request,
    iopub_for,
)

pytest.importorskip("IPython", reason="the kernel's IPython shell needs IPython (scripts/setup installs it)")

IDIOMS = REPO / "tests" / "notebooks" / "everyday_idioms.ipynb"


def value_of(kc, code: str) -> str:
    """Run a cell; the text/plain of its last expression."""
    return result_text(cell_ok(kc, code))


# ---------------------------------------------------------------- the idioms notebook, both kernels


def _output_kinds(output: dict) -> str:
    kind = output["output_type"]
    if kind == "stream":
        return f"stream:{output['name']}"
    if kind == "error":
        return "error"
    return f"{kind}:" + ",".join(sorted(output.get("data", {})))


def _run_notebook(kernel_name: str, workdir: Path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(IDIOMS, as_version=4)
    status: dict[int, str] = {}

    def on_cell_executed(cell, cell_index, execute_reply):
        status[cell_index] = execute_reply["content"]["status"]

    NotebookClient(nb, kernel_name=kernel_name, allow_errors=True, timeout=120,
                   resources={"metadata": {"path": str(workdir)}},
                   on_cell_executed=on_cell_executed).execute()
    return nb, status


@pytest.mark.timeout(600)
def test_everyday_idioms_give_what_ipykernel_gives(tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("ipykernel's python3 kernelspec is not installed (scripts/setup installs ipykernel)")
    pytest.importorskip("ipywidgets", reason="the notebook shows a widget (scripts/setup installs ipywidgets)")
    (tmp_path / "ipykernel").mkdir()
    (tmp_path / "offload").mkdir()
    ref, ref_status = _run_notebook("python3", tmp_path / "ipykernel")
    got, got_status = _run_notebook("offload", tmp_path / "offload")
    code_cells = [i for i, c in enumerate(ref.cells) if c.cell_type == "code"]
    assert len(code_cells) >= 40
    differences = []
    for i in code_cells:
        want = (ref_status.get(i), sorted({_output_kinds(o) for o in ref.cells[i].outputs}))
        have = (got_status.get(i), sorted({_output_kinds(o) for o in got.cells[i].outputs}))
        if want != have:
            differences.append(f"cell {i} {ref.cells[i].source[:60]!r}: ipykernel {want}, offload {have}\n"
                               f"    offload gave: {json.dumps(got.cells[i].outputs)[:600]}")
    assert not differences, "\n".join(differences)
    # Every cell ran under both (a cell without a reply would hide a hang or a crash).
    assert set(got_status) == set(code_cells) == set(ref_status)


# ---------------------------------------------------------------- shell commands


def test_shell_output_streams_while_the_command_runs(kc):
    msg_id = kc.execute("!echo first; sleep 0.6; echo second; sleep 0.6; echo third")
    # "first" arrives while the command still runs: before the reply.
    wait_for_stream(kc, msg_id, "first")
    reply = wait_reply(kc, msg_id)
    msgs = iopub_for(kc, msg_id)
    streams = [m["content"]["text"] for m in of_type(msgs, "stream")]
    assert reply["content"]["status"] == "ok"
    assert len(streams) >= 2, streams  # not one block at the end
    assert "third" in "".join(streams)


@pytest.mark.parametrize("code, started", [
    ("!echo started; sleep 300; echo never", "started"),
    ("%%bash\necho started\nsleep 300\necho never", "started"),
])
def test_interrupt_stops_a_shell_command_and_the_kernel_lives(fresh_kernel, code, started):
    kc = fresh_kernel.kc
    msg_id = kc.execute(code)
    wait_for_stream(kc, msg_id, started)
    fresh_kernel.km.interrupt_kernel()
    reply = wait_reply(kc, msg_id, timeout=60)  # the command sleeps 300 s: only the interrupt ends it
    msgs = iopub_for(kc, msg_id)
    assert "never" not in stream_text(msgs)
    assert reply["content"]["status"] in ("ok", "error")
    if code.startswith("!"):
        assert eval_text(kc, "_exit_code") != "0"  # IPython puts the status there
    assert eval_text(kc, "6 * 7") == "42"


def test_missing_command_gets_the_shells_message_and_status(kc):
    text = stream_text(cell_ok(kc, "!no_such_command_offload_test"))
    assert "not found" in text, text
    assert eval_text(kc, "_exit_code") == "127"


def test_shell_output_captured_as_slist(kc):
    cell_ok(kc, "out = !printf 'a\\nb\\n'")
    assert eval_text(kc, "type(out).__name__, list(out)") == "('SList', ['a', 'b'])"
    assert eval_text(kc, "get_ipython().getoutput('echo x')") == "['x']"


def test_sys_executable_is_the_python_pip_installs_into(kc):
    import sys as host_sys

    got = eval_text(kc, "__import__('sys').executable")
    assert Path(got.strip("'")).resolve() == Path(host_sys.executable).resolve()
    text = stream_text(cell_ok(kc, "%pip --version"))
    assert "pip" in text and "python" in text.lower(), text


def test_pip_without_a_reachable_index_fails_in_the_cell(kernel, kc):
    msgs = cell_ok(kc, "%pip install --no-cache-dir --index-url http://127.0.0.1:9/simple --retries 0 "
                       "--timeout 2 no-such-package-offload-test")
    text = stream_text(msgs) + stream_text(msgs, "stderr")
    assert "no-such-package-offload-test" in text or "ERROR" in text, text
    kernel.assert_alive("%pip with no index")


# ---------------------------------------------------------------- magics: IPython's and ours in one manager


def test_one_magics_manager_sees_ipythons_and_ours(kc):
    cell_ok(kc, "%pwd")  # makes the shell
    listing = eval_text(kc, "sorted(get_ipython().magics_manager.lsmagic()['line'])")
    for name in ("lsplatform", "devices", "device", "kernels", "time", "timeit", "matplotlib", "run", "pip", "cd"):
        assert f"'{name}'" in listing, f"%{name} missing: {listing}"
    cells = eval_text(kc, "sorted(get_ipython().magics_manager.lsmagic()['cell'])")
    for name in ("offload", "time", "timeit", "writefile", "bash", "capture"):
        assert f"'{name}'" in cells, f"%%{name} missing: {cells}"
    # %lsmagic is IPython's and lists ours
    text = result_text(cell_ok(kc, "%lsmagic"))
    assert "%lsplatform" in text and "%%offload" in text, text
    # ours win where the names are shared: %time waits for the devices
    assert "offload" in eval_text(kc, "get_ipython().find_line_magic('time').__module__")


def test_help_on_our_magic_and_alias_magic(kc):
    reply, _ = execute(kc, "%lsplatform?")
    pages = [p for p in reply["content"]["payload"] if p["source"] == "page"]
    assert pages and "platforms and devices" in strip_ansi(pages[0]["data"]["text/plain"])
    cell_ok(kc, "%alias_magic lp lsplatform")
    msgs = cell_ok(kc, "%lp")
    assert of_type(msgs, "display_data") or stream_text(msgs), msgs


def test_timeit_keeps_ipythons_options(kc):
    text = stream_text(cell_ok(kc, "%timeit -n 3 -r 2 -p 5 -c sum(range(10))"))
    assert "per loop" in text and "2 runs, 3 loops each" in text, text
    cell_ok(kc, "%timeit -t -q -n 2 -r 1 pass")
    ename, evalue, _ = cell_error(kc, "%timeit -p x pass")
    assert ename == "UsageError" and "'x'" in evalue


def test_unknown_magic_is_a_usage_error_on_stderr(kc):
    reply, msgs = execute(kc, "%no_such_magic_here")
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "UsageError"
    assert not of_type(msgs, "error")  # as ipykernel: one line on stderr, no traceback
    assert "UsageError" in stream_text(msgs, "stderr")


def test_run_of_a_missing_file_and_cd_to_a_missing_directory(kernel, kc):
    ename, evalue, _ = cell_error(kc, "%run /no/such/file_offload.py")
    assert "no/such/file_offload.py" in evalue, evalue
    text = stream_text(cell_ok(kc, "%cd /no/such/dir_offload"))
    assert "No such file or directory" in text, text
    kernel.assert_alive("%cd and %run of missing paths")


def test_automagic_and_magic_assignment(kc):
    cell_ok(kc, "%cd /")
    assert result_text(cell_ok(kc, "pwd")) == "'/'"
    cell_ok(kc, "where = %pwd")
    assert eval_text(kc, "where") == "'/'"


def test_xmode_shapes_our_tracebacks(kc):
    cell_ok(kc, "%xmode Minimal")
    try:
        reply, _ = execute(kc, "def f():\n    return 1 / 0\nf()")
        tb = strip_ansi("\n".join(reply["content"]["traceback"]))
        assert "ZeroDivisionError" in tb and "return 1 / 0" not in tb, tb
    finally:
        cell_ok(kc, "%xmode Context")
    reply, _ = execute(kc, "def f():\n    return 1 / 0\nf()")
    tb = strip_ansi("\n".join(reply["content"]["traceback"]))
    assert "return 1 / 0" in tb and "Cell In[" in tb, tb


def test_precision_and_formatters_apply_to_results(kc):
    cell_ok(kc, "%precision 2")
    try:
        assert result_text(cell_ok(kc, "3.14159")) == "3.14"
    finally:
        cell_ok(kc, "%precision")


def test_history_recall_and_load_payloads(kc, tmp_path):
    marker = f"history_marker_{os.getpid()}"
    cell_ok(kc, f"{marker} = 1")
    assert marker in stream_text(cell_ok(kc, "%history -l 3"))
    script = tmp_path / "loaded.py"
    script.write_text("print('loaded')\n")
    reply, _ = execute(kc, f"%load {script}")
    nxt = [p for p in reply["content"]["payload"] if p["source"] == "set_next_input"]
    assert nxt and "print('loaded')" in nxt[0]["text"], reply["content"]["payload"]


def test_capture_takes_prints_and_displays(kc):
    msgs = cell_ok(kc, "%%capture cap\nprint('quiet please')\ndisplay('shown later')")
    assert not of_type(msgs, "stream") and not of_type(msgs, "display_data")
    assert eval_text(kc, "cap.stdout, len(cap.outputs)") == "('quiet please\\n', 1)"


# ---------------------------------------------------------------- get_ipython() and events


def test_get_ipython_has_the_interactive_shell_surface(kc):
    names = ["user_ns", "user_global_ns", "run_line_magic", "run_cell_magic", "find_magic", "register_magics",
             "register_magic_function", "magics_manager", "extension_manager", "events", "system", "getoutput",
             "ex", "ev", "push", "run_cell", "display_formatter", "display_pub", "config", "kernel", "has_trait",
             "observe"]
    missing = eval_text(kc, f"[n for n in {names!r} if not hasattr(get_ipython(), n)]")
    assert missing == "[]", missing
    assert eval_text(kc, "get_ipython().user_ns is globals() is get_ipython().user_global_ns") == "True"
    assert eval_text(kc, "type(get_ipython()).__name__") == "'ZMQInteractiveShell'"
    assert eval_text(kc, "'IPKernelApp' in get_ipython().config") == "True"
    assert eval_text(kc, "__import__('IPython').get_ipython() is get_ipython()") == "True"
    assert value_of(kc, "get_ipython().kernel.get_parent()['header']['msg_type']") == "'execute_request'"
    assert value_of(kc, "get_ipython().run_cell('40 + 2').result") == "42"


def test_events_fire_in_ipykernels_order_with_its_arguments(kc):
    cell_ok(kc, textwrap.dedent("""\
        seen_events = []
        ip = get_ipython()
        def _pre_execute(): seen_events.append('pre_execute')
        def _pre_run_cell(info): seen_events.append(('pre_run_cell', info.raw_cell, info.silent))
        def _post_execute(): seen_events.append('post_execute')
        def _post_run_cell(result): seen_events.append(('post_run_cell', result.success, type(result.error_in_exec).__name__))
        for name, fn in [('pre_execute', _pre_execute), ('pre_run_cell', _pre_run_cell),
                         ('post_execute', _post_execute), ('post_run_cell', _post_run_cell)]:
            ip.events.register(name, fn)
        """))
    cell_ok(kc, "seen_events.clear()")
    cell_ok(kc, "x_event = 1")
    execute(kc, "1 / 0")
    execute(kc, "y_event = 2", silent=True)
    got = eval_text(kc, "seen_events")
    for name, fn in [("pre_execute", "_pre_execute"), ("pre_run_cell", "_pre_run_cell"),
                     ("post_execute", "_post_execute"), ("post_run_cell", "_post_run_cell")]:
        cell_ok(kc, f"ip.events.unregister({name!r}, {fn})")
    expected = [
        "post_execute", ("post_run_cell", True, "NoneType"),  # the tail of the clearing cell
        "pre_execute", ("pre_run_cell", "x_event = 1", False), "post_execute", ("post_run_cell", True, "NoneType"),
        "pre_execute", ("pre_run_cell", "1 / 0", False), "post_execute",
        ("post_run_cell", False, "ZeroDivisionError"),
        "pre_execute", "post_execute",  # a silent cell fires only the *_execute events
        "pre_execute", "post_execute",  # eval_text's silent cell; its user expression is read after
    ]
    assert ast.literal_eval(got) == expected, got


# ---------------------------------------------------------------- debugger


def _answer_prompts(kc, msg_id, answers):
    """Answer pdb's input_requests in order; (the text it printed, the cell's IOPub messages)."""
    for answer in answers:
        req = wait_stdin_request(kc)
        assert "ipdb" in req["content"]["prompt"], req["content"]
        kc.input(answer)
    wait_reply(kc, msg_id)
    msgs = iopub_for(kc, msg_id)
    return strip_ansi(stream_text(msgs)), msgs


def test_debug_is_driven_through_stdin(fresh_kernel):
    kc = fresh_kernel.kc
    execute(kc, "def g(y):\n    z = y + 1\n    return 1 / (z - z)\ng(41)")
    msg_id = kc.execute("%debug", allow_stdin=True)
    text, _ = _answer_prompts(kc, msg_id, ["p z", "p y * 2", "q"])
    assert "42" in text and "82" in text, text
    assert eval_text(kc, "6 * 7") == "42"


def test_pdb_on_enters_the_debugger_after_the_error(fresh_kernel):
    kc = fresh_kernel.kc
    cell_ok(kc, "%pdb on")
    msg_id = kc.execute("def h(v):\n    w = v * 3\n    raise ValueError(w)\nh(5)", allow_stdin=True)
    text, msgs = _answer_prompts(kc, msg_id, ["p w", "q"])
    assert "15" in text, text
    assert [m["content"]["ename"] for m in of_type(msgs, "error")] == ["ValueError"]  # once, before the debugger
    cell_ok(kc, "%pdb off")


# ---------------------------------------------------------------- extensions and %run


EXTENSION = '''\
"""A small IPython extension for the tests: %shout upper-cases its line."""
loads = []

def load_ipython_extension(ip):
    loads.append(1)
    ip.register_magic_function(lambda line: line.upper(), "line", "shout")

def unload_ipython_extension(ip):
    del ip.magics_manager.magics["line"]["shout"]
'''


def test_load_ext_of_an_extension_module(kc, tmp_path):
    (tmp_path / "offload_test_ext.py").write_text(EXTENSION)
    cell_ok(kc, f"import sys; sys.path.insert(0, {str(tmp_path)!r})")
    cell_ok(kc, "%load_ext offload_test_ext")
    assert result_text(cell_ok(kc, "%shout hello")) == "'HELLO'"
    assert eval_text(kc, "len(__import__('offload_test_ext').loads)") == "1"
    cell_ok(kc, "%reload_ext offload_test_ext")  # unloads, re-imports, loads again
    assert result_text(cell_ok(kc, "%shout again")) == "'AGAIN'"
    cell_ok(kc, "%unload_ext offload_test_ext")
    ename, _, _ = cell_error(kc, "%shout once more")
    assert ename == "UsageError"


def test_run_of_a_file_that_defines_a_device_kernel(kc, tmp_path):
    script = tmp_path / "saxpy_script.py"
    script.write_text(textwrap.dedent("""\
        import numpy as np
        import offload as ol

        @ol.kernel
        def saxpy(item, a, x, y):
            i = item.get_id(0)
            y[i] = a * x[i] + y[i]

        rng = np.random.default_rng()
        x_host = rng.random(1000).astype(np.float32)
        y_host = rng.random(1000).astype(np.float32)
        x = ol.asarray(x_host, device="opencl:cpu")
        y = ol.asarray(y_host, device="opencl:cpu")
        saxpy[ol.Range(1000)](np.float32(2.0), x, y)
        result = ol.asnumpy(y)
        """))
    cell_ok(kc, f"%run {script}")
    assert eval_text(kc, "bool(np.allclose(result, 2 * x_host + y_host, rtol=1e-6))") == "True"
    # -i runs in the notebook's namespace, with fresh data: compiled from the file again or found cached
    cell_ok(kc, "result = None")
    cell_ok(kc, f"%run -i {script}")
    assert eval_text(kc, "bool(np.allclose(result, 2 * x_host + y_host, rtol=1e-6))") == "True"


def test_third_party_extensions_line_profiler_and_memory_profiler(kc):
    pytest.importorskip("line_profiler", reason="scripts/setup installs line_profiler")
    pytest.importorskip("memory_profiler", reason="scripts/setup installs memory_profiler")
    cell_ok(kc, "%load_ext line_profiler")
    cell_ok(kc, "def lp_target(n):\n    s = 0\n    for i in range(n):\n        s += i\n    return s")
    reply, _ = execute(kc, "%lprun -f lp_target lp_target(1000)")
    pages = [p["data"]["text/plain"] for p in reply["content"]["payload"] if p["source"] == "page"]
    # per-line hits of the loop body; the source lines themselves line_profiler shows only for
    # files and ipykernel's cell names (README: known gaps)
    assert pages and "Total time" in pages[0] and re.search(r"\b1000\b", pages[0]), reply["content"]
    cell_ok(kc, "%load_ext memory_profiler")
    assert "peak memory" in stream_text(cell_ok(kc, "%memit sum(range(1000))"))


def test_pasted_prompts_are_stripped(kc):
    assert value_of(kc, ">>> 6 * 7") == "42"
    assert value_of(kc, "In [3]: 6 * 8") == "48"


# ---------------------------------------------------------------- widgets and libraries that look for a notebook


def test_widget_round_trip_over_comms(kernel, kc):
    pytest.importorskip("ipywidgets", reason="scripts/setup installs ipywidgets")
    reply, msgs = execute(kc, "import ipywidgets as w\nslider = w.IntSlider(value=3)\nseen = []\n"
                              "slider.observe(lambda ch: seen.append(ch['new']), 'value')\nslider")
    assert reply["content"]["status"] == "ok"
    opens = [m for m in of_type(msgs, "comm_open") if m["content"]["data"]["state"].get("_model_name") == "IntSliderModel"]
    assert len(opens) == 1, [m["content"]["data"]["state"].get("_model_name") for m in of_type(msgs, "comm_open")]
    assert opens[0]["metadata"].get("version", "").startswith("2."), opens[0]["metadata"]  # the frontend checks it
    view = [m for m in of_type(msgs, "execute_result")][0]["content"]["data"]
    comm_id = opens[0]["content"]["comm_id"]
    assert view["application/vnd.jupyter.widget-view+json"]["model_id"] == comm_id
    # the frontend moves the slider: a comm_msg on the shell channel reaches the observer
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {
        "method": "update", "state": {"value": 7}, "buffer_paths": []}}))
    assert eval_text(kc, "seen, slider.value") == "([7], 7)"
    # comm_info lists it; a comm to an unknown target is closed at once
    info, _ = request(kc, "comm_info_request", {"target_name": "jupyter.widget"})
    assert comm_id in info["content"]["comms"]
    drain(kc)
    msg = kc.session.msg("comm_open", {"comm_id": "c0ffee", "target_name": "no.such.target", "data": {}})
    kc.shell_channel.send(msg)
    closed = iopub_for(kc, msg["header"]["msg_id"])
    assert [m["content"]["comm_id"] for m in of_type(closed, "comm_close")] == ["c0ffee"]
    kernel.assert_alive("widgets")


@pytest.mark.parametrize("module, code, expected", [
    ("tqdm", "from tqdm.auto import tqdm; tqdm.__mro__[1].__module__", "'tqdm.notebook'"),
    ("pandas", "from pandas.io.formats import console; console.in_ipython_frontend()", "True"),
    ("plotly", "import plotly.io as pio; 'notebook' in pio.renderers.default", "True"),
    ("matplotlib", "import matplotlib.pyplot as plt; plt.get_backend()", "'module://offload_kernel.mpl_inline'"),
])
def test_libraries_find_a_notebook(fresh_kernel, module, code, expected):
    pytest.importorskip(module, reason=f"{module} is not installed (scripts/setup installs it)")
    if module == "tqdm":
        pytest.importorskip("ipywidgets", reason="tqdm's notebook bars need ipywidgets")
    assert value_of(fresh_kernel.kc, code) == expected


# ---------------------------------------------------------------- without IPython


@pytest.fixture
def kernel_without_ipython(tmp_path):
    """A kernel whose Python cannot import IPython: a package of that name first on the path that fails to import."""
    fake = tmp_path / "hide" / "IPython"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'IPython'\", name='IPython')\n")
    k = start_kernel(tmp_path / "kernel.stderr", extra_env={"PYTHONPATH": str(fake.parent)})
    yield k
    k.shutdown()


def test_without_ipython_python_and_our_magics_work(kernel_without_ipython):
    kc = kernel_without_ipython.kc
    assert eval_text(kc, "6 * 7") == "42"
    assert "Wall time" in stream_text(cell_ok(kc, "%time x = 1"))
    assert "%lsplatform" in stream_text(cell_ok(kc, "%lsmagic"))
    for code in ("!ls", "files = !ls", "%run script.py", "%%writefile x.py\npass"):
        reply, msgs = execute(kc, code)
        assert reply["content"]["status"] == "error", code
        assert reply["content"]["ename"] == "UsageError", code
        text = stream_text(msgs, "stderr")
        assert "pip install ipython" in text, (code, text)
    kernel_without_ipython.assert_alive("IPython syntax without IPython")
