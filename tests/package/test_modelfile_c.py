"""The vendor-file reader's C (rknn_ext/rknnfile/rknn_file.c) under ASan/UBSan: the vendor
files read as they are and mutated from a fixed seed (tests/c/rknn_file_check.c) never read
outside their bytes, leak or hit undefined behaviour, and every refusal names its check."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from helpers import NO_VENDOR_DATA, REPO, cc, vendor_models

SOURCES = [REPO / "tests" / "c" / "rknn_file_check.c",
           *sorted((REPO / "rknn_ext" / "rknnfile").glob("*.c"))]
FLAGS = ["-std=c11", "-O1", "-g", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror",
         f"-I{REPO / 'rknn_ext' / 'rknnfile'}"]
if (REPO / "rknn_ext" / "rknnfile" / "rknn_file_v1004.c").exists():
    FLAGS.append("-DRKNNX_FILE_HAVE_V1004")   # as CMakeLists.txt builds it


def _build(tmp_path, sanitize):
    try:
        compiler = cc()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    exe = tmp_path / "rknn_file_check"
    flags = [f"-fsanitize={sanitize}", "-fno-sanitize-recover=all"] if sanitize else ["-O2"]
    r = subprocess.run([compiler, *FLAGS, *flags, *map(str, SOURCES), "-lm", "-o", str(exe)],
                       capture_output=True, text=True)
    if r.returncode != 0 and sanitize:
        pytest.skip(f"the C compiler cannot build with -fsanitize={sanitize}: {r.stderr[-300:]}")
    assert r.returncode == 0, r.stderr
    return exe


def _files():
    models = vendor_models()
    if not models:
        pytest.skip(NO_VENDOR_DATA)
    # one or two of each container version and NPU family, and the custom-op and dynamic ones
    keep = ("rknpu2_c28b080__rknn_multiple_input_demo__RK356X", "tk2_2c2d03d__rknn_multiple"
            "_input_demo__RK3588", "dual_residual_custom.rknn", "cls_img_rk3588", "multi_io_rk"
            "3566", "dynamic_nogap_rk3588", "multi_io_rv1106", "fp16_net_rk2118")
    return [p for p in models if any(k in p.name for k in keep)]


@pytest.mark.parametrize("sanitize", ["address,undefined", None])
def test_reader_never_reads_outside_the_file(tmp_path, sanitize):
    files = _files()
    exe = _build(tmp_path, sanitize)
    r = subprocess.run([str(exe), *map(str, files)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}\n{r.stderr[-4000:]}"
    ok, n_files, reads, accepted = r.stdout.split()
    assert ok == "ok" and int(n_files) == len(files)
    assert int(reads) == len(files) * 1501
    # the mutations hit refusals and acceptances both (a mutated weight byte is still a model)
    assert len(files) < int(accepted) < int(reads)


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) not installed")
@pytest.mark.parametrize("lib", ["_emulator/librknnrt.so", "_emulator/librknnrt-1.5.2.so",
                                 "_rknnfile"])
def test_reader_symbols_stay_hidden(lib):
    """The reader is linked into both emulators and its extension module, exported by none."""
    import rknnx

    pkg = pathlib.Path(rknnx.__file__).parent
    path = next(pkg.glob("_rknnfile.*.so")) if lib == "_rknnfile" else pkg / lib
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(path)], capture_output=True,
                         text=True, check=True).stdout
    assert "rknnx_file" not in out
    # and it is in there: the static symbol table names it (unless the library is stripped)
    syms = subprocess.run(["readelf", "--syms", "-W", str(path)], capture_output=True,
                          text=True, check=True).stdout
    if ".symtab" in syms:
        assert "rknnx_file_read" in syms
