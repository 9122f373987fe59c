"""``rknnx.layout``: the NPU's layouts and quantization for numpy arrays, outside a session.

The compiled kernels of :mod:`rknnx.lowlevel` (GIL released, exact against numpy), given
a tensor's own facts (a :class:`rknnx.TensorInfo` of ``Model.inputs`` / ``Model.outputs``,
or its :class:`rknnx.QuantInfo`) instead of raw scales and channel counts: for data that
did not come through a :class:`rknnx.ZeroCopySession`, say native outputs a board
pipeline saved, or inputs prepared in another process.

>>> info = model.outputs[0]                                   # doctest: +SKIP
>>> dense = rknnx.layout.from_native(saved, info)             # float32, info's layout
>>> q = rknnx.layout.quantize(dense, info)                    # back to the model's int8
>>> x = rknnx.layout.dequantize(q, info)

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

# the kernels' own extension module: converting a layout loads no runtime binding
from rknnx import _kernels as _k
from rknnx._tensors import QuantInfo, TensorInfo

__all__ = ["dequantize", "quantize", "from_native", "to_native"]

Quant = Union[TensorInfo, QuantInfo]


def _quant(quant: Quant, what: str) -> QuantInfo:
    if isinstance(quant, TensorInfo):
        return quant.quant
    if isinstance(quant, QuantInfo):
        return quant
    raise TypeError(f"{what}: give the tensor's rknnx.TensorInfo (model.inputs[i] / "
                    f"model.outputs[i]) or its QuantInfo; got {type(quant).__name__}")


def _scale(q: QuantInfo, what: str):
    """``(scale, zero_point)`` of a quantized tensor (a DFP one as a power of two)."""
    if q.kind == "affine":
        return q.scale, q.zero_point
    if q.kind == "dfp":
        return 2.0 ** -q.fl, 0
    raise ValueError(f"{what}: the tensor is not quantized (a float tensor)")


def dequantize(q, quant: Quant, *, dtype=np.float32,
               out: Optional[np.ndarray] = None) -> np.ndarray:
    """The real values of a quantized array: ``(q - zero_point) * scale`` for an affine
    tensor, ``q / 2**fl`` for a DFP one, in `dtype` (float32 or float16; into `out`)."""
    scale, zp = _scale(_quant(quant, "dequantize"), "dequantize")
    return _k.dequantize(q, scale, zp, dtype=dtype, out=out)


def quantize(x, quant: Quant, *, dtype=None, out: Optional[np.ndarray] = None) -> np.ndarray:
    """Real values (float32 or float16) as the tensor's quantized type, saturated to its
    range; `dtype` is the tensor's own for a TensorInfo (int8 for a bare QuantInfo)."""
    if dtype is None:
        dtype = quant.dtype if isinstance(quant, TensorInfo) else np.int8
    scale, zp = _scale(_quant(quant, "quantize"), "quantize")
    return _k.quantize(x, scale, zp, dtype=dtype, out=out)


def _native_of(info: TensorInfo, what: str):
    if not isinstance(info, TensorInfo):
        raise TypeError(f"{what}: give the tensor's rknnx.TensorInfo (model.outputs[i]); got "
                        f"{type(info).__name__}")
    if info.native is None:
        raise ValueError(f"{what}: the runtime reported no native layout for "
                         f"{info.name!r} (see Model.notes)")
    return info.native


def _channels(info: TensorInfo) -> int:
    if len(info.shape) != 4:
        raise ValueError(f"{info.name!r} is not 4-D: it has no channels to unpack")
    return info.shape[3] if info.layout == "NHWC" else info.shape[1]


def from_native(native, info: TensorInfo, *, layout: Optional[str] = None, dtype=np.float32,
                out: Optional[np.ndarray] = None) -> np.ndarray:
    """A tensor in the NPU's native layout (``info.native``: NC1HWC2, or the native NHWC
    with padded rows) as a dense `dtype` array in `layout` (default: the tensor's own),
    dequantized when it is quantized: what ``ZeroCopySession.read`` gives for a native
    output, for an array from anywhere.

    Raises
    ------
    ValueError
        `native` is not of the native shape and type, no native layout is known, a layout
        not NCHW/NHWC.
    """
    nat = _native_of(info, "from_native")
    a = np.asarray(native)
    if a.shape != nat.shape or a.dtype != nat.dtype:
        raise ValueError(f"from_native: {info.name!r} is natively {nat.layout} "
                         f"{nat.shape} {nat.dtype}; got {a.shape} {a.dtype}")
    if layout is not None and str(layout).upper() not in ("NCHW", "NHWC"):
        raise ValueError(f"from_native: layout must be 'NCHW' or 'NHWC'; got {layout!r}")
    # a tensor that is not 4-D has no pixels to order: its own layout (UNDEFINED for the
    # vendor's [1, 4] output of multi_io_rk3588, librknnrt 1.6.0) is kept
    layout = (layout or info.layout).upper() if len(info.shape) == 4 else info.layout
    q = info.quant
    quantized = q.kind != "none" and a.dtype.kind in "iu"
    kw = {}
    if quantized:
        kw["scale"], kw["zero_point"] = _scale(q, "from_native")
    if nat.layout == "NC1HWC2":
        if quantized and a.dtype.itemsize > 1:
            # 16-bit codes (RV1106's int16 pose keypoints): the blocks undone in their own
            # type, then (q - zp) * scale; the kernels dequantize 8-bit codes only
            dense = _k.nc1hwc2_to_nchw(a, _channels(info), layout=layout, dtype=a.dtype)
            val = (dense.astype(np.float32) - np.float32(kw["zero_point"])) \
                * np.float32(kw["scale"])
            if out is None:
                return val.astype(dtype, copy=False)
            out[...] = val
            return out
        return _k.nc1hwc2_to_nchw(a, _channels(info), layout=layout, dtype=np.dtype(dtype),
                                   out=out, **kw)
    src = a
    if a.ndim == 4 and layout != nat.layout and nat.layout in ("NCHW", "NHWC"):
        src = a.transpose((0, 2, 3, 1) if layout == "NHWC" else (0, 3, 1, 2))
    if quantized:
        return _k.dequantize(src, kw["scale"], kw["zero_point"], dtype=dtype, out=out)
    if out is None:
        return np.array(src, dtype=dtype)
    out[...] = src
    return out


def to_native(x, info: TensorInfo, *, layout: Optional[str] = None,
              out: Optional[np.ndarray] = None) -> np.ndarray:
    """A dense tensor (in `layout`, default the tensor's own; the model's type, e.g.
    quantized with :func:`quantize`) in the NPU's native NC1HWC2 layout, padding channels
    zeroed: what ``inputs="native"`` sessions take for such an input."""
    nat = _native_of(info, "to_native")
    if nat.layout != "NC1HWC2":
        raise ValueError(f"to_native: {info.name!r} is natively {nat.layout}, not NC1HWC2 "
                         "(its dense array is already what the NPU takes)")
    a = np.asarray(x)
    layout = (layout or info.layout).upper()
    # the compiler may plan more C1 blocks than the channels fill (the vendor's
    # NATIVE_OUTPUT_ATTR of tiny_rk3588_i8: [1,2,8,8,16] for 4 channels, librknnrt
    # 1.6.0): the array is the native shape, the blocks past the channels zero
    c2, c1 = nat.shape[4], nat.shape[1]
    channels = a.shape[3 if layout == "NHWC" else 1] if a.ndim == 4 else 0
    used = -(-channels // c2)
    if a.ndim != 4 or used >= c1:
        return _k.nchw_to_nc1hwc2(a, c2, layout=layout, out=out)
    if out is None:
        out = np.zeros(nat.shape, a.dtype)
    elif isinstance(out, np.ndarray) and out.shape == nat.shape and out.flags.writeable:
        out[:, used:] = 0
    else:
        raise ValueError(f"to_native: out must be a writable array of the native shape "
                         f"{nat.shape}; got {getattr(out, 'shape', type(out).__name__)}")
    _k.nchw_to_nc1hwc2(a, c2, layout=layout, out=out[:, :used])
    return out


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
