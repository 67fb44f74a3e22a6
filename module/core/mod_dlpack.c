/* DLPack (export and import) and __cuda_array_interface__: offload arrays
 * shared with CuPy, PyTorch, numba-cuda and NumPy.
 *
 * Export (ndarray.__dlpack__):
 * - CUDA arrays are shared, never copied (unless copy=True): the tensor points
 *   at element [0,...,0] with byte_offset 0, as NumPy and PyTorch export, since
 *   some consumers ignore byte_offset. Strides are in elements, always given.
 * - Other arrays live in OpenCL buffers, which have no host address (a CPU
 *   device's are host memory, but OpenCL hands out a pointer only while
 *   mapped). They are exported as a host copy, kDLCPU, which DLPack 1.x lets a
 *   producer do unless copy=False (the versioned tensor then says
 *   DLPACK_FLAG_BITMASK_IS_COPIED); so __dlpack_device__ reports (kDLCPU, 0)
 *   for them, and np.from_dlpack works without keeping anything mapped.
 * - copy=False on a CPU device (what mpi4py asks, to send from and receive
 *   into an array in place): the buffer is mapped for reading and writing,
 *   after the work queued on it, and the tensor points into the mapping; the
 *   tensor's owner unmaps it when the consumer's deleter runs, which makes
 *   what the consumer wrote the device's. Until then offload must not use the
 *   array (mpi4py lets go when the call returns). Other OpenCL devices refuse.
 * - The tensor holds a reference to what keeps its memory alive (the array, or
 *   the host copy); its deleter drops it, taking the GIL.
 *
 * Streams: the runtime queues launches on one stream per device and waits for
 * every copy. A consumer's stream cannot wait on that private stream, so the
 * export (and __cuda_array_interface__) waits for the device instead: once the
 * pointer is handed out, no offload work on it is pending. stream=-1 (the
 * consumer asks for no synchronisation) skips that wait.
 *
 * Import (offload.from_dlpack, and asarray of CUDA producers):
 * - kDLCUDA tensors on a GPU offload knows are wrapped without a copy: the
 *   array's allocation is foreign (ofl_buffer_wrap) and owns the producer's
 *   tensor, whose deleter runs once the last view is gone. We ask the producer
 *   for stream=1 (the legacy default stream): our stream is a blocking one, so
 *   everything on the legacy stream comes before our later work. Pointers are
 *   taken to be valid in the GPU's primary context -- the one the CUDA runtime
 *   (CuPy, PyTorch, numba) uses and offload shares.
 * - kDLCPU tensors are copied to the device (default: the default device), so
 *   copy=False is a BufferError; so are copies to another device.
 * Capsules follow the spec: a consumer renames one "used_dltensor[_versioned]"
 * when it takes the tensor; the capsule's destructor deletes the tensor only
 * when nobody took it. */
#include "mod_core.h"

#include <string.h>

/* ---- DLPack 1.0's ABI (dlpack.h), the parts used here ---- */

enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 };
/* memory a CUDA device can address: shared in place on import */
#define DEVICE_MEMORY(type) ((type) == kDLCUDA || (type) == kDLCUDAManaged)
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLComplex = 5, kDLBool = 6 };
#define DLPACK_FLAG_BITMASK_READ_ONLY (1ULL << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1ULL << 1)

typedef struct {
    int32_t device_type; /* DLDeviceType, an int-sized enum */
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: compact row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major, minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

static const char LEGACY[] = "dltensor", USED_LEGACY[] = "used_dltensor";
static const char VERSIONED[] = "dltensor_versioned", USED_VERSIONED[] = "used_dltensor_versioned";

/* ---- shared helpers ---- */

static bool is_cuda(ofl_device *dev) { return ofl_device_get_info(dev)->backend == OFL_CUDA; }

/* The driver's number of a CUDA device (CuPy's and PyTorch's device id), which
 * DLPack speaks: offload lists GPUs in PCI order, the driver fastest first,
 * so cuda:gpu:N need not be ordinal N. */
static int cuda_ordinal(ofl_device *dev) { return ofl_device_get_info(dev)->cuda_ordinal; }

static ofl_device *cuda_device(int ordinal) {
    size_t n;
    ofl_device *const *list;
    Py_BEGIN_ALLOW_THREADS
    list = ofl_devices(&n, NULL);
    Py_END_ALLOW_THREADS
    for (size_t i = 0; i < n; i++)
        if (is_cuda(list[i]) && cuda_ordinal(list[i]) == ordinal) return list[i];
    return NULL;
}

static int wait_device(ofl_device *dev) {
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_synchronize(dev, &err);
    Py_END_ALLOW_THREADS
    return rc ? (mod_raise(&err), -1) : 0;
}

/* ---- export ---- */

/* One allocation per export: both tensor forms (one is used), the reference
 * that keeps the memory alive, and the shape and strides the tensor points at. */
typedef struct {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
    PyObject *owner; /* owned: the array itself, its device copy, or its host copy */
    int64_t shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
} exported;

static void exported_free(exported *e) {
    if (!Py_IsInitialized()) /* at exit the owner went with the interpreter */
        return;
    PyGILState_STATE g = PyGILState_Ensure(); /* consumers may delete from any thread */
    Py_DECREF(e->owner);
    PyGILState_Release(g);
    PyMem_RawFree(e);
}
static void legacy_deleter(DLManagedTensor *m) { exported_free(m->manager_ctx); }
static void versioned_deleter(DLManagedTensorVersioned *m) { exported_free(m->manager_ctx); }

/* The producer's capsule destructor: deletes the tensor only if no consumer
 * took it (renamed the capsule). IsValid sets no exception, so a pending one
 * survives. */
static void capsule_destructor(PyObject *cap) {
    if (PyCapsule_IsValid(cap, VERSIONED)) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, VERSIONED);
        m->deleter(m);
    } else if (PyCapsule_IsValid(cap, LEGACY)) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, LEGACY);
        m->deleter(m);
    }
}

static int dl_dtype(PyObject *dtype, Py_ssize_t itemsize, DLDataType *out) {
    static const struct {
        char kind;
        uint8_t code;
    } map[] = {{'b', kDLBool}, {'i', kDLInt}, {'u', kDLUInt}, {'f', kDLFloat}, {'c', kDLComplex}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (mod_dtype_find_borrowed(map[i].kind, itemsize) == dtype) {
            *out = (DLDataType){map[i].code, (uint8_t)(8 * itemsize), 1};
            return 0;
        }
    PyErr_Format(PyExc_SystemError, "offload: no DLPack type for %R", dtype);
    return -1;
}

/* A capsule for the memory at data (with this layout, strides in bytes),
 * referencing owner. versioned: a DLPack 1.0 "dltensor_versioned". */
static PyObject *make_capsule(PyObject *owner, void *data, DLDevice device, PyObject *dtype,
                              Py_ssize_t itemsize, int nd, const Py_ssize_t *shape,
                              const Py_ssize_t *strides, bool versioned, uint64_t flags) {
    DLDataType dt;
    if (dl_dtype(dtype, itemsize, &dt) < 0) return NULL;
    exported *e = PyMem_RawCalloc(1, sizeof *e);
    if (!e) return PyErr_NoMemory();
    for (int i = 0; i < nd; i++) e->shape[i] = shape[i], e->strides[i] = strides[i] / itemsize;
    DLTensor t = {data, device, nd, dt, e->shape, e->strides, 0};
    e->owner = Py_NewRef(owner);
    e->legacy = (DLManagedTensor){t, e, legacy_deleter};
    e->versioned = (DLManagedTensorVersioned){{1, 0}, e, versioned_deleter, flags, t};
    PyObject *cap = versioned ? PyCapsule_New(&e->versioned, VERSIONED, capsule_destructor)
                              : PyCapsule_New(&e->legacy, LEGACY, capsule_destructor);
    if (!cap) {
        Py_DECREF(e->owner);
        PyMem_RawFree(e);
    }
    return cap;
}

/* (device_type, device_id) as DLPack sees the array: see the top of the file. */
static DLDevice array_dl_device(mod_array *a) {
    ofl_device *dev = mod_array_device(a);
    return is_cuda(dev) ? (DLDevice){kDLCUDA, cuda_ordinal(dev)} : (DLDevice){kDLCPU, 0};
}

static PyObject *dlpack_device(mod_array *a, PyObject *unused) {
    DLDevice d = array_dl_device(a);
    return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}

/* The host copy export: the array's elements in a NumPy array, which owns them. */
static PyObject *export_host(mod_array *a, bool versioned) {
    PyObject *host = mod_array_asnumpy(a); /* strided views keep NumPy's strides */
    Py_buffer view;
    if (!host || PyObject_GetBuffer(host, &view, PyBUF_STRIDES) < 0) {
        Py_XDECREF(host);
        return NULL;
    }
    /* the pointer stays valid after the release: host is referenced, and a
     * NumPy array referenced elsewhere cannot be resized */
    PyObject *cap =
        make_capsule(host, view.buf, (DLDevice){kDLCPU, 0}, a->dtype, a->itemsize, view.ndim,
                     view.shape, view.strides, versioned, DLPACK_FLAG_BITMASK_IS_COPIED);
    PyBuffer_Release(&view);
    Py_DECREF(host);
    return cap;
}

/* The owner of a mapped export: unmaps when the tensor is deleted. */
static const char MAPPING[] = "offload.host_mapping";
typedef struct {
    mod_host_map map;
    PyObject *array; /* owned: keeps the buffer */
} mapping;

static void mapping_destructor(PyObject *cap) {
    mapping *m = PyCapsule_GetPointer(cap, MAPPING);
    PyObject *type, *value, *tb; /* a destructor may run while an exception is pending */
    PyErr_Fetch(&type, &value, &tb);
    if (mod_array_unmap_host(&m->map) < 0) PyErr_WriteUnraisable(m->array);
    Py_DECREF(m->array);
    PyMem_RawFree(m);
    PyErr_Restore(type, value, tb);
}

/* copy=False to the host from a CPU device: the array's own memory, mapped
 * (see the top of the file). An empty array maps nothing. */
static PyObject *export_mapped(mod_array *a, bool versioned) {
    mapping *m = PyMem_RawCalloc(1, sizeof *m);
    if (!m) return PyErr_NoMemory();
    m->map.buf = mod_array_buffer(a);
    if (m->map.buf) {
        ofl_error err;
        bool write = true;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = ofl_buffers_map(&m->map.buf, &write, &m->map.p, 1, &err);
        Py_END_ALLOW_THREADS
        if (rc) {
            PyMem_RawFree(m);
            return mod_raise(&err);
        }
    }
    m->array = Py_NewRef((PyObject *)a);
    PyObject *owner = PyCapsule_New(m, MAPPING, mapping_destructor);
    if (!owner) { /* nothing else unmaps it */
        mod_array_unmap_host(&m->map);
        Py_DECREF(m->array);
        PyMem_RawFree(m);
        return NULL;
    }
    void *data = m->map.p ? (char *)m->map.p + a->offset : NULL;
    PyObject *cap = make_capsule(owner, data, (DLDevice){kDLCPU, 0}, a->dtype, a->itemsize, a->nd,
                                 a->shape, a->strides, versioned, 0);
    Py_DECREF(owner);
    return cap;
}

static PyObject *dlpack_export(mod_array *a, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy_arg = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO:__dlpack__", kwlist, &stream, &max_version,
                                     &dl_device, &copy_arg))
        return NULL;
    int copy = mod_parse_copy(copy_arg), major = 0, minor = 0;
    if (copy == -2) return NULL;
    if (max_version != Py_None &&
        (!PyTuple_Check(max_version) || !PyArg_ParseTuple(max_version, "ii", &major, &minor)))
        return PyErr_Format(PyExc_TypeError, "__dlpack__: max_version must be None or a tuple "
                                             "(major, minor) of ints");
    bool versioned = major >= 1; /* None or 0.x: the legacy capsule */
    ofl_device *dev = mod_array_device(a);
    const ofl_device_info *in = ofl_device_get_info(dev);
    DLDevice natural = array_dl_device(a), want = natural;
    if (dl_device != Py_None &&
        (!PyTuple_Check(dl_device) ||
         !PyArg_ParseTuple(dl_device, "ii", &want.device_type, &want.device_id)))
        return PyErr_Format(PyExc_TypeError, "__dlpack__: dl_device must be None or a tuple "
                                             "(device_type, device_id) of ints");
    bool to_host = want.device_type == kDLCPU && want.device_id == 0;
    if (!to_host && memcmp(&want, &natural, sizeof want) != 0)
        return PyErr_Format(PyExc_BufferError,
                            "__dlpack__: cannot export the array on %s to DLPack device (%d, %d); "
                            "it exports to %s",
                            in->filter, (int)want.device_type, (int)want.device_id,
                            natural.device_type == kDLCUDA ? "its own GPU or the host (1, 0)"
                                                           : "the host (1, 0) only");

    if (to_host) {
        if (copy == 0) {
            if (is_cuda(dev))
                return PyErr_Format(PyExc_BufferError,
                                    "__dlpack__: the array lives on %s; exporting it to the host "
                                    "(dl_device=(1, 0)) needs a copy, but copy=False",
                                    in->filter);
            if (in->type == OFL_CPU) return export_mapped(a, versioned);
            return PyErr_Format(PyExc_BufferError,
                                "__dlpack__: the array lives on %s, which has no host-addressable "
                                "memory; it can only be exported as a host copy, but copy=False "
                                "(pass copy=None or True)",
                                in->filter);
        }
        if (stream != Py_None)
            return PyErr_Format(PyExc_ValueError, "__dlpack__: stream must be None for an export "
                                                  "to the host (a host copy needs no stream)");
        return export_host(a, versioned); /* the copy waits for pending work itself */
    }

    /* CUDA, shared: stream is the consumer's; see the top of the file */
    bool sync = true;
    if (stream != Py_None) {
        long long s = PyLong_Check(stream) ? PyLong_AsLongLong(stream) : -2;
        if (s == -1 && PyErr_Occurred()) return NULL;
        if (s == 0 || s < -1) /* 0 is ambiguous, so the spec forbids it */
            return PyErr_Occurred() ? NULL
                                    : PyErr_Format(PyExc_ValueError,
                                                   "__dlpack__: stream must be None, -1, 1, 2 or "
                                                   "a CUDA stream handle, not %R",
                                                   stream);
        sync = s != -1;
    }
    /* Some consumers (torch 2.11) abort the whole process on a negative
     * stride: hand such views out as a compact copy, which DLPack allows. */
    for (int d = 0; d < a->nd && copy != 1; d++)
        if (a->strides[d] < 0 && a->shape[d] > 1) {
            if (copy == 0)
                return PyErr_Format(PyExc_BufferError,
                                    "__dlpack__: this view has negative strides, which it exports "
                                    "only as a copy, but copy=False");
            copy = 1;
        }
    PyObject *owner =
        copy == 1 ? PyObject_CallMethod((PyObject *)a, "copy", NULL) : Py_NewRef((PyObject *)a);
    if (!owner) return NULL;
    mod_array *src = (mod_array *)owner;
    PyObject *cap = NULL;
    if (!sync || wait_device(dev) == 0) {
        ofl_buffer *buf = mod_array_buffer(src);
        void *data =
            buf ? (void *)(uintptr_t)(ofl_buffer_address(buf) + (uint64_t)src->offset) : NULL;
        cap = make_capsule(owner, data, natural, src->dtype, src->itemsize, src->nd, src->shape,
                           src->strides, versioned, copy == 1 ? DLPACK_FLAG_BITMASK_IS_COPIED : 0);
    }
    Py_DECREF(owner);
    return cap;
}

/* ---- __cuda_array_interface__ (version 3) ---- */

static PyObject *cuda_array_interface(mod_array *a, void *closure) {
    ofl_device *dev = mod_array_device(a);
    if (!is_cuda(dev)) /* AttributeError, so hasattr() is False */
        return PyErr_Format(PyExc_AttributeError,
                            "__cuda_array_interface__: the array lives on %s, not on a CUDA "
                            "device; use .to_device('cuda') or DLPack",
                            ofl_device_get_info(dev)->filter);
    /* 'stream': None promises the consumer that no synchronisation is needed:
     * make it true (our stream is private, see the top of the file) */
    if (wait_device(dev) < 0) return NULL;
    ofl_buffer *buf = mod_array_buffer(a);
    unsigned long long ptr = buf ? ofl_buffer_address(buf) + (uint64_t)a->offset : 0;
    PyObject *shape = mod_int_tuple(a->nd, a->shape);
    PyObject *strides =
        mod_array_is_c_contiguous(a) ? Py_NewRef(Py_None) : mod_int_tuple(a->nd, a->strides);
    PyObject *typestr = PyObject_GetAttrString(a->dtype, "str"); /* '<f4', '|b1' */
    PyObject *r = NULL;
    if (shape && strides && typestr)
        r = Py_BuildValue("{sOsOs(NO)sOsisO}", "shape", shape, "typestr", typestr, "data",
                          PyLong_FromUnsignedLongLong(ptr), Py_False, "strides", strides, "version",
                          3, "stream", Py_None);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(typestr);
    return r;
}

/* ---- import ---- */

static const char OWNER_LEGACY[] = "offload.dltensor_owner";
static const char OWNER_VERSIONED[] = "offload.dltensor_versioned_owner";

static void owner_destructor(PyObject *cap) {
    if (PyCapsule_IsValid(cap, OWNER_VERSIONED)) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, OWNER_VERSIONED);
        if (m->deleter) m->deleter(m);
    } else if (PyCapsule_IsValid(cap, OWNER_LEGACY)) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, OWNER_LEGACY);
        if (m->deleter) m->deleter(m);
    }
}

/* Takes the tensor out of a producer's capsule: renames the capsule used_*, so
 * its destructor leaves the tensor alone, and returns a capsule of ours that
 * owns it (dropping that calls the tensor's deleter). */
static PyObject *take_tensor(PyObject *cap, DLTensor **t, uint64_t *flags) {
    bool versioned = PyCapsule_IsValid(cap, VERSIONED);
    if (!versioned && !PyCapsule_IsValid(cap, LEGACY)) {
        if (PyCapsule_IsValid(cap, USED_LEGACY) || PyCapsule_IsValid(cap, USED_VERSIONED))
            return PyErr_Format(PyExc_BufferError, "from_dlpack: the DLPack capsule was already "
                                                   "consumed");
        return PyErr_Format(PyExc_TypeError,
                            "from_dlpack: __dlpack__ returned %R, not a DLPack "
                            "capsule",
                            cap);
    }
    void *m = PyCapsule_GetPointer(cap, versioned ? VERSIONED : LEGACY);
    if (versioned && ((DLManagedTensorVersioned *)m)->version.major != 1) /* left to its owner */
        return PyErr_Format(PyExc_BufferError, "from_dlpack: DLPack %u.x is not supported (1.x is)",
                            ((DLManagedTensorVersioned *)m)->version.major);
    if (PyCapsule_SetName(cap, versioned ? USED_VERSIONED : USED_LEGACY) < 0) return NULL;
    PyObject *owner =
        PyCapsule_New(m, versioned ? OWNER_VERSIONED : OWNER_LEGACY, owner_destructor);
    if (!owner) { /* ours now: delete it */
        if (versioned && ((DLManagedTensorVersioned *)m)->deleter)
            ((DLManagedTensorVersioned *)m)->deleter(m);
        else if (!versioned && ((DLManagedTensor *)m)->deleter)
            ((DLManagedTensor *)m)->deleter(m);
        return NULL;
    }
    *t = versioned ? &((DLManagedTensorVersioned *)m)->dl_tensor
                   : &((DLManagedTensor *)m)->dl_tensor;
    *flags = versioned ? ((DLManagedTensorVersioned *)m)->flags : 0;
    return owner;
}

/* The tensor's layout in NumPy's terms: dtype (borrowed), shape, byte strides,
 * and the bytes [lo, hi) around element [0,...,0] that hold its elements. */
typedef struct {
    PyObject *dtype;
    int nd;
    Py_ssize_t itemsize, size, lo, hi, shape[MOD_MAXDIMS], strides[MOD_MAXDIMS];
} tensor_layout;

static int read_layout(const DLTensor *t, tensor_layout *l) {
    static const char kinds[] = {
        [kDLInt] = 'i', [kDLUInt] = 'u', [kDLFloat] = 'f', [kDLComplex] = 'c', [kDLBool] = 'b'};
    DLDataType dt = t->dtype;
    l->dtype = dt.code < sizeof kinds && kinds[dt.code] && dt.lanes == 1 && dt.bits % 8 == 0
                   ? mod_dtype_find_borrowed(kinds[dt.code], dt.bits / 8)
                   : NULL;
    if (!l->dtype) {
        PyErr_Format(PyExc_TypeError,
                     "from_dlpack: DLPack dtype (code %d, bits %d, lanes %d) "
                     "is not supported: offload arrays hold bool, int8-64, "
                     "uint8-64, float32, float64, complex64 and complex128",
                     dt.code, dt.bits, dt.lanes);
        return -1;
    }
    if (t->ndim < 0 || t->ndim > MOD_MAXDIMS) {
        PyErr_Format(PyExc_BufferError, "from_dlpack: %d dimensions (at most %d)", (int)t->ndim,
                     MOD_MAXDIMS);
        return -1;
    }
    l->nd = t->ndim;
    l->itemsize = dt.bits / 8;
    l->size = 1;
    l->lo = 0;
    l->hi = l->itemsize;
    Py_ssize_t compact = l->itemsize;
    for (int i = l->nd - 1; i >= 0; i--) { /* NULL strides: compact row-major */
        l->shape[i] = (Py_ssize_t)t->shape[i];
        l->strides[i] = t->strides ? (Py_ssize_t)t->strides[i] * l->itemsize : compact;
        compact *= l->shape[i];
        l->size *= l->shape[i];
        Py_ssize_t ext = l->strides[i] * (l->shape[i] - 1);
        if (ext < 0)
            l->lo += ext;
        else
            l->hi += ext;
    }
    return 0;
}

/* A copy on dev of a tensor in host memory: NumPy views it, the module uploads. */
static PyObject *import_host(const DLTensor *t, const tensor_layout *l, ofl_device *dev) {
    if (l->size == 0) return mod_array_new_empty(dev, l->dtype, l->nd, l->shape);
    if (!t->data)
        return PyErr_Format(PyExc_BufferError, "from_dlpack: the tensor's data pointer is NULL");
    char *p = (char *)t->data + t->byte_offset;
    PyObject *mv = PyMemoryView_FromMemory(p + l->lo, l->hi - l->lo, PyBUF_READ);
    PyObject *shape = mod_int_tuple(l->nd, l->shape), *strides = mod_int_tuple(l->nd, l->strides);
    PyObject *args = shape ? PyTuple_Pack(2, shape, l->dtype) : NULL;
    PyObject *kw = mv && strides && args ? Py_BuildValue("{sOsnsO}", "buffer", mv, "offset", -l->lo,
                                                         "strides", strides)
                                         : NULL;
    PyObject *view = kw ? mod_np_call("ndarray", args, kw) : NULL;
    PyObject *r = view ? mod_array_from_host(view, dev) : NULL;
    Py_XDECREF(view); /* before the caller lets the producer's memory go */
    Py_XDECREF(mv);
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
}

/* A tensor in CUDA memory of src as an array on dev: shared when dev is src
 * and no copy is asked for (or needed: read-only memory), else copied. */
static PyObject *import_cuda(const DLTensor *t, const tensor_layout *l, PyObject *owner,
                             uint64_t flags, ofl_device *src, ofl_device *dev, int copy) {
    const char *why = copy == 1                               ? NULL
                      : dev != src                            ? "moving it to another device"
                      : flags & DLPACK_FLAG_BITMASK_READ_ONLY ? "it is read-only"
                                                              : NULL;
    bool copying = copy == 1 || why;
    if (why && copy == 0)
        return PyErr_Format(PyExc_BufferError,
                            "from_dlpack: copy=False, but importing the "
                            "tensor on cuda device %d needs a copy: %s",
                            (int)t->device.device_id, why);
    if (l->size == 0) return mod_array_new_empty(dev, l->dtype, l->nd, l->shape);
    uint64_t base = (uint64_t)(uintptr_t)t->data + t->byte_offset + (uint64_t)l->lo;
    ofl_buffer *buf;
    ofl_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ofl_buffer_wrap(src, base, (size_t)(l->hi - l->lo), &buf, &err);
    Py_END_ALLOW_THREADS
    if (rc) return mod_raise(&err);
    PyObject *w = mod_array_wrap(buf, owner, l->dtype, l->nd, l->shape, l->strides, -l->lo);
    if (!w || !copying) return w;
    PyObject *target = dev == src ? NULL : mod_device_new(dev);
    PyObject *r = dev == src ? PyObject_CallMethod(w, "copy", NULL)
                  : target   ? PyObject_CallMethod(w, "to_device", "O", target)
                             : NULL;
    Py_XDECREF(target);
    Py_DECREF(w);
    return r;
}

/* obj.__dlpack__(...) as a consumer calls it, knowing the producer's device. */
static PyObject *call_dlpack(PyObject *obj, int device_type) {
    PyObject *f = PyObject_GetAttrString(obj, "__dlpack__");
    if (!f) return NULL;
    bool cuda = DEVICE_MEMORY(device_type);
    /* stream=1: the legacy default stream, which ours waits for (top of file) */
    PyObject *kw = cuda ? Py_BuildValue("{si}", "stream", 1) : PyDict_New();
    PyObject *version = Py_BuildValue("(ii)", 1, 0);
    PyObject *cap = NULL;
    if (kw && version && PyDict_SetItemString(kw, "max_version", version) == 0) {
        PyObject *empty = PyTuple_New(0);
        cap = empty ? PyObject_Call(f, empty, kw) : NULL;
        if (!cap && PyErr_ExceptionMatches(PyExc_TypeError) &&
            PyDict_DelItemString(kw, "max_version") == 0) {
            PyErr_Clear(); /* a producer older than DLPack 1.0 (as NumPy retries) */
            cap = PyObject_Call(f, empty, kw);
        }
        Py_XDECREF(empty);
    }
    Py_DECREF(f);
    Py_XDECREF(kw);
    Py_XDECREF(version);
    return cap;
}

/* obj.__dlpack_device__() as (type, id); -1 with an exception. */
static int producer_device(PyObject *obj, int *type, int *id) {
    PyObject *d = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    int ok = d && PyTuple_Check(d) && PyArg_ParseTuple(d, "ii", type, id);
    if (d && !ok && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "__dlpack_device__() returned %R, not (type, id)", d);
    Py_XDECREF(d);
    return ok ? 0 : -1;
}

int mod_dlpack_is_cuda(PyObject *obj) {
    int type, id;
    if (!PyObject_HasAttrString(obj, "__dlpack__") ||
        !PyObject_HasAttrString(obj, "__dlpack_device__"))
        return 0;
    return producer_device(obj, &type, &id) < 0 ? -1 : DEVICE_MEMORY(type);
}

/* from_dlpack of an offload array: itself (a new view), or a copy. */
static PyObject *import_offload(mod_array *a, ofl_device *want, int copy) {
    ofl_device *dev = mod_array_device(a);
    if (!want || want == dev)
        return copy == 1 ? PyObject_CallMethod((PyObject *)a, "copy", NULL)
                         : PyObject_GetItem((PyObject *)a, Py_Ellipsis);
    if (copy == 0)
        return PyErr_Format(PyExc_BufferError,
                            "from_dlpack: copy=False, but the array lives on "
                            "%s, not on %s",
                            ofl_device_get_info(dev)->filter, ofl_device_get_info(want)->filter);
    PyObject *target = mod_device_new(want);
    PyObject *r = target ? PyObject_CallMethod((PyObject *)a, "to_device", "O", target) : NULL;
    Py_XDECREF(target);
    return r;
}

PyObject *mod_dlpack_import(PyObject *obj, PyObject *device, PyObject *copy_arg) {
    int copy = mod_parse_copy(copy_arg);
    ofl_device *want = NULL; /* device=; NULL: the producer's GPU, else the default */
    if (copy == -2 || (device != Py_None && mod_device_resolve(device, &want) < 0)) return NULL;
    if (mod_array_check(obj)) return import_offload((mod_array *)obj, want, copy);
    PyObject *cap;
    if (PyCapsule_CheckExact(obj)) {
        cap = Py_NewRef(obj);
    } else {
        int type, id;
        if (!PyObject_HasAttrString(obj, "__dlpack__"))
            return PyErr_Format(PyExc_TypeError,
                                "from_dlpack needs an object with __dlpack__ "
                                "and __dlpack_device__ (NumPy, CuPy, PyTorch "
                                "arrays...) or a DLPack capsule, not %.100s",
                                Py_TYPE(obj)->tp_name);
        if (producer_device(obj, &type, &id) < 0 || !(cap = call_dlpack(obj, type))) return NULL;
    }
    DLTensor *t = NULL;
    uint64_t flags = 0;
    PyObject *owner = take_tensor(cap, &t, &flags);
    Py_DECREF(cap);
    if (!owner) return NULL;
    tensor_layout l;
    PyObject *r = NULL;
    int type = t->device.device_type;
    ofl_device *src = NULL;
    if (read_layout(t, &l) < 0) {
        /* the message is set */
    } else if (type == kDLCPU || type == kDLCUDAHost) {
        if (copy == 0)
            PyErr_SetString(PyExc_BufferError,
                            "from_dlpack: copy=False, but the tensor is in host memory and "
                            "offload arrays live in device memory: it must be copied");
        else if (want || mod_device_default(&want) == 0)
            r = import_host(t, &l, want);
    } else if (DEVICE_MEMORY(type) && (src = cuda_device(t->device.device_id))) {
        r = import_cuda(t, &l, owner, flags, src, want ? want : src, copy);
    } else if (DEVICE_MEMORY(type)) {
        PyErr_Format(PyExc_BufferError,
                     "from_dlpack: the tensor is on CUDA device %d, which "
                     "offload does not see (offload.get_devices() lists "
                     "those it does)",
                     (int)t->device.device_id);
    } else {
        PyErr_Format(PyExc_BufferError,
                     "from_dlpack: DLPack device type %d is not supported: "
                     "offload imports from the CPU (1) and CUDA (2)",
                     type);
    }
    Py_DECREF(owner); /* a shared import's array keeps its own reference */
    return r;
}

/* from_dlpack(x, /, *, device=None, copy=None) */
static PyObject *f_from_dlpack(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"", "device", "copy", NULL};
    PyObject *obj, *device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OO:from_dlpack", kwlist, &obj, &device, &copy))
        return NULL;
    return mod_dlpack_import(obj, device, copy);
}

static PyMethodDef dlpack_functions[] = {
    {"from_dlpack", MOD_KWFUNC(f_from_dlpack),
     "from_dlpack(x, /, *, device=None, copy=None) -> ndarray\n\n"
     "x (anything with __dlpack__ -- NumPy, CuPy, PyTorch -- or a DLPack capsule) as an "
     "offload array. CUDA memory on a GPU offload uses is shared, not copied (copy=True "
     "copies); host memory is copied to device (default: the default device), so there "
     "copy=False raises BufferError."},
    {NULL, NULL, 0, NULL},
};

/* ndarray's side of DLPack, given to the type here so that mod_array.c needs
 * nothing of this file. */
static PyMethodDef array_methods[] = {
    {"__dlpack__", MOD_KWFUNC(dlpack_export),
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> capsule\n\n"
     "CUDA arrays are shared; others are exported as a host copy, except that copy=False on a "
     "CPU device maps the array's own memory until the consumer lets it go (other devices "
     "refuse copy=False)."},
    {"__dlpack_device__", (PyCFunction)dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (2, ordinal) for CUDA arrays, else (1, 0): the host (a copy, or "
     "with copy=False a CPU device's mapped memory)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef array_getset[] = {
    {"__cuda_array_interface__", (getter)cuda_array_interface, NULL,
     "CUDA Array Interface v3 (CUDA arrays only: AttributeError elsewhere)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int mod_dlpack_init(PyObject *module) {
    if (mod_type_add_methods(&mod_ArrayType, array_methods) < 0 ||
        mod_type_add_getset(&mod_ArrayType, array_getset) < 0)
        return -1;
    return PyModule_AddFunctions(module, dlpack_functions);
}
