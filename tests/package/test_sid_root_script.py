"""scripts/build-sid-root and scripts/test-wheels' choice of interpreter for 3.14 (docs/wheels.md,
"Tested on"): where the sid root goes, that a finished root is reused as it is, the refusals
with their exit status and words, and what test-wheels says of a wheel whose Python it cannot
find, all before any debootstrap, chroot or pip.  The runs themselves (debootstrap, the wheel
in the root) need root and the network: .ci/run does them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run(script, *args, env=None):
    e = {k: v for k, v in os.environ.items() if k not in ("RKNNX_SID_ROOT", "RKNNX_PYTHON_CACHE")}
    e.update(env or {})
    return subprocess.run(["bash", str(SCRIPTS / script), *map(str, args)], capture_output=True,
                          text=True, timeout=60, env=e)


def test_the_root_goes_next_to_the_cached_interpreters(tmp_path):
    p = run("build-sid-root", "--print-path", env={"RKNNX_PYTHON_CACHE": str(tmp_path)})
    assert (p.returncode, p.stdout, p.stderr) == (0, f"{tmp_path}/sid-root\n", "")
    p = run("build-sid-root", "--arch", "arm64", "--print-path",
            env={"RKNNX_PYTHON_CACHE": str(tmp_path)})
    assert (p.returncode, p.stdout) == (0, f"{tmp_path}/sid-root-arm64\n")
    p = run("build-sid-root", "--print-path", env={"RKNNX_SID_ROOT": str(tmp_path / "mine")})
    assert (p.returncode, p.stdout) == (0, f"{tmp_path}/mine\n")
    assert not (tmp_path / "sid-root").exists() and not (tmp_path / "mine").exists()


def test_a_finished_root_is_reused_without_debootstrap(tmp_path):
    root = tmp_path / "sid-root"
    (root / "usr" / "bin").mkdir(parents=True)
    exe = root / "usr" / "bin" / "python3.14"
    exe.write_text("#!/bin/sh\nexit 1\n")
    exe.chmod(0o755)
    (root / ".rknnx-sid-root").write_text("python3.14 3.14.10 (Debian 3.14.10-1), glibc 2.43-7\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    p = run("build-sid-root", env={"RKNNX_PYTHON_CACHE": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert p.stdout == (f"== sid root: {root} is there (python3.14 3.14.10 (Debian 3.14.10-1), "
                        "glibc 2.43-7)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == before   # no .tmp, no log


@pytest.mark.parametrize("args, words", [
    (["--arch", "armhf"], "build-sid-root: --arch takes amd64 or arm64, not armhf"),
    (["--arch"], "build-sid-root: --arch needs amd64 or arm64"),
    (["--bogus"], "build-sid-root: unknown argument --bogus (see --help)"),
])
def test_build_sid_root_refuses_what_it_cannot_build(tmp_path, args, words):
    p = run("build-sid-root", *args, env={"RKNNX_PYTHON_CACHE": str(tmp_path)})
    assert p.returncode == 2
    assert p.stderr.strip() == words
    assert list(tmp_path.iterdir()) == []


def test_the_usage_is_the_header():
    p = run("build-sid-root", "--help")
    assert p.returncode == 0
    assert "scripts/build-sid-root --arch arm64     # /var/cache/rknnx/sid-root-arm64" in p.stdout
    assert "RKNNX_DEBIAN_MIRROR" in p.stdout and "set -euo" not in p.stdout


@pytest.mark.skipif(shutil.which("python3.14", path="/usr/bin:/bin") is not None
                    or shutil.which("python3.14t", path="/usr/bin:/bin") is not None,
                    reason="this host's /usr/bin has a python3.14: test-wheels would use it")
def test_test_wheels_names_each_wheel_it_could_not_test(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for tag in ("cp314-cp314", "cp314-cp314t"):
        (wheels / f"rknnx-0.1.0-{tag}-manylinux2014_x86_64.manylinux_2_17_x86_64.whl").write_bytes(b"")
    cache = tmp_path / "cache"
    p = run("test-wheels", "--wheels", wheels,
            env={"RKNNX_PYTHON_CACHE": str(cache), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "== tested:",
        "  not tested: cp314-cp314 on 3.14: no python3.14 here (scripts/build-sid-root makes "
        f"Debian sid's, in {cache}/sid-root)",
        "  not tested: cp314-cp314t on 3.14t: no python3.14t here: scripts/build-python needs "
        "Debian's python3.14 source, which the mirror does not serve, and Debian ships no "
        "free-threaded 3.14 package",
    ]


def test_test_wheels_refuses_an_unknown_argument():
    p = run("test-wheels", "--bogus")
    assert p.returncode == 2
    assert p.stderr.strip() == "test-wheels: unknown argument --bogus (see --help)"
