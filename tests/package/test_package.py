"""What `pip install` puts on disk: the extension, the emulator, stubs; and what the
extension links (never librknnrt: it is loaded at run time)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import rknnx
from helpers import run_python

PKG = Path(rknnx.__file__).parent
#: the compiled modules, one per subject: the runtime binding, the kernels, the file reader
EXTENSIONS = ("_core", "_kernels", "_rknnfile")


def _needed(lib: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout)


def test_installed_files():
    names = {p.relative_to(PKG).as_posix() for p in PKG.rglob("*") if p.is_file()}
    for ext in EXTENSIONS:
        assert any(re.fullmatch(ext + r"\.[\w.-]+\.so", n) for n in names), (ext, names)
        assert ext + ".pyi" in names, ext
    assert "_emulator/librknnrt.so" in names
    for expected in ("__init__.py", "__main__.py", "errors.py", "py.typed",
                     "emulator/__init__.py"):
        assert expected in names, expected


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) not installed")
@pytest.mark.parametrize("name", EXTENSIONS)
def test_extension_links_only_the_c_runtime(name):
    ext = next(PKG.glob(f"{name}.*.so"))
    needed = _needed(ext)
    assert not any("rknn" in n for n in needed), needed
    allowed = re.compile(r"lib(c|dl|pthread|m)\.so(\.\d+)*$")
    assert all(allowed.match(n) for n in needed), needed


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) not installed")
def test_each_c_library_is_in_its_own_extension():
    """The kernels' C is in rknnx._kernels only, the reader's in rknnx._rknnfile only: the
    runtime binding carries neither (read from the static symbol table, when not stripped)."""
    def symbols(name):
        path = next(PKG.glob(f"{name}.*.so"))
        return subprocess.run(["readelf", "--syms", "-W", str(path)], capture_output=True,
                              text=True, check=True).stdout

    syms = {name: symbols(name) for name in EXTENSIONS}
    if not all(".symtab" in s for s in syms.values()):
        pytest.skip("the extensions are stripped: no static symbol table to read")
    assert "rknnx_k_deq_s8" in syms["_kernels"] and "rknnx_file_read" in syms["_rknnfile"]
    for name, s in syms.items():
        assert ("rknnx_k_deq_s8" in s) == (name == "_kernels"), name
        assert ("rknnx_file_read" in s) == (name == "_rknnfile"), name


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) not installed")
def test_emulator_exports_only_the_rknn_namespace():
    lib = PKG / "_emulator" / "librknnrt.so"
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    exported = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "FUNC" and parts[4] == "GLOBAL" and parts[6] != "UND":
            exported.add(parts[7].split("@")[0])
    assert exported, out
    assert all(name.startswith("rknn_") for name in exported), sorted(exported)
    assert set(rknnx.lowlevel.api_function_names()) <= exported


def test_cli_doctor_falls_back_to_the_emulator_without_a_board():
    proc = run_python("import sys; from rknnx.__main__ import main; sys.exit(main(['doctor']))",
                      env={"RKNNX_RUNTIME": None, "LD_LIBRARY_PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert "no NPU runtime on this machine, which cannot be a board" in proc.stdout
    assert "(CPU emulator)" in proc.stdout
    assert "chosen by: the loader: no librknnrt on this host, which cannot be a Rockchip " \
        "board, so the bundled CPU emulator" in proc.stdout
    assert proc.stderr.count("W rknnx: no librknnrt: this is an x86_64 host") == 1 or \
        "arm" in platform.machine() or "aarch64" in platform.machine()
    assert "functions: 35 of 35 RKNN API entry points" in proc.stdout
    assert "sdk:       2.5.0 (rknnx-emulator" in proc.stdout
    strict = run_python("import sys; from rknnx.__main__ import main; sys.exit(main(['doctor', '--strict']))",
                        env={"RKNNX_RUNTIME": None, "LD_LIBRARY_PATH": ""})
    assert strict.returncode == 1 and "--strict does not fall back to the bundled CPU emulator" in strict.stderr


def test_library_falls_back_to_the_emulator_only_where_no_board_can_be(tmp_path):
    """A PC has no librknnrt and cannot have one: the library (not just the CLI) uses the
    emulator and says so once.  An ARM host with a Rockchip device tree or an NPU device
    node may be a board: a missing librknnrt there is an error, never a silent fallback."""
    proc = run_python("""
import numpy as np, rknnx
from rknnx.emulator import samples
from rknnx.lite import RKNNLite
with rknnx.Model(samples.tiny_relu()) as m:
    print(m.run(np.float32([[1, -2]]))[0].tolist(), rknnx.runtime_info()["source"])
lite = RKNNLite()                      # the drop-in on a PC, as the README says
open("m.rknn", "wb").write(samples.tiny_relu())
print(lite.load_rknn("m.rknn"), lite.init_runtime(), lite.inference([np.float32([[3, -1]])]))
lite.release()
""", env={"RKNNX_RUNTIME": None, "LD_LIBRARY_PATH": ""}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "[[1.0, 0.0]] emulator fallback (not a board)",
        "0 0 [array([[3., 0.]], dtype=float32)]"]
    assert proc.stderr.count("W rknnx: no librknnrt: ") == 1
    from rknnx._board import emulator_fallback_reason

    assert emulator_fallback_reason("x86_64", str(tmp_path)) == \
        "this is an x86_64 host, not a Rockchip board"
    assert "no Rockchip chip" in emulator_fallback_reason("aarch64", str(tmp_path))
    tree = tmp_path / "proc" / "device-tree"
    tree.mkdir(parents=True)
    (tree / "compatible").write_bytes(b"radxa,rock-5b\0rockchip,rk3588\0")
    assert emulator_fallback_reason("aarch64", str(tmp_path)) is None
    (tree / "compatible").write_bytes(b"raspberrypi,5-model-b\0brcm,bcm2712\0")
    assert emulator_fallback_reason("aarch64", str(tmp_path)) is not None
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "rknpu").write_bytes(b"")
    assert emulator_fallback_reason("aarch64", str(tmp_path)) is None


def test_a_gpu_render_node_does_not_make_a_board(tmp_path):
    # a Raspberry Pi (or any ARM host with a GPU) has /dev/dri/renderD128 too: with a device
    # tree naming another vendor's SoC it is no NPU, and the emulator stands in
    from rknnx._board import emulator_fallback_reason

    tree = tmp_path / "proc" / "device-tree"
    tree.mkdir(parents=True)
    (tree / "compatible").write_bytes(b"raspberrypi,5-model-b\0brcm,bcm2712\0")
    (tmp_path / "dev" / "dri").mkdir(parents=True)
    (tmp_path / "dev" / "dri" / "renderD128").write_bytes(b"")
    assert "brcm,bcm2712" in emulator_fallback_reason("aarch64", str(tmp_path))
    (tmp_path / "dev" / "rknpu").write_bytes(b"")               # the NPU's own node
    assert emulator_fallback_reason("aarch64", str(tmp_path)) is None
    (tmp_path / "dev" / "rknpu").unlink()
    (tree / "compatible").write_bytes(b"radxa,rock-5b\0rockchip,rk3588\0")
    assert emulator_fallback_reason("aarch64", str(tmp_path)) is None
    (tree / "compatible").unlink()                 # no device tree: the node may be the NPU
    assert emulator_fallback_reason("aarch64", str(tmp_path)) is None
