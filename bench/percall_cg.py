"""Per-call instructions of the binding's and the facade's calls, counted by callgrind.

Instruction counts do not move with the machine's load, unlike times: this is the
breakdown of docs/benchmarks.md, "Where the nanoseconds go".  Each workload is a Python
loop of N and of 2N calls, each run under ``valgrind --tool=callgrind``; a call costs
(I(2N) - I(N)) / N, the start-up and the set-up cancelling out.  The C loops of
``bench/c/run_loop.c`` are counted the same way.  Needs valgrind and a C compiler; runs
on the emulator (``RKNNX_RUNTIME=emulator`` is set for the children), a few minutes.

Workloads (tiny_relu; every Python one is a ``lambda`` or a bound method called in a
``for`` loop, as the suite's timing loop calls them):

- ``empty``: an empty function (the loop and a call: the floor under every line);
- ``zc``: ``Context.run`` with memory bound (``ZeroCopySession.run`` is that bound method);
- ``sig``: a Python method of ``Model.run``'s signature doing nothing, called as
  ``m.run(*x, out=out)`` (the floor of ``Model.run`` when it was a Python method);
- ``sigc``: the same compiled (``bench/empty_run.py``: a method descriptor declared as
  ``_ModelRun.run`` is, empty), called the same way: the floor of ``Model.run`` now;
- ``infer``: ``ctx.infer(arrays, out, want_float=True)`` on a context of the model;
- ``model``: ``m.run(*x, out=out)``;
- ``c-zerocopy``, ``c-general``: the C loops (their two clock reads included).

Usage::

    python bench/percall_cg.py                 # every workload
    python bench/percall_cg.py zc model        # some
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = ("empty", "zc", "sig", "sigc", "infer", "model", "c-zerocopy", "c-general")


class _Signature:
    def run(self, *inputs, raw=False, out=None, data_format=None, pass_through=None):
        return None


def _empty():
    return None


def workload(what: str, n: int, path: str) -> None:
    """Run `what` n times after 200 untimed calls (the child's side)."""
    import numpy as np

    import rknnx

    m = rknnx.Model(path)
    x = [np.zeros(t.shape, t.dtype) for t in m.inputs]
    out = [np.empty(a.shape, a.dtype) for a in m.run(*x)]
    zc = m.new_context()
    mems = []
    for attrs in (zc.input_attrs, zc.output_attrs):
        for a in attrs:
            mems.append(zc.create_mem(a.alloc_size))
            zc.set_io_mem(mems[-1], a)
    ctx = m.new_context()
    arrays = [a for a, _ in m.prepare_inputs(x)[0]]
    sig = _Signature()
    if what == "sigc":
        sys.path.insert(0, str(HERE))
        from empty_run import instance

        sig = instance(Path(path).parent)          # built there by main()
    f = {"empty": _empty, "zc": zc.run, "sig": lambda: sig.run(*x, out=out),
         "sigc": lambda: sig.run(*x, out=out),
         "infer": lambda: ctx.infer(arrays, out, want_float=True),
         "model": lambda: m.run(*x, out=out)}[what]
    for _ in range(200):
        f()
    for _ in range(n):
        f()


def _count(cmd, env) -> int:
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
                       env=env, capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", r.stderr).group(1))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--workload"]:
        workload(argv[1], int(argv[2]), argv[3])
        return 0
    if not shutil.which("valgrind"):
        sys.exit("valgrind is needed (apt-get install valgrind)")
    names = argv or list(WORKLOADS)
    n = 10000
    # one interpreter state for every run: the same hash seed, BLAS threads off (an idle
    # OpenBLAS thread spinning adds hundreds of instructions a call, at random)
    env = dict(os.environ, PYTHONHASHSEED="0", RKNNX_RUNTIME="emulator",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    import rknnx
    from rknnx.emulator import samples

    info = rknnx.load_runtime("emulator")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        path = tmp / "tiny_relu.rknn"
        path.write_bytes(samples.tiny_relu())
        exe = None
        print(f"{'workload':<12} instructions per call")
        for name in names:
            if name == "sigc":
                sys.path.insert(0, str(HERE))
                from empty_run import build
                if build(tmp) is None:
                    print(f"{name:<12} (needs Cython and a C compiler)")
                    continue
            if name.startswith("c-"):
                if exe is None:
                    sys.path.insert(0, str(HERE))
                    from overhead import build_c_loop
                    exe = build_c_loop(tmp, info["path"])
                cmd = lambda k: [str(exe), str(path), name[2:], str(k)]  # noqa: E731
            else:
                cmd = lambda k: [sys.executable, __file__, "--workload", name, str(k),  # noqa: E731
                                 str(path)]
            per = (_count(cmd(2 * n), env) - _count(cmd(n), env)) / n
            print(f"{name:<12} {per:10,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
