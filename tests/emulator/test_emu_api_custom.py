"""Emulator: custom-operator lifecycle as the vendor documents it -- init once at
rknn_register_custom_ops with the node's tensors, prepare + compute every run, destroy at
rknn_destroy; RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE falls back to a built-in implementation;
rknn_custom_op_get_op_attr from every callback."""

import ctypes as C

import numpy as np
import pytest

from emu_capi import (CUSTOM_CB, CUSTOM_DESTROY, F32, FAIL, FLAG_INTERNAL_OUTSIDE,
                                 PARAM_INVALID, Q_IN_OUT_NUM, Q_MEM_SIZE, SUCC, CustomOp,
                                 CustomOpAttr, InOutNum, ModelBuilder, api, emu, make_ctx,
                                 mem_view, samples)

__all__ = ["emu", "make_ctx"]

SKIP = -14


def f32_array(t):
    """The float32 data of a rknn_custom_op_tensor (None when virt_addr is NULL)."""
    if not t.mem.virt_addr:
        return None
    return np.ctypeslib.as_array(C.cast(t.mem.virt_addr + t.mem.offset, C.POINTER(C.c_float)),
                                 (t.attr.n_elems,))


class Op:
    """A CPU custom op recording its calls; callbacks kept alive with the object."""

    def __init__(self, op_type, init_rc=0, compute=None, with_init=True, with_prepare=True):
        self.calls = []
        self.init_seen = {}
        self.lib = api()
        self.init_rc, self.compute_fn = init_rc, compute

        def init(op_ctx, ins, n_in, outs, n_out):
            self.calls.append("init")
            a = CustomOpAttr()
            self.lib.rknn_custom_op_get_op_attr(op_ctx, b"alpha", C.byref(a))
            self.init_seen = dict(
                n_in=n_in, n_out=n_out, in_name=ins[0].attr.name, in_dims=ins[0].attr.shape,
                in_type=ins[0].attr.type, in_size=ins[0].mem.size, out_dims=outs[0].attr.shape,
                in_addr=ins[0].mem.virt_addr, out_addr=outs[0].mem.virt_addr,
                alpha=(a.dtype, a.n_elems) if a.data else None)
            op_ctx.contents.priv_data = 4321
            return self.init_rc

        def prepare(op_ctx, ins, n_in, outs, n_out):
            self.calls.append("prepare")
            assert op_ctx.contents.priv_data == 4321
            a = CustomOpAttr()
            self.lib.rknn_custom_op_get_op_attr(op_ctx, b"mode", C.byref(a))
            self.mode = C.cast(a.data, C.POINTER(C.c_int32))[:a.n_elems] if a.data else None
            return 0

        def compute(op_ctx, ins, n_in, outs, n_out):
            self.calls.append("compute")
            if self.compute_fn:
                return self.compute_fn(op_ctx, ins, n_in, outs, n_out)
            src, dst = f32_array(ins[0]), f32_array(outs[0])
            dst[:] = 1.0 / (1.0 + np.exp(-src))
            return 0

        def destroy(op_ctx):
            self.calls.append("destroy")
            return 0

        self._cbs = [CUSTOM_CB(init), CUSTOM_CB(prepare), CUSTOM_CB(compute), CUSTOM_DESTROY(destroy)]
        self.op = CustomOp()
        self.op.version, self.op.target, self.op.op_type = 1, 1, op_type.encode()
        if with_init:
            self.op.init = self._cbs[0]
        if with_prepare:
            self.op.prepare = self._cbs[1]
        self.op.compute, self.op.destroy = self._cbs[2], self._cbs[3]

    def count(self, name):
        return self.calls.count(name)


def register(ctx, *ops):
    arr = (CustomOp * len(ops))(*[o.op for o in ops])
    return api().rknn_register_custom_ops(ctx.h, arr, len(ops))


def test_init_once_at_registration(emu, make_ctx):
    model = samples.custom_op_model()
    c = make_ctx(model)
    op = Op("cstSigmoid")
    assert register(c, op) == SUCC
    assert op.calls == ["init"]                            # before any run
    s = op.init_seen
    assert (s["n_in"], s["n_out"], s["in_name"], s["in_dims"], s["in_type"]) == (1, 1, b"x", (1, 16), F32)
    assert s["in_size"] == 64 and s["out_dims"] == (1, 16)
    assert s["in_addr"] and s["out_addr"]                 # runtime-owned memory exists at init
    assert s["alpha"] == (F32, 1)                          # get_op_attr works from init
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)
    for k in range(3):
        c.inputs_set([x])
        c.run()
        assert op.count("prepare") == op.count("compute") == k + 1
    assert op.count("init") == 1 and op.mode == [0, 1]     # ... and from prepare
    (y,) = c.outputs_get()
    np.testing.assert_allclose(y, 1.0 / (1.0 + np.exp(-x)) + 1.0, rtol=1e-6)
    assert op.count("destroy") == 0
    c.close()
    assert op.count("destroy") == 1 and op.calls[-1] == "destroy"


def test_init_sees_null_memory_when_allocated_outside(emu, make_ctx):
    """INTERNAL_ALLOC_OUTSIDE, internal mem not set yet: the custom output (an intermediate)
    comes with virt_addr NULL; after rknn_set_internal_mem the run works."""
    c = make_ctx(samples.custom_op_model(), flags=FLAG_INTERNAL_OUTSIDE)
    op = Op("cstSigmoid")
    assert register(c, op) == SUCC
    assert op.init_seen["in_addr"] and not op.init_seen["out_addr"]
    x = np.float32([[0.5] * 16])
    c.inputs_set([x])
    assert c.run_rc() == FAIL                              # internal memory missing
    ms = c.query(Q_MEM_SIZE)
    m = c.create_mem(ms.total_internal_size)
    assert api().rknn_set_internal_mem(c.h, m) == SUCC
    c.run()
    np.testing.assert_allclose(c.outputs_get()[0], 1.0 / (1.0 + np.exp(-x)) + 1.0, rtol=1e-6)
    assert op.count("init") == 1 and op.count("compute") == 1


def test_init_without_init_callback(emu, make_ctx):
    c = make_ctx(samples.custom_op_model())
    op = Op("cstSigmoid", with_init=False, with_prepare=False)
    assert register(c, op) == SUCC
    c.inputs_set([np.zeros((1, 16), np.float32)])
    c.run()
    assert op.calls == ["compute"]
    c.close()
    assert op.calls == ["compute", "destroy"]


def builtin_model(op_type, kind):
    b = ModelBuilder("RK3588", "builtin " + op_type)
    x = b.input("x", (2, 6), "float32")
    ins, attrs, out = [x], {}, {"shape": (2, 6), "dtype": "float32"}
    if kind == "binary":
        ins.append(b.input("y", (2, 6), "float32"))
    if op_type == "Softmax":
        attrs = {"axis": np.int64([1])}
    if op_type == "ArgMax":
        attrs = {"axis": np.int64([1]), "keepdims": np.int64([0])}
        out = {"shape": (2,), "dtype": "int64"}
    (o,) = b.custom(op_type, ins, [out], attrs or None, name="node")
    b.output(o)
    return b.build()


BUILTINS = {
    "Sigmoid": ("unary", lambda x, y: 1.0 / (1.0 + np.exp(-x))),
    "Relu": ("unary", lambda x, y: np.maximum(x, 0)),
    "Identity": ("unary", lambda x, y: x),
    "Add": ("binary", lambda x, y: x + y),
    "Mul": ("binary", lambda x, y: x * y),
    "Softmax": ("unary", lambda x, y: np.exp(x - x.max(1, keepdims=True)) /
                np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)),
    "ArgMax": ("unary", lambda x, y: x.argmax(1)),
}


@pytest.mark.parametrize("op_type", sorted(BUILTINS))
def test_skip_uses_builtin(emu, make_ctx, op_type):
    kind, ref = BUILTINS[op_type]
    c = make_ctx(builtin_model(op_type, kind))
    op = Op(op_type, init_rc=SKIP)
    assert register(c, op) == SUCC
    rng = np.random.default_rng(len(op_type))
    x = rng.standard_normal((2, 6)).astype(np.float32)
    y = rng.standard_normal((2, 6)).astype(np.float32)
    c.inputs_set([x, y] if kind == "binary" else [x])
    c.run()
    got = c.outputs_get(want_float=0)[0]
    exp = ref(x, y)
    if op_type == "ArgMax":
        np.testing.assert_array_equal(got, exp)
    else:
        np.testing.assert_allclose(got, exp, rtol=2e-6, atol=1e-7)
    assert op.calls == ["init"]                            # prepare / compute never called
    c.close()
    assert op.calls == ["init", "destroy"]


def test_skip_without_builtin_fails_registration(emu, make_ctx):
    c = make_ctx(samples.custom_op_model())               # cstSigmoid: no built-in
    op = Op("cstSigmoid", init_rc=SKIP)
    assert register(c, op) == FAIL
    c.inputs_set([np.zeros((1, 16), np.float32)])
    assert c.run_rc() == FAIL                              # still not registered
    ok = Op("cstSigmoid")
    assert register(c, ok) == SUCC                         # the failed one was forgotten
    c.run()
    c.close()
    assert op.calls == ["init"] and ok.calls == ["init", "prepare", "compute", "destroy"]


def two_custom_model():
    b = ModelBuilder("RK3588", "two custom ops")
    x = b.input("x", (1, 4), "float32")
    (h,) = b.custom("cstA", [x], [{"shape": (1, 4), "dtype": "float32"}], name="a")
    (y,) = b.custom("cstB", [h], [{"shape": (1, 4), "dtype": "float32"}], name="b")
    b.output(y)
    return b.build()


def test_init_error_rolls_back_the_call(emu, make_ctx):
    c = make_ctx(two_custom_model())
    a, b = Op("cstA"), Op("cstB", init_rc=PARAM_INVALID)
    assert register(c, a, b) == PARAM_INVALID
    assert a.calls == ["init", "destroy"] and b.calls == ["init"]
    a2, b2 = Op("cstA"), Op("cstB")
    assert register(c, a2) == SUCC and register(c, b2) == SUCC      # one call each
    c.inputs_set([np.float32([[0, 1, 2, 3]])])
    c.run()
    got = c.outputs_get()[0]
    s = 1.0 / (1.0 + np.exp(-np.float32([[0, 1, 2, 3]])))
    np.testing.assert_allclose(got, 1.0 / (1.0 + np.exp(-s)), rtol=1e-6)
    c.close()
    assert a2.calls == b2.calls == ["init", "prepare", "compute", "destroy"]


def test_callback_calling_its_context_gets_an_error(emu, make_ctx):
    c = make_ctx(samples.custom_op_model())
    seen = {}

    def compute(op_ctx, ins, n_in, outs, n_out):
        n = InOutNum()
        seen["rc"] = api().rknn_query(c.h, Q_IN_OUT_NUM, C.byref(n), C.sizeof(n))
        f32_array(outs[0])[:] = 0
        return 0

    op = Op("cstSigmoid", compute=compute)
    assert register(c, op) == SUCC
    c.inputs_set([np.zeros((1, 16), np.float32)])
    c.run()                                                # no deadlock
    assert seen["rc"] == FAIL


def test_compute_error_fails_the_run(emu, make_ctx):
    c = make_ctx(samples.custom_op_model())
    op = Op("cstSigmoid", compute=lambda *a: -9)
    assert register(c, op) == SUCC
    c.inputs_set([np.zeros((1, 16), np.float32)])
    assert c.run_rc() == -9


def test_get_op_attr_outside_callbacks_is_harmless(emu, make_ctx):
    lib = api()
    a = CustomOpAttr()
    lib.rknn_custom_op_get_op_attr(None, b"alpha", C.byref(a))
    assert not a.data and a.n_elems == 0
    lib.rknn_custom_op_get_op_attr(None, None, None)


def test_register_on_info_only_context(emu, make_ctx):
    c = make_ctx(samples.custom_op_model(), flags=0x100)
    assert register(c, Op("cstSigmoid")) == FAIL


def test_zero_copy_flow_with_custom_op(emu, make_ctx):
    c = make_ctx(samples.custom_op_model())
    op = Op("cstSigmoid")
    assert register(c, op) == SUCC
    ia, oa = c.in_attr(0), c.out_attr(0)
    im, om = c.create_mem(ia.size_with_stride), c.create_mem(oa.size_with_stride)
    assert c.set_io_mem(im, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    mem_view(im, 64, np.float32)[:] = x
    c.run()
    np.testing.assert_allclose(mem_view(om, 64, np.float32), 1.0 / (1.0 + np.exp(-x)) + 1.0, rtol=1e-6)
