"""rknnx.vision.letterbox into float16 and float32 outputs (an unquantized input: the
NPU takes the normalized pixels): each element is ``(p - mean) / std`` computed in float32
and rounded to the output's type, p the reference's pixel, on every vector path, in NHWC,
NCHW and NC1HWC2; the pad likewise; refused without a normalization, and the binding
refuses a table or output of another element size."""

from __future__ import annotations

import numpy as np
import pytest

import letterbox_reference as ref
from rknnx import _kernels
from rknnx.vision import letterbox


MEAN, STD = (123.675, 116.28, 103.53), (58.395, 57.12, 57.375)


def _want(px, dtype, mean, std):
    return ((px.astype(np.float32) - np.float32(mean)) / np.float32(std)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("hw, size", [((333, 500), (224, 224)), ((720, 1280), (640, 640)),
                                      ((37, 91), (64, 48))],
                         ids=lambda v: "x".join(map(str, v)))
def test_float_outputs_are_the_normalized_pixels(dtype, hw, size, path):
    f = np.random.default_rng(hw[0]).integers(0, 256, hw + (3,), np.uint8)
    W, H = size
    px = ref.letterbox(f, size, swap_rb=True, pad_value=114)
    want = _want(px, dtype, MEAN, STD)
    nhwc = np.full((1, H, W, 3), 7, dtype)
    got, _ = letterbox(f, out=nhwc, swap_rb=True, pad_value=114, mean=MEAN, std=STD)
    assert got is nhwc
    np.testing.assert_array_equal(nhwc[0].view(np.uint8), want.view(np.uint8))
    nchw = np.full((1, 3, H, W), 7, dtype)
    letterbox(f, out=nchw, swap_rb=True, pad_value=114, mean=MEAN, std=STD)
    np.testing.assert_array_equal(nchw[0].transpose(1, 2, 0), want)
    blk = np.full((1, 1, H, W, 8), 7, dtype)
    letterbox(f, out=blk, swap_rb=True, pad_value=114, mean=MEAN, std=STD)
    np.testing.assert_array_equal(blk[0, 0, :, :, :3], want)
    assert (blk[..., 3:] == 7).all()
    # the zoo's 0..1 scaling: mean 0, std 255
    letterbox(f, out=nhwc, swap_rb=True, pad_value=114, mean=0, std=255)
    np.testing.assert_array_equal(nhwc[0], _want(px, dtype, 0, 255))
    assert nhwc[0, 0, 0, 0] == dtype(114 / np.float32(255))


def test_float_outputs_need_a_normalization():
    f = np.zeros((20, 20, 3), np.uint8)
    with pytest.raises(ValueError, match=r"a float16 out takes each pixel normalized: give "
                                         r"mean= and std="):
        letterbox(f, out=np.empty((1, 16, 16, 3), np.float16))
    with pytest.raises(ValueError, match=r"std must be finite and non-zero"):
        letterbox(f, out=np.empty((1, 16, 16, 3), np.float32), mean=0, std=(1, 0, 1))
    with pytest.raises(TypeError, match=r"out is uint8 \(pixels\), int8 \(a quantized "
                                        r"input\), float16 or float32"):
        letterbox(f, out=np.empty((1, 16, 16, 3), np.float64), mean=0, std=1)
    # the binding: float elements need their table and pad elements, of their size
    out = np.empty((8, 8, 3), np.float32)
    lut = np.zeros(768, np.float32).view(np.uint8)
    args = (f, None, out, 0, 20, 20, 60, 3, 1, 0, 8, 8, 96, 12, (0, 4, 8), 8, 8, 0, 0,
            False)
    _kernels.letterbox_run(*args, lut, b"\0\0\0", None, 0, 0, 4, bytes(12))
    with pytest.raises(ValueError, match="3 x 256 entries"):
        _kernels.letterbox_run(*args, lut[:768 * 2], b"\0\0\0", None, 0, 0, 4, bytes(12))
    with pytest.raises(ValueError, match="need the table and three pad elements"):
        _kernels.letterbox_run(*args, lut, b"\0\0\0", None, 0, 0, 4, bytes(6))
    with pytest.raises(TypeError, match="the output has 16-bit elements"):
        _kernels.letterbox_run(*args, lut[:1536], b"\0\0\0", None, 0, 0, 2, bytes(6))
    with pytest.raises(ValueError, match="output geometry reaches outside"):
        _kernels.letterbox_run(*args[:14], (0, 4, 9), *args[15:], lut, b"\0\0\0", None, 0,
                               0, 4, bytes(12))
