"""Frames in a decoder's own format: rknnx.vision.letterbox and Detector.detect take I420
(PyAV's yuv420p: a (Y, U, V) triple of planes with their own strides, or one (h*3/2, w)
array) converted as OpenCV's COLOR_YUV2BGR_I420, exactly at 1:1 and within 1 after a
resize, bit for bit the numpy reference on every vector path; the BT.709 matrix against a
float reference; NV12 in a hardware decoder's layout (MPP: 1920x1080 in 1920x1088 rows
of 2304 bytes); bad planes and matrices refused before C."""

from __future__ import annotations

import numpy as np
import pytest

import letterbox_reference as ref
from rknnx import _kernels
from rknnx.vision import letterbox

cv2 = pytest.importorskip("cv2", reason="opencv-python-headless (the test extra) is not "
                                        "installed: the comparisons with OpenCV need it")


def _i420(h, w, seed=0):
    """A contiguous (h*3/2, w) I420 array (Y, then U, then V, each packed)."""
    return np.random.default_rng(seed).integers(0, 256, (h * 3 // 2, w), np.uint8)


def _planes(a):
    h, w = a.shape[0] // 3 * 2, a.shape[1]
    flat = a.reshape(-1)
    q = h * w // 4
    return (a[:h], flat[h * w:h * w + q].reshape(h // 2, w // 2),
            flat[h * w + q:].reshape(h // 2, w // 2))


def _every_uv_pair():
    """Y over all values in every block row, U and V over every pair (a 2x2 block each):
    512x512."""
    h = w = 512
    y = (np.arange(h * w, dtype=np.int64) * 7 % 256).astype(np.uint8).reshape(h, w)
    u, v = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    return y, u.astype(np.uint8), v.astype(np.uint8)


def test_i420_conversion_equals_opencv_on_every_y_u_v(path):
    # into the frame's own size the letterbox is the conversion alone (weights 0)
    y, u, v = _every_uv_pair()
    a = np.concatenate([y.reshape(-1), u.reshape(-1), v.reshape(-1)]).reshape(768, 512)
    want = cv2.cvtColor(a, cv2.COLOR_YUV2BGR_I420)
    got, box = letterbox(a, (512, 512), fmt="i420")
    assert box.resized == (512, 512) and box.pad == (0, 0)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, ref.i420_to_bgr(y, u, v))
    got, _ = letterbox((y, u, v), (512, 512), fmt="I420", swap_rb=True)
    np.testing.assert_array_equal(got, want[..., ::-1])


SIZES = [((1080, 1920), (640, 640)), ((720, 1280), (640, 640)), ((122, 458), (320, 320)),
         ((36, 90), (416, 256)), ((2, 2), (9, 9)), ((240, 320), (640, 640)),
         ((2160, 3840), (640, 640)), ((480, 640), (640, 640))]


@pytest.mark.parametrize("hw, size", SIZES, ids=lambda v: "x".join(map(str, v)))
def test_i420_within_one_of_opencv_and_equal_to_the_reference(hw, size, path):
    a = _i420(*hw, seed=hw[1])
    y, u, v = _planes(a)
    bgr = cv2.cvtColor(a, cv2.COLOR_YUV2BGR_I420)
    for swap in (False, True):
        got, _ = letterbox(a, size, fmt="i420", swap_rb=swap, pad_value=114)
        W, H = size
        _, nw, nh, left, top = ref.geometry(hw[1], hw[0], W, H)
        r = cv2.resize(bgr, (nw, nh), interpolation=cv2.INTER_LINEAR)
        r = cv2.copyMakeBorder(r, top, H - nh - top, left, W - nw - left,
                               cv2.BORDER_CONSTANT, value=(114, 114, 114))
        want = r[..., ::-1] if swap else r
        assert np.abs(got.astype(np.int16) - want).max() <= 1
        np.testing.assert_array_equal(
            got, ref.letterbox((y, u, v), size, swap_rb=swap, pad_value=114, fmt="i420"))
        # NCHW, the same pixels
        nchw = np.empty((1, 3, H, W), np.uint8)
        letterbox((y, u, v), out=nchw, fmt="i420", swap_rb=swap, pad_value=114)
        np.testing.assert_array_equal(nchw[0].transpose(1, 2, 0), got)



@pytest.mark.parametrize("hw", [(720, 1280), (960, 1280), (100, 1282), (4, 34)],
                         ids=lambda v: "x".join(map(str, v)))
def test_yuv_at_2_to_1_equals_opencv_exactly(hw, path):
    # an exact 2:1 both ways is the kernel's one-pass path (AVX2): each output pixel the
    # 2x2 mean of the converted block, as OpenCV's cvtColor then INTER_LINEAR at 2:1
    # (its 2x2 mean), byte for byte; 1282 and 34 wide leave a vector step's tail
    h, w = hw
    W, H = w // 2, h // 2 + 6
    for fmt, code in (("nv12", cv2.COLOR_YUV2BGR_NV12), ("i420", cv2.COLOR_YUV2BGR_I420)):
        a = _i420(h, w, seed=w + h)
        bgr = cv2.cvtColor(a, code)
        r = cv2.resize(bgr, (W, h // 2), interpolation=cv2.INTER_LINEAR)
        r = cv2.copyMakeBorder(r, 3, 3, 0, 0, cv2.BORDER_CONSTANT, value=(114, 114, 114))
        for swap in (False, True):
            want = r[..., ::-1] if swap else r
            got, box = letterbox(a, (W, H), fmt=fmt, swap_rb=swap, pad_value=114)
            assert box.resized == (W, h // 2) and box.pad == (0, 3)
            np.testing.assert_array_equal(got, want)
            nchw = np.empty((1, 3, H, W), np.uint8)
            letterbox(a, out=nchw, fmt=fmt, swap_rb=swap, pad_value=114)
            np.testing.assert_array_equal(nchw[0].transpose(1, 2, 0), want)

def test_i420_planes_with_their_own_strides_equal_the_array():
    # PyAV's planes: each a buffer of rows of its line size (padded to 32 or 64 bytes)
    h, w = 240, 322
    a = _i420(h, w, seed=4)
    want, _ = letterbox(a, (300, 200), fmt="i420")
    y, u, v = _planes(a)
    ybuf = np.zeros((h, 384), np.uint8)
    ybuf[:, :w] = y
    ubuf = np.zeros((h // 2, 192), np.uint8)
    ubuf[:, :w // 2] = u
    vbuf = np.zeros((h // 2 + 3, 224), np.uint8)
    vbuf[3:, :w // 2] = v
    got, _ = letterbox((ybuf[:, :w], ubuf[:, :w // 2], vbuf[3:, :w // 2]), (300, 200),
                       fmt="i420")
    np.testing.assert_array_equal(got, want)
    got, _ = letterbox([y, u, v], (300, 200), fmt="i420")
    np.testing.assert_array_equal(got, want)


def test_bt709_against_a_float_reference(path):
    # BT.709 limited range (Kr 0.2126, Kb 0.0722): within 1 of the real-valued matrix
    # everywhere, and its integers are letterbox.h's (the numpy reference)
    y, u, v = _every_uv_pair()
    got, _ = letterbox((y, u, v), (512, 512), fmt="i420", matrix="bt709")
    kr, kb = 0.2126, 0.0722
    kg = 1 - kr - kb
    yy = np.maximum(y.astype(np.float64) - 16, 0) * 255 / 219
    uu = np.repeat(np.repeat(u.astype(np.float64) - 128, 2, 0), 2, 1) * 255 / 224
    vv = np.repeat(np.repeat(v.astype(np.float64) - 128, 2, 0), 2, 1) * 255 / 224
    r = yy + 2 * (1 - kr) * vv
    g = yy - 2 * (1 - kb) * kb / kg * uu - 2 * (1 - kr) * kr / kg * vv
    b = yy + 2 * (1 - kb) * uu
    want = np.clip(np.rint(np.stack([b, g, r], -1)), 0, 255)
    assert np.abs(got.astype(np.float64) - want).max() <= 1
    np.testing.assert_array_equal(got, ref.i420_to_bgr(y, u, v, matrix="bt709"))
    # it is not BT.601: the greens differ by tens on saturated chroma
    bt601, _ = letterbox((y, u, v), (512, 512), fmt="i420")
    assert np.abs(bt601.astype(np.int16) - got).max() > 20
    # NV12 takes the matrix too
    uv = np.stack([u, v], -1).reshape(256, 512)
    nv, _ = letterbox((y, uv), (512, 512), fmt="nv12", matrix="BT709")
    np.testing.assert_array_equal(nv, got)


def test_nv12_in_mpps_layout():
    # a hardware decoder's buffer: 1920x1080 in 1088 rows of 2304 bytes (MPP's 256-byte
    # aligned pitch), the UV plane after the 1088 rows of Y
    h, w, rows, pitch = 1080, 1920, 1088, 2304
    rng = np.random.default_rng(8)
    buf = rng.integers(0, 256, (rows * 3 // 2, pitch), np.uint8)
    y, uv = buf[:h, :w], buf[rows:rows + h // 2, :w]
    got, box = letterbox((y, uv), (640, 640), fmt="nv12", swap_rb=True, pad_value=114)
    assert box.frame_size == (w, h)
    nv = np.concatenate([y, uv])
    want, _ = letterbox(nv, (640, 640), fmt="nv12", swap_rb=True, pad_value=114)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, ref.letterbox(nv, (640, 640), swap_rb=True,
                                                     pad_value=114, fmt="nv12"))
    bgr = cv2.cvtColor(nv, cv2.COLOR_YUV2BGR_NV12)
    r = cv2.resize(bgr, (640, 360), interpolation=cv2.INTER_LINEAR)
    r = cv2.copyMakeBorder(r, 140, 140, 0, 0, cv2.BORDER_CONSTANT, value=(114, 114, 114))
    assert np.abs(got.astype(np.int16) - r[..., ::-1]).max() <= 1
    # the UV plane as (h/2, w/2, 2) pairs from the same buffer
    got2, _ = letterbox((y, uv.reshape(h // 2, w // 2, 2)), (640, 640), fmt="nv12",
                        swap_rb=True, pad_value=114)
    np.testing.assert_array_equal(got2, got)


def test_bad_yuv_input_is_refused_before_c():
    a = _i420(64, 64)
    y, u, v = _planes(a)
    cases = [
        (lambda: letterbox((y, u), (32, 32), fmt="i420"), ValueError,
         r"\(Y, U, V\) triple of planes; got a sequence of 2"),
        (lambda: letterbox((y, u[:, :16], v), (32, 32), fmt="i420"), ValueError,
         r"the U plane of a 64x64 I420 frame is \(32, 32\); got shape \(32, 16\)"),
        (lambda: letterbox((y, u, v[:31]), (32, 32), fmt="i420"), ValueError,
         r"the V plane of a 64x64 I420 frame is \(32, 32\); got shape \(31, 32\)"),
        (lambda: letterbox((y, u, v.astype(np.int16)), (32, 32), fmt="i420"), TypeError,
         r"the V plane must be uint8; got int16"),
        (lambda: letterbox((y, u[:, ::-1], v), (32, 32), fmt="i420"), ValueError,
         r"the U plane has contiguous rows"),
        (lambda: letterbox(_i420(64, 63)[:, :63], (32, 32), fmt="i420"), ValueError,
         r"I420 frame has an even width and height; got 63x64"),
        (lambda: letterbox(np.zeros((95, 64), np.uint8), (32, 32), fmt="i420"), ValueError,
         r"multiple of 3"),
        (lambda: letterbox(np.zeros((96, 80), np.uint8)[:, :64], (32, 32), fmt="i420"),
         ValueError, r"give a strided frame as its \(Y, U, V\) planes"),
        (lambda: letterbox(a, (32, 32), fmt="yuv420"), ValueError,
         r"fmt is 'bgr', 'rgb', 'nv12' or 'i420'; got 'yuv420'"),
        (lambda: letterbox(a, (32, 32), fmt="i420", matrix="bt2020"), ValueError,
         r"matrix is 'bt601' or 'bt709' \(limited range\); got 'bt2020'"),
        (lambda: letterbox(a, (32, 32), fmt="i420", matrix=None), ValueError,
         r"matrix is 'bt601' or 'bt709'"),
        (lambda: letterbox((y, u, v), fmt="i420", out=v.reshape(-1)[:768].reshape(16, 16, 3)),
         ValueError, r"out overlaps the frame"),
    ]
    for n, (call, exc, msg) in enumerate(cases):
        with pytest.raises(exc, match=msg):
            call()
            pytest.fail(f"case {n} did not raise")
    # the binding refuses a V plane that its geometry leaves
    out = np.empty((32, 32, 3), np.uint8)
    args = (y, u, out, 2, 64, 64, 64, 1, 0, 32, 32, 32, 96, 3, (0, 1, 2), 32, 32, 0, 0,
            False, None, b"\0\0\0")
    _kernels.letterbox_run(*args, v, 32, 0)
    with pytest.raises(ValueError, match="V plane geometry reaches outside"):
        _kernels.letterbox_run(*args, v[:20], 32, 0)
    with pytest.raises(ValueError, match="needs its V plane"):
        _kernels.letterbox_run(*args)
    with pytest.raises(ValueError, match="unknown matrix code 2"):
        _kernels.letterbox_run(*args, v, 32, 2)
