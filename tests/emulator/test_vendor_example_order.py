"""C programs that make the calls of the vendor's example programs in the examples' order,
compiled with ``-I include/rknnx`` only (the vendor headers' names, inline helpers
included), linked to the emulator as -lrknnrt, run, and checked against numpy."""

import os
import subprocess

import numpy as np
import pytest

from helpers import compile_c
from emu_capi import (NHWC, desc_of, float_output, library_path,
                                 model_input_from_user, reference, samples)

C_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "c")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    lib = library_path()
    if lib.name != "librknnrt.so":
        pytest.skip(f"{lib} is not named librknnrt.so: cannot link with -lrknnrt")
    libdir = str(lib.parent)
    out = tmp_path_factory.mktemp("vendor_order")

    def make(name):
        return compile_c([os.path.join(C_DIR, name + ".c")], out / name,
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
