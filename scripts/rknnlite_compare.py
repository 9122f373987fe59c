"""The vendor's RKNNLite and ``rknnx.lite.RKNNLite`` side by side on every sample model.

Runs inside the arm64 root of ``scripts/test-wheel-arm64`` under qemu-user, where the
vendor's package (PyPI ``rknn-toolkit-lite2``, its aarch64 wheel, unmodified) finds
``/usr/lib/librknnrt.so`` and ``/proc/device-tree/compatible`` in the board stand-in named by
``QEMU_LD_PREFIX``: the library is the aarch64 build of the rknnx emulator, the one rknnx
loads too.  Start it with ``scripts/compare-rknnlite`` (which sets all that up).

For each chip (RK3588, RK3566: the device tree and ``RKNN_EMU_PLATFORM`` say which) the
sample models of :mod:`rknnx.emulator.samples` are written once; then one process per side
runs the same calls in the same order, each call's stdout/stderr captured at the file
descriptors, and the parent compares, call by call:

- the return value: type, value, and for arrays dtype, shape and every value (bit for bit);
- facts a call leaves behind: the arrays of ``reuse_outputs=True`` (the same objects, the
  same memory, overwritten), ``RKNN_LOG_LEVEL`` after the constructor;
- the runtime's state, from the emulator's counters: contexts created and alive, output
  buffers and mems alive, runs made;
- the log: whether the API layer wrote E / W lines (not their text, nor how many: the
  vendor adds a traceback to each error), and the runtime's own E / W lines.

The calls, on every model (scenarios ``calls``, ``async``, ``errors``, ``dynamic``):
``load_rknn``, ``init_runtime``; ``inference`` with ``data_format`` None / 'nhwc' / 'nchw'
(NCHW data) / ``['nchw']*n`` / ``['nhwc']*n``, ``data_type``, ``get_frame_id``,
``inputs_pass_through`` 0 and 1 (data of the model's type), ``reuse_outputs`` twice, then a
plain call; ``get_sdk_version``, ``list_support_target_platform(path)``, ``release`` twice,
``inference`` after release; the async flow (``init_runtime(async_mode=True)``, three frames
with their frame ids); wrong arguments (one input too many / too few, a dim less, the last
dim one more / one less, every dtype, a nested list, one array, a tuple, ``data_type`` not
the arrays', upper-case ``data_format``, a bad ``data_format``, ``inputs_pass_through`` of
the wrong length); on
dynamic-shape models every shape set in the order 0, last, 1, 0, in both layouts and with
``reuse_outputs``, and a shape in no set.  Once (``lifecycle``, ``core_mask``): calls out of
order, a missing file, ``init_runtime`` twice and after ``release``,
``list_support_target_platform()``, ``list_devices()``, ``RKNNLite(verbose=True)``, and every
``core_mask`` constant plus an invalid one, each followed by an ``inference``.

DIFFERENCES (vendor RKNNLite 2.5.0 vs rknnx.lite; measured on the emulator, RK3588 and RK3566;
the numbers are those of :data:`KNOWN`, which the report uses).  Everywhere else the two
agree: every output value is bit-equal (all models, both layouts, pass-through, async, every
dtype both take), and every error returns -1 / None on both sides with an E line.

1. Dynamic-shape models (``dynamic``, ``all_ops``): the vendor returns every output shaped
   for the largest shape set (``dynamic``: [1, 4, 64, 80] whatever the input); only its
   first values (as many as the current shape has) are this run's, the rest is whatever
   the vendor's buffer held.  rknnx returns the current shape set's shape ([1, 4, 32, 32]
   for 64x64), its values equal to the vendor's first ones.  Kept: rknnx's is the result.
2. ``data_format='nchw'`` or ``['nchw']`` on an NHWC 4-D input: both give the same outputs
   (the vendor accepts a list, with one entry per input), but the vendor logs ``W The
   input[0] need NHWC data format, but NCHW set, the data format and data buffer will be
   changed to NHWC.`` on every call; rknnx lets the runtime convert, silently.
3. Upper-case ``data_format='NCHW'``: the vendor refuses it (``Unsupport data format: NCHW``,
   None); rknnx takes any case.
4. ``data_type``: the vendor refuses a ``data_type`` that is not every input's dtype (``E
   inputs[0].dtype: int8 is not same as data_type``, None; so with inputs of several dtypes
   no ``data_type`` works); rknnx ignores it (the dtypes say the types).
5. float64 inputs: the vendor refuses them (``Unsupport inputs[0].dtype: float64``, None);
   rknnx converts them to float32.  (uint64 and other dtypes: refused by both.)
6. One ndarray instead of a list: both run it; the vendor logs ``W Inputs should be placed
   in a list, like [img1, img2] ...``.
7. A tuple of arrays: the vendor fails (the W line of 6, then ``AttributeError: 'tuple'
   object has no attribute 'size'``, None); rknnx takes any sequence.
8. ``reuse_outputs=True``: both return arrays over the same memory, overwritten by the next
   call; the vendor's are new array objects (views) each call, rknnx's the same objects.
9. A failed ``init_runtime`` (a ``core_mask`` that is none of the constants; any mask but
   ``NPU_CORE_AUTO`` on a one-core chip such as RK3566): both return -1, but the vendor
   keeps the context it opened before the check and its next ``inference`` runs; rknnx
   closes what it opened (``inference`` returns None: "call init_runtime").
10. ``RKNNLite()`` sets ``os.environ['RKNN_LOG_LEVEL']`` when unset (2; 4 with
    ``verbose=True``), so librknnrt also prints its I (and D) lines; rknnx leaves the
    environment alone.
11. ``get_sdk_version()``: both a string with ``API:`` and ``DRV:`` lines, in other words
    (the vendor's framed by ``=====`` lines, rknnx's also naming the library and the chip).
12. ``list_support_target_platform(path)``: the vendor raises ``TypeError`` on these models
    (it parses the vendor's .rknn format; not a difference a real model shows); rknnx prints
    its table and the model's chip.  Without a path both print a table and return None.
13. The runtime calls made: the vendor re-queries the attributes on every call, queries the
    attributes of inputs that do not exist (one input too many), calls
    ``rknn_set_input_shapes`` on every ``inference`` of a model whose
    ``RKNN_QUERY_INPUT_DYNAMIC_RANGE`` query succeeded at init, and carries on to
    ``rknn_outputs_get`` after a failed ``rknn_run`` (a custom op nobody registered); rknnx
    checks in Python first and calls C only with what will be taken, but queries the native
    attributes at ``init_runtime`` (on a dynamic-shape model librknnrt answers with two or
    three W lines, ``RKNN_QUERY_NATIVE_INPUT_ATTR: dynamic shape rknn model, it will return
    max input native shape!``, that the vendor's users do not see).  Seen as runtime E / W
    lines that one side has and the other not; the return values agree.
14. ``init_runtime()`` on a static model (all but ``dynamic`` and ``all_ops``): the vendor
    queries ``RKNN_QUERY_INPUT_DYNAMIC_RANGE``, which librknnrt refuses on static models,
    and logs ``W Query dynamic range failed. Ret code: RKNN_ERR_MODEL_INVALID. (If it is a
    static shape RKNN model, please ignore the above warning message.)``; rknnx makes the
    same query (librknnrt's own W line shows on both sides) but adds no line.  Seen only on
    a runtime that refuses the query, as boards do; an emulator that answers it has the
    vendor call ``rknn_set_input_shapes`` on every inference instead (13).
15. An array of the right rank but a wrong shape, at least as big as the input (a static
    model; here the last dim + 1): the vendor checks only the number of dims, hands the
    array to ``rknn_inputs_set`` with its own size, and librknnrt reads the bytes it needs
    from it: outputs of misread data, no message.  rknnx refuses it (``E inference: input 0
    ('x'): shape (1, 3) ... does not match the model's (1, 2)``).  (Smaller arrays: refused
    by both; a runtime that answers the dynamic-range query on static models has the
    vendor's ``rknn_set_input_shapes`` refuse the shape, and both sides agree.)

Found by this comparison and fixed in rknnx.lite (no longer differences): ``get_frame_id=True``
appends two ids, the outputs' and the frame run's (rknnx appended one); ``release()`` keeps
the model loaded, so ``init_runtime()`` works again (rknnx dropped it); int16, uint16, int32,
uint32, int64 and bool inputs are taken (the vendor hands them to librknnrt with their own
tensor types; rknnx refused them, now converts them to float32).

Not compared: the text of log lines and errors (the vendor logs ``Catch exception when ...``
and a traceback, rknnx one line ``<method>: <reason>``), the constructor's W line, the
printed tables of ``list_devices`` and ``list_support_target_platform``, timing.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

PLATFORMS = ("RK3588", "RK3566")
MODELS = ("tiny_relu", "tiny_int8_add", "multi_io", "classifier", "detector_random", "dynamic",
          "custom_op_model", "all_ops")
SIDES = ("vendor", "rknnx")

def compatible(chip: str) -> bytes:
    """``/proc/device-tree/compatible`` of a board with `chip` (the vendor names the chip
    from it)."""
    c = chip.lower()
    return f"rockchip,{c}-evb\0rockchip,{c}\0".encode()


# ==== the worker: one implementation, every scenario, records ===========================
_libc = ctypes.CDLL(None)


@contextlib.contextmanager
def captured(lines: List[str]):
    """Everything written to fds 1 and 2 inside (Python, the vendor's compiled logger, the
    runtime's C stderr) goes into `lines`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            _libc.fflush(None)
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            tmp.seek(0)
            lines.extend(tmp.read().decode("utf-8", "replace").splitlines())


def summarize(v: Any):
    """A picklable, comparable account of a return value (arrays keep their data)."""
    if isinstance(v, np.ndarray):
        return {"kind": "ndarray", "dtype": str(v.dtype), "shape": tuple(v.shape),
                "writeable": bool(v.flags.writeable), "data": v.copy()}
    if isinstance(v, (list, tuple)):
        return {"kind": type(v).__name__, "items": [summarize(x) for x in v]}
    if isinstance(v, np.generic):
        return {"kind": type(v).__name__, "value": v.item()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return {"kind": type(v).__name__, "value": v}
    return {"kind": "object", "value": type(v).__name__}


class Recorder:
    """Runs one call at a time with its output captured and keeps what came back, and what
    changed in the runtime (the emulator's counters: contexts and output buffers alive,
    contexts created, runs)."""

    def __init__(self, control):
        self.records: List[dict] = []
        self.where = ("", "")
        self.control = control

    def state(self, before: Dict[str, int]) -> Dict[str, int]:
        """What the call changed: contexts and runs made (deltas), and what is alive
        after it."""
        after = self.counters()
        return {"contexts created": after["contexts_created"] - before["contexts_created"],
                "runs": after["runs"] - before["runs"],
                "contexts alive": after["live_contexts"],
                "output buffers alive": after["live_output_buffers"],
                "mems alive": after["live_mems"]}

    def counters(self) -> Dict[str, int]:
        c = self.control.counters()
        return {k: c[k] for k in ("live_contexts", "live_mems", "live_output_buffers",
                                  "contexts_created", "runs")}

    def __call__(self, step: str, fn: Callable, *args, facts: Optional[Callable] = None,
                  **kw):
        lines: List[str] = []
        value, raised = None, None
        before = self.counters()
        with captured(lines):
            try:
                value = fn(*args, **kw)
            except BaseException as e:      # neither side should raise: record it
                raised = f"{type(e).__name__}: {e}"
        rec = {"model": self.where[0], "scenario": self.where[1], "step": step,
               "ret": None if raised else summarize(value), "raised": raised, "log": lines,
               "facts": {}, "runtime": self.state(before)}
        if facts is not None and raised is None:
            try:
                rec["facts"] = facts(value)
            except Exception as e:
                rec["facts"] = {"facts failed": f"{type(e).__name__}: {e}"}
        self.records.append(rec)
        return value


class Spec:
    """What the scenarios need to know of a sample model (from the model file itself)."""

    def __init__(self, path: str):
        from rknnx.emulator import reference

        with open(path, "rb") as f:
            desc = reference.as_model(f.read())
        self.path = path
        self.inputs = [desc.tensors[n] for n in desc.inputs]
        self.sets = desc.shape_sets or [[t.dims for t in self.inputs]]
        self.dynamic = bool(desc.shape_sets)

    def user(self, rng, set_index: int = 0) -> List[np.ndarray]:
        """One array per input as a user feeds it: uint8 pixels for a normalized 4-D image
        input, else data of the input's type."""
        xs = []
        for t, dims in zip(self.inputs, self.sets[set_index]):
            xs.append(_data(rng, dims, "uint8" if len(dims) == 4 and t.mean else t.dtype))
        return xs

    def raw(self, rng, set_index: int = 0) -> List[np.ndarray]:
        """Data in each input's own type (what inputs_pass_through=1 hands over)."""
        return [_data(rng, dims, t.dtype) for t, dims in zip(self.inputs, self.sets[set_index])]

    def nchw(self, xs: List[np.ndarray]) -> List[np.ndarray]:
        """The 4-D NHWC inputs transposed to NCHW (others unchanged)."""
        return [np.ascontiguousarray(x.transpose(0, 3, 1, 2))
                if t.fmt == "NHWC" and x.ndim == 4 else x for t, x in zip(self.inputs, xs)]


def _data(rng, dims, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(dims).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max + 1, size=dims, dtype=dt)


def _env(_):
    """What a constructor leaves in the environment (the runtime reads RKNN_LOG_LEVEL)."""
    return {"RKNN_LOG_LEVEL in os.environ": os.environ.get("RKNN_LOG_LEVEL")}


def _outputs_facts(first):
    """Facts about the arrays of an earlier call, to read after a later call."""
    arrays = [a for a in (first or []) if isinstance(a, np.ndarray)]
    return [a.copy() for a in arrays], arrays


def run_scenarios(Lite, models: Dict[str, str]) -> List[dict]:
    """Every call of the module docstring with class `Lite` on the model files `models`
    (name -> path); the records, in call order."""
    from rknnx.emulator.control import EmulatorControl

    # the library both packages load (/usr/lib/librknnrt.so on the board stand-in): one
    # dlopen of one file is one library, so these are the counters of their runtime
    rec = Recorder(EmulatorControl("/usr/lib/librknnrt.so"))
    rng_seed = 20260
    for name, path in models.items():
        spec = Spec(path)
        n = len(spec.inputs)

        def new(**kw):
            return rec("RKNNLite()", Lite, facts=_env, **kw)

        # -- the general calls, each argument ----------------------------------------------
        rec.where = (name, "calls")
        rng = np.random.default_rng(rng_seed)
        xs = spec.user(rng)
        lite = new()
        rec("load_rknn(path)", lite.load_rknn, path)
        rec("init_runtime()", lite.init_runtime)
        rec("inference(inputs=xs)", lite.inference, inputs=xs)
        rec("inference(xs, data_format='nhwc')", lite.inference, xs, data_format="nhwc")
        rec("inference(xs_nchw, data_format='nchw')", lite.inference, spec.nchw(xs),
            data_format="nchw")
        rec("inference(xs_nchw, data_format=['nchw']*n)", lite.inference, spec.nchw(xs),
            data_format=["nchw"] * n)
        rec("inference(xs, data_format=['nhwc']*n)", lite.inference, xs,
            data_format=["nhwc"] * n)
        if len({x.dtype for x in xs}) == 1:
            rec("inference(xs, data_type=<their dtype>)", lite.inference, xs,
                data_type=xs[0].dtype.name)
        rec("inference(xs, get_frame_id=True)", lite.inference, xs, get_frame_id=True)
        rec("inference(xs, inputs_pass_through=[0]*n)", lite.inference, xs,
            inputs_pass_through=[0] * n)
        rec("inference(raw, inputs_pass_through=[1]*n)", lite.inference, spec.raw(rng),
            inputs_pass_through=[1] * n)
        # reuse_outputs: the same arrays every call, overwritten
        first = rec("inference(xs, reuse_outputs=True) #1", lite.inference, xs,
                    reuse_outputs=True)
        kept, objs = _outputs_facts(first)
        xs2 = spec.user(rng)
        rec("inference(xs2, reuse_outputs=True) #2", lite.inference, xs2, reuse_outputs=True,
            facts=lambda out: {
                "returns call #1's arrays (is)": [o is a for o, a in zip(out or [], objs)],
                "shares memory with call #1's arrays": [np.shares_memory(o, a) for o, a in
                                                        zip(out or [], objs)],
                "call #1's arrays overwritten": [not np.array_equal(a, k, equal_nan=True)
                                                 for a, k in zip(objs, kept)]})
        rec("inference(xs2) after reuse", lite.inference, xs2,
            facts=lambda out: {"shares memory with call #1's arrays": [
                np.shares_memory(o, a) for o, a in zip(out or [], objs)]})
        rec("inference(xs, get_frame_id=True, reuse_outputs=True)", lite.inference, xs,
            get_frame_id=True, reuse_outputs=True)
        rec("get_sdk_version()", lite.get_sdk_version)
        rec("list_support_target_platform(path)", lite.list_support_target_platform, path)
        rec("release()", lite.release)
        rec("release() again", lite.release)
        rec("inference(xs) after release", lite.inference, xs)

        # -- the async flow: each call returns the previous frame's outputs ----------------
        rec.where = (name, "async")
        rng = np.random.default_rng(rng_seed + 1)
        lite = new()
        rec("load_rknn(path)", lite.load_rknn, path)
        rec("init_runtime(async_mode=True)", lite.init_runtime, async_mode=True)
        for k in range(3):
            rec(f"inference(frame{k}, get_frame_id=True)", lite.inference, spec.user(rng),
                get_frame_id=True)
        rec("release()", lite.release)

        # -- wrong arguments ---------------------------------------------------------------
        rec.where = (name, "errors")
        rng = np.random.default_rng(rng_seed + 2)
        xs = spec.user(rng)
        lite = new()
        rec("load_rknn(path)", lite.load_rknn, path)
        rec("init_runtime()", lite.init_runtime)
        rec("inference(xs + [extra])", lite.inference, xs + [xs[0]])
        rec("inference(xs[:-1])" if n > 1 else "inference([])", lite.inference, xs[:-1])
        rec("inference(x0 with one dim less)", lite.inference, [xs[0][0]] + xs[1:])
        for d in (1, -1):
            wrong = np.zeros(tuple(xs[0].shape[:-1]) + (xs[0].shape[-1] + d,), xs[0].dtype)
            rec(f"inference(x0 with last dim {d:+d})", lite.inference, [wrong] + xs[1:])
        for dt in ("float16", "float32", "float64", "int8", "uint8", "int16", "uint16",
                   "int32", "uint32", "int64", "uint64", "bool"):
            if dt != xs[0].dtype.name:
                rec(f"inference(x0 as {dt})", lite.inference, [xs[0].astype(dt)] + xs[1:])
        rec("inference(x0 as a nested list)", lite.inference, [xs[0].tolist()] + xs[1:])
        if n == 1:
            rec("inference(x0) (an ndarray, not a list)", lite.inference, xs[0])
        rec("inference(tuple(xs))", lite.inference, tuple(xs))
        other = "float32" if xs[0].dtype != np.float32 else "uint8"
        rec(f"inference(xs, data_type='{other}') (not x0's dtype)", lite.inference, xs,
            data_type=other)
        if len({x.dtype for x in xs}) > 1:
            rec("inference(xs, data_type=<x0's dtype>) (inputs of several dtypes)",
                lite.inference, xs, data_type=xs[0].dtype.name)
        rec("inference(xs_nchw, data_format='NCHW')", lite.inference, spec.nchw(xs),
            data_format="NCHW")
        rec("inference(xs, data_format='xyz')", lite.inference, xs, data_format="xyz")
        rec("inference(xs, inputs_pass_through=[0]*(n+1))", lite.inference, xs,
            inputs_pass_through=[0] * (n + 1))
        rec("inference(xs) still works", lite.inference, xs)
        rec("release()", lite.release)

        # -- dynamic shapes ----------------------------------------------------------------
        if spec.dynamic:
            rec.where = (name, "dynamic")
            rng = np.random.default_rng(rng_seed + 3)
            lite = new()
            rec("load_rknn(path)", lite.load_rknn, path)
            rec("init_runtime()", lite.init_runtime)
            order = [0, len(spec.sets) - 1, 1, 0]
            for k in order:
                xs = spec.user(rng, k)
                shape = "x".join(map(str, xs[0].shape))
                rec(f"inference(set {k}: {shape})", lite.inference, xs)
                rec(f"inference(set {k}: {shape} as nchw, data_format='nchw')",
                    lite.inference, spec.nchw(xs), data_format="nchw")
            for k in order:
                xs = spec.user(rng, k)
                shape = "x".join(map(str, xs[0].shape))
                rec(f"inference(set {k}: {shape}, reuse_outputs=True)", lite.inference, xs,
                    reuse_outputs=True)
            bad = [np.zeros((1, 50, 50, xs[0].shape[3]), xs[0].dtype)] + xs[1:]
            rec("inference(a shape in no set: 1x50x50)", lite.inference, bad)
            rec("inference(set 0 after the refused shape)", lite.inference, spec.user(rng, 0))
            rec("release()", lite.release)

    # -- the calls around the model, once (on the first model) -----------------------------
    name, path = next(iter(models.items()))
    spec = Spec(path)
    xs = spec.user(np.random.default_rng(rng_seed + 4))
    rec.where = (name, "lifecycle")
    lite = rec("RKNNLite()", Lite, facts=_env)
    rec("inference(xs) before init_runtime", lite.inference, xs)
    rec("get_sdk_version() before init_runtime", lite.get_sdk_version)
    rec("init_runtime() before load_rknn", lite.init_runtime)
    rec("load_rknn('/nonexistent.rknn')", lite.load_rknn, "/nonexistent.rknn")
    rec("load_rknn(path)", lite.load_rknn, path)
    rec("init_runtime()", lite.init_runtime)
    rec("init_runtime() again", lite.init_runtime)
    rec("inference(xs) after the second init_runtime", lite.inference, xs)
    rec("list_support_target_platform()", lite.list_support_target_platform)
    rec("list_devices()", lite.list_devices)
    rec("release()", lite.release)
    rec("init_runtime() after release", lite.init_runtime)
    rec("release() after that", lite.release)
    rec("RKNNLite(verbose=True)", Lite, facts=_env, verbose=True)

    rec.where = (name, "core_mask")
    for mask_name in ("NPU_CORE_AUTO", "NPU_CORE_0", "NPU_CORE_1", "NPU_CORE_2",
                      "NPU_CORE_0_1", "NPU_CORE_0_1_2", "NPU_CORE_ALL", "5"):
        lite = rec("RKNNLite()", Lite, facts=_env)
        rec("load_rknn(path)", lite.load_rknn, path)
        mask = getattr(Lite, mask_name) if mask_name.startswith("NPU") else int(mask_name)
        rec(f"init_runtime(core_mask={mask_name})", lite.init_runtime, core_mask=mask)
        rec(f"inference(xs) on core_mask={mask_name}", lite.inference, xs)
        rec("release()", lite.release)
    return rec.records


def worker(args) -> int:
    if args.side == "vendor":
        from rknnlite.api import RKNNLite as Lite
    else:
        from rknnx.lite import RKNNLite as Lite
    models = dict(pair.split("=", 1) for pair in args.model_files)
    records = run_scenarios(Lite, models)
    with open(args.out, "wb") as f:
        pickle.dump({"side": args.side, "platform": args.platform, "records": records}, f)
    return 0


# ==== the parent: write the models, run both sides, compare ==============================
_RUNTIME_LINE = re.compile(r"^([EWIDV]) RKNN: ")
_API_LINE = re.compile(r"^([EWID]) ")


def split_log(lines: List[str]) -> Dict[str, List[str]]:
    """The captured lines by source: the runtime's (``X RKNN: ...``), the API layer's
    (``E ...``, ``W ...``), and anything else (printed text, traceback lines)."""
    out: Dict[str, List[str]] = {"runtime": [], "api": [], "other": []}
    for line in lines:
        line = re.sub(r"0x[0-9a-f]+", "0x..", line.rstrip())
        line = re.sub(r"\[\d\d:\d\d:\d\d\.\d+\] ", "", line)      # librknnrt's time stamps
        if not line:
            continue
        if _RUNTIME_LINE.match(line):
            out["runtime"].append(line)
        elif _API_LINE.match(line):
            out["api"].append(line)
        else:
            out["other"].append(line)
    return out


def _levels(lines: List[str]) -> str:
    """``E W``: the levels E/W among the lines (not how many: the vendor logs a traceback
    after each error)."""
    return " ".join(k for k in "EW" if any(line[0] == k for line in lines)) or "none"


def _short(v: Any, width: int = 70) -> str:
    s = repr(v)
    return s if len(s) <= width else s[: width - 3] + "..."


def describe(s) -> str:
    """A return value summary in a few words."""
    if s is None:
        return "-"
    k = s["kind"]
    if k == "ndarray":
        return f"{s['dtype']}{list(s['shape'])}"
    if k in ("list", "tuple"):
        return f"{k} of {len(s['items'])}: " + ", ".join(describe(x) for x in s["items"])
    if k == "object":
        return f"a {s['value']}"
    return _short(s["value"])


def compare_values(v, r, where: str = "") -> List[str]:
    """The differences between two return value summaries (vendor `v`, rknnx `r`)."""
    if v is None or r is None:
        return [] if v is r else [f"{where}vendor {describe(v)}, rknnx {describe(r)}"]
    if v["kind"] != r["kind"]:
        return [f"{where}vendor returns {describe(v)}, rknnx {describe(r)}"]
    k = v["kind"]
    if k in ("list", "tuple"):
        if len(v["items"]) != len(r["items"]):
            return [f"{where}vendor returns {describe(v)}, rknnx {describe(r)}"]
        out = []
        for i, (a, b) in enumerate(zip(v["items"], r["items"])):
            out += compare_values(a, b, f"{where}[{i}] ")
        return out
    if k == "ndarray":
        a, b = v["data"], r["data"]
        if v["dtype"] != r["dtype"]:
            return [f"{where}dtype: vendor {v['dtype']}, rknnx {r['dtype']}"]
        if a.shape != b.shape:
            note = ""
            if a.size > b.size and np.array_equal(a.ravel()[: b.size], b.ravel(),
                                                   equal_nan=True):
                note = (f"; the vendor's first {b.size} values are rknnx's, the other "
                        f"{a.size - b.size} are not this run's")
            return [f"{where}shape: vendor {list(a.shape)}, rknnx {list(b.shape)}{note}"]
        out = []
        if not np.array_equal(a, b, equal_nan=True):
            d = np.abs(a.astype(np.float64) - b.astype(np.float64))
            out.append(f"{where}values: {int((d > 0).sum())} of {a.size} differ "
                       f"(max |diff| {float(np.nanmax(d)):.3g})")
        if v["writeable"] != r["writeable"]:
            out.append(f"{where}writeable: vendor {v['writeable']}, rknnx {r['writeable']}")
        return out
    if v["value"] != r["value"] and not (k == "object"):
        return [f"{where}vendor returns {_short(v['value'])}, rknnx {_short(r['value'])}"]
    return []


def compare_records(v: dict, r: dict) -> List[Tuple[str, str]]:
    """(aspect, text) for each difference of one call."""
    out: List[Tuple[str, str]] = []
    if v["raised"] or r["raised"]:
        if v["raised"] != r["raised"]:
            out.append(("raises", f"vendor raised {v['raised']!r}, rknnx raised {r['raised']!r}"))
    for text in compare_values(v["ret"], r["ret"]):
        out.append(("return", text))
    if v["runtime"] != r["runtime"]:
        for key in v["runtime"]:
            a, b = v["runtime"][key], r["runtime"][key]
            if a != b:
                out.append(("runtime", f"{key}: vendor {a}, rknnx {b}"))
    if v["facts"] != r["facts"]:
        for key in sorted(set(v["facts"]) | set(r["facts"])):
            a, b = v["facts"].get(key), r["facts"].get(key)
            if a != b:
                out.append(("return", f"{key}: vendor {a}, rknnx {b}"))
    lv, lr = split_log(v["log"]), split_log(r["log"])
    va, ra = _levels(lv["api"]), _levels(lr["api"])
    if va != ra:
        out.append(("log", f"API log lines: vendor {va}, rknnx {ra}"
                           + _examples(lv["api"], lr["api"])))
    vr = [x for x in lv["runtime"] if x[0] in "EW"]
    rr = [x for x in lr["runtime"] if x[0] in "EW"]
    if vr != rr:
        out.append(("runtime log", "runtime E/W lines differ (the calls made differ)"
                                   + _examples(vr, rr, both=True)))
    return out


def _examples(a: List[str], b: List[str], both: bool = False) -> str:
    """The lines that say most: each side's W lines (distinct) and its first E line."""
    def gist(lines):
        ws = list(dict.fromkeys(x for x in lines if x[0] == "W"))[:2]
        es = [x for x in lines if x[0] == "E"][:1]
        return [x if len(x) <= 110 else x[:107] + "..." for x in ws + es]
    if both:     # runtime lines: those of one side only
        a, b = [x for x in a if x not in b], [x for x in b if x not in a]
    parts = [f"vendor: {x}" for x in gist(a)] + [f"rknnx: {x}" for x in gist(b)]
    return (" [" + " | ".join(parts) + "]") if parts else ""


def compare(vendor: dict, rknnx: dict) -> List[dict]:
    diffs = []
    vrec, rrec = vendor["records"], rknnx["records"]
    if [(x["model"], x["scenario"], x["step"]) for x in vrec] != \
            [(x["model"], x["scenario"], x["step"]) for x in rrec]:
        raise SystemExit("the two sides recorded different call sequences")
    for v, r in zip(vrec, rrec):
        for aspect, text in compare_records(v, r):
            diffs.append({"model": v["model"], "scenario": v["scenario"], "step": v["step"],
                          "aspect": aspect, "text": text})
    return diffs


#: the differences this program finds, each a pattern over
#: "<scenario> | <step> | <aspect> | <text>"; the numbers are those of the module docstring
KNOWN: List[Tuple[str, str]] = [
    ("1 dynamic-shape outputs",
     r"\| return \| \[\d+\] shape: vendor .* are not this run's$"),
    ("2 data_format='nchw' warning",
     r"\| log \| .*W The input\[\d+\] need NHWC data format, but NCHW set"),
    ("3 data_format in capitals", r"\| inference\(xs_nchw, data_format='NCHW'\) \|"),
    ("4 data_type checked", r"\| inference\(xs, data_type="),
    ("5 float64 inputs", r"\| inference\(x0 as float64\) \|"),
    ("6 one array for inputs", r"\| inference\(x0\) \(an ndarray, not a list\) \| log \|"),
    ("7 a tuple for inputs", r"\| inference\(tuple\(xs\)\) \|"),
    ("8 reuse_outputs: the same objects", r"\| return \| returns call #1's arrays \(is\):"),
    ("9 failed init_runtime keeps the runtime",
     r"^core_mask \| (init_runtime\(core_mask=\w+\)|inference\(xs\) on core_mask=\w+) \|"),
    ("10 RKNN_LOG_LEVEL", r"\| RKNN_LOG_LEVEL in os.environ: vendor"),
    ("11 get_sdk_version text", r"\| get_sdk_version\(\) \| return \|"),
    ("12 list_support_target_platform", r"\| list_support_target_platform\(path\) \|"),
    ("13 the runtime calls made", r"\| runtime log \|"),
    ("14 static models: a W line at init_runtime",
     r"\| init_runtime\([^|]*\| log \| .*W Query dynamic range failed"),
    ("15 a bigger array than the input", r"\| inference\(x0 with last dim \+1\) \|"),
]


def known_id(d: dict) -> Optional[str]:
    """The entry of :data:`KNOWN` a difference is (13 and 14 first: a call that differs in
    its arguments may also differ in the runtime calls made, or be an init_runtime)."""
    line = f"{d['scenario']} | {d['step']} | {d['aspect']} | {d['text']}"
    for name, pattern in sorted(KNOWN, key=lambda k: not k[0].startswith(("13 ", "14 "))):
        if re.search(pattern, line):
            return name
    return None


def report(diffs: List[dict], every: bool) -> int:
    """Print the differences by known difference (then the unknown ones): each distinct
    (aspect, text) once, with the calls, models and platforms it was seen on (`every`: one
    line per call); return how many differences are unknown."""
    groups: Dict[Optional[str], Dict[tuple, dict]] = {}
    for d in diffs:
        k = known_id(d)
        key = (d["aspect"], d["text"]) + ((d["scenario"], d["step"]) if every else ())
        g = groups.setdefault(k, {}).setdefault(key, {"calls": {}, "models": {}, "n": 0})
        g["calls"][f"{d['scenario']}: {d['step']}"] = None
        g["models"].setdefault(d["model"], set()).add(d["platform"])
        g["n"] += 1
    for name in [n for n, _ in KNOWN] + [None]:
        if name not in groups:
            if name is not None:
                print(f"\n[{name}] not seen")
            continue
        n = sum(g["n"] for g in groups[name].values())
        print(f"\n[{name or 'NOT KNOWN'}] {n} difference(s)")
        for (aspect, text, *_), g in groups[name].items():
            calls = list(g["calls"])
            more = f" and {len(calls) - 3} other calls" if len(calls) > 3 else ""
            where = ", ".join(f"{m} ({'/'.join(sorted(p))})" for m, p in g["models"].items())
            text = text if len(text) <= 240 else text[:237] + "..."
            print(f"  {aspect}: {text}\n"
                  f"      in {'; '.join(calls[:3])}{more}\n      on {where}")
    return sum(g["n"] for g in groups.get(None, {}).values())


def board_dir() -> str:
    d = os.environ.get("QEMU_LD_PREFIX")
    if not d or not os.path.isdir(os.path.join(d, "proc", "device-tree")):
        raise SystemExit("rknnlite_compare: QEMU_LD_PREFIX must name the board stand-in "
                         "(run it through scripts/compare-rknnlite)")
    return d


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--platforms", default=",".join(PLATFORMS))
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--out", help="write every difference to this file (pickle of dicts)")
    p.add_argument("--verbose", action="store_true", help="print each call's captured lines")
    p.add_argument("--all", action="store_true",
                   help="print every difference (default: one line per call and aspect)")
    p.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument("--platform", help=argparse.SUPPRESS)
    p.add_argument("--worker-out", dest="out_worker", help=argparse.SUPPRESS)
    p.add_argument("model_files", nargs="*", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.side:
        args.out = args.out_worker
        return worker(args)

    from rknnx.emulator import samples

    from importlib.metadata import version

    board = board_dir()
    lib = "/usr/lib/librknnrt.so"
    print(f"== vendor: rknn-toolkit-lite2 {version('rknn-toolkit-lite2')}; rknnx "
          f"{version('rknnx')}; both on {lib} -> {os.path.realpath(lib)}", flush=True)
    t0 = time.monotonic()
    all_diffs = []
    with tempfile.TemporaryDirectory() as tmp:
        for platform in args.platforms.split(","):
            with open(os.path.join(board, "proc", "device-tree", "compatible"), "wb") as f:
                f.write(compatible(platform))
            files = []
            for name in args.models.split(","):
                path = os.path.join(tmp, f"{name}-{platform}.rknn")
                with open(path, "wb") as f:
                    f.write(samples.ALL[name](target=platform))
                files.append(f"{name}={path}")
            results = {}
            for side in SIDES:
                out = os.path.join(tmp, f"{side}-{platform}.pickle")
                env = dict(os.environ, RKNN_EMU_PLATFORM=platform)
                env.pop("RKNN_LOG_LEVEL", None)
                t = time.monotonic()
                subprocess.run([sys.executable, __file__, "--side", side, "--platform", platform,
                                "--worker-out", out, *files], env=env, check=True)
                with open(out, "rb") as f:
                    results[side] = pickle.load(f)
                print(f"== {platform}: {side} ran {len(results[side]['records'])} calls in "
                      f"{time.monotonic() - t:.0f} s", flush=True)
            if args.verbose:
                for v, r in zip(results["vendor"]["records"], results["rknnx"]["records"]):
                    print(f"-- {v['model']} {v['scenario']}: {v['step']}")
                    print(f"   vendor {describe(v['ret'])} {v['raised'] or ''}")
                    for line in v["log"]:
                        print(f"     | {line}")
                    print(f"   rknnx  {describe(r['ret'])} {r['raised'] or ''}")
                    for line in r["log"]:
                        print(f"     | {line}")
            for d in compare(results["vendor"], results["rknnx"]):
                d["platform"] = platform
                all_diffs.append(d)
    unknown = report(all_diffs, args.all)
    print(f"\n{len(all_diffs)} differences ({unknown} not in the list of known ones) in "
          f"{time.monotonic() - t0:.0f} s")
    if args.out:
        with open(args.out, "wb") as f:
            pickle.dump(all_diffs, f)
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
