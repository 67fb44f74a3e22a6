"""Messaging protocol 5.4: kernel_info, status, complete, inspect, is_complete,
history, comms, identities, control channel, shutdown."""

from __future__ import annotations

import time
import uuid

import pytest
import zmq
from jupyter_kernel_test.msgspec_v5 import validate_message

from kernel_testlib import (
    TIMEOUT,
    execute,
    iopub_for,
    of_type,
    request,
    result_text,
    strip_ansi,
    wait_reply,
)


# ---------------------------------------------------------------- kernel_info


def test_kernel_info_reply(kc):
    reply, msgs = request(kc, "kernel_info_request", {})
    validate_message(reply, "kernel_info_reply", reply["parent_header"]["msg_id"])
    c = reply["content"]
    assert c["status"] == "ok"
    assert c["protocol_version"] == "5.4"
    assert c["implementation"] == "offload"
    assert isinstance(c.get("implementation_version"), str) and c["implementation_version"]
    li = c["language_info"]
    assert li["name"] == "python"
    assert li["mimetype"] == "text/x-python"
    assert li["file_extension"] == ".py"
    assert li["pygments_lexer"] == "ipython3"
    assert li["codemirror_mode"] == {"name": "ipython", "version": 3}
    assert li["nbconvert_exporter"] == "python"
    # version: the embedded interpreter's, x.y.z
    import re

    assert re.fullmatch(r"3\.\d+\.\d+\S*", li["version"]), li["version"]
    assert isinstance(c["banner"], str) and c["banner"].strip()
    assert isinstance(c["help_links"], list)
    for link in c["help_links"]:
        assert set(link) >= {"text", "url"}
    # busy/idle around kernel_info too
    states = [m["content"]["execution_state"] for m in of_type(msgs, "status")]
    assert states == ["busy", "idle"], states
    # headers of the kernel's messages
    h = reply["header"]
    assert h["version"] == "5.4"
    assert h["msg_type"] == "kernel_info_reply"
    assert h["session"] and h["msg_id"] and h["username"] is not None


def test_python_version_matches_kernel_info(kc):
    reply, _ = request(kc, "kernel_info_request", {})
    version = reply["content"]["language_info"]["version"]
    assert version.startswith(
        eval_platform_version(kc)
    ), f"language_info.version {version} is not the embedded Python's"


def eval_platform_version(kc) -> str:
    reply, msgs = execute(kc, "import platform; platform.python_version()")
    assert reply["content"]["status"] == "ok"
    return result_text(msgs).strip("'")


def test_kernel_info_on_control(kc):
    reply = None
    msg = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(msg)
    reply = wait_reply(kc, msg["header"]["msg_id"], channel="control")
    validate_message(reply, "kernel_info_reply", msg["header"]["msg_id"])
    assert reply["content"]["implementation"] == "offload"


# ---------------------------------------------------------------- status


@pytest.mark.parametrize(
    "msg_type,content",
    [
        ("kernel_info_request", {}),
        ("execute_request", {"code": "1", "silent": False, "store_history": False, "user_expressions": {}, "allow_stdin": False}),
        ("complete_request", {"code": "pri", "cursor_pos": 3}),
        ("inspect_request", {"code": "print", "cursor_pos": 5, "detail_level": 0}),
        ("is_complete_request", {"code": "x = 1"}),
        ("history_request", {"output": False, "raw": True, "hist_access_type": "tail", "n": 2}),
        ("comm_info_request", {}),
    ],
)
def test_busy_idle_around_every_request(kc, msg_type, content):
    reply, msgs = request(kc, msg_type, content)
    assert reply["msg_type"] == msg_type.replace("_request", "_reply")
    validate_message(reply, reply["msg_type"], reply["parent_header"]["msg_id"])
    status = of_type(msgs, "status")
    assert [m["content"]["execution_state"] for m in status] == ["busy", "idle"]
    assert msgs[0]["msg_type"] == "status" and msgs[0]["content"]["execution_state"] == "busy"
    assert msgs[-1]["msg_type"] == "status" and msgs[-1]["content"]["execution_state"] == "idle"
    for m in msgs:
        validate_message(m)


def test_starting_status_at_most_once(tmp_path):
    """'starting' is published at most once (at start), never again while the kernel runs."""
    from queue import Empty

    from jupyter_client.manager import KernelManager

    from kernel_testlib import KERNEL_NAME

    km = KernelManager(kernel_name=KERNEL_NAME)
    with open(tmp_path / "kernel.stderr", "wb") as log:
        km.start_kernel(stderr=log)
    kc = km.client()
    kc.start_channels()
    iopub = []
    try:
        deadline = time.monotonic() + 60
        while True:  # like wait_for_ready, but keeping IOPub
            assert time.monotonic() < deadline, "kernel never answered kernel_info"
            kc.kernel_info()
            try:
                kc.get_shell_msg(timeout=1)
                # Subscribing is asynchronous: only an IOPub message proves
                # that this client's subscription has reached the kernel.
                iopub.append(kc.get_iopub_msg(timeout=1))
                break
            except Empty:
                pass
        for _ in range(3):
            msg_id = kc.execute("pass")
            kc.get_shell_msg(timeout=TIMEOUT)
            while True:
                m = kc.get_iopub_msg(timeout=TIMEOUT)
                iopub.append(m)
                if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    break
        while True:
            try:
                iopub.append(kc.get_iopub_msg(timeout=0.2))
            except Empty:
                break
        states = [m["content"]["execution_state"] for m in iopub if m["msg_type"] == "status"]
        assert states.count("starting") <= 1, states
        if "starting" in states:
            assert states.index("starting") == 0, states
        assert "busy" in states and "idle" in states
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_iopub_welcome_on_new_subscription(kernel):
    """Each new IOPub subscriber gets an iopub_welcome for its subscription."""
    raw = kernel.raw()
    try:
        sub = raw.socket("iopub", zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        m = raw.recv(sub, TIMEOUT)
        assert m is not None, "no iopub_welcome within the timeout"
        assert m["msg_type"] == "iopub_welcome"
        assert m["content"] == {"subscription": ""}
    finally:
        raw.close()


# ---------------------------------------------------------------- complete


def _complete(kc, code, cursor_pos=None):
    if cursor_pos is None:
        cursor_pos = len(code)
    reply, _ = request(kc, "complete_request", {"code": code, "cursor_pos": cursor_pos})
    validate_message(reply, "complete_reply", reply["parent_header"]["msg_id"])
    assert reply["content"]["status"] == "ok"
    return reply["content"]


def test_complete_builtin(kc):
    c = _complete(kc, "pri")
    assert set(c["matches"]) == {"print"}
    assert (c["cursor_start"], c["cursor_end"]) == (0, 3)
    assert isinstance(c["metadata"], dict)


def test_complete_magic(kc):
    code = "%lsm"
    c = _complete(kc, code)
    assert any(code[: c["cursor_start"]] + m + code[c["cursor_end"] :] == "%lsmagic" for m in c["matches"])


def test_complete_attribute(kc):
    code = "import os\nos.pa"
    c = _complete(kc, code)
    target = "import os\nos.path"
    assert any(code[: c["cursor_start"]] + m + code[c["cursor_end"] :] == target for m in c["matches"]), c


def test_complete_user_variable(kc):
    execute(kc, "offload_completion_variable_xyz = 1")
    code = "offload_completion_var"
    c = _complete(kc, code)
    assert any(code[: c["cursor_start"]] + m == "offload_completion_variable_xyz" for m in c["matches"]), c


def test_complete_cursor_in_middle(kc):
    code = "pri(1)"
    c = _complete(kc, code, cursor_pos=3)
    assert "print" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (0, 3)


def test_complete_nothing(kc):
    c = _complete(kc, "qqqzzz_no_such_name_")
    assert c["matches"] == []


# ---------------------------------------------------------------- inspect


def _inspect(kc, code, detail_level=0, cursor_pos=None):
    if cursor_pos is None:
        cursor_pos = len(code)
    reply, _ = request(kc, "inspect_request", {"code": code, "cursor_pos": cursor_pos, "detail_level": detail_level})
    validate_message(reply, "inspect_reply", reply["parent_header"]["msg_id"])
    assert reply["content"]["status"] == "ok"
    return reply["content"]


def test_inspect_builtin(kc):
    c = _inspect(kc, "print")
    assert c["found"] is True
    text = strip_ansi(c["data"]["text/plain"])
    assert "print" in text
    assert "Prints the values" in text or "value, ..., sep" in text, text


def test_inspect_detail_levels(kc):
    execute(kc, "def offload_inspected(x):\n    '''Docstring of offload_inspected.'''\n    return x + 4242\n")
    c0 = _inspect(kc, "offload_inspected", 0)
    assert c0["found"] is True
    t0 = strip_ansi(c0["data"]["text/plain"])
    assert "Docstring of offload_inspected." in t0
    assert "return x + 4242" not in t0
    c1 = _inspect(kc, "offload_inspected", 1)
    assert c1["found"] is True
    t1 = strip_ansi(c1["data"]["text/plain"])
    assert "return x + 4242" in t1, t1


def test_inspect_cursor_inside_call(kc):
    code = "print(1, 2)"
    c = _inspect(kc, code, cursor_pos=3)
    assert c["found"] is True
    assert "print" in strip_ansi(c["data"]["text/plain"])


def test_inspect_not_found(kc):
    c = _inspect(kc, "offload_no_such_name_abc")
    assert c["found"] is False
    assert c["data"] == {}


def test_pager_payload(kc):
    reply, msgs = execute(kc, "print?")
    c = reply["content"]
    assert c["status"] == "ok"
    assert len(c["payload"]) == 1
    p = c["payload"][0]
    assert p["source"] == "page"
    assert p["start"] == 0
    assert "print" in strip_ansi(p["data"]["text/plain"])
    assert not of_type(msgs, "error")


def test_pager_double_question_shows_source(kc):
    execute(kc, "def offload_paged(y):\n    return y * 9191\n")
    reply, _ = execute(kc, "offload_paged??")
    c = reply["content"]
    assert c["status"] == "ok"
    assert len(c["payload"]) == 1
    assert c["payload"][0]["source"] == "page"
    assert "return y * 9191" in strip_ansi(c["payload"][0]["data"]["text/plain"])


# ---------------------------------------------------------------- is_complete


def _is_complete(kc, code):
    reply, _ = request(kc, "is_complete_request", {"code": code})
    validate_message(reply, "is_complete_reply", reply["parent_header"]["msg_id"])
    return reply["content"]


@pytest.mark.parametrize("code", ["x = 1", "print('a')", "def f():\n    return 1\n\n", "%lsmagic", ""])
def test_is_complete_complete(kc, code):
    assert _is_complete(kc, code)["status"] == "complete"


@pytest.mark.parametrize(
    "code,indent",
    [
        ("for i in range(3):", "    "),
        ("def f():\n    if True:", "        "),
        ("x = [1,", None),
        ("s = '''abc", None),
    ],
)
def test_is_complete_incomplete(kc, code, indent):
    c = _is_complete(kc, code)
    assert c["status"] == "incomplete"
    assert isinstance(c.get("indent"), str)
    if indent is not None:
        assert c["indent"] == indent


@pytest.mark.parametrize("code", ["import = 7q", "1 +* 2", "def f(:"])
def test_is_complete_invalid(kc, code):
    assert _is_complete(kc, code)["status"] == "invalid"


# ---------------------------------------------------------------- history


def _history(kc, **kw):
    kw.setdefault("output", False)
    kw.setdefault("raw", True)
    reply, _ = request(kc, "history_request", kw)
    validate_message(reply, "history_reply", reply["parent_header"]["msg_id"])
    assert reply["content"]["status"] == "ok"
    return reply["content"]["history"]


def test_history_tail_and_range(kc):
    tag = uuid.uuid4().hex[:8]
    codes = [f"offload_hist_a_{tag} = 1", f"offload_hist_b_{tag} = 2", f"offload_hist_c_{tag} = 3"]
    counts = []
    for code in codes:
        reply, _ = execute(kc, code)
        counts.append(reply["content"]["execution_count"])
    tail = _history(kc, hist_access_type="tail", n=3)
    assert [h[2] for h in tail] == codes
    assert [h[1] for h in tail] == counts
    session = tail[0][0]
    assert all(h[0] == session for h in tail)
    assert isinstance(session, int)

    rng = _history(kc, hist_access_type="range", session=session, start=counts[0], stop=counts[2] + 1)
    assert [(h[0], h[1], h[2]) for h in rng] == [(session, n, c) for n, c in zip(counts, codes)]
    one = _history(kc, hist_access_type="range", session=session, start=counts[1], stop=counts[1] + 1)
    assert [h[2] for h in one] == [codes[1]]


def test_history_not_stored_when_store_history_false(kc):
    tag = uuid.uuid4().hex[:8]
    execute(kc, f"offload_hist_kept_{tag} = 1")
    execute(kc, f"offload_hist_unstored_{tag} = 1", store_history=False)
    execute(kc, f"offload_hist_silent_{tag} = 1", silent=True)
    tail = _history(kc, hist_access_type="tail", n=1)
    assert tail[0][2] == f"offload_hist_kept_{tag} = 1"
    found = _history(kc, hist_access_type="search", pattern=f"*{tag}*")
    assert [h[2] for h in found] == [f"offload_hist_kept_{tag} = 1"]


def test_history_search(kc):
    tag = uuid.uuid4().hex[:8]
    a = f"offload_search_{tag} = 'a'"
    b = f"offload_search_{tag} = 'b'"
    for code in (a, b, a, a, b):
        execute(kc, code)
    execute(kc, f"unrelated_{tag} = 0")
    found = _history(kc, hist_access_type="search", pattern=f"offload_search_{tag}*")
    assert [h[2] for h in found] == [a, b, a, a, b]
    uniq = _history(kc, hist_access_type="search", pattern=f"offload_search_{tag}*", unique=True)
    assert sorted(h[2] for h in uniq) == sorted([a, b])
    last2 = _history(kc, hist_access_type="search", pattern=f"offload_search_{tag}*", n=2)
    assert [h[2] for h in last2] == [a, b]
    glob = _history(kc, hist_access_type="search", pattern=f"offload_search_{tag} = '?'")
    assert len(glob) == 5
    none = _history(kc, hist_access_type="search", pattern=f"no_such_thing_{tag}*")
    assert none == []


def test_history_output(kc):
    tag = uuid.uuid4().hex[:8]
    code = f"offload_hist_out_{tag} = 6\noffload_hist_out_{tag} * 7"
    execute(kc, code)
    tail = _history(kc, hist_access_type="tail", n=1, output=True)
    assert len(tail) == 1
    session, line, pair = tail[0]
    assert isinstance(pair, list) and len(pair) == 2, tail
    assert pair[0] == code
    assert pair[1] == "42"
    # a cell without a result has no output
    execute(kc, f"offload_hist_noout_{tag} = 1")
    tail = _history(kc, hist_access_type="tail", n=1, output=True)
    assert tail[0][2][0] == f"offload_hist_noout_{tag} = 1"
    assert tail[0][2][1] in (None, "")


# ---------------------------------------------------------------- comms


def test_comm_info(kc):
    reply, _ = request(kc, "comm_info_request", {})
    validate_message(reply, "comm_info_reply", reply["parent_header"]["msg_id"])
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["comms"] == {}
    reply, _ = request(kc, "comm_info_request", {"target_name": "jupyter.widget"})
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["comms"] == {}


def test_comm_open_unknown_target_is_closed(kc):
    comm_id = uuid.uuid4().hex
    msg = kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": "offload_no_such_target", "data": {}})
    kc.shell_channel.send(msg)
    msgs = iopub_for(kc, msg["header"]["msg_id"])
    closes = of_type(msgs, "comm_close")
    assert len(closes) == 1, [m["msg_type"] for m in msgs]
    assert closes[0]["content"]["comm_id"] == comm_id
    assert closes[0]["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    reply, _ = request(kc, "comm_info_request", {})
    assert comm_id not in reply["content"]["comms"]
    # comm_msg / comm_close for unknown comms are ignored quietly
    for mt, content in (("comm_msg", {"comm_id": comm_id, "data": {}}), ("comm_close", {"comm_id": comm_id, "data": {}})):
        m = kc.session.msg(mt, content)
        kc.shell_channel.send(m)
        out = iopub_for(kc, m["header"]["msg_id"])
        assert not of_type(out, "error")
    reply, msgs = execute(kc, "'still fine'")
    assert result_text(msgs) == "'still fine'"


# ---------------------------------------------------------------- routing, control


def test_identities_echoed_on_reply(kernel):
    """Frames before <IDS|MSG> are routing identities and come back on the reply."""
    raw = kernel.raw()
    try:
        sock = raw.socket("shell")
        msg_id = raw.send(sock, "kernel_info_request", {}, ids=[b"extra-route-1", b"extra-route-2"])
        r = raw.recv_reply(sock, msg_id)
        assert r is not None, "no reply to a message with extra identities"
        assert r["ids"] == [b"extra-route-1", b"extra-route-2"]
        assert r["msg_type"] == "kernel_info_reply"
        assert r["parent_header"]["msg_id"] == msg_id
    finally:
        raw.close()


def test_pipelined_requests_all_answered(kernel):
    raw = kernel.raw()
    try:
        sock = raw.socket("shell")
        ids = [raw.send(sock, "kernel_info_request", {}) for _ in range(200)]
        got = []
        for _ in ids:
            m = raw.recv(sock)
            assert m is not None, f"only {len(got)} of {len(ids)} replies"
            got.append(m["parent_header"]["msg_id"])
        assert got == ids  # one reply each, in order
    finally:
        raw.close()


def test_control_answers_while_shell_busy(kernel, tmp_path):
    kc = kernel.kc
    flag = tmp_path / "go"
    code = (
        "import os, time\n"
        "print('cell started', flush=True)\n"
        f"while not os.path.exists({str(flag)!r}):\n"
        "    time.sleep(0.02)\n"
        "'cell done'"
    )
    msg_id = kc.execute(code, allow_stdin=False)
    try:
        from kernel_testlib import wait_for_stream

        wait_for_stream(kc, msg_id, "cell started")
        msg = kc.session.msg("kernel_info_request", {})
        kc.control_channel.send(msg)
        r = wait_reply(kc, msg["header"]["msg_id"], channel="control")
        assert r["msg_type"] == "kernel_info_reply"
        # heartbeat too
        raw = kernel.raw()
        try:
            hb = raw.socket("hb", zmq.REQ)
            hb.send(b"ping")
            assert hb.poll(TIMEOUT * 1000), "heartbeat silent while the shell is busy"
            assert hb.recv() == b"ping"
        finally:
            raw.close()
        assert kernel.km.is_alive()
    finally:
        flag.touch()
    reply = wait_reply(kc, msg_id)
    assert reply["content"]["status"] == "ok"
    msgs = iopub_for(kc, msg_id)
    assert result_text(msgs) == "'cell done'"


def test_heartbeat_echo(kernel):
    raw = kernel.raw()
    try:
        hb = raw.socket("hb", zmq.REQ)
        for payload in (b"ping", b"", b"\x00\xff" * 100, b"x" * 100_000):
            hb.send(payload)
            assert hb.poll(TIMEOUT * 1000), "no heartbeat echo"
            assert hb.recv() == payload
    finally:
        raw.close()


# ---------------------------------------------------------------- shutdown


@pytest.mark.parametrize("restart", [False, True])
def test_shutdown_request(fresh_kernel, restart):
    kc = fresh_kernel.kc
    msg_id = kc.shutdown(restart=restart)
    reply = wait_reply(kc, msg_id, channel="control")
    validate_message(reply, "shutdown_reply", msg_id)
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["restart"] is restart
    # The process then exits by itself (the manager is not asked to kill it).
    proc = fresh_kernel.km.provisioner.process
    try:
        code = proc.wait(timeout=TIMEOUT)
    except Exception:
        pytest.fail(f"kernel still running {TIMEOUT} s after shutdown_request")
    assert code == 0, f"kernel exited with status {code} after shutdown_request"


def test_two_clients_get_their_own_replies_and_input_requests(kernel):
    """Replies and input_requests go to the client that asked; IOPub goes to all."""
    from queue import Empty

    from jupyter_client import BlockingKernelClient

    a = kernel.kc
    # A client of its own session (km.client() would share a's session, hence a's
    # socket identity, and the kernel's ROUTER would refuse the second connection).
    b = BlockingKernelClient(connection_file=kernel.km.connection_file)
    b.load_connection_file()
    assert b.session.session != a.session.session
    b.start_channels()
    try:
        b.wait_for_ready(timeout=60)
        ida = a.execute("'from a'", allow_stdin=False)
        idb = b.execute("offload_b_in = input('b asks: ')\n'from b'", allow_stdin=True)
        req = b.get_stdin_msg(timeout=TIMEOUT)
        assert req["content"]["prompt"] == "b asks: "
        with pytest.raises(Empty):
            a.get_stdin_msg(timeout=0.5)
        b.input("answer")
        ra = wait_reply(a, ida)
        rb = b.get_shell_msg(timeout=TIMEOUT)
        assert rb["parent_header"]["msg_id"] == idb
        assert ra["content"]["status"] == "ok" and rb["content"]["status"] == "ok"
        # a never sees b's reply
        with pytest.raises(Empty):
            while True:
                m = a.get_shell_msg(timeout=0.5)
                assert m["parent_header"].get("msg_id") != idb, "client a got client b's reply"
        # but b's outputs reach a's IOPub
        msgs = iopub_for(a, idb)
        assert any(m["msg_type"] == "execute_result" for m in msgs)
    finally:
        b.stop_channels()
