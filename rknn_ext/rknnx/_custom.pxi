# Custom operators implemented in Python (rknn_custom_op.h), CPU target.
#
# How a C callback finds its Python op.  The vendor callbacks carry no user pointer, only
# the node's rknn_custom_op_context, whose priv_data is "the op's own state" (the vendor
# demos set it in init and read it in compute).  So every op is registered with its own
# rknn_register_custom_ops call, during which a thread-local slot names the op being
# registered (saved and restored, so an init that registers ops on another context nests;
# per thread, because init runs on the registering thread inside that call, and a
# process-wide lock held across the call would deadlock against a context lock held by a
# run whose callback registers ops); the init trampoline -- always installed, even without a Python
# init -- makes one CustomOpContext per model node, and stores a pointer to a C record
# (_CNode) of it in op_ctx.priv_data.  prepare / compute / destroy read it back.
#
# Lifetimes.
#  - The C rknn_custom_op structs and the _CNode records are malloc'd one by one (their
#    addresses never move) and freed only after rknn_destroy: the runtime may keep the
#    pointers for the context's life.  The CustomOp and CustomOpContext objects are held
#    by the context's _CustomOpSet until then.
#  - A _CNode holds a borrowed pointer to its CustomOpContext and a `dead` flag.
#    Context.__dealloc__ (garbage collection of an unclosed context) sets every flag
#    before rknn_destroy: the destroy callbacks then return at once without touching
#    Python objects, which a collection may already have cleared (and a destructor runs
#    no Python code: docs/architecture.md, Lifetime).  Destroy callbacks run on Context.close() only.
#  - Exceptions never cross C: each trampoline catches everything, stores it on the
#    node, and returns RKNN_ERR_FAIL so the runtime call fails; the binding re-raises the
#    stored exception chained from the RKNNError of the failed call (run, register).
#    (They are `noexcept with gil` rather than `except -1 with gil`: their caller is the
#    runtime, which can only see the status, never a Python exception.)
#
# Views of the tensors (the choice the issue asks for).  Callbacks get zero-copy numpy
# views of the runtime's tensor memory (virt_addr + offset), typed and shaped by the
# tensor attribute -- copies would defeat the point of running an op in place.  A view
# that escapes the callback (stored in a global, say) must not outlive the memory under
# it: each view is exported by an object that references the Context and counts in its
# _cb_views, so the Context stays alive while one exists and Context.close() refuses with
# BufferError, exactly like the views of its TensorMems.  The tensor may also lie in
# memory the caller bound (set_internal_mem / set_weight_mem / set_io_mem), and the
# runtime's tensor descriptor does not say which (an emulator or driver may hand a device
# mapping, fd -1): so a view pins every TensorMem bound to the context when the view was
# made -- it counts in their exports and mem.close() refuses while it lives (rebinding
# another mem is fine: the old one stays allocated under the view).  (Between
# runs the memory may be overwritten -- it is the runtime's scratch -- but it is never
# freed under a view.)  Inputs are read-only views.  get_op_attr returns a copy: attribute values are small and constant.

import threading as _threading


TargetType = _make_enum(_enum.IntEnum, "TargetType", [
    ("CPU", "RKNN_TARGET_TYPE_CPU", RKNN_TARGET_TYPE_CPU),
    ("GPU", "RKNN_TARGET_TYPE_GPU", RKNN_TARGET_TYPE_GPU),
], "Where a custom op runs (``rknn_target_type``); rknnx runs CPU ops in Python.")

#: what an ``init`` callback returns to ask for the runtime's built-in implementation
SKIP_CUSTOM_OP_COMPUTE = RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE
_VENDOR_NAMES["RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE"] = RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE
globals().update(_VENDOR_NAMES)

cdef enum:
    _CB_INIT = 0
    _CB_PREPARE = 1
    _CB_COMPUTE = 2
    _CB_DESTROY = 3

cdef struct _CNode:
    PyObject* node                           # the CustomOpContext (borrowed; owned by the op set)
    bint dead                                # set before rknn_destroy from __dealloc__

_registering = _threading.local()            # .reg: the _OpReg this thread is registering
cdef unsigned long long _error_seq = 0       # orders stored callback exceptions


@cython.final
cdef class CustomOp:
    """A custom operator implemented in Python, for :meth:`Context.register_custom_ops`.

    Parameters
    ----------
    op_type : str
        The op type in the model (e.g. ``"cstSigmoid"``), at most 255 UTF-8 bytes.
    compute : callable
        ``compute(op_ctx, inputs, outputs)`` on every run that reaches a node of this
        type: ``inputs`` are read-only numpy views of the input tensors, ``outputs``
        writable views to fill, ``op_ctx`` the node's :class:`CustomOpContext`.  Return
        None (or 0) on success, or a negative status.
    init : callable, optional
        ``init(op_ctx, inputs, outputs)`` once per node, at registration.  The views may
        be None for memory the runtime has not allocated yet.  Returning
        ``SKIP_CUSTOM_OP_COMPUTE`` asks for the runtime's built-in implementation.
    prepare : callable, optional
        ``prepare(op_ctx, inputs, outputs)`` before each ``compute``.
    destroy : callable, optional
        ``destroy(op_ctx)`` once per node when the context is closed.
    target : TargetType, default CPU
        Only CPU ops can be implemented in Python; GPU ops are refused.
    version : int, default 1
        ``rknn_custom_op.version``.

    Notes
    -----
    A callback's exception makes the runtime call fail; the binding re-raises it, chained
    from the :class:`RKNNError` of that call, with the locals of the callback's frames
    cleared (they held its views, which the kept error would otherwise keep alive).  A callback must not call its own context
    (``RuntimeError``: the context is busy running it).

    .. versionadded:: 0.1.0
    """
    cdef readonly str op_type                # op type name in the model
    cdef readonly object compute             # required callable
    cdef readonly object init                # optional callables
    cdef readonly object prepare
    cdef readonly object destroy
    cdef readonly object target              # TargetType
    cdef readonly uint32_t version           # rknn_custom_op.version

    def __init__(self, op_type, compute, init=None, prepare=None, destroy=None, *,
                 target=RKNN_TARGET_TYPE_CPU, version=1):
        if not isinstance(op_type, str):
            raise TypeError(f"op_type must be a non-empty str, got {type(op_type).__name__} "
                            f"({op_type!r})")
        if not op_type:
            raise ValueError("op_type must be a non-empty str (the op type name the model "
                             "uses, e.g. 'cstSigmoid'), got ''")
        b = op_type.encode("utf-8")
        if len(b) >= RKNN_MAX_NAME_LEN or b"\0" in b:
            raise ValueError(f"op_type must be at most {RKNN_MAX_NAME_LEN - 1} UTF-8 bytes "
                             f"without NUL, got {len(b)} bytes")
        if not callable(compute):
            raise TypeError(f"compute must be callable, got {type(compute).__name__}")
        for name, fn in (("init", init), ("prepare", prepare), ("destroy", destroy)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{name} must be callable or None, got {type(fn).__name__}")
        try:
            self.target = TargetType(target)
        except ValueError:
            raise ValueError(f"target must be a TargetType (CPU=1, GPU=2), got {target!r}") \
                from None
        self.version = _u32(version, "version")
        self.op_type = op_type
        self.compute = compute
        self.init = init
        self.prepare = prepare
        self.destroy = destroy

    def __repr__(self):
        return f"CustomOp({self.op_type!r}, target={self.target.name})"


@cython.final
cdef class _OpReg:
    """What the init trampoline needs while one op is being registered."""
    cdef CustomOp op                         # the op
    cdef _CustomOpSet opset                  # where its nodes go
    cdef Context context                     # the registering context


@cython.final
cdef class CustomOpContext:
    """One node of a custom op, as its callbacks see it (``rknn_custom_op_context``).

    The same object is passed to every callback of the node.  :attr:`state` is free for
    the op's own data (the role of the C ``priv_data``).

    .. versionadded:: 0.1.0
    """
    cdef rknn_custom_op_context* c           # the runtime's (valid until rknn_destroy)
    cdef readonly CustomOp op                # the registered op
    cdef public object state                 # the op's own per-node data
    cdef bint _active                        # inside one of its callbacks
    cdef readonly object input_attrs         # TensorAttr of the inputs of the current call
    cdef readonly object output_attrs        # TensorAttr of the outputs of the current call
    cdef object _ctx_ref                     # weakref to the Context (no cycle through it)
    cdef object _error                       # exception of a callback, not yet re-raised
    cdef unsigned long long _error_seq       # when it was stored

    def __init__(self, *args, **kwargs):
        raise TypeError("CustomOpContext objects are passed to custom op callbacks")

    @property
    def op_type(self):
        """The op type (None for an object not made by the runtime)."""
        return None if self.op is None else self.op.op_type

    @property
    def target(self):
        """:class:`TargetType` of the node (None for an object not made by the runtime)."""
        return None if self.op is None else self.op.target

    def get_op_attr(self, name):
        """An attribute of the node in the model (``rknn_custom_op_get_op_attr``).

        Parameters
        ----------
        name : str
            The attribute name, e.g. ``"alpha"``.

        Returns
        -------
        numpy.ndarray
            A copy of its values (1-D, the attribute's dtype).

        Raises
        ------
        RuntimeError
            Outside a callback of this node (the runtime finds the node through the
            callback being run).
        KeyError
            If the node has no such attribute.
        TypeError
            If its type has no numpy dtype.

        .. versionadded:: 0.1.0
        """
        cdef rknn_custom_op_attr a
        cdef bytes b
        cdef Py_ssize_t nbytes
        if not self._active:
            raise RuntimeError("get_op_attr works only inside a callback of this node")
        b = str(name).encode("utf-8")
        if len(b) >= RKNN_MAX_NAME_LEN or b"\0" in b:
            raise ValueError(f"attribute name must be at most {RKNN_MAX_NAME_LEN - 1} UTF-8 "
                             "bytes without NUL")
        require(<void*>_api.rknn_custom_op_get_op_attr, b"rknn_custom_op_get_op_attr")
        memset(&a, 0, sizeof(a))
        _api.rknn_custom_op_get_op_attr(self.c, <const char*>b, &a)
        if a.data == NULL or a.n_elems == 0:
            raise KeyError(f"custom op node {self.op.op_type!r} has no attribute {name!r}")
        dt = dtype_of(a.dtype)
        if <uint64_t>a.n_elems * <uint64_t>dt.itemsize > <uint64_t>PY_SSIZE_T_MAX:
            raise ValueError(f"custom op attribute {name!r}: {a.n_elems} elements of "
                             f"{dt} do not fit this platform's {PY_SSIZE_T_MAX} bytes")
        nbytes = <Py_ssize_t>(a.n_elems * dt.itemsize)
        return _np.frombuffer((<char*>a.data)[:nbytes], dtype=dt).copy()

    def __repr__(self):
        return f"<CustomOpContext {self.op_type!r} {'active' if self._active else 'idle'}>"


@cython.final
@cython.no_gc_clear
cdef class _OpTensorView:
    """Exports one callback tensor (zero-copy; pins its Context, see the top comment)."""
    cdef Context context                     # keeps the runtime's memory alive
    cdef tuple mems                          # the caller's mems bound when it was made
    cdef void* data                          # mem.virt_addr + mem.offset
    cdef _Layout layout                      # typed shape, or the raw bytes
    cdef bint readonly                       # inputs
    cdef Py_ssize_t _exports                 # live views of it

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        if self.context is None:
            raise BufferError("not created by a custom op callback")
        if _relaxed_load_ctx(&self.context.ctx) == 0:
            raise _ClosedViewError("cannot export a view: operation on closed Context")
        if self.readonly and (flags & PyBUF_WRITABLE) == PyBUF_WRITABLE:
            raise BufferError("custom op inputs are read-only views")
        cdef TensorMem m
        for m in self.mems:
            if _relaxed_load_mem(&m.mem) == NULL:
                raise _ClosedViewError("cannot export a view: operation on closed TensorMem")
        buffer.buf = self.data if self.layout.nbytes else <void*>_EMPTY
        buffer.len = self.layout.nbytes
        buffer.itemsize = self.layout.itemsize
        buffer.ndim = self.layout.ndim
        buffer.readonly = self.readonly
        buffer.format = NULL
        buffer.shape = NULL
        buffer.strides = NULL
        if (flags & PyBUF_FORMAT) == PyBUF_FORMAT:
            buffer.format = <char*>self.layout.format
        if (flags & PyBUF_ND) == PyBUF_ND:
            buffer.shape = self.layout.shape
        if (flags & PyBUF_STRIDES) == PyBUF_STRIDES:
            buffer.strides = self.layout.strides
        if (flags & PyBUF_ND) != PyBUF_ND:
            # a simple consumer: the raw bytes
            buffer.ndim = 1
            buffer.itemsize = 1
            if (flags & PyBUF_FORMAT) == PyBUF_FORMAT:
                buffer.format = b"B"
        buffer.suboffsets = NULL
        buffer.internal = NULL
        buffer.obj = self
        _atomic_add_ssize(&self._exports, 1)
        _atomic_add_ssize(&self.context._cb_views, 1)
        for m in self.mems:
            _atomic_add_ssize(&m._exports, 1)

    def __releasebuffer__(self, Py_buffer* buffer):
        _atomic_add_ssize(&self._exports, -1)
        if self.context is not None:
            _atomic_add_ssize(&self.context._cb_views, -1)
        cdef TensorMem m
        if self.mems is not None:
            for m in self.mems:
                _atomic_add_ssize(&m._exports, -1)


cdef tuple _bound_mems(Context ctx):
    """The open TensorMems bound to ctx (io, weight, internal)."""
    return tuple([m for m in ctx._slots.values()
                  if isinstance(m, TensorMem)
                  and _relaxed_load_mem(&(<TensorMem>m).mem) != NULL])


cdef object _tensor_views(Context ctx, rknn_custom_op_tensor* ts, uint32_t n, bint readonly,
                          list attrs):
    """numpy views (None where the runtime gave no memory) and TensorAttr copies."""
    cdef uint32_t i
    cdef _OpTensorView v
    views = []
    mems = _bound_mems(ctx)
    for i in range(n):
        attrs.append(_attr_from_c(&ts[i].attr))
        if ts[i].mem.virt_addr == NULL:
            views.append(None)
            continue
        v = _OpTensorView.__new__(_OpTensorView)
        v.context = ctx
        v.data = <char*>ts[i].mem.virt_addr + ts[i].mem.offset
        v.mems = mems
        v.readonly = readonly
        try:
            _layout_of_attr(&ts[i].attr, &v.layout, -1, -1)
            if not v.layout.c_contiguous or v.layout.nbytes > ts[i].mem.size:
                _layout_raw(&v.layout, ts[i].mem.size)
        except (TypeError, ValueError):
            _layout_raw(&v.layout, ts[i].mem.size)   # INT4 / BFLOAT16: the bytes
        views.append(_np.asarray(v))
    return views


@cython.final
cdef class _CustomOpSet:
    """The custom ops registered on one Context and their C records (internal)."""
    cdef list ops                            # CustomOp, in registration order
    cdef list nodes                          # CustomOpContext, one per model node
    cdef rknn_custom_op** cops               # the structs given to the runtime (malloc'd)
    cdef Py_ssize_t n_cops
    cdef _CNode** cnodes                     # priv_data records (malloc'd)
    cdef Py_ssize_t n_cnodes

    def __cinit__(self):
        self.ops = []
        self.nodes = []

    def __dealloc__(self):
        self._free_c()

    cdef void _kill(self) noexcept nogil:
        cdef Py_ssize_t i
        for i in range(self.n_cnodes):
            self.cnodes[i].dead = True

    cdef void _free_c(self) noexcept:
        cdef Py_ssize_t i
        for i in range(self.n_cops):
            free(self.cops[i])
        free(self.cops)
        self.cops = NULL
        self.n_cops = 0
        for i in range(self.n_cnodes):
            free(self.cnodes[i])
        free(self.cnodes)
        self.cnodes = NULL
        self.n_cnodes = 0

    cdef rknn_custom_op* _new_cop(self) except NULL:
        cdef rknn_custom_op** grown = <rknn_custom_op**>realloc(
            self.cops, (self.n_cops + 1) * sizeof(rknn_custom_op*))
        if grown == NULL:
            raise MemoryError()
        self.cops = grown
        self.cops[self.n_cops] = <rknn_custom_op*>calloc(1, sizeof(rknn_custom_op))
        if self.cops[self.n_cops] == NULL:
            raise MemoryError()
        self.n_cops += 1
        return self.cops[self.n_cops - 1]

    cdef _CNode* _new_cnode(self, CustomOpContext node) except NULL:
        cdef _CNode** grown = <_CNode**>realloc(self.cnodes, (self.n_cnodes + 1) * sizeof(_CNode*))
        if grown == NULL:
            raise MemoryError()
        self.cnodes = grown
        self.cnodes[self.n_cnodes] = <_CNode*>calloc(1, sizeof(_CNode))
        if self.cnodes[self.n_cnodes] == NULL:
            raise MemoryError()
        self.nodes.append(node)
        self.cnodes[self.n_cnodes].node = <PyObject*>node
        self.n_cnodes += 1
        return self.cnodes[self.n_cnodes - 1]

    cdef object _take_error(self):
        """The earliest exception stored by a callback (and forget them all)."""
        cdef CustomOpContext n
        first = None
        seq = 0
        for n in self.nodes:
            if n._error is not None and (first is None or n._error_seq < seq):
                first, seq = n._error, n._error_seq
            n._error = None
        return first


cdef int _trampoline(int kind, rknn_custom_op_context* op_ctx, rknn_custom_op_tensor* ins,
                     uint32_t n_in, rknn_custom_op_tensor* outs, uint32_t n_out) noexcept with gil:
    global _error_seq
    cdef _CNode* cn
    cdef CustomOpContext node
    cdef _OpReg reg
    cdef CustomOp op
    if op_ctx == NULL:
        return RKNN_ERR_PARAM_INVALID
    node = None
    try:
        if kind == _CB_INIT:
            reg_obj = getattr(_registering, "reg", None)
            if reg_obj is None:
                return RKNN_ERR_FAIL                   # init outside a registration
            reg = reg_obj
            node = CustomOpContext.__new__(CustomOpContext)
            node.c = op_ctx
            node.op = reg.op
            node._ctx_ref = _weakref.ref(reg.context)
            cn = reg.opset._new_cnode(node)
            op_ctx.priv_data = cn
        else:
            cn = <_CNode*>op_ctx.priv_data
            if cn == NULL:
                return RKNN_ERR_FAIL                   # a node whose init we never saw
            if cn.dead:
                return RKNN_SUCC                       # the context is being collected
            node = <CustomOpContext>cn.node
        op = node.op
        fn = (op.init, op.prepare, op.compute, op.destroy)[kind]
        if fn is None:
            return RKNN_SUCC
        node._active = True
        try:
            if kind == _CB_DESTROY:
                res = fn(node)
            else:
                in_attrs, out_attrs = [], []
                ctx = node._ctx_ref()
                if ctx is None:
                    raise RuntimeError("the Context of this custom op node is gone")
                inputs = _tensor_views(ctx, ins, n_in, True, in_attrs)
                outputs = _tensor_views(ctx, outs, n_out, False, out_attrs)
                node.input_attrs = tuple(in_attrs)
                node.output_attrs = tuple(out_attrs)
                res = fn(node, inputs, outputs)
                del inputs, outputs
        finally:
            node._active = False
            node.input_attrs = node.output_attrs = None
        if res is None:
            return RKNN_SUCC
        if not isinstance(res, int):
            raise TypeError(f"custom op {op.op_type!r}: a callback returns None or an int "
                            f"status, got {type(res).__name__}")
        return <int>res if -0x80000000 <= res <= 0x7FFFFFFF else RKNN_ERR_FAIL
    except BaseException as e:
        if node is not None:
            # the callback's frames hold its views (inputs, outputs): kept by the exception's
            # traceback they would outlive the call and pin the context's memory for as long
            # as anyone keeps the error (close() refusing); the frames' locals go now
            _forget_frames(e)
            _error_seq += 1
            node._error = e
            node._error_seq = _error_seq
        return RKNN_ERR_FAIL


cdef void _forget_frames(object exc) noexcept:
    """Clear the locals of the finished frames in the tracebacks of `exc` and of the
    exceptions it chains (a frame still running keeps them)."""
    try:
        seen = set()
        todo = [exc]
        while todo:
            e = todo.pop()
            if e is None or id(e) in seen:
                continue
            seen.add(id(e))
            tb = e.__traceback__
            while tb is not None:
                try:
                    tb.tb_frame.clear()
                except RuntimeError:
                    pass
                tb = tb.tb_next
            todo.append(e.__cause__)
            todo.append(e.__context__)
    except BaseException:
        pass


cdef int _tramp_init(rknn_custom_op_context* op_ctx, rknn_custom_op_tensor* ins, uint32_t n_in,
                     rknn_custom_op_tensor* outs, uint32_t n_out) noexcept with gil:
    return _trampoline(_CB_INIT, op_ctx, ins, n_in, outs, n_out)


cdef int _tramp_prepare(rknn_custom_op_context* op_ctx, rknn_custom_op_tensor* ins, uint32_t n_in,
                        rknn_custom_op_tensor* outs, uint32_t n_out) noexcept with gil:
    return _trampoline(_CB_PREPARE, op_ctx, ins, n_in, outs, n_out)


cdef int _tramp_compute(rknn_custom_op_context* op_ctx, rknn_custom_op_tensor* ins, uint32_t n_in,
                        rknn_custom_op_tensor* outs, uint32_t n_out) noexcept with gil:
    return _trampoline(_CB_COMPUTE, op_ctx, ins, n_in, outs, n_out)


cdef int _tramp_destroy(rknn_custom_op_context* op_ctx) noexcept with gil:
    return _trampoline(_CB_DESTROY, op_ctx, NULL, 0, NULL, 0)


cdef int _check_custom(int ret, const char* fn, _CustomOpSet opset) except -1:
    """After a failed call: re-raise what a callback raised, chained from the status."""
    err = opset._take_error()
    if err is None:
        return 0
    try:
        check(ret, fn)
    except RKNNError as status:
        raise err from status
    raise err


# ---- Context.register_custom_ops (the documented wrapper is in _context.pxi) ---------------
cdef list _custom_ops_to_register(Context self, object ops):
    """The CustomOp objects of `ops`, checked: CPU ops with an op type not registered on
    the context yet and not given twice."""
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
    return items


cdef int _register_custom_op(Context self, _CustomOpSet opset, CustomOp op) except -1:
    """Register one op with its own rknn_register_custom_ops call (its init callbacks run
    now, and _registering tells the trampolines which op they belong to)."""
    cdef rknn_custom_op* cop = opset._new_cop()
    cdef _OpReg reg
    cdef int ret
    cdef bytes b
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
    return 0


cdef int _register_custom_ops(Context self, object ops) except -1:
    """Context.register_custom_ops: check every op, then register them one by one."""
    cdef _CustomOpSet opset
    self._check_open(b"register_custom_ops")
    self._check_not_busy("register_custom_ops")
    items = _custom_ops_to_register(self, ops)
    require(<void*>_api.rknn_register_custom_ops, b"rknn_register_custom_ops")
    self._require_chip(b"rknn_register_custom_ops")
    if self._custom is None:
        self._custom = _CustomOpSet.__new__(_CustomOpSet)
    opset = self._custom
    for o in items:
        _register_custom_op(self, opset, <CustomOp>o)
    return 0
