"""execute_request: results, counts, silent, user_expressions, stop_on_error,
errors and tracebacks, the user namespace, display, matplotlib, magics."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import time
import uuid

import pytest
from jupyter_kernel_test.msgspec_v5 import validate_message

from kernel_testlib import (
    BUILDDIR,
    TIMEOUT,
    describe,
    eval_text,
    execute,
    iopub_for,
    merged,
    of_type,
    outputs,
    result_text,
    stream_text,
    strip_ansi,
    wait_reply,
    wait_stdin_request,
)


# ---------------------------------------------------------------- results and counts


def test_execute_result_and_input(kc):
    reply, msgs = execute(kc, "40 + 2")
    validate_message(reply, "execute_reply", reply["parent_header"]["msg_id"])
    assert reply["content"]["status"] == "ok"
    n = reply["content"]["execution_count"]
    inputs = of_type(msgs, "execute_input")
    assert len(inputs) == 1
    assert inputs[0]["content"] == {"code": "40 + 2", "execution_count": n}
    results = of_type(msgs, "execute_result")
    assert len(results) == 1
    assert results[0]["content"]["execution_count"] == n
    assert results[0]["content"]["data"] == {"text/plain": "42"}
    assert isinstance(results[0]["content"]["metadata"], dict)
    for m in msgs:
        validate_message(m)
    # order: busy, execute_input, ..., idle
    kinds = [m["msg_type"] for m in msgs]
    assert kinds[0] == "status" and kinds[1] == "execute_input" and kinds[-1] == "status", kinds


def test_no_result_for_statement_or_none(kc):
    for code in ("x_offload_stmt = 5", "None", "def offload_f(): pass"):
        reply, msgs = execute(kc, code)
        assert reply["content"]["status"] == "ok"
        assert not of_type(msgs, "execute_result"), (code, describe(reply, msgs))
    reply, msgs = execute(kc, "print")
    # the kernel's repr, or IPython's pretty printer's once its shell exists (as under ipykernel)
    assert result_text(msgs) in ("<built-in function print>",
                                 "<function print(*args, sep=' ', end='\\n', file=None, flush=False)>")


def test_trailing_semicolon_suppresses_result(kc):
    """As in IPython: `expr;` shows nothing (plt.plot(...); in notebooks)."""
    reply, msgs = execute(kc, "offload_semi = 7\noffload_semi * 2;")
    assert reply["content"]["status"] == "ok"
    assert not of_type(msgs, "execute_result"), describe(reply, msgs)


def test_only_trailing_expression_is_displayed(kc):
    reply, msgs = execute(kc, "1000\n2000\n3000")
    assert result_text(msgs) == "3000"
    reply, msgs = execute(kc, "if True:\n    4000\n")
    assert not of_type(msgs, "execute_result")


def test_rich_mimetypes(kc):
    code = (
        "class Rich:\n"
        "    def _repr_html_(self): return '<i>rich</i>'\n"
        "    def _repr_markdown_(self): return '**rich**'\n"
        "    def _repr_latex_(self): return '$r$'\n"
        "    def _repr_json_(self): return {'r': 1}\n"
        "    def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\nfake'\n"
        "    def __repr__(self): return 'Rich()'\n"
        "Rich()"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    data = of_type(msgs, "execute_result")[0]["content"]["data"]
    assert data["text/plain"] == "Rich()"
    assert data["text/html"] == "<i>rich</i>"
    assert data["text/markdown"] == "**rich**"
    assert data["text/latex"] == "$r$"
    assert data["application/json"] == {"r": 1}
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")


def test_repr_mimebundle(kc):
    code = (
        "class Bundle:\n"
        "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
        "        return {'text/plain': 'bundle-plain', 'text/html': '<p>bundle</p>'}\n"
        "Bundle()"
    )
    reply, msgs = execute(kc, code)
    data = of_type(msgs, "execute_result")[0]["content"]["data"]
    assert data["text/plain"] == "bundle-plain"
    assert data["text/html"] == "<p>bundle</p>"


def test_failing_repr_html_falls_back(kc):
    code = (
        "class BadHtml:\n"
        "    def _repr_html_(self): raise RuntimeError('no html')\n"
        "    def __repr__(self): return 'BadHtml()'\n"
        "BadHtml()"
    )
    reply, msgs = execute(kc, code)
    # The cell itself succeeded; the text/plain repr is still shown.
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    data = of_type(msgs, "execute_result")[0]["content"]["data"]
    assert data["text/plain"] == "BadHtml()"
    assert "text/html" not in data


def test_execution_count_advances_by_one(kc):
    counts = [execute(kc, f"offload_cnt_{i} = {i}")[0]["content"]["execution_count"] for i in range(3)]
    assert counts[1] == counts[0] + 1 and counts[2] == counts[1] + 1
    # an error still uses up a number
    reply, msgs = execute(kc, "raise ValueError('counted')")
    assert reply["content"]["execution_count"] == counts[2] + 1
    assert of_type(msgs, "error")[0]["content"].get("execution_count", counts[2] + 1) == counts[2] + 1
    reply, _ = execute(kc, "0")
    assert reply["content"]["execution_count"] == counts[2] + 2


def test_silent(kc):
    before = execute(kc, "offload_silent_marker = 0")[0]["content"]["execution_count"]
    code = (
        "offload_silent_marker = 'ran'\n"
        "print('should not be seen')\n"
        "import sys; sys.stderr.write('nor this\\n')\n"
        "display('no display')\n"
        "'no result'"
    )
    reply, msgs = execute(kc, code, silent=True)
    assert reply["content"]["status"] == "ok"
    assert [m["msg_type"] for m in msgs] == ["status", "status"], describe(reply, msgs)
    assert [m["content"]["execution_state"] for m in msgs] == ["busy", "idle"]
    # an error in a silent cell: error reply but no IOPub error
    reply, msgs = execute(kc, "raise KeyError('silent failure')", silent=True)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyError"
    assert [m["msg_type"] for m in msgs] == ["status", "status"], describe(reply, msgs)
    # it ran, and did not advance the count
    assert eval_text(kc, "offload_silent_marker") == "'ran'"
    after = execute(kc, "offload_silent_probe = 1")[0]["content"]["execution_count"]
    assert after == before + 1


def test_store_history_false(kc):
    before = execute(kc, "pass")[0]["content"]["execution_count"]
    reply, msgs = execute(kc, "offload_nohist = 3\noffload_nohist", store_history=False)
    assert reply["content"]["status"] == "ok"
    assert result_text(msgs) == "3"  # still shown
    after = execute(kc, "pass")[0]["content"]["execution_count"]
    assert after == before + 1


def test_user_expressions_ok(kc):
    execute(kc, "offload_ue_var = 21")
    ue = {"double": "offload_ue_var * 2", "text": "'x' * 3", "html": "__import__('IPython').display.HTML('<b>h</b>')"}
    reply, _ = execute(kc, "offload_ue_var += 0", user_expressions=ue)
    assert reply["content"]["status"] == "ok"
    res = reply["content"]["user_expressions"]
    assert set(res) == set(ue)
    assert res["double"]["status"] == "ok"
    assert res["double"]["data"] == {"text/plain": "42"}
    assert isinstance(res["double"]["metadata"], dict)
    assert res["text"]["data"]["text/plain"] == "'xxx'"
    assert res["html"]["data"]["text/html"] == "<b>h</b>"


def test_user_expressions_error(kc):
    ue = {"bad": "1/0", "undefined": "offload_never_defined_name", "good": "2 ** 10"}
    reply, _ = execute(kc, "pass", user_expressions=ue)
    assert reply["content"]["status"] == "ok"  # the cell itself is fine
    res = reply["content"]["user_expressions"]
    assert res["bad"]["status"] == "error"
    assert res["bad"]["ename"] == "ZeroDivisionError"
    assert "division" in res["bad"]["evalue"]
    assert isinstance(res["bad"]["traceback"], list)
    assert res["undefined"]["status"] == "error"
    assert res["undefined"]["ename"] == "NameError"
    assert res["good"]["status"] == "ok" and res["good"]["data"]["text/plain"] == "1024"


def test_user_expressions_after_failing_cell(kc):
    """user_expressions are evaluated even when the cell raises."""
    reply, _ = execute(kc, "raise RuntimeError('x')", user_expressions={"v": "6 * 7"})
    assert reply["content"]["status"] == "error"
    ue = reply["content"].get("user_expressions", {})
    if ue:  # the protocol leaves this optional on error; if present it must be right
        assert ue["v"]["data"]["text/plain"] == "42"


# ---------------------------------------------------------------- stop_on_error


def _queue_behind_input(kc, first_code, later, first_stop_on_error=True):
    """Run first_code (which calls input() first), queue the `later` requests
    [(code, stop_on_error)] while it waits, then answer input.
    Returns (replies, msg_ids)."""
    first = kc.execute(first_code, allow_stdin=True, stop_on_error=first_stop_on_error)
    wait_stdin_request(kc)
    later_ids = [kc.execute(code, allow_stdin=False, stop_on_error=soe) for code, soe in later]
    time.sleep(0.5)  # let them reach the kernel's shell socket before the error happens
    kc.input("go")
    ids = [first] + later_ids
    return [wait_reply(kc, i) for i in ids], ids


def _idle_for_each(kc, ids):
    """Every request, aborted or not, gets its busy/idle pair."""
    for i in ids:
        states = [m["content"]["execution_state"] for m in of_type(iopub_for(kc, i), "status")]
        assert states == ["busy", "idle"], (i, states)


def test_stop_on_error_aborts_queue(kc):
    tag = uuid.uuid4().hex[:6]
    (first, second, third), ids = _queue_behind_input(
        kc,
        "input('wait: ')\nraise ValueError('first fails')",
        [(f"offload_aborted_{tag} = 1", True), (f"offload_aborted2_{tag} = 1", True)],
    )
    assert first["content"]["status"] == "error"
    assert first["content"]["ename"] == "ValueError"
    assert second["content"]["status"] == "aborted", second["content"]
    assert third["content"]["status"] == "aborted", third["content"]
    _idle_for_each(kc, ids)
    assert eval_text(kc, f"'offload_aborted_{tag}' in globals() or 'offload_aborted2_{tag}' in globals()") == "False"
    # requests sent after the abort run normally
    reply, msgs = execute(kc, "'after abort'")
    assert reply["content"]["status"] == "ok"
    assert result_text(msgs) == "'after abort'"


def test_stop_on_error_false_does_not_abort(kc):
    tag = uuid.uuid4().hex[:6]
    (first, second), ids = _queue_behind_input(
        kc,
        "input('wait: ')\nraise ValueError('first fails')",
        [(f"offload_notaborted_{tag} = 1", True)],
        first_stop_on_error=False,
    )
    assert first["content"]["status"] == "error"
    assert second["content"]["status"] == "ok", second["content"]
    _idle_for_each(kc, ids)
    assert eval_text(kc, f"offload_notaborted_{tag}") == "1"


def test_stop_on_error_false_requests_are_not_aborted(kc):
    tag = uuid.uuid4().hex[:6]
    (first, lenient, strict), ids = _queue_behind_input(
        kc,
        "input('wait: ')\nraise ValueError('first fails')",
        [(f"offload_lenient_{tag} = 1", False), (f"offload_strict_{tag} = 1", True)],
    )
    assert first["content"]["status"] == "error"
    assert lenient["content"]["status"] == "ok", lenient["content"]
    assert strict["content"]["status"] == "aborted", strict["content"]
    _idle_for_each(kc, ids)
    assert eval_text(kc, f"'offload_lenient_{tag}' in globals()") == "True"
    assert eval_text(kc, f"'offload_strict_{tag}' in globals()") == "False"


def test_request_sent_right_after_an_error_reply_is_not_aborted(kc):
    # Only requests queued before the failing cell's reply are aborted: a client
    # that answers the error reply at once must have its next cell run. The
    # next request goes out the moment the reply arrives, many times over, to
    # hit the window in which the kernel is still finishing the failed cell.
    for i in range(30):
        failing = kc.execute(f"raise ValueError('fails {i}')")
        reply = kc.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == failing
        assert reply["content"]["status"] == "error"
        follow = kc.execute(f"{i} + 1")
        reply = kc.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == follow
        assert reply["content"]["status"] == "ok", (i, reply["content"])
    _idle_for_each(kc, [follow])


def test_successful_cell_aborts_nothing(kc):
    (first, second), ids = _queue_behind_input(kc, "input('wait: ')\n'fine'", [("'second fine'", True)])
    assert first["content"]["status"] == "ok"
    assert second["content"]["status"] == "ok"
    _idle_for_each(kc, ids)


# ---------------------------------------------------------------- errors


def test_error_message_and_reply(kc):
    code = "def offload_fail_inner():\n    raise RuntimeError('deep failure 123')\n\noffload_fail_inner()\n"
    reply, msgs = execute(kc, code)
    c = reply["content"]
    assert c["status"] == "error"
    assert c["ename"] == "RuntimeError"
    assert c["evalue"] == "deep failure 123"
    assert isinstance(c["traceback"], list) and all(isinstance(t, str) for t in c["traceback"])
    errors = of_type(msgs, "error")
    assert len(errors) == 1
    e = errors[0]["content"]
    assert (e["ename"], e["evalue"]) == ("RuntimeError", "deep failure 123")
    assert e["traceback"] == c["traceback"]
    assert not of_type(msgs, "execute_result")


def _traceback_text(tb):
    return strip_ansi("\n".join(tb))


KERNEL_FRAME_HINTS = ("offload_kernel", "krn_", "<frozen offload", "ipykernel", "_offload_kernel", "share/offload")


def test_traceback_shows_cell_lines_not_kernel_frames(kc):
    code = "def offload_tb_inner():\n    raise RuntimeError('deep failure 456')\n\noffload_tb_inner()\n"
    reply, _ = execute(kc, code)
    text = _traceback_text(reply["content"]["traceback"])
    assert "raise RuntimeError('deep failure 456')" in text, text
    assert "offload_tb_inner()" in text, text
    assert "RuntimeError" in text and "deep failure 456" in text
    for hint in KERNEL_FRAME_HINTS:
        assert hint not in text, f"kernel frame ({hint}) in traceback:\n{text}"
    # line numbers of the cell are shown: the raise is on line 2, the call on line 4
    assert re.search(r"\b2\b", text) and re.search(r"\b4\b", text), text


def test_traceback_of_library_error(kc):
    reply, _ = execute(kc, "import json\njson.loads('{oops')")
    c = reply["content"]
    assert c["ename"] == "JSONDecodeError"
    text = _traceback_text(c["traceback"])
    assert "json.loads('{oops')" in text
    assert "json" in text and "decoder" in text  # the library's own frames are kept
    for hint in KERNEL_FRAME_HINTS:
        assert hint not in text, f"kernel frame ({hint}) in traceback:\n{text}"


def test_syntax_error(kc):
    reply, msgs = execute(kc, "x = (1,\ny = = 2")
    c = reply["content"]
    assert c["status"] == "error"
    assert c["ename"] == "SyntaxError"
    text = _traceback_text(c["traceback"])
    assert "SyntaxError" in text
    for hint in KERNEL_FRAME_HINTS:
        assert hint not in text, f"kernel frame ({hint}) in traceback:\n{text}"
    assert len(of_type(msgs, "error")) == 1


def test_indentation_error(kc):
    reply, _ = execute(kc, "def f():\nreturn 1")
    assert reply["content"]["ename"] == "IndentationError"


def test_system_exit_does_not_kill_kernel(kc):
    reply, msgs = execute(kc, "import sys\nsys.exit(3)")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "SystemExit"
    reply, msgs = execute(kc, "'alive after SystemExit'")
    assert result_text(msgs) == "'alive after SystemExit'"
    reply, msgs = execute(kc, "exit()")
    reply, msgs = execute(kc, "'alive after exit()'")
    assert result_text(msgs) == "'alive after exit()'"


def test_exception_with_bad_str(kc):
    code = "class Weird(Exception):\n    def __str__(self): raise RuntimeError('str fails')\nraise Weird()"
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "Weird"
    reply, msgs = execute(kc, "'ok'")
    assert result_text(msgs) == "'ok'"


def test_bad_repr_is_reported_not_a_crash(kc):
    code = "class BadRepr:\n    def __repr__(self): raise ValueError('repr fails')\nBadRepr()"
    reply, msgs = execute(kc, code)
    # An error reply, or (as IPython's formatter does) the traceback shown on stderr or as an error output.
    shown = (reply["content"]["status"] == "error" or "repr fails" in stream_text(msgs, "stderr")
             or any(m["content"]["evalue"] == "repr fails" for m in of_type(msgs, "error")))
    assert shown, describe(reply, msgs)
    assert not any(not m["content"]["data"] for m in of_type(msgs, "execute_result")), describe(reply, msgs)
    reply, msgs = execute(kc, "'ok'")
    assert result_text(msgs) == "'ok'"


# ---------------------------------------------------------------- namespace


def test_underscore_in_out(kc):
    r1, _ = execute(kc, "10 + 1")
    r2, _ = execute(kc, "20 + 2")
    r3, _ = execute(kc, "30 + 3")
    reply, msgs = execute(kc, "(_, __, ___)")
    assert result_text(msgs) == "(33, 22, 11)"
    n1, n3 = r1["content"]["execution_count"], r3["content"]["execution_count"]
    assert eval_text(kc, f"Out[{n3}]") == "33"
    assert eval_text(kc, f"Out[{n1}]") == "11"
    assert eval_text(kc, f"In[{n3}]") == "'30 + 3'"
    assert eval_text(kc, "type(In).__name__") == "'list'"
    assert eval_text(kc, "type(Out).__name__") == "'dict'"
    # a cell without a result leaves _ alone
    execute(kc, "40 + 4")
    execute(kc, "offload_not_a_result = 1")
    reply, msgs = execute(kc, "_")
    assert result_text(msgs) == "44"


def test_inspect_getsource_of_cell_function(kc):
    execute(kc, "def offload_src_fn(a):\n    '''doc'''\n    return a * 3\n")
    reply, msgs = execute(kc, "import inspect\nprint(inspect.getsource(offload_src_fn))")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    out = stream_text(msgs)
    assert "def offload_src_fn(a):" in out
    assert "return a * 3" in out


def test_main_module_and_name(kc):
    assert eval_text(kc, "__name__") == "'__main__'"
    reply, msgs = execute(kc, "import __main__\noffload_main_probe = 5\n__main__.offload_main_probe")
    assert result_text(msgs) == "5"


def test_pickle_of_cell_function(kc):
    code = "import pickle\ndef offload_pk(x): return x + 1\npickle.loads(pickle.dumps(offload_pk))(1)"
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    assert result_text(msgs) == "2"


def test_top_level_await(kc):
    reply, msgs = execute(kc, "import asyncio\nawait asyncio.sleep(0)\n'awaited'")
    # IPython supports top-level await; if this kernel does, it must give the result.
    if reply["content"]["status"] == "ok":
        assert result_text(msgs) == "'awaited'"
    else:
        pytest.xfail(f"top-level await not supported: {reply['content'].get('ename')}")


# ---------------------------------------------------------------- display


def test_builtin_display_and_update(kc):
    reply, msgs = execute(
        kc,
        "h1 = display('first', display_id='offload-d1')\n"
        "h2 = display('second', display_id='offload-d1', update=True)\n",
    )
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    out = outputs(msgs)
    assert [m["msg_type"] for m in out] == ["display_data", "update_display_data"], describe(reply, msgs)
    assert out[0]["content"]["data"]["text/plain"] == "'first'"
    assert out[0]["content"]["transient"] == {"display_id": "offload-d1"}
    assert out[1]["content"]["data"]["text/plain"] == "'second'"
    assert out[1]["content"]["transient"] == {"display_id": "offload-d1"}
    for m in out:
        validate_message(m)


def test_update_display_from_a_later_cell(kc):
    execute(kc, "h = display('v1', display_id='offload-d2')")
    reply, msgs = execute(kc, "h = display('v2', display_id='offload-d2', update=True)")
    upd = of_type(msgs, "update_display_data")
    assert len(upd) == 1
    assert upd[0]["content"]["transient"]["display_id"] == "offload-d2"
    assert upd[0]["content"]["data"]["text/plain"] == "'v2'"


def test_ipython_display_handle_update(kc):
    code = (
        "from IPython.display import display, HTML\n"
        "h = display(HTML('<b>one</b>'), display_id=True)\n"
        "h.update(HTML('<b>two</b>'))\n"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    d = of_type(msgs, "display_data")
    u = of_type(msgs, "update_display_data")
    assert len(d) == 1 and len(u) == 1, describe(reply, msgs)
    did = d[0]["content"]["transient"]["display_id"]
    assert isinstance(did, str) and did
    assert u[0]["content"]["transient"]["display_id"] == did
    assert d[0]["content"]["data"]["text/html"] == "<b>one</b>"
    assert u[0]["content"]["data"]["text/html"] == "<b>two</b>"


def test_ipython_display_objects(kc):
    code = (
        "from IPython.display import display, HTML, Markdown, JSON\n"
        "display(HTML('<p>h</p>'))\n"
        "display(Markdown('# md'))\n"
        "display(1, 'two')\n"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    d = of_type(msgs, "display_data")
    assert len(d) == 4, describe(reply, msgs)
    assert d[0]["content"]["data"]["text/html"] == "<p>h</p>"
    assert "text/plain" in d[0]["content"]["data"]
    assert d[1]["content"]["data"]["text/markdown"] == "# md"
    assert d[2]["content"]["data"]["text/plain"] == "1"
    assert d[3]["content"]["data"]["text/plain"] == "'two'"


def test_display_raw_and_metadata(kc):
    code = (
        "from IPython.display import display\n"
        "display({'text/plain': 'raw plain', 'text/html': '<b>raw</b>'}, raw=True)\n"
        "display({'text/plain': 'with meta'}, raw=True, metadata={'k': 'v'})\n"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    d = of_type(msgs, "display_data")
    assert d[0]["content"]["data"] == {"text/plain": "raw plain", "text/html": "<b>raw</b>"}
    assert d[1]["content"]["metadata"] == {"k": "v"}


def test_clear_output(kc):
    code = (
        "from IPython.display import clear_output\n"
        "print('before')\n"
        "clear_output(wait=True)\n"
        "print('after')\n"
        "clear_output()\n"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    kinds = merged(msgs)
    assert kinds == [("stdout", "before\n"), ("clear_output", True), ("stdout", "after\n"), ("clear_output", False)], kinds


# ---------------------------------------------------------------- matplotlib


def test_matplotlib_inline_png(kc):
    reply, msgs = execute(kc, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    pngs = [m for m in of_type(msgs, "display_data") if "image/png" in m["content"]["data"]]
    assert len(pngs) == 1, describe(reply, msgs)
    png = base64.b64decode(pngs[0]["content"]["data"]["image/png"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert "text/plain" in pngs[0]["content"]["data"]
    # the figure was shown and closed: a later cell does not show it again
    reply, msgs = execute(kc, "'no figure here'")
    assert not of_type(msgs, "display_data"), describe(reply, msgs)


def test_matplotlib_show_and_two_figures(kc):
    code = (
        "import matplotlib.pyplot as plt\n"
        "plt.figure(); plt.plot([3, 1])\n"
        "plt.figure(); plt.bar([1, 2], [2, 1])\n"
        "plt.show()\n"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    pngs = [m for m in of_type(msgs, "display_data") if "image/png" in m["content"]["data"]]
    assert len(pngs) == 2, describe(reply, msgs)


# ---------------------------------------------------------------- interpreter


def _configured_python() -> str | None:
    """The interpreter configure recorded (config.h), or None."""
    cfg = BUILDDIR / "config.h"
    if cfg.exists():
        m = re.search(r'#define OFFLOAD_PYTHON_EXECUTABLE "([^"]+)"', cfg.read_text())
        if m:
            return m.group(1)
    return None


def test_sys_executable_is_the_real_interpreter(kc):
    exe = eval_text(kc, "__import__('sys').executable").strip("'")
    assert os.path.isabs(exe), exe
    assert os.access(exe, os.X_OK), exe
    assert "offload-kernel" not in os.path.basename(exe), exe
    configured = _configured_python()
    if configured is None:
        configured = subprocess.run(
            ["python3", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, check=True
        ).stdout.strip()
    assert os.path.realpath(exe) == os.path.realpath(configured), (exe, configured)
    # and it really is a Python that runs
    out = subprocess.run([exe, "-c", "print(6 * 7)"], capture_output=True, text=True, timeout=TIMEOUT)
    assert out.stdout.strip() == "42"


def test_installed_packages_import(kc):
    reply, msgs = execute(kc, "import numpy as np\nint(np.arange(4).sum())")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    assert result_text(msgs) == "6"


def test_multiprocessing_child_uses_real_python(kc):
    """Subprocesses started with sys.executable run Python, not the kernel."""
    reply, msgs = execute(
        kc,
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'print(123 * 3)'], capture_output=True, text=True).stdout.strip()",
    )
    assert result_text(msgs) == "'369'"


# ---------------------------------------------------------------- magics


def test_lsmagic(kc):
    reply, msgs = execute(kc, "%lsmagic")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    text = stream_text(msgs) + (result_text(msgs) or "") + "".join(
        str(m["content"]["data"].get("text/plain", "")) for m in of_type(msgs, "display_data")
    )
    assert "lsmagic" in text, describe(reply, msgs)


def test_unknown_magic_is_a_usage_error(kc):
    reply, msgs = execute(kc, "%nosuch")
    c = reply["content"]
    assert c["status"] == "error"
    text = c["evalue"] + "\n" + _traceback_text(c["traceback"])
    assert c["ename"] == "UsageError" and "nosuch" in text
    # IPython's message (with its suggestions where its version has them), one line on stderr, as ipykernel
    assert "UsageError" in stream_text(msgs, "stderr") and not of_type(msgs, "error")
    reply, msgs = execute(kc, "%%nosuchcell\nx = 1")
    assert reply["content"]["status"] == "error"


def test_recursion_error(kc):
    reply, msgs = execute(kc, "def offload_rec(n):\n    return offload_rec(n + 1)\noffload_rec(0)")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "RecursionError"
    assert len(of_type(msgs, "error")) == 1
    reply, msgs = execute(kc, "'after recursion'")
    assert result_text(msgs) == "'after recursion'"


def test_unicode_identifiers_and_source(kc):
    reply, msgs = execute(kc, "\u03c0 = 3.14159\ns = '\u65e5\u672c\u8a9e'\n(round(\u03c0, 2), s)")
    assert result_text(msgs) == "(3.14, '\u65e5\u672c\u8a9e')"


def test_nul_in_code_is_an_error(kc):
    msg_id = kc.execute("x_nul = 1\x00", allow_stdin=False)
    reply = wait_reply(kc, msg_id)
    assert reply["content"]["status"] == "error", reply["content"]
    reply, msgs = execute(kc, "'alive'")
    assert result_text(msgs) == "'alive'"


def test_working_directory_and_local_imports(tmp_path):
    """As in any Python kernel: the kernel runs where the frontend started it
    (the notebook's folder), and modules next to the notebook import."""
    from kernel_testlib import start_kernel

    nb_dir = tmp_path / "notebook dir"
    nb_dir.mkdir()
    (nb_dir / "offload_local_helper.py").write_text("VALUE = 'local helper'\n")
    k = start_kernel(tmp_path / "kernel.stderr", cwd=str(nb_dir))
    try:
        assert eval_text(k.kc, "__import__('os').getcwd()") == repr(str(nb_dir))
        reply, msgs = execute(k.kc, "import offload_local_helper\noffload_local_helper.VALUE")
        assert reply["content"]["status"] == "ok", describe(reply, msgs)
        assert result_text(msgs) == "'local helper'"
    finally:
        k.shutdown()
