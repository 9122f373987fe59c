"""The runtime loader: search order, env variable, missing library, missing symbols.

Each case runs in a fresh interpreter, since the loaded runtime is process-wide.
"""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from helpers import DATA, compile_c, run_python

from rknnx import lowlevel
from rknnx import runtime as rknnx_runtime
from rknnx.emulator import _locate
from rknnx.emulator import samples

FUNCTIONS = [f["name"] for f in json.loads((DATA / "rknn_api_v2.json").read_text())["functions"]]


@pytest.fixture(scope="module")
def partial_lib(tmp_path_factory):
    """A library that exports only rknn_init, rknn_destroy and rknn_query."""
    d = tmp_path_factory.mktemp("partial")
    src = d / "partial.c"
    src.write_text(textwrap.dedent("""
        #include "rknn_api.h"
        int rknn_init(rknn_context *c, void *m, uint32_t s, uint32_t f, rknn_init_extend *e)
        { (void)c; (void)m; (void)s; (void)f; (void)e; return RKNN_ERR_MODEL_INVALID; }
        int rknn_destroy(rknn_context c) { (void)c; return 0; }
        int rknn_query(rknn_context c, rknn_query_cmd q, void *i, uint32_t s)
        { (void)c; (void)q; (void)i; (void)s; return RKNN_ERR_CTX_INVALID; }
    """))
    lib = compile_c([src], d / "librknnrt.so", shared=True)
    return lib


@pytest.fixture(scope="module")
def not_a_runtime(tmp_path_factory):
    d = tmp_path_factory.mktemp("other")
    src = d / "other.c"
    src.write_text("int some_function(void) { return 1; }\n")
    return compile_c([src], d / "libother.so", shared=True)


def run(code, **env):
    env.setdefault("RKNNX_RUNTIME", None)
    proc = run_python(textwrap.dedent(code), env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_missing_library_names_every_place_and_what_to_do():
    out = run("""
        import rknnx, rknnx._board
        rknnx._board.emulator_fallback_reason = lambda: None   # this host may be a board
        try:
            rknnx.runtime_info()
        except rknnx.RuntimeNotFoundError as e:
            assert isinstance(e, OSError)
            print(e)
    """, LD_LIBRARY_PATH="")
    assert "librknnrt.so (system loader)" in out
    assert "/usr/lib/librknnrt.so (vendor path)" in out
    assert "install the RKNPU2 runtime" in out
    assert "RKNNX_RUNTIME=emulator" in out


def test_import_does_not_load_the_runtime():
    # importing works on a machine without any runtime; only first use raises
    out = run("import rknnx; print('imported', rknnx.__version__)", RKNNX_RUNTIME="/nonexistent/x.so")
    assert out.startswith("imported")


def test_env_path_is_honoured_and_reported(partial_lib):
    out = run("""
        import rknnx, json
        print(json.dumps(rknnx.runtime_info()))
    """, RKNNX_RUNTIME=str(partial_lib))
    info = json.loads(out)
    assert info["path"] == str(partial_lib) and info["source"] == "RKNNX_RUNTIME"
    assert info["functions"] == ["rknn_init", "rknn_destroy", "rknn_query"]
    assert sorted(info["missing"] + info["functions"]) == sorted(FUNCTIONS)
    assert info["is_emulator"] is False


def test_env_path_that_does_not_exist_is_reported_with_dlerror():
    out = run("""
        import rknnx
        try:
            rknnx.runtime_info()
        except rknnx.RuntimeNotFoundError as e:
            print(e)
    """, RKNNX_RUNTIME="/nonexistent/librknnrt.so")
    assert "/nonexistent/librknnrt.so (RKNNX_RUNTIME): /nonexistent/librknnrt.so: cannot open" in out
    # the env variable replaces the default search: nothing else is tried
    assert "system loader" not in out


def test_system_loader_path_is_searched(partial_lib):
    out = run("""
        import rknnx
        info = rknnx.runtime_info()
        print(info["source"], info["path"])
    """, LD_LIBRARY_PATH=str(partial_lib.parent))
    assert out.strip() == "system loader librknnrt.so"


def test_explicit_load_runtime_wins_over_env(partial_lib, not_a_runtime):
    out = run(f"""
        import rknnx
        info = rknnx.load_runtime({str(partial_lib)!r})
        print(info["source"], info["path"])
    """, RKNNX_RUNTIME="/nonexistent/librknnrt.so")
    assert out.strip() == f"load_runtime() {partial_lib}"


def test_a_library_without_rknn_init_is_not_a_runtime(not_a_runtime, partial_lib):
    out = run(f"""
        import rknnx
        try:
            rknnx.load_runtime({str(not_a_runtime)!r})
        except rknnx.RuntimeNotFoundError as e:
            print(e)
        # a failed switch keeps nothing half-loaded; a good one still works
        print(rknnx.load_runtime({str(partial_lib)!r})["path"])
    """)
    assert "does not export rknn_init/rknn_destroy" in out
    assert out.strip().endswith(str(partial_lib))


def test_missing_symbol_raises_not_supported_naming_path_and_symbol(partial_lib):
    out = run(f"""
        import rknnx
        rknnx.load_runtime({str(partial_lib)!r})
        rknnx._core._require("rknn_query")          # present: no error
        try:
            rknnx._core._require("rknn_run")
        except rknnx.NotSupportedError as e:
            assert isinstance(e, NotImplementedError) and e.func == "rknn_run"
            print(e)
        try:
            rknnx._core._require("rknn_no_such_thing")
        except ValueError as e:
            print("ValueError", e)
    """)
    assert f"librknnrt at {partial_lib} lacks rknn_run" in out
    assert "ValueError 'rknn_no_such_thing' is not an RKNN API function" in out


def test_emulator_word_loads_the_bundled_emulator_with_every_function():
    out = run("""
        import rknnx, json, os
        info = rknnx.runtime_info()
        assert info["path"] == rknnx.emulator_path(), info
        assert os.path.exists(info["path"])
        print(json.dumps(info))
    """, RKNNX_RUNTIME="emulator")
    info = json.loads(out)
    assert info["is_emulator"] is True
    assert info["missing"] == []
    assert sorted(info["functions"]) == sorted(FUNCTIONS)


def test_runtime_info_with_a_model_reports_versions_and_platform():
    out = run("""
        import json, rknnx
        from rknnx.emulator import samples
        info = rknnx.runtime_info()
        assert "sdk_version" not in info and info["platform"] == "RK3566"
        info = rknnx.runtime_info(samples.tiny_relu(target="RK3566"))
        assert rknnx._core.live_contexts() == 0      # the probe context is closed again
        try:
            rknnx.runtime_info(b"not a model")
        except rknnx.errors.ModelInvalidError as e:
            print("bad model:", e.func)
        print(json.dumps(info))
    """, RKNNX_RUNTIME="emulator", RKNN_EMU_PLATFORM="RK3566")
    first, second = out.strip().splitlines()
    assert first == "bad model: rknn_init"
    info = json.loads(second)
    assert info["sdk_version"].startswith("2.5.0") and "emulator" in info["sdk_version"]
    assert info["driver_version"] == "0.9.8"            # a board's "X.Y.Z" (docs/abi-notes.md)
    assert info["platform"] == "RK3566"


# ---- what the binding's runtime_info() and emulator_path() describe ----------------------------
# The binding describes the loaded library only and locates the emulator through the one
# locator of rknnx.emulator; opening a model to read versions is rknnx.runtime's job.
# (These run in this process, on the emulator the conftest loaded, not in a fresh one.)

def test_binding_runtime_info_takes_no_model(general_platform):
    with pytest.raises(TypeError):
        lowlevel.runtime_info(samples.tiny_relu(target=general_platform))
    info = lowlevel.runtime_info()
    assert {"path", "source", "is_emulator", "functions", "missing"} <= set(info)
    assert "sdk_version" not in info and "driver_version" not in info


def test_runtime_info_with_a_model_adds_the_versions_and_closes_its_context(general_platform):
    before = lowlevel.live_contexts()
    info = rknnx_runtime.runtime_info(samples.tiny_relu(target=general_platform))
    assert isinstance(info["sdk_version"], str) and info["sdk_version"]
    assert isinstance(info["driver_version"], str) and info["driver_version"]
    assert lowlevel.live_contexts() == before


def test_emulator_path_is_the_one_locator(runtime):
    assert lowlevel.emulator_path() == _locate.bundled_library()
    assert rknnx_runtime.emulator_path() == _locate.bundled_library()
