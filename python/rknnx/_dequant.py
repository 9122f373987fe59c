"""Floats of a quantized output as the vendor's runtime makes them in
``rknn_outputs_get(want_float=1)``, for :meth:`rknnx.ZeroCopySession.read`
(docs/abi-notes.md, "NPU-side bytes").

The runtime dequantizes an int8 output by two formulas, each bit-exact on every recorded
element (librknnrt 1.5.2 and 1.6.0 on RK3588 and RK3566):

- scalar: ``(q - zp) * scale`` in float32, what the compiled kernels compute;
- vector: ``q * scale - zp * scale``, each product rounded to float32.

Which elements of a 4-D output take the vector formula depends on the chip: on RK3588 the
channels of the whole C2 blocks (C2 16), on RK3566/RK3568 the pixels (in ``h * W + w``
order) of the whole groups of 8, for every channel.  Other outputs take the scalar formula;
so do the chips no recording measured (their outputs are read by the scalar formula).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

__all__ = ["vector_part", "apply_vector"]

#: chip -> (what the whole groups are made of, the group's size for int8)
_RULES = {"RK3588": ("channels", 16), "RK3566": ("pixels", 8), "RK3568": ("pixels", 8)}


def vector_part(chip: Optional[str], shape, layout: str, c2: Optional[int] = None):
    """An index into a 4-D array of `shape` in `layout` ("NCHW"/"NHWC") that selects the
    elements the runtime dequantizes by the vector formula on `chip` (`c2`: the int8
    block of the output's native attribute, where known), or None where no element is."""
    rule = _RULES.get(chip or "")
    if rule is None or len(shape) != 4:
        return None
    kind, group = rule
    if layout == "NCHW":
        n, c, h, w = shape
    else:
        n, h, w, c = shape
    if kind == "channels":
        whole = (c // (c2 or group)) * (c2 or group)
        if whole == 0:
            return None
        return (slice(None), slice(0, whole)) if layout == "NCHW" else (Ellipsis, slice(0, whole))
    pixels = h * w
    whole = (pixels // group) * group
    if whole == 0:
        return None
    mask = (np.arange(pixels) < whole).reshape(h, w)
    return (slice(None), slice(None), mask) if layout == "NCHW" else (slice(None), mask)


def apply_vector(res: np.ndarray, q: np.ndarray, scale: float, zp: int, where) -> None:
    """Overwrite res[where] (float32, the scalar formula's) with the vector formula of the
    codes q[where]."""
    s = np.float32(scale)
    v = q[where].astype(np.float32)
    v *= s
    v -= np.float32(np.float32(zp) * s)
    res[where] = v
