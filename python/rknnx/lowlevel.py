"""The low-level layer: the RKNN C API, one call for one call (the compiled ``rknnx._core``),
with the layout kernels (``rknnx._kernels``) and the vendor-file reader (``rknnx._rknnfile``).

Every ``rknn_*`` function is here under its Python name (:class:`Context` for
``rknn_init`` ... ``rknn_destroy``, :class:`TensorMem` for ``rknn_tensor_mem``,
:class:`MatmulContext` for ``rknn_matmul_*``, the vendor constants as enums), made safe
(lifetimes, validation, the GIL released around every blocking call) but deciding no
policy: which flow, when to sync caches and which shape set are the facade's business
(:mod:`rknnx`).  The rules it enforces are written down in ``docs/architecture.md``.

Importing this module needs the compiled extension; the error says how to build it.
"""

from __future__ import annotations

try:
    from rknnx import _core
except ImportError as exc:  # pragma: no cover - depends on how the package was installed
    raise ImportError(
        "rknnx's compiled extension (rknnx._core) is missing or cannot be loaded "
        f"({exc}). Build and install the package with `pip install .` from a source "
        "checkout (it needs a C compiler and the Python headers; Cython and CMake come "
        "from the build requirements), or install a wheel for your platform."
    ) from exc

from rknnx._core import (  # noqa: E402  (after the check above)
    load_runtime, runtime_info, runtime_chip, emulator_path, api_function_names, FALLBACK_SOURCE,
    SYSTEM_CANDIDATES,
    Context,
    _ModelRun,      # rknnx.Model's compiled base (its run); internal
    TensorAttr,
    TensorMem, Input, Output, Outputs, InitFlag, QueryCmd, TensorType, TensorFormat,
    QntType, CoreMask, MemFlag, MemAllocFlag, MemSyncMode, InOutNum, SdkVersion, MemSize,
    PerfRun, PerfDetail, InputRange, DeviceMemInfo, create_mem2, dtype_of, type_of_dtype,
    MatmulContext, MatmulTensorAttr, MatmulIOAttr, MatmulInfo, MatmulShape, MatmulType,
    MatmulLayout, MatmulQuantType, QuantParams, b_normal_layout_to_native_layout,
    pack_int4, unpack_int4, CustomOp, CustomOpContext, TargetType, SKIP_CUSTOM_OP_COMPUTE,
    live_contexts,
)
from rknnx._kernels import (  # noqa: E402
    dequantize, quantize, to_float16, from_float16, compact, nc1hwc2_to_nchw, nchw_to_nc1hwc2,
)
from rknnx._rknnfile import read_model_file  # noqa: E402

__all__ = [
    "read_model_file",
    "load_runtime",
    "runtime_info",
    "runtime_chip",
    "FALLBACK_SOURCE",
    "SYSTEM_CANDIDATES",
    "emulator_path",
    "api_function_names",
    "Context",
    "TensorAttr",
    "TensorMem",
    "Input",
    "Output",
    "Outputs",
    "InitFlag",
    "QueryCmd",
    "TensorType",
    "TensorFormat",
    "QntType",
    "CoreMask",
    "MemFlag",
    "MemAllocFlag",
    "MemSyncMode",
    "InOutNum",
    "SdkVersion",
    "MemSize",
    "PerfRun",
    "PerfDetail",
    "InputRange",
    "DeviceMemInfo",
    "create_mem2",
    "dtype_of",
    "type_of_dtype",
    "MatmulContext",
    "MatmulTensorAttr",
    "MatmulIOAttr",
    "MatmulInfo",
    "MatmulShape",
    "MatmulType",
    "MatmulLayout",
    "MatmulQuantType",
    "QuantParams",
    "b_normal_layout_to_native_layout",
    "pack_int4",
    "unpack_int4",
    "CustomOp",
    "CustomOpContext",
    "TargetType",
    "SKIP_CUSTOM_OP_COMPUTE",
    "live_contexts",
    "dequantize",
    "quantize",
    "to_float16",
    "from_float16",
    "compact",
    "nc1hwc2_to_nchw",
    "nchw_to_nc1hwc2",
]


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
