# The model description and its shapes: the cached input/output attributes
# (_load_attrs), the bodies of Context.query, set_input_shape and set_input_shapes, the
# shape sets of a dynamic-shape model (INPUT_DYNAMIC_RANGE), and the check run() makes of
# set_io_mem bindings after a shape change.  The generation counters these keep are
# described where they are declared (_core.pxd, Context).

# the queries whose result is an rknn_tensor_attr, and whether they index outputs
_ATTR_QUERIES = {
    RKNN_QUERY_INPUT_ATTR: False, RKNN_QUERY_OUTPUT_ATTR: True,
    RKNN_QUERY_NATIVE_INPUT_ATTR: False, RKNN_QUERY_NATIVE_OUTPUT_ATTR: True,
    RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR: False, RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: True,
    RKNN_QUERY_CURRENT_INPUT_ATTR: False, RKNN_QUERY_CURRENT_OUTPUT_ATTR: True,
    RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR: False, RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR: True,
}


cdef str _shape_str(shape):
    return "(" + ", ".join(str(x) for x in shape) + ")"


cdef str _ranges_str(tuple ranges):
    """The shape sets of a dynamic model, per input: "input 0 'x': (1, 64, 64, 3) | ..."."""
    return "; ".join([f"input {r.index} {r.name!r}: "
                      + " | ".join([_shape_str(d) for d in r.dyn_range]) for r in ranges])


cdef int _load_attrs(Context self) except -1:
    """Query and cache the input/output attributes: the plain INPUT_ATTR/OUTPUT_ATTR until
    the context's first successful set_input_shape(s) (for a dynamic-shape model, its
    largest shape set), the CURRENT_* ones from then on.  Whether the model is dynamic
    plays no part (_dynamic_ranges is not asked here)."""
    cdef rknn_input_output_num io
    cdef rknn_tensor_attr a
    cdef int ret
    cdef uint32_t i
    cdef rknn_query_cmd qi = RKNN_QUERY_INPUT_ATTR
    cdef rknn_query_cmd qo = RKNN_QUERY_OUTPUT_ATTR
    cdef unsigned long long g
    if self._in_attrs is not None and self._attrs_gen == self._shape_gen:
        return 0
    while True:
        # queried in several lock holds: keep them only if no shape change came between
        g = self._shape_gen
        # a dynamic-shape model: the plain queries describe the largest shapes (what
        # buffers are sized by); once shapes were set, the CURRENT_ ones describe them.
        # Boards refuse CURRENT_* before rknn_set_input_shapes (docs/abi-notes.md).
        if self._shapes_set:
            qi = RKNN_QUERY_CURRENT_INPUT_ATTR
            qo = RKNN_QUERY_CURRENT_OUTPUT_ATTR
        self._query_into(RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io))
        ins = []
        outs = []
        for i in range(io.n_input):
            memset(&a, 0, sizeof(a))
            a.index = i
            self._query_into(qi, &a, sizeof(a))
            ins.append(_attr_from_c(&a))
        for i in range(io.n_output):
            memset(&a, 0, sizeof(a))
            a.index = i
            self._query_into(qo, &a, sizeof(a))
            outs.append(_attr_from_c(&a))
        if self._shape_gen == g:
            break
    # published once per shape generation, in a critical section on the context: threads
    # that queried the same generation at once keep the first answer, so no reader of the
    # cache ever holds a tuple that another thread's store has just freed (a free-threaded
    # CPython has no GIL between the load of the field and its reference)
    with cython.critical_section(self):
        if self._in_attrs is None or self._attrs_gen != g:
            self._in_attrs = tuple(ins)
            self._out_attrs = tuple(outs)
            self._attrs_gen = g
    return 0


cdef object _query(Context self, object cmd, object index):
    """Context.query: check the command and index, then the typed result of each command."""
    cdef int c
    cdef long long idx
    cdef rknn_input_output_num io
    cdef rknn_tensor_attr a
    cdef rknn_perf_run pr
    cdef rknn_sdk_version sv
    cdef rknn_mem_size ms
    cdef rknn_custom_string cs
    cdef rknn_tensor_mem dm
    try:
        c = cmd
    except (TypeError, OverflowError):
        raise TypeError(f"cmd must be a QueryCmd, got {cmd!r}") from None
    if not 0 <= c < RKNN_QUERY_CMD_MAX:
        raise ValueError(f"cmd {cmd!r} is not a query command; expected one of "
                         f"{[m.name for m in QueryCmd]}")
    try:
        idx = index
    except (TypeError, OverflowError):
        raise TypeError(f"index must be an int, got {index!r}") from None
    self._check_open(b"query")
    if self._chip is not None and not _platforms.supports_query(self._chip, c):
        raise NotSupportedError(_platforms.why_not(self._chip, cmd=c), None, "rknn_query")
    if c == RKNN_QUERY_IN_OUT_NUM:
        self._query_into(RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io))
        return InOutNum(io.n_input, io.n_output)
    if c in _ATTR_QUERIES or c == RKNN_QUERY_INPUT_DYNAMIC_RANGE:
        self._check_index(idx, _ATTR_QUERIES.get(c, False))
    if c in _ATTR_QUERIES:
        memset(&a, 0, sizeof(a))
        a.index = <uint32_t>idx
        self._query_into(<rknn_query_cmd>c, &a, sizeof(a))
        return _attr_from_c(&a)
    if c == RKNN_QUERY_PERF_DETAIL:
        return _query_perf_detail(self)
    if c == RKNN_QUERY_PERF_RUN:
        memset(&pr, 0, sizeof(pr))
        try:
            self._query_into(RKNN_QUERY_PERF_RUN, &pr, sizeof(pr))
        except RKNNError as exc:
            if exc.code != RKNN_ERR_FAIL:
                raise
            # librknnrt logs "RKNN_QUERY_PERF_RUN is valid only after rknn_run" and returns
            # a bare RKNN_ERR_FAIL: say it where the caller sees it
            raise type(exc)(f"{exc}: RKNN_QUERY_PERF_RUN is valid only after rknn_run: "
                            "run the model first (run(), or model.run / session.run)",
                            exc.code, exc.func) from None
        return PerfRun(pr.run_duration)
    if c == RKNN_QUERY_SDK_VERSION:
        memset(&sv, 0, sizeof(sv))
        self._query_into(RKNN_QUERY_SDK_VERSION, &sv, sizeof(sv))
        return SdkVersion(_cstr(sv.api_version, sizeof(sv.api_version)),
                          _cstr(sv.drv_version, sizeof(sv.drv_version)))
    if c == RKNN_QUERY_MEM_SIZE:
        memset(&ms, 0, sizeof(ms))
        self._query_into(RKNN_QUERY_MEM_SIZE, &ms, sizeof(ms))
        return MemSize(ms.total_weight_size, ms.total_internal_size,
                       ms.total_dma_allocated_size, ms.total_sram_size, ms.free_sram_size)
    if c == RKNN_QUERY_CUSTOM_STRING:
        memset(&cs, 0, sizeof(cs))
        self._query_into(RKNN_QUERY_CUSTOM_STRING, &cs, sizeof(cs))
        return _cstr(cs.string, sizeof(cs.string))
    if c == RKNN_QUERY_DEVICE_MEM_INFO:
        memset(&dm, 0, sizeof(dm))
        self._query_into(RKNN_QUERY_DEVICE_MEM_INFO, &dm, sizeof(dm))
        return DeviceMemInfo(<size_t>dm.virt_addr, dm.phys_addr, dm.fd, dm.offset,
                             dm.size, dm.flags)
    if c == RKNN_QUERY_INPUT_DYNAMIC_RANGE:
        return _query_range(self, <uint32_t>idx)
    raise ValueError(f"query command {cmd!r} is not handled")  # pragma: no cover


cdef object _query_perf_detail(Context self):
    """PERF_DETAIL as a PerfDetail.  The text is the runtime's and valid until its next
    call: it is copied under the lock."""
    cdef rknn_perf_detail pd
    cdef int ret
    memset(&pd, 0, sizeof(pd))
    require(<void*>_api.rknn_query, b"rknn_query")
    self._enter(b"query")
    ret = _api.rknn_query(self.ctx, RKNN_QUERY_PERF_DETAIL, &pd, sizeof(pd))
    if ret >= 0 and pd.perf_data != NULL:
        text = pd.perf_data[:strnlen(pd.perf_data, pd.data_len) if pd.data_len
                            else strnlen(pd.perf_data, 1 << 24)]
    else:
        text = b""
    self._release()
    check(ret, b"rknn_query")
    return PerfDetail(text.decode("utf-8", "replace"))


cdef object _query_range(Context self, uint32_t idx):
    """``RKNN_QUERY_INPUT_DYNAMIC_RANGE`` of input `idx` as an :class:`InputRange`."""
    cdef rknn_input_range* rng = <rknn_input_range*>calloc(1, sizeof(rknn_input_range))
    cdef uint32_t nd
    if rng == NULL:
        raise MemoryError()
    try:
        rng.index = idx
        self._query_into(RKNN_QUERY_INPUT_DYNAMIC_RANGE, rng, sizeof(rknn_input_range))
        nd = min(rng.n_dims, <uint32_t>RKNN_MAX_DIMS)
        rows = tuple([tuple([rng.dyn_range[r][k] for k in range(nd)])
                      for r in range(min(rng.shape_number, <uint32_t>RKNN_MAX_DYNAMIC_SHAPE_NUM))])
        try:
            fmt = TensorFormat(rng.fmt)
        except ValueError:
            fmt = int(rng.fmt)
        return InputRange(rng.index, rng.shape_number, fmt,
                          _cstr(rng.name, sizeof(rng.name)), rng.n_dims, rows)
    finally:
        free(rng)


cdef tuple _dynamic_ranges(Context self):
    """The INPUT_DYNAMIC_RANGE of every input if the model has several shape sets
    (a dynamic-shape model), else ().  Asked once per model: the answer is kept in
    _ranges, and contexts made from this one by dup() or share_weights_with take it over
    (_context_init.pxi) instead of asking again; boards refuse the query on a static model
    (-6, with a W line of the runtime's), which is kept as the answer "static".  A context
    made from model bytes that say the model is static (file_says_static of
    rknnx._rknnfile) is never asked: _ranges is () from its init."""
    cdef uint32_t i
    cdef rknn_input_output_num io
    if self._ranges is None:
        ranges = ()
        if self._chip is None or _platforms.supports_query(
                self._chip, RKNN_QUERY_INPUT_DYNAMIC_RANGE):
            try:
                # straight to C, not through query(): the chip was checked above and the
                # indices come from IN_OUT_NUM
                self._query_into(RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io))
                ranges = tuple([_query_range(self, i) for i in range(io.n_input)])
            except RKNNError as e:
                # -6: a static model (boards refuse its shape sets); -5: a runtime without
                # the query.  Those are the answer; any other failure is not, and is not
                # kept (the next call asks again)
                if e.code not in (-6, -5):
                    return ()
                ranges = ()
            if not any([r.shape_number > 1 for r in ranges]):
                ranges = ()
        self._ranges = ranges
    return self._ranges


cdef int _set_input_shape(Context self, TensorAttr attr) except -1:
    """Context.set_input_shape: rknn_set_input_shape; the generation moves on success."""
    cdef rknn_tensor_attr c
    cdef int ret
    self._check_open(b"set_input_shape")
    self._check_index(attr.c.index, False)
    require(<void*>_api.rknn_set_input_shape, b"rknn_set_input_shape")
    self._require_chip(b"rknn_set_input_shape")
    c = attr.c
    self._enter(b"set_input_shape")
    with nogil:
        ret = _api.rknn_set_input_shape(self.ctx, &c)
    if ret >= 0:
        self._shapes_set = True
        self._in_attrs = self._out_attrs = None
        self._shape_gen += 1
    self._release()
    check(ret, b"rknn_set_input_shape")
    return 0


cdef int _set_input_shapes(Context self, object attrs) except -1:
    """Context.set_input_shapes: check one TensorAttr per input, then
    rknn_set_input_shapes; the generation moves on success."""
    cdef rknn_tensor_attr* arr
    cdef uint32_t n, i
    cdef int ret
    self._check_open(b"set_input_shapes")
    items = list(attrs)
    for a in items:
        if not isinstance(a, TensorAttr):
            raise TypeError(f"set_input_shapes takes TensorAttr objects, got "
                            f"{type(a).__name__}")
    _load_attrs(self)
    n = len(self._in_attrs)
    if len(items) != n:
        raise ValueError(f"set_input_shapes needs one TensorAttr per input: expected {n}, "
                         f"got {len(items)}")
    seen = set()
    for a in items:
        if (<TensorAttr>a).c.index >= n or (<TensorAttr>a).c.index in seen:
            raise IndexError(f"TensorAttr index {(<TensorAttr>a).c.index} is out of range "
                             f"or repeated; expected each of 0..{n - 1} once")
        seen.add((<TensorAttr>a).c.index)
    require(<void*>_api.rknn_set_input_shapes, b"rknn_set_input_shapes")
    self._require_chip(b"rknn_set_input_shapes")
    arr = <rknn_tensor_attr*>PyMem_Malloc(max(n, 1) * sizeof(rknn_tensor_attr))
    if arr == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            arr[i] = (<TensorAttr>items[i]).c
        self._enter(b"set_input_shapes")
        with nogil:
            ret = _api.rknn_set_input_shapes(self.ctx, n, arr)
        if ret >= 0:
            # attrs and the generation change together, under the lock: a check made
            # against the old attrs sees the new generation once it holds the lock
            self._shapes_set = True
            self._in_attrs = self._out_attrs = None
            self._shape_gen += 1
        self._release()
    finally:
        PyMem_Free(arr)
    check(ret, b"rknn_set_input_shapes")
    return 0


cdef int _check_io_dims(Context self) except -1:
    """Raise ValueError if a set_io_mem binding was made for other dims than the
    current attributes'; else note the shapes as checked (run() skips this then)."""
    cdef unsigned long long gen
    _load_attrs(self)
    gen = self._attrs_gen
    ins, outs = self._in_attrs, self._out_attrs
    for key, dims in list(self._io_dims.items()):
        kind, idx = key
        a = (outs if kind == "output" else ins)[idx]
        if a.dims != dims:
            raise ValueError(f"{kind} {idx} ({a.name!r}) is bound with set_io_mem for dims "
                             f"{list(dims)}, but the input shapes changed and its current "
                             f"dims are {list(a.dims)}; bind it again with set_io_mem using "
                             f"the current attributes (input_attrs/output_attrs) before run()")
    self._io_gen = gen
    return 0
