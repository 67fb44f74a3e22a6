"""display() and friends, with the same signatures as IPython.display's.

Formatting and sending are done in C (`_offload_kernel.mimebundle` and
`_offload_kernel.publish`); this module only does IPython's bookkeeping of
metadata, display ids and updates.  The builtin `display` is this one, and
ipython_shim makes IPython.display hand out these functions too.
"""

import _offload_kernel

__all__ = ['display', 'update_display', 'clear_output', 'publish_display_data', 'DisplayHandle']


def _new_id():
    import uuid  # costs a few ms, and only display_id=True needs it
    return uuid.uuid4().hex


def _merge(d1, d2):
    """Update d1 with d2, merging nested dicts rather than replacing them."""
    if not isinstance(d1, dict) or not isinstance(d2, dict):
        return d2
    for key, value in d2.items():
        d1[key] = _merge(d1.get(key), value)
    return d1


_shell = None  # IPython's shell once it exists: its display_pub may be swapped (%%capture)


def use_shell(shell):
    """Send displays through shell.display_pub from now on, as IPython does."""
    global _shell
    _shell = shell


def publish_display_data(data, metadata=None, source=None, *, transient=None, update=False):
    """Send a raw mimebundle; `source` is ignored, as in IPython (deprecated)."""
    if _shell is not None:
        _shell.display_pub.publish(data, metadata, transient=transient, update=update)
    else:
        _offload_kernel.publish(data, metadata, transient, update)


def display(*objs, include=None, exclude=None, metadata=None, transient=None,
            display_id=None, raw=False, clear=False, update=False, **kwargs):
    """Display each object as rich output (see IPython.display.display).

    Returns a DisplayHandle when display_id is given (True makes a new id).
    Other keyword arguments go to publish_display_data, as in IPython.
    """
    transient = dict(transient or {})
    if display_id:
        if display_id is True:
            display_id = _new_id()
        transient['display_id'] = display_id
    if update and 'display_id' not in transient:
        raise TypeError('display_id required for update_display')
    if not objs and display_id:
        # An empty output that a later update can fill in.
        objs, raw = ({},), True
    if clear:
        clear_output(True)
    for obj in objs:
        if raw:
            data, md = obj, dict(metadata or {})
        else:
            data, md = _offload_kernel.mimebundle(obj, include, exclude)
            if not data:
                continue  # e.g. _ipython_display_ did its own output
            if metadata:
                _merge(md, metadata)  # explicit metadata wins
        publish_display_data(data, md, transient=transient or None, update=update, **kwargs)
    if display_id:
        return DisplayHandle(display_id)
    return None


def update_display(obj, *, display_id, **kwargs):
    """Replace the output(s) shown with `display_id` by `obj`."""
    display(obj, display_id=display_id, update=True, **kwargs)


def clear_output(wait=False):
    """Clear the cell's output; with wait=True, only when new output arrives."""
    if _shell is not None:
        _shell.display_pub.clear_output(wait)
    else:
        _offload_kernel.clear_output(wait)


class DisplayHandle:
    """A handle on an updatable display (see IPython.display.DisplayHandle)."""

    def __init__(self, display_id=None):
        self.display_id = display_id if display_id is not None else _new_id()

    def __repr__(self):
        return '<%s display_id=%s>' % (type(self).__name__, self.display_id)

    def display(self, obj, **kwargs):
        """Show `obj` as a new output with this id (updating the others too)."""
        display(obj, display_id=self.display_id, **kwargs)

    def update(self, obj, **kwargs):
        """Replace every output with this id by `obj`."""
        update_display(obj, display_id=self.display_id, **kwargs)
