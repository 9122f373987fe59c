"""Every vendor status reaches Python as the class of the error table, naming the C
function (the emulator injects it on the Nth call); failed destroys can be retried; and
bad arguments raise before C is called (an armed injection that never fires proves it),
with messages that say what was expected."""

from __future__ import annotations

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import Input, MemSyncMode, QueryCmd, TensorFormat, TensorType
from rknnx import errors as E

CODES = sorted(E.ERROR_TABLE)            # -14 .. -1


def _general(track):
    ctx = track.model("tiny_int8_add")
    xs = [np.zeros(a.dims, np.uint8) for a in ctx.input_attrs]
    return ctx, xs


@pytest.mark.parametrize("code", CODES + [-99])
def test_every_status_becomes_its_class(track, emu, code):
    ctx, xs = _general(track)
    ctx.inputs_set(xs)
    emu.inject_error("rknn_run", 1, code)
    with pytest.raises(rknnx.RKNNError) as ei:
        ctx.run()
    err = ei.value
    assert type(err) is E.ERROR_TABLE.get(code, rknnx.RKNNError)
    assert err.code == code and err.func == "rknn_run"
    assert f"rknn_run failed: {E.STATUS_NAMES.get(code, 'RKNN_ERR_UNKNOWN')} ({code})" == str(err)
    ctx.run()                                            # one-shot: the next run works


# Each call with the function it reaches; all through the same check().
CALLS = {
    "rknn_query": lambda c, t, xs: c.query(QueryCmd.SDK_VERSION),
    "rknn_inputs_set": lambda c, t, xs: c.inputs_set(xs),
    "rknn_run": lambda c, t, xs: c.run(),
    "rknn_wait": lambda c, t, xs: c.wait(),
    "rknn_outputs_get": lambda c, t, xs: c.outputs_get(),
    "rknn_set_core_mask": lambda c, t, xs: c.set_core_mask(1),
    "rknn_set_batch_core_num": lambda c, t, xs: c.set_batch_core_num(1),
    "rknn_dup_context": lambda c, t, xs: c.dup(),
    "rknn_set_input_shapes": lambda c, t, xs: c.set_input_shapes(c.input_attrs),
    "rknn_mem_sync": lambda c, t, xs: t.mem(c.create_mem(8)).sync(MemSyncMode.TO_DEVICE),
}


@pytest.mark.parametrize("fn", sorted(CALLS))
def test_each_function_reports_its_name(track, emu, fn):
    ctx, xs = _general(track)
    ctx.inputs_set(xs)
    ctx.run()
    emu.inject_error(fn, 1, -8)
    with pytest.raises(E.InputInvalidError) as ei:
        CALLS[fn](ctx, track, xs)
    assert ei.value.func == fn and isinstance(ei.value, ValueError)
    assert emu.pending_injections == 0


def test_init_status(track, bh, emu):
    emu.inject_error("rknn_init", 1, -3)
    with pytest.raises(E.DeviceUnavailableError) as ei:
        track.model("tiny_relu")
    assert isinstance(ei.value, OSError) and ei.value.func == "rknn_init"
    assert rknnx._core.live_contexts() == 0


def test_set_mem_statuses(track, emu):
    ctx = track.model("tiny_relu")
    m = track.mem(ctx.create_mem(64))
    for fn, call in [("rknn_set_io_mem", lambda: ctx.set_io_mem(m, ctx.input_attrs[0])),
                     ("rknn_set_weight_mem", lambda: ctx.set_weight_mem(m)),
                     ("rknn_set_internal_mem", lambda: ctx.set_internal_mem(m))]:
        emu.inject_error(fn, 1, -4)
        with pytest.raises(E.OutOfMemoryError) as ei:
            call()
        assert ei.value.func == fn and isinstance(ei.value, MemoryError)
    assert ctx.bindings == {}                         # nothing bound by a failed call
    assert ctx.flow == "none"


def test_failed_destroys_can_be_retried(track, bh, emu):
    ctx = rknnx.lowlevel.Context(bh.model_bytes("tiny_relu"))
    mem = ctx.create_mem(8)
    emu.inject_error("rknn_destroy_mem", 1, -7)
    with pytest.raises(E.ContextInvalidError):
        mem.close()
    assert not mem.closed
    mem.close()
    assert mem.closed
    ctx.inputs_set([np.float32([[1, 2]])])
    ctx.run()
    outs = ctx.outputs_get()
    emu.inject_error("rknn_outputs_release", 1, -1)
    with pytest.raises(E.RKNNFailError):
        outs.release()
    assert not outs.released
    outs.release()
    emu.inject_error("rknn_destroy", 1, -2)
    with pytest.raises(E.RKNNTimeoutError) as ei:
        ctx.close()
    assert isinstance(ei.value, TimeoutError) and not ctx.closed
    ctx.close()
    assert ctx.closed and bh.live(emu) == {"live_contexts": 0, "live_mems": 0,
                                           "live_output_buffers": 0}


def test_missing_symbol_is_not_supported(emu):
    # every entry point goes through require(); the emulator provides them all
    for name in rknnx.lowlevel.api_function_names():
        rknnx._core._require(name)
    with pytest.raises(ValueError, match="is not an RKNN API function"):
        rknnx._core._require("rknn_nope")


# ---- bad arguments, before C -------------------------------------------------------------------
def _armed(emu, fn):
    emu.clear_injections()
    emu.inject_error(fn, 1, -1)


@pytest.mark.parametrize("inputs, exc, msg", [
    ([], ValueError, "at least one input"),
    ("x" * 3, TypeError, r"input 0 \('a'\): expected a buffer"),
    ([np.zeros((1, 4, 8, 8), np.uint8)] * 3, ValueError, "3 inputs given; the model has 2"),
    ([Input(np.zeros((1, 4, 8, 8), np.uint8), index=5)], IndexError,
     r"input index 5 out of range: the model has 2 input\(s\)"),
    ([np.zeros((1, 4, 8, 8), np.uint8), Input(np.zeros((1, 4, 8, 8), np.uint8), index=0)],
     ValueError, "input index 0 given twice"),
    ([np.zeros((1, 4, 8, 7), np.uint8)], ValueError,
     r"input 0 \('a'\) expects 256 bytes \(\(1, 4, 8, 8\) UINT8 NHWC\), got 224"),
    ([np.zeros((1, 8, 4, 8), np.uint8)], ValueError,
     r"input 0 \('a'\) expects shape \(1, 4, 8, 8\) \(NHWC\), got \(1, 8, 4, 8\)"),
    ([np.zeros((1, 4, 8, 8), np.float64)], TypeError, "has no RKNN tensor type; expected uint8"),
    ([np.zeros((1, 4, 8, 8), np.int32)], ValueError, "cannot convert from INT32; expected uint8"),
    ([np.zeros((1, 4, 8, 16), np.uint8)[..., ::2]], ValueError, "must be a C-contiguous buffer"),
    ([Input(np.zeros((1, 4, 8, 8), np.uint8), pass_through=True)], ValueError,
     "pass_through needs data in the model type INT8, got UINT8"),
    ([Input(np.zeros(10, np.int8), pass_through=True)], ValueError,
     r"pass_through data of 10 bytes is too small: need \d+ bytes \(INT8 in the native NHWC"),
    ([Input(np.zeros((1, 4, 8, 8), np.uint8), fmt=9)], ValueError, "fmt 9 is not a TensorFormat"),
    ([Input(np.zeros((1, 4, 8, 8), np.uint8), fmt=TensorFormat.NC1HWC2)], ValueError,
     "NC1HWC2 data needs pass_through=True"),
    ([Input(np.zeros((1, 4, 8, 8), np.uint8), type=77)], ValueError, "type 77 is not a TensorType"),
    ([Input(None)], TypeError, "buf is None"),
])
def test_inputs_set_bad_arguments(track, emu, inputs, exc, msg):
    ctx, _ = _general(track)
    _armed(emu, "rknn_inputs_set")
    with pytest.raises(exc, match=msg):
        ctx.inputs_set(inputs)
    assert emu.pending_injections == 1 and ctx.flow == "none"


def test_inputs_set_accepts_nchw_with_fmt_and_shape_without_batch(track, emu):
    ctx, xs = _general(track)
    ctx.inputs_set([Input(np.zeros((1, 8, 4, 8), np.uint8), fmt=TensorFormat.NCHW),
                    np.zeros((4, 8, 8), np.uint8)])                    # leading 1 may be left out


@pytest.mark.parametrize("out, exc, msg", [
    ([np.zeros((1, 8, 4, 8), np.float32)] * 2, ValueError, "one buffer per output: expected 1, got 2"),
    ([np.zeros((1, 8, 4, 8), np.float64)], ValueError, "must be float32 for want_float=True"),
    ([np.zeros((1, 8, 4, 7), np.float32)], ValueError, r"needs exactly 1024 bytes \(\(1, 8, 4, 8\) float32\), got 896"),
    ([np.zeros((1, 4, 8, 8), np.float32)], ValueError, r"must have shape \(1, 8, 4, 8\), got \(1, 4, 8, 8\)"),
    ([np.zeros((1, 8, 4, 8), np.float32)[..., ::1].T], ValueError, "writable C-contiguous"),
    ([b"\0" * 1024], ValueError, "writable C-contiguous"),
    ([5], TypeError, "expected a writable buffer"),
])
def test_outputs_get_bad_out(track, emu, out, exc, msg):
    ctx, xs = _general(track)
    ctx.inputs_set(xs)
    ctx.run()
    _armed(emu, "rknn_outputs_get")
    with pytest.raises(exc, match=msg):
        ctx.outputs_get(want_float=True, out=out)
    assert emu.pending_injections == 1


def test_outputs_release_arguments(track, emu):
    ctx, xs = _general(track)
    other, _ = _general(track)
    ctx.inputs_set(xs)
    ctx.run()
    outs = ctx.outputs_get()
    with pytest.raises(TypeError, match="takes the Outputs returned by outputs_get"):
        ctx.outputs_release([np.zeros(3)])
    with pytest.raises(ValueError, match="belong to another Context"):
        other.outputs_release(outs)
    ctx.outputs_release(outs)
    ctx.outputs_release(outs)                         # idempotent


def test_tensor_attr_field_validation(emu):
    a = rknnx.lowlevel.TensorAttr()
    for field, bad, exc, msg in [
        ("dims", [1] * 17, ValueError, "at most 16"),
        ("dims", [-1], ValueError, "0..4294967295"),
        ("index", "0", TypeError, "index must be an integer"),
        ("name", "x" * 256, ValueError, "at most 255 UTF-8 bytes"),
        ("fmt", 7, ValueError, "fmt must be a TensorFormat"),
        ("type", 99, ValueError, "type must be a TensorType"),
        ("qnt_type", 5, ValueError, "qnt_type must be a QntType"),
        ("fl", 300, ValueError, "fl must fit an int8"),
        ("n_dims", 17, ValueError, "n_dims must be at most 16"),
    ]:
        with pytest.raises(exc, match=msg):
            setattr(a, field, bad)
    with pytest.raises(TypeError, match="has no field 'colour'"):
        rknnx.lowlevel.TensorAttr(colour=3)
    assert a == rknnx.lowlevel.TensorAttr()                    # failed sets changed nothing


def test_messages_name_types(emu):
    with pytest.raises(TypeError, match="no numpy dtype"):
        rknnx.lowlevel.dtype_of(TensorType.INT4)
    with pytest.raises(ValueError, match="is not a tensor type"):
        rknnx.lowlevel.dtype_of(42)
    with pytest.raises(TypeError, match="float64 has no RKNN tensor type"):
        rknnx.lowlevel.type_of_dtype(np.float64)


# ---- a runtime without some entry points ---------------------------------------------------------
_PARTIAL_SRC = r"""
#include <string.h>
#include "rknn_api.h"
/* an old runtime: init/destroy/query only, with one 1-input 1-output model */
int rknn_init(rknn_context *c, void *m, uint32_t s, uint32_t f, rknn_init_extend *e)
{ (void)m; (void)s; (void)f; (void)e; *c = 42; return 0; }
int rknn_destroy(rknn_context c) { (void)c; return 0; }
int rknn_query(rknn_context c, rknn_query_cmd q, void *info, uint32_t size)
{
    (void)c;
    if (q == RKNN_QUERY_IN_OUT_NUM) {
        rknn_input_output_num *n = info; n->n_input = 1; n->n_output = 1; return 0;
    }
    if (q == RKNN_QUERY_INPUT_ATTR || q == RKNN_QUERY_OUTPUT_ATTR) {
        rknn_tensor_attr *a = info; uint32_t i = a->index;
        memset(a, 0, size); a->index = i; a->n_dims = 1; a->dims[0] = 2; a->n_elems = 2;
        a->size = 8; a->type = RKNN_TENSOR_FLOAT32; a->fmt = RKNN_TENSOR_UNDEFINED;
        strcpy(a->name, q == RKNN_QUERY_INPUT_ATTR ? "x" : "y");
        return 0;
    }
    return RKNN_ERR_PARAM_INVALID;
}
"""


def test_missing_symbols_raise_not_supported_when_called(tmp_path):
    import textwrap

    from helpers import compile_c, run_python

    src = tmp_path / "old.c"
    src.write_text(_PARTIAL_SRC)
    lib = compile_c([src], tmp_path / "librknnrt.so", shared=True)
    code = textwrap.dedent(f"""
        import numpy as np, rknnx
        rknnx.load_runtime({str(lib)!r})
        ctx = rknnx.lowlevel.Context(b"model")
        assert ctx.n_input == 1 and ctx.input_attrs[0].name == "x"
        calls = {{
            "rknn_run": lambda: ctx.run(),
            "rknn_inputs_set": lambda: ctx.inputs_set([np.float32([1, 2])]),
            "rknn_outputs_get": lambda: ctx.outputs_get(),
            "rknn_create_mem": lambda: ctx.create_mem(8),
            "rknn_create_mem2": lambda: ctx.create_mem2(8),
            "rknn_set_core_mask": lambda: ctx.set_core_mask(0),
            "rknn_dup_context": lambda: ctx.dup(),
            "rknn_wait": lambda: ctx.wait(),
        }}
        for name, call in calls.items():
            try:
                call()
            except rknnx.NotSupportedError as e:
                assert isinstance(e, NotImplementedError) and e.func == name, (name, e)
                assert f"librknnrt at {lib} lacks {{name}}" in str(e), e
            else:
                raise AssertionError(name + " did not raise")
        try:
            rknnx.load_runtime("emulator")
        except RuntimeError as e:
            assert "1 context(s)" in str(e)
        else:
            raise AssertionError("switched the runtime under an open context")
        ctx.close()
        print(rknnx.load_runtime("emulator")["is_emulator"])
    """)
    proc = run_python(code, env={"RKNNX_RUNTIME": None})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


def test_context_free_mems_block_a_runtime_switch(track, emu, tmp_path):
    import textwrap

    from helpers import run_python

    proc = run_python(textwrap.dedent("""
        import rknnx
        rknnx.load_runtime("emulator")
        m = rknnx.lowlevel.create_mem2(64)
        try:
            rknnx.load_runtime("/nonexistent/librknnrt.so")
        except RuntimeError as e:
            assert "1 context-free TensorMem(s)" in str(e), e
        else:
            raise AssertionError("switched under a live mem")
        m.close()
        print("ok")
    """), env={"RKNNX_RUNTIME": None})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


# ---- argument checks before C: what was expected ---------------------------------------------
# Bad sizes, flags, fds and indices raise a clear Python exception that says what was
# expected.

def test_bad_arguments_raise_clear_errors(track, tmp_path):
    ctx = track.model("tiny_relu")
    x = np.ones((1, 2), np.float32)
    with pytest.raises(IndexError, match=f"input index {2**70} out of range"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, index=2**70)])
    with pytest.raises(TypeError, match="Input.type must be an int, got str"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, type="f")])
    with pytest.raises(TypeError, match="Input.fmt must be an int, got str"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, fmt="NHWC")])
    with pytest.raises(ValueError, match=r"timeout_ms must be 0..4294967295"):
        ctx.run(timeout_ms=2**40)
    with pytest.raises(ValueError, match=r"timeout_ms must be 0..4294967295"):
        ctx.wait(timeout_ms=-1)
    with pytest.raises(ValueError, match="flags must be a non-negative combination.*got -1"):
        rknnx.lowlevel.create_mem2(16, -1)
    with pytest.raises(TypeError, match="got bool"):
        ctx.create_mem(True)
    mem = track.mem(ctx.create_mem(16))
    with pytest.raises(TypeError, match="max_version must be a .major, minor. tuple"):
        mem.__dlpack__(max_version=())
    ctx.inputs_set([x])
    ctx.run()
    with pytest.raises(ValueError, match="needs exactly 8 bytes"):
        ctx.outputs_get(want_float=True, out=[np.empty(100, np.float32)])
    with pytest.raises(TypeError, match="out must be a sequence .list or tuple. of buffers"):
        ctx.outputs_get(want_float=True, out=np.empty((1, 2), np.float32))
    got = ctx.outputs_get(want_float=True, out=[np.empty((1, 2), np.float32)])
    np.testing.assert_array_equal(got[0], [[1, 1]])          # relu


def test_create_mem_from_fd_checks_the_file(track, tmp_path):
    import os

    ctx = track.model("tiny_relu")
    path = tmp_path / "data"
    path.write_bytes(b"\0" * 64)
    fd = os.open(path, os.O_RDWR)
    os.close(fd)
    with pytest.raises(ValueError, match=f"fd {fd} is not an open file descriptor"):
        ctx.create_mem_from_fd(fd, 16)
    with open(path, "r+b") as f:
        with pytest.raises(ValueError, match=r"offset \+ size \(60 \+ 16\) is beyond the end "
                                             r"of fd \d+ \(64 bytes\)"):
            ctx.create_mem_from_fd(f, 16, 60)
        m = track.mem(ctx.create_mem_from_fd(f, 16, 48))
        assert m.size == 16
        m.close()
