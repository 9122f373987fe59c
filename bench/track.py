"""The ``track`` scenario of bench/suite.py, and a script of its own: what one
``rknnx.vision.Tracker.update`` costs at 5, 20 and 100 objects against roboflow
``trackers`` 2.6.1's ByteTrack on the same detections (and norfair, when it is installed:
norfair 2.3 requires numpy < 2), interleaved, medians of 3.  The measuring is
``rknnx._track_bench`` (``rknnx bench --track`` prints the same).

Usage::

    python bench/track.py [--frames 300] [--json FILE]

Goal (issue 38, item 5): >= 30x less time per update than trackers at 20 and 100 objects.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict


def scenario(quick: bool, say=None) -> Dict[str, Any]:
    from rknnx import _track_bench
    return _track_bench.measure(frames=60 if quick else 300, reps=3, say=say)


def report_lines(r: Dict[str, Any]) -> str:
    from rknnx import _track_bench
    return _track_bench.format_result(r)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=300, help="frames per run (300)")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON")
    args = p.parse_args(argv)
    from rknnx import _track_bench
    r = _track_bench.measure(frames=args.frames)
    print(_track_bench.format_result(r))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
