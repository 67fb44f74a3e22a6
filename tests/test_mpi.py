"""MPI with offload arrays (issue 24, item 4): `mpirun -n 2` (Open MPI) with mpi4py.

Each rank takes the device of its node-local rank ($OMPI_COMM_WORLD_LOCAL_RANK
modulo the CPU devices here). Upper-case Send/Recv/Allreduce go through
mpi4py's DLPack path, which asks for copy=False: on a CPU device offload hands
out its own (mapped) memory, so Recv writes the array in place; lower-case
send/recv pickle. The CUDA-aware path (device pointers through DLPack) needs a
GPU and a CUDA-aware MPI and is not tested here.

Open MPI refuses to run as root without --allow-run-as-root (CI runs as root)
and more ranks than cores without --oversubscribe; the run has a timeout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from offload_fixtures import PYDIR, ol  # noqa: F401  (fixtures)

pytest.importorskip("mpi4py", reason="mpi4py is not installed (scripts/setup installs it)")
MPIRUN = shutil.which("mpirun")

RANK_SCRIPT = '''
import json, sys
import numpy as np
import offload as ol
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
seed = int(sys.argv[1])
rng = np.random.default_rng(seed)  # the same stream in both ranks
a = rng.standard_normal(1000)
b = rng.integers(-1000, 1000, size=(30, 7)).astype(np.int32)
out = {"rank": rank, "local_rank": ol.local_rank(), "device": ol.default_device().filter_string}
checks = {}

if rank == 0:
    x = ol.asarray(a) * 2.0          # queued work: the send must wait for it
    comm.Send(x, dest=1, tag=1)      # DLPack, copy=False: the device's memory itself
    comm.send(ol.asarray(b), dest=1, tag=2)   # pickled
    y = ol.empty(1000)
    comm.Recv(y, source=1, tag=3)
    checks["recv_in_place"] = bool(np.array_equal(ol.asnumpy(y), 2.0 * a + 1.0))
    z = comm.recv(source=1, tag=4)
    checks["recv_pickled"] = [type(z).__name__, z.device == ol.default_device(),
                              bool(np.array_equal(ol.asnumpy(z), b.T * 3))]
else:
    x = ol.zeros(1000)
    comm.Recv(x, source=0, tag=1)    # into the array's own memory
    x += 1.0                          # a kernel on it afterwards sees what MPI wrote
    comm.Send(x, dest=0, tag=3)
    m = comm.recv(source=0, tag=2)
    comm.send((m * 3).T, dest=0, tag=4)

# nonblocking, on a view-free array, and a collective with both buffers on the device
v = ol.asarray(a + rank)
w = ol.empty(1000)
reqs = [comm.Isend(v, dest=1 - rank, tag=5), comm.Irecv(w, source=1 - rank, tag=5)]
MPI.Request.Waitall(reqs)
checks["isend_irecv"] = bool(np.array_equal(ol.asnumpy(w), a + (1 - rank)))
s = ol.empty(1000)
comm.Allreduce(v, s, op=MPI.SUM)
checks["allreduce"] = bool(np.allclose(ol.asnumpy(s), 2 * a + 1, rtol=1e-14))
t = comm.bcast(ol.asarray(b) if rank == 0 else None, root=0)
checks["bcast"] = bool(np.array_equal(ol.asnumpy(t), b)) and t.device == ol.default_device()
out["checks"] = checks
everything = comm.gather(out, root=0)
if rank == 0:
    print("RESULT" + json.dumps(everything), flush=True)
'''


@pytest.mark.timeout(150)
@pytest.mark.skipif(MPIRUN is None, reason="mpirun is not installed (scripts/setup installs openmpi-bin)")
def test_two_ranks_on_the_cpu_devices(ol, tmp_path):
    script = tmp_path / "mpi_offload.py"
    script.write_text(RANK_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PYDIR), os.environ.get("PYTHONPATH", "")]))
    env.pop("OFFLOAD_DEVICE", None)
    # containers often forbid the cross-memory attach Open MPI's shared memory uses
    env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    seed = int(np.random.default_rng().integers(1 << 31))
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-n", "2",
           sys.executable, str(script), str(seed)]
    p = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"seed {seed}\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    ranks = json.loads(line[len("RESULT"):])
    cpus = [d.filter_string for d in ol.get_devices(device_type="cpu")]
    assert [(r["rank"], r["local_rank"], r["device"]) for r in ranks] == \
        [(0, 0, cpus[0]), (1, 1, cpus[1 % len(cpus)])], ranks
    for r in ranks:
        bad = {k: v for k, v in r["checks"].items() if v is not True and v != ["ndarray", True, True]}
        assert not bad, f"seed {seed}, rank {r['rank']}: {bad}"
