# Matmul data helpers that need no context: int4 packing (pack_int4/unpack_int4) and
# B in the runtime's native blocked layout (b_normal_layout_to_native_layout).

# ---- int4 packing ------------------------------------------------------------------------
def pack_int4(values):
    """Pack int4 values (-8..7) two per byte, as the matmul API stores INT4 tensors.

    Element ``i`` of the flattened (C-order) input goes to byte ``i // 2``: even elements
    in the LOW nibble (bits 0-3), odd ones in the high nibble (bits 4-7), two's
    complement.  This is the order of the vendor's matmul demo and of the rknnx emulator
    (``emulator/runtime_matmul.c``), in whatever layout the tensor uses (normal,
    transposed or native: flatten in that layout's order first).  An odd count leaves
    the last high nibble 0.

    Parameters
    ----------
    values : array_like of int
        Values in -8..7.

    Returns
    -------
    numpy.ndarray
        uint8, ``(values.size + 1) // 2`` bytes.

    Raises
    ------
    TypeError
        Non-integer input.
    ValueError
        A value outside -8..7.

    .. versionadded:: 0.1.0
    """
    v = _np.asarray(values)
    if v.dtype.kind not in "iu":
        raise TypeError(f"int4 values must be integers, got dtype {v.dtype}")
    flat = v.ravel()
    if flat.size and (flat.min() < -8 or flat.max() > 7):
        raise ValueError("int4 values must be in -8..7")
    u = (flat.astype(_np.int16) & 0x0F).astype(_np.uint8)
    if u.size % 2:
        u = _np.append(u, _np.uint8(0))
    return (u[0::2] | (u[1::2] << 4)).astype(_np.uint8)


def unpack_int4(packed, count=None):
    """The int4 values of packed bytes (the inverse of :func:`pack_int4`).

    Parameters
    ----------
    packed : buffer or array of uint8/int8
        Packed bytes (e.g. ``np.asarray(mem)`` of an INT4 matmul tensor).
    count : int, optional
        Number of values (default: two per byte).

    Returns
    -------
    numpy.ndarray
        int8 values in -8..7, flat.

    .. versionadded:: 0.1.0
    """
    b = _np.asarray(packed)
    if b.dtype not in (_np.dtype(_np.uint8), _np.dtype(_np.int8)):
        b = _np.frombuffer(memoryview(packed).cast("B"), dtype=_np.uint8)
    b = b.view(_np.uint8).ravel()
    out = _np.empty(2 * b.size, dtype=_np.int8)
    out[0::2] = (b & 0x0F).astype(_np.int8)
    out[1::2] = (b >> 4).astype(_np.int8)
    out = ((out ^ 8) - 8).astype(_np.int8)
    if count is not None:
        if not 0 <= count <= out.size:
            raise ValueError(f"count must be 0..{out.size} for {b.size} bytes, got {count}")
        out = out[:count]
    return out


# ---- B layout conversion -------------------------------------------------------------------
def b_normal_layout_to_native_layout(B, K, N, info):
    """B (K x N, normal layout) in the native blocked layout
    (``rknn_B_normal_layout_to_native_layout``), for ``B_layout=NATIVE``.

    Parameters
    ----------
    B : numpy.ndarray or buffer
        C-contiguous K x N matrix of B's type (int8 or float16); for INT4 types, its
        packed bytes (``pack_int4(B)``, ``(K * N + 1) // 2`` bytes).
    K, N : int
        Its shape.
    info : MatmulContext or MatmulType
        The matmul it is for (its type decides B's type and blocks).

    Returns
    -------
    numpy.ndarray
        A new array in native B layout: B's dtype with the blocked shape
        ``(N/n, K/k, n, k)`` the runtime reports for it, or packed uint8 bytes for INT4.
        Its bytes are what a B mem of a ``B_layout=NATIVE`` context expects.

    Raises
    ------
    TypeError, ValueError
        A wrong dtype, size or shape of ``B``, bad K/N, an unknown type.
    RKNNError
        If the runtime refuses (e.g. a chip without the matmul API).

    Notes
    -----
    The native shape is read from the runtime: a short-lived matmul context with
    ``B_layout=NATIVE`` is created for (1, K, N) and destroyed again (unless ``info`` is
    a native-B context of that K and N already).  The GIL is released during the
    conversion.

    .. versionadded:: 0.1.0
    """
    cdef rknn_matmul_info ci
    cdef rknn_matmul_tensor_attr battr
    cdef int ret, k, n
    cdef Py_buffer view
    cdef void* outp
    cdef int i
    k = _mm_int(K, "K", 1, 0x7FFFFFFF)
    n = _mm_int(N, "N", 1, 0x7FFFFFFF)
    ensure_runtime()
    _native_b_attr(info, k, n, &ci, &battr)
    packed = battr.type == RKNN_TENSOR_INT4
    want_dtype = _np.dtype(_np.uint8) if packed else dtype_of(battr.type)
    src = _np.asarray(B)
    _check_normal_b(src, want_dtype, packed, k, n, ci.type)
    out = _np.zeros(max(battr.size, 1), dtype=_np.uint8)
    outp = <void*><size_t>out.ctypes.data
    PyObject_GetBuffer(src, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            ret = _api.rknn_B_normal_layout_to_native_layout(view.buf, outp, k, n, &ci)
    finally:
        PyBuffer_Release(&view)
    check(ret, b"rknn_B_normal_layout_to_native_layout")
    out = out[:battr.size]
    if packed:
        return out
    return out.view(want_dtype).reshape(tuple([battr.dims[i] for i in range(battr.n_dims)]))


cdef int _native_b_attr(object info, int k, int n, rknn_matmul_info* ci,
                        rknn_matmul_tensor_attr* battr) except -1:
    """The matmul info the conversion is for (`ci`, with B_layout NATIVE) and the native B
    attribute of K x N (`battr`): from `info` when it is a native-B MatmulContext of that
    K and N, else from a short-lived (1, K, N) matmul context made and destroyed here."""
    cdef MatmulContext mc
    cdef rknn_matmul_io_attr io
    cdef rknn_matmul_ctx h = 0
    cdef bint found = False
    cdef int ret, i
    if isinstance(info, MatmulContext):
        mc = info
        mc._check_open(b"b_normal_layout_to_native_layout")
        ci[0] = mc._info
        if mc._info.B_layout == RKNN_MM_LAYOUT_NATIVE:
            for i in range(mc._n_shapes):
                if mc._shapes[i].K == k and mc._shapes[i].N == n:
                    battr[0] = mc._io[i].B
                    found = True
                    break
    else:
        memset(ci, 0, sizeof(ci[0]))
        ci.type = <rknn_matmul_type>_mm_enum(info, MatmulType, "info")
    require(<void*>_api.rknn_B_normal_layout_to_native_layout,
            b"rknn_B_normal_layout_to_native_layout")
    _refuse_unsupported(_chip_of(0), "rknn_B_normal_layout_to_native_layout")
    ci.B_layout = RKNN_MM_LAYOUT_NATIVE
    ci.AC_layout = RKNN_MM_LAYOUT_NORM
    if not found:
        require(<void*>_api.rknn_matmul_create, b"rknn_matmul_create")
        ci.M = 1
        ci.K = k
        ci.N = n
        ci.B_quant_type = RKNN_QUANT_TYPE_PER_LAYER_SYM
        ci.group_size = 0
        with nogil:
            ret = _api.rknn_matmul_create(&h, ci, &io)
            if h != 0 and _api.rknn_matmul_destroy != NULL:
                _api.rknn_matmul_destroy(h)
        check(ret, b"rknn_matmul_create")
        battr[0] = io.B
    return 0


cdef int _check_normal_b(object src, object want_dtype, bint packed, int k, int n,
                         int mtype) except -1:
    """B in the normal layout: dtype (packed bytes for INT4), shape, size, contiguity."""
    if packed:
        want_bytes = (<int64_t>k * n + 1) // 2
    else:
        want_bytes = <int64_t>k * n * want_dtype.itemsize
    if packed:
        if src.dtype not in (_np.dtype(_np.uint8), _np.dtype(_np.int8)):
            raise TypeError(f"B of an INT4 matmul must be its packed bytes (uint8, "
                            f"pack_int4(B)), got dtype {src.dtype}")
    elif src.dtype != want_dtype:
        raise TypeError(f"B must be {want_dtype} for {MatmulType(mtype).name}, got {src.dtype}")
    if not packed and src.ndim == 2 and src.shape != (k, n):
        raise ValueError(f"B must have shape ({k}, {n}), got {src.shape}")
    if src.nbytes != want_bytes:
        raise ValueError(f"B must hold {want_bytes} bytes (K={k} x N={n} "
                         f"{'int4, packed' if packed else want_dtype}), got {src.nbytes}")
    if not src.flags.c_contiguous:
        raise ValueError("B must be C-contiguous (np.ascontiguousarray)")
    return 0
