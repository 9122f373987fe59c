"""Fixtures shared by the test layers that load the emulator through rknnx (tests/binding,
tests/package, tests/facade).

They run the real loader against the bundled emulator (no stubs), drive the emulator's
controls (platform, simulated NPU time, error injection, counters) through
``rknnx.emulator.control``, and create *tracked* contexts and mems: everything a test
makes through ``track`` is closed at teardown (mems first), after which the emulator's
live counters must be back where they were before the test.  pytest's
``filterwarnings = error`` turns a ResourceWarning from a leaked mem into a failure.

The emulator's own tests (tests/emulator) drive the library with ctypes and do not use them.
Plain helper functions (models, counters, inputs) live in helpers.py.
"""

from __future__ import annotations

import gc
import os
import types

import pytest

from helpers import (EMULATOR_ITSELF, GENERAL_PLATFORMS, NEEDS_EMULATOR, PLATFORMS, live,
                     model_bytes, random_input, rss_kib, skip_on_vendor_runtime, vendor_runtime)

def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs(*functions): the test calls these librknnrt functions, which "
                   "older runtimes lack (the CI step on emulator-1.5.2 skips it there, saying "
                   "which; the facade's answer to their absence is tested in "
                   "tests/facade/test_runtimes.py)")


def pytest_collection_modifyitems(config, items):
    """On a vendor runtime (RKNNX_RUNTIME naming one), the emulator's own tests skip."""
    path = vendor_runtime()
    if path is None:
        return
    mark = pytest.mark.skip(reason=EMULATOR_ITSELF.format(path))
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "emulator") + os.sep
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(mark)


def pytest_runtest_setup(item):
    needs = [f for m in item.iter_markers("needs") for f in m.args]
    if needs:
        import rknnx

        info = rknnx.lowlevel.runtime_info()
        missing = sorted(set(needs) & set(info["missing"]))
        if missing:
            pytest.skip(f"librknnrt {info.get('version') or ''} at {info['path']} lacks "
                        f"{', '.join(missing)}")


@pytest.fixture(scope="session")
def runtime():
    """The runtime RKNNX_RUNTIME names, loaded through the real loader
    (rknnx.load_runtime): a vendor librknnrt (scripts/test-vendor-runtime), or the emulator
    playing that version (``emulator-1.5.2`` in the old-runtime CI step); else the
    emulator."""
    import rknnx

    word = os.environ.get("RKNNX_RUNTIME", "")
    if vendor_runtime() is not None:
        return rknnx.load_runtime(vendor_runtime())
    return rknnx.load_runtime(word if word.startswith("emulator") else "emulator")


@pytest.fixture(scope="session")
def emu_ctl(runtime):
    """The emulator's controls (ctypes on the library the binding loaded); a test using
    them skips on a vendor runtime, saying so."""
    from rknnx.emulator.control import EmulatorControl

    skip_on_vendor_runtime(NEEDS_EMULATOR)
    return EmulatorControl(runtime["path"])


def _reset(ctl):
    ctl.set_platform(None)
    ctl.set_npu_time_us(0)
    ctl.clear_injections()
    ctl.set_log_level(None)
    ctl.set_runtime_version(None)


@pytest.fixture
def emu(emu_ctl):
    """The controls, reset around the test (platform, NPU time, injections, log level)."""
    _reset(emu_ctl)
    yield emu_ctl
    _reset(emu_ctl)


class Tracker:
    """Creates contexts and mems and remembers them, to close them at teardown."""

    def __init__(self, ctl):
        self.ctl = ctl
        self.contexts = []
        self.mems = []

    def context(self, model, flags=0, **kw):
        from rknnx.lowlevel import Context

        ctx = Context(model, flags, **kw)
        self.contexts.append(ctx)
        return ctx

    def model(self, name, platform="RK3588", flags=0, **kw):
        """A Context on sample `name` built for `platform`, which becomes the personality."""
        self.ctl.set_platform(platform)
        return self.context(model_bytes(name, platform), flags, **kw)

    def matmul(self, *args, platform=None, **kw):
        """A MatmulContext (on `platform`'s personality when given), closed at teardown."""
        from rknnx.lowlevel import MatmulContext

        if platform is not None:
            self.ctl.set_platform(platform)
        mm = MatmulContext(*args, **kw)
        self.contexts.append(mm)
        return mm

    def mem(self, mem):
        self.mems.append(mem)
        return mem

    def close_all(self):
        gc.collect()
        errors = []
        for m in reversed(self.mems):
            try:
                m.close()
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)
        for c in reversed(self.contexts):
            try:
                c.close()
            except Exception as e:  # pragma: no cover
                errors.append(e)
        self.mems.clear()
        self.contexts.clear()
        gc.collect()
        return errors


@pytest.fixture
def track(emu):
    """A Tracker; at teardown everything is closed and the live counters must be back."""
    before = live(emu)
    t = Tracker(emu)
    yield t
    errors = t.close_all()
    assert not errors, errors
    assert live(emu) == before, "emulator live counters changed: leaked contexts/mems/outputs"


@pytest.fixture(params=PLATFORMS)
def platform(request, emu):
    """Each personality in turn (selected in the emulator)."""
    emu.set_platform(request.param)
    return request.param


@pytest.fixture(params=GENERAL_PLATFORMS)
def general_platform(request, emu):
    """Each personality that has the general API."""
    emu.set_platform(request.param)
    return request.param


@pytest.fixture(scope="session")
def bh():
    """The binding tests' helper functions and constants, as one namespace."""
    return types.SimpleNamespace(model_bytes=model_bytes, random_input=random_input,
                                 rss_kib=rss_kib, live=live, PLATFORMS=PLATFORMS,
                                 GENERAL_PLATFORMS=GENERAL_PLATFORMS)
