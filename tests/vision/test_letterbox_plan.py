"""The repeated call of rknnx.vision.letterbox: a BGR frame into an array or a session's
input with the arguments and geometry of an earlier call runs that call's plan (one
look-up and the C pass).  Its pixels equal the checking path's (the numpy reference);
every argument, array or state the plan was not made for (another stride, element type,
a read-only or overlapping out, a bool where an int was, a closed session) is refused
with the same type and message as on a first call; a plan holds no session memory."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import letterbox_reference as ref
from helpers import live
from rknnx.vision import letterbox

lbm = sys.modules["rknnx.vision.letterbox"]         # the module (its plans)


def _frame(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), np.uint8)


@pytest.fixture(autouse=True)
def _no_plans():
    lbm._PLANS.clear()
    yield
    lbm._PLANS.clear()


@pytest.mark.parametrize("hw, size", [((480, 640), (640, 640)), ((1080, 1920), (640, 640)),
                                      ((123, 457), (320, 320))])
def test_the_repeated_call_runs_the_plan_and_equals_the_reference(hw, size):
    out = np.empty((size[1], size[0], 3), np.uint8)
    boxes = []
    for seed in range(4):
        f = _frame(*hw, seed=seed)
        img, box = letterbox(f, out=out, swap_rb=True, pad_value=114)
        assert img is out
        np.testing.assert_array_equal(out, ref.letterbox(f, size, swap_rb=True,
                                                         pad_value=114))
        boxes.append(box)
    assert len(lbm._PLANS) == 1                    # made by the first call, used after
    assert all(b == boxes[0] for b in boxes)
    # another frame geometry (a crop: same shape, other strides) takes the checking path
    big = _frame(hw[0] + 7, hw[1] + 9, seed=9)
    crop = big[3:3 + hw[0], 5:5 + hw[1]]
    letterbox(crop, out=out, swap_rb=True, pad_value=114)
    np.testing.assert_array_equal(out, ref.letterbox(np.ascontiguousarray(crop), size,
                                                     swap_rb=True, pad_value=114))
    # a [..., ::-1] view: the checking path reads it swapped
    letterbox(crop[..., ::-1], out=out, swap_rb=True, pad_value=114)
    np.testing.assert_array_equal(out, ref.letterbox(np.ascontiguousarray(crop),
                                                     size, pad_value=114))


def test_each_layout_and_argument_has_its_own_plan():
    f = _frame(300, 500, 1)
    nchw = np.empty((1, 3, 256, 256), np.uint8)
    nhwc = np.empty((256, 256, 3), np.uint8)
    for _ in range(2):
        letterbox(f, out=nchw, pad_value=(1, 2, 3))
        np.testing.assert_array_equal(nchw[0].transpose(1, 2, 0),
                                      ref.letterbox(f, (256, 256), pad_value=(1, 2, 3)))
        letterbox(f, out=nhwc, swap_rb=True, pad_value=7)
        np.testing.assert_array_equal(nhwc, ref.letterbox(f, (256, 256), swap_rb=True,
                                                          pad_value=7))
        letterbox(f, out=nhwc, swap_rb=False, pad_value=8)
        np.testing.assert_array_equal(nhwc, ref.letterbox(f, (256, 256), pad_value=8))
    assert len(lbm._PLANS) == 3


def test_after_a_plan_bad_input_is_refused_as_on_a_first_call():
    f = _frame(100, 100)
    out = np.empty((64, 64, 3), np.uint8)
    letterbox(f, out=out, swap_rb=True, pad_value=1)
    letterbox(f, out=out, swap_rb=True, pad_value=(1, 1, 1))
    assert len(lbm._PLANS) == 2
    ro = np.empty((64, 64, 3), np.uint8)
    ro.flags.writeable = False
    both = np.empty((100, 164, 3), np.uint8)        # frame and out in one buffer
    both[:, :100] = f
    cases = [
        (lambda: letterbox(f, out=out, swap_rb=1, pad_value=1), TypeError,
         r"swap_rb is True or False; got 1"),
        (lambda: letterbox(f, out=out, swap_rb=True, pad_value=True), ValueError,
         r"pad_value is a pixel value 0\.\.255 \(an int, or three ints\); got True"),
        (lambda: letterbox(f, out=out, swap_rb=True, pad_value=(1, True, 1)), ValueError,
         r"pad_value is a pixel value 0\.\.255 \(an int, or three ints\); got \(1, True, "
         r"1\)"),
        (lambda: letterbox(f.view(np.int8), out=out, swap_rb=True, pad_value=1), TypeError,
         r"the frame must be uint8; got int8"),
        (lambda: letterbox(f, out=out.view(np.int8), swap_rb=True, pad_value=1), ValueError,
         r"give info="),
        (lambda: letterbox(f, out=ro, swap_rb=True, pad_value=1), ValueError,
         r"out is read-only"),
        (lambda: letterbox(f, out=f[:64, :64], swap_rb=True, pad_value=1), ValueError,
         r"overlaps the frame"),
        (lambda: letterbox(f, out=out, swap_rb=True, pad_value=1, fmt="nv12"), ValueError,
         r"\(H\*3/2, W\) array"),
        (lambda: letterbox(f, out=out, swap_rb=True, pad_value=1, matrix="bt2020"),
         ValueError, r"matrix is 'bt601' or 'bt709'"),
    ]
    for n, (call, exc, msg) in enumerate(cases):
        with pytest.raises(exc, match=msg):
            call()
            pytest.fail(f"case {n} did not raise")
    # the same shapes and strides in one buffer: apart, then overlapping
    a, b = both[:, :100], both[:, 100:]
    letterbox(a, out=np.empty((64, 64, 3), np.uint8)[:, :], pad_value=2)
    with pytest.raises(ValueError, match=r"overlaps the frame"):
        letterbox(a, out=both[:64, 36:100], pad_value=2)
    assert b.shape == (100, 64, 3)
    # and the plan still runs for the good call
    letterbox(f, out=out, swap_rb=True, pad_value=1)
    np.testing.assert_array_equal(out, ref.letterbox(f, (64, 64), swap_rb=True,
                                                     pad_value=1))


def test_the_plans_are_bounded():
    f = _frame(40, 60)
    out = np.empty((32, 32, 3), np.uint8)
    for v in range(200):
        letterbox(f, out=out, pad_value=v)
        assert len(lbm._PLANS) <= 64
    np.testing.assert_array_equal(out, ref.letterbox(f, (32, 32), pad_value=199))


H, W = 60, 100


def _model(target):
    from rknnx.emulator.builder import ModelBuilder

    b = ModelBuilder(target, "letterbox plan test")
    x = b.input("img", (1, H, W, 3), "int8", "NHWC", zp=-20, scale=0.03,
                mean=(10.0, 20.0, 30.0), std=(50.0, 60.0, 70.0))
    b.output(b.reshape(x, (1, H * W * 3), out="y"))
    return b.build()


def test_a_session_plan_holds_no_view_and_closes(emu):
    import rknnx

    before = live(emu)
    emu.set_platform("RK3588")
    f = _frame(123, 457, 5)
    want = ref.letterbox(f, (W, H), swap_rb=True, pad_value=114)
    m = rknnx.Model(_model("RK3588"))
    try:
        s = m.zero_copy(outputs="raw")
        for seed in range(3):
            f = _frame(123, 457, seed)
            img, box = letterbox(f, out=s, swap_rb=True, pad_value=114)
            assert img is s.inputs[0] and box.size == (W, H)
            np.testing.assert_array_equal(img[0], ref.letterbox(f, (W, H), swap_rb=True,
                                                                pad_value=114))
            del img
        assert len(lbm._PLANS) == 1
        s.close()                       # no view kept by the plan: the close goes through
        with pytest.raises(Exception) as first:
            letterbox(f, out=s, swap_rb=True, pad_value=114)
        lbm._PLANS.clear()
        with pytest.raises(type(first.value), match=str(first.value)[:40].replace(
                "(", r"\(").replace(")", r"\)")):
            letterbox(f, out=s, swap_rb=True, pad_value=114)
        # a new session of the model: its own view, its own plan
        with m.zero_copy(outputs="raw") as s2:
            f = _frame(123, 457, 7)
            for _ in range(2):
                img, _ = letterbox(f, out=s2, swap_rb=True, pad_value=114)
                np.testing.assert_array_equal(img[0], ref.letterbox(f, (W, H), swap_rb=True,
                                                                    pad_value=114))
                del img
        assert want.shape == (H, W, 3)
    finally:
        gc.collect()
        m.close()
    gc.collect()
    lbm._PLANS.clear()
    assert live(emu) == before


# ---- NV12 and I420 frames: the same plan, keyed on all their geometry --------------------

def _yuv(h, w, seed=0):
    """A contiguous (h*3/2, w) array of random bytes: an NV12 or an I420 frame."""
    return np.random.default_rng(seed).integers(0, 256, (h * 3 // 2, w), np.uint8)


def _i420_planes(a):
    h, w = a.shape[0] // 3 * 2, a.shape[1]
    flat, q = a.reshape(-1), h * w // 4
    return (a[:h], flat[h * w:h * w + q].reshape(h // 2, w // 2),
            flat[h * w + q:].reshape(h // 2, w // 2))


def _unplanned(frame, out, **kw):
    """The checking path alone (no plan looked up or kept): what letterbox writes."""
    o = np.empty_like(out)
    lbm._letterbox(frame, None, o, kw.get("swap_rb", False), kw.get("pad_value", 0),
                   kw.get("fmt", "bgr"), None, None, None, kw.get("matrix", "bt601"), None)
    return o


def _twice(frame, out, **kw):
    """letterbox twice (the second call finds the first's plan); the second's pixels."""
    letterbox(frame, out=out, **kw)
    before = {id(p) for p in lbm._PLANS.values()}
    out[...] = 0
    img, box = letterbox(frame, out=out, **kw)
    # the same plans, none made (a plan that declined would be replaced by a new one)
    assert img is out and before and {id(p) for p in lbm._PLANS.values()} == before
    return box


def _want(frame, size, **kw):
    kw = dict(kw)
    frame = tuple(frame) if isinstance(frame, list) else frame
    return ref.letterbox(frame, size, **kw)


@pytest.mark.parametrize("fmt", ["nv12", "i420"])
@pytest.mark.parametrize("hw, size", [((480, 640), (640, 640)), ((720, 1280), (640, 640)),
                                      ((1080, 1920), (640, 640)), ((62, 100), (64, 48))])
def test_a_yuv_call_runs_its_plan_bit_identical_to_the_checking_path_and_opencv(fmt, hw,
                                                                                size):
    cv2 = pytest.importorskip("cv2", reason="opencv-python-headless (the test extra)")
    W, H = size
    a = _yuv(*hw, seed=hw[1])
    split = _i420_planes(a) if fmt == "i420" else (a[:hw[0]], a[hw[0]:])
    kw = dict(fmt=fmt, swap_rb=True, pad_value=114)
    bgr = cv2.cvtColor(a, cv2.COLOR_YUV2BGR_NV12 if fmt == "nv12" else
                       cv2.COLOR_YUV2BGR_I420)
    _, nw, nh, left, top = ref.geometry(hw[1], hw[0], W, H)
    r = bgr if (nw, nh) == (hw[1], hw[0]) else cv2.resize(bgr, (nw, nh),
                                                          interpolation=cv2.INTER_LINEAR)
    cv = cv2.copyMakeBorder(r, top, H - nh - top, left, W - nw - left,
                            cv2.BORDER_CONSTANT, value=(114, 114, 114))[..., ::-1]
    for frame in (a, split, list(split)):
        for out in (np.empty((H, W, 3), np.uint8), np.empty((1, 3, H, W), np.uint8)):
            lbm._PLANS.clear()
            _twice(frame, out, **kw)
            assert len(lbm._PLANS) == 1
            img = out if out.ndim == 3 else out[0].transpose(1, 2, 0)
            np.testing.assert_array_equal(out, _unplanned(frame, out, **kw))
            np.testing.assert_array_equal(img, _want(frame, size, **kw))
            if hw[1] in (640, 1280):        # 1:1 and 2:1: OpenCV's bytes exactly
                np.testing.assert_array_equal(img, cv)
            else:
                assert np.abs(img.astype(np.int16) - cv).max() <= 1


def test_every_field_of_a_yuv_call_has_its_own_plan_or_takes_the_checking_path():
    """Each field a YUV plan depends on, changed alone after the plan was made: the pixels
    are that call's own (the numpy reference), never the plan's."""
    h, w, size = 120, 160, (96, 80)
    W, H = size
    a, b = _yuv(h, w, 1), _yuv(h, w, 2)
    out = np.empty((H, W, 3), np.uint8)
    base = dict(fmt="nv12", swap_rb=True, pad_value=114, matrix="bt601")

    def check(frame, o=out, **change):
        kw = {**base, **change}
        _twice(frame, o, **kw)
        img = o.reshape(H, W, 3) if o.shape[-1] == 3 else o[0].transpose(1, 2, 0)
        np.testing.assert_array_equal(img, _want(frame, size, **kw))
        np.testing.assert_array_equal(o, _unplanned(frame, o, **kw))

    check(a)
    n = len(lbm._PLANS)
    check(b)                                        # another frame of that geometry
    assert len(lbm._PLANS) == n                     # ... runs the same plan
    check(a, fmt="i420")                            # the format (the same array)
    check(a, matrix="bt709")                        # the matrix
    check(a, swap_rb=False)
    check(a, pad_value=7)
    check(a, pad_value=(1, 2, 3))
    check(_yuv(h + 2, w, 3))                        # the frame's size
    check(_yuv(h, w + 2, 3))
    assert len(lbm._PLANS) == n + 7
    # the row stride of the frame (the same shape: the plan's run declines, the checking
    # path runs and keeps the new geometry's plan under the key)
    wide = _yuv(h, w + 32, 4)
    check(wide[:, :w])
    check(a)
    # the planes: a (Y, UV) pair, each its own array; then UV from another buffer, UV as
    # (h/2, w/2, 2), Y with its own row stride
    y, uv = a[:h], a[h:]
    check((y, uv))
    check((y, b[h:].copy()))
    check((y, uv.reshape(h // 2, w // 2, 2)))
    check((wide[:h, :w], uv))
    # I420 planes: a triple, U and V exchanged (another plane at each place), a V with its
    # own row stride
    yp, up, vp = _i420_planes(a)
    check((yp, up, vp), fmt="i420")
    check((yp, vp, up), fmt="i420")
    vwide = _yuv(h, w, 5)[:h // 2, :w // 2]
    check((yp, up, vwide), fmt="i420")
    # the output's layout and row stride
    check(a, np.empty((1, 3, H, W), np.uint8))
    check(a, np.empty((1, H, W, 3), np.uint8))
    check(a, np.empty((H, W + 5, 3), np.uint8)[:, :W])
    # the output's element type: the same shape as int8 codes needs info=, as on a first
    # call; float32 needs mean and std (no plan: the checking path each time)
    with pytest.raises(ValueError, match=r"an int8 out holds quantized codes; give info="):
        letterbox(a, out=out.view(np.int8), **base)
    f32 = np.empty((H, W, 3), np.float32)
    for _ in range(2):
        letterbox(a, out=f32, mean=0, std=255, **base)
        np.testing.assert_array_equal(f32, _want(a, size, **base).astype(np.float32) / 255)
    # bad planes after a plan: refused as on a first call
    with pytest.raises(ValueError, match=r"the UV plane of a 160x120 NV12 frame is "
                                         r"\(60, 160\); got shape \(60, 158\)"):
        letterbox((y, a[h:, :158]), out=out, **base)
    with pytest.raises(TypeError, match=r"the V plane must be uint8; got int8"):
        letterbox((yp, up, vp.view(np.int8)), out=out, **{**base, "fmt": "i420"})
    with pytest.raises(ValueError, match=r"overlaps the frame"):
        letterbox((yp, up, vp), out=a.reshape(-1)[:H * W * 3].reshape(H, W, 3),
                  **{**base, "fmt": "i420"})


def test_a_plane_outside_the_frame_given_keeps_no_plan():
    """letterbox_run keeps no plan where a plane is not inside the frame the plan would
    check on the next call (it could not find that plane there again)."""
    from rknnx import _kernels

    h, w = 8, 8
    a, other = _yuv(h, w, 1), _yuv(h, w, 2)
    out = np.empty((8, 8, 3), np.uint8)
    args = (a[:h], other[h:], out, 1, w, h, w, 1, 0, w, 8, 8, 24, 3, (0, 1, 2), 8, 8, 0, 0,
            False, None, b"\0\0\0", None, 0, 0, 1, None)
    assert _kernels.letterbox_run(*args, True, a) is None        # UV not inside `a`
    assert _kernels.letterbox_run(*args, True, (a[:h], other)) is None  # part 1 is not UV
    plan = _kernels.letterbox_run(*args, True, (a[:h], other[h:]))
    assert plan is not None
    assert plan.run((a[:h], other[h:]), out) and not plan.run(a, out)
    assert not plan.run((a[:h], other[h:], other[h:]), out)
    np.testing.assert_array_equal(out, ref.letterbox((a[:h], other[h:]), (8, 8),
                                                     fmt="nv12"))
