"""Outputs as the vendor's runtimes describe them, read by a session as ``Model.run`` gives
them (issue: rknnx on the vendor's own librknnrt):

- an int64 output (an argmax's indices: the vendor's ``pp_human_segv2_custom_argmax``,
  [1,192,192] int64) is not quantized: ``read()`` gives its values, whatever its attribute's
  qnt_type says (an emulator model with such an output, its attribute AFFINE zp 0 scale 1);
- librknnrt 1.4.0 answers NATIVE_OUTPUT_ATTR with H and W flattened ([1,1,1,16384,16] for
  [1,8,128,128]: tk2_2c2d03d multiple_input_demo RK3588, its recorded answer, which the
  emulator's stand-in plays for a context playing 1.4.0): ``read()`` gives the logical
  shape, as ``run()`` does;
- a type without a numpy dtype (librknnrt 1.5.2 answers 10 for the tensors of an int16
  dynamic-fixed-point file, whose native attributes say INT16) is refused with a
  NotSupportedError saying what the runtime answered.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import rknnx
from rknnx import lowlevel as ll
from rknnx._tensors import describe
from rknnx.emulator.builder import ModelBuilder
from rknnx.errors import NotSupportedError

from helpers import NO_VENDOR_DATA, REAL_RUNTIME, RKNN_MODELS, live


@rknnx.custom_op("cstArgmax")
def argmax(inputs, outputs):
    outputs[0][...] = np.argmax(inputs[0], axis=1)


def argmax_model():
    """x float32 [1,4,3,3] NCHW -> custom cstArgmax over C -> idx int64 [1,3,3], its
    attribute AFFINE with zp 0 and scale 1 (an argmax output as a toolkit writes it)."""
    b = ModelBuilder("RK3588", "argmax")
    x = b.input("x", (1, 4, 3, 3), "float32", "NCHW")
    (y,) = b.custom("cstArgmax", [x], [{"shape": (1, 3, 3), "dtype": "int64", "name": "idx"}])
    b.model.tensors[y] = dataclasses.replace(b.model.tensors[y], qnt="affine", zp=(0,),
                                             scale=(1.0,))
    b.output(y)
    return b.build()


@pytest.mark.needs("rknn_register_custom_ops")
@pytest.mark.parametrize("outputs", ["raw", "native", "float32"])
def test_read_of_an_int64_output_gives_its_values(models, outputs):
    m = rknnx.Model(argmax_model())
    try:
        m.register_custom_ops(argmax)
        assert m.outputs[0].dtype == np.int64 and m.outputs[0].quant.kind == "affine"
        x = np.random.default_rng(3).standard_normal((1, 4, 3, 3)).astype(np.float32)
        want = np.argmax(x, axis=1)
        assert np.array_equal(m.run(x)[0], want)
        with m.zero_copy(outputs=outputs) as s:
            s.run_arrays(x)
            got = s.read(0)
            assert got.dtype == np.float32 and got.shape == (1, 3, 3)
            np.testing.assert_array_equal(got, want.astype(np.float32))
            np.testing.assert_array_equal(s.read(0, dtype=np.float64), want)
            del got
    finally:
        m.close()


def test_a_type_without_a_numpy_dtype_is_refused_saying_what_the_runtime_answered():
    attr = ll.TensorAttr(0, dims=(1, 16), name="y", type=10, qnt_type=ll.QntType.DFP, fl=8)
    native = ll.TensorAttr(0, dims=(1, 16), name="y", type=ll.TensorType.INT16,
                           qnt_type=ll.QntType.DFP, fl=8)
    with pytest.raises(NotSupportedError, match=r"output 0 \('y'\): the runtime answers type "
                       r"10 \(RKNN_TENSOR_INT4\) .*native attribute says RKNN_TENSOR_INT16 "
                       r"\(librknnrt 1\.5\.2 answers 10"):
        describe(0, attr, native, "output")
    info = describe(0, native, native, "output")        # what a newer runtime answers
    assert info.dtype == np.int16 and info.quant.kind == "dfp" and info.quant.fl == 8


FLAT_FILE = "tk2_2c2d03d__rknn_multiple_input_demo__RK3588__multiple_input_demo"


def _recorded_native_output():
    """NATIVE_OUTPUT_ATTR 0 as librknnrt 1.4.0 answered it for FLAT_FILE (its answer)."""
    doc = json.loads((REAL_RUNTIME / "answers" / "librknnrt-1.4.0-aarch64" /
                      f"{FLAT_FILE}.json").read_text())
    return next(e["result"] for e in doc["main"]["events"]
                if e["ev"] == "query" and e.get("phase") == "after_init"
                and e["cmd_name"] == "NATIVE_OUTPUT_ATTR" and e["index"] == 0)


@pytest.mark.skipif(REAL_RUNTIME is None or RKNN_MODELS is None, reason=NO_VENDOR_DATA)
def test_1_4_0_native_output_with_h_and_w_flattened_reads_in_the_logical_shape(emu):
    path = next(RKNN_MODELS.rglob(f"{FLAT_FILE}.rknn"), None)
    if path is None:
        pytest.skip(f"{FLAT_FILE}.rknn is not in {RKNN_MODELS}")
    recorded = _recorded_native_output()
    assert recorded["dims"] == [1, 1, 1, 16384, 16]
    before = live(emu)
    emu.set_platform("RK3588")
    emu.set_runtime_version("1.4.0")
    try:
        with rknnx.Model(str(path)) as m:
            assert m.sdk_version.startswith("1.4.0 (")
            assert list(m.outputs[0].native.shape) == recorded["dims"]    # as 1.4.0 says
            xs = [np.random.default_rng(k).integers(0, 256, t.shape).astype(np.uint8)
                  for k, t in enumerate(m.inputs)]
            want = m.run(*xs)[0]
            assert want.shape == (1, 8, 128, 128)
            with m.zero_copy(outputs="native") as s:
                s.run_arrays(*xs)
                assert s.outputs[0].shape == (1, 1, 1, 16384, 16)
                got = s.read(0)
                np.testing.assert_array_equal(got, want)
                np.testing.assert_array_equal(s.read(0, layout="NHWC"),
                                              want.transpose(0, 2, 3, 1))
                del got
    finally:
        emu.set_runtime_version(None)
    assert live(emu) == before
