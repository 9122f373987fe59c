"""Model.run is the binding's (rknnx._core._ModelRun.run, rknn_ext/rknnx/_model_run.pxi):
a method descriptor that runs the fast path in C and hands the rest to the facade's
Python (Model._run_declined, Model._run_general).  What a user sees of it stays: the
parameters, the docstring, a subclass overriding run, weak references, the outputs and
the errors of each path; references come back to their baseline; the state it reads is
set once."""

from __future__ import annotations

import copy
import gc
import inspect
import pickle
import pydoc
import re
import sys
import weakref

import numpy as np
import pytest

from helpers import user_inputs


def _reference_run(self, *inputs, raw=False, out=None, data_format=None,
                   pass_through=None):
    """The parameters of Model.run as the Python method had them."""


def test_run_is_a_method_descriptor_with_the_same_parameters_and_docstring(models):
    import rknnx
    from rknnx._core import _ModelRun

    assert type(vars(_ModelRun)["run"]).__name__ == "method_descriptor"
    # the same descriptor on Model itself (autodoc documents a class's own members only):
    # no Python frame in between
    assert vars(rknnx.Model)["run"] is vars(_ModelRun)["run"]
    m = models.open("tiny_relu")
    want = inspect.signature(_reference_run)
    got = list(inspect.signature(rknnx.Model.run).parameters.values())
    # the one difference, on the class's function only: a method descriptor's self is
    # positional-only (help(Model.run) reads "run(self, /, *inputs, ...)")
    assert (got[0].name, got[0].kind) == ("self", inspect.Parameter.POSITIONAL_ONLY)
    assert [(p.name, p.kind, p.default) for p in got[1:]] == \
        [(p.name, p.kind, p.default) for p in list(want.parameters.values())[1:]]
    bound = inspect.signature(m.run)
    assert [(p.name, p.kind, p.default) for p in bound.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in list(want.parameters.values())[1:]]
    doc = rknnx.Model.run.__doc__
    assert doc.startswith("Run the model on numpy arrays (the general flow).")
    for section in ("*inputs : numpy.ndarray", "raw : bool", "out : sequence",
                    "data_format : {\"nhwc\", \"nchw\"}", "pass_through : sequence",
                    "Returns", "Raises", "RKNNError"):
        assert section in doc
    text = pydoc.render_doc(m.run, renderer=pydoc.plaintext)
    assert "run(*inputs, raw=False, out=None, data_format=None, pass_through=None)" in text


def test_a_subclass_overrides_run_and_calls_the_compiled_one(emu):
    import rknnx
    from helpers import model_bytes

    class Counting(rknnx.Model):
        calls = 0

        def run(self, *inputs, **kw):
            self.calls += 1
            return super().run(*inputs, **kw)

    emu.set_platform("RK3588")
    with Counting(model_bytes("multi_io")) as m, rknnx.Model(model_bytes("multi_io")) as ref:
        xs = user_inputs(m, np.random.default_rng(3))
        got, want = m.run(*xs), ref.run(*xs)
        assert m.calls == 1 and len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        r = weakref.ref(m)
        assert r() is m


def test_pickling_and_copying_refused(models):
    m = models.open("tiny_relu")
    for f in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match=r"^cannot pickle 'Model' object$"):
            f(m)


def test_each_path_gives_the_numpy_reference_and_references_come_back(models):
    """The fast path (new arrays, out=, raw, np.bool_ raw), the declined fast path (a list
    of float64 arrays, converted by the facade) and the general path (data_format the
    shape leaves to the caller): outputs equal to relu of the input, and after 200 calls
    every object handed in holds the references it held before."""
    m = models.open("tiny_relu")
    x = np.random.default_rng(5).standard_normal(m.inputs[0].shape).astype(np.float32)
    want = np.maximum(x, 0).reshape(m.outputs[0].shape)
    out = [np.empty(m.outputs[0].shape, np.float32)]
    x64 = x.astype(np.float64)
    raw_t = np.bool_(False)
    calls = [lambda: m.run(x), lambda: m.run(x, out=out), lambda: m.run(x, raw=raw_t),
             lambda: m.run(x, raw=True), lambda: m.run(x64), lambda: m.run(x, out=tuple(out)),
             lambda: m.run({m.inputs[0].name: x})]
    for call in calls:
        got = call()
        assert isinstance(got, list) and len(got) == 1
        np.testing.assert_allclose(np.asarray(got[0], np.float32).reshape(want.shape), want,
                                   rtol=1e-6, atol=1e-6)
    assert m.run(x, out=out)[0] is out[0]
    gc.collect()
    held = [sys.getrefcount(o) for o in (m, x, x64, out, out[0], raw_t)]
    for call in calls:
        for _ in range(200):
            call()
    gc.collect()
    assert [sys.getrefcount(o) for o in (m, x, x64, out, out[0], raw_t)] == held


def test_the_fast_paths_refusals_keep_their_type_and_words(models):
    m = models.open("tiny_relu")
    x = np.zeros(m.inputs[0].shape, np.float32)
    with pytest.raises(TypeError, match=r"^raw must be True or False; got 'yes'$"):
        m.run(x, raw="yes")
    with pytest.raises(ValueError, match=re.escape(
            "out= takes a list of arrays, one per output (1); got ndarray (put it in a list)")):
        m.run(x, out=np.empty(m.outputs[0].shape, np.float32))
    m.close()
    with pytest.raises(ValueError, match=r"^run on closed Model$"):
        m.run(x)


class _SubArray(np.ndarray):
    """An ndarray subclass: the binding always reads it through numpy's export, and the
    fast path never takes it (the reference for an exact ndarray it does not take)."""


def _readonly(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("make", [
    lambda: np.empty((1, 2), np.float64), lambda: np.empty((1, 2), np.int8),
    lambda: np.empty((1, 2), ">f4"), lambda: np.empty((1, 1, 2), np.float32),
    lambda: np.empty(2, np.float32), lambda: _readonly(np.empty((1, 2), np.float32)),
    lambda: np.empty((1, 4), np.float32)[:, ::2],
], ids=["float64", "int8", "big-endian", "ones-added", "flat", "read-only", "strided"])
def test_an_out_array_the_fast_path_does_not_take_is_refused_as_a_subclass_is(models, emu,
                                                                              make):
    """An exact ndarray as `out` that is not of the output's exact dtype, shape, order or
    writability leaves the binding's fast path (its cached-layout test declines it) and
    gets the same error, type and words, as the same array as a subclass, which never
    takes that path; nothing reaches the runtime."""
    m = models.open("tiny_relu")
    x = np.float32([[1, -2]])
    emu.reset_counters()
    errors = []
    for o in (make(), make().view(_SubArray)):
        with pytest.raises(ValueError) as ei:
            m.run(x, out=[o])
        errors.append((type(ei.value), str(ei.value)))
    assert errors[0] == errors[1]
    assert errors[0][1].startswith("out[0] must be a writable C-contiguous float32 array "
                                   "of shape (1, 2); got ")
    assert emu.counters()["runs"] == 0
    out = [np.full((1, 2), 7, np.float32)]
    assert m.run(x, out=out)[0] is out[0]
    np.testing.assert_array_equal(out[0], [[1, 0]])


def test_the_compiled_state_is_set_once(models):
    m = models.open("tiny_relu")
    with pytest.raises(RuntimeError, match=r"^_fast_setup: the Model is set up already$"):
        m._fast_setup(m._ctx, m._own, m._lock, m._family, m._fast_out, m._fast_formats,
                      True, False)
    assert m._last is None
    m.run(np.zeros(m.inputs[0].shape, np.float32))
    assert m._last is m._own
    with pytest.raises(ValueError, match=re.escape("_last: the Model's own runner or None")):
        m._last = object()
    assert m._last is m._own
