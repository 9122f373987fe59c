"""Attacks on the facade's lifetimes (issue 26, item 3): a transient failure injected at
every runtime call of an operation, closes racing from several threads, objects dropped
without a close, fork, re-entering callbacks.  After each, the object works again (the
next call succeeds and gives the numbers of a fresh reference run) or says clearly what
broke, and the emulator's live counters are back at their baseline (the `models`
fixture checks them at teardown; most tests check them after every round too)."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

import rknnx
from helpers import GENERAL_PLATFORMS, PLATFORMS, live

#: the runtime functions an operation of a session, a model or a pool may call (the
#: emulator's injectable names, matmul's left out)
FUNCS = ("rknn_init", "rknn_dup_context", "rknn_destroy", "rknn_query", "rknn_inputs_set",
         "rknn_set_core_mask", "rknn_run", "rknn_outputs_get", "rknn_outputs_release",
         "rknn_create_mem_from_fd", "rknn_create_mem", "rknn_create_mem2", "rknn_destroy_mem",
         "rknn_set_io_mem", "rknn_set_input_shapes", "rknn_mem_sync",
         "rknn_register_custom_ops")


def each_failure(emu, op, setup=lambda: None, undo=lambda made: None, funcs=FUNCS,
                 limit=40):
    """Yield ``(func, nth, error, made)`` for every call `op(made)` makes to a runtime
    function, ``made = setup()`` made before (no failure there): `op` runs once per call
    with that one call failing (RKNN_ERR_FAIL); `error` is what it raised (None if it went
    on without the call).  A function `op` calls fewer than `nth` times ends its loop
    (the injection is still armed after `op`; `undo(made)` then)."""
    for func in funcs:
        for nth in range(1, limit + 1):
            made = setup()
            emu.inject_error(func, nth, "RKNN_ERR_FAIL")
            err = None
            try:
                op(made)
            except Exception as e:       # judged by the caller
                err = e
            pending = emu.pending_injections
            emu.clear_injections()
            if pending:
                assert err is None, f"{func} #{nth}: {err!r} without the injected failure"
                undo(made)
                break
            yield func, nth, err, made
        else:                            # pragma: no cover - a loop that never ends
            raise AssertionError(f"{func}: more than {limit} calls")


def assert_says(err, func) -> None:
    """The error names the runtime function that failed (an RKNNError of it)."""
    assert isinstance(err, rknnx.RKNNError), repr(err)
    assert err.func == func or func in str(err), repr(err)


def _dyn_reference(model):
    """Per shape set: an input frame and the outputs a fresh session gives for it."""
    rng = np.random.default_rng(7)
    frames, outs = [], []
    with model.zero_copy() as ref:
        for k, (shape,) in enumerate(model.shape_sets):
            x = rng.integers(0, 256, size=shape, dtype=np.uint8)
            ref.set_shape_set(k)
            ref.write(0, x)
            ref.run()
            frames.append(x)
            outs.append([ref.read(i) for i in range(len(ref.outputs))])
    return frames, outs


def _check_set(s, k, frames, outs) -> None:
    s.set_shape_set(k)
    s.write(0, frames[k])
    s.run()
    for i, want in enumerate(outs[k]):
        np.testing.assert_array_equal(s.read(i), want)


# -- 2. transient failures at every runtime call ---------------------------------------------
@pytest.mark.parametrize("platform", GENERAL_PLATFORMS)
def test_a_transient_failure_in_set_shape_set_leaves_a_session_that_works_again(
        models, emu, platform):
    # after one failed rknn_set_io_mem or rknn_create_mem2 inside set_shape_set the
    # session stayed broken ("size on closed TensorMem" from set_shape_set, run, read):
    # the old, too small mem was closed before its bigger replacement was had and bound
    m = models.open("dynamic", platform)
    frames, outs = _dyn_reference(m)
    base = live(emu)
    seen = set()
    # a new session is at shape set 0: set 2 needs bigger memory
    for func, nth, err, s in each_failure(emu, lambda s: s.set_shape_set(2), m.zero_copy,
                                          lambda s: s.close()):
        seen.add(func)
        if err is not None:
            assert_says(err, func)
            # what is bound is not what the model's shapes need now: a run says so
            # (the binding's run-entry rule) or the views refuse the new frame
            with pytest.raises(ValueError, match="bound with set_io_mem for dims|does not "
                                                 "fit the view"):
                s.write(0, frames[2])
                s.run()
        _check_set(s, 2, frames, outs)   # works again, with the right numbers
        _check_set(s, 1, frames, outs)
        _check_set(s, 0, frames, outs)
        s.close()
        gc.collect()
        assert live(emu) == base, (func, nth)
    assert {"rknn_set_io_mem", "rknn_create_mem2", "rknn_destroy_mem",
            "rknn_set_input_shapes"} <= seen


@pytest.mark.parametrize("platform", GENERAL_PLATFORMS)
def test_a_failed_destroy_of_a_replaced_mem_does_not_undo_a_shape_set_switch(
        models, emu, platform):
    # the switch was done, but the destroy of the old mem raised half-way through the
    # rebind: the outputs after it were never rebound (IndexError from read)
    m = models.open("dynamic", platform)
    frames, outs = _dyn_reference(m)
    base = live(emu)
    with m.zero_copy() as s:
        with emu.injected("rknn_destroy_mem", 3, "RKNN_ERR_FAIL"):
            s.set_shape_set(2)
            assert emu.pending_injections == 0
        s.write(0, frames[2])
        s.run()
        for i, want in enumerate(outs[2]):
            np.testing.assert_array_equal(s.read(i), want)
    gc.collect()
    assert live(emu) == base


X = np.array([[-1.5, 2.25]], np.float32)
RELU_X = np.maximum(X, 0)


def _session_works(s) -> None:
    s.write(0, X)
    s.run()
    np.testing.assert_array_equal(s.outputs[0], RELU_X)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_transient_failure_in_zero_copy_leaks_nothing_and_the_next_one_works(
        models, emu, platform):
    m = models.open("tiny_relu", platform)
    base = live(emu)
    seen = set()
    def undo(_):
        for s in seen:
            s.close()
        seen.clear()

    for func, nth, err, _ in each_failure(emu, lambda _: seen.add(m.zero_copy()), undo=undo):
        if err is not None:
            assert_says(err, func)
            gc.collect()
            assert live(emu) == base, (func, nth)      # the half-made session is gone
        with m.zero_copy() as s:                       # the next one works
            _session_works(s)
        for s in seen:                                 # one made without the failed call
            with s:                                    # (a fallback) works too
                _session_works(s)
        seen.clear()
        gc.collect()
        assert live(emu) == base, (func, nth)
        assert not m.closed
    np.testing.assert_array_equal(m.run(X)[0], RELU_X)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_transient_failure_in_bind_input_fd_or_chain_leaves_the_session_working(
        models, emu, platform):
    m = models.open("tiny_relu", platform)
    base = live(emu)
    fd = os.memfd_create("frame")
    try:
        os.ftruncate(fd, 4096)

        def bind(s):
            s.bind_input_fd(0, fd)

        for op in (bind, lambda s: s.chain(0, 0)):
            fired = 0
            for func, nth, err, s in each_failure(emu, op, m.zero_copy, lambda s: s.close()):
                fired += err is not None
                if err is not None:
                    assert_says(err, func)
                _session_works(s)               # as it was, or with the change made
                op(s)                           # the change, now
                _session_works(s)
                s.close()
                gc.collect()
                assert live(emu) == base, (op, func, nth)
            assert fired >= 1                   # set_io_mem at least
    finally:
        os.close(fd)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_transient_failure_in_pool_start_leaks_nothing_and_the_next_pool_works(
        models, emu, platform):
    m = models.open("tiny_relu", platform)
    m.run(X)                            # the model's own runner is made (RV1106: a session)
    base = live(emu)
    made = []
    def undo(_):
        for p in made:
            p.close()
        made.clear()

    for func, nth, err, _ in each_failure(emu, lambda _: made.append(rknnx.Pool(m, 2)),
                                          undo=undo):
        if err is not None:
            assert_says(err, func)
            gc.collect()
            assert live(emu) == base, (func, nth)
        with rknnx.Pool(m, 2) as pool:
            for y, in pool.map([X] * 4):
                np.testing.assert_array_equal(y, RELU_X)
        for p in made:
            with p:
                np.testing.assert_array_equal(p.submit(X).result(10)[0], RELU_X)
        made.clear()
        gc.collect()
        assert live(emu) == base, (func, nth)
    np.testing.assert_array_equal(m.run(X)[0], RELU_X)
