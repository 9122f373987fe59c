"""Custom operators for people: @rknnx.custom_op functions (with and without the op
context) and CustomOperator subclasses installed with rknnx.custom.register on the sample
model's cstSigmoid, computing what numpy computes on RK3588 and RK3566; mistakes refused
with a message naming what was expected; the refusal on RV1106; counters at baseline."""

from __future__ import annotations

import numpy as np
import pytest

import rknnx
import rknnx.custom
from rknnx.lowlevel import CustomOp, CustomOpContext

pytestmark = pytest.mark.needs("rknn_register_custom_ops")

GENERAL = ("RK3588", "RK3566")


def want(x, alpha=1.0):
    """The sample model: sigmoid(alpha * x) + 1."""
    return (1.0 / (1.0 + np.exp(-alpha * x.astype(np.float64))) + 1.0).astype(np.float32)


def x_input(seed=0):
    return np.random.default_rng(seed).standard_normal((1, 16)).astype(np.float32)


def run_general(ctx, x):
    ctx.inputs_set([x])
    ctx.run()
    with ctx.outputs_get(want_float=True) as outs:
        return np.asarray(outs[0]).copy()


@rknnx.custom_op("cstSigmoid")
def sigmoid(inputs, outputs):
    np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])


@pytest.mark.parametrize("platform", GENERAL)
def test_decorated_function_computes_the_op(track, platform):
    ctx = track.model("custom_op_model", platform)
    assert isinstance(sigmoid, rknnx.CustomOperator) and sigmoid.op_type == "cstSigmoid"
    low = rknnx.custom.register(ctx, sigmoid)
    assert [op.op_type for op in low] == ["cstSigmoid"]
    assert [op.op_type for op in ctx.custom_ops] == ["cstSigmoid"]
    for seed in range(3):
        x = x_input(seed)
        np.testing.assert_allclose(run_general(ctx, x), want(x), rtol=1e-6, atol=1e-6)


def test_one_operator_serves_several_contexts(track):
    a = track.model("custom_op_model")
    b = track.model("custom_op_model")
    rknnx.custom.register(a, [sigmoid])
    rknnx.custom.register(b, [sigmoid])
    x = x_input(1)
    np.testing.assert_array_equal(run_general(a, x), run_general(b, x))


@pytest.mark.parametrize("platform", GENERAL)
def test_function_with_op_context_reads_the_model_attributes(track, platform):
    ctx = track.model("custom_op_model", platform)
    seen = {}

    @rknnx.custom_op("cstSigmoid")
    def scaled(inputs, outputs, op_ctx):
        assert isinstance(op_ctx, CustomOpContext)
        alpha = float(op_ctx.get_op_attr("alpha")[0]) * 2.0
        seen.update(attrs=op_ctx.input_attrs[0].dims, writeable=(inputs[0].flags.writeable,
                                                                outputs[0].flags.writeable))
        np.divide(1.0, 1.0 + np.exp(-alpha * inputs[0]), out=outputs[0])

    rknnx.custom.register(ctx, [scaled])
    x = x_input(2)
    np.testing.assert_allclose(run_general(ctx, x), want(x, 2.0), rtol=1e-6, atol=1e-6)
    assert seen == {"attrs": (1, 16), "writeable": (False, True)}


def test_subclass_with_init_prepare_destroy_and_state(track):
    calls = []

    class Sigmoid(rknnx.CustomOperator):
        op_type = "cstSigmoid"

        def init(self, inputs, outputs, op_ctx):
            calls.append("init")
            op_ctx.state = {"alpha": float(op_ctx.get_op_attr("alpha")[0]), "runs": 0}

        def prepare(self, inputs, outputs, op_ctx):
            op_ctx.state["runs"] += 1

        def compute(self, inputs, outputs, op_ctx):
            calls.append("compute")
            a = op_ctx.state["alpha"]
            np.divide(1.0, 1.0 + np.exp(-a * inputs[0]), out=outputs[0])

        def destroy(self, op_ctx):
            calls.append(("destroy", op_ctx.state["runs"]))

    ctx = track.model("custom_op_model")
    rknnx.custom.register(ctx, [Sigmoid()])
    assert calls == ["init"]
    for seed in range(2):
        x = x_input(seed)
        np.testing.assert_allclose(run_general(ctx, x), want(x), rtol=1e-6, atol=1e-6)
    ctx.close()
    assert calls == ["init", "compute", "compute", ("destroy", 2)]


def test_zero_copy_flow_matches_the_general_flow(track):
    ctx = track.model("custom_op_model")
    rknnx.custom.register(ctx, sigmoid)
    ia, oa = ctx.input_attrs[0], ctx.output_attrs[0]
    oa.type = rknnx.lowlevel.TensorType.FLOAT32
    im = track.mem(ctx.create_mem(ia.nbytes_with_stride))
    om = track.mem(ctx.create_mem(oa.nbytes_with_stride))
    ctx.set_io_mem(im, ia)
    ctx.set_io_mem(om, oa)
    x = x_input(3)
    np.asarray(im)[...] = x
    ctx.run()
    np.testing.assert_allclose(np.asarray(om), want(x), rtol=1e-6, atol=1e-6)


def test_low_level_ops_are_accepted_too(track):
    ctx = track.model("custom_op_model")
    low = CustomOp("cstSigmoid", lambda c, i, o: sigmoid(i, o))
    assert rknnx.custom.register(ctx, low) == [low]
    x = x_input(4)
    np.testing.assert_allclose(run_general(ctx, x), want(x), rtol=1e-6, atol=1e-6)


def test_operator_exception_is_raised_from_run_and_the_context_recovers(track):
    ctx = track.model("custom_op_model")
    fail = [True]

    @rknnx.custom_op("cstSigmoid")
    def flaky(inputs, outputs):
        if fail[0]:
            raise ArithmeticError("bad frame")
        sigmoid(inputs, outputs)

    rknnx.custom.register(ctx, flaky)
    ctx.inputs_set([x_input()])
    with pytest.raises(ArithmeticError, match="bad frame") as ei:
        ctx.run()
    assert ei.value.__cause__.func == "rknn_run"
    fail[0] = False
    x = x_input(5)
    np.testing.assert_allclose(run_general(ctx, x), want(x), rtol=1e-6, atol=1e-6)


def test_the_operator_is_callable_on_numpy_arrays():
    out = [np.empty(3, np.float32)]
    sigmoid([np.zeros(3, np.float32)], out)
    np.testing.assert_array_equal(out[0], np.full(3, 0.5, np.float32))
    assert sigmoid.__wrapped__.__name__ == "sigmoid"


# ---- mistakes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, exc, msg", [
    (lambda: rknnx.custom_op(""), ValueError,
     "op_type is empty; give the op type the model uses, such as 'cstSigmoid'"),
    (lambda: rknnx.custom_op(sigmoid), TypeError, "op_type must be a str naming the op"),
    (lambda: rknnx.custom_op("x" * 256), ValueError, "at most 255 UTF-8 bytes, got 256"),
    (lambda: rknnx.custom_op("cstA")(3), TypeError, "decorates a function, got int"),
    (lambda: rknnx.custom_op("cstA")(lambda x: None), TypeError,
     r"takes \(inputs, outputs\) or \(inputs, outputs, op_ctx\)"),
    (lambda: rknnx.custom_op("cstA")(lambda a, b, c, d: None), TypeError,
     r"takes \(inputs, outputs\) or \(inputs, outputs, op_ctx\)"),
    (lambda: rknnx.CustomOperator("cstA"), TypeError, "needs a compute function"),
    (lambda: rknnx.CustomOperator(), ValueError, "op_type is empty"),
    (lambda: rknnx.custom_op("cstA", prepare=5)(lambda i, o: None), TypeError,
     "prepare must be callable, got int"),
])
def test_operator_definitions_checked(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make()


def test_register_mistakes_raise_before_c(track):
    ctx = track.model("custom_op_model")

    def plain(inputs, outputs):
        pass

    for ops, exc, msg in (
            (plain, TypeError, r"got function; decorate the function first"),
            ([plain], TypeError, r"a plain function: decorate it with @rknnx.custom_op"),
            ([], ValueError, "needs at least one operator"),
            (5, TypeError, "ops must be a CustomOperator or a sequence of them, got int"),
            ("cstSigmoid", TypeError, "takes CustomOperator objects"),
            ([sigmoid, sigmoid], ValueError, "op type 'cstSigmoid' given twice")):
        with pytest.raises(exc, match=msg):
            rknnx.custom.register(ctx, ops)
        assert ctx.custom_ops == []
    with pytest.raises(TypeError, match="needs a rknnx.lowlevel.Context, got str"):
        rknnx.custom.register("model.rknn", sigmoid)
    rknnx.custom.register(ctx, sigmoid)
    with pytest.raises(ValueError, match="'cstSigmoid' is registered already on this context"):
        rknnx.custom.register(ctx, sigmoid)
    ctx.close()
    with pytest.raises(ValueError, match="rknnx.custom.register: the context is closed"):
        rknnx.custom.register(ctx, sigmoid)


def test_rv1106_refuses_naming_chip_and_function(track):
    ctx = track.model("custom_op_model", "RV1106")
    with pytest.raises(rknnx.NotSupportedError,
                       match="rknnx.custom.register: rknn_register_custom_ops is not "
                             "supported on RV1106") as ei:
        rknnx.custom.register(ctx, sigmoid)
    assert ei.value.func == "rknn_register_custom_ops" and ctx.custom_ops == []


# ---- callbacks that call back, callbacks that fail (issue 17) ------------------------------
REENTRY = r"""
import threading
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl
emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_log_level(0)
m = rknnx.Model(samples.custom_op_model(target="RK3588"))
x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)
want = (1 / (1 + np.exp(-x.astype(np.float64))) + 1).astype(np.float32)
calls = {"do": None}

@rknnx.custom_op("cstSigmoid")
def op(inputs, outputs):
    do = calls["do"]
    calls["do"] = None
    if do is not None:
        do()
    np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])

m.register_custom_ops(op)

def attempt(name, run, do):
    calls["do"] = do
    try:
        run()
        print(f"{name}: no error")
    except RuntimeError as e:
        print(f"{name}: RuntimeError: {str(e).split(' (')[0]}")
    except Exception as e:
        print(f"{name}: {type(e).__name__}: {e}")

run = lambda: m.run(x)
attempt("model run in model run", run, run)
attempt("model close in model run", run, m.close)
attempt("zero_copy in model run", run, m.zero_copy)
attempt("Pool in model run", run, lambda: rknnx.Pool(m, workers=1))
s = m.zero_copy()
s.inputs[0][...] = x
attempt("session close in session run", s.run, s.close)
attempt("model close in session run", s.run, m.close)
attempt("model run in session run", s.run, run)            # another context: allowed
np.testing.assert_allclose(s.outputs[0], want, rtol=1e-6)
pool = rknnx.Pool(m, workers=1, queue_size=4)
in_pool = lambda: pool.submit(x).result()
attempt("pool shutdown in a worker", in_pool, pool.shutdown)
attempt("pool submit in a worker", in_pool, lambda: pool.submit(x))
ready, box = threading.Event(), {}
calls["do"] = lambda: (ready.wait(10), box["later"].result())
first = pool.submit(x)                     # the only worker runs it, its callback waits
box["later"] = pool.submit(x)              # queued behind it: the worker would wait for itself
ready.set()
try:
    first.result()
    print("pool result in a worker: no error")
except RuntimeError as e:
    print(f"pool result in a worker: RuntimeError: {str(e).split(' (')[0]}")
box["later"].result()
attempt("model close in a worker", in_pool, m.close)
np.testing.assert_allclose(pool.submit(x).result()[0], want, rtol=1e-6)
np.testing.assert_allclose(m.run(x)[0], want, rtol=1e-6)    # all still usable
pool.shutdown()
s.close()
m.close()
print("live", emu.counters()["live_contexts"], emu.counters()["live_mems"])
"""


def test_a_callback_calling_its_own_model_session_or_pool_is_refused_not_deadlocked():
    # the facade's locks keep the binding's promise: re-entry from the thread that holds
    # them raises RuntimeError (this used to wait for ever on the model's lock)
    from helpers import run_python

    proc = run_python(REENTRY, timeout=90)
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-3000:])
    lines = proc.stdout.splitlines()
    assert lines[:7] == [
        "model run in model run: RuntimeError: run: the Model is busy in this thread",
        "model close in model run: RuntimeError: close: the Model is busy in this thread",
        "zero_copy in model run: RuntimeError: zero_copy: the Model is busy in this thread",
        "Pool in model run: RuntimeError: Pool: the Model is busy in this thread",
        "session close in session run: RuntimeError: close: the ZeroCopySession is busy in "
        "this thread",
        "model close in session run: RuntimeError: close: the ZeroCopySession is busy in "
        "this thread",
        "model run in session run: no error"], lines
    assert lines[7:] == [
        "pool shutdown in a worker: RuntimeError: shutdown: called from a worker of the Pool",
        "pool submit in a worker: RuntimeError: submit: called from a worker of the Pool",
        "pool result in a worker: RuntimeError: a worker of a Pool",
        "model close in a worker: RuntimeError: close the Model: called from a worker of the "
        "Pool",
        "live 0 0"], lines


def _failing_op():
    @rknnx.custom_op("cstSigmoid")
    def failing(inputs, outputs):
        seen = (inputs[0], outputs[0])         # the views, in the callback's frame   # noqa
        raise ArithmeticError("bad frame")

    return failing


def test_a_failing_op_leaves_no_view_behind_its_error(emu):
    # the error's traceback held the callback's frame and, through it, views of the
    # context's memory: close() raised BufferError until a gc pass (and for as long as the
    # error was kept); the views must not outlive the op call
    import gc

    from helpers import live, model_bytes

    before = live(emu)
    gc.collect()
    gc.disable()
    try:
        ctx = rknnx.lowlevel.Context(model_bytes("custom_op_model"))
        rknnx.custom.register(ctx, _failing_op())
        ctx.inputs_set([x_input()])
        with pytest.raises(ArithmeticError, match="bad frame") as low:
            ctx.run()
        ctx.close()                            # the error is still held (low)
        m = rknnx.Model(model_bytes("custom_op_model"))
        m.register_custom_ops(_failing_op())
        with pytest.raises(ArithmeticError, match="bad frame") as ei:
            m.run(x_input())
        pool = rknnx.Pool(m, workers=1)
        failed = pool.submit(x_input())
        assert isinstance(failed.exception(timeout=30), ArithmeticError)
        pool.shutdown()                        # the failed future is still held
        m.close()
        assert live(emu) == before
        assert low.value.__traceback__ is not None and ei.value.__traceback__ is not None
    finally:
        gc.enable()
