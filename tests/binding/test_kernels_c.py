"""The kernels' C (rknn_ext/kernels/) and the float16 conversion the whole tree shares
(include/rknnx/rknnx_float16.h) as C programs: tests/c/kernels_check.c built with the
kernels at -O2 (-Wall -Wextra -Werror), and under ASan/UBSan where the compiler can.

Every half and a float32 set that walks every float16 rounding edge, converted by the
scalar C and by each vector path, equal numpy's astype bit for bit; the emulator's
conversion (emulator/numeric.h) is the same one, NaN quieted on the way to float16; the
row and block-row functions on buffers of the exact size equal the scalar expression."""

import subprocess

import numpy as np
import pytest

from helpers import REPO, check_build_flags, compile_c

SOURCES = [REPO / "tests" / "c" / "kernels_check.c", REPO / "rknn_ext" / "kernels" / "kernels.c"]
FLAGS = ["-ffp-contract=off", f"-I{REPO / 'rknn_ext' / 'kernels'}", f"-I{REPO / 'emulator'}"]


@pytest.fixture(scope="module", params=["O2", "asan-ubsan"])
def program(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"kernels_c_{request.param}")
    flags = check_build_flags(request.param, tmp)
    return compile_c(SOURCES, tmp / "kernels_check", flags=FLAGS + flags)


def _run(program, *args):
    r = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and ", 0 failed" in r.stdout, (r.stdout, r.stderr[-4000:])
    return r.stdout


def test_every_half_to_float32(program, tmp_path):
    _run(program, "halves", tmp_path / "f32.bin")
    got = np.fromfile(tmp_path / "f32.bin", np.uint32)
    want = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got, want.view(np.uint32))


def _rounding_edges():
    """Every finite half's float32 value, the midpoints between neighbours (the ties),
    one float32 ulp either side of both, NaNs with every kind of payload, the float32
    subnormals' edges, and random floats over the whole range."""
    h = np.arange(0x7c00, dtype=np.uint16).view(np.float16).astype(np.float32)   # 0..65504
    mid = (h[:-1].astype(np.float64) + h[1:]) / 2
    mid = np.append(mid, 65520.0).astype(np.float32)          # exact in float32
    base = np.concatenate([h, mid]).view(np.uint32)
    near = np.concatenate([base, base + 1, base[base > 0] - 1])
    special = np.array([0x7f800000, 0x7f800001, 0x7f802000, 0x7fc00000, 0x7fffffff,
                        0x7f801fff, 0x7fbfe000, 0x00000001, 0x007fffff, 0x00800000,
                        0x477fefff, 0x477ff000, 0x477fffff, 0x47800000, 0x7f7fffff,
                        0x33000000, 0x33000001, 0x32ffffff, 0x387fc000, 0x387fe000],
                       np.uint32)
    rnd = np.random.default_rng(19).integers(0, 2**31, 200_000, dtype=np.uint32)
    u = np.concatenate([near, special, rnd])
    return np.concatenate([u, u | np.uint32(0x80000000)]).view(np.float32)


def test_float32_to_every_half_edge(program, tmp_path):
    x = _rounding_edges()
    x.tofile(tmp_path / "in.bin")
    _run(program, "floats", tmp_path / "in.bin", tmp_path / "f16.bin")
    got = np.fromfile(tmp_path / "f16.bin", np.uint16)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(x.view(np.uint32)[i]), hex(got[i]), hex(want[i]))
                           for i in bad[:10]]


def test_rows_on_exact_buffers(program):
    out = _run(program, "rows")
    assert int(out.split()[1]) > 100_000, out
