"""A probe of rknnx's facade on the librknnrt it is loaded with (a vendor runtime, inside the
root scripts/test-vendor-runtime prepares): the features of one model file in a process of
their own, restarted after a crash or a hang, which is the verdict of the feature it
happened in, not the probe's end.

    python3 vendor_probe.py table [--timeout S] [--out FILE.json] MODEL...   (every feature)
    python3 vendor_probe.py one FEATURE[,FEATURE...] MODEL                   (JSON lines)
    python3 vendor_probe.py summary RUNTIME-NAME OUT-DIR      (the table of probe-*.json, suite.log)

Verdicts: ok; exception (rknnx raised: the message is kept); crash (the process died on a
signal); hang (no answer within the timeout); mismatch (an answer differs from the one it
must equal); n/a (the file does not apply: the runtime refuses it, it has no custom
operator ...).  RKNNX_RUNTIME names the library; the environment of the NPU driver's stand-in
is the caller's.

Under the stand-in the NPU computes nothing: what each route returns is the runtime's
conversion of the same NPU bytes, so routes over the same bytes must agree bit for bit.
Where the runtime leaves a conversion to the NPU (RK3566's float outputs, the NPU's own
NC1HWC2 -> NCHW jobs) or an output is smaller than a fill block, the routes can differ
without any fault of rknnx: such mismatches are the harness's, and the table says which
features can meet them (docs/board.md, "Testing on a vendor runtime").
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

FEATURES = ("open", "run=ctypes", "sessions", "pool", "detector", "rknnlite", "custom ops",
            "bad input", "matmul")
#: features whose mismatches the stand-in NPU can cause (NPU-side conversions, small outputs)
HARNESS_LIMITED = {"sessions"}


# ---- the vendor's C structs (rknn_api.h; a context is 32 bits on 32-bit ARM) -------------
CTX = ctypes.c_uint32 if ctypes.sizeof(ctypes.c_void_p) == 4 else ctypes.c_uint64


class Attr(ctypes.Structure):
    _fields_ = [("index", ctypes.c_uint32), ("n_dims", ctypes.c_uint32),
                ("dims", ctypes.c_uint32 * 16), ("name", ctypes.c_char * 256),
                ("n_elems", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("fmt", ctypes.c_int), ("type", ctypes.c_int), ("qnt_type", ctypes.c_int),
                ("fl", ctypes.c_int8), ("zp", ctypes.c_int32), ("scale", ctypes.c_float),
                ("w_stride", ctypes.c_uint32), ("size_with_stride", ctypes.c_uint32),
                ("pass_through", ctypes.c_uint8), ("h_stride", ctypes.c_uint32)]


class IONum(ctypes.Structure):
    _fields_ = [("n_input", ctypes.c_uint32), ("n_output", ctypes.c_uint32)]


class Input(ctypes.Structure):
    _fields_ = [("index", ctypes.c_uint32), ("buf", ctypes.c_void_p), ("size", ctypes.c_uint32),
                ("pass_through", ctypes.c_uint8), ("type", ctypes.c_int), ("fmt", ctypes.c_int)]


class Output(ctypes.Structure):
    _fields_ = [("want_float", ctypes.c_uint8), ("is_prealloc", ctypes.c_uint8),
                ("index", ctypes.c_uint32), ("buf", ctypes.c_void_p), ("size", ctypes.c_uint32)]


_TYPE_OF = {"float32": 0, "float16": 1, "int8": 2, "uint8": 3}


def frames(model, k=0):
    """Inputs for `model`: what Model.run takes by default (uint8 pixels for an image input,
    else the model's type), a pattern that moves with k."""
    import numpy as np
    from rknnx._tensors import default_dtype

    out = []
    for t in model.inputs:
        dt = default_dtype(t)
        n = int(np.prod(t.shape))
        base = (np.arange(n, dtype=np.int64) * 37 + 11 * k) % 256
        if dt.kind == "f":
            a = ((base % 64) - 32).astype(dt) * dt.type(0.25)
        elif dt == np.int8:
            a = (base - 128).astype(np.int8)
        else:
            a = base.astype(dt)
        out.append(a.reshape(t.shape))
    return out


def ctypes_run(path, arrays):
    """rknn_init / inputs_set / run / outputs_get(want_float=1) / release / destroy on the
    library rknnx loaded, in plain ctypes: the outputs as float32 arrays."""
    import numpy as np

    lib = ctypes.CDLL(os.environ["RKNNX_RUNTIME"])
    lib.rknn_init.argtypes = [ctypes.POINTER(CTX), ctypes.c_void_p, ctypes.c_uint32,
                              ctypes.c_uint32, ctypes.c_void_p]
    for name in ("rknn_query", "rknn_inputs_set", "rknn_run", "rknn_outputs_get",
                 "rknn_outputs_release", "rknn_destroy"):
        getattr(lib, name).argtypes = None
    data = open(path, "rb").read()
    buf = ctypes.create_string_buffer(data, len(data))
    ctx = CTX(0)
    rc = lib.rknn_init(ctypes.byref(ctx), buf, len(data), 0, None)
    if rc != 0:
        raise RuntimeError(f"ctypes rknn_init: {rc}")
    try:
        io = IONum()
        lib.rknn_query(ctx, 0, ctypes.byref(io), ctypes.c_uint32(ctypes.sizeof(io)))
        ins = (Input * io.n_input)()
        for i, a in enumerate(arrays):
            attr = Attr(index=i)
            lib.rknn_query(ctx, 1, ctypes.byref(attr), ctypes.c_uint32(ctypes.sizeof(attr)))
            ins[i].index, ins[i].buf, ins[i].size = i, a.ctypes.data, a.nbytes
            ins[i].type, ins[i].fmt = _TYPE_OF[str(a.dtype)], attr.fmt
        for name, args in (("rknn_inputs_set", (ctx, ctypes.c_uint32(io.n_input), ins)),
                           ("rknn_run", (ctx, None))):
            rc = getattr(lib, name)(*args)
            if rc != 0:
                raise RuntimeError(f"ctypes {name}: {rc}")
        outs = (Output * io.n_output)()
        for i in range(io.n_output):
            outs[i].index, outs[i].want_float = i, 1
        rc = lib.rknn_outputs_get(ctx, ctypes.c_uint32(io.n_output), outs, None)
        if rc != 0:
            raise RuntimeError(f"ctypes rknn_outputs_get: {rc}")
        got = [np.frombuffer(ctypes.string_at(o.buf, o.size), np.float32).copy() for o in outs]
        lib.rknn_outputs_release(ctx, ctypes.c_uint32(io.n_output), outs)
        return got
    finally:
        lib.rknn_destroy(ctx)


class Mismatch(Exception):
    pass


class NotApplicable(Exception):
    pass


def same(a, b, what):
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    if a.size != b.size or not np.array_equal(a.reshape(-1).view(np.uint8),
                                              b.astype(a.dtype).reshape(-1).view(np.uint8)):
        bad = "sizes" if a.size != b.size else \
            f"{int(np.count_nonzero(a.reshape(-1) != b.astype(a.dtype).reshape(-1)))} elements"
        raise Mismatch(f"{what}: {bad} differ")


def open_model(path):
    import rknnx
    from rknnx.errors import RKNNError

    try:
        return rknnx.Model(path)
    except RKNNError as e:
        if e.func == "rknn_init":
            raise NotApplicable(f"the runtime refuses the file: {e}") from None
        raise


def needs_custom(model):
    from rknnx import modelfile

    return bool(modelfile.read(model.path).custom_ops)


def register(model):
    """A CPU kernel for every custom operator of the file: y = x (shapes permitting)."""
    import rknnx
    from rknnx import modelfile

    ops = []
    for name in sorted({op.type for op in modelfile.read(model.path).custom_ops}):
        @rknnx.custom_op(name)
        def copy(inputs, outputs):
            for k, o in enumerate(outputs):
                src = inputs[min(k, len(inputs) - 1)].reshape(-1)
                flat = o.reshape(-1)
                n = min(flat.size, src.size)
                flat[:n] = src[:n].astype(flat.dtype)
                flat[n:] = 0
        ops.append(copy)
    model.register_custom_ops(*ops)


def feature(name, path):
    """Run feature `name` on `path`; return a detail string (raises on a failure)."""
    import numpy as np
    import rknnx

    if name == "matmul":
        a = (np.arange(4 * 32) % 7 - 3).astype(np.float16).reshape(4, 32)
        b = (np.arange(32 * 16) % 5 - 2).astype(np.float16).reshape(32, 16)
        c = rknnx.matmul(a, b)
        if c.shape != (4, 16):
            raise Mismatch(f"matmul shape {c.shape}, expected (4, 16)")
        return "float16 [4,32]x[32,16] (the stand-in NPU computes nothing: shape only)"
    m = open_model(path)
    try:
        custom = needs_custom(m)
        if name == "custom ops":
            if not custom:
                raise NotApplicable("no custom operator in the file")
            register(m)
            x = frames(m)
            first = m.run(*x)
            with m.zero_copy() as s:
                s.run_arrays(*x)
            for k, (a, b) in enumerate(zip(first, m.run(*x))):   # 1.6.0's crash pattern
                same(a, b, f"run after a session, output {k}")
            with rknnx.Pool(m, workers=2) as pool:
                for f in [pool.submit(*x) for _ in range(3)]:
                    for k, (a, b) in enumerate(zip(first, f.result())):
                        same(a, b, f"pool output {k}")
            m.run(*x)
            return f"{len(first)} outputs"
        if custom:
            register(m)
        x = frames(m)
        if name == "open":
            return (f"{m.chip} {m.sdk_version.split(' ')[0]} "
                    f"{len(m.inputs)} in / {len(m.outputs)} out, mem {m.mem_size is not None}")
        if name == "run=ctypes":
            if custom:
                raise NotApplicable("custom operators (the ctypes loop registers none)")
            if m.dynamic:
                raise NotApplicable("dynamic shapes (the ctypes loop sets none)")
            got = m.run(*x)
            ref = ctypes_run(path, x)
            for k, (a, b) in enumerate(zip(got, ref)):
                same(np.ascontiguousarray(a, np.float32), b, f"output {k}")
            raw = m.run(*x, raw=True)
            return f"{len(got)} outputs bit-equal; raw {[str(r.dtype) for r in raw]}"
        if name == "sessions":
            want = m.run(*x)
            for k in range(3):
                with m.zero_copy() as s:
                    out = s.run_arrays(*x)
                    for i, (a, b) in enumerate(zip(want, out)):
                        if b.dtype == np.float32:
                            same(a, b, f"session {k} output {i}")
                    for i in range(len(out)):
                        s.read(i)
            for a, b in zip(want, m.run(*x)):
                same(a, b, "run after the sessions")
            native = "native reads: not in this runtime's answers"
            if not m.dynamic and all(t.native is not None for t in m.outputs):
                with m.zero_copy(outputs="native") as s:
                    s.run_arrays(*x)
                    for i, a in enumerate(want):
                        same(a, s.read(i), f"native session, read({i})")
                native = "native reads equal run"
            return f"3 sessions, run after them; {native}"
        if name == "pool":
            want = m.run(*x)
            with rknnx.Pool(m, workers=2) as pool:
                res = [f.result() for f in [pool.submit(*x) for _ in range(4)]]
            for r in res:
                for a, b in zip(want, r):
                    same(a, b, "pool result")
            with rknnx.Pool(m, workers=2) as pool:
                pool.submit(*x).result()
            return "2 pools of 2 workers, results equal run"
        if name == "detector":
            return detector(m)
        if name == "rknnlite":
            from rknnx.lite import RKNNLite

            want = m.run(*x)
            lite = RKNNLite()
            try:
                if lite.load_rknn(path) != 0 or lite.init_runtime() != 0:
                    raise RuntimeError("RKNNLite load_rknn / init_runtime failed")
                if custom:
                    raise NotApplicable("custom operators (RKNNLite registers none)")
                got = lite.inference(inputs=list(x))
            finally:
                lite.release()
            for a, b in zip(want, got):
                same(a, b, "RKNNLite.inference")
            return "inference equals run"
        if name == "bad input":
            wrong = []
            for call, exc in ((lambda: m.run(), ValueError),
                              (lambda: m.run(*(x + x)), ValueError),
                              (lambda: m.run(*([np.zeros((2, 3), np.float32)] * len(x))),
                               ValueError),
                              (lambda: m.run(*([np.zeros(m.inputs[0].shape, np.complex64)]
                                               * len(x))), TypeError),
                              (lambda: rknnx.Model(b"not a model" * 10), rknnx.RKNNError)):
                try:
                    call()
                    wrong.append(f"{exc.__name__} expected, nothing raised")
                except exc:
                    pass
                except Exception as e:
                    wrong.append(f"{exc.__name__} expected, got {type(e).__name__}: {e}")
            if wrong:
                raise Mismatch("; ".join(wrong))
            return "5 mistakes refused"
        raise ValueError(f"unknown feature {name!r}")
    finally:
        m.close()


def _same_dets(a, b, what):
    same([len(a)], [len(b)], f"{what}: detections")
    for field in ("boxes", "scores", "labels", "masks", "keypoints"):
        x, y = getattr(a, field, None), getattr(b, field, None)
        if (x is None) != (y is None):
            raise Mismatch(f"{what}: {field} on one side only")
        if x is not None:
            same(x, y, f"{what}: {field}")


def _in_frame(det, box):
    """`det` (decode's, in the model's input pixels) in the frame's, as Detector maps them."""
    det.boxes = box.to_frame(det.boxes)
    if det.keypoints is not None:
        det.keypoints = box.to_frame_points(det.keypoints)
    return det


def detector(m):
    """Detector with 1 worker, with 3 (map and submit), and decode by hand give the same
    detections bit for bit: decode of the 1-worker session's own output views, and (on a
    vendor runtime under the stand-in, whose NPU bytes do not depend on the input) of
    letterbox + run(raw=True), the runtime's conversion.  A frame of the model's size: the
    letterbox is a copy, its box the identity."""
    import numpy as np
    from rknnx import lowlevel
    from rknnx.vision import Detector, decode

    # a yolov5 head fits yolox's signature too: the file's name says which
    named = next((f for f in ("yolov5", "yolox") if f in os.path.basename(m.path or "")), None)
    try:
        one_ = Detector(m, named, workers=1, conf=0.25)
    except ValueError as e:
        raise NotApplicable(f"not a detection model: {e}") from None
    try:
        family = one_.family
        w, h = one_.input_size
        frames = [np.random.default_rng(k).integers(0, 256, (h, w, 3), np.uint8)
                  for k in range(4)]
        want = [one_.detect(f) for f in frames]
        s = one_.sessions[0]
        views = [v.copy() for v in s.outputs]
        own = decode(family, views, s.output_infos, conf=0.25, input_size=(w, h),
                     layout=[i.native.layout if one_.output_kind == "native" and v.ndim == 5
                             else None for i, v in zip(s.output_infos, views)])
        del views
    finally:
        one_.close()
    _same_dets(want[-1], _in_frame(own, want[-1].letterbox), "decode of the session's views")
    with Detector(m, family, workers=3, conf=0.25) as three:
        got = list(three.map(iter(frames)))
        subs = [f.result() for f in [three.submit(f) for f in frames[:3]]]
    for k, (a, b) in enumerate(zip(want, got)):
        _same_dets(a, b, f"3 workers' map, frame {k}")
    for k, (a, b) in enumerate(zip(want, subs)):
        _same_dets(a, b, f"3 workers' submit, frame {k}")
    routes = "decode of the views"
    if not lowlevel.runtime_info()["is_emulator"]:
        for k, f in enumerate(frames[:2]):
            x = np.ascontiguousarray(f[..., ::-1])[None]                      # BGR -> RGB
            if m.inputs[0].layout == "NCHW":
                x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
            raw = m.run(x, raw=True)                        # the runtime's own conversion
            _same_dets(want[k], _in_frame(decode(family, raw, m.outputs, conf=0.25),
                                          want[k].letterbox),
                       f"decode of run(raw=True), frame {k}")
        routes += " and of run(raw=True)"
    return f"{family}: 1 worker = 3 workers = {routes}, {len(want[0])} boxes"


def one(names, path):
    """Run `names` on `path` in turn, one PROBE-RESULT line each (the file refused: the
    rest are n/a at once)."""
    refused = None
    for name in names:
        if refused is not None and name != "matmul":
            verdict, detail = "n/a", refused
        else:
            try:
                detail = feature(name, path)
                verdict = "ok"
            except NotApplicable as e:
                verdict, detail = "n/a", str(e)
                if "refuses the file" in detail:
                    refused = detail
            except Mismatch as e:
                verdict, detail = "mismatch", str(e)
            except Exception as e:
                verdict, detail = "exception", f"{type(e).__name__}: {e}"
        print("PROBE-RESULT " + json.dumps({"feature": name, "verdict": verdict,
                                            "detail": detail[:400]}), flush=True)


def run_file(names, path, timeout):
    """The verdicts of `names` on `path`: one process for them all, a new one for those
    left after a crash or a hang (which is the verdict of the feature it happened in)."""
    results, left = [], list(names)
    while left:
        t0 = time.time()
        cmd = [sys.executable, os.path.abspath(__file__), "one", ",".join(left), path]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=timeout * len(left))
            out, err, rc, hung = p.stdout, p.stderr, p.returncode, False
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err, rc, hung = "", None, True
        done = [json.loads(line[len("PROBE-RESULT "):]) for line in out.splitlines()
                if line.startswith("PROBE-RESULT ")]
        results += done
        left = left[len(done):]
        if not left:
            break
        if hung:
            r = {"verdict": "hang", "detail": f"no answer within {timeout * len(left):.0f} s"}
        elif rc is not None and rc < 0:
            r = {"verdict": "crash", "detail": f"{signal.Signals(-rc).name}; "
                 + " | ".join(err.splitlines()[-3:])}
        else:
            r = {"verdict": "exception", "detail": f"exit {rc}; "
                 + " | ".join(err.splitlines()[-3:])}
        r.update(feature=left.pop(0), seconds=round(time.time() - t0, 1))
        results.append(r)
    return results


def table(argv):
    timeout, out, paths = 300, None, []
    it = iter(argv)
    for a in it:
        if a == "--timeout":
            timeout = float(next(it))
        elif a == "--out":
            out = next(it)
        else:
            paths.append(a)
    results = []
    for k, path in enumerate(paths):
        names = [f for f in FEATURES if f != "matmul" or k == 0]
        for r in run_file(names, path, timeout):
            r["file"] = os.path.basename(path)
            results.append(r)
            print(f"  {r['feature']:<11} {r['verdict']:<9} {r['file']}: {r['detail'][:150]}",
                  flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    return results


ORDER = ("crash", "hang", "mismatch", "exception", "ok")


def summary(runtime, out_dir):
    """Print the table of the probe results and the suite's line found in `out_dir`."""
    import glob
    import re

    rows = []
    for f in sorted(glob.glob(os.path.join(out_dir, "probe-*.json"))):
        chip = os.path.basename(f)[len("probe-"):-len(".json")]
        rows.append((chip, json.load(open(f))))
    width = max([len(n) for n in FEATURES] + [14])
    print(f"\n{runtime}: verdicts per feature (counted over the files; n/a left out)")
    print(f"{'chip':<8}" + "".join(f" | {n:<{width}}" for n in FEATURES))
    notes = []
    for chip, results in rows:
        cells = []
        for name in FEATURES:
            rs = [r for r in results if r["feature"] == name and r["verdict"] != "n/a"]
            counts = {v: sum(r["verdict"] == v for r in rs) for v in ORDER}
            cell = ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "n/a"
            cells.append(cell)
            notes += [(chip, r) for r in rs if r["verdict"] != "ok"]
        print(f"{chip:<8}" + "".join(f" | {c:<{width}}" for c in cells))
    log = os.path.join(out_dir, "suite.log")
    if os.path.exists(log):
        lines = [ln for ln in open(log, errors="replace").read().splitlines()
                 if re.search(r"\d+ (passed|failed|skipped|error)", ln)]
        print(f"suite: {lines[-1].strip('= ') if lines else 'no summary line (see suite.log)'}")
    for chip, r in notes:
        limited = " [a harness limit can cause this]" if (
            r["feature"] in HARNESS_LIMITED and r["verdict"] == "mismatch") else ""
        print(f"  {chip} {r['feature']}: {r['verdict']}{limited} {r.get('file', '')}: "
              f"{r['detail'][:200]}")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "one":
        one(sys.argv[2].split(","), sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "table":
        table(sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
