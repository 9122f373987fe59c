"""Layout arithmetic of the binding: sizes that overflow are refused (never a wrapped
extent or a SIGFPE), converted types pack their channels (padding only in the model's own
type), and set_io_mem checks the dims of the attribute it binds."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import TensorAttr, TensorFormat, TensorType

from helpers import probe

#: the largest extent a layout may span: rknn sizes are u32, and a buffer counts in
#: Py_ssize_t (2**31 - 1 in a 32-bit process)
LAYOUT_MAX = min(2**32 - 1, sys.maxsize)

HUGE = [
    dict(dims=[2**31, 2**31, 4, 1], fmt=TensorFormat.NHWC, type=TensorType.UINT8),
    dict(dims=[2**16] * 4, type=TensorType.UINT8),
    dict(dims=[3, 2**31, 2**31, 2], type=TensorType.UINT8),
    dict(dims=[1, 2**32 - 1, 2**32 - 1, 2**32 - 1], fmt=TensorFormat.NHWC,
         type=TensorType.FLOAT32, size_with_stride=16),
    dict(dims=[1, 2**32 - 1, 1, 2**32 - 1, 16], fmt=TensorFormat.NC1HWC2,
         type=TensorType.INT8),
    dict(dims=[2**20, 2**20], type=TensorType.INT64),
]


def _plain(kw):
    return {k: (v if isinstance(v, list) else int(v)) for k, v in kw.items()}


def test_overflowing_layouts_raise_in_a_subprocess():
    # used to be SIGFPE (a product overflowing to 0, then a modulo by it)
    out = probe(f"""
        for kw in {[_plain(kw) for kw in HUGE]!r}:
            a = C.TensorAttr(**kw)
            for what in ("strides", "nbytes_with_stride"):
                try:
                    getattr(a, what)
                except ValueError as e:
                    print("ValueError", f"spans more than {LAYOUT_MAX} bytes" in str(e))
                else:
                    print("accepted", kw)
    """)
    assert out.splitlines() == ["ValueError True"] * (2 * len(HUGE))


@pytest.mark.parametrize("kw", HUGE)
def test_bind_and_set_io_mem_refuse_overflowing_layouts(track, kw):
    ctx = track.model("tiny_relu")
    mem = track.mem(ctx.create_mem(64))
    with pytest.raises(ValueError, match=f"spans more than {LAYOUT_MAX} bytes"):
        mem.bind(TensorAttr(**kw))
    assert mem.shape == (64,)
    a = ctx.input_attrs[0]
    a.dims, a.fmt = kw["dims"], kw.get("fmt", TensorFormat.NCHW)   # type: the model's
    with pytest.raises(ValueError, match="spans more than|do not match the model's"):
        ctx.set_io_mem(mem, a)
    assert ctx.flow == "none" and mem.shape == (64,)


def test_large_but_valid_layout_names_the_size_it_needs(track):
    ctx = track.model("tiny_relu")
    mem = track.mem(ctx.create_mem(64))
    a = TensorAttr(dims=[1, 2**16, 2**15, 2], fmt=TensorFormat.NHWC, type=TensorType.UINT8)
    with pytest.raises(ValueError, match="spans more than"):
        mem.bind(a)
    a.dims = [1, 2**16, 2**15, 1]
    if LAYOUT_MAX < 2**31:
        # a 32-bit process: 2**31 bytes is past what a buffer can describe (Py_ssize_t)
        with pytest.raises(ValueError, match=f"spans more than {LAYOUT_MAX} bytes"):
            mem.bind(a)
        a.dims = [0, 2**31, 4, 1]          # a dim no Py_ssize_t holds, even if empty
        with pytest.raises(ValueError, match=f"spans more than {LAYOUT_MAX} bytes"):
            mem.bind(a)
        a.dims = [0, 2**28, 4, 1]           # its strides fit a Py_ssize_t
        assert a.nbytes_with_stride == 0
        assert np.asarray(mem.bind(a)).shape == (0, 2**28, 4, 1)
        return
    with pytest.raises(ValueError, match=f"expected at least {2**31} bytes"):
        mem.bind(a)
    a.dims = [0, 2**31, 4, 1]
    assert a.nbytes_with_stride == 0
    assert np.asarray(mem.bind(a)).shape == (0, 2**31, 4, 1)

def _nhwc_int8_model(target, c):
    from rknnx.emulator.builder import ModelBuilder

    b = ModelBuilder(target, "pad")
    x = b.input("x", (1, 3, 10, c), "int8", "NHWC", zp=0, scale=0.1)
    b.output(b.relu(x, out="y"))
    return b.build()


def _numpy_want(x):
    """What the model computes for input x (any type: real values): quantize (int8,
    scale 0.1), relu, dequantize; NCHW float32."""
    q = np.clip(np.round(x.astype(np.float32) / np.float32(0.1)), -128, 127)
    return (np.maximum(q, 0) * np.float32(0.1)).astype(np.float32).transpose(0, 3, 1, 2)


@pytest.mark.parametrize("c", [5, 8])
@pytest.mark.parametrize("in_query", ["INPUT_ATTR", "NATIVE_NHWC_INPUT_ATTR"])
@pytest.mark.parametrize("t", [TensorType.FLOAT32, TensorType.FLOAT16, TensorType.INT8])
@pytest.mark.parametrize("target", ["RK3588", "RK3566"])
def test_converted_input_types_pack_channels(track, emu, target, t, in_query, c):
    from rknnx.lowlevel import QueryCmd

    emu.set_platform(target)
    model = _nhwc_int8_model(target, c)
    rng = np.random.default_rng(c)
    if t == TensorType.INT8:
        x = rng.integers(-100, 100, size=(1, 3, 10, c)).astype(np.int8)
    else:
        x = (rng.integers(-100, 100, size=(1, 3, 10, c)) / 10).astype(rknnx.lowlevel.dtype_of(t))
    want = _numpy_want(x)
    g = track.context(model)
    g.inputs_set([rknnx.lowlevel.Input(x, type=t, fmt=TensorFormat.NHWC)])
    g.run()
    with g.outputs_get(want_float=True) as outs:
        general = np.asarray(outs[0]).copy()
    z = track.context(model)
    a = z.query(getattr(QueryCmd, in_query), 0)
    a.type = t
    mi = track.mem(z.create_mem(a.nbytes_with_stride))
    z.set_io_mem(mi, a)
    view = np.asarray(mi)
    itemsize = np.dtype(rknnx.lowlevel.dtype_of(t)).itemsize
    padded = t == TensorType.INT8                        # the model type: Cs channels
    # channels padded only in the model's own type; rows always w_stride pixels apart
    assert view.strides[2] == (a.size_with_stride // (3 * a.w_stride) if padded
                               else c * itemsize)
    assert view.strides[1] == a.w_stride * view.strides[2]
    view[...] = x
    oa = z.query(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, 0)
    oa.type = TensorType.FLOAT32
    mo = track.mem(z.create_mem(oa.nbytes_with_stride))
    z.set_io_mem(mo, oa)
    assert np.asarray(mo).strides[2] == c * 4          # converted output: packed C
    z.run()
    zero_copy = np.asarray(mo).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(general, want, atol=1e-6)
    np.testing.assert_allclose(zero_copy, general, atol=1e-6)
    del view


@pytest.mark.parametrize("t", [None, TensorType.FLOAT32, TensorType.FLOAT16])
@pytest.mark.parametrize("target", ["RK3588", "RK3566"])
def test_native_nhwc_outputs_pad_only_in_the_model_type(track, emu, target, t):
    from rknnx.lowlevel import QueryCmd

    emu.set_platform(target)
    c = 5
    model = _nhwc_int8_model(target, c)
    x = np.random.default_rng(1).integers(-100, 100, size=(1, 3, 10, c)).astype(np.int8)
    g = track.context(model)
    g.inputs_set([rknnx.lowlevel.Input(x, type=TensorType.INT8, fmt=TensorFormat.NHWC)])
    g.run()
    with g.outputs_get(want_float=True) as outs:
        general = np.asarray(outs[0]).copy()
    z = track.context(model)
    ia = z.query(QueryCmd.INPUT_ATTR, 0)
    ia.type = TensorType.INT8
    mi = track.mem(z.create_mem(ia.nbytes_with_stride))
    z.set_io_mem(mi, ia)
    np.asarray(mi)[...] = x
    oa = z.query(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, 0)
    if t is not None:
        oa.type = t
    mo = track.mem(z.create_mem(max(oa.nbytes_with_stride, oa.size_with_stride)))
    z.set_io_mem(mo, oa)
    z.run()
    out = np.asarray(mo)
    assert out.shape == (1, 3, 10, c)                    # the logical tensor, padded or not
    if t is None:
        # the pixels are the dims' channels: align(C, C2) on RK3566 only (cls_img_rk3566
        # [1,32,32,8] for 5 channels; cls_img_rk3588 [1,32,32,5]; librknnrt 1.6.0)
        assert oa.dims[3] == (8 if target == "RK3566" else c) and out.strides[2] == oa.dims[3]
        out = out.astype(np.float32) * oa.scale
    else:
        assert out.strides[2] == c * np.dtype(rknnx.lowlevel.dtype_of(t)).itemsize
    np.testing.assert_allclose(out.transpose(0, 3, 1, 2), general, atol=1e-2)
    with pytest.raises(ValueError, match="NC1HWC2 is the native layout"):
        na = z.query(QueryCmd.NATIVE_OUTPUT_ATTR, 0)
        na.type = TensorType.FLOAT32
        z.set_io_mem(mo, na)


def test_tensor_attr_remembers_its_native_type():
    import copy
    import pickle

    a = TensorAttr(dims=[1, 2, 2, 5], fmt=TensorFormat.NHWC, type=TensorType.INT8,
                   w_stride=2, size_with_stride=1 * 2 * 2 * 16)   # an input's rows
    assert a.strides == (64, 32, 16, 1)                  # native: Cs = 16
    a.type = TensorType.FLOAT32
    for b in (a, a.copy(), copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert b.strides == (80, 40, 20, 4)              # converted: packed C
        b.type = TensorType.INT8
        assert b.strides == (64, 32, 16, 1)

def test_set_io_mem_refuses_dims_that_are_not_the_models(track):
    ctx = track.model("tiny_relu")
    mem = track.mem(ctx.create_mem(64))
    a = ctx.input_attrs[0]
    a.dims = [1, 1]
    with pytest.raises(ValueError, match=r"input 0 \('x'\): attr.dims \[1, 1\] do not match "
                                         r"the model's \[1, 2\]"):
        ctx.set_io_mem(mem, a)
    assert ctx.flow == "none"
    ctx.set_io_mem(mem, ctx.input_attrs[0])
    assert np.asarray(mem).shape == (1, 2)


def test_set_io_mem_dims_in_the_attrs_layout(track):
    from rknnx.lowlevel import QueryCmd

    ctx = track.model("classifier")
    a = ctx.query(QueryCmd.NATIVE_NHWC_INPUT_ATTR, 0)
    mem = track.mem(ctx.create_mem(a.nbytes_with_stride + 64))
    n, h, w, c = a.dims
    swapped = a.copy()
    swapped.dims = [n, w, h, c] if h != w else [n, h, w, c + 1]
    with pytest.raises(ValueError, match="do not match the model's"):
        ctx.set_io_mem(mem, swapped)
    ctx.set_io_mem(mem, a)
