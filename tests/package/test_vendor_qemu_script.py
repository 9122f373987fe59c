"""scripts/test-vendor-qemu refuses what it cannot run, saying what is missing, before any
chroot or qemu (docs/board.md, "The suite on every vendor runtime at hand"): the runs
themselves need root, qemu-user and the vendor's libraries, which CI has not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-vendor-qemu"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run(*args):
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, timeout=60)


def test_a_folder_without_libraries_is_named(tmp_path):
    p = run("--vrt", tmp_path, "--out", tmp_path / "out")
    assert p.returncode == 2
    assert f"no librknnrt-<version>-<arch>.so in {tmp_path}" in p.stdout


def test_a_library_of_neither_architecture_is_named(tmp_path):
    (tmp_path / "librknnrt-1.6.0-x86_64.so").write_bytes(b"")
    p = run("--vrt", tmp_path, "--out", tmp_path / "out")
    assert p.returncode == 2
    assert "1.6.0-x86_64: the name ends neither in -armhf nor in -aarch64" in p.stdout


def test_a_missing_driver_stand_in_is_named(tmp_path):
    (tmp_path / "librknnrt-1.5.2-armhf.so").write_bytes(b"")
    p = run("--vrt", tmp_path, "--out", tmp_path / "out")
    assert p.returncode == 2
    assert f"no such file: {tmp_path}/fake_rknpu_armhf.so" in p.stdout


def test_a_root_without_the_venv_is_named(tmp_path):
    (tmp_path / "librknnrt-1.4.0-aarch64.so").write_bytes(b"")
    (tmp_path / "fake_rknpu_a64.so").write_bytes(b"")
    root = tmp_path / "root"
    root.mkdir()
    p = run("--vrt", tmp_path, "--arm64-root", root, "--runtimes", "1.4.0-aarch64",
            "--out", tmp_path / "out")
    assert p.returncode == 2
    assert f"{root} has no venv /opt/venv" in p.stdout


def test_an_unknown_option_prints_the_usage(tmp_path):
    p = run("--bogus")
    assert p.returncode == 2
    assert "unknown option --bogus" in p.stdout
    assert "scripts/test-vendor-qemu [options]" in p.stdout
