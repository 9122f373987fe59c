# cython: language_level=3, embedsignature=True, binding=True, cdivision=True
# distutils: language = c
"""Low-level binding of librknnrt: a 1:1, safe wrapper of the RKNN C API.

The facade (``rknnx``) is what most code should use; this module exposes the C API
faithfully (contexts, queries, general I/O, zero-copy memory) and makes it safe
(lifetimes, validation, the GIL released around every blocking call).

Classes: :class:`Context` (one ``rknn_context``), :class:`TensorAttr`
(``rknn_tensor_attr``), :class:`TensorMem` (``rknn_tensor_mem``, a buffer-protocol and
DLPack exporter), :class:`Input`, :class:`Outputs`/:class:`Output` (the general flow),
and the vendor constants as enums (:class:`InitFlag`, :class:`QueryCmd`,
:class:`TensorType`, :class:`TensorFormat`, :class:`QntType`, :class:`CoreMask`,
:class:`MemFlag`, :class:`MemAllocFlag`, :class:`MemSyncMode`) and as plain ints with
their vendor names.  The matmul API: :class:`MatmulContext` (``rknn_matmul_ctx``),
:class:`MatmulTensorAttr`, :func:`b_normal_layout_to_native_layout`, the int4 packing
helpers :func:`pack_int4`/:func:`unpack_int4` and the enums :class:`MatmulType`,
:class:`MatmulLayout`, :class:`MatmulQuantType`.  Custom operators in Python:
:class:`CustomOp`, :class:`CustomOpContext`, :meth:`Context.register_custom_ops`.
"""

# The C-level names every slice uses come in here, once; each include below says which
# of them it needs.  The layout kernels (rknnx._kernels) and the vendor-file reader
# (rknnx._rknnfile) are extension modules of their own; the reader's one C-level answer
# this module uses comes through its contract, _rknnfile.pxd.
cimport cython
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE,
                             PyBUF_ANY_CONTIGUOUS, PyBUF_C_CONTIGUOUS, PyBUF_F_CONTIGUOUS,
                             PyBUF_WRITABLE, PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES)
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_IsValid, PyCapsule_GetPointer
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset, memcpy, memcmp
from posix.dlfcn cimport dlopen, dlsym, dlerror, RTLD_NOW, RTLD_LOCAL
from posix.unistd cimport getpid, usleep

cdef extern from "<string.h>" nogil:
    size_t strnlen(const char* s, size_t maxlen)

cdef extern from "Python.h":
    int Py_IsInitialized() nogil

cdef extern from "pythread.h" nogil:
    # safe without the GIL (CPython reads the OS thread id); declared here as nogil,
    # which Cython's own declaration is not
    unsigned long PyThread_get_thread_ident()

cdef extern from "rknnx_atomic.h" nogil:
    # the counters threads touch without a common lock (rknn_ext/rknnx_atomic.h): one
    # atomic read-modify-write each, so a free-threaded CPython loses none
    Py_ssize_t _atomic_add_ssize "rknnx_atomic_add"(Py_ssize_t* p, Py_ssize_t d)
    int _atomic_add_int "rknnx_atomic_add"(int* p, int d)
    unsigned long long _atomic_add_u64 "rknnx_atomic_add"(unsigned long long* p,
                                                          unsigned long long d)
    Py_ssize_t _atomic_load_ssize "rknnx_atomic_load"(Py_ssize_t* p)
    int _atomic_load_int "rknnx_atomic_load"(int* p)
    void _atomic_store_int "rknnx_atomic_store"(int* p, int v)
    unsigned long long _atomic_load_u64 "rknnx_atomic_load"(unsigned long long* p)
    # the holder of a context's lock (_ContextBase._owner): whole, unordered
    unsigned long _relaxed_load_ulong "rknnx_relaxed_load"(unsigned long* p)
    void _relaxed_store_ulong "rknnx_relaxed_store"(unsigned long* p, unsigned long v)

from librknn cimport *           # the vendor declarations and the entry-point table

cdef extern from "rknnx_atomic.h" nogil:
    # the words a close writes while other threads read them without its lock, to check
    # before they decide again under it (rknn_ext/rknnx_atomic.h): whole, unordered
    rknn_tensor_mem* _relaxed_load_mem "rknnx_relaxed_load"(rknn_tensor_mem** p)
    void _relaxed_store_mem "rknnx_relaxed_store"(rknn_tensor_mem** p, rknn_tensor_mem* v)
    rknn_output* _relaxed_load_outs "rknnx_relaxed_load"(rknn_output** p)
    void _relaxed_store_outs "rknnx_relaxed_store"(rknn_output** p, rknn_output* v)
    rknn_context _relaxed_load_ctx "rknnx_relaxed_load"(rknn_context* p)
    void _relaxed_store_ctx "rknnx_relaxed_store"(rknn_context* p, rknn_context v)
    bint _relaxed_load_bint "rknnx_relaxed_load"(bint* p)
    void _relaxed_store_bint "rknnx_relaxed_store"(bint* p, bint v)
    # a context's flow and the call that chose it (Context._flow, _flow_set_by), written
    # once under its lock, read without it by the checks that word a FlowError early
    int _relaxed_load_int "rknnx_relaxed_load"(int* p)
    void _relaxed_store_int "rknnx_relaxed_store"(int* p, int v)
    const char* _relaxed_load_cstr "rknnx_relaxed_load"(const char** p)
    void _relaxed_store_cstr "rknnx_relaxed_store"(const char** p, const char* v)
from rknnx._rknnfile cimport file_says_static   # what model bytes say before rknn_init
from rknnx.errors import (RKNNError, NotSupportedError, RuntimeNotFoundError, FlowError,
                          from_code as _from_code)
from rknnx.errors import RKNNFailError as _RKNNFailError   # Model.run (_model_run.pxi)
from rknnx.errors import ClosedViewError as _ClosedViewError   # a public name in tracebacks

# One slice per subject (see docs/architecture.md, Layers); what each takes from above:
include "_loader.pxi"       # dlopen/dlsym into _api, fork, chips: posix.dlfcn, getpid
include "_consts.pxi"       # the vendor constants as enums: librknn only
include "_attr.pxi"         # TensorAttr, types, layouts, query results: strnlen, buffers
include "_ndview.pxi"       # numpy arrays' views without the buffer protocol: numpy
include "_dlpack.pxi"       # DLPack export: pycapsule, Py_IsInitialized, ref counting
include "_mem.pxi"          # TensorMem and its views: buffer flags, malloc/free
include "_mem_create.pxi"   # the create_mem* bodies, create_mem2(): librknn, stat
include "_outputs.pxi"      # Outputs/Output of the general flow: buffers, PyObject links
include "_base.pxi"         # _ContextBase: lock, re-entry, deferred frees, close: pthread
include "_context.pxi"      # Context: its documented methods; close, configuration, run
include "_context_init.pxi" # rknn_init (path, bytes, model mem, shared weights), dup
include "_chip.pxi"         # the chip of a context, its NPU cores: platforms' table
include "_query.pxi"        # attributes, query(), dynamic shapes: strnlen, calloc
include "_inputs.pxi"       # Input and inputs_set (fast path, _IOSpecs): buffers, PyMem
include "_io.pxi"           # outputs_get and the set_*_mem bindings: buffers, tuples
include "_infer.pxi"        # infer: the three general-flow calls in one crossing
include "_model_run.pxi"    # _ModelRun: rknnx.Model.run's fast path, compiled: numpy
include "_matmul.pxi"       # MatmulContext: the matmul API on one rknn_matmul_ctx
include "_matmul_layout.pxi"  # pack_int4/unpack_int4, B to the native layout: numpy
include "_custom.pxi"       # custom operators: callbacks with the GIL, PyObject
