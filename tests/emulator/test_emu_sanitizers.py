"""The emulator's runtime under sanitizers (never crash; calls on different
contexts in parallel, one context serialized, destroy racing with use).

Two C drivers are compiled together with every emulator source (no ctypes: an ASan runtime
cannot be loaded into a non-ASan Python without LD_PRELOAD tricks):

* tests/c/emu_abuse.c under -fsanitize=address,undefined -fno-sanitize-recover=all: every
  exported rknn_* function with NULL pointers, zero / garbage / destroyed / wrong-kind
  contexts, huge sizes, bad indices and enum values, corrupted and truncated models, plus
  valid flows; each call's status is checked, and leaks are reported by LeakSanitizer.
  Then a seeded random walk over the API (well-formed and malformed calls in random
  orders) with the sanitizers and the live counters as the oracle.
* tests/c/emu_threads.c under -fsanitize=thread: parallel contexts, one shared context,
  destroy / destroy_mem racing with runs, dup while running, custom ops and matmul on
  several threads, controls changed during runs.
"""

import os
import pathlib
import re
import subprocess

import pytest

from helpers import cc
from emu_capi import samples

ROOT = pathlib.Path(__file__).resolve().parents[2]
# the emulator's sources and the vendor-file reader it links (rknnfile/)
SOURCES = sorted(str(p) for p in (ROOT / "emulator").glob("*.c")) + \
    sorted(str(p) for p in (ROOT / "rknnfile").glob("*.c"))
COMMON = ["-std=c11", "-O1", "-g", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror",
          "-ffp-contract=off", f"-I{ROOT}/include/rknnx", f"-I{ROOT}/emulator"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("emu_san_models")
    (d / "relu.rknn").write_bytes(samples.tiny_relu())
    (d / "custom.rknn").write_bytes(samples.custom_op_model())
    (d / "allops.rknn").write_bytes(samples.all_ops())
    (d / "relu_RK3566.rknn").write_bytes(samples.tiny_relu(target="RK3566"))
    (d / "relu_RV1106.rknn").write_bytes(samples.tiny_relu(target="RV1106"))
    return d


def _build(tmp, name, driver, sanitize):
    """Compile driver + the emulator with `sanitize`; skip if the toolchain cannot."""
    try:
        compiler = cc()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    probe = tmp / f"probe_{name}.c"
    probe.write_text("#include <pthread.h>\nstatic void *f(void *a){return a;}\n"
                     "int main(void){pthread_t t; pthread_create(&t, 0, f, 0);"
                     " return pthread_join(t, 0);}\n")
    r = subprocess.run([compiler, f"-fsanitize={sanitize}", str(probe), "-lpthread", "-o",
                        str(tmp / f"probe_{name}")], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"the C compiler cannot build with -fsanitize={sanitize}")
    r = subprocess.run([str(tmp / f"probe_{name}")], capture_output=True, timeout=60)
    if r.returncode != 0:
        pytest.skip(f"-fsanitize={sanitize} programs do not run here: {r.stderr.decode()[-300:]}")
    exe = tmp / name
    subprocess.run([compiler] + COMMON + [f"-fsanitize={sanitize}", "-fno-sanitize-recover=all"]
                   + SOURCES + [str(ROOT / "tests" / "c" / driver), "-lm", "-lpthread", "-o", str(exe)],
                   check=True)
    return exe


def _run(exe, model_dir, env_extra):
    env = dict(os.environ, RKNN_LOG_LEVEL="0", **env_extra)
    env.pop("RKNN_EMU_PLATFORM", None)
    env.pop("RKNN_EMU_NPU_TIME_US", None)
    return subprocess.run([str(exe), str(model_dir)], capture_output=True, timeout=300, env=env)


def _report(r):
    err = "\n".join(l for l in r.stderr.decode(errors="replace").splitlines()
                    if not l.startswith(("E RKNN:", "W RKNN:")))
    return f"exit {r.returncode}\nstdout: {r.stdout.decode()[-2000:]}\nstderr:\n{err[-6000:]}"


def test_every_function_is_abused():
    """emu_abuse.c calls every function the vendor headers declare."""
    names = set()
    for h in ("rknn_api.h", "rknn_matmul_api.h", "rknn_custom_op.h"):
        text = (ROOT / "include" / "rknnx" / h).read_text()
        names |= set(re.findall(r"^\s*(?:int|void|rknn_tensor_mem\s*\*)\s*\*?\s*(rknn_\w+)\s*\(",
                                text, re.M))
    assert len(names) >= 35, sorted(names)
    body = (ROOT / "tests" / "c" / "emu_abuse.c").read_text()
    missing = sorted(n for n in names if not re.search(rf"\b{n}\s*\(", body))
    assert not missing


def test_malformed_calls_under_asan_ubsan(tmp_path, model_dir):
    exe = _build(tmp_path, "emu_abuse", "emu_abuse.c", "address,undefined")
    r = _run(exe, model_dir, {
        "ASAN_OPTIONS": "detect_leaks=1:allocator_may_return_null=1:abort_on_error=0:exitcode=23",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=24"})
    assert r.returncode == 0, _report(r)
    m = re.search(rb"abuse: (\d+) checks, 0 failed", r.stdout)
    assert m and int(m.group(1)) > 2000, _report(r)
    walk = re.search(rb"random walk: (\d+) steps, (\d+) runs", r.stdout)
    assert walk and int(walk.group(2)) > 100, _report(r)    # the walk reaches real runs


def test_concurrency_under_tsan(tmp_path, model_dir):
    exe = _build(tmp_path, "emu_threads", "emu_threads.c", "thread")
    r = _run(exe, model_dir, {"TSAN_OPTIONS": "halt_on_error=1:exitcode=66:second_deadlock_stack=1"})
    assert r.returncode == 0, _report(r)
    assert re.search(rb"threads: \d+ checks, 0 failed", r.stdout), _report(r)
