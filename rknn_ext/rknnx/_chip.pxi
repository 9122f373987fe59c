# The chip a Context runs on and the NPU cores it uses: the bodies of Context._note_chip
# (called once per new context, by _context_init.pxi), Context.set_core_mask and
# Context.set_batch_core_num (their documented wrappers are in _context.pxi).  Which chip
# has which function is rknnx.platforms' table; Context._require_chip refuses, before C,
# a call the chip lacks.


cdef int _note_chip(Context self) except -1:
    """Look the chip of the new context up once (the emulator's personality, else the
    board's device tree) and note whether it has the general flow."""
    cdef rknn_sdk_version sv
    self._chip = _chip_of(self.ctx)
    self._no_general = (self._chip is not None
                        and not _platforms.supports(self._chip, "rknn_inputs_set"))
    if _runtime_version is None and _api.rknn_query != NULL:
        # the runtime's version, for messages about what it lacks (no lock needed: the
        # context is not shared yet)
        memset(&sv, 0, sizeof(sv))
        if _api.rknn_query(self.ctx, RKNN_QUERY_SDK_VERSION, &sv, sizeof(sv)) >= 0:
            _set_runtime_version(_cstr(sv.api_version, sizeof(sv.api_version))
                                 .split(" ")[0] or None)
    return 0


cdef int _set_core_mask(Context self, object mask) except -1:
    """Context.set_core_mask: the mask checked, then rknn_set_core_mask under the lock."""
    cdef long long v
    cdef int ret
    try:
        v = mask
    except (TypeError, OverflowError):
        raise TypeError(f"mask must be a CoreMask or int, got {mask!r}") from None
    if not 0 <= v <= RKNN_NPU_CORE_UNDEFINED:
        raise ValueError(f"mask 0x{v:x} is not a core mask; expected a CoreMask "
                         f"(0..0x{RKNN_NPU_CORE_UNDEFINED:x})")
    self._check_open(b"set_core_mask")
    require(<void*>_api.rknn_set_core_mask, b"rknn_set_core_mask")
    self._require_chip(b"rknn_set_core_mask")
    self._enter(b"set_core_mask")
    ret = _api.rknn_set_core_mask(self.ctx, <rknn_core_mask>v)
    self._release()
    check(ret, b"rknn_set_core_mask")
    return 0


cdef int _set_batch_core_num(Context self, object core_num) except -1:
    """Context.set_batch_core_num: the number checked, then rknn_set_batch_core_num under
    the lock."""
    cdef long long v
    cdef int ret
    try:
        v = core_num
    except (TypeError, OverflowError):
        raise TypeError(f"core_num must be an int, got {core_num!r}") from None
    if not 1 <= v <= 0x7FFFFFFF:
        raise ValueError(f"core_num must be a positive number of cores, got {v}")
    self._check_open(b"set_batch_core_num")
    require(<void*>_api.rknn_set_batch_core_num, b"rknn_set_batch_core_num")
    self._require_chip(b"rknn_set_batch_core_num")
    self._enter(b"set_batch_core_num")
    ret = _api.rknn_set_batch_core_num(self.ctx, <int>v)
    self._release()
    check(ret, b"rknn_set_batch_core_num")
    return 0
