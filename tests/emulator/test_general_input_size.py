"""rknn_inputs_set checks a buffer's size against the current shape the way the runtime
does: only a too-small buffer is refused ("param input size(N) < model input size(M)"); a
larger one is accepted and read up to the size of the current shape.  On a dynamic-shape
model that was never told rknn_set_input_shapes, the current shape is the first set."""

import ctypes as C

import numpy as np
import pytest

from emu_capi import (NHWC, PARAM_INVALID, SUCC, U8, Output, api, desc_of, emu,
                                 float_output, make_ctx, model_input_from_user, reference,
                                 samples)

__all__ = ["emu", "make_ctx"]


def float_outputs(c):
    """rknn_outputs_get(want_float=1): each output's bytes as float32, released."""
    outs = (Output * c.n_out)()
    for k in range(c.n_out):
        outs[k].index, outs[k].want_float = k, 1
    assert api().rknn_outputs_get(c.h, c.n_out, outs, None) == SUCC
    res = [np.frombuffer(C.string_at(o.buf, o.size), np.float32).copy() for o in outs]
    assert api().rknn_outputs_release(c.h, c.n_out, outs) == SUCC
    return res


def expected(model, img, s):
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
    for g, e in zip(got, expected(model, first, 0)):
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
