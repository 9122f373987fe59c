"""C programs written against the vendor API (tests/c/*.c), following the documented call
orders, built with the system compiler against the emulator (-lrknnrt) and checked against
the numpy reference."""

import os
import subprocess

import numpy as np
import pytest

from helpers import compile_c
from emu_capi import (NHWC, ModelBuilder, desc_of, float_output, library_path,
                                 model_input_from_user, reference, samples)

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
PROGRAMS = ["general_flow", "zero_copy", "zero_copy_fd"]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    lib = library_path()
    libdir = str(lib.parent)
    if lib.name != "librknnrt.so":
        pytest.skip(f"{lib} is not named librknnrt.so: cannot link with -lrknnrt")
    out = tmp_path_factory.mktemp("cprog")
    built = {}
    for p in PROGRAMS:
        built[p] = compile_c([os.path.join(HERE, "c", p + ".c")], out / p,
                             flags=[f"-I{os.path.join(HERE, 'c')}", f"-L{libdir}",
                                    f"-Wl,-rpath,{libdir}"], libs=["-lrknnrt"])
    return built


def strided_model(target):
    """A uint8-fed image whose width (30) is not a multiple of any chip's alignment, plus a
    non-4-D float16 input, mixed outputs."""
    rng = np.random.default_rng(31)
    b = ModelBuilder(target, "c demo")
    x = b.input("img", (1, 6, 30, 3), "int8", "NHWC", zp=-5, scale=0.04, mean=[100.0] * 3,
                std=[50.0] * 3)
    f = b.input("f", (1, 24), "float16")
    y = b.conv2d(x, rng.integers(-90, 90, (4, 3, 3, 3)).astype(np.int8),
                 rng.integers(-40, 40, 4).astype(np.int32), pad=1, weight_scale=0.01,
                 out_scale=0.05, out_zp=2, fmt="NCHW", out="conv")
    g = b.dense(f, (rng.standard_normal((8, 24)) * 0.3).astype(np.float16), None, out="dense")
    b.output(y, g)
    return b.build()


def run_program(prog, model, inputs, tmp_path, chip):
    mp = tmp_path / "model.rknn"
    mp.write_bytes(model)
    m = desc_of(model)
    paths = []
    for k, (name, arr) in enumerate(zip(m.inputs, inputs)):
        p = tmp_path / f"in{k}.bin"
        p.write_bytes(np.ascontiguousarray(arr).tobytes())
        paths.append(str(p))
    env = dict(os.environ, RKNN_EMU_PLATFORM=chip, RKNN_LOG_LEVEL="1")
    return subprocess.run([str(prog), str(mp), str(tmp_path / "out")] + paths,
                          capture_output=True, text=True, env=env, timeout=60)


def make_inputs(model, seed):
    m = desc_of(model)
    rng = np.random.default_rng(seed)
    users = []
    for n in m.inputs:
        t = m.tensors[n]
        if len(t.dims) == 4:
            users.append(rng.integers(0, 256, t.dims, dtype=np.uint8))
        else:
            users.append(rng.standard_normal(t.dims).astype(np.float32))
    return users


def check_outputs(model, users, tmp_path, chip=None):
    m = desc_of(model)
    ins = [model_input_from_user(m.tensors[n], u, NHWC) for n, u in zip(m.inputs, users)]
    ref = reference.run_reference(m, ins)
    for k, name in enumerate(m.outputs):
        exp = float_output(m.tensors[name], ref[k], chip)
        got = np.fromfile(tmp_path / f"out{k}.bin", np.float32).reshape(exp.shape)
        np.testing.assert_array_equal(got, exp, err_msg=f"output {name}")


@pytest.mark.parametrize("chip", ["RK3588", "RK3566", "RV1106"])
@pytest.mark.parametrize("prog", PROGRAMS)
@pytest.mark.parametrize("which", ["strided", "multi_io"])
def test_c_demo(programs, tmp_path, prog, chip, which):
    model = strided_model(chip) if which == "strided" else samples.multi_io(target=chip)
    users = make_inputs(model, 40)
    proc = run_program(programs[prog], model, users, tmp_path, chip)
    if prog == "general_flow" and chip == "RV1106":
        # RV1106 has only the zero-copy flow: rknn_inputs_set fails as on the chip
        assert proc.returncode == 2 and "rknn_inputs_set" in proc.stderr
        assert "E RKNN: rknn_inputs_set, context config invalid!" in proc.stderr
        return
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rknnx-emulator" in proc.stdout
    # the attributes printed with the header's helpers, as the vendor examples do
    assert "fmt=NHWC type=INT8 qnt_type=AFFINE" in proc.stdout
    check_outputs(model, users, tmp_path, chip)


def test_c_demo_copies(programs, tmp_path):
    """The zero-copy demos move no bytes through inputs_set/outputs_get."""
    model = strided_model("RK3588")
    users = make_inputs(model, 41)
    for prog in ("zero_copy", "zero_copy_fd"):
        proc = run_program(programs[prog], model, users, tmp_path, "RK3588")
        assert proc.returncode == 0, proc.stderr
        assert "(in 0, out 0," in proc.stdout
    proc = run_program(programs["general_flow"], model, users, tmp_path, "RK3588")
    assert "synced 0)" in proc.stdout


@pytest.mark.parametrize("layout", ["normal", "native"])
@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_matmul_demo_call_order(tmp_path, chip, layout):
    """The vendor matmul example's calls, in its order, compiled with -I include/rknnx only:
    int8 x int8 -> int32 against the product computed in C."""
    lib = library_path()
    libdir = str(lib.parent)
    exe = compile_c([os.path.join(HERE, "c", "matmul_demo.c")], tmp_path / "matmul_demo",
                    flags=[f"-L{libdir}", f"-Wl,-rpath,{libdir}"], libs=["-lrknnrt"])
    env = dict(os.environ, RKNN_EMU_PLATFORM=chip, RKNN_LOG_LEVEL="0")
    proc = subprocess.run([str(exe), "4", "64", "32", layout], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "matmul type: RKNN_INT8_MM_INT8_TO_INT32" in out
    assert "A: name=" in out and "type=INT8" in out and "type=INT32" in out
    assert out.strip().endswith("max abs diff 0")


# ---- the vendor's example programs, in their call order ----------------------------------------
# C programs that make the calls of the vendor's example programs in the examples' order,
# compiled with ``-I include/rknnx`` only (the vendor headers' names, inline helpers
# included), linked to the emulator as -lrknnrt, run, and checked against numpy.

@pytest.fixture(scope="module")
def build(tmp_path_factory):
    lib = library_path()
    if lib.name != "librknnrt.so":
        pytest.skip(f"{lib} is not named librknnrt.so: cannot link with -lrknnrt")
    libdir = str(lib.parent)
    out = tmp_path_factory.mktemp("vendor_order")

    def make(name):
        return compile_c([os.path.join(HERE, "c", name + ".c")], out / name,
                         flags=[f"-L{libdir}", f"-Wl,-rpath,{libdir}"], libs=["-lrknnrt"])
    return make


@pytest.mark.parametrize("chip", ["RK3588", "RK3566"])
def test_dynamic_shape_zero_copy_example(build, tmp_path, chip):
    """rknn_dynshape_inference_zero_copy: buffers sized once from INPUT_ATTR / OUTPUT_ATTR
    serve every shape set; each set's outputs equal the numpy reference."""
    exe = build("dynshape_zero_copy")
    model = samples.dynamic(target=chip)
    (tmp_path / "m.rknn").write_bytes(model)
    m = desc_of(model)
    rng = np.random.default_rng(90)
    frames = []
    for s, shape in enumerate(m.shape_sets):
        img = rng.integers(0, 256, shape[0], dtype=np.uint8)
        (tmp_path / f"in{s}_0.bin").write_bytes(img.tobytes())
        frames.append(img)
    env = dict(os.environ, RKNN_EMU_PLATFORM=chip, RKNN_LOG_LEVEL="0")
    proc = subprocess.run([str(exe), str(tmp_path / "m.rknn"), str(tmp_path / "out"),
                           str(tmp_path / "in")], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fmt=NHWC type=INT8 qnt_type=AFFINE" in proc.stdout
    assert "dims=[1, 128, 160, 3]" in proc.stdout.split("dynamic inputs")[0]
    for s, img in enumerate(frames):
        x = model_input_from_user(m.tensors[m.inputs[0]], img, NHWC)
        ref = reference.run_reference(m, [x], shape_set=s)
        for o, name in enumerate(m.outputs):
            exp = float_output(m.tensors[name], ref[o])
            got = np.fromfile(tmp_path / f"out{s}_{o}.bin", np.float32).reshape(exp.shape)
            np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-7, err_msg=f"set {s} {name}")
