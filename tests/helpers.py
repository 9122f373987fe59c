"""Shared test utilities: building C at test time, locating the repository."""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INCLUDE = REPO / "include" / "rknnx"
DATA = Path(__file__).resolve().parent / "data"


def cc() -> str:
    """The C compiler tests use (env CC, else cc/gcc)."""
    for cand in (os.environ.get("CC"), "cc", "gcc"):
        if cand and shutil.which(cand):
            return cand
    raise RuntimeError("no C compiler found (set CC)")


def compile_c(sources, out: Path, *, shared=False, flags=(), libs=()) -> Path:
    """Compile C sources into an executable (or shared library) at `out`.

    Raises AssertionError with the compiler's output if compilation fails.
    """
    cmd = [cc(), "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}"]
    if shared:
        cmd += ["-shared", "-fPIC"]
    cmd += list(flags) + [str(s) for s in sources] + ["-o", str(out)] + list(libs)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"compile failed: {' '.join(cmd)}\n{proc.stderr}"
    return out


def run_python(code: str, env=None, timeout=120) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter (fresh runtime loader state)."""
    full_env = dict(os.environ)
    if env:
        for k, v in env.items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=timeout)


def load_emulator_package():
    """rknnx.emulator (pure Python: builder, reference, samples, control), imported on its
    own from the source tree when the compiled extension is not built, so the emulator's
    tests can run against a library built by CMake alone."""
    try:
        return importlib.import_module("rknnx.emulator")
    except ImportError:
        path = REPO / "python" / "rknnx" / "emulator"
        name = "_rknnx_emulator_standalone"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path / "__init__.py",
                                                      submodule_search_locations=[str(path)])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod
