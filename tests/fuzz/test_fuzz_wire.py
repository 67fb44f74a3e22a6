"""The Jupyter wire protocol against a running kernel, fuzzed.

Batches of messages that a well-behaved client never sends go to the shell,
control and stdin sockets over raw ZeroMQ: random frames, bad or missing
signatures, truncated / huge / deeply nested JSON, content fields of the wrong
type, unknown and random msg_types, missing parts and extra buffers, replays of
messages already sent. After every batch the kernel must still be alive and
answer a kernel_info_request; every few batches it must also run code
correctly (execute and control). No other assertion: the protocol says what a
reply should look like, test_protocol.py and test_robustness.py check that;
this looks for crashes and hangs.

Messages are built from Random(seed) (the key differs per kernel, the
mutations do not), so OFFLOAD_FUZZ_SEED=<n> replays a run.
"""

from __future__ import annotations

import json
import random
import uuid

import pytest
import zmq

from fuzzlib import Budget, announce, seed_ids, seeds
from kernel_testlib import DELIM, RawClient, check_died, execute_content, new_header, start_kernel

# Requests the kernel knows (shutdown_request is left out: a signed one is obeyed,
# which ends the run without being a finding) and names it does not.
MSG_TYPES = [
    "kernel_info_request", "execute_request", "complete_request", "inspect_request",
    "is_complete_request", "history_request", "comm_info_request", "comm_open_request",
    "comm_msg", "comm_close", "interrupt_request", "input_reply", "debug_request",
    "execute_reply", "status", "", "x" * 300, "kernel_info_request\x00junk", "exécute_request",
]

# Code for execute_requests: harmless, quick, and never waiting for stdin.
CODES = ["1+1", "print('fuzz')", "x = [0] * 10", "raise ValueError('fuzz')", "def f(:", "%lsmagic",
         "import sys; sys.stdout.write('a' * 10000)", "", "\x00", "'\udcff'"]

# Values of the wrong type for content fields.
WRONG = [None, True, 0, -1, 2**64, 1.5e308, "", "x" * 1000, [], [1, "a"], {}, {"a": {"b": []}}, "\ud800"]

FIELDS = {
    "execute_request": ["code", "silent", "store_history", "user_expressions", "allow_stdin", "stop_on_error"],
    "complete_request": ["code", "cursor_pos"],
    "inspect_request": ["code", "cursor_pos", "detail_level"],
    "is_complete_request": ["code"],
    "history_request": ["output", "raw", "hist_access_type", "session", "start", "stop", "n", "pattern", "unique"],
    "comm_info_request": ["target_name"],
    "comm_open_request": ["comm_id", "target_name", "data"],
    "comm_msg": ["comm_id", "data"],
    "input_reply": ["value"],
}


def good_content(r: random.Random, msg_type: str) -> dict:
    """Content the protocol allows for msg_type (the base the mutations start from)."""
    if msg_type == "execute_request":
        return execute_content(r.choice(CODES), allow_stdin=False, silent=r.random() < 0.3)
    if msg_type in ("complete_request", "inspect_request"):
        code = r.choice(CODES)
        return {"code": code, "cursor_pos": r.randint(0, len(code)), "detail_level": r.choice([0, 1])}
    if msg_type == "is_complete_request":
        return {"code": r.choice(CODES)}
    if msg_type == "history_request":
        return {"output": False, "raw": True, "hist_access_type": r.choice(["tail", "range", "search"]),
                "n": r.randint(0, 5), "session": 0, "start": 0, "stop": 3, "pattern": "*"}
    if msg_type == "comm_open_request":
        return {"comm_id": uuid.uuid4().hex, "target_name": "nope", "data": {}}
    return {}


def nested_json(depth: int) -> bytes:
    """Deeply nested arrays: a recursive parser's stack is what this probes."""
    return b'{"code": ' + b"[" * depth + b"]" * depth + b"}"


def mutate(r: random.Random, raw: RawClient, sent: list[list[bytes]]) -> list[bytes]:
    """One message's frames, made wrong in one (or no) way."""
    msg_type = r.choice(MSG_TYPES)
    content = good_content(r, msg_type)
    header = new_header(msg_type, session=r.choice(["fuzz", "", "\u2603" * 3]))
    how = r.randrange(16)
    if how == 0:  # random frames
        return [r.randbytes(r.choice([0, 1, 9, 64, 300])) for _ in range(r.randint(1, 8))]
    if how == 1:  # a valid-looking message with a wrong, missing or truncated signature
        frames, _ = raw.frames(msg_type, content, header=header)
        frames[1] = r.choice([b"", b"0" * 64, frames[1][:10], frames[1] + b"00", r.randbytes(64)])
        return frames
    if how == 2:  # a content field of the wrong type
        fields = FIELDS.get(msg_type) or ["code"]
        content[r.choice(fields)] = r.choice(WRONG)
    elif how == 3:  # header fields of the wrong type
        header[r.choice(list(header))] = r.choice(WRONG)
    elif how == 4:  # truncated JSON in a random part, correctly signed
        frames, _ = raw.frames(msg_type, content, header=header)
        j = r.randint(2, 5)
        frames[j] = frames[j][: r.randint(0, max(0, len(frames[j]) - 1))]
        frames[1] = raw.sign(frames[2:6])
        return frames
    elif how == 5:  # deeply nested JSON, correctly signed
        frames, _ = raw.frames(msg_type, nested_json(r.choice([100, 3000, 100_000])), header=header)
        return frames
    elif how == 6:  # a huge string field
        content["code"] = "#" + "x" * r.choice([100_000, 3_000_000])
    elif how == 7:  # a replay of something already sent
        if sent:
            return list(r.choice(sent))
    elif how == 8:  # parts missing after the signature, or extra buffers
        frames, _ = raw.frames(msg_type, content, header=header)
        if r.random() < 0.5:
            cut = r.randint(2, 5)
            frames = frames[:cut]
            if cut > 2:
                frames[1] = raw.sign(frames[2:])
        else:
            frames += [r.randbytes(r.randint(0, 100)) for _ in range(r.randint(1, 5))]
        return frames
    elif how == 9:  # identities before the delimiter, or no delimiter at all
        frames, _ = raw.frames(msg_type, content, header=header, ids=[r.randbytes(8) for _ in range(r.randint(1, 5))])
        if r.random() < 0.3:
            frames.remove(DELIM)
        return frames
    elif how == 10:  # JSON that is not an object where an object is due (signed)
        part = r.choice([b"[]", b"null", b"1", b'"s"', b"\xff\xfe", b"{\"a\":1}{"])
        frames, _ = raw.frames(msg_type, content, header=header)
        frames[r.randint(2, 5)] = part
        frames[1] = raw.sign(frames[2:6])
        return frames
    elif how == 11:  # a parent header or metadata of the wrong shape (signed)
        frames, _ = raw.frames(msg_type, content, header=header,
                               parent=json.dumps(r.choice(WRONG[:12])).encode(), metadata=json.dumps(r.choice(WRONG[:12])).encode())
        return frames
    frames, _ = raw.frames(msg_type, content, header=header)
    return frames


def drain(sock: zmq.Socket) -> None:
    while sock.poll(0):
        sock.recv_multipart()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [s for _, s in seeds()], ids=seed_ids())
def test_wire_fuzz_keeps_kernel_alive(seed, tmp_path):
    announce("test_fuzz_wire", seed)
    r = random.Random(seed)
    k = start_kernel(tmp_path / "kernel.stderr")
    raw = k.raw()
    socks = {ch: raw.socket(ch) for ch in ("shell", "control", "stdin")}
    sent: list[list[bytes]] = []
    batches = msgs = 0
    try:
        budget = Budget()
        while budget:
            batch = []
            for _ in range(r.randint(5, 25)):
                ch = r.choice(["shell", "shell", "control", "stdin"])
                frames = mutate(r, raw, sent)
                batch.append((ch, frames))
                socks[ch].send_multipart(frames)
                if len(frames) > 2 and sum(map(len, frames)) < 100_000:
                    sent.append(frames)
            sent[:] = sent[-50:]
            msgs += len(batch)
            batches += 1
            what = f"batch {batches} of seed {seed}: " + "; ".join(
                f"{ch} {[f[:80] for f in frames][:7]}" for ch, frames in batch)[:6000]
            try:
                check_died(k.kc)
                raw.kernel_info(socks["shell"], timeout=60)
                raw.kernel_info(socks["control"], timeout=60)
                if batches % 4 == 0:
                    k.assert_alive(f"fuzz batch {batches}")
            except AssertionError as e:
                raise AssertionError(f"{e}\nafter {what}\n--- kernel stderr ---\n{k.log()[-3000:]}") from None
            for s in socks.values():
                drain(s)
            raw.other = []
        k.assert_alive("the whole run")
        print(f"{msgs} messages in {batches} batches")
    finally:
        raw.close()
        k.shutdown()
