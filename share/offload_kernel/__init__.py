"""Python side of the offload Jupyter kernel.

The C kernel embeds CPython, imports this package once at start-up and calls
the functions below.  The kernel has to start fast, so importing this package
loads only what install() needs and cheap stdlib modules; the request handlers
(and jedi, inspect, matplotlib behind them) are imported on first use.
"""

import builtins
import importlib.util
import os
import sys

import _offload_kernel

from . import display as _display
from . import ipython_shim

__all__ = ['install', 'complete', 'inspect', 'help_text', 'is_complete', 'post_execute',
           'start_shell', 'comm_message', 'comm_info']

MPL_BACKEND = 'module://offload_kernel.mpl_inline'


def complete(code, cursor_pos, namespace, magic_names):
    """complete_reply content for code at cursor_pos (see completer.py)."""
    from . import completer
    return completer.complete(code, cursor_pos, namespace, magic_names)


def inspect(code, cursor_pos, detail_level, namespace):
    """inspect_reply content for the name at cursor_pos (see inspector.py)."""
    from . import inspector
    return inspector.inspect(code, cursor_pos, detail_level, namespace)


def help_text(expr, detail_level, namespace):
    """Pager text for `expr?` / `expr??`, None if expr is not found."""
    from . import inspector
    return inspector.help_text(expr, detail_level, namespace)


def is_complete(code):
    """is_complete_reply content for code (see iscomplete.py)."""
    from . import iscomplete
    return iscomplete.is_complete(code)


_kernel_displayhook = None  # the C kernel's sys.displayhook, for the shell's run_cell
_shell_state = {'starting': False, 'missing': None}


def start_shell():
    """IPython's shell around the kernel, made on first need (see shell.py).

    None without IPython (the reason is kept for the error the kernel shows),
    and while the shell is being made (IPython's import calls back here).
    """
    if _shell_state['starting'] or _shell_state['missing']:
        return None
    _shell_state['starting'] = True
    try:
        from . import shell
        made = shell.start(_kernel_displayhook)
    except ModuleNotFoundError as e:  # IPython or a package it needs is not installed
        _shell_state['missing'] = str(e)
        return None
    finally:
        _shell_state['starting'] = False
    _offload_kernel.set_shell(made)
    return made


def comm_message(msg_type, msg):
    """comm_open/comm_msg/comm_close from the frontend; False if no comms exist."""
    from . import comms
    return comms.handle(msg_type, msg)


def comm_info(target_name):
    from . import comms
    return comms.info(target_name)


def _getpass(prompt='Password: ', stream=None):
    # `stream` only matters on a terminal; the frontend draws its own prompt.
    return _offload_kernel.input(prompt, password=True)


def _patch_getpass(module):
    module.getpass = _getpass


def _before_tqdm():
    """tqdm.auto picks its notebook bars by the name of ipykernel's shell
    module: lend it this kernel's shell module for just that import."""
    shell = start_shell()
    if shell is not None and 'ipykernel.zmqshell' not in sys.modules:
        sys.modules['ipykernel.zmqshell'] = sys.modules[type(shell).__module__]
        ipython_shim.when_imported('tqdm.autonotebook', _after_tqdm)


def _after_tqdm(module):
    if getattr(sys.modules.get('ipykernel.zmqshell'), '__name__', '') == __name__ + '.shell':
        del sys.modules['ipykernel.zmqshell']


def _install_comms(module):
    from . import comms
    comms.install(module)


def install(user_ns):
    """Hook the interpreter into the kernel; called once at start-up.

    `user_ns` is accepted for the C side's convenience; nothing is put in it,
    everything user-visible goes into builtins or is patched on import.
    """
    global _kernel_displayhook
    _kernel_displayhook = sys.displayhook
    builtins.display = _display.display
    if importlib.util.find_spec('IPython') is not None:
        builtins.get_ipython = start_shell  # until the shell puts its own in the namespace
        # Whoever imports IPython (a library probing for a notebook) finds the shell.
        ipython_shim.when_imported('IPython', lambda module: start_shell())
        ipython_shim.before_import('tqdm.autonotebook', _before_tqdm)
    ipython_shim.when_imported('comm', _install_comms)
    builtins.input = _offload_kernel.input  # str()s its prompt, like the built-in
    # getpass costs several ms to import, so patch it when the user imports it.
    ipython_shim.when_imported('getpass', _patch_getpass)
    ipython_shim.install()
    os.environ.setdefault('MPLBACKEND', MPL_BACKEND)


def post_execute():
    """Show the figures a cell left open, as IPython's inline backend does.

    The C side calls this after each cell once matplotlib.pyplot is imported.
    """
    # Until pyplot has loaded our backend module no figure can use it.
    if __name__ + '.mpl_inline' not in sys.modules:
        return
    import matplotlib
    if matplotlib.get_backend() == MPL_BACKEND:
        from . import mpl_inline
        mpl_inline.show()
