/* ndarray across processes: pickling, the pickle device, copy.copy/deepcopy,
 * and what Dask asks of an object (__sizeof__, __dask_tokenize__) -- all
 * without importing Dask or a pickler, so that `import offload` stays cheap
 * and Dask finds the methods by itself.
 *
 * An array pickles by value: its dtype (with byte order), shape, elements in
 * C order (a view pickles only its own) as one flat host buffer, and the
 * filter of the device it came from (for messages only). Protocol 5 hands
 * the buffer over as a pickle.PickleBuffer, which a consumer that takes
 * out-of-band buffers (Dask, pickle.dumps(buffer_callback=)) sends without
 * copying it into the pickle's bytes; lower protocols get bytes. Device memory
 * has no host address (CPU devices' has, but only while mapped, and an
 * out-of-band buffer may live for as long as the consumer likes), so the
 * buffer is a host copy.
 *
 * Unpickling builds the array on the receiving process's device: the one
 * pickle_device() set, else the default device (with its per-rank rule, see
 * mod_device.c), never the sender's -- a worker's devices are its own. The
 * setting is process-wide, like set_default_device's.
 *
 * copy.copy and copy.deepcopy would otherwise go through pickling and land
 * on the default device: they copy on the array's own device instead. */
#include "mod_core.h"

static ofl_device *pickle_dev; /* pickle_device(); NULL: the default device */
static PyObject *unpickle_fn;  /* offload._unpickle_array, owned for the process */

/* The array's elements as a flat C-order uint8 NumPy array (a host copy). */
static PyObject *host_bytes(mod_array *a) {
    PyObject *host = mod_array_asnumpy(a); /* dense views keep NumPy's strides */
    PyObject *args = host ? PyTuple_Pack(1, host) : NULL;
    PyObject *c = args ? mod_np_call("ascontiguousarray", args, NULL) : NULL;
    PyObject *flat = c ? PyObject_CallMethod(c, "reshape", "i", -1) : NULL;
    PyObject *u8 =
        flat ? PyObject_CallMethod(flat, "view", "O", mod_dtype_find_borrowed('u', 1)) : NULL;
    Py_XDECREF(host);
    Py_XDECREF(args);
    Py_XDECREF(c);
    Py_XDECREF(flat);
    return u8;
}

/* __reduce_ex__(protocol) -> (offload._unpickle_array, (dtype, shape, data, source)) */
static PyObject *array_reduce_ex(mod_array *a, PyObject *arg) {
    int protocol = PyLong_AsLong(arg);
    if (protocol == -1 && PyErr_Occurred()) return NULL;
    PyObject *bytes = host_bytes(a), *data = NULL, *r = NULL;
    if (bytes)
        data = protocol >= 5 ? PyPickleBuffer_FromObject(bytes)
                             : PyObject_CallMethod(bytes, "tobytes", NULL);
    PyObject *dtype = data ? PyObject_GetAttrString(a->dtype, "str") : NULL; /* '<f4' */
    PyObject *shape = dtype ? mod_int_tuple(a->nd, a->shape) : NULL;
    if (shape)
        r = Py_BuildValue("(O(OOOs))", unpickle_fn, dtype, shape, data,
                          ofl_device_get_info(mod_array_device(a))->filter);
    Py_XDECREF(bytes);
    Py_XDECREF(data);
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    return r;
}

/* Re-raises the pending exception, same type, with "what: " before its text. */
static PyObject *prefix_error(const char *what) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    if (text)
        PyErr_Format(type, "%s: %U", what, text);
    else
        PyErr_Restore(Py_XNewRef(type), Py_XNewRef(value), Py_XNewRef(tb));
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return NULL;
}

/* _unpickle_array(dtype, shape, data, source) -> ndarray on the pickle device */
static PyObject *unpickle_array(PyObject *self, PyObject *args) {
    PyObject *dtype, *shape, *data;
    const char *source;
    if (!PyArg_ParseTuple(args, "OOOs:_unpickle_array", &dtype, &shape, &data, &source))
        return NULL;
    ofl_device *dev = pickle_dev;
    if (!dev && mod_device_default(&dev) < 0) {
        char what[200];
        snprintf(what, sizeof what,
                 "unpickling an offload.ndarray (it came from %.60s): no device to put it on "
                 "here",
                 source);
        return prefix_error(what);
    }
    PyObject *fargs = PyTuple_Pack(1, data);
    PyObject *kw = fargs ? Py_BuildValue("{sO}", "dtype", dtype) : NULL;
    PyObject *flat = kw ? mod_np_call("frombuffer", fargs, kw) : NULL;
    PyObject *host = flat ? PyObject_CallMethod(flat, "reshape", "(O)", shape) : NULL;
    PyObject *r = host ? mod_array_from_host(host, dev) : NULL;
    Py_XDECREF(fargs);
    Py_XDECREF(kw);
    Py_XDECREF(flat);
    Py_XDECREF(host);
    return r;
}

/* ---- pickle_device(device): set now; as a context manager, put back at exit ---- */

typedef struct {
    PyObject_HEAD
    ofl_device *set, *previous; /* NULL: the default device */
} setting;

static PyObject *device_or_none(ofl_device *dev) {
    return dev ? mod_device_new(dev) : Py_NewRef(Py_None);
}

static PyObject *setting_enter(setting *s, PyObject *unused) { return device_or_none(s->set); }

static PyObject *setting_exit(setting *s, PyObject *args) {
    pickle_dev = s->previous;
    Py_RETURN_FALSE; /* exceptions go on */
}

static PyObject *setting_repr(setting *s) {
    return PyUnicode_FromFormat("pickle_device(%s)",
                                s->set ? ofl_device_get_info(s->set)->filter : "None");
}

static PyObject *setting_device(setting *s, void *c) { return device_or_none(s->set); }
static PyObject *setting_previous(setting *s, void *c) { return device_or_none(s->previous); }

static PyMethodDef setting_methods[] = {
    {"__enter__", (PyCFunction)setting_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)setting_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef setting_getset[] = {
    {"device", (getter)setting_device, NULL, "the Device set (None: the default device)", NULL},
    {"previous", (getter)setting_previous, NULL, "the setting before, put back by __exit__", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SettingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "offload._PickleDevice",
    .tp_basicsize = sizeof(setting),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "What pickle_device() returns: leaving its `with` block restores the previous "
              "setting.",
    .tp_repr = (reprfunc)setting_repr,
    .tp_methods = setting_methods,
    .tp_getset = setting_getset,
};

static PyObject *pickle_device(PyObject *self, PyObject *arg) {
    ofl_device *dev = NULL;
    if (arg != Py_None && mod_device_resolve(arg, &dev) < 0) return NULL;
    setting *s = PyObject_New(setting, &SettingType);
    if (!s) return NULL;
    s->set = dev;
    s->previous = pickle_dev;
    pickle_dev = dev;
    return (PyObject *)s;
}

/* ---- copy, sizeof, Dask's token ---- */

static PyObject *array_copy(mod_array *a, PyObject *unused) {
    return mod_array_copy_to(a, mod_array_device(a));
}

/* sys.getsizeof (and so dask.sizeof): the object and the bytes of its
 * elements -- for a view too, which is what a consumer would hold */
static PyObject *array_sizeof(mod_array *a, PyObject *unused) {
    Py_ssize_t n = a->itemsize;
    for (int i = 0; i < a->nd; i++) n *= a->shape[i];
    return PyLong_FromSsize_t((Py_ssize_t)Py_TYPE(a)->tp_basicsize + n);
}

/* Deterministic and content-based, as Dask tokenizes NumPy arrays: the type,
 * the device, and the elements as a NumPy array, which Dask hashes (its dtype
 * and shape included). Equal data on one device gives equal tokens; the data
 * is read back to the host to hash it. */
static PyObject *array_dask_tokenize(mod_array *a, PyObject *unused) {
    PyObject *host = mod_array_asnumpy(a);
    PyObject *args = host ? PyTuple_Pack(1, host) : NULL;
    PyObject *c = args ? mod_np_call("ascontiguousarray", args, NULL) : NULL;
    PyObject *r = c ? Py_BuildValue("(ssO)", "offload.ndarray",
                                    ofl_device_get_info(mod_array_device(a))->filter, c)
                    : NULL;
    Py_XDECREF(host);
    Py_XDECREF(args);
    Py_XDECREF(c);
    return r;
}

static PyMethodDef array_methods[] = {
    {"__reduce_ex__", (PyCFunction)array_reduce_ex, METH_O,
     "__reduce_ex__(protocol): pickles by value (dtype, shape, elements through the host; "
     "protocol 5: an out-of-band buffer); unpickles onto the receiver's pickle_device() or "
     "default device"},
    {"__copy__", (PyCFunction)array_copy, METH_NOARGS, "a copy on the same device"},
    {"__deepcopy__", (PyCFunction)array_copy, METH_O, "a copy on the same device"},
    {"__sizeof__", (PyCFunction)array_sizeof, METH_NOARGS,
     "bytes of the object and of its elements (sys.getsizeof, dask.sizeof)"},
    {"__dask_tokenize__", (PyCFunction)array_dask_tokenize, METH_NOARGS,
     "Dask's token: type, device and the elements (read to the host to hash)"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef pickle_functions[] = {
    {"pickle_device", pickle_device, METH_O,
     "pickle_device(device) -> setting\n\nWhere arrays unpickled in this process go: a filter "
     "string or Device, or None for the default device (the setting at start). Takes effect "
     "at once; `with offload.pickle_device('cpu:1'):` puts the previous setting back at the "
     "block's end."},
    {"_unpickle_array", unpickle_array, METH_VARARGS,
     "_unpickle_array(dtype, shape, data, source) -> ndarray: pickle's reconstructor"},
    {NULL, NULL, 0, NULL},
};

int mod_pickle_init(PyObject *module) {
    if (PyType_Ready(&SettingType) < 0 || mod_type_add_methods(&mod_ArrayType, array_methods) < 0 ||
        PyModule_AddFunctions(module, pickle_functions) < 0)
        return -1;
    unpickle_fn = PyObject_GetAttrString(module, "_unpickle_array");
    return unpickle_fn ? 0 : -1;
}
