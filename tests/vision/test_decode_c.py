"""The YOLO decoders' C (rknn_ext/kernels/yolo.c) as a C program: tests/c/yolo_check.c
built with the kernels at -O2 (-Wall -Wextra -Werror), and under ASan/UBSan where the
compiler can: planted objects kept the same in every layout (NCHW, padded NHWC, NC1HWC2
16 and 8) and on every kernel path, every-cell-passes bounded by max_det, masks of boxes
past the input, of zero size and of NaN coordinates inside their buffers."""

import subprocess

import pytest

from helpers import REPO, check_build_flags, compile_c

SOURCES = [REPO / "tests" / "c" / "yolo_check.c", REPO / "rknn_ext" / "kernels" / "yolo.c",
           REPO / "rknn_ext" / "kernels" / "kernels.c"]
FLAGS = ["-ffp-contract=off", f"-I{REPO / 'rknn_ext' / 'kernels'}"]


@pytest.mark.parametrize("mode", ["O2", "asan-ubsan"])
def test_yolo_c(mode, tmp_path):
    flags = check_build_flags(mode, tmp_path)
    program = compile_c(SOURCES, tmp_path / "yolo_check", flags=FLAGS + flags, libs=["-lm"])
    r = subprocess.run([str(program)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and ", 0 failed" in r.stdout, (r.stdout, r.stderr[-4000:])
    assert int(r.stdout.split()[1]) > 3000
