"""The decode scenario's post_process-only comparison (bench/suite.py, issue 39 item 2):
``rknnx.vision.decode(family, outputs, infos, layout=..., conf=, iou=)`` called once per
frame from Python against the model zoo's C ``post_process`` timed in a C loop, on the same
int8 NCHW outputs of a yolov8n 640 (9 outputs), on each frame of ``zoo_c.FRAMES``; and,
with the zoo's checkout, its Python ``post_process`` (examples/yolov8/python/yolov8.py: float32
outputs, its DFL through torch CPU on one thread, as the zoo runs it).

The anchor is the zoo's own code where a checkout is given (``--zoo DIR``: DIR named
rknn_model_zoo, as the zoo's Python finds its py_utils; its files compiled and imported
from there, never copied); without it the project's C port (bench/c/zoo_yolov8.c, the
NCHW outputs given so: no conversion) stands in, and the result says which ran.
Chunks of each alternate, three rounds; the figures are the medians of the rounds'
medians.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

HERE = Path(__file__).resolve().parent


def zoo_python(zoo_dir: Optional[str]):
    """(post_process, what it is): the zoo's yolov8.py imported from the checkout, else the
    stand-in that follows its code path (bench/zoo_python.py); torch on one thread."""
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    if zoo_dir:
        path = Path(zoo_dir).resolve() / "examples" / "yolov8" / "python" / "yolov8.py"
        spec = importlib.util.spec_from_file_location("zoo_yolov8_py", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.post_process, ("the zoo's Python post_process (examples/yolov8/python/"
                                  "yolov8.py, float32, torch DFL, 1 thread)")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import zoo_python

    return zoo_python.post_process, (
        "a stand-in following the zoo's Python path (bench/zoo_python.py, float32, " +
        ("torch DFL, 1 thread" if zoo_python.uses_torch() else "numpy DFL: torch is not "
         "installed") + "); pass --zoo DIR for the zoo's own")


def _timed(fn, n: int) -> List[int]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        out.append(time.perf_counter_ns() - t0)
    return out


def measure(Z, tmp: Path, zoo_dir: Optional[str], quick: bool) -> Dict[str, Any]:
    from rknnx.vision import decode
    from zoo_c import FRAMES, ZooReal, ZooYolov8, yolov8_frame

    if zoo_dir:
        zoo = ZooReal(zoo_dir, tmp)
        anchor = f"the zoo's post_process ({zoo.source})"
    else:
        zoo = ZooYolov8(tmp)
        anchor = "the project's C port of the zoo's post_process (bench/c/zoo_yolov8.c, " \
                 "NCHW given: no conversion); pass --zoo DIR for the zoo's own"
    zoo_py, py_anchor = zoo_python(zoo_dir)
    res: Dict[str, Any] = {"anchor": anchor, "python_anchor": py_anchor, "frames": {}}
    chunk, rounds = 10, 3
    per_round = 10 if quick else 100
    for name, (n_obj, bg) in FRAMES.items():
        codes, native, values, infos = yolov8_frame(Z, n_obj=n_obj, background=bg)
        det = decode("yolov8", codes, infos, layout="NCHW", conf=0.25, iou=0.45)
        det_n = decode("yolov8", native, infos, conf=0.25, iou=0.45)
        kept = zoo.frame(codes, infos)
        fr: Dict[str, Any] = {
            "kept": len(det), "zoo_kept": int(len(kept["classes"])),
            # the same classes kept (the zoo's quicksort is not stable: ties may come
            # in another order)
            "same_kept_set": bool(len(kept["classes"]) == len(det) and
                                  np.array_equal(np.sort(kept["classes"]),
                                                 np.sort(det.classes)) and
                                  np.array_equal(det.classes, det_n.classes))}
        meds: Dict[str, List[float]] = {"rknnx_nchw_ns": [], "rknnx_native_ns": [],
                                        "zoo_c_ns": []}
        for _ in range(rounds):
            t: Dict[str, List[int]] = {k: [] for k in meds}
            zoo.loop(codes, infos, chunk)
            for _ in range(per_round // chunk):
                t["rknnx_nchw_ns"] += _timed(lambda: decode(
                    "yolov8", codes, infos, layout="NCHW", conf=0.25, iou=0.45), chunk)
                t["zoo_c_ns"] += zoo.loop(codes, infos, chunk)
                t["rknnx_native_ns"] += _timed(lambda: decode(
                    "yolov8", native, infos, conf=0.25, iou=0.45), chunk)
            for k in meds:
                meds[k].append(float(statistics.median(t[k])))
        for k, v in meds.items():
            fr[k] = float(statistics.median(v))
            fr[k + "_rounds"] = v
        fr["ratio_nchw"] = fr["rknnx_nchw_ns"] / max(fr["zoo_c_ns"], 1.0)
        fr["ratio_native"] = fr["rknnx_native_ns"] / max(fr["zoo_c_ns"], 1.0)
        if zoo_py is not None:
            py = _timed(lambda: zoo_py(values), 5 if quick else 30)
            fr["zoo_python_ns"] = float(statistics.median(py))
            fr["zoo_python_over_rknnx"] = fr["zoo_python_ns"] / max(fr["rknnx_nchw_ns"], 1.0)
        res["frames"][name] = fr
    return res


def report(res: Dict[str, Any], ns) -> List[str]:
    """The lines of the post_process-only table (ns: the suite's duration formatter)."""
    out = [f"-- decode alone against {res['anchor']}: rknnx / zoo (goal <= 1.2); "
           f"Python: {res['python_anchor']} --"]
    for name, fr in res["frames"].items():
        line = (f"{name:>16}: zoo C {ns(fr['zoo_c_ns'])}, rknnx NCHW {ns(fr['rknnx_nchw_ns'])} "
                f"(x{fr['ratio_nchw']:.2f}), native {ns(fr['rknnx_native_ns'])} "
                f"(x{fr['ratio_native']:.2f}); kept {fr['kept']} (zoo {fr['zoo_kept']}, "
                f"same: {'yes' if fr['same_kept_set'] else 'NO'})")
        if "zoo_python_ns" in fr:
            line += (f"; zoo Python {ns(fr['zoo_python_ns'])} "
                     f"(x{fr['zoo_python_over_rknnx']:.1f} rknnx's time)")
        out.append(line)
    return out
