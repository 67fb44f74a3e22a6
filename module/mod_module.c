/* The offload module: init, exceptions, the runtime-error boundary, and the
 * functions that belong to no one type. */
#include "mod_module.h"

#include "config.h"

PyObject *mod_DeviceNotFoundError, *mod_DeviceError, *mod_ExecutionPlacementError;
static PyObject *numpy; /* owned for the process */
static PyTypeObject *numpy_ndarray, *numpy_generic; /* numpy's, owned for the process */

/* The exception the interrupt check found (KeyboardInterrupt, or what the
 * program's SIGINT handler raised), kept from the check, which runs deep in
 * a wait, to mod_raise, which the waiting call reaches with OFL_ERR_INTERRUPTED.
 * Per thread: only the main thread's check finds signals, but any may wait. */
static _Thread_local PyObject *interrupt_type, *interrupt_value, *interrupt_tb;

/* The runtime's interrupt check (ofl_set_interrupt_check), called every
 * 20 ms of a device wait, without the GIL: takes it for a moment and runs
 * Python's pending signal handlers. */
static int interrupt_pending(void)
{
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

void mod_request_interrupt(void) { ofl_request_interrupt(); }
void mod_end_interrupt(void) {
    if (ofl_take_interrupt()) ofl_cancel_queued();
}

static void raise_interrupt(const ofl_error *err)
{
    if (interrupt_type) {
        PyErr_Restore(interrupt_type, interrupt_value, interrupt_tb);
        interrupt_type = interrupt_value = interrupt_tb = NULL;
    } else {
        PyErr_SetString(PyExc_KeyboardInterrupt, err->msg);
    }
}

PyObject *mod_raise(const ofl_error *err)
{
    PyObject *type = PyExc_RuntimeError;
    switch (err->code) {
    case OFL_ERR_INTERRUPTED: raise_interrupt(err); return NULL;
    case OFL_ERR_BAD_FILTER:
    case OFL_ERR_INVALID: type = PyExc_ValueError; break;
    case OFL_ERR_NOT_FOUND: type = mod_DeviceNotFoundError; break;
    case OFL_ERR_OUT_OF_MEMORY: type = PyExc_MemoryError; break;
    case OFL_ERR_DEVICE: type = mod_DeviceError; break;
    case OFL_OK: break; /* a caller bug; RuntimeError says so rather than crash */
    }
    PyErr_SetString(type, err->msg[0] ? err->msg : "offload runtime error");
    return NULL;
}

PyObject *mod_numpy_borrowed(void) { return numpy; }
bool mod_is_numpy_array(PyObject *o) { return PyObject_TypeCheck(o, numpy_ndarray); }
bool mod_is_numpy_scalar(PyObject *o) { return PyObject_TypeCheck(o, numpy_generic); }

PyObject *mod_np_call(const char *name, PyObject *args, PyObject *kw)
{
    PyObject *f = PyObject_GetAttrString(numpy, name);
    if (!f)
        return NULL;
    PyObject *r = args ? PyObject_Call(f, args, kw) : PyObject_CallNoArgs(f);
    Py_DECREF(f);
    return r;
}

/* _check_same_device(*arrays) -> Device or None: the one device that every
 * offload array among the arguments lives on (other arguments are ignored:
 * host data goes wherever the arrays are). Operations and launches use it. */
static PyObject *check_same_device(PyObject *self, PyObject *args)
{
    mod_array *first = NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *o = PyTuple_GET_ITEM(args, i);
        if (!mod_array_check(o))
            continue;
        mod_array *a = (mod_array *)o;
        if (!first) {
            first = a;
        } else if (mod_array_device(a) != mod_array_device(first)) {
            const ofl_device_info *x = ofl_device_get_info(mod_array_device(first));
            const ofl_device_info *y = ofl_device_get_info(mod_array_device(a));
            return PyErr_Format(mod_ExecutionPlacementError,
                                "arrays on different devices in one operation: %s (%s) and %s "
                                "(%s); move one with .to_device(...) first",
                                x->filter, x->name, y->filter, y->name);
        }
    }
    if (!first)
        Py_RETURN_NONE;
    return mod_device_new(mod_array_device(first));
}

int mod_atexit(PyMethodDef *def)
{
    PyObject *atexit = PyImport_ImportModule("atexit");
    PyObject *fn = PyCFunction_New(def, NULL);
    PyObject *r = atexit && fn ? PyObject_CallMethod(atexit, "register", "O", fn) : NULL;
    Py_XDECREF(atexit);
    Py_XDECREF(fn);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* synchronize(device=None): waits for everything queued on the device, or
 * with no device on every device that has been used (a launch on a second
 * device is queued work too). */
static PyObject *synchronize(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"device", NULL};
    PyObject *arg = Py_None;
    ofl_device *dev = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:synchronize", kwlist, &arg) ||
        (arg != Py_None && mod_device_resolve(arg, &dev) < 0))
        return NULL;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = dev ? ofl_synchronize(dev, &err) : ofl_synchronize_all(&err);
    Py_END_ALLOW_THREADS
    if (rc)
        return mod_raise(&err);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_check_same_device", check_same_device, METH_VARARGS,
     "_check_same_device(*arrays) -> Device or None\n\nThe device all offload arrays among the "
     "arguments live on; ExecutionPlacementError naming both devices when they differ."},
    {"synchronize", (PyCFunction)(void (*)(void))synchronize, METH_VARARGS | METH_KEYWORDS,
     "synchronize(device=None)\n\nWait for all work queued on the device (default: on every "
     "device used so far). Ctrl-C (the notebook's interrupt) stops the wait and the device's "
     "kernels, as KeyboardInterrupt."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "offload",
    .m_doc = "offload: devices, device arrays and device kernels for Python.\n\n"
             "Devices: get_devices, Device, default_device, set_default_device, lsplatform.\n"
             "Arrays: ndarray, asarray, empty, zeros, ones, full, arange, *_like, asnumpy,\n"
             "from_dlpack, synchronize. Errors: DeviceNotFoundError, DeviceError, ExecutionPlacementError.",
    .m_size = -1,
    .m_methods = module_methods,
};

/* The classes outlive any one module object (a re-import after deleting it
 * from sys.modules runs init again): the statics own them for the process. */
static int new_exception(PyObject **slot, const char *name, PyObject *base, const char *doc)
{
    if (!*slot)
        *slot = PyErr_NewExceptionWithDoc(name, doc, base, NULL);
    return *slot ? 0 : -1;
}

PyMODINIT_FUNC PyInit_offload(void)
{
    if (!numpy) {
        numpy = PyImport_ImportModule("numpy");
        if (!numpy) /* NumPy's own ImportError says what is missing */
            return NULL;
        numpy_ndarray = (PyTypeObject *)PyObject_GetAttrString(numpy, "ndarray");
        numpy_generic = (PyTypeObject *)PyObject_GetAttrString(numpy, "generic");
        if (!numpy_ndarray || !numpy_generic)
            return NULL;
    }
    if (mod_dtype_init() < 0 || mod_array_init() < 0 || PyType_Ready(&mod_DeviceType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (new_exception(&mod_DeviceNotFoundError, "offload.DeviceNotFoundError", PyExc_LookupError,
                      "No device matches the filter (or the machine has none); the message "
                      "lists the devices that exist.") < 0 ||
        new_exception(&mod_DeviceError, "offload.DeviceError", PyExc_RuntimeError,
                      "The device or its driver reported a failure.") < 0 ||
        new_exception(&mod_ExecutionPlacementError, "offload.ExecutionPlacementError",
                      PyExc_Exception,
                      "Arrays on different devices were used in one operation or launch.") < 0 ||
        PyModule_AddObjectRef(m, "DeviceNotFoundError", mod_DeviceNotFoundError) < 0 ||
        PyModule_AddObjectRef(m, "DeviceError", mod_DeviceError) < 0 ||
        PyModule_AddObjectRef(m, "ExecutionPlacementError", mod_ExecutionPlacementError) < 0 ||
        PyModule_AddObjectRef(m, "Device", (PyObject *)&mod_DeviceType) < 0 ||
        PyModule_AddObjectRef(m, "ndarray", (PyObject *)&mod_ArrayType) < 0 ||
        PyModule_AddStringConstant(m, "__version__", PACKAGE_VERSION) < 0 ||
        mod_dtype_add_aliases(m) < 0 || mod_device_add_functions(m) < 0 ||
        mod_array_add_functions(m) < 0 || mod_dlpack_add_functions(m) < 0 ||
        mod_kernel_add_functions(m) < 0 || mod_launch_add_functions(m) < 0 || mod_loops_add_functions(m) < 0 ||
        mod_gen_init() < 0 || mod_matmul_add_functions(m) < 0 || mod_ops_add_functions(m) < 0 ||
        mod_reduce_add_functions(m) < 0)
        goto fail;
    ofl_set_interrupt_check(interrupt_pending);
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
