"""The letterbox kernel's C (rknn_ext/kernels/letterbox.c) as a C program:
tests/c/letterbox_check.c built with the kernels at -O2 (-Wall -Wextra -Werror) and under
ASan/UBSan where the compiler can.  Random geometries on buffers of their exact size: every
vector path writes the plain path's bytes, the pad is the pad bytes, an output's row
padding is never written; bad parameters are refused."""

import subprocess

import pytest

from helpers import REPO, check_build_flags, compile_c

SOURCES = [REPO / "tests" / "c" / "letterbox_check.c",
           REPO / "rknn_ext" / "kernels" / "letterbox.c",
           REPO / "rknn_ext" / "kernels" / "kernels.c"]
FLAGS = ["-ffp-contract=off", f"-I{REPO / 'rknn_ext' / 'kernels'}"]


@pytest.mark.parametrize("build", ["O2", "asan-ubsan"])
def test_letterbox_c(build, tmp_path):
    flags = check_build_flags(build, tmp_path)
    prog = compile_c(SOURCES, tmp_path / "letterbox_check", flags=FLAGS + flags)
    r = subprocess.run([str(prog)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and ", 0 failed" in r.stdout, (r.stdout, r.stderr[-4000:])
    n = int(r.stdout.split(":")[1].split()[0])
    assert n > 100000, r.stdout
