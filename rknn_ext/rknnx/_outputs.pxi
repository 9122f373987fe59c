# Outputs of rknn_outputs_get with runtime-allocated buffers (is_prealloc = 0).
#
# The runtime owns those buffers until rknn_outputs_release.  One _OutputGroup owns the
# rknn_output array of one outputs_get call (outputs_release needs it back) and holds
# the Context; each Output views one buffer and holds the group.  So a numpy array made
# from an Output keeps the buffer alive: release() refuses while views exist, and
# without an explicit release the buffers are released when the last view (and the
# Outputs object) is gone.  Never a dangling pointer.

@cython.no_gc_clear
cdef class _OutputGroup:
    """The runtime-owned buffers of one ``rknn_outputs_get`` call (internal)."""

    def __dealloc__(self):
        # Only frees.  No view exists (each holds a reference to an Output holding us).
        self._unlink()
        if self.outs == NULL:
            return
        if self.context is not None and self.context._pid != _this_pid:
            # a fork child: the buffers are the parent's runtime's; free only our array
            free(self.outs)
            self.outs = NULL
            return
        if self.context is not None and self.context._held_here():
            # freed inside a call on its own context (a custom op callback): owe the
            # release (the note owns the array) instead of waiting for the lock
            if not self.context._defer(NULL, self.outs, self.n):
                free(self.outs)              # no memory for the note: the buffers leak
            self.outs = NULL
            return
        if self.context is not None and _api.rknn_outputs_release != NULL:
            self.context._acquire()
            if self.context.ctx != 0:
                _api.rknn_outputs_release(self.context.ctx, self.n, self.outs)
            self.context._release()
        free(self.outs)
        self.outs = NULL

    # The context finds its unreleased groups (to release them in close()) through a list
    # threaded through the groups themselves: borrowed pointers, since each group holds
    # its context and leaves the list when released or freed, so every pointer in the
    # list is to a live group.  Cheaper per outputs_get than a WeakSet (no weakref, no
    # callback when the group dies).  Linked, unlinked and walked inside a critical section
    # on the context (the GIL on a GIL build).
    cdef void _unlink(self) noexcept:
        cdef Context c = self.context
        if c is None:
            return
        with cython.critical_section(c):
            self._unlink_locked(c)

    cdef void _unlink_locked(self, Context c) noexcept:
        if not self._linked:
            return
        if self._prev != NULL:
            (<_OutputGroup>self._prev)._next = self._next
        else:
            c._groups = self._next
        if self._next != NULL:
            (<_OutputGroup>self._next)._prev = self._prev
        self._prev = NULL
        self._next = NULL
        self._linked = False

    cdef int _release_c(self) except -1:
        cdef int ret = 0
        cdef Py_ssize_t views
        cdef Context c = self.context
        if _relaxed_load_outs(&self.outs) == NULL:
            return 0
        c._check_process()
        if _relaxed_load_bint(&self._closing):
            raise BufferError("the outputs are being released in another thread")
        require(<void*>_api.rknn_outputs_release, b"rknn_outputs_release")
        c._check_not_busy("release")
        # the view rule (see _check_no_views): closing first, the count, and the count
        # again under the lock right before the runtime frees the buffers
        with cython.critical_section(self):
            if self._closing:
                raise BufferError("the outputs are being released in another thread")
            _relaxed_store_bint(&self._closing, True)
        try:
            with cython.critical_section(self):
                _check_no_views(_atomic_load_ssize(&self._exports))
            c._acquire()
            views = _atomic_load_ssize(&self._exports)   # (once: as TensorMem._destroy)
            if views > 0:                     # (as _check_no_views judges it)
                c._release()
                _check_no_views(views)
            # the free and the NULL in one critical section on the group, as a view and
            # Output.size read the array in one (readers without it load it whole)
            with cython.critical_section(self):
                if c.ctx != 0:
                    ret = _api.rknn_outputs_release(c.ctx, self.n, self.outs)
                if ret >= 0:
                    free(self.outs)
                    _relaxed_store_outs(&self.outs, NULL)
            if ret >= 0:
                self._unlink()
            c._release()
        finally:
            _relaxed_store_bint(&self._closing, False)
        check(ret, b"rknn_outputs_release")       # on failure the buffers stay held: retry
        return 0


cdef Py_ssize_t _group_views(_OutputGroup g):
    """The live views of an output group, counted inside a critical section on it (the view
    rule, step 2, from a closing context: see _views_of)."""
    with cython.critical_section(g):
        return _atomic_load_ssize(&g._exports)


# Output, Outputs and the other exporters below are no_gc_clear: their __releasebuffer__
# (or __dealloc__) follows a Python-object field, which the garbage collector's tp_clear
# would otherwise have set to None first (then the decrement lands in None's memory).
# Each also survives ``cls.__new__(cls)`` without __init__: every field it follows is
# checked for None.
_NOT_FROM_RUNTIME = "not created by the runtime: {} objects come from Context.outputs_get()"


@cython.final
@cython.no_gc_clear
cdef class Output:
    """One output of :meth:`Context.outputs_get`, in a runtime-owned buffer.

    A buffer-protocol object: ``np.asarray(out)`` is a zero-copy view (float32 with
    ``want_float=True``, else the model's type; NCHW for 4-D outputs).  The buffer stays
    valid while a view exists; :meth:`Outputs.release` refuses until the views are gone.

    .. versionadded:: 0.1.0
    """
    cdef _OutputGroup _group                 # owner of the buffer
    cdef uint32_t _i                         # slot in the group's array
    cdef _Layout _layout                     # what views export
    cdef Py_ssize_t _exports                 # live views of this output
    cdef bint _want_float                    # asked for dequantized float32
    cdef TensorAttr _src                     # the context's attribute (never handed out)
    cdef TensorAttr _attr                    # its copy, made when .attr is first read

    def __cinit__(self, *args, **kwargs):
        _layout_raw(&self._layout, 0)

    def __init__(self, *args, **kwargs):
        raise TypeError("Output objects come from Context.outputs_get()")

    @property
    def attr(self):
        """TensorAttr of the output (a copy; the same object on every read)."""
        if self._attr is None and self._src is not None:
            self._attr = self._src.copy()
        return self._attr

    @property
    def index(self):
        """Output index."""
        return self._i

    @property
    def released(self):
        """True once the buffers went back to the runtime."""
        return self._group is None or _relaxed_load_outs(&self._group.outs) == NULL

    @property
    def want_float(self):
        """Whether the data is dequantized float32."""
        return self._want_float

    @property
    def size(self):
        """Bytes the runtime returned."""
        cdef _OutputGroup g = self._group
        if g is None:
            raise ValueError(_NOT_FROM_RUNTIME.format("Output"))
        with cython.critical_section(g):     # as _release_c frees the array
            if g.outs == NULL:
                raise ValueError("size on released outputs")
            return g.outs[self._i].size

    @property
    def shape(self):
        """Shape of the view."""
        return _layout_shape(&self._layout)

    @property
    def dtype(self):
        """numpy dtype of the view."""
        return _np.dtype(self._layout.format.decode("ascii"))

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        cdef _OutputGroup g = self._group
        if g is None:
            raise BufferError(_NOT_FROM_RUNTIME.format("Output"))
        # the view rule, step 1 and the count, whole, on the group (see _check_no_views)
        with cython.critical_section(g):
            self._export(g, buffer, flags)

    cdef int _export(self, _OutputGroup g, Py_buffer* buffer, int flags) except -1:
        if g.outs == NULL:
            raise _ClosedViewError("cannot export a view: operation on released outputs")
        # (marks cleared outside this critical section, the context's set under its lock:
        # whole loads)
        cdef bint mine = _relaxed_load_bint(&g._closing)
        if mine or _relaxed_load_bint(&g.context._closing):
            # the view rule, step 1 (see _check_no_views)
            raise BufferError("cannot export a view: the outputs are being released"
                              + ("" if mine else " (their context is closing)"))
        buffer.buf = g.outs[self._i].buf
        if buffer.buf == NULL or self._layout.nbytes == 0:
            buffer.buf = <void*>_EMPTY
        buffer.len = self._layout.nbytes
        buffer.itemsize = self._layout.itemsize
        buffer.ndim = self._layout.ndim
        buffer.readonly = 0
        buffer.format = NULL
        buffer.shape = NULL
        buffer.strides = NULL
        if (flags & PyBUF_FORMAT) == PyBUF_FORMAT:
            buffer.format = <char*>self._layout.format
        if (flags & PyBUF_ND) == PyBUF_ND:
            buffer.shape = self._layout.shape
        if (flags & PyBUF_STRIDES) == PyBUF_STRIDES:
            buffer.strides = self._layout.strides
        buffer.suboffsets = NULL
        buffer.internal = NULL
        if (flags & PyBUF_ND) != PyBUF_ND:
            # a simple consumer: the raw bytes
            buffer.ndim = 1
            buffer.itemsize = 1
            buffer.format = NULL
            if (flags & PyBUF_FORMAT) == PyBUF_FORMAT:
                buffer.format = b"B"
        buffer.obj = self
        _atomic_add_ssize(&self._exports, 1)
        _atomic_add_ssize(&g._exports, 1)
        return 0

    def __releasebuffer__(self, Py_buffer* buffer):
        _atomic_add_ssize(&self._exports, -1)
        if self._group is not None:
            _atomic_add_ssize(&self._group._exports, -1)

    def numpy(self):
        """A numpy array viewing the buffer (zero-copy; same as ``np.asarray(self)``)."""
        return _np.asarray(self)

    def __array__(self, dtype=None, copy=None):
        """numpy's fallback when the buffer protocol fails: re-raise why."""
        return _array_fallback(self, dtype, copy)

    def __repr__(self):
        state = "released" if self.released else f"exports={_atomic_load_ssize(&self._exports)}"
        return (f"<Output {self._i} {list(self.shape)} {self._layout.format.decode()} "
                f"{state}>")


@cython.final
@cython.no_gc_clear
cdef class Outputs:
    """The outputs of one :meth:`Context.outputs_get` call: a sequence of :class:`Output`.

    Release the runtime's buffers with :meth:`release` (or ``with``); without it they are
    released when this object and every view of its outputs are gone.

    Examples
    --------
    >>> with ctx.outputs_get(want_float=True) as outs:
    ...     logits = np.asarray(outs[0]).copy()

    .. versionadded:: 0.1.0
    """
    cdef _OutputGroup _group                 # owner of the buffers
    cdef tuple _items                        # the Output objects

    def __cinit__(self, *args, **kwargs):
        self._items = ()

    def __init__(self, *args, **kwargs):
        raise TypeError("Outputs objects come from Context.outputs_get()")

    def __len__(self):
        return len(self._items)

    def __getitem__(self, i):
        return self._items[i]

    def __iter__(self):
        return iter(self._items)

    @property
    def frame_id(self):
        """Frame the outputs belong to (``rknn_output_extend.frame_id``; async mode)."""
        return 0 if self._group is None else self._group.frame_id

    @property
    def released(self):
        """True once :meth:`release` ran (or the context closed)."""
        return self._group is None or _relaxed_load_outs(&self._group.outs) == NULL

    def release(self):
        """Give the buffers back to the runtime (``rknn_outputs_release``); idempotent.

        Raises
        ------
        BufferError
            While views (numpy arrays, memoryviews) of any output exist.
        RKNNError
            If ``rknn_outputs_release`` fails.

        .. versionadded:: 0.1.0
        """
        if self._group is not None:
            self._group._release_c()

    def numpy(self):
        """The outputs as a list of numpy arrays viewing the runtime's buffers."""
        return [_np.asarray(o) for o in self._items]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        return f"<Outputs n={len(self._items)} frame_id={self.frame_id} " \
               f"{'released' if self.released else 'held'}>"
