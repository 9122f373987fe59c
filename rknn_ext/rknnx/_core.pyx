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

cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, uint8_t, uint32_t, uint64_t

from librknn cimport *
from rknnx.errors import (RKNNError, NotSupportedError, RuntimeNotFoundError, FlowError,
                          from_code as _from_code)

include "_loader.pxi"
include "_consts.pxi"
include "_attr.pxi"
include "_dlpack.pxi"
include "_mem.pxi"
include "_outputs.pxi"
include "_context.pxi"
include "_matmul.pxi"
include "_custom.pxi"
include "_kernels.pxi"
