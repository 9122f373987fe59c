"""rknnx.benchmark and bench/suite.py: the structure of what they report, the emulator's
byte counters (no copy by the wrapper on the zero-copy path), and a quick run of the
suite as a smoke test.  Timings are never asserted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import VENDOR_DATA, live

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "bench" / "suite.py"


def _tiny():
    from rknnx.emulator import samples

    return samples.tiny_relu()


def _check_stats(s):
    assert set(s) >= {"median_ns", "p95_ns", "mean_ns", "min_ns", "n"}
    assert s["median_ns"] >= 0 and s["p95_ns"] >= s["median_ns"] - 1e-9


def test_compare_flows_reports_every_flow_and_phase(emu):
    from rknnx import benchmark

    before = live(emu)
    r = benchmark.compare_flows(_tiny(), iterations=7, warmup=1)
    assert live(emu) == before, "compare_flows left contexts or mems behind"
    json.loads(json.dumps(r))                      # JSON-serialisable as it is
    assert r["schema"] == "rknnx.benchmark/2"
    assert r["iterations"] == 7 and r["warmup"] == 1
    m = r["machine"]
    for key in ("platform", "cpu", "python", "numpy", "rknnx", "runtime_path", "sdk_version",
                "driver_version", "chip"):
        assert m[key], key
    assert m["is_emulator"] is True and m["chip"] == "RK3588"
    assert m["numpy"] == np.__version__
    assert r["model"]["inputs"] == [{"name": "x", "shape": [1, 2], "dtype": "float32",
                                     "layout": "UNDEFINED"}]
    assert list(r["flows"]) == list(benchmark.FLOWS)
    for name, f in r["flows"].items():
        _check_stats(f["frame"])
        assert f["frame"]["n"] == 7
        assert list(f["phases"]) == list(benchmark.PHASES)
        for p in benchmark.PHASES:
            assert f["phases"][p]["median_ns"] >= 0
        assert f["cpu_ns_per_frame"] > 0
        assert 0 < f["host_cpu_ns_per_frame"] <= f["cpu_ns_per_frame"]
        assert f["npu_cpu_ns_per_frame"] >= 0
        assert f["bytes_per_frame"]["runs"] == 1.0, name
    # the general flow copies 8 bytes in (inputs_set) and 8 out (outputs_get) per frame ...
    g = r["flows"]["general-float32"]["bytes_per_frame"]
    assert (g["bytes_in"], g["bytes_out"], g["copied_by_api"]) == (8.0, 8.0, 16.0)
    # ... the zero-copy flow none: the NPU reads and writes the session's memory
    z = r["flows"]["zero-copy"]["bytes_per_frame"]
    assert (z["bytes_in"], z["bytes_out"], z["copied_by_api"]) == (0.0, 0.0, 0.0)
    # cacheable memory: the runtime cleans the input and invalidates the output (8 B each)
    assert (z["syncs"], z["cache_synced"]) == (2.0, 16.0)
    assert r["flows"]["general-float32"]["phases"]["sync"]["median_ns"] == 0
    assert r["npu_work"]["emulated"] is True


def test_compare_flows_leaves_an_open_model_open(emu, tmp_path):
    import rknnx
    from rknnx import benchmark

    path = tmp_path / "tiny.rknn"
    path.write_bytes(_tiny())
    with rknnx.Model(str(path)) as m:
        r = benchmark.compare_flows(m, iterations=2, warmup=0)
        assert not m.closed
        np.testing.assert_array_equal(m.run(np.float32([[-1, 3]]))[0], [[0, 3]])
    assert benchmark.compare_flows(str(path), iterations=2, warmup=0)["model"] == r["model"]


@pytest.mark.parametrize("kw, message", [
    ({"iterations": 0}, "iterations must be an int >= 1; got 0"),
    ({"iterations": 2.5}, "iterations must be an int >= 1; got 2.5"),
    ({"warmup": -1}, "warmup must be an int >= 0; got -1"),
])
def test_compare_flows_refuses_bad_counts(emu, kw, message):
    from rknnx import benchmark

    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        benchmark.compare_flows(_tiny(), **kw)


def test_table_and_plot(emu, tmp_path):
    from rknnx import benchmark

    r = benchmark.compare_flows(_tiny(), iterations=3, warmup=0)
    table = benchmark.format_table(r)
    lines = table.splitlines()
    assert lines[1].split()[:3] == ["flow", "median", "p95"]
    assert [ln.split()[0] for ln in lines[3:6]] == list(benchmark.FLOWS)
    assert "npu (emul.)" in lines[1]
    assert lines[6] == "" and lines[7].split()[:2] == ["flow", "CPU/frame"]
    assert "host CPU/frame" in lines[7]
    assert [ln.split()[0] for ln in lines[9:12]] == list(benchmark.FLOWS)
    assert lines[12].startswith("(emulated: the NPU's work")
    assert max(len(ln) for ln in lines) <= 100, table
    png = tmp_path / "phases.png"            # matplotlib comes with the test extras
    benchmark.plot(r, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_what_to_install(monkeypatch, tmp_path):
    from rknnx import benchmark

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    r = {"flows": {}, "model": {"inputs": []}}
    with pytest.raises(ImportError, match=r"plotting needs matplotlib: pip install 'rknnx\[bench\]'"):
        benchmark.plot(r, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.skipif(not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")),
                    reason="the suite's C baselines need a C compiler")
def test_quick_suite_runs_and_writes_its_results(runtime, tmp_path):
    env = {**os.environ, "RKNNX_RUNTIME": "emulator"}
    if VENDOR_DATA is not None:           # the stand-in scenario's model, found as the tests find it
        env["RKNNX_VENDOR_DATA"] = str(VENDOR_DATA)
    proc = subprocess.run([sys.executable, str(SUITE), "--quick", "--workers", "3",
                           "--out", str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=900)   # (a hang's guard: 1-3 minutes here, more under load)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads((tmp_path / "suite.json").read_text())
    assert r["schema"] == "rknnx.bench-suite/1" and r["quick"] is True
    assert r["machine"]["is_emulator"] is True and r["machine"]["rknnx"]
    for key in ("overhead", "sizes", "chain", "rknnlite", "detector", "pool", "targets"):
        assert key in r, key
    o = r["overhead"]
    for key in ("c_zerocopy", "c_general", "session_run", "model_run", "lowlevel_run"):
        _check_stats(o[key])
    assert list(r["sizes"]) == ["224x224x3", "640x640x3"]
    for size, s in r["sizes"].items():
        h, w = (int(v) for v in size.split("x")[:2])
        assert s["model"]["inputs"][0]["shape"] == [1, h, w, 3]
        assert s["flows"]["zero-copy"]["bytes_per_frame"]["copied_by_api"] == 0
        assert s["flows"]["general-float32"]["bytes_per_frame"]["bytes_in"] == h * w * 3
        for name, v in s["variants"].items():
            expect = 0 if name.startswith("zero-copy") else h * w * 3
            assert v["bytes_per_frame"]["bytes_in"] == expect, (size, name)
        # non-cacheable memory needs no cache maintenance
        assert s["variants"]["zero-copy, non-cacheable"]["bytes_per_frame"]["cache_synced"] == 0
    # a chained state the CPU leaves alone between steps needs no cache maintenance
    assert r["chain"]["zero-copy, chained, no syncs"]["bytes_per_frame"]["syncs"] == 0
    d = r["detector"]
    assert d["boxes"]["rknnlite style"] == d["boxes"]["best rknnx style"]
    assert d["best rknnx style"]["bytes_per_frame"]["copied_by_api"] == 0
    p = r["pool"]
    assert p["workers"] == [1, 2, 3]
    assert all(len(p[k]) == 3 and min(p[k]) > 0 for k in ("pool", "threads", "c_pool"))
    names = [t["target"] for t in r["targets"]]
    sd = r["standin"]
    if VENDOR_DATA is not None:           # the suite finds yolo640_rk3588.rknn there
        assert sd["model"] == "yolo640_rk3588.rknn" and sd["ratio"] > 0, sd
        assert sd["standin_ns"] == sd["phases_ns"]["npu"] + sd["phases_ns"]["run"]
        assert sum(n.startswith("stand-in of yolo640_rk3588.rknn") for n in names) == 1
    else:
        assert sd["skipped"].startswith("no vendor .rknn"), sd
    # the vision scenarios' targets, when they ran (letterbox and pipeline need OpenCV)
    lb, dc, mk, pl, sm, ls = (r.get(k) or {} for k in ("letterbox", "decode", "masks",
                                                       "pipeline", "streams",
                                                       "letterbox_sizes"))
    vision = {"letterbox": 4 if lb and "skipped" not in lb else 0,
              "letterbox_sizes": 2 if ls and "skipped" not in ls else 0,
              # decode: its 3, and one per frame of the post_process comparison
              "decode": 3 + len((dc.get("post_process") or {}).get("frames", {}))
              if "ratio" in dc else 0, "masks": 2 if "ratio" in mk else 0,
              "pipeline": 1 if "ratio" in pl else 0,
              # streams: one per size measured, and the YUV-against-BGR line
              "streams": 0 if not sm or "skipped" in sm else
              sum(1 for v in sm.get("sizes", {}).values() if v.get("ratio"))
              + bool(sm.get("yuv_vs_bgr"))}
    if ls and "skipped" not in ls:
        # every camera size x format x target, each with both OpenCV thread counts
        assert len(ls["cases"]) == 6 * 3 * 3, sorted(ls["cases"])
        assert "3840x2160 i420 session" in ls["cases"] and "640x480 bgr nchw" in ls["cases"]
        for case in ls["cases"].values():
            assert min(case.values()) > 0, case
    # the tracker at 20 and 100 objects (where trackers is installed)
    tk = r.get("track") or {}
    vision["track"] = sum(bool(tk.get("counts", {}).get(n, {}).get("ratio", {}).get(
        "trackers 2.6.1 ByteTrack")) for n in ("20", "100")) if tk else 0
    if tk:
        assert list(tk["counts"]) == ["5", "20", "100"]
        assert all(c["ns_per_update"]["rknnx Tracker"] > 0 for c in tk["counts"].values())
    if "sizes" in sm:
        # every frame of the 4 streams through both pipelines, at both sizes
        assert list(sm["sizes"]) == ["1280x720", "1920x1080"], sm
        for v in sm["sizes"].values():
            assert v["streams_host_ns"] > 0 and v["common_host_ns"] > 0 and v["ratio"] > 0
            assert v["decoder_pyav_ns"] > 0 and v["decoder_cv2_ns"] > 0
        assert sm["yuv_vs_bgr"]["frame"] == [1920, 1080]
    if "ratio" in dc:
        assert dc["same_as_reference"] is True, dc
        # the zoo's C port (bench/c/zoo_yolov8.c) keeps what decode keeps on this frame
        assert dc["zoo_c_same_kept_set"] is True and dc["zoo_c_kept"] == dc["kept"], dc
        assert dc["zoo_c_ns"] > 0 and dc["ratio_zoo_c"] > 0
    if "ratio" in mk:             # no --zoo: the stand-in on the zoo's path, and it says so
        assert mk["anchor"].startswith(("a stand-in following the zoo's Python masks",
                                        "a numpy/OpenCV port")), mk["anchor"]
        assert "zoo_post_process_ns" not in mk and len(mk["zoo_masks_ns_rounds"]) == 3
    if "ratio" in pl:
        assert pl["anchor"].startswith("a stand-in following the zoo's Python path"), pl
        assert len(pl["rknnx Detector"]["rounds"]) == 3
    if "ratio" in mk:
        assert mk["boxes"] == 20 and 64 <= mk["box_px"][0] <= mk["box_px"][1] <= 160, mk
        assert mk["same_kept_as_reference"] is True and mk["mask_pixels_agree"] == 1.0, mk
    assert len(names) == 11 + ("ratio" in sd) + sum(vision.values()), (names, vision)
    floor = next(t for t in r["targets"] if t["target"].startswith("(an empty Python call"))
    assert 0 < floor["measured"] < r["overhead"]["session_run"]["median_ns"]
    # the cost of model.run's signature alone, below model.run's own
    sig = next(t for t in r["targets"] if t["target"].startswith("(a method of model.run"))
    assert floor["measured"] < sig["measured"] < r["overhead"]["model_run"]["median_ns"]
    wrapper = next(t for t in r["targets"] if t["target"].startswith("bytes copied by the wrapper"))
    assert wrapper["measured"] == 0 and wrapper["met"] is True
    assert "== targets" in proc.stdout and "== pool" in proc.stdout
    if "no plots" not in proc.stdout:
        assert (tmp_path / "phases.png").stat().st_size > 0
        assert (tmp_path / "throughput.png").stat().st_size > 0


@pytest.mark.skipif(not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")),
                    reason="the suite's C baselines need a C compiler")
def test_update_keeps_the_other_scenarios(runtime, tmp_path):
    env = {**os.environ, "RKNNX_RUNTIME": "emulator"}

    def suite(*args):
        proc = subprocess.run([sys.executable, str(SUITE), "--quick", "--no-plots", "--out",
                               str(tmp_path), *args], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads((tmp_path / "suite.json").read_text())

    first = suite("--only", "chain")
    assert "runs" not in first and "chain" in first
    r = suite("--only", "decode", "--update")
    assert r["chain"] == first["chain"] and "ratio" in r["decode"]
    assert r["runs"]["chain"]["command"] == first["command"]
    assert r["runs"]["decode"]["command"].endswith("--only decode --update")
    names = [t["target"] for t in r["targets"]]
    assert any(n.startswith("decode + NMS, the same frame: the zoo's C") for n in names)
    # without --update a run writes its own scenarios only
    assert "chain" not in suite("--only", "decode")


# ---- issue 18: the NPU's work apart from the host's ----------------------------------------------
class _FakeClock:
    """A clock that moves only when the code under test says so (no timing asserted)."""

    def __init__(self):
        self.now = 0
        self.npu = 0

    def __call__(self):
        return self.now

    def work(self, ns, npu=0):
        self.now += ns
        self.npu += npu


class _FakeCounters:
    """The emulator's counters as frame_loop reads them, driven by a _FakeClock."""

    counts_npu = True

    def __init__(self, clock):
        self.clock = clock

    def npu_ns(self):
        return self.clock.npu

    def snapshot(self):
        return {"bytes_in": 0, "bytes_out": 0, "bytes_synced": 0, "bytes_copied": 0,
                "syncs": 0, "runs": 0, "npu_cpu_ns": 0}

    def npu_cpu_accounting(self):
        import contextlib

        return contextlib.nullcontext()


def test_phases_add_up_to_the_frame(monkeypatch):
    """A frame of set 100 + run 1000 (900 of it NPU work) + get 50 + Python 30 ns: the
    phases give exactly that back, and the frame's python is what the facade adds."""
    from rknnx import benchmark

    clock = _FakeClock()
    monkeypatch.setattr(benchmark, "_clock", clock)
    set_, get = (lambda: clock.work(100)), (lambda: clock.work(50))

    def run():
        clock.work(1000, npu=900)

    def body():                       # the facade: the same calls and 30 ns of Python
        set_()
        run()
        get()
        clock.work(30)

    frame = benchmark.frame_loop(body, 9, 1, _FakeCounters(clock),
                                 phases=([set_, run, get], ("set", "run", "get"), None))
    r = benchmark.combine(frame)
    got = {p: r["phases"][p]["median_ns"] for p in benchmark.PHASES}
    assert got == {"set": 100, "sync": 0, "npu": 900, "run": 100, "get": 50, "python": 30}
    assert sum(got.values()) == r["frame"]["median_ns"] == 1180
    assert "note" not in r


def test_simulated_npu_time_is_npu_work_not_host_time(emu):
    """The emulator's simulated NPU time (a sleep inside rknn_run) lands in the npu phase,
    not in run, python or the host CPU: what a board's NPU does costs its CPU nothing."""
    from rknnx import benchmark

    emu.set_npu_time_us(3000)
    try:
        r = benchmark.compare_flows(_tiny(), iterations=5, warmup=1)
    finally:
        emu.set_npu_time_us(None)
    for name, f in r["flows"].items():
        ph = f["phases"]
        assert ph["npu"]["median_ns"] >= 3e6, name
        assert ph["run"]["median_ns"] < ph["npu"]["median_ns"], name
        assert ph["python"]["median_ns"] < ph["npu"]["median_ns"], name
        assert f["host_cpu_ns_per_frame"] < 3e6 and f["npu_cpu_ns_per_frame"] < 3e6, name


def test_plot_names_model_chip_and_runtime_with_totals_and_the_legend_off_the_bars(emu):
    import copy

    from rknnx import benchmark

    r = benchmark.compare_flows(_tiny(), iterations=3, warmup=0, name="tiny_relu")
    fig = benchmark.figure(r)
    try:
        title = fig._suptitle.get_text()
        assert title.startswith("tiny_relu (x 1x2 float32) on RK3588, CPU emulator")
        assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
        assert "npu (emulated on the CPU)" in [t.get_text() for t in fig.legends[0].get_texts()]
        lat = fig.axes[0]
        tops = [sum(f["phases"][p]["median_ns"] for p in benchmark.PHASES)
                for f in r["flows"].values()]
        unit, name = benchmark.unit_for(max(f["frame"]["median_ns"] for f in r["flows"].values()))
        # the median frame on top of each bar, in the unit of the axis, which fits the bars
        assert [t.get_text() for t in lat.texts] == [
            f"{benchmark._fmt(f['frame']['median_ns'] / unit)} {name}"
            for f in r["flows"].values()]
        assert lat.get_ylim()[1] >= max(tops) / unit and f"({name})" in lat.get_ylabel()
        assert any("x less" in t.get_text() for t in fig.axes[1].texts)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    # a frame of tens of ms reads in ms
    big = copy.deepcopy(r)
    for f in big["flows"].values():
        f["frame"]["median_ns"] *= 1e4
        for p in f["phases"].values():
            p["median_ns"] *= 1e4
    fig = benchmark.figure(big)
    try:
        assert "(ms)" in fig.axes[0].get_ylabel()
        assert all(t.get_text().endswith(" ms") for t in fig.axes[0].texts)
    finally:
        plt.close(fig)
