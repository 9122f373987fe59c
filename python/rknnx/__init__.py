"""rknnx: drive a Rockchip NPU (librknnrt, RKNN C API 2.x) from Python without copying.

The runtime library is loaded on first use: ``rknnx.load_runtime(path)``, else env
``RKNNX_RUNTIME`` (a path, or ``emulator`` for the bundled CPU emulator), else the
board's ``librknnrt.so``.
"""

from rknnx import errors, platforms
from rknnx.errors import (
    RKNNError,
    FlowError,
    NotSupportedError,
    RuntimeNotFoundError,
)

try:
    from rknnx import _core
except ImportError as exc:  # pragma: no cover - depends on how the package was installed
    # The pure-Python modules (rknnx.errors, rknnx.platforms, rknnx.emulator) stay
    # importable; every name of the extension raises this error when it is used.
    _CORE_ERROR = ImportError(
        "rknnx's compiled extension (rknnx._core) is missing or cannot be loaded "
        f"({exc}). Build and install the package with `pip install .` from a source "
        "checkout (it needs a C compiler; Cython and CMake come from the build "
        "requirements), or install a wheel for your platform.")

    def __getattr__(name):
        if name in __all__ and name not in ("errors", "platforms", "__version__") and name not in globals():
            raise _CORE_ERROR
        raise AttributeError(f"module 'rknnx' has no attribute {name!r}")
else:
    from rknnx._core import load_runtime, runtime_info, emulator_path, api_function_names
    from rknnx._core import (
        Context,
        TensorAttr,
        TensorMem,
        Input,
        Output,
        Outputs,
        InitFlag,
        QueryCmd,
        TensorType,
        TensorFormat,
        QntType,
        CoreMask,
        MemFlag,
        MemAllocFlag,
        MemSyncMode,
        InOutNum,
        SdkVersion,
        MemSize,
        PerfRun,
        PerfDetail,
        InputRange,
        DeviceMemInfo,
        create_mem2,
        dtype_of,
        type_of_dtype,
        MatmulContext,
        MatmulTensorAttr,
        MatmulIOAttr,
        MatmulInfo,
        MatmulShape,
        MatmulType,
        MatmulLayout,
        MatmulQuantType,
        QuantParams,
        b_normal_layout_to_native_layout,
        pack_int4,
        unpack_int4,
        CustomOp,
        CustomOpContext,
        TargetType,
        SKIP_CUSTOM_OP_COMPUTE,
    )


__version__ = "0.1.0"

__all__ = [
    "errors",
    "platforms",
    "RKNNError",
    "FlowError",
    "NotSupportedError",
    "RuntimeNotFoundError",
    "load_runtime",
    "runtime_info",
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
    "__version__",
]
