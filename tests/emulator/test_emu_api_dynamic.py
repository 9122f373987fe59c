"""Emulator: dynamic-shape models through the C API (general and zero-copy flows, the
shape queries, static models' shapes), against numpy."""

import ctypes as C
import pathlib

import numpy as np
import pytest


from emu_capi import (F32, FAIL, INPUT_INVALID, NCHW, NHWC, PARAM_INVALID, SUCC,
                                 U8, Q_CURRENT_INPUT_ATTR, Q_CURRENT_NATIVE_INPUT_ATTR, Q_CURRENT_OUTPUT_ATTR, Q_INPUT_DYNAMIC_RANGE,
                                 api, desc_of, emu, float_output, make_ctx, mem_view, model_input_from_user,
                                 reference, samples)

__all__ = ["emu", "make_ctx"]

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ---- dynamic shapes -------------------------------------------------------------------------

def dyn_expected(model, img, s):
    m = desc_of(model)
    x = model_input_from_user(m.tensors[m.inputs[0]], img, NHWC)
    outs = reference.run_reference(m, [x], shape_set=s)
    return [float_output(m.tensors[n], q) for n, q in zip(m.outputs, outs)]


@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_dynamic_general(emu, make_ctx, chip):
    model = samples.dynamic(target=chip)
    c = make_ctx(model, platform=chip)
    r = c.query(Q_INPUT_DYNAMIC_RANGE, 0)
    assert r.shape_number == 3 and r.n_dims == 4 and r.fmt == NHWC and r.name == b"image"
    sets = [tuple(r.dyn_range[s][:4]) for s in range(3)]
    assert sets == [(1, 64, 64, 3), (1, 96, 96, 3), (1, 128, 160, 3)]
    rng = np.random.default_rng(20)
    for s in (2, 0, 1):
        a = c.in_attr(0)
        a.dims[:4] = sets[s]
        assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == SUCC
        cur = c.query(Q_CURRENT_INPUT_ATTR, 0)
        assert cur.shape == sets[s]
        co = c.query(Q_CURRENT_OUTPUT_ATTR, 0)
        assert co.shape == (1, 4, sets[s][1] // 2, sets[s][2] // 2)
        img = rng.integers(0, 256, sets[s], dtype=np.uint8)
        assert c.run_rc() == INPUT_INVALID or s == 2     # old-shape input is stale
        c.inputs_set([img])
        c.run()
        exp = dyn_expected(model, img, s)
        outs = get_current(c)
        np.testing.assert_array_equal(outs[0], exp[0])                  # int8 feat: exact
        np.testing.assert_allclose(outs[1], exp[1], rtol=1e-6, atol=1e-7)  # float sigmoid
    bad = c.in_attr(0)
    bad.dims[:4] = (1, 65, 64, 3)
    # a shape no set has: RKNN_ERR_FAIL, as RKNNLite reports it (docs/abi-notes.md)
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(bad)) == FAIL
    assert api().rknn_set_input_shapes(c.h, 2, C.byref(bad)) == PARAM_INVALID
    # shapes of 4-D inputs are taken in NHWC only (boards refuse NCHW dims)
    nchw = c.in_attr(0)
    nchw.fmt = NCHW
    nchw.dims[:4] = (1, 3, 96, 96)
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(nchw)) == PARAM_INVALID
    # the deprecated single-input form
    one = c.in_attr(0)
    one.dims[:4] = sets[0]
    assert api().rknn_set_input_shape(c.h, C.byref(one)) == SUCC
    assert c.query(Q_CURRENT_INPUT_ATTR, 0).shape == sets[0]


def get_current(c):
    """outputs_get(want_float=1) shaped by CURRENT_OUTPUT_ATTR."""
    from emu_capi import Output
    outs = (Output * c.n_out)()
    for k in range(c.n_out):
        outs[k].index = k
        outs[k].want_float = 1
    assert api().rknn_outputs_get(c.h, c.n_out, outs, None) == SUCC
    res = []
    for k in range(c.n_out):
        a = c.query(Q_CURRENT_OUTPUT_ATTR, k)
        res.append(np.frombuffer(C.string_at(outs[k].buf, outs[k].size), np.float32)
                   .reshape(a.shape).copy())
    assert api().rknn_outputs_release(c.h, c.n_out, outs) == SUCC
    return res


def test_dynamic_zero_copy(emu, make_ctx):
    """rknn_dynshape_inference_zero_copy: mems at the largest shape, rebound per shape."""
    model = samples.dynamic()
    c = make_ctx(model)
    r = c.query(Q_INPUT_DYNAMIC_RANGE, 0)
    sets = [tuple(r.dyn_range[s][:4]) for s in range(r.shape_number)]
    big_in = max(s[1] * s[2] * s[3] for s in sets) * 2
    im = c.create_mem(big_in)
    oms = [c.create_mem(4 * 160 * 128) for _ in range(2)]
    rng = np.random.default_rng(21)
    for s, shape in enumerate(sets):
        a = c.in_attr(0)
        a.dims[:4] = shape
        assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == SUCC
        ia = c.query(Q_CURRENT_INPUT_ATTR, 0)
        ia.type, ia.fmt = U8, NHWC
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        v = mem_view(im, ia.size_with_stride).reshape(shape[1], ia.w_stride * 3)
        v[:, : shape[2] * 3] = img.reshape(shape[1], -1)
        assert c.set_io_mem(im, ia) == SUCC
        for o in range(2):
            oa = c.query(Q_CURRENT_OUTPUT_ATTR, o)
            oa.type = F32
            assert c.set_io_mem(oms[o], oa) == SUCC
        c.run()
        for o, e in enumerate(dyn_expected(model, img, s)):
            got = mem_view(oms[o], e.size * 4, np.float32).reshape(e.shape)
            np.testing.assert_allclose(got, e, rtol=1e-6, atol=1e-7)
    assert c.query_rc(Q_CURRENT_NATIVE_INPUT_ATTR)[0] == SUCC


def test_static_model_shapes(emu, make_ctx):
    c = make_ctx(samples.tiny_relu())
    a = c.in_attr(0)
    # refused on a static model, even its own shape: -6 as 1.5.2 and 1.6.0 answer
    # (cls_img_rk3588, docs/abi-notes.md)
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == -6
    a.dims[1] = 3
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == -6
