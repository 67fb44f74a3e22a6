/* The offload module: init ties the rooms together (core/, launch/, lib/:
 * the only place that names all three), and the module functions that
 * belong to no one room. */
#include "mod_public.h"

#include "config.h"
#include "jit.h"
#include "jit_cache.h"
#include "lib/mod_lib.h"

void mod_request_interrupt(void) { ofl_request_interrupt(); }
void mod_set_debug_log(void (*log)(const char *line)) { jit_cache_set_log(log); }

void mod_end_interrupt(void) {
    if (ofl_take_interrupt()) ofl_cancel_queued();
}

/* _check_same_device(*arrays) -> Device or None: the one device that every
 * offload array among the arguments lives on (other arguments are ignored:
 * host data goes wherever the arrays are). Operations and launches use it. */
static PyObject *check_same_device(PyObject *self, PyObject *args) {
    mod_array *first = NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *o = PyTuple_GET_ITEM(args, i);
        if (!mod_array_check(o)) continue;
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
    if (!first) Py_RETURN_NONE;
    return mod_device_new(mod_array_device(first));
}

/* synchronize(device=None): waits for everything queued on the device, or
 * with no device on every device that has been used (a launch on a second
 * device is queued work too). */
static PyObject *synchronize(PyObject *self, PyObject *args, PyObject *kw) {
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
    if (rc) return mod_raise(&err);
    Py_RETURN_NONE;
}

/* The vendor math libraries' pip wheels (nvidia-cublas-cu12, ...) install
 * into site-packages, which the runtime cannot know: it is told sys.path's
 * directories at import. Failing that, it looks where the system's are. */
static void math_library_search(void) {
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    PyObject *sep = PyUnicode_FromString(":");
    PyObject *dirs = NULL, *joined = NULL;
    if (path && PyList_Check(path) && sep && (dirs = PyList_New(0))) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(path); i++) {
            PyObject *d = PyList_GET_ITEM(path, i);
            if (PyUnicode_Check(d) && PyUnicode_GET_LENGTH(d) > 0 && PyList_Append(dirs, d) < 0)
                break;
        }
        joined = PyUnicode_Join(sep, dirs);
    }
    const char *text = joined ? PyUnicode_AsUTF8(joined) : NULL;
    if (text) ofl_math_search(text);
    PyErr_Clear(); /* a sys.path it cannot read leaves the system's libraries */
    Py_XDECREF(joined);
    Py_XDECREF(dirs);
    Py_XDECREF(sep);
}

static PyMethodDef module_methods[] = {
    {"_check_same_device", check_same_device, METH_VARARGS,
     "_check_same_device(*arrays) -> Device or None\n\nThe device all offload arrays among the "
     "arguments live on; ExecutionPlacementError naming both devices when they differ."},
    {"synchronize", MOD_KWFUNC(synchronize),
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
             "from_dlpack, synchronize. Errors: DeviceNotFoundError, DeviceError, "
             "ExecutionPlacementError.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit_offload(void) {
    if (mod_numpy_init() < 0 || mod_dtype_init() < 0 ||
        mod_array_init(&mod_lib_array_kernels) < 0 || PyType_Ready(&mod_DeviceType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    if (mod_errors_add(m) < 0 ||
        PyModule_AddObjectRef(m, "Device", (PyObject *)&mod_DeviceType) < 0 ||
        PyModule_AddObjectRef(m, "ndarray", (PyObject *)&mod_ArrayType) < 0 ||
        PyModule_AddStringConstant(m, "__version__", PACKAGE_VERSION) < 0 ||
        PyModule_AddStringConstant(m, "_build_key", jit_build_key()) < 0 ||
        mod_dtype_add_aliases(m) < 0 || mod_device_add_functions(m) < 0 ||
        mod_create_add_functions(m) < 0 || mod_dlpack_init(m) < 0 || mod_pickle_init(m) < 0 ||
        mod_kernel_add_functions(m) < 0 || mod_constexpr_add_functions(m) < 0 ||
        mod_library_add_functions(m) < 0 || mod_range_add_functions(m) < 0 ||
        mod_loops_add_functions(m) < 0 || mod_lib_add_functions(m) < 0)
        goto fail;
    mod_errors_catch_interrupts();
    math_library_search();
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
