"""rknnx on a free-threaded CPython (3.13t, 3.14t): the extensions declare that they run
without the GIL, so importing rknnx leaves it off, and the threaded stress
(tests/stress/threads.py) holds on every build, in a short form here.

The import test needs a free-threaded interpreter (it skips, saying so, on a GIL build);
scripts/test-wheels runs this file on the cached 3.13t of scripts/build-python (docs/wheels.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
STRESS = Path(__file__).resolve().parents[1] / "stress" / "threads.py"


def _env_without_gil_setting():
    env = dict(os.environ)
    env.pop("PYTHON_GIL", None)
    return env


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded CPython (3.13t/3.14t): "
                    "this one is a GIL build")
def test_import_leaves_the_gil_off_with_runtime_warnings_as_errors():
    # An extension without Py_MOD_GIL_NOT_USED would turn the GIL on at its import, with a
    # RuntimeWarning ("The global interpreter lock (GIL) has been enabled to load module
    # ..."), an error here.
    code = ("import sys, rknnx, rknnx.vision, rknnx.lowlevel, rknnx._core, rknnx._kernels, "
            "rknnx._rknnfile; print(sys._is_gil_enabled())")
    p = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code],
                       env=_env_without_gil_setting(), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False", p.stdout + p.stderr


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded CPython (3.13t/3.14t): "
                    "this one is a GIL build")
def test_an_undeclared_module_would_have_turned_the_gil_on(tmp_path):
    # the import test above can fail: a module of no Py_mod_gil slot does re-enable it
    (tmp_path / "undeclared.c").write_text(
        '#include <Python.h>\n'
        'static struct PyModuleDef d = {PyModuleDef_HEAD_INIT, "undeclared", 0, -1, 0};\n'
        'PyMODINIT_FUNC PyInit_undeclared(void) { return PyModule_Create(&d); }\n')
    so = tmp_path / ("undeclared" + sysconfig.get_config_var("EXT_SUFFIX"))
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-shared", "-fPIC", "-I", sysconfig.get_paths()["include"],
                        str(tmp_path / "undeclared.c"), "-o", str(so)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip(f"no C compiler for the counter-example: {r.stderr[-300:]}")
    p = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c",
                        "import undeclared"], cwd=tmp_path, env=_env_without_gil_setting(),
                       capture_output=True, text=True)
    assert p.returncode != 0
    assert "GIL" in p.stderr and "RuntimeWarning" in p.stderr, p.stderr


def test_the_threaded_stress_holds_in_short(tmp_path):
    # 4 threads: sessions, a shared Pool, views racing closes, a shared Detector; every
    # result checked against numpy or the single-threaded answer, counters back at start
    out = tmp_path / "stress.json"
    env = dict(os.environ, RKNNX_RUNTIME=os.environ.get("RKNNX_RUNTIME", "emulator"))
    if FREE_THREADED:
        env["PYTHON_GIL"] = "0"
    p = subprocess.run([sys.executable, str(STRESS), "--threads", "4", "--iterations", "300",
                        "--detector-iterations", "1", "--json", str(out)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    res = json.loads(out.read_text())
    assert sorted(res["scenarios"]) == ["detector", "pool", "sessions", "views"]
    if FREE_THREADED:
        assert res["gil_enabled"] is False
