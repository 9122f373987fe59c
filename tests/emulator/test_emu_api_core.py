"""Emulator runtime half: contexts, registry, personalities."""

import ctypes as C
import os
import re

import numpy as np
import pytest

from emu_capi import (CTX_INVALID, DEVICE_UNAVAILABLE, FAIL, FLAG_INFO_ONLY,
                                 FLAG_PERF, I8, MODEL_INVALID, NC1HWC2, NCHW, NHWC,
                                 PARAM_INVALID, PLATFORMS, QUERY_STRUCT, SUCC,
                                 TARGET_PLATFORM_UNMATCH, UNDEFINED, F16, F32, Ctx, InitExtend,
                                 Q_CURRENT_INPUT_ATTR, Q_CURRENT_NATIVE_INPUT_ATTR,
                                 Q_CURRENT_NATIVE_OUTPUT_ATTR, Q_CURRENT_OUTPUT_ATTR,
                                 Q_CUSTOM_STRING, Q_DEVICE_MEM_INFO, Q_IN_OUT_NUM, Q_INPUT_ATTR,
                                 Q_INPUT_DYNAMIC_RANGE, Q_MEM_SIZE, Q_NATIVE_INPUT_ATTR,
                                 Q_NATIVE_NHWC_INPUT_ATTR, Q_NATIVE_NHWC_OUTPUT_ATTR,
                                 Q_NATIVE_OUTPUT_ATTR, Q_OUTPUT_ATTR, Q_PERF_DETAIL, Q_PERF_RUN,
                                 Q_SDK_VERSION, ModelBuilder, api, emu, make_ctx, samples)

__all__ = ["emu", "make_ctx"]   # fixtures

# chip -> (family column, cores, C2 int8, C2 fp16, NHWC width alignment)
CHIPS = {
    "RK3588": ("RK3588", 3, 16, 8, 8), "RK3576": ("RK3588", 2, 16, 8, 8),
    "RK3562": ("RK356X", 1, 16, 8, 16), "RK3566": ("RK356X", 1, 8, 4, 16),
    "RK3568": ("RK356X", 1, 8, 4, 16), "RV1126B": ("RK356X", 1, 16, 8, 16),
    "RV1106": ("RV1106", 1, 16, 8, 16), "RV1103": ("RV1106", 1, 16, 8, 16),
    "RV1106B": ("RV1106", 1, 16, 8, 16), "RV1103B": ("RV1106", 1, 16, 8, 16),
    "RK2118": ("RK2118", 1, 16, 8, 16),
}


def odd_model(target, c=5, w=30, dtype="int8", h=6):
    """A 4-D model with an unaligned width and a channel count that is not 1/3/4:
    x NHWC [1,h,w,c] -> relu -> y NCHW [1,c,h,w]."""
    b = ModelBuilder(target, "odd")
    kw = dict(zp=-3, scale=0.05) if dtype == "int8" else {}
    x = b.input("x", (1, h, w, c), dtype, "NHWC", **kw)
    r = b.relu(x, **({"out_scale": 0.05, "out_zp": -3} if dtype == "int8" else {}))
    b.output(b.transpose(r, (0, 3, 1, 2), fmt="NCHW", out="y"))
    return b.build()


def img_model(target, w=30, c=3):
    """uint8-fed image x NHWC [1,4,w,c] int8 with mean/std -> relu -> y."""
    b = ModelBuilder(target, "img")
    x = b.input("x", (1, 4, w, c), "int8", "NHWC", zp=0, scale=0.02, mean=[10.0] * c,
                std=[20.0] * c)
    b.output(b.relu(x, out_scale=0.02, out_zp=0, out="y"))
    return b.build()


# ---- contexts and the registry --------------------------------------------------------------

def test_init_destroy_counts(emu):
    lib = api()
    base = emu.counters()["live_contexts"]
    c = Ctx(samples.tiny_relu())
    assert emu.counters()["live_contexts"] == base + 1
    assert lib.rknn_destroy(c.h) == SUCC
    assert emu.counters()["live_contexts"] == base
    # a destroyed handle is detected everywhere
    assert lib.rknn_destroy(c.h) == CTX_INVALID
    assert lib.rknn_run(c.h, None) == CTX_INVALID
    s = C.create_string_buffer(64)
    assert lib.rknn_query(c.h, Q_IN_OUT_NUM, s, 8) == CTX_INVALID
    c.h = 0


@pytest.mark.parametrize("h", [0, 1, 12345, 0xFFFFFFFFFFFFFFFF, 0x40000000, 0x7FFFFFFF])
def test_garbage_handles(emu, h):
    lib = api()
    s = C.create_string_buffer(1024)
    assert lib.rknn_query(h, Q_IN_OUT_NUM, s, 8) == CTX_INVALID
    assert lib.rknn_run(h, None) == CTX_INVALID
    assert lib.rknn_destroy(h) == CTX_INVALID
    assert lib.rknn_inputs_set(h, 1, None) == CTX_INVALID
    assert lib.rknn_outputs_get(h, 1, None, None) == CTX_INVALID
    assert lib.rknn_outputs_release(h, 1, None) == CTX_INVALID
    assert not lib.rknn_create_mem(h, 16)
    assert lib.rknn_set_core_mask(h, 0) == CTX_INVALID


def test_init_bad_arguments(emu):
    lib = api()
    h = C.c_uint64(99)
    model = samples.tiny_relu()
    assert lib.rknn_init(None, model, len(model), 0, None) == PARAM_INVALID
    assert lib.rknn_init(C.byref(h), None, 10, 0, None) == PARAM_INVALID
    assert h.value == 0
    assert lib.rknn_init(C.byref(h), b"garbage" * 10, 70, 0, None) == MODEL_INVALID
    assert lib.rknn_init(C.byref(h), model, 20, 0, None) == MODEL_INVALID   # truncated
    assert lib.rknn_init(C.byref(h), b"/nonexistent/model.rknn", 0, 0, None) == MODEL_INVALID
    assert h.value == 0


def test_init_from_path(emu, tmp_path):
    lib = api()
    p = tmp_path / "m.rknn"
    p.write_bytes(samples.tiny_relu())
    h = C.c_uint64()
    assert lib.rknn_init(C.byref(h), str(p).encode(), 0, 0, None) == SUCC
    assert lib.rknn_destroy(h.value) == SUCC


# ---- personalities ------------------------------------------------------------------------------

def test_platform_names(emu):
    assert set(emu.platforms()) == set(CHIPS)
    assert emu.platform == "RK3588"
    emu.set_platform("rk3566")
    assert emu.platform == "RK3566"
    with pytest.raises(ValueError):
        emu.set_platform("RK9999")


@pytest.mark.parametrize("chip", sorted(CHIPS))
def test_target_must_match(emu, chip):
    lib = api()
    emu.set_platform(chip)
    h = C.c_uint64()
    ok = samples.tiny_relu(target=chip)
    assert lib.rknn_init(C.byref(h), ok, len(ok), 0, None) == SUCC
    assert emu.context_platform(h.value) == chip
    assert lib.rknn_destroy(h.value) == SUCC
    other = "RK3576" if chip != "RK3576" else "RK3588"
    bad = samples.tiny_relu(target=other)
    assert lib.rknn_init(C.byref(h), bad, len(bad), 0, None) == TARGET_PLATFORM_UNMATCH


def test_no_chip_chosen_plays_the_models(emu, monkeypatch):
    """Neither the control nor RKNN_EMU_PLATFORM chose a chip: rknn_init plays the chip a
    model was built for (issue 39, item 5); the default (RK3588) stays what the controls
    answer, and a chosen chip refuses the model again."""
    monkeypatch.delenv("RKNN_EMU_PLATFORM", raising=False)
    lib = api()
    h = C.c_uint64()
    for chip in sorted(CHIPS):
        m = samples.tiny_relu(target=chip)
        emu.set_platform(None)
        assert lib.rknn_init(C.byref(h), m, len(m), 0, None) == SUCC, chip
        assert emu.context_platform(h.value) == chip and emu.platform == "RK3588"
        assert lib.rknn_destroy(h.value) == SUCC
        other = "RK3576" if chip != "RK3576" else "RK3588"
        emu.set_platform(other)
        assert lib.rknn_init(C.byref(h), m, len(m), 0, None) == TARGET_PLATFORM_UNMATCH, chip
    emu.set_platform(None)
    monkeypatch.setenv("RKNN_EMU_PLATFORM", "RK3588")
    m = samples.tiny_relu(target="RK3566")
    assert lib.rknn_init(C.byref(h), m, len(m), 0, None) == TARGET_PLATFORM_UNMATCH


def test_rk3566_model_runs_on_rk3568(emu, make_ctx):
    c = make_ctx(samples.tiny_relu(target="RK3566"), platform="RK3568")
    c.inputs_set([np.float32([[-1, 2]])])
    c.run()
    assert c.outputs_get()[0].tolist() == [[0, 2]]


def test_platform_from_env(emu):
    import subprocess
    import sys
    code = (
        "import ctypes, sys\n"
        "sys.path.insert(0, %r)\n"
        "from emu_capi import api, samples, ctl\n"
        "lib = api(); h = ctypes.c_uint64()\n"
        "m = samples.tiny_relu(target='RV1106')\n"
        "print(lib.rknn_init(ctypes.byref(h), m, len(m), 0, None), ctl().context_platform(h.value))\n"
        "m = samples.tiny_relu(target='RK3588')\n"
        "print(lib.rknn_init(ctypes.byref(h), m, len(m), 0, None))\n"
    ) % os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, RKNN_EMU_PLATFORM="RV1106", RKNN_LOG_LEVEL="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "RV1106", str(TARGET_PLATFORM_UNMATCH)]
    assert "E RKNN:" in out.stderr
    env["RKNN_EMU_PLATFORM"] = "NOPE"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.split()[0] == str(DEVICE_UNAVAILABLE)


SUPPORT = {   # function -> families without it (Table 3-1)
    "rknn_set_core_mask": {"RK356X", "RV1106", "RK2118"},
    "rknn_set_batch_core_num": {"RK356X", "RV1106", "RK2118"},
    "rknn_dup_context": {"RV1106", "RK2118"},
    "rknn_inputs_set": {"RV1106", "RK2118"},
    "rknn_outputs_get": {"RV1106", "RK2118"},
    "rknn_outputs_release": {"RV1106", "RK2118"},
    "rknn_set_input_shapes": {"RV1106", "RK2118"},
    "rknn_create_mem_from_fd": {"RK2118"},
    "rknn_wait": {"RK356X", "RK3588", "RV1106", "RK2118"},
}


@pytest.mark.parametrize("chip", ["RK3588", "RK3576", "RK3566", "RV1106", "RK2118"])
def test_function_support_table(emu, make_ctx, chip):
    c = make_ctx(samples.tiny_relu(target=chip), platform=chip)
    lib = api()
    fam = CHIPS[chip][0]
    x = np.float32([[1, 2]])
    calls = {
        "rknn_set_core_mask": lambda: lib.rknn_set_core_mask(c.h, 0),
        "rknn_set_batch_core_num": lambda: lib.rknn_set_batch_core_num(c.h, 1),
        "rknn_inputs_set": lambda: c.inputs_set_rc([x]),
        "rknn_set_input_shapes": lambda: lib.rknn_set_input_shapes(d.h, 1, C.byref(shape0)),
        "rknn_wait": lambda: lib.rknn_wait(c.h, None),
    }
    d = make_ctx(samples.dynamic(target=chip), platform=chip)   # shapes need a dynamic model
    shape0 = d.in_attr(0)
    shape0.dims[:4] = (1, 64, 64, 3)
    for fn, call in calls.items():
        rc = call()
        if fam in SUPPORT[fn]:
            # a single-core NPU answers core masks with -13, as boards do; the mini runtime
            # the general flow with -5 (cls_img_rv1106, librknnmrt 2.3.2: docs/abi-notes.md)
            assert rc == (TARGET_PLATFORM_UNMATCH if fn == "rknn_set_core_mask" and
                          fam == "RK356X" else PARAM_INVALID if fn == "rknn_inputs_set"
                          else FAIL), fn
        else:
            assert rc == SUCC, fn
    h2 = C.c_uint64()
    rc = lib.rknn_dup_context(C.byref(C.c_uint64(c.h)), C.byref(h2))
    assert (rc == FAIL) == (fam in SUPPORT["rknn_dup_context"])
    if rc == SUCC:
        assert lib.rknn_destroy(h2.value) == SUCC
    fd = os.memfd_create("t")
    os.ftruncate(fd, 64)
    m = lib.rknn_create_mem_from_fd(c.h, fd, None, 64, 0)
    assert bool(m) == (fam not in SUPPORT["rknn_create_mem_from_fd"])
    if m:
        assert lib.rknn_destroy_mem(c.h, m) == SUCC
    os.close(fd)
    assert not lib.rknn_create_mem_from_mb_blk(c.h, None, 0)


QUERY_ONLY_35 = {Q_PERF_DETAIL, Q_PERF_RUN, Q_INPUT_DYNAMIC_RANGE, Q_CURRENT_INPUT_ATTR,
                 Q_CURRENT_OUTPUT_ATTR, Q_CURRENT_NATIVE_INPUT_ATTR, Q_CURRENT_NATIVE_OUTPUT_ATTR}


@pytest.mark.parametrize("chip", ["RK3588", "RK3566", "RV1106", "RK2118"])
def test_query_support_table(emu, make_ctx, chip):
    c = make_ctx(samples.tiny_relu(target=chip), platform=chip, flags=FLAG_PERF)
    if CHIPS[chip][0] not in ("RV1106", "RK2118"):
        c.inputs_set([np.float32([[1, 2]])])
        c.run()
    small = CHIPS[chip][0] in ("RV1106", "RK2118")
    for cmd in range(18):
        rc, _ = c.query_rc(cmd)
        if cmd == Q_INPUT_DYNAMIC_RANGE and not small:
            assert rc == MODEL_INVALID, cmd          # a static model: boards refuse it
        elif cmd in QUERY_ONLY_35:
            # a command the chip lacks: -1 "unsupported cmd(N)!" (cls_img_rv1106, 2.3.2;
            # DEVICE_MEM_INFO on cls_img_rk3588, 1.6.0)
            assert rc == (FAIL if small else SUCC), cmd
        elif cmd == Q_DEVICE_MEM_INFO:
            assert rc == (SUCC if small else FAIL), cmd
        else:
            assert rc == SUCC, cmd
    buf = C.create_string_buffer(40000)
    for cmd in (18, 1000):
        assert api().rknn_query(c.h, cmd, buf, 376) == PARAM_INVALID
    # -1: -5 on the mini runtime, -1 (unsupported) on the glibc ones (oob runs of 2.3.2, 1.6.0)
    assert api().rknn_query(c.h, -1, buf, 376) == (PARAM_INVALID if small else FAIL)


def test_core_masks(emu, make_ctx):
    lib = api()
    c = make_ctx(samples.tiny_relu(target="RK3588"), platform="RK3588")
    for m in (0, 1, 2, 4, 3, 7, 0xFFFF):
        assert lib.rknn_set_core_mask(c.h, m) == SUCC, m
    for m in (5, 6, 8, 0x10000, -1):
        assert lib.rknn_set_core_mask(c.h, m) == PARAM_INVALID, m
    for n in (1, 2, 3):
        assert lib.rknn_set_batch_core_num(c.h, n) == SUCC
    for n in (0, 4, -1):
        assert lib.rknn_set_batch_core_num(c.h, n) == PARAM_INVALID
    c2 = make_ctx(samples.tiny_relu(target="RK3576"), platform="RK3576")
    for m in (0, 1, 2, 3, 0xFFFF):
        assert lib.rknn_set_core_mask(c2.h, m) == SUCC, m
    for m in (4, 7, 5):
        assert lib.rknn_set_core_mask(c2.h, m) == PARAM_INVALID, m
    assert lib.rknn_set_batch_core_num(c2.h, 3) == PARAM_INVALID


# ---- queries ---------------------------------------------------------------------------------

def test_query_wrong_size_and_index(emu, make_ctx):
    c = make_ctx(samples.multi_io())
    for cmd, st in QUERY_STRUCT.items():
        n = C.sizeof(st)
        for bad in (0, n - 1):
            # a command the chip lacks is refused first (-1), as 1.6.0 refuses
            # DEVICE_MEM_INFO on RK3588 whatever the size
            want = FAIL if cmd == Q_DEVICE_MEM_INFO else PARAM_INVALID
            assert c.query_rc(cmd, size=bad)[0] == want, (cmd, bad)
        # a larger buffer is accepted (the boards' check is "<"), except where the query
        # itself is refused (a static model's shape sets)
        rc = c.query_rc(cmd, size=n + 1)[0]
        assert rc in ((MODEL_INVALID,) if cmd == Q_INPUT_DYNAMIC_RANGE else
                      (SUCC, FAIL, PARAM_INVALID)), (cmd, rc)   # DEVICE_MEM_INFO: not here
    assert c.query_rc(Q_INPUT_ATTR, index=3)[0] == PARAM_INVALID
    assert c.query_rc(Q_OUTPUT_ATTR, index=4)[0] == PARAM_INVALID
    assert c.query_rc(Q_NATIVE_OUTPUT_ATTR, index=99)[0] == PARAM_INVALID
    assert c.query_rc(Q_INPUT_DYNAMIC_RANGE, index=3)[0] == PARAM_INVALID
    assert api().rknn_query(c.h, Q_IN_OUT_NUM, None, 8) == PARAM_INVALID


def test_query_basic(emu, make_ctx):
    c = make_ctx(samples.multi_io())
    assert (c.n_in, c.n_out) == (3, 4)
    v = c.query(Q_SDK_VERSION)
    assert v.api_version.decode().startswith("2.5.0 (rknnx-emulator")
    assert v.drv_version.decode() == "0.9.8"
    assert c.query(Q_CUSTOM_STRING).string == b"rknnx sample: multi_io"
    a = c.in_attr(0)
    assert (a.name, a.shape, a.fmt, a.type, a.qnt_type) == (b"image", (1, 32, 32, 3), NHWC, I8, 2)
    assert a.n_elems == 32 * 32 * 3 and a.size == a.n_elems
    assert a.w_stride == 32 and a.size_with_stride == a.size
    f = c.in_attr(1)
    assert (f.shape, f.fmt, f.type, f.size, f.size_with_stride) == ((1, 64), UNDEFINED, F16, 128, 128)
    o = c.out_attr(0)
    assert (o.name, o.shape, o.fmt, o.type) == (b"conv_out", (1, 8, 16, 16), NCHW, I8)
    o2 = c.out_attr(2)
    assert (o2.name, o2.shape, o2.type) == (b"seq_out", (1, 16, 8), F32)
    # static model: CURRENT_* equal the normal attrs; its shape sets are refused (boards)
    assert bytes(c.query(Q_CURRENT_INPUT_ATTR, 0)) == bytes(a)
    assert c.query_rc(Q_INPUT_DYNAMIC_RANGE, 0)[0] == MODEL_INVALID


def test_query_mem_size(emu, make_ctx):
    c = make_ctx(samples.classifier(), platform="RK3588")
    m = c.query(Q_MEM_SIZE)
    assert m.total_weight_size > 16000 and m.total_internal_size > 0
    assert m.total_dma_allocated_size >= m.total_weight_size + m.total_internal_size
    assert m.total_sram_size == 956 * 1024 and 0 < m.free_sram_size <= m.total_sram_size
    c2 = make_ctx(samples.classifier(target="RK3566"), platform="RK3566")
    m2 = c2.query(Q_MEM_SIZE)
    assert m2.total_weight_size == m.total_weight_size and m2.total_sram_size == 0


def test_perf_queries(emu, make_ctx):
    c = make_ctx(samples.tiny_int8_add(), flags=FLAG_PERF)
    assert c.query_rc(Q_PERF_RUN)[0] == FAIL          # before any run
    assert c.query_rc(Q_PERF_DETAIL)[0] == FAIL
    c.inputs_set([np.zeros((1, 4, 8, 8), np.float32)] * 2)
    emu.set_npu_time_us(2000)
    c.run()
    assert c.query(Q_PERF_RUN).run_duration >= 2000
    d = c.query(Q_PERF_DETAIL)
    text = C.string_at(d.perf_data, d.data_len).decode()
    assert d.data_len == len(text)
    assert "Time(us)" in text and "add" in text and "relu" in text and "transpose" in text
    assert "Simulated NPU Time(us): 2000" in text
    plain = make_ctx(samples.tiny_int8_add())
    plain.inputs_set([np.zeros((1, 4, 8, 8), np.float32)] * 2)
    plain.run()
    # without RKNN_FLAG_COLLECT_PERF_MASK: success, with a string saying why there is no
    # table (the PERF_DETAIL section at the end of this file)
    rc, d = plain.query_rc(Q_PERF_DETAIL)
    assert rc == SUCC and b"not collected" in C.string_at(d.perf_data, d.data_len)
    assert plain.query_rc(Q_PERF_RUN)[0] == SUCC


def test_collect_model_info_only(emu, make_ctx):
    c = make_ctx(samples.classifier(), flags=FLAG_INFO_ONLY)
    m = c.query(Q_MEM_SIZE)
    full = make_ctx(samples.classifier()).query(Q_MEM_SIZE)
    assert (m.total_weight_size, m.total_internal_size) == (full.total_weight_size,
                                                            full.total_internal_size)
    assert c.query_rc(Q_INPUT_ATTR)[0] == FAIL
    assert c.run_rc() == FAIL
    assert c.inputs_set_rc([np.zeros((1, 224, 224, 3), np.uint8)]) == FAIL


@pytest.mark.parametrize("chip", ["RV1106", "RK2118"])
def test_device_mem_info(emu, make_ctx, chip):
    model = samples.tiny_relu(target=chip)
    c = make_ctx(model, platform=chip)
    m = c.query(Q_DEVICE_MEM_INFO)
    assert m.size == len(model) and m.fd >= 0 and m.phys_addr and m.virt_addr
    assert C.string_at(m.virt_addr, m.size) == model


# ---- native layouts --------------------------------------------------------------------------

def _w_align(chip, dtype):
    """The vendor's NHWC row alignment: the input type's C2 (tiny_rk3588_i8 W 8 -> 16,
    tiny_rk3566_i8 8 -> 8, dual_residual_custom RK3566 float16 10 -> 12; librknnrt 1.5.2
    and 1.6.0), 16 pixels on the mini runtime (tiny_rv1106_i8, librknnmrt 2.3.2)."""
    fam, _, c2i8, c2f16, walign = CHIPS[chip]
    if fam in ("RV1106", "RK2118"):
        return walign
    return c2i8 if dtype == "int8" else c2f16


@pytest.mark.parametrize("chip", ["RK3588", "RK3566", "RV1106"])
@pytest.mark.parametrize("dtype", ["int8", "float16"])
def test_native_attrs(emu, make_ctx, chip, dtype):
    fam, _, c2i8, c2f16, _ = CHIPS[chip]
    mini = fam in ("RV1106", "RK2118")
    C2 = c2i8 if dtype == "int8" else c2f16
    es = 1 if dtype == "int8" else 2
    c = make_ctx(odd_model(chip, c=5, w=30, dtype=dtype), platform=chip)
    walign = _w_align(chip, dtype)
    ws = -(-30 // walign) * walign
    Cp = -(-5 // C2) * C2
    a = c.in_attr(0)
    assert a.shape == (1, 6, 30, 5) and a.fmt == NHWC and a.w_stride == ws
    assert a.size == 6 * 30 * 5 * es and a.size_with_stride == 6 * ws * Cp * es
    n = c.in_attr(0, Q_NATIVE_INPUT_ATTR)
    C1 = -(-5 // C2)
    assert n.fmt == NC1HWC2 and n.shape == (1, C1, 6, 30, C2) and n.n_dims == 5
    assert n.size_with_stride == 6 * 30 * C1 * C2 * es and n.size == a.size
    nh = c.in_attr(0, Q_NATIVE_NHWC_INPUT_ATTR)
    assert nh.fmt == NHWC and nh.shape == (1, 6, 30, 5) and nh.w_stride == ws
    assert nh.size_with_stride == 6 * ws * Cp * es
    # the vendor's output views (docs/abi-notes.md, "The vendor runtimes' answers"): OUTPUT_ATTR
    # asks for the blocked buffer, rows aligned to C2 (yolo_heads_rk3588 [1,255,8,8]:
    # 16,320 bytes, 32,768 with stride, librknnrt 1.6.0; the mini runtime: size,
    # cls_img_rv1106, librknnmrt 2.3.2)
    o = c.out_attr(0)
    blocked = C1 * 6 * (-(-30 // C2) * C2) * C2 * es
    assert o.fmt == NCHW and o.shape == (1, 5, 6, 30)
    assert o.size_with_stride == (o.size if mini else blocked)
    # NATIVE_OUTPUT_ATTR counts its blocked shape, w_stride 0 (cls_img_rk3588 [1,4,1,1,16]:
    # n_elems 64, 1.6.0) or W on the mini runtime (cls_img_rv1106, 2.3.2)
    on = c.out_attr(0, Q_NATIVE_OUTPUT_ATTR)
    assert on.fmt == NC1HWC2 and on.shape == (1, C1, 6, 30, C2)
    assert on.n_elems == C1 * 6 * 30 * C2 and on.size == on.n_elems * es
    assert on.size_with_stride == on.size and on.w_stride == (30 if mini else 0)
    # NATIVE_NHWC_OUTPUT_ATTR pads C in its dims on RK3566 only (cls_img_rk3566 [1,32,32,8]
    # for 5 channels; cls_img_rk3588 [1,32,32,5]; 1.6.0) and asks for align(size, C2)
    # (cls_img_rk3588 [1,1,1,5]: 16), the NC1HWC2 bytes on the mini runtime
    # (cls_img_rv1106 [1,32,32,5]: 16,384, 2.3.2)
    oh = c.out_attr(0, Q_NATIVE_NHWC_OUTPUT_ATTR)
    Cn = Cp if chip == "RK3566" else 5
    assert oh.fmt == NHWC and oh.shape == (1, 6, 30, Cn) and oh.w_stride == 0
    assert oh.n_elems == 6 * 30 * Cn and oh.size == oh.n_elems * es
    assert oh.size_with_stride == (on.size if mini else -(-oh.size // C2) * C2)
    # the point of the exercise: strides differ from the packed sizes
    assert ws != 30 and Cp != 5


@pytest.mark.parametrize("chip", ["RK3588", "RK3566", "RV1106"])
def test_native_attrs_three_channels(emu, make_ctx, chip):
    c = make_ctx(img_model(chip, w=30, c=3), platform=chip)
    walign = _w_align(chip, "int8")
    ws = -(-30 // walign) * walign
    n = c.in_attr(0, Q_NATIVE_INPUT_ATTR)
    assert n.fmt == NHWC and n.shape == (1, 4, 30, 3) and n.w_stride == ws
    assert n.size_with_stride == 4 * ws * 3


def test_native_query_on_dynamic_model(emu, make_ctx):
    # the native queries answer on a dynamic model (with its largest shape:
    # tests/emulator/test_dynamic_shape_attrs.py)
    c = make_ctx(samples.dynamic())
    assert c.query_rc(Q_NATIVE_INPUT_ATTR)[0] == SUCC
    # the CURRENT_ forms once a shape set is chosen (refused before, as on boards)
    assert c.query_rc(Q_CURRENT_NATIVE_INPUT_ATTR)[0] == FAIL
    a = c.in_attr(0)
    assert api().rknn_set_input_shapes(c.h, 1, C.byref(a)) == SUCC
    assert c.query_rc(Q_CURRENT_NATIVE_INPUT_ATTR)[0] == SUCC
    assert c.query_rc(Q_CURRENT_NATIVE_OUTPUT_ATTR)[0] == SUCC


# ---- SDK_VERSION: the strings' format --------------------------------------------------------
# RKNN_QUERY_SDK_VERSION: both strings start with "X.Y.Z" and have no other dot, since
# clients split them on "." into exactly three pieces (RKNNLite does); the emulator's
# identity stands in the parentheses of api_version, where boards write the build's
# hash@time; drv_version is a plain "X.Y.Z" as on boards (docs/abi-notes.md).

@pytest.mark.parametrize("chip", ["RK3588", "RK3566", "RV1106"])
def test_version_strings_split_into_three(emu, make_ctx, chip):
    v = make_ctx(samples.tiny_int8_add(target=chip), platform=chip).query(Q_SDK_VERSION)
    api_v, drv_v = v.api_version.decode(), v.drv_version.decode()
    assert re.match(r"\d+\.\d+\.\d+ \(", api_v), api_v
    assert re.fullmatch(r"\d+\.\d+\.\d+", drv_v), drv_v
    for s in (api_v, drv_v):
        major, minor, patch = s.split(".")          # exactly three pieces
        assert major.isdigit() and minor.isdigit() and patch.split(" ")[0].isdigit()
    assert api_v.startswith("2.5.0 (") and "rknnx-emulator" in api_v


# ---- PERF_DETAIL without RKNN_FLAG_COLLECT_PERF_MASK -----------------------------------------
# RKNN_QUERY_PERF_DETAIL on a context created without RKNN_FLAG_COLLECT_PERF_MASK
# succeeds (the vendor's custom-op example makes that query with flags 0 and exits on
# failure) with a runtime-owned string saying per-layer timing was not collected; with the
# flag, the operator table comes after a run as before.

def perf_detail(c):
    rc, d = c.query_rc(Q_PERF_DETAIL)
    return rc, (C.string_at(d.perf_data, d.data_len).decode() if rc == SUCC else None)


def test_perf_detail_without_flag_before_and_after_a_run(emu, make_ctx):
    c = make_ctx(samples.tiny_int8_add())
    for _ in range(2):
        rc, text = perf_detail(c)
        assert rc == SUCC
        assert "per-layer timing was not collected" in text
        assert "RKNN_FLAG_COLLECT_PERF_MASK" in text
        c.inputs_set([np.zeros((1, 4, 8, 8), np.float32)] * 2)
        c.run()


def test_perf_detail_with_flag_unchanged(emu, make_ctx):
    c = make_ctx(samples.tiny_int8_add(), flags=FLAG_PERF)
    assert perf_detail(c)[0] == FAIL                 # no table before a run
    c.inputs_set([np.zeros((1, 4, 8, 8), np.float32)] * 2)
    c.run()
    rc, text = perf_detail(c)
    assert rc == SUCC and "Time(us)" in text and "not collected" not in text
