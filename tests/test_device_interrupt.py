"""Interrupts during device waits (issue 18 item 8) and synchronize() over every
device (item 6), through jupyter_client as the notebook's interrupt button does.

A runaway kernel (a `while` whose counter never moves) would run forever: the
interrupt must come back as KeyboardInterrupt, and the device must stop too --
the JIT's cancellation check on loop back-edges ends the work-items -- so the
next cell runs a kernel normally. No timing is asserted: a reply that comes at
all (within the generous TIMEOUT) is the proof, since the kernel loops forever
otherwise. Each test has its own kernel: an interrupt must not leak into
another test's cell."""

from __future__ import annotations

import textwrap

import pytest

from kernel_testlib import TIMEOUT, describe, execute, iopub_for, stream_text, wait_for_stream, wait_reply
from offload_fixtures import two_cpu_kernel  # noqa: F401  (a fixture)

SETUP = textwrap.dedent(
    """\
    import numpy as np, offload as ol
    from offload import prange

    @ol.kernel(boundscheck=False)   # no index checks: its launch does not wait
    def runaway(item, a, n):
        i = item.get_id(0)
        k = 0
        while k < n:                # k never moves: a beginner's mistake
            a[i] = a[i] + 1.0

    @ol.kernel
    def runaway_checked(item, a, n):  # checked on CPU devices by default: the launch waits
        i = item.get_id(0)
        k = 0
        while k < n:
            a[i] = a[i] + 1.0

    @ol.kernel
    def saxpy(item, s, x, y):
        i = item.get_id(0)
        y[i] = s * x[i] + y[i]

    @ol.kernel
    def axpb(item, s, x, out):
        i = item.get_id(0)
        out[i] = s * x[i] + 1
    """
)

# A kernel launch after the interrupt, on fresh random data, outputs poisoned
# first, against NumPy.
CHECK = textwrap.dedent(
    """\
    rng = np.random.default_rng()
    n = int(rng.integers(1000, 5000))
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    s = np.float32(rng.standard_normal())
    dx = ol.asarray(x, device=DEV); dy = ol.asarray(y, device=DEV)
    saxpy[ol.Range(n)](s, dx, dy)
    got = ol.asnumpy(dy)
    assert np.allclose(got, s * x + y, rtol=1e-5, atol=1e-5), (got[:4], (s * x + y)[:4])
    out = ol.full(n, np.nan, dtype=np.float32, device=DEV)   # poisoned, then written whole
    axpb[ol.Range(n)](s, dx, out)
    assert np.allclose(ol.asnumpy(out), s * x + 1, rtol=1e-5, atol=1e-5)
    print('next cell ok')
    """
)


def _interrupt(k, mode):
    if mode == "signal":
        k.km.interrupt_kernel()  # SIGINT, as the notebook's interrupt button
    else:
        msg = k.kc.session.msg("interrupt_request", {})
        k.kc.control_channel.send(msg)
        wait_reply(k.kc, msg["header"]["msg_id"], channel="control")


def _interrupted(k, code, mode="signal", started="cell started"):
    """Runs code (which prints `started` before its device wait), interrupts it,
    and returns the reply and the cell's messages; asserts KeyboardInterrupt."""
    msg_id = k.kc.execute(code, allow_stdin=False)
    wait_for_stream(k.kc, msg_id, started)
    _interrupt(k, mode)
    reply = wait_reply(k.kc, msg_id, timeout=TIMEOUT)  # never comes if the wait ignores it
    msgs = iopub_for(k.kc, msg_id)
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "KeyboardInterrupt", describe(reply, msgs)
    return reply, msgs


def _next_cell_ok(k, dev):
    reply, msgs = execute(k.kc, f"DEV = {dev!r}\n" + CHECK)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    assert "next cell ok" in stream_text(msgs), describe(reply, msgs)


@pytest.fixture
def dk(fresh_kernel):
    reply, msgs = execute(fresh_kernel.kc, SETUP)
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    return fresh_kernel


@pytest.mark.parametrize("mode", ["signal", "message"])
def test_runaway_kernel_interrupted(dk, mode):
    """The launch of a checked kernel waits for it (the bounds record): the
    interrupt ends that wait and the kernel; the device stays usable."""
    code = ("a = ol.zeros(256, dtype=np.float32, device='opencl:cpu:0')\n"
            "print('cell started', flush=True)\n"
            "runaway_checked[ol.Range(256)](a, 10)\n"
            "print('not reached')\n")
    _, msgs = _interrupted(dk, code, mode)
    assert "not reached" not in stream_text(msgs)
    _next_cell_ok(dk, "opencl:cpu:0")
    dk.assert_alive("after interrupting a runaway kernel")


def test_interrupt_during_synchronize(dk):
    """An unchecked launch returns at once; synchronize() is the wait."""
    code = ("a = ol.zeros(4096, dtype=np.float32, device='opencl:cpu:0')\n"
            "runaway[ol.Range(4096)](a, 10)\n"
            "print('cell started', flush=True)\n"
            "ol.synchronize()\n"
            "print('not reached')\n")
    _, msgs = _interrupted(dk, code)
    assert "not reached" not in stream_text(msgs)
    _next_cell_ok(dk, "opencl:cpu:0")


def test_interrupt_during_asnumpy(dk):
    """A copy back to the host waits for the queue first: interruptible too."""
    code = ("a = ol.zeros(64, dtype=np.float32, device='opencl:cpu:0')\n"
            "runaway[ol.Range(64)](a, 10)\n"
            "print('cell started', flush=True)\n"
            "ol.asnumpy(a)\n")
    _interrupted(dk, code)
    _next_cell_ok(dk, "opencl:cpu:0")


def test_offload_cell_runaway_loop(dk):
    """A %%offload cell whose prange body never ends."""
    code = ("%%offload --device opencl:cpu:0 --quiet\n"
            "print('cell started', flush=True)\n"
            "a = np.zeros(512)\n"
            "n = 10\n"
            "for i in prange(512):\n"
            "    k = 0\n"
            "    while k < n:\n"
            "        a[i] += 1.0\n")
    _interrupted(dk, code)
    _next_cell_ok(dk, "opencl:cpu:0")
    # and a %%offload cell runs normally after it
    reply, msgs = execute(dk.kc, "%%offload --device opencl:cpu:0 --quiet\n"
                                 "x = np.random.default_rng().random(1000); y = np.full(1000, np.nan)\n"
                                 "for i in prange(1000):\n"
                                 "    y[i] = 2 * x[i] + 1\n")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    # NumPy arrays come back at the cell's end
    reply, msgs = execute(dk.kc, "assert np.allclose(y, 2 * x + 1); print('loop ok')")
    assert reply["content"]["status"] == "ok" and "loop ok" in stream_text(msgs), describe(reply, msgs)


# ---------------------------------------------------------------------------
# synchronize() waits for every device with work (item 6)


def test_synchronize_waits_for_every_device(two_cpu_kernel):
    """The default device is cpu:1; the runaway runs on cpu:0. synchronize()
    without a device must wait for cpu:0 too -- here it can only end by the
    interrupt; a synchronize that looked at the default device alone would
    print 'synchronize returned'."""
    k = two_cpu_kernel
    reply, msgs = execute(k.kc, SETUP + "assert str(ol.default_device().filter_string) == 'opencl:cpu:1'\n")
    assert reply["content"]["status"] == "ok", describe(reply, msgs)
    code = ("a = ol.zeros(1024, dtype=np.float32, device='cpu:0')\n"
            "runaway[ol.Range(1024)](a, 10)\n"
            "print('cell started', flush=True)\n"
            "ol.synchronize()\n"
            "print('synchronize returned')\n")
    _, msgs = _interrupted(k, code)
    assert "synchronize returned" not in stream_text(msgs)
    _next_cell_ok(k, "opencl:cpu:0")
    _next_cell_ok(k, "opencl:cpu:1")
    # synchronize(device) waits for that device alone, as before
    reply, msgs = execute(k.kc, "ol.synchronize(ol.Device('cpu:1')); ol.synchronize('cpu:0'); ol.synchronize(); print('done')")
    assert reply["content"]["status"] == "ok" and "done" in stream_text(msgs), describe(reply, msgs)
