# cython: language_level=3
# The binding's shared C-level declarations (cdef classes and helpers of _core.pyx).
#
# Each cdef class owns at most one C handle and NULLs it after freeing; children hold
# strong references to their parents (docs/architecture.md, Lifetime).

from cpython.object cimport PyObject
from libc.stdint cimport uint8_t, uint32_t, uint64_t

from librknn cimport (rknnx_api, rknn_context, rknn_tensor_attr, rknn_tensor_mem,
                      rknn_output, rknn_query_cmd, rknn_matmul_info, rknn_matmul_shape,
                      rknn_matmul_io_attr)

cdef rknnx_api _api                          # the resolved entry points

# The per-context lock (see _base.pxi): a plain mutex, whose uncontended lock and unlock
# are one atomic operation each (a PyThread lock reads the clock on every acquire).
cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_mutex_t:
        pass
    ctypedef struct pthread_mutexattr_t:
        pass
    int pthread_mutex_init(pthread_mutex_t* m, const pthread_mutexattr_t* attr)
    int pthread_mutex_destroy(pthread_mutex_t* m)
    int pthread_mutex_lock(pthread_mutex_t* m)
    int pthread_mutex_trylock(pthread_mutex_t* m)
    int pthread_mutex_unlock(pthread_mutex_t* m)

cdef int check(int ret, const char* fn) except -1 nogil
cdef int require(void* fnptr, const char* fn) except -1
cdef int ensure_runtime() except -1


# How the bytes of a tensor lie in memory: what a buffer export or DLPack capsule says.
cdef struct _Layout:
    int ndim                                 # number of dimensions (0..16)
    Py_ssize_t shape[16]                     # elements per dimension
    Py_ssize_t strides[16]                   # bytes between neighbours per dimension
    Py_ssize_t itemsize                      # bytes per element
    Py_ssize_t nbytes                        # logical bytes (product(shape) * itemsize)
    Py_ssize_t extent                        # bytes the layout spans, padding included
    const char* format                       # struct-module format character
    uint8_t dl_code                          # DLPack type code (kDLInt, kDLUInt, ...)
    bint c_contiguous                        # strides are the packed C order


cdef class _ContextBase                      # forward declarations
cdef class Context


cdef class TensorAttr:
    cdef rknn_tensor_attr c                  # the vendor struct, by value (no handle)
    cdef int _ntype                          # type the runtime reported (or the constructor's)


cdef class TensorMem:
    cdef rknn_tensor_mem* mem                # the runtime's descriptor; NULL once destroyed
    cdef readonly _ContextBase context       # creating (matmul) context; None: ALLOC_NO_CONTEXT
    cdef readonly object owner               # keeps an imported fd / mapping alive
    cdef object _virt_pin                    # memoryview pinning a caller's virt buffer
    cdef Py_ssize_t _exports                 # live buffer / DLPack exports (exact count)
    cdef int _pins                           # open contexts using it as their model buffer
    cdef int _binding                        # set_*_mem calls binding it right now
    cdef int _foreign                        # of those, the ones binding it to another context
    cdef int _syncing                        # rknn_mem_sync calls in flight on it
    cdef bint _dead                          # destroyed or being destroyed: never run with it
    cdef bint _closing                       # close() in progress: new views are refused
    cdef long _pid                           # process that created it (see _check_process)
    cdef bint _bound                         # _layout is a typed tensor layout
    cdef _Layout _layout                     # what a view exports when bound
    cdef TensorAttr _attr                    # the attribute it is bound to (a copy) or None
    cdef object _bound_to                    # WeakSet of contexts it is bound to (lazy)
    cdef object __weakref__                  # Context tracks its mems in a WeakSet

    cdef int _check_open(self, str what) except -1
    cdef int _copy_desc(self, rknn_tensor_mem* d, str what) except -1
    cdef int _check_process(self) except -1
    cdef int _destroy(self) except -1
    cdef int _current_layout(self, _Layout* lay) except -1
    cdef int _mark_closing(self) except -1
    cdef bint _syncing_now(self) except -1
    cdef bint _closing_now(self) noexcept
    cdef int _wait_not_closing(self) except -1
    cdef int _claim_for_sync(self) except -1
    cdef int _export(self, Py_buffer* buffer, int flags) except -1


# A C call the context owes the runtime, made once its lock is free (see _ContextBase).
cdef struct _Deferred:
    rknn_tensor_mem* mem                     # rknn_destroy_mem(ctx, mem), or NULL
    rknn_output* outs                        # rknn_outputs_release(ctx, n, outs) + free, or NULL
    uint32_t n                               # length of outs


# What a Context and a MatmulContext share: the handle, the per-context lock (with the
# thread holding it, to refuse re-entry instead of deadlocking), the mems it created and
# the mems bound to it.
cdef class _ContextBase:
    cdef rknn_context ctx                    # the runtime's handle; 0 once destroyed
    cdef pthread_mutex_t _lock               # per-context lock, held across C calls
    cdef bint _lock_made                     # _lock was initialized (destroy it once)
    cdef unsigned long _owner                # thread ident holding _lock; 0 when free
    cdef bint _counted                       # counted in _live_contexts
    cdef bint _closing                       # close() in progress: new calls are refused
    cdef long _pid                           # process that created it (see _check_process)
    cdef object _mems                        # WeakSet of TensorMem created here
    cdef dict _slots                         # set_*_mem bindings: key -> TensorMem
    cdef list _bound                         # the values of _slots, for the run() check
    cdef unsigned long long _bound_ok        # _mem_deaths when _bound was last all open; 0: look
    cdef _Deferred* _deferred                # frees owed while the lock was ours (malloc'd)
    cdef Py_ssize_t _n_deferred              # used entries of _deferred
    cdef Py_ssize_t _cap_deferred            # allocated entries of _deferred
    cdef object __weakref__                  # WeakSets of mems/contexts refer to it

    cdef void _acquire(self) noexcept
    cdef void _release(self) noexcept nogil
    cdef bint _held_here(self) noexcept nogil
    cdef int _check_process(self) except -1
    cdef bint _defer(self, rknn_tensor_mem* mem, rknn_output* outs, uint32_t n) noexcept nogil
    cdef int _check_not_busy(self, str what) except -1
    cdef int _enter(self, const char* what) except -1
    cdef int _check_open(self, const char* what) except -1
    cdef int _check_bound(self) except -1
    cdef int _raise_dead_binding(self) except -1
    # the run-entry rules (_enter_run): the bindings' dims, a subclass's own
    cdef bint _bindings_current(self) noexcept
    cdef int _check_bindings(self) except -1
    cdef int _set_slot(self, object key, TensorMem mem) except -1
    cdef TensorMem _adopt(self, TensorMem t, rknn_tensor_mem* m, object owner, bint no_ctx)
    # close(): the one sequence (_close) and the steps a subclass fills in
    cdef int _close(self, str kind, str children) except -1
    cdef int _close_check(self) except -1
    cdef list _open_groups(self)
    cdef Py_ssize_t _callback_views(self) noexcept
    cdef bint _children_open(self) noexcept
    cdef int _destroy_handle(self) noexcept
    cdef const char* _destroy_name(self) noexcept
    cdef object _after_close(self)


# What inputs_set checks for one plain buffer at a position (no Input): the facts of the
# input attribute the general path reads, computed once per attribute set.
cdef struct _InputSpec:
    uint32_t n_elems                         # elements of the tensor
    uint32_t types                           # bit t: data of type t is accepted as is
    int fmt                                  # the input's layout (the default fmt)
    int full_ndims                           # dims of the attribute (n_dims)
    int ndims                                # dims after stripping leading ones
    Py_ssize_t dims[16]                      # those dims
    bint fast                                # False: the general path decides (and raises)


# The per-attribute-set caches of the general flow, immutable once built (a call keeps
# a reference while user code may replace the context's).
cdef class _IOSpecs:
    cdef object src                          # the _in_attrs tuple they were computed from
    cdef Py_ssize_t n_in                     # entries of ins
    cdef _InputSpec* ins                     # one per input (malloc'd)
    cdef Py_ssize_t n_out                    # outputs of the model
    cdef _Layout* outs                       # 2 * n_out layouts (want_float 0, then 1), or NULL
    cdef object out_src                      # the _out_attrs tuple outs were computed from


cdef class Context(_ContextBase):
    cdef readonly uint32_t flags             # rknn_init flags it was created with
    cdef int _flow                           # 0 none, 1 general, 2 zero-copy
    cdef const char* _flow_set_by            # the C call that chose the flow
    cdef PyObject* _groups                   # first _OutputGroup of its list (borrowed) or NULL
    cdef TensorMem _model_mem                # MODEL_BUFFER_ZERO_COPY buffer, pinned
    cdef Context _weights_from               # SHARE_WEIGHT_MEM source, kept open
    cdef int _weight_borrowers               # open contexts using our weights
    cdef bint _shapes_set                    # a set_input_shape(s) succeeded: attrs are CURRENT_*
                                             # from then on (before it, the plain ones: for a
                                             # dynamic model, its largest shape set)
    cdef object _in_attrs                    # cached input attrs (tuple) or None
    cdef object _out_attrs                   # cached output attrs (tuple) or None
    cdef _IOSpecs _specs                     # fast-path caches of _in_attrs, or None
    cdef object _custom                      # _CustomOpSet of registered custom ops, or None
    cdef Py_ssize_t _cb_views                # live views handed to custom op callbacks
    # Shape generations (docs/architecture.md, Locking and the GIL).  A check made without
    # the lock against the attributes remembers the generation it was made at and is
    # compared again under the lock before C sees a buffer:
    #  _shape_gen  the shapes themselves: +1, under the lock, per successful
    #              set_input_shape(s).  Every other counter is a value it once had.
    #  _attrs_gen  the cached _in_attrs/_out_attrs (and the _IOSpecs built from them):
    #              _load_attrs queries again when it differs from _shape_gen; inputs_set
    #              (both paths), set_io_mem and outputs_get check against it and, under
    #              the lock, refuse (ValueError) or fall back to the general path when
    #              _shape_gen moved since.
    #  _io_gen     the set_io_mem bindings (_io_dims): run() compares them with the
    #              current dims (_check_io_dims) only when it differs from _shape_gen,
    #              so the usual run() costs one comparison.
    #  _run_gen    the outputs the runtime holds: the _shape_gen of the last successful
    #              run(); outputs_get refuses (ValueError) while it differs from the
    #              attributes' generation (the outputs would be of the old shapes).
    cdef unsigned long long _shape_gen       # +1 (under the lock) per successful set_input_shape(s)
    cdef unsigned long long _attrs_gen       # the _shape_gen _in_attrs/_out_attrs were queried at
    cdef unsigned long long _io_gen          # the _shape_gen _io_dims were last checked against
    cdef unsigned long long _run_gen         # the _shape_gen of the last successful run()
    cdef dict _io_dims                       # set_io_mem: (kind, idx) -> model dims bound for
    cdef object _chip                        # chip of the context (str), None when unknown
    cdef bint _no_general                    # the chip lacks the general flow (inputs_set ...)
    cdef object _ranges                      # INPUT_DYNAMIC_RANGE per input (tuple; (): static,
                                             # also what a refusal -6 / -5 means), None until
                                             # asked; asked once per model: dup() and
                                             # share_weights_with copy it from the source
    cdef readonly unsigned long long last_frame_id  # rknn_output_extend.frame_id of the last outputs_get

    cdef int _close_check(self) except -1
    cdef list _open_groups(self)
    cdef Py_ssize_t _callback_views(self) noexcept
    cdef bint _children_open(self) noexcept
    cdef int _destroy_handle(self) noexcept
    cdef object _after_close(self)
    cdef bint _bindings_current(self) noexcept
    cdef int _check_bindings(self) except -1
    cdef int _flow_error(self, int flow, const char* fn) except -1
    cdef int _query_into(self, rknn_query_cmd cmd, void* info, uint32_t size) except -1
    cdef int _check_index(self, long long idx, bint output) except -1
    cdef bint _groups_open(self) noexcept
    cdef int _require_chip(self, const char* fn) except -1


cdef class _OutputGroup:
    cdef Context context                     # the context that owns the buffers
    cdef rknn_output* outs                   # the array given to rknn_outputs_get; NULL once released
    cdef uint32_t n                          # its length
    cdef Py_ssize_t _exports                 # buffer views of any of its outputs
    cdef uint64_t frame_id                   # rknn_output_extend.frame_id
    cdef PyObject* _prev                     # neighbours in the context's list of groups
    cdef PyObject* _next                     #   (borrowed; NULL at the ends)
    cdef bint _linked                        # in that list (alive, not released)
    cdef bint _closing                       # release() in progress: new views are refused

    cdef int _release_c(self) except -1
    cdef void _unlink(self) noexcept
    cdef void _unlink_locked(self, Context c) noexcept


cdef class MatmulContext(_ContextBase):
    cdef rknn_matmul_info _info              # what it was created with (M/K/N: shape 0)
    cdef rknn_matmul_shape* _shapes          # _n_shapes shapes (calloc'd)
    cdef rknn_matmul_io_attr* _io            # their io attrs, one per shape (calloc'd)
    cdef int _n_shapes                       # entries of _shapes / _io
    cdef int _cur                            # index of the current shape
    cdef bint _dynamic                       # made by rknn_matmul_create_dynamic_shape
    cdef dict _quant                         # name -> (scale, zp) arrays given to the runtime
    cdef rknn_matmul_io_attr _bound_io       # the attr each of A/B/C was bound with (set_io_mem)

    cdef int _close_check(self) except -1
    cdef int _destroy_handle(self) noexcept
    cdef const char* _destroy_name(self) noexcept
    cdef object _after_close(self)
    cdef int _stale_binding(self) noexcept
    cdef bint _bindings_current(self) noexcept
    cdef int _check_bindings(self) except -1
    cdef object _tensor(self, object which)
    cdef int _set_io_mem_claimed(self, TensorMem mem, object which) except -1
    cdef Py_ssize_t _scales_wanted(self, int w) except -1
    cdef int _raise_stale_binding(self, int w) except -1


# rknnx.Model's compiled base (_model_run.pxi): what Model.run's fast path reads, set once
# by Model.__init__ (_fast_setup) before the model is shared.
cdef class _ModelRun:
    cdef bint _fr_ready                      # _fast_setup ran
    cdef bint _fr_fast                       # a static model with the general API
    cdef bint _fr_pixel                      # some input takes uint8 pixels (the range check)
    cdef int _fr_ran                         # a run ran (Model._last); atomic
    cdef Context _fr_ctx                     # the model's context
    cdef object _fr_own                      # the model's runner (rknnx._runner)
    cdef object _fr_lock                     # the family's lock (rknnx._guard)
    cdef object _fr_family                   # the ContextFamily
    cdef tuple _fr_specs_f                   # ((shape, dtype), ...) of the float32 outputs
    cdef tuple _fr_specs_raw                 # the same in the model's own types
    cdef object _fr_formats                  # data_format values that change nothing
