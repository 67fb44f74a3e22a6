"""Jupyter comms (the channel ipywidgets and other interactive libraries use).

The `comm` package holds the protocol's bookkeeping (CommManager, BaseComm);
a kernel supplies how a comm message is sent and who receives the frontend's
messages, by replacing comm.create_comm and comm.get_comm_manager as
ipykernel does.  Done when `comm` is first imported, so a session that never
uses widgets never loads it.  The C kernel routes comm_open, comm_msg,
comm_close and comm_info_request here.
"""

import sys

import _offload_kernel

_manager = None


def install(comm):
    """Make `comm` send through the kernel (run right after it is imported)."""
    global _manager
    from comm.base_comm import BaseComm, CommManager

    class Comm(BaseComm):
        def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
            content = dict(keys, data={} if data is None else data, comm_id=self.comm_id)
            _offload_kernel.iopub(msg_type, content, metadata, buffers)

    _manager = CommManager()
    comm.create_comm = Comm
    comm.get_comm_manager = lambda: _manager


def handle(msg_type, msg):
    """A comm message from the frontend.  True when handled here; False when
    no comm machinery is loaded, so the kernel answers as if none existed."""
    if _manager is None:
        return False
    handler = {'comm_open': _manager.comm_open, 'comm_msg': _manager.comm_msg,
               'comm_close': _manager.comm_close}[msg_type]
    try:
        handler(None, None, msg)
    except Exception:
        # A widget's callback failed: the user sees it, the kernel goes on.
        import traceback
        traceback.print_exc(file=sys.stderr)
    return True


def info(target_name=None):
    """comm_info_reply's `comms`: {comm_id: {target_name}}."""
    if _manager is None:
        return {}
    return {cid: {'target_name': c.target_name} for cid, c in _manager.comms.items()
            if target_name is None or c.target_name == target_name}
