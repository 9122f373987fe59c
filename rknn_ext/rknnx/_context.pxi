# Context: one rknn_context, every call of the core API on it, and its lifetime rules.
#
# Threads.  Each Context has its own lock (no global lock).  Every call that uses the
# handle takes it, checks the handle is still open, makes the C call (with the GIL
# released where the call can block or copy) and releases it; close() takes it too, so a
# close() from another thread waits for a run in flight instead of destroying the
# context under it.  Waiters never hold the GIL while they block (see _acquire), and no
# Python object is allocated while the lock is held, so a garbage collection cannot run
# a __dealloc__ that needs the same lock on the thread holding it.
#
# Lifetime.  TensorMem, _OutputGroup and Contexts sharing our weights hold strong
# references to us, so __dealloc__ only runs when none is left.  Bindings made with
# set_io_mem / set_weight_mem / set_internal_mem are held in a dict (and a list for the
# run() check): a cycle context -> dict -> mem -> context is broken by the garbage
# collector clearing the dict, never the context's own fields (no_gc_clear), so the mem's
# __dealloc__ still finds the context handle.

import os as _os
import stat as _stat
import warnings as _warnings

from cpython.pythread cimport (PyThread_allocate_lock, PyThread_free_lock,
                               PyThread_acquire_lock, PyThread_release_lock,
                               NOWAIT_LOCK, WAIT_LOCK)
from libc.stdlib cimport realloc

cdef extern from "pythread.h" nogil:
    # safe without the GIL (CPython reads the OS thread id); Cython declares it with
    unsigned long PyThread_get_thread_ident()
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from libc.stdlib cimport calloc
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

cdef object _warn = _warnings.warn            # bound at import: usable at interpreter teardown

cdef enum:
    _FLOW_NONE = 0
    _FLOW_GENERAL = 1
    _FLOW_ZERO_COPY = 2

_FLOW_NAMES = ("none", "general", "zero-copy")

# the queries whose result is an rknn_tensor_attr, and whether they index outputs
_ATTR_QUERIES = {
    RKNN_QUERY_INPUT_ATTR: False, RKNN_QUERY_OUTPUT_ATTR: True,
    RKNN_QUERY_NATIVE_INPUT_ATTR: False, RKNN_QUERY_NATIVE_OUTPUT_ATTR: True,
    RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR: False, RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: True,
    RKNN_QUERY_CURRENT_INPUT_ATTR: False, RKNN_QUERY_CURRENT_OUTPUT_ATTR: True,
    RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR: False, RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR: True,
}

# Input types rknn_inputs_set converts from (pass_through = 0), besides the model's own.
_CONVERTIBLE_INPUT_TYPES = (RKNN_TENSOR_UINT8, RKNN_TENSOR_INT8, RKNN_TENSOR_FLOAT16,
                            RKNN_TENSOR_FLOAT32)


@cython.final
cdef class Input:
    """One input for :meth:`Context.inputs_set` (the fields of ``rknn_input``).

    Parameters
    ----------
    buf : buffer
        The data: a numpy array or anything with the buffer protocol, C-contiguous.
    index : int, optional
        Input index; default the position in the list given to ``inputs_set``.
    type : TensorType, optional
        Element type of ``buf``; default inferred from its buffer format (numpy dtype).
    fmt : TensorFormat, optional
        Layout of ``buf``; default the layout of the model input (its attribute's fmt).
    pass_through : bool, default False
        True: ``buf`` is already in the model's native type and layout; no conversion.

    .. versionadded:: 0.1.0
    """
    cdef public object buf                   # the data (held only during inputs_set)
    cdef public object index                 # int or None
    cdef public object type                  # TensorType or None
    cdef public object fmt                   # TensorFormat or None
    cdef public bint pass_through            # rknn_input.pass_through

    def __init__(self, buf, index=None, type=None, fmt=None, pass_through=False):
        self.buf = buf
        self.index = index
        self.type = type
        self.fmt = fmt
        self.pass_through = pass_through

    def __repr__(self):
        return (f"Input(index={self.index!r}, type={self.type!r}, fmt={self.fmt!r}, "
                f"pass_through={self.pass_through}, buf={type(self.buf).__name__})")


cdef object _py_int(object v, str what):
    try:
        return v.__index__()
    except AttributeError:
        raise TypeError(f"{what} must be an int, got {type(v).__name__}") from None


cdef int _py_enum(object v, str what, str enum) except? -1:
    """An enum-like argument as a C int: TypeError naming `what` for a non-int, ValueError
    for one outside the int range (the caller checks the enum's range)."""
    cdef object i = _py_int(v, what)
    if not -0x80000000 <= i <= 0x7FFFFFFF:
        raise ValueError(f"{what} {v!r} is not a {enum}")
    return i


cdef uint32_t _timeout(object v) except? 0xFFFFFFFF:
    cdef object i = _py_int(v, "timeout_ms")
    if not 0 <= i <= 0xFFFFFFFF:
        raise ValueError(f"timeout_ms must be 0..4294967295 (milliseconds), got {i}")
    return i


cdef tuple _strip_ones(tuple shape):
    cdef Py_ssize_t i = 0
    while i < len(shape) - 1 and shape[i] == 1:
        i += 1
    return shape[i:]


cdef tuple _dims_in_fmt(TensorAttr a, int fmt):
    """The attribute's dims in the order of layout `fmt` (NHWC <-> NCHW for images)."""
    d = a.dims
    if len(d) == 4 and fmt != <int>a.c.fmt:
        if a.c.fmt == RKNN_TENSOR_NHWC and fmt == RKNN_TENSOR_NCHW:
            return (d[0], d[3], d[1], d[2])
        if a.c.fmt == RKNN_TENSOR_NCHW and fmt == RKNN_TENSOR_NHWC:
            return (d[0], d[2], d[3], d[1])
    return d


cdef str _STALE_OUTPUTS = ("outputs_get: the input shapes changed since the last run() "
                           "(set_input_shapes); run() again before outputs_get")


cdef str _dynamic_hint(Context ctx, long long idx, TensorAttr a):
    """For a dynamic-shape model: its shape sets, the current one and what to do ("" for
    a static model).  Only called to word an error."""
    ranges = ctx._dynamic_ranges()
    if not ranges or idx >= len(ranges):
        return ""
    r = ranges[idx]
    sets = " | ".join([_shape_str(d) for d in r.dyn_range])
    return (f"; the model has dynamic input shapes: the shape sets of input {idx} are {sets}, "
            f"the current one is {_shape_str(a.dims)}; call set_input_shapes() with the "
            f"shape set of your data first")


cdef tuple _pass_through_need(Context ctx, long long idx, int f, TensorAttr a):
    """Bytes rknn_inputs_set reads for a pass_through input in layout `f`, from the native
    attribute, and where the number comes from: NHWC images are rows of w_stride pixels of
    the native channel count, NC1HWC2 is blocked, other layouts are packed."""
    if f == RKNN_TENSOR_UNDEFINED:
        f = a.c.fmt
    if a.c.n_dims != 4 or (f != RKNN_TENSOR_NHWC and f != RKNN_TENSOR_NC1HWC2):
        return a.c.size, f"{_shape_str(a.dims)} {_type_name(a.c.type)} packed"
    dynamic = bool(ctx._shapes_set or ctx._dynamic_ranges())
    try:
        if f == RKNN_TENSOR_NHWC:
            if dynamic:
                # no CURRENT_ form of the NHWC native query: the current attribute's
                # size_with_stride follows the same rule
                return a.c.size_with_stride, (f"{_type_name(a.c.type)} in the native NHWC "
                                              f"layout: CURRENT_INPUT_ATTR size_with_stride")
            n = ctx.query(RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR, idx)
            return n.size_with_stride, (f"{_type_name(a.c.type)} in the native NHWC layout "
                                        f"{list(n.dims)} w_stride {n.w_stride}: "
                                        f"NATIVE_NHWC_INPUT_ATTR size_with_stride")
        n = ctx.query(RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR if dynamic
                      else RKNN_QUERY_NATIVE_INPUT_ATTR, idx)
    except RKNNError:
        # the runtime does not say: it judges the size itself
        return a.c.size, f"{_shape_str(a.dims)} {_type_name(a.c.type)}"
    if n.fmt != RKNN_TENSOR_NC1HWC2:
        raise ValueError(f"input {idx} ({a.name!r}): pass_through NC1HWC2 data, but the "
                         f"input has no NC1HWC2 form on this chip (its native layout is "
                         f"{_fmt_name(n.fmt)}); pass it in {_fmt_name(n.fmt)}")
    return n.size_with_stride, (f"{_type_name(a.c.type)} in the native NC1HWC2 layout "
                                f"{list(n.dims)}: NATIVE_INPUT_ATTR size_with_stride")


cdef object _unmappable_fd_kind(int mode, unsigned long long rdev):
    """What an fd is, when it is a kind that can never hold NPU memory (else None)."""
    if _stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if _stat.S_ISSOCK(mode):
        return "a socket"
    if _stat.S_ISDIR(mode):
        return "a directory"
    if _stat.S_ISCHR(mode) and _os.major(rdev) == 1 and _os.minor(rdev) in (3, 7, 8, 9):
        # /dev/null, /dev/full, /dev/random, /dev/urandom (Linux mem devices)
        names = {3: "/dev/null", 7: "/dev/full", 8: "/dev/random", 9: "/dev/urandom"}
        return f"the character device {names[_os.minor(rdev)]}"
    return None


cdef str _shape_str(shape):
    return "(" + ", ".join(str(x) for x in shape) + ")"


cdef str _ranges_str(tuple ranges):
    """The shape sets of a dynamic model, per input: "input 0 'x': (1, 64, 64, 3) | ..."."""
    return "; ".join([f"input {r.index} {r.name!r}: "
                      + " | ".join([_shape_str(d) for d in r.dyn_range]) for r in ranges])


# -- the fast path of inputs_set -------------------------------------------------------------
# A list or tuple of plain buffers at their positions, each C-contiguous with an accepted
# type, the exact size and a matching shape, is checked in C against the facts cached in
# an _IOSpecs (built once per attribute set: _load_attrs makes a new _in_attrs tuple after
# set_input_shape(s) and close(), and the specs follow its identity).  Anything else, or
# any check that fails, goes to the general path, which checks everything again and
# raises its own errors: the fast path decides only "accept", never an error message.
cdef enum:
    _FAST_MAX = 16                           # inputs the fast path takes (stack arrays)

cdef int _FAST_TYPE[128]                     # one-character buffer format -> type, or -1
for _k in range(128):
    _FAST_TYPE[_k] = -1
for _s, _t in _FORMAT_TO_TYPE.items():
    if len(_s) == 1 and ord(_s) < 128:
        _FAST_TYPE[ord(_s)] = _t
del _k, _s, _t


cdef inline int _fast_type(const char* f) noexcept:
    """_type_of_format in C: the type of a buffer format, or -1 (then the general path)."""
    if f == NULL:
        return RKNN_TENSOR_UINT8
    if (f[0] == b"@" or f[0] == b"=" or f[0] == b"<") and f[1] != 0 and f[2] == 0:
        f += 1
    if f[0] != 0 and f[1] == 0 and <unsigned char>f[0] < 128:
        return _FAST_TYPE[<unsigned char>f[0]]
    return -1


cdef inline Py_ssize_t _strip_start(const Py_ssize_t* d, Py_ssize_t n) noexcept:
    """Where _strip_ones starts: leading ones dropped, the last dim always kept."""
    cdef Py_ssize_t i = 0
    while i < n - 1 and d[i] == 1:
        i += 1
    return i


@cython.final
cdef class _IOSpecs:
    """The cached per-tensor facts of one attribute set of a Context (internal)."""

    def __cinit__(self):
        self.ins = NULL
        self.outs = NULL

    def __dealloc__(self):
        free(self.ins)
        free(self.outs)


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
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError("cannot allocate the context lock")
        self._slots = {}
        self._bound = []
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
        if self._lock != NULL:
            PyThread_free_lock(self._lock)
            self._lock = NULL

    # -- locking ------------------------------------------------------------------------------
    cdef void _acquire(self) noexcept:
        # Try without blocking first (the common, uncontended case costs no GIL switch);
        # else wait with the GIL released, so the holder can finish its call.
        if not PyThread_acquire_lock(self._lock, NOWAIT_LOCK):
            with nogil:
                PyThread_acquire_lock(self._lock, WAIT_LOCK)
        self._owner = PyThread_get_thread_ident()

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
        self._owner = 0
        PyThread_release_lock(self._lock)

    cdef bint _held_here(self) noexcept nogil:
        """True when the calling thread holds the lock (so it must not wait for it)."""
        return self._owner != 0 and self._owner == PyThread_get_thread_ident()

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
        if self.ctx == 0 or self._closing:
            self._release()
            raise ValueError(f"{what.decode()} on closed {type(self).__name__}")
        return 0

    cdef int _check_open(self, const char* what) except -1:
        if self._pid != _this_pid:
            _raise_inherited(self, self._pid)
        if self.ctx == 0 or self._closing:
            raise ValueError(f"{what.decode()} on closed {type(self).__name__}")
        return 0

    cdef int _raise_dead_binding(self) except -1:
        for key, m in self._slots.items():
            if (<TensorMem>m)._dead:
                raise ValueError(f"the TensorMem bound as {key!r} was closed; bind another one "
                                 "(set_io_mem/set_weight_mem/set_internal_mem) before run()")
        raise ValueError("a bound TensorMem was closed")  # pragma: no cover

    cdef int _set_slot(self, object key, TensorMem mem) except -1:
        self._slots[key] = mem
        self._bound = list(self._slots.values())
        if mem._bound_to is None:
            mem._bound_to = _weakref.WeakSet()
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

    @property
    def closed(self):
        """True once :meth:`close` ran."""
        return self.ctx == 0

    @property
    def handle(self):
        """The context handle (int; 0 once closed)."""
        return self.ctx

    @property
    def mems(self):
        """The open :class:`TensorMem` objects this context created."""
        return [m for m in self._mems if (<TensorMem>m).mem != NULL]

    @property
    def bindings(self):
        """What the ``set_*_mem`` calls bound: a dict from the slot to the mem."""
        return dict(self._slots)


cdef bint _open_children(object mems):
    """Whether a mem of a context is still open (called with its lock held: allocates
    nothing)."""
    cdef TensorMem m
    for m in mems:
        if m.mem != NULL:
            return True
    return False


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
        global _live_contexts
        cdef Context src = None
        cdef TensorMem mm = None
        cdef rknn_init_extend ext
        cdef rknn_init_extend* pext = NULL
        cdef uint32_t cflags
        cdef void* ptr = NULL
        cdef uint32_t size = 0
        cdef Py_buffer view
        cdef bint have_view = False
        cdef bytes path
        cdef rknn_context h = 0
        cdef int ret
        cdef uint64_t off, avail, msize
        if self.ctx != 0:
            raise RuntimeError("Context is already initialized")
        cflags = _u32(flags, "flags")
        ensure_runtime()
        require(<void*>_api.rknn_init, b"rknn_init")
        memset(&ext, 0, sizeof(ext))
        if share_weights_with is not None:
            if not isinstance(share_weights_with, Context):
                raise TypeError(f"share_weights_with must be a Context, got "
                                f"{type(share_weights_with).__name__}")
            src = share_weights_with
            src._check_open(b"share_weights_with")
            if src._dynamic_ranges():
                raise ValueError(
                    "share_weights_with: the source Context holds a dynamic-shape model "
                    f"({_ranges_str(src._dynamic_ranges())}); the runtime refuses "
                    "RKNN_FLAG_SHARE_WEIGHT_MEM for dynamic-shape models: load the model "
                    "into its own Context instead")
            ext.ctx = src.ctx
            pext = &ext
            cflags |= RKNN_FLAG_SHARE_WEIGHT_MEM
        if model_mem is not None:
            if not isinstance(model_mem, TensorMem):
                raise TypeError(f"model_mem must be a TensorMem, got {type(model_mem).__name__}")
            mm = model_mem
            mm._check_open("Context(model_mem=...)")
            off = _u32(model_offset, "model_offset")
            if off >= mm.mem.size:
                raise ValueError(f"model_offset {off} is outside the {mm.mem.size}-byte model_mem")
            avail = mm.mem.size - off
            msize = avail if model_size is None else _u32(model_size, "model_size")
            if msize == 0 or msize > avail:
                raise ValueError(f"model_size must be 1..{avail} bytes (the rest of model_mem "
                                 f"after model_offset), got {msize}")
            if mm.mem.virt_addr == NULL:
                raise ValueError("model_mem has no CPU mapping (virt_addr is NULL)")
            ext.real_model_offset = <int32_t>(mm.mem.offset + off)
            ext.real_model_size = <uint32_t>msize
            ext.model_buffer_fd = mm.mem.fd
            ext.model_buffer_flags = mm.mem.flags
            pext = &ext
            cflags |= RKNN_FLAG_MODEL_BUFFER_ZERO_COPY
            ptr = <char*>_mem_data(mm.mem) + off
            size = <uint32_t>msize
            if model is not None:
                raise ValueError("pass either model or model_mem, not both")
        elif model is None:
            raise TypeError("Context() needs a model: a path, the model bytes, or model_mem=")
        elif isinstance(model, (str, _os.PathLike)):
            path = _os.fsencode(model)
            if b"\0" in path or not path:
                raise ValueError(f"model path {model!r} is empty or contains NUL")
            ptr = <char*>path
            size = 0
        else:
            try:
                PyObject_GetBuffer(model, &view, PyBUF_SIMPLE)
            except TypeError:
                raise TypeError(f"model must be a path (str/PathLike), bytes or a buffer, "
                                f"got {type(model).__name__}") from None
            except (BufferError, ValueError) as e:
                raise ValueError(f"model must be a C-contiguous buffer: {e}") from None
            have_view = True
            if view.len == 0 or view.len > 0xFFFFFFFF:
                PyBuffer_Release(&view)
                raise ValueError(f"model bytes must be 1..4294967295 bytes, got {view.len} "
                                 "(an empty buffer would be read as a file path)")
            ptr = view.buf
            size = <uint32_t>view.len
        # Counted before rknn_init runs (GIL released): a load_runtime() switch in another
        # thread then refuses, instead of leaving this context in the old library.  Under
        # the loader lock, so no switch is half-done; undone if the init fails.
        with _load_lock:
            _live_contexts += 1
        ret = RKNN_ERR_FAIL
        try:
            if _api.rknn_init == NULL:       # the runtime was switched since the check
                require(<void*>_api.rknn_init, b"rknn_init")
            with nogil:
                ret = _api.rknn_init(&h, ptr, size, cflags, pext)
        finally:
            if have_view:
                PyBuffer_Release(&view)
            if ret < 0 or h == 0:
                if h != 0 and _api.rknn_destroy != NULL:
                    _api.rknn_destroy(h)
                    h = 0
                _live_contexts -= 1
        check(ret, b"rknn_init")
        if h == 0:
            raise RKNNError("rknn_init succeeded but returned a NULL context", None, "rknn_init")
        self.ctx = h
        self.flags = cflags
        self._counted = True
        self._note_chip()
        if mm is not None:
            self._model_mem = mm
            mm._pins += 1
        if src is not None:
            self._weights_from = src
            src._weight_borrowers += 1

    def __dealloc__(self):
        # Only frees (STYLE rule 8): no mem, output group or borrower is alive (each holds
        # a reference to us), so nothing else can use the handle.
        global _live_contexts
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
            _live_contexts -= 1
            if self._model_mem is not None:
                self._model_mem._pins -= 1
            if self._weights_from is not None:
                self._weights_from._weight_borrowers -= 1

    cdef int _flow_error(self, int flow, const char* fn) except -1:
        """Raise FlowError for a call of `flow` on a context in the other flow."""
        want = _FLOW_NAMES[flow]
        have = _FLOW_NAMES[self._flow]
        by = self._flow_set_by.decode() if self._flow_set_by != NULL else "an earlier call"
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
        global _live_contexts
        cdef TensorMem m
        cdef _OutputGroup g
        cdef PyObject* p
        cdef rknn_context h
        cdef int ret = 0
        if self.ctx == 0:
            return
        self._check_process()
        self._check_not_busy("close")
        if self._weight_borrowers > 0:
            raise RuntimeError(f"Context lends its weights to {self._weight_borrowers} open "
                               "Context(s) (share_weights_with); close them first")
        # Under the lock: mark the context closing (every new call is refused from now on,
        # so no mem or output group can appear behind our back) and take the lists.  A
        # call in flight in another thread holds the lock, so it has finished and
        # registered what it made before we look.
        self._acquire()
        if self.ctx == 0 or self._closing:
            self._release()
            return
        self._closing = True
        mems = [m for m in self._mems if m.mem != NULL]
        groups = []
        p = self._groups
        while p != NULL:
            g = <_OutputGroup>p
            if g.outs != NULL:
                groups.append(g)
            p = g._next                      # read after append: a collection may unlink
        self._release()
        try:
            # the view rule (see _check_no_views): views of our mems and outputs are
            # refused from now on (_closing), counted here, and counted again by each
            # mem / output group under the lock before it is freed
            _check_no_views(sum([m._exports for m in mems]) + sum([g._exports for g in groups])
                            + self._cb_views)
            for m in mems:
                if m._pins:
                    raise BufferError(f"{m!r} is the model buffer of an open Context; close "
                                      "that Context first")
        except BufferError:
            self._closing = False
            raise
        errors = []
        leftovers = []
        try:
            for g in groups:
                try:
                    g._release_c()
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
            self._closing = False
            raise
        if errors:
            # a mem or output the runtime would not free: keep the context open (retry)
            self._closing = False
            for desc in leftovers:
                _warn(f"{desc} was still open when its Context closed; it was closed now "
                      "(close mems before their context)", ResourceWarning, stacklevel=2)
            raise errors[0]
        self._acquire()
        h = self.ctx
        if _open_children(self._mems) or self._groups_open():
            # cannot happen (new calls are refused while closing); never destroy the
            # context under a buffer that would then dangle
            self._closing = False
            self._release()
            raise BufferError("a TensorMem or outputs were created while the Context was "
                              "closing; close() again")
        if h != 0 and _api.rknn_destroy != NULL:
            with nogil:
                ret = _api.rknn_destroy(h)
        if ret >= 0:
            self.ctx = 0
        self._closing = False
        self._release()
        if ret < 0:
            # the runtime kept the context: it stays open (its mems are closed) and
            # close() may be retried
            for desc in leftovers:
                _warn(f"{desc} was still open when its Context closed; it was closed now "
                      "(close mems before their context)", ResourceWarning, stacklevel=2)
            check(ret, b"rknn_destroy")
        if self._counted:
            self._counted = False
            _live_contexts -= 1
            if self._model_mem is not None:
                self._model_mem._pins -= 1
            if self._weights_from is not None:
                self._weights_from._weight_borrowers -= 1
        # drop references only now, outside the lock (a mem freed here takes its
        # own context's lock)
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
        self._in_attrs = self._out_attrs = None
        for desc in leftovers:
            _warn(f"{desc} was still open when its Context closed; it was closed now "
                  "(close mems before their context)", ResourceWarning, stacklevel=2)
        if destroy_error is not None:
            # the context is closed; what a destroy callback raised is still reported
            raise destroy_error

    def __enter__(self):
        self._check_open(b"__enter__")
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def flow(self):
        """``"none"``, ``"general"`` or ``"zero-copy"``: the flow the first I/O call chose."""
        return _FLOW_NAMES[self._flow]

    def __repr__(self):
        if self.ctx == 0:
            return "<Context closed>"
        return (f"<Context handle=0x{self.ctx:x} flags=0x{self.flags:x} "
                f"flow={_FLOW_NAMES[self._flow]}>")

    # -- model description -------------------------------------------------------------------
    cdef int _load_attrs(self) except -1:
        """Query and cache the input/output attributes (the current shape's after
        set_input_shapes)."""
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
            # buffers are sized by), the CURRENT_ ones the shapes the runtime computes at
            if self._shapes_set or self._dynamic_ranges():
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
        self._in_attrs = tuple(ins)
        self._out_attrs = tuple(outs)
        self._attrs_gen = g
        return 0

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
        self._load_attrs()
        return len(self._in_attrs)

    @property
    def n_output(self):
        """Number of model outputs."""
        self._check_open(b"n_output")
        self._load_attrs()
        return len(self._out_attrs)

    @property
    def input_attrs(self):
        """The input attributes (``INPUT_ATTR``, or ``CURRENT_INPUT_ATTR`` after
        :meth:`set_input_shapes`), as a tuple of copies."""
        self._check_open(b"input_attrs")
        self._load_attrs()
        return tuple([(<TensorAttr>a).copy() for a in self._in_attrs])

    @property
    def output_attrs(self):
        """The output attributes, as a tuple of copies (see :attr:`input_attrs`)."""
        self._check_open(b"output_attrs")
        self._load_attrs()
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
        cdef int c
        cdef long long idx
        cdef rknn_input_output_num io
        cdef rknn_tensor_attr a
        cdef rknn_perf_detail pd
        cdef rknn_perf_run pr
        cdef rknn_sdk_version sv
        cdef rknn_mem_size ms
        cdef rknn_custom_string cs
        cdef rknn_tensor_mem dm
        cdef rknn_input_range* rng
        cdef int ret
        cdef uint32_t r, k
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
            # the text is the runtime's and valid until its next call: copy it under the lock
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
        if c == RKNN_QUERY_PERF_RUN:
            memset(&pr, 0, sizeof(pr))
            self._query_into(RKNN_QUERY_PERF_RUN, &pr, sizeof(pr))
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
            return self._query_range(<uint32_t>idx)
        raise ValueError(f"query command {cmd!r} is not handled")  # pragma: no cover

    cdef object _query_range(self, uint32_t idx):
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

    cdef int _check_index(self, long long idx, bint output) except -1:
        cdef Py_ssize_t n
        if self._in_attrs is None:
            try:
                self._load_attrs()
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
        global _live_contexts
        cdef rknn_context src, out = 0
        cdef int ret
        cdef Context c = Context.__new__(Context)
        self._check_open(b"dup")
        require(<void*>_api.rknn_dup_context, b"rknn_dup_context")
        self._require_chip(b"rknn_dup_context")
        if self._dynamic_ranges():
            raise ValueError(
                "dup: the model has dynamic input shapes "
                f"({_ranges_str(self._dynamic_ranges())}); the runtime refuses "
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
        _live_contexts += 1
        # the duplicate reads the same model buffer / borrowed weights
        if self._model_mem is not None:
            c._model_mem = self._model_mem
            self._model_mem._pins += 1
        if self._weights_from is not None:
            c._weights_from = self._weights_from
            self._weights_from._weight_borrowers += 1
        return c

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
        cdef rknn_tensor_attr* arr
        cdef uint32_t n, i
        cdef int ret
        self._check_open(b"set_input_shapes")
        items = list(attrs)
        for a in items:
            if not isinstance(a, TensorAttr):
                raise TypeError(f"set_input_shapes takes TensorAttr objects, got "
                                f"{type(a).__name__}")
        self._load_attrs()
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
        cdef CustomOp op
        cdef _CustomOpSet opset
        cdef rknn_custom_op* cop
        cdef _OpReg reg
        cdef int ret
        cdef bytes b
        self._check_open(b"register_custom_ops")
        self._check_not_busy("register_custom_ops")
        items = list(ops) if not isinstance(ops, CustomOp) else [ops]
        if not items:
            raise ValueError("register_custom_ops needs at least one CustomOp")
        seen = set() if self._custom is None else {o.op_type for o in (<_CustomOpSet>self._custom).ops}
        for o in items:
            if not isinstance(o, CustomOp):
                raise TypeError(f"register_custom_ops takes CustomOp objects, got {type(o).__name__}")
            if (<CustomOp>o).op_type is None or (<CustomOp>o).compute is None:
                raise TypeError("a CustomOp made without __init__ (no op_type/compute) cannot "
                                "be registered; create it with CustomOp(op_type, compute)")
            if (<CustomOp>o).target != RKNN_TARGET_TYPE_CPU:
                raise NotSupportedError(
                    f"custom op {(<CustomOp>o).op_type!r} targets the GPU: rknnx runs custom ops "
                    "in Python on the CPU only (an OpenCL op needs its kernel in C)", None,
                    "rknn_register_custom_ops")
            if (<CustomOp>o).op_type in seen:
                raise ValueError(f"op type {(<CustomOp>o).op_type!r} is registered already or "
                                 "given twice")
            seen.add((<CustomOp>o).op_type)
        require(<void*>_api.rknn_register_custom_ops, b"rknn_register_custom_ops")
        self._require_chip(b"rknn_register_custom_ops")
        if self._custom is None:
            self._custom = _CustomOpSet.__new__(_CustomOpSet)
        opset = self._custom
        for o in items:
            op = o
            cop = opset._new_cop()
            cop.version = op.version
            cop.target = RKNN_TARGET_TYPE_CPU
            b = op.op_type.encode("utf-8")
            memcpy(cop.op_type, <const char*>b, len(b))
            cop.init = _tramp_init
            if op.prepare is not None:
                cop.prepare = _tramp_prepare
            cop.compute = _tramp_compute
            if op.destroy is not None:
                cop.destroy = _tramp_destroy
            reg = _OpReg.__new__(_OpReg)
            reg.op = op
            reg.opset = opset
            reg.context = self
            prev = getattr(_registering, "reg", None)
            _registering.reg = reg
            try:
                self._enter(b"register_custom_ops")
                with nogil:
                    ret = _api.rknn_register_custom_ops(self.ctx, cop, 1)
                self._release()
            finally:
                _registering.reg = prev
            if ret < 0:
                _check_custom(ret, b"rknn_register_custom_ops", opset)
            check(ret, b"rknn_register_custom_ops")
            opset.ops.append(op)

    @property
    def custom_ops(self):
        """The :class:`CustomOp` objects registered on this context."""
        return [] if self._custom is None else list((<_CustomOpSet>self._custom).ops)

    # -- general flow ------------------------------------------------------------------------
    cdef bint _groups_open(self) noexcept:
        """Whether an output group of ours still holds runtime buffers (allocates nothing)."""
        cdef PyObject* p = self._groups
        while p != NULL:
            if (<_OutputGroup>p).outs != NULL:
                return True
            p = (<_OutputGroup>p)._next
        return False

    cdef _IOSpecs _current_specs(self):
        """The _IOSpecs of the cached attributes (built now if they changed)."""
        cdef _IOSpecs sp = self._specs
        cdef TensorAttr a
        cdef _InputSpec* s
        cdef Py_ssize_t i, j, n, t, start
        cdef Py_ssize_t d[16]
        self._load_attrs()
        if sp is not None and sp.src is self._in_attrs:
            return sp
        sp = _IOSpecs.__new__(_IOSpecs)
        sp.src = self._in_attrs
        sp.n_in = n = len(self._in_attrs)
        sp.ins = <_InputSpec*>calloc(max(n, 1), sizeof(_InputSpec))
        if sp.ins == NULL:
            raise MemoryError()
        for i in range(n):
            a = self._in_attrs[i]
            s = &sp.ins[i]
            s.n_elems = a.c.n_elems
            s.fmt = a.c.fmt
            s.fast = (0 <= s.fmt < RKNN_TENSOR_FORMAT_MAX and s.fmt != RKNN_TENSOR_NC1HWC2
                      and a.c.n_dims <= RKNN_MAX_DIMS)
            for t in range(RKNN_TENSOR_TYPE_MAX):
                if _ITEMSIZE[t] != 0 and (t in _CONVERTIBLE_INPUT_TYPES or t == <int>a.c.type):
                    s.types |= (<uint32_t>1) << t
            if s.fast:
                for j in range(a.c.n_dims):
                    d[j] = a.c.dims[j]
                start = _strip_start(d, a.c.n_dims)
                s.ndims = <int>(a.c.n_dims - start)
                for j in range(s.ndims):
                    s.dims[j] = d[start + j]
        sp.n_out = n = len(self._out_attrs)
        sp.outs = <_Layout*>calloc(max(2 * n, 1), sizeof(_Layout))
        if sp.outs == NULL:
            raise MemoryError()
        try:
            for i in range(n):
                self._output_layout(self._out_attrs[i], False, &sp.outs[i])
                self._output_layout(self._out_attrs[i], True, &sp.outs[n + i])
        except Exception:
            # outputs_get computes them per call then, and raises there as it always did
            free(sp.outs)
            sp.outs = NULL
        self._specs = sp
        return sp

    cdef int _inputs_set_fast(self, tuple items) except -1:
        """inputs_set of plain buffers at their positions if every one passes the checks
        in C: 1 when done (C called), 0 when the general path must take over (nothing
        done, every view released)."""
        cdef _IOSpecs sp = self._current_specs()   # kept: user code may replace _specs
        cdef unsigned long long gen = self._attrs_gen   # the shapes sp was made for
        cdef Py_ssize_t n = len(items), k, i, nviews = 0, start
        cdef rknn_input arr[_FAST_MAX]
        cdef Py_buffer views[_FAST_MAX]
        cdef _InputSpec* s
        cdef Py_buffer* v
        cdef int t, ret = 0
        cdef bint ok = True
        if n == 0 or n > sp.n_in or n > _FAST_MAX:
            return 0
        try:
            for k in range(n):
                item = items[k]
                s = &sp.ins[k]
                if not s.fast or item is None or isinstance(item, Input):
                    ok = False
                    break
                v = &views[k]
                try:
                    PyObject_GetBuffer(item, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
                except (BufferError, ValueError, TypeError):
                    # the general path asks again and words the error
                    ok = False
                    break
                nviews += 1
                t = _fast_type(v.format)
                if t < 0 or not (s.types >> t) & 1 or v.len != s.n_elems * _ITEMSIZE[t]:
                    ok = False
                    break
                if v.ndim > 1 and v.itemsize == _ITEMSIZE[t]:
                    start = _strip_start(v.shape, v.ndim)
                    if v.ndim - start != s.ndims:
                        ok = False
                        break
                    for i in range(s.ndims):
                        if v.shape[start + i] != s.dims[i]:
                            ok = False
                            break
                    if not ok:
                        break
                arr[k].index = <uint32_t>k
                arr[k].buf = v.buf
                arr[k].size = <uint32_t>v.len
                arr[k].pass_through = 0
                arr[k].type = <rknn_tensor_type>t
                arr[k].fmt = <rknn_tensor_format>s.fmt
            if not ok:
                return 0
            self._enter(b"inputs_set")
            if self._shape_gen != gen:
                # set_input_shapes came after the checks: the general path checks again
                self._release()
                return 0
            if self._flow == _FLOW_ZERO_COPY:
                self._release()
                self._flow_error(_FLOW_GENERAL, b"rknn_inputs_set")
            with nogil:
                ret = _api.rknn_inputs_set(self.ctx, <uint32_t>n, arr)
            if ret >= 0 and self._flow == _FLOW_NONE:
                self._flow = _FLOW_GENERAL
                self._flow_set_by = b"inputs_set()"
            self._release()
        finally:
            for k in range(nviews):
                PyBuffer_Release(&views[k])
        check(ret, b"rknn_inputs_set")
        return 1

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
        cdef Py_ssize_t n, k, nviews = 0
        cdef rknn_input* arr = NULL
        cdef Py_buffer* views = NULL
        cdef int ret = 0, t, f
        cdef TensorAttr a
        cdef Input inp
        cdef long long idx
        cdef Py_ssize_t need
        cdef unsigned long long gen
        self._check_open(b"inputs_set")
        if self._flow == _FLOW_ZERO_COPY:
            self._flow_error(_FLOW_GENERAL, b"rknn_inputs_set")
        require(<void*>_api.rknn_inputs_set, b"rknn_inputs_set")
        if self._no_general:
            self._require_chip(b"rknn_inputs_set")
        self._load_attrs()
        if type(inputs) is tuple:
            if self._inputs_set_fast(<tuple>inputs):
                return
        elif type(inputs) is list:
            if self._inputs_set_fast(tuple(<list>inputs)):
                return
        # the attrs checked against, and the shapes they are of (compared under the lock)
        self._load_attrs()
        gen = self._attrs_gen
        ins = self._in_attrs
        if isinstance(inputs, (list, tuple)):
            items = list(inputs)
        else:
            items = [inputs]
        n = len(items)
        if n == 0:
            raise ValueError(f"inputs_set needs at least one input (the model has "
                             f"{len(ins)})")
        if n > len(ins):
            raise ValueError(f"{n} inputs given; the model has {len(ins)}")
        arr = <rknn_input*>PyMem_Malloc(n * sizeof(rknn_input))
        views = <Py_buffer*>PyMem_Malloc(n * sizeof(Py_buffer))
        if arr == NULL or views == NULL:
            PyMem_Free(arr)
            PyMem_Free(views)
            raise MemoryError()
        try:
            memset(arr, 0, n * sizeof(rknn_input))
            seen = set()
            for k in range(n):
                item = items[k]
                inp = item if isinstance(item, Input) else Input(item)
                pyidx = k if inp.index is None else _py_int(inp.index, "Input.index")
                if not 0 <= pyidx < len(ins):
                    raise IndexError(f"input index {pyidx} out of range: the model has "
                                     f"{len(ins)} input(s)")
                idx = pyidx
                if idx in seen:
                    raise ValueError(f"input index {idx} given twice")
                seen.add(idx)
                a = ins[idx]
                label = f"input {idx} ({a.name!r})"
                if inp.buf is None:
                    raise TypeError(f"{label}: buf is None; expected a buffer (numpy array)")
                try:
                    PyObject_GetBuffer(inp.buf, &views[k], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
                except (BufferError, ValueError) as e:
                    raise ValueError(f"{label} must be a C-contiguous buffer "
                                     f"(np.ascontiguousarray): {e}") from None
                except TypeError:
                    raise TypeError(f"{label}: expected a buffer (numpy array, bytes), got "
                                    f"{type(inp.buf).__name__}") from None
                nviews += 1
                if inp.type is None:
                    t = _type_of_format(views[k].format)
                    if t < 0:
                        raise TypeError(f"{label}: buffer format "
                                        f"{views[k].format.decode('ascii', 'replace')!r} has no "
                                        "RKNN tensor type; expected uint8, int8, float16 or "
                                        "float32 (or pass Input(type=...))")
                else:
                    t = _py_enum(inp.type, f"{label}: Input.type", "TensorType")
                    if not _type_known(t):
                        raise ValueError(f"{label}: type {inp.type!r} is not a TensorType")
                f = a.c.fmt if inp.fmt is None else _py_enum(inp.fmt, f"{label}: Input.fmt",
                                                             "TensorFormat")
                if not 0 <= f < RKNN_TENSOR_FORMAT_MAX:
                    raise ValueError(f"{label}: fmt {inp.fmt!r} is not a TensorFormat")
                if inp.pass_through:
                    if t != <int>a.c.type:
                        raise ValueError(f"{label}: pass_through needs data in the model type "
                                         f"{_type_name(a.c.type)}, got {_type_name(t)}")
                    need, where = _pass_through_need(self, idx, f, a)
                    if views[k].len < need:
                        raise ValueError(f"{label}: pass_through data of {views[k].len} bytes "
                                         f"is too small: need {need} bytes ({where})")
                else:
                    if t not in _CONVERTIBLE_INPUT_TYPES and t != <int>a.c.type:
                        raise ValueError(f"{label}: cannot convert from {_type_name(t)}; "
                                         f"expected uint8, int8, float16, float32 or the model "
                                         f"type {_type_name(a.c.type)}")
                    if f == RKNN_TENSOR_NC1HWC2:
                        raise ValueError(f"{label}: NC1HWC2 data needs pass_through=True")
                    if _ITEMSIZE[t] == 0:
                        raise ValueError(f"{label}: {_type_name(t)} data cannot be converted")
                    need = a.c.n_elems * _ITEMSIZE[t]
                    expected = _dims_in_fmt(a, f)
                    if views[k].len != need:
                        raise ValueError(f"{label} expects {need} bytes ({_shape_str(expected)} "
                                         f"{_type_name(t)} {_fmt_name(f)}), got {views[k].len}"
                                         + _dynamic_hint(self, idx, a))
                    if views[k].ndim > 1 and views[k].itemsize == _ITEMSIZE[t]:
                        got = tuple([views[k].shape[i] for i in range(views[k].ndim)])
                        if _strip_ones(got) != _strip_ones(expected):
                            raise ValueError(f"{label} expects shape {_shape_str(expected)} "
                                             f"({_fmt_name(f)}), got {_shape_str(got)}"
                                             + _dynamic_hint(self, idx, a))
                arr[k].index = <uint32_t>idx
                arr[k].buf = views[k].buf
                arr[k].size = <uint32_t>views[k].len
                arr[k].pass_through = 1 if inp.pass_through else 0
                arr[k].type = <rknn_tensor_type>t
                arr[k].fmt = <rknn_tensor_format>f
            self._enter(b"inputs_set")
            if self._shape_gen != gen:
                self._release()
                raise ValueError("inputs_set: the input shapes changed (set_input_shapes, "
                                 "concurrently) while the inputs were checked; call inputs_set "
                                 "again with buffers of the current input_attrs")
            if self._flow == _FLOW_ZERO_COPY:
                self._release()
                self._flow_error(_FLOW_GENERAL, b"rknn_inputs_set")
            with nogil:
                ret = _api.rknn_inputs_set(self.ctx, <uint32_t>n, arr)
            if ret >= 0 and self._flow == _FLOW_NONE:
                self._flow = _FLOW_GENERAL
                self._flow_set_by = b"inputs_set()"
            self._release()
        finally:
            for k in range(nviews):
                PyBuffer_Release(&views[k])
            PyMem_Free(views)
            PyMem_Free(arr)
        check(ret, b"rknn_inputs_set")

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
        cdef TensorMem m
        memset(&ext, 0, sizeof(ext))
        if non_block:
            ext.non_block = 1
        if timeout_ms:
            ext.timeout_ms = _timeout(timeout_ms)
        self._check_open(b"run")
        require(<void*>_api.rknn_run, b"rknn_run")
        while True:
            # set_io_mem bindings are checked again only after a shape change
            if self._io_gen != self._shape_gen:
                self._check_io_dims()
            self._enter(b"run")
            if self._io_gen == self._shape_gen:
                break
            self._release()
        # zero-copy: refuse to run with memory the user destroyed (checked under the lock:
        # TensorMem.close marks its bindings dead under this same lock)
        for m in self._bound:
            if m._dead:
                self._release()
                self._raise_dead_binding()
        with nogil:
            ret = _api.rknn_run(self.ctx, &ext)
        if ret >= 0:
            self._run_gen = self._shape_gen
        self._release()
        if ret < 0 and self._custom is not None:
            _check_custom(ret, b"rknn_run", <_CustomOpSet>self._custom)
        check(ret, b"rknn_run")
        return ext.frame_id

    cdef int _check_io_dims(self) except -1:
        """Raise ValueError if a set_io_mem binding was made for other dims than the
        current attributes'; else note the shapes as checked (run() skips this then)."""
        cdef unsigned long long gen
        self._load_attrs()
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

    # -- the chip -----------------------------------------------------------------------------
    cdef int _note_chip(self) except -1:
        """Look the chip of the new context up once (the emulator's personality, else the
        board's device tree) and note whether it has the general flow."""
        self._chip = _chip_of(self.ctx)
        self._no_general = (self._chip is not None
                            and not _platforms.supports(self._chip, "rknn_inputs_set"))
        return 0

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

    cdef tuple _dynamic_ranges(self):
        """The INPUT_DYNAMIC_RANGE of every input if the model has several shape sets
        (a dynamic-shape model), else (); queried once per context."""
        cdef uint32_t i
        cdef rknn_input_output_num io
        if self._ranges is None:
            ranges = ()
            if self._chip is None or _platforms.supports_query(
                    self._chip, RKNN_QUERY_INPUT_DYNAMIC_RANGE):
                try:
                    # straight to C, not through query(): _load_attrs asks this
                    self._query_into(RKNN_QUERY_IN_OUT_NUM, &io, sizeof(io))
                    ranges = tuple([self._query_range(i) for i in range(io.n_input)])
                except RKNNError:
                    ranges = ()
                if not any([r.shape_number > 1 for r in ranges]):
                    ranges = ()
            self._ranges = ranges
        return self._ranges

    @property
    def is_dynamic(self):
        """True for a dynamic-shape model (``INPUT_DYNAMIC_RANGE`` lists more than one
        shape set for an input)."""
        self._check_open(b"is_dynamic")
        return bool(self._dynamic_ranges())

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

    cdef int _output_layout(self, TensorAttr a, bint want_float, _Layout* lay) except -1:
        """What rknn_outputs_get returns for output `a`: NCHW, float32 or the model type."""
        cdef rknn_tensor_attr c = a.c
        if c.n_dims == 4 and c.fmt == RKNN_TENSOR_NHWC:
            c.dims[1], c.dims[2], c.dims[3] = a.c.dims[3], a.c.dims[1], a.c.dims[2]
            c.fmt = RKNN_TENSOR_NCHW
        c.w_stride = 0
        c.h_stride = 0
        c.size_with_stride = 0
        if want_float:
            c.type = RKNN_TENSOR_FLOAT32
        elif c.fmt == RKNN_TENSOR_NC1HWC2:
            c.fmt = RKNN_TENSOR_UNDEFINED
        if not _type_known(c.type) or _FORMAT[<int>c.type] == NULL:
            _layout_raw(lay, 0)
            return 0
        _layout_of_attr(&c, lay, -1)
        return 0

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
        cdef uint32_t n, i
        cdef int ret = 0, ret2 = 0, t
        cdef rknn_output* arr = NULL
        cdef Py_buffer* views = NULL
        cdef Py_ssize_t nviews = 0, need
        cdef rknn_output_extend oext
        cdef _OutputGroup g
        cdef Output o
        cdef TensorAttr a
        cdef _Layout lay
        cdef bint wf = bool(want_float)
        cdef _IOSpecs sp
        cdef tuple items
        cdef unsigned long long gen
        self._check_open(b"outputs_get")
        if self._flow == _FLOW_ZERO_COPY:
            self._flow_error(_FLOW_GENERAL, b"rknn_outputs_get")
        require(<void*>_api.rknn_outputs_get, b"rknn_outputs_get")
        if self._no_general:
            self._require_chip(b"rknn_outputs_get")
        require(<void*>_api.rknn_outputs_release, b"rknn_outputs_release")
        self._load_attrs()
        gen = self._attrs_gen
        if self._run_gen != gen:
            raise ValueError(_STALE_OUTPUTS)
        n = len(self._out_attrs)
        memset(&oext, 0, sizeof(oext))
        if out is not None:
            if not isinstance(out, (list, tuple)):
                raise TypeError(f"out must be a sequence (list or tuple) of buffers, one per "
                                f"output ({n}), got {type(out).__name__}")
            outs = list(out)
            if len(outs) != n:
                raise ValueError(f"out must hold one buffer per output: expected {n}, "
                                 f"got {len(outs)}")
            arr = <rknn_output*>calloc(max(n, 1), sizeof(rknn_output))
            views = <Py_buffer*>PyMem_Malloc(max(n, 1) * sizeof(Py_buffer))
            if arr == NULL or views == NULL:
                free(arr)
                PyMem_Free(views)
                raise MemoryError()
            try:
                for i in range(n):
                    a = self._out_attrs[i]
                    label = f"out[{i}] (output {a.name!r})"
                    try:
                        PyObject_GetBuffer(outs[i], &views[i],
                                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
                    except (BufferError, ValueError) as e:
                        raise ValueError(f"{label} must be a writable C-contiguous buffer: {e}") \
                            from None
                    except TypeError:
                        raise TypeError(f"{label}: expected a writable buffer (numpy array), "
                                        f"got {type(outs[i]).__name__}") from None
                    nviews += 1
                    self._output_layout(a, wf, &lay)
                    t = RKNN_TENSOR_FLOAT32 if wf else a.c.type
                    if _type_of_format(views[i].format) != t:
                        raise ValueError(f"{label} must be {dtype_of(t)} for "
                                         f"want_float={wf}, got buffer format "
                                         f"{views[i].format.decode('ascii', 'replace')!r}")
                    if views[i].len != lay.nbytes:
                        raise ValueError(f"{label} needs exactly {lay.nbytes} bytes "
                                         f"({_shape_str(_layout_shape(&lay))} {dtype_of(t)}), "
                                         f"got {views[i].len}")
                    if views[i].ndim > 1:
                        got = tuple([views[i].shape[k] for k in range(views[i].ndim)])
                        if _strip_ones(got) != _strip_ones(_layout_shape(&lay)):
                            raise ValueError(f"{label} must have shape "
                                             f"{_shape_str(_layout_shape(&lay))}, got "
                                             f"{_shape_str(got)}")
                    arr[i].want_float = wf
                    arr[i].is_prealloc = 1
                    arr[i].index = i
                    arr[i].buf = views[i].buf
                    arr[i].size = <uint32_t>views[i].len
                self._enter(b"outputs_get")
                if self._shape_gen != gen or self._run_gen != gen:
                    self._release()
                    raise ValueError(_STALE_OUTPUTS)
                if self._flow == _FLOW_ZERO_COPY:
                    self._release()
                    self._flow_error(_FLOW_GENERAL, b"rknn_outputs_get")
                with nogil:
                    ret = _api.rknn_outputs_get(self.ctx, n, arr, &oext)
                    if ret >= 0:
                        ret2 = _api.rknn_outputs_release(self.ctx, n, arr)
                if ret >= 0:
                    self.last_frame_id = oext.frame_id
                if ret >= 0 and self._flow == _FLOW_NONE:
                    self._flow = _FLOW_GENERAL
                    self._flow_set_by = b"outputs_get()"
                self._release()
            finally:
                for i in range(nviews):
                    PyBuffer_Release(&views[i])
                PyMem_Free(views)
                free(arr)
            check(ret, b"rknn_outputs_get")
            check(ret2, b"rknn_outputs_release")
            return outs

        # runtime-allocated buffers: everything that can fail in Python is made first,
        # so the runtime's buffers always end up owned by the group
        sp = self._current_specs()
        g = _OutputGroup.__new__(_OutputGroup)
        g.context = self
        items = PyTuple_New(n)
        for i in range(n):
            o = Output.__new__(Output)
            o._group = g
            o._i = i
            o._want_float = wf
            o._src = self._out_attrs[i]        # copied when .attr is first read
            Py_INCREF(o)
            PyTuple_SET_ITEM(items, i, o)
        result = Outputs.__new__(Outputs)
        (<Outputs>result)._group = g
        (<Outputs>result)._items = items
        g._next = self._groups
        if self._groups != NULL:
            (<_OutputGroup>self._groups)._prev = <PyObject*>g
        self._groups = <PyObject*>g
        g._linked = True
        arr = <rknn_output*>calloc(max(n, 1), sizeof(rknn_output))
        if arr == NULL:
            raise MemoryError()
        for i in range(n):
            arr[i].want_float = wf
            arr[i].is_prealloc = 0
            arr[i].index = i
        self._enter(b"outputs_get")
        if self._shape_gen != gen or self._run_gen != gen:
            self._release()
            free(arr)
            raise ValueError(_STALE_OUTPUTS)
        if self._flow == _FLOW_ZERO_COPY:
            self._release()
            free(arr)
            self._flow_error(_FLOW_GENERAL, b"rknn_outputs_get")
        with nogil:
            ret = _api.rknn_outputs_get(self.ctx, n, arr, &oext)
        if ret >= 0:
            g.outs = arr
            g.n = n
            g.frame_id = oext.frame_id
            self.last_frame_id = oext.frame_id
            if self._flow == _FLOW_NONE:
                self._flow = _FLOW_GENERAL
                self._flow_set_by = b"outputs_get()"
        self._release()
        if ret < 0:
            free(arr)
            check(ret, b"rknn_outputs_get")
        for i in range(n):
            o = items[i]
            if sp.outs != NULL and sp.n_out == n:
                o._layout = sp.outs[i + n if wf else i]
            else:
                self._output_layout(self._out_attrs[i], wf, &o._layout)
            # never let a view reach past what the runtime returned
            if arr[i].buf == NULL:
                _layout_raw(&o._layout, 0)
            elif o._layout.nbytes > arr[i].size or o._layout.ndim == 0 and arr[i].size < o._layout.itemsize:
                _layout_raw(&o._layout, arr[i].size)
        return result

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
    cdef tuple _which_tensor(self, TensorAttr attr):
        """(is_output, index) of the tensor `attr` names: by name, else by an unambiguous
        index (the runtime's rule)."""
        cdef TensorAttr a
        self._load_attrs()
        name = attr.name
        if name:
            for a in self._in_attrs:
                if a.name == name:
                    return (False, a.c.index)
            for a in self._out_attrs:
                if a.name == name:
                    return (True, a.c.index)
            raise ValueError(f"attr.name {name!r} names no input or output of the model; "
                             f"expected one of {[a.name for a in self._in_attrs]} (inputs) "
                             f"or {[a.name for a in self._out_attrs]} (outputs)")
        ni, no = len(self._in_attrs), len(self._out_attrs)
        i = attr.c.index
        if no <= i < ni:
            return (False, i)
        if ni <= i < no:
            return (True, i)
        raise ValueError(f"attr (index {i}, no name) does not say which tensor it is: set "
                         f"attr.name to an input or output name (attributes from query() "
                         "carry it)")

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

        Notes
        -----
        The binding is for the tensor's current dims.  After :meth:`set_input_shapes`
        bind again with the new attributes (the vendor rebinds after each shape switch):
        :meth:`run` raises ValueError for a binding whose dims are no longer the
        model's.
        FlowError
            If the context is in the general flow.
        RKNNError
            The subclass of the status ``rknn_set_io_mem`` returned.

        .. versionadded:: 0.1.0
        """
        cdef _Layout lay
        cdef bint typed = True
        cdef int ret
        cdef TensorAttr model_attr
        cdef unsigned long long gen
        self._check_open(b"set_io_mem")
        mem._check_open("set_io_mem")
        if self._flow == _FLOW_GENERAL:
            self._flow_error(_FLOW_ZERO_COPY, b"rknn_set_io_mem")
        require(<void*>_api.rknn_set_io_mem, b"rknn_set_io_mem")
        is_out, idx = self._which_tensor(attr)
        gen = self._attrs_gen                  # the shapes model_attr is of
        model_attr = (self._out_attrs if is_out else self._in_attrs)[idx]
        kind = "output" if is_out else "input"
        if not is_out and attr.c.pass_through and attr.c.type != model_attr.c.type:
            raise ValueError(f"input {idx} ({model_attr.name!r}): pass_through needs the model "
                             f"type {_type_name(model_attr.c.type)}, got {_type_name(attr.c.type)}")
        if not _type_known(attr.c.type):
            raise ValueError(f"attr.type {attr.c.type} is not a TensorType")
        # the shape must be the model's (the current one of a dynamic model), in attr.fmt
        if attr.c.fmt == RKNN_TENSOR_NC1HWC2:
            if is_out:
                ncmd = (RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR
                        if self._shapes_set or self._dynamic_ranges()
                        else RKNN_QUERY_NATIVE_OUTPUT_ATTR)
            else:
                ncmd = (RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR
                        if self._shapes_set or self._dynamic_ranges()
                        else RKNN_QUERY_NATIVE_INPUT_ATTR)
            expected = self.query(ncmd, idx).dims
        else:
            expected = _dims_in_fmt(model_attr, attr.c.fmt)
        if attr.dims != expected:
            raise ValueError(f"{kind} {idx} ({model_attr.name!r}): attr.dims {list(attr.dims)} "
                             f"do not match the model's {list(expected)} ({attr.layout}); "
                             "expected the dims of the queried attribute")
        if attr.c.fmt == RKNN_TENSOR_NC1HWC2 and attr.c.type != model_attr.c.type:
            raise ValueError(f"{kind} {idx} ({model_attr.name!r}): NC1HWC2 is the native layout, "
                             f"in the model type {_type_name(model_attr.c.type)} only; got "
                             f"{_type_name(attr.c.type)} (use NHWC or NCHW for a converted type)")
        if _FORMAT[<int>attr.c.type] == NULL:
            typed = False
        else:
            # channel padding exists only in the model's own type (the emulator's rule,
            # emulator/runtime_layout.c)
            _layout_of_attr(&attr.c, &lay, model_attr.c.type)
            if lay.extent > mem.mem.size:
                raise ValueError(f"TensorMem of {mem.mem.size} bytes is too small for {kind} "
                                 f"{idx} ({model_attr.name!r}) as {_type_name(attr.c.type)} "
                                 f"{attr.layout} {list(attr.dims)}: expected at least "
                                 f"{lay.extent} bytes (w_stride/h_stride padding included)")
        self._enter(b"set_io_mem")
        if self._shape_gen != gen:
            self._release()
            raise ValueError("set_io_mem: the input shapes changed (set_input_shapes, "
                             "concurrently) while the binding was checked; bind again with "
                             "the current attributes")
        if self._flow == _FLOW_GENERAL:
            self._release()
            self._flow_error(_FLOW_ZERO_COPY, b"rknn_set_io_mem")
        if mem.mem == NULL:
            self._release()
            raise ValueError("set_io_mem on closed TensorMem")
        ret = _api.rknn_set_io_mem(self.ctx, mem.mem, &attr.c)
        if ret >= 0:
            # what run() compares with the current dims after a shape change
            self._io_dims[(kind, idx)] = model_attr.dims
        if ret >= 0 and self._flow == _FLOW_NONE:
            self._flow = _FLOW_ZERO_COPY
            self._flow_set_by = b"set_io_mem()"
        self._release()
        check(ret, b"rknn_set_io_mem")
        self._set_slot((kind, idx), mem)
        if typed:
            mem._layout = lay
            mem._attr = attr.copy()
            (<TensorAttr>mem._attr)._ntype = model_attr.c.type
            mem._bound = True
        else:
            mem._bound = False
            mem._attr = None

    cdef int _set_whole_mem(self, TensorMem mem, const char* what, bint weight) except -1:
        cdef int ret
        cdef rknn_mem_size ms
        self._check_open(what)
        mem._check_open(what.decode())
        if weight:
            require(<void*>_api.rknn_set_weight_mem, b"rknn_set_weight_mem")
        else:
            require(<void*>_api.rknn_set_internal_mem, b"rknn_set_internal_mem")
        memset(&ms, 0, sizeof(ms))
        try:
            self._query_into(RKNN_QUERY_MEM_SIZE, &ms, sizeof(ms))
        except RKNNError:
            pass                         # the runtime will judge the size itself
        else:
            need = ms.total_weight_size if weight else ms.total_internal_size
            if mem.mem.size < need:
                raise ValueError(f"TensorMem of {mem.mem.size} bytes is too small for the "
                                 f"{'weights' if weight else 'internal tensors'}: expected at "
                                 f"least {need} bytes (query(QueryCmd.MEM_SIZE))")
        self._enter(what)
        if mem.mem == NULL:
            self._release()
            raise ValueError(f"{what.decode()} on closed TensorMem")
        if weight:
            ret = _api.rknn_set_weight_mem(self.ctx, mem.mem)
        else:
            ret = _api.rknn_set_internal_mem(self.ctx, mem.mem)
        self._release()
        check(ret, b"rknn_set_weight_mem" if weight else b"rknn_set_internal_mem")
        self._set_slot("weight" if weight else "internal", mem)
        return 0

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
        self._set_whole_mem(mem, b"set_weight_mem", True)

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
        self._set_whole_mem(mem, b"set_internal_mem", False)

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
        cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
        cdef rknn_tensor_mem* m
        cdef TensorMem t = TensorMem.__new__(TensorMem)
        self._check_open(b"create_mem")
        require(<void*>_api.rknn_create_mem, b"rknn_create_mem")
        self._enter(b"create_mem")
        with nogil:
            m = _api.rknn_create_mem(self.ctx, <uint32_t>n)
        if m != NULL:
            # registered under the lock: a close() in another thread
            # either refused this call or will find the mem
            self._adopt(t, m, None, False)
        self._release()
        if m == NULL:
            raise RKNNError(f"rknn_create_mem returned NULL (size {n})", None, "rknn_create_mem")
        return t

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
        cdef uint64_t f = _alloc_flags(flags)
        cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
        cdef rknn_tensor_mem* m
        cdef TensorMem t = TensorMem.__new__(TensorMem)
        self._check_open(b"create_mem2")
        require(<void*>_api.rknn_create_mem2, b"rknn_create_mem2")
        self._enter(b"create_mem2")
        with nogil:
            m = _api.rknn_create_mem2(self.ctx, n, f)
        if m != NULL:
            # registered under the lock: a close() in another thread
            # either refused this call or will find the mem
            self._adopt(t, m, None, (f & RKNN_MEM_FLAG_ALLOC_NO_CONTEXT) != 0)
        self._release()
        if m == NULL:
            raise RKNNError(f"rknn_create_mem2 returned NULL (size {n}, flags 0x{f:x})", None,
                            "rknn_create_mem2")
        return t

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
        cdef long long cfd, coff
        cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
        cdef void* virt = NULL
        cdef Py_ssize_t vlen = 0
        cdef rknn_tensor_mem* m
        cdef TensorMem t = TensorMem.__new__(TensorMem)
        if isinstance(fd, int):
            cfd = fd
        elif hasattr(fd, "fileno"):
            cfd = fd.fileno()
            if owner is None:
                owner = fd
        else:
            raise TypeError(f"fd must be an int or have fileno(), got {type(fd).__name__}")
        if not 0 <= cfd <= 0x7FFFFFFF:
            raise ValueError(f"fd must be an open file descriptor (>= 0), got {cfd}")
        coff = offset
        if not 0 <= coff <= 0x7FFFFFFF:
            raise ValueError(f"offset must be 0..2147483647, got {coff}")
        try:
            st = _os.fstat(cfd)
        except OSError as e:
            raise ValueError(f"fd {cfd} is not an open file descriptor ({e.strerror})") from None
        # a regular file (or memfd) knows its size; a dma-buf may report 0: not checked
        if _stat.S_ISREG(st.st_mode) and coff + n > st.st_size:
            raise ValueError(f"offset + size ({coff} + {n}) is beyond the end of fd {cfd} "
                             f"({st.st_size} bytes)")
        pin = None
        if virt_addr is not None:
            if isinstance(virt_addr, int):
                if virt_addr == 0:
                    raise ValueError("virt_addr 0 is not an address (pass None to let the "
                                     "runtime map the fd)")
                virt = <void*><size_t>virt_addr
            else:
                pin = _view_pin(virt_addr, &virt, &vlen)
                if <uint64_t>vlen < <uint64_t>coff + n:
                    raise ValueError(f"virt_addr buffer of {vlen} bytes is smaller than "
                                     f"offset + size ({coff + n})")
        self._check_open(b"create_mem_from_fd")
        kind = _unmappable_fd_kind(st.st_mode, st.st_rdev)
        if kind is not None:
            raise ValueError(f"create_mem_from_fd: fd {cfd} is {kind}, which cannot be mapped "
                             "as NPU memory; expected a dma-buf, a memfd or a regular file")
        require(<void*>_api.rknn_create_mem_from_fd, b"rknn_create_mem_from_fd")
        self._require_chip(b"rknn_create_mem_from_fd")
        self._enter(b"create_mem_from_fd")
        with nogil:
            m = _api.rknn_create_mem_from_fd(self.ctx, <int32_t>cfd, virt, <uint32_t>n,
                                             <int32_t>coff)
        if m != NULL:
            # registered under the lock: a close() in another thread
            # either refused this call or will find the mem
            self._adopt(t, m, owner, False)
        self._release()
        if m == NULL:
            raise RKNNError(f"rknn_create_mem_from_fd returned NULL (fd {cfd}, size {n}, "
                            f"offset {coff})", None, "rknn_create_mem_from_fd")
        t._virt_pin = pin
        return t

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
        cdef uint64_t phys
        cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
        cdef void* virt = NULL
        cdef Py_ssize_t vlen = 0
        cdef rknn_tensor_mem* m
        cdef TensorMem t = TensorMem.__new__(TensorMem)
        try:
            phys = phys_addr
        except (TypeError, OverflowError):
            raise ValueError(f"phys_addr must be an int in 0..2**64-1, got {phys_addr!r}") from None
        pin = None
        if virt_addr is not None:
            if isinstance(virt_addr, int):
                virt = <void*><size_t>virt_addr
            else:
                pin = _view_pin(virt_addr, &virt, &vlen)
                if <uint64_t>vlen < n:
                    raise ValueError(f"virt_addr buffer of {vlen} bytes is smaller than size {n}")
        self._check_open(b"create_mem_from_phys")
        require(<void*>_api.rknn_create_mem_from_phys, b"rknn_create_mem_from_phys")
        self._enter(b"create_mem_from_phys")
        with nogil:
            m = _api.rknn_create_mem_from_phys(self.ctx, phys, virt, <uint32_t>n)
        if m != NULL:
            # registered under the lock: a close() in another thread
            # either refused this call or will find the mem
            self._adopt(t, m, owner, False)
        self._release()
        if m == NULL:
            raise RKNNError(f"rknn_create_mem_from_phys returned NULL (phys 0x{phys:x}, "
                            f"size {n})", None, "rknn_create_mem_from_phys")
        t._virt_pin = pin
        return t

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
        cdef size_t blk
        cdef long long coff = offset
        cdef rknn_tensor_mem* m
        cdef TensorMem t = TensorMem.__new__(TensorMem)
        try:
            blk = mb_blk
        except (TypeError, OverflowError):
            raise TypeError(f"mb_blk must be an int handle, got {mb_blk!r}") from None
        if blk == 0:
            raise ValueError("mb_blk must be a non-NULL MB_BLK handle")
        if not 0 <= coff <= 0x7FFFFFFF:
            raise ValueError(f"offset must be 0..2147483647, got {coff}")
        self._check_open(b"create_mem_from_mb_blk")
        require(<void*>_api.rknn_create_mem_from_mb_blk, b"rknn_create_mem_from_mb_blk")
        self._require_chip(b"rknn_create_mem_from_mb_blk")
        self._enter(b"create_mem_from_mb_blk")
        with nogil:
            m = _api.rknn_create_mem_from_mb_blk(self.ctx, <void*>blk, <int32_t>coff)
        if m != NULL:
            # registered under the lock: a close() in another thread
            # either refused this call or will find the mem
            self._adopt(t, m, owner, False)
        self._release()
        if m == NULL:
            raise RKNNError("rknn_create_mem_from_mb_blk returned NULL (unsupported by this "
                            "runtime or platform)", None, "rknn_create_mem_from_mb_blk")
        return t


def live_contexts():
    """Number of open :class:`Context` objects (what blocks a runtime switch)."""
    return _live_contexts
