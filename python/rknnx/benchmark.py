"""Measure what each flow of rknnx costs, phase by phase (the engine of ``rknnx bench``).

:func:`compare_flows` runs one model through the general flow (float32 and raw outputs)
and the zero-copy flow and returns a JSON-serialisable dict; :func:`format_table` turns it
into a terminal table and :func:`plot` into a PNG (stacked bars of the phases).  Pure
Python on the facade and numpy; ``matplotlib`` (plots) and ``tqdm`` (progress bars) come
with the ``bench`` extra and are optional.  ``bench/suite.py`` builds the whole suite (C
baselines, input sizes, pipelines, threads) on these functions.

How a frame is split into phases
--------------------------------
Each flow is timed twice, in the same sitting:

- the *frame* loop runs the public call sequence a user writes (``model.run(x)``; or
  ``session.inputs[0][...] = x; session.run()``) and gives the per-frame latency (median,
  p95), the process CPU time per frame, the bytes the runtime copied per frame (emulator
  counters) and the RSS growth per call;
- the *phase* loop makes the same runtime calls one at a time through
  :mod:`rknnx.lowlevel` with a clock read between them: ``set`` (``rknn_inputs_set``, or the
  frame's copy into the input view), ``sync`` (cache clean/invalidate of cacheable
  zero-copy memory: the runtime's own job by default, timed here on a session that
  takes it over), ``run`` (``rknn_run``), ``get`` (``rknn_outputs_get``, or taking the
  output views).

``python`` is the frame median minus the sum of the phase medians: the time the facade
spends in Python around the runtime calls.  On the emulator ``rknn_run`` computes the
model on the CPU; ``run_cpu_ns`` (thread CPU time inside ``rknn_run``) says how much of the
CPU time per frame that is, time the NPU, not the CPU, spends on a board.
"""

from __future__ import annotations

import gc
import importlib
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["compare_flows", "format_table", "plot", "machine_info", "stats", "Counters",
           "PHASES", "FLOWS"]

#: the phases of a frame, in the order they are stacked
PHASES = ("set", "sync", "run", "get", "python")
#: the flows :func:`compare_flows` measures
FLOWS = ("general-float32", "general-raw", "zero-copy")
SCHEMA = "rknnx.benchmark/1"

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
        m["emulator_platform"] = ctl.control.platform
    return m


class Counters:
    """The emulator's byte counters around a piece of work (None-valued on librknnrt)."""

    def __init__(self, control):
        self.control = control

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
               counters: Optional[Counters] = None) -> Dict[str, Any]:
    """Time `body` per call: latency stats, CPU time per frame, bytes per frame, RSS per
    call.  The garbage collector is off while timing."""
    for _ in range(warmup):
        body()
    samples = [0] * iterations
    gc_was = gc.isenabled()
    gc.disable()
    try:
        before = counters.snapshot() if counters else None
        rss0 = _rss_bytes()
        cpu0 = _cpu()
        for k in range(iterations):
            t0 = _clock()
            body()
            samples[k] = _clock() - t0
        cpu = _cpu() - cpu0
        rss1 = _rss_bytes()
        after = counters.snapshot() if counters else None
    finally:
        if gc_was:
            gc.enable()
    n = max(iterations, 1)
    return {"frame": stats(samples), "cpu_ns_per_frame": cpu / n,
            "bytes_per_frame": Counters.per_frame(before, after, n) if counters else None,
            "rss_bytes_per_call": (rss1 - rss0) / n if rss0 is not None and rss1 is not None
            else None}


def phase_loop(steps: Sequence[Callable[[], Any]], names: Sequence[str], iterations: int,
               warmup: int, cpu_of: Optional[str] = "run") -> Dict[str, Any]:
    """Run `steps` in turn per frame with a clock read between them: stats per phase name
    (and thread CPU time of the phase `cpu_of`)."""
    for _ in range(warmup):
        for s in steps:
            s()
    per = [[0] * iterations for _ in steps]
    cpu_samples = [0] * iterations
    ci = list(names).index(cpu_of) if cpu_of in names else -1
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for k in range(iterations):
            for j, s in enumerate(steps):
                if j == ci:
                    c0 = _thread_cpu()
                    t0 = _clock()
                    s()
                    per[j][k] = _clock() - t0
                    cpu_samples[k] = _thread_cpu() - c0
                else:
                    t0 = _clock()
                    s()
                    per[j][k] = _clock() - t0
    finally:
        if gc_was:
            gc.enable()
    out = {name: stats(per[j]) for j, name in enumerate(names)}
    return {"phases": out, "run_cpu_ns": float(statistics.median(cpu_samples)) if ci >= 0 else 0.0}


def combine(frame: Dict[str, Any], phases: Dict[str, Any]) -> Dict[str, Any]:
    """One flow's record: the frame loop's figures and every phase of :data:`PHASES`
    (missing ones are 0; ``python`` is the frame median minus the other phases)."""
    ph = {p: phases["phases"].get(p, stats([0])) for p in PHASES if p != "python"}
    rest = frame["frame"]["median_ns"] - sum(v["median_ns"] for v in ph.values())
    ph["python"] = {"median_ns": max(0.0, rest), "p95_ns": None, "mean_ns": None,
                    "min_ns": None, "n": frame["frame"]["n"]}
    return {**frame, "phases": ph, "run_cpu_ns": phases["run_cpu_ns"]}


def sample_inputs(model) -> List[np.ndarray]:
    """One zero-filled array per input, in the model's layout and the type the facade feeds
    by default (uint8 pixels for a quantized image input)."""
    from rknnx._tensors import default_dtype

    return [np.zeros(t.shape, default_dtype(t)) for t in model.inputs]


def general_flow(model, raw: bool, iterations: int, warmup: int,
                 counters: Optional[Counters] = None) -> Dict[str, Any]:
    """``model.run(*inputs, out=...)`` per frame; phases on a context of the model."""
    xs = sample_inputs(model)
    out = [np.empty(a.shape, a.dtype) for a in model.run(*xs, raw=raw)]
    run = model.run
    frame = frame_loop(lambda: run(*xs, raw=raw, out=out), iterations, warmup, counters)
    if not model._general:
        # a chip without the general API (RV1106 ...): model.run goes through zero-copy
        # memory, and there are no rknn_inputs_set / rknn_outputs_get phases to time
        record = combine(frame, {"phases": {}, "run_cpu_ns": 0.0})
        record["note"] = (f"{model.chip} has no general API: model.run copies through "
                          "zero-copy memory")
        return record
    ctx = model._new_context()
    try:
        prepared, _ = model.prepare_inputs(xs)
        arrays = [a for a, _ in prepared]
        want_float = not raw
        phases = phase_loop([lambda: ctx.inputs_set(arrays), ctx.run,
                             lambda: ctx.outputs_get(want_float=want_float, out=out)],
                            ("set", "run", "get"), iterations, warmup)
    finally:
        ctx.close()
    return combine(frame, phases)


def zero_copy_flow(model, iterations: int, warmup: int, counters: Optional[Counters] = None,
                   outputs: str = "float32", cacheable: bool = True,
                   frames: Optional[Sequence[np.ndarray]] = None) -> Dict[str, Any]:
    """``session.inputs[i][...] = frame; session.run()`` per frame (the one copy a pipeline
    pays); phases on a second session that does its own cache maintenance."""
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

        frame = frame_loop(body, iterations, warmup, counters)
        del views, body
    with model.zero_copy(outputs=outputs, cacheable=cacheable, flags=flags, sync=False) as s:
        views = s.inputs

        def copy_in(views=views, xs=xs):
            for v, x in zip(views, xs):
                v[...] = x

        def sync():
            s.sync_inputs()
            s.sync_outputs()

        phases = phase_loop([copy_in, sync, s._ctx.run, lambda: s.outputs],
                            ("set", "sync", "run", "get"), iterations, warmup)
        del views, copy_in
    return combine(frame, phases)


def _open(model):
    from rknnx.model import Model

    if isinstance(model, Model):
        return model, False
    return Model(model), True


def describe_model(model) -> Dict[str, Any]:
    """Inputs and outputs of `model` as JSON."""
    def t(x):
        return {"name": x.name, "shape": list(x.shape), "dtype": str(x.dtype), "layout": x.layout}

    return {"inputs": [t(x) for x in model.inputs], "outputs": [t(x) for x in model.outputs],
            "chip": model.chip}


def compare_flows(model, *, iterations: int = 200, warmup: int = 20,
                  progress: bool = False) -> Dict[str, Any]:
    """Measure the general flow (float32 and raw outputs) and the zero-copy flow of `model`.

    Parameters
    ----------
    model : str, os.PathLike, bytes or rknnx.Model
        The model (a path or bytes is opened and closed here; an open Model stays open).
    iterations : int
        Timed frames per loop (each flow has a frame loop and a phase loop).
    warmup : int
        Untimed frames before each loop.
    progress : bool
        Show progress (a tqdm bar if installed, else a line per step on stderr).

    Returns
    -------
    dict
        JSON-serialisable: ``schema``, ``machine`` (:func:`machine_info`), ``model``
        (inputs/outputs), ``iterations``, ``warmup`` and ``flows``: for each of
        :data:`FLOWS`, ``frame`` (median/p95/mean/min ns), ``phases`` (median/p95 ns of each
        of :data:`PHASES`), ``cpu_ns_per_frame``, ``run_cpu_ns``, ``bytes_per_frame``
        (emulator counters, None on librknnrt) and ``rss_bytes_per_call``.

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
        return {"schema": SCHEMA, "machine": machine_info(m), "model": describe_model(m),
                "iterations": iterations, "warmup": warmup, "flows": flows}
    finally:
        if owned:
            m.close()


# -- presentation --------------------------------------------------------------------------
def _ns(v: Optional[float]) -> str:
    if v is None:
        return "-"
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e4:
        return f"{v / 1e3:.1f} us"
    return f"{v:.0f} ns"


def _bytes(v: Optional[float]) -> str:
    if v is None:
        return "-"
    for unit, size in (("MB", 1 << 20), ("kB", 1 << 10)):
        if abs(v) >= size:
            return f"{v / size:.1f} {unit}"
    return f"{v:.0f} B"


def format_table(result: Dict[str, Any]) -> str:
    """The terminal table of a :func:`compare_flows` result: one row per flow (frame median
    and p95, the phase medians, CPU per frame, bytes the API copied, RSS per call; and the
    ratio to the C loop when the result carries ``c_median_ns``)."""
    head = ["flow", "median", "p95", *PHASES, "CPU/frame", "API copies", "RSS/call"]
    with_c = any("c_median_ns" in f for f in result["flows"].values())
    if with_c:
        head.insert(3, "vs C")
    rows = [head]
    for name, f in result["flows"].items():
        b = f.get("bytes_per_frame")
        row = [name, _ns(f["frame"]["median_ns"]), _ns(f["frame"]["p95_ns"]),
               *(_ns(f["phases"][p]["median_ns"]) for p in PHASES),
               _ns(f["cpu_ns_per_frame"]), _bytes(b["copied_by_api"]) if b else "-",
               _bytes(f.get("rss_bytes_per_call"))]
        if with_c:
            c = f.get("c_median_ns")
            row.insert(3, f"x{f['frame']['median_ns'] / c:.2f}" if c else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    m = result.get("machine", {})
    title = (f"{m.get('cpu', '?')} | python {m.get('python', '?')} | numpy {m.get('numpy', '?')}"
             f" | rknnx {m.get('rknnx', '?')} | "
             f"{'emulator' if m.get('is_emulator') else 'librknnrt'} {m.get('sdk_version', '')}"
             f" | {m.get('chip', '')}")
    notes = sorted({f["note"] for f in result["flows"].values() if f.get("note")})
    return title + "\n" + "\n".join(lines) + "".join(f"\n({n})" for n in notes)


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'rknnx[bench]' "
                          "(or pip install matplotlib)") from None
    return plt


_COLOURS = {"set": "#4c72b0", "sync": "#8172b2", "run": "#55a868", "get": "#dd8452",
            "python": "#c44e52"}


def stacked_phases(ax, labels: Sequence[str], flows: Sequence[Dict[str, Any]],
                   unit: float = 1e3, unit_name: str = "us") -> None:
    """Draw one stacked bar per flow (its phase medians) on a matplotlib axis."""
    bottom = np.zeros(len(flows))
    for p in PHASES:
        h = np.array([f["phases"][p]["median_ns"] / unit for f in flows])
        ax.bar(range(len(flows)), h, bottom=bottom, label=p, color=_COLOURS[p])
        bottom += h
    ax.set_xticks(range(len(flows)))
    ax.set_xticklabels(labels, rotation=30, ha="right")
    ax.set_ylabel(f"median per frame ({unit_name})")
    ax.legend()


def plot(result: Dict[str, Any], path) -> None:
    """Write a PNG of a :func:`compare_flows` result: latency per phase, one stacked bar
    per flow.

    Raises
    ------
    ImportError
        matplotlib is not installed (it comes with the ``bench`` extra).
    """
    plt = _pyplot()
    names = list(result["flows"])
    fig, ax = plt.subplots(figsize=(1.6 * len(names) + 3, 4.5))
    stacked_phases(ax, names, [result["flows"][n] for n in names])
    ins = ", ".join(f"{t['name']}{t['shape']}" for t in result.get("model", {}).get("inputs", []))
    ax.set_title(f"latency per phase: {ins}")
    fig.tight_layout()
    fig.savefig(os.fspath(path), dpi=110)
    plt.close(fig)


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
