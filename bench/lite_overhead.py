"""Per-call time and memory of the RKNNLite drop-in (``rknnx.lite``) next to ``rknnx.Model``.

    RKNNX_RUNTIME=emulator python bench/lite_overhead.py [--calls 2000] [--rss-calls 10000]

For each sample model, in one run: the median (and p95) time of one call of
``RKNNLite.inference(inputs)`` (also with ``reuse_outputs=True``) and of ``Model.run``
(also with ``out=``), the calls of the four ways interleaved so that a busy machine
slows them alike; then the RSS growth over ``--rss-calls`` calls of each with the garbage
collector disabled, and the objects ``gc.collect()`` finds afterwards (reference cycles).
Read the ratios; the absolute times depend on the machine and on the emulator's compute.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time

import numpy as np


def rss_kib() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def user_inputs(model, rng):
    xs = []
    for t in model.inputs:
        if len(t.shape) == 4 and t.dtype.kind in "iu" and t.layout == "NHWC":
            xs.append(rng.integers(0, 256, t.shape, dtype=np.uint8))
        elif t.dtype.kind == "f":
            xs.append(rng.standard_normal(t.shape).astype(t.dtype))
        else:
            info = np.iinfo(t.dtype)
            xs.append(rng.integers(info.min, info.max + 1, t.shape, dtype=t.dtype))
    return xs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rss-calls", type=int, default=10_000)
    ap.add_argument("--models", default="tiny_relu,tiny_int8_add,classifier")
    args = ap.parse_args()

    import rknnx
    from rknnx.emulator import samples
    from rknnx.lite import RKNNLite

    rknnx.load_runtime()
    print(f"runtime: {rknnx.runtime_info()['path']}")
    print(f"{'model':14} {'way':34} {'median us':>10} {'p95 us':>8} {'x Model.run':>11} "
          f"{'RSS KiB/10k':>12} {'cycles':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            path = os.path.join(tmp, f"{name}.rknn")
            with open(path, "wb") as f:
                f.write(samples.ALL[name]())
            lite = RKNNLite()
            assert lite.load_rknn(path) == 0 and lite.init_runtime() == 0
            model = rknnx.Model(path)
            xs = user_inputs(model, np.random.default_rng(0))
            out = [np.empty(t.shape, np.float32) for t in model.outputs]
            ways = {
                "Model.run(*xs)": lambda: model.run(*xs),
                "Model.run(*xs, out=out)": lambda: model.run(*xs, out=out),
                "RKNNLite.inference(xs)": lambda: lite.inference(xs),
                "RKNNLite.inference(xs, reuse_outputs)":
                    lambda: lite.inference(xs, reuse_outputs=True),
            }
            times = {k: [] for k in ways}
            for f in ways.values():
                for _ in range(50):
                    f()
            clock = time.perf_counter_ns
            for _ in range(args.calls):
                for k, f in ways.items():
                    t0 = clock()
                    f()
                    times[k].append(clock() - t0)
            base = float(np.median(times["Model.run(*xs)"]))
            for k, f in ways.items():
                gc.collect()
                gc.disable()
                try:
                    r0 = rss_kib()
                    for _ in range(args.rss_calls):
                        f()
                    grown = rss_kib() - r0
                    cycles = gc.collect()
                finally:
                    gc.enable()
                t = np.asarray(times[k], dtype=np.float64) / 1000.0
                per10k = grown * 10_000 / args.rss_calls
                print(f"{name:14} {k:34} {np.median(t):10.1f} {np.percentile(t, 95):8.1f} "
                      f"{np.median(t) * 1000 / base:11.2f} {per10k:12.0f} {cycles:7d}")
            lite.release()
            model.close()


if __name__ == "__main__":
    main()
