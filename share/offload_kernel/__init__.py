"""Python side of the offload Jupyter kernel.

The C kernel embeds CPython, imports this package once at start-up and calls
the functions below.  The kernel has to start fast, so importing this package
loads only what install() needs and cheap stdlib modules; the request handlers
(and jedi, inspect, matplotlib behind them) are imported on first use.
"""

import builtins
import os
import sys

import _offload_kernel

from . import display as _display
from . import ipython_shim

__all__ = ['install', 'complete', 'inspect', 'help_text', 'is_complete', 'post_execute']

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


def _getpass(prompt='Password: ', stream=None):
    # `stream` only matters on a terminal; the frontend draws its own prompt.
    return _offload_kernel.input(prompt, password=True)


def _patch_getpass(module):
    module.getpass = _getpass


def install(user_ns):
    """Hook the interpreter into the kernel; called once at start-up.

    `user_ns` is accepted for the C side's convenience; nothing is put in it,
    everything user-visible goes into builtins or is patched on import.
    """
    builtins.display = _display.display
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
