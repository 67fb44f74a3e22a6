/* The module's exceptions and the boundary where runtime errors become them,
 * interrupts included. */
#include "mod_core.h"

PyObject *mod_DeviceError, *mod_ExecutionPlacementError;
static PyObject *DeviceNotFoundError; /* LookupError */

/* The exception the interrupt check found (KeyboardInterrupt, or what the
 * program's SIGINT handler raised), kept from the check, which runs deep in
 * a wait, to mod_raise, which the waiting call reaches with OFL_ERR_INTERRUPTED.
 * Per thread: only the main thread's check finds signals, but any may wait. */
static _Thread_local PyObject *interrupt_type, *interrupt_value, *interrupt_tb;

/* The runtime's interrupt check (ofl_set_interrupt_check), called every
 * 20 ms of a device wait, without the GIL: takes it for a moment and runs
 * Python's pending signal handlers. */
static int interrupt_pending(void) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb); /* a wait with the GIL held may have one set: not ours */
    int hit = PyErr_CheckSignals() < 0;
    if (hit) {
        Py_CLEAR(interrupt_type);
        Py_CLEAR(interrupt_value);
        Py_CLEAR(interrupt_tb);
        PyErr_Fetch(&interrupt_type, &interrupt_value, &interrupt_tb);
    }
    PyErr_Restore(t, v, tb);
    PyGILState_Release(g);
    return hit;
}

void mod_errors_catch_interrupts(void) { ofl_set_interrupt_check(interrupt_pending); }

static void raise_interrupt(const ofl_error *err) {
    if (interrupt_type) {
        PyErr_Restore(interrupt_type, interrupt_value, interrupt_tb);
        interrupt_type = interrupt_value = interrupt_tb = NULL;
    } else {
        PyErr_SetString(PyExc_KeyboardInterrupt, err->msg);
    }
}

PyObject *mod_raise(const ofl_error *err) {
    PyObject *type = PyExc_RuntimeError;
    switch (err->code) {
    case OFL_ERR_INTERRUPTED: raise_interrupt(err); return NULL;
    case OFL_ERR_BAD_FILTER:
    case OFL_ERR_INVALID: type = PyExc_ValueError; break;
    case OFL_ERR_NOT_FOUND: type = DeviceNotFoundError; break;
    case OFL_ERR_OUT_OF_MEMORY: type = PyExc_MemoryError; break;
    case OFL_ERR_DEVICE: type = mod_DeviceError; break;
    case OFL_OK: break; /* a caller bug; RuntimeError says so rather than crash */
    }
    PyErr_SetString(type, err->msg[0] ? err->msg : "offload runtime error");
    return NULL;
}

/* The classes outlive any one module object (a re-import after deleting it
 * from sys.modules runs init again): the statics own them for the process. */
static int new_exception(PyObject **slot, const char *name, PyObject *base, const char *doc) {
    if (!*slot) *slot = PyErr_NewExceptionWithDoc(name, doc, base, NULL);
    return *slot ? 0 : -1;
}

int mod_errors_add(PyObject *m) {
    if (new_exception(&DeviceNotFoundError, "offload.DeviceNotFoundError", PyExc_LookupError,
                      "No device matches the filter (or the machine has none); the message "
                      "lists the devices that exist.") < 0 ||
        new_exception(&mod_DeviceError, "offload.DeviceError", PyExc_RuntimeError,
                      "The device or its driver reported a failure.") < 0 ||
        new_exception(&mod_ExecutionPlacementError, "offload.ExecutionPlacementError",
                      PyExc_Exception,
                      "Arrays on different devices were used in one operation or launch.") < 0 ||
        PyModule_AddObjectRef(m, "DeviceNotFoundError", DeviceNotFoundError) < 0 ||
        PyModule_AddObjectRef(m, "DeviceError", mod_DeviceError) < 0 ||
        PyModule_AddObjectRef(m, "ExecutionPlacementError", mod_ExecutionPlacementError) < 0)
        return -1;
    return 0;
}
