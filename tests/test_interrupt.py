"""Interrupts (SIGINT through the manager, and interrupt_request on control),
restart, and the kernel's life when its parent dies. Each test has its own kernel."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import zmq

from kernel_testlib import (
    KERNEL_NAME,
    TIMEOUT,
    describe,
    eval_text,
    execute,
    iopub_for,
    of_type,
    result_text,
    wait_for_stream,
    wait_reply,
)

BUSY_CODES = {
    "busy_loop": "print('cell started', flush=True)\nwhile True:\n    pass\n",
    "sleep": "import time\nprint('cell started', flush=True)\ntime.sleep(100)\n",
}


def _interrupt(k, mode):
    if mode == "signal":
        k.km.interrupt_kernel()  # the kernelspec says interrupt_mode signal: SIGINT
    else:
        msg = k.kc.session.msg("interrupt_request", {})
        k.kc.control_channel.send(msg)
        r = wait_reply(k.kc, msg["header"]["msg_id"], channel="control")
        assert r["msg_type"] == "interrupt_reply"
        assert r["content"]["status"] == "ok"


def test_kernelspec_interrupt_mode_is_signal():
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    assert spec.interrupt_mode == "signal"
    assert spec.language == "python"


@pytest.mark.parametrize("mode", ["signal", "message"])
@pytest.mark.parametrize("what", list(BUSY_CODES))
def test_interrupt_running_cell(fresh_kernel, mode, what):
    k = fresh_kernel
    kc = k.kc
    msg_id = kc.execute(BUSY_CODES[what], allow_stdin=False)
    wait_for_stream(kc, msg_id, "cell started")
    if what == "busy_loop":
        # while Python spins, the heartbeat and control channel still answer
        raw = k.raw()
        try:
            hb = raw.socket("hb", zmq.REQ)
            hb.send(b"ping")
            assert hb.poll(TIMEOUT * 1000), "no heartbeat while a cell spins"
            assert hb.recv() == b"ping"
        finally:
            raw.close()
    _interrupt(k, mode)
    reply = wait_reply(kc, msg_id, timeout=TIMEOUT)
    c = reply["content"]
    assert c["status"] == "error", c
    assert c["ename"] == "KeyboardInterrupt", c
    msgs = iopub_for(kc, msg_id)
    errs = of_type(msgs, "error")
    assert len(errs) == 1 and errs[0]["content"]["ename"] == "KeyboardInterrupt", describe(reply, msgs)
    # the kernel carries on normally
    k.assert_alive(f"interrupting {what} ({mode})")
    reply, msgs = execute(kc, "import time\ntime.sleep(0.2)\n'after interrupt'")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    assert result_text(msgs) == "'after interrupt'"


# The interrupt lands while C code runs (pbkdf2 checks no signals), and time.sleep
# is then called from C, so no bytecode checks the pending KeyboardInterrupt before
# the sleep starts: the window between a cell's last check and a blocking call,
# held open for a fraction of a second. Without a wake-up after the signal the cell sleeps on.
LATE_SLEEP = (
    "import collections, functools, hashlib, operator, time\n"
    "busy = functools.partial(hashlib.pbkdf2_hmac, 'sha256', b'k', b's', 1_000_000)\n"
    "nap = functools.partial(time.sleep, 100)\n"
    "print('cell started', flush=True)\n"
    "collections.deque(map(operator.call, [busy, nap]), maxlen=0)\n"
)


@pytest.mark.parametrize("mode", ["signal", "message"])
def test_interrupt_before_a_blocking_call(fresh_kernel, mode):
    k = fresh_kernel
    msg_id = k.kc.execute(LATE_SLEEP, allow_stdin=False)
    wait_for_stream(k.kc, msg_id, "cell started")
    _interrupt(k, mode)
    reply = wait_reply(k.kc, msg_id)
    assert reply["content"]["status"] == "error", reply["content"]
    assert reply["content"]["ename"] == "KeyboardInterrupt", reply["content"]
    iopub_for(k.kc, msg_id)
    k.assert_alive(f"interrupting before a sleep ({mode})")


def test_interrupt_is_catchable(fresh_kernel):
    kc = fresh_kernel.kc
    code = (
        "import time\n"
        "try:\n"
        "    print('cell started', flush=True)\n"
        "    time.sleep(100)\n"
        "except KeyboardInterrupt:\n"
        "    caught = 'caught it'\n"
        "caught"
    )
    msg_id = kc.execute(code, allow_stdin=False)
    wait_for_stream(kc, msg_id, "cell started")
    _interrupt(fresh_kernel, "signal")
    reply = wait_reply(kc, msg_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert result_text(iopub_for(kc, msg_id)) == "'caught it'"


def test_interrupt_during_input(fresh_kernel):
    kc = fresh_kernel.kc
    msg_id = kc.execute("input('never answered: ')", allow_stdin=True)
    req = kc.get_stdin_msg(timeout=TIMEOUT)
    assert req["msg_type"] == "input_request"
    _interrupt(fresh_kernel, "signal")
    reply = wait_reply(kc, msg_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    iopub_for(kc, msg_id)
    fresh_kernel.assert_alive("interrupting input()")


@pytest.mark.parametrize("mode", ["signal", "message"])
def test_interrupt_while_idle_is_harmless(fresh_kernel, mode):
    k = fresh_kernel
    execute(k.kc, "offload_idle_var = 1")
    for _ in range(2):
        _interrupt(k, mode)
    if mode == "signal":
        os.kill(k.pid, signal.SIGINT)
    time.sleep(1)  # give a (wrongly) pending interrupt every chance to fire in the next cell
    reply, msgs = execute(k.kc, "import time\nfor _ in range(10):\n    time.sleep(0.05)\n'no spurious interrupt'")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    assert result_text(msgs) == "'no spurious interrupt'"
    assert not of_type(msgs, "error")
    assert eval_text(k.kc, "offload_idle_var") == "1"  # state kept: the kernel did not restart
    k.assert_alive("SIGINT while idle")


def test_restart(fresh_kernel):
    k = fresh_kernel
    execute(k.kc, "offload_restart_var = 'before'")
    old_pid = k.pid
    k.km.restart_kernel(now=False)
    k.kc.wait_for_ready(timeout=60)
    assert k.km.is_alive()
    assert k.pid != old_pid
    try:
        os.kill(old_pid, 0)
        gone = False
    except ProcessLookupError:
        gone = True
    assert gone or _is_zombie(old_pid), "old kernel process still running after restart"
    reply, msgs = execute(k.kc, "'offload_restart_var' in globals()")
    assert result_text(msgs) == "False"
    assert reply["content"]["execution_count"] == 1  # a new kernel counts from 1
    k.assert_alive("restart")


def test_restart_while_busy(fresh_kernel):
    k = fresh_kernel
    msg_id = k.kc.execute("print('cell started', flush=True)\nwhile True: pass", allow_stdin=False)
    wait_for_stream(k.kc, msg_id, "cell started")
    k.km.restart_kernel(now=True)
    k.kc.wait_for_ready(timeout=60)
    k.assert_alive("restart while busy")


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return _is_zombie(pid)


PARENT = textwrap.dedent(
    """
    import sys, time
    from jupyter_client.manager import KernelManager
    km = KernelManager(kernel_name=sys.argv[1])
    with open(sys.argv[2], 'wb') as log:
        km.start_kernel(stderr=log)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    print(km.provisioner.process.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_kernel_exits_when_parent_dies(tmp_path, sig):
    env = dict(os.environ)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, KERNEL_NAME, str(tmp_path / "kernel.stderr")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    kernel_pid = None
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), f"throwaway parent did not start a kernel: {line!r}"
        kernel_pid = int(line)
        assert not _gone(kernel_pid)
        parent.send_signal(sig)
        parent.wait(timeout=TIMEOUT)
        deadline = time.monotonic() + 15
        while not _gone(kernel_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(kernel_pid), "kernel still running 15 s after its parent died"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if kernel_pid is not None and not _gone(kernel_pid):
            os.kill(kernel_pid, signal.SIGKILL)
