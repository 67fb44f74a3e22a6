"""IPython's shell machinery around the offload kernel, made on first need.

The C kernel runs cells itself (its displayhook, streams and tracebacks are
faster than IPython's run_cell), so this shell is not the executor: it lends
IPython's input transformers, MagicsManager (IPython's magics plus the
kernel's), ExtensionManager, events, history, system commands, pager and
debugger, and it is what get_ipython() returns.  Importing IPython costs
about a quarter of a second, so nothing here is imported until a cell uses
IPython syntax, get_ipython() is called, or something imports IPython.

The C side calls begin_cell / end_cell / error_content around each cell once
a shell exists (see kernel/krn_py.c); IPython's own run_cell still works for
the magics that run nested cells (%%capture, %run of a notebook, %%prun).
"""

import sys

import _offload_kernel
import _offload_magics

from IPython.core.displayhook import DisplayHook
from IPython.core.display_trap import DisplayTrap
from IPython.core.displaypub import DisplayPublisher
from IPython.core.error import UsageError
from IPython.core.history import HistoryManager
from IPython.core.interactiveshell import (ExecutionInfo, ExecutionResult, InteractiveShell,
                                           InteractiveShellABC)
from IPython.core import page, payloadpage
from IPython.utils.process import system as _system

# The kernel's magics, by kind. Where IPython has a magic of the same name
# (time, timeit, matplotlib) the kernel's replaces it: it waits for devices.
LINE_MAGICS = ('device', 'devices', 'kernels', 'lsplatform', 'matplotlib', 'time', 'timeit')
CELL_MAGICS = ('offload', 'time', 'timeit')
# Their cell (and %time's line) is Python to run: IPython syntax in it is transformed first, as IPython does.
TRANSFORMED = ('time', 'timeit')


class KernelHistory(HistoryManager):
    """History kept in memory; In/_ih and Out/_oh are the kernel's own list
    and dict, so %history, %recall, %rerun, %save and %macro see what the
    kernel recorded before the shell existed as well as after."""

    def __init__(self, shell, inputs, outputs):
        super().__init__(shell=shell, parent=shell, hist_file=':memory:')
        self.input_hist_parsed = inputs
        self.input_hist_raw = list(inputs)
        self.output_hist = outputs
        # _i, _ii, _iii go on from the cells the kernel ran before the shell existed.
        for name in ('_i', '_ii', '_iii', '_i00'):
            setattr(self, name, shell.user_ns.get(name, ''))


class KernelDisplayPublisher(DisplayPublisher):
    """display() and clear_output() through the kernel's IOPub."""

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        _offload_kernel.publish(data, metadata, transient, update)

    def clear_output(self, wait=False):
        _offload_kernel.clear_output(wait)


class KernelDisplayHook(DisplayHook):
    """A value shown by a cell that IPython runs (run_cell) goes out as the
    kernel shows any cell's value: execute_result, _ and Out[] updated."""

    def __init__(self, kernel_hook, **kwargs):
        super().__init__(**kwargs)
        self._kernel_hook = kernel_hook

    def __call__(self, result=None):
        self._kernel_hook(result)


class Kernel:
    """What libraries look for at get_ipython().kernel (ipywidgets, tqdm,
    plotting libraries): the comm manager and the request being served."""

    implementation = 'offload'

    def __init__(self, shell):
        self.shell = shell

    @property
    def comm_manager(self):
        import comm
        return comm.get_comm_manager()

    def get_parent(self, channel=None):
        return _offload_kernel.parent()

    @property
    def _parent_header(self):
        return _offload_kernel.parent()


def _kernel_magic(name, cell):
    """The kernel's magic `name` as a function for IPython's MagicsManager."""
    run = _offload_magics.run_cell_magic if cell else _offload_magics.run_line_magic

    if cell:
        def magic(line, body):
            if name in TRANSFORMED:
                body = shell_instance().transform_cell(body)
            return run(name, line, body)
    else:
        def magic(line):
            if name == 'time':  # it has no options: the line is the statement
                line = shell_instance().transform_cell(line).rstrip('\n')
            return run(name, line)
    magic.__name__ = name
    magic.__doc__ = _offload_magics.help(name)
    return magic


class ZMQInteractiveShell(InteractiveShell):
    """The offload kernel's shell.  The class name is ipykernel's, because
    libraries (pandas, plotly, tqdm) decide they run in a notebook by it."""

    def __init__(self, kernel_hook, **kwargs):
        self._kernel_hook = kernel_hook
        super().__init__(**kwargs)
        # Libraries (tqdm before 4.67, others) know a kernel by IPKernelApp in the config.
        if 'IPKernelApp' not in self.config:
            self.config.IPKernelApp.offload = True
        self.kernel = Kernel(self)
        self._result = None

    # ---- the parts of InteractiveShell that the kernel provides

    def init_environment(self):
        import os
        # A command run by ! has no terminal to page on or ask colours of.
        os.environ.update(PAGER='cat', GIT_PAGER='cat', TERM='xterm-color', CLICOLOR='1')

    def init_virtualenv(self):
        """The kernel runs the interpreter it was built with: nothing to detect."""

    def init_history(self):
        ns = self.user_ns
        self.history_manager = KernelHistory(self, ns['In'], ns['Out'])
        self.configurables.append(self.history_manager)

    def init_display_pub(self):
        self.display_pub = KernelDisplayPublisher(parent=self, shell=self)
        self.configurables.append(self.display_pub)

    def init_displayhook(self):
        self.displayhook = KernelDisplayHook(self._kernel_hook, parent=self, shell=self,
                                             cache_size=self.cache_size)
        self.configurables.append(self.displayhook)
        self.display_trap = DisplayTrap(hook=self.displayhook)

    def init_hooks(self):
        super().init_hooks()
        self.set_hook('show_in_pager', page.as_hook(payloadpage.page), 99)

    def init_magics(self):
        super().init_magics()
        for name in LINE_MAGICS:
            self.register_magic_function(_kernel_magic(name, False), 'line', name)
        for name in CELL_MAGICS:
            self.register_magic_function(_kernel_magic(name, True), 'cell', name)

    def enable_gui(self, gui=None):
        if gui not in (None, 'inline'):
            raise UsageError('this kernel has no %s event loop: figures show inline' % gui)

    def enable_matplotlib(self, gui=None):
        _offload_magics.run_line_magic('matplotlib', gui or '')
        return 'inline', 'module://offload_kernel.mpl_inline'

    def ask_exit(self):
        self.payload_manager.write_payload({'source': 'ask_exit', 'keepkernel': False})

    def set_next_input(self, text, replace=False):
        self.payload_manager.write_payload(
            {'source': 'set_next_input', 'text': text, 'replace': replace})

    def _showtraceback(self, etype, evalue, stb):
        sys.stdout.flush()
        sys.stderr.flush()
        _offload_kernel.iopub('error', {'ename': etype.__name__, 'evalue': str(evalue),
                                        'traceback': stb})
        self._last_traceback = stb

    def system_piped(self, cmd):
        """!cmd as ipykernel runs it: output streams while the command runs,
        Ctrl-C reaches the command, the status goes to _exit_code."""
        if cmd.rstrip().endswith('&'):
            raise OSError('Background processes not supported.')
        self.user_ns['_exit_code'] = _system(self.var_expand(cmd, depth=1))

    system = system_piped

    # ---- the kernel's calls, around each cell it runs

    def begin_cell(self, raw, count, silent, store_history, transform):
        """Transform a cell, record it and fire pre_execute/pre_run_cell; the
        Python text to run."""
        self.execution_count = count
        source = self.transform_cell(raw) if transform else raw
        if store_history:
            self._store_inputs(count, source, raw)
            # Tracebacks then name the cell "Cell In[n]", as under ipykernel.
            self.compile._filename_map['<cell %d>' % count] = count
        info = ExecutionInfo(raw, store_history, silent, True, None)
        self._result = ExecutionResult(info)
        self._result.execution_count = count
        self.events.trigger('pre_execute')
        if not silent:
            self.events.trigger('pre_run_cell', info)
        return source

    def _store_inputs(self, count, source, raw):
        """IPython's store_inputs, keeping In[n] the text of cell n: IPython
        leaves out `exit`/`quit` cells, the kernel numbers every cell."""
        hm = self.history_manager
        for hist in (hm.input_hist_parsed, hm.input_hist_raw):
            hist.extend([''] * (count - len(hist)))
        hm.store_inputs(count, source, raw)
        for hist, text in ((hm.input_hist_parsed, source), (hm.input_hist_raw, raw)):
            if len(hist) == count:
                hist.append(text.rstrip('\n'))

    def end_cell(self, error):
        """Fire post_execute/post_run_cell; the payloads the cell left."""
        result, self._result = self._result, None
        if result is not None:
            result.error_in_exec = error
            self.last_execution_succeeded = error is None
            self.last_execution_result = result
            self.events.trigger('post_execute')
            if not result.info.silent:
                self.events.trigger('post_run_cell', result)
        payload = self.payload_manager.read_payload()
        self.payload_manager.clear_payload()
        return payload

    def error_content(self, etype, value, tb):
        """({ename, evalue, traceback} in IPython's format, shown): %xmode
        decides the form; a UsageError is shown now as one stderr line, as
        IPython does.  %tb shows it again."""
        content = {'ename': etype.__name__, 'evalue': str(value), 'traceback': []}
        if issubclass(etype, (UsageError, _offload_magics.UsageError)):
            self.show_usage_error(value)
            return content, True
        if issubclass(etype, SyntaxError):
            stb = self.SyntaxTB.structured_traceback(etype, value, [])
        elif hasattr(value, '_render_traceback_'):
            stb = value._render_traceback_()
        else:
            # tb starts at the cell's own frame: there is no run_code frame to skip
            stb = self.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=0)
        content['traceback'] = stb
        self._last_traceback = stb
        return content, False


InteractiveShellABC.register(ZMQInteractiveShell)


def shell_instance():
    return InteractiveShell.instance() if InteractiveShell.initialized() else None


def start(kernel_hook):
    """Make the shell around __main__ (once); returns it."""
    if InteractiveShell.initialized():
        return InteractiveShell.instance()
    main = sys.modules['__main__']
    shell = ZMQInteractiveShell.instance(kernel_hook, user_module=main, user_ns=main.__dict__)
    # IPython's display goes through the shell's publisher from now on, so
    # that %%capture and friends can swap it.
    from . import display
    display.use_shell(shell)
    return shell
