# Outputs of the general flow and the zero-copy bindings: the bodies of
# Context.outputs_get, set_io_mem, set_weight_mem and set_internal_mem (the methods in
# _context.pxi are their documented wrappers).

cdef str _STALE_OUTPUTS = ("outputs_get: the input shapes changed since the last run() "
                           "(set_input_shapes); run() again before outputs_get")


cdef int _output_layout(TensorAttr a, bint want_float, _Layout* lay) except -1:
    """What rknn_outputs_get returns for output `a`: NCHW, float32 or the model type."""
    cdef rknn_tensor_attr c = a.c
    if c.n_dims == 4 and c.fmt == RKNN_TENSOR_NHWC:
        c.dims[1], c.dims[2], c.dims[3] = a.c.dims[3], a.c.dims[1], a.c.dims[2]
        c.fmt = RKNN_TENSOR_NCHW
    c.w_stride = 0
    c.h_stride = 0
    c.size_with_stride = 0
    if want_float:
        c.type = RKNN_TENSOR_FLOAT32
    elif c.fmt == RKNN_TENSOR_NC1HWC2:
        c.fmt = RKNN_TENSOR_UNDEFINED
    if not _type_known(c.type) or _FORMAT[<int>c.type] == NULL:
        _layout_raw(lay, 0)
        return 0
    _layout_of_attr(&c, lay, -1, -1)
    return 0


# -- outputs_get ------------------------------------------------------------------------------
cdef object _outputs_get(Context self, object want_float, object out):
    """Context.outputs_get: the checks both forms share, then into the caller's buffers
    (out=) or into buffers the runtime allocates (an Outputs)."""
    cdef bint wf = bool(want_float)
    cdef unsigned long long gen
    self._check_open(b"outputs_get")
    if _relaxed_load_int(&self._flow) == _FLOW_ZERO_COPY:
        self._flow_error(_FLOW_GENERAL, b"rknn_outputs_get")
    require(<void*>_api.rknn_outputs_get, b"rknn_outputs_get")
    if self._no_general:
        self._require_chip(b"rknn_outputs_get")
    require(<void*>_api.rknn_outputs_release, b"rknn_outputs_release")
    _load_attrs(self)
    gen = self._attrs_gen
    if self._run_gen != gen:
        raise ValueError(_STALE_OUTPUTS)
    if out is not None:
        return _outputs_into(self, out, wf, gen)
    return _outputs_alloc(self, wf, gen)


cdef int _outputs_enter(Context self, unsigned long long gen) except -1:
    """Take the lock for rknn_outputs_get and keep it, unless the outputs would be of other
    shapes than the attributes checked at generation `gen` (a shape change since the checks
    or since the last run) or the context is in the zero-copy flow: then release and raise."""
    self._enter(b"outputs_get")
    if self._shape_gen != gen or self._run_gen != gen:
        self._release()
        raise ValueError(_STALE_OUTPUTS)
    if _relaxed_load_int(&self._flow) == _FLOW_ZERO_COPY:
        self._release()
        self._flow_error(_FLOW_GENERAL, b"rknn_outputs_get")
    return 0


cdef inline void _outputs_got(Context self, uint64_t frame_id) noexcept:
    """Under the lock, after a successful rknn_outputs_get: note the frame and the flow."""
    self.last_frame_id = frame_id
    _general_flow_chosen(self, b"outputs_get()")


cdef bint _same_shape_but_ones(const Py_buffer* v, const _Layout* lay) noexcept:
    """The buffer's shape is the layout's, size-1 dimensions aside (a 1-D or 0-D buffer is
    judged by its size alone)."""
    cdef int i = 0, j = 0
    if v.ndim <= 1:
        return True
    while True:
        while i < v.ndim and v.shape[i] == 1:
            i += 1
        while j < lay.ndim and lay.shape[j] == 1:
            j += 1
        if i == v.ndim or j == lay.ndim:
            return i == v.ndim and j == lay.ndim
        if v.shape[i] != lay.shape[j]:
            return False
        i += 1
        j += 1


cdef str _out_label(uint32_t i, TensorAttr a):
    return f"out[{i}] (output {a.name!r})"


cdef inline const _Layout* _spec_out_layout(_IOSpecs sp, object outs, uint32_t i,
                                            bint wf) noexcept:
    """The layout `sp` holds for output `i` of the attribute tuple `outs` (what
    _output_layout gives), or NULL when `sp` was not computed from that very tuple.  The
    caller keeps `sp` referenced while it uses the pointer."""
    if sp is None or sp.outs == NULL or sp.out_src is not outs or i >= sp.n_out:
        return NULL
    return &sp.outs[i + sp.n_out if wf else i]


cdef inline bint _out_fits_cached(TensorAttr a, bint wf, const Py_buffer* v,
                                  const _Layout* cached) noexcept:
    """_check_out_buffer's test against the cached layout (`cached`, or NULL: False):
    the buffer has the type, the size and, size-1 dimensions aside, the shape of what
    rknn_outputs_get writes.  False: the layout computed anew decides."""
    return (cached != NULL and _fast_type(v.format) == (RKNN_TENSOR_FLOAT32 if wf else
                                                        <int>a.c.type)
            and v.len == cached.nbytes and _same_shape_but_ones(v, cached))


cdef int _check_out_buffer(TensorAttr a, bint wf, uint32_t i, Py_buffer* v,
                           const _Layout* cached) except -1:
    """Check a caller's buffer for output `a` (number `i`): dtype, exact size and shape of
    what rknn_outputs_get writes.  `cached`: that layout from the _IOSpecs
    (_spec_out_layout), or NULL; a buffer it does not pass is checked again against the
    layout computed here, which words the error.  The message's label is made only when
    one is raised."""
    cdef _Layout lay
    cdef int t = RKNN_TENSOR_FLOAT32 if wf else a.c.type
    cdef int have = _fast_type(v.format)     # C; -1 also for formats it does not read
    if _out_fits_cached(a, wf, v, cached):
        return 0
    _output_layout(a, wf, &lay)
    if have < 0:
        have = _type_of_format(v.format)
    if have == t and v.len == lay.nbytes and _same_shape_but_ones(v, &lay):
        return 0
    label = _out_label(i, a)
    if have != t:
        raise ValueError(f"{label} must be {dtype_of(t)} for "
                         f"want_float={wf}, got buffer format "
                         f"{v.format.decode('ascii', 'replace')!r}")
    if v.len != lay.nbytes:
        raise ValueError(f"{label} needs exactly {lay.nbytes} bytes "
                         f"({_shape_str(_layout_shape(&lay))} {dtype_of(t)}), "
                         f"got {v.len}")
    if v.ndim > 1:
        got = tuple([v.shape[k] for k in range(v.ndim)])
        if _strip_ones(got) != _strip_ones(_layout_shape(&lay)):
            raise ValueError(f"{label} must have shape "
                             f"{_shape_str(_layout_shape(&lay))}, got "
                             f"{_shape_str(got)}")
    return 0


cdef int _out_view(object item, TensorAttr a, uint32_t i, bint wf, const _Layout* cached,
                   Py_buffer* v) except -1:
    """The writable C-contiguous buffer of out[i], checked for output `a` as
    _check_out_buffer checks it (`cached`: _spec_out_layout's, or NULL): held in `v` on
    success (the caller releases it), released when this raises.  outputs_get(out=) and
    infer check their `out` buffers here."""
    # the common case first, with no try block entered (each costs Cython an exception
    # state saved and restored): an exact numpy.ndarray of a simple dtype read from its
    # own fields (_nd_view), of the cached layout's type, size and shape
    if not (type(item) is _ndarray and _nd_view(item, v, True)):
        _out_export(item, a, i, v)
    if _out_fits_cached(a, wf, v, cached):
        return 0
    try:
        _check_out_buffer(a, wf, i, v, cached)
    except BaseException:
        _view_release(v)
        raise
    return 0


cdef int _out_export(object item, TensorAttr a, uint32_t i, Py_buffer* v) except -1:
    """_out_view's buffer by the buffer protocol (writable, C-contiguous), its errors in
    out[i]'s words."""
    try:
        PyObject_GetBuffer(item, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
    except (BufferError, ValueError) as e:
        raise ValueError(f"{_out_label(i, a)} must be a writable C-contiguous "
                         f"buffer: {e}") from None
    except TypeError:
        raise TypeError(f"{_out_label(i, a)}: expected a writable buffer (numpy "
                        f"array), got {type(item).__name__}") from None
    return 0


cdef inline void _prealloc_output(rknn_output* r, uint32_t i, bint wf,
                                  const Py_buffer* v) noexcept:
    """Fill the rknn_output of out[i] (is_prealloc = 1: the runtime writes into `v`)."""
    memset(r, 0, sizeof(rknn_output))
    r.want_float = wf
    r.is_prealloc = 1
    r.index = i
    r.buf = v.buf
    r.size = <uint32_t>v.len


cdef list _outputs_into(Context self, object out, bint wf, unsigned long long gen):
    """outputs_get(out=...): the runtime writes into the caller's buffers
    (is_prealloc = 1) and the call is paired with rknn_outputs_release at once."""
    cdef uint32_t n = len(self._out_attrs), i
    cdef int ret = 0, ret2 = 0
    cdef rknn_output* arr = NULL
    cdef Py_buffer* views = NULL
    cdef Py_ssize_t nviews = 0
    cdef rknn_output_extend oext
    cdef _IOSpecs sp = self._specs             # kept while its layouts are read
    attrs = self._out_attrs
    memset(&oext, 0, sizeof(oext))
    if not isinstance(out, (list, tuple)):
        raise TypeError(f"out must be a sequence (list or tuple) of buffers, one per "
                        f"output ({n}), got {type(out).__name__}")
    outs = list(out)
    if len(outs) != n:
        raise ValueError(f"out must hold one buffer per output: expected {n}, "
                         f"got {len(outs)}")
    arr = <rknn_output*>calloc(max(n, 1), sizeof(rknn_output))
    views = <Py_buffer*>PyMem_Malloc(max(n, 1) * sizeof(Py_buffer))
    if arr == NULL or views == NULL:
        free(arr)
        PyMem_Free(views)
        raise MemoryError()
    try:
        for i in range(n):
            _out_view(outs[i], attrs[i], i, wf, _spec_out_layout(sp, attrs, i, wf),
                      &views[i])
            nviews += 1
            _prealloc_output(&arr[i], i, wf, &views[i])
        _outputs_enter(self, gen)
        with nogil:
            ret = _api.rknn_outputs_get(self.ctx, n, arr, &oext)
            if ret >= 0:
                ret2 = _api.rknn_outputs_release(self.ctx, n, arr)
        if ret >= 0:
            _outputs_got(self, oext.frame_id)
        self._release()
    finally:
        for i in range(nviews):
            _view_release(&views[i])
        PyMem_Free(views)
        free(arr)
    check(ret, b"rknn_outputs_get")
    check(ret2, b"rknn_outputs_release")
    return outs


cdef Outputs _new_outputs(Context self, uint32_t n, bint wf):
    """An Outputs of `n` Output objects on a new output group linked into the context's
    list (no runtime buffers yet)."""
    cdef _OutputGroup g = _OutputGroup.__new__(_OutputGroup)
    cdef Outputs result
    cdef Output o
    cdef tuple items
    cdef uint32_t i
    g.context = self
    items = PyTuple_New(n)
    for i in range(n):
        o = Output.__new__(Output)
        o._group = g
        o._i = i
        o._want_float = wf
        o._src = self._out_attrs[i]        # copied when .attr is first read
        Py_INCREF(o)
        PyTuple_SET_ITEM(items, i, o)
    result = Outputs.__new__(Outputs)
    result._group = g
    result._items = items
    with cython.critical_section(self):      # the list's rule (_OutputGroup._unlink)
        g._next = self._groups
        if self._groups != NULL:
            (<_OutputGroup>self._groups)._prev = <PyObject*>g
        self._groups = <PyObject*>g
        g._linked = True
    return result


cdef Outputs _outputs_alloc(Context self, bint wf, unsigned long long gen):
    """outputs_get() without out=: the runtime allocates the buffers (is_prealloc = 0) and
    the returned Outputs owns them until released."""
    cdef uint32_t n = len(self._out_attrs), i
    cdef int ret = 0
    cdef rknn_output* arr = NULL
    cdef rknn_output_extend oext
    cdef _OutputGroup g
    cdef Output o
    cdef _IOSpecs sp
    cdef Outputs result
    memset(&oext, 0, sizeof(oext))
    # everything that can fail in Python is made first, so the runtime's buffers always
    # end up owned by the group
    sp = _current_specs(self)
    result = _new_outputs(self, n, wf)
    g = result._group
    arr = <rknn_output*>calloc(max(n, 1), sizeof(rknn_output))
    if arr == NULL:
        raise MemoryError()
    for i in range(n):
        arr[i].want_float = wf
        arr[i].is_prealloc = 0
        arr[i].index = i
    try:
        _outputs_enter(self, gen)
    except BaseException:
        free(arr)
        raise
    with nogil:
        ret = _api.rknn_outputs_get(self.ctx, n, arr, &oext)
    if ret >= 0:
        g.outs = arr
        g.n = n
        g.frame_id = oext.frame_id
        _outputs_got(self, oext.frame_id)
    self._release()
    if ret < 0:
        free(arr)
        check(ret, b"rknn_outputs_get")
    for i in range(n):
        o = result._items[i]
        if sp.outs != NULL and sp.n_out == n:
            o._layout = sp.outs[i + n if wf else i]
        else:
            _output_layout(self._out_attrs[i], wf, &o._layout)
        # never let a view reach past what the runtime returned
        if arr[i].buf == NULL:
            _layout_raw(&o._layout, 0)
        elif o._layout.nbytes > arr[i].size or o._layout.ndim == 0 and arr[i].size < o._layout.itemsize:
            _layout_raw(&o._layout, arr[i].size)
    return result


# -- the zero-copy bindings ---------------------------------------------------------------------
cdef tuple _which_tensor(Context self, TensorAttr attr):
    """(is_output, index) of the tensor `attr` names: by name, else by an unambiguous
    index (the runtime's rule)."""
    cdef TensorAttr a
    _load_attrs(self)
    name = attr.name
    if name:
        for a in self._in_attrs:
            if a.name == name:
                return (False, a.c.index)
        for a in self._out_attrs:
            if a.name == name:
                return (True, a.c.index)
        raise ValueError(f"attr.name {name!r} names no input or output of the model; "
                         f"expected one of {[a.name for a in self._in_attrs]} (inputs) "
                         f"or {[a.name for a in self._out_attrs]} (outputs)")
    ni, no = len(self._in_attrs), len(self._out_attrs)
    i = attr.c.index
    if no <= i < ni:
        return (False, i)
    if ni <= i < no:
        return (True, i)
    raise ValueError(f"attr (index {i}, no name) does not say which tensor it is: set "
                     f"attr.name to an input or output name (attributes from query() "
                     "carry it)")


cdef object _padded_nhwc_output(Context self, long long idx, tuple logical):
    """The dims of NATIVE_NHWC_OUTPUT_ATTR of output `idx` where they pad the channels of
    its NHWC dims `logical` (librknnrt 1.6.0 on RK3566 rounds C up to C2 there: [1,32,32,8]
    for 5 channels, cls_img_rk3566; docs/abi-notes.md), else None (a chip that reports
    them unpadded, a dynamic model, whose runtime refuses the query)."""
    try:
        native = self.query(RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR, idx).dims
    except (RKNNError, ValueError):
        return None
    if (len(native) == 4 and native[:3] == logical[:3] and native[3] > logical[3]):
        return native
    return None


cdef int _check_io_attr(Context self, TensorMem mem, TensorAttr attr, bint is_out, long long idx,
                        TensorAttr model_attr, _Layout* lay, int* ntype) except -1:
    """Check what set_io_mem binds: `attr` (type, dims in its fmt, pass_through) against
    the model's attribute of that tensor and the mem's size.  1 when the data is typed
    (`lay` is then the layout a view exports), 0 when it is not.  `ntype` gets the type
    the NPU's own layout holds: the native attribute's for NC1HWC2 (an old toolkit's file
    has a FLOAT32 OUTPUT_ATTR over an INT8 NATIVE_OUTPUT_ATTR: rknpu2 c28b080
    multiple_input_demo, librknnrt 1.5.2 and 1.6.0), else the model's."""
    cdef Py_ssize_t channels = -1              # an output's own C where its dims pad it
    ntype[0] = model_attr.c.type
    kind = "output" if is_out else "input"
    if not is_out and attr.c.pass_through and attr.c.type != model_attr.c.type:
        raise ValueError(f"input {idx} ({model_attr.name!r}): pass_through needs the model "
                         f"type {_type_name(model_attr.c.type)}, got {_type_name(attr.c.type)}")
    if not _type_known(attr.c.type):
        raise ValueError(f"attr.type {attr.c.type} is not a TensorType")
    # the shape must be the model's (the current one of a dynamic model), in attr.fmt
    if attr.c.fmt == RKNN_TENSOR_NC1HWC2:
        if is_out:
            ncmd = (RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR if self._shapes_set
                    else RKNN_QUERY_NATIVE_OUTPUT_ATTR)
        else:
            ncmd = (RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR if self._shapes_set
                    else RKNN_QUERY_NATIVE_INPUT_ATTR)
        native = self.query(ncmd, idx)
        expected = native.dims
        ntype[0] = (<TensorAttr>native).c.type
    else:
        expected = _dims_in_fmt(model_attr, attr.c.fmt)
    if (attr.dims != expected and is_out and attr.c.fmt == RKNN_TENSOR_NHWC
            and len(expected) == 4):
        padded = _padded_nhwc_output(self, idx, expected)
        if padded is not None and attr.dims == padded:
            # (the queried attribute with its type edited, as the vendor's demos bind it:
            # a converted type is packed in C all the same)
            channels = expected[3]
            expected = padded
    if attr.dims != expected:
        raise ValueError(f"{kind} {idx} ({model_attr.name!r}): attr.dims {list(attr.dims)} "
                         f"do not match the model's {list(expected)} ({attr.layout}); "
                         "expected the dims of the queried attribute")
    if attr.c.fmt == RKNN_TENSOR_NC1HWC2 and attr.c.type != ntype[0]:
        raise ValueError(f"{kind} {idx} ({model_attr.name!r}): NC1HWC2 is the native layout, "
                         f"in the native type {_type_name(ntype[0])} only; got "
                         f"{_type_name(attr.c.type)} (use NHWC or NCHW for a converted type)")
    if _FORMAT[<int>attr.c.type] == NULL:
        return 0
    # channel padding exists only in the model's own type (the emulator's rule,
    # emulator/runtime_layout.c); padded dims of an output give a view of its own channels
    _layout_of_attr(&attr.c, lay, ntype[0], channels)
    cdef rknn_tensor_mem d
    mem._copy_desc(&d, "set_io_mem")
    if lay.extent > d.size:
        raise ValueError(f"TensorMem of {d.size} bytes is too small for {kind} "
                         f"{idx} ({model_attr.name!r}) as {_type_name(attr.c.type)} "
                         f"{attr.layout} {list(attr.dims)}: expected at least "
                         f"{lay.extent} bytes (w_stride/h_stride padding included)")
    return 1


cdef int _claim_for_binding(TensorMem mem, const char* what, _ContextBase to) except -1:
    """Claim `mem` for a set_*_mem call on `to`, until _set_slot has registered the binding
    (the context then marks it dead when it closes): a close() in another thread refuses
    meanwhile, instead of destroying a mem the runtime has just been given.  Checked and
    claimed in one critical section on the mem (the GIL on a GIL build), as close() marks
    and checks.  A mem of another context (bound to `to` as its documented rule allows,
    docs/architecture.md) is destroyed by that context's close too, under that context's
    lock, not `to`'s: its claim refuses a context being closed, and a closing context
    refuses while one is counted (_ContextBase._close, both in a critical section on the
    mem), so the runtime is never handed a descriptor being freed."""
    cdef bint foreign = mem.context is not None and mem.context is not to
    with cython.critical_section(mem):
        mem._check_open(what.decode())
        if mem._closing:
            raise ValueError(f"{what.decode()}: the TensorMem is being closed in another thread")
        if foreign and _closed_now(mem.context):
            raise ValueError(f"{what.decode()}: the Context that made the TensorMem is being "
                             "closed in another thread (closing, it closes its mems)")
        _atomic_add_int(&mem._binding, 1)
        if foreign:
            _atomic_add_int(&mem._foreign, 1)
    return 0


cdef void _unclaim_for_binding(TensorMem mem, _ContextBase to) noexcept:
    """The end of _claim_for_binding's claim (once the binding is registered, or refused)."""
    if mem.context is not None and mem.context is not to:
        _atomic_add_int(&mem._foreign, -1)
    _atomic_add_int(&mem._binding, -1)


cdef int _set_io_mem(Context self, TensorMem mem, TensorAttr attr) except -1:
    """Context.set_io_mem, the mem claimed while it is bound (_claim_for_binding)."""
    _claim_for_binding(mem, b"set_io_mem", self)
    try:
        return _set_io_mem_claimed(self, mem, attr)
    finally:
        _unclaim_for_binding(mem, self)


cdef int _set_io_mem_claimed(Context self, TensorMem mem, TensorAttr attr) except -1:
    """Context.set_io_mem: check, bind under the lock (refused if the shapes moved since
    the checks), then give the mem the tensor's layout."""
    cdef _Layout lay
    cdef bint typed
    cdef int ret
    cdef TensorAttr model_attr
    cdef unsigned long long gen
    cdef int ntype
    cdef rknn_tensor_mem* m
    self._check_open(b"set_io_mem")
    mem._check_open("set_io_mem")
    if _relaxed_load_int(&self._flow) == _FLOW_GENERAL:
        self._flow_error(_FLOW_ZERO_COPY, b"rknn_set_io_mem")
    require(<void*>_api.rknn_set_io_mem, b"rknn_set_io_mem")
    is_out, idx = _which_tensor(self, attr)
    gen = self._attrs_gen                  # the shapes model_attr is of
    model_attr = (self._out_attrs if is_out else self._in_attrs)[idx]
    kind = "output" if is_out else "input"
    typed = _check_io_attr(self, mem, attr, is_out, idx, model_attr, &lay, &ntype)
    self._enter(b"set_io_mem")
    if self._shape_gen != gen:
        self._release()
        raise ValueError("set_io_mem: the input shapes changed (set_input_shapes, "
                         "concurrently) while the binding was checked; bind again with "
                         "the current attributes")
    if _relaxed_load_int(&self._flow) == _FLOW_GENERAL:
        self._release()
        self._flow_error(_FLOW_ZERO_COPY, b"rknn_set_io_mem")
    # (under our lock, not the mem's context's, which its close destroys it under: the
    # pointer is loaded once, whole; the claim keeps a close of the mem itself away)
    m = _relaxed_load_mem(&mem.mem)
    if m == NULL:
        self._release()
        raise ValueError("set_io_mem on closed TensorMem")
    ret = _api.rknn_set_io_mem(self.ctx, m, &attr.c)
    if ret >= 0:
        # what run() compares with the current dims after a shape change
        self._io_dims[(kind, idx)] = model_attr.dims
    if ret >= 0 and self._flow == _FLOW_NONE:  # (the lock held: only we write it)
        # (read without the lock elsewhere: whole stores, the call first)
        _relaxed_store_cstr(&self._flow_set_by, b"set_io_mem()")
        _relaxed_store_int(&self._flow, _FLOW_ZERO_COPY)
    self._release()
    check(ret, b"rknn_set_io_mem")
    self._set_slot((kind, idx), mem)
    a = attr.copy() if typed else None
    if typed:
        (<TensorAttr>a)._ntype = ntype
    with cython.critical_section(mem):       # as bind(): a view copies the layout whole
        if typed:
            mem._layout = lay
            mem._attr = a
            mem._bound = True
        else:
            mem._bound = False
            mem._attr = None
    return 0


cdef int _set_whole_mem(Context self, TensorMem mem, const char* what, bint weight) except -1:
    """set_weight_mem / set_internal_mem, the mem claimed while it is bound."""
    _claim_for_binding(mem, what, self)
    try:
        return _set_whole_mem_claimed(self, mem, what, weight)
    finally:
        _unclaim_for_binding(mem, self)


cdef int _set_whole_mem_claimed(Context self, TensorMem mem, const char* what,
                                bint weight) except -1:
    """set_weight_mem / set_internal_mem: check the size against MEM_SIZE, bind, keep."""
    cdef int ret
    cdef rknn_mem_size ms
    cdef rknn_tensor_mem d
    cdef rknn_tensor_mem* m
    self._check_open(what)
    mem._check_open(what.decode())
    if weight:
        require(<void*>_api.rknn_set_weight_mem, b"rknn_set_weight_mem")
    else:
        require(<void*>_api.rknn_set_internal_mem, b"rknn_set_internal_mem")
    memset(&ms, 0, sizeof(ms))
    try:
        self._query_into(RKNN_QUERY_MEM_SIZE, &ms, sizeof(ms))
    except RKNNError:
        pass                         # the runtime will judge the size itself
    else:
        need = ms.total_weight_size if weight else ms.total_internal_size
        mem._copy_desc(&d, what.decode())
        if d.size < need:
            raise ValueError(f"TensorMem of {d.size} bytes is too small for the "
                             f"{'weights' if weight else 'internal tensors'}: expected at "
                             f"least {need} bytes (query(QueryCmd.MEM_SIZE))")
    self._enter(what)
    m = _relaxed_load_mem(&mem.mem)        # (as in _set_io_mem_claimed)
    if m == NULL:
        self._release()
        raise ValueError(f"{what.decode()} on closed TensorMem")
    if weight:
        ret = _api.rknn_set_weight_mem(self.ctx, m)
    else:
        ret = _api.rknn_set_internal_mem(self.ctx, m)
    self._release()
    check(ret, b"rknn_set_weight_mem" if weight else b"rknn_set_internal_mem")
    self._set_slot("weight" if weight else "internal", mem)
    return 0
