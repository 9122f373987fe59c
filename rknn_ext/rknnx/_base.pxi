# What Context and MatmulContext share (_ContextBase): the handle, the per-context lock,
# re-entry, deferred frees, the mems a context made and the mems bound to it, and the one
# close sequence of both.
#
# Threads.  Each Context has its own lock (no global lock).  Every call that uses the
# handle takes it, checks the handle is still open, makes the C call (with the GIL
# released where the call can block or copy) and releases it; close() takes it too, so a
# close() from another thread waits for a run in flight instead of destroying the
# context under it.  Waiters never hold the GIL while they block (see _acquire), and no
# Python object is allocated while the lock is held, so a garbage collection cannot run
# a __dealloc__ that needs the same lock on the thread holding it.  The lock is a pthread
# mutex, always released by the thread that took it (_enter/_acquire ... _release in one
# call): uncontended, taking and releasing it is one atomic operation each, where
# PyThread_acquire_lock also reads the monotonic clock on every call (CPython 3.11).
#
# Lifetime.  TensorMem, _OutputGroup and Contexts sharing our weights hold strong
# references to us, so __dealloc__ only runs when none is left.  Bindings made with
# set_io_mem / set_weight_mem / set_internal_mem are held in a dict (and a list for the
# run() check): a cycle context -> dict -> mem -> context is broken by the garbage
# collector clearing the dict, never the context's own fields (no_gc_clear), so the mem's
# __dealloc__ still finds the context handle.

# Re-entry.  Python code can run while a thread holds a context's lock: custom-op
# callbacks run inside rknn_run / rknn_register_custom_ops / rknn_destroy, and a garbage
# collection or a finalizer may run inside them.  The lock is not re-entrant, so that
# thread must never wait for it: _enter / _check_not_busy raise RuntimeError instead
# (calling the context from its own callback), and the destructors of its mems and output
# buffers, which cannot raise, defer their C call (_defer) to the moment the lock is
# released (_release), when the runtime is no longer busy with the context.  _owner is
# written only by the thread holding the lock, so a thread reading its own ident there
# knows it holds it.
@cython.no_gc_clear
cdef class _ContextBase:
    """What :class:`Context` and :class:`MatmulContext` share (internal)."""

    def __cinit__(self, *args, **kwargs):
        self.ctx = 0
        self._owner = 0
        self._pid = _this_pid
        if pthread_mutex_init(&self._lock, NULL) != 0:
            raise MemoryError("cannot create the context lock")
        self._lock_made = True
        self._slots = {}
        self._bound = []
        self._bound_ok = 0
        self._mems = _weakref.WeakSet()
        self._deferred = NULL
        self._n_deferred = 0
        self._cap_deferred = 0

    def __dealloc__(self):
        # Only frees.  Nothing is deferred here (the lock is free; _release flushed), but
        # never leak an array if it were.
        cdef Py_ssize_t i
        if self._deferred != NULL:
            for i in range(self._n_deferred):
                free(self._deferred[i].outs)
            free(self._deferred)
            self._deferred = NULL
        if self._lock_made:
            # (in a fork child it may be held by a thread of the parent: glibc then
            # refuses, EBUSY, and frees nothing, which is all a destructor may do)
            pthread_mutex_destroy(&self._lock)
            self._lock_made = False

    # -- locking ------------------------------------------------------------------------------
    cdef void _acquire(self) noexcept:
        # Try without blocking first (the common, uncontended case costs no GIL switch);
        # else wait with the GIL released, so the holder can finish its call.
        if pthread_mutex_trylock(&self._lock) != 0:
            with nogil:
                pthread_mutex_lock(&self._lock)
        # (read by other threads without the lock, in _held_here: whole stores)
        _relaxed_store_ulong(&self._owner, PyThread_get_thread_ident())

    cdef void _release(self) noexcept nogil:
        # first the C calls owed while the lock was ours (the runtime is free again)
        cdef Py_ssize_t i
        cdef _Deferred* d
        if self._n_deferred:
            for i in range(self._n_deferred):
                d = &self._deferred[i]
                if self.ctx != 0:
                    if d.mem != NULL and _api.rknn_destroy_mem != NULL:
                        _api.rknn_destroy_mem(self.ctx, d.mem)
                    if d.outs != NULL and _api.rknn_outputs_release != NULL:
                        _api.rknn_outputs_release(self.ctx, d.n, d.outs)
                free(d.outs)
            self._n_deferred = 0
        _relaxed_store_ulong(&self._owner, 0)
        pthread_mutex_unlock(&self._lock)

    cdef bint _held_here(self) noexcept nogil:
        """True when the calling thread holds the lock (so it must not wait for it)."""
        # another thread's id, 0 or ours: only ours, which we wrote, can compare equal
        cdef unsigned long owner = _relaxed_load_ulong(&self._owner)
        return owner != 0 and owner == PyThread_get_thread_ident()

    cdef bint _defer(self, rknn_tensor_mem* mem, rknn_output* outs, uint32_t n) noexcept nogil:
        """Owe a destroy_mem / outputs_release until the lock is released (the caller
        holds it, on this thread); False if no memory for the note (then it leaks)."""
        cdef _Deferred* grown
        cdef Py_ssize_t cap
        if self._n_deferred == self._cap_deferred:
            cap = 8 if self._cap_deferred == 0 else 2 * self._cap_deferred
            grown = <_Deferred*>realloc(self._deferred, cap * sizeof(_Deferred))
            if grown == NULL:
                return False
            self._deferred = grown
            self._cap_deferred = cap
        self._deferred[self._n_deferred].mem = mem
        self._deferred[self._n_deferred].outs = outs
        self._deferred[self._n_deferred].n = n
        self._n_deferred += 1
        return True

    cdef int _check_not_busy(self, str what) except -1:
        if self._held_here():
            raise RuntimeError(
                f"{what}: the {type(self).__name__} is busy in this thread (a call on it is "
                "running a custom op callback, which is where this was called from); a "
                "callback cannot call back into its own context")
        return 0

    cdef int _check_process(self) except -1:
        """RuntimeError in a fork child for an object created before the fork."""
        if self._pid != _this_pid:
            _raise_inherited(self, self._pid)
        return 0

    cdef int _enter(self, const char* what) except -1:
        """Take the lock; raise ValueError (lock released) if the context is closed."""
        if self._pid != _this_pid:
            _raise_inherited(self, self._pid)
        if self._held_here():                # the name is decoded only to raise
            self._check_not_busy(what.decode())
        self._acquire()
        if _closed_now(self):                # (_closing is also cleared outside the lock)
            self._release()
            raise ValueError(f"{what.decode()} on closed {type(self).__name__}")
        return 0

    cdef int _check_open(self, const char* what) except -1:
        if self._pid != _this_pid:
            _raise_inherited(self, self._pid)
        if _closed_now(self):
            raise ValueError(f"{what.decode()} on closed {type(self).__name__}")
        return 0

    cdef int _check_bound(self) except -1:
        """Refuse to run with a bound mem that was closed: ValueError, the lock released.
        Called with the lock held when _bound_ok != _mem_deaths, i.e. when a mem was
        marked dead somewhere, or the bindings changed, since _bound was last all open
        (TensorMem.close marks a mem dead under the lock of each context it is bound to).
        Allocates nothing."""
        cdef TensorMem m
        cdef unsigned long long deaths = _atomic_load_u64(&_mem_deaths)
        for m in self._bound:
            if _relaxed_load_bint(&m._dead):
                self._release()
                self._raise_dead_binding()
        self._bound_ok = deaths
        return 0

    cdef bint _bindings_current(self) noexcept:
        """Hook of _enter_run, called with the lock held: whether every binding was made
        for the current dims (cheap; False sends _enter_run to _check_bindings)."""
        return True

    cdef int _check_bindings(self) except -1:
        """Hook of _enter_run, called without the lock: raise ValueError for a binding made
        for other dims than the current ones, else note the bindings as checked."""
        return 0

    cdef int _raise_dead_binding(self) except -1:
        for key, m in self._slots.items():
            if _relaxed_load_bint(&(<TensorMem>m)._dead):
                raise ValueError(f"the TensorMem bound as {key!r} was closed; bind another one "
                                 "(set_io_mem/set_weight_mem/set_internal_mem) before run()")
        raise ValueError("a bound TensorMem was closed")  # pragma: no cover

    cdef int _set_slot(self, object key, TensorMem mem) except -1:
        """Register a binding the runtime accepted (called without the lock, after it)."""
        cdef object old_mem, old_bound
        # Under the lock, which a run holds while it reads _bound_ok and walks _bound
        # (_enter_run, _check_bound): without it, on a free-threaded CPython, a run could
        # load the list as this replaces it and frees it, or two set_*_mem calls could
        # store their lists in the other order, leaving the later mem out of the one a run
        # checks for closed mems.  A context closed meanwhile keeps no binding.  What was
        # bound before goes after the release (a mem's last reference: its dealloc takes
        # this lock).
        self._acquire()
        if self.ctx == 0:                # (a close that fails stays open: only destroyed)
            self._release()
            return 0
        try:
            old_mem = self._slots.get(key)
            self._slots[key] = mem
            bound = list(self._slots.values())
        except BaseException:
            self._release()
            raise
        old_bound = self._bound
        # the next run() looks at the new list's mems
        self._bound_ok = 0
        self._bound = bound
        self._release()
        del old_mem, old_bound
        # the mem's set of contexts, made on first use: built first (Python code, where
        # another thread may run), then published once in a critical section on the mem
        # (no Python code between the test and the store): two first bindings at once
        # both land in the set that stays (a set replaced lost its context, and the mem's
        # close then freed the descriptor under that context's run)
        if mem._bound_to is None:
            made = _weakref.WeakSet()
            with cython.critical_section(mem):
                if mem._bound_to is None:
                    mem._bound_to = made
            del made
        mem._bound_to.add(self)
        return 0

    cdef TensorMem _adopt(self, TensorMem t, rknn_tensor_mem* m, object owner, bint no_ctx):
        t.mem = m
        t.owner = owner
        if no_ctx:
            _count_free_mem()
        else:
            t.context = self
            self._mems.add(t)
        return t

    # -- close: one sequence for Context and MatmulContext ----------------------------------
    cdef int _close(self, str kind, str children) except -1:
        """The body of close() (see docs/architecture.md, Lifetime): mark the context
        closing under the lock and take its open children (mems, output groups); refuse,
        unmarked, while a view of them is alive or a mem is another context's model
        buffer; close the children; destroy the handle under the lock with the GIL
        released; drop what the context held (_after_close).  A mem or a handle the
        runtime would not free leaves the context open (close() may be retried).  `kind`
        and `children` word the messages ("Context", "a TensorMem or outputs were")."""
        cdef TensorMem m
        cdef int ret = 0
        if _relaxed_load_ctx(&self.ctx) == 0:
            return 0
        self._check_process()
        self._check_not_busy("close")
        self._close_check()
        # Under the lock: mark the context closing (every new call is refused from now on,
        # so no mem or output group can appear behind our back) and take the lists.  A
        # call in flight in another thread holds the lock, so it has finished and
        # registered what it made before we look.
        self._acquire()
        if _closed_now(self):
            self._release()
            return 0
        try:
            # the mark and the check of the claims in one critical section, as the claims
            # check the mark (Context(share_weights_with=)): either a borrower is counted
            # here, or it sees the mark and refuses
            with cython.critical_section(self):
                _relaxed_store_bint(&self._closing, True)
                # again under the lock: a borrower that claimed our weights while we
                # waited for it (Context(share_weights_with=) claims them before its
                # rknn_init)
                self._close_check()
        except BaseException:
            _relaxed_store_bint(&self._closing, False)
            self._release()
            raise
        try:
            # (Python code runs here, the WeakSet's iteration: a Ctrl-C's KeyboardInterrupt
            # may come in it, and must not leave the lock held and the context closing)
            mems = [m for m in self._mems if _relaxed_load_mem(&m.mem) != NULL]
            groups = self._open_groups()
        except BaseException:
            _relaxed_store_bint(&self._closing, False)
            self._release()
            raise
        self._release()
        try:
            # the view rule (see _check_no_views): views of our mems and outputs are
            # refused from now on (_closing), counted here, and counted again by each
            # mem / output group under the lock before it is freed
            _check_no_views(sum([_views_of(m) for m in mems])
                            + sum([_group_views(g) for g in groups])
                            + self._callback_views())
            for m in mems:
                if _atomic_load_int(&m._pins):
                    raise BufferError(f"{m!r} is the model buffer of an open Context; close "
                                      "that Context first")
                if _bound_elsewhere_now(m):
                    raise BufferError(f"{m!r} is being bound to another Context (set_io_mem, "
                                      "set_weight_mem or set_internal_mem) in another thread; "
                                      "close() again once that call returned")
        except BaseException:
            _relaxed_store_bint(&self._closing, False)
            raise
        leftovers = _close_children(self, mems, groups, kind)   # (clears _closing if it raises)
        self._acquire()
        if self._children_open():
            # cannot happen (new calls are refused while closing); never destroy the
            # context under a buffer that would then dangle
            _relaxed_store_bint(&self._closing, False)
            self._release()
            raise BufferError(f"{children} created while the {kind} was closing; "
                              "close() again")
        if self.ctx != 0:
            ret = self._destroy_handle()
        if ret >= 0:
            _relaxed_store_ctx(&self.ctx, 0)    # (read without the lock: _check_open, closed)
        _relaxed_store_bint(&self._closing, False)
        self._release()
        if ret < 0:
            # the runtime kept the context: it stays open (its mems are closed) and
            # close() may be retried
            _warn_leftovers(leftovers, kind)
            check(ret, self._destroy_name())
        # drop references only now, outside the lock (a mem freed here takes its own
        # context's lock)
        error = self._after_close()
        _warn_leftovers(leftovers, kind)
        if error is not None:
            # the context is closed; what a destroy callback raised is still reported
            raise error
        return 0

    cdef int _close_check(self) except -1:
        """What must hold before close() starts (a subclass refuses by raising)."""
        return 0

    cdef list _open_groups(self):
        """The output groups still holding runtime buffers (called with the lock held)."""
        return []

    cdef Py_ssize_t _callback_views(self) noexcept:
        """Views handed to callbacks that are still alive."""
        return 0

    cdef bint _children_open(self) noexcept:
        """Whether a child appeared while closing (called with the lock held)."""
        return _open_children(self._mems)

    cdef int _destroy_handle(self) noexcept:
        """Destroy self.ctx (lock held); the status.  Each subclass calls its own C
        function with the GIL released."""
        return 0

    cdef const char* _destroy_name(self) noexcept:
        """The C function _destroy_handle calls, for check()."""
        return b"rknn_destroy"

    cdef object _after_close(self):
        """Drop what the closed context held; an error to raise afterwards, or None."""
        return None

    @property
    def closed(self):
        """True once :meth:`close` ran."""
        return _relaxed_load_ctx(&self.ctx) == 0

    @property
    def busy_in_this_thread(self):
        """True while the calling thread is inside a call on this context: code run by that
        call (a custom op callback) asks it before calling the context, which would raise
        RuntimeError, or closing what the call uses."""
        return self._held_here()

    @property
    def handle(self):
        """The context handle (int; 0 once closed)."""
        return _relaxed_load_ctx(&self.ctx)

    @property
    def mems(self):
        """The open :class:`TensorMem` objects this context created."""
        return [m for m in self._mems if _relaxed_load_mem(&(<TensorMem>m).mem) != NULL]

    @property
    def bindings(self):
        """What the ``set_*_mem`` calls bound: a dict from the slot to the mem."""
        return dict(self._slots)


cdef inline bint _closed_now(_ContextBase c) noexcept nogil:
    """Whether the context is closed or closing: its handle and its mark, each loaded
    whole (rknnx_atomic.h): close() writes them under the lock, and clears the mark
    outside it when it gives up; a check without the lock only picks the words, _enter
    looks again under it."""
    return _relaxed_load_ctx(&c.ctx) == 0 or _relaxed_load_bint(&c._closing)


# -- the run-entry rules: one place for every call that runs the model ----------------------
cdef int _enter_run(_ContextBase self, const char* what) except -1:
    """Take the lock to run the model (Context.run, Context.infer, MatmulContext.run),
    refusing with ValueError, the lock released: a closed context (_enter); a bound mem
    that was closed (_check_bound: looked at only when a mem was closed, or a binding
    made, since the bound mems were last all open; TensorMem.close marks a mem dead under
    this same lock); a binding made for other dims than the current ones (the class's
    _bindings_current under the lock, one comparison in the usual run; when it says no,
    _check_bindings without the lock, because a Context queries its attributes for it,
    and the lock is taken again)."""
    while True:
        self._enter(what)
        if self._bound_ok != _atomic_load_u64(&_mem_deaths):
            self._check_bound()
        if self._bindings_current():
            return 0
        self._release()
        self._check_bindings()


cdef bint _bound_elsewhere_now(TensorMem m) except -1:
    """Whether a set_*_mem call binding `m` to another context than its own is claiming it
    (_claim_for_binding), looked at in a critical section on `m` after its context was
    marked closing."""
    with cython.critical_section(m):
        return _atomic_load_int(&m._foreign) > 0


cdef bint _open_children(object mems):
    """Whether a mem of a context is still open (called with its lock held: allocates
    nothing)."""
    cdef TensorMem m
    for m in mems:
        if _relaxed_load_mem(&m.mem) != NULL:
            return True
    return False



cdef list _close_children(_ContextBase self, list mems, list groups, str kind):
    """Release the output groups and destroy the mems of a closing context; the reprs of
    the mems closed (each gets a ResourceWarning once the context is closed).  A mem or an
    output group the runtime would not free, or any other error, leaves the context open
    (not closing) and is raised."""
    cdef TensorMem m
    errors = []
    leftovers = []
    try:
        for g in groups:
            try:
                (<_OutputGroup>g)._release_c()
            except RKNNError as e:
                errors.append(e)
        for m in mems:
            desc = repr(m)
            try:
                m._destroy()
            except RKNNError as e:
                errors.append(e)
            else:
                leftovers.append(desc)
    except BaseException:
        # e.g. a view made in another thread since the check: stay open
        _relaxed_store_bint(&self._closing, False)
        raise
    if errors:
        # a mem or output the runtime would not free: keep the context open (retry)
        _relaxed_store_bint(&self._closing, False)
        _warn_leftovers(leftovers, kind)
        raise errors[0]
    return leftovers


cdef int _warn_leftovers(list leftovers, str kind) except -1:
    for desc in leftovers:
        _warn(f"{desc} was still open when its {kind} closed; it was closed now "
              "(close mems before their context)", ResourceWarning, stacklevel=2)
    return 0
