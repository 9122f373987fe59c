"""Where the loader looks for the vendor runtime when nothing names one: the system
loader first, then the paths boards install librknnrt to, and the names the vendor's
RKNNLite tries, each reported in order when none loads."""

from __future__ import annotations

import os
import textwrap

import pytest

from helpers import run_python

# In search order after the system loader.
VENDOR_PATHS = [
    "/usr/lib/librknnrt.so",
    "/usr/lib64/librknnrt.so",
    "/vendor/lib64/librknnrt.so",
    "/usr/lib/librknn_runtime.so",
    "/usr/lib64/librknn_runtime.so",
]


@pytest.mark.skipif(any(os.path.exists(p) for p in VENDOR_PATHS),
                    reason="a vendor runtime is installed here: the search stops at it")
def test_every_vendor_path_is_tried_in_order_after_the_system_loader():
    proc = run_python(textwrap.dedent("""
        import rknnx, rknnx._board
        rknnx._board.emulator_fallback_reason = lambda: None   # this host may be a board
        try:
            rknnx.runtime_info()
        except rknnx.RuntimeNotFoundError as e:
            print(e)
        else:
            raise SystemExit("a runtime was found")
    """), env={"RKNNX_RUNTIME": None, "LD_LIBRARY_PATH": ""})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    tried = [line.strip() for line in proc.stdout.splitlines() if line.startswith("  ")]
    names = [line.split(" (", 1)[0] for line in tried]
    assert names == ["librknnrt.so"] + VENDOR_PATHS, tried
    assert tried[0].startswith("librknnrt.so (system loader): ")
    for line, path in zip(tried[1:], VENDOR_PATHS):
        # dlerror() of a missing file names the path and says it is not there
        assert line.startswith(f"{path} (vendor path): {path}: cannot open shared object"), line
