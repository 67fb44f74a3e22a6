"""Helpers shared by the offload kernel tests.

Everything here talks to a kernel the way a frontend does: through
jupyter_client, or through raw ZeroMQ sockets built from the connection file
(for the tests that send what a well-behaved client never would).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any, Iterable

import zmq
from jupyter_client.manager import start_new_kernel

REPO = Path(__file__).resolve().parent.parent
BUILDDIR = Path(os.environ.get("OFFLOAD_BUILDDIR") or REPO).resolve()
# The kernelspec under test. OFFLOAD_TEST_KERNEL lets the suite be pointed at
# another kernel (e.g. python3) when debugging the tests themselves.
KERNEL_NAME = os.environ.get("OFFLOAD_TEST_KERNEL", "offload")

TIMEOUT = 30  # seconds to wait for any one message; generous on purpose
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
DELIM = b"<IDS|MSG>"


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


# ----------------------------------------------------------------------------
# Kernels


class Kernel:
    """A started kernel: its manager, a blocking client, and its stderr log."""

    def __init__(self, km, kc, log_path: Path, log_file=None):
        self.km = km
        self.kc = kc
        self.log_path = log_path
        self._log_file = log_file  # kept open: restart_kernel launches again with it

    @property
    def pid(self) -> int:
        return self.km.provisioner.process.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def connection(self) -> dict:
        with open(self.km.connection_file) as f:
            return json.load(f)

    def raw(self) -> "RawClient":
        return RawClient(self.connection())

    def execute(self, code: str, **kw) -> tuple[dict, list[dict]]:
        return execute(self.kc, code, **kw)

    def assert_alive(self, what: str = "") -> None:
        assert_alive(self, what)

    def shutdown(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            try:
                # graceful, so that the kernel runs its exit path (and sanitizers check it)
                self.km.shutdown_kernel(now=False)
            except Exception:
                pass
            try:
                self.km.cleanup_resources()
            except Exception:
                pass
            if self._log_file is not None:
                self._log_file.close()


def start_kernel(log_path: Path, extra_env: dict | None = None, **launch_kw) -> Kernel:
    """Start a kernel of the spec under test, its stderr going to log_path.
    launch_kw go to KernelManager.start_kernel (e.g. cwd). A None in extra_env
    removes that variable."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "ab", buffering=0)
    kwargs: dict[str, Any] = {"stderr": log, **launch_kw}
    if extra_env:
        env = dict(os.environ)
        env.update(extra_env)
        kwargs["env"] = {k: v for k, v in env.items() if v is not None}
    try:
        km, kc = start_new_kernel(kernel_name=KERNEL_NAME, startup_timeout=60, **kwargs)
    except BaseException:
        log.close()
        raise
    kc.allow_stdin = True
    watch(kc, km)
    k = Kernel(km, kc, log_path, log)
    # Drain what start-up left on the channels (kernel_info reply, status).
    drain(kc)
    return k


def drain(kc, settle: float = 0.2) -> None:
    """Throw away whatever is waiting on shell and IOPub, and forget stashes."""
    _stash.pop(id(kc), None)
    for get in (kc.get_shell_msg, kc.get_iopub_msg, kc.get_stdin_msg):
        while True:
            try:
                get(timeout=settle)
            except Empty:
                break


# ----------------------------------------------------------------------------
# Talking through jupyter_client

# Messages read while looking for another one, kept per client so that a later
# wait for them finds them: {id(kc): {"shell": [...], "iopub": [...]}}
_stash: dict[int, dict[str, list]] = {}


def _stashed(kc, channel: str) -> list:
    return _stash.setdefault(id(kc), {"shell": [], "iopub": []})[channel]


# Which manager owns a client, so that waits notice a dead kernel at once
# instead of running into their timeout: {id(kc): km}
_managers: dict[int, Any] = {}


def watch(kc, km) -> None:
    _managers[id(kc)] = km


def check_died(kc) -> None:
    """Raise if the kernel behind kc has exited (with how it exited)."""
    km = _managers.get(id(kc))
    if km is None or not km.has_kernel:
        return
    proc = getattr(km.provisioner, "process", None)
    code = proc.poll() if proc is not None else None
    if code is not None:
        how = f"signal {-code} ({_signame(-code)})" if code < 0 else f"exit status {code}"
        raise AssertionError(f"the kernel process died: {how}")


def _signame(n: int) -> str:
    import signal

    try:
        return signal.Signals(n).name
    except ValueError:
        return "?"


def _get(kc, channel: str, timeout: float):
    if channel == "shell":
        return kc.get_shell_msg(timeout=timeout)
    if channel == "iopub":
        return kc.get_iopub_msg(timeout=timeout)
    if channel == "control":
        return kc.get_control_msg(timeout=timeout)
    raise ValueError(channel)


def wait_reply(kc, msg_id: str, channel: str = "shell", timeout: float = TIMEOUT) -> dict:
    """The reply whose parent is msg_id (others are stashed for later)."""
    if channel != "control":
        stash = _stashed(kc, channel)
        for i, m in enumerate(stash):
            if m["parent_header"].get("msg_id") == msg_id:
                return stash.pop(i)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {channel} reply to {msg_id} within {timeout} s")
        try:
            m = _get(kc, channel, timeout=min(left, 1.0))
        except Empty:
            m = None
        if m is None:
            check_died(kc)
            continue
        if m["parent_header"].get("msg_id") == msg_id:
            return m
        if channel != "control":
            _stashed(kc, channel).append(m)


def iopub_for(kc, msg_id: str, timeout: float = TIMEOUT) -> list[dict]:
    """All IOPub messages whose parent is msg_id, up to and including its idle status."""
    stash = _stashed(kc, "iopub")
    out = []
    rest = []
    done = False
    for m in stash:
        if not done and m["parent_header"].get("msg_id") == msg_id:
            out.append(m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                done = True
        else:
            rest.append(m)
    stash[:] = rest
    deadline = time.monotonic() + timeout
    while not done:
        left = deadline - time.monotonic()
        if left <= 0:
            kinds = [m["msg_type"] for m in out]
            raise AssertionError(
                f"no idle status for {msg_id} within {timeout} s; got {kinds}"
            )
        try:
            m = kc.get_iopub_msg(timeout=min(left, 1.0))
        except Empty:
            m = None
        if m is None:
            check_died(kc)
            continue
        if m["parent_header"].get("msg_id") == msg_id:
            out.append(m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                done = True
        else:
            stash.append(m)
    return out


def execute(kc, code: str, timeout: float = TIMEOUT, **kw) -> tuple[dict, list[dict]]:
    """Run code; return (execute_reply, IOPub messages of this request until idle).

    The IOPub list includes the busy/idle status messages and execute_input.
    Keyword arguments go to kc.execute (silent, store_history, user_expressions,
    allow_stdin, stop_on_error)."""
    kw.setdefault("allow_stdin", False)
    msg_id = kc.execute(code, **kw)
    reply = wait_reply(kc, msg_id, timeout=timeout)
    msgs = iopub_for(kc, msg_id, timeout=timeout)
    return reply, msgs


def cell_ok(kc, code: str) -> list[dict]:
    """Run a cell that must succeed (the error, with its traceback, otherwise); its IOPub messages."""
    reply, msgs = execute(kc, code)
    content = reply["content"]
    assert content["status"] == "ok", f"{content.get('ename')}: {content.get('evalue')}\n" + \
        "\n".join(content.get("traceback", []))
    return msgs


def cell_error(kc, code: str) -> tuple[str, str, list[dict]]:
    """Run a cell that must fail: (ename, evalue without colours, IOPub messages)."""
    reply, msgs = execute(kc, code)
    content = reply["content"]
    assert content["status"] == "error", "expected an error"
    return content["ename"], strip_ansi(content["evalue"]), msgs


def request(kc, msg_type: str, content: dict, channel: str = "shell", timeout: float = TIMEOUT):
    """Send any request through the client's session; return (reply, IOPub messages)."""
    msg = kc.session.msg(msg_type, content)
    getattr(kc, f"{channel}_channel").send(msg)
    reply = wait_reply(kc, msg["header"]["msg_id"], channel=channel, timeout=timeout)
    msgs = iopub_for(kc, msg["header"]["msg_id"], timeout=timeout)
    return reply, msgs


def outputs(msgs: Iterable[dict]) -> list[dict]:
    """IOPub messages other than status and execute_input."""
    return [m for m in msgs if m["msg_type"] not in ("status", "execute_input")]


def merged(msgs: Iterable[dict]) -> list[tuple[str, Any]]:
    """Outputs as (kind, payload), consecutive stream messages of one name joined:
    ("stdout"/"stderr", text), ("display_data", data), ("clear_output", wait), ..."""
    out: list[tuple[str, Any]] = []
    for m in outputs(msgs):
        t, c = m["msg_type"], m["content"]
        if t == "stream":
            if out and out[-1][0] == c["name"]:
                out[-1] = (c["name"], out[-1][1] + c["text"])
            else:
                out.append((c["name"], c["text"]))
        elif t == "clear_output":
            out.append((t, c.get("wait")))
        elif t in ("display_data", "update_display_data", "execute_result"):
            out.append((t, c["data"]))
        elif t == "error":
            out.append((t, c["ename"]))
        else:
            out.append((t, c))
    return out


def of_type(msgs: Iterable[dict], msg_type: str) -> list[dict]:
    return [m for m in msgs if m["msg_type"] == msg_type]


def stream_text(msgs: Iterable[dict], name: str = "stdout") -> str:
    return "".join(
        m["content"]["text"] for m in msgs if m["msg_type"] == "stream" and m["content"]["name"] == name
    )


def result_text(msgs: Iterable[dict]) -> str | None:
    res = of_type(msgs, "execute_result")
    assert len(res) <= 1, f"more than one execute_result: {res}"
    return res[0]["content"]["data"].get("text/plain") if res else None


def eval_expr(kc, expr: str) -> dict:
    """Evaluate expr through user_expressions of a silent execute; its result dict."""
    reply, _ = execute(kc, "", silent=True, store_history=False, user_expressions={"e": expr})
    assert reply["content"]["status"] == "ok", reply["content"]
    return reply["content"]["user_expressions"]["e"]


def eval_text(kc, expr: str) -> str:
    r = eval_expr(kc, expr)
    assert r["status"] == "ok", f"{expr!r} failed in the kernel: {r}"
    return r["data"]["text/plain"]


def describe(reply: dict, msgs: list[dict]) -> str:
    """Short account of a reply and its outputs, for assertion messages."""
    lines = [f"reply: {reply['content']}"]
    for m in msgs:
        lines.append(f"  iopub {m['msg_type']}: {str(m['content'])[:300]}")
    return "\n".join(lines)


def assert_alive(k: Kernel, what: str = "") -> None:
    """The kernel still runs code normally (and its process is alive)."""
    where = f" after {what}" if what else ""
    assert k.km.is_alive(), f"kernel process died{where}\n--- kernel stderr ---\n{k.log()[-4000:]}"
    try:
        reply, msgs = execute(k.kc, "offload_alive_check = 6 * 7\noffload_alive_check", timeout=TIMEOUT)
    except AssertionError as e:
        raise AssertionError(
            f"kernel does not answer execute{where}: {e}\n--- kernel stderr ---\n{k.log()[-4000:]}"
        ) from None
    assert reply["content"]["status"] == "ok", f"execute failed{where}: {describe(reply, msgs)}"
    assert result_text(msgs) == "42", f"wrong result{where}: {describe(reply, msgs)}"
    # And the control channel answers too.
    msg = k.kc.session.msg("kernel_info_request", {})
    k.kc.control_channel.send(msg)
    r = wait_reply(k.kc, msg["header"]["msg_id"], channel="control")
    assert r["msg_type"] == "kernel_info_reply"


def wait_for_stream(kc, msg_id: str, needle: str, name: str = "stdout", timeout: float = TIMEOUT) -> list[dict]:
    """Read IOPub until a stream of msg_id contains needle; the messages read are stashed back."""
    seen: list[dict] = []
    text = ""
    deadline = time.monotonic() + timeout
    try:
        for m in list(_stashed(kc, "iopub")):
            if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream" and m["content"]["name"] == name:
                text += m["content"]["text"]
        while needle not in text:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{needle!r} never appeared on {name} within {timeout} s (got {text!r})")
            try:
                m = kc.get_iopub_msg(timeout=min(left, 1.0))
            except Empty:
                m = None
            if m is None:
                check_died(kc)
                continue
            seen.append(m)
            if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream" and m["content"]["name"] == name:
                text += m["content"]["text"]
    finally:
        _stashed(kc, "iopub").extend(seen)
    return seen


def wait_stdin_request(kc, timeout: float = TIMEOUT) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return kc.get_stdin_msg(timeout=1.0)
        except Empty:
            pass
        check_died(kc)
    raise AssertionError(f"no input_request on stdin within {timeout} s")


# ----------------------------------------------------------------------------
# Raw sockets, for garbage and bad-signature tests

_ctx: zmq.Context | None = None


def zmq_context() -> zmq.Context:
    global _ctx
    if _ctx is None:
        _ctx = zmq.Context()
    return _ctx


def new_header(msg_type: str, session: str = "raw-test-session") -> dict:
    return {
        "msg_id": uuid.uuid4().hex,
        "session": session,
        "username": "tester",
        "date": "2024-01-01T00:00:00.000000Z",
        "msg_type": msg_type,
        "version": "5.4",
    }


def execute_content(code: str, **kw) -> dict:
    c = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": False,
        "stop_on_error": True,
    }
    c.update(kw)
    return c


class RawClient:
    """Raw ZeroMQ access to a kernel, from its connection file."""

    def __init__(self, conn: dict):
        self.conn = conn
        self.key = conn.get("key", "").encode()
        self.scheme = conn.get("signature_scheme", "hmac-sha256")
        self.sockets: list[zmq.Socket] = []

    def url(self, channel: str) -> str:
        port = self.conn[f"{channel}_port"]
        if self.conn.get("transport", "tcp") == "ipc":
            return f"ipc://{self.conn['ip']}-{port}"
        return f"tcp://{self.conn['ip']}:{port}"

    def socket(self, channel: str, kind: int = zmq.DEALER) -> zmq.Socket:
        s = zmq_context().socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        if kind == zmq.DEALER:
            s.setsockopt(zmq.IDENTITY, f"raw-{uuid.uuid4().hex[:12]}".encode())
        s.connect(self.url(channel))
        self.sockets.append(s)
        return s

    def close(self) -> None:
        for s in self.sockets:
            s.close(linger=0)
        self.sockets = []

    def sign(self, parts: list[bytes], key: bytes | None = None) -> bytes:
        key = self.key if key is None else key
        if not key:
            return b""
        h = hmac.new(key, digestmod=hashlib.sha256)
        for p in parts:
            h.update(p)
        return h.hexdigest().encode()

    def frames(
        self,
        msg_type: str = "kernel_info_request",
        content: dict | bytes | None = None,
        *,
        header: dict | bytes | None = None,
        parent: bytes = b"{}",
        metadata: bytes = b"{}",
        key: bytes | None = None,
        signature: bytes | None = None,
        ids: Iterable[bytes] = (),
        buffers: Iterable[bytes] = (),
    ) -> tuple[list[bytes], str | None]:
        """Frames of one message, signed with the kernel's key unless told otherwise.
        Returns (frames, msg_id or None)."""
        if header is None:
            header = new_header(msg_type)
        msg_id = header.get("msg_id") if isinstance(header, dict) else None
        hb = header if isinstance(header, bytes) else json.dumps(header).encode()
        if content is None:
            content = {}
        cb = content if isinstance(content, bytes) else json.dumps(content).encode()
        parts = [hb, parent, metadata, cb]
        sig = self.sign(parts, key) if signature is None else signature
        return [*ids, DELIM, sig, *parts, *buffers], msg_id

    def send(self, sock: zmq.Socket, msg_type: str = "kernel_info_request", content=None, **kw) -> str | None:
        frames, msg_id = self.frames(msg_type, content, **kw)
        sock.send_multipart(frames, copy=len(frames[-1]) < 1_000_000)
        return msg_id

    def parse(self, frames: list[bytes]) -> dict:
        i = frames.index(DELIM)
        sig, parts = frames[i + 1], frames[i + 2 : i + 6]
        expected = self.sign(parts)
        assert hmac.compare_digest(sig, expected), "kernel's message has a bad signature"
        header, parent, metadata, content = (json.loads(p) for p in parts)
        return {
            "ids": frames[:i],
            "header": header,
            "msg_type": header.get("msg_type"),
            "parent_header": parent,
            "metadata": metadata,
            "content": content,
            "buffers": frames[i + 6 :],
        }

    def recv(self, sock: zmq.Socket, timeout: float = TIMEOUT) -> dict | None:
        """Next message on sock, or None after timeout seconds."""
        if sock.poll(int(timeout * 1000)):
            return self.parse(sock.recv_multipart())
        return None

    def recv_reply(self, sock: zmq.Socket, msg_id: str, timeout: float = TIMEOUT) -> dict | None:
        """The reply to msg_id on sock (others are kept in self.other), or None."""
        deadline = time.monotonic() + timeout
        self.other = getattr(self, "other", [])
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            m = self.recv(sock, left)
            if m is None:
                return None
            if m["parent_header"].get("msg_id") == msg_id:
                return m
            self.other.append(m)

    def kernel_info(self, sock: zmq.Socket, timeout: float = TIMEOUT) -> dict:
        """A signed kernel_info_request on sock and its reply (asserting one comes)."""
        msg_id = self.send(sock, "kernel_info_request", {})
        r = self.recv_reply(sock, msg_id, timeout)
        assert r is not None, f"no kernel_info_reply within {timeout} s"
        assert r["msg_type"] == "kernel_info_reply"
        return r
