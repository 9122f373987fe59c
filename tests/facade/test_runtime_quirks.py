"""The vendor runtimes' crashes that rknnx's own call patterns would set off, and how the
facade steps around them (docs/abi-notes.md, "Runtime quirks"):

- librknnrt 1.6.0: once a ``rknn_dup_context`` copy of a context is destroyed, a
  ``rknn_run`` of that context with custom operators segfaults, whenever they were
  registered; a Model whose file uses custom operators (or that registered some) makes its
  sessions and Pool workers with ``RKNN_FLAG_SHARE_WEIGHT_MEM`` there instead;
- librknnrt 1.4.0: after ``RKNN_QUERY_MEM_SIZE`` on a context, its second copy segfaults;
  a Model asks MEM_SIZE there at the first use of ``mem_size``, on a context of its own.

The emulator plays each version's crash (``rknn_emu_set_runtime_version``, env
``RKNN_EMU_RUNTIME_VERSION``) as an E line and ``abort()``, so every call pattern that may
set one off runs in a subprocess: first the bare pattern, which must die (the emulator
has the quirk), then the facade's calls, which must not."""

from __future__ import annotations

import signal

import numpy as np
import pytest

from rknnx.lowlevel import QueryCmd

from helpers import run_python

pytestmark = pytest.mark.needs("rknn_register_custom_ops", "rknn_dup_context")

PRELUDE = """
import numpy as np, rknnx
from rknnx import lowlevel as ll
from rknnx.emulator import samples
rknnx.load_runtime("emulator")
x = np.random.default_rng(5).standard_normal((1, 16)).astype(np.float32)

@rknnx.custom_op("cstSigmoid")
def sigmoid(inputs, outputs):
    np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])

def general(ctx):
    ctx.inputs_set([x])
    ctx.run()
    with ctx.outputs_get(want_float=True) as outs:
        return np.asarray(outs[0]).copy()
"""

CRASH = "emulated librknnrt {} crash"


def play(version, code):
    """Run PRELUDE + `code` in a subprocess whose emulator plays librknnrt `version`."""
    return run_python(PRELUDE + code, env={"RKNN_EMU_RUNTIME_VERSION": version,
                                           "RKNN_EMU_PLATFORM": "RK3588",
                                           "RKNNX_RUNTIME": None})


def died(p, version):
    return p.returncode == -signal.SIGABRT and CRASH.format(version) in p.stderr


# -- the emulator plays the version and its quirks -------------------------------------------

def test_the_played_version_is_what_sdk_version_answers(emu, track):
    emu.set_runtime_version("1.6.0")
    assert emu.runtime_version == "1.6.0"
    a = track.model("tiny_relu")
    emu.set_runtime_version("")                  # the library's own, for contexts made now
    b = track.model("tiny_relu")
    copy = track.contexts.append(a.dup()) or track.contexts[-1]
    assert a.query(QueryCmd.SDK_VERSION).api_version.startswith("1.6.0 (")
    assert copy.query(QueryCmd.SDK_VERSION).api_version.startswith("1.6.0 (")   # its source's
    assert not b.query(QueryCmd.SDK_VERSION).api_version.startswith("1.6.0")
    with pytest.raises(ValueError, match=r"1\.4\.0 or 1\.6\.0 .*got '1\.5\.2'"):
        emu.set_runtime_version("1.5.2")
    emu.set_runtime_version(None)


DUP_CUSTOM = """
a = ll.Context(samples.custom_op_model())
rknnx.custom.register(a, [sigmoid])
first = general(a)
b = a.dup()
rknnx.custom.register(b, [sigmoid])
assert np.array_equal(general(b), first)
b.close()
print("copy closed", flush=True)
general(a)
print("ran", flush=True)
a.close()
"""


def test_1_6_0_a_run_after_a_copy_with_custom_ops_was_destroyed_aborts():
    p = play("1.6.0", DUP_CUSTOM)
    assert died(p, "1.6.0"), (p.returncode, p.stderr[-2000:])
    assert "copy closed" in p.stdout and "ran" not in p.stdout
    assert "rknn_run: emulated librknnrt 1.6.0 crash: a run of a context with custom " \
           "operators once a rknn_dup_context copy of it was destroyed" in p.stderr


def test_1_6_0_a_copy_destroyed_before_the_registration_still_breaks_the_runs():
    # librknnrt 1.6.0 under the NPU driver's stand-in, dual_residual_custom RK3588: dup,
    # destroy the copy, register on the source, run: SIGSEGV (and so with the copy made
    # before the registration, or never run)
    p = play("1.6.0", """
a = ll.Context(samples.custom_op_model())
a.dup().close()
rknnx.custom.register(a, [sigmoid])
print("registered", flush=True)
general(a)
print("ran", flush=True)
""")
    assert died(p, "1.6.0"), (p.returncode, p.stderr[-2000:])
    assert "registered" in p.stdout and "ran" not in p.stdout


@pytest.mark.parametrize("version", ["", "1.4.0"])
def test_other_versions_run_after_the_copy_was_destroyed(version):
    p = play(version, DUP_CUSTOM)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "ran" in p.stdout


MEM_SIZE_DUP = """
a = ll.Context(samples.tiny_relu())
a.query(ll.QueryCmd.MEM_SIZE)
a.dup().close()
print("first copy", flush=True)
a.dup().close()
print("second copy", flush=True)
a.close()
"""


def test_1_4_0_a_second_copy_after_mem_size_aborts():
    p = play("1.4.0", MEM_SIZE_DUP)
    assert died(p, "1.4.0"), (p.returncode, p.stderr[-2000:])
    assert "first copy" in p.stdout and "second copy" not in p.stdout
    assert "rknn_dup_context: emulated librknnrt 1.4.0 crash: a second copy of a context " \
           "that was asked RKNN_QUERY_MEM_SIZE" in p.stderr


@pytest.mark.parametrize("version", ["", "1.6.0"])
def test_other_versions_copy_after_mem_size(version):
    p = play(version, MEM_SIZE_DUP)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "second copy" in p.stdout


# -- the facade steps around them -------------------------------------------------------------

FACADE_CUSTOM = """
m = rknnx.Model(samples.custom_op_model())
m.register_custom_ops(sigmoid)
want = m.run(x)[0]
for k in range(2):
    with m.zero_copy() as s:
        s.inputs[0][...] = x
        s.run()
        assert np.array_equal(s.outputs[0], want)
    assert np.array_equal(m.run(x)[0], want)
with rknnx.Pool(m, workers=2) as pool:
    got = [f.result()[0] for f in [pool.submit(x) for _ in range(4)]]
assert all(np.array_equal(g, want) for g in got)
assert np.array_equal(m.run(x)[0], want)
with m.new_context() as c:
    assert np.array_equal(general(c), want)
assert np.array_equal(m.run(x)[0], want)
print("version", m.sdk_version.split()[0], "ok", flush=True)
m.close()
"""


@pytest.mark.parametrize("version", ["1.6.0", ""])
def test_a_session_opened_before_the_registration_breaks_nothing(version):
    p = play(version, """
m = rknnx.Model(samples.custom_op_model())
with m.zero_copy() as s:
    pass
m.register_custom_ops(sigmoid)
want = m.run(x)[0]
with rknnx.Pool(m, workers=2) as pool:
    assert np.array_equal(pool.submit(x).result()[0], want)
assert np.array_equal(m.run(x)[0], want)
print("ok", flush=True)
m.close()
""")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ok" in p.stdout


@pytest.mark.parametrize("version", ["1.6.0", ""])
def test_a_model_with_custom_ops_runs_after_its_sessions_and_pools_close(version):
    # m.run -> a session -> m.run is the sequence that kills a process on 1.6.0 (issue
    # pattern): the facade's contexts share the weights through rknn_init there
    p = play(version, FACADE_CUSTOM)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"version {version or '2.5.0'} ok" in p.stdout


FACADE_MEM_SIZE = """
m = rknnx.Model(samples.tiny_relu())
shape = m.inputs[0].shape
xs = (np.arange(int(np.prod(shape))) % 7 - 3).astype(np.float32).reshape(shape)
want = m.run(xs)[0]
ms = m.mem_size
assert ms is not None and ms.total_weight_size >= 0, ms
for k in range(3):
    with m.zero_copy() as s:
        assert np.array_equal(s.run_arrays(xs)[0], want)
with rknnx.Pool(m, workers=3) as pool:
    assert all(np.array_equal(f.result()[0], want) for f in [pool.submit(xs) for _ in range(6)])
assert m.mem_size is ms and not m.notes, m.notes
print("version", m.sdk_version.split()[0], "ok", ms.total_dma_allocated_size, flush=True)
m.close()
"""


@pytest.mark.parametrize("version", ["1.4.0", ""])
def test_a_model_asked_mem_size_opens_sessions_and_pools(version):
    p = play(version, FACADE_MEM_SIZE)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"version {version or '2.5.0'} ok" in p.stdout


def test_mem_size_on_1_4_0_is_the_same_answer_asked_later(emu):
    # asked at once elsewhere, at the first use on 1.4.0 (a context of its own): one answer
    import rknnx
    from rknnx.emulator import samples

    with rknnx.Model(samples.tiny_relu()) as now:
        eager = now.mem_size
    emu.set_runtime_version("1.4.0")
    try:
        with rknnx.Model(samples.tiny_relu()) as later:
            assert later.sdk_version.startswith("1.4.0 (")
            before = emu.counters()["contexts_created"]
            lazy = later.mem_size
            assert emu.counters()["contexts_created"] == before + 1   # its own context
            assert later.mem_size is lazy                              # asked once
    finally:
        emu.set_runtime_version(None)
    assert lazy == eager


def test_a_file_with_custom_ops_on_a_runtime_without_them_is_refused_before_init():
    # librknnrt 1.5.2 aborts the process in rknn_init of the vendor's dual_residual_custom
    # ("unsupport cstDualResidual op in current", recorded as a crash): rknnx refuses it
    # first, on a runtime without rknn_register_custom_ops (the emulator playing 1.5.2)
    from helpers import NO_VENDOR_DATA, RKNN_MODELS

    path = next(RKNN_MODELS.rglob("*RK3588__dual_residual_custom.rknn"), None) \
        if RKNN_MODELS is not None else None
    if path is None:
        pytest.skip(NO_VENDOR_DATA)
    p = run_python(f"""
import rknnx
from rknnx.emulator.control import EmulatorControl
rknnx.load_runtime("emulator-1.5.2")
ctl = EmulatorControl(rknnx.runtime_info()["path"])
try:
    rknnx.Model({str(path)!r})
except rknnx.NotSupportedError as e:
    print("refused:", e, "| created", ctl.counters()["contexts_created"])
""", env={"RKNNX_RUNTIME": None, "RKNN_EMU_PLATFORM": "RK3588"})
    assert p.returncode == 0, p.stderr[-2000:]
    assert "uses custom operators (cstDualResidual)" in p.stdout
    assert "has none (no rknn_register_custom_ops" in p.stdout
    assert p.stdout.strip().endswith("| created 0"), p.stdout      # rknn_init never called


def test_mem_size_on_1_4_0_is_answered_after_the_close_and_while_it_runs(emu):
    # elsewhere the answer is asked at once and kept: a closed Model gives it, and so does
    # one closing in another thread; on 1.4.0 too (before: ValueError "mem_size on closed
    # Model" there only)
    import threading

    import rknnx
    from rknnx.emulator import samples

    from helpers import live

    with rknnx.Model(samples.tiny_relu()) as now:
        eager = now.mem_size
    base = live(emu)
    emu.set_runtime_version("1.4.0")
    try:
        closed = rknnx.Model(samples.tiny_relu())
        closed.close()
        assert closed.mem_size == eager
        for _ in range(5):
            m = rknnx.Model(samples.tiny_relu())
            pool = rknnx.Pool(m, 2)
            got: list = []
            t = threading.Thread(target=lambda: got.append(m.mem_size))
            t.start()
            m.close()
            t.join(30)
            assert got == [eager] and m.mem_size == eager and pool.closed
    finally:
        emu.set_runtime_version(None)
    assert live(emu) == base
