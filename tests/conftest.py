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
                     model_bytes, random_input, rss_kib, skip_on_vendor_runtime, vendor_models,
                     vendor_runtime)

@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Parallel where pytest-xdist is loaded: what ``-n auto --dist loadgroup`` asks (one
    worker per core; a module that builds something once stays on one worker), unless -n
    was given (``-n 0``: one process).  pyproject.toml's addopts name no xdist option, since
    a pytest without xdist (``pip install .`` does not bring it; a board's Debian pytest)
    stops at an option it does not know.  Runs before xdist's own hook, which reads these."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return None                      # (a worker: its controller chose)
    if config.option.numprocesses is None:
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "loadgroup"
    return None


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs(*functions): the test calls these librknnrt functions, which "
                   "older runtimes lack (the CI step on emulator-1.5.2 skips it there, saying "
                   "which; the facade's answer to their absence is tested in "
                   "tests/facade/test_runtimes.py)")
    # pytest-xdist registers it; a pytest without xdist (a board's Debian pytest under
    # scripts/test-wheel-arm) must know it too, since filterwarnings=error
    config.addinivalue_line(
        "markers", "xdist_group(name): tests kept on one pytest-xdist worker (--dist loadgroup)")
    config.addinivalue_line(
        "markers", "exhaustive: a sweep beyond what the default run covers (every vendor "
                   "file through every option, fuzzing under sanitizers); deselected unless "
                   "-m is given: `pytest -m exhaustive` runs these alone, as CI does")


# ---- what the default run leaves to `-m exhaustive` ------------------------------------------
#: (module path, test function or a fixture it uses, or "*") -> why it is exhaustive.  A
#: sweep that SWEEPS names keeps its representative cases in the default run: only the cases
#: beyond those are exhaustive.
EXHAUSTIVE = {
    ("tests/emulator/test_emu_fuzz.py", "*"):
        "hypothesis fuzzing of the emulator's model parser under ASan/UBSan",
    ("tests/package/test_modelfile_v1004.py", "test_fuzz_under_sanitizers"):
        "the 0x1004 reader fuzzed under ASan/UBSan, file by file",
    ("tests/package/test_modelfile_c.py", "test_reader_never_reads_outside_the_file"):
        "the reader on 1,500 mutations of each vendor file, with and without ASan/UBSan",
    ("tests/emulator/test_vendor_judge.py", "judged"):
        "compare.py over every recorded (runtime, vendor file) pair",
    ("tests/vision/test_letterbox_bounds.py", "*"):
        "every YUV letterbox path at frames and outputs ending at a guard page (about a minute)",
}

#: module path -> the parameter of its tests that sweeps the vendor files: in the default
#: run only the representative files (representative_files()) are kept
SWEEPS = {
    "tests/facade/test_vendor_layouts.py": "path",
    "tests/package/test_modelfile_v1004.py": "path",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the exhaustive cases; deselect them unless -m is given; and keep the tests of a
    module that builds something once for all its tests (a fixture of module or session
    scope defined in the test module: a compiled harness, the judge's run, a server) on
    one pytest-xdist worker (``--dist loadgroup``), so it is built once."""
    _skip_emulator_tests_on_a_vendor_runtime(items)
    keep = _representative_names() if SWEEPS else set()
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        name = getattr(item, "originalname", item.name)
        if (path, name) in EXHAUSTIVE or (path, "*") in EXHAUSTIVE or any(
                (path, f) in EXHAUSTIVE for f in getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.exhaustive)
        elif path in SWEEPS and keep is not None:
            callspec = getattr(item, "callspec", None)
            value = callspec.params.get(SWEEPS[path]) if callspec else None
            stem = getattr(value, "stem", None)
            if stem is not None and stem not in keep:
                item.add_marker(pytest.mark.exhaustive)
        if _builds_once(item):
            item.add_marker(pytest.mark.xdist_group(path))
    if not config.getoption("markexpr"):
        chosen = [i for i in items if i.get_closest_marker("exhaustive") is None]
        if len(chosen) < len(items):
            config.hook.pytest_deselected(items=[i for i in items
                                                 if i.get_closest_marker("exhaustive")])
            items[:] = chosen


def _builds_once(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for defs in info.name2fixturedefs.values():
        for d in defs:
            if d.scope != "function" and d.baseid.endswith(".py"):
                return True
    return False


def _representative_names():
    """The stems of representative_files(), or None when they cannot be told apart."""
    try:
        return {p.stem for p in representative_files()}
    except Exception:                    # pragma: no cover - a file no reader reads
        return None


def representative_files():
    """The vendor files the default run sweeps: for each chip and container version the
    files that, together, show every tensor type and native layout that chip gives, a
    dynamic-shape file and one with custom operators (a greedy cover: the file that adds
    most, the smaller of equals; a file rknnx's reader refuses is kept, as its own case).
    `-m exhaustive` runs the rest."""
    from rknnx import modelfile

    files = vendor_models()
    feats = {}
    for p in files:
        try:
            mf = modelfile.read(p)
        except Exception:                # the reader refuses it: a case of its own
            feats[p] = {("file", p.name)}
            continue
        c = (mf.chip, mf.container.version)
        f = {("file",) + c}
        if mf.dynamic:
            f.add(("dynamic",) + c)
        if mf.custom_ops:
            f.add(("custom",) + c)
        for role, tensors in (("in", mf.file_inputs), ("out", mf.file_outputs)):
            for t in tensors:
                f.add((role,) + c + (t.npu_dtype, t.native_layout, len(t.shape)))
        feats[p] = f
    left = set().union(*feats.values()) if feats else set()
    chosen = []
    while left:
        best = max(files, key=lambda p: (len(feats[p] & left), -p.stat().st_size, p.name))
        chosen.append(best)
        left -= feats[best]
    return sorted(chosen)


def pytest_collection_finish(session):
    """Freeze what collection made (the modules, their tables, pytest's and hypothesis's
    objects): the garbage collector no longer walks it, so each gc.collect() of a test
    (the fixtures' leak checks make thousands) walks only what tests made since.  Garbage
    is collected first, so nothing collectable is frozen."""
    gc.collect()
    gc.freeze()


def _skip_emulator_tests_on_a_vendor_runtime(items):
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
