"""The emulator answers as boards do: one test per fact of real librknnrt behaviour, each
citing where the fact comes from (docs/abi-notes.md, "Board facts", lists them all).

Evidence kinds: L = a board log pasted into a public GitHub issue (repository and number
given), B = a message string present in a vendor runtime binary (when it fires is read
from its text), D = a vendor document or demo.  Where the log shows no status code the
emulator's choice is said in the docstring.  The log line shape (every version >= 1.3)
is ``<L> RKNN: [HH:MM:SS.mmm] <message>``; the mini runtime of the RV1106 family writes no
time (L: airockchip/rknn-toolkit2 #335).
"""

import ctypes as C
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from emu_capi import (FAIL, MODEL_INVALID, NHWC, PARAM_INVALID, Q_CURRENT_INPUT_ATTR,
                      Q_CURRENT_NATIVE_OUTPUT_ATTR, Q_CURRENT_OUTPUT_ATTR, Q_CUSTOM_STRING,
                      Q_INPUT_ATTR, Q_INPUT_DYNAMIC_RANGE, Q_MEM_SIZE, Q_NATIVE_INPUT_ATTR,
                      Q_NATIVE_NHWC_OUTPUT_ATTR, Q_NATIVE_OUTPUT_ATTR, Q_PERF_DETAIL,
                      Q_PERF_RUN, Q_SDK_VERSION, SUCC, TARGET_PLATFORM_UNMATCH, U8, F32,
                      InOutNum, Input, RknnError, TensorAttr, api, emu, library_path,
                      make_ctx, samples)

__all__ = ["emu", "make_ctx"]

LINE = re.compile(r"^([EWIDT]) RKNN: \[\d\d:\d\d:\d\d\.\d\d\d\] (.*)$")


def lines(err: str, level: str = None):
    """The runtime's log lines of stderr as (letter, message), checking their shape."""
    out = []
    for ln in err.splitlines():
        if " RKNN: " not in ln:
            continue
        m = LINE.match(ln)
        assert m, f"not the board's line shape: {ln!r}"
        if level is None or m.group(1) == level:
            out.append((m.group(1), m.group(2)))
    return out


def set_shapes(c, s):
    attrs = (TensorAttr * c.n_in)()
    for i in range(c.n_in):
        r = c.query(Q_INPUT_DYNAMIC_RANGE, i)
        attrs[i] = c.in_attr(i)
        attrs[i].dims[:r.n_dims] = r.dyn_range[s][:r.n_dims]
    return api().rknn_set_input_shapes(c.h, c.n_in, attrs)


# ---- rknn_query ---------------------------------------------------------------------------

def test_dynamic_range_of_static_model_is_refused_with_a_warning(emu, make_ctx, capfd):
    """L x3, librknnrt 2.3.0 and 1.5.2 on RK3588 (immich-app/immich #17098,
    airockchip/rknn_model_zoo #271 and #114): INPUT_DYNAMIC_RANGE on a static model gives
    -6 (RKNN_ERR_MODEL_INVALID) and one W line."""
    c = make_ctx(samples.classifier(target="RK3588"))
    capfd.readouterr()
    rc, _ = c.query_rc(Q_INPUT_DYNAMIC_RANGE, 0)
    assert rc == MODEL_INVALID
    assert lines(capfd.readouterr().err) == [
        ("W", "query RKNN_QUERY_INPUT_DYNAMIC_RANGE error, rknn model is static shape type, "
              "please export rknn with dynamic_shapes")]


def test_dynamic_range_of_dynamic_model_lists_the_sets(emu, make_ctx, capfd):
    """D RKNN_Dynamic_Shape_Usage (rockchip-linux/rknpu2); L: a dynamic model's init prints
    no such W line (airockchip/rknn-toolkit2 #16)."""
    c = make_ctx(samples.dynamic(target="RK3588"))
    capfd.readouterr()
    r = c.query(Q_INPUT_DYNAMIC_RANGE, 0)
    assert r.shape_number == 3
    assert [tuple(r.dyn_range[k][:4]) for k in range(3)] == [
        (1, 64, 64, 3), (1, 96, 96, 3), (1, 128, 160, 3)]
    assert lines(capfd.readouterr().err) == []


@pytest.mark.parametrize("cmd,name", [(Q_CURRENT_INPUT_ATTR, "RKNN_QUERY_CURRENT_INPUT_ATTR"),
                                      (Q_CURRENT_OUTPUT_ATTR, "RKNN_QUERY_CURRENT_OUTPUT_ATTR"),
                                      (Q_CURRENT_NATIVE_OUTPUT_ATTR,
                                       "RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR")])
def test_current_attrs_before_set_input_shapes_are_refused(emu, make_ctx, capfd, cmd, name):
    """B librknnrt 1.5.2: "please call rknn_set_input_shape first" (no board log shows the
    status; the emulator returns -1, RKNN_ERR_FAIL).  After rknn_set_input_shapes they
    describe the chosen set."""
    c = make_ctx(samples.dynamic(target="RK3588"))
    capfd.readouterr()
    rc, _ = c.query_rc(cmd, 0)
    assert rc == FAIL
    (lvl, msg), = lines(capfd.readouterr().err)
    assert lvl == "E" and msg == f"rknn_query, {name} error, please call rknn_set_input_shape first"
    assert set_shapes(c, 1) == SUCC
    assert c.query(Q_CURRENT_INPUT_ATTR, 0).shape == (1, 96, 96, 3)


@pytest.mark.parametrize("cmd,kind", [(Q_NATIVE_INPUT_ATTR, "input"),
                                      (Q_NATIVE_OUTPUT_ATTR, "output")])
def test_native_attrs_of_dynamic_model_are_the_largest_with_a_warning(emu, make_ctx, capfd,
                                                                       cmd, kind):
    """B librknnrt 1.5.2 ("it will return max input native shape!"); D
    RKNN_Dynamic_Shape_Usage.md: NATIVE_* on a dynamic model answer, for the largest shape."""
    c = make_ctx(samples.dynamic(target="RK3588"))
    capfd.readouterr()
    a = c.query(cmd, 0)
    assert {160, 80} & set(a.shape)          # the largest set: 128x160 in, 64x80 out
    (lvl, msg), = lines(capfd.readouterr().err)
    assert lvl == "W" and msg.endswith(f"it will return max {kind} native shape!")


def test_native_nhwc_output_of_dynamic_model_is_refused(emu, make_ctx, capfd):
    """B librknnrt 1.5.2, D RKNN_Dynamic_Shape_Usage.md: "command is invalid for dynamic
    shapes rknn model!" (status not in any log: -1 here)."""
    c = make_ctx(samples.dynamic(target="RK3588"))
    capfd.readouterr()
    rc, _ = c.query_rc(Q_NATIVE_NHWC_OUTPUT_ATTR, 0)
    assert rc == FAIL
    (lvl, msg), = lines(capfd.readouterr().err)
    assert lvl == "E" and msg.endswith("command is invalid for dynamic shapes rknn model!")


def test_plain_attrs_of_dynamic_model_describe_the_largest_shape(emu, make_ctx):
    """D rknpu2/examples/rknn_dynamic_shape_input_demo sizes its buffers from INPUT_ATTR
    before rknn_set_input_shapes: the plain attributes are the largest shape."""
    c = make_ctx(samples.dynamic(target="RK3588"))
    assert c.in_attr(0).shape == (1, 128, 160, 3)


def test_query_size_too_small_is_refused_and_larger_accepted(emu, make_ctx, capfd):
    """L rockchip-linux/rknn-toolkit #440 (1.6.0): ``rknn_query, info_len(372) <
    sizeof(rknn_tensor_attr)(376)!`` and -5; L rockchip-linux/rknn-toolkit2 #170: the check
    is ``<``, a larger buffer works."""
    c = make_ctx(samples.classifier(target="RK3588"))
    capfd.readouterr()
    rc, _ = c.query_rc(Q_INPUT_ATTR, 0, size=372)
    assert rc == PARAM_INVALID
    assert lines(capfd.readouterr().err) == [
        ("E", "rknn_query, info_len(372) < sizeof(rknn_tensor_attr)(376)!")]
    big = (C.c_uint8 * 512)()
    assert api().rknn_query(c.h, Q_INPUT_ATTR, big, 512) == SUCC
    assert TensorAttr.from_buffer_copy(bytes(big)[:C.sizeof(TensorAttr)]).shape == \
        c.in_attr(0).shape


def test_query_index_out_of_range(emu, make_ctx, capfd):
    """L (HAT notes, runtime 2.0.0b0) and B: -5 with ``rknn_query, RKNN_QUERY_INPUT_ATTR,
    p_attr->index(1) >= input_num(1)!``."""
    c = make_ctx(samples.classifier(target="RK3588"))
    capfd.readouterr()
    rc, _ = c.query_rc(Q_INPUT_ATTR, 1)
    assert rc == PARAM_INVALID
    assert lines(capfd.readouterr().err) == [
        ("E", "rknn_query, RKNN_QUERY_INPUT_ATTR, p_attr->index(1) >= input_num(1)!")]


def test_query_command_out_of_range(emu, make_ctx, capfd):
    """B, and notes of a 2.3.x user: ``rknn_query, cmd = 100 is not in [0, 17]!``."""
    c = make_ctx(samples.classifier(target="RK3588"))
    capfd.readouterr()
    s = (C.c_uint8 * 1024)()
    assert api().rknn_query(c.h, 100, s, 1024) == PARAM_INVALID
    assert lines(capfd.readouterr().err) == [("E", "rknn_query, cmd = 100 is not in [0, 17]!")]


@pytest.mark.parametrize("cmd", [Q_PERF_RUN, Q_INPUT_DYNAMIC_RANGE, Q_CURRENT_INPUT_ATTR])
def test_mini_runtime_refuses_perf_dynamic_and_current_queries(emu, make_ctx, capfd, cmd):
    """B librknnmrt 2.3.2 (RV1106/RV1103): ``rknn_query, unsupported cmd(%d)!``; its lines
    have no time (L airockchip/rknn-toolkit2 #335)."""
    c = make_ctx(samples.classifier(target="RV1106"), platform="RV1106")
    capfd.readouterr()
    rc, _ = c.query_rc(cmd, 0)
    assert rc == FAIL   # -1, as librknnmrt 2.3.2 answers (cls_img_rv1106)
    assert capfd.readouterr().err.strip() == f"E RKNN: rknn_query, unsupported cmd({cmd})!"


def test_perf_detail_without_flag_mem_size_and_empty_custom_string_succeed(emu, make_ctx):
    """B (no error text exists for it) and D (the custom-op demo exits on failure and works):
    PERF_DETAIL without the perf flag succeeds; L airockchip/rknn-toolkit2 #129 and the
    rknn_benchmark demo: MEM_SIZE on a context of flags 0, CUSTOM_STRING empty."""
    c = make_ctx(samples.tiny_int8_add(target="RK3588"))
    assert c.query_rc(Q_PERF_DETAIL)[0] == SUCC
    assert c.query(Q_MEM_SIZE).total_weight_size >= 0
    assert c.query_rc(Q_CUSTOM_STRING)[0] == SUCC


def test_version_strings(emu, make_ctx):
    """L x5 and helper-collected demo output (1.2.0 ... 2.3.2): api_version is
    ``X.Y.Z (<hash>@<ISO time>)``, drv_version a plain ``X.Y.Z``."""
    v = make_ctx(samples.classifier(target="RK3588")).query(Q_SDK_VERSION)
    assert re.fullmatch(r"\d+\.\d+\.\d+ \([^.()]+@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\)",
                        v.api_version.decode())
    assert re.fullmatch(r"\d+\.\d+\.\d+", v.drv_version.decode())


# ---- inputs_set, set_io_mem, create_mem ---------------------------------------------------

def test_input_size_follows_the_input_type(emu, make_ctx, capfd):
    """L x3 (airockchip/rknn-toolkit2 #558, rockchip-linux/rknpu2 #9, rknn_model_zoo #298):
    ``rknn_input.type`` left 0 means FLOAT32, so a uint8 image of n_elems bytes is refused
    with -5 and ``rknn_inputs_set, param input size(N) < model input size(4 N)``."""
    c = make_ctx(samples.classifier(target="RK3588"))
    img = np.zeros((1, 224, 224, 3), np.uint8)
    capfd.readouterr()
    assert c.inputs_set_rc([img], types=[F32], fmts=[NHWC]) == PARAM_INVALID
    assert lines(capfd.readouterr().err) == [
        ("E", f"rknn_inputs_set, param input size({img.size}) < model input size("
              f"{img.size * 4})")]
    assert c.inputs_set_rc([img], types=[U8], fmts=[NHWC]) == SUCC


def test_too_many_inputs(emu, make_ctx, capfd):
    """B: ``param input num(%d) > model input num(%d)``."""
    c = make_ctx(samples.classifier(target="RK3588"))
    img = np.zeros((1, 224, 224, 3), np.uint8)
    capfd.readouterr()
    assert c.inputs_set_rc([img, img], types=[U8, U8], fmts=[NHWC, NHWC]) == PARAM_INVALID
    assert lines(capfd.readouterr().err) == [
        ("E", "rknn_inputs_set, param input num(2) > model input num(1)")]


def test_mini_runtime_has_no_general_flow(emu, make_ctx, capfd):
    """L airockchip/rknn-toolkit2 #335 (RV1106): ``rknn_inputs_set, context config
    invalid!``, and the same for outputs_get (B)."""
    c = make_ctx(samples.classifier(target="RV1106"), platform="RV1106")
    img = np.zeros((1, 224, 224, 3), np.uint8)
    capfd.readouterr()
    # -5, as librknnmrt 2.3.2 answers (cls_img_rv1106: docs/abi-notes.md)
    assert c.inputs_set_rc([img], types=[U8], fmts=[NHWC]) == PARAM_INVALID
    assert capfd.readouterr().err.strip() == "E RKNN: rknn_inputs_set, context config invalid!"


def test_mini_runtime_refuses_dup_and_shapes(emu, make_ctx, capfd):
    """B librknnmrt 2.3.2, D: ``rknn_dup_context not supported in mini runtime!`` and
    ``rknn_set_input_shapes not supported in mini runtime!``."""
    c = make_ctx(samples.classifier(target="RV1106"), platform="RV1106")
    capfd.readouterr()
    src, out = C.c_uint64(c.h), C.c_uint64(0)
    assert api().rknn_dup_context(C.byref(src), C.byref(out)) == FAIL
    attrs = (TensorAttr * 1)(c.in_attr(0))
    assert api().rknn_set_input_shapes(c.h, 1, attrs) == FAIL
    assert capfd.readouterr().err.splitlines() == [
        "E RKNN: rknn_dup_context not supported in mini runtime!",
        "E RKNN: rknn_set_input_shapes not supported in mini runtime!"]


def test_set_io_mem_too_small(emu, make_ctx, capfd):
    """B: ``rknn_set_io_mem, input memory size(%d) < model input size(%d)``."""
    c = make_ctx(samples.classifier(target="RK3588"))
    a = c.in_attr(0)
    m = c.create_mem(a.size_with_stride - 1)
    capfd.readouterr()
    assert api().rknn_set_io_mem(c.h, m, C.byref(a)) == PARAM_INVALID
    assert lines(capfd.readouterr().err) == [
        ("E", f"rknn_set_io_mem, input memory size({a.size_with_stride - 1}) < model input "
              f"size({a.size_with_stride})")]


def test_create_mem_of_zero_bytes(emu, make_ctx, capfd):
    """B: ``rknn_create_mem(ctx, 0)`` gives NULL and ``rknn_create_mem, invalid size: 0``."""
    c = make_ctx(samples.classifier(target="RK3588"))
    capfd.readouterr()
    assert not api().rknn_create_mem(c.h, 0)
    assert lines(capfd.readouterr().err) == [("E", "rknn_create_mem, invalid size: 0")]


# ---- set_input_shapes, run ----------------------------------------------------------------

def test_set_input_shapes_on_static_model_is_refused(emu, make_ctx, capfd):
    """B: ``rknn_set_input_shapes error, rknn model is static shape type, ...``; L
    marty1885/rknn-superresolution #3: RKNNLite reports RKNN_ERR_FAIL for a refused shape."""
    c = make_ctx(samples.classifier(target="RK3588"))
    attrs = (TensorAttr * 1)(c.in_attr(0))
    capfd.readouterr()
    assert api().rknn_set_input_shapes(c.h, 1, attrs) == MODEL_INVALID   # -6: 1.5.2, 1.6.0 (cls_img_rk3588)
    assert lines(capfd.readouterr().err) == [
        ("E", "rknn_set_input_shapes, error, rknn model is static shape type, please export "
              "rknn with dynamic_shapes")]


def test_unsupported_shape_lists_every_supported_one(emu, make_ctx, capfd):
    """L marty1885/rknn-superresolution #3 (RK3588): E lines name the input, list each
    supported ``shape = [...], layout = NHWC``, then what was given; RKNN_ERR_FAIL."""
    c = make_ctx(samples.dynamic(target="RK3588"))
    a = c.in_attr(0)
    a.dims[1], a.dims[2] = 100, 100
    capfd.readouterr()
    assert api().rknn_set_input_shapes(c.h, 1, (TensorAttr * 1)(a)) == FAIL
    msgs = [m for _, m in lines(capfd.readouterr().err, "E")]
    name = a.name.decode()
    assert msgs == [
        f"rknn_set_input_shapes, error, input name = {name} supported input shapes are as "
        "follows:",
        " shape = [1,64,64,3], layout = NHWC", " shape = [1,96,96,3], layout = NHWC",
        " shape = [1,128,160,3], layout = NHWC",
        f"while get rknn_tensor_attr[0].name = {name}, dims = [1, 100, 100, 3], fmt = NHWC"]


def test_set_input_shapes_takes_nhwc_only(emu, make_ctx):
    """B: only NHWC (or UNDEFINED) ``fmt`` is accepted for the shapes of 4-D inputs."""
    c = make_ctx(samples.dynamic(target="RK3588"))
    a = c.in_attr(0)
    a.fmt = 0                             # NCHW
    a.dims[:4] = (1, 3, 64, 64)
    assert api().rknn_set_input_shapes(c.h, 1, (TensorAttr * 1)(a)) == PARAM_INVALID


def test_dynamic_model_runs_only_after_a_shape_is_chosen(emu, make_ctx, capfd):
    """L airockchip/rknn-toolkit2 #16, #512: dynamic models run without a chosen shape abort
    on boards; the emulator refuses instead (-1), and runs once one is set (D)."""
    c = make_ctx(samples.dynamic(target="RK3588"))
    capfd.readouterr()
    assert c.run_rc() == FAIL
    assert "call rknn_set_input_shapes first" in capfd.readouterr().err
    assert set_shapes(c, 0) == SUCC


def test_dynamic_model_cannot_share_weights(emu, make_ctx, capfd):
    """B: ``RKNN_FLAG_SHARE_WEIGHT_MEM is invalid, dynamic shape rknn model is not
    supported!``."""
    from emu_capi import FLAG_SHARE_WEIGHT, InitExtend

    model = samples.dynamic(target="RK3588")
    c = make_ctx(model)
    ext = InitExtend()
    ext.ctx = c.h
    capfd.readouterr()
    with pytest.raises(RknnError):
        make_ctx(model, flags=FLAG_SHARE_WEIGHT, extend=ext)
    assert ("E", "RKNN_FLAG_SHARE_WEIGHT_MEM is invalid, dynamic shape rknn model is not "
                 "supported!") in lines(capfd.readouterr().err)


# ---- rknn_init, cores, logs ---------------------------------------------------------------

def test_model_for_another_chip(emu, make_ctx, capfd):
    """B, and L (runtime 2.3.2): ``This rknn model is for RK3588, but current platform is
    RK3576``; the status (not in the logs) is RKNN_ERR_TARGET_PLATFORM_UNMATCH here."""
    emu.set_platform("RK3576")
    capfd.readouterr()
    with pytest.raises(RknnError) as ei:
        make_ctx(samples.classifier(target="RK3588"))
    assert ei.value.code == TARGET_PLATFORM_UNMATCH
    assert lines(capfd.readouterr().err) == [
        ("E", "This rknn model is for RK3588, but current platform is RK3576")]


def test_single_core_npu_refuses_core_mask(emu, make_ctx, capfd):
    """L happyme531/ztu_somemodelruntime_ez_rknn_async #1 (RK3566): rknn_set_core_mask
    returns -13 (RKNN_ERR_TARGET_PLATFORM_UNMATCH); swdee/go-rknnlite #22 never calls it
    on RK356x for that reason."""
    c = make_ctx(samples.classifier(target="RK3566"), platform="RK3566")
    assert api().rknn_set_core_mask(c.h, 1) == TARGET_PLATFORM_UNMATCH


def _init_in_child(env_extra, chip="RK3588"):
    """rknn_init of a sample in a fresh process (RKNN_LOG_LEVEL is read at init); its
    status and stderr."""
    code = f"""
import ctypes as C
from rknnx.emulator import samples
lib = C.CDLL({str(library_path())!r})
m = samples.classifier(target={chip!r})
h = C.c_uint64(0)
rc = lib.rknn_init(C.byref(h), C.c_char_p(m), len(m), 0, None)
print(rc)
if rc == 0:
    lib.rknn_destroy(h)
"""
    env = dict(os.environ, **env_extra)
    env.pop("RKNN_EMU_PLATFORM", None)
    if chip != "RK3588":
        env["RKNN_EMU_PLATFORM"] = chip
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    return int(p.stdout.strip()), p.stderr


def test_init_information_lines_only_at_level_2(emu):
    """L x8 (2.x wording, e.g. immich-app/immich #17098): three I lines per rknn_init;
    L x5 and D User Guide 1.5.2 4.8: a plain C program at the default level prints none,
    RKNN_LOG_LEVEL=2 shows them; L rknn-toolkit2 #16 and others: ``target: RKNPU v2`` on
    RK3588, ``RKNPU lite`` on RK3566/68, ``static_shape``/``dynamic_shape``."""
    rc, err = _init_in_child({"RKNN_LOG_LEVEL": "1"})
    assert rc == 0 and lines(err) == []
    rc, err = _init_in_child({"RKNN_LOG_LEVEL": "2"})
    msgs = [m for _, m in lines(err, "I")]
    assert rc == 0 and len(msgs) == 3
    assert re.fullmatch(r"RKNN Runtime Information, librknnrt version: \d+\.\d+\.\d+ "
                        r"\(\S+@\S+\)", msgs[0])
    assert re.fullmatch(r"RKNN Driver Information, version: \d+\.\d+\.\d+", msgs[1])
    assert msgs[2].startswith("RKNN Model Information, version: 6, toolkit version: ")
    assert "target: RKNPU v2, target platform: rk3588, " in msgs[2]
    assert msgs[2].endswith("model inference type: static_shape")
    rc, err = _init_in_child({"RKNN_LOG_LEVEL": "2"}, chip="RK3566")
    assert "target: RKNPU lite, target platform: rk3566, " in err


def test_unsupported_log_level(emu):
    """B: ``Unsupported log level: %d``; the default level is kept."""
    rc, err = _init_in_child({"RKNN_LOG_LEVEL": "9"})
    assert rc == 0 and lines(err) == [("W", "Unsupported log level: 9")]


def test_no_npu_device(emu):
    """L x8 (airockchip/rknn-toolkit2 #68, #399, rockchip-linux/rknn-toolkit2 #49, #244,
    rockchip-linux/rknpu2 #17, #75 ...): without the rknpu driver or access to its node,
    rknn_init returns -1 after two E lines (the runtime's spelling kept)."""
    rc, err = _init_in_child({"RKNN_EMU_NO_DEVICE": "1"})
    assert rc == FAIL
    assert lines(err) == [("E", "failed to open rknpu module, need to insmod rknpu dirver!"),
                          ("E", "failed to open rknn device!")]


def test_npu_memory_exhausted(emu):
    """L x6: ``failed to allocate handle, ret: -1, errno: 14``, ``failed to malloc npu
    memory, size: ...``, and rknn_init returns -1."""
    rc, err = _init_in_child({"RKNN_EMU_NPU_MEMORY": "1000"})
    assert rc == FAIL
    msgs = [m for _, m in lines(err, "E")]
    assert msgs[0] == "failed to allocate handle, ret: -1, errno: 14"
    assert msgs[1].startswith("failed to malloc npu memory, size: ")


def test_attributes_of_a_uint8_image_int8_model(emu, make_ctx):
    """L x2 (airockchip/rknn-toolkit2 #129, rockchip-linux/rknn-toolkit2 #137): plain
    INPUT_ATTR of an int8 model fed uint8 images: NHWC, INT8, AFFINE, zp -128, scale
    1/255, size = n_elems = size_with_stride for a width that needs no padding."""
    from rknnx.emulator import ModelBuilder

    b = ModelBuilder("RK3588")
    x = b.input("images", (1, 640, 640, 3), "int8", "NHWC", zp=-128, scale=1 / 255)
    b.output(b.relu(x, out="y"))
    a = make_ctx(b.build()).in_attr(0)
    assert a.shape == (1, 640, 640, 3) and a.fmt == NHWC and a.type == 2   # INT8
    assert a.n_elems == a.size == a.size_with_stride == 1228800 and a.w_stride == 640
    assert a.zp == -128 and abs(a.scale - 0.003922) < 1e-6


def test_a_file_that_is_not_a_model(emu, capfd):
    """``parseRKNN from buffer: Invalid RKNN format!``, then ``rknn_init, load model
    failed!``; -6: the vendor's librknnrt 1.6.0 and 1.5.2 (armhf) on a bad file
    (real-runtime answers, ``bad_init`` of every file: random_bytes_RKNN_prefix,
    truncated_half).  The 2.3.x board logs quoted in airockchip/rknn-toolkit2 #405 and #233
    spell it "fromat"; the emulator follows the runtimes that were run and recorded."""
    bad = b"RKNN\0\0\0\0" + bytes(100)
    h = C.c_uint64(0)
    capfd.readouterr()
    assert api().rknn_init(C.byref(h), bad, len(bad), 0, None) == MODEL_INVALID
    assert lines(capfd.readouterr().err) == [
        ("E", "parseRKNN from buffer: Invalid RKNN format!"),
        ("E", "rknn_init, load model failed!")]
    # (the bytes start "RKNN": the vendor-file reader refuses them, emulator/standin.c)


def test_a_model_newer_than_the_runtime(emu, capfd):
    """L x6 (rockchip-linux/rknn-toolkit2 #316, #212): ``Invalid RKNN model version 6``
    then ``rknn_init, load model failed!``; -6 on 1.5.0.  Here: the emulator format's
    major version."""
    m = bytearray(samples.tiny_relu())
    m[8] = 2                                  # format major 2: newer than this runtime
    h = C.c_uint64(0)
    capfd.readouterr()
    assert api().rknn_init(C.byref(h), bytes(m), len(m), 0, None) == MODEL_INVALID
    assert lines(capfd.readouterr().err) == [
        ("E", "Invalid RKNN model version 2"), ("E", "rknn_init, load model failed!")]
