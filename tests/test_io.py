"""Output capture (Python and C level), streaming, ordering, and stdin."""

from __future__ import annotations

import uuid

import pytest

from kernel_testlib import (
    describe,
    eval_text,
    execute,
    iopub_for,
    merged,
    of_type,
    result_text,
    stream_text,
    wait_for_stream,
    wait_reply,
    wait_stdin_request,
)


# ---------------------------------------------------------------- stdout / stderr


def test_print_stdout_and_stderr(kc):
    reply, msgs = execute(kc, "import sys\nprint('to out')\nprint('to err', file=sys.stderr)")
    assert reply["content"]["status"] == "ok"
    assert stream_text(msgs, "stdout") == "to out\n"
    assert stream_text(msgs, "stderr") == "to err\n"


def test_stdout_stderr_order_preserved(kc):
    code = (
        "import sys\n"
        "for i in range(5):\n"
        "    print(f'out{i}')\n"
        "    print(f'err{i}', file=sys.stderr)\n"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok"
    seq = []
    for kind, text in merged(msgs):
        assert kind in ("stdout", "stderr"), kind
        seq += [(kind, line) for line in text.splitlines()]
    expected = []
    for i in range(5):
        expected += [("stdout", f"out{i}"), ("stderr", f"err{i}")]
    assert seq == expected


@pytest.mark.parametrize("fd", [1, 2])
def test_fd_level_and_python_level_alternating(kc, fd):
    """print() and C-level writes to fd 1 or 2, alternating: the notebook shows
    them in the order the cell made them (os.write stands for any C library)."""
    code = f"import os\nfor i in range(50):\n    print(f'py{{i}}')\n    os.write({fd}, f'fd{{i}}\\n'.encode())\n"
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    fd_stream = "stdout" if fd == 1 else "stderr"
    lines = [(kind, line) for kind, text in merged(msgs) for line in text.splitlines()]
    expected = [x for i in range(50) for x in (("stdout", f"py{i}"), (fd_stream, f"fd{i}"))]
    assert sorted(lines) == sorted(expected), "lines lost or duplicated"
    first_bad = next((n for n, (a, b) in enumerate(zip(lines, expected)) if a != b), None)
    assert lines == expected, f"order differs from line {first_bad}: got {lines[first_bad:first_bad + 6]}"


def test_output_flushed_before_display_and_result(kc):
    code = "print('before')\ndisplay('shown')\nprint('after', end='')\n'result'"
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok"
    kinds = merged(msgs)
    assert kinds == [
        ("stdout", "before\n"),
        ("display_data", {"text/plain": "'shown'"}),
        ("stdout", "after"),
        ("execute_result", {"text/plain": "'result'"}),
    ], kinds


def test_output_flushed_before_error(kc):
    reply, msgs = execute(kc, "print('last words', end='')\nraise ValueError('x')")
    kinds = merged(msgs)
    assert kinds == [("stdout", "last words"), ("error", "ValueError")], kinds


def test_many_lines_complete_and_in_order(kc):
    reply, msgs = execute(kc, "for i in range(20000):\n    print(i)\n", timeout=120)
    assert reply["content"]["status"] == "ok"
    text = stream_text(msgs, "stdout")
    assert text == "".join(f"{i}\n" for i in range(20000))
    assert not stream_text(msgs, "stderr")
    # batched: far fewer messages than lines
    assert len(of_type(msgs, "stream")) < 20000


def test_large_single_write(kc):
    reply, msgs = execute(kc, "import sys\nsys.stdout.write('x' * 1_000_000 + 'END\\n')\nNone", timeout=120)
    assert reply["content"]["status"] == "ok"
    text = stream_text(msgs, "stdout")
    assert len(text) == 1_000_004 and text.endswith("END\n") and set(text[:-4]) == {"x"}


def test_partial_lines_and_unicode(kc):
    code = "print('a', end='')\nprint('b', end='')\nprint('c')\nprint('h\u00e9llo \u2713 \u65e5\u672c \U0001f600')"
    reply, msgs = execute(kc, code)
    assert stream_text(msgs) == "abc\nh\u00e9llo \u2713 \u65e5\u672c \U0001f600\n"


def test_multibyte_utf8_split_across_fd_writes(kc):
    code = (
        "import os\n"
        "b = '\u00e9\u20ac\U0001f600'.encode()\n"
        "for i in range(len(b)):\n"
        "    os.write(1, b[i:i + 1])\n"
        "os.write(1, b'\\n')\n"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok"
    assert stream_text(msgs) == "\u00e9\u20ac\U0001f600\n"


def test_invalid_utf8_on_fd_is_replaced_not_fatal(kc):
    reply, msgs = execute(kc, "import os\nos.write(1, b'bad \\xff\\xfe bytes\\n')\nNone")
    assert reply["content"]["status"] == "ok"
    text = stream_text(msgs)
    assert text.startswith("bad ") and text.endswith(" bytes\n"), repr(text)
    assert "\ufffd" in text
    reply, msgs = execute(kc, "'still alive'")
    assert result_text(msgs) == "'still alive'"


def test_c_level_printf_captured(kc):
    code = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.printf(b'hi from printf %d\\n', 42)\n"
        "libc.printf(b'no newline from printf')\n"  # stays in libc's buffer until the cell ends
        "None"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    text = stream_text(msgs, "stdout")
    assert "hi from printf 42\n" in text, describe(reply, msgs)
    assert "no newline from printf" in text, describe(reply, msgs)
    # nothing from this cell leaks into the next one
    reply, msgs = execute(kc, "'next cell'")
    assert "printf" not in stream_text(msgs, "stdout")


def test_c_level_stderr_captured(kc):
    code = "import ctypes\nctypes.CDLL(None).dprintf(2, b'c-level stderr %s\\n', b'ok')\nNone"
    reply, msgs = execute(kc, code)
    assert "c-level stderr ok\n" in stream_text(msgs, "stderr"), describe(reply, msgs)


def test_os_write_fd_captured(kc):
    reply, msgs = execute(kc, "import os\nos.write(1, b'fd one\\n')\nos.write(2, b'fd two\\n')\nNone")
    assert stream_text(msgs, "stdout") == "fd one\n"
    assert stream_text(msgs, "stderr") == "fd two\n"


def test_subprocess_output_captured(kc):
    reply, msgs = execute(kc, "import os\nos.system('echo from-child; echo child-err 1>&2')\nNone")
    assert reply["content"]["status"] == "ok"
    assert "from-child\n" in stream_text(msgs, "stdout"), describe(reply, msgs)
    assert "child-err\n" in stream_text(msgs, "stderr"), describe(reply, msgs)


def test_output_from_thread_goes_somewhere_sane(kc):
    """A background thread's print during the cell appears in that cell's output."""
    code = (
        "import threading\n"
        "t = threading.Thread(target=lambda: print('from thread'))\n"
        "t.start(); t.join()\n"
    )
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok"
    assert "from thread\n" in stream_text(msgs)


def test_stream_while_cell_runs(kernel, tmp_path):
    """Output reaches the frontend while the cell is still running (no flush by the user)."""
    kc = kernel.kc
    flag = tmp_path / "release"
    code = (
        "import os, time\n"
        "print('early output')\n"
        f"while not os.path.exists({str(flag)!r}):\n"
        "    time.sleep(0.02)\n"
        "print('late output')\n"
    )
    msg_id = kc.execute(code, allow_stdin=False)
    try:
        wait_for_stream(kc, msg_id, "early output")  # arrives before we let the cell finish
    finally:
        flag.touch()
    reply = wait_reply(kc, msg_id)
    assert reply["content"]["status"] == "ok"
    msgs = iopub_for(kc, msg_id)
    assert stream_text(msgs) == "early output\nlate output\n"


def test_sys_stdout_attributes(kc):
    reply, msgs = execute(
        kc,
        "import sys\n(sys.stdout.writable(), sys.stdout.isatty(), sys.stdout.encoding.lower().replace('-', ''))",
    )
    assert result_text(msgs) == "(True, False, 'utf8')"
    reply, msgs = execute(kc, "import sys\nprint(sys.stdout.fileno() == 1, sys.stderr.fileno() == 2)")
    # fileno() may legitimately raise io.UnsupportedOperation; if it works it must be 1/2
    if reply["content"]["status"] == "ok":
        assert stream_text(msgs) == "True True\n"


# ---------------------------------------------------------------- stdin


def test_input(kc):
    tag = uuid.uuid4().hex[:6]
    msg_id = kc.execute(f"offload_in_{tag} = input('Your name: ')\nprint('hello', offload_in_{tag})", allow_stdin=True)
    req = wait_stdin_request(kc)
    assert req["msg_type"] == "input_request"
    assert req["content"]["prompt"] == "Your name: "
    assert req["content"]["password"] is False
    assert req["parent_header"]["msg_id"] == msg_id
    kc.input("Ada \u00e9")
    reply = wait_reply(kc, msg_id)
    assert reply["content"]["status"] == "ok"
    msgs = iopub_for(kc, msg_id)
    assert "hello Ada \u00e9\n" in stream_text(msgs)
    assert eval_text(kc, f"offload_in_{tag}") == "'Ada \u00e9'"


def test_input_flushes_pending_output_first(kc):
    msg_id = kc.execute("print('prompt follows', end='')\nx = input()\n", allow_stdin=True)
    wait_for_stream(kc, msg_id, "prompt follows")
    wait_stdin_request(kc)
    kc.input("")
    assert wait_reply(kc, msg_id)["content"]["status"] == "ok"
    iopub_for(kc, msg_id)


def test_input_twice_in_one_cell(kc):
    msg_id = kc.execute("a = input('a? ')\nb = input('b? ')\n(a, b)", allow_stdin=True)
    r1 = wait_stdin_request(kc)
    assert r1["content"]["prompt"] == "a? "
    kc.input("one")
    r2 = wait_stdin_request(kc)
    assert r2["content"]["prompt"] == "b? "
    kc.input("two")
    assert wait_reply(kc, msg_id)["content"]["status"] == "ok"
    assert result_text(iopub_for(kc, msg_id)) == "('one', 'two')"


def test_getpass(kc):
    msg_id = kc.execute("import getpass\noffload_pw = getpass.getpass('Secret: ')\nlen(offload_pw)", allow_stdin=True)
    req = wait_stdin_request(kc)
    assert req["msg_type"] == "input_request"
    assert req["content"]["prompt"] == "Secret: "
    assert req["content"]["password"] is True
    kc.input("hunter2")
    reply = wait_reply(kc, msg_id)
    assert reply["content"]["status"] == "ok"
    msgs = iopub_for(kc, msg_id)
    assert result_text(msgs) == "7"
    assert "hunter2" not in str(msgs)  # never echoed


def test_getpass_imported_before_use(kc):
    """`from getpass import getpass` also goes through the frontend."""
    msg_id = kc.execute("from getpass import getpass as gp\ngp()", allow_stdin=True)
    req = wait_stdin_request(kc)
    assert req["content"]["password"] is True
    kc.input("pw")
    assert wait_reply(kc, msg_id)["content"]["status"] == "ok"
    assert result_text(iopub_for(kc, msg_id)) == "'pw'"


@pytest.mark.parametrize("code", ["input('x? ')", "import getpass\ngetpass.getpass()"])
def test_input_without_stdin_raises(kc, code):
    reply, msgs = execute(kc, code, allow_stdin=False)
    c = reply["content"]
    assert c["status"] == "error"
    assert c["ename"] == "StdinNotImplementedError", c
    errs = of_type(msgs, "error")
    assert len(errs) == 1 and errs[0]["content"]["ename"] == "StdinNotImplementedError"
    # and nothing was asked on stdin
    import queue

    with pytest.raises(queue.Empty):
        kc.get_stdin_msg(timeout=0.5)


def test_stdin_not_implemented_is_catchable(kc):
    code = "try:\n    input()\nexcept Exception as e:\n    r = type(e).__name__\nr"
    reply, msgs = execute(kc, code, allow_stdin=False)
    assert reply["content"]["status"] == "ok"
    assert result_text(msgs) == "'StdinNotImplementedError'"


# ---------------------------------------------------------------- awkward text


def test_nul_characters_survive(kc):
    reply, msgs = execute(kc, "print('a\\x00b')\ndisplay({'text/plain': 'x\\x00y'}, raw=True)\n'p\\x00q'")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    assert stream_text(msgs) == "a\x00b\n"
    assert of_type(msgs, "display_data")[0]["content"]["data"]["text/plain"] == "x\x00y"
    assert result_text(msgs) == "'p\\x00q'"


def test_lone_surrogates_do_not_crash(fresh_kernel):
    """Strings that cannot be encoded as UTF-8: an error or a replacement, never a crash."""
    kc = fresh_kernel.kc
    for code in (
        "print('\\ud800')",
        "display({'text/plain': 'bad \\udcff'}, raw=True)",
        "class S:\n    def __repr__(self): return '\\ud800'\nS()",
        "import sys\nsys.stderr.write('\\udfff\\n')",
    ):
        reply, msgs = execute(kc, code)
        assert reply["content"]["status"] in ("ok", "error"), describe(reply, msgs)
        reply, msgs = execute(kc, "'alive'")
        assert result_text(msgs) == "'alive'", f"after {code!r}: {describe(reply, msgs)}"
