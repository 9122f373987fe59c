"""Lifetimes under garbage collection, leaks over many cycles, and threads.

- Dropping contexts, mems (bound or not), outputs and views in any order, with or without
  the cycle collector, leaves the emulator's live counters where they were.
- Runtime-allocated outputs never dangle: views keep them alive, release refuses while
  they exist.
- 10,000 create/run/destroy cycles keep the counters at zero and the RSS flat; 10,000
  runs create no reference cycles (measured with the collector off).
- The GIL is released during runs: 4 threads on 4 contexts overlap (the emulator's peak
  runs-in-flight counter), and 4 threads on one context are serialized without crashing,
  even when one of them closes it.
"""

from __future__ import annotations

import gc
import itertools
import os
import random
import threading

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import Context, TensorType


def _zero_copy(ctx):
    """Bind an input and a float output mem; returns (in_mem, out_mem)."""
    ia, oa = ctx.input_attrs[0], ctx.output_attrs[0]
    im, om = ctx.create_mem(ia.size_with_stride), ctx.create_mem(oa.size_with_stride)
    ctx.set_io_mem(im, ia)
    ctx.set_io_mem(om, oa)
    return im, om


def _objects(model):
    """A web of objects with every kind of reference between them."""
    g = Context(model)
    g.inputs_set([np.float32([[1, -1]])])
    g.run()
    outs = g.outputs_get(want_float=True)
    out_view = np.asarray(outs[0])
    z = Context(model)
    im, om = _zero_copy(z)                  # cycles: z -> bindings -> mem -> z
    np.asarray(im)[...] = [[2, -2]]
    z.run()
    om_view = np.from_dlpack(om)
    foreign = g.create_mem(8)               # a mem of g bound in z
    z.set_io_mem(foreign, z.input_attrs[0])
    return {"g": g, "outs": outs, "out_view": out_view, "z": z, "im": im, "om": om,
            "om_view": om_view, "foreign": foreign}


def test_gc_in_any_order_leaves_counters_at_zero(emu, bh):
    model = bh.model_bytes("tiny_relu")
    base = bh.live(emu)
    names = list(_objects(model))
    orders = list(itertools.permutations(names))
    random.Random(4).shuffle(orders)
    for order in orders[:40]:
        objs = _objects(model)
        assert objs["out_view"].tolist() == [[1.0, 0.0]] and objs["om_view"].tolist() == [[2.0, 0.0]]
        for name in order:
            del objs[name]
            if name.endswith("view"):
                gc.collect()
        gc.collect()
        assert bh.live(emu) == base, order


def test_refcounting_alone_frees_acyclic_objects(emu, bh):
    base = bh.live(emu)
    gc.disable()
    try:
        ctx = Context(bh.model_bytes("tiny_relu"))
        ctx.inputs_set([np.float32([[1, 2]])])
        ctx.run()
        outs = ctx.outputs_get()
        view = np.asarray(outs[0])
        mem = ctx.create_mem(16)
        del ctx, outs
        assert bh.live(emu)["live_output_buffers"] == base["live_output_buffers"] + 1
        del view, mem
        assert bh.live(emu) == base
    finally:
        gc.enable()


def test_runtime_outputs_never_dangle(track, bh, emu):
    ctx = track.model("tiny_int8_add")
    ctx.inputs_set([np.full(a.dims, 9, np.uint8) for a in ctx.input_attrs])
    ctx.run()
    base = bh.live(emu)["live_output_buffers"]
    outs = ctx.outputs_get(want_float=True)
    assert bh.live(emu)["live_output_buffers"] == base + 1
    view = np.asarray(outs[0])
    first = view.copy()
    with pytest.raises(BufferError, match=r"^1 buffer view\(s\) still exported"):
        outs.release()
    with pytest.raises(BufferError, match="still exported"):
        ctx.close()
    del outs
    gc.collect()
    np.testing.assert_array_equal(view, first)         # still valid: the view holds it
    assert bh.live(emu)["live_output_buffers"] == base + 1
    del view
    gc.collect()
    assert bh.live(emu)["live_output_buffers"] == base  # released with the last view
    outs = ctx.outputs_get()
    item = outs[0]
    assert not item.released and item.size == 256 and item.shape == (1, 8, 4, 8)
    assert item.dtype == np.int8 and item.index == 0 and not item.want_float
    assert item.attr.name == "y" and len(outs) == 1 and list(outs) == [item]
    outs.release()
    assert outs.released and item.released
    for view in (np.asarray, memoryview, lambda o: o.numpy()):
        with pytest.raises(BufferError, match="released outputs"):
            view(item)
    with pytest.raises(ValueError, match="released outputs"):
        item.size
    # a context closes its unreleased (unviewed) outputs
    outs2 = ctx.outputs_get()
    ctx.close()
    assert outs2.released and bh.live(emu)["live_output_buffers"] == base


def test_ten_thousand_create_run_destroy_cycles(emu, bh):
    model = bh.model_bytes("tiny_relu")
    base = bh.live(emu)
    x = np.float32([[1.5, -1.5]])

    def cycle(i):
        ctx = Context(model)
        if i % 2:
            im, om = _zero_copy(ctx)
            np.asarray(im)[...] = x
            ctx.run()
            assert np.asarray(om)[0, 0] == 1.5
            im.close()
            om.close()
        else:
            ctx.inputs_set([x])
            ctx.run()
            with ctx.outputs_get(want_float=True) as outs:
                assert np.asarray(outs[0])[0, 0] == 1.5
        ctx.close()

    gc.collect()
    gc.disable()                     # nothing may depend on the cycle collector
    try:
        for i in range(1000):
            cycle(i)
        rss0 = bh.rss_kib()
        for i in range(9000):
            cycle(i)
        rss1 = bh.rss_kib()
        assert bh.live(emu) == base
        assert gc.collect() == 0     # and no cycles were left behind
    finally:
        gc.enable()
    assert rss1 - rss0 < 2048, (rss0, rss1)


def test_ten_thousand_runs_make_no_garbage(track, bh, emu):
    ctx = track.model("tiny_relu")
    im, om = _zero_copy(ctx)
    track.mem(im), track.mem(om)
    gc.collect()
    gc.disable()
    try:
        for _ in range(200):
            ctx.run()
            a = np.asarray(im)
            del a
        rss0 = bh.rss_kib()
        for _ in range(10000):
            ctx.run()
            a = np.asarray(im)
            del a
        rss1 = bh.rss_kib()
        assert gc.collect() == 0
    finally:
        gc.enable()
    assert rss1 - rss0 < 1024, (rss0, rss1)
    assert im.exports == 0 and om.exports == 0


# ---- threads --------------------------------------------------------------------------------
def _run_threads(n, target):
    errors = []

    def wrap(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - collected and re-raised in the test
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.parametrize("flow", ["general", "zerocopy"])
def test_four_threads_on_four_contexts_run_concurrently(track, bh, emu, flow):
    model = bh.model_bytes("tiny_relu")
    ctxs = [track.context(model) for _ in range(4)]
    mems = [_zero_copy(c) for c in ctxs] if flow == "zerocopy" else None
    if mems:
        for pair in mems:
            track.mem(pair[0]), track.mem(pair[1])
    emu.set_npu_time_us(20000)
    emu.reset_counters()
    barrier = threading.Barrier(4)

    def work(i):
        ctx = ctxs[i]
        barrier.wait()
        for k in range(4):
            v = np.float32([[i + k, -1]])
            if mems:
                np.asarray(mems[i][0])[...] = v
                ctx.run()
                assert np.asarray(mems[i][1])[0, 0] == i + k
            else:
                ctx.inputs_set([v])
                ctx.run()
                with ctx.outputs_get(want_float=True) as o:
                    assert np.asarray(o[0])[0, 0] == i + k

    errors = _run_threads(4, work)
    assert not errors, errors
    c = emu.counters()
    assert c["runs"] == 16
    assert c["peak_runs_in_flight"] > 1          # the GIL was released during rknn_run


def test_four_threads_on_one_context_are_serialized(track, bh, emu):
    ctx = track.model("tiny_relu")
    emu.set_npu_time_us(1000)
    emu.reset_counters()

    def work(i):
        for k in range(10):
            ctx.inputs_set([np.float32([[k, -k]])])
            ctx.run()
            with ctx.outputs_get(want_float=True) as o:
                np.asarray(o[0]).copy()
            ctx.query(rknnx.lowlevel.QueryCmd.PERF_RUN)

    errors = _run_threads(4, work)
    assert not errors, errors
    assert emu.counters()["peak_runs_in_flight"] == 1  # one context: one run at a time


def test_close_from_another_thread_waits_for_the_run(track, bh, emu):
    base = bh.live(emu)
    ctx = track.model("tiny_relu")
    im, om = _zero_copy(ctx)
    np.asarray(im)[...] = [[5, -5]]
    emu.set_npu_time_us(200000)
    started = threading.Event()
    results = []

    def runner():
        started.set()
        results.append(ctx.run())

    t = threading.Thread(target=runner)
    t.start()
    started.wait()
    while emu.counters()["runs_in_flight"] == 0:
        pass
    assert emu.counters()["runs_in_flight"] == 1
    with pytest.warns(ResourceWarning):
        ctx.close()                                  # blocks until the run is done
    t.join()
    assert results and ctx.closed and im.closed and om.closed
    assert bh.live(emu) == base


def test_threads_racing_a_close_get_value_errors_not_crashes(track, bh, emu):
    base = bh.live(emu)
    for _ in range(5):
        ctx = Context(bh.model_bytes("tiny_relu"))
        emu.set_npu_time_us(200)
        barrier = threading.Barrier(5)

        def work(i):
            barrier.wait()
            if i == 4:
                while True:
                    try:
                        ctx.close()
                        return
                    except BufferError:
                        pass    # another thread's view at that instant: try again
            for k in range(30):
                try:
                    ctx.inputs_set([np.float32([[k, k]])])
                    ctx.run()
                    with ctx.outputs_get() as o:
                        np.asarray(o[0]).sum()
                except ValueError as e:
                    assert "on closed Context" in str(e)
                    return
                except BufferError:
                    pass        # close() found a live view at that instant

        errors = _run_threads(5, work)
        assert not errors, errors
        ctx.close()
        gc.collect()
    assert bh.live(emu) == base


# ---- misuse: random sequences of calls never crash and never leak -----------------------------
#: more seeds for a longer local hunt: RKNNX_MISUSE_SEEDS=200 pytest -k misuse
MISUSE_SEEDS = int(os.environ.get("RKNNX_MISUSE_SEEDS", "6"))


@pytest.mark.parametrize("seed", range(MISUSE_SEEDS))
def test_random_misuse_never_crashes_or_leaks(emu, bh, seed):
    import warnings

    from rknnx.lowlevel import MemSyncMode, QueryCmd, TensorAttr, TensorFormat

    rng = random.Random(seed)
    model = bh.model_bytes("tiny_int8_add")
    base = bh.live(emu)
    ctxs, mems, views, outs = [], [], [], []
    allowed = (ValueError, TypeError, BufferError, IndexError, RuntimeError, rknnx.RKNNError)

    def pick(seq):
        return seq[rng.randrange(len(seq))] if seq else None

    def random_attr():
        c = pick(ctxs)
        if c is not None and not c.closed and rng.random() < 0.7:
            a = pick(list(c.input_attrs + c.output_attrs))
        else:
            a = TensorAttr(rng.randrange(3), dims=[rng.randrange(0, 9) for _ in range(rng.randrange(6))])
        a.type = rng.choice(list(TensorType))
        a.fmt = rng.choice(list(TensorFormat))
        a.w_stride = rng.choice([0, 3, 8, 17])
        a.h_stride = rng.choice([0, 1, 9])
        a.pass_through = rng.random() < 0.2
        return a

    ops = [
        lambda: ctxs.append(Context(model)),
        lambda: ctxs.append(pick(ctxs).dup()),
        lambda: pick(ctxs).close(),
        lambda: mems.append(pick(ctxs).create_mem(rng.choice([1, 64, 512, 2048]))),
        lambda: mems.append(rknnx.lowlevel.create_mem2(rng.choice([8, 1024]))),
        lambda: pick(mems).close(),
        lambda: views.append(np.asarray(pick(mems))),
        lambda: views.append(np.from_dlpack(pick(mems))),
        lambda: views.append(memoryview(pick(mems))),
        lambda: views.pop(rng.randrange(len(views))),
        lambda: pick(mems).bind(random_attr()),
        lambda: pick(mems).sync(rng.choice(list(MemSyncMode)), context=pick(ctxs)),
        lambda: pick(ctxs).set_io_mem(pick(mems), random_attr()),
        lambda: pick(ctxs).run(),
        lambda: pick(ctxs).inputs_set([np.zeros(a.dims, np.uint8) for a in pick(ctxs).input_attrs]),
        lambda: outs.append(pick(ctxs).outputs_get(want_float=rng.random() < 0.5)),
        lambda: views.append(np.asarray(pick(outs)[0])),
        lambda: pick(outs).release(),
        lambda: pick(ctxs).query(rng.choice(list(QueryCmd)), rng.randrange(-1, 4)),
        lambda: pick(ctxs).set_input_shapes([random_attr(), random_attr()]),
        lambda: pick(ctxs).set_internal_mem(pick(mems)),
        lambda: outs.pop(rng.randrange(len(outs))),
        lambda: mems.pop(rng.randrange(len(mems))),
        lambda: ctxs.pop(rng.randrange(len(ctxs))),
        gc.collect,
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        for _ in range(400):
            try:
                rng.choice(ops)()
            except allowed:
                pass
            except (AttributeError, IndexError, TypeError):
                pass                                   # pick() found an empty list
        views.clear()
        outs.clear()
        mems.clear()
        ctxs.clear()
        gc.collect()
    assert bh.live(emu) == base
