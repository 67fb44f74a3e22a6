/* mod_library: the library's device code -- kernels and device functions
 * written in the kernel language, in the Python files of module/kernels/. The build embeds
 * each file's text (scripts/embed-kernels); at the first use of a name in a
 * file, the file runs as a Python module of its own, offload.kernels.<file>,
 * and its kernels compile as any user's do, specialised by their
 * compile-time parameters (mod_constexpr.c). C plans the work and launches
 * them by name: mod_library_get. The build also compiles each file (its
 * code object comes marshalled), so loading one costs no Python compile.
 *
 * linecache holds each file's lines under "offload/kernels/<file>.py", which
 * is where the JIT reads a kernel's source and points its carets; the
 * module's __loader__ gives them back if linecache is ever cleared. Every
 * kernel of these files is the module's own: trusted (no index checks unless
 * a launch asks) and run to its end (no cancel checks). */
#include "mod_launch.h"

#include <marshal.h>
#include <stdarg.h>
#include <stdio.h>

#include "mod_kernel_texts.h"

static PyObject *loaded; /* file name -> the file's namespace (a dict), for the process */

/* Sets ns["__loader__"] to an object whose get_source(modname) is text, and
 * puts text's lines into linecache under filename. */
static int keep_source(PyObject *ns, PyObject *modname, PyObject *filename, PyObject *text) {
    PyObject *types = PyImport_ImportModule("types");
    PyObject *sources = Py_BuildValue("{OO}", modname, text);
    PyObject *get = sources ? PyObject_GetAttrString(sources, "get") : NULL;
    PyObject *loader = NULL;
    if (types && get) {
        PyObject *make = PyObject_GetAttrString(types, "SimpleNamespace"), *kw = PyDict_New();
        if (make && kw && PyDict_SetItemString(kw, "get_source", get) == 0)
            loader = PyObject_VectorcallDict(make, NULL, 0, kw);
        Py_XDECREF(make);
        Py_XDECREF(kw);
    }
    PyObject *lines = loader ? PyObject_CallMethod(text, "splitlines", "O", Py_True) : NULL;
    int rc = lines && PyDict_SetItemString(ns, "__loader__", loader) == 0 &&
                     mod_linecache_put(filename, lines) == 0
                 ? 0
                 : -1;
    Py_XDECREF(types);
    Py_XDECREF(sources);
    Py_XDECREF(get);
    Py_XDECREF(loader);
    Py_XDECREF(lines);
    return rc;
}

/* Runs kernel_texts[i] as its module; its namespace, new reference. */
static PyObject *run_file(size_t i) {
    const char *name = kernel_texts[i].name;
    PyObject *ns = PyDict_New(), *code = NULL, *done = NULL;
    PyObject *modname = PyUnicode_FromFormat("offload.kernels.%s", name);
    PyObject *filename = PyUnicode_FromFormat("offload/kernels/%s.py", name);
    PyObject *text = PyUnicode_FromString(kernel_texts[i].text);
    if (ns && modname && filename && text && PyDict_SetItemString(ns, "__name__", modname) == 0 &&
        PyDict_SetItemString(ns, "__file__", filename) == 0 &&
        PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) == 0 &&
        keep_source(ns, modname, filename, text) == 0 &&
        (code = PyMarshal_ReadObjectFromString((const char *)kernel_texts[i].code,
                                               (Py_ssize_t)kernel_texts[i].code_size)))
        done = PyEval_EvalCode(code, ns, ns);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (done && PyDict_Next(ns, &pos, &key, &value))
        if (mod_kernel_check(value)) {
            mod_kernel_trusted(value);
            mod_kernel_runs_to_end(value);
        }
    if (!done) Py_CLEAR(ns);
    Py_XDECREF(done);
    Py_XDECREF(code);
    Py_XDECREF(modname);
    Py_XDECREF(filename);
    Py_XDECREF(text);
    return ns;
}

PyObject *mod_library_get(const char *file, const char *name) {
    if (!loaded && !(loaded = PyDict_New())) return NULL;
    PyObject *ns = PyDict_GetItemString(loaded, file);
    if (!ns) {
        size_t i = 0, n = sizeof kernel_texts / sizeof *kernel_texts;
        while (i < n && strcmp(kernel_texts[i].name, file)) i++;
        if (i == n)
            return PyErr_Format(PyExc_SystemError, "offload: no kernel file '%s'", file), NULL;
        PyObject *made = run_file(i), *key = PyUnicode_FromString(file);
        /* running it may have let another thread load it first: keep the first */
        ns = made && key ? PyDict_SetDefault(loaded, key, made) : NULL;
        Py_XDECREF(made);
        Py_XDECREF(key);
        if (!ns) return NULL;
    }
    PyObject *v = PyDict_GetItemString(ns, name);
    if (!v) PyErr_Format(PyExc_SystemError, "offload: kernels/%s.py has no '%s'", file, name);
    return v;
}

int mod_library_launch(const char *file, const char *name, const mod_shape *range, const char *fmt,
                       ...) {
    PyObject *kernel = mod_library_get(file, name);
    if (!kernel) return -1;
    char tuple_fmt[64];
    if ((size_t)snprintf(tuple_fmt, sizeof tuple_fmt, "(%s)", fmt) >= sizeof tuple_fmt) {
        PyErr_Format(PyExc_SystemError, "offload: argument format of %s.%s too long", file, name);
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    PyObject *args = Py_VaBuildValue(tuple_fmt, ap); /* owned */
    va_end(ap);
    if (!args) return -1;
    PyObject *r =
        mod_kernel_launch(kernel, range, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args), false);
    Py_DECREF(args);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

Py_ssize_t mod_library_int(const char *file, const char *name) {
    PyObject *v = mod_library_get(file, name);
    Py_ssize_t n = v ? PyLong_AsSsize_t(v) : -1;
    if (n < 0 && !PyErr_Occurred())
        PyErr_Format(PyExc_SystemError, "offload: kernels/%s.py's %s is negative", file, name);
    return n;
}

/* offload._library(file, name): the same, for tests and for looking at a
 * library kernel's signatures. */
static PyObject *library(PyObject *self, PyObject *args) {
    const char *file, *name;
    if (!PyArg_ParseTuple(args, "ss:_library", &file, &name)) return NULL;
    return Py_XNewRef(mod_library_get(file, name));
}

static PyMethodDef functions[] = {
    {"_library", library, METH_VARARGS,
     "_library(file, name): name in the library's kernel file (module/kernels/<file>.py)."},
    {NULL, NULL, 0, NULL},
};

/* The files' namespaces live for the process; at exit (after the kit's wait
 * for queued work, registered later and so run first) they go with
 * everything else, so that their kernels release their device programs and
 * memory like any other. A namespace and its functions are a cycle through
 * __globals__ that a Kernel, not a GC container, hides from the collector:
 * each is cleared first. */
static PyObject *release_files(PyObject *self, PyObject *unused) {
    PyObject *key, *ns;
    Py_ssize_t pos = 0;
    while (loaded && PyDict_Next(loaded, &pos, &key, &ns)) PyDict_Clear(ns);
    Py_CLEAR(loaded);
    Py_RETURN_NONE;
}

static PyMethodDef release_def = {"_release_kernel_files", release_files, METH_NOARGS, NULL};

int mod_library_add_functions(PyObject *module) {
    if (mod_atexit(&release_def) < 0) return -1;
    return PyModule_AddFunctions(module, functions);
}
