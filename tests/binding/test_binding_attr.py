"""TensorAttr (every field, derived numpy dtype/shape/strides, copy, pickle, repr) and
the vendor constants exposed by the binding (values from the header, enums and ints),
plus the type stub covering the public names."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

from helpers import DATA

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import (CoreMask, InitFlag, MemAllocFlag, MemFlag, MemSyncMode, QntType, QueryCmd,
                   TensorAttr, TensorFormat, TensorType)
from rknnx import _core

FACTS = json.loads((DATA / "rknn_api_v2.json").read_text())


def test_every_field_round_trips(emu):
    a = TensorAttr(3, dims=(1, 224, 224, 3), name="image", n_elems=150528, size=150528,
                   fmt=TensorFormat.NHWC, type=TensorType.UINT8,
                   qnt_type=QntType.AFFINE_ASYMMETRIC, fl=-3, zp=-128, scale=0.5,
                   w_stride=224, size_with_stride=150528, pass_through=True, h_stride=230)
    d = a.as_dict()
    assert d == {"index": 3, "n_dims": 4, "dims": (1, 224, 224, 3), "name": "image",
                 "n_elems": 150528, "size": 150528, "fmt": TensorFormat.NHWC,
                 "type": TensorType.UINT8, "qnt_type": QntType.AFFINE_ASYMMETRIC, "fl": -3,
                 "zp": -128, "scale": 0.5, "w_stride": 224, "size_with_stride": 150528,
                 "pass_through": True, "h_stride": 230}
    assert set(d) == {f["name"] for f in FACTS["structs"]["rknn_tensor_attr"]["fields"]}
    assert isinstance(a.fmt, TensorFormat) and isinstance(a.type, TensorType)
    assert a.dtype == np.uint8 and a.shape == (1, 224, 224, 3) and a.layout == "NHWC"
    assert a.quantized
    assert len(a.to_bytes()) == FACTS["structs"]["rknn_tensor_attr"]["size"]
    b = TensorAttr.from_bytes(a.to_bytes())
    assert b == a and b is not a
    assert pickle.loads(pickle.dumps(a)) == a
    c = copy.copy(a)
    c.name = "other"
    assert a.name == "image" and copy.deepcopy(a) == a
    with pytest.raises(ValueError, match="expected 376 bytes"):
        TensorAttr.from_bytes(b"12")
    with pytest.raises(TypeError):
        hash(a)


def test_repr_is_readable(track, emu):
    a = track.model("tiny_int8_add").input_attrs[0]
    r = repr(a)
    assert r.startswith("TensorAttr(index=0, name='a', dims=[1, 4, 8, 8], fmt=NHWC, type=INT8")
    # rows of W 8 aligned to int8's C2 on RK3588: 16 (tiny_rk3588_i8, librknnrt 1.6.0)
    assert "qnt=AFFINE(zp=3, scale=0.05)" in r and "w_stride=16" in r
    assert "DFP(fl=2)" in repr(TensorAttr(qnt_type=QntType.DFP, fl=2))


@pytest.mark.parametrize("t, dt", [(TensorType.FLOAT32, np.float32), (TensorType.FLOAT16, np.float16),
                                   (TensorType.INT8, np.int8), (TensorType.UINT8, np.uint8),
                                   (TensorType.INT16, np.int16), (TensorType.UINT16, np.uint16),
                                   (TensorType.INT32, np.int32), (TensorType.UINT32, np.uint32),
                                   (TensorType.INT64, np.int64), (TensorType.BOOL, np.bool_)])
def test_dtypes(t, dt):
    assert rknnx.lowlevel.dtype_of(t) == np.dtype(dt)
    assert rknnx.lowlevel.type_of_dtype(dt) == t
    assert TensorAttr(type=t).dtype == np.dtype(dt)


def test_strides_express_padding(emu):
    nhwc = TensorAttr(dims=(2, 5, 13, 3), fmt=TensorFormat.NHWC, type=TensorType.UINT8,
                      w_stride=16, h_stride=6, size_with_stride=2 * 5 * 16 * 3)
    assert nhwc.strides == (6 * 16 * 3, 16 * 3, 3, 1)
    assert nhwc.nbytes_with_stride == 2 * 6 * 16 * 3
    assert nhwc.alloc_size == nhwc.nbytes_with_stride      # the extent beats the runtime's
    # an NHWC input with channels padded to C2 (its rows' size_with_stride says 16 per
    # pixel: the emulator's inputs of 5+ channels)
    padded = TensorAttr(dims=(1, 4, 8, 5), fmt=TensorFormat.NHWC, type=TensorType.INT8,
                        w_stride=8, size_with_stride=4 * 8 * 16)
    assert padded.strides == (4 * 8 * 16, 8 * 16, 16, 1)
    # without a row stride (an output) size_with_stride is only what to allocate: RK3588
    # asks 1,024 bytes for the packed [1,2,2,255] of yolo_heads_rk3588 (librknnrt 1.6.0)
    output = TensorAttr(dims=(1, 2, 2, 255), fmt=TensorFormat.NHWC, type=TensorType.INT8,
                        size=1020, size_with_stride=1024)
    assert output.strides == (1020, 510, 255, 1) and output.alloc_size == 1024
    packed = TensorAttr(dims=(1, 4, 8, 5), fmt=TensorFormat.NHWC, type=TensorType.INT8,
                        size=4 * 8 * 5 + 64)
    assert packed.alloc_size == packed.size == 4 * 8 * 5 + 64   # the runtime asks more
    big = TensorAttr(dims=(1, 4, 8, 5), fmt=TensorFormat.NHWC, type=TensorType.INT8,
                     size_with_stride=4096)
    assert big.alloc_size == 4096
    nc1hwc2 = TensorAttr(dims=(1, 2, 4, 6, 8), fmt=TensorFormat.NC1HWC2,
                         type=TensorType.FLOAT16, w_stride=6)
    assert nc1hwc2.strides == (2 * 4 * 6 * 8 * 2, 4 * 6 * 8 * 2, 6 * 8 * 2, 8 * 2, 2)
    # NCHW and undefined layouts are packed (w_stride of inputs does not apply)
    nchw = TensorAttr(dims=(1, 3, 4, 5), fmt=TensorFormat.NCHW, type=TensorType.FLOAT32,
                      w_stride=8)
    assert nchw.strides == (240, 80, 20, 4)
    assert TensorAttr(dims=(), type=TensorType.FLOAT32).strides == ()
    with pytest.raises(TypeError, match="numpy cannot view"):
        TensorAttr(dims=(4,), type=TensorType.BFLOAT16).strides


def test_enums_match_the_header(emu):
    enums = FACTS["enums"]
    pairs = {"rknn_query_cmd": (QueryCmd, "RKNN_QUERY_"),
             "rknn_tensor_type": (TensorType, "RKNN_TENSOR_"),
             "rknn_tensor_qnt_type": (QntType, "RKNN_TENSOR_QNT_"),
             "rknn_tensor_format": (TensorFormat, "RKNN_TENSOR_"),
             "rknn_core_mask": (CoreMask, "RKNN_NPU_"),
             "rknn_tensor_mem_flags": (MemFlag, "RKNN_TENSOR_MEMORY_FLAGS_"),
             "rknn_mem_sync_mode": (MemSyncMode, "RKNN_MEMORY_SYNC_")}
    n = 0
    for enum_name, (cls, prefix) in pairs.items():
        vendor = {m: getattr(_core, m) for m in enums[enum_name] if not m.endswith("_MAX")}
        for member, value in vendor.items():
            assert isinstance(value, int) and not isinstance(value, bool)
            short = member[len(prefix):]
            if short in cls.__members__:
                assert int(cls[short]) == value, member
            n += 1
        assert {int(m) for m in cls.__members__.values()} == set(vendor.values()), enum_name
    assert n > 50
    assert InitFlag.ASYNC_MASK == rknnx._core.RKNN_FLAG_ASYNC_MASK == 4
    assert MemAllocFlag.ALLOC_NO_CONTEXT == rknnx._core.RKNN_MEM_FLAG_ALLOC_NO_CONTEXT == 0x20000
    assert QueryCmd.NATIVE_NC1HWC2_INPUT_ATTR is QueryCmd.NATIVE_INPUT_ATTR
    assert InitFlag.COLLECT_PERF_MASK | InitFlag.MEM_ALLOC_OUTSIDE == 0x18


def test_constants_are_the_facts(emu):
    names = [n for n in dir(_core) if n.startswith("RKNN_")]
    assert len(names) > 70
    checked = 0
    for n, v in FACTS["constants"].items():
        if hasattr(_core, n):
            assert getattr(_core, n) == v, n
            checked += 1
    assert checked >= 20


@pytest.mark.parametrize("module", ["_core", "_kernels", "_rknnfile"])
def test_stub_lists_every_public_name(module):
    stub = (Path(rknnx.__file__).parent / f"{module}.pyi").read_text()
    import importlib
    import types

    mod = importlib.import_module(f"rknnx.{module}")
    public = [n for n in dir(mod) if not n.startswith("_")
              and not isinstance(getattr(mod, n), types.ModuleType)]
    assert public
    missing = [n for n in public if f"{n}" not in stub]
    assert not missing, missing
    for name in rknnx.__all__:
        assert hasattr(rknnx, name)
