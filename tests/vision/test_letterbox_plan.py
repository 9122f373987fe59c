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
