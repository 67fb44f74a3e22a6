"""Patch modules as they are imported; used to make IPython.display work,
and to prepare for modules that look for IPython without importing it.

IPython's display() only prints when no InteractiveShell exists, and starting
one would cost far more than this kernel's whole start-up.  So instead, right
after IPython.core.display_functions runs, its display functions are swapped
for ours.  Everything else in IPython reaches them through that module
(`from IPython.core.display_functions import *` in IPython.display, module
attribute lookups in IPython.core.display), so patching it early is enough;
IPython.display is patched too in case it was loaded before the hook.
"""

import sys

_patches = {}  # module name -> [function(module)] run right after it executes
_before = {}  # module name -> [function()] run once, just before it is first imported


def when_imported(name, patch):
    """Run patch(module) once `name` is imported (now, if it already is)."""
    _patches.setdefault(name, []).append(patch)
    if name in sys.modules:
        patch(sys.modules[name])


def before_import(name, prepare):
    """Run prepare() once, just before `name` is first imported."""
    if name not in sys.modules:
        _before.setdefault(name, []).append(prepare)


class _PatchingLoader:
    """Wraps the real loader: executes the module, then applies its patches."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        for patch in _patches.get(module.__name__, ()):
            patch(module)

    def __getattr__(self, name):
        # get_source, get_resource_reader, ...: tracebacks and inspect use them.
        return getattr(self._loader, name)


class _PatchingFinder:
    """A sys.meta_path finder that only intervenes for patched module names."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        for prepare in _before.pop(fullname, ()):
            prepare()
        if fullname not in _patches:
            return None  # the common case: two dict lookups per import
        # Let the rest of sys.meta_path find the module, then wrap its loader.
        for finder in sys.meta_path:
            find_spec = getattr(finder, 'find_spec', None)
            if finder is cls or find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                    spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


def _patch_display(module):
    from . import display
    for name in ('display', 'update_display', 'clear_output',
                 'publish_display_data', 'DisplayHandle'):
        # Only replace what the module defines: IPython.core.display serves
        # these names through a deprecation __getattr__ and should keep doing so.
        if name in vars(module):
            setattr(module, name, getattr(display, name))


def install():
    """Put the finder first on sys.meta_path and register IPython's patches."""
    for name in ('IPython.core.display_functions', 'IPython.display'):
        when_imported(name, _patch_display)
    if _PatchingFinder not in sys.meta_path:
        sys.meta_path.insert(0, _PatchingFinder)
