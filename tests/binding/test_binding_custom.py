"""Custom operators in Python: the sample model's cstSigmoid run through the general and
zero-copy flows against numpy, get_op_attr, the init/prepare/destroy lifecycle,
exceptions from callbacks (re-raised, chained from the RKNNError), re-entry refused
without deadlock, views that cannot outlive the context, and no leaks."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import (SKIP_CUSTOM_OP_COMPUTE, CustomOp, CustomOpContext, TargetType, TensorType)
from rknnx.emulator import ModelBuilder


def sigmoid(op_ctx, inputs, outputs):
    np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])


def want(x):
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64))) + 1.0).astype(np.float32)


def x_input(seed=0):
    return np.random.default_rng(seed).standard_normal((1, 16)).astype(np.float32)


def run_general(ctx, x):
    ctx.inputs_set([x])
    ctx.run()
    with ctx.outputs_get(want_float=True) as outs:
        return np.asarray(outs[0]).copy()


def bind_zero_copy(ctx, track):
    ia = ctx.input_attrs[0]
    oa = ctx.output_attrs[0]
    oa.type = TensorType.FLOAT32
    im = track.mem(ctx.create_mem(ia.nbytes_with_stride))
    om = track.mem(ctx.create_mem(oa.nbytes_with_stride))
    ctx.set_io_mem(im, ia)
    ctx.set_io_mem(om, oa)
    return im, om


# ---- numbers ---------------------------------------------------------------------------------
def test_sigmoid_general_flow(track, general_platform):
    ctx = track.model("custom_op_model", general_platform)
    ctx.register_custom_ops([CustomOp("cstSigmoid", compute=sigmoid)])
    assert [op.op_type for op in ctx.custom_ops] == ["cstSigmoid"]
    for seed in range(3):
        x = x_input(seed)
        np.testing.assert_allclose(run_general(ctx, x), want(x), rtol=1e-6, atol=1e-6)


def test_sigmoid_zero_copy_flow_matches_general(track, platform):
    ctx = track.model("custom_op_model", platform)
    if platform == "RV1106":                               # Table 3-1: no custom ops there
        with pytest.raises(rknnx.RKNNError) as ei:
            ctx.register_custom_ops(CustomOp("cstSigmoid", compute=sigmoid))
        assert ei.value.func == "rknn_register_custom_ops" and ctx.custom_ops == []
        return
    ctx.register_custom_ops(CustomOp("cstSigmoid", compute=sigmoid))
    im, om = bind_zero_copy(ctx, track)
    x = x_input(4)
    np.asarray(im)[...] = x
    ctx.run()
    got = np.asarray(om).copy()
    np.testing.assert_allclose(got, want(x), rtol=1e-6, atol=1e-6)
    g = track.model("custom_op_model", platform)
    g.register_custom_ops([CustomOp("cstSigmoid", compute=sigmoid)])
    np.testing.assert_array_equal(run_general(g, x), got)


def test_callbacks_see_zero_copy_typed_views_and_attrs(track):
    ctx = track.model("custom_op_model")
    seen = {}

    def compute(op_ctx, inputs, outputs):
        assert isinstance(op_ctx, CustomOpContext) and op_ctx.op_type == "cstSigmoid"
        assert op_ctx.target == TargetType.CPU
        (i,), (o,) = inputs, outputs
        seen.update(shape=(i.shape, o.shape), dtype=(i.dtype, o.dtype),
                    writeable=(i.flags.writeable, o.flags.writeable),
                    attrs=(op_ctx.input_attrs[0].dims, op_ctx.output_attrs[0].type),
                    alpha=op_ctx.get_op_attr("alpha"), mode=op_ctx.get_op_attr("mode"))
        with pytest.raises(ValueError):
            i[0, 0] = 1.0                                  # inputs are read-only
        with pytest.raises(KeyError, match="no attribute 'nope'"):
            op_ctx.get_op_attr("nope")
        seen["ctx"] = op_ctx
        o[...] = 0.5

    ctx.register_custom_ops([CustomOp("cstSigmoid", compute)])
    got = run_general(ctx, x_input())
    np.testing.assert_array_equal(got, np.full((1, 16), 1.5, np.float32))
    assert seen["shape"] == ((1, 16), (1, 16))
    assert seen["dtype"] == (np.float32, np.float32)
    assert seen["writeable"] == (False, True)
    assert seen["attrs"] == ((1, 16), TensorType.FLOAT32)
    np.testing.assert_array_equal(seen["alpha"], np.float32([1.0]))
    assert seen["alpha"].dtype == np.float32
    np.testing.assert_array_equal(seen["mode"], [0, 1])
    assert seen["mode"].dtype == np.int32
    with pytest.raises(RuntimeError, match="only inside a callback"):
        seen["ctx"].get_op_attr("alpha")
    assert seen["ctx"].input_attrs is None


# ---- lifecycle ------------------------------------------------------------------------------
def test_init_prepare_compute_destroy_counts_and_state(track):
    ctx = track.model("custom_op_model")
    calls = []

    def init(op_ctx, inputs, outputs):
        calls.append("init")
        op_ctx.state = {"runs": 0, "alpha": float(op_ctx.get_op_attr("alpha")[0])}
        assert len(inputs) == 1 and len(outputs) == 1

    def prepare(op_ctx, inputs, outputs):
        calls.append("prepare")
        op_ctx.state["runs"] += 1

    def compute(op_ctx, inputs, outputs):
        calls.append("compute")
        sigmoid(op_ctx, inputs, outputs)

    def destroy(op_ctx):
        calls.append(("destroy", op_ctx.state["runs"]))

    ctx.register_custom_ops([CustomOp("cstSigmoid", compute, init=init, prepare=prepare,
                                      destroy=destroy)])
    assert calls == ["init"]
    for _ in range(3):
        run_general(ctx, x_input())
    assert calls == ["init"] + ["prepare", "compute"] * 3
    ctx.close()
    assert calls[-1] == ("destroy", 3) and calls.count(("destroy", 3)) == 1


def test_init_can_ask_for_the_builtin_implementation(track):
    b = ModelBuilder("RK3588", "builtin sigmoid")
    x = b.input("x", (1, 8), "float32")
    (s,) = b.custom("Sigmoid", [x], [{"shape": (1, 8), "dtype": "float32"}], {})
    b.output(b.add(s, np.float32([0.0]), out="y"))
    track.ctl.set_platform("RK3588")
    ctx = track.context(b.build())
    computed = []
    ctx.register_custom_ops([CustomOp("Sigmoid", lambda *a: computed.append(1),
                                      init=lambda *a: SKIP_CUSTOM_OP_COMPUTE)])
    xv = np.linspace(-3, 3, 8, dtype=np.float32).reshape(1, 8)
    got = run_general(ctx, xv)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-xv)), rtol=1e-6)
    assert computed == []
    # the sample's op type has no built-in: the runtime refuses the registration
    ctx2 = track.model("custom_op_model")
    with pytest.raises(rknnx.RKNNError) as ei:
        ctx2.register_custom_ops([CustomOp("cstSigmoid", sigmoid,
                                           init=lambda *a: SKIP_CUSTOM_OP_COMPUTE)])
    assert ei.value.func == "rknn_register_custom_ops"


# ---- exceptions ---------------------------------------------------------------------------------
def test_compute_exception_is_reraised_chained_and_the_context_recovers(track, general_platform):
    ctx = track.model("custom_op_model", general_platform)
    fail = [True]

    def compute(op_ctx, inputs, outputs):
        if fail[0]:
            raise KeyError("boom")
        sigmoid(op_ctx, inputs, outputs)

    ctx.register_custom_ops([CustomOp("cstSigmoid", compute)])
    ctx.inputs_set([x_input()])
    with pytest.raises(KeyError, match="boom") as ei:
        ctx.run()
    assert isinstance(ei.value.__cause__, rknnx.RKNNError)
    assert ei.value.__cause__.func == "rknn_run"
    fail[0] = False
    x = x_input(2)
    np.testing.assert_allclose(run_general(ctx, x), want(x), rtol=1e-6)


@pytest.mark.parametrize("result, exc", [("ok", TypeError), (-5, rknnx.errors.ParamInvalidError),
                                         (2 ** 40, rknnx.errors.RKNNFailError)])
def test_bad_or_negative_return_values(track, result, exc):
    ctx = track.model("custom_op_model")
    ctx.register_custom_ops([CustomOp("cstSigmoid", lambda *a: result)])
    ctx.inputs_set([x_input()])
    with pytest.raises(exc):
        ctx.run()


def test_init_exception_fails_the_registration(track):
    ctx = track.model("custom_op_model")

    def init(op_ctx, inputs, outputs):
        raise ZeroDivisionError("init failed")

    with pytest.raises(ZeroDivisionError, match="init failed") as ei:
        ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid, init=init)])
    assert ei.value.__cause__.func == "rknn_register_custom_ops"
    assert ctx.custom_ops == []
    ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid)])   # may be registered again
    x = x_input()
    np.testing.assert_allclose(run_general(ctx, x), want(x), rtol=1e-6)


def test_destroy_exception_is_raised_after_the_context_closed(track):
    ctx = track.model("custom_op_model")

    def destroy(op_ctx):
        raise OSError("destroy failed")

    ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid, destroy=destroy)])
    with pytest.raises(OSError, match="destroy failed"):
        ctx.close()
    assert ctx.closed
    ctx.close()


# ---- misuse -------------------------------------------------------------------------------------
def test_calling_the_context_from_its_callback_raises_instead_of_deadlocking(track):
    ctx = track.model("custom_op_model")
    other = track.model("custom_op_model")
    mem = ctx.create_mem(64)
    holder = {"mem": mem}
    del mem
    attempts = {}

    def compute(op_ctx, inputs, outputs):
        for name, call in (("run", ctx.run), ("attrs", lambda: ctx.input_attrs),
                           ("query", lambda: ctx.query(rknnx.lowlevel.QueryCmd.IN_OUT_NUM)),
                           ("close", ctx.close), ("mem_close", lambda: holder["mem"].close()),
                           ("register", lambda: ctx.register_custom_ops(
                               [CustomOp("cstOther", sigmoid)]))):
            try:
                call()
            except RuntimeError as e:
                attempts[name] = str(e)
        attempts["other"] = other.query(rknnx.lowlevel.QueryCmd.IN_OUT_NUM)   # another context is fine
        holder.pop("mem")                  # freed inside the call: destroyed once it returns
        gc.collect()
        sigmoid(op_ctx, inputs, outputs)

    ctx.register_custom_ops([CustomOp("cstSigmoid", compute)])
    before = track.ctl.counters()["live_mems"]
    x = x_input()
    np.testing.assert_allclose(run_general(ctx, x), want(x), rtol=1e-6)
    assert set(attempts) == {"run", "query", "close", "mem_close", "register", "other"}
    assert all("busy in this thread" in attempts[k]
               for k in ("run", "query", "close", "mem_close", "register"))
    assert track.ctl.counters()["live_mems"] == before - 1
    assert not ctx.closed and ctx.mems == []


def test_escaped_views_pin_the_context(track, emu):
    from helpers import live

    base = live(emu)
    kept = []
    emu.set_platform("RK3588")
    ctx = rknnx.lowlevel.Context(track_model_bytes())
    ctx.register_custom_ops([CustomOp("cstSigmoid", lambda c, i, o: (kept.extend([i[0], o[0]]),
                                                                     sigmoid(c, i, o))[1])])
    run_general(ctx, x_input())
    assert len(kept) == 2
    with pytest.raises(BufferError, match="2 buffer view"):
        ctx.close()
    assert not ctx.closed
    ref = weakref.ref(ctx)
    del ctx
    gc.collect()
    assert ref() is not None                               # the views hold it
    np.testing.assert_allclose(kept[1], 1 / (1 + np.exp(-kept[0])), rtol=1e-6)
    kept.clear()
    gc.collect()
    assert ref() is None
    assert live(emu) == base


def test_escaped_views_pin_the_callers_internal_mem(track, emu):
    # the op's output lies in the internal memory the caller bound: a view kept past the
    # callback must keep that TensorMem from being freed, even after another is bound
    b = ModelBuilder("RK3588", "keep")
    x = b.input("x", (1, 64), "float32")
    (s,) = b.custom("cstKeep", [b.relu(x)], [{"shape": (1, 64), "dtype": "float32"}], {},
                    name="keep")
    b.output(b.relu(s, out="y"))
    ctx = track.context(b.build(), rknnx.lowlevel.InitFlag.INTERNAL_ALLOC_OUTSIDE)
    kept = []

    def compute(op, inputs, outputs):
        kept.append(outputs[0])
        outputs[0][...] = inputs[0]

    ctx.register_custom_ops([CustomOp("cstKeep", compute)])
    size = ctx.query(rknnx.lowlevel.QueryCmd.MEM_SIZE).total_internal_size
    first = track.mem(ctx.create_mem(size))
    ctx.set_internal_mem(first)
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64)
    np.testing.assert_array_equal(run_general(ctx, x), np.maximum(x, 0))
    ctx.set_internal_mem(track.mem(ctx.create_mem(size)))   # rebinding is fine
    with pytest.raises(BufferError, match="1 buffer view"):
        first.close()                                       # but not freeing under the view
    assert not first.closed
    np.testing.assert_array_equal(kept[0], np.maximum(x, 0))
    kept.clear()
    first.close()                                           # the view is gone: it may go
    assert first.closed


def test_registering_from_a_callback_while_another_thread_registers_does_not_deadlock():
    # thread 1 registers on A; A's init waits for thread 2 to be inside B.run() and then
    # calls B; thread 2's compute on B registers ops on C.  A process-wide registration
    # lock held across the C call would deadlock these two (lock-order inversion).
    code = """
import threading, numpy as np, rknnx
from rknnx.lowlevel import Context, CustomOp
from rknnx.emulator import samples
m = samples.custom_op_model()
A, B, C = Context(m), Context(m), Context(m)
sig = lambda op, i, o: np.divide(1.0, 1.0 + np.exp(-i[0]), out=o[0])
inside = threading.Event()
def compute_b(op, i, o):
    inside.set()
    C.register_custom_ops([CustomOp("cstSigmoid", sig)])
    sig(op, i, o)
B.register_custom_ops([CustomOp("cstSigmoid", compute_b)])
def init_a(op, i, o):
    inside.wait(10)
    B.query(rknnx.lowlevel.QueryCmd.IN_OUT_NUM)
t1 = threading.Thread(target=lambda: A.register_custom_ops([CustomOp("cstSigmoid", sig, init=init_a)]))
t2 = threading.Thread(target=lambda: (B.inputs_set([np.zeros((1, 16), np.float32)]), B.run()))
t1.start(); t2.start(); t1.join(20); t2.join(20)
print("alive", t1.is_alive(), t2.is_alive())
import os; os._exit(0)
"""
    from helpers import run_python

    proc = run_python(code, env={"RKNNX_RUNTIME": "emulator"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "alive False False"


def track_model_bytes():
    from helpers import model_bytes

    return model_bytes("custom_op_model", "RK3588")


def test_registration_arguments_checked_before_c(track):
    ctx = track.model("custom_op_model")
    before = track.ctl.counters()
    with pytest.raises(rknnx.NotSupportedError, match="targets the GPU"):
        ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid, target=TargetType.GPU)])
    with pytest.raises(TypeError, match="takes CustomOp"):
        ctx.register_custom_ops([sigmoid])
    with pytest.raises(ValueError, match="at least one"):
        ctx.register_custom_ops([])
    with pytest.raises(ValueError, match="given twice"):
        ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid), CustomOp("cstSigmoid", sigmoid)])
    with pytest.raises(TypeError, match="compute must be callable"):
        CustomOp("cstSigmoid", None)
    with pytest.raises(TypeError, match="prepare must be callable"):
        CustomOp("cstSigmoid", sigmoid, prepare=3)
    with pytest.raises(ValueError, match="non-empty str"):
        CustomOp("", sigmoid)
    with pytest.raises(ValueError, match="at most 255"):
        CustomOp("x" * 256, sigmoid)
    with pytest.raises(ValueError, match="TargetType"):
        CustomOp("cstSigmoid", sigmoid, target=7)
    with pytest.raises(TypeError):
        CustomOpContext()
    assert ctx.custom_ops == []
    ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid)])
    with pytest.raises(ValueError, match="registered already"):
        ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid)])
    ctx.register_custom_ops([CustomOp("cstNotInModel", sigmoid)])   # allowed; never called
    assert track.ctl.counters()["live_contexts"] == before["live_contexts"]
    ctx.close()
    with pytest.raises(ValueError, match="closed Context"):
        ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid)])


def test_unregistered_custom_op_fails_the_run(track):
    ctx = track.model("custom_op_model")
    ctx.inputs_set([x_input()])
    with pytest.raises(rknnx.RKNNError) as ei:
        ctx.run()
    assert ei.value.func == "rknn_run"


def test_unclosed_contexts_with_ops_are_collected_without_leaks(emu):
    """A context referenced from its own callbacks (a cycle) is collected; its destroy
    callbacks are skipped (no Python code in a destructor) and nothing leaks."""
    from helpers import live, model_bytes

    emu.set_platform("RK3588")
    base = live(emu)
    destroyed = []
    for i in range(20):
        ctx = rknnx.lowlevel.Context(model_bytes("custom_op_model", "RK3588"))

        def compute(op_ctx, inputs, outputs, ctx=ctx):
            sigmoid(op_ctx, inputs, outputs)

        ctx.register_custom_ops([CustomOp("cstSigmoid", compute,
                                          destroy=lambda c: destroyed.append(1))])
        if i % 2:
            run_general(ctx, x_input(i))
        del ctx, compute
        gc.collect()
    assert live(emu) == base and rknnx._core.live_contexts() == 0
    assert destroyed == []
    for _ in range(50):                                    # closed ones do run destroy
        with rknnx.lowlevel.Context(model_bytes("custom_op_model", "RK3588")) as ctx:
            ctx.register_custom_ops([CustomOp("cstSigmoid", sigmoid,
                                              destroy=lambda c: destroyed.append(1))])
            run_general(ctx, x_input())
    assert len(destroyed) == 50 and live(emu) == base
