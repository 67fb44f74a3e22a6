"""IOPub with a subscriber that stops reading (issue 18 item 7).

The kernel's IOPub XPUB socket has a send high-water mark (1000 messages, as
ipykernel's), and the hand-off between its threads is bounded too: messages
for a stalled subscriber are dropped, as PUB does, so that subscriber costs
bounded memory, and the kernel keeps answering on shell. Without the mark the
kernel queued everything for it (71 MB grew to 6.7 GB over 43,000 requests).

The bound checked is on memory (RSS growth against a generous limit), never
on time.
"""

from __future__ import annotations

import os

import zmq

from kernel_testlib import TIMEOUT, zmq_context

MB = 1 << 20
# Each request prints 1 MB: about 16 stream messages (runs of 64 KiB), 600 MB
# in all, which a stalled subscriber would hold without a bound. With one the
# queues hold at most ~2000 such messages (XPUB's and the hand-off's).
REQUESTS = 600
PRINT = "print('x' * (1 << 20))"
GROWTH_LIMIT = 300 * MB
# Under ASan (make check with --enable-sanitizers sets ASAN_OPTIONS) freed memory waits in
# ASan's quarantine, 256 MB by default, before it is reused: RSS holds it on top.
ASAN_QUARANTINE = 256 * MB


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def stalled_subscriber(raw) -> zmq.Socket:
    """A SUB socket that subscribes to everything and never reads: small
    receive buffers, so that the kernel's side of it fills soon."""
    s = zmq_context().socket(zmq.SUB)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVHWM, 1)
    s.setsockopt(zmq.RCVBUF, 4096)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    s.connect(raw.url("iopub"))
    raw.sockets.append(s)  # closed with raw
    return s


def test_stalled_iopub_subscriber_costs_bounded_memory(fresh_kernel):
    k = fresh_kernel
    # The fixture's client reads IOPub only when asked: out of the way, so the
    # raw subscriber is the only one and the measurement is about it.
    k.kc.stop_channels()
    raw = k.raw()
    try:
        stalled_subscriber(raw)
        shell = raw.socket("shell")
        raw.kernel_info(shell)  # the subscription has reached the kernel by now
        before = rss(k.pid)
        peak = before
        for i in range(REQUESTS):
            msg_id = raw.send(shell, "execute_request", _execute(PRINT))
            r = raw.recv_reply(shell, msg_id, timeout=TIMEOUT * 2)
            assert r is not None, f"no execute_reply to request {i} with IOPub stalled"
            assert r["content"]["status"] == "ok", r["content"]
            if i % 50 == 49:
                raw.kernel_info(shell)  # and it answers kernel_info too
                peak = max(peak, rss(k.pid))
        peak = max(peak, rss(k.pid))
        limit = GROWTH_LIMIT + (ASAN_QUARANTINE if "ASAN_OPTIONS" in os.environ else 0)
        assert peak - before < limit, (
            f"the kernel grew by {(peak - before) / MB:.0f} MB ({before / MB:.0f} -> {peak / MB:.0f} MB) "
            f"over {REQUESTS} requests printing 1 MB each with a subscriber that never reads"
        )
    finally:
        raw.close()
        k.kc = k.km.client()
        k.kc.start_channels()
        k.kc.wait_for_ready(timeout=60)
    k.assert_alive("a stalled IOPub subscriber")


def _execute(code: str) -> dict:
    from kernel_testlib import execute_content

    return execute_content(code)
