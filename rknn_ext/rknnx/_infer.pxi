# Context.infer: the general flow's three calls (inputs_set, run, outputs_get into the
# caller's buffers) in one crossing: every buffer checked first (the inputs by the fast
# path's rules, the outputs by outputs_get(out=)'s), then one lock hold and one release of
# the GIL around the three C calls.  Inputs the fast path does not take (Input objects,
# other layouts or types, a shape change under way) go through the three documented calls
# instead, with their checks and messages: the result is the same either way.


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
    """The documented way: three calls, each with its checks (`out` checked first, unless
    inputs_set is known to refuse before the runtime sees anything)."""
    if check_out:
        _check_outs(self, out, wf)
    self.inputs_set(inputs)
    self.run()
    return _outputs_get(self, wf, out)


cdef object _infer(Context self, object inputs, object out, bint wf):
    cdef _IOSpecs sp
    cdef unsigned long long gen
    cdef Py_ssize_t n, k, nin = 0, nout = 0, ok = 0     # views held; inputs the fast path took
    cdef rknn_input iarr[_FAST_MAX]
    cdef Py_buffer iviews[_FAST_MAX]
    cdef rknn_output oarr[_FAST_MAX]
    cdef Py_buffer oviews[_FAST_MAX]
    cdef rknn_output_extend oext
    cdef rknn_run_extend rext
    cdef int ret_in = 0, ret_run = 0, ret_out = 0, ret_rel = 0, t
    cdef uint32_t nout_model, i
    cdef bint ran = False, got = False
    cdef bint in_list = type(inputs) is list
    cdef _InputSpec* s
    cdef TensorAttr a
    self._check_open(b"infer")
    if (_api.rknn_inputs_set == NULL or _api.rknn_run == NULL or _api.rknn_outputs_get == NULL
            or _api.rknn_outputs_release == NULL or self._no_general
            or self._flow == _FLOW_ZERO_COPY):
        # each call raises its own error (missing function, chip, flow)
        return _infer_three(self, inputs, out, wf, False)
    _load_attrs(self)
    if not self._shapes_set and _dynamic_ranges(self):
        # inputs_set says to choose a shape
        return _infer_three(self, inputs, out, wf, False)
    if (not in_list and type(inputs) is not tuple
            or type(out) is not list and type(out) is not tuple):
        return _infer_three(self, inputs, out, wf)
    sp = _current_specs(self)
    gen = self._attrs_gen
    attrs = self._out_attrs
    n = len(<list>inputs) if in_list else len(<tuple>inputs)
    nout_model = len(attrs)
    if n == 0 or n != sp.n_in or n > _FAST_MAX or nout_model > _FAST_MAX \
            or len(out) != nout_model:
        return _infer_three(self, inputs, out, wf)
    memset(&oext, 0, sizeof(oext))
    memset(&rext, 0, sizeof(rext))
    try:
        for k in range(n):
            # a list is read in place (a view of each item is held from here on); one
            # that changed size meanwhile takes the documented calls
            if not in_list:
                item = (<tuple>inputs)[k]
            elif k < len(<list>inputs):
                item = (<list>inputs)[k]
            else:
                break
            s = &sp.ins[k]
            if not s.fast or item is None or isinstance(item, Input):
                break
            try:
                PyObject_GetBuffer(item, &iviews[k], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
            except (BufferError, ValueError, TypeError):
                break
            nin += 1
            t = _fast_accepts(s, &iviews[k])
            if t < 0:
                break
            ok += 1
            iarr[k].index = <uint32_t>k
            iarr[k].buf = iviews[k].buf
            iarr[k].size = <uint32_t>iviews[k].len
            iarr[k].pass_through = 0
            iarr[k].type = <rknn_tensor_type>t
            iarr[k].fmt = <rknn_tensor_format>s.fmt
        if ok != n:
            # not the fast path's inputs: release and go the documented way
            for k in range(nin):
                PyBuffer_Release(&iviews[k])
            nin = 0
            return _infer_three(self, inputs, out, wf)
        for i in range(nout_model):
            a = attrs[i]
            item = out[i]
            try:
                PyObject_GetBuffer(item, &oviews[i],
                                   PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
            except (BufferError, ValueError) as e:
                raise ValueError(f"{_out_label(i, a)} must be a writable C-contiguous "
                                 f"buffer: {e}") from None
            except TypeError:
                raise TypeError(f"{_out_label(i, a)}: expected a writable buffer (numpy "
                                f"array), got {type(item).__name__}") from None
            nout += 1
            _check_out_buffer(a, wf, i, &oviews[i], _spec_out_layout(sp, attrs, i, wf))
            memset(&oarr[i], 0, sizeof(rknn_output))
            oarr[i].want_float = wf
            oarr[i].is_prealloc = 1
            oarr[i].index = i
            oarr[i].buf = oviews[i].buf
            oarr[i].size = <uint32_t>oviews[i].len
        self._enter(b"infer")
        if self._shape_gen != gen or self._io_gen != self._shape_gen \
                or self._flow == _FLOW_ZERO_COPY or self._bound:
            # the shapes moved since the checks, or zero-copy state appeared: the
            # documented calls check again and raise what applies
            self._release()
            for k in range(nin):
                PyBuffer_Release(&iviews[k])
            for i in range(nout):
                PyBuffer_Release(&oviews[i])
            nin = nout = 0
            return _infer_three(self, inputs, out, wf)
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
    check(ret_in, b"rknn_inputs_set")
    if ret_run < 0 and self._custom is not None:
        _check_custom(ret_run, b"rknn_run", <_CustomOpSet>self._custom)
    check(ret_run, b"rknn_run")
    check(ret_out, b"rknn_outputs_get")
    check(ret_rel, b"rknn_outputs_release")
    return out
