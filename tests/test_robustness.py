"""Bad input on every socket: wrong or missing signatures, garbage frames,
malformed JSON, invalid UTF-8, unknown message types, huge messages.
Nothing may crash or hang the kernel; each test has a kernel of its own and
checks that it still works afterwards."""

from __future__ import annotations

import json
import random
import time

import pytest
import zmq

from kernel_testlib import (
    DELIM,
    TIMEOUT,
    Kernel,
    RawClient,
    eval_text,
    execute_content,
    iopub_for,
    new_header,
    result_text,
    stream_text,
    wait_reply,
    wait_stdin_request,
)


@pytest.fixture
def raw(fresh_kernel):
    r = fresh_kernel.raw()
    yield r
    r.close()


def _no_reply_then_alive(k: Kernel, raw: RawClient, sock, what: str) -> None:
    """Whatever was sent on sock got no reply; a signed kernel_info on the same
    socket (processed after it, in order) is answered; the kernel works."""
    info = raw.kernel_info(sock)
    assert info["msg_type"] == "kernel_info_reply"
    stray = [m for m in getattr(raw, "other", []) if m["msg_type"] != "kernel_info_reply"]
    assert not stray, f"unexpected replies after {what}: {[m['msg_type'] for m in stray]}"
    k.assert_alive(what)


def _log_grew(k: Kernel, before: int) -> str:
    text = k.log()
    return text[before:]


# ---------------------------------------------------------------- signatures


@pytest.mark.parametrize("how", ["wrong_key", "missing", "tampered", "truncated", "uppercase"])
def test_badly_signed_execute_is_not_run(fresh_kernel, raw, tmp_path, how):
    k = fresh_kernel
    marker = tmp_path / "executed"
    code = f"open({str(marker)!r}, 'w').close()\noffload_badsig_ran = True\nprint('BADSIG-RAN')"
    content = execute_content(code)
    sock = raw.socket("shell")
    log_before = len(k.log())
    if how == "wrong_key":
        frames, _ = raw.frames("execute_request", content, key=b"not-the-right-key")
    elif how == "missing":
        frames, _ = raw.frames("execute_request", content, signature=b"")
    elif how == "tampered":  # signed for harmless content, then content swapped
        frames, _ = raw.frames("execute_request", execute_content("pass"))
        frames[-1] = json.dumps(content).encode()
    elif how == "truncated":
        frames, _ = raw.frames("execute_request", content)
        frames[1] = frames[1][:32]
    else:  # the right digest in upper case is not the signature the protocol defines
        frames, _ = raw.frames("execute_request", content)
        frames[1] = frames[1].upper()
        if frames[1] == frames[1].lower():
            pytest.skip("digest has no letters")
    sock.send_multipart(frames)
    _no_reply_then_alive(k, raw, sock, f"a {how} signature")
    assert not marker.exists(), "a badly signed execute_request was executed"
    assert eval_text(k.kc, "'offload_badsig_ran' in globals()") == "False"
    log = _log_grew(k, log_before)
    assert "signature" in log.lower(), f"dropped message not logged on the kernel's stderr: {log!r}"


def test_unsigned_message_dropped_and_log_not_in_cell_output(fresh_kernel, raw, tmp_path):
    """The drop is logged to the kernel's own stderr, never into a notebook's output."""
    k = fresh_kernel
    kc = k.kc
    flag = tmp_path / "go"
    # a cell is running (so fd 2 is being captured) while the bad message arrives
    code = (
        "import os, time\n"
        "print('cell started', flush=True)\n"
        f"while not os.path.exists({str(flag)!r}):\n"
        "    time.sleep(0.02)\n"
    )
    from kernel_testlib import wait_for_stream

    msg_id = kc.execute(code, allow_stdin=False)
    try:
        wait_for_stream(kc, msg_id, "cell started")
        ctl = raw.socket("control")
        frames, _ = raw.frames("kernel_info_request", {}, signature=b"")
        ctl.send_multipart(frames)
        raw.kernel_info(ctl)  # processed after the bad one
    finally:
        flag.touch()
    assert wait_reply(kc, msg_id)["content"]["status"] == "ok"
    msgs = iopub_for(kc, msg_id)
    assert "signature" not in (stream_text(msgs, "stderr") + stream_text(msgs, "stdout")).lower()
    assert "signature" in k.log().lower()
    k.assert_alive("an unsigned message")


def test_badly_signed_input_reply_is_ignored(fresh_kernel, raw):
    k = fresh_kernel
    kc = k.kc
    msg_id = kc.execute("offload_answer = input('q: ')\noffload_answer", allow_stdin=True)
    req = wait_stdin_request(kc)
    # Forge a reply on the client's own stdin socket, with a wrong key.
    forged_header = new_header("input_reply", session=kc.session.session)
    frames, _ = raw.frames(
        "input_reply", {"value": "forged"}, header=forged_header, parent=json.dumps(req["header"], default=str).encode(), key=b"wrong"
    )
    kc.stdin_channel.socket.send_multipart(frames)
    time.sleep(0.3)
    kc.input("genuine")
    reply = wait_reply(kc, msg_id)
    assert reply["content"]["status"] == "ok"
    assert result_text(iopub_for(kc, msg_id)) == "'genuine'"
    k.assert_alive("a forged input_reply")


# ---------------------------------------------------------------- garbage frames


def _garbage_batches(seed: int) -> list[list[bytes]]:
    rnd = random.Random(seed)
    rb = lambda n: bytes(rnd.getrandbits(8) for _ in range(n))  # noqa: E731
    return [
        [b""],
        [rb(1)],
        [rb(100)],
        [rb(10) for _ in range(10)],
        [b"\xff" * 64, b"\x00" * 64],
        [DELIM],
        [DELIM, b""],
        [DELIM, b"sig", b"{", b"}", b"[", b"]"],
        [b"id", DELIM, rb(64), rb(20), rb(20), rb(20), rb(20)],
        [DELIM, b"0" * 64, b"{}", b"{}", b"{}", b"{}"],
        [b"x"] * 2000,
        [rb(200_000)],
        [b"{\"msg_type\": \"execute_request\"}"],
        [DELIM + b"trailing"],
    ]


@pytest.mark.parametrize("channel", ["shell", "control", "stdin"])
def test_garbage_frames(fresh_kernel, raw, channel):
    k = fresh_kernel
    sock = raw.socket(channel)
    for batch in _garbage_batches(seed={"shell": 1, "control": 2, "stdin": 3}[channel]):
        sock.send_multipart(batch)
    if channel == "stdin":
        # stdin is read while input() waits: it must skip the garbage and take the real answer
        kc = k.kc
        msg_id = kc.execute("input('after garbage: ')", allow_stdin=True)
        wait_stdin_request(kc)
        for batch in _garbage_batches(seed=7):  # and garbage during the wait
            sock.send_multipart(batch)
        kc.input("real answer")
        reply = wait_reply(kc, msg_id)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert result_text(iopub_for(kc, msg_id)) == "'real answer'"
        k.assert_alive("garbage on stdin")
    else:
        _no_reply_then_alive(k, raw, sock, f"garbage on {channel}")


def test_garbage_on_heartbeat(fresh_kernel, raw):
    k = fresh_kernel
    d = raw.socket("hb", zmq.DEALER)
    for batch in _garbage_batches(seed=3):
        d.send_multipart(batch)
        d.send_multipart([b""] + batch)  # as a REQ would frame it
    hb = raw.socket("hb", zmq.REQ)
    hb.send(b"ping after garbage")
    assert hb.poll(TIMEOUT * 1000), "heartbeat stopped echoing after garbage"
    assert hb.recv() == b"ping after garbage"
    k.assert_alive("garbage on hb")


def test_garbage_on_iopub(fresh_kernel, raw):
    k = fresh_kernel
    x = raw.socket("iopub", zmq.XSUB)
    x.send(b"\x01")  # subscribe to everything, as SUB does
    for batch in _garbage_batches(seed=5):
        x.send_multipart(batch)
    x.send(b"\x00")  # unsubscribe
    x.send(b"\x01offload-topic")
    k.assert_alive("garbage on iopub")
    # the IOPub broadcasts still reach the regular client
    reply, msgs = k.execute("print('iopub fine')")
    assert stream_text(msgs) == "iopub fine\n"


def test_unasked_stdin_flood_is_drained(fresh_kernel, raw):
    """A client writing to stdin while no input() asks must not fill the
    kernel's queue (and then block itself, as the wire fuzzer's did): the
    kernel drops it, and the next input() gets its own reply, not a stale one."""
    k = fresh_kernel
    sock = raw.socket("stdin")
    sock.setsockopt(zmq.SNDTIMEO, 20_000)
    for i in range(5000):  # 2.5x the two queues' high-water marks together
        try:
            raw.send(sock, "input_reply", {"value": f"stale {i}"})
        except zmq.Again:
            pytest.fail(f"stdin send {i} blocked: the idle kernel does not drain its stdin socket")
    k.assert_alive("after 5000 unasked input_replies")
    msg_id = k.kc.execute("offload_fresh = input('now? ')", allow_stdin=True)
    wait_stdin_request(k.kc)
    k.kc.input("fresh")
    assert wait_reply(k.kc, msg_id)["content"]["status"] == "ok"
    assert eval_text(k.kc, "offload_fresh") == "'fresh'"


# ---------------------------------------------------------------- malformed messages


@pytest.mark.parametrize(
    "part,bad",
    [
        ("content", b'{"code": '),
        ("content", b"not json at all"),
        ("content", b'["an", "array"]'),
        ("content", b""),
        ("metadata", b"{oops"),
        ("parent", b"{\"msg_id\": "),
    ],
)
def test_malformed_json_gets_error_reply(fresh_kernel, raw, tmp_path, part, bad):
    k = fresh_kernel
    marker = tmp_path / "executed"
    header = new_header("execute_request")
    kw = {"header": header}
    content = execute_content(f"open({str(marker)!r}, 'w').close()")
    if part == "content":
        kw["content"] = bad
    else:
        kw["content"] = content
        kw[part] = bad
    sock = raw.socket("shell")
    frames, msg_id = raw.frames("execute_request", **kw)
    sock.send_multipart(frames)
    r = raw.recv_reply(sock, msg_id)
    assert r is not None, f"no error reply to an execute_request with bad {part} JSON"
    assert r["msg_type"] == "execute_reply"
    assert r["content"]["status"] == "error", r["content"]
    assert not marker.exists()
    k.assert_alive(f"bad {part} JSON")


def test_malformed_json_on_control_gets_error_reply(fresh_kernel, raw):
    k = fresh_kernel
    sock = raw.socket("control")
    frames, msg_id = raw.frames("kernel_info_request", b"{broken")
    sock.send_multipart(frames)
    r = raw.recv_reply(sock, msg_id)
    assert r is not None, "no error reply to a kernel_info_request with bad content JSON"
    assert r["msg_type"] == "kernel_info_reply"
    assert r["content"]["status"] == "error"
    k.assert_alive("bad JSON on control")


@pytest.mark.parametrize(
    "content",
    [
        b'{"code": "offload_utf8 = \'\xff\xfe\'", "silent": false}',
        b'{"code": "x = 1\xc3", "silent": false}',
        b'{"code": "\xed\xa0\x80", "silent": false}',
        b'{"\xff": 1}',
    ],
)
def test_invalid_utf8_content_gets_error_reply(fresh_kernel, raw, content):
    k = fresh_kernel
    sock = raw.socket("shell")
    frames, msg_id = raw.frames("execute_request", content)
    sock.send_multipart(frames)
    r = raw.recv_reply(sock, msg_id)
    assert r is not None, "no error reply to an execute_request with invalid UTF-8"
    assert r["msg_type"] == "execute_reply"
    assert r["content"]["status"] == "error", r["content"]
    assert eval_text(k.kc, "'offload_utf8' in globals()") == "False"
    k.assert_alive("invalid UTF-8 content")


@pytest.mark.parametrize(
    "header",
    [
        b"{not json",
        b"[]",
        b'{"msg_id": "x"}',
        b'{"msg_type": "execute_request"}',
        b'{"msg_id": 5, "msg_type": "execute_request"}',
        b'{"msg_id": "x", "msg_type": "kernel_info_request", "date": "\xff"}',
        b"",
    ],
)
def test_bad_header_is_dropped(fresh_kernel, raw, header):
    k = fresh_kernel
    sock = raw.socket("shell")
    frames, _ = raw.frames("execute_request", execute_content("print(1)"), header=header)
    sock.send_multipart(frames)
    _no_reply_then_alive(k, raw, sock, f"bad header {header!r}")


@pytest.mark.parametrize("keep", [1, 2, 3, 4, 5])
def test_missing_frames(fresh_kernel, raw, keep):
    """Only the first `keep` frames of [delim, sig, header, parent, metadata, content]."""
    k = fresh_kernel
    sock = raw.socket("shell")
    frames, _ = raw.frames("execute_request", execute_content("offload_partial = 1"))
    sock.send_multipart(frames[:keep])
    _no_reply_then_alive(k, raw, sock, f"a message of {keep} frames")
    assert eval_text(k.kc, "'offload_partial' in globals()") == "False"


def test_unknown_request_type_gets_error_reply(fresh_kernel, raw):
    k = fresh_kernel
    sock = raw.socket("shell")
    msg_id = raw.send(sock, "offload_nosuch_request", {"x": 1})
    r = raw.recv_reply(sock, msg_id)
    assert r is not None, "no reply to an unknown *_request"
    assert r["msg_type"] == "offload_nosuch_reply"
    assert r["content"]["status"] == "error"
    k.assert_alive("an unknown request type")


@pytest.mark.parametrize("channel", ["shell", "control"])
def test_unknown_non_request_type_is_ignored(fresh_kernel, raw, channel):
    k = fresh_kernel
    sock = raw.socket(channel)
    for mt in ("offload_bogus", "execute_reply", "status", "input_reply", ""):
        raw.send(sock, mt, {"x": 1})
    _no_reply_then_alive(k, raw, sock, f"unknown message types on {channel}")


@pytest.mark.parametrize(
    "msg_type,content",
    [
        ("execute_request", {"code": 5}),
        ("execute_request", {"code": None, "silent": "yes"}),
        ("execute_request", {"code": "1", "user_expressions": [1, 2]}),
        ("complete_request", {"code": 1, "cursor_pos": "x"}),
        ("complete_request", {"code": "pri", "cursor_pos": 10**6}),
        ("complete_request", {"code": "pri", "cursor_pos": -5}),
        ("inspect_request", {"code": "print", "cursor_pos": 10**6, "detail_level": 7}),
        ("history_request", {"hist_access_type": "nonsense"}),
        ("history_request", {"hist_access_type": "range", "session": "x", "start": None}),
        ("is_complete_request", {}),
        ("comm_open", {}),
        ("comm_info_request", {"target_name": 5}),
    ],
)
def test_wrongly_typed_fields(fresh_kernel, raw, msg_type, content):
    """Valid JSON, wrong types: an error (or a sane) reply, never a crash."""
    k = fresh_kernel
    sock = raw.socket("shell")
    msg_id = raw.send(sock, msg_type, content)
    if msg_type.endswith("_request"):
        r = raw.recv_reply(sock, msg_id)
        assert r is not None, f"no reply to {msg_type} {content}"
        assert r["msg_type"] == msg_type.replace("_request", "_reply")
        if msg_type == "execute_request" and content.get("code") is not None and not isinstance(content["code"], str):
            assert r["content"]["status"] == "error"
    k.assert_alive(f"{msg_type} with {content}")


def test_buffers_and_extra_frames_tolerated(fresh_kernel, raw):
    k = fresh_kernel
    sock = raw.socket("shell")
    msg_id = raw.send(sock, "execute_request", execute_content("'with buffers'"), buffers=[b"\x00" * 10, b"abc" * 1000])
    r = raw.recv_reply(sock, msg_id)
    assert r is not None and r["content"]["status"] == "ok"
    k.assert_alive("a message with buffers")


@pytest.mark.timeout(240)
def test_hundred_megabyte_message(fresh_kernel, raw):
    k = fresh_kernel
    sock = raw.socket("shell")
    pad = b"a" * 100_000_000
    content = (
        b'{"code": "offload_big = 1", "silent": false, "store_history": true, '
        b'"user_expressions": {}, "allow_stdin": false, "stop_on_error": true, "padding": "' + pad + b'"}'
    )
    frames, msg_id = raw.frames("execute_request", content)
    del pad, content
    sock.send_multipart(frames, copy=False)
    del frames
    r = raw.recv_reply(sock, msg_id, timeout=120)
    assert r is not None, "no reply (error or ok) to a signed 100 MB execute_request"
    assert r["msg_type"] == "execute_reply"
    assert r["content"]["status"] in ("ok", "error")
    k.assert_alive("a 100 MB message")
    # and the kernel still answers on that very socket
    raw.kernel_info(sock)


def test_big_output_to_slow_reader_does_not_block_kernel(fresh_kernel):
    """A lot of output while nobody reads IOPub quickly: the kernel finishes the cell."""
    k = fresh_kernel
    kc = k.kc
    msg_id = kc.execute("for i in range(200000):\n    print('line', i)\n'done'", allow_stdin=False)
    reply = wait_reply(kc, msg_id, timeout=120)
    assert reply["content"]["status"] == "ok"
    msgs = iopub_for(kc, msg_id, timeout=120)
    assert result_text(msgs) == "'done'"
    text = stream_text(msgs)
    assert text.startswith("line 0\n") and text.endswith("line 199999\n")
    k.assert_alive("lots of output")


def test_client_disconnect_and_reconnect(fresh_kernel):
    k = fresh_kernel
    k.kc.stop_channels()
    kc2 = k.km.client()  # same session as k.kc, which is closed first
    kc2.start_channels()
    try:
        kc2.wait_for_ready(timeout=60)
        msg_id = kc2.execute("'second client'")
        reply = kc2.get_shell_msg(timeout=TIMEOUT)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "ok"
    finally:
        kc2.stop_channels()
    k.kc = k.km.client()
    k.kc.start_channels()
    k.kc.wait_for_ready(timeout=60)
    k.assert_alive("a client reconnecting")
