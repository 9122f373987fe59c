# Context.infer: the general flow's three calls (inputs_set, run, outputs_get into the
# caller's buffers) in one crossing: every buffer checked first (plain buffers by the fast
# path's rules in C, anything else, Input objects included, by inputs_set's general
# path; the outputs by outputs_get(out=)'s), then one lock hold and one release of the
# GIL around the three C calls.  No other call on the context can come between them, so
# threads sharing a context never run on each other's inputs.  What inputs_set would
# refuse before the runtime sees anything (a missing function, the other flow, a dynamic
# model without a shape set, no inputs) is refused by the documented calls themselves,
# with their messages.


cdef int _check_outs(Context self, object out, bint wf) except -1:
    """The out buffers checked as outputs_get(out=) checks them (type, count, each buffer
    against the cached output attributes), before anything reaches the runtime: a wrong
    `out` must not cost an inputs_set and a run."""
    cdef uint32_t n, i
    cdef Py_buffer v
    cdef TensorAttr a
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
        a = attrs[i]
        item = out[i]
        try:
            PyObject_GetBuffer(item, &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
        except (BufferError, ValueError) as e:
            raise ValueError(f"{_out_label(i, a)} must be a writable C-contiguous "
                             f"buffer: {e}") from None
        except TypeError:
            raise TypeError(f"{_out_label(i, a)}: expected a writable buffer (numpy "
                            f"array), got {type(item).__name__}") from None
        try:
            _check_out_buffer(a, wf, i, &v, _spec_out_layout(sp, attrs, i, wf))
        finally:
            PyBuffer_Release(&v)
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
    cdef _IOSpecs sp
    cdef unsigned long long gen
    cdef Py_ssize_t n, k, nin = 0, nout = 0, ok = 0     # views held; inputs the fast path took
    cdef rknn_input iarr_s[_FAST_MAX]
    cdef Py_buffer iviews_s[_FAST_MAX]
    cdef rknn_output oarr_s[_FAST_MAX]
    cdef Py_buffer oviews_s[_FAST_MAX]
    cdef rknn_input* iarr = iarr_s
    cdef Py_buffer* iviews = iviews_s
    cdef rknn_output* oarr = oarr_s
    cdef Py_buffer* oviews = oviews_s
    cdef bint heap = False
    cdef rknn_output_extend oext
    cdef rknn_run_extend rext
    cdef int ret_in = 0, ret_run = 0, ret_out = 0, ret_rel = 0, t
    cdef uint32_t nout_model, i
    cdef _InputSpec* s
    cdef TensorAttr a
    cdef Input inp
    cdef long long idx
    # fast_only: everything that is not the plain case returns None before the runtime
    # is called (the caller's own path decides); errors of the runtime still raise
    if fast_only and (self.ctx == 0 or self._closing) and self._pid == _this_pid:
        return None
    self._check_open(b"infer")
    if (_api.rknn_inputs_set == NULL or _api.rknn_run == NULL or _api.rknn_outputs_get == NULL
            or _api.rknn_outputs_release == NULL or self._no_general
            or self._flow == _FLOW_ZERO_COPY):
        # each call raises its own error (missing function, chip, flow)
        return None if fast_only else _infer_three(self, inputs, out, wf, False)
    _load_attrs(self)
    if not self._shapes_set and _dynamic_ranges(self):
        # inputs_set says to choose a shape
        return None if fast_only else _infer_three(self, inputs, out, wf, False)
    nout_model = len(self._out_attrs)
    if type(out) not in (list, tuple) or len(out) != nout_model:
        if fast_only:
            return None
        _check_outs(self, out, wf)           # raises what is wrong with `out`
    if type(inputs) is tuple or type(inputs) is list:
        items = inputs                       # a list is read in place on the fast path
    elif isinstance(inputs, (list, tuple)):
        items = tuple(inputs)
    else:
        items = (inputs,)
    n = len(items)
    if n == 0 or n > len(self._in_attrs):
        return None if fast_only else _infer_three(self, inputs, out, wf)   # says how many
    sp = _current_specs(self)
    if fast_only and n != sp.n_in:
        return None
    gen = self._attrs_gen                    # the shapes everything is checked against
    attrs = self._out_attrs
    if n > _FAST_MAX or nout_model > _FAST_MAX:
        heap = True
        iarr = <rknn_input*>PyMem_Malloc(n * sizeof(rknn_input))
        iviews = <Py_buffer*>PyMem_Malloc(n * sizeof(Py_buffer))
        oarr = <rknn_output*>PyMem_Malloc(nout_model * sizeof(rknn_output))
        oviews = <Py_buffer*>PyMem_Malloc(nout_model * sizeof(Py_buffer))
        if iarr == NULL or iviews == NULL or oarr == NULL or oviews == NULL:
            PyMem_Free(iarr)
            PyMem_Free(iviews)
            PyMem_Free(oarr)
            PyMem_Free(oviews)
            raise MemoryError()
    memset(&oext, 0, sizeof(oext))
    memset(&rext, 0, sizeof(rext))
    try:
        # plain buffers at their positions, checked in C
        if n == sp.n_in:
            for k in range(n):
                if k >= len(items):          # a list that changed size meanwhile
                    break
                item = items[k]
                s = &sp.ins[k]
                if not s.fast or item is None or isinstance(item, Input):
                    break
                try:
                    PyObject_GetBuffer(item, &iviews[k], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
                except (BufferError, ValueError, TypeError):
                    break
                nin += 1
                t = _fast_accepts(s, &iviews[k])
                if t < 0 or (fast_only and not _exact_shape(s, &iviews[k])):
                    break
                ok += 1
                iarr[k].index = <uint32_t>k
                iarr[k].buf = iviews[k].buf
                iarr[k].size = <uint32_t>iviews[k].len
                iarr[k].pass_through = 0
                iarr[k].type = <rknn_tensor_type>t
                iarr[k].fmt = <rknn_tensor_format>s.fmt
        if ok != n and fast_only:
            return None                      # (the views are released below)
        if ok != n:
            # anything else: inputs_set's general path, each input checked in turn
            for k in range(nin):
                PyBuffer_Release(&iviews[k])
            nin = 0
            items = tuple(items)
            if len(items) != n:
                raise ValueError("infer: the list of inputs changed size while it was read")
            memset(iarr, 0, n * sizeof(rknn_input))
            ins = self._in_attrs
            seen = set()
            for k in range(n):
                item = items[k]
                inp = item if isinstance(item, Input) else Input(item)
                idx = _input_index(inp, k, ins, seen)
                a = ins[idx]
                label = f"input {idx} ({a.name!r})"
                _input_view(inp, label, &iviews[k])
                nin += 1
                _check_input(self, inp, idx, a, label, &iviews[k], &iarr[k])
        for i in range(nout_model):
            a = attrs[i]
            item = out[i]
            try:
                PyObject_GetBuffer(item, &oviews[i],
                                   PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
            except (BufferError, ValueError) as e:
                if fast_only:
                    return None
                raise ValueError(f"{_out_label(i, a)} must be a writable C-contiguous "
                                 f"buffer: {e}") from None
            except TypeError:
                if fast_only:
                    return None
                raise TypeError(f"{_out_label(i, a)}: expected a writable buffer (numpy "
                                f"array), got {type(item).__name__}") from None
            nout += 1
            try:
                _check_out_buffer(a, wf, i, &oviews[i], _spec_out_layout(sp, attrs, i, wf))
            except (ValueError, TypeError):
                if fast_only:
                    return None
                raise
            memset(&oarr[i], 0, sizeof(rknn_output))
            oarr[i].want_float = wf
            oarr[i].is_prealloc = 1
            oarr[i].index = i
            oarr[i].buf = oviews[i].buf
            oarr[i].size = <uint32_t>oviews[i].len
        while True:
            # as run(): set_io_mem bindings are checked again only after a shape change
            if self._io_gen != self._shape_gen:
                _check_io_dims(self)
            self._enter(b"infer")
            if self._io_gen == self._shape_gen:
                break
            self._release()
        if self._shape_gen != gen:
            self._release()
            if fast_only:
                return None
            raise ValueError("infer: the input shapes changed (set_input_shapes, "
                             "concurrently) while the buffers were checked; call infer "
                             "again with buffers of the current attributes")
        if self._flow == _FLOW_ZERO_COPY:
            self._release()
            if fast_only:
                return None
            self._flow_error(_FLOW_GENERAL, b"rknn_inputs_set")
        # as run(): a bound mem that was closed is refused (looked at only when a mem was
        # closed, or a binding made, since the bound mems were last all open)
        if self._bound_ok != _mem_deaths:
            self._check_bound()
        with nogil:
            ret_in = _api.rknn_inputs_set(self.ctx, <uint32_t>n, iarr)
            if ret_in >= 0:
                ret_run = _api.rknn_run(self.ctx, &rext)
                if ret_run >= 0:
                    ret_out = _api.rknn_outputs_get(self.ctx, nout_model, oarr, &oext)
                    if ret_out >= 0:
                        ret_rel = _api.rknn_outputs_release(self.ctx, nout_model, oarr)
        if ret_in >= 0 and self._flow == _FLOW_NONE:
            self._flow = _FLOW_GENERAL
            self._flow_set_by = b"infer()"
        if ret_in >= 0 and ret_run >= 0:
            self._run_gen = self._shape_gen
            if ret_out >= 0:
                _outputs_got(self, oext.frame_id)
        self._release()
    finally:
        for k in range(nin):
            PyBuffer_Release(&iviews[k])
        for i in range(nout):
            PyBuffer_Release(&oviews[i])
        if heap:
            PyMem_Free(iarr)
            PyMem_Free(iviews)
            PyMem_Free(oarr)
            PyMem_Free(oviews)
    check(ret_in, b"rknn_inputs_set")
    if ret_run < 0 and self._custom is not None:
        _check_custom(ret_run, b"rknn_run", <_CustomOpSet>self._custom)
    check(ret_run, b"rknn_run")
    check(ret_out, b"rknn_outputs_get")
    check(ret_rel, b"rknn_outputs_release")
    return out
