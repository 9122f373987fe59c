# Context.infer: the general flow's three calls (inputs_set, run, outputs_get into the
# caller's buffers) in one crossing: every buffer checked first (plain buffers by the fast
# path's rules in C, anything else, Input objects included, by inputs_set's general
# path; the outputs by outputs_get(out=)'s), then one lock hold and one release of the
# GIL around the three C calls.  No other call on the context can come between them, so
# threads sharing a context never run on each other's inputs.  What inputs_set would
# refuse before the runtime sees anything (a missing function, the other flow, a dynamic
# model without a shape set, no inputs) is refused by the documented calls themselves,
# with their messages.  The checks are inputs_set's and outputs_get's own (_fast_inputs,
# _check_inputs, _out_view), the lock is taken by the rules of both inputs_set and run
# (_enter_general, _enter_run).


cdef int _check_outs(Context self, object out, bint wf) except -1:
    """The out buffers checked as outputs_get(out=) checks them (type, count, each buffer
    against the cached output attributes), before anything reaches the runtime: a wrong
    `out` must not cost an inputs_set and a run."""
    cdef uint32_t n, i
    cdef Py_buffer v
    cdef _IOSpecs sp
    _load_attrs(self)
    sp = self._specs                           # kept while its layouts are read
    attrs = self._out_attrs
    n = len(attrs)
    if not isinstance(out, (list, tuple)):
        raise TypeError(f"out must be a sequence (list or tuple) of buffers, one per "
                        f"output ({n}), got {type(out).__name__}")
    if len(out) != n:
        raise ValueError(f"out must hold one buffer per output: expected {n}, "
                         f"got {len(out)}")
    for i in range(n):
        _out_view(out[i], attrs[i], i, wf, _spec_out_layout(sp, attrs, i, wf), &v)
        _view_release(&v)
    return 0


cdef object _infer_three(Context self, object inputs, object out, bint wf,
                         bint check_out=True):
    """The documented calls, for what inputs_set refuses before the runtime sees anything
    (it raises, with its message; `out` is checked first unless `check_out` is False)."""
    if check_out:
        _check_outs(self, out, wf)
    self.inputs_set(inputs)
    self.run()
    return _outputs_get(self, wf, out)


cdef object _infer(Context self, object inputs, object out, bint wf, bint fast_only):
    """Context.infer: what the documented calls refuse goes to them (_infer_three); the
    rest to _infer_checked.  fast_only: everything that is not the plain case returns None
    before the runtime is called (the caller's own path decides); errors of the runtime
    still raise."""
    cdef _IOSpecs sp
    cdef Py_ssize_t n
    cdef uint32_t nout
    cdef unsigned long long gen
    cdef bint out_ok
    if self._pid != _this_pid or _closed_now(self):
        if fast_only and self._pid == _this_pid and _closed_now(self):
            return None
        self._check_open(b"infer")
    if (_api.rknn_inputs_set == NULL or _api.rknn_run == NULL or _api.rknn_outputs_get == NULL
            or _api.rknn_outputs_release == NULL or self._no_general
            or _relaxed_load_int(&self._flow) == _FLOW_ZERO_COPY):
        # each call raises its own error (missing function, chip, flow)
        return None if fast_only else _infer_three(self, inputs, out, wf, False)
    try:
        _load_attrs(self)
        # the shape sets asked once per model (_dynamic_ranges keeps them in _ranges: read
        # here as it reads them, without a call when they are known)
        ranges = self._ranges
        if self._shapes_set:
            dynamic = False
        else:
            dynamic = len(<tuple>(_dynamic_ranges(self) if ranges is None else ranges)) != 0
    except ValueError:
        # a first query (the attributes, the shape sets) met a close of another thread
        # that came after the check above (no GIL between them on a free-threaded CPython):
        # this call's words, not the query's
        if fast_only and _closed_now(self):
            return None
        self._check_open(b"infer")
        raise
    if dynamic:
        # inputs_set says to choose a shape
        return None if fast_only else _infer_three(self, inputs, out, wf, False)
    nout = len(self._out_attrs)
    # (exact types: a list's or tuple's size read as len() reads it, without the call)
    if type(out) is list:
        out_ok = len(<list>out) == <Py_ssize_t>nout
    else:
        out_ok = type(out) is tuple and len(<tuple>out) == <Py_ssize_t>nout
    if not out_ok:
        if fast_only:
            return None
        _check_outs(self, out, wf)           # raises what is wrong with `out`
    if type(inputs) is tuple:
        items = inputs
        n = len(<tuple>inputs)
    elif type(inputs) is list:
        items = inputs                       # a list is read in place on the fast path
        n = len(<list>inputs)
    else:
        items = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
        n = len(<tuple>items)
    if n == 0 or n > len(self._in_attrs):
        return None if fast_only else _infer_three(self, inputs, out, wf)   # says how many
    # the generation read before the specs: specs of later attributes than `gen` are
    # refused under the lock (_enter_general), never run against older ones
    gen = self._attrs_gen
    sp = self._specs                         # (as _current_specs reads it)
    if sp is None or sp.src is not self._in_attrs:
        sp = _current_specs(self)
    if fast_only and n != sp.n_in:
        return None
    return _infer_checked(self, sp, gen, items, n, out, nout, wf, fast_only)


cdef object _infer_checked(Context self, _IOSpecs sp, unsigned long long gen, object items,
                           Py_ssize_t n, object out, uint32_t nout, bint wf, bint fast_only):
    """The `n` inputs and `nout` outputs checked into C arrays (on the stack up to
    _FAST_MAX each), then the three calls in one lock hold (_infer_locked); `out`, or None
    when fast_only and a check would go beyond the fast path.  `gen`: the shape generation
    of the attributes `sp` was taken for (read before it).  Returns a new list of the
    arrays written: the items of `out` as they were taken, before the GIL is released for
    the run (another thread may replace an item of `out` meanwhile: the list holds what the
    runtime wrote)."""
    cdef Py_ssize_t k, nin = 0, nouts = 0           # views held
    cdef rknn_input iarr_s[_FAST_MAX]
    cdef Py_buffer iviews_s[_FAST_MAX]
    cdef rknn_output oarr_s[_FAST_MAX]
    cdef Py_buffer oviews_s[_FAST_MAX]
    cdef rknn_input* iarr = iarr_s
    cdef Py_buffer* iviews = iviews_s
    cdef rknn_output* oarr = oarr_s
    cdef Py_buffer* oviews = oviews_s
    cdef bint heap = n > _FAST_MAX or nout > _FAST_MAX
    cdef int ret[4]
    cdef uint32_t i
    cdef const _Layout* lay
    attrs = self._out_attrs
    written = [None] * nout
    if heap:
        iarr = <rknn_input*>PyMem_Malloc(n * sizeof(rknn_input))
        iviews = <Py_buffer*>PyMem_Malloc(n * sizeof(Py_buffer))
        oarr = <rknn_output*>PyMem_Malloc(nout * sizeof(rknn_output))
        oviews = <Py_buffer*>PyMem_Malloc(nout * sizeof(Py_buffer))
        if iarr == NULL or iviews == NULL or oarr == NULL or oviews == NULL:
            PyMem_Free(iarr)
            PyMem_Free(iviews)
            PyMem_Free(oarr)
            PyMem_Free(oviews)
            raise MemoryError()
    memset(ret, 0, sizeof(ret))
    try:
        if not _infer_inputs(self, sp, items, n, fast_only, iarr, iviews, &nin):
            return None
        for i in range(nout):
            item = out[i]
            if fast_only and type(item) is not _ndarray:
                return None
            written[i] = item
            lay = _spec_out_layout(sp, attrs, i, wf)   # (not NULL: attrs is sp's tuple)
            if not (fast_only and lay != NULL and
                    _out_view_cached(item, <TensorAttr>(<tuple>attrs)[i], wf, lay,
                                     &oviews[i])):
                try:
                    _out_view(item, attrs[i], i, wf, lay, &oviews[i])
                except (ValueError, TypeError):
                    if fast_only:
                        return None
                    raise
            nouts += 1
            if fast_only and not _fast_out(<TensorAttr>attrs[i], oviews, i):
                return None
            _prealloc_output(&oarr[i], i, wf, &oviews[i])
        if not _infer_locked(self, gen, iarr, <uint32_t>n, oarr, nout, fast_only, ret):
            return None
    finally:
        for k in range(nin):
            _view_release(&iviews[k])
        for k in range(nouts):
            _view_release(&oviews[k])
        if heap:
            PyMem_Free(iarr)
            PyMem_Free(iviews)
            PyMem_Free(oarr)
            PyMem_Free(oviews)
    check(ret[0], b"rknn_inputs_set")
    if ret[1] < 0 and self._custom is not None:
        _check_custom(ret[1], b"rknn_run", <_CustomOpSet>self._custom)
    check(ret[1], b"rknn_run")
    check(ret[2], b"rknn_outputs_get")
    check(ret[3], b"rknn_outputs_release")
    return written


cdef inline bint _out_view_cached(object item, TensorAttr a, bint wf, const _Layout* lay,
                                  Py_buffer* v) noexcept:
    """_out_view's common case with no try block entered (Cython saves and restores the
    exception state for each): `item`, an exact numpy.ndarray, read from its own fields
    (_nd_view) and of the cached layout `lay` (_out_fits_cached): True, held in `v`.
    False, nothing held: _out_view decides (and words the error)."""
    if not _nd_view(item, v, True):
        return False
    if _out_fits_cached(a, wf, v, lay):
        return True
    _view_release(v)
    return False


cdef bint _fast_out(TensorAttr a, const Py_buffer* views, uint32_t i) noexcept:
    """fast_only's rules for out[i] beyond _out_view's (those of the facade's out= check,
    rknnx._tensors.check_out, in C): the buffer has the attribute's dims exactly (its
    ones included) and shares no byte with out[0:i] (C-contiguous buffers: their extents
    overlap or they do not).  False: the caller's own path decides (and words the
    error)."""
    cdef const Py_buffer* v = &views[i]
    cdef const char* lo = <const char*>v.buf
    cdef const char* hi = lo + v.len
    cdef const char* b
    cdef uint32_t k
    if v.ndim != <int>a.c.n_dims:
        return False
    for k in range(a.c.n_dims):
        if v.shape[k] != <Py_ssize_t>a.c.dims[k]:
            return False
    for k in range(i):
        b = <const char*>views[k].buf
        if b < hi and lo < b + views[k].len:
            return False
    return True


cdef int _infer_inputs(Context self, _IOSpecs sp, object items, Py_ssize_t n,
                       bint fast_only, rknn_input* arr, Py_buffer* views,
                       Py_ssize_t* nviews) except -1:
    """The inputs of infer into `arr`: plain buffers at their positions by the fast path's
    checks in C (with fast_only, of their exact shape), anything else by inputs_set's
    general path, which raises its errors.  0: fast_only and the fast path did not take
    them all.  The caller releases views[0:nviews[0]]."""
    cdef Py_ssize_t k
    if n == sp.n_in and _fast_inputs(sp, items, n, fast_only, arr, views, nviews) == n:
        return 1
    if fast_only:
        return 0                             # (the views are released by the caller)
    for k in range(nviews[0]):
        _view_release(&views[k])
    nviews[0] = 0
    items = tuple(items)
    if len(items) != n:
        raise ValueError("infer: the list of inputs changed size while it was read")
    _check_inputs(self, items, n, self._in_attrs, arr, views, nviews)
    return 1


cdef int _infer_locked(Context self, unsigned long long gen, rknn_input* iarr, uint32_t n,
                       rknn_output* oarr, uint32_t nout, bint fast_only,
                       int* ret) except -1:
    """The three C calls under one lock hold, the GIL released once, the lock taken by the
    rules of inputs_set and run (_enter_general); each stops at the first failure, whose
    status the caller raises from ret[0..3] (inputs_set, run, outputs_get, release).  0:
    fast_only and refused (nothing called)."""
    cdef rknn_output_extend oext
    cdef rknn_run_extend rext
    memset(&oext, 0, sizeof(oext))
    memset(&rext, 0, sizeof(rext))
    if not _enter_general(self, b"infer", gen, True, fast_only):
        return 0
    with nogil:
        ret[0] = _api.rknn_inputs_set(self.ctx, n, iarr)
        if ret[0] >= 0:
            ret[1] = _api.rknn_run(self.ctx, &rext)
            if ret[1] >= 0:
                ret[2] = _api.rknn_outputs_get(self.ctx, nout, oarr, &oext)
                if ret[2] >= 0:
                    ret[3] = _api.rknn_outputs_release(self.ctx, nout, oarr)
    if ret[0] >= 0:
        _general_flow_chosen(self, b"infer()")
        if ret[1] >= 0:
            self._run_gen = self._shape_gen
            if ret[2] >= 0:
                _outputs_got(self, oext.frame_id)
    self._release()
    return 1
