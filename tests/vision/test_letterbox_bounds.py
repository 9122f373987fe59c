"""The letterbox kernels' YUV paths (AVX2 intrinsics, the 2:1 one-pass path,
the 1:1 conversion straight into the output, the 4-byte pick copy): frames and outputs
that end exactly at a PROT_NONE page (any read or write past them faults) and outputs
that are views into a bigger buffer with a canary around them, each result byte for
byte the numpy reference (letterbox_reference).  Run in a child process: a fault fails
the test instead of killing the session."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("cv2")

CHILD = textwrap.dedent(r'''
import ctypes, mmap, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import letterbox_reference as ref
from rknnx import _kernels
from rknnx.vision import letterbox

PAGE = mmap.PAGESIZE
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

def guarded(shape, dtype=np.uint8, fill=0):
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    npages = (nbytes + PAGE - 1) // PAGE + 1
    m = mmap.mmap(-1, npages * PAGE)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    assert libc.mprotect(addr + (npages - 1) * PAGE, PAGE, 0) == 0
    a = np.frombuffer(m, np.uint8, count=nbytes, offset=(npages - 1) * PAGE - nbytes)
    a = a.view(dtype).reshape(shape)
    a[...] = fill
    return a

rng = np.random.default_rng(3)
bad = []
CASES = [((h, w), s) for w in (2, 4, 30, 32, 34, 62, 64, 66, 70) for h in (2, 4, 6)
         for s in ((w, h), (w + 6, h), (w // 2, h // 2))
         if min(s) >= 1 and not (s[0] == w // 2 and min(w, h) < 4)]
CASES += [((722, 1282), (641, 361)), ((722, 1280), (640, 361)), ((722, 1282), (641, 641)),
          ((722, 360), (180, 360)), ((34, 66), (33, 17))]
for path in _kernels._kernel_paths():
    _kernels._kernel_path(path)
    for (h, w), (W, H) in CASES:
        for fmt in ("nv12", "i420"):
            a = guarded((h * 3 // 2, w))
            a[...] = rng.integers(0, 256, a.shape, np.uint8)
            for swap, matrix in ((False, "bt601"), (True, "bt709")):
                want = ref.letterbox(np.array(a), (W, H), swap_rb=swap, pad_value=114,
                                     fmt=fmt, matrix=matrix)
                big = np.full((H + 1, W + 5, 3), 0xAB, np.uint8)
                outs = {"end of page": guarded((H, W, 3), fill=1),
                        "rows in a wider buffer": big[None, :H, :W]}
                if W != 3:
                    outs["NCHW"] = guarded((1, 3, H, W), fill=1)
                for name, out in outs.items():
                    got, _ = letterbox(a, out=out, fmt=fmt, swap_rb=swap, pad_value=114,
                                       matrix=matrix)
                    g = got[0].transpose(1, 2, 0) if name == "NCHW" else got.reshape(H, W, 3)
                    if not np.array_equal(g, want):
                        bad.append((path, fmt, (h, w), (W, H), swap, name, "pixels"))
                if not ((big[H:] == 0xAB).all() and (big[:, W:] == 0xAB).all()):
                    bad.append((path, fmt, (h, w), (W, H), swap, "canary"))
print(len(bad), bad[:10])
sys.exit(1 if bad else 0)
''')


def test_yuv_letterbox_stays_in_bounds_and_equals_the_reference():
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", CHILD, here], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
