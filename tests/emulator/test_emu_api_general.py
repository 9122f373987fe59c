"""Emulator runtime half: the general flow, against numpy."""

import ctypes as C

import numpy as np
import pytest

from emu_capi import (F16, F32, FAIL, I8, INPUT_INVALID, NC1HWC2, NCHW, NHWC,
                                 OUTPUT_INVALID, PARAM_INVALID, SUCC, U8, UNDEFINED,
                                 Output, Q_NATIVE_INPUT_ATTR, api, desc_of, emu, float_output,
                                 make_ctx, model_input_from_user, native_output, reference,
                                 samples, ModelBuilder)

__all__ = ["emu", "make_ctx"]

GENERAL_CHIPS = ["RK3588", "RK3566"]


def expected(model, users, fmts=None, shape_set=0):
    m = desc_of(model)
    ins = [model_input_from_user(m.tensors[n], u, (fmts or [NHWC if u.ndim == 4 else UNDEFINED] * 9)[k])
           for k, (n, u) in enumerate(zip(m.inputs, users))]
    outs = reference.run_reference(m, ins, shape_set=shape_set)
    return m, outs


@pytest.mark.parametrize("chip", GENERAL_CHIPS)
def test_classifier_uint8(emu, make_ctx, chip):
    model = samples.classifier(target=chip)
    c = make_ctx(model, platform=chip)
    img = np.random.default_rng(1).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    c.inputs_set([img])
    c.run()
    m, (q,) = expected(model, [img])
    t = m.tensors[m.outputs[0]]
    got_f, = c.outputs_get(want_float=1)
    got_q, = c.outputs_get(want_float=0)
    np.testing.assert_array_equal(got_q, q)
    np.testing.assert_array_equal(got_f, float_output(t, q))


@pytest.mark.parametrize("chip", GENERAL_CHIPS)
def test_multi_io_mixed_types(emu, make_ctx, chip):
    model = samples.multi_io(target=chip)
    c = make_ctx(model, platform=chip)
    rng = np.random.default_rng(2)
    img = rng.integers(0, 256, (1, 32, 32, 3), dtype=np.uint8)
    feat = rng.standard_normal((1, 64)).astype(np.float32)     # float32 into a float16 input
    seq = rng.standard_normal((1, 8, 16)).astype(np.float16)   # float16 into a float32 input
    c.inputs_set([img, feat, seq])
    c.run()
    m, ref = expected(model, [img, feat, seq])
    got_f = c.outputs_get(want_float=1)
    got_n = c.outputs_get(want_float=0)
    for k, name in enumerate(m.outputs):
        t = m.tensors[name]
        np.testing.assert_array_equal(got_n[k], native_output(t, ref[k]))
        np.testing.assert_array_equal(got_f[k], float_output(t, ref[k]))


@pytest.mark.parametrize("user_dtype", ["uint8", "int8", "float16", "float32"])
@pytest.mark.parametrize("fmt", [NHWC, NCHW])
def test_input_types_and_formats(emu, make_ctx, user_dtype, fmt):
    model = samples.multi_io()
    c = make_ctx(model)
    rng = np.random.default_rng(3)
    img = rng.integers(0, 128, (1, 32, 32, 3)).astype(user_dtype)
    user = img if fmt == NHWC else np.ascontiguousarray(img.transpose(0, 3, 1, 2))
    feat = np.ones((1, 64), np.float16)
    seq = np.ones((1, 8, 16), np.float32)
    c.inputs_set([user, feat, seq], fmts=[fmt, UNDEFINED, UNDEFINED])
    c.run()
    m, ref = expected(model, [user, feat, seq], fmts=[fmt, UNDEFINED, UNDEFINED])
    got = c.outputs_get(want_float=0)
    np.testing.assert_array_equal(got[0], native_output(m.tensors[m.outputs[0]], ref[0]))


def read_npu_input(c, i):
    """rknn_emu_read_npu_input: the bytes the NPU reads for input i."""
    f = c.lib.rknn_emu_read_npu_input
    f.restype, f.argtypes = C.c_int, [C.c_uint64, C.c_uint32, C.c_void_p, C.c_uint32]
    n = f(c.h, i, None, 0)
    assert n >= 0
    b = (C.c_uint8 * max(n, 1))()
    assert f(c.h, i, b, n) == n
    return bytes(b[:n])


def strided_nhwc(x, w_stride):
    n, h, w, ch = x.shape
    out = np.zeros((n, h, w_stride, ch), x.dtype)
    out[:, :, :w, :] = x
    return out


@pytest.mark.parametrize("chip,ws", [("RK3588", 32), ("RK3566", 32)])
def test_pass_through_native_nhwc(emu, make_ctx, chip, ws):
    """pass_through=1: model type, native layout: NHWC rows of w_stride pixels."""
    b = ModelBuilder(chip, "pt")
    x = b.input("x", (1, 4, 30, 3), "int8", "NHWC", zp=0, scale=0.1, mean=[5.0] * 3, std=[2.0] * 3)
    b.output(b.relu(x, out_scale=0.1, out_zp=0, out="y"))
    model = b.build()
    c = make_ctx(model, platform=chip)
    a = c.in_attr(0, Q_NATIVE_INPUT_ATTR)
    assert a.w_stride == ws and a.fmt == NHWC
    q = np.random.default_rng(4).integers(-128, 128, (1, 4, 30, 3)).astype(np.int8)
    buf = strided_nhwc(q, ws)
    assert buf.nbytes == a.size_with_stride
    c.inputs_set([buf], types=[I8], fmts=[NHWC], pass_through=1)
    c.run()
    (y,) = c.outputs_get(want_float=0)
    np.testing.assert_array_equal(y, np.maximum(q, 0).transpose(0, 3, 1, 2))  # NCHW, raw
    # a packed buffer smaller than the native layout is taken as it is: its bytes go to the
    # start of the NPU's buffer, the rest keeps its bytes (the vendor's 1.5.2 and 1.6.0
    # accept 192 bytes for tiny_rk3588_i8's 384-byte native input, status 0)
    assert c.inputs_set_rc([q], types=[I8], fmts=[NHWC], pass_through=1) == SUCC
    npu = read_npu_input(c, 0)
    assert len(npu) == a.size_with_stride
    assert npu[:q.nbytes] == q.tobytes() and npu[q.nbytes:] == buf.tobytes()[q.nbytes:]
    # pass_through takes the bytes whatever type is named (the vendor's 1.5.2 and 1.6.0 take
    # INT8 bytes for fp16_net_rk3566/_rk3588's float16 input, status 0)
    assert c.inputs_set_rc([buf.view(np.uint8)], types=[U8], fmts=[NHWC], pass_through=1) == SUCC
    assert read_npu_input(c, 0) == buf.tobytes()
    c.run()
    (y,) = c.outputs_get(want_float=0)
    np.testing.assert_array_equal(y, np.maximum(q, 0).transpose(0, 3, 1, 2))


def to_nc1hwc2(x_nchw, c2):
    n, ch, h, w = x_nchw.shape
    c1 = -(-ch // c2)
    out = np.zeros((n, c1, h, w, c2), x_nchw.dtype)
    for c in range(ch):
        out[:, c // c2, :, :, c % c2] = x_nchw[:, c]
    return out


@pytest.mark.parametrize("chip,c2", [("RK3588", 16), ("RK3566", 8)])
def test_pass_through_nc1hwc2(emu, make_ctx, chip, c2):
    b = ModelBuilder(chip, "nc")
    x = b.input("x", (1, 3, 5, 10), "int8", "NHWC", zp=0, scale=0.1)
    b.output(b.relu(x, out_scale=0.1, out_zp=0, out="y"))
    c = make_ctx(b.build(), platform=chip)
    q = np.random.default_rng(5).integers(-128, 128, (1, 3, 5, 10)).astype(np.int8)
    native = to_nc1hwc2(q.transpose(0, 3, 1, 2), c2)
    a = c.in_attr(0, Q_NATIVE_INPUT_ATTR)
    assert a.fmt == NC1HWC2 and a.shape == native.shape and a.size_with_stride == native.nbytes
    c.inputs_set([native], types=[I8], fmts=[NC1HWC2], pass_through=1)
    c.run()
    (y,) = c.outputs_get(want_float=0)
    np.testing.assert_array_equal(y, np.maximum(q, 0).transpose(0, 3, 1, 2))


def test_float16_model(emu, make_ctx):
    b = ModelBuilder("RK3588", "f16")
    x = b.input("x", (1, 4, 4, 8), "float16", "NHWC", mean=[1.0] * 8, std=[2.0] * 8)
    b.output(b.sigmoid(x, out="y"))
    model = b.build()
    c = make_ctx(model)
    u = np.random.default_rng(6).integers(0, 256, (1, 4, 4, 8)).astype(np.uint8)
    c.inputs_set([u])
    c.run()
    m, (ref,) = expected(model, [u])
    (yf,) = c.outputs_get(want_float=1)
    (yn,) = c.outputs_get(want_float=0)
    assert yn.dtype == np.float16 and yn.shape == (1, 8, 4, 4)
    np.testing.assert_array_equal(yn, ref.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(yf, ref.transpose(0, 3, 1, 2).astype(np.float32))


def test_prealloc_and_release(emu, make_ctx):
    lib = api()
    c = make_ctx(samples.tiny_int8_add())
    c.inputs_set([np.ones((1, 4, 8, 8), np.float32)] * 2)
    c.run()
    base = emu.counters()["live_output_buffers"]
    outs = (Output * 1)()
    outs[0].want_float = 1
    assert lib.rknn_outputs_get(c.h, 1, outs, None) == SUCC
    assert outs[0].size == 8 * 4 * 8 * 4 and outs[0].buf
    assert emu.counters()["live_output_buffers"] == base + 1
    assert lib.rknn_outputs_release(c.h, 1, outs) == SUCC
    assert emu.counters()["live_output_buffers"] == base
    assert lib.rknn_outputs_release(c.h, 1, outs) == SUCC      # double release: harmless
    # caller buffers: exact size works, one byte short is refused without writing
    buf = np.full(256 + 1, 7, np.float32)
    outs[0].is_prealloc = 1
    outs[0].buf = buf.ctypes.data
    outs[0].size = 255 * 4
    assert lib.rknn_outputs_get(c.h, 1, outs, None) == PARAM_INVALID
    assert (buf == 7).all()
    outs[0].size = 256 * 4
    assert lib.rknn_outputs_get(c.h, 1, outs, None) == SUCC
    assert buf[256] == 7 and not (buf[:256] == 7).all()
    outs[0].buf = None
    assert lib.rknn_outputs_get(c.h, 1, outs, None) == PARAM_INVALID
    # unreleased runtime buffers are freed by rknn_destroy
    outs[0].is_prealloc = 0
    assert lib.rknn_outputs_get(c.h, 1, outs, None) == SUCC
    assert emu.counters()["live_output_buffers"] == base + 1
    c.close()
    assert emu.counters()["live_output_buffers"] == base


def test_general_validation(emu, make_ctx):
    lib = api()
    c = make_ctx(samples.multi_io())
    feat = np.ones((1, 64), np.float16)
    assert c.outputs_get.__self__ is c
    outs = (Output * 4)()
    for k in range(4):
        outs[k].index = k
    assert lib.rknn_outputs_get(c.h, 4, outs, None) == OUTPUT_INVALID   # no run yet
    assert lib.rknn_inputs_set(c.h, 0, None) == PARAM_INVALID
    assert lib.rknn_inputs_set(c.h, 1, None) == PARAM_INVALID
    img = np.zeros((1, 32, 32, 3), np.uint8)
    seq = np.zeros((1, 8, 16), np.float32)
    assert c.inputs_set_rc([img, feat, seq, seq]) == PARAM_INVALID      # too many
    assert c.inputs_set_rc([img[:, :, :31]]) == PARAM_INVALID            # short buffer
    assert c.inputs_set_rc([img], types=[99]) == PARAM_INVALID           # bad type
    assert c.inputs_set_rc([img], fmts=[7]) == PARAM_INVALID             # bad fmt
    c.inputs_set([img])
    assert c.run_rc() == INPUT_INVALID                                   # feat, seq never set
    c.inputs_set([img, feat, seq])
    c.run()
    outs[0].index = 9
    assert lib.rknn_outputs_get(c.h, 1, outs, None) == PARAM_INVALID
    assert lib.rknn_outputs_get(c.h, 5, outs, None) == PARAM_INVALID
    assert lib.rknn_outputs_get(c.h, 0, outs, None) == PARAM_INVALID
    assert lib.rknn_outputs_get(c.h, 1, None, None) == PARAM_INVALID


def test_flows_cannot_mix(emu, make_ctx):
    """Vendor 3.5: general and zero-copy calls on one context are rejected."""
    c = make_ctx(samples.tiny_relu())
    c.inputs_set([np.float32([[1, 2]])])
    a = c.in_attr(0)
    m = c.create_mem(a.size_with_stride)
    assert c.set_io_mem(m, a) == FAIL
    c.run()
    c.outputs_get()
    z = make_ctx(samples.tiny_relu())
    m2 = z.create_mem(8)
    assert z.set_io_mem(m2, z.in_attr(0)) == SUCC
    assert z.inputs_set_rc([np.float32([[1, 2]])]) == FAIL
    outs = (Output * 1)()
    assert api().rknn_outputs_get(z.h, 1, outs, None) == FAIL
    assert api().rknn_outputs_release(z.h, 1, outs) == FAIL


def test_error_is_logged(emu, make_ctx, capfd):
    c = make_ctx(samples.tiny_relu())
    assert c.inputs_set_rc([np.float32([1])]) == PARAM_INVALID
    err = capfd.readouterr().err
    assert "rknn_inputs_set, param input size(4) < model input size(8)" in err
    emu.set_log_level(-1 + 0)   # back to env
    emu.set_log_level(0)
    c.run_rc()                  # INPUT_INVALID, an error: still printed at level 0
    assert "E RKNN:" in capfd.readouterr().err
    api().rknn_set_input_shape(c.h, C.byref(c.in_attr(0)))   # only a warning
    assert "W RKNN" not in capfd.readouterr().err
    emu.set_log_level(1)
    api().rknn_set_input_shape(c.h, C.byref(c.in_attr(0)))
    assert "rknn_set_input_shape, deprecated" in capfd.readouterr().err


# ---- rknn_inputs_set: a buffer's size against the current shape -------------------------------
# rknn_inputs_set checks a buffer's size against the current shape the way the runtime
# does: only a too-small buffer is refused ("param input size(N) < model input size(M)"); a
# larger one is accepted and read up to the size of the current shape.  On a dynamic-shape
# model that was never told rknn_set_input_shapes, the current shape is the first set.

def float_outputs(c):
    """rknn_outputs_get(want_float=1): each output's bytes as float32, released."""
    outs = (Output * c.n_out)()
    for k in range(c.n_out):
        outs[k].index, outs[k].want_float = k, 1
    assert api().rknn_outputs_get(c.h, c.n_out, outs, None) == SUCC
    res = [np.frombuffer(C.string_at(o.buf, o.size), np.float32).copy() for o in outs]
    assert api().rknn_outputs_release(c.h, c.n_out, outs) == SUCC
    return res


def expected_at_set(model, img, s):
    """The float outputs of the numpy reference for `img` (NHWC) at shape set `s`."""
    m = desc_of(model)
    x = model_input_from_user(m.tensors[m.inputs[0]], img, NHWC)
    ref = reference.run_reference(m, [x], shape_set=s)
    return [float_output(m.tensors[n], q) for n, q in zip(m.outputs, ref)]


@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_larger_buffer_is_read_at_the_current_shape(emu, make_ctx, chip):
    model = samples.dynamic(target=chip)
    c = make_ctx(model, platform=chip)
    a = c.in_attr(0)
    a.dims[:4] = (1, 64, 64, 3)                               # set 0, chosen first
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == 0
    frame = np.random.default_rng(80).integers(0, 256, (1, 96, 96, 3), dtype=np.uint8)
    c.inputs_set([frame], types=[U8], fmts=[NHWC])           # 27648 bytes into 64x64x3
    c.run()
    first = frame.reshape(-1)[: 64 * 64 * 3].reshape(1, 64, 64, 3)
    got = float_outputs(c)
    for g, e in zip(got, expected_at_set(model, first, 0)):
        assert g.size == e.size                               # computed at 64x64
        np.testing.assert_allclose(g.reshape(e.shape), e, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("short", [1, 184])
def test_smaller_buffer_is_refused_in_the_runtime_words(emu, make_ctx, capfd, short):
    c = make_ctx(samples.dynamic())
    a = c.in_attr(0)
    a.dims[:4] = (1, 64, 64, 3)
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == 0
    need = 64 * 64 * 3
    small = np.zeros(need - short, np.uint8)
    assert c.inputs_set_rc([small], types=[U8], fmts=[NHWC]) == PARAM_INVALID
    err = capfd.readouterr().err
    assert (f"rknn_inputs_set, param input size({need - short})"
            f" < model input size({need})") in err
    # an exact buffer is fine
    c.inputs_set([np.zeros((1, 64, 64, 3), np.uint8)], types=[U8], fmts=[NHWC])
