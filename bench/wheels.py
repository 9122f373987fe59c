"""The wheels side by side: per-call cost of the abi3 wheel, a version-specific wheel and
the free-threaded one, and a Pool of 3 on a free-threaded CPython against the GIL build
of the same source (docs/wheels.md, "What each wheel costs").

Each configuration is an interpreter and a wheel, installed (``--no-deps``, with numpy)
into a venv of its own under ``build/bench-wheels/``; the measures run in a subprocess of
that venv's interpreter, the configurations interleaved, each run 3 times (medians):

- ``zero-copy run()``: ``ZeroCopySession.run()`` of the tiny model per call;
- ``model.run()``: the general flow, numpy in and out, per call;
- ``pool``: a Pool of 3 workers mapping 3000 frames of the tiny model (no simulated NPU
  time: the Python glue of the workers is what is measured) in chunks of 100, the median
  chunk's time per frame.

    python bench/wheels.py                              # the configurations found
    python bench/wheels.py --wheels dist/wheels --calls 20000
    python bench/suite.py --only wheels                 # the same, in the suite's report

The interpreters: the GIL and free-threaded builds of scripts/build-python
(/var/cache/rknnx/cpython-3.13 and -3.13t, 3.14 likewise where built) and the system's
python3 for the abi3 wheel's own version.  A configuration whose interpreter or wheel is
missing is reported as skipped, naming what is missing.  The free-threaded ones run with
``PYTHON_GIL=0``.  Goals (bench/suite.py's targets): the free-threaded build's per-call
cost within 1.3x of the GIL build's; the Pool of 3 on it within 0.9x of the GIL build's
time, or faster.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = Path(os.environ.get("RKNNX_PYTHON_CACHE", "/var/cache/rknnx"))


def _interp(flavour: str) -> Optional[str]:
    """scripts/build-python's interpreter of `flavour` (3.13, 3.13t, ...); for a GIL
    flavour not built there, the distribution's or pyenv's python3.X (then not the same
    source as the free-threaded one: the report names each interpreter)."""
    ver = flavour.rstrip("t")
    exe = CACHE / f"cpython-{flavour}" / "bin" / f"python{ver}{'t' if flavour.endswith('t') else ''}"
    if exe.is_file():
        return str(exe)
    if flavour.endswith("t"):
        return None
    import shutil
    cands = [shutil.which(f"python{ver}")] + sorted(
        glob.glob(os.path.expanduser(f"~/.pyenv/versions/{ver}.*/bin/python{ver}")), reverse=True)
    for c in cands:
        if c and subprocess.run([c, "-c", "import sys"], capture_output=True).returncode == 0:
            return c
    return None


def configurations(wheels: Path) -> List[Dict[str, Any]]:
    """(name, interpreter, wheel glob, env) of each configuration, found or not."""
    out = []
    for ver in ("3.13", "3.14"):
        nodot = ver.replace(".", "")
        gil, ft = _interp(ver), _interp(ver + "t")
        out += [
            {"name": f"{ver} abi3", "python": gil, "wheel": "rknnx-*-cp311-abi3-*x86_64*.whl",
             "env": {}},
            {"name": f"{ver} cp{nodot}", "python": gil,
             "wheel": f"rknnx-*-cp{nodot}-cp{nodot}-*x86_64*.whl", "env": {}},
            {"name": f"{ver}t cp{nodot}t", "python": ft,
             "wheel": f"rknnx-*-cp{nodot}-cp{nodot}t-*x86_64*.whl", "env": {"PYTHON_GIL": "0"}},
            # the same free-threaded binary with the GIL turned on: the Pool's anchor of the
            # very same build where the GIL build of the same source is not at hand
            {"name": f"{ver}t+GIL cp{nodot}t", "python": ft,
             "wheel": f"rknnx-*-cp{nodot}-cp{nodot}t-*x86_64*.whl", "env": {"PYTHON_GIL": "1"}},
        ]
    for c in out:
        found = sorted(glob.glob(str(wheels.resolve() / c["wheel"])))
        c["wheel_path"] = found[-1] if found else None
    return out


def _venv(c: Dict[str, Any], base: Path) -> str:
    """The venv of a configuration, made (numpy from PyPI, the wheel --no-deps) if new."""
    d = base / c["name"].replace(" ", "-")
    py = d / "bin" / "python"
    stamp = d / "wheel.txt"
    # the venv is remade when its interpreter or its wheel changed, or numpy is missing
    # (an install interrupted): the stamp names both and is written last
    want = f"{c['python']}\n{c['wheel_path']}\n"
    if not (py.is_file() and stamp.is_file() and stamp.read_text() == want
            and subprocess.run([str(py), "-c", "import numpy, rknnx"],
                               capture_output=True).returncode == 0):
        subprocess.run([c["python"], "-m", "venv", "--clear", str(d)], check=True)
        pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        # a wheel only: the newest numpy may have none for this interpreter (numpy 2.4 is
        # the last with cp313t wheels), and building it from source takes many minutes
        subprocess.run([*pip, "--only-binary=:all:", "numpy"], check=True)
        subprocess.run([*pip, "--no-deps", "--force-reinstall", c["wheel_path"]], check=True)
        stamp.write_text(want)
    return str(py)


# -- the measures, in the configuration's interpreter -----------------------------------------
def worker(calls: int, frames: int) -> Dict[str, Any]:
    import numpy as np

    import rknnx
    from rknnx.emulator import samples

    def per_call(fn, n):
        block = 500
        for _ in range(block):
            fn()
        times = []
        for _ in range(max(1, n // block)):
            t0 = time.perf_counter_ns()
            for _ in range(block):
                fn()
            times.append((time.perf_counter_ns() - t0) / block)
        return statistics.median(times)

    x = np.array([[0.5, -1.0]], np.float32)
    out: Dict[str, Any] = {"gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
                           "version": sys.version.split()[0]}
    with rknnx.Model(samples.tiny_relu()) as m:
        out["model_run_ns"] = per_call(lambda: m.run(x), calls)
        with m.zero_copy() as s:
            s.inputs[0][...] = x
            out["zero_copy_run_ns"] = per_call(s.run, calls)
        with rknnx.Pool(m, workers=3) as pool:
            list(pool.map([x] * 30))
            # the frames in chunks of 100, each timed: the median chunk's time per frame,
            # so that a stretch in which the (shared, niced) machine gave this process no
            # CPU moves one chunk, not the whole figure
            chunks = []
            for _ in range(max(1, frames // 100)):
                t0 = time.perf_counter_ns()
                for y in pool.map([x] * 100):
                    pass
                chunks.append((time.perf_counter_ns() - t0) / 100)
            out["pool3_ns"] = statistics.median(chunks)
    import rknnx._core as core               # which binary ran: abi3, cp313 or cp313t
    out["so"] = os.path.basename(core.__file__)
    return out


def run(wheels: Path, calls: int, frames: int, repeats: int = 3,
        base: Optional[Path] = None, say=print) -> Dict[str, Any]:
    base = base or ROOT / "build" / "bench-wheels"
    base.mkdir(parents=True, exist_ok=True)
    confs = configurations(wheels)
    ready, skipped = [], {}
    for c in confs:
        if c["python"] is None:
            skipped[c["name"]] = "no interpreter (scripts/build-python " + c["name"].split()[0] + ")"
        elif c["wheel_path"] is None:
            skipped[c["name"]] = f"no wheel {c['wheel']} in {wheels} (scripts/build-wheels)"
        else:
            c["venv_python"] = _venv(c, base)
            ready.append(c)
    runs: Dict[str, List[Dict[str, Any]]] = {c["name"]: [] for c in ready}
    for rep in range(repeats):                   # interleaved: every configuration per round
        for c in ready:
            env = dict(os.environ, RKNNX_RUNTIME="emulator", **c["env"])
            env.pop("PYTHONPATH", None)
            p = subprocess.run([c["venv_python"], str(Path(__file__).resolve()), "--worker",
                                "--calls", str(calls), "--frames", str(frames)],
                               env=env, cwd=str(base), capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"{c['name']}: {p.stderr[-2000:]}")
            runs[c["name"]].append(json.loads(p.stdout.strip().splitlines()[-1]))
            say(f"  round {rep + 1} {c['name']}: {runs[c['name']][-1]}")
    res: Dict[str, Any] = {"calls": calls, "frames": frames, "repeats": repeats,
                           "skipped": skipped, "configs": {}}
    for name, rs in runs.items():
        res["configs"][name] = {
            "version": rs[0]["version"], "gil_enabled": rs[0]["gil_enabled"],
            "wheel": os.path.basename(next(c["wheel_path"] for c in ready if c["name"] == name)),
            "python": next(c["python"] for c in ready if c["name"] == name),
            **{k: statistics.median(r[k] for r in rs)
               for k in ("zero_copy_run_ns", "model_run_ns", "pool3_ns")},
            "runs": rs}
    # the ratios the goals read: free-threaded against the GIL build of the same source
    for ver in ("3.13", "3.14"):
        nodot = ver.replace(".", "")
        g, f = res["configs"].get(f"{ver} cp{nodot}"), res["configs"].get(f"{ver}t cp{nodot}t")
        a = res["configs"].get(f"{ver} abi3")
        if g and f:
            res.setdefault("ratios", {})[ver] = {
                "ft_zero_copy_vs_gil": f["zero_copy_run_ns"] / g["zero_copy_run_ns"],
                "ft_model_run_vs_gil": f["model_run_ns"] / g["model_run_ns"],
                "ft_pool3_vs_gil": f["pool3_ns"] / g["pool3_ns"]}
        fg = res["configs"].get(f"{ver}t+GIL cp{nodot}t")
        if f and fg:
            res.setdefault("ratios_same_binary", {})[ver] = {
                "ft_pool3_vs_gil_on": f["pool3_ns"] / fg["pool3_ns"],
                "ft_zero_copy_vs_gil_on": f["zero_copy_run_ns"] / fg["zero_copy_run_ns"]}
        if g and a:
            res.setdefault("abi3_cost_ns", {})[ver] = {
                "zero_copy_run": a["zero_copy_run_ns"] - g["zero_copy_run_ns"],
                "model_run": a["model_run_ns"] - g["model_run_ns"]}
    return res


def report(res: Dict[str, Any]) -> str:
    lines = [f"wheels side by side (medians of {res['repeats']} interleaved runs; "
             f"{res['calls']} calls, pool of 3 over {res['frames']} frames in chunks of 100)"]
    lines.append(f"  {'configuration':<14} {'wheel':<44} {'zero-copy run()':>16} "
                 f"{'model.run()':>12} {'pool of 3/frame':>10}")
    for name, c in res["configs"].items():
        lines.append(f"  {name:<14} {c['wheel'][:44]:<44} {c['zero_copy_run_ns']:>13.0f} ns "
                     f"{c['model_run_ns']:>9.0f} ns {c['pool3_ns'] / 1000:>7.1f} us"
                     + ("  (GIL on)" if c["gil_enabled"] and "t" in name.split()[0] else ""))
    for name, c in res["configs"].items():
        lines.append(f"  {name:<14} python {c['version']}: {c['python']}")
    for name, why in res["skipped"].items():
        lines.append(f"  {name:<14} skipped: {why}")
    for ver, r in res.get("ratios", {}).items():
        lines.append(f"  {ver}t / {ver}: zero-copy run() x{r['ft_zero_copy_vs_gil']:.2f}, "
                     f"model.run() x{r['ft_model_run_vs_gil']:.2f} (goal <= 1.3); pool of 3 "
                     f"x{r['ft_pool3_vs_gil']:.2f} (goal <= 0.9)")
    for ver, r in res.get("ratios_same_binary", {}).items():
        lines.append(f"  {ver}t PYTHON_GIL=0 / PYTHON_GIL=1 (one binary): pool of 3 "
                     f"x{r['ft_pool3_vs_gil_on']:.2f}, zero-copy run() "
                     f"x{r['ft_zero_copy_vs_gil_on']:.2f}")
    for ver, r in res.get("abi3_cost_ns", {}).items():
        lines.append(f"  abi3 against cp{ver.replace('.', '')} on {ver}: "
                     f"{r['zero_copy_run']:+.0f} ns per zero-copy run(), "
                     f"{r['model_run']:+.0f} ns per model.run()")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheels", default=str(ROOT / "dist" / "wheels"),
                    help="directory of the x86_64 wheels (scripts/build-wheels --arch x86_64)")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--frames", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.calls, args.frames)))
        return 0
    res = run(Path(args.wheels), args.calls, args.frames, args.repeats)
    print(report(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
