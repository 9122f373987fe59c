"""One tensor's description: :class:`TensorInfo` (with :class:`QuantInfo` and
:class:`NativeInfo`), the type ``Model.inputs`` and ``ModelFile.inputs`` both hold.

Plain frozen dataclasses over numpy, below every module that makes them: a model's
runtime answers (rknnx._tensors.describe) and a vendor file read with no runtime
(rknnx.modelfile) describe a tensor the same way, and importing this loads no extension.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np

__all__ = ["QuantInfo", "NativeInfo", "TensorInfo", "PIXEL_LAYOUTS"]

#: the layouts a 4-D input can be given in, by name
PIXEL_LAYOUTS = ("NHWC", "NCHW")


@dataclass(frozen=True)
class QuantInfo:
    """How a tensor is quantized: ``real = (q - zero_point) * scale`` for ``"affine"``,
    ``real = q / 2**fl`` for ``"dfp"``; ``kind`` is ``"none"`` for float tensors."""

    kind: str
    scale: float = 1.0
    zero_point: int = 0
    fl: int = 0


@dataclass(frozen=True)
class NativeInfo:
    """The layout the NPU itself uses for a tensor (what zero-copy memory holds when it is
    bound with the native attribute): its layout name, shape in that layout, byte strides
    (padding included) and the bytes a buffer needs."""

    layout: str
    shape: Tuple[int, ...]
    dtype: np.dtype
    strides: Tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class TensorInfo:
    """One input or output of a model (``Model.inputs``, ``Model.outputs``, and
    ``ModelFile.inputs``/``outputs`` of a vendor file read with :mod:`rknnx.modelfile`).

    ``shape``/``layout`` are the tensor as the model declares it (inputs as they are
    given, outputs as :meth:`rknnx.Model.run` returns them), ``dtype`` the model's own
    element type, ``quant`` its quantization, ``native`` the NPU's own layout (None where
    the runtime does not report one, and for a file read with no runtime: its native
    strides are the runtime's).
    """

    index: int
    name: str
    shape: Tuple[int, ...]
    dtype: np.dtype
    layout: str
    quant: QuantInfo
    native: Optional[NativeInfo] = None
    attr: object = field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    def shape_in(self, layout: str) -> Tuple[int, ...]:
        """The shape in `layout` ("NHWC" or "NCHW") for a 4-D tensor."""
        return _permute(self.shape, self.layout, layout)


def _permute(shape: Tuple[int, ...], src: str, dst: str) -> Tuple[int, ...]:
    if src == dst or len(shape) != 4 or src not in PIXEL_LAYOUTS or dst not in PIXEL_LAYOUTS:
        return tuple(shape)
    n, a, b, c = shape
    return (n, c, a, b) if (src, dst) == ("NHWC", "NCHW") else (n, b, c, a)
