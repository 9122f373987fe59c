"""rknnx.modelfile: the reader of vendor .rknn files, judged by the vendor's files and by what
the vendor runtimes answered for them (INPUT_ATTR / OUTPUT_ATTR / NATIVE_*_ATTR), and its
errors on corrupt, truncated and foreign bytes."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import json
import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import NO_VENDOR_DATA, REAL_RUNTIME, RKNN_MODELS, synthetic_rknn, vendor_models
from rknnx import modelfile
from rknnx.errors import ModelFileError, RKNNError

MODELS = vendor_models()
NO_DATA = pytest.mark.skipif(not MODELS, reason=NO_VENDOR_DATA)
FMT = {0: "NCHW", 1: "NHWC", 2: "NC1HWC2", 3: "UNDEFINED"}
TYPE = {0: "float32", 1: "float16", 2: "int8", 3: "uint8", 4: "int16", 6: "int32", 8: "int64"}


def _model(name: str):
    for p in MODELS:
        if p.name == name:
            return p
    pytest.skip(f"{name} is not among the vendor files ({NO_VENDOR_DATA})")


def _runs():
    """(runtime, model file, answer path) of every pair the vendor runtime served."""
    if REAL_RUNTIME is None:
        return []
    index = json.loads((REAL_RUNTIME / "INDEX.json").read_text())
    return [(r["runtime"], r["model_file"], r["answer"]) for r in index["runs"] if r["init_ok"]]


def _manifest():
    if RKNN_MODELS is None:
        return {}
    m = json.loads((RKNN_MODELS / "MANIFEST.json").read_text())
    out = {e["file"]: ("vendor", e) for e in m["vendor"]}
    out.update({e["file"]: ("toolkit", e) for e in m["toolkit-2.5.0"]["files"] if e.get("ok")})
    return out


# ---- every file reads, and says what its manifest says ------------------------------------

@NO_DATA
@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_every_vendor_file_is_read(path):
    mf = modelfile.read(path)
    assert mf.path == str(path)
    c = mf.container
    assert c.version in (1, 2, 6, 0x1004)
    assert c.header_size == (24 if c.version == 1 else 64)
    # the file ends exactly at the JSON tail (every file seen)
    assert c.json_offset + c.json_size == c.file_size == path.stat().st_size
    assert c.payload_offset == c.header_size and c.json_offset == c.header_size + c.payload_size + 8
    assert mf.file_inputs and mf.file_outputs and mf.chip and mf.toolkit_version
    assert [t.index for t in mf.file_inputs] == list(range(len(mf.file_inputs)))
    assert {t.role for t in mf.file_inputs} == {"input"} and {t.role for t in mf.file_outputs} == {"output"}
    for t in mf.file_inputs + mf.file_outputs:
        assert t.name and t.shape and "shape" in t.known
        if c.version != 0x1004:
            # containers 1-6: everything decoded from the FlatBuffer (and an input's mean/std
            # where the generator gives them: test_mean_and_std_are_the_generators)
            assert t.known - {"norm"} == {"shape", "attr", "qnt", "native"}
            assert t.size == t.n_elems * {"int8": 1, "uint8": 1, "float16": 2, "float32": 4,
                                          "int64": 8}[t.dtype]
            # a container 1 file's attr view is in the user's type (float32 over int8)
            assert t.native_size >= (t.size if c.version != 1 else t.n_elems)
        elif "qnt" not in t.known:
            # not decoded yet: said so, never a guess
            assert t.qnt_type is None and t.scale is None and t.zero_point is None
        if "native" not in t.known:
            assert t.native_dims is None and t.native_layout is None
    # the same bytes read the same
    assert dataclasses.replace(modelfile.read(path.read_bytes()), path=str(path)) == mf
    kind, entry = _manifest().get(path.name, (None, None))
    if kind == "vendor":   # rknn-models/MANIFEST.json, read from the files by its makers
        assert c.version == entry["hdr_version"]
        assert mf.npu_family == entry["format"] and mf.target_platform == entry["runtime"]
        assert f"{mf.toolkit_version}(compiler version: {mf.compiler_version})" == entry["compiler"]
        assert (len(mf.file_inputs), len(mf.file_outputs)) == (entry["n_in"], entry["n_out"])
    elif kind == "toolkit":   # what the toolkit 2.5.0 said when it built the file
        assert mf.toolkit_version == entry["toolkit_version"]
        assert mf.target_platform == entry["target"]
        if c.version != 0x1004:
            assert mf.compiler_version == entry["librknnc_version"]
            assert mf.compiler_version_int == 20500


@NO_DATA
def test_the_npu_family_decides_the_chip():
    # rknpu2 c28b080 RK3588 multiple_input_demo (toolkit 1.1.2): platform says rk3566, the NPU
    # family says RKNPU v2 (RK3588)
    mf = modelfile.read(_model(
        "rknpu2_c28b080__rknn_multiple_input_demo__RK3588__multiple_input_demo.rknn"))
    assert (mf.target_platform, mf.npu_family, mf.chip) == ("rk3566", "RKNPU v2", "RK3588")
    assert (mf.container.version, mf.format_version) == (1, 1)
    assert (mf.toolkit_version, mf.compiler_version_int) == ("1.1.2", 10200)
    # a family of chips sharing one NPU: the platform picks among them (RV1103 and RV1106)
    assert modelfile.read(_model("dynamic_nogap_rv1103.rknn")).chip == "RV1103"
    assert modelfile.read(_model("dynamic_nogap_rv1106.rknn")).npu_family == "RKNPU t3"
    for name, chip in [("cls_img_rk3562.rknn", "RK3562"), ("cls_img_rk3576.rknn", "RK3576"),
                       ("tiny_rk3566_i8.rknn", "RK3566"),
                       ("tk2_42aa1d4__rknn_multiple_input_demo__RV1126B__multiple_input_demo"
                        ".rknn", "RV1126B"),
                       ("fp16_net_rk2118.rknn", "RK2118")]:
        assert modelfile.read(_model(name)).chip == chip, name


@NO_DATA
def test_dynamic_shape_sets_and_custom_ops():
    # dynamic_nogap (toolkit 2.5.0, input shapes 32/48/64): the file keeps them largest first,
    # as runtime 1.6.0 answers INPUT_DYNAMIC_RANGE (dyn_range [[1,64,64,3],[1,48,48,3],
    # [1,32,32,3]], answers/librknnrt-1.6.0-armhf/dynamic_nogap_rk3588.json)
    mf = modelfile.read(_model("dynamic_nogap_rk3588.rknn"))
    assert mf.dynamic and mf.shape_sets == (((1, 64, 64, 3),), ((1, 48, 48, 3),),
                                            ((1, 32, 32, 3),))
    assert not modelfile.read(_model("cls_img_rk3588.rknn")).dynamic
    mf = modelfile.read(_model(
        "tk2_77b7109__rknn_custom_pytorch_op_demo__RK3588__dual_residual_custom.rknn"))
    assert mf.custom_ops == (modelfile.CustomOp("cstDualResidual_0", "cstDualResidual"),)
    assert (mf.toolkit_version, mf.compiler_version_int) == ("1.6.1-source_code", 10601)
    assert modelfile.read(_model("cls_img_rk3588.rknn")).custom_ops == ()


# ---- the inputs' mean/std: the generator's attrs -------------------------------------------

def _generator(data: bytes):
    """The Model's generator text (FlatBuffer slot 3) of a container 6 file, found by
    following the offsets here (docs/rknn-file-format.md), or None."""
    if struct.unpack_from("<Q", data, 8)[0] != 6:
        return None
    p = data[64:64 + struct.unpack_from("<Q", data, 16)[0]]
    root = struct.unpack_from("<I", p, 0)[0]
    vt = root - struct.unpack_from("<i", p, root)[0]
    if struct.unpack_from("<H", p, vt)[0] < 4 + 2 * 4:
        return None
    at = struct.unpack_from("<H", p, vt + 4 + 2 * 3)[0]
    if at == 0:
        return None
    s = root + at + struct.unpack_from("<I", p, root + at)[0]
    return p[s + 4:s + 4 + struct.unpack_from("<I", p, s)[0]].rstrip(b"\0").decode()


def _f32(values):
    return tuple(float(np.float32(v)) for v in values)


@NO_DATA
@pytest.mark.parametrize("path", MODELS, ids=[p.name for p in MODELS])
def test_mean_and_std_are_the_generators(path):
    """Every input's mean/std is what Python's own literal reader makes of the generator's
    attrs (the test may evaluate the literal; the reader parses it and never does), as float32
    values and as many as the file lists; None where the file has none: containers 1 and 2
    (format 1; the container 2 files' attrs list no input), 0x1004 (its payload is not read
    for them), an input the attrs do not describe."""
    mf = modelfile.read(path)
    gen = _generator(path.read_bytes())
    attrs = ast.literal_eval(gen).get("attrs", {}) if gen and gen.startswith("{") else {}
    for t in mf.file_inputs:
        a = attrs.get(t.name, {})
        if "mean" in a and "std" in a:
            assert (t.mean, t.std) == (_f32(a["mean"]), _f32(a["std"])), t.name
            assert "norm" in t.known
            if t.layout == "NHWC":   # an image: one entry for every channel, or one each
                assert {len(t.mean), len(t.std)} <= {1, t.dims[-1]}, t.name
        else:
            assert t.mean is None and t.std is None and "norm" not in t.known, t.name
    for t in mf.file_outputs:
        assert t.mean is None and t.std is None and "norm" not in t.known
    if mf.container.version == 0x1004 or mf.format_version < 6:
        assert all(t.mean is None for t in mf.file_inputs)


@NO_DATA
def test_mean_and_std_of_the_toolkits_files():
    # fp16_net (toolkit 2.5.0): images mean [0], std [255, 255, 255], kept as listed (one mean
    # for every channel, one std per channel); multi_io's vec [1, 10]: [0] and [1]
    t = modelfile.read(_model("fp16_net_rk3588.rknn")).file_inputs[0]
    assert (t.name, t.mean, t.std) == ("images", (0.0,), (255.0, 255.0, 255.0))
    vec = modelfile.read(_model("multi_io_rk3588.rknn")).file_inputs[1]
    assert (vec.name, vec.mean, vec.std) == ("vec", (0.0,), (1.0,))
    # a dynamic model's too; a 0x1004 file's payload is not read for them
    assert modelfile.read(_model("dynamic_nogap_rk3588.rknn")).file_inputs[0].std == (255.0,) * 3
    assert modelfile.read(_model("fp16_net_rk2118.rknn")).file_inputs[0].mean is None


GOOD_ATTRS = "{'attrs': {'x': {'idx': 0, 'mean': [123.675, 116.28, 103.53], 'std': [58.395]}}"


def test_mean_and_std_of_a_synthetic_file():
    mf = modelfile.read(synthetic_rknn(GOOD_ATTRS + ", 'quant_tab': {}}"))
    t = mf.file_inputs[0]
    assert (t.mean, t.std) == (_f32([123.675, 116.28, 103.53]), _f32([58.395]))
    assert "norm" in t.known and mf.file_outputs[0].mean is None
    # the bound: 64 entries are kept, 65 are not
    ok = modelfile.read(synthetic_rknn("{'attrs': {'x': {'mean': [%s], 'std': (1,)}}}"
                                       % ", ".join(["0.5"] * 64))).file_inputs[0]
    assert ok.mean == (0.5,) * 64 and ok.std == (1.0,)
    # nesting within the parser's depth elsewhere in the generator does not hide them (the
    # refused case, 100 levels: test_a_static_generator_the_parser_refuses_...)
    deep = modelfile.read(synthetic_rknn(GOOD_ATTRS + ", 'quant_tab': " + "[" * 60 + "]" * 60
                                         + "}")).file_inputs[0]
    assert deep.std == _f32([58.395])


def test_inputs_are_the_tensor_info_a_model_gives():
    # ModelFile.inputs/outputs hold rknnx.TensorInfo (Model.inputs' type): the attr view,
    # numpy's dtype, the quantization; the file's own fields are in file_inputs/outputs
    import rknnx

    mf = modelfile.read(synthetic_rknn(GOOD_ATTRS + "}"))
    assert len(mf.inputs) == len(mf.file_inputs) and len(mf.outputs) == len(mf.file_outputs)
    for info, ft in zip(mf.inputs + mf.outputs, mf.file_inputs + mf.file_outputs):
        assert type(info) is rknnx.TensorInfo and type(ft) is modelfile.FileTensor
        assert info == ft.info()
        assert (info.index, info.name, info.shape, info.layout) == \
            (ft.index, ft.name, ft.dims, ft.layout)
        assert info.dtype == np.dtype(ft.dtype) and info.native is None
        assert (info.quant.kind, info.quant.scale, info.quant.zero_point) == \
            (ft.qnt_type, ft.scale, ft.zero_point)
    assert mf.file_inputs[0].mean == _f32([123.675, 116.28, 103.53])
    assert not hasattr(mf.inputs[0], "mean")
    # the old name says where its fields went
    with pytest.raises(AttributeError, match=r"modelfile.TensorInfo is now FileTensor "
                                             r"\(ModelFile.file_inputs"):
        modelfile.TensorInfo
    assert "TensorInfo" not in dir(modelfile) and "FileTensor" in modelfile.__all__


def test_a_file_tensor_without_a_numpy_type_or_quantization_says_none():
    ft = modelfile.read(synthetic_rknn(GOOD_ATTRS + "}")).file_inputs[0]
    for dtype, qnt, want in (("bfloat16", "none", None), (None, None, None),
                             ("int4", "dfp", None)):
        raw = dict(ft.raw, fl=3)
        info = dataclasses.replace(ft, dtype=dtype, qnt_type=qnt, raw=raw).info()
        assert info.dtype is want
        assert info.quant.kind == (qnt if qnt in ("affine", "dfp") else "none")
        if qnt == "dfp":
            assert info.quant.fl == 3


@pytest.mark.parametrize("generator", [
    "{'attrs': {'x': {'mean': np.float32(0.5), 'std': [1]}}}",     # a repr the parser refuses
    "{'attrs': {'x': {'mean': [0] * 3, 'std': [1]}}}",              # an expression
    "{'attrs': {'x': {'mean': [0], 'std': [1]}}",                   # not closed
    # nested too deep (past the parser's 64 levels), beside attrs that would read: with the
    # nesting inside attrs instead, the input would have no entry, whatever the parser did
    GOOD_ATTRS + ", 'quant_tab': " + "[" * 100 + "]" * 100 + "}",
    "{'attrs': {'x': {'mean': [0], 'std': [1], 'name': 'unterminated}}}",
    "The RKNN model generated by toolkit 1.1",                      # not a dict at all
])
def test_a_static_generator_the_parser_refuses_leaves_mean_and_std_unknown(generator):
    good = modelfile.read(synthetic_rknn(GOOD_ATTRS + "}"))
    mf = modelfile.read(synthetic_rknn(generator))
    t = mf.file_inputs[0]
    assert t.mean is None and t.std is None and "norm" not in t.known
    # everything else reads as it does with a good generator
    assert dataclasses.replace(t, mean=good.file_inputs[0].mean, std=good.file_inputs[0].std,
                               known=good.file_inputs[0].known) == good.file_inputs[0]
    assert mf.file_outputs == good.file_outputs and not mf.dynamic


@pytest.mark.parametrize("norm", [
    "'mean': ['0'], 'std': [1]",                       # not numbers
    "'mean': [True], 'std': [1]",
    "'mean': [0], 'std': [[1]]",
    "'mean': [0], 'std': 255",                         # not a list
    "'mean': [], 'std': [1]",                          # empty
    "'mean': [%s], 'std': [1]" % ", ".join(["0"] * 65),   # longer than the reader keeps
    "'mean': [1e39], 'std': [1]",                      # beyond float's range
    "'mean': [0]",                                     # no std
    "'std': [1]",                                      # no mean
])
@pytest.mark.parametrize("dynamic", [False, True])
def test_a_list_that_is_no_list_of_numbers_leaves_mean_and_std_unknown(norm, dynamic):
    # in a static and in a dynamic model alike: mean/std never make a file unreadable (a
    # dynamic model's read fails only on what its shape sets need)
    sets = ", 'dynamic_shapes': {'x': [[1, 3, 4, 6], [1, 3, 2, 2]]}" if dynamic else ""
    mf = modelfile.read(synthetic_rknn("{'attrs': {'x': {%s}}%s}" % (norm, sets),
                                       dynamic=dynamic))
    assert mf.file_inputs[0].mean is None and mf.file_inputs[0].std is None
    assert "norm" not in mf.file_inputs[0].known
    assert mf.dynamic == dynamic and len(mf.shape_sets) == (2 if dynamic else 0)


def test_a_dynamic_models_generator_is_still_needed():
    # the shape sets are in it: a generator the parser refuses fails the read, naming it
    bad = "{'attrs': {'x': {'mean': np.float32(0), 'std': [1]}}, 'dynamic_shapes': {}}"
    assert _check(synthetic_rknn(bad, dynamic=True)).check == "generator.syntax"
    good = bad.replace("np.float32(0)", "[0]").replace(
        "{}}", "{'x': [[1, 3, 4, 6]]}}")
    mf = modelfile.read(synthetic_rknn(good, dynamic=True))
    assert mf.shape_sets == (((1, 4, 6, 3),),) and mf.file_inputs[0].mean == (0.0,)


# ---- the vendor runtime's answers are the truth -------------------------------------------

RUNS = _runs()


def _queries(answer: dict) -> dict:
    out = {}
    for e in answer["main"]["events"]:
        if e.get("ev") == "query" and e.get("phase") == "after_init" and e["status"] == 0:
            out[(e["cmd_name"], e["index"])] = e["result"]
    return out


@pytest.mark.skipif(not RUNS or not MODELS, reason=NO_VENDOR_DATA)
@pytest.mark.parametrize("runtime, model, answer", RUNS,
                         ids=[f"{r}/{m[:-5]}" for r, m, _ in RUNS])
def test_signature_equals_the_vendor_runtime_answers(runtime, model, answer):
    mf = modelfile.read(_model(model))
    q = _queries(json.loads((REAL_RUNTIME / "answers" / answer).read_text()))
    n = q[("IN_OUT_NUM", 0)]
    assert (len(mf.file_inputs), len(mf.file_outputs)) == (n["n_input"], n["n_output"])
    checked = 0
    for role, tensors in (("INPUT", mf.file_inputs), ("OUTPUT", mf.file_outputs)):
        for t in tensors:
            a = q[(f"{role}_ATTR", t.index)]
            assert t.name == a["name"]          # the runtime's order
            assert t.n_elems == a["n_elems"]
            if t.dtype is not None:
                assert t.dtype == TYPE[a["type"]] and t.size == a["size"]
            if "attr" in t.known:
                assert (t.dims, t.layout) == (tuple(a["dims"]), FMT[a["fmt"]])
            if "qnt" in t.known:
                assert t.qnt_type == {0: "none", 1: "dfp", 2: "affine"}[a["qnt_type"]]
                assert t.zero_point == a["zp"]
                assert t.scale == pytest.approx(a["scale"], rel=1e-6, abs=0)
                checked += 1
            info = (mf.inputs if role == "INPUT" else mf.outputs)[t.index]
            if "attr" in t.known and "qnt" in t.known and t.dtype is not None:
                # ModelFile.inputs: the same answers as the rknnx.TensorInfo Model gives
                assert (info.name, info.shape, info.layout, info.dtype.name) == \
                    (a["name"], tuple(a["dims"]), FMT[a["fmt"]], TYPE[a["type"]])
                assert (info.quant.kind, info.quant.zero_point) == \
                    ({0: "none", 1: "dfp", 2: "affine"}[a["qnt_type"]], a["zp"])
                assert info.quant.scale == pytest.approx(a["scale"], rel=1e-6, abs=0)
            nat = q.get((f"NATIVE_{role}_ATTR", t.index))
            if "native" in t.known and nat is not None:
                if runtime.startswith("librknnrt-1.4.0") and nat["fmt"] == 2:
                    # report-only runtime: it flattens H and W of an NC1HWC2 output
                    # ([1,1,1,16384,16] for [1,8,128,128] on RK3588, tk2_2c2d03d
                    # multiple_input_demo); no emulator mode plays it
                    assert nat["dims"][2] == 1
                    continue
                assert (t.native_dims, t.native_layout) == (tuple(nat["dims"]),
                                                            FMT[nat["fmt"]])
                assert t.native_size == nat["size"]
    if mf.container.version != 0x1004:
        assert checked == len(mf.file_inputs) + len(mf.file_outputs)
    mem = q.get(("MEM_SIZE", 0))
    if mf.weight_size is not None and (runtime.startswith("librknnrt-1.6.0") or
                                       runtime.startswith("librknnmrt")):
        # Model slot 19 is what 1.6.0 reports (1.5.2 reports other sizes for dynamic
        # models); a 0x1004 payload header's sizes are what the mini runtime reports
        assert (mf.weight_size, mf.internal_size) == (mem["total_weight_size"],
                                                      mem["total_internal_size"])
    if mf.container.version in (6, 0x1004):
        assert mf.weight_size is not None


@pytest.mark.skipif(not RUNS or not MODELS, reason=NO_VENDOR_DATA)
def test_differences_from_the_recorded_answers():
    """modelfile.differences (rknnx info --runtime) finds none where the runtime agrees and
    names the field where it does not."""
    clean = 0
    for runtime, model, answer in RUNS:
        mf = modelfile.read(_model(model))
        q = _queries(json.loads((REAL_RUNTIME / "answers" / answer).read_text()))
        diffs = modelfile.differences(mf, q)
        if runtime.startswith("librknnrt-1.4.0"):
            # report-only: it flattens NC1HWC2 outputs (see above)
            assert all("native" in d for d in diffs), diffs
            continue
        assert diffs == (), (runtime, model, diffs)
        clean += 1
        if model == "cls_img_rk3588.rknn" and runtime.startswith("librknnrt-1.6.0"):
            q[("OUTPUT_ATTR", 1)] = {**q[("OUTPUT_ATTR", 1)], "zp": 62, "scale": 0.5}
            q[("NATIVE_INPUT_ATTR", 0)] = {**q[("NATIVE_INPUT_ATTR", 0)], "fmt": 2}
            del q[("OUTPUT_ATTR", 0)]
            q[("IN_OUT_NUM", 0)] = {"n_input": 1, "n_output": 3}
            assert modelfile.differences(mf, q) == (
                "inputs/outputs: file 1/2, runtime 1/3",
                "input 0 'images': native layout: file NHWC, runtime NC1HWC2",
                "output 0 'logits': the runtime gives no OUTPUT_ATTR",
                "output 1 'pooled': zero_point: file 63, runtime 62",
                "output 1 'pooled': scale: file 0.005169845186173916, runtime 0.5")
    assert clean >= 30


@pytest.mark.skipif(REAL_RUNTIME is None or not MODELS, reason=NO_VENDOR_DATA)
def test_runtime_support_agrees_with_every_recorded_init():
    """RUNTIME_FACTS against every (runtime, file) rknn_init the vendor runtimes recorded."""
    index = json.loads((REAL_RUNTIME / "INDEX.json").read_text())
    names = {"librknnrt-1.4.0-aarch64": "librknnrt 1.4.0", "librknnrt-1.5.2-armhf":
             "librknnrt 1.5.2", "librknnrt-1.6.0-armhf": "librknnrt 1.6.0",
             "librknnmrt-2.3.2-armhf-uclibc": "librknnmrt 2.3.2"}
    # the platforms the stand-in driver could play: other chips' files got no fair trial
    played = {"librknnmrt 2.3.2": {"RV1103", "RV1106", "RK2118"}}
    seen = set()
    for r in index["runs"]:
        mf = modelfile.read(_model(r["model_file"]))
        rt = names[r["runtime"]]
        verdict = {s.runtime: s for s in mf.runtime_support()}[rt]
        answer = json.loads((REAL_RUNTIME / "answers" / r["answer"]).read_text())
        logs = " ".join(line for i in answer["init"] + (answer.get("platform_sweep") or [])
                        for line in i.get("log", []))
        seen.add(verdict.verdict)
        if verdict.verdict == "loads":
            fair = mf.chip in played.get(rt, {"RK3566", "RK3568", "RK3588"})
            assert r["init_ok"] or not fair, (rt, r["model_file"])
        elif verdict.verdict == "refuses":
            assert not r["init_ok"], (rt, r["model_file"])
            assert verdict.reason.split(": ", 1)[-1] in logs, (rt, r["model_file"], logs)
        elif verdict.verdict == "crashes":
            assert r["init_status"] is None, (rt, r["model_file"])
        elif verdict.verdict == "unusable":
            # the runtime loads it; what it answers is what rknnx cannot use
            assert r["init_ok"], (rt, r["model_file"])
        else:
            assert verdict.verdict == "other chip" and not r["init_ok"], (rt, r["model_file"])
    assert {"loads", "refuses", "crashes", "other chip"} <= seen, seen


def test_runtime_support_says_1_5_2_is_unusable_for_int16_tensors():
    """librknnrt 1.5.2 loads a file with int16 tensors (a w16a16i_dfp build) and answers type
    10 for them, which rknnx cannot hold: its verdict says so (rknnx doctor and the Model's
    NotSupportedError give the one answer); 1.6.0 loads it, and 1.5.2 a file of int8."""
    from helpers import synthetic_rknn

    int16 = modelfile.read(synthetic_rknn("{'attrs': {}}", dtype=("int16", 5)))
    verdicts = {s.runtime: s for s in int16.runtime_support()}
    assert verdicts["librknnrt 1.5.2"].verdict == "unusable"
    assert verdicts["librknnrt 1.5.2"].reason.startswith(
        "int16 tensors: it answers type 10 for them (INT4 in the 2.x header), which rknnx "
        "cannot hold in a numpy array; rknnx.Model refuses the file there (NotSupportedError)")
    assert verdicts["librknnrt 1.6.0"].verdict == "loads"
    plain = modelfile.read(synthetic_rknn("{'attrs': {}}"))
    assert {s.runtime: s.verdict for s in plain.runtime_support()}["librknnrt 1.5.2"] == "loads"


def test_runtime_facts_table():
    facts = {f.runtime: f for f in modelfile.RUNTIME_FACTS}
    # board logs: runtime 1.4.0 refuses container 6 (airockchip/rknn-toolkit2 #254, #281,
    # rockchip-linux/rknn-toolkit2 #316); 1.5.2 and 1.6.0 read it; the RV1106 mini runtime
    # reads only 0x1004 (its own answers: "incompatible model version: 6")
    assert 6 in facts["librknnrt 1.4.0"].refuses and 6 not in facts["librknnrt 1.4.0"].reads
    assert facts["librknnrt 1.5.2"].reads == facts["librknnrt 1.6.0"].reads == {1, 2, 6}
    # the container 1 files of rknpu2 c28b080, each on its own chip, on 1.4.0 too
    # (tests/data/vendor_built_answers.json)
    assert 1 in facts["librknnrt 1.4.0"].reads
    assert facts["librknnmrt 2.3.2"].reads == {0x1004}
    assert all(f.source for f in modelfile.RUNTIME_FACTS)


# ---- errors: each names the check that failed --------------------------------------------

def _v1004(json_text: bytes, payload: bytes = b"\0" * 16, version: int = 0x1004) -> bytes:
    """A 0x1004-framed file around a JSON tail (and a payload the decoder refuses)."""
    head = b"RKNN" + b"\0" * 4 + struct.pack("<QQ", version, len(payload)) + b"\0" * 40
    return head + payload + struct.pack("<Q", len(json_text)) + json_text


def _check(data) -> ModelFileError:
    with pytest.raises(ModelFileError) as info:
        modelfile.read(data)
    exc = info.value
    assert isinstance(exc, ValueError) and isinstance(exc, RKNNError) and exc.code is None
    assert exc.message and exc.check in str(exc)
    return exc


@pytest.mark.parametrize("data, check", [
    (b"", "magic"),
    (b"RKN", "magic"),
    (b"ONNX" + b"\0" * 100, "magic"),
    (b"RKNXEMDL" + b"\0" * 100, "magic"),
    (b"RKNN" + b"\0" * 10, "header_length"),
    (b"RKNN\0\0\0\0" + struct.pack("<QQ", 7, 0) + b"\0" * 60, "version"),
    (b"RKNN\0\0\0\0" + struct.pack("<QQ", 0, 0) + b"\0" * 60, "version"),
    (b"RKNN\0\0\0\0" + struct.pack("<QQ", 6, 0) + b"\0" * 47, "header_length"),
    (b"RKNN\0\0\0\0" + struct.pack("<QQ", 6, 1 << 40) + b"\0" * 60, "payload_length"),
    (b"RKNN\0\0\0\0" + struct.pack("<QQ", 6, 0) + b"\0" * 60, "payload_length"),
    (b"CYPTRKNN" + b"\0" * 200, "encrypted"),
])
def test_foreign_and_broken_headers(data, check):
    exc = _check(data)
    assert exc.check == check, exc
    if check == "encrypted":
        assert exc.status == "encrypted" and "encrypted" in exc.message
    if check == "version":
        assert exc.status == "unsupported" and exc.offset == 8


def test_json_tail_errors_name_the_check():
    good = (b'{"input_num":1,"output_num":1,"version":"2.5.0","target_platform":["rv1106"],'
            b'"graph":[{"left":"input","left_tensor_id":0,"right":"norm_tensor",'
            b'"right_tensor_id":0},{"left":"output","left_tensor_id":0,"right":"norm_tensor",'
            b'"right_tensor_id":1}],"norm_tensor":[{"tensor_id":0,"url":"in\\u00e9",'
            b'"size":[1,3,4,4],"dtype":{"vx_type":"int8","qnt_method":"layer"}},'
            b'{"tensor_id":1,"url":"out","size":[1,2],"dtype":{"vx_type":"float16"}}]}')
    # the tail is read first; a good tail around a 16-byte payload then fails at the
    # payload's own header (rknnfile/payload_v1004.c)
    exc = _check(_v1004(good))
    assert exc.check == "v1004.payload" and "64-byte header" in exc.message
    assert _check(_v1004(b"[" * 200 + b"]" * 200)).check == "json.depth"
    assert _check(_v1004(b'{"input_num": 1,}')).check == "json.syntax"
    assert _check(_v1004(b'{"a": "unterminated}')).check == "json.syntax"
    assert _check(_v1004(b'{"a": tru}')).check == "json.syntax"
    assert _check(_v1004(b"{} x")).check == "json.syntax"
    assert _check(_v1004(b"[1]")).check == "json.type"
    assert _check(_v1004(b'{"input_num": 1}')).check == "json.input_num"
    assert _check(_v1004(good.replace(b'"right_tensor_id":1', b'"right_tensor_id":9'))
                  ).check == "json.graph"
    assert _check(_v1004(good.replace(b'"int8"', b'"int9"'))).check == "json.norm_tensor"
    assert _check(_v1004(good.replace(b'[1,3,4,4]', b'[1,-3,4,4]'))).check == "json.norm_tensor"
    # a JSON length beyond the file
    data = bytearray(_v1004(good))
    struct.pack_into("<Q", data, 64 + 16, len(good) + 1)
    exc = _check(bytes(data))
    assert exc.check == "json_length" and exc.offset == 80


@NO_DATA
def test_truncation_at_every_region_names_the_check():
    data = _model("cls_img_rk3588.rknn").read_bytes()
    hs, plen = 64, struct.unpack_from("<Q", data, 16)[0]
    cuts = sorted({0, 3, 4, 23, 24, 63, 64, 71, 72, 100, hs + plen - 1, hs + plen,
                   hs + plen + 7, hs + plen + 8, len(data) - 1} | set(range(0, len(data), 997)))
    for k in cuts:
        exc = _check(data[:k])
        want = ("magic" if k < 4 else "header_length" if k < hs + 8 else
                "payload_length" if k < hs + plen + 8 else "json_length")
        assert exc.check == want, (k, exc)


def _patch_string(data: bytes, old: bytes, new: bytes) -> bytes:
    """Replace a stored string by one of the same length (offsets stay valid)."""
    assert data.count(old) == 1
    assert len(new) <= len(old)
    return data.replace(old, new + b" " * (len(old) - len(new)))


@NO_DATA
def test_flatbuffer_and_generator_errors_name_the_check():
    data = _model("cls_img_rk3588.rknn").read_bytes()
    # the root table offset (first u32 of the payload) pointing past the payload
    bad = bytearray(data)
    struct.pack_into("<I", bad, 64, 0x7FFFFFF0)
    assert _check(bytes(bad)).check == "flatbuffer.Model.root"
    bad = bytearray(data)
    bad[68:72] = b"XXXX"
    assert _check(bytes(bad)).check == "flatbuffer.identifier"
    # the vtable offset of the root table pointing before the payload
    root = struct.unpack_from("<I", data, 64)[0]
    bad = bytearray(data)
    struct.pack_into("<i", bad, 64 + root, root + 1000)
    assert _check(bytes(bad)).check == "flatbuffer.Model.root"
    # the generator (a Python-literal dict), read for a dynamic model's shape sets: nested
    # too deep, malformed, not a literal; never evaluated
    dyn = _model("dynamic_nogap_rk3588.rknn").read_bytes()
    gen_start = dyn.index(b"{'attrs'")
    gen = dyn[gen_start:dyn.index(b"\0", gen_start)]
    exc = _check(_patch_string(dyn, gen, b"{'a': " + b"[" * 100 + b"]" * 100 + b"}"))
    assert exc.check == "generator.depth" and gen_start < exc.offset < gen_start + len(gen)
    assert _check(_patch_string(dyn, gen, b"{'a': __import__('os')}")).check == \
        "generator.syntax"
    assert _check(_patch_string(dyn, gen, b"{'a': 1, 'dynamic_shapes': {}}")).check == \
        "generator.dynamic_shapes"
    # shape sets that disagree between inputs and the model, and non-finite floats that
    # str() writes (inf, nan) are literals too
    sets = b"'dynamic_shapes': {'images': [[1, 3, 64, 64], [1, 3, 48, 48], [1, 3, 32, 32]]"
    assert sets in dyn
    bad = dyn.replace(sets, sets.replace(b"[1, 3, 48, 48]", b"[1, 3, 48, -1]"))
    assert _check(bad).check == "generator.dynamic_shapes"
    ok = _patch_string(dyn, gen, b"{'q': [inf, -inf, nan, 1e-05, (1, 2), None, True], "
                       + sets + b"}}")
    assert modelfile.read(ok).shape_sets == modelfile.read(dyn).shape_sets
    # a static model does not need its generator: an unknown literal there is no error
    st_start = data.index(b"{'attrs'")
    st_gen = data[st_start:data.index(b"\0", st_start)]
    assert modelfile.read(_patch_string(data, st_gen, b"{'a': np.float32(0.5)}")).file_inputs
    # the I/O JSON of the inputs
    io = b'{"images": {"dtype": "int8", "layout": "NHWC"}}'
    assert _check(_patch_string(data, io, b'{"images": {"dtype": }}')).check == \
        "input_json.syntax"
    # the JSON tail disagreeing with the FlatBuffer graph
    tail = data[-1335:]
    assert _check(data[:-1335] + tail.replace(b'"input_num":1', b'"input_num":2')).check == \
        "json.input_num"


@NO_DATA
def test_random_bytes_after_the_magic():
    import random

    rng = random.Random(1234)
    for n in (16, 100, 4096, 65536):
        body = bytes(rng.getrandbits(8) for _ in range(n))
        exc = _check(b"RKNN" + body)
        assert exc.check in ("header_length", "version", "payload_length", "json_length"), exc


def test_model_file_error_is_a_value_error_and_pickles():
    exc = ModelFileError("the JSON tail claims 9 bytes", check="json_length", offset=80,
                         status="format", path="m.rknn")
    assert isinstance(exc, ValueError) and isinstance(exc, RKNNError)
    assert str(exc) == "m.rknn: the JSON tail claims 9 bytes [check: json_length]"
    back = pickle.loads(pickle.dumps(exc))
    assert (type(back), back.check, back.offset, back.status, back.path, str(back)) == \
        (ModelFileError, "json_length", 80, "format", "m.rknn", str(exc))


def test_bad_arguments():
    with pytest.raises(TypeError, match="path or bytes"):
        modelfile.read(12)
    from rknnx import _rknnfile

    with pytest.raises(TypeError, match="bytes or a buffer"):
        _rknnfile.read_model_file("not bytes")
    with pytest.raises(FileNotFoundError):
        modelfile.read("/nonexistent/model.rknn")


# ---- never a crash: mutated real files -----------------------------------------------------

@NO_DATA
def test_mutated_files_never_crash():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    files = [_model(n).read_bytes() for n in (
        "cls_img_rk3588.rknn", "dynamic_nogap_rk3566.rknn", "multi_io_rv1106.rknn",
        "tk2_2c2d03d__rknn_multiple_input_demo__RK3588__multiple_input_demo.rknn",
        "rknpu2_c28b080__rknn_multiple_input_demo__RK356X__multiple_input_demo.rknn",
        "tk2_77b7109__rknn_custom_pytorch_op_demo__RK3588__dual_residual_custom.rknn")]

    @hypothesis.settings(max_examples=400, deadline=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(which=st.integers(0, len(files) - 1),
                      edits=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255),
                                               st.sampled_from(["set", "u32", "cut"])),
                                     min_size=1, max_size=8))
    def one(which, edits):
        data = bytearray(files[which])
        for where, value, how in edits:
            k = min(int(where * len(data)), len(data) - 1)
            if how == "set":
                data[k] = value
            elif how == "u32" and k + 4 <= len(data):
                struct.pack_into("<I", data, k, (value * 0x01010101) ^ (k * 2654435761) & 0xFFFFFFFF)
            elif how == "cut":
                del data[k:]
                if not data:
                    data = bytearray(b"R")
        try:
            mf = modelfile.read(bytes(data))
        except ModelFileError as exc:
            assert exc.check and exc.message
        else:
            assert mf.file_inputs and mf.file_outputs

    one()


# ---- rknnx info on a vendor file: the table, and no runtime loaded --------------------------

def _info(*args, env=None):
    code = ("import sys\nfrom rknnx.cli import main\nrc = main(sys.argv[1:])\n"
            "maps = open('/proc/self/maps').read()\n"
            "print('RUNTIME-LOADED' if ('librknnrt' in maps or 'librknnmrt' in maps) else "
            "'NO-RUNTIME', file=sys.stderr)\nsys.exit(rc)\n")
    # a runtime the loader would fail on: a load attempt would show
    e = {**os.environ, "RKNNX_RUNTIME": "/nonexistent/librknnrt.so", **(env or {})}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=e, timeout=120)


@NO_DATA
def test_info_on_a_vendor_file_needs_no_runtime():
    path = _model("cls_img_rk3588.rknn")
    proc = _info("info", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "NO-RUNTIME" in proc.stderr, proc.stderr
    out = proc.stdout
    assert "chip:       RK3588 (NPU RKNPU v2), target platform rk3588" in out
    assert "toolkit:    2.5.0" in out and "compiler:   2.5.0 (74ea630ce@" in out
    assert "container:  version 6," in out and "shapes:     static" in out
    # INPUT_ATTR / NATIVE_OUTPUT_ATTR of runtime 1.6.0 (answers/librknnrt-1.6.0-armhf/
    # cls_img_rk3588.json)
    assert ("[0] images           1x32x32x3      int8     NHWC      affine scale=0.00392157 "
            "zp=-128 bytes=3072") in out
    assert "native 1x1x32x32x16   int8     NC1HWC2   bytes=16384" in out
    assert "librknnrt 1.4.0    refuses    container 6: Invalid RKNN model version 6" in out
    assert "librknnrt 1.6.0    loads      reads container 6" in out
    proc = _info("info", str(path), "--json")
    assert proc.returncode == 0 and "NO-RUNTIME" in proc.stderr, proc.stderr
    d = json.loads(proc.stdout)
    assert d["vendor_file"] and d["container"]["version"] == 6 and d["chip"] == "RK3588"
    assert d["outputs"][1]["native"] == {"layout": "NC1HWC2", "shape": [1, 4, 1, 1, 16],
                                         "dtype": "int8", "nbytes": 64}


@NO_DATA
def test_info_shows_mean_and_std_where_they_are_not_the_identity():
    proc = _info("info", str(_model("fp16_net_rk3588.rknn")))
    assert proc.returncode == 0 and "NO-RUNTIME" in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    k = next(i for i, l in enumerate(lines) if l.startswith("  [0] images "))
    # the input's row, its native row, then its normalization as the file lists it
    assert lines[k + 2] == "      norm   (x - mean) / std, mean 0; std 255, 255, 255"
    assert sum("norm " in l for l in lines) == 1          # outputs have none
    d = json.loads(_info("info", str(_model("fp16_net_rk3588.rknn")), "--json").stdout)
    assert (d["inputs"][0]["mean"], d["inputs"][0]["std"]) == ([0.0], [255.0, 255.0, 255.0])
    assert "norm" in d["inputs"][0]["decoded"] and d["outputs"][0]["mean"] is None
    # multi_io: the image is normalized, vec ([0] and [1]) is not: no line for it
    out = _info("info", str(_model("multi_io_rk3588.rknn"))).stdout
    assert out.count("      norm   ") == 1 and "std 255, 255, 255" in out


def test_info_keeps_long_mean_std_lines_narrow(tmp_path):
    path = tmp_path / "wide.rknn"
    many = "[%s]" % ", ".join(f"{100 + k}.5" for k in range(20))
    path.write_bytes(synthetic_rknn("{'attrs': {'x': {'mean': %s, 'std': [0.017]}}}" % many))
    proc = _info("info", str(path))
    assert proc.returncode == 0, proc.stderr
    norm = [l for l in proc.stdout.splitlines() if l.startswith("      norm")]
    assert norm == ["      norm   (x - mean) / std, mean 100.5, 101.5, 102.5, 103.5, ... "
                    "(20 values); std 0.017"]
    # two long lists: std on a line of its own, under mean
    path.write_bytes(synthetic_rknn("{'attrs': {'x': {'mean': %s, 'std': %s}}}"
                                    % (many, many.replace(".5", ".25"))))
    lines = _info("info", str(path)).stdout.splitlines()
    k = next(i for i, l in enumerate(lines) if l.startswith("      norm"))
    assert lines[k].endswith("mean 100.5, 101.5, 102.5, 103.5, ... (20 values);")
    assert lines[k + 1] == " " * 31 + "std 100.25, 101.25, 102.25, 103.25, ... (20 values)"
    assert len(lines[k]) <= 100 and len(lines[k + 1]) <= 100
    # the identity is not shown
    path.write_bytes(synthetic_rknn("{'attrs': {'x': {'mean': [0, 0, 0], 'std': [1.0]}}}"))
    assert "norm" not in _info("info", str(path)).stdout


def test_info_json_stays_json_when_the_file_lists_nan_or_inf(tmp_path):
    # the generator is Python's repr, where a float that is not finite reads nan / inf (and
    # 1e999 overflows to inf): the reader keeps them as the file lists them, and --json must
    # still be JSON a strict parser reads (RFC 8259 has no NaN or Infinity)
    path = tmp_path / "nan.rknn"
    path.write_bytes(synthetic_rknn("{'attrs': {'x': {'mean': [nan, -inf], 'std': [1e999]}}}"))
    t = modelfile.read(path).file_inputs[0]
    assert np.isnan(t.mean[0]) and t.mean[1] == -np.inf and t.std == (np.inf,)
    proc = _info("info", str(path), "--json")
    assert proc.returncode == 0, proc.stderr

    def strict(word):
        raise ValueError(f"{word} is not JSON")

    d = json.loads(proc.stdout, parse_constant=strict)
    # written as the strings Python's float() reads back
    assert (d["inputs"][0]["mean"], d["inputs"][0]["std"]) == (["nan", "-inf"], ["inf"])
    assert [float(v) for v in d["inputs"][0]["std"]] == [np.inf]
    # the table shows them as they are
    assert "      norm   (x - mean) / std, mean nan, -inf; std inf" in _info(
        "info", str(path)).stdout.splitlines()


@NO_DATA
def test_info_on_dynamic_custom_and_0x1004_files():
    out = _info("info", str(_model("dynamic_nogap_rk3588.rknn"))).stdout
    assert "shapes:     dynamic" in out and "shape set 2: 1x32x32x3" in out
    out = _info("info", str(_model(
        "tk2_77b7109__rknn_custom_pytorch_op_demo__RK3588__dual_residual_custom.rknn"))).stdout
    assert "custom ops: cstDualResidual_0 (cstDualResidual)" in out
    assert "librknnrt 1.5.2    crashes" in out
    proc = _info("info", str(_model("multi_io_rv1106.rknn")))
    assert proc.returncode == 0 and "NO-RUNTIME" in proc.stderr, proc.stderr
    assert "container:  version 0x1004" in proc.stdout
    assert "librknnmrt 2.3.2   loads      reads container 0x1004" in proc.stdout


@NO_DATA
def test_info_runtime_option_opens_the_file_with_the_runtime():
    path = _model("cls_img_rk3588.rknn")
    proc = _info("info", str(path), "--runtime", "--json", env={"RKNNX_RUNTIME": "emulator"})
    assert proc.returncode == 0, proc.stderr
    assert "RUNTIME-LOADED" in proc.stderr          # this time it is asked
    check = json.loads(proc.stdout)["runtime_check"]
    if check["loaded"]:   # an emulator that stands in for vendor files
        assert check["differences"] == [], check
    else:                 # one that refuses them says so, in the runtime's words
        assert check["error"] and "rknn_init" in check["error"], check


def test_info_on_broken_and_encrypted_files(tmp_path):
    enc = tmp_path / "enc.rknn"
    enc.write_bytes(b"CYPTRKNN" + b"\0" * 64)
    proc = _info("info", str(enc))
    assert proc.returncode == 1 and "encrypted RKNN model" in proc.stderr, proc.stderr
    bad = tmp_path / "bad.rknn"
    bad.write_bytes(b"RKNN\0\0\0\0" + struct.pack("<QQ", 6, 999) + b"\0" * 60)
    proc = _info("info", str(bad))
    assert proc.returncode == 1 and "[check: payload_length]" in proc.stderr, proc.stderr
    assert "NO-RUNTIME" in proc.stderr


# ---- weights left out of the file (remove_weight=True) -------------------------------------

BUILT = json.loads((Path(__file__).resolve().parents[1] / "data" / "vendor_built_answers.json")
                   .read_text())


@pytest.mark.parametrize("fact", BUILT["remove_weight"]["files"], ids=lambda f: f["file"])
def test_weights_left_out_of_the_file_are_not_in_mem_size(fact):
    """A file of the structure of one built with remove_weight=True (the plan of slot 19 and
    the constants' blobs, empty where the toolkit left the data out): the weight size is what
    librknnrt 1.5.2 and 1.6.0 answered for the built file (tests/data/vendor_built_answers.json),
    the constants the file holds, each rounded up to 64 bytes, not the plan."""
    data = synthetic_rknn("{'attrs': {}}", mem_plan=fact["plan"], constants=fact["blobs"])
    mf = modelfile.read(data)
    assert (mf.weight_size, mf.internal_size) == (fact["weight"], fact["internal"])
    assert mf.removed_weights == fact["blobs"].count(0) > 0
    # the same constants, every blob held: the plan is the answer, as for every full file
    full = modelfile.read(synthetic_rknn("{'attrs': {}}", mem_plan=fact["plan"],
                                         constants=[b or 64 for b in fact["blobs"]]))
    assert (full.weight_size, full.internal_size, full.removed_weights) == \
        (fact["plan"][0], fact["plan"][1], 0)


def test_a_constant_naming_a_blob_past_the_list_names_the_check():
    exc = _check(synthetic_rknn("{'attrs': {}}", mem_plan=(128, 64), constants=[0, 64],
                                blob_of=[1, 9]))
    assert exc.check == "flatbuffer.Tensor.blob"
    assert "constant tensor 3 names blob 9 of 3" in str(exc)


def test_info_says_weights_were_left_out(tmp_path):
    path = tmp_path / "rw.rknn"
    path.write_bytes(synthetic_rknn("{'attrs': {}}", mem_plan=(2880, 2432), constants=[0, 256, 0]))
    from rknnx.cli import main
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", str(path)]) == 0
    text = out.getvalue()
    assert "memory:     weights 256 B, internal 2.4 KiB" in text
    assert "2 constant tensor(s) left out of the file (built with remove_weight=True)" in text
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", "--json", str(path)]) == 0
    d = json.loads(out.getvalue())
    assert (d["mem_size"]["weight"], d["removed_weights"]) == (256, 2)


@pytest.mark.parametrize("stem", sorted(BUILT["container_1"]["files"]))
def test_container_1_attributes_are_the_users_types(stem):
    """A container 1 file's INPUT_ATTR / OUTPUT_ATTR type is the one its I/O JSON names
    (float32 / uint8 over int8 tensors), as runtimes 1.4.0, 1.5.2 and 1.6.0 report it
    (tests/data/vendor_built_answers.json); sizes are counted in it, native sizes in int8."""
    if RKNN_MODELS is None:
        pytest.skip(NO_VENDOR_DATA)
    path = next(iter(RKNN_MODELS.rglob(stem + ".rknn")), None)
    if path is None:
        pytest.skip(f"{stem}.rknn is not in {RKNN_MODELS}")
    fact = BUILT["container_1"]["files"][stem]
    mf = modelfile.read(str(path))
    assert (mf.container.version, mf.npu_family, mf.target_platform) == \
        (1, fact["family"], fact["platform"])
    names = {0: "float32", 3: "uint8"}
    for t, want in zip(mf.file_inputs + mf.file_outputs, fact["input_attr"] + fact["output_attr"]):
        assert (t.dtype, t.size) == (names[want["type"]], want["size"]), t.name
        assert t.native_size <= t.size          # the native view stays int8, a byte each


def test_the_memory_plan_of_containers_1_and_2_is_derived_from_the_tensors():
    """Files before format 6 store no plan (no Model slot 19): the reader derives it from the
    tensors (docs/rknn-file-format.md), and it is what the runtimes report: MEM_SIZE of the
    tk2 2c2d03d files in the recorded answers (1.4.0, 1.5.2, 1.6.0), of the c28b080 files in
    tests/data/vendor_built_answers.json (the RK3588 one's weight as 1.4.0 reports it)."""
    if RKNN_MODELS is None or REAL_RUNTIME is None:
        pytest.skip(NO_VENDOR_DATA)
    checked = 0
    for path in sorted(RKNN_MODELS.rglob("*.rknn")):
        mf = modelfile.read(str(path))
        if mf.container.version not in (1, 2):
            continue
        stem = path.stem
        if stem in BUILT["container_1"]["files"]:
            ms = BUILT["container_1"]["files"][stem]["mem_size"]
            want = {(ms.get("weight_1.4.0", ms["weight"]), ms["internal"])}
        else:
            want = set()
            for ans in REAL_RUNTIME.glob(f"answers/*/{stem}.json"):
                doc = json.loads(ans.read_text())
                for e in (doc.get("main") or {}).get("events", []):
                    if e["ev"] == "query" and e["cmd"] == 6 and e["status"] == 0:
                        want.add((e["result"]["total_weight_size"],
                                  e["result"]["total_internal_size"]))
            if not want:
                continue        # served by no runtime on record
        assert {(mf.weight_size, mf.internal_size)} == want, stem
        checked += 1
    assert checked >= 4, checked
