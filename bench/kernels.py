"""Time the layout and quantization kernels of rknnx._core against the numpy expressions
they equal, in one run: per call time.perf_counter, numpy and the kernel timed in
alternating rounds (the machines are shared and noisy: the best round's median and p95 are
kept for each), one line per configuration with the ratio numpy / kernel (above 1: the
kernel is faster).  The dequantizing rows are also timed on every narrower path this
processor has (on x86-64 with AVX2: the 128-bit path, the one the boards' NEON takes).

    python bench/kernels.py [--iterations 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rknnx import _core as k


def timed(fn, iterations):
    ts = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    ts = np.sort(ts)
    return float(np.median(ts)), float(ts[int(0.95 * (len(ts) - 1))])


def compare(np_fn, k_fn, iterations, rounds):
    """(numpy, kernel) each as (median, p95) in seconds: the rounds alternate between the
    two and each keeps its best round (lowest median)."""
    np_fn(), k_fn()
    best = [(float("inf"), 0.0), (float("inf"), 0.0)]
    per = max(1, iterations // rounds)
    for _ in range(rounds):
        for i, fn in enumerate((np_fn, k_fn)):
            m = timed(fn, per)
            if m[0] < best[i][0]:
                best[i] = m
    return best


def configs():
    rng = np.random.default_rng(0)
    for s in (80, 20):
        q = rng.integers(-128, 128, (1, 16, s, s, 16), dtype=np.int8)
        sc, zp = np.float32(0.0625), -3
        out = np.empty((1, 255, s, s), np.float32)
        yield (f"nc1hwc2 int8 -> NCHW float32 {s}x{s}x255",
               lambda q=q, s=s: (q.transpose(0, 1, 4, 2, 3).reshape(1, 256, s, s)[:, :255]
                                 .astype(np.float32) - np.float32(zp)) * sc,
               lambda q=q: k.nc1hwc2_to_nchw(q, 255, scale=sc, zero_point=zp))
        yield (f"  same, out= reused {s}x{s}x255",
               lambda q=q, s=s: (q.transpose(0, 1, 4, 2, 3).reshape(1, 256, s, s)[:, :255]
                                 .astype(np.float32) - np.float32(zp)) * sc,
               lambda q=q, out=out: k.nc1hwc2_to_nchw(q, 255, scale=sc, zero_point=zp, out=out))
        yield (f"nc1hwc2 int8 -> NHWC float32 {s}x{s}x255",
               lambda q=q, s=s: ((q.transpose(0, 1, 4, 2, 3).reshape(1, 256, s, s)[:, :255]
                                  .astype(np.float32) - np.float32(zp)) * sc).transpose(0, 2, 3, 1).copy(),
               lambda q=q: k.nc1hwc2_to_nchw(q, 255, layout="NHWC", scale=sc, zero_point=zp))
        yield (f"nc1hwc2 int8 -> NCHW int8 (raw) {s}x{s}x255",
               lambda q=q, s=s: np.ascontiguousarray(q.transpose(0, 1, 4, 2, 3).reshape(1, 256, s, s)[:, :255]),
               lambda q=q: k.nc1hwc2_to_nchw(q, 255))
    q8 = rng.integers(-128, 128, (1, 32, 80, 80, 8), dtype=np.int8)      # C2 8: RK3566/68
    yield ("nc1hwc2 int8 -> NCHW float32 80x80x255 c2=8",
           lambda: (q8.transpose(0, 1, 4, 2, 3).reshape(1, 256, 80, 80)[:, :255]
                    .astype(np.float32) - np.float32(-3)) * np.float32(0.0625),
           lambda: k.nc1hwc2_to_nchw(q8, 255, scale=0.0625, zero_point=-3))
    h8 = rng.standard_normal((1, 32, 80, 80, 8)).astype(np.float16)      # fp16 outputs
    yield ("nc1hwc2 float16 -> NCHW float32 80x80x255",
           lambda: h8.transpose(0, 1, 4, 2, 3).reshape(1, 256, 80, 80)[:, :255]
           .astype(np.float32),
           lambda: k.nc1hwc2_to_nchw(h8, 255, dtype=np.float32))
    x8 = rng.integers(-128, 128, (1, 255, 80, 80), dtype=np.int8)
    xf = rng.standard_normal((1, 640, 640, 3)).astype(np.float32)
    xh = xf.astype(np.float16)
    nchw = rng.integers(-128, 128, (1, 255, 80, 80), dtype=np.int8)
    padded = rng.integers(0, 256, (1, 640, 656, 3), dtype=np.uint8)[:, :, :640]
    yield ("dequantize int8 -> float32 1x255x80x80",
           lambda: (x8.astype(np.float32) - np.float32(3)) * np.float32(0.1),
           lambda: k.dequantize(x8, 0.1, 3))
    yield ("dequantize int8 -> float16 1x255x80x80",
           lambda: ((x8.astype(np.float32) - np.float32(3)) * np.float32(0.1)).astype(np.float16),
           lambda: k.dequantize(x8, 0.1, 3, dtype=np.float16))
    yield ("quantize float32 -> int8 1x640x640x3",
           lambda: np.clip(np.rint(xf / np.float32(0.02)) + np.float32(3), -128, 127).astype(np.int8),
           lambda: k.quantize(xf, 0.02, 3))
    yield ("to_float16 1x640x640x3", lambda: xf.astype(np.float16), lambda: k.to_float16(xf))
    yield ("from_float16 1x640x640x3", lambda: xh.astype(np.float32), lambda: k.from_float16(xh))
    yield ("compact uint8 1x640x640(656)x3", lambda: np.ascontiguousarray(padded),
           lambda: k.compact(padded))
    yield ("nchw -> nc1hwc2 int8 1x255x80x80 c2=16",
           lambda: np.ascontiguousarray(np.pad(nchw, ((0, 0), (0, 1), (0, 0), (0, 0)))
                                        .reshape(1, 16, 16, 80, 80).transpose(0, 1, 3, 4, 2)),
           lambda: k.nchw_to_nc1hwc2(nchw, 16))


DEQUANTIZING = ("nc1hwc2 int8 -> NCHW float32", "dequantize int8 -> float32")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    paths = k._kernel_paths()
    default = k._kernel_path()
    print(f"dequantizing path: {default} (this build and processor have: {', '.join(paths)})")
    print(f"{'configuration':44s} {'numpy med/p95 us':>20s} {'kernel med/p95 us':>20s} {'ratio':>7s}")
    for name, np_fn, k_fn in configs():
        a, b = np_fn(), k_fn()
        assert np.array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8)), name
        rows = [(name, default)]
        if name.startswith(DEQUANTIZING):
            rows += [(f"  {p} path", p) for p in paths[::-1] if p not in (default, "plain")]
        for label, path in rows:
            k._kernel_path(path)
            try:
                (nm, n95), (km, k95) = compare(np_fn, k_fn, args.iterations, args.rounds)
            finally:
                k._kernel_path(default)
            print(f"{label:44s} {nm * 1e6:9.1f} /{n95 * 1e6:9.1f} {km * 1e6:9.1f} /{k95 * 1e6:9.1f} "
                  f"{nm / km:6.2f}x")


if __name__ == "__main__":
    main()
