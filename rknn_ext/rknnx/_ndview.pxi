# numpy arrays read without the buffer protocol: for an exact numpy.ndarray of a simple
# dtype in the native byte order, the view the fast paths of inputs_set, outputs_get(out=)
# and infer check (_fast_inputs, _out_view) is filled from the array's own fields
# (rknn_ext/rknnx_ndarray.h) instead of numpy's buffer export, which builds the format
# string and the shape and stride arrays on every call: two thirds of the binding's
# instructions in model.run() (docs/benchmarks.md, "Where the nanoseconds go").  The view
# holds a reference to the array, as an export does, and says what the export would say
# (the same format string, sizes, shape and read-only flag); anything else (a subclass,
# another dtype or byte order, an array the export would refuse or warn about) takes
# the buffer protocol as before, so every check, refusal and message stays the same.
# Release such views with _view_release (PyBuffer_Release for the others).

cdef extern from "rknnx_ndarray.h":
    char* _nd_data "rknnx_nd_data"(PyObject* a)
    int _nd_ndim "rknnx_nd_ndim"(PyObject* a)
    Py_ssize_t* _nd_dims "rknnx_nd_dims"(PyObject* a)
    Py_ssize_t* _nd_strides "rknnx_nd_strides"(PyObject* a)
    int _nd_flags "rknnx_nd_flags"(PyObject* a)
    int _nd_type_num "rknnx_nd_type_num"(PyObject* a)
    char _nd_byteorder "rknnx_nd_byteorder"(PyObject* a)
    int _NPY_C_CONTIGUOUS "RKNNX_NPY_C_CONTIGUOUS"
    int _NPY_WRITEABLE "RKNNX_NPY_WRITEABLE"
    int _NPY_WARN_ON_WRITE "RKNNX_NPY_WARN_ON_WRITE"
    bint _nd_fill "rknnx_nd_view"(PyObject* a, Py_buffer* v, int writable,
                                  const char* const* formats, const Py_ssize_t* itemsizes,
                                  int ntypes, void* mark) noexcept
    void _nd_release "rknnx_view_release"(Py_buffer* v, void* mark) noexcept

cdef extern from "<string.h>":
    int strcmp(const char* a, const char* b)

cdef enum:
    _ND_TYPES = 32                           # numpy's builtin type numbers are below this

cdef object _ndarray = _np.ndarray           # infer's fast_only takes exactly this type
cdef const char* _ND_FORMAT[_ND_TYPES]       # type number -> numpy's export format, or NULL
cdef Py_ssize_t _ND_ITEMSIZE[_ND_TYPES]
cdef bint _nd_ok = False                     # _nd_probe found numpy's fields where expected
cdef char _ND_MARK = 0                       # view.internal of the views made here
_nd_formats = []                             # keeps the format strings _ND_FORMAT points to


cdef inline bint _nd_view(object item, Py_buffer* v, bint writable) noexcept:
    """Fill `v` as numpy's export of `item` (exactly a numpy.ndarray) with
    PyBUF_C_CONTIGUOUS | PyBUF_FORMAT (| PyBUF_WRITABLE when `writable`) would, holding a
    reference: True.  False when the export itself must answer (nothing held): numpy's
    fields not checked, a dtype outside the table or not in the native byte order, not
    C-contiguous, or for `writable` read-only or warning on write (rknnx_nd_view)."""
    return _nd_ok and _nd_fill(<PyObject*>item, v, writable, _ND_FORMAT, _ND_ITEMSIZE,
                               _ND_TYPES, &_ND_MARK)


cdef inline void _view_release(Py_buffer* v) noexcept:
    """Release a view of _nd_view (the reference it holds) or of PyObject_GetBuffer."""
    _nd_release(v, &_ND_MARK)


cdef bint _nd_probe() except -1:
    """True when numpy's fields read by _nd_view are where rknnx_ndarray.h says: for
    arrays of every candidate dtype (contiguous, not, read-only), each field against what
    numpy's buffer export and its Python attributes say.  Fills _ND_FORMAT and
    _ND_ITEMSIZE with the export's own format and itemsize, one-character formats only.
    Run once at import; False leaves every array to the buffer protocol."""
    cdef PyObject* p
    cdef int t, k
    table = {}
    for c in "?bBhHiIlLqQefd":
        a = _np.zeros((2, 3), c)
        with memoryview(a) as m:
            fmt, size = m.format, m.itemsize
        p = <PyObject*>a
        t = _nd_type_num(p)
        if t != a.dtype.num or not 0 <= t < _ND_TYPES or len(fmt) != 1:
            return False
        if <size_t>_nd_data(p) != <size_t>a.__array_interface__["data"][0]:
            return False
        if _nd_ndim(p) != 2 or _nd_dims(p)[0] != 2 or _nd_dims(p)[1] != 3:
            return False
        if _nd_strides(p)[0] != a.strides[0] or _nd_strides(p)[1] != a.strides[1]:
            return False
        if chr(_nd_byteorder(p)) != a.dtype.byteorder or a.dtype.byteorder not in "=|":
            return False
        if size * 6 != a.nbytes:
            return False
        if not (_nd_flags(p) & _NPY_C_CONTIGUOUS and _nd_flags(p) & _NPY_WRITEABLE):
            return False
        s = a[:, ::2]
        if _nd_flags(<PyObject*>s) & _NPY_C_CONTIGUOUS or s.flags.c_contiguous:
            return False
        a.flags.writeable = False
        if _nd_flags(p) & _NPY_WRITEABLE or not _nd_flags(p) & _NPY_C_CONTIGUOUS:
            return False
        b = _np.zeros(5, c).astype(_np.dtype(c).newbyteorder())
        if c not in "?bB" and chr(_nd_byteorder(<PyObject*>b)) in "=|":
            return False                     # swapped bytes must read as swapped
        table[t] = (fmt.encode("ascii"), size)
    for t in range(_ND_TYPES):
        _ND_FORMAT[t] = NULL
        _ND_ITEMSIZE[t] = 0
    for t, (f, size) in table.items():
        _nd_formats.append(f)
        _ND_FORMAT[t] = <const char*>(<bytes>f)
        _ND_ITEMSIZE[t] = size
    # the views themselves against the export's, field by field
    for c in "?bBhHiIlLqQefd":
        for a in (_np.zeros((2, 3), c), _np.zeros(7, c), _np.zeros((), c),
                  _np.zeros((1, 4, 0), c)):
            if not _nd_same_as_export(a):
                for t in range(_ND_TYPES):
                    _ND_FORMAT[t] = NULL
                return False
    return True


cdef bint _nd_same_as_export(object a) except -1:
    """_nd_view of `a` says what numpy's export says (writable and read-only)."""
    cdef Py_buffer mine, theirs
    cdef int k, w
    cdef bint same
    for w in range(2):
        if not _nd_fill(<PyObject*>a, &mine, w, _ND_FORMAT, _ND_ITEMSIZE, _ND_TYPES,
                        &_ND_MARK):
            return False
        PyObject_GetBuffer(a, &theirs, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT
                           | (PyBUF_WRITABLE if w else 0))
        same = (mine.buf == theirs.buf and mine.len == theirs.len
                and mine.itemsize == theirs.itemsize and mine.readonly == theirs.readonly
                and mine.ndim == theirs.ndim and theirs.format != NULL
                and strcmp(mine.format, theirs.format) == 0)
        for k in range(mine.ndim if same else 0):
            same = same and mine.shape[k] == theirs.shape[k]
        PyBuffer_Release(&theirs)
        _nd_release(&mine, &_ND_MARK)
        if not same:
            return False
    return True


_nd_ok = _nd_probe()
_NDARRAY_FIELDS_READ = _nd_ok                # for the tests: the fast path is in use
