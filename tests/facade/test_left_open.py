"""A session dropped unclosed while a numpy array made from its memory is alive keeps its
context open (the array holds the memory, the memory its context).  Once that array is
deleted, as the Model's refusal says to, the Model's close closes what the session left:
with no garbage collection in between (the session's memory and context refer to each
other, a cycle only the collector would break), the close neither refuses (RV1106 and
librknnrt 1.6.0 with custom operators, where the context borrows the model's weights) nor
leaves the context open (elsewhere); the emulator's live counters end at their
baseline.  And with ResourceWarning turned into an error (``-W error``), an object
collected unclosed is closed all the same."""

from __future__ import annotations

import gc
import warnings

import pytest

import rknnx
from helpers import PLATFORMS, live, model_bytes, run_python


@pytest.fixture
def no_gc():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_close_closes_what_a_dropped_session_left_once_its_views_are_gone(
        emu, platform, no_gc):
    emu.set_platform(platform)
    base = live(emu)
    m = rknnx.Model(model_bytes("multi_io", platform))
    s = m.zero_copy()
    view = s.outputs[1][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        del s                            # its close refused: the view is alive
    if platform == "RV1106":             # the context borrows the model's weights
        with pytest.raises(BufferError, match="was dropped without close"):
            m.close()
        assert not m.closed
    del view
    m.close()                            # before: BufferError again on RV1106 (until a
    assert m.closed                      # gc.collect()), the context left open elsewhere
    assert live(emu) == base


CUSTOM = """
import gc, sys, warnings, numpy as np, rknnx
from rknnx.emulator import samples
rknnx.load_runtime("emulator")
x = np.random.default_rng(5).standard_normal((1, 16)).astype(np.float32)

@rknnx.custom_op("cstSigmoid")
def sigmoid(inputs, outputs):
    np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])

gc.disable()
m = rknnx.Model(samples.custom_op_model())
m.register_custom_ops(sigmoid)
want = m.run(x)[0]
s = m.zero_copy()
np.testing.assert_allclose(s.run_arrays(x)[0], want)
view = s.outputs[0]
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ResourceWarning)
    del s
try:
    m.close()
except BufferError as e:
    print("refused:", "was dropped without close" in str(e))
np.testing.assert_allclose(m.run(x)[0], want)
del view
m.close()
print("closed", m.closed)
"""


@pytest.mark.needs("rknn_register_custom_ops", "rknn_dup_context")
def test_on_1_6_0_with_custom_ops_the_close_after_the_view_is_deleted_closes():
    p = run_python(CUSTOM, env={"RKNN_EMU_RUNTIME_VERSION": "1.6.0", "RKNN_EMU_PLATFORM":
                                "RK3588", "RKNNX_RUNTIME": None}, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.splitlines() == ["refused: True", "closed True"], p.stdout


DROPPED = """
import gc, numpy as np, rknnx
from rknnx.emulator import samples
rknnx.load_runtime("emulator")
gc.disable()
m = rknnx.Model(samples.ALL["tiny_relu"](target="{platform}"))
x = np.array([[-1.5, 2.25]], np.float32)
s = m.zero_copy()
p = rknnx.Pool(m, 2)
p.submit(x).result(10)
del s, p                                 # each warns, as an error: "Exception ignored"
m.run(x)
m.close()                                # before: refused on RV1106 (weights lent)
print("closed", m.closed)
"""


@pytest.mark.parametrize("platform", PLATFORMS)
def test_objects_collected_unclosed_under_w_error_are_closed_all_the_same(platform):
    p = run_python(DROPPED.format(platform=platform),
                   env={"RKNNX_RUNTIME": None, "RKNN_EMU_PLATFORM": platform,
                        "PYTHONWARNINGS": "error"}, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.splitlines() == ["closed True"], (p.stdout, p.stderr[-3000:])
    # the warnings were said (as errors, ignored in the finalizers)
    assert "ResourceWarning: unclosed rknnx.Pool" in p.stderr
    assert "ResourceWarning: unclosed <rknnx.ZeroCopySession" in p.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_model_collected_unclosed_closes_what_a_dropped_session_left(emu, platform, no_gc):
    # the view deleted before the Model is dropped: reference counting alone frees all
    # (a view that outlives the Model leaves the context to the garbage collector)
    emu.set_platform(platform)
    base = live(emu)
    m = rknnx.Model(model_bytes("multi_io", platform))
    s = m.zero_copy()
    view = s.outputs[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        del s
        del view
        assert live(emu) != base
        del m                            # before: the session's context stayed open
    assert live(emu) == base


AT_EXIT = r"""
import sys
import numpy as np
import rknnx
import rknnx._lifetime, rknnx.model, rknnx.pool, rknnx.session
from rknnx.emulator import samples

rknnx.load_runtime("emulator")


class Clearer:
    # collected in the interpreter's last collection with the objects below, before them
    # (older in the collector's list): it sets the globals of the facade's modules named
    # in argv to None, as the interpreter's teardown does before it collects (3.13t
    # collected rknnx objects after that)
    def __del__(self, _mods=[sys.modules[n] for n in sys.argv[1].split(",")]):
        for mod in _mods:
            d = vars(mod)
            for k in list(d):
                if k != "__builtins__":
                    d[k] = None


c = Clearer()
c.me = c
m = rknnx.Model(samples.tiny_relu())
s = m.zero_copy()
p = rknnx.Pool(m, 2)
s.write(0, np.ones((1, 2), np.float32))
s.run()
p.submit(np.ones((1, 2), np.float32)).result(10)
held = [m, s, p]
held.append(held)                        # a cycle: left to the last collection
del c, m, s, p, held
print("left open")
"""


@pytest.mark.parametrize("cleared", ["rknnx._lifetime,rknnx.session,rknnx.model,rknnx.pool",
                                     "rknnx._lifetime", "rknnx.session"])
@pytest.mark.parametrize("warn", [None, "always::ResourceWarning"])
def test_objects_collected_at_exit_after_their_modules_globals_say_nothing_else(cleared,
                                                                                warn):
    proc = run_python(AT_EXIT, args=(cleared,), env={"PYTHONWARNINGS": warn}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "left open\n"
    lines = proc.stderr.splitlines()
    if warn is None:
        assert lines == []               # (ResourceWarning is ignored by default)
    else:
        # the warnings (where the warnings machinery still works) and nothing else: no
        # "Exception ignored in ... __del__", no TypeError or AttributeError
        assert [line for line in lines if "ResourceWarning" not in line
                and not line.startswith("  ")] == [], proc.stderr
        assert all("ResourceWarning: unclosed " in line or "tracemalloc" in line
                   or line.startswith("  ") for line in lines), proc.stderr
