"""The handoff of a Pool of 3 without rknnx: what the interpreter alone costs per frame
(docs/wheels.md, "What each wheel costs").

Three threads take items from a bounded queue and give each back to the caller, which keeps
at most 9 in flight and takes them in order, as ``rknnx.Pool.map`` does with 3 workers and
its default queue of 6; the work is nothing (the item itself), so the handoff is all that
is timed.  Two shapes:

- ``queue+future``: ``queue.Queue(maxsize=6)`` and a ``concurrent.futures.Future`` per item,
  the workers waiting with a timeout (rknnx.Pool until December 2026);
- ``simplequeue``: ``queue.SimpleQueue`` alone, a second one of 6 tokens bounding the
  first, and one of (number, outcome) back to the caller, which reorders (rknnx.Pool now).

Each interpreter runs in a subprocess, the interpreters interleaved, 3 rounds; each figure
is the median over the rounds of the median chunk of 100 items.

    python bench/pool_handoff.py                          # the interpreters found
    python bench/pool_handoff.py --items 3000 --python /usr/bin/python3.11
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

CACHE = Path(os.environ.get("RKNNX_PYTHON_CACHE", "/var/cache/rknnx"))
WORKERS, QUEUE, WINDOW = 3, 6, 9


def _queue_future():
    import queue
    import threading
    from collections import deque
    from concurrent.futures import Future

    jobs = queue.Queue(maxsize=QUEUE)
    stop = object()

    def work():
        while True:
            try:
                job = jobs.get(timeout=0.5)
            except queue.Empty:
                continue
            if job is stop:
                return
            future, item = job
            if future.set_running_or_notify_cancel():
                future.set_result(item)

    threads = [threading.Thread(target=work) for _ in range(WORKERS)]

    def run(n):
        window = deque()
        for k in range(n):
            future = Future()
            jobs.put((future, k))
            window.append(future)
            if len(window) >= WINDOW:
                window.popleft().result()
        while window:
            window.popleft().result()

    return threads, run, lambda: [jobs.put(stop) for _ in threads]


def _simplequeue():
    import queue
    import threading

    jobs, places, outcomes = queue.SimpleQueue(), queue.SimpleQueue(), queue.SimpleQueue()
    for _ in range(QUEUE):
        places.put(None)
    stop = object()

    def work():
        while True:
            try:
                job = jobs.get(timeout=0.5)
            except queue.Empty:
                continue
            if job is stop:
                return
            places.put(None)
            outcomes.put((job, job))

    threads = [threading.Thread(target=work) for _ in range(WORKERS)]

    def run(n):
        arrived = {}
        sent = given = 0
        for k in range(n):
            places.get()
            jobs.put(k)
            sent += 1
            if sent - given >= WINDOW:
                while given not in arrived:
                    i, v = outcomes.get()
                    arrived[i] = v
                arrived.pop(given)
                given += 1
        while given < sent:
            while given not in arrived:
                i, v = outcomes.get()
                arrived[i] = v
            arrived.pop(given)
            given += 1

    return threads, run, lambda: [jobs.put(stop) for _ in threads]


SHAPES = {"queue+future": _queue_future, "simplequeue": _simplequeue}


def worker(items: int) -> Dict[str, float]:
    import time

    out = {}
    for name, make in SHAPES.items():
        threads, run, stop = make()
        for t in threads:
            t.start()
        run(100)
        chunks = []
        for _ in range(max(1, items // 100)):
            t0 = time.perf_counter_ns()
            run(100)
            chunks.append((time.perf_counter_ns() - t0) / 100)
        stop()
        for t in threads:
            t.join()
        out[name] = statistics.median(chunks)
    return out


def interpreters() -> List[Dict[str, object]]:
    """scripts/build-python's GIL and free-threaded builds (both settings of PYTHON_GIL on
    the free-threaded one), where built."""
    found = []
    for flavour in ("3.13", "3.14"):
        gil = CACHE / f"cpython-{flavour}" / "bin" / f"python{flavour}"
        ft = CACHE / f"cpython-{flavour}t" / "bin" / f"python{flavour}t"
        if gil.is_file():
            found.append({"name": flavour, "python": str(gil), "env": {}})
        if ft.is_file():
            found.append({"name": f"{flavour}t", "python": str(ft), "env": {"PYTHON_GIL": "0"}})
            found.append({"name": f"{flavour}t+GIL", "python": str(ft),
                          "env": {"PYTHON_GIL": "1"}})
    return found


def run(items: int = 3000, repeats: int = 3, extra: Optional[List[str]] = None,
        say=print) -> Dict[str, Dict[str, float]]:
    confs = interpreters() + [{"name": os.path.basename(p), "python": p, "env": {}}
                              for p in (extra or [])]
    runs: Dict[str, List[Dict[str, float]]] = {c["name"]: [] for c in confs}
    for rep in range(repeats):                  # interleaved: every interpreter per round
        for c in confs:
            p = subprocess.run([c["python"], str(Path(__file__).resolve()), "--worker",
                                "--items", str(items)], env=dict(os.environ, **c["env"]),
                               capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"{c['name']}: {p.stderr[-2000:]}")
            runs[c["name"]].append(json.loads(p.stdout.strip().splitlines()[-1]))
            say(f"  round {rep + 1} {c['name']}: {runs[c['name']][-1]}")
    return {name: {shape: statistics.median(r[shape] for r in rs) for shape in SHAPES}
            for name, rs in runs.items()}


def report(res: Dict[str, Dict[str, float]], items: int, repeats: int) -> str:
    lines = [f"a Pool of 3's handoff without rknnx, per item (medians of {repeats} "
             f"interleaved runs of {items} items)"]
    lines.append(f"  {'interpreter':<12}" + "".join(f"{s:>16}" for s in SHAPES))
    for name, r in res.items():
        lines.append(f"  {name:<12}" + "".join(f"{r[s] / 1000:>13.1f} us" for s in SHAPES))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--python", action="append", help="another interpreter to run")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.items)))
        return 0
    print(report(run(args.items, args.repeats, args.python), args.items, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
