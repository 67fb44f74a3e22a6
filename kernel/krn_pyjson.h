/* krn_pyjson: Python objects to jansson values for message content, and back.
 * Dicts, lists, tuples, str, int, float, bool and None map directly; NaN and
 * infinities become null (JSON has none); anything else becomes str(obj).
 * GIL held. Never fails: errors raised while converting are cleared. */
#ifndef KRN_PYJSON_H
#define KRN_PYJSON_H

#include <Python.h>
#include <jansson.h>

json_t *krn_pyjson(PyObject *obj);
/* A str's UTF-8 as a JSON string; lone surrogates become U+FFFD. */
json_t *krn_pyjson_str(PyObject *str);
/* The other way: a new Python object (dict, list, str, ...) for a JSON value, or NULL with an
 * exception. */
PyObject *krn_pyjson_to_py(const json_t *value);

#endif
