"""Shape switches (set_input_shapes, MatmulContext.set_dynamic_shape) never let the
runtime use a buffer, a binding or an output of another shape silently."""

from __future__ import annotations

import numpy as np
import pytest

from rknnx.lowlevel import Input, MatmulType, TensorType


def _shape(ctx, h, w):
    a = ctx.input_attrs[0]
    a.dims = (1, h, w, 3)
    ctx.set_input_shapes([a])


def test_inputs_set_refuses_shapes_changed_after_the_check(track):
    """F1: the buffer was checked against 128x160; a set_input_shapes before the C call
    (here from the type's __index__, as another thread could) must not let the runtime
    read it as 64x64."""
    ctx = track.model("dynamic")
    _shape(ctx, 128, 160)
    x = np.zeros((1, 128, 160, 3), np.uint8)

    class SwitchingType:
        def __index__(self):
            _shape(ctx, 64, 64)
            return int(TensorType.UINT8)

    with pytest.raises(ValueError, match=r"input shapes changed"):
        ctx.inputs_set([Input(x, type=SwitchingType())])
    # the fresh attrs apply: the 128x160 buffer is refused, a 64x64 one accepted
    with pytest.raises(ValueError, match=r"expects"):
        ctx.inputs_set([x])
    ctx.inputs_set([np.zeros((1, 64, 64, 3), np.uint8)])
    ctx.run()


def test_run_refuses_io_mem_bound_for_another_shape(track):
    """F3: set_io_mem bindings made for 64x64 are not used after a switch to 128x160."""
    ctx = track.model("dynamic")
    _shape(ctx, 64, 64)

    def bind_all():
        mems = []
        for a in ctx.input_attrs + ctx.output_attrs:
            m = track.mem(ctx.create_mem(128 * 160 * 3 * 4))
            ctx.set_io_mem(m, a)
            mems.append(m)
        return mems

    bind_all()
    ctx.run()
    _shape(ctx, 128, 160)
    with pytest.raises(ValueError, match=r"input 0 .*set_io_mem"):
        ctx.run()
    with pytest.raises(ValueError, match=r"bind it again with set_io_mem"):
        ctx.run()
    bind_all()
    ctx.run()
    # back to the shape of other bindings than the current ones: refused again
    _shape(ctx, 64, 64)
    with pytest.raises(ValueError, match=r"set_io_mem"):
        ctx.run()
    bind_all()
    ctx.run()


def test_matmul_run_refuses_bindings_of_another_shape(track):
    """F4: after set_dynamic_shape, B (dims changed) and C must be rebound; A (same dims)
    stays valid."""
    t = MatmulType.FLOAT16_MM_FLOAT16_TO_FLOAT32
    mm = track.matmul(type=t, shapes=[(4, 32, 32), (4, 32, 64)])
    a = track.mem(mm.create_mem(4 * 32 * 2))
    b = track.mem(mm.create_mem(32 * 64 * 2))
    c = track.mem(mm.create_mem(4 * 64 * 4))
    for m, w in ((a, "A"), (b, "B"), (c, "C")):
        mm.set_io_mem(m, w)
    mm.run()
    mm.set_dynamic_shape((4, 32, 64))
    with pytest.raises(ValueError, match=r"\bB\b.*set_io_mem"):
        mm.run()
    mm.set_io_mem(b, "B")
    with pytest.raises(ValueError, match=r"\bC\b.*set_io_mem"):
        mm.run()
    mm.set_io_mem(c, "C")
    rng = np.random.default_rng(0)
    av = rng.standard_normal((4, 32)).astype(np.float16)
    bv = rng.standard_normal((32, 64)).astype(np.float16)
    np.asarray(a)[...] = av
    np.asarray(b)[...] = bv
    mm.run()
    np.testing.assert_allclose(np.asarray(c), av.astype(np.float32) @ bv.astype(np.float32),
                               atol=1e-2)
    # binding the other shape's attr while this one is current is refused at run() too
    mm.set_io_mem(c, mm.io_attrs[0].C)
    with pytest.raises(ValueError, match=r"\bC\b"):
        mm.run()


@pytest.mark.parametrize("flags", [0, 4])                 # 4: RKNN_FLAG_ASYNC_MASK
def test_outputs_get_refuses_outputs_of_another_shape(track, flags):
    """F2: outputs_get after set_input_shapes without a new run() is refused (runtime
    buffers and out= buffers alike)."""
    ctx = track.model("dynamic", flags=flags)
    _shape(ctx, 128, 160)
    ctx.inputs_set([np.zeros((1, 128, 160, 3), np.uint8)])
    ctx.run()
    _shape(ctx, 64, 64)
    with pytest.raises(ValueError, match=r"run\(\) again before outputs_get"):
        ctx.outputs_get(want_float=True)
    outs = [np.zeros(a.dims if len(a.dims) != 4 else (a.dims[0], a.dims[3], a.dims[1],
                                                      a.dims[2]), np.float32)
            for a in ctx.output_attrs]
    with pytest.raises(ValueError, match=r"input shapes changed since the last run\(\)"):
        ctx.outputs_get(want_float=True, out=outs)
    ctx.inputs_set([np.zeros((1, 64, 64, 3), np.uint8)])
    ctx.run()
    ctx.outputs_get(want_float=True).release()
