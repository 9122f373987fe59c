"""close() racing other threads: outputs, mems created while closing, a mem synced through
another context, and a runtime switch racing Context(): nothing is left dangling or
stranded.  Probes run in a subprocess, so a crash fails the test instead of pytest."""

from __future__ import annotations


import numpy as np
import pytest

import rknnx

from helpers import probe


def test_close_racing_outputs_get_never_leaves_outputs_dangling(emu, bh):
    import threading
    import time

    model = bh.model_bytes("detector")
    base = bh.live(emu)
    x = np.zeros((1, 640, 640, 3), np.uint8)
    outcomes = set()
    for i in range(40):
        ctx = rknnx.lowlevel.Context(model)
        ctx.inputs_set([x])
        ctx.run()
        res = {}

        def get():
            try:
                res["outs"] = ctx.outputs_get(want_float=True)
            except ValueError as e:
                res["err"] = str(e)

        t = threading.Thread(target=get)
        t.start()
        time.sleep(0.00003 * (i % 20))
        ctx.close()
        t.join()
        assert ctx.closed
        if "err" in res:
            assert res["err"] == "outputs_get on closed Context"
            outcomes.add("refused")
        else:
            # got its outputs before close(): close() released them, views are refused
            assert res["outs"].released, f"iteration {i}: outputs outlived their Context"
            with pytest.raises(BufferError, match="released outputs"):
                memoryview(res["outs"][0])
            outcomes.add("released")
        del res
    assert bh.live(emu) == base


def test_mems_created_while_closing_are_closed_with_the_context(emu, bh):
    import threading
    import time
    import warnings

    model = bh.model_bytes("tiny_relu")
    base = bh.live(emu)
    for i in range(40):
        ctx = rknnx.lowlevel.Context(model)
        made = []
        go = threading.Event()

        def alloc():
            go.set()
            for _ in range(50):
                try:
                    made.append(ctx.create_mem(1 << 16))
                except ValueError as e:
                    assert str(e) == "create_mem on closed Context"
                    return

        t = threading.Thread(target=alloc)
        t.start()
        go.wait()
        time.sleep(0.0002 * (i % 10))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            ctx.close()
        t.join()
        assert all(m.closed for m in made), f"iteration {i}: a mem outlived its Context"
        made.clear()
    assert bh.live(emu) == base

def test_close_never_destroys_a_mem_under_a_sync(track, emu):
    import threading

    ctx = track.model("tiny_relu")
    seen = set()
    for _ in range(20):
        mem = rknnx.lowlevel.create_mem2(1 << 20)             # ALLOC_NO_CONTEXT: no lock of its own
        stop = threading.Event()

        def syncer():
            while not stop.is_set():
                try:
                    mem.sync(context=ctx)
                except ValueError as e:
                    assert str(e) == "sync on closed TensorMem"
                    return

        t = threading.Thread(target=syncer)
        t.start()
        for _ in range(50):
            try:
                mem.close()
            except BufferError as e:
                assert "being synced (rknn_mem_sync) in another thread" in str(e)
                seen.add("refused")
            if mem.closed:
                break
        stop.set()
        t.join()
        mem.close()
        assert mem.closed
    assert "refused" in seen

def test_runtime_switch_never_strands_a_context_in_the_other_library(tmp_path):
    import shutil

    other = tmp_path / "librknnrt.so"
    shutil.copy(rknnx.emulator_path(), other)
    out = probe(f"""
        import time
        from rknnx.emulator.control import EmulatorControl
        p1, p2 = C.emulator_path(), {str(other)!r}
        ctls = [EmulatorControl(p1), EmulatorControl(p2)]
        M = samples.classifier()
        stop = False
        errors, made = [], []
        def creator():
            while not stop:
                try:
                    made.append(C.Context(M))
                    made.append(C.create_mem2(64))
                except Exception as e:
                    errors.append(repr(e))
        def switcher():
            i = 0
            while not stop:
                try:
                    C.load_runtime(p2 if i % 2 else p1)
                    i += 1
                except RuntimeError:
                    pass
                time.sleep(0.0005)
        ts = [threading.Thread(target=creator), threading.Thread(target=switcher)]
        for t in ts:
            t.start()
        t0 = time.time()
        while time.time() - t0 < 2:
            while made:
                try:
                    made.pop().close()
                except Exception as e:
                    errors.append("close " + repr(e))
            time.sleep(0.0005)
        stop = True
        for t in ts:
            t.join()
        for m in made:
            m.close()
        print(errors[:3], [c.counters()["live_contexts"] for c in ctls],
              [c.counters()["live_mems"] for c in ctls], C.live_contexts())
    """)
    assert out.strip() == "[] [0, 0] [0, 0] 0", out
