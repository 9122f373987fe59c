# The matmul API (rknn_matmul_api.h): C = A x B on the NPU, one rknn_matmul_ctx per
# MatmulContext.
#
# A matmul context is a context for the memory calls: its buffers come from
# rknn_create_mem(matmul_ctx, size) and go back with rknn_destroy_mem(matmul_ctx, mem), so
# MatmulContext shares _ContextBase with Context (the handle, the per-context lock, the
# tracked mems, the bindings) and TensorMem works unchanged with it: a mem keeps its
# MatmulContext alive, close() refuses while views exist, leftovers are closed with a
# ResourceWarning when the context closes.
#
# Views.  set_io_mem binds the mem to the tensor's rknn_matmul_tensor_attr, so
# np.asarray(mem) is the matrix in the layout the runtime reported: normal (M, K) /
# (K, N) / (M, N), transposed B (N, K), or the native blocked shapes exactly as io_attr
# dims say (e.g. A (K/s, M, s), B (N/n, K/k, n, k), C (N/c, M, c)).  Two element types
# have no numpy dtype: INT4 operands are exposed as their packed bytes (uint8, shape
# (size,)), BFLOAT16 results as their bit patterns (uint16, the dims' shape).
#
# Quantization arrays.  rknn_matmul_set_quant_params takes pointers to the caller's scale
# and zero-point arrays; the documents do not say whether the runtime copies them, so the
# context keeps the arrays it passed (per tensor name) until they are replaced or it
# closes -- they can never dangle.

import collections as _mm_collections

MatmulType = _make_enum(_enum.IntEnum, "MatmulType", [
    ("FLOAT16_MM_FLOAT16_TO_FLOAT32", "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32", RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32),
    ("INT8_MM_INT8_TO_INT32", "RKNN_INT8_MM_INT8_TO_INT32", RKNN_INT8_MM_INT8_TO_INT32),
    ("INT8_MM_INT8_TO_INT8", "RKNN_INT8_MM_INT8_TO_INT8", RKNN_INT8_MM_INT8_TO_INT8),
    ("FLOAT16_MM_FLOAT16_TO_FLOAT16", "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16", RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16),
    ("FLOAT16_MM_INT8_TO_FLOAT32", "RKNN_FLOAT16_MM_INT8_TO_FLOAT32", RKNN_FLOAT16_MM_INT8_TO_FLOAT32),
    ("FLOAT16_MM_INT8_TO_FLOAT16", "RKNN_FLOAT16_MM_INT8_TO_FLOAT16", RKNN_FLOAT16_MM_INT8_TO_FLOAT16),
    ("FLOAT16_MM_INT4_TO_FLOAT32", "RKNN_FLOAT16_MM_INT4_TO_FLOAT32", RKNN_FLOAT16_MM_INT4_TO_FLOAT32),
    ("FLOAT16_MM_INT4_TO_FLOAT16", "RKNN_FLOAT16_MM_INT4_TO_FLOAT16", RKNN_FLOAT16_MM_INT4_TO_FLOAT16),
    ("INT8_MM_INT8_TO_FLOAT32", "RKNN_INT8_MM_INT8_TO_FLOAT32", RKNN_INT8_MM_INT8_TO_FLOAT32),
    ("INT4_MM_INT4_TO_INT16", "RKNN_INT4_MM_INT4_TO_INT16", RKNN_INT4_MM_INT4_TO_INT16),
    ("INT8_MM_INT4_TO_INT32", "RKNN_INT8_MM_INT4_TO_INT32", RKNN_INT8_MM_INT4_TO_INT32),
    ("FLOAT16_MM_INT4_TO_BFLOAT16", "RKNN_FLOAT16_MM_INT4_TO_BFLOAT16", RKNN_FLOAT16_MM_INT4_TO_BFLOAT16),
    ("INT8_MM_INT4_TO_FLOAT16", "RKNN_INT8_MM_INT4_TO_FLOAT16", RKNN_INT8_MM_INT4_TO_FLOAT16),
], "Operand and result types of a matmul (``rknn_matmul_type``): A x B -> C.")

MatmulLayout = _make_enum(_enum.IntEnum, "MatmulLayout", [
    ("NORM", "RKNN_MM_LAYOUT_NORM", RKNN_MM_LAYOUT_NORM),
    ("NATIVE", "RKNN_MM_LAYOUT_NATIVE", RKNN_MM_LAYOUT_NATIVE),
    ("TP_NORM", "RKNN_MM_LAYOUT_TP_NORM", RKNN_MM_LAYOUT_TP_NORM),
], "Matrix layouts (``rknn_matmul_layout``): row-major, the NPU's blocked layout, or B "
   "transposed (N x K).")

MatmulQuantType = _make_enum(_enum.IntEnum, "MatmulQuantType", [
    ("PER_LAYER_SYM", "RKNN_QUANT_TYPE_PER_LAYER_SYM", RKNN_QUANT_TYPE_PER_LAYER_SYM),
    ("PER_LAYER_ASYM", "RKNN_QUANT_TYPE_PER_LAYER_ASYM", RKNN_QUANT_TYPE_PER_LAYER_ASYM),
    ("PER_CHANNEL_SYM", "RKNN_QUANT_TYPE_PER_CHANNEL_SYM", RKNN_QUANT_TYPE_PER_CHANNEL_SYM),
    ("PER_CHANNEL_ASYM", "RKNN_QUANT_TYPE_PER_CHANNEL_ASYM", RKNN_QUANT_TYPE_PER_CHANNEL_ASYM),
    ("PER_GROUP_SYM", "RKNN_QUANT_TYPE_PER_GROUP_SYM", RKNN_QUANT_TYPE_PER_GROUP_SYM),
    ("PER_GROUP_ASYM", "RKNN_QUANT_TYPE_PER_GROUP_ASYM", RKNN_QUANT_TYPE_PER_GROUP_ASYM),
], "Quantization granularity of B (``rknn_matmul_quant_type``); A and C are per layer.")

globals().update(_VENDOR_NAMES)

MatmulInfo = _namedtuple("MatmulInfo", "M K N type B_layout AC_layout B_quant_type "
                         "AC_quant_type group_size iommu_domain_id",
                         "The ``rknn_matmul_info`` a :class:`MatmulContext` was created with "
                         "(M/K/N: the first shape).")
MatmulShape = _namedtuple("MatmulShape", "M K N", "One matmul shape (``rknn_matmul_shape``).")
MatmulIOAttr = _namedtuple("MatmulIOAttr", "A B C",
                           "The three :class:`MatmulTensorAttr` of one shape "
                           "(``rknn_matmul_io_attr``).")
QuantParams = _namedtuple("QuantParams", "name scale zp",
                          "Quantization parameters of one matmul tensor: ``scale`` (float32 "
                          "array) and ``zp`` (int32 array, possibly empty).")

_MM_NAMES = ("A", "B", "C")


cdef int _mm_layout(const rknn_matmul_tensor_attr* a, _Layout* lay) except -1:
    """The view of a matmul tensor: packed C order over dims; INT4 as its packed bytes,
    BFLOAT16 as uint16 bit patterns."""
    cdef int t = a.type
    cdef uint32_t nd = a.n_dims
    cdef Py_ssize_t span, i
    if nd > RKNN_MAX_DIMS:
        raise ValueError(f"n_dims is {nd}; expected at most {RKNN_MAX_DIMS}")
    if t == RKNN_TENSOR_INT4:
        _layout_raw(lay, a.size)
        return 0
    if not _type_known(t):
        raise ValueError(f"matmul tensor type {t} is not a TensorType")
    memset(lay, 0, sizeof(_Layout))
    lay.ndim = nd
    if t == RKNN_TENSOR_BFLOAT16:
        lay.itemsize = 2
        lay.format = b"H"
        lay.dl_code = 1
    else:
        lay.itemsize = _ITEMSIZE[t]
        lay.format = _FORMAT[t]
        lay.dl_code = _DLCODE[t]
    span = lay.itemsize
    for i in range(<Py_ssize_t>nd - 1, -1, -1):
        lay.shape[i] = a.dims[i] if not _over_layout_max(a.dims[i]) else 0
        lay.strides[i] = span
        if (_over_layout_max(a.dims[i]) or _mul_into(&span, a.dims[i])
                or span > _LAYOUT_MAX):
            raise ValueError(f"matmul tensor {_cstr(a.name, RKNN_MAX_NAME_LEN)!r}: dims "
                             f"{[a.dims[i] for i in range(nd)]} span more than "
                             f"{_LAYOUT_MAX} bytes")
    lay.nbytes = span
    lay.extent = span
    lay.c_contiguous = True
    if lay.nbytes > a.size:
        raise ValueError(f"matmul tensor {_cstr(a.name, RKNN_MAX_NAME_LEN)!r}: dims "
                         f"{[a.dims[i] for i in range(nd)]} need {lay.nbytes} bytes, "
                         f"more than its size {a.size}")
    return 0


@cython.final
cdef class MatmulTensorAttr:
    """One tensor of a matmul (``rknn_matmul_tensor_attr``): A, B or C of one shape.

    From :attr:`MatmulContext.io_attr` / :attr:`MatmulContext.io_attrs`; pass it to
    :meth:`MatmulContext.set_io_mem` / :meth:`MatmulContext.create_mem`.

    .. versionadded:: 0.1.0
    """
    cdef rknn_matmul_tensor_attr c           # the vendor struct, by value

    def __init__(self, *args, **kwargs):
        raise TypeError("MatmulTensorAttr objects come from MatmulContext.io_attr")

    @property
    def name(self):
        """``"A"``, ``"B"`` or ``"C"`` (the name the runtime gave it)."""
        return _cstr(self.c.name, sizeof(self.c.name))

    @property
    def n_dims(self):
        """Number of valid dims."""
        return self.c.n_dims

    @property
    def dims(self):
        """The shape in elements, in the tensor's layout (blocked for native layouts)."""
        return tuple([self.c.dims[i] for i in range(min(self.c.n_dims, <uint32_t>RKNN_MAX_DIMS))])

    @property
    def size(self):
        """Bytes to allocate (INT4: two elements per byte)."""
        return self.c.size

    @property
    def type(self):
        """Element type (:class:`TensorType`)."""
        try:
            return TensorType(self.c.type)
        except ValueError:
            return int(self.c.type)

    @property
    def packed(self):
        """True for INT4 tensors: views are the packed bytes, see :func:`pack_int4`."""
        return self.c.type == RKNN_TENSOR_INT4

    @property
    def dtype(self):
        """numpy dtype of a view: the element type, uint8 for INT4 (packed bytes), uint16
        for BFLOAT16 (bit patterns)."""
        cdef _Layout lay
        _mm_layout(&self.c, &lay)
        return _np.dtype(lay.format.decode("ascii"))

    @property
    def shape(self):
        """Shape of a view: :attr:`dims`, or ``(size,)`` for INT4 (packed bytes)."""
        cdef _Layout lay
        _mm_layout(&self.c, &lay)
        return _layout_shape(&lay)

    def copy(self):
        """An independent copy."""
        return _mm_attr(&self.c)

    def __eq__(self, other):
        if not isinstance(other, MatmulTensorAttr):
            return NotImplemented
        o = <MatmulTensorAttr>other
        return (self.name, self.dims, self.size, self.c.type) == (o.name, o.dims, o.size, o.c.type)

    __hash__ = None

    def __repr__(self):
        return (f"MatmulTensorAttr(name={self.name!r}, dims={list(self.dims)}, "
                f"type={_type_name(self.c.type)}, size={self.c.size})")


cdef MatmulTensorAttr _mm_attr(const rknn_matmul_tensor_attr* c):
    cdef MatmulTensorAttr a = MatmulTensorAttr.__new__(MatmulTensorAttr)
    a.c = c[0]
    return a


cdef object _mm_io(const rknn_matmul_io_attr* io):
    return MatmulIOAttr(_mm_attr(&io.A), _mm_attr(&io.B), _mm_attr(&io.C))


cdef int _mm_int(object v, str what, long long lo, long long hi) except? -1:
    cdef long long x
    try:
        x = v.__index__()
    except (AttributeError, TypeError):
        raise TypeError(f"{what} must be an int, got {type(v).__name__}") from None
    except OverflowError:
        raise ValueError(f"{what} must be in {lo}..{hi}, got {v}") from None
    if not lo <= x <= hi:
        raise ValueError(f"{what} must be in {lo}..{hi}, got {x}")
    return <int>x


cdef int _mm_enum(object v, object enum_cls, str what) except? -1:
    cdef int x = _mm_int(v, what, -0x80000000, 0x7FFFFFFF)
    try:
        enum_cls(x)
    except ValueError:
        raise ValueError(f"{what} {v!r} is not a {enum_cls.__name__}; expected one of "
                         f"{[f'{m.name} ({m.value})' for m in enum_cls]}") from None
    return x


cdef int _mm_check_mask(object mask) except -1:
    cdef long long v
    try:
        v = mask
    except (TypeError, OverflowError):
        raise TypeError(f"mask must be a CoreMask or int, got {mask!r}") from None
    if not 0 <= v <= RKNN_NPU_CORE_UNDEFINED:
        raise ValueError(f"mask 0x{v:x} is not a core mask; expected a CoreMask "
                         f"(0..0x{RKNN_NPU_CORE_UNDEFINED:x})")
    return <int>v


cdef int _mm_fill_info(rknn_matmul_info* info, object type, object B_layout, object AC_layout,
                       object B_quant_type, object AC_quant_type, object group_size,
                       object iommu_domain_id) except -1:
    memset(info, 0, sizeof(rknn_matmul_info))
    if type is None:
        raise TypeError("a matmul needs type= (a MatmulType, e.g. "
                        "MatmulType.FLOAT16_MM_FLOAT16_TO_FLOAT32)")
    info.type = <rknn_matmul_type>_mm_enum(type, MatmulType, "type")
    info.B_layout = <int16_t>_mm_enum(B_layout, MatmulLayout, "B_layout")
    info.AC_layout = <int16_t>_mm_enum(AC_layout, MatmulLayout, "AC_layout")
    if info.AC_layout == RKNN_MM_LAYOUT_TP_NORM:
        raise ValueError("AC_layout must be NORM (0) or NATIVE (1); TP_NORM applies to B only")
    info.B_quant_type = <int16_t>_mm_enum(B_quant_type, MatmulQuantType, "B_quant_type")
    info.AC_quant_type = <int16_t>_mm_enum(AC_quant_type, MatmulQuantType, "AC_quant_type")
    if info.AC_quant_type > RKNN_QUANT_TYPE_PER_LAYER_ASYM:
        raise ValueError("AC_quant_type must be PER_LAYER_SYM (0) or PER_LAYER_ASYM (1): A and C "
                         "are quantized per layer only")
    info.group_size = <int16_t>_mm_int(group_size, "group_size", 0, 0x7FFF)
    if info.B_quant_type >= RKNN_QUANT_TYPE_PER_GROUP_SYM and info.group_size <= 0:
        raise ValueError("per-group quantization (B_quant_type PER_GROUP_*) needs group_size > 0")
    info.iommu_domain_id = _mm_int(iommu_domain_id, "iommu_domain_id", 0, 0x7FFFFFFF)
    return 0


cdef int _mm_check_shape(const rknn_matmul_info* info, int M, int K, int N) except -1:
    if info.B_quant_type >= RKNN_QUANT_TYPE_PER_GROUP_SYM and K % info.group_size != 0:
        raise ValueError(f"K {K} is not a multiple of group_size {info.group_size} "
                         "(per-group quantization)")
    return 0


@cython.no_gc_clear
@cython.auto_pickle(False)
cdef class MatmulContext(_ContextBase):
    """A matmul on the NPU, C = A x B (``rknn_matmul_ctx``).

    Parameters
    ----------
    M, K, N : int
        A is M x K, B is K x N, C is M x N.  Omit them with ``shapes``.
    type : MatmulType
        Operand and result types, e.g. ``FLOAT16_MM_FLOAT16_TO_FLOAT32``,
        ``INT8_MM_INT8_TO_INT32``; the int4 types exist on RK3588/RK3576 only.
    B_layout : MatmulLayout, default NORM
        ``NORM`` (K x N), ``NATIVE`` (blocked; see
        :func:`b_normal_layout_to_native_layout`) or ``TP_NORM`` (N x K).
    AC_layout : MatmulLayout, default NORM
        ``NORM`` or ``NATIVE`` for A and C.
    B_quant_type : MatmulQuantType, default PER_LAYER_SYM
        Per layer, per channel (N scales) or per group (N x K / group_size scales).
    AC_quant_type : MatmulQuantType, default PER_LAYER_SYM
        Per layer only.
    group_size : int, default 0
        Elements of K per group (per-group quantization).
    iommu_domain_id : int, default 0
        The IOMMU domain (4 GB each) of the buffers.
    shapes : sequence of (M, K, N), optional
        Several shapes for one context (``rknn_matmul_create_dynamic_shape``); the first
        is current.  Switch with :meth:`set_dynamic_shape`.

    Raises
    ------
    TypeError, ValueError
        Bad arguments (checked before the runtime is called; the message says what was
        expected).
    RKNNError
        The subclass of the status ``rknn_matmul_create`` returned (e.g. a chip without
        the matmul API, or an int4 type on a chip without int4).

    Notes
    -----
    Buffers come from :meth:`create_mem` and are bound with :meth:`set_io_mem`; each
    mem keeps the context alive, and :meth:`close` refuses (``BufferError``) while one
    is viewed.  :meth:`run` releases the GIL and holds the context's lock.  After
    ``os.fork()`` it belongs to the process that created it: in the child every call on
    it raises RuntimeError ("created in process N; create it after fork").

    Examples
    --------
    >>> with MatmulContext(4, 64, 32, MatmulType.FLOAT16_MM_FLOAT16_TO_FLOAT32) as mm:
    ...     a, b, c = (mm.create_mem(name) for name in "ABC")
    ...     for mem, name in zip((a, b, c), "ABC"):
    ...         mm.set_io_mem(mem, name)
    ...     np.asarray(a)[...] = A; np.asarray(b)[...] = B
    ...     mm.run()
    ...     result = np.asarray(c).copy()

    .. versionadded:: 0.1.0
    """
    def __cinit__(self, *args, **kwargs):
        self._shapes = NULL
        self._io = NULL
        self._n_shapes = 0
        self._cur = 0
        self._quant = {}

    def __init__(self, M=None, K=None, N=None, type=None, B_layout=0, AC_layout=0,
                 B_quant_type=0, AC_quant_type=0, group_size=0, iommu_domain_id=0, *,
                 shapes=None):
        cdef rknn_matmul_info info
        cdef rknn_matmul_ctx h = 0
        cdef int ret, n, i
        if self.ctx != 0 or self._shapes != NULL:
            raise RuntimeError("MatmulContext is already initialized")
        _mm_fill_info(&info, type, B_layout, AC_layout, B_quant_type, AC_quant_type,
                      group_size, iommu_domain_id)
        if shapes is None:
            if M is None or K is None or N is None:
                raise TypeError("MatmulContext needs M, K and N (or shapes=[(M, K, N), ...])")
            triples = [(M, K, N)]
        else:
            if M is not None or K is not None or N is not None:
                raise TypeError("pass either M, K, N or shapes=, not both")
            triples = list(shapes)
            if not triples:
                raise ValueError("shapes must hold at least one (M, K, N)")
        n = len(triples)
        if n > 0x7FFFFFFF:
            raise ValueError("too many shapes")
        ensure_runtime()
        require(<void*>(_api.rknn_matmul_create_dynamic_shape if shapes is not None
                        else _api.rknn_matmul_create),
                b"rknn_matmul_create_dynamic_shape" if shapes is not None
                else b"rknn_matmul_create")
        _refuse_unsupported(_chip_of(0), "rknn_matmul_create_dynamic_shape" if shapes is not None
                            else "rknn_matmul_create")
        self._shapes = <rknn_matmul_shape*>calloc(n, sizeof(rknn_matmul_shape))
        self._io = <rknn_matmul_io_attr*>calloc(n, sizeof(rknn_matmul_io_attr))
        if self._shapes == NULL or self._io == NULL:
            raise MemoryError()
        seen = set()
        for i in range(n):
            try:
                m_, k_, n_ = triples[i]
            except (TypeError, ValueError):
                raise TypeError(f"shape {i} must be an (M, K, N) triple, got {triples[i]!r}") \
                    from None
            self._shapes[i].M = _mm_int(m_, "M", 1, 0x7FFFFFFF)
            self._shapes[i].K = _mm_int(k_, "K", 1, 0x7FFFFFFF)
            self._shapes[i].N = _mm_int(n_, "N", 1, 0x7FFFFFFF)
            _mm_check_shape(&info, self._shapes[i].M, self._shapes[i].K, self._shapes[i].N)
            key = (self._shapes[i].M, self._shapes[i].K, self._shapes[i].N)
            if key in seen:
                raise ValueError(f"shape {key} is given twice")
            seen.add(key)
        info.M = self._shapes[0].M
        info.K = self._shapes[0].K
        info.N = self._shapes[0].N
        with nogil:
            if shapes is None:
                ret = _api.rknn_matmul_create(&h, &info, self._io)
            else:
                ret = _api.rknn_matmul_create_dynamic_shape(&h, &info, n, self._shapes, self._io)
        if ret < 0 and h != 0 and _api.rknn_matmul_destroy != NULL:
            _api.rknn_matmul_destroy(h)
            h = 0
        check(ret, b"rknn_matmul_create_dynamic_shape" if shapes is not None
              else b"rknn_matmul_create")
        if h == 0:
            raise RKNNError("rknn_matmul_create succeeded but returned a NULL context", None,
                            "rknn_matmul_create")
        self.ctx = h
        self._info = info
        self._n_shapes = n
        self._dynamic = shapes is not None
        self._counted = True
        _atomic_add_ssize(&_live_contexts, 1)

    def __dealloc__(self):
        # Only frees (docs/architecture.md, Lifetime): no mem is alive (each holds a reference to us).
        if self.ctx != 0:
            # in a fork child the handle is the parent's: never call the runtime with it
            if _api.rknn_matmul_destroy != NULL and self._pid == _this_pid:
                _api.rknn_matmul_destroy(self.ctx)
            self.ctx = 0
        if self._counted:
            self._counted = False
            _atomic_add_ssize(&_live_contexts, -1)
        free(self._shapes)
        free(self._io)
        self._shapes = NULL
        self._io = NULL

    # -- lifetime ---------------------------------------------------------------------------
    def close(self):
        """Destroy the matmul context (``rknn_matmul_destroy``); a second call does nothing.

        Mems it created that are still open are closed first, each with a
        ``ResourceWarning``; bindings and quantization arrays are dropped.

        Raises
        ------
        BufferError
            While buffer views of its mems exist (nothing is closed then).
        RKNNError
            If ``rknn_matmul_destroy`` fails; the context then stays open (its mems are
            closed already) and ``close()`` may be retried.

        .. versionadded:: 0.1.0
        """
        self._close("MatmulContext", "a TensorMem was")

    # the parts of the close sequence (_ContextBase._close) that are MatmulContext's own
    cdef int _close_check(self) except -1:
        require(<void*>_api.rknn_matmul_destroy, b"rknn_matmul_destroy")
        return 0

    cdef int _destroy_handle(self) noexcept:
        cdef int ret
        cdef rknn_context h = self.ctx
        with nogil:
            ret = _api.rknn_matmul_destroy(h)
        return ret

    cdef const char* _destroy_name(self) noexcept:
        return b"rknn_matmul_destroy"

    cdef object _after_close(self):
        if self._counted:
            self._counted = False
            _atomic_add_ssize(&_live_contexts, -1)
        slots, self._slots, self._bound, self._quant = self._slots, {}, [], {}
        del slots
        return None

    def __enter__(self):
        self._check_open(b"__enter__")
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        cdef rknn_context h = _relaxed_load_ctx(&self.ctx)
        if h == 0:
            return "<MatmulContext closed>"
        s = self._shapes[self._cur]
        return (f"<MatmulContext handle=0x{h:x} {MatmulType(self._info.type).name} "
                f"M={s.M} K={s.K} N={s.N} shape {self._cur + 1}/{self._n_shapes}>")

    # -- description -------------------------------------------------------------------------
    @property
    def info(self):
        """The :class:`MatmulInfo` it was created with."""
        cdef rknn_matmul_info* i = &self._info
        return MatmulInfo(i.M, i.K, i.N, MatmulType(i.type), MatmulLayout(i.B_layout),
                          MatmulLayout(i.AC_layout), MatmulQuantType(i.B_quant_type),
                          MatmulQuantType(i.AC_quant_type), i.group_size, i.iommu_domain_id)

    @property
    def shapes(self):
        """Every shape of the context (one unless created with ``shapes=``)."""
        return tuple([MatmulShape(self._shapes[i].M, self._shapes[i].K, self._shapes[i].N)
                      for i in range(self._n_shapes)])

    @property
    def shape(self):
        """The current :class:`MatmulShape`."""
        self._check_open(b"shape")
        return MatmulShape(self._shapes[self._cur].M, self._shapes[self._cur].K,
                           self._shapes[self._cur].N)

    @property
    def dynamic(self):
        """True when created with ``shapes=`` (``rknn_matmul_create_dynamic_shape``)."""
        return self._dynamic

    @property
    def io_attr(self):
        """The :class:`MatmulIOAttr` (A, B, C) of the current shape."""
        self._check_open(b"io_attr")
        return _mm_io(&self._io[self._cur])

    @property
    def io_attrs(self):
        """The :class:`MatmulIOAttr` of every shape, in the order of :attr:`shapes`."""
        self._check_open(b"io_attrs")
        return tuple([_mm_io(&self._io[i]) for i in range(self._n_shapes)])

    cdef object _tensor(self, object which):
        """The attr `which` names: "A"/"B"/"C" (current shape) or a MatmulTensorAttr."""
        if isinstance(which, MatmulTensorAttr):
            if (<MatmulTensorAttr>which).name not in _MM_NAMES:
                raise ValueError(f"MatmulTensorAttr {which!r} is not A, B or C")
            return which
        if isinstance(which, str) and which in _MM_NAMES:
            io = self.io_attr
            return io[_MM_NAMES.index(which)]
        raise ValueError(f"expected 'A', 'B', 'C' or a MatmulTensorAttr from io_attr, "
                         f"got {which!r}")

    # -- memory ------------------------------------------------------------------------------
    def create_mem(self, size):
        """Allocate NPU memory for a matrix (``rknn_create_mem`` on the matmul context).

        Parameters
        ----------
        size : int, str or MatmulTensorAttr
            Bytes; or ``"A"``/``"B"``/``"C"`` (the current shape's ``io_attr`` size) or a
            :class:`MatmulTensorAttr` -- then the mem is also bound to it, so
            ``np.asarray(mem)`` is the matrix before :meth:`set_io_mem`.  For dynamic
            shapes allocate the largest size and bind per shape.

        Returns
        -------
        TensorMem
            Owned: ``close()`` destroys it; the context closes it if left open.

        Raises
        ------
        ValueError
            Bad size, closed context.
        RKNNError
            If the runtime returns NULL.

        .. versionadded:: 0.1.0
        """
        cdef MatmulTensorAttr attr = None
        cdef uint64_t n
        cdef rknn_tensor_mem* m
        cdef TensorMem t = TensorMem.__new__(TensorMem)
        cdef _Layout lay
        self._check_open(b"create_mem")
        if isinstance(size, (str, MatmulTensorAttr)):
            attr = self._tensor(size)
            _mm_layout(&attr.c, &lay)
            n = max(attr.c.size, 1)
        else:
            n = _mem_size(size, 0xFFFFFFFF)
        require(<void*>_api.rknn_create_mem, b"rknn_create_mem")
        self._enter(b"create_mem")
        with nogil:
            m = _api.rknn_create_mem(self.ctx, <uint32_t>n)
        if not _adopt_created(self, t, m, None, False):     # releases the lock
            raise RKNNError(f"rknn_create_mem returned NULL (size {n})", None, "rknn_create_mem")
        if attr is not None:
            _mm_bind(t, attr, &lay)
        return t

    def set_io_mem(self, TensorMem mem not None, which):
        """Bind memory to A, B or C (``rknn_matmul_set_io_mem``).

        Parameters
        ----------
        mem : TensorMem
            At least the tensor's ``size`` bytes (from :meth:`create_mem`).
        which : str or MatmulTensorAttr
            ``"A"``, ``"B"``, ``"C"`` (the current shape's attrs) or an attr of
            :attr:`io_attrs`.

        Notes
        -----
        The mem becomes a typed view of the matrix (``np.asarray(mem)``: the dtype and
        the dims of the attr, blocked shapes for native layouts; INT4 as packed bytes),
        and the context keeps a reference to it until rebound or closed.  With dynamic
        shapes, call :meth:`set_dynamic_shape` first, then rebind A and C (and a
        transposed B) for the new shape.

        Raises
        ------
        ValueError
            Closed context or mem, ``which`` naming no tensor, a mem smaller than it.
        RKNNError
            The subclass of the status ``rknn_matmul_set_io_mem`` returned.

        .. versionadded:: 0.1.0
        """
        self._check_open(b"set_io_mem")
        _claim_for_binding(mem, b"set_io_mem", self)  # a close elsewhere refuses meanwhile
        try:
            self._set_io_mem_claimed(mem, which)
        finally:
            _unclaim_for_binding(mem, self)

    cdef int _set_io_mem_claimed(self, TensorMem mem, object which) except -1:
        cdef MatmulTensorAttr attr
        cdef _Layout lay
        cdef int ret, w
        cdef rknn_tensor_mem d
        cdef rknn_tensor_mem* m
        attr = self._tensor(which)
        w = _MM_NAMES.index(attr.name)
        _mm_layout(&attr.c, &lay)
        mem._copy_desc(&d, "set_io_mem")
        if d.size < attr.c.size:
            raise ValueError(f"TensorMem of {d.size} bytes is too small for matmul "
                             f"tensor {attr.name} {list(attr.dims)} {_type_name(attr.c.type)}: "
                             f"expected at least {attr.c.size} bytes")
        require(<void*>_api.rknn_matmul_set_io_mem, b"rknn_matmul_set_io_mem")
        self._enter(b"set_io_mem")
        m = _relaxed_load_mem(&mem.mem)    # (as Context.set_io_mem: _io.pxi)
        if m == NULL:
            self._release()
            raise ValueError("set_io_mem on closed TensorMem")
        ret = _api.rknn_matmul_set_io_mem(self.ctx, m, &attr.c)
        if ret >= 0:
            # what run() compares with the current shape's attr
            if w == 0:
                self._bound_io.A = attr.c
            elif w == 1:
                self._bound_io.B = attr.c
            else:
                self._bound_io.C = attr.c
        self._release()
        check(ret, b"rknn_matmul_set_io_mem")
        self._set_slot(attr.name, mem)
        _mm_bind(mem, attr, &lay)
        return 0

    # -- configuration ---------------------------------------------------------------------
    def set_core_mask(self, mask):
        """Choose the NPU cores (``rknn_matmul_set_core_mask``).

        Raises
        ------
        ValueError
            A value outside the mask range, a closed context.
        RKNNError
            The subclass of the status (masks the chip does not have).

        .. versionadded:: 0.1.0
        """
        cdef int v = _mm_check_mask(mask)
        cdef int ret
        self._check_open(b"set_core_mask")
        require(<void*>_api.rknn_matmul_set_core_mask, b"rknn_matmul_set_core_mask")
        self._enter(b"set_core_mask")
        ret = _api.rknn_matmul_set_core_mask(self.ctx, <rknn_core_mask>v)
        self._release()
        check(ret, b"rknn_matmul_set_core_mask")

    cdef Py_ssize_t _scales_wanted(self, int w) except -1:
        cdef rknn_matmul_shape* s = &self._shapes[self._cur]
        cdef int64_t n
        if w != 1:
            return 1
        if self._info.B_quant_type in (RKNN_QUANT_TYPE_PER_CHANNEL_SYM,
                                      RKNN_QUANT_TYPE_PER_CHANNEL_ASYM):
            return s.N
        if self._info.B_quant_type in (RKNN_QUANT_TYPE_PER_GROUP_SYM,
                                      RKNN_QUANT_TYPE_PER_GROUP_ASYM):
            n = <int64_t>s.N * (s.K // self._info.group_size)
            if n > PY_SSIZE_T_MAX:
                raise ValueError(f"N={s.N} x K/group_size={s.K // self._info.group_size} "
                                 f"scales do not fit this platform's {PY_SSIZE_T_MAX} "
                                 "elements")
            return <Py_ssize_t>n
        return 1

    def set_quant_params(self, name, scale, zp=None):
        """Set the quantization of A, B or C (``rknn_matmul_set_quant_params``).

        Parameters
        ----------
        name : str
            ``"A"``, ``"B"`` or ``"C"``.
        scale : float or sequence of float
            Positive, finite.  A and C: one.  B: one (per layer), N (per channel) or
            N x K / group_size (per group, the groups of column n contiguous) for the
            current shape.
        zp : int or sequence of int, optional
            Zero points: none, one shared, or one per scale.

        Raises
        ------
        ValueError
            A bad name, a count that does not fit the quantization type and shape, a
            scale that is not positive and finite, a closed context.
        RKNNError
            The subclass of the status the runtime returned.

        Notes
        -----
        Set them before the first run; never set, the runtime uses scale 1 and zero
        point 0.  The context keeps the arrays it passed until they are replaced.

        .. versionadded:: 0.1.0
        """
        cdef rknn_quant_params p
        cdef int ret, w
        cdef Py_ssize_t want
        cdef float[::1] sv
        cdef int32_t[::1] zv
        if name not in _MM_NAMES:
            raise ValueError(f"name must be 'A', 'B' or 'C' (the io_attr names), got {name!r}")
        self._check_open(b"set_quant_params")
        w = _MM_NAMES.index(name)
        want = self._scales_wanted(w)
        sc = _np.ascontiguousarray(_np.atleast_1d(_np.asarray(scale, dtype=_np.float64)).ravel(),
                                   dtype=_np.float32)
        if sc.size != want:
            kind = ("per layer" if w != 1 else
                    MatmulQuantType(self._info.B_quant_type).name.lower())
            raise ValueError(f"{name} ({kind}) needs {want} scale(s) for the current shape "
                             f"{tuple(self.shape)}, got {sc.size}")
        if not (_np.isfinite(sc).all() and (sc > 0).all()):
            raise ValueError(f"{name}: every scale must be positive and finite")
        if zp is None:
            zpa = _np.zeros(0, dtype=_np.int32)
        else:
            zpa = _np.atleast_1d(_np.asarray(zp)).ravel()
            if zpa.dtype.kind not in "iu":
                raise TypeError(f"{name}: zero points must be integers, got {zpa.dtype}")
            if zpa.size and (zpa.min() < -0x80000000 or zpa.max() > 0x7FFFFFFF):
                raise ValueError(f"{name}: zero points must fit int32")
            zpa = _np.ascontiguousarray(zpa, dtype=_np.int32)
            if zpa.size not in (0, 1, want):
                raise ValueError(f"{name} needs 0, 1 or {want} zero point(s), got {zpa.size}")
        memset(&p, 0, sizeof(p))
        p.name[0] = <char>ord(name)
        sv = sc
        p.scale = &sv[0]
        p.scale_len = <int32_t>sc.size
        if zpa.size:
            zv = zpa
            p.zp = &zv[0]
        p.zp_len = <int32_t>zpa.size
        require(<void*>_api.rknn_matmul_set_quant_params, b"rknn_matmul_set_quant_params")
        self._enter(b"set_quant_params")
        ret = _api.rknn_matmul_set_quant_params(self.ctx, &p)
        self._release()
        check(ret, b"rknn_matmul_set_quant_params")
        self._quant[name] = (sc, zpa)

    def get_quant_params(self):
        """B's quantization and the estimated scale of C (``rknn_matmul_get_quant_params``).

        Returns
        -------
        (QuantParams, float)
            B's parameters as the runtime holds them (copies: ``scale`` float32,
            ``zp`` int32, empty when never set), and A's scale times B's (first) scale,
            the runtime's estimate of C's scale for int8 -> int32.

        Raises
        ------
        ValueError
            A closed context.
        RKNNError
            The subclass of the status the runtime returned.

        .. versionadded:: 0.1.0
        """
        cdef rknn_quant_params p
        cdef float c_scale = 0
        cdef int ret
        cdef int32_t i
        self._check_open(b"get_quant_params")
        require(<void*>_api.rknn_matmul_get_quant_params, b"rknn_matmul_get_quant_params")
        memset(&p, 0, sizeof(p))
        sc = zp = None
        self._enter(b"get_quant_params")
        ret = _api.rknn_matmul_get_quant_params(self.ctx, &p, &c_scale)
        if ret >= 0:
            # the arrays are the runtime's: copy them while the context cannot change them
            sc = [p.scale[i] for i in range(p.scale_len)] if p.scale != NULL else []
            zp = [p.zp[i] for i in range(p.zp_len)] if p.zp != NULL else []
        self._release()
        check(ret, b"rknn_matmul_get_quant_params")
        return (QuantParams(_cstr(p.name, sizeof(p.name)), _np.array(sc, dtype=_np.float32),
                            _np.array(zp, dtype=_np.int32)), float(c_scale))

    def set_dynamic_shape(self, shape):
        """Make one of the context's shapes current (``rknn_matmul_set_dynamic_shape``).

        Parameters
        ----------
        shape : (M, K, N)
            One of :attr:`shapes`.

        Notes
        -----
        :attr:`io_attr` follows.  Rebind A and C (and a transposed B) with
        :meth:`set_io_mem` for the new shape before :meth:`run`; per-channel and
        per-group quantization of B must fit the new N (and K).  :meth:`run` raises
        ValueError for a tensor bound with an attr (dims, size, type) other than the
        current shape's; one whose attr does not change (B bound once for a fixed K and
        N) stays valid.

        Raises
        ------
        ValueError
            A shape the context was not created with, a closed context.
        RKNNError
            The subclass of the status the runtime returned.

        .. versionadded:: 0.1.0
        """
        cdef rknn_matmul_shape s
        cdef int ret, i, found = -1
        self._check_open(b"set_dynamic_shape")
        try:
            m_, k_, n_ = shape
        except (TypeError, ValueError):
            raise TypeError(f"shape must be an (M, K, N) triple, got {shape!r}") from None
        s.M = _mm_int(m_, "M", 1, 0x7FFFFFFF)
        s.K = _mm_int(k_, "K", 1, 0x7FFFFFFF)
        s.N = _mm_int(n_, "N", 1, 0x7FFFFFFF)
        for i in range(self._n_shapes):
            if (self._shapes[i].M, self._shapes[i].K, self._shapes[i].N) == (s.M, s.K, s.N):
                found = i
                break
        if found < 0:
            raise ValueError(f"shape {(s.M, s.K, s.N)} is not one of the context's shapes "
                             f"{[tuple(x) for x in self.shapes]}")
        require(<void*>_api.rknn_matmul_set_dynamic_shape, b"rknn_matmul_set_dynamic_shape")
        self._enter(b"set_dynamic_shape")
        ret = _api.rknn_matmul_set_dynamic_shape(self.ctx, &s)
        if ret >= 0:
            self._cur = found
        self._release()
        check(ret, b"rknn_matmul_set_dynamic_shape")

    def run(self):
        """Compute C = A x B (``rknn_matmul_run``), with the GIL released.

        Raises
        ------
        ValueError
            A closed context, A/B/C not bound, a bound mem closed since, or a tensor
            bound for another shape's attr (after :meth:`set_dynamic_shape`).
        RKNNError
            The subclass of the status ``rknn_matmul_run`` returned.

        .. versionadded:: 0.1.0
        """
        cdef int ret
        self._check_open(b"run")
        missing = [n for n in _MM_NAMES if n not in self._slots]
        if missing:
            raise ValueError(f"run() needs A, B and C bound with set_io_mem; missing "
                             f"{', '.join(missing)}")
        require(<void*>_api.rknn_matmul_run, b"rknn_matmul_run")
        _enter_run(self, b"run")            # closed, closed bound mems, bound dims
        with nogil:
            ret = _api.rknn_matmul_run(self.ctx)
        self._release()
        check(ret, b"rknn_matmul_run")

    cdef int _stale_binding(self) noexcept:
        """Which of A, B, C (0, 1, 2) is bound for another attr than the current shape's,
        or -1 (the handle open: _io is there)."""
        cdef rknn_matmul_io_attr* cur = &self._io[self._cur]
        return (0 if not _mm_same(&self._bound_io.A, &cur.A) else
                1 if not _mm_same(&self._bound_io.B, &cur.B) else
                2 if not _mm_same(&self._bound_io.C, &cur.C) else -1)

    cdef bint _bindings_current(self) noexcept:
        """_enter_run's look under the lock: A, B and C bound for the current shape."""
        return self._stale_binding() < 0

    cdef int _check_bindings(self) except -1:
        """_enter_run's check without the lock: ValueError naming the tensor bound for
        another shape (a closed context: nothing, _enter says it)."""
        cdef int bad
        if _closed_now(self):
            return 0
        bad = self._stale_binding()
        if bad >= 0:
            self._raise_stale_binding(bad)
        return 0

    cdef int _raise_stale_binding(self, int w) except -1:
        cdef rknn_matmul_io_attr* b = &self._bound_io
        cdef rknn_matmul_io_attr* c = &self._io[self._cur]
        was = _mm_attr(&b.A if w == 0 else &b.B if w == 1 else &b.C)
        now = _mm_attr(&c.A if w == 0 else &c.B if w == 1 else &c.C)
        name = _MM_NAMES[w]
        raise ValueError(f"matmul tensor {name} is bound with set_io_mem for dims "
                         f"{list(was.dims)} ({was.size} bytes), but the current shape "
                         f"{tuple(self.shape)} needs dims {list(now.dims)} ({now.size} bytes); "
                         f"bind it again with set_io_mem(mem, {name!r}) after set_dynamic_shape")


cdef bint _mm_same(const rknn_matmul_tensor_attr* a, const rknn_matmul_tensor_attr* b) noexcept nogil:
    """Whether a binding made for `a` fits the tensor `b` (dims, size and type alike)."""
    cdef uint32_t i
    if a.n_dims != b.n_dims or a.size != b.size or a.type != b.type or a.n_dims > 16:
        return False
    for i in range(a.n_dims):
        if a.dims[i] != b.dims[i]:
            return False
    return True


cdef int _mm_bind(TensorMem mem, MatmulTensorAttr attr, _Layout* lay) except -1:
    """Make views of `mem` the matrix `attr` describes (mem.attr: an equivalent TensorAttr)."""
    cdef TensorAttr ta = TensorAttr.__new__(TensorAttr)
    cdef uint32_t i
    cdef uint64_t n = 1
    memset(&ta.c, 0, sizeof(ta.c))
    memcpy(ta.c.name, attr.c.name, sizeof(ta.c.name))
    ta.c.n_dims = attr.c.n_dims
    for i in range(min(attr.c.n_dims, <uint32_t>RKNN_MAX_DIMS)):
        ta.c.dims[i] = attr.c.dims[i]
        n *= attr.c.dims[i]
    ta.c.n_elems = <uint32_t>n
    ta.c.size = attr.c.size
    ta.c.size_with_stride = attr.c.size
    ta.c.type = attr.c.type
    ta.c.fmt = RKNN_TENSOR_UNDEFINED
    with cython.critical_section(mem):       # as bind(): a view copies the layout whole
        mem._layout = lay[0]
        mem._attr = ta
        mem._bound = True
    return 0
