#!/usr/bin/env python3
"""Benchmark: the offload Jupyter kernel against ipykernel, in one run.

    python3 bench/bench_kernel.py                       # offload vs python3 (ipykernel)
    python3 bench/bench_kernel.py --kernels python3     # one kernel only
    python3 bench/bench_kernel.py --executes 1000 --launches 10 --json bench.json

This is a benchmark, not a test: it asserts nothing about speed. It measures, per kernelspec:

(a) start-up: from just before KernelManager.start_kernel() to the arrival of the first
    kernel_info_reply on the shell socket; --launches launches (default 10), median/min/max.
    The client connects its DEALER right after start_kernel() returns and sends
    kernel_info_request (re-sent every 0.5 s until a reply comes; ZeroMQ queues the first one
    until the kernel binds). The client's reconnect interval is 5 ms (ZeroMQ's default is
    100 ms, which would quantise the measurement). Each launched kernel is shut down with a
    shutdown_request before the next launch.

(b) round trip of execute_request {code: "pass", silent: False, store_history: True} on one
    fresh kernel: --warmup (50) untimed executes, then --executes (1000) timed ones, one at a
    time. Two clocks per execute, both started just before the (pre-signed) message is handed
    to ZeroMQ:
      reply  = until the execute_reply arrives on shell  (the headline number)
      idle   = until the IOPub status 'idle' for that request arrives (the drain of IOPub is
               part of the loop, so no messages pile up; the reply time is taken when the
               shell socket becomes readable, and IOPub frames that arrive before it are only
               stashed, not parsed, until the reply is in)
    Reported: median and p99 in ms.

    The client is lean: pyzmq DEALER + SUB sockets, jupyter_client.session.Session for HMAC
    signing, no threads, no asyncio, Python's GC off during the timed loop. Its own cost is
    kept out of the timed region and measured separately:
      client serialize+sign (before the clock starts) and client parse+verify of the reply
      and IOPub messages (after the clock stops), per execute, median in microseconds;
    plus a "null kernel" floor: the same loop against a minimal Python ZeroMQ responder (in
    its own process) that answers every request at once with a signed reply + busy/idle.
    The floor is what this client, ZeroMQ over loopback TCP and a near-zero-work Python peer
    cost together; no kernel can round-trip faster than that through this client.

(c) memory: VmRSS (from /proc/PID/status) of the kernel process, summed over its process
    tree (in case the kernelspec starts a wrapper), right after start-up and after --rss-at
    (200,3000) executes of the kernel from (b) (warm-up and timed executes count; the loop
    keeps executing "pass" until the last checkpoint), and the growth between the first and
    last checkpoint.

(d) IPython: on the kernel from (b), after its loop, the first cell that needs IPython's shell
    (`%pwd`; offload imports IPython and makes its shell then) -- reply time once -- and then
    --ipython-cells (200) timed executes each of `%pwd` and of `pass`, now that the shell
    exists (median reply ms).

Output: one table, rows = metric, columns = each kernel and, for two kernels, the ratio
ipykernel/offload (> 1 means offload is faster or smaller). --json PATH also writes all raw
samples. Kernels are always shut down, also on errors and Ctrl-C.

Kernelspecs are looked up with <repo>/share/jupyter first on JUPYTER_PATH, where `make`
writes the in-tree offload kernelspec.
"""
import argparse
import gc
import hmac
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
jp = [str(ROOT / "share" / "jupyter")]
if os.environ.get("JUPYTER_PATH"):
    jp.append(os.environ["JUPYTER_PATH"])
os.environ["JUPYTER_PATH"] = os.pathsep.join(jp)

import zmq  # noqa: E402
from jupyter_client import KernelManager  # noqa: E402
from jupyter_client.session import Session  # noqa: E402

DELIM = b"<IDS|MSG>"
now = time.perf_counter


class BenchError(RuntimeError):
    pass


# --------------------------------------------------------------------------- statistics
def percentile(xs, q):
    """Linear-interpolated percentile (NumPy's default method), q in [0, 100]."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * q / 100.0
    f = int(k)
    c = min(f + 1, len(s) - 1)
    return s[f] + (s[c] - s[f]) * (k - f)


def summary(xs):
    return {"n": len(xs), "median": statistics.median(xs) if xs else float("nan"),
            "p99": percentile(xs, 99), "min": min(xs) if xs else float("nan"),
            "max": max(xs) if xs else float("nan"),
            "mean": statistics.fmean(xs) if xs else float("nan")}


# --------------------------------------------------------------------------- memory
def _children(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def rss_kib(pid):
    """VmRSS of pid and its descendants, in KiB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
        todo += _children(p)
    return total


# --------------------------------------------------------------------------- lean client
class LeanClient:
    """DEALER (shell) + SUB (iopub) with jupyter_client's Session for signing."""

    def __init__(self, ctx, conn, session):
        self.session = session
        ip, tr = conn["ip"], conn.get("transport", "tcp")

        def url(port):
            return f"{tr}://{ip}:{port}" if tr == "tcp" else f"{tr}://{ip}-{port}"

        self.shell = ctx.socket(zmq.DEALER)
        self.iopub = ctx.socket(zmq.SUB)
        for s in (self.shell, self.iopub):
            s.linger = 0
            s.setsockopt(zmq.RECONNECT_IVL, 5)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.shell.connect(url(conn["shell_port"]))
        self.iopub.connect(url(conn["iopub_port"]))
        self.poller = zmq.Poller()
        self.poller.register(self.shell, zmq.POLLIN)
        self.poller.register(self.iopub, zmq.POLLIN)

    def close(self):
        self.shell.close(0)
        self.iopub.close(0)

    def frames(self, msg_type, content):
        msg = self.session.msg(msg_type, content)
        return msg["header"]["msg_id"], self.session.serialize(msg)

    def parse(self, frames, content=True):
        """Verify the HMAC and decode the JSON parts (no date parsing, unlike
        Session.deserialize, which spends most of its time in dateutil)."""
        i = frames.index(DELIM)
        sig, parts = frames[i + 1], frames[i + 2:i + 6]
        if self.session.auth is not None and not hmac.compare_digest(
                sig, self.session.sign(parts)):
            raise BenchError("message with an invalid signature")
        header = json.loads(parts[0])
        return {"header": header, "msg_type": header.get("msg_type"),
                "parent_header": json.loads(parts[1]), "metadata": json.loads(parts[2]),
                "content": json.loads(parts[3]) if content else parts[3]}

    @staticmethod
    def peek(frames):
        """msg_type, parent msg_id and (for status) execution_state, without verifying."""
        i = frames.index(DELIM)
        header = json.loads(frames[i + 2])
        parent = json.loads(frames[i + 3])
        state = None
        if header.get("msg_type") == "status":
            state = json.loads(frames[i + 5]).get("execution_state")
        return header.get("msg_type"), parent.get("msg_id"), state

    def request(self, msg_type, content, timeout=30.0, want_idle=True):
        """Send one request; return (t_reply, t_idle, reply, client_cost) in seconds.

        t_* are measured from just before the send. client_cost = serialize+sign before the
        clock plus parse+verify of everything received after the reply arrived.
        """
        c0 = now()
        msg_id, out = self.frames(msg_type, content)
        c1 = now()
        t0 = now()
        self.shell.send_multipart(out, copy=True)
        t_reply = t_idle = None
        reply_frames = None
        stash = []  # (arrival time, frames) of IOPub messages
        checked = 0
        deadline = t0 + timeout
        shell, iopub, poll = self.shell, self.iopub, self.poller.poll
        while reply_frames is None or (want_idle and t_idle is None):
            left = deadline - now()
            if left <= 0:
                raise BenchError(f"no {'reply' if reply_frames is None else 'idle'} to "
                                 f"{msg_type} within {timeout} s")
            events = dict(poll(left * 1000))
            if shell in events:
                f = shell.recv_multipart()
                t = now()
                if reply_frames is None:
                    _, pid_, _ = self.peek(f)
                    if pid_ == msg_id:
                        reply_frames, t_reply = f, t
            if iopub in events:
                while True:
                    try:
                        f = iopub.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    stash.append((now(), f))
            if reply_frames is not None and want_idle and t_idle is None:
                while checked < len(stash):
                    t, f = stash[checked]
                    checked += 1
                    mtype, pid_, state = self.peek(f)
                    if mtype == "status" and pid_ == msg_id and state == "idle":
                        t_idle = t
                        break
        p0 = now()
        reply = self.parse(reply_frames)
        for _, f in stash:
            self.parse(f, content=True)
        p1 = now()
        return (t_reply - t0, (t_idle - t0) if t_idle else None, reply,
                (c1 - c0) + (p1 - p0))

    def wait_ready(self, timeout=60.0, resend=0.5, t_start=None, alive=None):
        """Send kernel_info until a reply comes; then make sure the SUB socket is live.

        Returns (seconds from t_start to the first kernel_info_reply, iopub_seen).
        kernel_info is re-sent every `resend` s until the first reply; after it, every 0.1 s
        (for at most 5 s) until some IOPub message arrives, since a SUB socket only gets
        messages published after its subscription reached the kernel.
        """
        t_start = now() if t_start is None else t_start
        deadline = now() + timeout
        t_first, t_sent, got_iopub = None, None, False
        t_checked = now()
        while True:
            t = now()
            if t_first is None and (t_sent is None or t - t_sent > resend):
                self.shell.send_multipart(self.frames("kernel_info_request", {})[1])
                t_sent = t
            elif t_first is not None and not got_iopub and t - t_sent > 0.1:
                if t - t_first > 5.0:
                    break
                self.shell.send_multipart(self.frames("kernel_info_request", {})[1])
                t_sent = t
            if t > deadline:
                raise BenchError(f"no kernel_info_reply within {timeout} s")
            if alive is not None and t - t_checked > 0.2:
                t_checked = t
                if not alive():
                    raise BenchError("the kernel process exited before replying to kernel_info")
            events = dict(self.poller.poll(20))
            if self.shell in events:
                f = self.shell.recv_multipart()
                t = now()
                if t_first is None and self.parse(f)["msg_type"] == "kernel_info_reply":
                    t_first = t
            if self.iopub in events:
                self.iopub.recv_multipart()
                got_iopub = True
            if t_first is not None and got_iopub:
                break
        # let the answers to re-sent requests arrive, then drop them
        time.sleep(0.1)
        for sock in (self.shell, self.iopub):
            while True:
                try:
                    sock.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
        return t_first - t_start, got_iopub


# --------------------------------------------------------------------------- kernels
LIVE = []  # KernelManagers to shut down whatever happens


def new_session(km):
    return Session(key=km.session.key, signature_scheme=km.session.signature_scheme,
                   username="bench")


def start(kernel_name, ctx, log):
    km = KernelManager(kernel_name=kernel_name)
    km.shutdown_wait_time = 5.0
    LIVE.append(km)  # before starting: a signal during start_kernel() must not leak it
    t0 = now()
    km.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t_started = now() - t0
    client = LeanClient(ctx, km.get_connection_info(session=False), new_session(km))
    try:
        t_ready, iopub_ok = client.wait_ready(t_start=t0, alive=km.is_alive)
    except BaseException:
        client.close()
        raise
    if not iopub_ok:
        log(f"  warning: {kernel_name}: no IOPub message after kernel_info")
    return km, client, t_started, t_ready


def stop(km, client=None):
    if client is not None:
        client.close()
    try:
        if km.has_kernel:
            km.shutdown_kernel(now=False)
    except Exception:
        try:
            km.shutdown_kernel(now=True)
        except Exception:
            pass
    finally:
        if km in LIVE:
            LIVE.remove(km)


def stop_all():
    for km in list(LIVE):
        stop(km)


def kernel_pid(km):
    prov = getattr(km, "provisioner", None)
    pid = getattr(prov, "pid", None) or getattr(getattr(prov, "process", None), "pid", None)
    if pid is None:
        raise BenchError("cannot find the kernel's process id")
    return pid


# --------------------------------------------------------------------------- measurements
EXEC = {"code": "pass", "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True}


def bench_startup(name, ctx, launches, log):
    ready, started = [], []
    for i in range(launches):
        km, client, t_started, t_ready = start(name, ctx, log)
        stop(km, client)
        ready.append(t_ready * 1e3)
        started.append(t_started * 1e3)
        log(f"  launch {i + 1}/{launches}: first kernel_info_reply after {t_ready * 1e3:.1f} ms"
            f" (start_kernel() returned after {t_started * 1e3:.1f} ms)")
    return {"ready_ms": ready, "start_kernel_call_ms": started}


def exec_loop(client, warmup, executes, rss_at=(), pid=None, log=print, label=""):
    """warmup + executes of 'pass' (continuing to max(rss_at)); returns raw samples."""
    total = max([warmup + executes] + list(rss_at))
    reply_ms, idle_ms, client_us = [], [], []
    rss = {}
    checkpoints = set(rss_at)
    gc.collect()
    gc.disable()
    try:
        for n in range(1, total + 1):
            t_reply, t_idle, reply, cost = client.request("execute_request", EXEC)
            st = reply["content"].get("status")
            if st != "ok":
                raise BenchError(f"execute_reply status {st!r}: {reply['content']}")
            if warmup < n <= warmup + executes:
                reply_ms.append(t_reply * 1e3)
                idle_ms.append(t_idle * 1e3)
                client_us.append(cost * 1e6)
            if n in checkpoints and pid is not None:
                rss[n] = rss_kib(pid)
            if n % 500 == 0:
                gc.enable(); gc.collect(); gc.disable()  # noqa: E702 (outside any request)
                log(f"  {label}{n}/{total} executes")
    finally:
        gc.enable()
    return {"reply_ms": reply_ms, "idle_ms": idle_ms, "client_overhead_us": client_us,
            "rss_kib": rss}


def reply_times(client, code, n):
    """n executes of code, one at a time: reply ms of each."""
    out = []
    for _ in range(n):
        t_reply, _, reply, _ = client.request("execute_request", dict(EXEC, code=code))
        if reply["content"].get("status") != "ok":
            raise BenchError(f"{code!r}: execute_reply {reply['content']}")
        out.append(t_reply * 1e3)
    return out


def bench_kernel(name, ctx, args, log):
    km, client = None, None
    try:
        km, client, _, _ = start(name, ctx, log)
        pid = kernel_pid(km)
        time.sleep(0.2)
        rss0 = rss_kib(pid)
        res = exec_loop(client, args.warmup, args.executes, args.rss_at, pid, log, f"{name}: ")
        res["rss_kib"] = {0: rss0, **res["rss_kib"]}
        res["pid"] = pid
        res["first_ipython_ms"] = reply_times(client, "%pwd", 1)[0]
        res["ipython_cell_ms"] = reply_times(client, "%pwd", args.ipython_cells)
        res["pass_with_shell_ms"] = reply_times(client, "pass", args.ipython_cells)
        return res
    finally:
        if km is not None:
            stop(km, client)


NULL_KERNEL = textwrap.dedent(r"""
    import json, sys, zmq
    from jupyter_client.session import Session
    key, shell_port, iopub_port, ready_fd = sys.argv[1].encode(), sys.argv[2], sys.argv[3], sys.argv[4]
    s = Session(key=key, username="null")
    ctx = zmq.Context()
    shell = ctx.socket(zmq.ROUTER); shell.linger = 0; shell.bind("tcp://127.0.0.1:" + shell_port)
    iopub = ctx.socket(zmq.PUB); iopub.linger = 0; iopub.bind("tcp://127.0.0.1:" + iopub_port)
    print("ready", flush=True)
    D = b"<IDS|MSG>"
    REPLY = {"execute_request": {"status": "ok", "execution_count": 1, "user_expressions": {}},
             "kernel_info_request": {"status": "ok", "protocol_version": "5.3",
                                     "implementation": "null", "implementation_version": "0",
                                     "language_info": {"name": "python"}, "banner": ""},
             "shutdown_request": {"status": "ok", "restart": False}}
    while True:
        f = shell.recv_multipart()
        i = f.index(D)
        ident, header = f[:i], json.loads(f[i + 2])
        mt = header["msg_type"]
        parent = {"header": header}
        iopub.send_multipart(s.serialize(s.msg("status", {"execution_state": "busy"}, parent)))
        shell.send_multipart(s.serialize(s.msg(mt.replace("_request", "_reply"),
                                                REPLY.get(mt, {"status": "ok"}), parent), ident))
        iopub.send_multipart(s.serialize(s.msg("status", {"execution_state": "idle"}, parent)))
        if mt == "shutdown_request":
            break
""")


def free_ports(n):
    import socket
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def bench_floor(ctx, args, log):
    key = os.urandom(16).hex()
    shell_port, iopub_port = free_ports(2)
    proc = subprocess.Popen([sys.executable, "-c", NULL_KERNEL, key, str(shell_port),
                             str(iopub_port), "0"], stdout=subprocess.PIPE, text=True)
    client = None
    try:
        if proc.stdout.readline().strip() != "ready":
            raise BenchError("null kernel did not start")
        conn = {"ip": "127.0.0.1", "transport": "tcp", "shell_port": shell_port,
                "iopub_port": iopub_port}
        client = LeanClient(ctx, conn, Session(key=key.encode(), username="bench"))
        client.wait_ready()
        return exec_loop(client, args.warmup, args.executes, log=log, label="null kernel: ")
    finally:
        if client is not None:
            client.close()
        proc.kill()
        proc.wait()


# --------------------------------------------------------------------------- report
def fmt(x, digits):
    if x is None or x != x:
        return "-"
    return f"{x:.{digits}f}"


def report(results, names, floor):
    rows = []  # (metric, [values], digits)

    def row(metric, fn, digits):
        vals = []
        for n in names:
            try:
                vals.append(fn(results[n]))
            except (KeyError, TypeError, ValueError, statistics.StatisticsError):
                vals.append(None)
        rows.append((metric, vals, digits))

    med = statistics.median
    row("start-up to kernel_info_reply, median (ms)",
        lambda r: med(r["startup"]["ready_ms"]), 1)
    row("start-up, min (ms)", lambda r: min(r["startup"]["ready_ms"]), 1)
    row("start-up, max (ms)", lambda r: max(r["startup"]["ready_ms"]), 1)
    row("execute 'pass' -> execute_reply, median (ms)",
        lambda r: med(r["exec"]["reply_ms"]), 3)
    row("execute 'pass' -> execute_reply, p99 (ms)",
        lambda r: percentile(r["exec"]["reply_ms"], 99), 3)
    row("execute 'pass' -> IOPub idle, median (ms)", lambda r: med(r["exec"]["idle_ms"]), 3)
    row("execute 'pass' -> IOPub idle, p99 (ms)",
        lambda r: percentile(r["exec"]["idle_ms"], 99), 3)
    row("first IPython cell (%pwd) -> execute_reply (ms)", lambda r: r["exec"]["first_ipython_ms"], 1)
    row("then %pwd -> execute_reply, median (ms)", lambda r: med(r["exec"]["ipython_cell_ms"]), 3)
    row("then 'pass' -> execute_reply, median (ms)", lambda r: med(r["exec"]["pass_with_shell_ms"]), 3)
    rss = lambda r, k: r["exec"]["rss_kib"][k] / 1024  # noqa: E731
    cps = sorted(k for k in next((results[n]["exec"]["rss_kib"] for n in names
                                  if "exec" in results[n]), {0: 0}))
    for k in cps:
        label = "RSS after start-up (MiB)" if k == 0 else f"RSS after {k} executes (MiB)"
        row(label, lambda r, k=k: rss(r, k), 1)
    if len(cps) >= 3:
        a, b = cps[1], cps[-1]
        row(f"RSS growth {a} -> {b} executes (MiB)", lambda r: rss(r, b) - rss(r, a), 2)
        row(f"RSS growth per 1000 executes (KiB)",
            lambda r: (r["exec"]["rss_kib"][b] - r["exec"]["rss_kib"][a]) * 1000 / (b - a), 1)

    ratio_col = len(names) == 2
    pair = sorted(names) == ["offload", "python3"]
    ratio_name = ("ratio (ipykernel/offload)" if pair
                  else f"ratio ({names[1]}/{names[0]})" if ratio_col else "")
    header = ["metric"] + names + ([ratio_name] if ratio_col else [])
    table = []
    for metric, vals, digits in rows:
        line = [metric] + [fmt(v, digits) for v in vals]
        if ratio_col:
            by = dict(zip(names, vals))
            o, i = (by["offload"], by["python3"]) if pair else (vals[0], vals[1])
            line.append(fmt(i / o, 2) if (o and i is not None and o > 0 and i >= 0
                                           and "growth" not in metric) else "-")
        table.append(line)
    widths = [max(len(r[c]) for r in [header] + table) for c in range(len(header))]
    out = []
    out.append("  ".join(h.ljust(w) if c == 0 else h.rjust(w)
                         for c, (h, w) in enumerate(zip(header, widths))))
    out.append("  ".join("-" * w for w in widths))
    for r in table:
        out.append("  ".join(v.ljust(w) if c == 0 else v.rjust(w)
                             for c, (v, w) in enumerate(zip(r, widths))))
    print("\n".join(out))

    print()
    print("client overhead (outside the timed region; serialize+sign before send, "
          "verify+parse after):")
    for n in names:
        if "exec" in results[n]:
            c = results[n]["exec"]["client_overhead_us"]
            print(f"  {n:>10}: median {med(c):.0f} us per execute "
                  f"(p99 {percentile(c, 99):.0f} us)")
    if floor:
        print(f"  null kernel (Python ZeroMQ responder, same client, same loop): "
              f"reply median {med(floor['reply_ms']):.3f} ms, p99 "
              f"{percentile(floor['reply_ms'], 99):.3f} ms; idle median "
              f"{med(floor['idle_ms']):.3f} ms; client overhead median "
              f"{med(floor['client_overhead_us']):.0f} us")


# --------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Benchmark the offload Jupyter kernel against ipykernel.",
        epilog="See the module docstring (head of this file) for what is measured and how.")
    ap.add_argument("--kernels", default="offload,python3",
                    help="comma-separated kernelspec names (default: offload,python3)")
    ap.add_argument("--executes", type=int, default=1000,
                    help="timed execute_requests per kernel (default: 1000)")
    ap.add_argument("--warmup", type=int, default=50,
                    help="untimed execute_requests first (default: 50)")
    ap.add_argument("--ipython-cells", type=int, default=200,
                    help="timed executes each of %%pwd and pass after the first IPython cell (default 200)")
    ap.add_argument("--launches", type=int, default=10,
                    help="launches per kernel for start-up time (default: 10; 0 skips)")
    ap.add_argument("--rss-at", default="200,3000",
                    help="executes after which to read RSS (default: 200,3000)")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip the null-kernel floor measurement")
    ap.add_argument("--json", metavar="PATH", help="also write raw numbers as JSON")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args(argv)
    args.rss_at = sorted({int(x) for x in args.rss_at.split(",") if x.strip()})
    names = [k.strip() for k in args.kernels.split(",") if k.strip()]
    if not names:
        ap.error("--kernels is empty")

    def log(msg):
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    ksm = KernelSpecManager()
    specs = {}
    for n in names:
        try:
            specs[n] = ksm.get_kernel_spec(n)
        except NoSuchKernel:
            found = ", ".join(sorted(ksm.find_kernel_specs()))
            hint = " (build it: scripts/setup)" if n == "offload" else ""
            print(f"bench: no kernelspec {n!r}{hint}; found: {found}", file=sys.stderr)
            return 2

    # SIGTERM/SIGHUP -> KeyboardInterrupt so that the finally below shuts kernels down.
    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    import ipykernel  # noqa: F401 (version in the report)
    import jupyter_client
    env = {"python": sys.version.split()[0], "platform": platform.platform(),
           "cpus": os.cpu_count(), "pyzmq": zmq.__version__, "libzmq": zmq.zmq_version(),
           "jupyter_client": jupyter_client.__version__,
           "ipykernel": ipykernel.__version__,
           "kernelspecs": {n: {"argv": specs[n].argv, "display_name": specs[n].display_name}
                           for n in names},
           "args": {k: v for k, v in vars(args).items()},
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    print(f"# offload kernel benchmark — {env['date']}, {env['platform']}, {env['cpus']} CPUs, "
          f"python {env['python']}, libzmq {env['libzmq']}, jupyter_client "
          f"{env['jupyter_client']}, ipykernel {env['ipykernel']}")
    for n in names:
        print(f"#   {n}: {specs[n].display_name}: {' '.join(specs[n].argv)}")
    print(f"# {args.launches} launches; {args.warmup} warm-up + {args.executes} timed "
          f"executes of 'pass'; RSS at {args.rss_at} executes", flush=True)

    ctx = zmq.Context()
    results = {n: {} for n in names}
    floor = None
    rc = 0
    try:
        for n in names:
            if args.launches > 0:
                log(f"[{n}] start-up x{args.launches}")
                results[n]["startup"] = bench_startup(n, ctx, args.launches, log)
        for n in names:
            log(f"[{n}] execute round trips + RSS")
            results[n]["exec"] = bench_kernel(n, ctx, args, log)
        if not args.no_floor:
            log("[null kernel] execute round trips")
            floor = bench_floor(ctx, args, log)
    except KeyboardInterrupt as e:
        print(f"bench: interrupted ({e}); shutting kernels down", file=sys.stderr)
        rc = 130
    except (BenchError, RuntimeError, zmq.ZMQError) as e:
        print(f"bench: error: {type(e).__name__}: {e}", file=sys.stderr)
        rc = 1
    finally:
        stop_all()

    print()
    report(results, names, floor)
    if args.json:
        data = {"env": env, "results": results, "null_kernel": floor, "exit_status": rc}
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1, default=str)
        print(f"\nraw numbers: {args.json}")
    ctx.destroy(linger=0)
    return rc


if __name__ == "__main__":
    sys.exit(main())
