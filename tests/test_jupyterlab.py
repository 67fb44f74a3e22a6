"""JupyterLab in a real browser: the offload kernel as a user meets it.

A JupyterLab server (PyPI's jupyterlab) is started on 127.0.0.1 with the
in-tree kernelspec (conftest puts <builddir>/share/jupyter first on
JUPYTER_PATH), and headless Chromium (Debian's chromium + chromium-driver,
driven by Selenium) opens a notebook written here with nbformat and runs all
its cells through Lab's Run menu. The tests then look at the rendered page,
not at kernel messages:

  * the %%offload cell shows one summary table (updated in place, not
    appended again and again), naming the launch;
  * a `!echo` cell shows the shell's output (IPython's shell machinery);
  * an ipywidgets slider renders as a widget view (comms work), and moving it
    with the keyboard reaches the Python observer;
  * a matplotlib plot renders as a PNG image;
  * the browser console holds no errors.

A screenshot of the page is saved under pytest's tmp dir (and copied to
$OFFLOAD_ARTIFACTS when that is set); its path is printed.

The tests share one server, one browser and one notebook run (module-scoped
fixtures); they are ordered: the slider test moves the slider and runs a cell
again, the console test goes last. They are skipped only when chromium,
chromedriver, jupyterlab or selenium is missing (scripts/setup installs them,
so CI runs them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kernel_testlib import KERNEL_NAME

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _missing_tools() -> list[str]:
    missing = []
    if not os.access(CHROMIUM, os.X_OK):
        missing.append("chromium (apt-get install chromium)")
    if not os.access(CHROMEDRIVER, os.X_OK):
        missing.append("chromedriver (apt-get install chromium-driver)")
    for module, pip_name in (("jupyterlab", "jupyterlab"), ("selenium", "selenium"), ("ipywidgets", "ipywidgets")):
        if importlib.util.find_spec(module) is None:
            missing.append(f"{module} (pip install {pip_name})")
    return missing


_MISSING = _missing_tools()

pytestmark = [
    pytest.mark.skipif(bool(_MISSING), reason="browser test needs: " + ", ".join(_MISSING)),
    # Starting Lab, Chromium and the kernel, then compiling a loop, takes a while on a
    # 2-core CI machine; the module fixture's set-up counts against the first test.
    pytest.mark.timeout(600),
]

# Generous waits: the CI machine is slow and shared. Nothing here asserts on speed.
SERVER_START_TIMEOUT = 120
PAGE_TIMEOUT = 180
CELL_TIMEOUT = 240

# ----------------------------------------------------------------------------
# The notebook. Each cell is looked up by its index below.

SETUP = 0
OFFLOAD = 1
MATPLOTLIB = 2
WIDGET = 3
SEEN = 4
SHELL = 5

CELLS = {
    SETUP: "import numpy as np\n"
           "from offload import prange\n"
           "a = np.arange(100000.0)\n"
           "b = np.empty(200000)[::2]  # strided: copied back even from a CPU device",
    OFFLOAD: "%%offload\n"
             "for i in prange(a.size):\n"
             "    b[i] = 2*a[i]",
    # A small figure so that the whole notebook fits the window for the screenshot.
    MATPLOTLIB: "import matplotlib.pyplot as plt\n"
                "plt.figure(figsize=(4, 2.5))\n"
                "plt.plot([1, 2, 3])\n"
                "plt.show()",
    WIDGET: "import ipywidgets as w\n"
            "s = w.IntSlider(value=3, min=0, max=10)\n"
            "seen = []\n"
            "s.observe(lambda ch: seen.append(ch['new']), 'value')\n"
            "s",
    # Run once by Run All (prints []), and again after the slider was moved.
    SEEN: "print('seen:', seen)",
    # Last, so that while the kernel lacks IPython's shell machinery (a SyntaxError, which
    # makes Lab's Run All skip the cells after it) the other cells still run.
    SHELL: "!echo hello-from-shell",
}


def write_notebook(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3 (offload)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_code_cell(CELLS[i]) for i in sorted(CELLS)]
    nbformat.write(nb, str(path))


# ----------------------------------------------------------------------------
# The JupyterLab server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_lab_settings(settings_dir: Path) -> None:
    """User settings for this Lab only (JUPYTERLAB_SETTINGS_DIR points here)."""

    def put(plugin: str, values: dict) -> None:
        path = settings_dir / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))

    # Attach every cell to the DOM: with Lab's default windowing a cell out of the
    # viewport may not be rendered, and the checks read every cell's output.
    put("@jupyterlab/notebook-extension/tracker", {"windowingMode": "none"})
    # No "fetch Jupyter news?" toast over the page, and no request to the internet.
    put("@jupyterlab/apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False})


class LabServer:
    def __init__(self, proc: subprocess.Popen, port: int, token: str, log: Path):
        self.proc, self.port, self.token, self.log = proc, port, token, log
        self.base = f"http://127.0.0.1:{port}"

    def api(self, path: str, method: str = "GET", timeout: float = 10):
        req = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log_tail(self, n: int = 6000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.api("status", timeout=5)
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.5)
        raise AssertionError(f"jupyter lab did not answer on {self.base} in {SERVER_START_TIMEOUT} s:\n"
                             f"{self.log_tail()}")

    def stop(self) -> None:
        """Shut down politely (the server then shuts its kernels down), then by force."""
        if self.proc.poll() is None:
            try:
                self.api("shutdown", method="POST", timeout=10)
            except (OSError, urllib.error.URLError):
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        # The server runs in its own process group (start_new_session): end whatever of
        # it is left, this group only.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue


def start_lab(root: Path, work: Path) -> LabServer:
    port, token = free_port(), secrets.token_hex(16)
    settings = work / "lab-settings"
    write_lab_settings(settings)
    env = dict(os.environ)  # JUPYTER_PATH as conftest set it: the in-tree kernelspec first
    env.update({
        # Keep the user's own Jupyter config, Lab settings and workspaces out of it.
        "JUPYTER_CONFIG_DIR": str(work / "config"),
        "JUPYTER_RUNTIME_DIR": str(work / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(work / "workspaces"),
    })
    log = work / "jupyterlab.log"
    cmd = [sys.executable, "-m", "jupyterlab",
           "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--ServerApp.disable_check_xsrf=True",
           "--allow-root"]  # CI runs as root, which the server refuses without this
    with open(log, "wb") as logf:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=logf,
                                stderr=subprocess.STDOUT, start_new_session=True)
    server = LabServer(proc, port, token, log)
    try:
        server.wait_until_up()
    except BaseException:
        server.stop()
        raise
    return server


# ----------------------------------------------------------------------------
# The browser


def start_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                "--disable-gpu", "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit chromedriver: Selenium Manager would otherwise try to download one.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_window_size(1400, 1000)
    return driver


class Page:
    """The notebook page in the browser, with the waits and look-ups the tests need."""

    def __init__(self, driver, server: LabServer):
        self.driver, self.server = driver, server
        self.console: list[dict] = []  # every browser console entry so far (get_log drains)

    # -- waiting

    def wait(self, what: str, condition, timeout: float = PAGE_TIMEOUT, poll: float = 0.5):
        """Poll condition() until it returns something truthy; fail saying what was awaited."""
        deadline = time.monotonic() + timeout
        last_exc = None
        while True:
            try:
                value = condition()
                if value:
                    return value
            except Exception as e:  # e.g. a stale element while Lab re-renders
                last_exc = e
            if time.monotonic() > deadline:
                detail = f" (last error: {last_exc!r})" if last_exc else ""
                raise AssertionError(f"timed out after {timeout} s waiting for {what}{detail}")
            time.sleep(poll)

    def collect_console(self) -> list[dict]:
        self.console.extend(self.driver.get_log("browser"))
        return self.console

    # -- DOM look-ups

    def js(self, script: str, *args):
        return self.driver.execute_script(script, *args)

    def cells(self):
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Notebook .jp-Cell")

    def cell(self, index: int):
        return self.cells()[index]

    def prompt(self, index: int) -> str:
        """The cell's input prompt text: '[ ]:' never run, '[*]:' queued or running, '[7]:' done."""
        return self.js("const p = arguments[0].querySelector('.jp-InputPrompt');"
                       "return p ? p.textContent.trim() : '';", self.cell(index))

    def execution_count(self, index: int) -> int | None:
        m = re.fullmatch(r"\[(\d+)\]:?", self.prompt(index))
        return int(m.group(1)) if m else None

    def output_text(self, index: int) -> str:
        return self.js("const o = arguments[0].querySelector('.jp-OutputArea');"
                       "return o ? o.innerText : '';", self.cell(index))

    def output_count(self, index: int, css: str) -> int:
        return self.js("return arguments[0].querySelectorAll('.jp-OutputArea ' + arguments[1]).length;",
                       self.cell(index), css)

    def output_elements(self, index: int, css: str):
        from selenium.webdriver.common.by import By

        return self.cell(index).find_elements(By.CSS_SELECTOR, ".jp-OutputArea " + css)

    def kernel_status(self) -> str:
        """Lab's status bar item: 'Python 3 (offload) | Idle' once the kernel is connected."""
        return self.js("const s = document.querySelector('#jp-main-statusbar');"
                       "return s ? s.innerText : '';") or ""

    # -- actions

    def run_menu(self, command: str) -> None:
        """Run a command of Lab's Run menu by its command id (what the menu item carries)."""
        from selenium.webdriver.common.by import By

        def open_menu():
            for item in self.driver.find_elements(By.CSS_SELECTOR, "#jp-MainMenu .lm-MenuBar-item"):
                if item.text.strip() == "Run":
                    item.click()
                    return True
            return False

        self.wait("the Run menu in Lab's menu bar", open_menu)
        entry = self.wait(f"the Run menu entry {command}", lambda: self.driver.find_element(
            By.CSS_SELECTOR, f".lm-Menu li.lm-Menu-item[data-command='{command}']"))
        entry.click()

    def select_cell(self, index: int) -> None:
        """Make the cell Lab's active cell (in command mode) by clicking its prompt."""
        from selenium.webdriver.common.by import By

        cell = self.cell(index)
        self.js("arguments[0].scrollIntoView({block: 'center'});", cell)
        cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt").click()
        self.wait(f"cell {index} to become the active cell",
                  lambda: "jp-mod-active" in (self.cell(index).get_attribute("class") or ""), timeout=30)

    def wait_quiet(self, what: str, timeout: float = CELL_TIMEOUT) -> None:
        """Wait until no cell is queued or running ('[*]:') and the kernel is idle, twice in a row
        (a cell that raised makes Lab drop the queued ones after it: they go back to '[ ]:')."""
        calm = [0]

        def quiet():
            busy = any(self.prompt(i) == "[*]:" for i in range(len(self.cells())))
            calm[0] = 0 if busy or "Idle" not in self.kernel_status() else calm[0] + 1
            return calm[0] >= 2

        try:
            self.wait(what, quiet, timeout=timeout, poll=1)
        except AssertionError as e:
            prompts = [self.prompt(i) for i in range(len(self.cells()))]
            raise AssertionError(f"{e}; cell prompts {prompts}; status bar {self.kernel_status()!r}") from None

    def assert_ran(self, index: int) -> None:
        """The cell ran (it shows an execution count); if not, say what the notebook shows."""
        if self.execution_count(index) is None:
            shown = "\n".join(f"  cell {i} {self.prompt(i)} {self.output_text(i).strip()[:300]!r}"
                              for i in range(len(self.cells())))
            raise AssertionError(f"cell {index} did not run (prompt {self.prompt(index)!r}); the notebook shows:\n"
                                 f"{shown}\nstatus bar: {self.kernel_status()!r}\n"
                                 f"server and kernel log (end):\n{self.server.log_tail(3000)}")

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(path))
        artifacts = os.environ.get("OFFLOAD_ARTIFACTS")
        if artifacts:
            Path(artifacts).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(artifacts) / path.name)
        print(f"screenshot: {path}" + (f" (copied to {artifacts})" if artifacts else ""))
        return path


# ----------------------------------------------------------------------------
# Fixtures: one server, one browser, one run of the notebook for the whole module


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = tmp_path_factory.mktemp("jupyterlab")
    root = work / "root"
    root.mkdir()
    write_notebook(root / "test.ipynb")
    server = start_lab(root, work)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def page(lab, tmp_path_factory):
    """The notebook opened in Chromium, all its cells run through Run > Run All Cells."""
    shots = tmp_path_factory.mktemp("screenshots")
    driver = start_browser()
    page = Page(driver, lab)
    page.shots = shots
    try:
        driver.set_page_load_timeout(PAGE_TIMEOUT)
        driver.get(f"{lab.base}/lab/tree/test.ipynb?token={lab.token}")
        page.wait("the notebook's cells in the page", lambda: len(page.cells()) == len(CELLS))
        # The status bar says Idle once Lab is connected to the started kernel; Run All
        # before that could race the kernel's start.
        try:
            page.wait("the kernel to be started and idle (status bar)", lambda: "Idle" in page.kernel_status())
        except AssertionError as e:
            raise AssertionError(f"{e}; status bar {page.kernel_status()!r}; server log:\n{lab.log_tail()}") from None
        page.run_menu("runmenu:run-all")
        page.wait("Run All Cells to queue the cells", lambda: page.prompt(SETUP) == "[*]:" or page.execution_count(SETUP),
                  timeout=30)
        page.wait_quiet("Run All Cells to finish")
        yield page
    finally:
        try:
            page.collect_console()
            page.screenshot(shots / "jupyterlab-final.png")
        except Exception as e:  # the browser may be what failed; say so, don't mask the error
            print(f"no final screenshot: {e!r}")
        driver.quit()


# ----------------------------------------------------------------------------
# The checks, in page order where they depend on each other


def test_offload_cell_shows_one_summary_table_updated_in_place(page):
    page.assert_ran(OFFLOAD)
    text = page.output_text(OFFLOAD)
    tables = page.output_count(OFFLOAD, "table")
    assert tables >= 1, f"no summary <table> in the %%offload cell's output; it shows:\n{text}"
    assert tables == 1, (f"the %%offload summary table is shown {tables} times: it should be one display "
                         f"updated in place; the output reads:\n{text}")
    table = page.output_elements(OFFLOAD, "table")[0].text
    assert "launch" in table and "loop at line 2" in table, f"the summary table does not name the launch:\n{table}"
    # The copy back comes last, after the table was first shown: the page has the updates.
    assert "copy out" in table, f"the summary table was not updated to the end of the cell (no copy out):\n{table}"
    assert "opencl:" in table or "cuda:" in table, f"the summary table does not name the device:\n{table}"
    assert page.output_count(OFFLOAD, ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']") == 0, \
        f"the %%offload cell wrote to stderr:\n{text}"


def test_matplotlib_plot_renders_as_png(page):
    page.assert_ran(MATPLOTLIB)
    imgs = page.output_elements(MATPLOTLIB, "img")
    text = page.output_text(MATPLOTLIB)
    assert imgs, f"no <img> in the matplotlib cell's output; it shows:\n{text}"
    src = imgs[0].get_attribute("src") or ""
    assert src.startswith("data:image/png"), f"the plot's <img> src is not a PNG data URL: {src[:80]!r}"
    # Rendered, not a broken image: the browser decoded it to a real size.
    width = page.js("return arguments[0].naturalWidth;", imgs[0])
    assert width and width > 50, f"the plot image did not decode (naturalWidth {width})"


def widget_view_or_error(page, index: int) -> str:
    """Wait until the cell's widget view is rendered ('view') or Lab gave up ('error'): the
    manager renders asynchronously, after the cell is done ('Loading widget...' meanwhile)."""

    def settled():
        if page.output_count(index, ".jupyter-widgets.widget-slider"):
            return "view"
        if "Error displaying widget" in page.output_text(index):
            return "error"
        return None

    return page.wait("the widget view (or Lab's widget error) in the widget cell", settled, timeout=120)


def test_widget_renders(page):
    page.assert_ran(WIDGET)
    state = widget_view_or_error(page, WIDGET)
    text = page.output_text(WIDGET).strip()
    assert state == "view", f"the slider did not render (no comms?); the widget cell shows: {text!r}"
    assert page.output_count(WIDGET, ".jupyter-widgets.widget-slider") == 1, \
        f"one slider view expected in the widget cell; it shows: {text!r}"
    readout = page.output_elements(WIDGET, ".widget-readout")
    assert readout and readout[0].text.strip() == "3", \
        f"the slider's readout should show its value 3, it shows {readout[0].text if readout else None!r}"


def test_moving_the_slider_reaches_python(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    page.assert_ran(SEEN)
    assert page.output_text(SEEN).strip() == "seen: []", \
        f"before the slider moves the observer has seen nothing; the cell shows {page.output_text(SEEN)!r}"
    assert widget_view_or_error(page, WIDGET) == "view", \
        f"no slider to move; the widget cell shows: {page.output_text(WIDGET).strip()!r}"
    views = page.output_elements(WIDGET, ".widget-slider")
    handle = views[0].find_element(By.CSS_SELECTOR, ".noUi-handle")
    page.js("arguments[0].scrollIntoView({block: 'center'});", handle)
    # The keyboard, as a user without a mouse would: focus the handle, one step right.
    handle.click()
    handle.send_keys(Keys.ARROW_RIGHT)
    page.wait("the slider's readout to show 4", lambda: page.output_elements(WIDGET, ".widget-readout")[0].text.strip()
              == "4", timeout=30)
    # Re-run the `print('seen:', seen)` cell: the observer in the kernel saw the new value.
    before = page.execution_count(SEEN)
    page.select_cell(SEEN)
    page.run_menu("notebook:run-cell")
    page.wait("the seen cell to run again",
              lambda: (page.execution_count(SEEN) or 0) > (before or 0) and "Idle" in page.kernel_status(),
              timeout=CELL_TIMEOUT)
    text = page.output_text(SEEN).strip()
    assert re.fullmatch(r"seen: \[4(, 4)*\]", text), \
        f"moving the slider to 4 did not reach the Python observer: the cell prints {text!r}"


def test_shell_escape_runs(page):
    page.assert_ran(SHELL)
    text = page.output_text(SHELL)
    # Tracebacks and stderr are rendered as application/vnd.jupyter.stderr outputs.
    errors = page.output_count(SHELL, ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert not errors, f"`!echo hello-from-shell` failed (IPython's shell escapes?); the cell shows:\n{text.strip()}"
    lines = [line.strip() for line in text.splitlines()]
    assert "hello-from-shell" in lines, \
        f"`!echo hello-from-shell` did not print hello-from-shell; the cell shows:\n{text.strip()}"


def test_screenshot(page):
    # The window grows for the picture so that the whole notebook (the %%offload table, the
    # plot, the slider, the shell output) is in it; Lab lays itself out again for the size.
    page.driver.set_window_size(1400, 2000)
    try:
        page.wait("Lab to lay out the taller window",
                  lambda: page.js("return window.innerHeight;") >= 1500, timeout=30)
        # From the top of the notebook (the slider test left it scrolled down).
        page.js("arguments[0].scrollIntoView({block: 'start'});", page.cell(SETUP))
        time.sleep(1)  # Lab re-lays out on the resize event; let it paint
        path = page.screenshot(page.shots / "jupyterlab.png")
    finally:
        page.driver.set_window_size(1400, 1000)
    assert path.stat().st_size > 10_000, f"the screenshot {path} is suspiciously small"


# Console messages that are not the kernel's or the widgets' fault. Each says why.
HARMLESS_CONSOLE = [
    # Chromium asks for /favicon.ico on its own; the server has none at that path.
    re.compile(r"favicon\.ico"),
]


def test_browser_console_has_no_errors(page):
    entries = page.collect_console()
    severe = [e for e in entries
              if e.get("level") == "SEVERE" and not any(p.search(e.get("message", "")) for p in HARMLESS_CONSOLE)]
    assert not severe, "errors in the browser console:\n" + "\n".join(e["message"][:500] for e in severe)
