"""The floor of a compiled ``Model.run``: a method descriptor of its signature doing nothing.

``rknnx.Model.run`` is the binding's ``_ModelRun.run`` (rknn_ext/rknnx/_model_run.pxi), a
method CPython calls with no Python frame.  What a loop calling it pays before the
method does anything (the call from Python, the bound method made by ``m.run``, the
argument tuple and keywords of ``m.run(*x, out=out)``, Cython's parsing of them) is
measured on ``bench/c/empty_run.pyx``: the same declaration, an empty body, compiled here
with Cython and the C compiler into a temporary folder, and called on an instance of a
Python subclass whose bases are those of ``Model`` in shape (a plain Python class, then
the compiled one).  ``docs/benchmarks.md``, "Where the nanoseconds go".
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent


def build(tmp: Path) -> Optional[Path]:
    """The compiled module in `tmp` (its path), or None without Cython or a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or importlib.util.find_spec("Cython") is None:
        return None
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    so = tmp / f"empty_run{suffix}"
    if so.exists():
        return so
    c = tmp / "empty_run.c"
    subprocess.run([sys.executable, "-m", "cython", "-3", str(HERE / "c" / "empty_run.pyx"),
                    "-o", str(c)], check=True, capture_output=True)
    subprocess.run([cc, "-shared", "-fPIC", "-O3", "-I", sysconfig.get_paths()["include"],
                    str(c), "-o", str(so)], check=True, capture_output=True)
    return so


def instance(tmp: Path):
    """An object whose ``run`` is the empty compiled method, or None (see build)."""
    so = build(tmp)
    if so is None:
        return None
    spec = importlib.util.spec_from_file_location("empty_run", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    class _Plain:                        # as rknnx._lifetime.Closable is to Model
        pass

    class _Like(_Plain, mod.EmptyRun):   # as Model(Closable, _ModelRun)
        pass

    return _Like()
