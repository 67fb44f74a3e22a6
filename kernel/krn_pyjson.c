/* krn_pyjson: Python objects to and from jansson values (krn_pyjson.h). */
#include "krn_pyjson.h"

#include <math.h>
#include <stdlib.h>

#define MAX_DEPTH 64

json_t *krn_pyjson_str(PyObject *str) {
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(str, &n);
    if (utf8) return json_stringn(utf8, (size_t)n);
    PyErr_Clear();
    PyObject *bytes = PyUnicode_AsEncodedString(str, "utf-8", "replace");
    json_t *out = bytes ? json_stringn(PyBytes_AS_STRING(bytes), (size_t)PyBytes_GET_SIZE(bytes))
                        : json_string("");
    Py_XDECREF(bytes);
    PyErr_Clear();
    return out;
}

static json_t *as_text(PyObject *obj) {
    PyObject *s = PyObject_Str(obj);
    json_t *out = s ? krn_pyjson_str(s) : json_string("<unprintable>");
    Py_XDECREF(s);
    PyErr_Clear();
    return out;
}

static json_t *convert(PyObject *obj, int depth) {
    if (depth > MAX_DEPTH) return as_text(obj);
    if (obj == Py_None) return json_null();
    if (PyBool_Check(obj)) return json_boolean(obj == Py_True);
    if (PyLong_Check(obj)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (!overflow && !(v == -1 && PyErr_Occurred())) return json_integer(v);
        PyErr_Clear();
        return as_text(obj);
    }
    if (PyFloat_Check(obj)) {
        double v = PyFloat_AS_DOUBLE(obj);
        return isfinite(v) ? json_real(v) : json_null();
    }
    if (PyUnicode_Check(obj)) return krn_pyjson_str(obj);
    if (PyDict_Check(obj)) {
        json_t *out = json_object();
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(obj, &pos, &k, &v)) {
            json_t *key = PyUnicode_Check(k) ? krn_pyjson_str(k) : as_text(k);
            json_object_set_new(out, json_string_value(key), convert(v, depth + 1));
            json_decref(key);
        }
        return out;
    }
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        json_t *out = json_array();
        PyObject *seq = PySequence_Fast(obj, "");
        for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); i++)
            json_array_append_new(out, convert(PySequence_Fast_GET_ITEM(seq, i), depth + 1));
        Py_XDECREF(seq);
        return out;
    }
    return as_text(obj);
}

json_t *krn_pyjson(PyObject *obj) {
    json_t *out = convert(obj, 0);
    return out ? out : json_null();
}

PyObject *krn_pyjson_to_py(const json_t *value) {
    /* Messages from the frontend are small and rare (comms, headers): json.loads is plenty. */
    char *text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) return PyErr_NoMemory();
    PyObject *json = PyImport_ImportModule("json");
    PyObject *res = json ? PyObject_CallMethod(json, "loads", "s", text) : NULL;
    Py_XDECREF(json);
    free(text);
    return res;
}
