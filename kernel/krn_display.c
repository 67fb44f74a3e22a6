/* krn_display: objects to mimebundles through their _repr_*_ methods, or
 * through IPython's DisplayFormatter once the shell exists (krn_display.h). */
#include "krn_display.h"

#include <openssl/evp.h>
#include <stdbool.h>

static const struct {
    const char *method, *mime;
    bool binary;
} formats[] = {
    {"_repr_html_", "text/html", false},
    {"_repr_markdown_", "text/markdown", false},
    {"_repr_svg_", "image/svg+xml", false},
    {"_repr_png_", "image/png", true},
    {"_repr_jpeg_", "image/jpeg", true},
    {"_repr_pdf_", "application/pdf", true},
    {"_repr_latex_", "text/latex", false},
    {"_repr_json_", "application/json", false},
    {"_repr_javascript_", "application/javascript", false},
};

static bool wanted(const char *mime, PyObject *include, PyObject *exclude) {
    PyObject *m = PyUnicode_FromString(mime);
    bool yes = true;
    if (include && include != Py_None) yes = PySequence_Contains(include, m) == 1;
    if (yes && exclude && exclude != Py_None) yes = PySequence_Contains(exclude, m) != 1;
    Py_DECREF(m);
    PyErr_Clear();
    return yes;
}

static PyObject *base64_of(PyObject *bytes) {
    Py_ssize_t n = PyBytes_GET_SIZE(bytes);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 4 * ((n + 2) / 3));
    if (!out) return NULL;
    int len = EVP_EncodeBlock((unsigned char *)PyBytes_AS_STRING(out),
                              (const unsigned char *)PyBytes_AS_STRING(bytes), (int)n);
    PyObject *text = PyUnicode_DecodeASCII(PyBytes_AS_STRING(out), len, "strict");
    Py_DECREF(out);
    return text;
}

/* A formatter that raised: say so on the cell's stderr and go on, as IPython does. */
static void report_failed(const char *mime) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PySys_WriteStderr("FormatterWarning: exception in the %s formatter:\n", mime);
    if (type) PyErr_Display(type, value, tb);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
}

/* IPython's guard: objects that claim every attribute (a permissive
 * __getattr__) would otherwise be asked for every format. */
static bool claims_everything(PyObject *obj) {
    int has = PyObject_HasAttrString(obj, "_ipython_canary_method_should_not_exist_");
    PyErr_Clear();
    return has == 1;
}

/* Put value (and optional per-mime metadata from a (value, md) tuple) into the bundle. */
static int store(PyObject *data, PyObject *metadata, const char *mime, PyObject *value,
                 bool binary) {
    PyObject *md = NULL;
    if (PyTuple_Check(value) && PyTuple_GET_SIZE(value) == 2) {
        md = PyTuple_GET_ITEM(value, 1);
        value = PyTuple_GET_ITEM(value, 0);
    }
    if (value == Py_None) return 0;
    PyObject *encoded = NULL;
    if (binary && PyBytes_Check(value)) value = encoded = base64_of(value);
    int rc = value ? PyDict_SetItemString(data, mime, value) : -1;
    if (rc == 0 && md && md != Py_None) rc = PyDict_SetItemString(metadata, mime, md);
    Py_XDECREF(encoded);
    return rc;
}

static int from_mimebundle_method(PyObject *obj, PyObject *include, PyObject *exclude,
                                  PyObject *data, PyObject *metadata) {
    PyObject *method = PyObject_GetAttrString(obj, "_repr_mimebundle_");
    if (!method) {
        PyErr_Clear();
        return 0;
    }
    PyObject *kw = Py_BuildValue("{s:O, s:O}", "include", include ? include : Py_None, "exclude",
                                 exclude ? exclude : Py_None);
    PyObject *empty = PyTuple_New(0);
    PyObject *res = kw && empty ? PyObject_Call(method, empty, kw) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(kw);
    Py_DECREF(method);
    if (!res) {
        report_failed("mimebundle");
        return 0;
    }
    PyObject *d = res, *md = NULL;
    if (PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 2) {
        d = PyTuple_GET_ITEM(res, 0);
        md = PyTuple_GET_ITEM(res, 1);
    }
    int rc = 0;
    if (PyDict_Check(d)) rc = PyDict_Update(data, d);
    if (rc == 0 && md && PyDict_Check(md)) rc = PyDict_Update(metadata, md);
    Py_DECREF(res);
    return rc;
}

static PyObject *formatter; /* IPython's DisplayFormatter.format once the shell exists; owned */

void krn_display_use_formatter(PyObject *format) { Py_XSETREF(formatter, Py_XNewRef(format)); }

/* IPython's formatter: its printers registered by libraries and by %precision
 * and %config apply, as under ipykernel. */
static int ipython_format(PyObject *obj, PyObject *include, PyObject *exclude, PyObject **data_out,
                          PyObject **metadata_out) {
    PyObject *kw = Py_BuildValue("{s:O, s:O}", "include", include ? include : Py_None, "exclude",
                                 exclude ? exclude : Py_None);
    PyObject *args = PyTuple_Pack(1, obj);
    PyObject *r = kw && args ? PyObject_Call(formatter, args, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(args);
    PyObject *data, *md;
    if (!r || !PyArg_ParseTuple(r, "O!O!", &PyDict_Type, &data, &PyDict_Type, &md)) {
        Py_XDECREF(r);
        return -1;
    }
    /* Images come as bytes: base64 for JSON, as ipykernel does. */
    data = PyDict_Copy(data);
    PyObject *mime, *value;
    Py_ssize_t pos = 0;
    while (data && PyDict_Next(data, &pos, &mime, &value)) {
        if (!PyBytes_Check(value)) continue;
        PyObject *encoded = base64_of(value);
        if (!encoded || PyDict_SetItem(data, mime, encoded)) { /* same key: the iteration goes on */
            Py_XDECREF(encoded);
            Py_CLEAR(data);
            break;
        }
        Py_DECREF(encoded);
    }
    if (!data) {
        Py_DECREF(r);
        return -1;
    }
    *data_out = data;
    *metadata_out = Py_NewRef(md);
    Py_DECREF(r);
    return 0;
}

int krn_display_format(PyObject *obj, PyObject *include, PyObject *exclude, PyObject **data_out,
                       PyObject **metadata_out) {
    if (formatter) return ipython_format(obj, include, exclude, data_out, metadata_out);
    PyObject *data = PyDict_New(), *metadata = PyDict_New();
    if (!data || !metadata) goto fail;
    if (!claims_everything(obj)) {
        if (from_mimebundle_method(obj, include, exclude, data, metadata)) goto fail;
        for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
            if (PyDict_GetItemString(data, formats[i].mime) ||
                !wanted(formats[i].mime, include, exclude))
                continue;
            PyObject *method = PyObject_GetAttrString(obj, formats[i].method);
            if (!method) {
                PyErr_Clear();
                continue;
            }
            PyObject *value = PyObject_CallNoArgs(method);
            Py_DECREF(method);
            if (!value) {
                report_failed(formats[i].mime);
                continue;
            }
            int rc = store(data, metadata, formats[i].mime, value, formats[i].binary);
            Py_DECREF(value);
            if (rc) goto fail;
        }
    }
    if (!PyDict_GetItemString(data, "text/plain") && wanted("text/plain", include, exclude)) {
        PyObject *text = PyObject_Repr(obj);
        if (!text) goto fail;
        int rc = PyDict_SetItemString(data, "text/plain", text);
        Py_DECREF(text);
        if (rc) goto fail;
    }
    *data_out = data;
    *metadata_out = metadata;
    return 0;
fail:
    Py_XDECREF(data);
    Py_XDECREF(metadata);
    return -1;
}
