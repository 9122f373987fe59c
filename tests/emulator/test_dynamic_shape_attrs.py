"""Dynamic-shape models in the emulator: the plain and native attribute queries describe
each tensor at its largest shape (memory sized from them serves every shape set), the
CURRENT_* queries describe the chosen set (and are refused before one is chosen), and the calls a dynamic-shape model cannot make
(rknn_dup_context, RKNN_FLAG_SHARE_WEIGHT_MEM) are refused with a logged reason."""

import ctypes as C

import numpy as np
import pytest

from emu_capi import (F32, FAIL, FLAG_SHARE_WEIGHT, NHWC, SUCC, U8, InitExtend,
                                 ModelBuilder, Q_CURRENT_INPUT_ATTR,
                                 Q_CURRENT_NATIVE_INPUT_ATTR, Q_CURRENT_NATIVE_OUTPUT_ATTR,
                                 Q_CURRENT_OUTPUT_ATTR, Q_INPUT_ATTR, Q_INPUT_DYNAMIC_RANGE,
                                 Q_NATIVE_INPUT_ATTR, Q_NATIVE_NHWC_INPUT_ATTR,
                                 Q_NATIVE_OUTPUT_ATTR, Q_OUTPUT_ATTR,
                                 api, desc_of, emu, float_output, make_ctx, mem_view,
                                 model_input_from_user, reference, samples)

__all__ = ["emu", "make_ctx"]

#: plain query -> the CURRENT_* query describing the same tensor kind at the chosen set
PAIRS = [(Q_INPUT_ATTR, Q_CURRENT_INPUT_ATTR, False),
         (Q_OUTPUT_ATTR, Q_CURRENT_OUTPUT_ATTR, True),
         (Q_NATIVE_INPUT_ATTR, Q_CURRENT_NATIVE_INPUT_ATTR, False),
         (Q_NATIVE_OUTPUT_ATTR, Q_CURRENT_NATIVE_OUTPUT_ATTR, True)]


def two_input_model(target="RK3588"):
    """Two independent branches whose largest shapes are in different sets: the image
    ``a`` is largest in set 1, the vector ``b`` in set 0."""
    b = ModelBuilder(target, "two dynamic inputs")
    a = b.input("a", (1, 8, 8, 3), "int8", "NHWC", zp=0, scale=0.05)
    v = b.input("b", (1, 32), "float32")
    b.output(b.relu(a, out="ra"), b.relu(v, out="rb"))
    b.shape_sets([[(1, 8, 8, 3), (1, 32)], [(1, 16, 24, 3), (1, 8)]])
    return b.build()


def set_shapes(c, s):
    attrs = (type(c.in_attr(0)) * c.n_in)()
    for i in range(c.n_in):
        r = c.query(Q_INPUT_DYNAMIC_RANGE, i)
        attrs[i] = c.in_attr(i)
        attrs[i].dims[:r.n_dims] = r.dyn_range[s][:r.n_dims]
    assert api().rknn_set_input_shapes(c.h, c.n_in, attrs) == SUCC


def n_sets(c):
    return c.query(Q_INPUT_DYNAMIC_RANGE, 0).shape_number


@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_sample_reports_its_largest_set(emu, make_ctx, chip):
    """samples.dynamic: sets 64x64, 96x96, 128x160; every plain query reports 128x160,
    before and after set_input_shapes, while CURRENT_* follow the chosen set."""
    c = make_ctx(samples.dynamic(target=chip), platform=chip)
    assert c.in_attr(0).shape == (1, 128, 160, 3)
    assert c.out_attr(0).shape == (1, 4, 64, 80)
    assert c.out_attr(1, Q_OUTPUT_ATTR).shape == (1, 4, 64, 80)
    assert c.in_attr(0, Q_NATIVE_NHWC_INPUT_ATTR).shape == (1, 128, 160, 3)
    # before any set_input_shapes there is no current set (boards refuse CURRENT_*)
    assert c.query_rc(Q_CURRENT_INPUT_ATTR, 0)[0] == FAIL
    for s, (h, w) in enumerate([(64, 64), (96, 96), (128, 160)]):
        set_shapes(c, s)
        assert c.in_attr(0, Q_CURRENT_INPUT_ATTR).shape == (1, h, w, 3)
        assert c.out_attr(0, Q_CURRENT_OUTPUT_ATTR).shape == (1, 4, h // 2, w // 2)
        assert c.in_attr(0).shape == (1, 128, 160, 3)             # still the largest
        assert c.out_attr(1).shape == (1, 4, 64, 80)


@pytest.mark.parametrize("model", ["sample", "two_inputs"])
def test_plain_attrs_bound_every_set(emu, make_ctx, model):
    """For every tensor and every query kind with a CURRENT_* form, the plain attribute is
    that of one of the tensor's shape sets, is at least as large (size_with_stride, size,
    n_elems) as the attribute at every set, and does not move with set_input_shapes."""
    c = make_ctx(samples.dynamic() if model == "sample" else two_input_model())
    plain = {(q, k): c.query(q, k) for q, _, is_out in PAIRS
             for k in range(c.n_out if is_out else c.n_in)}
    for s in range(n_sets(c)):
        set_shapes(c, s)
        for (q, k), p in plain.items():
            cur = c.query(dict((a, b) for a, b, _ in PAIRS)[q], k)
            assert c.query(q, k).shape == p.shape, (q, k, s)
            assert p.size_with_stride >= cur.size_with_stride, (q, k, s)
            assert p.size >= cur.size and p.n_elems >= cur.n_elems, (q, k, s)
    for (q, k), p in plain.items():
        cur_q = dict((a, b) for a, b, _ in PAIRS)[q]
        shapes = []
        for s in range(n_sets(c)):
            set_shapes(c, s)
            shapes.append(c.query(cur_q, k).shape)
        assert p.shape in shapes, (q, k)


def test_multi_input_rule_is_per_tensor(emu, make_ctx):
    """Each tensor is sized on its own: input a reports set 1, input b set 0."""
    c = make_ctx(two_input_model())
    assert c.in_attr(0).shape == (1, 16, 24, 3)
    assert c.in_attr(1).shape == (1, 32)
    assert c.out_attr(0).shape == (1, 3, 16, 24)        # 4-D outputs are reported NCHW
    assert c.out_attr(1).shape == (1, 32)
    set_shapes(c, 0)
    assert c.in_attr(0, Q_NATIVE_INPUT_ATTR).size_with_stride >= \
        c.in_attr(0, Q_CURRENT_NATIVE_INPUT_ATTR).size_with_stride


@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_zero_copy_buffers_from_plain_attrs_serve_every_set(emu, make_ctx, chip):
    """The dynamic-shape zero-copy order: mems sized once from INPUT_ATTR.size_with_stride
    and OUTPUT_ATTR.size * 4 (float32 outputs), then per set: set_input_shapes, CURRENT_*
    queries, bind, run; every set's outputs equal the numpy reference."""
    model = samples.dynamic(target=chip)
    c = make_ctx(model, platform=chip)
    ia = c.in_attr(0)
    im = c.create_mem(ia.size_with_stride)
    oms = [c.create_mem(c.out_attr(o).size * 4) for o in range(c.n_out)]
    m = desc_of(model)
    rng = np.random.default_rng(70)
    for s in (2, 0, 1, 2):
        set_shapes(c, s)
        cur = c.in_attr(0, Q_CURRENT_INPUT_ATTR)
        _, h, w, ch = cur.shape
        img = rng.integers(0, 256, cur.shape, dtype=np.uint8)
        # the program writes the frame into a mem sized before any shape was chosen
        assert cur.size_with_stride <= ia.size_with_stride, f"set {s} overruns the input mem"
        rows = mem_view(im, cur.size_with_stride).reshape(h, cur.w_stride * ch)
        rows[:, : w * ch] = img.reshape(h, w * ch)
        cur.type, cur.fmt = U8, NHWC
        assert c.set_io_mem(im, cur) == SUCC
        for o in range(c.n_out):
            oa = c.out_attr(o, Q_CURRENT_OUTPUT_ATTR)
            oa.type = F32
            assert c.set_io_mem(oms[o], oa) == SUCC
        c.run()
        x = model_input_from_user(m.tensors[m.inputs[0]], img, NHWC)
        ref = reference.run_reference(m, [x], shape_set=s)
        for o, name in enumerate(m.outputs):
            exp = float_output(m.tensors[name], ref[o])
            got = mem_view(oms[o], exp.size * 4, np.float32).reshape(exp.shape)
            np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-7)


def test_dup_context_refused(emu, make_ctx, capfd):
    c = make_ctx(samples.dynamic())
    h2 = C.c_uint64(0)
    before = emu.counters()["live_contexts"]
    assert api().rknn_dup_context(C.byref(C.c_uint64(c.h)), C.byref(h2)) == FAIL
    assert h2.value == 0 and emu.counters()["live_contexts"] == before
    err = capfd.readouterr().err
    assert "rknn_dup_context, " in err and "dynamic-shape" in err
    # a static model still duplicates
    s = make_ctx(samples.tiny_relu())
    assert api().rknn_dup_context(C.byref(C.c_uint64(s.h)), C.byref(h2)) == SUCC
    assert api().rknn_destroy(h2.value) == SUCC


@pytest.mark.parametrize("which", ["new", "source"])
def test_share_weight_mem_refused(emu, make_ctx, capfd, which):
    """RKNN_FLAG_SHARE_WEIGHT_MEM is refused when the new model or extend->ctx's model is
    dynamic; nothing is left behind."""
    dyn, static = samples.dynamic(), samples.tiny_relu()
    src = make_ctx(dyn if which == "source" else static)
    model = static if which == "source" else dyn
    ext = InitExtend()
    ext.ctx = src.h
    before = emu.counters()
    h = C.c_uint64(0)
    assert api().rknn_init(C.byref(h), model, len(model), FLAG_SHARE_WEIGHT, C.byref(ext)) == FAIL
    assert h.value == 0
    after = emu.counters()
    assert all(after[k] == before[k] for k in ("live_contexts", "live_mems"))
    err = capfd.readouterr().err
    assert "RKNN_FLAG_SHARE_WEIGHT_MEM is invalid, dynamic shape rknn model is not " \
        "supported!" in err
