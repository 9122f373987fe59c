"""``rknnx bench MODEL``: the general flow against the zero-copy flow, phase by phase
(set/convert, sync, NPU work, run, get/convert, Python overhead), and the host CPU each
flow spends per frame, with a progress bar, a table, --json and --plot; with --detect, a
YOLO model's frames through rknnx.vision.Detector stage by stage (letterbox, NPU, decode:
p50 and p99); with --track (no MODEL), rknnx.vision.Tracker.update at 5, 20 and 100
objects against roboflow trackers' ByteTrack (and norfair) on the same detections.

On the emulator the NPU's work runs on this CPU: the host CPU per frame leaves it out.  The
measuring is rknnx.benchmark's; the full suite with C baselines, frame sizes, pools and
detector frames is bench/ in the source tree.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

from rknnx.cli._common import (UserError, add_model_arguments, help_text, load_runtime,
                               open_model)


def _iterations(model, seconds: float) -> int:
    """Frames per flow that fit in about `seconds` (at least 20, at most 2000)."""
    import time

    from rknnx import benchmark

    xs = benchmark.sample_inputs(model)
    model.run(*xs)
    t0 = time.perf_counter()
    for _ in range(3):
        model.run(*xs)
    per_frame = max((time.perf_counter() - t0) / 3, 1e-6)
    # each flow runs its frames three times (the frame loop, the CPU pass, the phase loop)
    # plus the warm-ups
    return int(min(2000, max(20, seconds / per_frame / 3.5)))


def _times(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "inf x"


def verdict(result) -> str:
    """What the zero-copy flow saves against the general flow (float32): host CPU, latency
    and bytes copied, in words."""
    from rknnx.benchmark import _bytes, _ns

    g = result["flows"].get("general-float32")
    z = result["flows"].get("zero-copy")
    if not g or not z:
        return ""
    lines = []
    gh, zh = g.get("host_cpu_ns_per_frame"), z.get("host_cpu_ns_per_frame")
    if gh is not None and zh is not None:
        if zh <= gh:
            lines.append(f"zero-copy saves {_ns(gh - zh)} of host CPU per frame "
                         f"({_times(gh, zh)} less: {_ns(zh)} instead of {_ns(gh)})")
        else:
            lines.append(f"zero-copy costs {_ns(zh - gh)} more host CPU per frame "
                         f"({_ns(zh)} instead of {_ns(gh)})")
    gm, zm = g["frame"]["median_ns"], z["frame"]["median_ns"]
    gn, zn = g["phases"]["npu"]["median_ns"], z["phases"]["npu"]["median_ns"]
    latency = f"latency per frame (median): {_ns(gm)} -> {_ns(zm)}"
    if result.get("npu_work", {}).get("emulated"):
        latency += (f", of which emulated NPU work {_ns(gn)} -> {_ns(zn)} (this CPU's speed "
                    "and load, not a board's NPU; zero-copy's includes the input and output "
                    "conversions the general flow does on the host)")
    lines.append(latency)
    gb = (g.get("bytes_per_frame") or {}).get("copied_by_api")
    zb = (z.get("bytes_per_frame") or {}).get("copied_by_api")
    if gb is not None and zb is not None:
        lines.append(f"bytes copied by the API per frame: {_bytes(gb)} -> {_bytes(zb)}")
    return "\n".join(lines)


def run_detect(args) -> int:
    """``--detect``: rknnx.vision.Detector stage by stage (letterbox, NPU, decode)."""
    from rknnx import benchmark

    load_runtime()
    with open_model(args) as model:
        n = args.iterations or 50
        try:
            result = benchmark.detect_stages(model, args.family, iterations=n,
                                             warmup=args.warmup, workers=args.workers)
        except ValueError as exc:
            raise UserError(str(exc)) from exc
    if args.json == "-":
        print(json.dumps(result, indent=2))
        return 0
    print(benchmark.format_detect(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")
    return 0


def run_track(args) -> int:
    """``--track``: the time per Tracker.update against trackers' ByteTrack (and norfair)."""
    from rknnx import _track_bench

    if args.model or args.sample or args.detect or args.plot:
        raise UserError("--track times the tracker alone: no MODEL, --sample, --detect or "
                        "--plot")
    frames = args.iterations or 300
    result = _track_bench.measure(frames=frames)
    if args.json == "-":
        print(json.dumps(result, indent=2))
        return 0
    print(_track_bench.format_result(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")
    return 0


def run(args) -> int:
    from rknnx import benchmark

    if args.track:
        if args.iterations is not None and args.iterations < 1:
            raise UserError(f"--iterations must be >= 1; got {args.iterations}")
        return run_track(args)

    if args.iterations is not None and args.iterations < 1:
        raise UserError(f"--iterations must be >= 1; got {args.iterations}")
    if args.seconds <= 0:
        raise UserError(f"--seconds must be > 0; got {args.seconds}")
    if args.plot and not args.plot.lower().endswith(".png"):
        raise UserError(f"--plot writes a PNG: give a FILE.png, got {args.plot!r}")
    for path in (args.plot, args.json if args.json != "-" else None):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UserError(f"the folder of {path!r} does not exist")
    if args.detect:
        if args.plot:
            raise UserError("--plot draws the flows, not --detect's stages")
        if args.workers < 1:
            raise UserError(f"--workers must be >= 1; got {args.workers}")
        return run_detect(args)
    if args.plot:
        benchmark.check_plotting()          # before minutes of measuring, not after
    load_runtime()
    with open_model(args) as model:
        iterations = args.iterations or _iterations(model, args.seconds)
        name = args.sample or os.path.basename(args.model)
        result = benchmark.compare_flows(model, iterations=iterations, warmup=args.warmup,
                                         progress=not args.no_progress and sys.stderr.isatty(),
                                         name=name)
    if args.json == "-":
        print(json.dumps(result, indent=2))
    else:
        print(benchmark.format_table(result))
        try:
            line = verdict(result)
        except (KeyError, TypeError, ZeroDivisionError):   # a result without both flows
            line = ""
        if line:
            # lines of at most about 100 characters: a terminal's width
            print("\n".join(textwrap.fill(t, 100, subsequent_indent="  ")
                            for t in line.split("\n")))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2)
            print(f"wrote {args.json}")
    if args.plot:
        benchmark.plot(result, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr if args.json == "-" else sys.stdout)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="general vs zero-copy flow, phase by phase",
                       description=help_text(__doc__))
    add_model_arguments(p)
    p.add_argument("--iterations", "-n", type=int, default=None,
                   help="frames per flow (default: what fits in --seconds)")
    p.add_argument("--seconds", type=float, default=4.0,
                   help="time budget per flow when -n is not given (4)")
    p.add_argument("--warmup", type=int, default=5, help="frames run first, not timed (5)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON (- for stdout)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="write a plot of the phases and the host CPU per frame (needs "
                        "matplotlib: pip install 'rknnx[bench]')")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--detect", action="store_true",
                   help="time a YOLO model's frames through rknnx.vision.Detector instead: "
                        "p50/p99 per stage (letterbox, NPU, decode) from a 1920x1080 frame")
    p.add_argument("--family", default=None,
                   help="with --detect: the model's family (default: from its outputs)")
    p.add_argument("--workers", type=int, default=1,
                   help="with --detect: Detector workers (sessions, one per NPU core)")
    p.add_argument("--track", action="store_true",
                   help="time rknnx.vision.Tracker.update at 5, 20 and 100 objects against "
                        "roboflow trackers' ByteTrack and norfair when installed (-n: "
                        "frames per run, 300)")
    p.set_defaults(func=run)
