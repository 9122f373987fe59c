"""rknnx.vision.letterbox straight into zero-copy sessions of emulator models: an NHWC uint8
input whose rows carry w_stride padding (100 px in rows of 112 on RK3588, 104 on RK3566),
an NCHW uint8 input, the NPU's native layout of an NCHW model (NHWC rows, int8, taken as it
is) and an int8 pass-through input: the bytes are the reference's pixels, or exactly
quantize(normalize(pixels)) with the model's mean/std and scale/zero point, the row padding
is never written, and the model computes what it computes from the same frame fed as
uint8 pixels through the runtime's own conversion."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import letterbox_reference as ref
from helpers import live
from rknnx.emulator import reference
from rknnx.vision import letterbox

H, W = 60, 100
MEAN, STD = (10.0, 20.0, 30.0), (50.0, 60.0, 70.0)


def _model(target, fmt="NHWC", mean=MEAN, std=STD, zp=-20, scale=0.03):
    """An int8 image input (mean/std, affine) reshaped into its output: the output's raw
    codes are the codes the model received."""
    from rknnx.emulator.builder import ModelBuilder

    b = ModelBuilder(target, "letterbox test")
    shape = (1, H, W, 3) if fmt == "NHWC" else (1, 3, H, W)
    x = b.input("img", shape, "int8", fmt, zp=zp, scale=scale, mean=mean, std=std)
    b.output(b.reshape(x, (1, H * W * 3), out="y"))
    return b.build()


@pytest.fixture
def opened(emu):
    """Models opened on a personality, closed at teardown, the emulator's counters back."""
    import rknnx

    before = live(emu)
    made = []

    def open_(platform, **kw):
        emu.set_platform(platform)
        m = rknnx.Model(_model(platform, **kw))
        made.append(m)
        return m

    yield open_
    gc.collect()
    for m in reversed(made):
        m.close()
    gc.collect()
    assert live(emu) == before


def _frame(seed=0, h=123, w=457):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), np.uint8)


def _poison(session):
    """Fill input 0's whole memory (its row padding too) with 0x5A."""
    raw = np.frombuffer(session._in_mems[0].raw(), np.uint8)
    raw[...] = 0x5A
    del raw


def _padding_untouched(session, view):
    raw = np.frombuffer(session._in_mems[0].raw(), np.uint8)
    row = view.strides[1]
    used = view.shape[2] * view.strides[2]
    rows = raw[:view.shape[1] * row].reshape(view.shape[1], row)
    ok = (rows[:, used:] == 0x5A).all()
    del raw, rows
    return ok


@pytest.mark.parametrize("platform, w_stride", [("RK3588", 112), ("RK3566", 104),
                                                ("RV1106", 112)])
def test_nhwc_uint8_input_with_row_padding(opened, platform, w_stride):
    m = opened(platform)
    f = _frame(1)
    want = ref.letterbox(f, (W, H), swap_rb=True, pad_value=114)
    with m.zero_copy(outputs="raw") as s:
        assert s.input_attrs[0].w_stride == w_stride
        _poison(s)
        img, box = letterbox(f, out=s, swap_rb=True, pad_value=114)
        assert img is s.inputs[0] and box.size == (W, H)
        assert img.strides[1] == w_stride * 3
        np.testing.assert_array_equal(img[0], want)
        assert _padding_untouched(s, img)
        s.run()
        got = np.array(s.outputs[0])
        del img
    # the runtime's own conversion of the same pixels (the general flow, or RV1106's
    # session) gives the model the same codes
    np.testing.assert_array_equal(got, m.run(want[None], raw=True)[0])


def test_nchw_uint8_input(opened):
    m = opened("RK3588", fmt="NCHW")
    f = _frame(2)
    want = ref.letterbox(f, (W, H), pad_value=(1, 2, 3))
    with m.zero_copy(input_dtypes=np.uint8, outputs="raw") as s:
        view = s.inputs[0]
        assert view.shape == (1, 3, H, W) and view.dtype == np.uint8
        del view
        img, _ = letterbox(f, out=s.inputs[0], info=s.input_attrs[0], pad_value=(1, 2, 3))
        np.testing.assert_array_equal(img[0].transpose(1, 2, 0), want)
        del img
        s.run()
        got = np.array(s.outputs[0])
    np.testing.assert_array_equal(got, m.run(want.transpose(2, 0, 1)[None], raw=True)[0])


def _codes(px, mean=MEAN, std=STD, zp=-20, scale=0.03):
    x = (px.astype(np.float32) - np.float32(mean)) / np.float32(std)
    return reference.quantize(x, scale, zp, "int8")


@pytest.mark.parametrize("platform, fmt", [("RK3588", "NHWC"), ("RK3566", "NHWC"),
                                           ("RV1106", "NHWC"), ("RK3588", "NCHW")])
def test_int8_pass_through_input_gets_the_quantized_pixels(opened, platform, fmt):
    # inputs="native": NATIVE_INPUT_ATTR, int8 NHWC rows of w_stride (an NCHW model's too),
    # pass_through: each pixel normalized with the model's mean/std and quantized
    m = opened(platform, fmt=fmt)
    f = _frame(3, 200, 150)
    px = ref.letterbox(f, (W, H), swap_rb=True, pad_value=114)
    with m.zero_copy(inputs="native", outputs="raw") as s:
        attr = s.input_attrs[0]
        assert attr.pass_through and attr.layout == "NHWC"
        _poison(s)
        img, _ = letterbox(f, out=s, swap_rb=True, pad_value=114, mean=MEAN, std=STD)
        assert img.dtype == np.int8 and img.shape == (1, H, W, 3)
        np.testing.assert_array_equal(img[0], _codes(px))
        assert _padding_untouched(s, img)
        del img
        s.run()
        got = np.array(s.outputs[0])
    # the model saw the codes the runtime makes of the uint8 pixels itself
    pixels = px[None] if fmt == "NHWC" else px.transpose(2, 0, 1)[None]
    np.testing.assert_array_equal(got, m.run(pixels, raw=True)[0])
    if fmt == "NHWC":
        np.testing.assert_array_equal(got.reshape(H, W, 3), _codes(px))


def test_the_zoos_normalization_is_p_minus_128(opened):
    # mean 0, std 255, scale 1/255, zero point -128: each code is the pixel - 128; given
    # through a session view and the model's TensorInfo
    m = opened("RK3588", mean=(0, 0, 0), std=(255, 255, 255), zp=-128, scale=1 / 255)
    f = _frame(4, 90, 300)
    px = ref.letterbox(f, (W, H), swap_rb=True)
    with m.zero_copy(inputs="native", outputs="raw") as s:
        img, _ = letterbox(f, out=s.inputs[0], info=m.inputs[0], swap_rb=True, mean=0,
                           std=255)
        np.testing.assert_array_equal(img[0].astype(np.int16), px.astype(np.int16) - 128)
        del img


def test_a_logical_int8_view_is_refused(opened):
    m = opened("RK3588", fmt="NCHW")
    with m.zero_copy() as s:                        # NCHW: int8 values the runtime converts
        assert s.inputs[0].dtype == np.int8
        with pytest.raises(ValueError, match=r"runtime normalizes and quantizes again"):
            letterbox(_frame(), out=s, mean=0, std=255)
        with pytest.raises(ValueError, match=r"give mean= and std="):
            letterbox(_frame(), out=s.inputs[0], info=m.inputs[0])
