# Context: one rknn_context -- creation, close, the model description and queries,
# configuration, run/wait, dynamic shapes, the chip -- and the documented methods of every
# call on it.  The long bodies live beside their subject: _inputs.pxi (inputs_set),
# _io.pxi (outputs_get, set_io_mem, set_weight_mem, set_internal_mem), _mem_create.pxi
# (create_mem*), _custom.pxi (register_custom_ops), _chip.pxi (the chip, set_core_mask,
# set_batch_core_num), _query.pxi (attributes, query(), dynamic shapes); the lock, the
# re-entry rule and the close sequence Context shares with MatmulContext are in
# _base.pxi; the argument and shape helpers the checks share are in _attr.pxi.

import os as _os
import stat as _stat
import warnings as _warnings

cdef object _warn = _warnings.warn            # bound at import: usable at interpreter teardown

cdef enum:
    _FLOW_NONE = 0
    _FLOW_GENERAL = 1
    _FLOW_ZERO_COPY = 2

_FLOW_NAMES = ("none", "general", "zero-copy")


cdef object _ZERO = 0                        # the default timeout_ms (small ints are one object)


cdef uint32_t _timeout(object v) except? 0xFFFFFFFF:
    cdef object i = _py_int(v, "timeout_ms")
    if not 0 <= i <= 0xFFFFFFFF:
        raise ValueError(f"timeout_ms must be 0..4294967295 (milliseconds), got {i}")
    return i


@cython.no_gc_clear
@cython.auto_pickle(False)
cdef class Context(_ContextBase):
    """An RKNN context: one loaded model (``rknn_context``) and every call on it.

    Parameters
    ----------
    model : str, os.PathLike, bytes or buffer
        A model file path, or the model bytes (any C-contiguous buffer).  May be None
        when ``model_mem`` holds the model.
    flags : InitFlag or int, default 0
        ``RKNN_FLAG_*`` values OR-ed together (``InitFlag.ASYNC_MASK`` ...).
    share_weights_with : Context, optional
        Use the weights of that (open) context: ``rknn_init_extend.ctx``, and
        ``RKNN_FLAG_SHARE_WEIGHT_MEM`` is added to ``flags``.  That context cannot be
        closed while this one is open.
    model_mem : TensorMem, optional
        The model lives in this NPU memory and is used in place
        (``RKNN_FLAG_MODEL_BUFFER_ZERO_COPY`` is added; the extend's
        ``real_model_offset``/``real_model_size``/``model_buffer_fd``/
        ``model_buffer_flags`` come from the mem).  It cannot be closed while this
        context is open.
    model_offset : int, default 0
        Offset of the model inside ``model_mem``'s data.
    model_size : int, optional
        Bytes of the model inside ``model_mem``; default the rest of the mem.

    Raises
    ------
    RuntimeNotFoundError
        If no RKNN runtime can be loaded.
    ValueError, TypeError
        For bad arguments (empty model bytes, closed contexts or mems ...).
    RKNNError
        The subclass of the status ``rknn_init`` returned (``ModelInvalidError``,
        ``TargetPlatformUnmatchError`` ...).

    Notes
    -----
    The GIL is released during ``rknn_init``, ``rknn_run``, ``rknn_wait``,
    ``rknn_inputs_set``, ``rknn_outputs_get``, ``rknn_mem_sync``, the ``create_mem*``
    calls, ``rknn_dup_context``, ``rknn_set_input_shapes`` and ``rknn_destroy``.  A
    per-context lock serializes calls on one context (so several threads may share
    one); calls on different contexts run in parallel.

    After ``os.fork()`` a Context belongs to the process that created it: in the child
    every call on it raises RuntimeError ("created in process N; create it after fork"),
    as the runtime's threads, locks and state do not survive fork; the parent is not
    affected.  Create contexts after forking (or use the ``spawn`` start method).

    Examples
    --------
    >>> with Context("model.rknn") as ctx:
    ...     ctx.inputs_set([image])
    ...     ctx.run()
    ...     with ctx.outputs_get(want_float=True) as outs:
    ...         scores = np.asarray(outs[0]).copy()

    .. versionadded:: 0.1.0
    """

    def __cinit__(self, *args, **kwargs):
        self._flow = _FLOW_NONE
        self._flow_set_by = NULL
        self._groups = NULL
        self._in_attrs = None
        self._out_attrs = None
        self._specs = None
        self._io_dims = {}

    def __init__(self, model=None, flags=0, *, share_weights_with=None, model_mem=None,
                 model_offset=0, model_size=None):
        _context_init(self, model, flags, share_weights_with, model_mem, model_offset,
                      model_size)

    def __dealloc__(self):
        # Only frees (docs/architecture.md, Lifetime): no mem, output group or borrower is alive (each holds
        # a reference to us), so nothing else can use the handle.
        if self._custom is not None:
            # no Python code from a destructor: destroy callbacks return at once
            (<_CustomOpSet>self._custom)._kill()
        if self.ctx != 0:
            # in a fork child the handle is the parent's: never call the runtime with it
            if _api.rknn_destroy != NULL and self._pid == _this_pid:
                _api.rknn_destroy(self.ctx)
            self.ctx = 0
        if self._counted:
            self._counted = False
            _atomic_add_ssize(&_live_contexts, -1)
            if self._model_mem is not None:
                _atomic_add_int(&self._model_mem._pins, -1)
            if self._weights_from is not None:
                _atomic_add_int(&self._weights_from._weight_borrowers, -1)

    cdef int _flow_error(self, int flow, const char* fn) except -1:
        """Raise FlowError for a call of `flow` on a context in the other flow."""
        want = _FLOW_NAMES[flow]
        # (called with or without the lock: each word loaded whole; a flow seen before
        # the call that chose it says "an earlier call")
        cdef const char* set_by = _relaxed_load_cstr(&self._flow_set_by)
        have = _FLOW_NAMES[_relaxed_load_int(&self._flow)]
        by = set_by.decode() if set_by != NULL else "an earlier call"
        raise FlowError(
            f"{fn.decode()} belongs to the {want} flow, but this Context is in the {have} "
            f"flow since {by}; the general API (inputs_set/outputs_get) and the zero-copy "
            f"API (set_io_mem) cannot be mixed on one context (RKNN API section 3.5). "
            f"Use another Context for the other flow (dup() shares the weights).",
            None, fn.decode())

    # -- lifetime ---------------------------------------------------------------------------
    def close(self):
        """Destroy the context (``rknn_destroy``); a second call does nothing.

        Mems created by this context that are still open are closed first, each with a
        ``ResourceWarning``; unreleased outputs are released; bindings are dropped.

        Raises
        ------
        BufferError
            While buffer views of its mems or outputs exist (nothing is closed then), or
            while one of its mems is the model buffer of another open context.
        RuntimeError
            While other open contexts share its weights (``share_weights_with``).
        RKNNError
            If ``rknn_destroy`` fails; the context then stays open (its mems are closed
            already) and ``close()`` may be retried.

        .. versionadded:: 0.1.0
        """
        self._close("Context", "a TensorMem or outputs were")

    # the parts of the close sequence (_ContextBase._close) that are Context's own
    cdef int _close_check(self) except -1:
        cdef int borrowers = _atomic_load_int(&self._weight_borrowers)
        if borrowers > 0:
            raise RuntimeError(f"Context lends its weights to {borrowers} open "
                               "Context(s) (share_weights_with); close them first")
        return 0

    cdef list _open_groups(self):
        cdef _OutputGroup g
        cdef PyObject* p
        groups = []
        with cython.critical_section(self):  # the list's rule (_OutputGroup._unlink)
            p = self._groups
            while p != NULL:
                g = <_OutputGroup>p
                if _relaxed_load_outs(&g.outs) != NULL:   # (freed in the group's section)
                    groups.append(g)
                p = g._next                  # read after append: a collection may unlink
        return groups

    cdef Py_ssize_t _callback_views(self) noexcept:
        return _atomic_load_ssize(&self._cb_views)

    cdef bint _children_open(self) noexcept:
        return _open_children(self._mems) or self._groups_open()

    cdef int _destroy_handle(self) noexcept:
        cdef int ret = 0
        cdef rknn_context h = self.ctx
        if _api.rknn_destroy != NULL:
            with nogil:
                ret = _api.rknn_destroy(h)
        return ret

    cdef object _after_close(self):
        if self._counted:
            self._counted = False
            _atomic_add_ssize(&_live_contexts, -1)
            if self._model_mem is not None:
                _atomic_add_int(&self._model_mem._pins, -1)
            if self._weights_from is not None:
                _atomic_add_int(&self._weights_from._weight_borrowers, -1)
        slots, self._slots, self._bound = self._slots, {}, []
        self._io_dims = {}
        model_mem, self._model_mem = self._model_mem, None
        weights_from, self._weights_from = self._weights_from, None
        custom, self._custom = self._custom, None
        destroy_error = None
        if custom is not None:
            # the destroy callbacks ran inside rknn_destroy: the C records may go now
            destroy_error = (<_CustomOpSet>custom)._take_error()
            (<_CustomOpSet>custom)._free_c()
        del slots, model_mem, weights_from, custom
        # _in_attrs/_out_attrs (and _specs) are kept: a call of another thread may have
        # passed its open check before the close and be reading them now, without the
        # GIL on a free-threaded CPython; it meets the close at its lock, which every
        # call takes before C sees anything, and says "... on closed Context" there.
        # Cleared here, that reader met None (a TypeError where the closed error was
        # due), or a tuple freed under it.  They go with the Context.
        return destroy_error

    def __enter__(self):
        self._check_open(b"__enter__")
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def flow(self):
        """``"none"``, ``"general"`` or ``"zero-copy"``: the flow the first I/O call chose."""
        return _FLOW_NAMES[_relaxed_load_int(&self._flow)]

    def __repr__(self):
        cdef rknn_context h = _relaxed_load_ctx(&self.ctx)
        if h == 0:
            return "<Context closed>"
        return (f"<Context handle=0x{h:x} flags=0x{self.flags:x} "
                f"flow={_FLOW_NAMES[_relaxed_load_int(&self._flow)]}>")

    # -- model description -------------------------------------------------------------------
    cdef int _query_into(self, rknn_query_cmd cmd, void* info, uint32_t size) except -1:
        cdef int ret
        self._check_open(b"query")
        require(<void*>_api.rknn_query, b"rknn_query")
        self._enter(b"query")
        ret = _api.rknn_query(self.ctx, cmd, info, size)
        self._release()
        check(ret, b"rknn_query")
        return 0

    @property
    def n_input(self):
        """Number of model inputs."""
        self._check_open(b"n_input")
        _load_attrs(self)
        return len(self._in_attrs)

    @property
    def n_output(self):
        """Number of model outputs."""
        self._check_open(b"n_output")
        _load_attrs(self)
        return len(self._out_attrs)

    @property
    def input_attrs(self):
        """The input attributes (``INPUT_ATTR``, or ``CURRENT_INPUT_ATTR`` after
        :meth:`set_input_shapes`), as a tuple of copies."""
        self._check_open(b"input_attrs")
        try:
            _load_attrs(self)
        except ValueError:
            # the first query met a close of another thread (no GIL since the check):
            # this property's words, not the query's
            self._check_open(b"input_attrs")
            raise
        return tuple([(<TensorAttr>a).copy() for a in self._in_attrs])

    @property
    def output_attrs(self):
        """The output attributes, as a tuple of copies (see :attr:`input_attrs`)."""
        self._check_open(b"output_attrs")
        try:
            _load_attrs(self)
        except ValueError:
            # the first query met a close of another thread (no GIL since the check):
            # this property's words, not the query's
            self._check_open(b"output_attrs")
            raise
        return tuple([(<TensorAttr>a).copy() for a in self._out_attrs])

    def query(self, cmd, index=0):
        """Ask the runtime about the model or the last run (``rknn_query``).

        Parameters
        ----------
        cmd : QueryCmd or int
            The command.
        index : int, default 0
            Tensor index, for the ``*_ATTR`` commands and ``INPUT_DYNAMIC_RANGE``.

        Returns
        -------
        InOutNum, TensorAttr, PerfDetail, PerfRun, SdkVersion, MemSize, str, DeviceMemInfo or InputRange
            ``IN_OUT_NUM`` -> :class:`InOutNum`; every ``*_ATTR`` command ->
            :class:`TensorAttr`; ``PERF_DETAIL`` -> :class:`PerfDetail`; ``PERF_RUN`` ->
            :class:`PerfRun`; ``SDK_VERSION`` -> :class:`SdkVersion`; ``MEM_SIZE`` ->
            :class:`MemSize`; ``CUSTOM_STRING`` -> str; ``DEVICE_MEM_INFO`` ->
            :class:`DeviceMemInfo`; ``INPUT_DYNAMIC_RANGE`` -> :class:`InputRange`.

        Raises
        ------
        ValueError
            For an unknown command or a closed context.
        IndexError
            For a tensor index the model does not have.
        RKNNError
            The subclass of the status ``rknn_query`` returned (a query the platform
            does not support, perf queries before a run ...).

        .. versionadded:: 0.1.0
        """
        return _query(self, cmd, index)

    cdef int _check_index(self, long long idx, bint output) except -1:
        cdef Py_ssize_t n
        if self._in_attrs is None:
            try:
                _load_attrs(self)
            except RKNNError:
                # e.g. COLLECT_MODEL_INFO_ONLY contexts: let the runtime judge the index
                return 0
        n = len(self._out_attrs) if output else len(self._in_attrs)
        if not 0 <= idx < n:
            kind = "output" if output else "input"
            raise IndexError(f"{kind} index {idx} out of range: the model has {n} {kind}(s)"
                             + (f", indices 0..{n - 1}" if n else ""))
        return 0

    # -- configuration ---------------------------------------------------------------------
    def set_core_mask(self, mask):
        """Choose the NPU cores the context runs on (``rknn_set_core_mask``).

        Parameters
        ----------
        mask : CoreMask or int
            ``AUTO``, ``CORE_0``, ``CORE_0_1``, ``ALL`` ... (multi-core chips only).

        Raises
        ------
        ValueError
            For a value outside the mask range or a closed context.
        RKNNError
            The subclass of the status (single-core chips refuse).

        .. versionadded:: 0.1.0
        """
        _set_core_mask(self, mask)

    def set_batch_core_num(self, core_num):
        """Split multi-batch runs over ``core_num`` cores (``rknn_set_batch_core_num``).

        Raises
        ------
        ValueError
            If ``core_num`` is not a positive int, or the context is closed.
        RKNNError
            The subclass of the status (single-core chips refuse).

        .. versionadded:: 0.1.0
        """
        _set_batch_core_num(self, core_num)

    def dup(self):
        """A second context on the same model, sharing its weights (``rknn_dup_context``).

        Returns
        -------
        Context
            Independent of this one (its own flow, bindings and lock).

        Raises
        ------
        ValueError
            If the context is closed.
        RKNNError
            The subclass of the status (RV1106-family chips refuse).

        .. versionadded:: 0.1.0
        """
        return _dup(self)

    def set_input_shape(self, TensorAttr attr not None):
        """Choose the shape of one input of a dynamic-shape model (``rknn_set_input_shape``).

        The single-input form of :meth:`set_input_shapes`, kept for code ported from
        older runtimes.

        Parameters
        ----------
        attr : TensorAttr
            The input (``index``, ``name``, ``fmt``, ``dims`` set; the dims one of the
            shapes of :class:`InputRange` for that input).

        Raises
        ------
        ValueError, IndexError
            Closed context, an index the model does not have.
        NotSupportedError
            If the loaded runtime lacks ``rknn_set_input_shape``.
        RKNNError
            The subclass of the status (a shape the model does not list ...).

        Notes
        -----
        The vendor marks ``rknn_set_input_shape`` deprecated in favour of
        ``rknn_set_input_shapes``, which sets every input at once; prefer
        :meth:`set_input_shapes` in new code.  No warning is issued.  As with
        :meth:`set_input_shapes`, :attr:`input_attrs`/:attr:`output_attrs` then follow
        the current shape, :meth:`set_io_mem` bindings must be redone and
        :meth:`outputs_get` needs a :meth:`run` at the new shape first.

        .. versionadded:: 0.1.0
        """
        _set_input_shape(self, attr)

    def set_input_shapes(self, attrs):
        """Choose the input shapes of a dynamic-shape model (``rknn_set_input_shapes``).

        Parameters
        ----------
        attrs : sequence of TensorAttr
            One per input (``index``, ``name``, ``fmt``, ``dims`` set; the dims one of the
            shapes of :class:`InputRange`).

        Raises
        ------
        ValueError, TypeError, IndexError
            Wrong count, type, duplicate or out-of-range indices, closed context.
        RKNNError
            The subclass of the status (a shape the model does not list ...).

        Notes
        -----
        :attr:`input_attrs`/:attr:`output_attrs` follow (``CURRENT_*`` queries).
        Bindings made with :meth:`set_io_mem` must be redone with the current attributes:
        :meth:`run` raises ValueError for one made for other dims.  :meth:`outputs_get`
        raises ValueError until :meth:`run` ran at the new shapes, and an
        :meth:`inputs_set` or :meth:`set_io_mem` whose checks a concurrent shape change
        overtook checks again or raises ValueError (never passes buffers of the old
        shapes to the runtime).

        .. versionadded:: 0.1.0
        """
        _set_input_shapes(self, attrs)

    # -- custom operators --------------------------------------------------------------------
    def register_custom_ops(self, ops):
        """Register custom operators implemented in Python (``rknn_register_custom_ops``).

        Parameters
        ----------
        ops : sequence of CustomOp
            CPU ops, each of an op type not registered yet.  Each op is registered with
            its own ``rknn_register_custom_ops`` call (see Notes); its ``init`` runs now,
            once per node of that type in the model.

        Raises
        ------
        TypeError, ValueError
            Not CustomOp objects, an empty or repeated op type, a closed context.
        NotSupportedError
            For a GPU op (OpenCL kernels cannot be written in Python), or a runtime
            lacking the function.
        RuntimeError
            Called from a callback of this context.
        Exception
            Whatever an ``init`` callback raised, chained from the :class:`RKNNError` of
            the failed registration.
        RKNNError
            The subclass of the status the runtime returned.

        Notes
        -----
        The callbacks carry no user pointer, so the binding tells ops apart by
        registering them one per call (the op being registered is the one whose ``init``
        runs).  If a later op of ``ops`` fails, the earlier ones stay registered.  The ops
        and their C structures live until the context is closed (the runtime keeps the
        pointers); ``destroy`` callbacks run in :meth:`close`.

        Examples
        --------
        >>> def sigmoid(op_ctx, inputs, outputs):
        ...     np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])
        >>> ctx.register_custom_ops([CustomOp("cstSigmoid", compute=sigmoid)])

        .. versionadded:: 0.1.0
        """
        _register_custom_ops(self, ops)

    @property
    def custom_ops(self):
        """The :class:`CustomOp` objects registered on this context."""
        return [] if self._custom is None else list((<_CustomOpSet>self._custom).ops)

    # -- general flow ------------------------------------------------------------------------
    cdef bint _groups_open(self) noexcept:
        """Whether an output group of ours still holds runtime buffers (allocates nothing)."""
        cdef PyObject* p
        with cython.critical_section(self):  # the list's rule (_OutputGroup._unlink)
            p = self._groups
            while p != NULL:
                if _relaxed_load_outs(&(<_OutputGroup>p).outs) != NULL:
                    return True
                p = (<_OutputGroup>p)._next
        return False

    def inputs_set(self, inputs):
        """Hand input data to the runtime, which converts it (``rknn_inputs_set``).

        Parameters
        ----------
        inputs : sequence of (buffer or Input), or one buffer/Input
            For a plain buffer (a numpy array ...) the index is its position, the type
            comes from its dtype and the layout is the model input's.  Use
            :class:`Input` for another index, type, layout or ``pass_through``.

        Raises
        ------
        IndexError
            For an input index the model does not have.
        ValueError
            Repeated index, wrong size or shape, non-contiguous buffer, a type the
            runtime cannot convert from, a closed context, input shapes changed by
            :meth:`set_input_shapes` (on another thread) after the buffers were checked.
        TypeError
            If a buffer's element type has no RKNN tensor type.
        FlowError
            If the context is in the zero-copy flow (``set_io_mem`` was called).
        RKNNError
            The subclass of the status ``rknn_inputs_set`` returned.

        Notes
        -----
        The buffers are held (``Py_buffer``) during the call, with the GIL released.

        .. versionadded:: 0.1.0
        """
        _inputs_set(self, inputs)

    # a method descriptor, not a cyfunction: called through CPython's vectorcall of a
    # builtin method, about 120 instructions a call less (docs/benchmarks.md, "Where the
    # nanoseconds go"); ZeroCopySession.run is this bound method.  Its signature is in
    # the clinic form (__text_signature__), which inspect.signature reads
    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def run(self, *, non_block=False, timeout_ms=0):
        """Run the model once (``rknn_run``), with the GIL released.

        Parameters
        ----------
        non_block : bool, default False
            Return before the NPU is done (documented as unimplemented by the vendor).
        timeout_ms : int, default 0
            Wait limit for ``non_block``.

        Returns
        -------
        int
            ``rknn_run_extend.frame_id`` of the frame run.

        Raises
        ------
        ValueError
            If the context is closed, a mem bound with ``set_*_mem`` was closed, or a
            :meth:`set_io_mem` binding was made for other dims than the current ones
            (after :meth:`set_input_shapes`: bind again with the current attributes).
        RKNNError
            The subclass of the status ``rknn_run`` returned.

        Notes
        -----
        The bindings are compared with the current attributes once per shape change;
        the usual call costs no check.

        .. versionadded:: 0.1.0
        """
        cdef rknn_run_extend ext
        cdef int ret
        memset(&ext, 0, sizeof(ext))
        if non_block:
            ext.non_block = 1
        if timeout_ms is not _ZERO and timeout_ms:     # (the default costs no truth test)
            ext.timeout_ms = _timeout(timeout_ms)
        self._check_open(b"run")
        require(<void*>_api.rknn_run, b"rknn_run")
        _enter_run(self, b"run")            # closed, closed bound mems, bound dims
        with nogil:
            ret = _api.rknn_run(self.ctx, &ext)
        if ret >= 0:
            self._run_gen = self._shape_gen
        self._release()
        if ret < 0 and self._custom is not None:
            _check_custom(ret, b"rknn_run", <_CustomOpSet>self._custom)
        check(ret, b"rknn_run")
        return ext.frame_id

    cdef bint _bindings_current(self) noexcept:
        """_enter_run's look under the lock: the set_io_mem bindings were compared with
        the current dims since the last shape change."""
        return self._io_gen == self._shape_gen

    cdef int _check_bindings(self) except -1:
        """_enter_run's check without the lock, after a shape change: the set_io_mem
        bindings against the current attributes (_check_io_dims)."""
        return _check_io_dims(self)

    # -- the chip -----------------------------------------------------------------------------
    cdef int _require_chip(self, const char* fn) except -1:
        """NotSupportedError (before C) for a function the context's chip lacks."""
        if self._chip is not None:
            _refuse_unsupported(self._chip, fn.decode())
        return 0

    @property
    def chip(self):
        """The chip the context runs on (``"RK3588"`` ...; the emulator's personality), or
        None when the runtime does not say and no device tree names it."""
        return self._chip

    @property
    def is_dynamic(self):
        """True for a dynamic-shape model (``INPUT_DYNAMIC_RANGE`` lists more than one
        shape set for an input)."""
        self._check_open(b"is_dynamic")
        return bool(_dynamic_ranges(self))

    @property
    def input_ranges(self):
        """The shape sets of a dynamic-shape model: one :class:`InputRange` per input
        (``RKNN_QUERY_INPUT_DYNAMIC_RANGE``), or ``()`` for a static model.  Asked once per
        model: boards refuse the query on a static model (status -6 and a warning line of
        the runtime's), which means static here; contexts made by :meth:`dup` or with
        ``share_weights_with`` take the answer of their source."""
        self._check_open(b"input_ranges")
        return _dynamic_ranges(self)

    def wait(self, *, timeout_ms=0):
        """Wait for a non-blocking run (``rknn_wait``), with the GIL released.

        Returns
        -------
        int
            The frame id.

        Raises
        ------
        ValueError
            If the context is closed.
        RKNNError
            The subclass of the status (every V2.5.0 platform reports it unsupported).

        .. versionadded:: 0.1.0
        """
        cdef rknn_run_extend ext
        cdef int ret
        memset(&ext, 0, sizeof(ext))
        ext.timeout_ms = _timeout(timeout_ms)
        self._check_open(b"wait")
        require(<void*>_api.rknn_wait, b"rknn_wait")
        self._require_chip(b"rknn_wait")
        self._enter(b"wait")
        with nogil:
            ret = _api.rknn_wait(self.ctx, &ext)
        self._release()
        check(ret, b"rknn_wait")
        return ext.frame_id

    def infer(self, inputs, out, *, want_float=True, fast_only=False):
        """The general flow in one call: :meth:`inputs_set` of `inputs`, :meth:`run`,
        :meth:`outputs_get` into `out`, with one lock hold and the GIL released once.

        Parameters
        ----------
        inputs : sequence of buffers
            One per input, at its position (as :meth:`inputs_set` takes them).
        out : list or tuple of writable buffers
            One per output, as ``outputs_get(out=...)`` takes them.
        want_float : bool, default True
            float32 outputs (else the model's own type).
        fast_only : bool, default False
            Run only inputs the C checks take as they are: one C-contiguous
            ``numpy.ndarray`` (not a subclass) per input, at its position, of its exact
            shape (leading ones included) and a type the runtime takes, with `out`
            arrays (the same kind) that pass, each of its output attribute's exact dims
            and sharing no memory with another; for anything else (or a closed context)
            return None having called nothing, so that a caller's own path decides (and
            words the error).  What the runtime or a custom operator raises still raises.

        Returns
        -------
        list
            A new list of the arrays written: the items of `out` as taken before the
            run (None: ``fast_only`` and not run).

        Raises
        ------
        ValueError, TypeError, RKNNError
            What the three calls raise.

        Notes
        -----
        Plain C-contiguous buffers are checked in C as :meth:`inputs_set`'s fast path
        checks them; anything else (:class:`Input` objects, another layout or type) as its
        general path does, with the same messages.  Either way the three C calls run under
        one hold of the context's lock: no call of another thread comes between them.
        Every rule of the three calls holds (the flows are not mixed, a dynamic model runs
        at a chosen shape set, a closed bound mem is refused).

        .. versionadded:: 0.1.0
        """
        return _infer(self, inputs, out, bool(want_float), bool(fast_only))

    # Model.run's fast path (rknnx.model): infer(inputs, out, want_float=want_float,
    # fast_only=True) with its arguments by position to a method descriptor (as run is):
    # no keywords parsed and no cyfunction in between (docs/benchmarks.md, "Where the
    # nanoseconds go").  Internal: the documented call is infer.
    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def _infer_fast(self, inputs, out, bint want_float, /):
        """infer(inputs, out, want_float=want_float, fast_only=True) (internal)."""
        return _infer(self, inputs, out, want_float, True)

    def outputs_get(self, want_float=False, out=None):
        """Fetch the outputs of the last run (``rknn_outputs_get``), GIL released.

        Parameters
        ----------
        want_float : bool, default False
            True: float32, dequantized, NCHW.  False: the model's type.
        out : list or tuple of writable buffers, optional
            One per output (a single array is refused, even for one output),
            C-contiguous, of the right dtype and exactly the output's size: the runtime
            writes into them (``is_prealloc = 1``) and they are returned.  Without it,
            the runtime allocates the buffers (``is_prealloc = 0``).

        Returns
        -------
        Outputs or list
            Without ``out``: an :class:`Outputs` viewing the runtime's buffers (release
            it, or let it and its views go).  With ``out``: the list of ``out`` buffers
            (the call is paired with ``rknn_outputs_release`` already).
            Either way :attr:`last_frame_id` then holds the frame id the runtime reported
            for them (``rknn_output_extend.frame_id``; in async mode the previous run's).

        Raises
        ------
        ValueError, TypeError
            Wrong number, dtype, size or shape of ``out`` buffers, read-only or
            non-contiguous buffers, a closed context; input shapes changed by
            :meth:`set_input_shapes` since the last successful :meth:`run` (the runtime
            would return that run's outputs; run again first), also in async mode.
        FlowError
            If the context is in the zero-copy flow.
        RKNNError
            The subclass of the status ``rknn_outputs_get`` returned.

        .. versionadded:: 0.1.0
        """
        return _outputs_get(self, want_float, out)

    def outputs_release(self, outputs):
        """Give the buffers of an :meth:`outputs_get` result back (``rknn_outputs_release``).

        Same as ``outputs.release()``; idempotent.

        Raises
        ------
        BufferError
            While views of the outputs exist.
        TypeError
            If ``outputs`` is not an :class:`Outputs` of this context.

        .. versionadded:: 0.1.0
        """
        if not isinstance(outputs, Outputs):
            raise TypeError(f"outputs_release takes the Outputs returned by outputs_get, got "
                            f"{type(outputs).__name__}")
        if (<Outputs>outputs)._group.context is not self:
            raise ValueError("these Outputs belong to another Context")
        (<Outputs>outputs)._group._release_c()

    # -- zero-copy flow ----------------------------------------------------------------------
    def set_io_mem(self, TensorMem mem not None, TensorAttr attr not None):
        """Bind NPU memory to an input or output (``rknn_set_io_mem``).

        The tensor is the one ``attr.name`` names (else the one ``attr.index`` names,
        when unambiguous); ``attr.type``/``fmt``/``pass_through`` say what the memory
        holds (the runtime converts).  The mem is then bound to ``attr``
        (:meth:`TensorMem.bind`), so ``np.asarray(mem)`` is the tensor, and the context
        keeps a reference to it until rebound or closed.

        Raises
        ------
        ValueError
            Closed context or mem, an attr naming no tensor, a mem smaller than the
            tensor's extent (``w_stride``/``h_stride`` padding included), pass_through
            with a type other than the model's, input shapes changed concurrently.
        FlowError
            If the context is in the general flow.
        RKNNError
            The subclass of the status ``rknn_set_io_mem`` returned.

        Notes
        -----
        The binding is for the tensor's current dims.  After :meth:`set_input_shapes`
        bind again with the new attributes (the vendor rebinds after each shape switch):
        :meth:`run` raises ValueError for a binding whose dims are no longer the
        model's.

        .. versionadded:: 0.1.0
        """
        _set_io_mem(self, mem, attr)

    def set_weight_mem(self, TensorMem mem not None):
        """Give the context the memory for its weights (``rknn_set_weight_mem``).

        For contexts created with ``RKNN_FLAG_MEM_ALLOC_OUTSIDE``; the size comes from
        ``query(QueryCmd.MEM_SIZE).total_weight_size``.  The context keeps a reference
        to the mem until rebound or closed.

        Raises
        ------
        ValueError
            Closed context or mem, or a mem smaller than the weights.
        RKNNError
            The subclass of the status ``rknn_set_weight_mem`` returned.

        .. versionadded:: 0.1.0
        """
        _set_whole_mem(self, mem, b"set_weight_mem", True)

    def set_internal_mem(self, TensorMem mem not None):
        """Give the context the memory for its internal tensors (``rknn_set_internal_mem``).

        Several contexts that run one after another may share one buffer.  The size comes
        from ``query(QueryCmd.MEM_SIZE).total_internal_size``.  The context keeps a
        reference to the mem until rebound or closed.

        Raises
        ------
        ValueError
            Closed context or mem, or a mem smaller than the internal size.
        RKNNError
            The subclass of the status ``rknn_set_internal_mem`` returned.

        .. versionadded:: 0.1.0
        """
        _set_whole_mem(self, mem, b"set_internal_mem", False)

    # -- memory ------------------------------------------------------------------------------
    def create_mem(self, size):
        """Allocate cacheable NPU memory (``rknn_create_mem``), with the GIL released.

        Parameters
        ----------
        size : int
            Bytes (1 .. 2**32 - 1), e.g. ``attr.size_with_stride``.

        Returns
        -------
        TensorMem
            Owned: ``close()`` destroys it; the context closes it if it is left open.

        Raises
        ------
        ValueError
            Bad size or closed context.
        RKNNError
            If the runtime returns NULL.

        .. versionadded:: 0.1.0
        """
        return _create_mem(self, size)

    def create_mem2(self, size, flags=0):
        """Allocate NPU memory with allocation flags (``rknn_create_mem2``), GIL released.

        Parameters
        ----------
        size : int
            Bytes (1 .. 2**32 - 1).
        flags : MemAllocFlag or int, default 0
            ``CACHEABLE`` (= 0, the default), ``NON_CACHEABLE``, ``TRY_ALLOC_SRAM``,
            ``ALLOC_NO_CONTEXT`` (the mem then belongs to no context).

        Returns
        -------
        TensorMem

        Raises
        ------
        ValueError
            Bad size or flags, closed context.
        RKNNError
            If the runtime returns NULL.

        .. versionadded:: 0.1.0
        """
        return _create_mem2(self, size, flags)

    def create_mem_from_fd(self, fd, size, offset=0, virt_addr=None, *, owner=None):
        """Wrap memory behind a file descriptor (``rknn_create_mem_from_fd``).

        Parameters
        ----------
        fd : int or object with ``fileno()``
            A dma-buf, memfd or other mmap-able fd.
        size : int
            Bytes of data.
        offset : int, default 0
            Where the data starts in the fd.
        virt_addr : None, int or writable buffer, optional
            The CPU mapping of the fd (from its start): None lets the runtime map it; an
            int is an address; a buffer (e.g. an ``mmap``) is pinned while the mem lives.
            An int is an unchecked escape hatch: nothing verifies that it is mapped, large
            enough or kept alive, and views of the mem read and write there.
        owner : object, optional
            Kept referenced while the mem lives (default: ``fd`` itself when it is an
            object), so the fd stays open.

        Returns
        -------
        TensorMem
            ``close()`` releases the descriptor only; the fd and its memory are the
            caller's.

        Raises
        ------
        ValueError, TypeError
            Bad fd (not open), size, offset or virt_addr; ``offset + size`` beyond the
            end of a regular file or memfd (``os.fstat``; dma-bufs may report size 0 and
            are not checked); closed context.
        RKNNError
            If the runtime returns NULL.

        Notes
        -----
        The memory is a mapping of the fd: if the file is truncated while the mem (or a
        view of it) is in use, touching the lost pages raises SIGBUS and kills the
        process.  This is inherent to ``mmap`` and cannot be checked; keep the file's
        size while the mem lives.

        .. versionadded:: 0.1.0
        """
        return _create_mem_from_fd(self, fd, size, offset, virt_addr, owner)

    def create_mem_from_phys(self, phys_addr, size, virt_addr=None, *, owner=None):
        """Wrap memory at a physical address (``rknn_create_mem_from_phys``).

        Parameters
        ----------
        phys_addr : int
            Device (physical) address, e.g. ``other_mem.phys_addr``.
        size : int
            Bytes.
        virt_addr : None, int or writable buffer, optional
            Its CPU mapping (None: let the runtime find it).
        owner : object, optional
            Kept referenced while the mem lives (whatever owns the allocation).

        Returns
        -------
        TensorMem

        Raises
        ------
        ValueError, TypeError
            Bad arguments or closed context.
        RKNNError
            If the runtime returns NULL (an address it does not know ...).

        .. versionadded:: 0.1.0
        """
        return _create_mem_from_phys(self, phys_addr, size, virt_addr, owner)

    def create_mem_from_mb_blk(self, mb_blk, offset=0, *, owner=None):
        """Wrap an RK MPI ``MB_BLK`` buffer (``rknn_create_mem_from_mb_blk``).

        Parameters
        ----------
        mb_blk : int
            The ``MB_BLK`` handle (an address).
        offset : int, default 0
            Offset of the data in the block.
        owner : object, optional
            Kept referenced while the mem lives.

        Raises
        ------
        NotSupportedError
            If the runtime lacks the symbol (most librknnrt builds).
        RKNNError
            If it returns NULL (V2.5.0 documents it unsupported on every chip).

        .. versionadded:: 0.1.0
        """
        return _create_mem_from_mb_blk(self, mb_blk, offset, owner)


def live_contexts():
    """Number of open :class:`Context` objects (what blocks a runtime switch)."""
    return _atomic_load_ssize(&_live_contexts)
