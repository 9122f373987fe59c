"""``rknnx bench MODEL``: the general flow against the zero-copy flow, phase by phase
(set/convert, sync, run, get/convert, Python overhead), with a progress bar, a table,
``--json`` and ``--plot``.  The measuring is :mod:`rknnx.benchmark`'s; the full suite with
C baselines, frame sizes, pools and detector frames is ``bench/`` in the source tree."""

from __future__ import annotations

import json
import sys

from rknnx.cli._common import add_model_arguments, load_runtime, open_model


def run(args) -> int:
    from rknnx import benchmark

    load_runtime()
    with open_model(args) as model:
        result = benchmark.compare_flows(model, iterations=args.iterations, warmup=args.warmup,
                                         progress=not args.no_progress and sys.stderr.isatty())
    if args.json == "-":
        print(json.dumps(result, indent=2))
    else:
        print(benchmark.format_table(result))
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
                       description=__doc__.splitlines()[0].replace("``", ""))
    add_model_arguments(p)
    p.add_argument("--iterations", "-n", type=int, default=200, help="frames per flow (200)")
    p.add_argument("--warmup", type=int, default=20, help="frames run first, not timed (20)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON (- for stdout)")
    p.add_argument("--plot", metavar="FILE.png", help="write a plot of the phases (matplotlib)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
