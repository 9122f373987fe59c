# TensorAttr (rknn_tensor_attr as an editable Python object), the element-type tables,
# the memory layout a tensor attribute implies, and the typed results of rknn_query.

import collections as _collections

import numpy as _np


# ---- element types -----------------------------------------------------------------------
# Index = rknn_tensor_type.  itemsize 0: no byte-addressable element (INT4 packs two per
# byte); format NULL: no numpy/struct equivalent (INT4, BFLOAT16), so no typed view.
cdef Py_ssize_t _ITEMSIZE[12]
cdef const char* _FORMAT[12]
cdef uint8_t _DLCODE[12]

_ITEMSIZE[:] = [4, 2, 1, 1, 2, 2, 4, 4, 8, 1, 0, 2]
_FORMAT[0] = b"f"
_FORMAT[1] = b"e"
_FORMAT[2] = b"b"
_FORMAT[3] = b"B"
_FORMAT[4] = b"h"
_FORMAT[5] = b"H"
_FORMAT[6] = b"i"
_FORMAT[7] = b"I"
_FORMAT[8] = b"q"
_FORMAT[9] = b"?"
_FORMAT[10] = NULL
_FORMAT[11] = NULL
# DLPack type codes: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6
_DLCODE[:] = [2, 2, 0, 1, 0, 1, 0, 1, 0, 6, 0, 2]

_NP_DTYPES = (_np.dtype(_np.float32), _np.dtype(_np.float16), _np.dtype(_np.int8),
              _np.dtype(_np.uint8), _np.dtype(_np.int16), _np.dtype(_np.uint16),
              _np.dtype(_np.int32), _np.dtype(_np.uint32), _np.dtype(_np.int64),
              _np.dtype(_np.bool_), None, None)

# struct-module format (as exported by numpy, memoryview, array) -> rknn_tensor_type
_FORMAT_TO_TYPE = {
    "f": RKNN_TENSOR_FLOAT32, "e": RKNN_TENSOR_FLOAT16, "b": RKNN_TENSOR_INT8,
    "B": RKNN_TENSOR_UINT8, "c": RKNN_TENSOR_UINT8, "h": RKNN_TENSOR_INT16,
    "H": RKNN_TENSOR_UINT16, "i": RKNN_TENSOR_INT32, "I": RKNN_TENSOR_UINT32,
    "q": RKNN_TENSOR_INT64, "?": RKNN_TENSOR_BOOL,
}
if _np.dtype(_np.int_).itemsize == 8:
    _FORMAT_TO_TYPE["l"] = RKNN_TENSOR_INT64
else:
    _FORMAT_TO_TYPE["l"] = RKNN_TENSOR_INT32
    _FORMAT_TO_TYPE["L"] = RKNN_TENSOR_UINT32


cdef inline bint _type_known(int t) noexcept nogil:
    return 0 <= t < RKNN_TENSOR_TYPE_MAX


cdef str _type_name(int t):
    try:
        return TensorType(t).name
    except ValueError:
        return f"unknown type {t}"


cdef str _fmt_name(int f):
    try:
        return TensorFormat(f).name
    except ValueError:
        return f"unknown format {f}"


cdef int _type_of_format(const char* fmt) except -2:
    """rknn_tensor_type of a buffer format string, or -1 if it has none."""
    if fmt == NULL:
        return RKNN_TENSOR_UINT8
    cdef bytes b = fmt
    cdef str s = b.decode("ascii", "replace")
    if s[:1] in ("@", "=", "<") and len(s) == 2:
        s = s[1:]
    if s in _FORMAT_TO_TYPE:
        return _FORMAT_TO_TYPE[s]
    return -1


def dtype_of(tensor_type):
    """The numpy dtype of an RKNN tensor type.

    Parameters
    ----------
    tensor_type : TensorType or int
        A ``RKNN_TENSOR_*`` value.

    Returns
    -------
    numpy.dtype

    Raises
    ------
    TypeError
        For INT4 and BFLOAT16, which numpy cannot express.
    ValueError
        For a value that is not a tensor type.

    .. versionadded:: 0.1.0
    """
    cdef int t = tensor_type
    if not _type_known(t):
        raise ValueError(f"{tensor_type!r} is not a tensor type; expected one of "
                         f"{[m.name for m in TensorType]}")
    dt = _NP_DTYPES[t]
    if dt is None:
        raise TypeError(f"RKNN_TENSOR_{TensorType(t).name} has no numpy dtype")
    return dt


def type_of_dtype(dtype):
    """The RKNN tensor type of a numpy dtype (or anything ``numpy.dtype`` accepts).

    Returns
    -------
    TensorType

    Raises
    ------
    TypeError
        If the dtype has no RKNN equivalent (e.g. float64, complex).

    .. versionadded:: 0.1.0
    """
    dt = _np.dtype(dtype)
    for i, d in enumerate(_NP_DTYPES):
        if d is not None and d == dt:
            return TensorType(i)
    raise TypeError(f"dtype {dt} has no RKNN tensor type; expected one of "
                    f"{[str(d) for d in _NP_DTYPES if d is not None]}")


# ---- layouts -------------------------------------------------------------------------------
cdef int _layout_raw(_Layout* lay, Py_ssize_t nbytes) noexcept nogil:
    """A plain byte buffer of nbytes."""
    memset(lay, 0, sizeof(_Layout))
    lay.ndim = 1
    lay.shape[0] = nbytes
    lay.strides[0] = 1
    lay.itemsize = 1
    lay.nbytes = nbytes
    lay.extent = nbytes
    lay.format = b"B"
    lay.dl_code = 1
    lay.c_contiguous = True
    return 0


# Layout arithmetic is checked: dims are user-editable u32s, so products can exceed
# Py_ssize_t.  An overflowed product must never become a small extent (a view reaching
# past the buffer) nor a zero divisor.
cdef extern from *:
    bint _mul_overflow "__builtin_mul_overflow"(Py_ssize_t a, Py_ssize_t b, Py_ssize_t* r) noexcept nogil

# Largest extent a layout may span: rknn sizes are uint32_t, and a buffer export counts
# in Py_ssize_t, which is 32 bits on armv7l (2**31 - 1 there).
cdef Py_ssize_t _LAYOUT_MAX = (<Py_ssize_t>0xFFFFFFFF if <uint64_t>PY_SSIZE_T_MAX > 0xFFFFFFFFULL
                               else PY_SSIZE_T_MAX)


cdef inline bint _over_layout_max(uint64_t v) noexcept nogil:
    """True when a dimension or stride (a vendor u32) is past what a layout can hold: no
    conversion to Py_ssize_t may wrap (it would on a 32-bit ABI)."""
    return v > <uint64_t>_LAYOUT_MAX


cdef inline bint _mul_into(Py_ssize_t* acc, Py_ssize_t b) noexcept nogil:
    """acc *= b; True on overflow (acc is then meaningless)."""
    return _mul_overflow(acc[0], b, acc)


cdef int _too_big(const rknn_tensor_attr* a) except -1:
    cdef uint32_t i
    raise ValueError(f"tensor {_cstr(a.name, RKNN_MAX_NAME_LEN)!r} dims "
                     f"{[a.dims[i] for i in range(min(a.n_dims, <uint32_t>RKNN_MAX_DIMS))]} "
                     f"{_type_name(a.type)} {_fmt_name(a.fmt)} spans more than "
                     f"{_LAYOUT_MAX} bytes (padding included); expected a tensor of at most "
                     f"{_LAYOUT_MAX} bytes")


cdef int _layout_of_attr(const rknn_tensor_attr* a, _Layout* lay, int native_type,
                         Py_ssize_t channels) except -1:
    """The typed, shaped, strided layout of the tensor `a` describes.

    fmt NHWC (4-D): rows are ``w_stride`` pixels apart (when ``w_stride`` > W), batches
    ``h_stride`` rows apart (when ``h_stride`` > H), and pixels are ``Cs`` elements apart:
    ``dims[3]``, or more when the tensor is in its native type (``a.type ==
    native_type``; -1: ``a.type``), has a row stride (``w_stride``: the runtime's NHWC
    inputs) and its ``size_with_stride`` (bytes of that type) counts more channels per
    pixel (the emulator's NHWC inputs of 5+ channels pad C to C2).  Without a row stride
    (the runtime's NHWC outputs) a pixel is ``dims[3]`` channels and ``size_with_stride``
    only what to allocate: the vendor's exceeds the pixels (RK3588 rounds it up to C2,
    the mini runtime asks for the NC1HWC2 bytes; docs/abi-notes.md).  A converted type is
    packed in C.  `channels` (> 0): the tensor's own channel count where the runtime's
    ``dims[3]`` pads it (RK3566's NATIVE_NHWC_OUTPUT_ATTR): the view has that many,
    ``dims[3]`` apart in the native type, packed in a converted one; -1 or 0:
    ``dims[3]``.  fmt NC1HWC2 (5-D): blocked, rows ``w_stride`` pixels apart.  NCHW and
    everything else: packed in the order of ``dims``.

    Raises ValueError when the layout spans more than 2**32 - 1 bytes (or a product
    overflows), TypeError for a type numpy cannot view.
    """
    cdef int t = a.type
    cdef uint32_t nd = a.n_dims
    cdef Py_ssize_t i
    cdef bint ovf
    _check_viewable(a)
    if native_type < 0:
        native_type = t
    memset(lay, 0, sizeof(_Layout))
    lay.ndim = nd
    lay.itemsize = _ITEMSIZE[t]
    lay.format = _FORMAT[t]
    lay.dl_code = _DLCODE[t]
    for i in range(nd):
        lay.shape[i] = a.dims[i]
    if nd == 4 and a.fmt == RKNN_TENSOR_NHWC:
        ovf = _nhwc_strides(a, lay, native_type, channels)
    elif nd == 5 and a.fmt == RKNN_TENSOR_NC1HWC2:
        ovf = _nc1hwc2_strides(a, lay)
    else:
        ovf = _packed_strides(a, lay)
    _layout_extent(a, lay, ovf)
    return 0


cdef int _check_viewable(const rknn_tensor_attr* a) except -1:
    """_layout_of_attr's refusals before any arithmetic: a type numpy cannot view, too
    many dims, a dimension or row/batch stride past what a layout can hold."""
    cdef int t = a.type
    cdef uint32_t i, nd = a.n_dims
    if not _type_known(t) or _FORMAT[t] == NULL:
        raise TypeError(f"tensor {_cstr(a.name, RKNN_MAX_NAME_LEN)!r} has type "
                        f"{_type_name(t)}, which numpy cannot view; expected one of "
                        f"{[m.name for m in TensorType if _FORMAT[m] != NULL]} "
                        "(use the plain byte view)")
    if nd > RKNN_MAX_DIMS:
        raise ValueError(f"n_dims is {nd}; expected at most {RKNN_MAX_DIMS}")
    for i in range(nd):
        if _over_layout_max(a.dims[i]):
            _too_big(a)
    if _over_layout_max(a.w_stride) or _over_layout_max(a.h_stride):
        _too_big(a)
    return 0


cdef Py_ssize_t _nhwc_pixel_stride(const rknn_tensor_attr* a, int native_type) noexcept nogil:
    """Elements between two pixels of an NHWC tensor: ``dims[3]``, or the channels per
    pixel ``size_with_stride`` counts when the tensor is in its native type and has a row
    stride (padded channels)."""
    cdef Py_ssize_t n_ = a.dims[0], h_ = a.dims[1], w_ = a.dims[2], c_ = a.dims[3], pix
    cdef Py_ssize_t ws = a.w_stride if a.w_stride > w_ else w_
    cdef uint64_t elems
    if a.type == native_type and a.w_stride and a.size_with_stride and _ITEMSIZE[native_type]:
        # padded channels: size_with_stride counts Cs channels per pixel of its rows
        pix = n_
        if (not _mul_into(&pix, h_) and not _mul_into(&pix, ws) and pix > 0
                and a.size_with_stride % _ITEMSIZE[native_type] == 0):
            elems = a.size_with_stride // <uint64_t>_ITEMSIZE[native_type]
            if elems % <uint64_t>pix == 0 and elems // <uint64_t>pix > <uint64_t>c_:
                return <Py_ssize_t>(elems // <uint64_t>pix)   # <= size_with_stride / pix
    return c_


cdef bint _nhwc_strides(const rknn_tensor_attr* a, _Layout* lay, int native_type,
                        Py_ssize_t channels) noexcept nogil:
    """The strides of a 4-D NHWC tensor (rows ``w_stride`` pixels apart, batches
    ``h_stride`` rows apart, pixels :func:`_nhwc_pixel_stride` elements apart) and its
    view's channels; True on overflow."""
    cdef Py_ssize_t h_ = a.dims[1], w_ = a.dims[2], c_ = a.dims[3]
    cdef Py_ssize_t ws = a.w_stride if a.w_stride > w_ else w_
    cdef Py_ssize_t hs = a.h_stride if a.h_stride > h_ else h_
    cdef Py_ssize_t cs = _nhwc_pixel_stride(a, native_type)
    cdef Py_ssize_t span = lay.itemsize
    cdef bint ovf = False
    if 0 < channels < c_:
        # the padding channels are strides, not data; a converted type has none
        lay.shape[3] = channels
        if a.type != native_type:
            cs = channels
    lay.strides[3] = span
    ovf |= _mul_into(&span, cs)
    lay.strides[2] = span
    ovf |= _mul_into(&span, ws)
    lay.strides[1] = span
    ovf |= _mul_into(&span, hs)
    lay.strides[0] = span
    return ovf


cdef bint _nc1hwc2_strides(const rknn_tensor_attr* a, _Layout* lay) noexcept nogil:
    """The strides of a 5-D NC1HWC2 tensor: blocked, rows ``w_stride`` pixels apart;
    True on overflow."""
    cdef Py_ssize_t ws = a.w_stride if a.w_stride > a.dims[3] else a.dims[3]
    cdef Py_ssize_t span = lay.itemsize
    cdef bint ovf = False
    lay.strides[4] = span
    ovf |= _mul_into(&span, a.dims[4])
    lay.strides[3] = span
    ovf |= _mul_into(&span, ws)
    lay.strides[2] = span
    ovf |= _mul_into(&span, a.dims[2])
    lay.strides[1] = span
    ovf |= _mul_into(&span, a.dims[1])
    lay.strides[0] = span
    return ovf


cdef bint _packed_strides(const rknn_tensor_attr* a, _Layout* lay) noexcept nogil:
    """The strides of any other tensor: packed in the order of ``dims``; True on
    overflow."""
    cdef Py_ssize_t i, span = lay.itemsize
    cdef bint ovf = False
    for i in range(<Py_ssize_t>a.n_dims - 1, -1, -1):
        lay.strides[i] = span
        if i > 0:
            ovf |= _mul_into(&span, a.dims[i])
    return ovf


cdef int _layout_extent(const rknn_tensor_attr* a, _Layout* lay, bint ovf) except -1:
    """The bytes of the view's elements and the extent its strides span (ValueError when
    either, or a product on the way, is past what a layout can hold)."""
    cdef Py_ssize_t i, es = lay.itemsize
    lay.nbytes = es
    for i in range(lay.ndim):
        ovf |= _mul_into(&lay.nbytes, lay.shape[i])
    if lay.ndim == 0:
        lay.extent = es
    elif lay.nbytes == 0 and not ovf:
        lay.extent = 0
    else:
        lay.extent = lay.shape[0]
        ovf |= _mul_into(&lay.extent, lay.strides[0])
    if ovf or lay.extent > _LAYOUT_MAX or lay.nbytes > _LAYOUT_MAX:
        _too_big(a)
    lay.c_contiguous = lay.extent == lay.nbytes
    return 0


cdef tuple _layout_shape(const _Layout* lay):
    return tuple([lay.shape[i] for i in range(lay.ndim)])


cdef tuple _layout_strides(const _Layout* lay):
    return tuple([lay.strides[i] for i in range(lay.ndim)])


# ---- TensorAttr ----------------------------------------------------------------------------
cdef tuple _strip_ones(tuple shape):
    """A shape without its leading ones (the last dimension always kept)."""
    cdef Py_ssize_t i = 0
    while i < len(shape) - 1 and shape[i] == 1:
        i += 1
    return shape[i:]


cdef tuple _dims_in_fmt(TensorAttr a, int fmt):
    """The attribute's dims in the order of layout `fmt` (NHWC <-> NCHW for images)."""
    d = a.dims
    if len(d) == 4 and fmt != <int>a.c.fmt:
        if a.c.fmt == RKNN_TENSOR_NHWC and fmt == RKNN_TENSOR_NCHW:
            return (d[0], d[3], d[1], d[2])
        if a.c.fmt == RKNN_TENSOR_NCHW and fmt == RKNN_TENSOR_NHWC:
            return (d[0], d[2], d[3], d[1])
    return d


cdef TensorAttr _attr_from_c(const rknn_tensor_attr* c):
    cdef TensorAttr a = TensorAttr.__new__(TensorAttr)
    a.c = c[0]
    a._ntype = c.type
    return a


cdef TensorAttr _attr_copy(TensorAttr src):
    cdef TensorAttr a = _attr_from_c(&src.c)
    a._ntype = src._ntype
    return a


def _attr_restore(data, native_type):
    """Unpickle a TensorAttr (its struct bytes and the native type it remembers)."""
    cdef TensorAttr a = TensorAttr.from_bytes(data)
    a._ntype = native_type
    return a


cdef object _cstr(const char* s, size_t cap):
    """A NUL-terminated (or cap-long) C string as str."""
    return s[:strnlen(s, cap)].decode("utf-8", "replace")


cdef class TensorAttr:
    """A tensor attribute: every field of ``rknn_tensor_attr``, editable.

    Returned by :meth:`Context.query` (``INPUT_ATTR``, ``NATIVE_OUTPUT_ATTR`` ...) and by
    :attr:`Context.input_attrs` / :attr:`Context.output_attrs`; passed to
    :meth:`Context.set_io_mem`, :meth:`Context.set_input_shapes` and
    :meth:`TensorMem.bind`.  The zero-copy demos change ``type``, ``fmt`` and
    ``pass_through`` of a queried attribute before binding; :meth:`copy` first if the
    original is still needed.

    Parameters
    ----------
    index : int, optional
        Tensor index.
    **fields
        Any field by name: ``dims`` (sets ``n_dims`` too), ``name``, ``n_elems``,
        ``size``, ``fmt``, ``type``, ``qnt_type``, ``fl``, ``zp``, ``scale``,
        ``w_stride``, ``size_with_stride``, ``pass_through``, ``h_stride``.

    Examples
    --------
    >>> attr = ctx.query(QueryCmd.INPUT_ATTR, 0)
    >>> attr.type, attr.fmt = TensorType.UINT8, TensorFormat.NHWC
    >>> mem = ctx.create_mem(attr.size_with_stride)
    >>> ctx.set_io_mem(mem, attr)

    .. versionadded:: 0.1.0
    """

    def __init__(self, index=0, **fields):
        memset(&self.c, 0, sizeof(self.c))
        self.index = index
        for key, value in fields.items():
            if key not in _ATTR_FIELDS:
                raise TypeError(f"TensorAttr has no field {key!r}; expected one of {_ATTR_FIELDS}")
            setattr(self, key, value)
        self._ntype = self.c.type

    # -- the vendor fields --
    @property
    def index(self):
        """Tensor index (set before a query; ``rknn_tensor_attr.index``)."""
        return self.c.index

    @index.setter
    def index(self, value):
        self.c.index = _u32(value, "index")

    @property
    def n_dims(self):
        """Number of valid entries of :attr:`dims` (0..16)."""
        return self.c.n_dims

    @n_dims.setter
    def n_dims(self, value):
        cdef uint32_t n = _u32(value, "n_dims")
        if n > RKNN_MAX_DIMS:
            raise ValueError(f"n_dims must be at most {RKNN_MAX_DIMS}, got {n}")
        self.c.n_dims = n

    @property
    def dims(self):
        """The shape, in the order of :attr:`fmt` (tuple of ``n_dims`` ints).

        Setting it sets ``n_dims`` too.
        """
        return tuple([self.c.dims[i] for i in range(min(self.c.n_dims, <uint32_t>RKNN_MAX_DIMS))])

    @dims.setter
    def dims(self, value):
        vals = [_u32(v, "dims entry") for v in value]
        if len(vals) > RKNN_MAX_DIMS:
            raise ValueError(f"dims has {len(vals)} entries; expected at most {RKNN_MAX_DIMS}")
        memset(self.c.dims, 0, sizeof(self.c.dims))
        for i, v in enumerate(vals):
            self.c.dims[i] = v
        self.c.n_dims = len(vals)

    @property
    def name(self):
        """Tensor name (str, at most 255 UTF-8 bytes)."""
        return _cstr(self.c.name, sizeof(self.c.name))

    @name.setter
    def name(self, value):
        cdef bytes b = str(value).encode("utf-8")
        if len(b) >= RKNN_MAX_NAME_LEN or b"\0" in b:
            raise ValueError(f"name must be at most {RKNN_MAX_NAME_LEN - 1} UTF-8 bytes "
                             f"without NUL, got {len(b)} bytes")
        memset(self.c.name, 0, sizeof(self.c.name))
        memcpy(self.c.name, <const char*>b, len(b))

    @property
    def n_elems(self):
        """Number of elements (logical, without padding)."""
        return self.c.n_elems

    @n_elems.setter
    def n_elems(self, value):
        self.c.n_elems = _u32(value, "n_elems")

    @property
    def size(self):
        """Packed size in bytes (in the type the runtime reported)."""
        return self.c.size

    @size.setter
    def size(self, value):
        self.c.size = _u32(value, "size")

    @property
    def fmt(self):
        """Layout (:class:`TensorFormat`)."""
        try:
            return TensorFormat(self.c.fmt)
        except ValueError:
            return int(self.c.fmt)

    @fmt.setter
    def fmt(self, value):
        cdef int f = value
        if not 0 <= f < RKNN_TENSOR_FORMAT_MAX:
            raise ValueError(f"fmt must be a TensorFormat ({[m.name for m in TensorFormat]}), "
                             f"got {value!r}")
        self.c.fmt = <rknn_tensor_format>f

    @property
    def type(self):
        """Element type (:class:`TensorType`).

        Editing it (the zero-copy demos' FLOAT32/FLOAT16 inputs) keeps the type the
        runtime reported (or the constructor was given) as the *native* type: channel
        padding (a native NHWC tensor's C rounded up to C2, counted by
        ``size_with_stride`` in bytes of the native type) exists only in the native
        type; a converted type is packed in C.
        """
        try:
            return TensorType(self.c.type)
        except ValueError:
            return int(self.c.type)

    @type.setter
    def type(self, value):
        cdef int t = value
        if not _type_known(t):
            raise ValueError(f"type must be a TensorType ({[m.name for m in TensorType]}), "
                             f"got {value!r}")
        self.c.type = <rknn_tensor_type>t

    @property
    def qnt_type(self):
        """Quantization kind (:class:`QntType`)."""
        try:
            return QntType(self.c.qnt_type)
        except ValueError:
            return int(self.c.qnt_type)

    @qnt_type.setter
    def qnt_type(self, value):
        cdef int q = value
        if not 0 <= q < RKNN_TENSOR_QNT_MAX:
            raise ValueError(f"qnt_type must be a QntType ({[m.name for m in QntType]}), "
                             f"got {value!r}")
        self.c.qnt_type = <rknn_tensor_qnt_type>q

    @property
    def fl(self):
        """Fractional length of DFP quantization (int8)."""
        return self.c.fl

    @fl.setter
    def fl(self, value):
        cdef int v = value
        if not -128 <= v <= 127:
            raise ValueError(f"fl must fit an int8 (-128..127), got {value!r}")
        self.c.fl = <int8_t>v

    @property
    def zp(self):
        """Affine zero point."""
        return self.c.zp

    @zp.setter
    def zp(self, value):
        self.c.zp = value

    @property
    def scale(self):
        """Affine scale: real = (q - zp) * scale."""
        return self.c.scale

    @scale.setter
    def scale(self, value):
        self.c.scale = value

    @property
    def w_stride(self):
        """Padded width in elements (0: equal to the width); set by the runtime."""
        return self.c.w_stride

    @w_stride.setter
    def w_stride(self, value):
        self.c.w_stride = _u32(value, "w_stride")

    @property
    def size_with_stride(self):
        """Bytes to allocate for zero-copy, padding included."""
        return self.c.size_with_stride

    @size_with_stride.setter
    def size_with_stride(self, value):
        self.c.size_with_stride = _u32(value, "size_with_stride")

    @property
    def pass_through(self):
        """True: the data is already in the model's native type and layout."""
        return bool(self.c.pass_through)

    @pass_through.setter
    def pass_through(self, value):
        self.c.pass_through = 1 if value else 0

    @property
    def h_stride(self):
        """Padded height for multi-batch inputs (0: the model height); set by the user."""
        return self.c.h_stride

    @h_stride.setter
    def h_stride(self, value):
        self.c.h_stride = _u32(value, "h_stride")

    # -- derived --
    @property
    def dtype(self):
        """The numpy dtype of :attr:`type` (raises TypeError for INT4/BFLOAT16)."""
        return dtype_of(self.c.type)

    @property
    def shape(self):
        """The shape as a tuple (same as :attr:`dims`)."""
        return self.dims

    @property
    def layout(self):
        """The name of :attr:`fmt`, e.g. ``"NHWC"``."""
        return _fmt_name(self.c.fmt)

    @property
    def quantized(self):
        """True when the tensor is quantized (DFP or affine)."""
        return self.c.qnt_type != RKNN_TENSOR_QNT_NONE

    @property
    def strides(self):
        """Byte strides of the tensor in memory, padding (``w_stride``, ``h_stride``,
        padded channels) included: what a :class:`TensorMem` bound to this attribute
        exports."""
        cdef _Layout lay
        _layout_of_attr(&self.c, &lay, self._ntype, -1)
        return _layout_strides(&lay)

    @property
    def nbytes_with_stride(self):
        """Bytes a buffer holding this tensor must have (the layout's full extent)."""
        cdef _Layout lay
        _layout_of_attr(&self.c, &lay, self._ntype, -1)
        return lay.extent

    @property
    def alloc_size(self):
        """Bytes to allocate for a buffer bound to this tensor: the largest of the
        runtime's :attr:`size_with_stride`, the layout's extent (:attr:`nbytes_with_stride`)
        and :attr:`size` (what a zero-copy session allocates)."""
        cdef _Layout lay
        _layout_of_attr(&self.c, &lay, self._ntype, -1)
        return max(<uint64_t>self.c.size_with_stride, <uint64_t>lay.extent,
                   <uint64_t>self.c.size)

    # -- copying, comparing, showing --
    def copy(self):
        """An independent copy (editing it leaves this one unchanged)."""
        return _attr_copy(self)

    def __copy__(self):
        return _attr_copy(self)

    def __deepcopy__(self, memo):
        return _attr_copy(self)

    def to_bytes(self):
        """The raw ``rknn_tensor_attr`` struct (376 bytes on LP64)."""
        return (<char*>&self.c)[:sizeof(rknn_tensor_attr)]

    @staticmethod
    def from_bytes(data):
        """A TensorAttr from the raw struct bytes of :meth:`to_bytes`.

        Raises
        ------
        ValueError
            If ``data`` is not exactly ``sizeof(rknn_tensor_attr)`` bytes.
        """
        cdef Py_buffer view
        cdef TensorAttr a = TensorAttr.__new__(TensorAttr)
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if view.len != sizeof(rknn_tensor_attr):
                raise ValueError(f"expected {sizeof(rknn_tensor_attr)} bytes of "
                                 f"rknn_tensor_attr, got {view.len}")
            memcpy(&a.c, view.buf, sizeof(rknn_tensor_attr))
        finally:
            PyBuffer_Release(&view)
        return a

    def __reduce__(self):
        return (_attr_restore, (self.to_bytes(), self._ntype))

    def as_dict(self):
        """Every field by name (a plain dict)."""
        return {k: getattr(self, k) for k in _ATTR_FIELDS_ALL}

    def __eq__(self, other):
        if not isinstance(other, TensorAttr):
            return NotImplemented
        return self.as_dict() == (<TensorAttr>other).as_dict()

    __hash__ = None

    def __repr__(self):
        parts = [f"index={self.c.index}", f"name={self.name!r}",
                 f"dims={list(self.dims)}", f"fmt={self.layout}",
                 f"type={_type_name(self.c.type)}"]
        if self.c.qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC:
            parts.append(f"qnt=AFFINE(zp={self.c.zp}, scale={self.c.scale:.6g})")
        elif self.c.qnt_type == RKNN_TENSOR_QNT_DFP:
            parts.append(f"qnt=DFP(fl={self.c.fl})")
        parts += [f"n_elems={self.c.n_elems}", f"size={self.c.size}",
                  f"w_stride={self.c.w_stride}", f"size_with_stride={self.c.size_with_stride}"]
        if self.c.h_stride:
            parts.append(f"h_stride={self.c.h_stride}")
        if self.c.pass_through:
            parts.append("pass_through=True")
        return "TensorAttr(" + ", ".join(parts) + ")"


_ATTR_FIELDS = ("index", "n_dims", "dims", "name", "n_elems", "size", "fmt", "type",
                "qnt_type", "fl", "zp", "scale", "w_stride", "size_with_stride",
                "pass_through", "h_stride")
_ATTR_FIELDS_ALL = _ATTR_FIELDS


cdef object _py_int(object v, str what):
    try:
        return v.__index__()
    except AttributeError:
        raise TypeError(f"{what} must be an int, got {type(v).__name__}") from None


cdef int _py_enum(object v, str what, str enum) except? -1:
    """An enum-like argument as a C int: TypeError naming `what` for a non-int, ValueError
    for one outside the int range (the caller checks the enum's range)."""
    cdef object i = _py_int(v, what)
    if not -0x80000000 <= i <= 0x7FFFFFFF:
        raise ValueError(f"{what} {v!r} is not a {enum}")
    return i


cdef uint32_t _u32(object value, str what) except? 0xFFFFFFFF:
    cdef long long v
    try:
        v = value.__index__()
    except AttributeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}") from None
    if not 0 <= v <= 0xFFFFFFFF:
        raise ValueError(f"{what} must be in 0..4294967295, got {v}")
    if v == 0xFFFFFFFF:
        return 0xFFFFFFFF
    return <uint32_t>v


# ---- typed query results -------------------------------------------------------------------
def _namedtuple(name, fields, doc):
    cls = _collections.namedtuple(name, fields, module=__name__)
    cls.__doc__ = doc
    return cls


InOutNum = _namedtuple("InOutNum", "n_input n_output",
                       "Result of ``RKNN_QUERY_IN_OUT_NUM``: numbers of inputs and outputs.")
SdkVersion = _namedtuple("SdkVersion", "api_version drv_version",
                         "Result of ``RKNN_QUERY_SDK_VERSION``: runtime and driver versions.")
MemSize = _namedtuple("MemSize", "total_weight_size total_internal_size "
                      "total_dma_allocated_size total_sram_size free_sram_size",
                      "Result of ``RKNN_QUERY_MEM_SIZE`` (bytes).")
PerfRun = _namedtuple("PerfRun", "run_duration",
                      "Result of ``RKNN_QUERY_PERF_RUN``: the last run, in microseconds.")
PerfDetail = _namedtuple("PerfDetail", "text",
                         "Result of ``RKNN_QUERY_PERF_DETAIL``: the per-layer timing table "
                         "(needs ``RKNN_FLAG_COLLECT_PERF_MASK``).")
InputRange = _namedtuple("InputRange", "index shape_number fmt name n_dims dyn_range",
                         "Result of ``RKNN_QUERY_INPUT_DYNAMIC_RANGE``: ``dyn_range`` holds "
                         "``shape_number`` shapes of ``n_dims`` dims each (in ``fmt`` order).")
DeviceMemInfo = _namedtuple("DeviceMemInfo", "virt_addr phys_addr fd offset size flags",
                            "Result of ``RKNN_QUERY_DEVICE_MEM_INFO``: a description of the "
                            "model's device buffer (owned by the runtime; not a TensorMem).")
