# Inputs of the general flow: Input (the fields of rknn_input), the checks inputs_set
# makes before C, its fast path over cached per-input facts (_IOSpecs), and the one locked
# step both paths end in.  Context.inputs_set (in _context.pxi) is the documented wrapper.
# The checks are written once, for inputs_set and infer: _fast_inputs (plain buffers, in
# C) and _check_inputs (everything else, each error worded); so is the lock's entry with
# inputs_set's rules (_enter_general; the run-entry rules are _base.pxi's _enter_run).

# Input types rknn_inputs_set converts from (pass_through = 0), besides the model's own.
_CONVERTIBLE_INPUT_TYPES = (RKNN_TENSOR_UINT8, RKNN_TENSOR_INT8, RKNN_TENSOR_FLOAT16,
                            RKNN_TENSOR_FLOAT32)


@cython.final
cdef class Input:
    """One input for :meth:`Context.inputs_set` (the fields of ``rknn_input``).

    Parameters
    ----------
    buf : buffer
        The data: a numpy array or anything with the buffer protocol, C-contiguous.
    index : int, optional
        Input index; default the position in the list given to ``inputs_set``.
    type : TensorType, optional
        Element type of ``buf``; default inferred from its buffer format (numpy dtype).
    fmt : TensorFormat, optional
        Layout of ``buf``; default the layout of the model input (its attribute's fmt).
    pass_through : bool, default False
        True: ``buf`` is already in the model's native type and layout; no conversion.

    .. versionadded:: 0.1.0
    """
    cdef public object buf                   # the data (held only during inputs_set)
    cdef public object index                 # int or None
    cdef public object type                  # TensorType or None
    cdef public object fmt                   # TensorFormat or None
    cdef public bint pass_through            # rknn_input.pass_through

    def __init__(self, buf, index=None, type=None, fmt=None, pass_through=False):
        self.buf = buf
        self.index = index
        self.type = type
        self.fmt = fmt
        self.pass_through = pass_through

    def __repr__(self):
        return (f"Input(index={self.index!r}, type={self.type!r}, fmt={self.fmt!r}, "
                f"pass_through={self.pass_through}, buf={type(self.buf).__name__})")



cdef str _dynamic_hint(Context ctx, long long idx, TensorAttr a):
    """For a dynamic-shape model: its shape sets, the current one and what to do ("" for
    a static model).  Only called to word an error."""
    ranges = _dynamic_ranges(ctx)
    if not ranges or idx >= len(ranges):
        return ""
    r = ranges[idx]
    sets = " | ".join([_shape_str(d) for d in r.dyn_range])
    return (f"; the model has dynamic input shapes: the shape sets of input {idx} are {sets}, "
            f"the current one is {_shape_str(a.dims)}; call set_input_shapes() with the "
            f"shape set of your data first")


cdef tuple _pass_through_need(Context ctx, long long idx, int f, TensorAttr a):
    """Bytes rknn_inputs_set reads for a pass_through input in layout `f`, from the native
    attribute, and where the number comes from: NHWC images are rows of w_stride pixels of
    the native channel count, NC1HWC2 is blocked, other layouts are packed."""
    if f == RKNN_TENSOR_UNDEFINED:
        f = a.c.fmt
    if a.c.n_dims != 4 or (f != RKNN_TENSOR_NHWC and f != RKNN_TENSOR_NC1HWC2):
        return a.c.size, f"{_shape_str(a.dims)} {_type_name(a.c.type)} packed"
    # the current shape's attributes exist once shapes were set (see Context.input_attrs)
    dynamic = bool(ctx._shapes_set)
    try:
        if f == RKNN_TENSOR_NHWC:
            if dynamic:
                # no CURRENT_ form of the NHWC native query: the current attribute's
                # size_with_stride follows the same rule
                return a.c.size_with_stride, (f"{_type_name(a.c.type)} in the native NHWC "
                                              f"layout: CURRENT_INPUT_ATTR size_with_stride")
            n = ctx.query(RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR, idx)
            return n.size_with_stride, (f"{_type_name(a.c.type)} in the native NHWC layout "
                                        f"{list(n.dims)} w_stride {n.w_stride}: "
                                        f"NATIVE_NHWC_INPUT_ATTR size_with_stride")
        n = ctx.query(RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR if dynamic
                      else RKNN_QUERY_NATIVE_INPUT_ATTR, idx)
    except RKNNError:
        # the runtime does not say: it judges the size itself
        return a.c.size, f"{_shape_str(a.dims)} {_type_name(a.c.type)}"
    if n.fmt != RKNN_TENSOR_NC1HWC2:
        raise ValueError(f"input {idx} ({a.name!r}): pass_through NC1HWC2 data, but the "
                         f"input has no NC1HWC2 form on this chip (its native layout is "
                         f"{_fmt_name(n.fmt)}); pass it in {_fmt_name(n.fmt)}")
    return n.size_with_stride, (f"{_type_name(a.c.type)} in the native NC1HWC2 layout "
                                f"{list(n.dims)}: NATIVE_INPUT_ATTR size_with_stride")


# -- the fast path of inputs_set -------------------------------------------------------------
# A list or tuple of plain buffers at their positions, each C-contiguous with an accepted
# type, the exact size and a matching shape, is checked in C against the facts cached in
# an _IOSpecs (built once per attribute set: _load_attrs makes a new _in_attrs tuple after
# set_input_shape(s) and close(), and the specs follow its identity).  Anything else, or
# any check that fails, goes to the general path, which checks everything again and
# raises its own errors: the fast path decides only "accept", never an error message.
cdef enum:
    _FAST_MAX = 16                           # inputs the fast path takes (stack arrays)

cdef int _FAST_TYPE[128]                     # one-character buffer format -> type, or -1
for _k in range(128):
    _FAST_TYPE[_k] = -1
for _s, _t in _FORMAT_TO_TYPE.items():
    if len(_s) == 1 and ord(_s) < 128:
        _FAST_TYPE[ord(_s)] = _t
del _k, _s, _t


cdef inline int _fast_type(const char* f) noexcept:
    """_type_of_format in C: the type of a buffer format, or -1 (then the general path)."""
    if f == NULL:
        return RKNN_TENSOR_UINT8
    if (f[0] == b"@" or f[0] == b"=" or f[0] == b"<") and f[1] != 0 and f[2] == 0:
        f += 1
    if f[0] != 0 and f[1] == 0 and <unsigned char>f[0] < 128:
        return _FAST_TYPE[<unsigned char>f[0]]
    return -1


cdef inline Py_ssize_t _strip_start(const Py_ssize_t* d, Py_ssize_t n) noexcept:
    """Where _strip_ones starts: leading ones dropped, the last dim always kept."""
    cdef Py_ssize_t i = 0
    while i < n - 1 and d[i] == 1:
        i += 1
    return i


@cython.final
cdef class _IOSpecs:
    """The cached per-tensor facts of one attribute set of a Context (internal)."""

    def __cinit__(self):
        self.ins = NULL
        self.outs = NULL

    def __dealloc__(self):
        free(self.ins)
        free(self.outs)


cdef _IOSpecs _current_specs(Context self):
    """The _IOSpecs of the cached attributes (built now if they changed)."""
    cdef _IOSpecs sp = self._specs
    cdef TensorAttr a
    cdef _InputSpec* s
    cdef Py_ssize_t i, j, n, t, start
    cdef Py_ssize_t d[16]
    _load_attrs(self)
    if sp is not None and sp.src is self._in_attrs:
        return sp
    sp = _IOSpecs.__new__(_IOSpecs)
    sp.src = self._in_attrs
    sp.n_in = n = len(self._in_attrs)
    sp.ins = <_InputSpec*>calloc(max(n, 1), sizeof(_InputSpec))
    if sp.ins == NULL:
        raise MemoryError()
    for i in range(n):
        a = self._in_attrs[i]
        s = &sp.ins[i]
        s.n_elems = a.c.n_elems
        s.fmt = a.c.fmt
        s.fast = (0 <= s.fmt < RKNN_TENSOR_FORMAT_MAX and s.fmt != RKNN_TENSOR_NC1HWC2
                  and a.c.n_dims <= RKNN_MAX_DIMS)
        for t in range(RKNN_TENSOR_TYPE_MAX):
            if _ITEMSIZE[t] != 0 and (t in _CONVERTIBLE_INPUT_TYPES or t == <int>a.c.type):
                s.types |= (<uint32_t>1) << t
        if s.fast:
            for j in range(a.c.n_dims):
                d[j] = a.c.dims[j]
            start = _strip_start(d, a.c.n_dims)
            s.ndims = <int>(a.c.n_dims - start)
            s.full_ndims = <int>a.c.n_dims
            for j in range(s.ndims):
                s.dims[j] = d[start + j]
    outs = self._out_attrs
    sp.n_out = n = len(outs)
    sp.outs = <_Layout*>calloc(max(2 * n, 1), sizeof(_Layout))
    if sp.outs == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            _output_layout(outs[i], False, &sp.outs[i])
            _output_layout(outs[i], True, &sp.outs[n + i])
    except Exception:
        # outputs_get computes them per call then, and raises there as it always did
        free(sp.outs)
        sp.outs = NULL
    else:
        sp.out_src = outs
    # published once per set of attributes (as _load_attrs publishes them): a thread that
    # built the same specs at once takes the first ones
    with cython.critical_section(self):
        if self._specs is None or (<_IOSpecs>self._specs).src is not sp.src:
            self._specs = sp
        return self._specs


cdef inline int _fast_accepts(const _InputSpec* s, const Py_buffer* v) noexcept:
    """The type of the data in `v` when the fast path takes it for input spec `s` (an
    accepted type, the exact size, the input's shape once leading ones are dropped), else
    -1: then the general path checks again and words the error."""
    cdef int t = _fast_type(v.format)
    cdef Py_ssize_t start, i
    if t < 0 or not (s.types >> t) & 1 or v.len != s.n_elems * _ITEMSIZE[t]:
        return -1
    if v.ndim > 1 and v.itemsize == _ITEMSIZE[t]:
        start = _strip_start(v.shape, v.ndim)
        if v.ndim - start != s.ndims:
            return -1
        for i in range(s.ndims):
            if v.shape[start + i] != s.dims[i]:
                return -1
    return t


cdef inline bint _exact_shape(const _InputSpec* s, const Py_buffer* v) noexcept:
    """The buffer has the attribute's dims exactly (its leading ones included)."""
    cdef Py_ssize_t lead = s.full_ndims - s.ndims, i
    if v.ndim != s.full_ndims:
        return False
    for i in range(lead):
        if v.shape[i] != 1:
            return False
    for i in range(s.ndims):
        if v.shape[lead + i] != s.dims[i]:
            return False
    return True


cdef Py_ssize_t _fast_inputs(_IOSpecs sp, object items, Py_ssize_t n, bint exact,
                             rknn_input* arr, Py_buffer* views,
                             Py_ssize_t* nviews) except -1:
    """The fast path's checks, in C, of the first `n` items (plain buffers at their
    positions, n <= sp.n_in and <= _FAST_MAX) against `sp`, each one taken filling its
    rknn_input: how many were taken before the first the general path must see (an Input,
    None, another layout, type, size or shape; with `exact`, anything but a numpy.ndarray,
    not a subclass, of the attribute's exact dims, leading ones included).  Each view is
    held from the moment `nviews` counts it: the caller releases views[0:nviews[0]], also
    when this raises."""
    cdef Py_ssize_t k
    cdef _InputSpec* s
    cdef Py_buffer* v
    cdef int t
    for k in range(n):
        if k >= len(items):                  # a list that changed size meanwhile
            return k
        item = items[k]
        s = &sp.ins[k]
        if not s.fast:
            return k
        if type(item) is not _ndarray and (exact or item is None or isinstance(item, Input)):
            return k                         # (an exact ndarray is neither None nor an Input)
        v = &views[k]
        # an exact numpy.ndarray of a simple dtype is read from its own fields (_nd_view)
        if not (type(item) is _ndarray and _nd_view(item, v, False)):
            try:
                PyObject_GetBuffer(item, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
            except (BufferError, ValueError, TypeError):
                # the general path asks again and words the error
                return k
        nviews[0] += 1
        t = _fast_accepts(s, v)
        if t < 0 or (exact and not _exact_shape(s, v)):
            return k
        arr[k].index = <uint32_t>k
        arr[k].buf = v.buf
        arr[k].size = <uint32_t>v.len
        arr[k].pass_through = 0
        arr[k].type = <rknn_tensor_type>t
        arr[k].fmt = <rknn_tensor_format>s.fmt
    return n


cdef int _inputs_set_fast(Context self, tuple items) except -1:
    """inputs_set of plain buffers at their positions if every one passes the checks in C:
    1 when done (C called), 0 when the general path must take over (nothing done, every
    view released)."""
    cdef _IOSpecs sp = _current_specs(self)    # kept: user code may replace _specs
    cdef unsigned long long gen = self._attrs_gen   # the shapes sp was made for
    cdef Py_ssize_t n = len(items), k, nviews = 0
    cdef rknn_input arr[_FAST_MAX]
    cdef Py_buffer views[_FAST_MAX]
    if n == 0 or n > sp.n_in or n > _FAST_MAX:
        return 0
    try:
        if _fast_inputs(sp, items, n, False, arr, views, &nviews) != n:
            return 0
        # a shape change since the checks: 0, and the general path checks again
        return _inputs_set_locked(self, arr, <uint32_t>n, gen, True)
    finally:
        for k in range(nviews):
            _view_release(&views[k])


cdef int _enter_general(Context self, const char* what, unsigned long long gen, bint runs,
                        bint soft) except -1:
    """Take the lock for the general flow's inputs (inputs_set; infer when `runs`), the
    inputs checked at shape generation `gen`: for infer the run-entry rules first
    (_enter_run), for inputs_set a closed context (_enter).  Then, for both, refused with
    the lock released: input shapes that set_input_shape(s) moved since `gen`, and the
    zero-copy flow.  1 once the lock is held; a refusal is 0 when `soft` (the caller's
    fallback checks again, or gives up) and raises otherwise (ValueError, FlowError)."""
    if runs:
        _enter_run(self, what)
    else:
        self._enter(what)
    if self._shape_gen != gen:
        self._release()
        if soft:
            return 0
        name = what.decode()
        raise ValueError(f"{name}: the input shapes changed (set_input_shapes, "
                         f"concurrently) while the {'buffers' if runs else 'inputs'} were "
                         f"checked; call {name} again with buffers of the current "
                         f"{'attributes' if runs else 'input_attrs'}")
    if _relaxed_load_int(&self._flow) == _FLOW_ZERO_COPY:
        self._release()
        if soft:
            return 0
        self._flow_error(_FLOW_GENERAL, b"rknn_inputs_set")
    return 1


cdef inline void _general_flow_chosen(Context self, const char* by) noexcept:
    """Under the lock, after a successful call of the general flow: note the flow (and the
    call that chose it) if none was chosen yet."""
    if self._flow == _FLOW_NONE:       # (the lock held: only we write it)
        # (read without the lock elsewhere: whole stores, the call first)
        _relaxed_store_cstr(&self._flow_set_by, by)
        _relaxed_store_int(&self._flow, _FLOW_GENERAL)


cdef int _inputs_set_locked(Context self, rknn_input* arr, uint32_t n,
                            unsigned long long gen, bint fast) except -1:
    """The locked step of inputs_set (fast and general path): take the lock by the rules
    of _enter_general (the fast path returns 0 for a refusal, so that the general path
    checks again; the general path raises); call rknn_inputs_set with the GIL released;
    note the general flow; release; raise for a failed status.  1 once the runtime took
    the inputs."""
    cdef int ret
    if not _enter_general(self, b"inputs_set", gen, False, fast):
        return 0
    with nogil:
        ret = _api.rknn_inputs_set(self.ctx, n, arr)
    if ret >= 0:
        _general_flow_chosen(self, b"inputs_set()")
    self._release()
    check(ret, b"rknn_inputs_set")
    return 1


# -- the general path ---------------------------------------------------------------------------
cdef long long _input_index(Input inp, Py_ssize_t k, tuple ins, set seen) except -1:
    """The input index of item `k` (its position unless Input.index says), checked in range
    and not given twice."""
    cdef long long idx
    pyidx = k if inp.index is None else _py_int(inp.index, "Input.index")
    if not 0 <= pyidx < len(ins):
        raise IndexError(f"input index {pyidx} out of range: the model has "
                         f"{len(ins)} input(s)")
    idx = pyidx
    if idx in seen:
        raise ValueError(f"input index {idx} given twice")
    seen.add(idx)
    return idx


cdef int _input_view(Input inp, str label, Py_buffer* view) except -1:
    """Get the C-contiguous buffer of an input (the caller releases it)."""
    if inp.buf is None:
        raise TypeError(f"{label}: buf is None; expected a buffer (numpy array)")
    try:
        PyObject_GetBuffer(inp.buf, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
    except (BufferError, ValueError) as e:
        raise ValueError(f"{label} must be a C-contiguous buffer "
                         f"(np.ascontiguousarray): {e}") from None
    except TypeError:
        raise TypeError(f"{label}: expected a buffer (numpy array, bytes), got "
                        f"{type(inp.buf).__name__}") from None
    return 0


cdef int _check_input(Context self, Input inp, long long idx, TensorAttr a, str label,
                      Py_buffer* v, rknn_input* r) except -1:
    """Check the data of input `idx` (type, layout, size, shape; pass_through needs) and
    fill its rknn_input."""
    cdef int t, f
    cdef Py_ssize_t need
    if inp.type is None:
        t = _type_of_format(v.format)
        if t < 0:
            raise TypeError(f"{label}: buffer format "
                            f"{v.format.decode('ascii', 'replace')!r} has no "
                            "RKNN tensor type; expected uint8, int8, float16 or "
                            "float32 (or pass Input(type=...))")
    else:
        t = _py_enum(inp.type, f"{label}: Input.type", "TensorType")
        if not _type_known(t):
            raise ValueError(f"{label}: type {inp.type!r} is not a TensorType")
    f = a.c.fmt if inp.fmt is None else _py_enum(inp.fmt, f"{label}: Input.fmt",
                                                 "TensorFormat")
    if not 0 <= f < RKNN_TENSOR_FORMAT_MAX:
        raise ValueError(f"{label}: fmt {inp.fmt!r} is not a TensorFormat")
    if inp.pass_through:
        if t != <int>a.c.type:
            raise ValueError(f"{label}: pass_through needs data in the model type "
                             f"{_type_name(a.c.type)}, got {_type_name(t)}")
        need, where = _pass_through_need(self, idx, f, a)
        if v.len < need:
            raise ValueError(f"{label}: pass_through data of {v.len} bytes "
                             f"is too small: need {need} bytes ({where})")
    else:
        if t not in _CONVERTIBLE_INPUT_TYPES and t != <int>a.c.type:
            raise ValueError(f"{label}: cannot convert from {_type_name(t)}; "
                             f"expected uint8, int8, float16, float32 or the model "
                             f"type {_type_name(a.c.type)}")
        if f == RKNN_TENSOR_NC1HWC2:
            raise ValueError(f"{label}: NC1HWC2 data needs pass_through=True")
        if _ITEMSIZE[t] == 0:
            raise ValueError(f"{label}: {_type_name(t)} data cannot be converted")
        need = a.c.n_elems * _ITEMSIZE[t]
        expected = _dims_in_fmt(a, f)
        if v.len != need:
            raise ValueError(f"{label} expects {need} bytes ({_shape_str(expected)} "
                             f"{_type_name(t)} {_fmt_name(f)}), got {v.len}"
                             + _dynamic_hint(self, idx, a))
        if v.ndim > 1 and v.itemsize == _ITEMSIZE[t]:
            got = tuple([v.shape[i] for i in range(v.ndim)])
            if _strip_ones(got) != _strip_ones(expected):
                raise ValueError(f"{label} expects shape {_shape_str(expected)} "
                                 f"({_fmt_name(f)}), got {_shape_str(got)}"
                                 + _dynamic_hint(self, idx, a))
    r.index = <uint32_t>idx
    r.buf = v.buf
    r.size = <uint32_t>v.len
    r.pass_through = 1 if inp.pass_through else 0
    r.type = <rknn_tensor_type>t
    r.fmt = <rknn_tensor_format>f
    return 0


cdef int _check_inputs(Context self, object items, Py_ssize_t n, tuple ins,
                       rknn_input* arr, Py_buffer* views, Py_ssize_t* nviews) except -1:
    """The general path's checks of the `n` items (buffers or Input objects; `items`
    indexable) against the input attributes `ins`, in turn, each raising what is wrong:
    the index (its position unless Input.index says; in range, not given twice), a
    C-contiguous buffer, then type, layout, size, shape and pass_through needs
    (_check_input), filling arr[0:n].  Each view is held from the moment `nviews` counts
    it: the caller releases views[0:nviews[0]], also when this raises.  inputs_set and
    infer both check their inputs here."""
    cdef Py_ssize_t k
    cdef TensorAttr a
    cdef Input inp
    cdef long long idx
    memset(arr, 0, n * sizeof(rknn_input))
    seen = set()
    for k in range(n):
        item = items[k]
        inp = item if isinstance(item, Input) else Input(item)
        idx = _input_index(inp, k, ins, seen)
        a = ins[idx]
        label = f"input {idx} ({a.name!r})"
        _input_view(inp, label, &views[k])
        nviews[0] += 1
        _check_input(self, inp, idx, a, label, &views[k], &arr[k])
    return 0


cdef int _inputs_set(Context self, object inputs) except -1:
    """Context.inputs_set: the fast path for plain buffers at their positions, else every
    input checked in Python (the general path), then the locked step."""
    cdef Py_ssize_t n, k, nviews = 0
    cdef rknn_input* arr = NULL
    cdef Py_buffer* views = NULL
    cdef unsigned long long gen
    self._check_open(b"inputs_set")
    if _relaxed_load_int(&self._flow) == _FLOW_ZERO_COPY:
        self._flow_error(_FLOW_GENERAL, b"rknn_inputs_set")
    require(<void*>_api.rknn_inputs_set, b"rknn_inputs_set")
    if self._no_general:
        self._require_chip(b"rknn_inputs_set")
    _load_attrs(self)
    if not self._shapes_set and _dynamic_ranges(self):
        # a dynamic-shape model has no current shape until one is chosen (boards refuse,
        # or abort: docs/abi-notes.md)
        raise ValueError("inputs_set: the model has dynamic input shapes ("
                         + _ranges_str(_dynamic_ranges(self)) + "); choose the shape set of "
                         "your data with set_input_shapes() first")
    if type(inputs) is tuple:
        if _inputs_set_fast(self, <tuple>inputs):
            return 0
    elif type(inputs) is list:
        if _inputs_set_fast(self, tuple(<list>inputs)):
            return 0
    # the attrs checked against, and the shapes they are of (compared under the lock)
    _load_attrs(self)
    gen = self._attrs_gen
    ins = self._in_attrs
    if isinstance(inputs, (list, tuple)):
        items = list(inputs)
    else:
        items = [inputs]
    n = len(items)
    if n == 0:
        raise ValueError(f"inputs_set needs at least one input (the model has "
                         f"{len(ins)})")
    if n > len(ins):
        raise ValueError(f"{n} inputs given; the model has {len(ins)}")
    arr = <rknn_input*>PyMem_Malloc(n * sizeof(rknn_input))
    views = <Py_buffer*>PyMem_Malloc(n * sizeof(Py_buffer))
    if arr == NULL or views == NULL:
        PyMem_Free(arr)
        PyMem_Free(views)
        raise MemoryError()
    try:
        _check_inputs(self, items, n, ins, arr, views, &nviews)
        _inputs_set_locked(self, arr, <uint32_t>n, gen, False)
    finally:
        for k in range(nviews):
            PyBuffer_Release(&views[k])
        PyMem_Free(views)
        PyMem_Free(arr)
    return 0
