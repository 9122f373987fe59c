"""Shared test utilities: building C at test time, locating the repository."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
INCLUDE = REPO / "include" / "rknnx"
DATA = Path(__file__).resolve().parent / "data"


def cc() -> str:
    """The C compiler tests use (env CC, else cc/gcc)."""
    for cand in (os.environ.get("CC"), "cc", "gcc"):
        if cand and shutil.which(cand):
            return cand
    raise RuntimeError("no C compiler found (set CC)")


def abi_flags() -> list:
    """What CMakeLists.txt adds for this ABI: SSE2 arithmetic on 32-bit x86 (x87's
    extended precision rounds differently from the boards and from numpy)."""
    import platform
    import struct

    if struct.calcsize("P") == 4 and platform.machine() in ("x86_64", "i386", "i486",
                                                            "i586", "i686", "AMD64"):
        return ["-msse2", "-mfpmath=sse"]
    return []


#: how the C checks (tests/c/*_check.c) build under ASan/UBSan
SANITIZE = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all"]
_SANITIZERS: list = []


def check_build_flags(mode: str, tmp: Path) -> list:
    """The flags of a C check's build `mode`: "O2", or "asan-ubsan" (SANITIZE), which
    skips the test, saying why, where the compiler cannot build and run a sanitized
    program (asked once per process)."""
    if mode == "O2":
        return ["-O2"]
    if not _SANITIZERS:
        probe = tmp / "probe.c"
        probe.write_text("int main(void) { return 0; }\n")
        r = subprocess.run([cc(), *SANITIZE, str(probe), "-o", str(tmp / "probe")],
                           capture_output=True)
        _SANITIZERS.append(r.returncode == 0
                           and subprocess.run([str(tmp / "probe")]).returncode == 0)
    if not _SANITIZERS[0]:
        import pytest

        pytest.skip("the C compiler cannot build and run -fsanitize=address,undefined here")
    return list(SANITIZE)


def compile_c(sources, out: Path, *, shared=False, flags=(), libs=()) -> Path:
    """Compile C sources into an executable (or shared library) at `out`.

    Raises AssertionError with the compiler's output if compilation fails.
    """
    cmd = [cc(), "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}", *abi_flags()]
    if shared:
        cmd += ["-shared", "-fPIC"]
    cmd += list(flags) + [str(s) for s in sources] + ["-o", str(out)] + list(libs)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"compile failed: {' '.join(cmd)}\n{proc.stderr}"
    return out


def run_python(code: str, env=None, timeout=120, cwd=None, args=(),
               stdin=None) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter (fresh runtime loader state), with `args` as its
    sys.argv[1:] and `stdin` (a str) on its standard input."""
    full_env = dict(os.environ)
    # unbuffered: a child that ends with os._exit() or a crash still hands over what it
    # printed (the host's environment may or may not set this)
    full_env["PYTHONUNBUFFERED"] = "1"
    if env:
        for k, v in env.items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, cwd=cwd, input=stdin)


# ---- which runtime the suite runs on ---------------------------------------------------

_VENDOR_RUNTIME: list = []


def vendor_runtime():
    """The path of the vendor librknnrt the suite runs on: env RKNNX_RUNTIME naming a
    library that is not the emulator (loaded through rknnx's loader to tell), else None.
    On it, tests that need the emulator (its controls, its own sample models, its
    numerics) skip, saying why, and the rest run (scripts/test-vendor-runtime)."""
    if not _VENDOR_RUNTIME:
        word = os.environ.get("RKNNX_RUNTIME", "")
        path = None
        if word and not word.startswith("emulator"):
            import rknnx

            info = rknnx.load_runtime(word)
            path = None if info["is_emulator"] else info["path"]
        _VENDOR_RUNTIME.append(path)
    return _VENDOR_RUNTIME[0]


#: why a test skips on a vendor runtime
NEEDS_EMULATOR = "needs the emulator's controls (RKNNX_RUNTIME is a vendor runtime: {})"
NEEDS_SAMPLES = ("runs the emulator's own sample models, which only the emulator reads "
                 "(RKNNX_RUNTIME is a vendor runtime: {})")
EMULATOR_ITSELF = "a test of the emulator library itself (RKNNX_RUNTIME is a vendor runtime: {})"


def skip_on_vendor_runtime(why: str) -> None:
    """pytest.skip(why) when the suite runs on a vendor runtime (`why` a format string of
    the library's path)."""
    path = vendor_runtime()
    if path is not None:
        import pytest

        pytest.skip(why.format(path))


# ---- the binding and facade tests' helpers (fixtures in conftest.py) ------------------

#: personalities the binding tests run on where behaviour differs (Tables 3-1/3-2 columns)
PLATFORMS = ("RK3588", "RK3566", "RV1106")
#: personalities with the general API (inputs_set / outputs_get)
GENERAL_PLATFORMS = ("RK3588", "RK3566")

LIVE = ("live_contexts", "live_mems", "live_output_buffers")

_MODEL_CACHE: dict = {}


def model_bytes(name: str, target: str = "RK3588", **kw) -> bytes:
    """A sample model of rknnx.emulator.samples, built once per (name, target)."""
    from rknnx.emulator import samples

    skip_on_vendor_runtime(NEEDS_SAMPLES)
    key = (name, target, tuple(sorted(kw.items())))
    if key not in _MODEL_CACHE:
        _MODEL_CACHE[key] = samples.ALL[name](target=target, **kw)
    return _MODEL_CACHE[key]


def live(ctl) -> dict:
    c = ctl.counters()
    return {k: c[k] for k in LIVE}


def rss_kib() -> int:
    """Resident set size of this process, in KiB (Linux)."""
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0  # pragma: no cover


def trim_heap() -> None:
    """Have glibc's malloc give its free heap back to the system (malloc_trim), so that
    a resident size measured after it counts what is still allocated, not what the
    allocator kept (chunks under its sliding mmap threshold, up to 32 MB, stay in the
    heap once freed).  Nothing where the C library has no malloc_trim."""
    import ctypes
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def random_input(attr, rng, dtype=None):
    """Random data for an input attribute, as the user passes it (NHWC/declared order)."""
    dt = np.dtype(dtype) if dtype is not None else attr.dtype
    shape = attr.dims
    if dt == np.uint8:
        return rng.integers(0, 256, size=shape, dtype=np.uint8)
    if dt.kind == "i":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max + 1, size=shape, dtype=dt)
    return rng.standard_normal(shape).astype(dt)


# ---- the numpy oracle: what a model computes for user data ------------------------------------------------------------------------
def user_inputs(ctx, rng):
    """One array per input as a user passes it: uint8 pixels for normalized image inputs,
    else data in the model's type, in the attribute's layout."""
    xs = []
    for a in (ctx.input_attrs if hasattr(ctx, "input_attrs") else [t.attr for t in ctx.inputs]):
        if len(a.dims) == 4 and a.type in (2, 3):
            xs.append(rng.integers(0, 256, size=a.dims, dtype=np.uint8))
        elif a.dtype.kind == "f":
            xs.append(rng.standard_normal(a.dims).astype(a.dtype))
        else:
            info = np.iinfo(a.dtype)
            xs.append(rng.integers(info.min, info.max + 1, size=a.dims, dtype=a.dtype))
    return xs


def to_model(t, x):
    """What the runtime feeds the model for user data x: mean/std, then quantization."""
    if x.dtype == np.dtype(t.dtype) and not t.mean:
        return x
    v = x.astype(np.float32)
    if t.mean:
        mean = np.asarray(t.mean, np.float32)
        std = np.asarray(t.std, np.float32)
        v = (v - mean) / std if len(mean) > 1 else (v - mean[0]) / std[0]
    if t.qnt == "affine":
        return _reference().quantize(v, t.scale[0], t.zp[0], t.dtype)
    return v.astype(t.dtype)


def expected_outputs(model, xs, want_float, shape_set=0):
    m = _reference().as_model(model)
    ins = [to_model(m.tensors[n], x) for n, x in zip(m.inputs, xs)]
    outs = _reference().run_reference(m, ins, shape_set=shape_set)
    res = []
    for name, q in zip(m.outputs, outs):
        t = m.tensors[name]
        if want_float:
            q = (_reference().dequantize(q, t.scale[0], t.zp[0]) if t.qnt == "affine"
                 else q.astype(np.float32))
        if q.ndim == 4 and t.fmt == "NHWC":
            q = q.transpose(0, 3, 1, 2)
        res.append(q)
    return res


def _reference():
    from rknnx.emulator import reference

    return reference


#: what a binding probe starts with (see probe)
PROBE_PRELUDE = """
import gc, sys, threading
import numpy as np
import rknnx
from rknnx import _core as C
from rknnx.emulator import samples
TINY = samples.tiny_relu()
"""


def probe(code: str) -> str:
    """Run `code` (after PROBE_PRELUDE) in a fresh interpreter on the emulator; it must exit
    cleanly: a probe that used to crash the process fails the test instead of pytest."""
    import textwrap

    proc = run_python(PROBE_PRELUDE + textwrap.dedent(code), env={"RKNNX_RUNTIME": "emulator"})
    assert proc.returncode == 0, (f"probe died with status {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc.stdout


def bounded(call, timeout: float = 30.0):
    """`call()` in a daemon thread, joined with `timeout`: its result, or the exception it
    raised; a call that does not return in time fails the test instead of hanging the suite
    (the thread is left behind, blocked)."""
    import threading

    box = {}

    def target():
        try:
            box["result"] = call()
        except BaseException as exc:          # re-raised in the test's thread
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True, name="bounded-call")
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise AssertionError(f"{getattr(call, '__name__', call)!r} did not return within "
                             f"{timeout} s (a hang)")
    if "error" in box:
        raise box.pop("error")
    return box.get("result")


# ---- the vendor's files and answers (read in place, never copied into the repo) -------

def _vendor_data_root():
    """The folder holding ``rknn-models/`` and ``real-runtime/``: env RKNNX_VENDOR_DATA,
    else a ``shared/`` folder beside the checkout or above it, else /work/shared (where
    CI keeps them); None when none has them."""
    cands = [os.environ.get("RKNNX_VENDOR_DATA")]
    cands += [str(p / "shared") for p in (REPO.parent, *REPO.parents)]
    cands.append("/work/shared")
    for c in cands:
        if c and (Path(c) / "rknn-models").is_dir():
            return Path(c)
    return None


VENDOR_DATA = _vendor_data_root()
#: the vendor's .rknn files (toolkit-2.5.0/ and vendor/), or None
RKNN_MODELS = VENDOR_DATA / "rknn-models" if VENDOR_DATA else None
#: what the vendor runtimes answered for them (answers/, compare.py), or None
REAL_RUNTIME = (VENDOR_DATA / "real-runtime"
                if VENDOR_DATA and (VENDOR_DATA / "real-runtime").is_dir() else None)
#: the reason tests give when they skip without them
NO_VENDOR_DATA = ("the vendor's .rknn files and runtime answers are not here (set "
                  "RKNNX_VENDOR_DATA to the folder holding rknn-models/ and real-runtime/)")


def path_id(p) -> str:
    """The test id of a file parameter: its stem.  pytest 7.2 (Debian bookworm's) asks the
    id of an empty parameter set's placeholder too (no vendor data: no files), which has no
    stem: its str then (tests/package/test_collection.py)."""
    return getattr(p, "stem", None) or str(p)


def vendor_models():
    """Every vendor .rknn file (sorted paths), or [] without the data."""
    if RKNN_MODELS is None:
        return []
    return sorted(RKNN_MODELS.rglob("*.rknn"))


# ---- a FlatBuffer built here: the vendor files' payloads without the vendor's data --------

def flatbuffer(root) -> bytes:
    """Serialise `root` (a table: {slot: value}) as a FlatBuffer with identifier RKNN.
    Values: ('u8', v) ('u32', v) ('u64', v) ('str', s) ('bytes', b) ('vu32', [..])
    ('vi32', [..]) ('vf32', [..]) ('table', {..}) ('vtable', [{..}, ..])."""
    buf = bytearray(b"\0\0\0\0RKNN")

    def align():
        while len(buf) % 4:
            buf.append(0)

    def emit_table(fields):
        align()
        wide = [s for s in sorted(fields) if fields[s][0] != "u8"]
        narrow = [s for s in sorted(fields) if fields[s][0] == "u8"]
        offs, pos = {}, 4
        for s in wide:
            offs[s] = pos
            pos += 8 if fields[s][0] == "u64" else 4
        for s in narrow:
            offs[s] = pos
            pos += 1
        nslots = max(fields) + 1 if fields else 0
        vt = struct.pack("<HH", 4 + 2 * nslots, pos) + b"".join(
            struct.pack("<H", offs.get(s, 0)) for s in range(nslots))
        vt_pos = len(buf)
        buf.extend(vt)
        align()
        t = len(buf)
        buf.extend(struct.pack("<i", t - vt_pos) + bytes(pos - 4))
        later = []
        for s in wide:
            kind, v = fields[s]
            if kind == "u32":
                struct.pack_into("<I", buf, t + offs[s], v)
            elif kind == "u64":
                struct.pack_into("<Q", buf, t + offs[s], v)
            else:
                later.append((t + offs[s], kind, v))
        for s in narrow:
            buf[t + offs[s]] = fields[s][1]
        for at, kind, v in later:
            struct.pack_into("<I", buf, at, emit(kind, v) - at)
        return t

    def emit(kind, v):
        align()
        p = len(buf)
        if kind == "str":
            raw = v.encode()
            buf.extend(struct.pack("<I", len(raw)) + raw + b"\0")
        elif kind == "bytes":
            buf.extend(struct.pack("<I", len(v)) + bytes(v))
        elif kind in ("vu32", "vi32", "vf32"):
            code = {"vu32": "I", "vi32": "i", "vf32": "f"}[kind]
            buf.extend(struct.pack(f"<I{len(v)}{code}", len(v), *v))
        elif kind == "table":
            return emit_table(v)
        elif kind == "vtable":
            buf.extend(struct.pack("<I", len(v)) + bytes(4 * len(v)))
            for i, sub in enumerate(v):
                at = p + 4 + 4 * i
                struct.pack_into("<I", buf, at, emit_table(sub) - at)
        return p

    t = emit_table(root)
    struct.pack_into("<I", buf, 0, t)
    align()
    return bytes(buf)


def synthetic_rknn(generator: str, *, dynamic: bool = False, nchw=(1, 3, 4, 6),
                   mem_plan=None, constants=(), blob_of=None, dtype=("float16", 10),
                   out_nchw=None, chip="RK3588") -> bytes:
    """A container 6 file built here, of the layout the toolkit-2.5.0 RK3588 files have
    (docs/rknn-file-format.md): one float16 image input ``x`` of logical shape `nchw`, which
    the compiler made NHWC, one float16 [1, 4] output ``y``, and `generator` as the Model's
    generator text (slot 3).  The reader reads it and the emulator stands in for it.
    `mem_plan` (weight, internal) is the Model's slot 19; `constants`, a byte count per
    constant tensor, their data blobs (Model slot 20, a Tensor's slot 18 naming its blob; 0
    an empty blob, as a file built with remove_weight=True has); `blob_of`, each constant's
    blob index if not its own; `dtype` (name, ONNX code) the tensors' type; `out_nchw` a 4-D
    output ``y`` in the NPU's NC1HWC2 form (C2 8) instead of the [1, 4] one; `chip` RK3588 or
    RK3566 (the NPU family and platform string)."""
    n, c, h, w = nchw
    dname, dcode = dtype
    x = {0: ("u8", dcode), 1: ("u8", 64), 2: ("u8", 1), 3: ("vu32", [n, 1, h, w, c]),
         4: ("vu32", [n, c, h, w]), 5: ("str", "x")}
    y = {0: ("u8", dcode), 2: ("u8", 2), 3: ("vu32", [1, 4]), 4: ("vu32", [1, 4]),
         5: ("str", "y")}
    ylayout = "NCHW"
    if out_nchw:
        on, oc, oh, ow = out_nchw
        y = {0: ("u8", dcode), 1: ("u8", 64), 2: ("u8", 2),
             3: ("vu32", [on, (oc + 7) // 8, oh, ow, 8]), 4: ("vu32", list(out_nchw)),
             5: ("str", "y")}
    consts = [{0: ("u8", 3), 2: ("u8", 4), 4: ("vu32", [n]), 5: ("str", f"w{k}"),
               18: ("u32", blob_of[k] if blob_of else k + 1)} for k in range(len(constants))]
    graph = {0: ("vtable", [x, y] + consts), 2: ("vu32", [0]), 3: ("vu32", [1])}
    extra = {}
    if mem_plan is not None:
        extra[19] = ("table", {0: ("u64", mem_plan[0]), 1: ("u64", mem_plan[1])})
    if constants:
        extra[20] = ("vtable", [{}] + [{0: ("bytes", bytes(b))} for b in constants])
    payload = flatbuffer({
        0: ("u32", 6), 1: ("str", {"RK3588": "RKNPU v2", "RK3566": "RKNPU lite"}[chip]),
        2: ("vtable", [graph]), 3: ("str", generator),
        6: ("u32", 20500), 7: ("str", "2.5.0(compiler version: 2.5.0 (synthetic))"),
        8: ("str", chip.lower()), 9: ("str", "ONNX"),
        12: ("str", '{"x": {"dtype": "%s", "layout": "NHWC"}}' % dname),
        13: ("str", '{"y": {"dtype": "%s", "layout": "%s"}}' % (dname, ylayout)),
        16: ("str", "dynamic_shape" if dynamic else "static_shape"), **extra})
    tail = b'{"input_num": 1, "output_num": 1, "version": "2.5.0"}'
    return (b"RKNN\0\0\0\0" + struct.pack("<QQ", 6, len(payload)) + bytes(40) + payload
            + struct.pack("<Q", len(tail)) + tail)


@functools.cache
def vendor_dequant_doc() -> dict:
    """tests/data/vendor_dequant_rules.json: the vendor runtimes' recorded outputs_get
    answers (codes and float hashes) that the dequantization rules are held to."""
    return json.loads((DATA / "vendor_dequant_rules.json").read_text())


def vendor_dequant_codes(rec) -> np.ndarray:
    """The int8 NCHW codes rknn_outputs_get(want_float=0) gave for one record of
    :func:`vendor_dequant_doc` (checked against the recorded sha256)."""
    doc = vendor_dequant_doc()
    if "want_float0_b64" in rec:
        q = np.frombuffer(base64.b64decode(rec["want_float0_b64"]), np.int8)
    else:
        # the stand-in's fill block repeated over the native [N, C1, H, W, C2] buffer
        block = np.frombuffer(bytes.fromhex(doc["fill_block_hex"]), np.int8)
        nat = np.resize(block, int(np.prod(rec["native_dims"]))).reshape(rec["native_dims"])
        q = nat.transpose(0, 1, 4, 2, 3).reshape(nat.shape[0], -1, *nat.shape[2:4])
        q = np.ascontiguousarray(q[:, :rec["dims"][1]])
    assert hashlib.sha256(q.tobytes()).hexdigest() == rec["want_float0_sha256"], rec
    return q.reshape(rec["dims"])


#: Python source a child script puts before its own lines: ``print_calls_in_a_fork(calls)``
#: forks, makes each ``(name, call)`` of `calls` in the child and prints a line for each
#: ("NAME: refused" where it raised RuntimeError naming this process and the way out of it,
#: "NAME: no error", or the error met); a child that hangs is killed after 20 s ("child
#: hung").  The parent goes on as it was.
FORK_PROBE = r'''
def print_calls_in_a_fork(calls):
    import os, time
    parent = os.getpid()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        lines = []
        for name, call in calls:
            try:
                call()
                lines.append(f"{name}: no error")
            except RuntimeError as e:
                ok = f"created in process {parent}" in str(e) and "create it after fork" in str(e)
                lines.append(f"{name}: {'refused' if ok else e}")
            except Exception as e:
                lines.append(f"{name}: {type(e).__name__}: {e}")
        os.write(w, ("\n".join(lines) + "\n").encode())
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("child hung")
    print(os.read(r, 65536).decode(), end="")
    os.close(r)
'''
