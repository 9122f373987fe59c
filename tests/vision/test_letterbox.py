"""rknnx.vision.letterbox into numpy arrays: within 1 of OpenCV (resize + copyMakeBorder +
cvtColor, and COLOR_YUV2BGR_NV12 first for NV12) on odd sizes, upscaling, strided frames
and swaps; bit for bit the numpy reference of its arithmetic (letterbox_reference.py) on
every vector path of the kernels; the geometry of the model zoo and Ultralytics; the way
back (Letterbox); bad input refused before C with its type and message."""

from __future__ import annotations

import numpy as np
import pytest

import letterbox_reference as ref
from rknnx import _kernels
from rknnx.vision import Letterbox, letterbox

cv2 = pytest.importorskip("cv2", reason="opencv-python-headless (the test extra) is not "
                                        "installed: the comparisons with OpenCV need it")


def _frame(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), np.uint8)


def _cv2_letterbox(img, size, swap_rb=False, pad=0):
    """OpenCV's way: resize, copyMakeBorder, cvtColor."""
    h, w = img.shape[:2]
    W, H = size
    _, nw, nh, left, top = ref.geometry(w, h, W, H)
    r = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
    r = cv2.copyMakeBorder(r, top, H - nh - top, left, W - nw - left, cv2.BORDER_CONSTANT,
                           value=(pad, pad, pad))
    return cv2.cvtColor(r, cv2.COLOR_BGR2RGB) if swap_rb else r


SIZES = [
    # (h, w) -> (W, H): odd sizes, upscaling, exact factors, tall and wide, tiny
    ((1080, 1920), (640, 640)), ((720, 1280), (640, 640)), ((123, 457), (320, 320)),
    ((37, 91), (416, 256)), ((300, 300), (640, 640)), ((2, 2), (64, 48)),
    ((481, 17), (333, 111)), ((5, 3), (7, 9)), ((1079, 1917), (641, 383)),
    ((640, 640), (640, 640)),
]


@pytest.mark.parametrize("hw, size", SIZES, ids=lambda v: "x".join(map(str, v)))
@pytest.mark.parametrize("swap_rb", [False, True])
def test_within_one_of_opencv_and_equal_to_the_reference(hw, size, swap_rb):
    f = _frame(*hw, seed=hw[0] + hw[1])
    img, box = letterbox(f, size, swap_rb=swap_rb, pad_value=114)
    want = _cv2_letterbox(f, size, swap_rb, 114)
    assert img.shape == (size[1], size[0], 3) and img.dtype == np.uint8
    assert np.abs(img.astype(np.int16) - want).max() <= 1
    np.testing.assert_array_equal(img, ref.letterbox(f, size, swap_rb=swap_rb,
                                                     pad_value=114))


def test_the_pad_is_exact_and_the_region_is_the_zoos():
    # 1080p into 640x640: scale 1/3, 640x360 at (0, 140); the pad bytes are pad_value
    # per channel in the written order, the region starts and ends where the zoo says
    f = _frame(1080, 1920)
    img, box = letterbox(f, (640, 640), pad_value=(1, 2, 3))
    assert box == Letterbox(scale=1 / 3, pad=(0, 140), size=(640, 640),
                            frame_size=(1920, 1080), resized=(640, 360))
    assert (img[:140] == [1, 2, 3]).all() and (img[500:] == [1, 2, 3]).all()
    assert not (img[140] == [1, 2, 3]).all(axis=-1).all()
    # Python's round (half to even): 3x5 into 4x4 -> s = 0.8, 2.4 x 4 -> 2 x 4 at (1, 0);
    # 5x5 into 7x3 -> s = 0.6, 3 x 3 at (2, 0); 10x3 into 5x5 -> s = 0.5: 5 x 1.5 -> 2
    for (h, w), size, want in (((5, 3), (4, 4), ((2, 4), (1, 0))),
                               ((5, 5), (7, 3), ((3, 3), (2, 0))),
                               ((3, 10), (5, 5), ((5, 2), (0, 1)))):
        _, b = letterbox(_frame(h, w), size)
        assert (b.resized, b.pad) == want


@pytest.mark.parametrize("hw, size", SIZES[:6] + [((199, 333), (97, 301))],
                         ids=lambda v: "x".join(map(str, v)))
def test_every_vector_path_equals_the_reference(hw, size, path):
    f = _frame(*hw, seed=7)
    for swap in (False, True):
        img, _ = letterbox(f, size, swap_rb=swap, pad_value=9)
        np.testing.assert_array_equal(img, ref.letterbox(f, size, swap_rb=swap, pad_value=9))


# exact ratios: every horizontal weight 0 (odd k, 1:1) or 1024 (even k): the pick and
# pairs paths of the kernel (letterbox.h), vertically 1:1, k:1 and in between
EXACT = [((480, 640), (640, 640)), ((720, 1280), (640, 640)), ((1080, 1920), (640, 640)),
         ((1088, 1920), (640, 640)), ((960, 1280), (640, 640)), ((2160, 3840), (640, 640)),
         ((75, 500), (100, 100)), ((77, 10), (2, 64)), ((33, 70), (14, 14)),
         ((301, 5), (5, 400)), ((200, 60), (12, 90))]


@pytest.mark.parametrize("hw, size", EXACT, ids=lambda v: "x".join(map(str, v)))
def test_exact_ratios_equal_the_reference_on_every_path_and_layout(hw, size, path):
    f = _frame(*hw, seed=hw[0] * 7 + hw[1])
    W, H = size
    for swap in (False, True):
        want = ref.letterbox(f, size, swap_rb=swap, pad_value=(9, 8, 7))
        img, _ = letterbox(f, size, swap_rb=swap, pad_value=(9, 8, 7))
        np.testing.assert_array_equal(img, want)
        nchw = np.full((1, 3, H, W), 0xEE, np.uint8)
        letterbox(f, out=nchw, swap_rb=swap, pad_value=(9, 8, 7))
        np.testing.assert_array_equal(nchw[0].transpose(1, 2, 0), want)
        blk = np.full((1, 1, H, W, 16), 0xEE, np.uint8)
        letterbox(f, out=blk, swap_rb=swap, pad_value=(9, 8, 7))
        np.testing.assert_array_equal(blk[0, 0, :, :, :3], want)
        assert (blk[..., 3:] == 0xEE).all()
        # a frame whose pixels are not 3 contiguous bytes (converted rows)
        wide = np.zeros(hw + (4,), np.uint8)
        wide[..., :3] = f
        got, _ = letterbox(wide[..., :3], size, swap_rb=swap, pad_value=(9, 8, 7))
        np.testing.assert_array_equal(got, want)
    if hw[0] % 2 == 0 and hw[1] % 2 == 0:
        nv = _nv12(*hw, seed=hw[1])
        got, _ = letterbox(nv, size, fmt="nv12", swap_rb=True)
        np.testing.assert_array_equal(got, ref.letterbox(nv, size, swap_rb=True,
                                                         fmt="nv12"))


def test_taps_of_the_c_equal_the_reference():
    for s, n in ((1920, 640), (1080, 360), (457, 320), (2, 64), (91, 416), (17, 333),
                 (7, 3), (100, 100), (3, 1000)):
        for bits in (8, 11):
            i, w = _kernels._letterbox_taps(s, n, bits)
            ri, rw = ref.taps(s, n, bits)
            np.testing.assert_array_equal(i, ri)
            np.testing.assert_array_equal(w, rw)
            assert i.min() >= 0 and i.max() <= s - 2


def test_strided_frames_equal_their_copies(path):
    rng = np.random.default_rng(3)
    cam = rng.integers(0, 256, (480, 704, 3), np.uint8)   # rows of 704 px, 640 used
    views = {
        "padded rows": cam[:, :640],
        "crop": cam[31:431, 17:555],
        "every other pixel": cam[:, ::2],
        "reversed channels": cam[:, :640, ::-1],
        "transposed": cam[:300, :200].transpose(1, 0, 2),
        "flipped rows": cam[::-1, :500],
        "planar (channels last as a view)": np.moveaxis(
            rng.integers(0, 256, (3, 240, 320), np.uint8), 0, -1),
    }
    for name, v in views.items():
        for swap in (False, True):
            got, _ = letterbox(v, (320, 320), swap_rb=swap, pad_value=114)
            want, _ = letterbox(np.ascontiguousarray(v), (320, 320), swap_rb=swap,
                                pad_value=114)
            np.testing.assert_array_equal(got, want, err_msg=name)
    # and OpenCV agrees within 1 on the camera buffer with padded rows
    got, _ = letterbox(cam[:, :640], (512, 512), swap_rb=True)
    want = _cv2_letterbox(np.ascontiguousarray(cam[:, :640]), (512, 512), True)
    assert np.abs(got.astype(np.int16) - want).max() <= 1


def _nv12(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h * 3 // 2, w), np.uint8)


def test_nv12_conversion_equals_opencv_on_every_y_u_v():
    # every (U, V) pair once (a 2x2 block each), Y over all 256 values in every block row:
    # letterbox into the frame's own size is the conversion alone (weights 0), which
    # equals OpenCV's COLOR_YUV2BGR_NV12 exactly
    h, w = 512, 512
    yplane = (np.arange(h * w, dtype=np.int64) * 7 % 256).astype(np.uint8).reshape(h, w)
    uv = np.stack(np.meshgrid(np.arange(256), np.arange(256), indexing="ij"), -1)
    uv = uv.astype(np.uint8).reshape(h // 2, w)
    nv = np.concatenate([yplane, uv])
    got, box = letterbox(nv, (w, h), fmt="nv12")
    assert box.resized == (w, h) and box.pad == (0, 0)
    np.testing.assert_array_equal(got, cv2.cvtColor(nv, cv2.COLOR_YUV2BGR_NV12))
    np.testing.assert_array_equal(got, ref.nv12_to_bgr(yplane, uv))


@pytest.mark.parametrize("hw, size", [((1080, 1920), (640, 640)), ((720, 1280), (640, 384)),
                                      ((122, 458), (320, 320)), ((36, 90), (416, 256)),
                                      ((2, 2), (9, 9)), ((240, 320), (640, 640))],
                         ids=lambda v: "x".join(map(str, v)))
def test_nv12_within_one_of_opencv(hw, size, path):
    nv = _nv12(*hw, seed=hw[1])
    for swap in (False, True):
        got, _ = letterbox(nv, size, fmt="nv12", swap_rb=swap)
        bgr = cv2.cvtColor(nv, cv2.COLOR_YUV2BGR_NV12)
        want = _cv2_letterbox(bgr, size, swap)
        assert np.abs(got.astype(np.int16) - want).max() <= 1
        np.testing.assert_array_equal(got, ref.letterbox(nv, size, swap_rb=swap, fmt="nv12"))


def test_nv12_pairs_and_strided_buffers_equal_the_array():
    h, w = 240, 320
    nv = _nv12(h, w, seed=5)
    want, _ = letterbox(nv, (300, 200), fmt="nv12")
    y, uv = nv[:h], nv[h:]
    for frame in ((y, uv), (y, uv.reshape(h // 2, w // 2, 2)), [y, uv]):
        got, _ = letterbox(frame, (300, 200), fmt="NV12")
        np.testing.assert_array_equal(got, want)
    # a camera buffer with rows of 384 bytes, and separate planes with their own strides
    buf = np.zeros((h * 3 // 2, 384), np.uint8)
    buf[:, :w] = nv
    got, _ = letterbox(buf[:, :w], (300, 200), fmt="nv12")
    np.testing.assert_array_equal(got, want)
    ybuf = np.zeros((h, 400), np.uint8)
    ybuf[:, :w] = y
    uvbuf = np.zeros((h // 2, 352), np.uint8)
    uvbuf[:, :w] = uv
    got, _ = letterbox((ybuf[:, :w], uvbuf[:, :w]), (300, 200), fmt="nv12")
    np.testing.assert_array_equal(got, want)


def test_out_arrays_of_every_layout():
    f = _frame(123, 457, seed=11)
    want = ref.letterbox(f, (320, 256), swap_rb=True, pad_value=7)
    hwc = np.full((256, 320, 3), 0xEE, np.uint8)
    got, box = letterbox(f, out=hwc, swap_rb=True, pad_value=7)
    assert got is hwc and box.size == (320, 256)
    np.testing.assert_array_equal(hwc, want)
    # NHWC rows of 336 px (a w_stride), the padding untouched
    buf = np.full((1, 256, 336, 3), 0xEE, np.uint8)
    letterbox(f, (320, 256), out=buf[:, :, :320], swap_rb=True, pad_value=7)
    np.testing.assert_array_equal(buf[0, :, :320], want)
    assert (buf[:, :, 320:] == 0xEE).all()
    nchw = np.full((1, 3, 256, 320), 0xEE, np.uint8)
    letterbox(f, out=nchw, swap_rb=True, pad_value=7)
    np.testing.assert_array_equal(nchw[0].transpose(1, 2, 0), want)
    # NC1HWC2 blocks of 16: channels 0..2 of each pixel's block, the rest untouched
    blk = np.full((1, 1, 256, 320, 16), 0xEE, np.uint8)
    letterbox(f, out=blk, swap_rb=True, pad_value=7)
    np.testing.assert_array_equal(blk[0, 0, :, :, :3], want)
    assert (blk[..., 3:] == 0xEE).all()
    # blocks of 2 channels: channel 2 in the second block
    blk2 = np.full((1, 2, 256, 320, 2), 0xEE, np.uint8)
    letterbox(f, out=blk2, swap_rb=True, pad_value=7)
    np.testing.assert_array_equal(blk2[0, 0], want[..., :2])
    np.testing.assert_array_equal(blk2[0, 1, :, :, 0], want[..., 2])
    assert (blk2[0, 1, :, :, 1] == 0xEE).all()


def test_int8_codes_are_the_normalized_and_quantized_pixels():
    from rknnx.emulator import reference

    from rknnx._tensors import QuantInfo, TensorInfo

    f = _frame(333, 500, seed=2)
    px = ref.letterbox(f, (224, 224), swap_rb=True, pad_value=114)
    info = TensorInfo(0, "images", (1, 224, 224, 3), np.dtype(np.int8), "NHWC",
                      QuantInfo("affine", 1 / 255, -128))
    out = np.empty((1, 224, 224, 3), np.int8)
    letterbox(f, out=out, info=info, swap_rb=True, pad_value=114, mean=0, std=255)
    np.testing.assert_array_equal(out[0].astype(np.int16), px.astype(np.int16) - 128)
    # per-channel mean/std (ImageNet's), an odd scale and zero point, NCHW
    mean, std = (123.675, 116.28, 103.53), (58.395, 57.12, 57.375)
    info = TensorInfo(0, "x", (1, 3, 224, 224), np.dtype(np.int8), "NCHW",
                      QuantInfo("affine", 0.0186584, -14))
    out = np.empty((1, 3, 224, 224), np.int8)
    letterbox(f, out=out, info=info, swap_rb=True, pad_value=114, mean=mean, std=std)
    x = (px.astype(np.float32) - np.float32(mean)) / np.float32(std)
    want = reference.quantize(x, 0.0186584, -14, "int8")
    np.testing.assert_array_equal(out[0].transpose(1, 2, 0), want)


def test_letterbox_maps_boxes_points_and_masks_back():
    _, box = letterbox(_frame(1080, 1920), (640, 640))
    b = box.to_frame([[0, 140, 640, 500], [-10, 100, 700, 600], [320, 320, 330, 330]])
    np.testing.assert_allclose(b, [[0, 0, 1920, 1080], [0, 0, 1920, 1080],
                                   [960, 540, 990, 570]], rtol=1e-6)
    assert b.dtype == np.float32
    k = box.to_frame_points(np.array([[[320, 320, 0.9], [0, 0, 0.1]]], np.float32))
    np.testing.assert_allclose(k, [[[960, 540, 0.9], [0, 0, 0.1]]], rtol=1e-6)
    assert box.to_frame_points([[10, 150]]).shape == (1, 2)
    # a mask over the input: the region cropped and resized to the frame; OpenCV's
    # bilinear resize of the float mask agrees but where it is within 1e-3 of 0.5
    m = np.zeros((640, 640), bool)
    m[200:321, 101:377] = True
    m[150, :] = True
    got = box.mask_to_frame(m)
    assert got.shape == (1080, 1920) and got.dtype == np.bool_
    crop = m[140:500].astype(np.float32)
    cvf = cv2.resize(crop, (1920, 1080), interpolation=cv2.INTER_LINEAR)
    agree = (got == (cvf > 0.5)) | (np.abs(cvf - 0.5) < 1e-3)
    assert agree.all()
    assert got[(320 - 140) * 3, 200 * 3] and not got[0, 0]
    many = box.mask_to_frame(np.stack([m, ~m]))
    assert many.shape == (2, 1080, 1920)
    np.testing.assert_array_equal(many[0], got)


def test_bad_input_is_refused_before_c():
    f = _frame(100, 100)
    cases = [
        (lambda: letterbox(np.zeros((0, 5, 3), np.uint8), (64, 64)), ValueError,
         r"frame of 5x0 pixels; at least 2x2"),
        (lambda: letterbox(np.zeros((1, 1, 3), np.uint8), (64, 64)), ValueError,
         r"frame of 1x1 pixels"),
        (lambda: letterbox(f.astype(np.float32), (64, 64)), TypeError,
         r"the frame must be uint8; got float32"),
        (lambda: letterbox(f[..., :2], (64, 64)), ValueError, r"\(H, W, 3\); got shape "
                                                              r"\(100, 100, 2\)"),
        (lambda: letterbox(f[..., 0], (64, 64)), ValueError, r"grayscale"),
        (lambda: letterbox(np.zeros((100, 100, 4), np.uint8), (64, 64)), ValueError,
         r"4-channel"),
        (lambda: letterbox(f), ValueError, r"give size=\(width, height\) or out="),
        (lambda: letterbox(f, (0, 64)), ValueError, r"at least 1"),
        (lambda: letterbox(f, "640"), TypeError, r"size is \(width, height\)"),
        (lambda: letterbox(f, (64, 64), fmt="yuyv"), ValueError, r"'bgr', 'rgb', 'nv12' or 'i420'"),
        (lambda: letterbox(f, (64, 64), swap_rb=1), TypeError, r"True or False"),
        (lambda: letterbox(f, (64, 64), pad_value=300), ValueError, r"0\.\.255"),
        (lambda: letterbox(f, (64, 64), pad_value=(1, 2)), ValueError,
         r"pad_value is a pixel value 0\.\.255 \(an int, or three ints\); got \(1, 2\)"),
        (lambda: letterbox(_nv12(100, 99)[:, :99], (64, 64), fmt="nv12"), ValueError,
         r"even width and height; got 99x100"),
        (lambda: letterbox(np.zeros((151, 100), np.uint8), (64, 64), fmt="nv12"),
         ValueError, r"multiple of 3"),
        (lambda: letterbox(np.zeros((0, 4), np.uint8), (64, 64), fmt="nv12"), ValueError,
         r"frame of 4x0 pixels; at least 2x2"),
        (lambda: letterbox((np.zeros((4, 4), np.uint8), np.zeros((4, 4), np.uint8)), (8, 8),
                           fmt="nv12"), ValueError, r"UV plane of a 4x4 NV12 frame is \(2, 4\)"),
        (lambda: letterbox(f, fmt="nv12", size=(8, 8)), ValueError, r"\(H\*3/2, W\) array"),
        (lambda: letterbox(f, out=np.empty((64, 64, 3), np.float64)), TypeError,
         r"uint8 \(pixels\), int8 \(a quantized input\), float16 or float32"),
        (lambda: letterbox(f, out=np.empty((64, 64), np.uint8)), ValueError,
         r"not an image of 3 channels"),
        (lambda: letterbox(f, out=np.empty((2, 64, 64, 3), np.uint8)), ValueError,
         r"not an image of 3 channels"),
        (lambda: letterbox(f, (64, 32), out=np.empty((64, 64, 3), np.uint8)), ValueError,
         r"does not match out, 64x64"),
        (lambda: letterbox(f, out=[1, 2, 3]), TypeError, r"numpy array, a zero-copy session"),
        (lambda: letterbox(f, out=f[:50, :50]), ValueError, r"overlaps the frame"),
        (lambda: letterbox(f, out=np.empty((1, 64, 64, 3), np.int8)), ValueError,
         r"give info="),
    ]
    ro = np.empty((64, 64, 3), np.uint8)
    ro.flags.writeable = False
    cases.append((lambda: letterbox(f, out=ro), ValueError, r"out is read-only"))
    from rknnx._tensors import QuantInfo, TensorInfo

    info = TensorInfo(0, "x", (1, 64, 64, 3), np.dtype(np.int8), "NHWC",
                      QuantInfo("affine", 1 / 255, -128))
    cases.append((lambda: letterbox(f, out=np.empty((1, 64, 64, 3), np.int8), info=info),
                  ValueError, r"give mean= and std="))
    cases.append((lambda: letterbox(f, out=np.empty((1, 64, 64, 3), np.int8), info=info,
                                    mean=0, std=0), ValueError, r"std must be finite and "
                                                                r"non-zero"))
    for n, (call, exc, msg) in enumerate(cases):
        with pytest.raises(exc, match=msg):
            call()
            pytest.fail(f"case {n} did not raise")


def test_the_binding_refuses_geometry_outside_its_arrays():
    # the C entry checks extents itself: no call of it reads or writes outside
    f = _frame(10, 10)
    out = np.empty((8, 8, 3), np.uint8)
    ok = (f, None, out, 0, 10, 10, 30, 3, 1, 0, 8, 8, 24, 3, (0, 1, 2), 8, 8, 0, 0,
          False, None, b"\0\0\0")
    _kernels.letterbox_run(*ok)
    for k, v, msg in ((4, 11, "frame geometry"), (6, 31, "frame geometry"),
                      (12, 25, "output geometry"), (14, (0, 1, 3), "output geometry"),
                      (15, 9, "outside the output"), (20, b"\0" * 10, "3 x 256"),
                      (21, b"\0", "three channels")):
        args = list(ok)
        args[k] = v
        with pytest.raises(ValueError, match=msg):
            _kernels.letterbox_run(*args)


@pytest.mark.parametrize("pad, shown", [
    (float("nan"), "nan"), (None, "None"), ("x", "'x'"), (float("inf"), "inf"),
    (True, "True"), ((1, True, 3), r"\(1, True, 3\)"), (-1, "-1"), (256, "256"),
    (1.5, "1.5"), ((0, 0, float("nan")), r"\(0, 0, nan\)")])
def test_pad_value_outside_the_pixels_is_refused_naming_it(pad, shown):
    f = _frame(20, 20)
    with pytest.raises(ValueError, match=r"letterbox: pad_value is a pixel value 0\.\.255 "
                                         r"\(an int, or three ints\); got " + shown):
        letterbox(f, (16, 16), pad_value=pad)
    # the in-range forms go on working: numpy integers, floats that are integers
    img, _ = letterbox(f, (16, 8), pad_value=(np.uint8(7), 8.0, 9))
    assert (img[:, :4] == [7, 8, 9]).all() and (img[:, 12:] == [7, 8, 9]).all()


@pytest.mark.parametrize("scale, zp, msg", [
    (0.0, -128, r"quantization scale must be finite and > 0; got 0\.0"),
    (float("nan"), -128, r"quantization scale must be finite and > 0; got nan"),
    (-1 / 255, -128, r"quantization scale must be finite and > 0; got -0\.0039"),
    (1 / 255, 1000, r"zero point must be in -128\.\.127 \(int8\); got 1000"),
    (1 / 255, -129, r"zero point must be in -128\.\.127 \(int8\); got -129")])
def test_an_int8_out_with_an_impossible_quantization_is_refused(scale, zp, msg):
    from rknnx._tensors import QuantInfo, TensorInfo

    f = _frame(20, 20)
    out = np.full((1, 16, 16, 3), 5, np.int8)
    info = TensorInfo(0, "x", (1, 16, 16, 3), np.dtype(np.int8), "NHWC",
                      QuantInfo("affine", scale, zp))
    with pytest.raises(ValueError, match=r"letterbox: the input's " + msg):
        letterbox(f, out=out, info=info, mean=0, std=255)
    assert (out == 5).all()              # refused before any byte is written


@pytest.mark.parametrize("name", ["mean", "std"])
@pytest.mark.parametrize("value, shown", [("abc", "'abc'"),
                                          ((1, "b", 3), r"\(1, 'b', 3\)"),
                                          (float("nan"), "nan"), (True, "True")])
def test_mean_and_std_that_are_not_numbers_are_refused_naming_them(name, value, shown):
    from rknnx._tensors import QuantInfo, TensorInfo

    info = TensorInfo(0, "x", (1, 16, 16, 3), np.dtype(np.int8), "NHWC",
                      QuantInfo("affine", 1 / 255, -128))
    kw = {"mean": 0, "std": 255, name: value}
    with pytest.raises(ValueError, match=rf"letterbox: {name} (is a number or three \(one "
                                         rf"per channel\)|must be finite); got {shown}"):
        letterbox(_frame(20, 20), out=np.empty((1, 16, 16, 3), np.int8), info=info, **kw)
