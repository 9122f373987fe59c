# Making a Context: rknn_init from a model path, the model bytes or NPU memory holding the
# model (MODEL_BUFFER_ZERO_COPY), optionally sharing another context's weights
# (SHARE_WEIGHT_MEM); and rknn_dup_context.  Context.__init__ and Context.dup (in
# _context.pxi) are the documented wrappers.


cdef Context _weights_source(object share_weights_with, rknn_init_extend* ext):
    """The open Context whose weights a new one shares, claimed (its _weight_borrowers
    counts the new one; the caller gives the claim back if the init fails); ext.ctx is
    set to it."""
    cdef Context src
    if not isinstance(share_weights_with, Context):
        raise TypeError(f"share_weights_with must be a Context, got "
                        f"{type(share_weights_with).__name__}")
    src = share_weights_with
    # checked open and claimed in one critical section on the source (the GIL on a GIL
    # build), as its close() marks and checks: a close() that has not marked the source
    # closing yet refuses from now on; the checks below may release the GIL (a query of
    # the runtime)
    with cython.critical_section(src):
        src._check_open(b"share_weights_with")
        _atomic_add_int(&src._weight_borrowers, 1)
    try:
        if _dynamic_ranges(src):
            raise ValueError(
                "share_weights_with: the source Context holds a dynamic-shape model "
                f"({_ranges_str(_dynamic_ranges(src))}); the runtime refuses "
                "RKNN_FLAG_SHARE_WEIGHT_MEM for dynamic-shape models: load the model "
                "into its own Context instead")
    except BaseException:
        _atomic_add_int(&src._weight_borrowers, -1)
        raise
    ext.ctx = src.ctx
    return src


cdef int _pin_model_mem(TensorMem mm) except -1:
    """Claim the model's memory (its _pins) in one critical section on it, as its close()
    marks and checks."""
    with cython.critical_section(mm):
        if mm._closing:
            raise ValueError("Context(model_mem=...): the TensorMem is being closed")
        # closed by another thread since _model_mem_source copied its fields (the copy
        # would point at freed memory)
        mm._check_open("Context(model_mem=...)")
        _atomic_add_int(&mm._pins, 1)
    return 0


cdef TensorMem _model_mem_source(object model_mem, object model_offset, object model_size,
                                 rknn_init_extend* ext, void** ptr, uint32_t* size):
    """The TensorMem that holds the model (MODEL_BUFFER_ZERO_COPY): offset and size
    checked, the extend's real_model_* / model_buffer_* fields and the model pointer set."""
    cdef TensorMem mm
    cdef uint64_t off, avail, msize
    cdef rknn_tensor_mem d
    if not isinstance(model_mem, TensorMem):
        raise TypeError(f"model_mem must be a TensorMem, got {type(model_mem).__name__}")
    mm = model_mem
    mm._copy_desc(&d, "Context(model_mem=...)")      # (its fields, whole: see _copy_desc)
    off = _u32(model_offset, "model_offset")
    if off >= d.size:
        raise ValueError(f"model_offset {off} is outside the {d.size}-byte model_mem")
    avail = d.size - off
    msize = avail if model_size is None else _u32(model_size, "model_size")
    if msize == 0 or msize > avail:
        raise ValueError(f"model_size must be 1..{avail} bytes (the rest of model_mem "
                         f"after model_offset), got {msize}")
    if d.virt_addr == NULL:
        raise ValueError("model_mem has no CPU mapping (virt_addr is NULL)")
    ext.real_model_offset = <int32_t>(d.offset + off)
    ext.real_model_size = <uint32_t>msize
    ext.model_buffer_fd = d.fd
    ext.model_buffer_flags = d.flags
    ptr[0] = <char*>_mem_data(&d) + off
    size[0] = <uint32_t>msize
    return mm


cdef int _model_bytes(object model, Py_buffer* view) except -1:
    """Get the buffer of model bytes (the caller releases it)."""
    try:
        PyObject_GetBuffer(model, view, PyBUF_SIMPLE)
    except TypeError:
        raise TypeError(f"model must be a path (str/PathLike), bytes or a buffer, "
                        f"got {type(model).__name__}") from None
    except (BufferError, ValueError) as e:
        raise ValueError(f"model must be a C-contiguous buffer: {e}") from None
    if view.len == 0 or view.len > 0xFFFFFFFF:
        PyBuffer_Release(view)
        raise ValueError(f"model bytes must be 1..4294967295 bytes, got {view.len} "
                         "(an empty buffer would be read as a file path)")
    return 0


cdef int _context_init(Context self, object model, object flags, object share_weights_with,
                       object model_mem, object model_offset, object model_size) except -1:
    """Context.__init__: check the arguments, then rknn_init with the GIL released."""
    cdef Context src = None
    cdef TensorMem mm = None
    cdef rknn_init_extend ext
    cdef rknn_init_extend* pext = NULL
    cdef uint32_t cflags
    cdef void* ptr = NULL
    cdef uint32_t size = 0
    if self.ctx != 0:
        raise RuntimeError("Context is already initialized")
    cflags = _u32(flags, "flags")
    ensure_runtime()
    require(<void*>_api.rknn_init, b"rknn_init")
    memset(&ext, 0, sizeof(ext))
    if model_mem is not None and model is not None:
        raise ValueError("pass either model or model_mem, not both")
    # The weights' source and the model's memory are claimed right after their open
    # checks, in one critical section on each: a close() in another thread then sees the claim
    # and refuses, instead of freeing them while rknn_init (GIL released) reads them.  The
    # claims are given back if the init fails.
    if share_weights_with is not None:
        src = _weights_source(share_weights_with, &ext)     # claimed
        pext = &ext
        cflags |= RKNN_FLAG_SHARE_WEIGHT_MEM
    try:
        if model_mem is not None:
            mm = _model_mem_source(model_mem, model_offset, model_size, &ext, &ptr, &size)
            try:
                _pin_model_mem(mm)
            except BaseException:
                mm = None
                raise
            pext = &ext
            cflags |= RKNN_FLAG_MODEL_BUFFER_ZERO_COPY
        _context_init_call(self, model, mm is not None, cflags, pext, ptr, size)
    except BaseException:
        if src is not None:
            _atomic_add_int(&src._weight_borrowers, -1)
        if mm is not None:
            _atomic_add_int(&mm._pins, -1)
        raise
    if mm is not None:
        self._model_mem = mm
    if src is not None:
        self._weights_from = src
        # the same model: its shape sets need not be asked again (on a static model the
        # runtime answers that query with a warning line)
        self._ranges = src._ranges
    return 0


cdef int _context_init_call(Context self, object model, bint from_mem, uint32_t cflags,
                            rknn_init_extend* pext, void* ptr, uint32_t size) except -1:
    """rknn_init of a model path or bytes (or, with `from_mem`, of `ptr`/`size` already
    pointing into the model's memory), counted as a live context from before the call."""
    cdef Py_buffer view
    cdef bint have_view = False
    cdef bytes path
    cdef rknn_context h = 0
    cdef int ret
    if from_mem:
        pass
    elif model is None:
        raise TypeError("Context() needs a model: a path, the model bytes, or model_mem=")
    elif isinstance(model, (str, _os.PathLike)):
        path = _os.fsencode(model)
        if b"\0" in path or not path:
            raise ValueError(f"model path {model!r} is empty or contains NUL")
        # what the runtime would only call RKNN_ERR_MODEL_INVALID, said as Python does
        if _os.path.isdir(path):
            raise IsADirectoryError(f"model path {_os.fsdecode(path)!r} is a directory; give "
                                    "the .rknn file in it")
        if not _os.path.exists(path):
            raise FileNotFoundError(f"model file {_os.fsdecode(path)!r} does not exist")
        if _os.path.getsize(path) == 0:
            raise ValueError(f"model file {_os.fsdecode(path)!r} is empty (0 bytes): not a "
                             "model")
        ptr = <char*>path
        size = 0
    else:
        _model_bytes(model, &view)
        have_view = True
        ptr = view.buf
        size = <uint32_t>view.len
    # Counted before rknn_init runs (GIL released): a load_runtime() switch in another
    # thread then refuses, instead of leaving this context in the old library.  Under
    # the loader lock, so no switch is half-done; undone if the init fails.
    with _load_lock:
        _atomic_add_ssize(&_live_contexts, 1)
    ret = RKNN_ERR_FAIL
    try:
        if _api.rknn_init == NULL:       # the runtime was switched since the check
            require(<void*>_api.rknn_init, b"rknn_init")
        with nogil:
            ret = _api.rknn_init(&h, ptr, size, cflags, pext)
        if ret >= 0 and h != 0 and have_view and \
                file_says_static(<const unsigned char*>ptr, size):
            # the file says the model is static: its shape sets are not asked (a board
            # answers that query on a static model with an error and a W line)
            self._ranges = ()
    finally:
        if have_view:
            PyBuffer_Release(&view)
        if ret < 0 or h == 0:
            if h != 0 and _api.rknn_destroy != NULL:
                _api.rknn_destroy(h)
                h = 0
            _atomic_add_ssize(&_live_contexts, -1)
    check(ret, b"rknn_init")
    if h == 0:
        raise RKNNError("rknn_init succeeded but returned a NULL context", None, "rknn_init")
    self.ctx = h
    self.flags = cflags
    self._counted = True
    _note_chip(self)
    return 0


cdef Context _dup(Context self):
    """Context.dup: rknn_dup_context; the copy shares the model buffer / borrowed weights."""
    cdef rknn_context src, out = 0
    cdef int ret
    cdef Context c = Context.__new__(Context)
    self._check_open(b"dup")
    require(<void*>_api.rknn_dup_context, b"rknn_dup_context")
    self._require_chip(b"rknn_dup_context")
    if _dynamic_ranges(self):
        raise ValueError(
            "dup: the model has dynamic input shapes "
            f"({_ranges_str(_dynamic_ranges(self))}); the runtime refuses "
            "rknn_dup_context for dynamic-shape models: create another Context from "
            "the model instead")
    self._enter(b"dup")
    src = self.ctx
    with nogil:
        ret = _api.rknn_dup_context(&src, &out)
    self._release()
    check(ret, b"rknn_dup_context")
    if out == 0:
        raise RKNNError("rknn_dup_context succeeded but returned a NULL context", None,
                        "rknn_dup_context")
    c.ctx = out
    c.flags = self.flags
    c._counted = True
    c._chip = self._chip
    c._no_general = self._no_general
    c._ranges = self._ranges
    _atomic_add_ssize(&_live_contexts, 1)
    # the duplicate reads the same model buffer / borrowed weights
    if self._model_mem is not None:
        c._model_mem = self._model_mem
        _atomic_add_int(&self._model_mem._pins, 1)
    if self._weights_from is not None:
        c._weights_from = self._weights_from
        _atomic_add_int(&self._weights_from._weight_borrowers, 1)
    return c
