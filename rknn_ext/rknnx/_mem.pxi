# TensorMem: one rknn_tensor_mem, its lifetime and its buffer-protocol views.
#
# Lifetime (docs/architecture.md, Lifetime):
#  - a TensorMem holds a strong reference to its Context (rknn_destroy_mem needs it), so
#    the context outlives it; the context tracks its mems in a WeakSet and closes the
#    leftovers when it closes;
#  - every buffer export (memoryview, numpy array, DLPack capsule) is counted exactly in
#    _exports and holds a reference to the TensorMem (buffer.obj / the capsule's manager),
#    so __dealloc__ never runs while a view exists, and close() refuses while one does;
#  - the class is no_gc_clear: when the garbage collector breaks a cycle through a mem
#    (context -> set_io_mem binding -> mem -> context), the mem must still see its
#    context in __dealloc__ to destroy the descriptor with the right handle.  The cycle is
#    broken on the Context side instead (its references are cleared; the handle is not).

import weakref as _weakref


cdef char _EMPTY[1]                          # what a 0-byte export points at (never NULL)
_EMPTY[0] = 0

# +1 each time a TensorMem is marked dead (_destroy): the run() check of a context's
# bindings (_ContextBase._check_bound) looks at its mems only when this moved since it
# last found them all open.  Starts at 1 (0 means "look": _ContextBase._bound_ok).
cdef unsigned long long _mem_deaths = 1

_NOT_DIRECT = ("TensorMem cannot be created directly; use Context.create_mem(), "
               "create_mem2(), create_mem_from_fd(), create_mem_from_phys() or "
               "create_mem_from_mb_blk()")


# _ClosedViewError (a view of a closed object was requested) is rknnx.errors.ClosedViewError,
# imported in _core.pyx: the name a user sees in a traceback is a public one.


# Freeing memory that views point into: one rule for TensorMem.close, Outputs.release and
# Context.close (and MatmulContext.close).
#  1. The owner is marked closing first (TensorMem._closing, _OutputGroup._closing, the
#     context's _closing); from then on every request for a new view of that memory is
#     refused (a BufferError naming the closing object).
#  2. The live views are counted (_check_no_views); if there are any the close gives up,
#     unmarked, with BufferError.
#  3. Right before the C call that frees the memory, with the context lock held (so a run
#     in flight has finished), they are counted again (_check_no_views).
# A view is made (its checks of the closing marks, then its count) inside a critical
# section on its exporter (TensorMem, _OutputGroup), and steps 1 and 2 run inside one on
# the same object: on a free-threaded CPython, where no GIL makes those steps whole, no
# view can slip between 1 and 3 while the closing thread waits for the lock.  (On a GIL
# build a critical section is nothing and the GIL does the same.)  The counts are atomic
# (rknnx_atomic.h): a view released in any thread takes itself off without a lock.
cdef int _check_no_views(Py_ssize_t n) except -1:
    if n > 0:
        raise BufferError(f"{n} buffer view(s) still exported; delete the numpy arrays first")
    return 0


cdef bint _multi_axis(const _Layout* lay) noexcept nogil:
    """More than one axis longer than 1 (so C and Fortran order differ)."""
    cdef int i, n = 0
    for i in range(lay.ndim):
        if lay.shape[i] > 1:
            n += 1
    return n > 1


cdef inline void* _mem_data(rknn_tensor_mem* m) noexcept nogil:
    return <char*>m.virt_addr + m.offset


cdef void _count_free_mem() noexcept:
    # a mem of no context must be destroyed by the runtime that made it: it blocks a
    # runtime switch like an open context does
    _atomic_add_ssize(&_live_free_mems, 1)


cdef void _forget_free_mem() noexcept:
    _atomic_add_ssize(&_live_free_mems, -1)


cdef Py_ssize_t _views_of(TensorMem m):
    """The live views of a mem, counted inside a critical section on it (the view rule,
    step 2, from a closing context: its mark set before, a view made after sees it)."""
    with cython.critical_section(m):
        return _atomic_load_ssize(&m._exports)


cdef object _view_pin(object obj, void** addr, Py_ssize_t* nbytes):
    """Pin a caller's writable buffer (for virt_addr arguments); returns the pin."""
    mv = memoryview(obj)
    if mv.readonly:
        raise ValueError("virt_addr buffer must be writable")
    if not mv.c_contiguous:
        raise ValueError("virt_addr buffer must be C-contiguous")
    cdef Py_buffer view
    PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
    addr[0] = view.buf
    nbytes[0] = view.len
    PyBuffer_Release(&view)
    return mv


@cython.no_gc_clear
cdef class TensorMem:
    """NPU-visible memory: one ``rknn_tensor_mem``, viewable without copying.

    Created by :meth:`Context.create_mem`, :meth:`Context.create_mem2`,
    :meth:`Context.create_mem_from_fd`, :meth:`Context.create_mem_from_phys`,
    :meth:`Context.create_mem_from_mb_blk` or :func:`create_mem2` (no context).

    The buffer protocol exposes the data (``virt_addr + offset``, ``size`` bytes): a plain
    byte buffer by default, and once bound to a :class:`TensorAttr` (:meth:`bind`, or
    :meth:`Context.set_io_mem`) a typed, shaped view of the tensor, with the padding of
    ``w_stride``/``h_stride`` expressed as strides.  ``np.asarray(mem)``,
    ``memoryview(mem)`` and ``np.from_dlpack(mem)`` are views, never copies; consumers
    asking for a simple or shape-only buffer (no ``PyBUF_STRIDES``: ``file.write``,
    ``hashlib``) get the raw bytes of the whole region (``size`` bytes, format ``"B"``,
    padding included).

    ``np.frombuffer(mem, dtype)`` is a zero-copy view of the raw bytes when the mem is
    unbound or bound to a contiguous tensor.  For a strided (padded) bound tensor numpy
    cannot get there: it first wraps any exporter that counts its views in a
    ``memoryview`` (a strided request, answered with the strided tensor) and then asks
    that memoryview for contiguous bytes, which it refuses with ``BufferError``
    ("underlying buffer is not C-contiguous").  Use ``np.frombuffer(mem.raw(), dtype)``:
    the same raw bytes, zero-copy, counted as a view.

    ``close()`` (or ``with``, or garbage collection) calls ``rknn_destroy_mem`` once.
    It raises :class:`BufferError` while a view exists.  Memory imported from an fd or a
    physical address is not freed (only the descriptor); the mem keeps a reference to
    ``owner`` so the fd or mapping outlives it.  While ``close()`` runs (it may wait for a
    run on another thread), new views are refused with BufferError.

    After ``os.fork()`` a TensorMem belongs to the process that created it: in the child
    every call on it (views included) raises RuntimeError ("created in process N; create
    it after fork").

    .. versionadded:: 0.1.0
    """

    def __cinit__(self, *args, **kwargs):
        self._pid = _this_pid

    def __init__(self, *args, **kwargs):
        raise TypeError(_NOT_DIRECT)

    def __dealloc__(self):
        # Only frees.  _exports is 0 here: every export holds a reference.
        cdef rknn_context h = 0
        if self.mem == NULL or _api.rknn_destroy_mem == NULL:
            return
        if self._pid != _this_pid:
            # a fork child: the descriptor is the parent's runtime's; free nothing
            self.mem = NULL
            return
        if self.context is not None:
            if self.context._held_here():
                # freed inside a call on its own context (a custom op callback, a gc
                # run there): waiting for the lock would deadlock; owe the call instead
                self.context._defer(self.mem, NULL, 0)
            else:
                self.context._acquire()
                h = self.context.ctx
                if h != 0:
                    _api.rknn_destroy_mem(h, self.mem)
                self.context._release()
        else:
            _api.rknn_destroy_mem(0, self.mem)
            _forget_free_mem()
        self.mem = NULL

    cdef int _check_open(self, str what) except -1:
        if self._pid != _this_pid:
            _raise_inherited(self, self._pid)
        if _relaxed_load_mem(&self.mem) == NULL:
            raise ValueError(f"{what} on closed TensorMem")
        return 0

    cdef int _copy_desc(self, rknn_tensor_mem* d, str what) except -1:
        """The descriptor's fields, copied in a critical section on the mem: _destroy
        frees the descriptor and stores NULL in one on the mem too, so the copy is of a
        live descriptor or the call raises (ValueError, "<what> on closed TensorMem")."""
        self._check_process()
        with cython.critical_section(self):
            if self.mem == NULL:
                raise ValueError(f"{what} on closed TensorMem")
            d[0] = self.mem[0]
        return 0

    cdef int _check_process(self) except -1:
        if self._pid != _this_pid:
            _raise_inherited(self, self._pid)
        return 0

    cdef int _destroy(self) except -1:
        """rknn_destroy_mem, once.  Bindings on other contexts are marked dead first,
        each under that context's lock, so no run can be using the memory when it is
        destroyed and no later run starts with it."""
        cdef _ContextBase c
        cdef int ret = 0
        cdef rknn_context h
        cdef Py_ssize_t views
        if _relaxed_load_mem(&self.mem) == NULL:
            return 0
        if self._syncing_now():
            # sync() runs rknn_mem_sync with the GIL released, possibly under another
            # context's lock (or none): never destroy the descriptor under it.  The mem
            # or its context is marked closing before this check, and sync() checks those
            # marks and counts itself in one critical section on the mem: either it
            # refuses or it is counted here.
            raise BufferError("TensorMem is being synced (rknn_mem_sync) in another thread; "
                              "close it once sync() returned")
        require(<void*>_api.rknn_destroy_mem, b"rknn_destroy_mem")
        if self.context is not None:
            self.context._check_not_busy("TensorMem.close")
        if self._bound_to is not None:
            for c in list(self._bound_to):
                c._check_not_busy("TensorMem.close")
            for c in list(self._bound_to):
                c._acquire()
                _relaxed_store_bint(&self._dead, True)
                _atomic_add_u64(&_mem_deaths, 1)
                c._release()
        # (each mark before its count, the count atomic: a run() that reads the count
        # under a context's lock sees the mark made under that lock)
        _relaxed_store_bint(&self._dead, True)
        _atomic_add_u64(&_mem_deaths, 1)
        if self.context is not None:
            c = self.context
            c._acquire()
            # the view rule, step 3 (see _check_no_views): the count read once, under the
            # lock; read again after the release, a view dropped meanwhile in another thread
            # (free-threaded CPython) let the close go on without the lock and release it
            # twice, the second time from under whichever thread held it by then
            views = _atomic_load_ssize(&self._exports)
            if views > 0:                     # (as _check_no_views judges it)
                c._release()
                _check_no_views(views)
            h = c.ctx
            # the free and the NULL in one critical section on the mem: a reader of the
            # descriptor's fields in one (_copy_desc, a view) meets it whole or NULL;
            # readers without one load the pointer whole (rknnx_atomic.h)
            with cython.critical_section(self):
                if h != 0:
                    ret = _api.rknn_destroy_mem(h, self.mem)
                if ret >= 0:
                    _relaxed_store_mem(&self.mem, NULL)
            c._release()
        else:
            _check_no_views(_atomic_load_ssize(&self._exports))
            with cython.critical_section(self):
                ret = _api.rknn_destroy_mem(0, self.mem)
                if ret >= 0:
                    _relaxed_store_mem(&self.mem, NULL)
            if ret >= 0:
                _forget_free_mem()
        # a failed destroy keeps the descriptor: close() may be retried (and __dealloc__
        # tries once more); it stays unusable for runs (_dead)
        check(ret, b"rknn_destroy_mem")
        # the descriptor is gone: what kept its memory alive may go too
        self.owner = None
        self._virt_pin = None
        return 0

    def close(self):
        """Destroy the descriptor (``rknn_destroy_mem``); a second call does nothing.

        Raises
        ------
        BufferError
            While buffer views (numpy arrays, memoryviews, DLPack capsules) of it
            exist, or while an open Context uses it as its model buffer.
        RKNNError
            If ``rknn_destroy_mem`` fails; the mem then stays open (``close()`` may be
            retried) but can no longer be used by a run.

        .. versionadded:: 0.1.0
        """
        if _relaxed_load_mem(&self.mem) == NULL:
            return
        self._check_process()
        self._mark_closing()
        try:
            self._destroy()
        finally:
            with cython.critical_section(self):
                _relaxed_store_bint(&self._closing, False)

    cdef int _mark_closing(self) except -1:
        """close()'s first steps in one critical section on the mem (the view rule, steps
        1 and 2, see _check_no_views; the claims of set_*_mem, Context(model_mem=) and
        sync() are made in one too): mark it closing, then refuse, unmarked, while a
        view, a pin or a claim is counted."""
        with cython.critical_section(self):
            if self._closing:
                raise BufferError("TensorMem is being closed in another thread")
            if _atomic_load_int(&self._syncing) > 0:
                # refused before the mark is made: a sync() that finds the mem closing
                # waits for the close to end (_wait_not_closing), so a mark that a close
                # would take back here would make both refuse, which no GIL build shows
                raise BufferError("TensorMem is being synced (rknn_mem_sync) in another "
                                  "thread; close it once sync() returned")
            _relaxed_store_bint(&self._closing, True)
            try:
                _check_no_views(_atomic_load_ssize(&self._exports))
                if _atomic_load_int(&self._pins) > 0:
                    raise BufferError("TensorMem is the model buffer of an open Context "
                                      "(RKNN_FLAG_MODEL_BUFFER_ZERO_COPY); close that Context "
                                      "first")
                if _atomic_load_int(&self._binding) > 0:
                    raise BufferError("TensorMem is being bound to a Context (set_io_mem, "
                                      "set_weight_mem or set_internal_mem) in another thread")
            except BaseException:
                _relaxed_store_bint(&self._closing, False)
                raise
        return 0

    cdef bint _syncing_now(self) except -1:
        with cython.critical_section(self):
            return _atomic_load_int(&self._syncing) > 0

    @property
    def closed(self):
        """True once :meth:`close` ran (or the context closed it)."""
        return _relaxed_load_mem(&self.mem) == NULL

    def __enter__(self):
        self._check_open("__enter__")
        return self

    def __exit__(self, *exc):
        self.close()

    # -- descriptor fields --
    @property
    def virt_addr(self):
        """CPU address of the region (int; the data starts at ``virt_addr + offset``)."""
        cdef rknn_tensor_mem d
        self._copy_desc(&d, "virt_addr")
        return <size_t>d.virt_addr

    @property
    def phys_addr(self):
        """Device (physical) address of the region."""
        cdef rknn_tensor_mem d
        self._copy_desc(&d, "phys_addr")
        return d.phys_addr

    @property
    def fd(self):
        """File descriptor of the region (-1 when there is none)."""
        cdef rknn_tensor_mem d
        self._copy_desc(&d, "fd")
        return d.fd

    @property
    def offset(self):
        """Offset of the data inside the region."""
        cdef rknn_tensor_mem d
        self._copy_desc(&d, "offset")
        return d.offset

    @property
    def size(self):
        """Bytes of data."""
        cdef rknn_tensor_mem d
        self._copy_desc(&d, "size")
        return d.size

    @property
    def flags(self):
        """Origin of the memory (:class:`MemFlag`)."""
        cdef rknn_tensor_mem d
        self._copy_desc(&d, "flags")
        try:
            return MemFlag(d.flags)
        except ValueError:
            return int(d.flags)

    @property
    def priv_data(self):
        """The runtime's private pointer (int; for debugging only)."""
        cdef rknn_tensor_mem d
        self._copy_desc(&d, "priv_data")
        return <size_t>d.priv_data

    @property
    def exports(self):
        """Number of live buffer views (numpy arrays, memoryviews, DLPack capsules)."""
        return _atomic_load_ssize(&self._exports)

    @property
    def attr(self):
        """The :class:`TensorAttr` the views follow (a copy), or None for plain bytes."""
        return None if self._attr is None else self._attr.copy()

    @property
    def shape(self):
        """Shape of the view (``(size,)`` when unbound)."""
        cdef _Layout lay
        self._check_process()
        with cython.critical_section(self):   # as _copy_desc: a live descriptor's size
            self._check_open("shape")
            self._current_layout(&lay)
        return _layout_shape(&lay)

    @property
    def strides(self):
        """Byte strides of the view."""
        cdef _Layout lay
        self._check_process()
        with cython.critical_section(self):   # as _copy_desc: a live descriptor's size
            self._check_open("strides")
            self._current_layout(&lay)
        return _layout_strides(&lay)

    @property
    def dtype(self):
        """numpy dtype of the view (uint8 when unbound)."""
        if not self._bound:
            return _np.dtype(_np.uint8)
        return _np.dtype(self._layout.format.decode("ascii"))

    cdef int _current_layout(self, _Layout* lay) except -1:
        # (called in a critical section on the mem, open: the size is a live descriptor's)
        if self._bound:
            lay[0] = self._layout
        else:
            _layout_raw(lay, self.mem.size)
        return 0

    # -- binding a tensor layout --
    def bind(self, TensorAttr attr not None):
        """Make views of this mem typed, shaped and strided views of the tensor ``attr``.

        Views already exported keep the layout they were created with.

        Parameters
        ----------
        attr : TensorAttr
            The tensor the memory holds (the attribute given to ``set_io_mem``).

        Returns
        -------
        TensorMem
            ``self``, so ``np.asarray(mem.bind(attr))`` works.

        Raises
        ------
        ValueError
            If the mem is closed, or smaller than the tensor's extent (padding included).
        TypeError
            If the tensor's type has no numpy dtype (INT4, BFLOAT16).

        .. versionadded:: 0.1.0
        """
        cdef rknn_tensor_mem d
        self._copy_desc(&d, "bind")
        cdef _Layout lay
        _layout_of_attr(&attr.c, &lay, attr._ntype, -1)
        if lay.extent > d.size:
            raise ValueError(f"TensorMem of {d.size} bytes is too small for tensor "
                             f"{attr.name!r} {list(attr.dims)} {_type_name(attr.c.type)} "
                             f"{attr.layout}: expected at least {lay.extent} bytes")
        attr = attr.copy()
        # in a critical section on the mem, as a view copies the layout: never half of one
        with cython.critical_section(self):
            self._layout = lay
            self._attr = attr
            self._bound = True
        return self

    def unbind(self):
        """Make new views plain byte buffers again."""
        with cython.critical_section(self):
            self._bound = False
            self._attr = None

    def raw(self):
        """A writable memoryview of the raw bytes (``size`` of them), whatever the binding.

        For consumers that need contiguous bytes of a strided bound mem, e.g.
        ``np.frombuffer(mem.raw(), np.uint8)``; it counts as a view like any other.

        Raises
        ------
        BufferError
            If the mem is closed (also a ValueError) or has no CPU mapping.
        """
        cdef _RawBytes r = _RawBytes.__new__(_RawBytes)
        r.mem = self
        return memoryview(r)

    # -- cache maintenance --
    def sync(self, mode=RKNN_MEMORY_SYNC_BIDIRECTIONAL, _ContextBase context=None):
        """Synchronize the CPU and device views of cacheable memory (``rknn_mem_sync``).

        Parameters
        ----------
        mode : MemSyncMode, default BIDIRECTIONAL
            ``TO_DEVICE`` after the CPU wrote (inputs), ``FROM_DEVICE`` before the CPU
            reads what the NPU wrote (outputs), or both.
        context : Context or MatmulContext, optional
            The context to sync through; default the mem's own.  Needed for memory
            created with ``ALLOC_NO_CONTEXT``.

        Raises
        ------
        ValueError
            If the mem or the context is closed, the mode is not a MemSyncMode, or there
            is no context.
        RKNNError
            If ``rknn_mem_sync`` fails.

        .. versionadded:: 0.1.0
        """
        self._check_open("sync")
        cdef int m = mode
        if not RKNN_MEMORY_SYNC_TO_DEVICE <= m <= RKNN_MEMORY_SYNC_BIDIRECTIONAL:
            raise ValueError(f"mode must be a MemSyncMode (TO_DEVICE=1, FROM_DEVICE=2, "
                             f"BIDIRECTIONAL=3), got {mode!r}")
        if context is None:
            context = self.context
        if context is None:
            raise ValueError("this TensorMem was allocated without a context "
                             "(ALLOC_NO_CONTEXT); pass context= to sync it")
        require(<void*>_api.rknn_mem_sync, b"rknn_mem_sync")
        cdef int ret
        while True:
            context._enter(b"sync")
            try:
                if self._claim_for_sync():
                    break
            except BaseException:
                context._release()
                raise
            # a close of the mem or of its context is in flight: wait for it to end
            # (without the lock, which that close may need) and look again, so the sync
            # meets the mem open or closed, as on a GIL build, never half-closed
            context._release()
            self._wait_not_closing()
        with nogil:
            ret = _api.rknn_mem_sync(context.ctx, self.mem, <rknn_mem_sync_mode>m)
        _atomic_add_int(&self._syncing, -1)
        context._release()
        check(ret, b"rknn_mem_sync")

    cdef int _claim_for_sync(self) except -1:
        """Count a sync in flight: 1 when counted, 0 (nothing counted) while the mem or its
        context is closing, ValueError once the mem is closed.  In one critical section on
        the mem, as close() checks the count before its mark (_mark_closing) and _destroy
        after its context's mark: either the sync is counted there and the close refuses,
        or the sync sees the mark and waits for that close to end (sync())."""
        with cython.critical_section(self):
            if self.mem == NULL:
                raise ValueError("sync on closed TensorMem")
            if self._closing_now():
                return 0
            _atomic_add_int(&self._syncing, 1)
        return 1

    cdef bint _closing_now(self) noexcept:
        # (called inside a critical section on the mem)
        # (the context's mark is set under its lock, not in this critical section)
        return self._closing or (self.context is not None
                                 and _relaxed_load_bint(&self.context._closing))

    cdef int _wait_not_closing(self) except -1:
        """Return once no close of the mem or of its context is in flight.  A close is
        short (a destroy, at most a wait for a run on its context), so the thread sleeps
        in steps of 20 to 1000 us with the GIL released rather than keep a condition
        variable in every mem."""
        cdef unsigned int pause = 20
        while True:
            with cython.critical_section(self):
                if not self._closing_now():
                    return 0
            with nogil:
                usleep(pause)
            if pause < 1000:
                pause *= 2

    # -- buffer protocol --
    def __getbuffer__(self, Py_buffer* buffer, int flags):
        # the view rule, step 1 and the count, whole (see _check_no_views)
        with cython.critical_section(self):
            self._export(buffer, flags)

    cdef int _export(self, Py_buffer* buffer, int flags) except -1:
        cdef Py_ssize_t* arr
        cdef int i
        cdef _Layout* lay
        cdef bint want_c, want_f, want_any
        if self._pid != _this_pid:
            _raise_inherited(self, self._pid)
        if self.mem == NULL:
            raise _ClosedViewError("cannot export a view: operation on closed TensorMem")
        _refuse_view_of_closing(self)
        if self.mem.virt_addr == NULL:
            raise BufferError("TensorMem has no CPU mapping (virt_addr is NULL); it cannot "
                              "be viewed")
        buffer.buf = _mem_data(self.mem) if self.mem.size else <void*>_EMPTY
        buffer.readonly = 0
        buffer.suboffsets = NULL
        buffer.internal = NULL
        if (not self._bound or (flags & PyBUF_ND) != PyBUF_ND
                or (flags & PyBUF_FORMAT) != PyBUF_FORMAT
                or (not self._layout.c_contiguous
                    and (flags & PyBUF_STRIDES) != PyBUF_STRIDES)):
            # The raw bytes of the whole region (format "B"): what simple consumers
            # (file.write, hashlib, PyBUF_SIMPLE / PyBUF_ND requests) ask for.  A strided
            # (padded) bound tensor cannot be described without strides, so a request
            # that has no room for them gets the contiguous bytes, padding included,
            # instead of a BufferError.
            buffer.len = self.mem.size
            buffer.itemsize = 1
            buffer.ndim = 1
            buffer.format = NULL
            if (flags & PyBUF_FORMAT) == PyBUF_FORMAT:
                buffer.format = b"B"
            if (flags & PyBUF_ND) == PyBUF_ND:
                arr = <Py_ssize_t*>malloc(2 * sizeof(Py_ssize_t))
                if arr == NULL:
                    raise MemoryError()
                arr[0] = self.mem.size
                arr[1] = 1
                buffer.internal = arr
                buffer.shape = arr
                buffer.strides = arr + 1 if (flags & PyBUF_STRIDES) == PyBUF_STRIDES else NULL
            else:
                buffer.shape = NULL
                buffer.strides = NULL
        else:
            lay = &self._layout
            want_c = (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS
            want_f = (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS
            want_any = (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS
            if not lay.c_contiguous:
                # (a request without PyBUF_STRIDES got the raw bytes above)
                if want_c or want_f or want_any:
                    raise BufferError("the bound tensor is not contiguous (w_stride/h_stride "
                                      "padding)")
            elif want_f and not (want_c or want_any) and _multi_axis(lay):
                raise BufferError("the bound tensor is C-contiguous, not Fortran-contiguous")
            # Each export owns its shape/strides (freed in __releasebuffer__), so a later
            # bind() cannot change what a live view was told.
            arr = <Py_ssize_t*>malloc((2 * lay.ndim + 1) * sizeof(Py_ssize_t))
            if arr == NULL:
                raise MemoryError()
            for i in range(lay.ndim):
                arr[i] = lay.shape[i]
                arr[lay.ndim + i] = lay.strides[i]
            buffer.internal = arr
            buffer.len = lay.nbytes
            buffer.itemsize = lay.itemsize
            buffer.ndim = lay.ndim
            buffer.format = <char*>lay.format
            buffer.shape = arr if lay.ndim else NULL
            buffer.strides = (arr + lay.ndim if lay.ndim and
                              (flags & PyBUF_STRIDES) == PyBUF_STRIDES else NULL)
        buffer.obj = self
        _atomic_add_ssize(&self._exports, 1)
        return 0

    def __releasebuffer__(self, Py_buffer* buffer):
        if buffer.internal != NULL:
            free(buffer.internal)
            buffer.internal = NULL
        _atomic_add_ssize(&self._exports, -1)

    def __array__(self, dtype=None, copy=None):
        """numpy's fallback when the buffer protocol fails: re-raise why (numpy would
        otherwise wrap a closed mem in an object array)."""
        return _array_fallback(self, dtype, copy)

    # -- DLPack --
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the view as a DLPack capsule (zero-copy), for ``np.from_dlpack`` etc.

        Parameters
        ----------
        stream : None
            Must be None (CPU memory has no stream).
        max_version : tuple of int, optional
            Highest DLPack version the consumer understands; (1, x) gets a versioned
            capsule, otherwise a legacy one.
        dl_device : tuple, optional
            Must be ``(kDLCPU, 0)`` if given.
        copy : bool, optional
            ``True`` is refused (this export never copies).

        Raises
        ------
        BufferError
            If a copy or another device is requested, or the mem is closed.

        .. versionadded:: 0.1.0
        """
        self._check_process()
        if _relaxed_load_mem(&self.mem) == NULL:
            raise _ClosedViewError("cannot export a view: operation on closed TensorMem")
        _refuse_view_of_closing(self)
        if stream is not None:
            raise BufferError("TensorMem is CPU memory: stream must be None")
        if copy:
            raise BufferError("TensorMem exports zero-copy views only (copy=True refused)")
        if dl_device is not None and tuple(dl_device) != (_KDLCPU, 0):
            raise BufferError(f"TensorMem lives on device (kDLCPU={_KDLCPU}, 0), "
                              f"not {tuple(dl_device)}")
        cdef _Layout lay
        if max_version is not None:
            try:
                major, minor = max_version
                major, minor = major.__index__(), minor.__index__()
            except (TypeError, ValueError, AttributeError):
                raise TypeError(f"max_version must be a (major, minor) tuple of ints, got "
                                f"{max_version!r}") from None
        cdef bint versioned = max_version is not None and major >= 1
        # the view rule, step 1 and the count, whole (see _check_no_views)
        with cython.critical_section(self):
            if self.mem == NULL:
                raise _ClosedViewError("cannot export a view: operation on closed TensorMem")
            _refuse_view_of_closing(self)
            if self.mem.virt_addr == NULL:
                raise BufferError("TensorMem has no CPU mapping (virt_addr is NULL)")
            self._current_layout(&lay)
            return _dlpack_export(self, _mem_data(self.mem) if self.mem.size else <void*>_EMPTY,
                                  &lay, versioned, &self._exports)

    def __dlpack_device__(self):
        """``(kDLCPU, 0)``: the data is addressable by the CPU."""
        return (_KDLCPU, 0)

    def __repr__(self):
        cdef rknn_tensor_mem d
        try:
            self._copy_desc(&d, "repr")
        except ValueError:
            return "<TensorMem closed>"
        try:
            kind = MemFlag(d.flags).name
        except ValueError:
            kind = int(d.flags)
        bound = ""
        attr = self._attr
        if attr is not None:
            bound = (f" bound={attr.name!r} {list(_layout_shape(&self._layout))} "
                     f"{_type_name((<TensorAttr>attr).c.type)}")
        return (f"<TensorMem {kind} size={d.size} fd={d.fd} "
                f"offset={d.offset} phys=0x{d.phys_addr:x}{bound} "
                f"exports={_atomic_load_ssize(&self._exports)}>")


@cython.final
@cython.no_gc_clear
cdef class _RawBytes:
    """Exports the raw bytes of a TensorMem (see TensorMem.raw)."""
    cdef TensorMem mem                       # the exporter whose bytes we show
    cdef Py_ssize_t _shape[1]                # what exports point at (stable addresses)
    cdef Py_ssize_t _strides[1]

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        cdef TensorMem m = self.mem
        if m is None:
            raise BufferError("not created by TensorMem.raw()")
        # the view rule, step 1 and the count, whole, on the mem (see _check_no_views)
        with cython.critical_section(m):
            self._export(m, buffer, flags)

    cdef int _export(self, TensorMem m, Py_buffer* buffer, int flags) except -1:
        cdef Py_buffer inner
        m._check_process()
        if m.mem == NULL:
            raise _ClosedViewError("cannot export a view: operation on closed TensorMem")
        # the mem's own simple export (which refuses while the mem is closing): raw bytes,
        # counted in its _exports (its critical section is this one: the same object)
        PyObject_GetBuffer(m, &inner, PyBUF_SIMPLE)
        buffer.buf = inner.buf
        buffer.len = inner.len
        _atomic_add_ssize(&m._exports, 1)    # ours, before the inner view goes
        PyBuffer_Release(&inner)
        buffer.readonly = 0
        buffer.itemsize = 1
        buffer.ndim = 1
        buffer.format = NULL
        if (flags & PyBUF_FORMAT) == PyBUF_FORMAT:
            buffer.format = b"B"
        buffer.shape = NULL
        buffer.strides = NULL
        self._shape[0] = buffer.len
        self._strides[0] = 1
        if (flags & PyBUF_ND) == PyBUF_ND:
            buffer.shape = self._shape
        if (flags & PyBUF_STRIDES) == PyBUF_STRIDES:
            buffer.strides = self._strides
        buffer.suboffsets = NULL
        buffer.internal = NULL
        buffer.obj = self
        return 0

    def __releasebuffer__(self, Py_buffer* buffer):
        if self.mem is not None:
            _atomic_add_ssize(&self.mem._exports, -1)


cdef int _refuse_view_of_closing(TensorMem m) except -1:
    """The view rule, step 1 (see _check_no_views) for a mem: no new view while the mem
    or its context is closing."""
    # (also called without the critical section, by __dlpack__'s first look: whole loads)
    cdef bint mine = _relaxed_load_bint(&m._closing)
    if mine or (m.context is not None and _relaxed_load_bint(&m.context._closing)):
        raise BufferError("cannot export a view: the TensorMem is being closed"
                          + ("" if mine else " (its context is closing)"))
    return 0


cdef object _array_fallback(object exporter, object dtype, object copy):
    """__array__ of the exporters: a view through memoryview (so a closed or released
    exporter raises its BufferError instead of becoming a 0-d object array)."""
    a = _np.asarray(memoryview(exporter))
    if dtype is not None and a.dtype != _np.dtype(dtype):
        if copy is False:
            raise ValueError(f"converting {a.dtype} to {_np.dtype(dtype)} needs a copy")
        return a.astype(dtype)
    return a.copy() if copy else a
