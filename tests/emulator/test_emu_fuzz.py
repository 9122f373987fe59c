"""Fuzz the emulator's model parser (and, for what it accepts, the executor) under
AddressSanitizer + UndefinedBehaviorSanitizer.

tests/c/emu_model_harness.c is compiled with the model half (emulator/model.c, exec.c) and
-fsanitize=address,undefined -fno-sanitize-recover=all.  Hypothesis generates batches of
random byte strings, truncations of valid models and mutations of valid models (random
bytes, interesting 32-bit values written over fields, section-table edits); one harness
process loads each batch.  Every input must give RKNN_SUCC or RKNN_ERR_MODEL_INVALID, and
the sanitizers must report nothing (any report aborts the harness with a non-zero status).

Structured perturbations of a valid model (wrong dims, dtypes, quantization, attributes,
wiring, shape sets, layouts; re-encoded so the file is well formed) reach the type rules and
shape inference; whatever the parser accepts is also run through the non-sanitized library
and compared with the numpy reference.
"""

import copy
import os
import pathlib
import shutil
import struct
import subprocess

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import rknnx.emulator as E  # noqa: E402
from rknnx.emulator import reference  # noqa: E402
from test_emu_model import (ROOT, CModel, _add_one_hook, assert_matches, lib,  # noqa: E402,F401
                            random_inputs)

RKNN_SUCC, RKNN_ERR_FAIL, RKNN_ERR_MODEL_INVALID = 0, -1, -6

SEEDS = [E.samples.all_ops(), E.samples.tiny_int8_add("RK3566"), E.samples.custom_op_model(),
         E.samples.dynamic(), E.samples.multi_io("RV1106"), E.samples.tiny_relu()]
INTERESTING = [0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 24, 31, 32, 100, 255, 256, 511, 512, 513, 1023, 1024,
               0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]


def _asan_supported(cc: str, tmp: pathlib.Path) -> bool:
    src = tmp / "probe.c"
    src.write_text("int main(void){return 0;}\n")
    r = subprocess.run([cc, "-fsanitize=address,undefined", str(src), "-o", str(tmp / "probe")],
                       capture_output=True)
    return r.returncode == 0


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    tmp = tmp_path_factory.mktemp("emu_fuzz")
    if not _asan_supported(cc, tmp):
        pytest.skip("the C compiler cannot build with -fsanitize=address,undefined")
    exe = tmp / "emu_model_harness"
    subprocess.run([cc, "-std=c11", "-O1", "-g", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror",
                    "-ffp-contract=off", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    f"-I{ROOT}/include/rknnx", f"-I{ROOT}/emulator",
                    str(ROOT / "tests" / "c" / "emu_model_harness.c"), str(ROOT / "emulator" / "model.c"),
                    str(ROOT / "emulator" / "exec.c"), str(ROOT / "emulator" / "model_standin.c"), "-lm", "-o", str(exe)], check=True)
    return exe


def run_harness(exe, blobs):
    """Feed blobs to one harness process; returns [(load_status, run_status)]."""
    stream = b"".join(struct.pack("<I", len(b)) + bytes(b) for b in blobs)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=23",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=24")
    r = subprocess.run([str(exe)], input=stream, capture_output=True, timeout=120, env=env)
    lines = r.stdout.decode().splitlines()
    if r.returncode != 0:
        last = lines[-1].split()[0] if lines else "?"
        bad = blobs[int(last)] if last.isdigit() and int(last) < len(blobs) else b""
        pytest.fail(f"harness exited {r.returncode} on record {last} ({bytes(bad[:64]).hex()}...):\n"
                    f"{r.stderr.decode(errors='replace')[-4000:]}")
    out = []
    for ln in lines:
        _, rc, run = ln.split()
        out.append((int(rc), int(run)))
    assert len(out) == len(blobs)
    return out


def test_seeds_load_and_run(harness):
    res = run_harness(harness, SEEDS)
    assert all(rc == RKNN_SUCC for rc, _ in res), res
    # every seed runs cleanly (custom ops get the harness's zero-filling hook)
    assert all(run == 0 for _, run in res), res


def test_truncations_rejected(harness):
    blobs = [s[:n] for s in SEEDS for n in range(0, len(s), max(1, len(s) // 300))]
    res = run_harness(harness, blobs)
    assert all(rc == RKNN_ERR_MODEL_INVALID for rc, _ in res)


def _sections(data):
    n = min(struct.unpack_from("<I", data, 12)[0], max(0, (len(data) - 32) // 24), 16)
    return [(32 + 24 * i,) + struct.unpack_from("<IIQQ", data, 32 + 24 * i) for i in range(n)]


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 5))
        if kind == 0:                                   # random bytes
            pos = draw(st.integers(0, len(data) - 1))
            data[pos] = draw(st.integers(0, 255))
        elif kind == 1:                                 # an interesting 32-bit value
            pos = draw(st.integers(0, len(data) - 4))
            struct.pack_into("<I", data, pos, draw(st.sampled_from(INTERESTING)))
        elif kind == 2:                                 # an interesting 16-bit value
            pos = draw(st.integers(0, len(data) - 2))
            struct.pack_into("<H", data, pos, draw(st.sampled_from(INTERESTING)) & 0xFFFF)
        elif kind == 3:                                 # edit the section table
            secs = _sections(data)
            if secs:
                at, k, fl, off, ln = draw(st.sampled_from(secs))
                field = draw(st.integers(0, 3))
                val = draw(st.sampled_from(INTERESTING + [off + 8, ln + 8, ln - 1, 2**63, 2**64 - 8]))
                if field == 0:
                    struct.pack_into("<I", data, at, val & 0xFFFFFFFF)
                elif field == 1:
                    struct.pack_into("<Q", data, at + 8, val % 2**64)
                else:
                    struct.pack_into("<Q", data, at + 16, val % 2**64)
        elif kind == 4:                                 # a byte inside the first sections
            secs = _sections(data)
            if secs:
                _, _, _, off, ln = draw(st.sampled_from(secs))
                if 0 < ln < 1 << 20 and off + ln <= len(data):
                    pos = off + draw(st.integers(0, ln - 1))
                    data[pos] = draw(st.sampled_from([0, 1, 2, 3, 0x7F, 0x80, 0xFE, 0xFF]))
        else:                                           # splice: duplicate or drop a chunk
            a = draw(st.integers(0, len(data) - 1))
            b = draw(st.integers(a, min(len(data), a + 64)))
            data = data[:a] + data[b:] if draw(st.booleans()) else data[:b] + data[a:b] + data[b:]
            if len(data) < 8:
                data = bytearray(SEEDS[0])
    return bytes(data)


FAST = settings(max_examples=80, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FAST
@given(st.lists(mutated(), min_size=40, max_size=60))
def test_mutated_models(harness, blobs):
    for rc, _ in run_harness(harness, blobs):
        assert rc in (RKNN_SUCC, RKNN_ERR_MODEL_INVALID)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.binary(max_size=600),
                          st.binary(max_size=400).map(lambda b: E.builder.MAGIC + b),
                          st.binary(max_size=400).map(
                              lambda b: E.builder.MAGIC + struct.pack("<HHIQII", 1, 0, 6, 32 + len(b), 0, 0) + b)),
                min_size=50, max_size=100))
def test_random_bytes(harness, blobs):
    for rc, _ in run_harness(harness, blobs):
        assert rc == RKNN_ERR_MODEL_INVALID


# ---- structured perturbations: well-formed files with wrong or extreme content --------------

_BASE = E.decode(E.samples.all_ops())
_DIM_VALUES = [1, 2, 3, 4, 5, 7, 16, 255, 65536, 0x7FFFFFFF, 0xFFFFFFFF]
_ATTR_VALUES = [-70000, -2, -1, 0, 1, 2, 3, 4, 15, 16, 65536, 65537, 0x7FFFFFFF, -0x80000000]
_SCALES = [1e-30, 1e-3, 0.1, 1.0, 1e30, float("inf"), float("nan"), 0.0, -1.0]


@st.composite
def perturbed(draw):
    m = copy.deepcopy(_BASE)
    names = list(m.tensors)
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.integers(0, 7))
        t = m.tensors[draw(st.sampled_from(names))]
        if what == 0 and t.dims:                          # a dim
            d = list(t.dims)
            d[draw(st.integers(0, len(d) - 1))] = draw(st.sampled_from(_DIM_VALUES))
            t.dims = tuple(d)
        elif what == 1:                                   # a dtype
            t.dtype = draw(st.sampled_from(sorted(E.builder.DTYPES)))
        elif what == 2:                                   # quantization
            t.qnt = draw(st.sampled_from(["none", "affine", "dfp"]))
            n = draw(st.sampled_from([1, 2, 4]))
            t.zp = tuple(draw(st.integers(-300, 300)) for _ in range(n))
            t.scale = tuple(draw(st.sampled_from(_SCALES)) for _ in range(n))
            t.qaxis = draw(st.integers(0, 4))
        elif what == 3:                                   # an op attribute
            op = draw(st.sampled_from(m.ops))
            key = draw(st.sampled_from(sorted(op.attrs) + ["strides", "pads", "perm", "shape", "groups"]))
            n = draw(st.integers(0, 5))
            op.attrs[key] = np.array([draw(st.sampled_from(_ATTR_VALUES)) for _ in range(n)], np.int32)
        elif what == 4:                                   # rewire an op
            op = draw(st.sampled_from(m.ops))
            lst = op.inputs if (op.inputs and draw(st.booleans())) else op.outputs
            lst[draw(st.integers(0, len(lst) - 1))] = draw(st.sampled_from(names))
        elif what == 5 and m.shape_sets:                  # a shape set
            s = draw(st.integers(0, len(m.shape_sets) - 1))
            i = draw(st.integers(0, len(m.inputs) - 1))
            d = list(m.shape_sets[s][i])
            d[draw(st.integers(0, len(d) - 1))] = draw(st.sampled_from(_DIM_VALUES))
            m.shape_sets[s][i] = tuple(d)
        elif what == 6:                                   # a layout
            t.fmt = draw(st.sampled_from(["NCHW", "NHWC", "UNDEFINED"]))
        elif what == 7:                                   # the I/O lists
            lst = m.inputs if draw(st.booleans()) else m.outputs
            lst[draw(st.integers(0, len(lst) - 1))] = draw(st.sampled_from(names))
    try:
        with np.errstate(all="ignore"):
            return E.encode(m)
    except (ValueError, TypeError, KeyError, OverflowError, struct.error):
        return None


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(perturbed(), min_size=40, max_size=60))
def test_perturbed_models(harness, blobs):
    blobs = [b for b in blobs if b is not None]
    for rc, _ in run_harness(harness, blobs):
        assert rc in (RKNN_SUCC, RKNN_ERR_MODEL_INVALID)


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(perturbed())
def test_perturbed_models_match_reference(lib, blob):
    """Whatever perturbed model the C parser accepts, the C executor and the numpy
    reference agree on it (int outputs equal), for every shape set."""
    if blob is None:
        return
    with CModel(lib, blob) as cm:
        if cm.rc != RKNN_SUCC:
            assert cm.rc == RKNN_ERR_MODEL_INVALID
            return
        m = cm.desc
        for s in range(max(1, m.n_shape_sets)):
            ins = random_inputs(m, np.random.default_rng(s), s)
            if sum(a.nbytes for a in ins) > 1 << 22:
                return
            rc, outs = cm.run(ins, s, _add_one_hook([]))
            if rc == RKNN_ERR_FAIL:
                return                      # the test hook refuses a perturbed custom op
            assert rc == RKNN_SUCC
            custom = m.ops[[op.custom for op in m.ops].index(True)] if any(op.custom for op in m.ops) else None
            if custom is not None and m.tensors[custom.outputs[0]].dims != m.tensors[custom.inputs[0]].dims:
                return
            with np.errstate(all="ignore"):
                refs = reference.run_reference(m, ins, s, custom_ops={
                    "cstAddOne": lambda xs, attrs: [xs[0] + np.float32(1)]})
            assert_matches(m, outs, refs, rtol=1e-4, atol=1e-5)
