"""The tracker's C (rknn_ext/kernels/track.c) as a C program: tests/c/track_check.c built
with -O2 (-Wall -Wextra -Werror), and under ASan/UBSan where the compiler can: the
assignment against every partial matching of small problems, the tracker's ids on straight,
crossing and missed boxes, per_class, no allocation once a stream's counts were seen,
non-finite input refused with the state untouched."""

import subprocess

import pytest

from helpers import REPO, check_build_flags, compile_c

SOURCES = [REPO / "tests" / "c" / "track_check.c", REPO / "rknn_ext" / "kernels" / "track.c"]
FLAGS = ["-ffp-contract=off", f"-I{REPO / 'rknn_ext' / 'kernels'}", f"-I{REPO / 'tests' / 'c'}"]


@pytest.mark.parametrize("mode", ["O2", "asan-ubsan"])
def test_track_c(mode, tmp_path):
    flags = check_build_flags(mode, tmp_path)
    program = compile_c(SOURCES, tmp_path / "track_check", flags=FLAGS + flags, libs=["-lm"])
    r = subprocess.run([str(program)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and ", 0 failed" in r.stdout, (r.stdout, r.stderr[-4000:])
    assert int(r.stdout.split()[1]) > 15000
