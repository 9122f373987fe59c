"""Per-call overhead of rknnx against the same loop written in C.

Runs, in one process and one sitting (ratios, not absolute times, are what to read on
a shared machine):

- ``c-zerocopy``:   ``rknn_run`` in a C loop with memory bound by ``rknn_set_io_mem``
- ``py-zerocopy``:  ``Context.run()`` on the same binding
- ``c-general``:    ``rknn_inputs_set`` + ``rknn_run`` + ``rknn_outputs_get(float)`` +
  ``rknn_outputs_release`` in C
- ``py-general``:   ``Context.inputs_set`` + ``run`` + ``outputs_get(want_float=True)`` +
  ``release`` on numpy arrays
- ``ctypes-general``: the same four calls through ctypes, structs prepared once: the
  minimal Python loop (the yardstick for the general flow: the binding should beat it)
- ``py-view``:      ``np.asarray(mem)`` on a TensorMem bound to a tensor attribute

Each line prints the median and p95 in nanoseconds per call and the ratio of the median
to the C loop.  The C loop is compiled at run time against the loaded runtime (the bundled
emulator on a host, librknnrt on a board).

Usage::

    python bench/overhead.py                      # tiny model on the emulator
    python bench/overhead.py --model classifier   # a sample model of rknnx.emulator.samples
    python bench/overhead.py --model my.rknn      # a real model on a board
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import rknnx

HERE = Path(__file__).resolve().parent
INCLUDE = HERE.parent / "include" / "rknnx"


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def summary(name, samples, base=None):
    med = statistics.median(samples)
    p95 = percentile(samples, 95)
    ratio = f"  x{med / base:5.2f} of C" if base else ""
    print(f"{name:<14} median {med:10.0f} ns   p95 {p95:10.0f} ns{ratio}", flush=True)
    return med


def model_path(arg: str, tmp: Path) -> str:
    if os.path.exists(arg):
        return arg
    from rknnx.emulator import samples

    maker = getattr(samples, arg, None)
    if maker is None:
        sys.exit(f"--model: {arg!r} is neither a file nor a sample of rknnx.emulator.samples")
    path = tmp / f"{arg}.rknn"
    path.write_bytes(maker())
    return str(path)


def build_c_loop(tmp: Path, runtime: str) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("a C compiler is needed for the C baseline (set CC)")
    exe = tmp / "run_loop"
    libdir, libname = os.path.split(os.path.abspath(runtime))
    subprocess.run([cc, "-O2", "-std=c11", f"-I{INCLUDE}", str(HERE / "c" / "run_loop.c"),
                    "-o", str(exe), f"-L{libdir}", f"-l:{libname}", f"-Wl,-rpath,{libdir}"],
                   check=True)
    return exe


def c_loop(exe: Path, model: str, flow: str, n: int) -> list[int]:
    out = subprocess.run([str(exe), model, flow, str(n)], check=True, capture_output=True,
                         text=True).stdout
    return [int(x) for x in out.split()]


def py_zerocopy(model: str, n: int):
    clock = time.perf_counter_ns
    with rknnx.lowlevel.Context(model) as ctx:
        mems = []
        for attr in ctx.input_attrs + ctx.output_attrs:
            mem = ctx.create_mem(max(attr.size, attr.size_with_stride))
            ctx.set_io_mem(mem, attr)
            mems.append(mem)
        run = ctx.run
        samples = []
        for _ in range(n):
            t0 = clock()
            run()
            samples.append(clock() - t0)
        view_samples = []
        mem = mems[0].bind(ctx.input_attrs[0])
        asarray = np.asarray
        for _ in range(n):
            t0 = clock()
            asarray(mem)
            view_samples.append(clock() - t0)
        for mem in mems:
            mem.close()
    return samples, view_samples


def py_general(model: str, n: int):
    clock = time.perf_counter_ns
    with rknnx.lowlevel.Context(model) as ctx:
        arrays = [np.zeros(a.shape, a.dtype) for a in ctx.input_attrs]
        samples = []
        for _ in range(n):
            t0 = clock()
            ctx.inputs_set(arrays)
            ctx.run()
            outs = ctx.outputs_get(want_float=True)
            outs.release()
            samples.append(clock() - t0)
    return samples


def ctypes_general(runtime: str, model: str, n: int):
    """The general flow through ctypes with everything prepared outside the loop."""
    import ctypes as C

    class Attr(C.Structure):
        _fields_ = [("index", C.c_uint32), ("n_dims", C.c_uint32), ("dims", C.c_uint32 * 16),
                    ("name", C.c_char * 256), ("n_elems", C.c_uint32), ("size", C.c_uint32),
                    ("fmt", C.c_int), ("type", C.c_int), ("qnt_type", C.c_int),
                    ("fl", C.c_int8), ("zp", C.c_int32), ("scale", C.c_float),
                    ("w_stride", C.c_uint32), ("size_with_stride", C.c_uint32),
                    ("pass_through", C.c_uint8), ("h_stride", C.c_uint32)]

    class Input(C.Structure):
        _fields_ = [("index", C.c_uint32), ("buf", C.c_void_p), ("size", C.c_uint32),
                    ("pass_through", C.c_uint8), ("type", C.c_int), ("fmt", C.c_int)]

    class Output(C.Structure):
        _fields_ = [("want_float", C.c_uint8), ("is_prealloc", C.c_uint8),
                    ("index", C.c_uint32), ("buf", C.c_void_p), ("size", C.c_uint32)]

    lib = C.CDLL(runtime)
    ctx = C.c_uint64(0)
    if lib.rknn_init(C.byref(ctx), model.encode(), 0, 0, None) < 0:
        sys.exit("ctypes: rknn_init failed")
    num = (C.c_uint32 * 2)()
    lib.rknn_query(ctx, 0, num, 8)
    n_in, n_out = num[0], num[1]
    inputs = (Input * n_in)()
    keep = []
    for i in range(n_in):
        a = Attr(index=i)
        lib.rknn_query(ctx, 1, C.byref(a), C.sizeof(a))
        buf = np.zeros(a.size, np.uint8)
        keep.append(buf)
        inputs[i] = Input(i, buf.ctypes.data, a.size, 0, a.type, a.fmt)
    outputs = (Output * n_out)()
    inputs_set, run, get, release = (lib.rknn_inputs_set, lib.rknn_run, lib.rknn_outputs_get,
                                     lib.rknn_outputs_release)
    clock = time.perf_counter_ns
    samples = []
    for _ in range(n):
        t0 = clock()
        inputs_set(ctx, n_in, inputs)
        run(ctx, None)
        for i in range(n_out):
            outputs[i].index, outputs[i].want_float = i, 1
        get(ctx, n_out, outputs, None)
        release(ctx, n_out, outputs)
        samples.append(clock() - t0)
    lib.rknn_destroy(ctx)
    return samples


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny_relu",
                        help="a model file, or the name of a sample model (default tiny_relu)")
    parser.add_argument("-n", "--count", type=int, default=20000, help="calls per configuration")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first")
    args = parser.parse_args(argv)

    try:
        info = rknnx.runtime_info()
    except rknnx.RuntimeNotFoundError:
        info = rknnx.load_runtime("emulator")
    print(f"runtime: {info['path']} ({'emulator' if info['is_emulator'] else 'librknnrt'})")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        model = model_path(args.model, tmp)
        print(f"model:   {args.model}   calls: {args.count}")
        exe = build_c_loop(tmp, info["path"])
        c_loop(exe, model, "zerocopy", args.warmup)
        py_zerocopy(model, args.warmup)
        base_zc = summary("c-zerocopy", c_loop(exe, model, "zerocopy", args.count))
        zc, view = py_zerocopy(model, args.count)
        med_zc = summary("py-zerocopy", zc, base_zc)
        base_gen = summary("c-general", c_loop(exe, model, "general", args.count))
        med_gen = summary("py-general", py_general(model, args.count), base_gen)
        summary("ctypes-general", ctypes_general(info["path"], model, args.count), base_gen)
        summary("py-view", view)
        print(f"python overhead per run(): zero-copy {med_zc - base_zc:+.0f} ns, "
              f"general {med_gen - base_gen:+.0f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
