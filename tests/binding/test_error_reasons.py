"""The reason of a refused call reaches the exception: calls the chip lacks (Tables 3-1/3-2,
from rknnx.platforms) raise NotSupportedError naming the chip and the function before C;
unmappable fds, short pass_through data and an empty custom op type raise ValueError
saying what was expected."""

from __future__ import annotations

import os

import numpy as np
import pytest

import rknnx
from rknnx import errors as E


def test_general_flow_on_a_zero_copy_only_chip(track, emu):
    ctx = track.model("tiny_relu", "RV1106")
    assert ctx.chip == "RV1106"
    x = np.zeros(ctx.input_attrs[0].dims, np.float32)
    for call, fn in [(lambda: ctx.inputs_set([x]), "rknn_inputs_set"),
                     (lambda: ctx.outputs_get(), "rknn_outputs_get"),
                     (lambda: ctx.dup(), "rknn_dup_context"),
                     (lambda: ctx.set_input_shapes(ctx.input_attrs), "rknn_set_input_shapes")]:
        with pytest.raises(E.NotSupportedError,
                           match=rf"^{fn} is not supported on RV1106 \(the RV1106/RV1103/"
                                 r"RV1103B/RV1106B family has the zero-copy flow only") as ei:
            call()
        assert ei.value.func == fn and ei.value.code is None
    assert ctx.flow == "none"
    assert emu.counters()["live_contexts"] == 1          # no duplicate was made


def test_multi_core_calls_on_a_single_core_chip(track, emu):
    ctx = track.model("tiny_relu", "RK3566")
    for call, fn in [(lambda: ctx.set_core_mask(rknnx.lowlevel.CoreMask.CORE_0), "rknn_set_core_mask"),
                     (lambda: ctx.set_batch_core_num(2), "rknn_set_batch_core_num")]:
        with pytest.raises(E.NotSupportedError, match=rf"^{fn} is not supported on RK3566 "):
            call()


def test_matmul_on_a_chip_without_it(emu):
    emu.set_platform("RV1103")
    with pytest.raises(E.NotSupportedError,
                       match=r"^rknn_matmul_create is not supported on RV1103 ") as ei:
        rknnx.lowlevel.MatmulContext(4, 32, 32, rknnx.lowlevel.MatmulType.FLOAT16_MM_FLOAT16_TO_FLOAT32)
    assert ei.value.func == "rknn_matmul_create"
    assert emu.counters()["live_contexts"] == 0


def test_create_mem_from_fd_on_rk2118(track, emu):
    ctx = track.model("tiny_relu", "RK2118")
    fd = os.memfd_create("rknnx-test")
    try:
        os.ftruncate(fd, 4096)
        with pytest.raises(E.NotSupportedError,
                           match=r"^rknn_create_mem_from_fd is not supported on RK2118 "):
            ctx.create_mem_from_fd(fd, 64)
    finally:
        os.close(fd)


@pytest.mark.parametrize("kind", ["pipe", "null"])
def test_create_mem_from_fd_names_an_unmappable_fd(track, emu, kind):
    ctx = track.model("tiny_relu")
    if kind == "pipe":
        r, w = os.pipe()
        fds, fd, what = (r, w), r, r"a pipe \(FIFO\)"
    else:
        fd = os.open(os.devnull, os.O_RDWR)
        fds, what = (fd,), "the character device /dev/null"
    try:
        with pytest.raises(ValueError, match=rf"^create_mem_from_fd: fd {fd} is {what}, which "
                                             r"cannot be mapped as NPU memory; expected a "
                                             r"dma-buf, a memfd or a regular file$"):
            ctx.create_mem_from_fd(fd, 64)
    finally:
        for f in fds:
            os.close(f)
    assert emu.counters()["live_mems"] == 0


def test_pass_through_size_is_checked_against_the_native_attribute(track, emu):
    ctx = track.model("tiny_int8_add")
    a = ctx.input_attrs[0]                                  # NHWC [1,4,8,8] int8, C padded
    native = ctx.query(rknnx.lowlevel.QueryCmd.NATIVE_NHWC_INPUT_ATTR, 0)
    # rows of 16 pixels (int8's C2 on RK3588: tiny_rk3588_i8, librknnrt 1.6.0) of 16 channels
    assert a.size == 256 and native.size_with_stride == 4 * 16 * 16
    short = np.zeros(a.size, np.int8)
    with pytest.raises(ValueError, match=r"^input 0 \('a'\): pass_through data of 256 bytes is "
                                         r"too small: need 1024 bytes \(INT8 in the native NHWC "
                                         r"layout .*NATIVE_NHWC_INPUT_ATTR size_with_stride\)$"):
        ctx.inputs_set([rknnx.lowlevel.Input(short, pass_through=True), np.zeros(a.dims, np.int8)])
    # NC1HWC2: the blocked native size
    nc = ctx.query(rknnx.lowlevel.QueryCmd.NATIVE_INPUT_ATTR, 0)
    assert nc.fmt == rknnx.lowlevel.TensorFormat.NC1HWC2
    with pytest.raises(ValueError, match=rf"need {nc.size_with_stride} bytes \(INT8 in the "
                                         r"native NC1HWC2 layout"):
        ctx.inputs_set([rknnx.lowlevel.Input(np.zeros(nc.size_with_stride - 1, np.int8), pass_through=True,
                                    fmt=rknnx.lowlevel.TensorFormat.NC1HWC2)])
    # the right sizes are accepted by the runtime
    ctx.inputs_set([rknnx.lowlevel.Input(np.zeros(native.size_with_stride, np.int8), pass_through=True),
                    rknnx.lowlevel.Input(np.zeros(nc.size_with_stride, np.int8), pass_through=True,
                                fmt=rknnx.lowlevel.TensorFormat.NC1HWC2)])
    ctx.run()


def test_custom_op_with_an_empty_type():
    with pytest.raises(ValueError, match=r"^op_type must be a non-empty str .*got ''$"):
        rknnx.lowlevel.CustomOp("", compute=lambda *a: None)
    with pytest.raises(TypeError, match="op_type must be a non-empty str"):
        rknnx.lowlevel.CustomOp(None, compute=lambda *a: None)
