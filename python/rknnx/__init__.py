"""rknnx: drive a Rockchip NPU (librknnrt, RKNN C API 2.x) from Python without copying.

The package imports in layers (see ``docs/architecture.md``):

- :mod:`rknnx.errors`, :mod:`rknnx.platforms` and :mod:`rknnx.emulator` are pure Python
  and import without the compiled extension;
- :mod:`rknnx.lowlevel` is the 1:1 binding of the C API (the compiled ``rknnx._core``);
- the names of this namespace are the facade, imported on first use, so that
  ``import rknnx.errors`` works on a machine where the extension is not built.

The runtime library is loaded on first use: ``rknnx.load_runtime(path)``, else env
``RKNNX_RUNTIME`` (a path, or ``emulator`` for the bundled CPU emulator), else the
board's ``librknnrt.so``.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING

from rknnx import errors
from rknnx.errors import (
    RKNNError,
    FlowError,
    NotSupportedError,
    RuntimeNotFoundError,
)

from rknnx._version import __version__

# name -> module that defines it; imported by __getattr__ on first use (PEP 562), so that
# the pure-Python layers never pay for, or depend on, the compiled extension.
_LAZY = {
    "Model": "rknnx.model",
    "Perf": "rknnx.model",
    "PerfRow": "rknnx.model",
    "ZeroCopySession": "rknnx.session",
    "Pool": "rknnx.pool",
    "TensorInfo": "rknnx._tensorinfo",
    "QuantInfo": "rknnx._tensorinfo",
    "NativeInfo": "rknnx._tensorinfo",
    "CoreMask": "rknnx.lowlevel",
    "InitFlag": "rknnx.lowlevel",
    "lowlevel": "rknnx.lowlevel",
    "emulator": "rknnx.emulator",
    "platforms": "rknnx.platforms",
    "runtime": "rknnx.runtime",
    "lite": "rknnx.lite",
    "load_runtime": "rknnx.runtime",
    "runtime_info": "rknnx.runtime",
    "emulator_path": "rknnx.runtime",
    "linalg": "rknnx.linalg",
    "layout": "rknnx.layout",
    "matmul": "rknnx.linalg",
    "Matmul": "rknnx.linalg",
    "custom": "rknnx.custom",
    "custom_op": "rknnx.custom",
    "CustomOperator": "rknnx.custom",
}

if TYPE_CHECKING:
    # what type checkers and IDEs see: the names __getattr__ resolves on first use (it
    # keeps `import rknnx.errors` free of the compiled extension at run time)
    from rknnx import custom, emulator, layout, linalg, lite, lowlevel, platforms, runtime
    from rknnx._tensorinfo import NativeInfo, QuantInfo, TensorInfo
    from rknnx.custom import CustomOperator, custom_op
    from rknnx.linalg import Matmul, matmul
    from rknnx.lowlevel import CoreMask, InitFlag
    from rknnx.model import Model, Perf, PerfRow
    from rknnx.pool import Pool
    from rknnx.runtime import emulator_path, load_runtime, runtime_info
    from rknnx.session import ZeroCopySession

__all__ = [
    "errors",
    "RKNNError",
    "FlowError",
    "NotSupportedError",
    "RuntimeNotFoundError",
    *_LAZY,
    "__version__",
]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rknnx' has no attribute {name!r}")
    mod = _importlib.import_module(module)
    value = mod if module == f"rknnx.{name}" else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    # the public names only: no imports or helpers in tab completion
    return sorted(__all__)
