/* mag_magics: the table of magics, the small ones, and the _offload_magics
 * module: the top of magics/, calling down into each magic's file. */
#include "mag_impl.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

static PyObject *magic_lsmagic(PyObject *ns, const char *args, const char *body);

/* %matplotlib [inline]: figures show in the cell (the default here anyway). */
static PyObject *magic_matplotlib(PyObject *ns, const char *args, const char *body) {
    const char *gui = mag_skip_blank(args);
    size_t n = strlen(gui);
    while (n && isspace((unsigned char)gui[n - 1])) n--;
    if ((n == 2 && strncmp(gui, "-l", 2) == 0) || (n == 6 && strncmp(gui, "--list", 6) == 0)) {
        PySys_WriteStdout(
            "Available matplotlib backends: ['inline']\n"); /* IPython's -l, this kernel's list */
        Py_RETURN_NONE;
    }
    if (n && !(n == 6 && strncmp(gui, "inline", 6) == 0))
        return PyErr_Format(mag_UsageError,
                            "%%matplotlib %.*s: this kernel shows figures inline only; "
                            "use %%matplotlib inline",
                            (int)n, gui);
    PyObject *mpl = PyImport_ImportModule("matplotlib");
    PyObject *r =
        mpl ? PyObject_CallMethod(mpl, "use", "s", "module://offload_kernel.mpl_inline") : NULL;
    Py_XDECREF(mpl);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

/* %pinfo / %pinfo2 (what `obj?` / `obj??` become inside a longer cell): print the help. */
static PyObject *pinfo(PyObject *ns, const char *expr, int detail) {
    PyObject *glue = PyImport_ImportModule("offload_kernel");
    PyObject *text = glue ? PyObject_CallMethod(glue, "help_text", "siO", expr, detail, ns) : NULL;
    Py_XDECREF(glue);
    if (!text) return NULL;
    if (PyUnicode_Check(text))
        PySys_FormatStdout("%U\n", text);
    else
        PySys_FormatStdout("Object `%s` not found.\n", expr);
    Py_DECREF(text);
    Py_RETURN_NONE;
}

static PyObject *magic_pinfo(PyObject *ns, const char *args, const char *body) {
    return pinfo(ns, args, 0);
}
static PyObject *magic_pinfo2(PyObject *ns, const char *args, const char *body) {
    return pinfo(ns, args, 1);
}

static const struct magic {
    const char *name;
    bool line, cell;
    mag_fn fn;
    const char *help;
} magics[] = {
    {"device", true, false, mag_device, "show or set the default device: %device [FILTER]"},
    {"devices", true, false, mag_devices, "the devices, their filter strings and key properties"},
    {"kernels", true, false, mag_kernels,
     "compiled kernels: signature, target, code size, compile ms, "
     "launches, device ms, cache hits"},
    {"lsmagic", true, false, magic_lsmagic, "list the magics"},
    {"lsplatform", true, false, mag_lsplatform, "platforms and devices: %lsplatform [-v|-vv]"},
    {"matplotlib", true, false, magic_matplotlib,
     "show matplotlib figures inline (the default): %matplotlib [inline|-l]"},
    {"offload", false, true, mag_offload,
     "run the cell's prange loops on a device: [--device F] [--quiet] [--show llvm|spirv|ptx] "
     "[--boundscheck]"},
    {"pinfo", true, false, magic_pinfo, "help on an object (what obj? runs)"},
    {"pinfo2", true, false, magic_pinfo2, "help with source (what obj?? runs)"},
    {"time", true, true, mag_time, "run once: CPU, wall and device time (devices waited for)"},
    {"timeit", true, true, mag_timeit,
     "host and device time per loop, mean \xc2\xb1 std and best: "
     "[-n N] [-r R] [-t|-c] [-p P] [-q] [-o] [-d]"},
};
#define NMAGICS (sizeof magics / sizeof magics[0])

static PyObject *magic_lsmagic(PyObject *ns, const char *args, const char *body) {
    PySys_WriteStdout("Available line magics:\n");
    for (size_t i = 0; i < NMAGICS; i++)
        if (magics[i].line) PySys_WriteStdout("  %%%-10s %s\n", magics[i].name, magics[i].help);
    PySys_WriteStdout("\nAvailable cell magics:\n");
    for (size_t i = 0; i < NMAGICS; i++)
        if (magics[i].cell) PySys_WriteStdout("  %%%%%-9s %s\n", magics[i].name, magics[i].help);
    PySys_WriteStdout("\nHelp on any object: obj? (obj?? adds its source).\n");
    Py_RETURN_NONE;
}

const char *const *mag_names(void) {
    static const char *names[NMAGICS + 1];
    for (size_t i = 0; i < NMAGICS; i++) names[i] = magics[i].name;
    return names;
}

static PyObject *unknown_magic(const char *name, bool cell) {
    char known[512] = "";
    size_t n = 0;
    for (size_t i = 0; i < NMAGICS && n < sizeof known - 32; i++)
        if (cell ? magics[i].cell : magics[i].line)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s%s", n ? ", " : "",
                                  cell ? "%%" : "%", magics[i].name);
    return PyErr_Format(mag_UsageError,
                        "%s magic function `%s%s` not found. Known %s magics: %s. IPython's magics "
                        "(%%pip, %%run, %%%%writefile, ...) need IPython: pip install ipython",
                        cell ? "Cell" : "Line", cell ? "%%" : "%", name, cell ? "cell" : "line",
                        known);
}

/* needs_ipython(what): IPython-only syntax in a kernel without IPython. */
static PyObject *needs_ipython(PyObject *self, PyObject *what) {
    PyObject *python = PySys_GetObject("executable"); /* borrowed */
    return PyErr_Format(mag_UsageError,
                        "%S need IPython, which is not installed for %S: "
                        "%S -m pip install ipython, then restart the kernel",
                        what, python, python);
}

/* help(name): the one-line help of a magic (a docstring for IPython's %magic?). */
static PyObject *magic_help(PyObject *self, PyObject *name) {
    const char *n = PyUnicode_AsUTF8(name);
    if (!n) return NULL;
    for (size_t i = 0; i < NMAGICS; i++)
        if (strcmp(magics[i].name, n) == 0) return PyUnicode_FromString(magics[i].help);
    Py_RETURN_NONE;
}

static PyObject *run_magic(PyObject *args, bool cell) {
    const char *name, *line, *body = NULL;
    if (cell ? !PyArg_ParseTuple(args, "sss", &name, &line, &body)
             : !PyArg_ParseTuple(args, "ss", &name, &line))
        return NULL;
    PyObject *main_mod = PyImport_AddModule("__main__");
    PyObject *ns = main_mod ? PyModule_GetDict(main_mod) : NULL;
    if (!ns) return NULL;
    for (size_t i = 0; i < NMAGICS; i++)
        if (strcmp(magics[i].name, name) == 0 && (cell ? magics[i].cell : magics[i].line))
            return magics[i].fn(ns, line, body);
    return unknown_magic(name, cell);
}

static PyObject *run_line_magic(PyObject *self, PyObject *args) { return run_magic(args, false); }
static PyObject *run_cell_magic(PyObject *self, PyObject *args) { return run_magic(args, true); }

static PyMethodDef methods[] = {
    {"run_line_magic", run_line_magic, METH_VARARGS, "run_line_magic(name, line)"},
    {"run_cell_magic", run_cell_magic, METH_VARARGS, "run_cell_magic(name, line, body)"},
    {"needs_ipython", needs_ipython, METH_O,
     "needs_ipython(what): raise UsageError naming IPython"},
    {"help", magic_help, METH_O, "help(name) -> the magic's one-line help, or None"},
    {NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, .m_name = "_offload_magics", .m_doc = "Magics of the offload kernel.",
    .m_size = -1,          .m_methods = methods,
};

PyObject *mag_module_init(void) {
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    mag_UsageError =
        PyErr_NewExceptionWithDoc("_offload_magics.UsageError",
                                  "A magic was misused or does not exist.", PyExc_Exception, NULL);
    if (!mag_UsageError || PyModule_AddObjectRef(m, "UsageError", mag_UsageError)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
