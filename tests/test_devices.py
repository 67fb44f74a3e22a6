"""offload devices: discovery, properties, filter strings, the default device,
errors (DESIGN.md, "The Python surface": Devices).

Runs the standalone extension (<builddir>/python/offload*.so) in the pytest
process; environment-dependent cases (OFFLOAD_DEVICE, two PoCL devices, no
OpenCL platform at all) run in a child python. CI's device is PoCL's CPU
device, opencl:cpu:0.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from offload_fixtures import (  # noqa: F401  (fixtures)
    CPU_FILTER,
    TWO_CPUS_ENV,
    cpu,
    empty_icd_dir,
    has_cuda_driver,
    ol,
    restore_default,
    run_python,
)

DEVICE_ATTRS = {
    # name: type
    "name": str,
    "vendor": str,
    "backend": str,
    "device_type": str,
    "filter_string": str,
    "driver_version": str,
    "version": str,
    "max_compute_units": int,
    "max_work_group_size": int,
    "max_work_item_sizes": tuple,
    "global_mem_size": int,
    "local_mem_size": int,
    "max_mem_alloc_size": int,
    "has_fp64": bool,
    "has_fp16": bool,
    "has_atomic64": bool,
    "il_version": str,
}


# ---------------------------------------------------------------- the module


def test_module_surface(ol):
    for name in (
        "get_devices", "Device", "default_device", "set_default_device", "lsplatform",
        "asarray", "empty", "zeros", "ones", "full", "arange", "empty_like", "zeros_like",
        "asnumpy", "from_dlpack", "ndarray",
    ):
        assert hasattr(ol, name), f"offload.{name} is missing"
    for name in ("DeviceNotFoundError", "ExecutionPlacementError", "DeviceError"):
        cls = getattr(ol, name, None)
        assert isinstance(cls, type) and issubclass(cls, Exception), f"offload.{name} is not an exception class"
        assert cls.__name__ == name


def test_error_classes_are_distinct(ol):
    # A malformed filter (ValueError) must be distinguishable from "no such device".
    assert not issubclass(ValueError, ol.DeviceNotFoundError)
    assert ol.DeviceNotFoundError is not ol.ExecutionPlacementError


# ---------------------------------------------------------------- discovery


def test_get_devices_finds_the_cpu(ol, cpu):
    devs = ol.get_devices()
    assert isinstance(devs, list)
    assert devs, "get_devices() is empty on a machine with PoCL"
    assert all(isinstance(d, ol.Device) for d in devs)
    assert CPU_FILTER in [d.filter_string for d in devs]


def test_get_devices_is_stable(ol):
    a = [d.filter_string for d in ol.get_devices()]
    b = [d.filter_string for d in ol.get_devices()]
    assert a == b


def test_filter_strings_are_unique_and_canonical(ol):
    fs = [d.filter_string for d in ol.get_devices()]
    assert len(set(fs)) == len(fs), fs
    for d in ol.get_devices():
        assert re.fullmatch(r"(opencl|cuda):(cpu|gpu|accelerator|custom):\d+", d.filter_string), d.filter_string
        assert d.filter_string == f"{d.backend}:{d.device_type}:{d.filter_string.rsplit(':', 1)[1]}"


def test_get_devices_order_gpus_first_then_cpus(ol):
    types = [d.device_type for d in ol.get_devices()]
    if "gpu" in types and "cpu" in types:
        last_gpu = max(i for i, t in enumerate(types) if t == "gpu")
        first_cpu = min(i for i, t in enumerate(types) if t == "cpu")
        assert last_gpu < first_cpu, types
    cuda_gpus = [i for i, d in enumerate(ol.get_devices()) if d.backend == "cuda" and d.device_type == "gpu"]
    ocl_gpus = [i for i, d in enumerate(ol.get_devices()) if d.backend == "opencl" and d.device_type == "gpu"]
    if cuda_gpus and ocl_gpus:
        assert max(cuda_gpus) < min(ocl_gpus)


def test_get_devices_by_backend(ol, cpu):
    ocl = ol.get_devices(backend="opencl")
    assert CPU_FILTER in [d.filter_string for d in ocl]
    assert all(d.backend == "opencl" for d in ocl)
    cuda = ol.get_devices(backend="cuda")
    assert all(d.backend == "cuda" for d in cuda)
    assert len(ocl) + len(cuda) == len(ol.get_devices())
    if not has_cuda_driver():
        assert cuda == []
    # case-insensitive, as filter strings are
    assert [d.filter_string for d in ol.get_devices(backend="OpenCL")] == [d.filter_string for d in ocl]


def test_get_devices_by_type(ol, cpu):
    cpus = ol.get_devices(device_type="cpu")
    assert CPU_FILTER in [d.filter_string for d in cpus]
    assert all(d.device_type == "cpu" for d in cpus)
    gpus = ol.get_devices(device_type="gpu")
    assert all(d.device_type == "gpu" for d in gpus)
    if not has_cuda_driver() and not any(d.device_type == "gpu" for d in ol.get_devices()):
        assert gpus == []
    both = ol.get_devices(backend="opencl", device_type="cpu")
    assert CPU_FILTER in [d.filter_string for d in both]
    assert all(d.backend == "opencl" and d.device_type == "cpu" for d in both)
    assert ol.get_devices(backend="opencl", device_type="cpu")[0].filter_string == "opencl:cpu:0"


def test_get_devices_by_keyword_and_position(ol):
    assert [d.filter_string for d in ol.get_devices("opencl")] == [
        d.filter_string for d in ol.get_devices(backend="opencl")
    ]
    assert [d.filter_string for d in ol.get_devices("opencl", "cpu")] == [
        d.filter_string for d in ol.get_devices(backend="opencl", device_type="cpu")
    ]


@pytest.mark.parametrize("kw", [{"backend": "foo"}, {"device_type": "tpu"}, {"backend": "cpu"}, {"device_type": "cuda"}])
def test_get_devices_rejects_unknown_names(ol, kw):
    with pytest.raises(ValueError):
        ol.get_devices(**kw)


# ---------------------------------------------------------------- Device attributes


def test_cpu_device_attributes(ol, cpu):
    d = cpu
    for attr, typ in DEVICE_ATTRS.items():
        assert hasattr(d, attr), f"Device.{attr} is missing"
        v = getattr(d, attr)
        if typ is int:
            assert isinstance(v, int) and not isinstance(v, bool), f"Device.{attr} = {v!r} is not an int"
        else:
            assert isinstance(v, typ), f"Device.{attr} = {v!r} is not a {typ.__name__}"
    assert d.name.strip(), "empty device name"
    assert d.vendor.strip(), "empty vendor"
    assert d.backend == "opencl"
    assert d.device_type == "cpu"
    assert d.filter_string == CPU_FILTER
    assert d.version.startswith("OpenCL"), d.version
    # PoCL, or Intel's CPU runtime where it is installed (it takes SPIR-V, so it comes first)
    pocl = "pocl" in d.version.lower() or "pocl" in d.name.lower() or "pthread" in d.name.lower()
    assert pocl or (d.il_version.startswith("SPIR-V") and "Intel" in _platform_of(ol, d)), (d.name, d.version)
    assert d.driver_version.strip()
    assert d.max_compute_units >= 1
    assert d.max_work_group_size >= 1
    assert len(d.max_work_item_sizes) == 3
    assert all(isinstance(s, int) and s >= 1 for s in d.max_work_item_sizes), d.max_work_item_sizes
    assert max(d.max_work_item_sizes) <= max(d.max_work_group_size, max(d.max_work_item_sizes))
    assert d.global_mem_size > 0
    assert d.local_mem_size > 0
    assert 0 < d.max_mem_alloc_size <= d.global_mem_size
    # PoCL's CPU device: fp64 and 64-bit atomics (cl_khr_fp64, cl_khr_int64_*_atomics)
    assert d.has_fp64 is True
    assert d.has_atomic64 is True


def _platform_of(ol, d) -> str:
    """The platform line of d in lsplatform -v's text."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ol.lsplatform(1)
    platform = ""
    for line in buf.getvalue().splitlines():
        if line.startswith("Platform:"):
            platform = line
        elif line.strip().startswith(d.filter_string + " "):
            return platform
    return ""


@pytest.fixture(scope="module")
def pocl(ol):
    """PoCL's CPU device: the one clinfo (the system's ICD loader) sees too."""
    for d in ol.get_devices(device_type="cpu"):
        if "Portable Computing Language" in _platform_of(ol, d):
            return d
    pytest.fail(f"no PoCL CPU device (apt install pocl-opencl-icd): {ol.get_devices()!r}", pytrace=False)


def test_cpu_device_attributes_match_clinfo(pocl):
    cpu = pocl
    clinfo = shutil.which("clinfo")
    if clinfo is None:
        pytest.skip("clinfo is not installed (apt install clinfo): no independent view of the device")
    out = subprocess.run([clinfo, "--raw"], capture_output=True, text=True, timeout=30).stdout
    # "[POCL/0]    CL_DEVICE_NAME    pthread-..." (older clinfo: "[P0/D0] ...")
    def raw(key):
        vals = re.findall(rf"^\[[^\]]+\]\s+{key}\s+(.*)$", out, re.M)
        return [v.strip() for v in vals]

    names = raw("CL_DEVICE_NAME")
    assert cpu.name in names, (cpu.name, names)
    i = names.index(cpu.name)
    cu = raw("CL_DEVICE_MAX_COMPUTE_UNITS")
    if cu:
        assert cpu.max_compute_units == int(cu[i])
    # (not the memory sizes: PoCL derives them from the memory free when it starts,
    # which differs between two processes on machines whose memory grows on use)
    wg = raw("CL_DEVICE_MAX_WORK_GROUP_SIZE")
    if wg:
        assert cpu.max_work_group_size == int(wg[i])
    lm = raw("CL_DEVICE_LOCAL_MEM_SIZE")
    if lm:
        assert cpu.local_mem_size == int(lm[i])


def test_every_device_has_sane_attributes(ol):
    for d in ol.get_devices():
        for attr in DEVICE_ATTRS:
            assert hasattr(d, attr), f"{d!r}: .{attr} is missing"
        assert d.backend in ("opencl", "cuda")
        assert d.device_type in ("cpu", "gpu", "accelerator", "custom")
        assert d.name
        assert len(d.max_work_item_sizes) == 3
        assert d.global_mem_size > 0
        assert isinstance(d.has_fp64, bool) and isinstance(d.has_fp16, bool) and isinstance(d.has_atomic64, bool)
        if d.backend == "cuda":
            assert d.il_version == ""


def test_device_repr(ol, cpu):
    assert repr(cpu) == "Device(opencl:cpu:0)"
    assert repr(ol.Device("cpu")) == "Device(opencl:cpu:0)"
    for d in ol.get_devices():
        assert repr(d) == f"Device({d.filter_string})"
    assert str(cpu)  # something readable


def test_device_equality_and_hash(ol, cpu):
    a = ol.Device("opencl:cpu:0")
    b = ol.Device("cpu")
    assert a == b == cpu
    assert hash(a) == hash(b)
    assert len({a, b, cpu}) == 1
    assert not (a != b)
    a == "opencl:cpu:0"  # comparing with other types must not raise  # noqa: B015
    assert (a == 3) is False
    assert a != 3


def test_device_from_every_filter_string(ol):
    for d in ol.get_devices():
        assert ol.Device(d.filter_string) == d
        assert ol.Device(d.filter_string).filter_string == d.filter_string


def test_device_none_is_default(ol):
    assert ol.Device() == ol.default_device()
    assert ol.Device(None) == ol.default_device()


def test_device_rejects_non_strings(ol):
    with pytest.raises(TypeError):
        ol.Device(3.5)
    with pytest.raises(TypeError):
        ol.Device(["cpu"])


# ---------------------------------------------------------------- filter strings

# On CI (one device, PoCL's CPU) each of these resolves to opencl:cpu:0.
VALID_CPU_FILTERS = [
    "cpu",
    "opencl",
    "opencl:cpu",
    "opencl:cpu:0",
    "cpu:0",
    "0",
    "gpu,cpu",
    "cuda,cpu",
    "cuda,opencl",
    " CPU ",
    "CPU",
    "OpenCL:CPU:0",
    "opencl : cpu : 0",
    "opencl:cpu:0,cuda",
    "gpu, cpu",
    "cuda:gpu:0,opencl:cpu:0",
]

# Well-formed, but nothing matches on a machine whose only device is opencl:cpu:0.
NO_MATCH_FILTERS = [
    "gpu",
    "cuda",
    "cuda:gpu:0",
    "cpu:5",
    "gpu:1",
    "opencl:gpu",
    "opencl:cpu:1",
    "1",
    "gpu,cuda",
]

# Malformed: ValueError (never DeviceNotFoundError), on any machine.
MALFORMED_FILTERS = [
    "",
    "   ",
    "foo",
    "gpu:x:y:z",
    "cpu::",
    "cuda:cpu:0:1",
    ":::",
    "cpu:-1",
    "cpu:gpu",
    "opencl:cuda",
    "cpu:0:0",
    "cpu:1.5",
    "cpu,foo",
    "gpu;cpu",
]


def _only_cpu(ol) -> bool:
    return [d.filter_string for d in ol.get_devices()] == [CPU_FILTER]


@pytest.mark.parametrize("f", VALID_CPU_FILTERS)
def test_valid_filter_selects_cpu(ol, cpu, f):
    if not _only_cpu(ol):
        pytest.skip("the table is for a machine whose only device is opencl:cpu:0 (CI)")
    d = ol.Device(f)
    assert d.filter_string == CPU_FILTER, f"Device({f!r}) = {d!r}"
    assert d == cpu


@pytest.mark.parametrize("f", NO_MATCH_FILTERS)
def test_filter_without_match_raises_device_not_found(ol, cpu, f):
    if not _only_cpu(ol):
        pytest.skip("the table is for a machine whose only device is opencl:cpu:0 (CI)")
    with pytest.raises(ol.DeviceNotFoundError) as ei:
        ol.Device(f)
    msg = str(ei.value)
    assert CPU_FILTER in msg, f"the error does not list the devices that exist: {msg!r}"
    assert f.strip() in msg or repr(f) in msg, f"the error does not name the filter {f!r}: {msg!r}"


def test_device_not_found_says_what_to_install(ol, cpu):
    if not _only_cpu(ol):
        pytest.skip("for a machine without GPUs")
    with pytest.raises(ol.DeviceNotFoundError) as ei:
        ol.Device("gpu")
    msg = str(ei.value).lower()
    assert "install" in msg or "driver" in msg, f"no hint on what to install: {msg!r}"


@pytest.mark.parametrize("f", MALFORMED_FILTERS)
def test_malformed_filter_raises_value_error(ol, cpu, f):
    with pytest.raises(ValueError) as ei:
        ol.Device(f)
    assert not isinstance(ei.value, ol.DeviceNotFoundError), f"{f!r}: a malformed filter is not 'no device'"
    msg = str(ei.value)
    assert msg, "empty error message"
    assert CPU_FILTER in msg, f"the ValueError does not list the devices that exist: {msg!r}"


@pytest.mark.parametrize("f", ["foo", "cpu::", "gpu:x:y:z"])
def test_malformed_filter_everywhere(ol, f):
    """Every entry point that takes a filter checks its grammar the same way."""
    with pytest.raises(ValueError):
        ol.set_default_device(f)
    with pytest.raises(ValueError):
        ol.zeros(3, device=f)
    with pytest.raises(ValueError):
        ol.asarray([1, 2], device=f)


def test_no_match_everywhere(ol, cpu):
    if not _only_cpu(ol):
        pytest.skip("for a machine without GPUs")
    with pytest.raises(ol.DeviceNotFoundError):
        ol.zeros(3, device="gpu")
    with pytest.raises(ol.DeviceNotFoundError):
        ol.asarray([1, 2], device="cuda")
    with pytest.raises(ol.DeviceNotFoundError):
        ol.set_default_device("gpu")


# ---------------------------------------------------------------- the default device


def test_default_device_is_cpu_here(ol, cpu):
    if not _only_cpu(ol):
        pytest.skip("for a machine whose only device is opencl:cpu:0")
    assert ol.default_device() == cpu
    assert ol.default_device().filter_string == CPU_FILTER


def test_default_device_prefers_gpu(ol):
    devs = ol.get_devices()
    gpus = [d for d in devs if d.device_type == "gpu"]
    if not gpus:
        pytest.skip("no GPU here")
    r = run_python("import offload\nresult['f'] = offload.default_device().filter_string", env={"OFFLOAD_DEVICE": None})
    assert r["f"] == gpus[0].filter_string


def test_set_default_device_with_filter_and_device(ol, cpu, restore_default):
    ol.set_default_device("cpu")
    assert ol.default_device() == cpu
    ol.set_default_device(cpu)
    assert ol.default_device() == cpu
    assert ol.zeros(4).device == cpu


def test_set_default_device_failure_keeps_default(ol, cpu, restore_default):
    ol.set_default_device(cpu)
    with pytest.raises(ValueError):
        ol.set_default_device("cpu::")
    assert ol.default_device() == cpu
    if _only_cpu(ol):
        with pytest.raises(ol.DeviceNotFoundError):
            ol.set_default_device("cuda:gpu:0")
        assert ol.default_device() == cpu


def test_set_default_device_rejects_other_types(ol, restore_default):
    with pytest.raises(TypeError):
        ol.set_default_device(1.5)


# ---------------------------------------------------------------- two devices (PoCL twice)


def test_two_pocl_devices_are_discovered():
    r = run_python(
        """
        import offload
        result['devs'] = [d.filter_string for d in offload.get_devices(backend='opencl')]
        result['cpu1'] = offload.Device('cpu:1').filter_string
        result['idx1'] = offload.Device('opencl:1').filter_string
        result['ne'] = offload.Device('cpu:0') != offload.Device('cpu:1')
        result['eq'] = offload.Device('cpu:1') == offload.Device('opencl:cpu:1')
        result['fallback'] = offload.Device('gpu:3,cpu:1,cpu:0').filter_string
        try:
            offload.Device('cpu:2')
        except offload.DeviceNotFoundError as e:
            result['notfound'] = str(e)
        """,
        env=TWO_CPUS_ENV,
    )
    assert r["devs"] == ["opencl:cpu:0", "opencl:cpu:1"]
    assert r["cpu1"] == "opencl:cpu:1"
    assert r["idx1"] == "opencl:cpu:1"
    assert r["ne"] and r["eq"]
    assert r["fallback"] == "opencl:cpu:1"
    assert "opencl:cpu:0" in r["notfound"] and "opencl:cpu:1" in r["notfound"], r["notfound"]


def test_offload_device_env_is_honoured():
    r = run_python(
        """
        import offload
        result['default'] = offload.default_device().filter_string
        result['zeros'] = offload.zeros(3).device.filter_string
        result['asarray'] = offload.asarray([1, 2, 3]).device.filter_string
        """,
        env={**TWO_CPUS_ENV, "OFFLOAD_DEVICE": "cpu:1"},
    )
    assert r == {**r, "default": "opencl:cpu:1", "zeros": "opencl:cpu:1", "asarray": "opencl:cpu:1"}


def test_offload_device_env_fallback_list():
    r = run_python(
        "import offload\nresult['default'] = offload.default_device().filter_string",
        env={"OFFLOAD_DEVICE": "cuda:gpu:7,opencl:cpu"},
    )
    assert r["default"] == "opencl:cpu:0"


def test_offload_device_env_overridden_by_set_default_device():
    r = run_python(
        """
        import offload
        offload.set_default_device('cpu:0')
        result['default'] = offload.default_device().filter_string
        """,
        env={**TWO_CPUS_ENV, "OFFLOAD_DEVICE": "cpu:1"},
    )
    assert r["default"] == "opencl:cpu:0"


@pytest.mark.parametrize("value,exc", [("cpu::", "ValueError"), ("cpu:9", "DeviceNotFoundError")])
def test_bad_offload_device_env(value, exc):
    """A bad OFFLOAD_DEVICE does not break `import offload`; the first use says what is wrong."""
    r = run_python(
        """
        import offload
        result['n'] = len(offload.get_devices())
        try:
            offload.default_device()
            result['err'] = None
        except Exception as e:
            result['err'] = type(e).__name__
            result['msg'] = str(e)
            result['isvalue'] = isinstance(e, ValueError)
        """,
        env={"OFFLOAD_DEVICE": value},
    )
    assert r["n"] >= 1
    assert r["err"] == exc, r
    assert "OFFLOAD_DEVICE" in r["msg"], f"the error does not name OFFLOAD_DEVICE: {r['msg']!r}"
    assert "opencl:cpu:0" in r["msg"], r["msg"]


# ---------------------------------------------------------------- no devices at all


def test_no_devices_at_all(empty_icd_dir):
    if has_cuda_driver():
        pytest.skip("a CUDA driver is present: hiding OpenCL platforms does not leave zero devices")
    r = run_python(
        """
        import offload
        result['devs'] = [repr(d) for d in offload.get_devices()]
        result['cpus'] = len(offload.get_devices(device_type='cpu'))
        errs = {}
        for name, f in [('default_device', lambda: offload.default_device()),
                        ('Device', lambda: offload.Device('cpu')),
                        ('Device()', lambda: offload.Device()),
                        ('zeros', lambda: offload.zeros(3)),
                        ('asarray', lambda: offload.asarray([1.0]))]:
            try:
                f()
                errs[name] = None
            except Exception as e:
                errs[name] = [type(e).__name__, str(e), isinstance(e, offload.DeviceNotFoundError)]
        result['errs'] = errs
        """,
        env={"OCL_ICD_VENDORS": str(empty_icd_dir)},
    )
    assert r["devs"] == [] and r["cpus"] == 0
    for name, err in r["errs"].items():
        assert err is not None, f"{name} succeeded with no devices"
        ename, msg, is_dnf = err
        assert is_dnf, f"{name}: {ename}: {msg}"
        low = msg.lower()
        assert "opencl" in low, f"{name}: the error does not explain why there are no devices: {msg!r}"
        assert "pocl-opencl-icd" in low, f"{name}: the error does not say what to install: {msg!r}"


def test_no_devices_lsplatform_does_not_fail(empty_icd_dir):
    if has_cuda_driver():
        pytest.skip("a CUDA driver is present: hiding OpenCL platforms does not leave zero devices")
    r = run_python(
        """
        import io, contextlib, offload
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            ret = offload.lsplatform()
        result['out'] = buf.getvalue() + (ret if isinstance(ret, str) else '')
        """,
        env={"OCL_ICD_VENDORS": str(empty_icd_dir)},
    )
    assert "Portable Computing Language" not in r["out"]


# ---------------------------------------------------------------- lsplatform


def _lsplatform_text(ol, capfd, v) -> str:
    ret = ol.lsplatform(v) if v is not None else ol.lsplatform()
    out, err = capfd.readouterr()
    return out + (ret if isinstance(ret, str) else "")


def test_lsplatform(ol, cpu, capfd):
    t0 = _lsplatform_text(ol, capfd, None)
    t0b = _lsplatform_text(ol, capfd, 0)
    t1 = _lsplatform_text(ol, capfd, 1)
    t2 = _lsplatform_text(ol, capfd, 2)
    for t in (t0, t1, t2):
        assert "portable computing language" in t.lower() or "pocl" in t.lower(), t
    assert t0 == t0b
    assert len(t2) > len(t0), (t0, t2)
    assert len(t2) >= len(t1) >= len(t0)
    assert cpu.name in t2, t2
    assert ol.lsplatform(verbosity=1) is None or isinstance(ol.lsplatform(verbosity=1), str)
    capfd.readouterr()


def test_lsplatform_bad_verbosity(ol):
    with pytest.raises((ValueError, TypeError)):
        ol.lsplatform("loud")


# ---------------------------------------------------------------- the device of a rank (issue 24)

RANK_PROBE = """
import offload as ol
result["rank"] = ol.local_rank()
result["default"] = ol.default_device().filter_string
result["listing"] = ol._lsplatform_bundle()["text/plain"]
ol.set_default_device(ol.get_devices()[-1])
result["after_set"] = ol.default_device().filter_string
ol.set_default_device(None)
result["back"] = ol.default_device().filter_string
"""

RANK_VARS = ["OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
             "PMI_LOCAL_RANK", "SLURM_LOCALID"]


@pytest.mark.parametrize("env,rank", [
    ({}, None),
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "1"}, 1),
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "2"}, 2),
    ({"SLURM_LOCALID": "3"}, 3),
    ({"MPI_LOCALRANKID": "1", "SLURM_LOCALID": "0"}, 1),  # the MPI launcher's wins
    ({"PMI_LOCAL_RANK": "x", "MV2_COMM_WORLD_LOCAL_RANK": "0"}, 0),  # not a number: ignored
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OFFLOAD_DEVICE": CPU_FILTER}, 1),  # the variable wins
], ids=["none", "ompi1", "ompi2", "slurm3", "hydra-over-slurm", "bad-value", "OFFLOAD_DEVICE"])
def test_default_device_by_local_rank(ol, env, rank):
    """$OFFLOAD_DEVICE, else device (rank mod n) of the n GPUs or else CPU devices, else the
    first; set_default_device() over all of them."""
    full = {v: None for v in RANK_VARS + ["OFFLOAD_DEVICE"]}
    full.update(env)
    r = run_python(RANK_PROBE, env=full)
    devs = [d.filter_string for d in ol.get_devices()]
    gpus = [d.filter_string for d in ol.get_devices(device_type="gpu")]
    kind = gpus or [d.filter_string for d in ol.get_devices(device_type="cpu")]
    assert r["rank"] == rank
    if "OFFLOAD_DEVICE" in env:
        want = env["OFFLOAD_DEVICE"]
    elif rank is None:
        want = devs[0]
    else:
        want = kind[rank % len(kind)]
    assert r["default"] == want
    line = [ln for ln in r["listing"].splitlines() if ln.startswith(want + " ")]
    assert line and line[0].endswith("(default)"), r["listing"]
    noted = "default device by local rank" in r["listing"]
    assert noted == (rank is not None and "OFFLOAD_DEVICE" not in env), r["listing"]
    assert r["after_set"] == devs[-1] and r["back"] == want
