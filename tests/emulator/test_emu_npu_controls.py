"""The two NPU-side controls of the emulator (include/rknnx/rknn_emu.h), on its own models:
``rknn_emu_read_npu_input`` and ``rknn_emu_set_npu_output``, their contract (byte counts,
clearing, refusals) and their Python wrappers in ``rknnx.emulator.control``.  Their bytes
against the vendor's are in test_npu_bytes.py (own models) and test_vendor_judge.py
(stand-ins of the vendor's files)."""

from __future__ import annotations

import ctypes as C

import numpy as np
import pytest

from tests.emu_capi import (CTX_INVALID, I8, INPUT_INVALID, NC1HWC2, PARAM_INVALID,
                            Q_NATIVE_INPUT_ATTR, Q_NATIVE_OUTPUT_ATTR, api, ctl, emu, make_ctx,
                            samples)

__all__ = ["emu", "make_ctx"]


def _fns():
    lib = api()
    r, s = lib.rknn_emu_read_npu_input, lib.rknn_emu_set_npu_output
    r.restype, r.argtypes = C.c_int, [C.c_uint64, C.c_uint32, C.c_void_p, C.c_uint32]
    s.restype, s.argtypes = C.c_int, [C.c_uint64, C.c_uint32, C.c_void_p, C.c_uint32]
    return r, s


@pytest.mark.parametrize("lib_name", ["librknnrt.so", "librknnrt-1.5.2.so"])
def test_both_libraries_export_the_controls(lib_name):
    import pathlib
    lib = pathlib.Path(ctl().path).with_name(lib_name)
    if not lib.exists():
        pytest.skip(f"{lib_name} is not built here")
    L = C.CDLL(str(lib))
    assert hasattr(L, "rknn_emu_read_npu_input") and hasattr(L, "rknn_emu_set_npu_output")


def test_read_npu_input_counts_and_copies(emu, make_ctx):
    read, _ = _fns()
    ctx = make_ctx(samples.tiny_int8_add("RK3588"), platform="RK3588")
    probe = (C.c_uint8 * 65536)()
    assert read(ctx.h, 0, probe, 65536) == INPUT_INVALID     # nothing set yet
    xs = []
    for i in range(ctx.n_in):
        a = ctx.in_attr(i)
        xs.append(np.arange(a.n_elems, dtype=np.float32).reshape(tuple(a.dims[:a.n_dims])) % 7)
    ctx.inputs_set(xs)
    need = read(ctx.h, 0, None, 0)
    na = ctx.in_attr(0, Q_NATIVE_INPUT_ATTR)
    assert need == max(na.size, na.size_with_stride) and need > 0
    small = (C.c_uint8 * 1)(0xAB)
    assert read(ctx.h, 0, small, 1) == need and small[0] == 0xAB   # too small: count, no copy
    buf = (C.c_uint8 * need)()
    assert read(ctx.h, 0, buf, need) == need
    assert bytes(buf) == ctl().read_npu_input(ctx.h, 0)
    assert read(ctx.h, 5, buf, need) == PARAM_INVALID
    assert read(0xdead, 0, buf, need) == CTX_INVALID


def test_set_npu_output_replaces_then_clears(emu, make_ctx):
    _, setter = _fns()
    ctx = make_ctx(samples.tiny_int8_add("RK3588"), platform="RK3588")
    ctx.inputs_set([np.ones(tuple(ctx.in_attr(i).dims[:ctx.in_attr(i).n_dims]), np.float32)
                    for i in range(ctx.n_in)])
    ctx.run()
    computed = ctx.outputs_get(want_float=0)[0]
    na = ctx.out_attr(0, Q_NATIVE_OUTPUT_ATTR)
    assert na.type == I8 and na.fmt == NC1HWC2
    n = na.size_with_stride
    pat = ((np.arange(n) * 13) % 256 - 128).astype(np.int8)
    assert setter(ctx.h, 0, pat.ctypes.data, n - 1) == PARAM_INVALID   # shorter than native
    ctl().set_npu_output(ctx.h, 0, pat.tobytes() + b"\0" * 64)         # longer: its prefix
    ctx.run()
    got = ctx.outputs_get(want_float=0)[0]
    # NC1HWC2 [N, C1, H, W, C2] -> the logical NCHW output
    N, C1, H, W, C2 = na.dims[:5]
    a_out = ctx.out_attr(0)
    nchw = pat.reshape(N, C1, H, W, C2).transpose(0, 1, 4, 2, 3).reshape(N, C1 * C2, H, W)
    assert np.array_equal(got.reshape(N, -1, H, W), nchw[:, :a_out.dims[1]])
    ctl().set_npu_output(ctx.h, 0, b"")                              # size 0 clears
    ctx.run()
    assert np.array_equal(ctx.outputs_get(want_float=0)[0], computed)
    assert setter(ctx.h, 9, pat.ctypes.data, n) == PARAM_INVALID
    with pytest.raises(ValueError, match="status -5"):
        ctl().set_npu_output(ctx.h, 9, pat.tobytes())
