/* krn_pymod: the built-in module _offload_kernel (krn_pymod.h): streams,
 * displays, input() and comms' primitives, through the server's krn_io. */
#include "krn_pymod.h"

#include <stdlib.h>

#include "krn_display.h"
#include "krn_pyjson.h"

static PyObject *StdinNotImplementedError;
static const krn_io *io;       /* the server's, from krn_pymod_set_io */
static const krn_msg *request; /* being served; borrowed, NULL when idle */
static bool allow_stdin;

void krn_pymod_set_io(const krn_io *server_io) { io = server_io; }

void krn_pymod_set_request(const krn_msg *req, bool allow) {
    request = req;
    allow_stdin = allow;
}

/* ---- OutStream: a write-only text file that feeds IOPub ---- */

typedef struct {
    PyObject_HEAD
    int which;
} OutStream;

static PyObject *stream_write(OutStream *self, PyObject *arg) {
    if (!PyUnicode_Check(arg))
        return PyErr_Format(PyExc_TypeError, "write() argument must be str, not %.100s",
                            Py_TYPE(arg)->tp_name);
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(arg, &n);
    if (!utf8) { /* lone surrogates: write them replaced rather than fail a print */
        PyErr_Clear();
        PyObject *b = PyUnicode_AsEncodedString(arg, "utf-8", "replace");
        if (!b) return NULL;
        io->write(self->which, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
        Py_DECREF(b);
    } else {
        io->write(self->which, utf8, (size_t)n);
    }
    return PyLong_FromSsize_t(PyUnicode_GET_LENGTH(arg));
}

static PyObject *stream_writelines(OutStream *self, PyObject *lines) {
    PyObject *it = PyObject_GetIter(lines), *line;
    if (!it) return NULL;
    while ((line = PyIter_Next(it))) {
        PyObject *r = stream_write(self, line);
        Py_DECREF(line);
        if (!r) {
            Py_DECREF(it);
            return NULL;
        }
        Py_DECREF(r);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *stream_flush(OutStream *self, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    io->flush();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *stream_fileno(OutStream *self, PyObject *unused) {
    return PyLong_FromLong(self->which);
}
static PyObject *stream_false(OutStream *self, PyObject *unused) { Py_RETURN_FALSE; }
static PyObject *stream_true(OutStream *self, PyObject *unused) { Py_RETURN_TRUE; }

static PyObject *stream_get(OutStream *self, void *what) {
    const char *w = what;
    if (w[0] == 'n')
        return PyUnicode_FromString(self->which == KRN_STDERR ? "<stderr>" : "<stdout>");
    if (w[0] == 'c') Py_RETURN_FALSE;
    if (w[0] == 'm') return PyUnicode_FromString("w");
    if (w[0] == 'e' && w[1] == 'n') return PyUnicode_FromString("utf-8");
    return PyUnicode_FromString("replace");
}

static PyMethodDef stream_methods[] = {
    {"write", (PyCFunction)stream_write, METH_O, "Write text to the cell's output."},
    {"writelines", (PyCFunction)stream_writelines, METH_O, NULL},
    {"flush", (PyCFunction)stream_flush, METH_NOARGS, "Send pending text to the frontend now."},
    {"fileno", (PyCFunction)stream_fileno, METH_NOARGS, NULL},
    {"isatty", (PyCFunction)stream_false, METH_NOARGS, NULL},
    {"readable", (PyCFunction)stream_false, METH_NOARGS, NULL},
    {"seekable", (PyCFunction)stream_false, METH_NOARGS, NULL},
    {"writable", (PyCFunction)stream_true, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef stream_getset[] = {
    {"name", (getter)stream_get, NULL, NULL, "name"},
    {"closed", (getter)stream_get, NULL, NULL, "closed"},
    {"mode", (getter)stream_get, NULL, NULL, "mode"},
    {"encoding", (getter)stream_get, NULL, NULL, "encoding"},
    {"errors", (getter)stream_get, NULL, NULL, "errors"},
    {NULL},
};

static PyTypeObject OutStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_offload_kernel.OutStream",
    .tp_basicsize = sizeof(OutStream),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The cell's stdout or stderr, streamed to the notebook.",
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

PyObject *krn_pymod_stream(int which) {
    OutStream *s = PyObject_New(OutStream, &OutStreamType);
    if (s) s->which = which;
    return (PyObject *)s;
}

/* ---- functions ---- */

static PyObject *mod_mimebundle(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"obj", "include", "exclude", NULL};
    PyObject *obj, *include = Py_None, *exclude = Py_None, *data, *md;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:mimebundle", names, &obj, &include, &exclude))
        return NULL;
    if (krn_display_format(obj, include, exclude, &data, &md)) return NULL;
    PyObject *res = PyTuple_Pack(2, data, md);
    Py_DECREF(data);
    Py_DECREF(md);
    return res;
}

static PyObject *mod_publish(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"data", "metadata", "transient", "update", NULL};
    PyObject *data, *metadata = Py_None, *transient = Py_None;
    int update = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|OOp:publish", names, &PyDict_Type, &data,
                                     &metadata, &transient, &update))
        return NULL;
    json_t *content = json_pack("{s:o, s:o}", "data", krn_pyjson(data), "metadata",
                                metadata == Py_None ? json_object() : krn_pyjson(metadata));
    if (transient != Py_None)
        json_object_set_new(content, "transient", krn_pyjson(transient));
    else if (update)
        return PyErr_Format(PyExc_ValueError, "an update needs transient={'display_id': ...}");
    Py_BEGIN_ALLOW_THREADS
    io->publish(update ? "update_display_data" : "display_data", NULL, content);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *mod_clear_output(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"wait", NULL};
    int wait = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:clear_output", names, &wait)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    io->publish("clear_output", NULL, json_pack("{s:b}", "wait", wait));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* input() over the stdin channel: waits in slices so Ctrl-C (SIGINT makes the
 * poll return) raises KeyboardInterrupt promptly. */
static PyObject *mod_input(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"prompt", "password", NULL};
    PyObject *prompt_obj = NULL;
    int password = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op:input", names, &prompt_obj, &password))
        return NULL;
    if (!request || !allow_stdin) {
        PyErr_SetString(StdinNotImplementedError,
                        "input() was called, but this frontend does not support input requests.");
        return NULL;
    }
    PyObject *prompt = prompt_obj ? PyObject_Str(prompt_obj) : PyUnicode_FromString("");
    if (!prompt) return NULL;
    const char *p = PyUnicode_AsUTF8(prompt);
    int rc = p ? 0 : -1;
    if (p) {
        Py_BEGIN_ALLOW_THREADS
        io->flush();
        rc = io->stdin_request(request, p, password);
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(prompt);
    if (rc) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_OSError, "could not send input_request to the frontend");
        return NULL;
    }
    char *value = NULL;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        rc = io->stdin_reply(200, &value);
        Py_END_ALLOW_THREADS
        if (rc != 0) break;
        if (PyErr_CheckSignals()) return NULL;
    }
    if (rc < 0)
        return PyErr_Format(PyExc_OSError, "the stdin channel failed while waiting for input");
    PyObject *res = PyUnicode_DecodeUTF8(value, (Py_ssize_t)strlen(value), "replace");
    free(value);
    return res;
}

/* iopub(msg_type, content, metadata=None, buffers=None): any IOPub message
 * (comm messages, errors that IPython's machinery shows). */
static PyObject *mod_iopub(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"msg_type", "content", "metadata", "buffers", NULL};
    const char *type;
    PyObject *content, *metadata = Py_None, *buffers = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sO!|OO:iopub", names, &type, &PyDict_Type, &content,
                                     &metadata, &buffers))
        return NULL;
    if (buffers != Py_None && PyObject_IsTrue(buffers))
        return PyErr_Format(PyExc_NotImplementedError,
                            "%s: binary buffers are not sent by this kernel yet", type);
    json_t *md = metadata == Py_None ? NULL : krn_pyjson(metadata);
    json_t *c = krn_pyjson(content);
    Py_BEGIN_ALLOW_THREADS
    io->publish(type, md, c);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* parent(): the request being served as {'header': ...} ({} when idle), as
 * ipykernel's Kernel.get_parent() (ipywidgets' Output routes by it). */
static PyObject *mod_parent(PyObject *self, PyObject *unused) {
    if (!request || !request->header) return PyDict_New();
    PyObject *header = krn_pyjson_to_py(request->header);
    return header ? Py_BuildValue("{s:N}", "header", header) : NULL;
}

static PyObject *shell; /* IPython's shell once the glue made it; owned */

PyObject *krn_pymod_shell(void) { return shell; }

static PyObject *mod_set_shell(PyObject *self, PyObject *obj) {
    PyObject *formatter = PyObject_GetAttrString(obj, "display_formatter");
    PyObject *format = formatter ? PyObject_GetAttrString(formatter, "format") : NULL;
    Py_XDECREF(formatter);
    if (!format) return NULL;
    krn_display_use_formatter(format);
    Py_DECREF(format);
    Py_XSETREF(shell, Py_NewRef(obj));
    Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
    {"iopub", (PyCFunction)(void (*)(void))mod_iopub, METH_VARARGS | METH_KEYWORDS,
     "iopub(msg_type, content, metadata=None, buffers=None): publish a message on IOPub."},
    {"parent", mod_parent, METH_NOARGS, "parent() -> {'header': ...} of the request being served."},
    {"set_shell", mod_set_shell, METH_O,
     "set_shell(shell): the IPython shell the kernel calls around cells."},
    {"mimebundle", (PyCFunction)(void (*)(void))mod_mimebundle, METH_VARARGS | METH_KEYWORDS,
     "mimebundle(obj, include=None, exclude=None) -> (data, metadata)"},
    {"publish", (PyCFunction)(void (*)(void))mod_publish, METH_VARARGS | METH_KEYWORDS,
     "publish(data, metadata=None, transient=None, update=False): send display_data."},
    {"clear_output", (PyCFunction)(void (*)(void))mod_clear_output, METH_VARARGS | METH_KEYWORDS,
     "clear_output(wait=False)"},
    {"input", (PyCFunction)(void (*)(void))mod_input, METH_VARARGS | METH_KEYWORDS,
     "input(prompt='', password=False) -> str, asked of the frontend."},
    {NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_offload_kernel",
    .m_doc = "Primitives of the offload Jupyter kernel (streams, displays, stdin).",
    .m_size = -1,
    .m_methods = mod_methods,
};

PyObject *krn_pymod_init(void) {
    if (PyType_Ready(&OutStreamType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    StdinNotImplementedError = PyErr_NewExceptionWithDoc(
        "_offload_kernel.StdinNotImplementedError",
        "input() was called but the frontend does not allow input requests.",
        PyExc_NotImplementedError, NULL);
    if (!StdinNotImplementedError ||
        PyModule_AddObjectRef(m, "StdinNotImplementedError", StdinNotImplementedError) ||
        PyModule_AddObjectRef(m, "OutStream", (PyObject *)&OutStreamType)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
