"""The device magics and the offload module inside the Jupyter kernel, through
jupyter_client: %lsplatform [-v|-vv], %devices, %device [FILTER], `import
offload`, device errors as error replies with the kernel alive afterwards.

CI's device is PoCL's CPU device (opencl:cpu:0). One kernel sees two PoCL CPU
devices and starts with OFFLOAD_DEVICE=cpu:1; one sees no OpenCL platform.
"""

from __future__ import annotations

import html
import re

import pytest

from kernel_testlib import (
    Kernel,
    describe,
    eval_text,
    execute,
    of_type,
    result_text,
    stream_text,
    strip_ansi,
)
from offload_fixtures import (  # noqa: F401  (fixtures)
    CPU_FILTER,
    empty_icd_dir,
    has_cuda_driver,
    no_device_kernel,
    two_cpu_kernel,
)


def all_text(msgs) -> str:
    """Everything a user would read: stdout, stderr, text/plain and text/html of results and displays."""
    parts = [stream_text(msgs, "stdout"), stream_text(msgs, "stderr")]
    for m in msgs:
        if m["msg_type"] in ("display_data", "execute_result", "update_display_data"):
            d = m["content"]["data"]
            parts.append(str(d.get("text/plain", "")))
            parts.append(html.unescape(re.sub(r"<[^>]+>", " ", str(d.get("text/html", "")))))
    return strip_ansi("\n".join(parts))


def ok(kc, code: str):
    reply, msgs = execute(kc, code)
    assert reply["content"]["status"] == "ok", f"{code!r} failed:\n{describe(reply, msgs)}"
    return reply, msgs


def error_of(kc, code: str) -> tuple[str, str, list[dict]]:
    """Run code that must fail: (ename, evalue + traceback text, msgs)."""
    reply, msgs = execute(kc, code)
    c = reply["content"]
    assert c["status"] == "error", f"{code!r} did not fail:\n{describe(reply, msgs)}"
    errs = of_type(msgs, "error")
    assert len(errs) == 1, f"{code!r}: expected one error message on IOPub:\n{describe(reply, msgs)}"
    assert errs[0]["content"]["ename"] == c["ename"]
    text = strip_ansi(c["evalue"] + "\n" + "\n".join(c.get("traceback", [])))
    return c["ename"], text, msgs


def one_display(msgs, what: str) -> dict:
    """The listing magics show one display_data holding both the text and the HTML table,
    and print nothing beside it (a notebook would show the listing twice)."""
    shown = of_type(msgs, "display_data")
    assert len(shown) == 1, f"{what}: expected one display_data, got {len(shown)}:\n{describe({}, msgs)}"
    data = shown[0]["content"]["data"]
    assert {"text/plain", "text/html"} <= set(data), f"{what}: mimetypes {sorted(data)}"
    assert stream_text(msgs) == "" and stream_text(msgs, "stderr") == "", \
        f"{what}: printed beside its display:\n{describe({}, msgs)}"
    return data


def default_filter(kc) -> str:
    return eval_text(kc, "__import__('offload').default_device().filter_string").strip("'\"")


# ---------------------------------------------------------------- import offload


def test_import_offload_in_kernel(kc):
    ok(kc, "import offload")
    assert eval_text(kc, "[d.filter_string for d in offload.get_devices()].count('opencl:cpu:0')") == "1"
    assert eval_text(kc, "offload.default_device().filter_string") == repr(CPU_FILTER)
    assert eval_text(kc, "repr(offload.Device('cpu'))") == repr("Device(opencl:cpu:0)")


def test_kernel_offload_is_built_in(kc):
    """DESIGN: the module is built into the kernel binary (not found on sys.path)."""
    assert eval_text(kc, "'offload' in __import__('sys').builtin_module_names") == "True"
    assert eval_text(kc, "getattr(__import__('offload'), '__file__', None)") == "None"


def test_arrays_in_kernel(kc):
    ok(kc, "import offload, numpy as np\nx_magic_arr = offload.asarray(np.arange(6).reshape(2, 3))")
    assert eval_text(kc, "offload.asnumpy(x_magic_arr[:, ::-1]).tolist()") == "[[2, 1, 0], [5, 4, 3]]"
    reply, msgs = ok(kc, "x_magic_arr")
    r = result_text(msgs)
    assert r is not None and CPU_FILTER in r and re.search(r"0\D+1\D+2", r), describe(reply, msgs)


def test_oversize_allocation_in_kernel(kernel: Kernel, kc):
    ename, text, _ = error_of(kc, "import offload\noffload_big = offload.empty(1 << 50, dtype='u1')")
    assert ename == "MemoryError", text
    name = eval_text(kc, "offload.default_device().name").strip("'\"")
    assert CPU_FILTER in text or name in text, f"the MemoryError does not name the device:\n{text}"
    kernel.assert_alive("an oversize allocation")
    assert eval_text(kc, "offload.asnumpy(offload.ones(3, dtype='int8')).tolist()") == "[1, 1, 1]"


# ---------------------------------------------------------------- %lsplatform


@pytest.mark.parametrize("flag", ["", "-v", "-vv"])
def test_lsplatform(kc, flag):
    _, msgs = ok(kc, f"%lsplatform {flag}".strip())
    data = one_display(msgs, f"%lsplatform {flag}")
    text, h = data["text/plain"], data["text/html"]
    assert "portable computing language" in text.lower() or "pocl" in text.lower(), text
    assert "portable computing language" in h.lower() or "pocl" in h.lower(), h
    assert "<table" in h and "</table>" in h
    # the text is the function's, as python3 -c "import offload; offload.lsplatform(v)" prints it
    v = {"": 0, "-v": 1, "-vv": 2}[flag]
    ok(kc, f"import io, contextlib, offload\n_ls_buf = io.StringIO()\n"
           f"with contextlib.redirect_stdout(_ls_buf):\n    offload.lsplatform({v})")
    assert eval_text(kc, "_ls_buf.getvalue()") == repr(text)


def test_lsplatform_v_keeps_version_strings_out_of_the_columns(kc):
    """Long version strings as columns squeeze the others to a word per line and
    the table past a notebook's width: -v gives them a row under the device."""
    _, msgs = ok(kc, "%lsplatform -v")
    h = one_display(msgs, "%lsplatform -v")["text/html"]
    version = eval_text(kc, "__import__('offload').Device('cpu').version").strip("'\"")
    cells = re.findall(r"<td([^>]*)>((?:(?!</td>).)*)</td>", h, re.S)
    holding = [attrs for attrs, body in cells if html.escape(version, quote=False) in body]
    assert holding, f"the version {version!r} is not in the -v table:\n{h}"
    assert all("colspan" in attrs for attrs in holding), f"the version has a column of its own:\n{h}"
    headers = re.findall(r"<th[^>]*>(.*?)</th>", h, re.S)
    assert not any(re.sub(r"<[^>]+>", "", x) in ("version", "driver_version") for x in headers), headers


def test_lsplatform_verbosity_adds_detail(kc):
    texts = {}
    for flag in ("", "-v", "-vv"):
        _, msgs = ok(kc, f"%lsplatform {flag}".strip())
        texts[flag] = one_display(msgs, f"%lsplatform {flag}")["text/plain"]
    assert len(texts["-vv"]) > len(texts[""]), texts
    assert len(texts["-vv"]) >= len(texts["-v"]) >= len(texts[""]), texts
    name = eval_text(kc, "__import__('offload').Device('cpu').name").strip("'\"")
    assert name in texts["-vv"], texts["-vv"]


def test_lsplatform_bad_option(kernel: Kernel, kc):
    reply, msgs = execute(kc, "%lsplatform --nonsense")
    assert reply["content"]["status"] == "error", describe(reply, msgs)
    kernel.assert_alive("%lsplatform with a bad option")


# ---------------------------------------------------------------- %devices


def test_devices_table(kc):
    reply, msgs = ok(kc, "%devices")
    data = one_display(msgs, "%devices")
    assert CPU_FILTER in data["text/plain"] and CPU_FILTER in data["text/html"], data
    text = all_text(msgs)
    assert CPU_FILTER in text, f"%devices does not list {CPU_FILTER}:\n{text}"
    name = eval_text(kc, "__import__('offload').Device('cpu').name").strip("'\"")
    assert name in text, f"%devices does not show the device name {name!r}:\n{text}"
    cu = eval_text(kc, "__import__('offload').Device('cpu').max_compute_units")
    assert re.search(rf"\b{cu}\b", text), f"%devices does not show the compute units ({cu}):\n{text}"


def test_devices_lists_every_device(two_cpu_kernel: Kernel):
    kc = two_cpu_kernel.kc
    ok(kc, "%device cpu:1")
    _, msgs = ok(kc, "%devices")
    text = all_text(msgs)
    assert "opencl:cpu:0" in text and "opencl:cpu:1" in text, text


# ---------------------------------------------------------------- %device


def test_device_shows_default(kc):
    reply, msgs = ok(kc, "%device")
    text = all_text(msgs)
    assert CPU_FILTER in text, f"%device does not show the default device:\n{text}"


def test_device_sets_default(kc):
    ok(kc, "%device cpu")
    assert default_filter(kc) == CPU_FILTER
    _, msgs = ok(kc, "%device")
    assert CPU_FILTER in all_text(msgs)
    ok(kc, "%device opencl:cpu:0")
    assert default_filter(kc) == CPU_FILTER


@pytest.mark.parametrize("bad", ["cpu::", "foo", "gpu:x:y:z", "cuda:cpu:0:1"])
def test_device_bad_filter(kernel: Kernel, kc, bad):
    before = default_filter(kc)
    ename, text, _ = error_of(kc, f"%device {bad}")
    assert ename == "ValueError", f"%device {bad}: {ename}\n{text}"
    assert CPU_FILTER in text, f"the error does not list the devices that exist:\n{text}"
    assert default_filter(kc) == before
    kernel.assert_alive(f"%device {bad}")


@pytest.mark.parametrize("missing", ["gpu", "cuda:gpu:0", "cpu:5"])
def test_device_no_match(kernel: Kernel, kc, missing):
    if missing != "cpu:5" and has_cuda_driver():
        pytest.skip("a CUDA driver is present")
    before = default_filter(kc)
    ename, text, _ = error_of(kc, f"%device {missing}")
    assert ename == "DeviceNotFoundError", f"%device {missing}: {ename}\n{text}"
    assert CPU_FILTER in text, f"the error does not list the devices that exist:\n{text}"
    assert default_filter(kc) == before
    kernel.assert_alive(f"%device {missing}")


def test_device_too_many_arguments(kernel: Kernel, kc):
    reply, msgs = execute(kc, "%device cpu gpu")
    assert reply["content"]["status"] == "error", describe(reply, msgs)
    kernel.assert_alive("%device with two arguments")


# ---------------------------------------------------------------- two devices, OFFLOAD_DEVICE=cpu:1


def test_two_cpu_kernel_sees_both(two_cpu_kernel: Kernel):
    kc = two_cpu_kernel.kc
    ok(kc, "import offload")
    assert eval_text(kc, "[d.filter_string for d in offload.get_devices()]") == "['opencl:cpu:0', 'opencl:cpu:1']"


def test_kernel_starts_with_offload_device(tmp_path):
    from kernel_testlib import start_kernel

    from offload_fixtures import TWO_CPUS_ENV

    k = start_kernel(tmp_path / "kernel.stderr", extra_env={**TWO_CPUS_ENV, "OFFLOAD_DEVICE": "cpu:1"})
    try:
        _, msgs = ok(k.kc, "%device")
        text = all_text(msgs)
        assert "opencl:cpu:1" in text, f"%device does not show OFFLOAD_DEVICE's device:\n{text}"
        assert default_filter(k.kc) == "opencl:cpu:1"
        assert eval_text(k.kc, "__import__('offload').zeros(2).device.filter_string") == "'opencl:cpu:1'"
    finally:
        k.shutdown()


def test_device_magic_moves_new_arrays(two_cpu_kernel: Kernel):
    kc = two_cpu_kernel.kc
    ok(kc, "import offload")
    ok(kc, "%device cpu:0")
    assert default_filter(kc) == "opencl:cpu:0"
    assert eval_text(kc, "offload.zeros(2).device.filter_string") == "'opencl:cpu:0'"
    _, msgs = ok(kc, "%device")
    text = all_text(msgs)
    assert "opencl:cpu:0" in text
    ok(kc, "%device opencl:cpu:1")
    assert eval_text(kc, "offload.asarray([1, 2]).device.filter_string") == "'opencl:cpu:1'"
    # the magic and set_default_device are one setting
    ok(kc, "offload.set_default_device('cpu:0')")
    _, msgs = ok(kc, "%device")
    assert "opencl:cpu:0" in all_text(msgs)
    ename, text, _ = error_of(kc, "%device cpu:2")
    assert ename == "DeviceNotFoundError"
    assert "opencl:cpu:0" in text and "opencl:cpu:1" in text, text
    assert default_filter(kc) == "opencl:cpu:0"
    two_cpu_kernel.assert_alive("%device cpu:2")


def test_placement_error_in_kernel(two_cpu_kernel: Kernel):
    kc = two_cpu_kernel.kc
    ok(kc, "import offload\npe_x = offload.zeros(3, device='cpu:0')\npe_y = offload.zeros(3, device='cpu:1')")
    ename, text, _ = error_of(kc, "offload._check_same_device(pe_x, pe_y)")
    assert ename == "ExecutionPlacementError", text
    assert "opencl:cpu:0" in text and "opencl:cpu:1" in text, text
    two_cpu_kernel.assert_alive("a placement error")


# ---------------------------------------------------------------- no devices at all


def test_kernel_without_devices(no_device_kernel: Kernel):
    if has_cuda_driver():
        pytest.skip("a CUDA driver is present: hiding OpenCL platforms does not leave zero devices")
    k = no_device_kernel
    kc = k.kc
    ok(kc, "import offload")
    assert eval_text(kc, "offload.get_devices()") == "[]"
    _, msgs = ok(kc, "%devices")
    text = all_text(msgs)
    assert "pocl-opencl-icd" in text.lower(), f"%devices with no devices does not say what to install:\n{text}"
    ok(kc, "%lsplatform")
    reply, msgs = execute(kc, "%device")
    text = all_text(msgs) + (reply["content"].get("evalue", "") if reply["content"]["status"] == "error" else "")
    assert "pocl-opencl-icd" in text.lower(), f"%device with no devices does not explain:\n{describe(reply, msgs)}"
    ename, text, _ = error_of(kc, "offload.zeros(3)")
    assert ename == "DeviceNotFoundError", text
    assert "pocl-opencl-icd" in text.lower(), text
    k.assert_alive("using offload with no devices")
