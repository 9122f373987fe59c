"""Floats of a quantized output as the vendor's runtime makes them in
``rknn_outputs_get(want_float=1)``, for :meth:`rknnx.ZeroCopySession.read`
(docs/abi-notes.md, "NPU-side bytes").

The runtime dequantizes an int8 output by two formulas, each bit-exact on every recorded
element (librknnrt 1.5.2 and 1.6.0 on RK3588 and RK3566, 1.4.0 on both):

- scalar: ``(q - zp) * scale`` in float32, what the compiled kernels compute;
- vector: ``q * scale - zp * scale``, each product rounded to float32.

Which elements of a 4-D output take the vector formula depends on the runtime's version and
the chip (C channels, P = H * W pixels in ``h * W + w`` order; docs/abi-notes.md lists the
files each rule was measured on):

- librknnrt 1.4.0: none, every element by the scalar formula (on RK3566 where 1.5.2 and
  1.6.0 take the vector one);
- from 1.5.2 on (and on a runtime that does not say its version), RK3588 (int8 C2 16): the
  channels of the whole C2 blocks, at the pixels of the whole groups of 4; the channels of
  a partial last block and the last P % 4 pixels take the scalar formula;
- RK3566/RK3568 (C2 8): every channel at the pixels of the whole groups of 8, but for the
  last channel when C % 8 == 1 (a last block of one channel: a [1,1,H,W] output is all
  scalar); the last P % 8 pixels take the scalar formula.

Other outputs take the scalar formula; so do the chips no recording measured.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

__all__ = ["vector_part", "apply_vector", "scalar_only"]

#: chip -> (which channels, the int8 C2, the pixels of a whole group): what the vector
#: formula takes ("blocks": the whole C2 blocks; "all": all but a last block of one channel)
_RULES = {"RK3588": ("blocks", 16, 4), "RK3566": ("all", 8, 8), "RK3568": ("all", 8, 8)}

#: the runtime versions before the vector formula: every element by the scalar one
#: (librknnrt 1.4.0: rknn-toolkit2 2c2d03d's RK3566 multiple_input_demo, 16,384 pixels in
#: whole groups of 8, came back from outputs_get(want_float=1) by ``(q - zp) * scale``)
_SCALAR_BEFORE = (1, 5, 0)


def scalar_only(version: Optional[Tuple[int, int, int]]) -> bool:
    """Whether a runtime of `version` (``rknnx._quirks.parse``; None: it did not say)
    dequantizes every element by the scalar formula."""
    return version is not None and tuple(version) < _SCALAR_BEFORE


def vector_part(chip: Optional[str], shape, layout: str, c2: Optional[int] = None,
                version: Optional[Tuple[int, int, int]] = None):
    """An index into a 4-D array of `shape` in `layout` ("NCHW"/"NHWC") that selects the
    elements the runtime of `version` dequantizes by the vector formula on `chip` (`c2`:
    the int8 block of the output's native attribute, where known), or None where no
    element is."""
    rule = _RULES.get(chip or "")
    if rule is None or len(shape) != 4 or scalar_only(version):
        return None
    kind, block, group = rule
    if layout == "NCHW":
        n, c, h, w = shape
    else:
        n, h, w, c = shape
    block = c2 or block
    if kind == "blocks":
        channels = (c // block) * block
    else:
        channels = c - 1 if c % block == 1 else c
    pixels = h * w
    whole = (pixels // group) * group
    if channels == 0 or whole == 0:
        return None
    cs = slice(0, channels)
    if whole == pixels:
        return (slice(None), cs) if layout == "NCHW" else (Ellipsis, cs)
    mask = (np.arange(pixels) < whole).reshape(h, w)
    return (slice(None), cs, mask) if layout == "NCHW" else (slice(None), mask, cs)


def apply_vector(res: np.ndarray, q: np.ndarray, scale: float, zp: int, where) -> None:
    """Overwrite res[where] (float32, the scalar formula's) with the vector formula of the
    codes q[where]."""
    s = np.float32(scale)
    v = q[where].astype(np.float32)
    v *= s
    v -= np.float32(np.float32(zp) * s)
    res[where] = v
