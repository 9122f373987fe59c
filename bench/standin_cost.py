"""The per-frame cost of the emulator's stand-in for a vendor .rknn file (docs/standin.md)
next to the general flow's own conversions, through the C API (ctypes, no binding): for
each file, the median over the iterations of rknn_inputs_set (UINT8 NHWC),
rknn_run (the stand-in's digest) and rknn_outputs_get (want_float=1), in microseconds.

    python bench/standin_cost.py [--file yolo640_rk3588] [--platform RK3588] [--iterations 50]

The vendor files are read in place (RKNNX_VENDOR_DATA, or a shared/ folder beside the
checkout, as tests/helpers.py finds them).
"""

from __future__ import annotations

import argparse
import ctypes as C
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.emu_capi import NHWC, U8, Input, InOutNum, Output, TensorAttr, api  # noqa: E402
from tests.helpers import RKNN_MODELS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default="yolo640_rk3588")
    ap.add_argument("--platform", default="RK3588")
    ap.add_argument("--iterations", type=int, default=50)
    a = ap.parse_args()
    if RKNN_MODELS is None:
        sys.exit("the vendor's .rknn files are not here (set RKNNX_VENDOR_DATA)")
    path = next(RKNN_MODELS.rglob(a.file + ".rknn"))
    os.environ["RKNN_EMU_PLATFORM"] = a.platform
    lib = api()
    data = path.read_bytes()
    h = C.c_uint64(0)
    if lib.rknn_init(C.byref(h), data, len(data), 0, None) != 0:
        sys.exit(f"rknn_init of {path.name} failed")
    n = InOutNum()
    lib.rknn_query(h.value, 0, C.byref(n), C.sizeof(n))
    attr = TensorAttr()
    bufs, ins = [], (Input * n.n_input)()
    for i in range(n.n_input):
        attr.index = i
        lib.rknn_query(h.value, 1, C.byref(attr), C.sizeof(attr))
        b = (C.c_uint8 * attr.n_elems)()
        bufs.append(b)
        ins[i].index, ins[i].buf, ins[i].size, ins[i].type, ins[i].fmt = i, C.addressof(b), attr.n_elems, U8, NHWC
    times = {"inputs_set": [], "run": [], "outputs_get": []}
    for it in range(a.iterations):
        for b in bufs:
            b[it % len(b)] = it & 255
        t0 = time.perf_counter()
        assert lib.rknn_inputs_set(h.value, n.n_input, ins) == 0
        t1 = time.perf_counter()
        assert lib.rknn_run(h.value, None) == 0
        t2 = time.perf_counter()
        outs = (Output * n.n_output)()
        for k in range(n.n_output):
            outs[k].index, outs[k].want_float = k, 1
        assert lib.rknn_outputs_get(h.value, n.n_output, outs, None) == 0
        t3 = time.perf_counter()
        lib.rknn_outputs_release(h.value, n.n_output, outs)
        times["inputs_set"].append(t1 - t0)
        times["run"].append(t2 - t1)
        times["outputs_get"].append(t3 - t2)
    lib.rknn_destroy(h.value)
    med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    conv = med["inputs_set"] + med["outputs_get"]
    print(f"{path.name} on {a.platform}, {a.iterations} frames, median us: "
          f"inputs_set {med['inputs_set']:.0f}, run (stand-in) {med['run']:.0f}, "
          f"outputs_get(want_float) {med['outputs_get']:.0f}; run / conversions = "
          f"{med['run'] / conv:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
