"""Measure what each flow of rknnx costs, phase by phase (the engine of ``rknnx bench``).

:func:`compare_flows` runs one model through the general flow (float32 and raw outputs)
and the zero-copy flow and returns a JSON-serialisable dict; :func:`format_table` turns it
into a terminal table and :func:`plot` into a PNG (stacked bars of the phases, and the host
CPU per frame).  Pure Python on the facade and numpy; ``matplotlib`` (plots) and ``tqdm``
(progress bars) come with the ``bench`` extra and are optional.  ``bench/suite.py`` builds
the whole suite (C baselines, input sizes, pipelines, threads) on these functions.

What is emulated
----------------
On a board, ``rknn_run`` hands the graph to the NPU and waits: the CPU is idle meanwhile.
On the emulator the NPU's work runs on this CPU inside ``rknn_run``: the graph, and in the
zero-copy flow the input and output conversions a board's NPU does (in the general flow
``rknn_inputs_set`` and ``rknn_outputs_get`` convert on the CPU, on a board too).  The
emulator counts that work (``npu_ns``: wall time; ``npu_cpu_ns``: thread CPU time), so the
figures split into the NPU's share (``npu``) and the host's.  Host CPU per frame is the
process CPU time per frame minus the emulated NPU work's CPU time: what the board's CPU
would spend.  On a board it is the process CPU time, and ``npu`` is
``RKNN_QUERY_PERF_RUN``'s ``run_duration`` when the runtime answers it.

How a frame is split into phases
--------------------------------
Each flow is run three times in the same sitting:

- the *frame* loop runs the public call sequence a user writes (``model.run(x)``; or
  ``session.inputs[0][...] = x; session.run()``) and gives the per-frame latency (median,
  p95), with the emulated NPU work of each frame read from the emulator after it;
- the *CPU* pass runs the same frames with nothing else in the loop: the process CPU time
  and wall time per frame (means over the same frames, so CPU <= wall on one thread), the
  emulated NPU work's CPU time, the bytes the runtime copied per frame (emulator counters)
  and the RSS growth per call;
- the *phase* loop makes the same runtime calls one at a time through :mod:`rknnx.lowlevel`
  with a clock read between them: ``set`` (``rknn_inputs_set``, or the frame's copy into
  the input view), ``run`` (``rknn_run`` without its NPU work: the call, the runtime's
  bookkeeping and its cache maintenance), ``get`` (``rknn_outputs_get``, or taking the
  output views); ``sync`` (the cache clean/invalidate of cacheable zero-copy memory, CPU
  work the runtime does inside ``rknn_run``) is taken out of ``run``: the difference with
  ``rknn_run`` on a session whose runtime leaves the caches alone.

``npu`` is the median frame minus the median frame without its NPU work, and ``python`` is
the median frame without its NPU work minus the host phases: the time the facade spends in
Python around the runtime calls.  The phases add up to the median frame (within a few per
cent where ``python`` is 0: medians of separate loops do not add up exactly).  With the NPU work
taken out of each frame before the medians, the small host phases are not lost in the noise
of a long ``rknn_run``.  The CPU clock the emulator reads for ``npu_cpu_ns`` costs about
0.4 us per run, half of it counted as host CPU: it matters only on a tiny model.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import platform
import statistics
import sys
import textwrap
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

__all__ = ["compare_flows", "detect_stages", "format_detect", "squares_frame", "format_table", "plot", "figure", "machine_info", "stats", "Counters",
           "PHASES", "HOST_PHASES", "FLOWS"]

#: the phases of a frame, in the order they are stacked
PHASES = ("set", "sync", "npu", "run", "get", "python")
#: the phases timed one by one in the phase loop (the host's; ``npu`` and ``python`` are
#: derived, see the module docs)
HOST_PHASES = ("set", "sync", "run", "get")
#: the flows :func:`compare_flows` measures
FLOWS = ("general-float32", "general-raw", "zero-copy")
SCHEMA = "rknnx.benchmark/2"

_clock = time.perf_counter_ns
_cpu = time.process_time_ns
_thread_cpu = time.thread_time_ns


# -- statistics ----------------------------------------------------------------------------
def _percentile(sorted_values: Sequence[float], q: float) -> float:
    n = len(sorted_values)
    return float(sorted_values[min(n - 1, int(round(q / 100 * (n - 1))))])


def stats(samples: Sequence[float]) -> Dict[str, float]:
    """``median_ns``, ``p95_ns``, ``mean_ns``, ``min_ns`` and ``n`` of `samples` (ns)."""
    if not samples:
        return {"median_ns": 0.0, "p95_ns": 0.0, "mean_ns": 0.0, "min_ns": 0.0, "n": 0}
    s = sorted(samples)
    return {"median_ns": float(statistics.median(s)), "p95_ns": _percentile(s, 95),
            "mean_ns": float(sum(s) / len(s)), "min_ns": float(s[0]), "n": len(s)}


def _rss_bytes() -> Optional[int]:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


# -- the machine ---------------------------------------------------------------------------
def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "Model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module: str) -> Optional[str]:
    try:
        return getattr(importlib.import_module(module), "__version__", None)
    except Exception:
        return None


def machine_info(model=None) -> Dict[str, Any]:
    """Where a benchmark ran: OS, CPU, Python, numpy, rknnx, the runtime library (path,
    emulator or not) and, with an open :class:`rknnx.Model`, the runtime's SDK and driver
    versions and the chip."""
    from rknnx import runtime_info

    info = runtime_info()
    m: Dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_name(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "rknnx": _version("rknnx"),
        "runtime_path": info.get("path"),
        "runtime_source": info.get("source"),
        "is_emulator": bool(info.get("is_emulator")),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    if model is not None:
        m.update(sdk_version=model.sdk_version, driver_version=model.driver_version,
                 chip=model.chip)
    ctl = Counters.for_runtime()
    if ctl is not None:
        m["emulator_version"] = ctl.control.version
        m["emulator_platform"] = info.get("platform")
    return m


class Counters:
    """The emulator's counters around a piece of work: bytes copied, and the NPU-side work
    of ``rknn_run`` (None-valued on librknnrt)."""

    def __init__(self, control):
        self.control = control
        self._npu: Optional[Callable[[], int]] = control.counter_reader("npu_ns")

    @classmethod
    def for_runtime(cls) -> Optional["Counters"]:
        """Counters of the loaded runtime if it is the rknnx emulator, else None."""
        from rknnx import runtime_info
        from rknnx.emulator.control import EmulatorControl

        info = runtime_info()
        if not info.get("is_emulator"):
            return None
        try:
            return cls(EmulatorControl(info["path"]))
        except (OSError, AttributeError):
            return None

    def snapshot(self) -> Dict[str, int]:
        return self.control.counters()

    @property
    def counts_npu(self) -> bool:
        """Whether this emulator counts the NPU-side work of ``rknn_run``."""
        return self._npu is not None

    def npu_ns(self) -> int:
        """Cumulative wall ns of the emulated NPU work (one counter read, ~1 us)."""
        return int(self._npu()) if self._npu is not None else 0

    @contextlib.contextmanager
    def npu_cpu_accounting(self) -> Iterator[None]:
        """The emulator counts the thread CPU time of the NPU work (``npu_cpu_ns``) inside."""
        before = self.control.set_npu_cpu_accounting(True)
        try:
            yield
        finally:
            self.control.set_npu_cpu_accounting(before)

    @staticmethod
    def per_frame(before: Dict[str, int], after: Dict[str, int], frames: int) -> Dict[str, float]:
        """Bytes per frame: ``copied_by_api`` (``rknn_inputs_set``/``rknn_outputs_get``
        copies: the general API's), ``cache_synced`` (clean/invalidate of cacheable memory,
        a copy in the emulator, cache maintenance on a board), ``bytes_copied`` (both)."""
        d = {k: after[k] - before[k] for k in ("bytes_in", "bytes_out", "bytes_synced",
                                                "bytes_copied", "syncs", "runs")}
        f = max(frames, 1)
        return {"copied_by_api": (d["bytes_in"] + d["bytes_out"]) / f,
                "bytes_in": d["bytes_in"] / f, "bytes_out": d["bytes_out"] / f,
                "cache_synced": d["bytes_synced"] / f, "bytes_copied": d["bytes_copied"] / f,
                "syncs": d["syncs"] / f, "runs": d["runs"] / f}


class _NpuDelta:
    """The emulated NPU work (ns) since the last call: the emulator's ``npu_ns`` counter."""

    def __init__(self, counters: Counters):
        self.read = counters.npu_ns
        self.last = self.read()

    def __call__(self) -> int:
        now = self.read()
        d, self.last = now - self.last, now
        return d


def _perf_run_ns(ctx) -> Optional[Callable[[], int]]:
    """On librknnrt: the NPU time of the last run of a context or a session
    (``RKNN_QUERY_PERF_RUN``'s run_duration, us -> ns), or None when the runtime does not
    answer it."""
    from rknnx import lowlevel

    def read() -> int:
        if not hasattr(ctx, "query"):                    # a session
            return int(ctx.perf.run_us) * 1000
        return int(ctx.query(lowlevel.QueryCmd.PERF_RUN).run_duration) * 1000

    try:
        read()
    except Exception:
        return None
    return read


# -- progress ------------------------------------------------------------------------------
class _Progress:
    """tqdm when installed and wanted, else a line per step on stderr (or nothing)."""

    def __init__(self, total: int, enabled: bool, desc: str = "bench"):
        self.bar = None
        self.enabled = enabled
        self.done, self.total = 0, total
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=desc, unit="step", leave=False)
            except ImportError:
                pass

    def step(self, what: str) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(what)
            self.bar.update(1)
        elif self.enabled:
            print(f"  [{self.done}/{self.total}] {what}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# -- the measurements ----------------------------------------------------------------------
def frame_loop(body: Callable[[], Any], iterations: int, warmup: int,
               counters: Optional[Counters] = None,
               phases: Optional[tuple] = None) -> Dict[str, Any]:
    """Time `body` per call: latency stats, CPU time per frame, bytes per frame, RSS per
    call.  The garbage collector is off while timing.

    With the emulator's `counters`, the emulated NPU work of each frame is read after it
    (``npu``, and ``frame_host``: each frame without it).  `phases`, ``(steps, names,
    npu_of)``, runs after each frame the same runtime calls one by one with a clock read
    between them (see :func:`phase_loop`; `npu_of` gives a board's NPU time of the ``run``
    step), so frames and phases see the same machine: ``phase_stats`` (per name, ``run``
    without its NPU work, and ``npu``) and ``python`` (per frame, the frame without its NPU
    work minus its runtime calls: its median is the facade's Python time, the noise of
    either loop cancelling out).

    When anything else runs in the timed loop, a second pass over the same number of
    frames with nothing but `body` in the loop, in chunks between chunks of the timed
    frames, gives the process CPU and wall time per frame, the emulated NPU work's CPU time
    (``npu_cpu_ns_per_frame``) and the bytes per frame (medians over the chunks).  The host
    CPU (``host_cpu_ns_per_frame``) is the process CPU minus that NPU work: all of it on a
    board, where the NPU's work takes no CPU time."""
    steps, names, npu_of = phases if phases else ((), (), None)
    for _ in range(warmup):
        body()
        for s in steps:
            s()
    delta = _NpuDelta(counters) if counters is not None and counters.counts_npu else None
    t = _Samples(iterations, list(names), delta, npu_of)
    separate_cpu_pass = delta is not None or bool(steps)
    # the CPU passes run in chunks between chunks of the timed frames: a machine that
    # slows down for a while slows both, and the median chunk leaves the while out
    chunks = min(10, iterations) if separate_cpu_pass else 1
    bounds = [iterations * c // chunks for c in range(chunks + 1)]
    rows = []                                  # (frames, cpu, wall, npu_cpu, bytes)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        if delta is not None:
            delta()
        rss0 = _rss_bytes()
        for c in range(chunks):
            rows.append(_chunk(t, body, steps, bounds[c], bounds[c + 1], counters,
                               separate_cpu_pass))
        rss1 = _rss_bytes()
    finally:
        if gc_was:
            gc.enable()
    record = _frame_record(t, rows, counters, iterations * (2 if separate_cpu_pass else 1),
                           rss0, rss1)
    if steps:
        _phase_record(t, record)
    return record


class _Samples:
    """What :func:`frame_loop` records per frame: the frame's time (``samples``), its
    emulated NPU work (``npu``), and per phase name the time of its steps (``per``, the
    ``run`` step's NPU work taken out into ``pnpu``)."""

    def __init__(self, iterations: int, names: list, delta, npu_of) -> None:
        self.iterations = iterations
        self.samples = [0] * iterations
        self.delta = delta
        self.npu = [0] * iterations if delta is not None else None
        self.phase_npu = delta if delta is not None else npu_of
        self.order = list(dict.fromkeys(names))
        self.slot = [self.order.index(nm) for nm in names]
        self.per = [[0] * iterations for _ in self.order]
        self.ri = names.index("run") if "run" in names else -1
        self.pnpu = [0] * iterations if self.ri >= 0 and self.phase_npu is not None else None


def _chunk(t: _Samples, body, steps, lo: int, hi: int, counters, separate_cpu_pass: bool):
    """Frames `lo` to `hi` timed one by one (with their phases), then, with
    `separate_cpu_pass`, as many frames of `body` alone for the CPU and wall time: the
    chunk's row ``(frames, cpu, wall, npu_cpu, (counters before, after))``."""
    samples, npu, delta, per, slot, ri, pnpu, phase_npu = (
        t.samples, t.npu, t.delta, t.per, t.slot, t.ri, t.pnpu, t.phase_npu)
    before = counters.snapshot() if counters is not None else None
    w0, cpu0 = _clock(), _cpu()
    for k in range(lo, hi):
        t0 = _clock()
        body()
        samples[k] = _clock() - t0
        if npu is not None:
            npu[k] = delta()
        for j, s in enumerate(steps):
            t0 = _clock()
            s()
            dt = _clock() - t0
            if j == ri and pnpu is not None:
                pnpu[k] = min(phase_npu() or 0, dt)
                dt -= pnpu[k]
            per[slot[j]][k] += dt
    cpu, wall = _cpu() - cpu0, _clock() - w0
    if separate_cpu_pass:
        before = counters.snapshot() if counters is not None else None
        with counters.npu_cpu_accounting() if counters is not None \
                else contextlib.nullcontext():
            w0, cpu0 = _clock(), _cpu()
            for _ in range(hi - lo):
                body()
            cpu, wall = _cpu() - cpu0, _clock() - w0
    after = counters.snapshot() if counters is not None else None
    if delta is not None:
        delta()                        # the CPU pass's NPU work is no frame's
    return (hi - lo, cpu, wall,
            after["npu_cpu_ns"] - before["npu_cpu_ns"]
            if after is not None and "npu_cpu_ns" in after else None,
            (before, after))


def _frame_record(t: _Samples, rows: list, counters, calls: int, rss0, rss1) -> Dict[str, Any]:
    """frame_loop's record of the frames: their stats and the medians over the chunks."""
    rows = [r for r in rows if r[0] > 0] or [(1, 0, 0, None, (None, None))]

    def per_frame(i):
        return statistics.median(r[i] / r[0] for r in rows)

    cpu_pf = per_frame(1)
    npu_cpu = per_frame(3) if rows[0][3] is not None else None
    host = statistics.median(max(0.0, (r[1] - (r[3] or 0)) / r[0]) for r in rows)
    frames_measured = sum(r[0] for r in rows)
    bytes_pf = None
    if counters is not None:
        total: Dict[str, Any] = {}
        for r in rows:
            b, a = r[4]
            for key in a:
                total[key] = total.get(key, 0) + a[key] - b[key]
        bytes_pf = Counters.per_frame({k: 0 for k in total}, total, frames_measured)
    samples, npu = t.samples, t.npu
    return {"frame": stats(samples),
            "npu": stats(npu) if npu is not None else None,
            "frame_host": stats([f - p for f, p in zip(samples, npu)]) if npu is not None
            else None,
            "wall_ns_per_frame": per_frame(2), "cpu_ns_per_frame": cpu_pf,
            "npu_cpu_ns_per_frame": npu_cpu,
            "host_cpu_ns_per_frame": host,
            "bytes_per_frame": bytes_pf,
            "rss_bytes_per_call": (rss1 - rss0) / max(calls, 1)
            if rss0 is not None and rss1 is not None else None}


def _phase_record(t: _Samples, record: Dict[str, Any]) -> None:
    """frame_loop's record of the phases: ``phase_stats``, ``python`` (with its standard
    error) and ``timing_floor_ns``, added to `record`."""
    # each step's sample holds the cost of timing it (a clock read and a call, what an
    # empty step measures): taken out of the step, it stays in the frame's python
    floor = timing_floor()
    order, slot, samples, iterations = t.order, t.slot, t.samples, t.iterations
    per = [[max(0.0, v - floor * slot.count(j)) for v in row] for j, row in enumerate(t.per)]
    record["phase_stats"] = {nm: stats(per[j]) for j, nm in enumerate(order)}
    if t.pnpu is not None:
        record["phase_stats"]["npu"] = stats(t.pnpu)
    own = t.npu if t.npu is not None else (t.pnpu or [0] * iterations)
    py = [samples[k] - own[k] - sum(per[j][k] for j in range(len(order)))
          for k in range(iterations)]
    record["python"] = stats(py)
    # the standard error of that median (1.2533 sigma / sqrt(n), sigma from the IQR so
    # that a few preempted frames do not swell it)
    q = sorted(py)
    iqr = _percentile(q, 75) - _percentile(q, 25) if q else 0.0
    record["python"]["se_ns"] = 1.2533 * iqr / 1.349 / max(1, len(q)) ** 0.5
    record["timing_floor_ns"] = floor


def _empty() -> None:
    return None


def timing_floor(iterations: int = 2000) -> float:
    """The median time of an empty Python call timed as a step is (ns): what timing a
    phase adds to it."""
    samples = [0] * iterations
    f = _empty
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for k in range(iterations):
            t0 = _clock()
            f()
            samples[k] = _clock() - t0
    finally:
        if gc_was:
            gc.enable()
    return float(statistics.median(samples))


def phase_loop(steps: Sequence[Callable[[], Any]], names: Sequence[str], iterations: int,
               warmup: int, cpu_of: Optional[str] = None,
               npu_of: Optional[Callable[[], Optional[int]]] = None) -> Dict[str, Any]:
    """Run `steps` in turn per frame with a clock read between them: stats per phase name
    (steps of the same name add up per frame).

    `cpu_of`: also the thread CPU time of that phase (``run_cpu_ns``, median).  `npu_of`:
    called after the ``run`` step, outside the clock, returns the NPU time of that run
    (ns); ``run`` is then the rest of the step and ``npu`` a phase of its own."""
    for _ in range(warmup):
        for s in steps:
            s()
    order = list(dict.fromkeys(names))
    slot = [order.index(nm) for nm in names]
    per = [[0] * iterations for _ in order]
    npu = [0] * iterations if npu_of is not None else None
    cpu_samples = [0] * iterations
    ci = list(names).index(cpu_of) if cpu_of in names else -1
    ri = list(names).index("run") if "run" in names else -1
    if npu_of is not None:
        npu_of()                                  # starts the emulator's delta here
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for k in range(iterations):
            for j, s in enumerate(steps):
                if j == ci:
                    c0 = _thread_cpu()
                    t0 = _clock()
                    s()
                    dt = _clock() - t0
                    cpu_samples[k] = _thread_cpu() - c0
                else:
                    t0 = _clock()
                    s()
                    dt = _clock() - t0
                if j == ri and npu is not None:
                    got = npu_of()
                    npu[k] = min(got or 0, dt)
                    dt -= npu[k]
                per[slot[j]][k] += dt
    finally:
        if gc_was:
            gc.enable()
    out = {name: stats(per[j]) for j, name in enumerate(order)}
    if npu is not None:
        out["npu"] = stats(npu)
    return {"phases": out,
            "run_cpu_ns": float(statistics.median(cpu_samples)) if ci >= 0 else None}


def combine(frame: Dict[str, Any], phases: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One flow's record from :func:`frame_loop` (with its `phases`): every phase of
    :data:`PHASES` (missing ones are 0).  ``npu`` is the median frame minus the median frame
    without its NPU work (on a board, the phase loop's NPU time); ``python`` the median of
    each frame's Python time (0 when the facade adds nothing to the runtime calls: the
    noise then goes either way).  `phases` (a :func:`phase_loop` result) overrides the
    frame's phase stats.  The phases add up to the median frame within the noise of medians
    taken from different samples; ``note`` says when they miss it by more than 5 %."""
    zero = stats([0])
    measured = dict(frame.get("phase_stats") or {})
    if phases:
        measured.update(phases["phases"])
    ph = {p: measured.get(p, zero) for p in HOST_PHASES}
    host = sum(v["median_ns"] for v in ph.values())
    fm = frame["frame"]["median_ns"]
    if frame.get("frame_host"):
        npu = {**frame["npu"], "median_ns": fm - frame["frame_host"]["median_ns"]}
    elif "npu" in measured:
        npu = measured["npu"]
    else:
        npu = zero
    if frame.get("python"):
        python = max(0.0, frame["python"]["median_ns"])
    else:
        python = max(0.0, fm - npu["median_ns"] - host)
    ph["npu"] = npu
    ph["python"] = {"median_ns": python, "p95_ns": None, "mean_ns": None, "min_ns": None,
                    "n": frame["frame"]["n"],
                    "se_ns": (frame.get("python") or {}).get("se_ns")}
    record = {k: v for k, v in frame.items() if k not in ("phase_stats", "python")}
    record["phases"] = {p: ph[p] for p in PHASES}
    if phases and phases.get("run_cpu_ns") is not None:
        record["run_cpu_ns"] = phases["run_cpu_ns"]
    total = sum(v["median_ns"] for v in ph.values())
    if fm > 0 and abs(total - fm) > 0.05 * fm:
        record["note"] = (f"the phases, medians of separate samples, add up to {_ns(total)} "
                          f"against a median frame of {_ns(fm)}: a busy machine")
    return record


def sample_inputs(model) -> List[np.ndarray]:
    """One zero-filled array per input, in the model's layout and the type the facade feeds
    by default (uint8 pixels for a quantized image input)."""
    from rknnx._tensors import default_dtype

    return [np.zeros(t.shape, default_dtype(t)) for t in model.inputs]


def _npu_reader(ctx, counters: Optional[Counters]) -> Optional[Callable[[], Optional[int]]]:
    """The NPU time of `ctx`'s last run on a board; None on the emulator (its counter is
    read by :func:`frame_loop` itself) or when the runtime does not report it."""
    return None if counters is not None else _perf_run_ns(ctx)


def general_flow(model, raw: bool, iterations: int, warmup: int,
                 counters: Optional[Counters] = None) -> Dict[str, Any]:
    """``model.run(*inputs, out=...)`` per frame; phases on a context of the model."""
    xs = sample_inputs(model)
    out = [np.empty(a.shape, a.dtype) for a in model.run(*xs, raw=raw)]
    run = model.run

    def body():
        run(*xs, raw=raw, out=out)

    if not model.supports("rknn_inputs_set"):
        # a chip without the general API (RV1106 ...): model.run goes through zero-copy
        # memory, and there are no rknn_inputs_set / rknn_outputs_get phases to time
        record = combine(frame_loop(body, iterations, warmup, counters))
        record["note"] = (f"{model.chip} has no general API: model.run copies through "
                          "zero-copy memory")
        return record
    ctx = model.new_context()
    try:
        prepared, _ = model.prepare_inputs(xs)
        arrays = [a for a, _ in prepared]
        want_float = not raw
        ctx.inputs_set(arrays)
        ctx.run()
        steps = [lambda: ctx.inputs_set(arrays), ctx.run,
                 lambda: ctx.outputs_get(want_float=want_float, out=out)]
        frame = frame_loop(body, iterations, warmup, counters,
                           phases=(steps, ("set", "run", "get"), _npu_reader(ctx, counters)))
    finally:
        ctx.close()
    return combine(frame)


def zero_copy_flow(model, iterations: int, warmup: int, counters: Optional[Counters] = None,
                   outputs: str = "float32", cacheable: bool = True,
                   frames: Optional[Sequence[np.ndarray]] = None) -> Dict[str, Any]:
    """``session.inputs[i][...] = frame; session.run()`` per frame (the one copy a pipeline
    pays).  Phases on the same session's context, and ``rknn_run`` once more on a session
    whose runtime leaves the caches alone: the difference is the runtime's cache
    maintenance (``sync``), which calling ``rknn_mem_sync`` from Python would overstate."""
    from rknnx import lowlevel

    flags = lowlevel.InitFlag.DISABLE_FLUSH_INPUT_MEM_CACHE | \
        lowlevel.InitFlag.DISABLE_FLUSH_OUTPUT_MEM_CACHE
    with model.zero_copy(outputs=outputs, cacheable=cacheable) as s:
        views = s.inputs
        xs = list(frames) if frames is not None else [np.zeros(v.shape, v.dtype) for v in views]

        def body(views=views, xs=xs, run=s.run):
            for v, x in zip(views, xs):
                v[...] = x
            run()
            return s.outputs

        def copy_in(views=views, xs=xs):
            for v, x in zip(views, xs):
                v[...] = x

        steps = [copy_in, s.run, lambda: s.outputs]
        frame = frame_loop(body, iterations, warmup, counters,
                           phases=(steps, ("set", "run", "get"), _npu_reader(s, counters)))
        del views, body, copy_in, steps
    if cacheable:
        with model.zero_copy(outputs=outputs, cacheable=True, flags=flags, sync=False) as s:
            s.run()
            npu_of = _NpuDelta(counters) if counters is not None and counters.counts_npu \
                else _npu_reader(s, counters)
            bare = phase_loop([s.run], ("run",), max(5, iterations // 2),
                              min(warmup, 5), npu_of=npu_of)
        run, no_sync = frame["phase_stats"]["run"], bare["phases"]["run"]
        sync = max(0.0, run["median_ns"] - no_sync["median_ns"])
        frame["phase_stats"]["sync"] = {"median_ns": sync, "p95_ns": None, "mean_ns": None,
                                        "min_ns": None, "n": no_sync["n"]}
        frame["phase_stats"]["run"] = {**run, "median_ns": run["median_ns"] - sync}
    return combine(frame)


def _open(model):
    from rknnx.model import Model

    if isinstance(model, Model):
        return model, False
    return Model(model), True


def describe_model(model, name: Optional[str] = None) -> Dict[str, Any]:
    """Name (when known), inputs and outputs of `model` as JSON."""
    def t(x):
        return {"name": x.name, "shape": list(x.shape), "dtype": str(x.dtype), "layout": x.layout}

    return {"name": name, "inputs": [t(x) for x in model.inputs],
            "outputs": [t(x) for x in model.outputs], "chip": model.chip}


def npu_work(machine: Dict[str, Any], flows: Dict[str, Any]) -> Dict[str, Any]:
    """What ``npu`` and the host CPU mean in this run (the ``npu_work`` entry of a result)."""
    if machine.get("is_emulator"):
        return {"emulated": True, "source": "emulator counters npu_ns / npu_cpu_ns",
                "text": "emulated: the NPU's work (the graph; in the zero-copy flow also the "
                        "input and output conversions) runs on this CPU inside rknn_run. "
                        "'npu' is that work; host CPU/frame leaves it out (a board's NPU does "
                        "it while its CPU waits)."}
    measured = any(f["phases"]["npu"]["median_ns"] for f in flows.values())
    return {"emulated": False,
            "source": "RKNN_QUERY_PERF_RUN run_duration" if measured else None,
            "text": ("NPU: 'npu' is RKNN_QUERY_PERF_RUN's run_duration; " if measured else
                     "NPU: this runtime does not report its run time ('npu' is 0, 'run' is "
                     "all of rknn_run); ") + "the CPU waits meanwhile, so host CPU/frame is "
                                             "the process CPU time."}


def compare_flows(model, *, iterations: int = 200, warmup: int = 20,
                  progress: bool = False, name: Optional[str] = None) -> Dict[str, Any]:
    """Measure the general flow (float32 and raw outputs) and the zero-copy flow of `model`.

    Parameters
    ----------
    model : str, os.PathLike, bytes or rknnx.Model
        The model (a path or bytes is opened and closed here; an open Model stays open).
    iterations : int
        Timed frames per loop (each flow has a frame loop, a CPU pass on the emulator, and
        a phase loop).
    warmup : int
        Untimed frames before each loop.
    progress : bool
        Show progress (a tqdm bar if installed, else a line per step on stderr).
    name : str, optional
        What to call the model in the table and plot (default: the file's name).

    Returns
    -------
    dict
        JSON-serialisable: ``schema``, ``machine`` (:func:`machine_info`), ``model``
        (name, inputs/outputs), ``npu_work`` (what is emulated, :func:`npu_work`),
        ``iterations``, ``warmup`` and ``flows``: for each of :data:`FLOWS`, ``frame``
        (median/p95/mean/min ns), ``phases`` (median/p95 ns of each of :data:`PHASES`),
        ``cpu_ns_per_frame`` and ``wall_ns_per_frame`` (process CPU and wall time per frame,
        means over the same frames), ``npu_cpu_ns_per_frame`` (the emulated NPU work's CPU
        time; None on librknnrt), ``host_cpu_ns_per_frame`` (the first minus the second),
        ``bytes_per_frame`` (emulator counters, None on librknnrt) and
        ``rss_bytes_per_call``.

    Raises
    ------
    ValueError
        `iterations` < 1 or `warmup` < 0.
    FileNotFoundError, TypeError, RKNNError
        What :class:`rknnx.Model` raises for the model.
    """
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations must be an int >= 1; got {iterations!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0; got {warmup!r}")
    m, owned = _open(model)
    if name is None and isinstance(getattr(m, "path", None), (str, os.PathLike)):
        name = os.path.basename(os.fspath(m.path))
    try:
        counters = Counters.for_runtime()
        bar = _Progress(len(FLOWS), progress, "compare_flows")
        flows: Dict[str, Any] = {}
        try:
            flows["general-float32"] = general_flow(m, False, iterations, warmup, counters)
            bar.step("general-float32")
            flows["general-raw"] = general_flow(m, True, iterations, warmup, counters)
            bar.step("general-raw")
            flows["zero-copy"] = zero_copy_flow(m, iterations, warmup, counters)
            bar.step("zero-copy")
        finally:
            bar.close()
        machine = machine_info(m)
        return {"schema": SCHEMA, "machine": machine, "model": describe_model(m, name),
                "npu_work": npu_work(machine, flows), "iterations": iterations,
                "warmup": warmup, "flows": flows}
    finally:
        if owned:
            m.close()


# -- detection, stage by stage ---------------------------------------------------------------
def squares_frame(width: int = 1920, height: int = 1080, n: int = 4, seed: int = 0
                  ) -> np.ndarray:
    """A dark BGR camera frame with `n` bright squares spread diagonally (what the
    emulator's ``detector`` sample finds)."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 40, (height, width, 3), np.uint8)
    side = max(8, min(width, height) // (n + 1) - 10)
    step_x, step_y = width // (n + 1), height // (n + 1)
    colours = ((255, 255, 255), (255, 0, 0), (0, 220, 0), (0, 0, 255), (0, 200, 255))
    for k in range(n):
        x, y = 10 + k * step_x, 10 + k * step_y
        img[y:y + side, x:x + side] = colours[k % len(colours)]
    return img


def detect_stages(model, family: Optional[str] = None, *, frame: Optional[np.ndarray] = None,
                  iterations: int = 100, warmup: int = 5, workers: int = 1,
                  conf: float = 0.25) -> Dict[str, Any]:
    """Time :class:`rknnx.vision.Detector` frame by frame: p50/p99/mean per stage
    (``letterbox`` into the session's input, ``npu``: the session's run, ``decode``:
    decode, NMS and the mapping back) and per frame, from `frame` (default: a 1920x1080
    BGR :func:`squares_frame`).  With `workers` > 1 the frames go through
    ``Detector.map`` and the throughput is measured too."""
    from rknnx.vision import Detector

    if frame is None:
        frame = squares_frame()
    m, owned = _open(model)
    try:
        with Detector(m, family, workers=workers, conf=conf) as det:
            for _ in range(max(warmup, 0)):
                boxes = len(det.detect(frame))
            det.stage_times(reset=True)
            frames = []
            gc_was = gc.isenabled()
            gc.disable()
            try:
                cpu0 = time.process_time_ns()
                t_all = time.perf_counter_ns()
                if workers == 1:
                    for _ in range(iterations):
                        t0 = time.perf_counter_ns()
                        boxes = len(det.detect(frame))
                        frames.append(time.perf_counter_ns() - t0)
                else:
                    for d in det.map(frame for _ in range(iterations)):
                        boxes = len(d)
                wall = time.perf_counter_ns() - t_all
                cpu = time.process_time_ns() - cpu0
            finally:
                if gc_was:
                    gc.enable()
            stages = det.stage_times()
            result = {"family": det.family, "workers": workers, "iterations": iterations,
                      "frame": [int(frame.shape[1]), int(frame.shape[0])],
                      "input": list(det.input_size), "outputs": det.output_kind,
                      "boxes": boxes, "fps": iterations / (wall / 1e9),
                      "process_cpu_ns_per_frame": cpu / iterations,
                      "stages_ns": {k: {q: v * 1e9 for q, v in stages[k].items()}
                                    for k in ("letterbox", "npu", "decode")}}
            if frames:
                result["frame_ns"] = {**stats(frames),
                                      "p99_ns": _percentile(sorted(frames), 99)}
            result["machine"] = machine_info(m)
            return result
    finally:
        if owned:
            m.close()


def format_detect(result: Dict[str, Any]) -> str:
    """The table of a :func:`detect_stages` result: p50, p99 and mean of each stage."""
    rows = [["stage", "p50", "p99", "mean"]]
    for k in ("letterbox", "npu", "decode"):
        st = result["stages_ns"][k]
        rows.append([k + (" (emul.)" if k == "npu" and result.get("machine", {})
                          .get("is_emulator") else ""),
                     _ns(st["p50"]), _ns(st["p99"]), _ns(st["mean"])])
    if "frame_ns" in result:
        f = result["frame_ns"]
        rows.append(["frame", _ns(f["median_ns"]), _ns(f.get("p99_ns")), _ns(f["mean_ns"])])
    w, h = result["frame"]
    iw, ih = result["input"]
    head = (f"rknnx.vision.Detector ({result['family']}, {result['workers']} worker(s), "
            f"outputs {result['outputs']}): {w}x{h} BGR frame -> {iw}x{ih} input, "
            f"{result['iterations']} frames, {result['boxes']} boxes a frame")
    tail = (f"{result['fps']:.1f} frames/s; process CPU per frame "
            f"{_ns(result['process_cpu_ns_per_frame'])}")
    if result.get("machine", {}).get("is_emulator"):
        tail += " (the emulated NPU work included: it runs on this CPU)"
    return "\n".join([head, *_aligned(rows), tail])


# -- presentation --------------------------------------------------------------------------
def _ns(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.1f} us"
    return f"{v:.0f} ns"


def _bytes(v: Optional[float]) -> str:
    if v is None:
        return "-"
    for unit, size in (("MB", 1 << 20), ("kB", 1 << 10)):
        if abs(v) >= size:
            return f"{v / size:.1f} {unit}"
    return f"{v:.0f} B"


def _runtime_name(m: Dict[str, Any]) -> str:
    version = (m.get("sdk_version") or "").split(" (")[0]
    if m.get("is_emulator"):
        return f"CPU emulator of librknnrt {version}".rstrip()
    return f"librknnrt {version} on the board".replace("  ", " ")


def _model_name(result: Dict[str, Any]) -> str:
    model = result.get("model", {})
    ins = ", ".join(f"{t['name']} {'x'.join(map(str, t['shape']))} {t['dtype']}"
                    for t in model.get("inputs", []))
    return f"{model.get('name') or 'model'} ({ins})" if ins else (model.get("name") or "model")


def format_table(result: Dict[str, Any]) -> str:
    """The terminal tables of a :func:`compare_flows` result, at most about 100 characters
    wide: the title; the latency table, one row per flow (frame median and p95, the phase
    medians; and the ratio to the C loop when the result carries ``c_median_ns``); the cost
    table (process and host CPU per frame, bytes the API copied, RSS per call); then notes
    (what is emulated, what the columns mean) and the machine."""
    emulated = bool(result.get("machine", {}).get("is_emulator"))
    head = ["flow", "median", "p95", *(("npu (emul.)" if p == "npu" and emulated else p)
                                       for p in PHASES)]
    cost_head = ["flow", "CPU/frame", "host CPU/frame", "API copies", "RSS/call"]
    with_c = any("c_median_ns" in f for f in result["flows"].values())
    if with_c:
        head.insert(3, "vs C")
    rows, cost_rows = [head], [cost_head]
    for name, f in result["flows"].items():
        b = f.get("bytes_per_frame")
        row = [name, _ns(f["frame"]["median_ns"]), _ns(f["frame"]["p95_ns"]),
               *(_ns(f["phases"][p]["median_ns"]) for p in PHASES)]
        if with_c:
            c = f.get("c_median_ns")
            row.insert(3, f"x{f['frame']['median_ns'] / c:.2f}" if c else "-")
        rows.append(row)
        cost_rows.append([name, _ns(f["cpu_ns_per_frame"]), _ns(f.get("host_cpu_ns_per_frame")),
                          _bytes(b["copied_by_api"]) if b else "-",
                          _bytes(f.get("rss_bytes_per_call"))])
    m = result.get("machine", {})
    title = f"{_model_name(result)} on {m.get('chip', '?')}, {_runtime_name(m)}"
    notes = []
    work = result.get("npu_work") or npu_work(result.get("machine", {}), result["flows"])
    notes.append(work["text"])
    notes.append("phases: medians that add up to the median frame, within the noise; "
                 "CPU/frame: the process CPU time per frame" +
                 ("; host CPU/frame: without the emulated NPU work" if emulated else ""))
    notes += sorted({f"{name}: {f['note']}" for name, f in result["flows"].items()
                     if f.get("note")})
    noisy = [(name, f["phases"]["python"]) for name, f in result["flows"].items()
             if (f["phases"]["python"].get("se_ns") or 0) > 0.25 * max(
                 f["phases"]["python"]["median_ns"], 1e3)]
    if noisy:
        notes.append("python is the median of each frame's own Python time; here "
                     + ", ".join(f"{name} {_ns(p['median_ns'])} +- {_ns(p['se_ns'])}"
                                 for name, p in noisy)
                     + f" at {noisy[0][1]['n']} frames (a busy machine: more frames narrow "
                       "it)")
    if m:
        notes.append(f"machine: {m.get('cpu', '?')} | python {m.get('python', '?')} | numpy "
                     f"{m.get('numpy', '?')} | rknnx {m.get('rknnx', '?')}")
    wrapped = [textwrap.fill(f"({n})", 100, subsequent_indent=" ") for n in notes]
    return "\n".join([title, *_aligned(rows), "", *_aligned(cost_rows), *wrapped])


def _aligned(rows: List[List[str]]) -> List[str]:
    """Rows as text columns: the first left-aligned, the others right-aligned, a rule under
    the header."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'rknnx[bench]' "
                          "(or pip install matplotlib)") from None
    return plt


def check_plotting() -> None:
    """Raise the ImportError :func:`plot` would raise, before anything is measured."""
    _pyplot()


_COLOURS = {"set": "#4c72b0", "sync": "#8172b2", "npu": "#b5dba0", "run": "#55a868",
            "get": "#dd8452", "python": "#c44e52"}


def unit_for(ns: float):
    """(divisor, name) that shows `ns` best: ms from 1 ms, us from 1 us, else ns."""
    if ns >= 1e6:
        return 1e6, "ms"
    if ns >= 1e3:
        return 1e3, "us"
    return 1.0, "ns"


def _fmt(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def stacked_phases(ax, labels: Sequence[str], flows: Sequence[Dict[str, Any]],
                   unit: Optional[float] = None, unit_name: Optional[str] = None,
                   emulated: bool = False, totals: bool = True) -> list:
    """Draw one stacked bar per flow (its phase medians, the NPU's share hatched) on a
    matplotlib axis, with the median frame on top of each bar.  `unit`/`unit_name` default to what
    shows the largest frame best.  Returns (handles, labels) for a legend off the bars."""
    if unit is None or unit_name is None:
        unit, unit_name = unit_for(max([f["frame"]["median_ns"] for f in flows] + [1.0]))
    bottom = np.zeros(len(flows))
    handles, names = [], []
    for p in PHASES:
        h = np.array([f["phases"][p]["median_ns"] / unit for f in flows])
        bars = ax.bar(range(len(flows)), h, bottom=bottom, color=_COLOURS[p], width=0.6,
                      hatch="//" if p == "npu" else None, edgecolor="white", linewidth=0.5)
        handles.append(bars)
        names.append("npu (emulated on the CPU)" if p == "npu" and emulated else p)
        bottom += h
    top = float(bottom.max()) if len(bottom) else 1.0
    if totals:
        for x, (height, f) in enumerate(zip(bottom, flows)):
            ax.text(x, height + top * 0.015, f"{_fmt(f['frame']['median_ns'] / unit)} {unit_name}",
                    ha="center", va="bottom", fontsize=9)
    ax.set_ylim(0, top * 1.12 if top > 0 else 1)
    ax.set_xticks(range(len(flows)))
    ax.set_xticklabels(labels)
    ax.set_ylabel(f"median per frame ({unit_name})")
    ax.margins(x=0.08)
    return [handles, names]


def plot(result: Dict[str, Any], path) -> None:
    """Write a PNG of a :func:`compare_flows` result: latency per phase (one stacked bar
    per flow) and host CPU per frame, titled with the model, the chip and the runtime.

    Raises
    ------
    ImportError
        matplotlib is not installed (it comes with the ``bench`` extra).
    """
    plt = _pyplot()
    fig = figure(result)
    fig.savefig(os.fspath(path), dpi=110)
    plt.close(fig)


def figure(result: Dict[str, Any]):
    """The matplotlib figure :func:`plot` saves (the caller closes it).

    Raises
    ------
    ImportError
        matplotlib is not installed.
    """
    plt = _pyplot()
    names = list(result["flows"])
    flows = [result["flows"][n] for n in names]
    m = result.get("machine", {})
    emulated = bool(m.get("is_emulator"))
    fig, (ax, cx) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    handles, labels = stacked_phases(ax, names, flows, emulated=emulated)
    ax.set_title("latency per frame, by phase", fontsize=10)
    host = [f.get("host_cpu_ns_per_frame") or 0.0 for f in flows]
    unit, unit_name = unit_for(max(host + [1.0]))
    vals = [h / unit for h in host]
    cx.bar(range(len(flows)), vals, color="#937860", width=0.6)
    top = max(vals + [1e-9])
    for x, v in enumerate(vals):
        cx.text(x, v + top * 0.015, f"{_fmt(v)} {unit_name}", ha="center", va="bottom",
                fontsize=9)
    g = result["flows"].get("general-float32", {}).get("host_cpu_ns_per_frame")
    z = result["flows"].get("zero-copy", {}).get("host_cpu_ns_per_frame")
    if g and z and "zero-copy" in names:
        k = names.index("zero-copy")
        cx.text(k, vals[k] + top * 0.09, f"{g / z:.1f}x less", ha="center", va="bottom",
                fontsize=9, fontweight="bold")
    cx.set_ylim(0, top * 1.2)
    cx.set_xticks(range(len(flows)))
    cx.set_xticklabels(names)
    cx.margins(x=0.08)
    cx.set_ylabel(f"per frame ({unit_name})")
    cx.set_title("host CPU per frame" + (" (emulated NPU work left out)" if emulated else ""),
                 fontsize=10)
    for a in (ax, cx):
        a.tick_params(axis="x", labelsize=9)
        a.spines[["top", "right"]].set_visible(False)
    fig.suptitle(f"{_model_name(result)} on {m.get('chip', '?')}, {_runtime_name(m)}",
                 fontsize=11)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False,
               fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
