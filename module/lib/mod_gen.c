/* mod_gen: kernels the module still writes as text (mod_namespace's
 * creation kernels; the library's others are module/kernels/'s), and at exit
 * the wait for every device's queued work.
 *
 * Each is Python source text that the JIT compiles exactly as it compiles a
 * user's @offload.kernel: typed per signature (dtypes, dimensions, layout),
 * built per device, cached in memory and on disk, listed by %kernels. This
 * file turns a text into a Kernel once and keeps it for the process; the
 * text's globals are `np` (numpy), `math` and `ol` (offload). */
#include "mod_lib.h"

#include <stdio.h>
#include <string.h>

static PyObject *generated; /* dict: source text -> Kernel, until exit */

/* A Kernel over the function `name` that source defines. Its file name is
 * registered with linecache, so inspect (and the JIT, and error carets)
 * read the text as they read a notebook cell. */
static PyObject *compile_source(const char *name, PyObject *source) {
    PyObject *builtins = PyEval_GetBuiltins(); /* borrowed */
    PyObject *offload = PyImport_ImportModule("offload");
    PyObject *math = PyImport_ImportModule("math");
    PyObject *filename =
        PyUnicode_FromFormat("<offload %s #%zd>", name, PyDict_GET_SIZE(generated) + 1);
    PyObject *lines = PyObject_CallMethod(source, "splitlines", "O", Py_True);
    PyObject *ns = PyDict_New(), *code = NULL, *kernel = NULL;
    if (!lines || !filename || !offload || !math || !ns || mod_linecache_put(filename, lines) < 0)
        goto out;
    if (PyDict_SetItemString(ns, "__builtins__", builtins) < 0 ||
        PyDict_SetItemString(ns, "ol", offload) < 0 ||
        PyDict_SetItemString(ns, "np", mod_numpy_borrowed()) < 0 ||
        PyDict_SetItemString(ns, "math", math) < 0)
        goto out;
    code = Py_CompileString(PyUnicode_AsUTF8(source), PyUnicode_AsUTF8(filename), Py_file_input);
    PyObject *r = code ? PyEval_EvalCode(code, ns, ns) : NULL;
    if (!r) goto out;
    Py_DECREF(r);
    PyObject *fn = PyDict_GetItemString(ns, name); /* borrowed */
    if (!fn) {
        PyErr_Format(PyExc_SystemError, "offload: generated source does not define %s", name);
        goto out;
    }
    kernel = PyObject_CallMethod(offload, "kernel", "O", fn);
    if (kernel) mod_kernel_trusted(kernel); /* no default index checks for what we wrote */
out:
    Py_XDECREF(offload);
    Py_XDECREF(math);
    Py_XDECREF(filename);
    Py_XDECREF(lines);
    Py_XDECREF(ns);
    Py_XDECREF(code);
    return kernel;
}

PyObject *mod_gen_kernel_borrowed(const char *name, const char *source) {
    PyObject *key = PyUnicode_FromString(source);
    if (!key) return NULL;
    PyObject *k = PyDict_GetItemWithError(generated, key);
    if (!k && !PyErr_Occurred() && (k = compile_source(name, key))) {
        int rc = PyDict_SetItem(generated, key, k);
        Py_DECREF(k); /* the dict holds it */
        if (rc < 0) k = NULL;
    }
    Py_DECREF(key);
    return k;
}

PyObject *mod_gen_launch(const char *name, const char *source, int ndim, const Py_ssize_t *size,
                         PyObject *const *args, Py_ssize_t nargs) {
    PyObject *k = mod_gen_kernel_borrowed(name, source);
    if (!k) return NULL;
    mod_shape range = {.ndim = ndim};
    for (int d = 0; d < ndim; d++) range.size[d] = size[d];
    return mod_kernel_launch(k, &range, args, nargs, false);
}

mod_array *mod_lib_array_arg(PyObject *x, const char *fn) {
    if (mod_array_check(x)) return (mod_array *)x;
    bool host = mod_is_numpy_array(x) || PyList_Check(x) || PyTuple_Check(x);
    PyErr_Format(PyExc_TypeError, "offload.%s needs an offload array, not %.100s%s", fn,
                 Py_TYPE(x)->tp_name,
                 host ? " (call offload.asarray(...) on it first: offload never copies to the "
                        "device behind your back)"
                      : "");
    return NULL;
}

int mod_lib_axis_error(Py_ssize_t axis, int nd, const char *prefix) {
    PyObject *mod = PyImport_ImportModule("numpy.exceptions");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "AxisError") : NULL;
    PyObject *exc = cls ? PyObject_CallFunction(cls, "niz", axis, nd, prefix) : NULL;
    if (exc) PyErr_SetObject(cls, exc);
    Py_XDECREF(mod);
    Py_XDECREF(cls);
    Py_XDECREF(exc);
    return -1;
}

int mod_lib_axis(PyObject *o, int nd, const char *prefix, int *out) {
    Py_ssize_t a = PyNumber_AsSsize_t(o, PyExc_OverflowError); /* TypeError for non-integers */
    if (a == -1 && PyErr_Occurred()) return -1;
    if (a < -nd || a >= nd) return mod_lib_axis_error(a, nd, prefix);
    *out = (int)(a < 0 ? a + nd : a);
    return 0;
}

/* At exit: generated kernels go with everything else, so they release their
 * device programs like any other; and the devices finish their queued work
 * first -- frees do not wait for it, and PoCL, still running a kernel while
 * the process tears down, crashes now and then. */
static PyObject *release_generated(PyObject *self, PyObject *unused) {
    ofl_error err;
    Py_BEGIN_ALLOW_THREADS
    ofl_synchronize_launched(
        &err); /* a failure was the work's to report; nothing to do with it now */
    Py_END_ALLOW_THREADS
    PyDict_Clear(generated);
    Py_RETURN_NONE;
}

static PyMethodDef release_def = {"_release_generated", release_generated, METH_NOARGS, NULL};

int mod_gen_init(void) {
    if (generated) return 0;
    if (!(generated = PyDict_New())) return -1;
    return mod_atexit(&release_def);
}

PyObject *mod_lib_call(const char *name, PyObject *args, PyObject *kw) {
    PyObject *ol = args && !PyErr_Occurred() ? PyImport_ImportModule("offload") : NULL;
    PyObject *fn = ol ? PyObject_GetAttrString(ol, name) : NULL;
    PyObject *r = fn ? PyObject_Call(fn, args, kw) : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(ol);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
}

int mod_lib_add_submodule(PyObject *module, const char *name, PyObject *sub) {
    char full[64];
    snprintf(full, sizeof full, "offload.%s", name);
    if (PyDict_SetItemString(PyImport_GetModuleDict(), full, sub) < 0) return -1;
    return PyModule_AddObjectRef(module, name, sub);
}
