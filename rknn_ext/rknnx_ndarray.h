/* The leading fields of numpy's ndarray and dtype objects, read by the binding's fast
   path (rknnx._core, _ndview.pxi) in place of numpy's buffer export, which builds a
   format string and shape and stride arrays on every call (docs/benchmarks.md,
   "Where the nanoseconds go").

   These are the fields numpy's own inline accessors read in every extension compiled
   against it (PyArray_DATA, PyArray_NDIM, PyArray_DIMS, PyArray_STRIDES,
   PyArray_DESCR, PyArray_FLAGS; a descriptor's kind, type, byteorder and type_num):
   they are part of numpy's ABI, the same in numpy 1.x and 2.x (numpy 2.0 moved the
   descriptor's fields from elsize on, which are not read here).  No numpy header is
   needed, so every wheel (abi3, cp39, the cross builds for aarch64 and armv7l) builds as
   before.  The binding checks the layout once against numpy's buffer export before it
   uses it (_nd_probe); a numpy that differs gets the buffer protocol only. */
#ifndef RKNNX_NDARRAY_H
#define RKNNX_NDARRAY_H

#include <Python.h>

typedef struct {
    PyObject_HEAD
    char *data;                  /* the first element */
    int nd;                      /* number of dimensions */
    Py_ssize_t *dimensions;      /* npy_intp[nd] (npy_intp is Py_ssize_t) */
    Py_ssize_t *strides;         /* npy_intp[nd] */
    PyObject *base;
    PyObject *descr;             /* the dtype (rknnx_descr_head) */
    int flags;                   /* NPY_ARRAY_* */
} rknnx_ndarray_head;

typedef struct {
    PyObject_HEAD
    PyTypeObject *typeobj;
    char kind;
    char type;                   /* the dtype's character code */
    char byteorder;              /* '=', '|', '<' or '>' */
    char former_flags;
    int type_num;                /* NPY_FLOAT, ... */
} rknnx_descr_head;

/* numpy's flag values (numpy/ndarraytypes.h) */
#define RKNNX_NPY_C_CONTIGUOUS 0x0001
#define RKNNX_NPY_WRITEABLE 0x0400
#define RKNNX_NPY_WARN_ON_WRITE ((int)(1U << 31))

#define rknnx_nd_data(a) (((rknnx_ndarray_head *)(a))->data)
#define rknnx_nd_ndim(a) (((rknnx_ndarray_head *)(a))->nd)
#define rknnx_nd_dims(a) (((rknnx_ndarray_head *)(a))->dimensions)
#define rknnx_nd_strides(a) (((rknnx_ndarray_head *)(a))->strides)
#define rknnx_nd_flags(a) (((rknnx_ndarray_head *)(a))->flags)
#define rknnx_nd_type_num(a) \
    (((rknnx_descr_head *)((rknnx_ndarray_head *)(a))->descr)->type_num)
#define rknnx_nd_byteorder(a) \
    (((rknnx_descr_head *)((rknnx_ndarray_head *)(a))->descr)->byteorder)

/* Fill `v` as numpy's export of array `a` with PyBUF_C_CONTIGUOUS | PyBUF_FORMAT (and
   PyBUF_WRITABLE when `writable`) would, a reference to `a` held in v->obj and
   v->internal set to `mark`: 1.  0 when numpy's export must answer (nothing held): not
   C-contiguous; for `writable`, read-only or warning on write; a type number without a
   format in `formats` (numpy's own export format by type number, NULL where the export
   must answer) or a byte order not native.  `a` is exactly a numpy.ndarray (the caller
   checks its type).  One field differs from the export: v->strides are the array's own,
   where numpy's export gives a C-contiguous array with a dimension of 1 (relaxed strides)
   the strides of its shape; the binding reads buf, len, itemsize, format, readonly and
   shape, never the strides. */
static inline int rknnx_nd_view(PyObject *a, Py_buffer *v, int writable,
                                const char *const *formats, const Py_ssize_t *itemsizes,
                                int ntypes, void *mark)
{
    rknnx_ndarray_head *h = (rknnx_ndarray_head *)a;
    rknnx_descr_head *d = (rknnx_descr_head *)h->descr;
    int flags = h->flags, t = d->type_num, k;
    Py_ssize_t n;
    if (!(flags & RKNNX_NPY_C_CONTIGUOUS))
        return 0;
    if (writable && (!(flags & RKNNX_NPY_WRITEABLE) || (flags & RKNNX_NPY_WARN_ON_WRITE)))
        return 0;
    if (t < 0 || t >= ntypes || formats[t] == NULL
        || (d->byteorder != '=' && d->byteorder != '|'))
        return 0;
    n = itemsizes[t];
    for (k = 0; k < h->nd; k++)
        n *= h->dimensions[k];   /* numpy keeps nbytes within a Py_ssize_t */
    Py_INCREF(a);
    v->obj = a;
    v->buf = h->data;
    v->len = n;
    v->itemsize = itemsizes[t];
    v->readonly = !(flags & RKNNX_NPY_WRITEABLE);
    v->ndim = h->nd;
    v->format = (char *)formats[t];
    v->shape = h->dimensions;
    v->strides = h->strides;
    v->suboffsets = NULL;
    v->internal = mark;
    return 1;
}

/* Release a view: one of rknnx_nd_view (internal is `mark`: the reference dropped) or
   of PyObject_GetBuffer. */
static inline void rknnx_view_release(Py_buffer *v, void *mark)
{
    if (v->internal == mark && mark != NULL) {
        PyObject *o = v->obj;
        v->obj = NULL;
        v->internal = NULL;
        Py_XDECREF(o);
    } else {
        PyBuffer_Release(v);
    }
}

#endif
