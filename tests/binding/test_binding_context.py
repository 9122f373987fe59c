"""Context: creation from every kind of model source, the init extend, every query
command and every configuration call, on the RK3588 / RK3566 / RV1106 personalities,
and the context's own lifetime (close, context manager, use after close)."""

from __future__ import annotations
import re

import os
import pickle

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import (Context, CoreMask, InitFlag, MatmulType, MemAllocFlag, QueryCmd,
                   TensorAttr, TensorFormat, TensorType)
from rknnx import errors as E
from rknnx import _core

# which family supports what (Tables 3-1 / 3-2, as the emulator personalities implement them)
HAS_GENERAL = {"RK3588": True, "RK3566": True, "RV1106": False}
HAS_DUP = {"RK3588": True, "RK3566": True, "RV1106": False}
HAS_CORE_MASK = {"RK3588": True, "RK3566": False, "RV1106": False}
HAS_PERF = {"RK3588": True, "RK3566": True, "RV1106": False}
HAS_DEVICE_MEM_INFO = {"RK3588": False, "RK3566": False, "RV1106": True}


# ---- creation ---------------------------------------------------------------------------------
def test_init_from_path_bytes_and_any_buffer(track, bh, emu, tmp_path):
    model = bh.model_bytes("tiny_relu")
    path = tmp_path / "m.rknn"
    path.write_bytes(model)
    sources = [str(path), path, model, bytearray(model), memoryview(model),
               np.frombuffer(model, np.uint8)]
    for src in sources:
        ctx = track.context(src)
        assert ctx.n_input == 1 and ctx.n_output == 1
        assert not ctx.closed and ctx.handle != 0 and ctx.flags == 0
        assert ctx.query(QueryCmd.CUSTOM_STRING) == "tiny_relu"


def test_init_errors_map_to_classes(track, bh, emu, tmp_path):
    with pytest.raises(E.ModelInvalidError) as ei:
        Context(b"not a model at all")
    assert ei.value.func == "rknn_init" and ei.value.code == -6
    # a path that is no file is said as Python says it, before rknn_init (issue 27)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Context(str(tmp_path / "missing.rknn"))
    emu.set_platform("RK3566")
    with pytest.raises(E.TargetPlatformUnmatchError):
        Context(bh.model_bytes("tiny_relu", "RK3588"))
    assert _core.live_contexts() == 0


@pytest.mark.parametrize("bad, exc, msg", [
    (b"", ValueError, "empty buffer would be read as a file path"),
    ("", ValueError, "empty or contains NUL"),
    ("a\0b", ValueError, "contains NUL"),
    (12, TypeError, "must be a path"),
    (None, TypeError, "needs a model"),
    (np.zeros((4, 4), np.uint8)[:, ::2], ValueError, "C-contiguous"),
])
def test_init_bad_arguments_raise_before_c(emu, bad, exc, msg):
    emu.reset_counters()
    with pytest.raises(exc, match=msg):
        Context(bad)
    assert emu.counters()["contexts_created"] == 0


def test_init_bad_flags_and_extend_arguments(track, bh, emu):
    m = bh.model_bytes("tiny_relu")
    with pytest.raises(ValueError, match="flags"):
        Context(m, -1)
    with pytest.raises(TypeError, match="share_weights_with must be a Context"):
        Context(m, share_weights_with=object())
    with pytest.raises(TypeError, match="model_mem must be a TensorMem"):
        Context(model_mem=b"x")
    closed = track.context(m)
    closed.close()
    with pytest.raises(ValueError, match="share_weights_with on closed Context"):
        Context(m, share_weights_with=closed)


def test_init_flags_are_kept(track, bh, emu):
    ctx = track.context(bh.model_bytes("tiny_relu"),
                        InitFlag.COLLECT_PERF_MASK | InitFlag.DISABLE_PROC_HIGH_PRIORITY)
    assert ctx.flags == InitFlag.COLLECT_PERF_MASK | InitFlag.DISABLE_PROC_HIGH_PRIORITY


def test_share_weights_with_another_context(track, bh, emu):
    m = bh.model_bytes("tiny_int8_add")
    owner = track.context(m)
    user = track.context(m, share_weights_with=owner)
    assert user.flags & InitFlag.SHARE_WEIGHT_MEM
    x = [np.ones(a.dims, np.uint8) for a in owner.input_attrs]
    for c in (owner, user):
        c.inputs_set(x)
        c.run()
    with owner.outputs_get() as a, user.outputs_get() as b:
        np.testing.assert_array_equal(np.asarray(a[0]), np.asarray(b[0]))
        del a, b
    # the owner of the weights cannot be closed under its borrower
    with pytest.raises(RuntimeError, match="lends its weights to 1 open Context"):
        owner.close()
    user.close()
    owner.close()


def test_model_buffer_zero_copy_from_a_tensor_mem(track, bh, emu):
    m = bh.model_bytes("tiny_relu")
    buf = track.mem(rknnx.lowlevel.create_mem2(len(m) + 64, MemAllocFlag.ALLOC_NO_CONTEXT))
    assert buf.context is None
    np.frombuffer(buf, np.uint8)[16:16 + len(m)] = np.frombuffer(m, np.uint8)
    ctx = track.context(None, model_mem=buf, model_offset=16, model_size=len(m))
    assert ctx.flags & InitFlag.MODEL_BUFFER_ZERO_COPY
    ctx.inputs_set([np.float32([[3, -3]])])
    ctx.run()
    with ctx.outputs_get(want_float=True) as o:
        assert np.asarray(o[0]).tolist() == [[3.0, 0.0]]
    # the model memory must outlive the context (vendor 4.1): closing it first is refused
    with pytest.raises(BufferError, match="model buffer of an open Context"):
        buf.close()
    d = ctx.dup()
    ctx.close()
    with pytest.raises(BufferError, match="model buffer"):
        buf.close()                                       # the dup still reads it
    d.close()
    buf.close()
    with pytest.raises(ValueError, match="model_size must be"):
        Context(model_mem=track.mem(rknnx.lowlevel.create_mem2(64)), model_size=65)
    with pytest.raises(ValueError, match="either model or model_mem"):
        Context(m, model_mem=track.mems[-1])


def test_collect_model_info_only(track, bh, emu):
    ctx = track.context(bh.model_bytes("tiny_int8_add"),
                        InitFlag.COLLECT_MODEL_INFO_ONLY | InitFlag.MEM_ALLOC_OUTSIDE)
    ms = ctx.query(QueryCmd.MEM_SIZE)
    assert isinstance(ms, rknnx.lowlevel.MemSize) and ms.total_internal_size > 0


# ---- lifetime -------------------------------------------------------------------------------
def test_close_is_idempotent_and_use_after_close_raises(track, bh, emu):
    ctx = track.context(bh.model_bytes("tiny_relu"))
    with ctx as c:
        assert c is ctx
    assert ctx.closed and ctx.handle == 0
    ctx.close()
    ctx.close()
    assert repr(ctx) == "<Context closed>"
    calls = {
        "run": lambda: ctx.run(),
        "wait": lambda: ctx.wait(),
        "query": lambda: ctx.query(QueryCmd.SDK_VERSION),
        "inputs_set": lambda: ctx.inputs_set([np.float32([[1, 2]])]),
        "outputs_get": lambda: ctx.outputs_get(),
        "set_io_mem": lambda: ctx.set_io_mem(track.mems[0], TensorAttr()),
        "set_weight_mem": lambda: ctx.set_weight_mem(track.mems[0]),
        "set_internal_mem": lambda: ctx.set_internal_mem(track.mems[0]),
        "set_core_mask": lambda: ctx.set_core_mask(CoreMask.AUTO),
        "set_batch_core_num": lambda: ctx.set_batch_core_num(1),
        "set_input_shapes": lambda: ctx.set_input_shapes([]),
        "dup": lambda: ctx.dup(),
        "create_mem": lambda: ctx.create_mem(16),
        "create_mem2": lambda: ctx.create_mem2(16),
        "create_mem_from_fd": lambda: ctx.create_mem_from_fd(0, 16),
        "create_mem_from_phys": lambda: ctx.create_mem_from_phys(0x1000, 16),
        "create_mem_from_mb_blk": lambda: ctx.create_mem_from_mb_blk(0x1000),
        "n_input": lambda: ctx.n_input,
        "input_attrs": lambda: ctx.input_attrs,
        "__enter__": lambda: ctx.__enter__(),
    }
    other = track.context(bh.model_bytes("tiny_relu"))
    track.mem(other.create_mem(16))
    for name, call in calls.items():
        with pytest.raises(ValueError, match=r"on closed Context") as ei:
            call()
        assert name in str(ei.value), (name, ei.value)


def test_close_closes_leftover_mems_with_a_resource_warning(track, bh, emu):
    ctx = track.context(bh.model_bytes("tiny_relu"))
    a, b = ctx.create_mem(16), ctx.create_mem2(32, MemAllocFlag.NON_CACHEABLE)
    kept = ctx.create_mem(8)
    kept.close()
    assert ctx.mems == [a, b] or set(ctx.mems) == {a, b}
    with pytest.warns(ResourceWarning, match="still open when its Context closed") as w:
        ctx.close()
    assert len(w) == 2
    assert a.closed and b.closed and ctx.closed
    assert bh.live(emu)["live_mems"] == 0


def test_close_refuses_while_views_exist_and_changes_nothing(track, bh, emu):
    ctx = track.context(bh.model_bytes("tiny_relu"))
    mem = track.mem(ctx.create_mem(16))
    view = np.asarray(mem)
    with pytest.raises(BufferError, match=r"^1 buffer view\(s\) still exported; delete the numpy arrays first$"):
        ctx.close()
    assert not ctx.closed and not mem.closed
    del view
    mem.close()
    ctx.close()


def test_mem_keeps_its_context_alive(track, bh, emu):
    import gc
    import weakref

    ctx = Context(bh.model_bytes("tiny_relu"))
    ref = weakref.ref(ctx)
    mem = ctx.create_mem(16)
    del ctx
    gc.collect()
    assert ref() is not None and mem.context is ref()
    assert bh.live(emu)["live_contexts"] == 1
    mem.close()
    del mem
    gc.collect()
    assert ref() is None and bh.live(emu)["live_contexts"] == 0


def test_not_picklable_and_not_constructible_directly(track, bh, emu):
    ctx = track.context(bh.model_bytes("tiny_relu"))
    mem = track.mem(ctx.create_mem(8))
    for obj in (ctx, mem):
        with pytest.raises(TypeError):
            pickle.dumps(obj)
    with pytest.raises(TypeError, match="create_mem"):
        rknnx.lowlevel.TensorMem()
    with pytest.raises(TypeError):
        rknnx.lowlevel.Outputs()
    with pytest.raises(TypeError):
        rknnx.lowlevel.Output()
    with pytest.raises(RuntimeError, match="already initialized"):
        ctx.__init__(bh.model_bytes("tiny_relu"))


# ---- queries --------------------------------------------------------------------------------
def test_every_query(track, bh, platform):
    """Every command of rknn_query, typed; unsupported ones fail as on that chip."""
    flags = InitFlag.COLLECT_PERF_MASK
    ctx = track.model("tiny_int8_add", platform, flags=flags)
    q = ctx.query
    io = q(QueryCmd.IN_OUT_NUM)
    assert io == rknnx.lowlevel.InOutNum(2, 1) and io.n_input == 2
    for cmd in (QueryCmd.INPUT_ATTR, QueryCmd.NATIVE_INPUT_ATTR, QueryCmd.NATIVE_NHWC_INPUT_ATTR,
                QueryCmd.NATIVE_NC1HWC2_INPUT_ATTR):
        for i in range(2):
            a = q(cmd, i)
            assert isinstance(a, TensorAttr) and a.index == i and a.name == "ab"[i]
            assert a.n_elems == 256 and a.type == TensorType.INT8
    for cmd in (QueryCmd.OUTPUT_ATTR, QueryCmd.NATIVE_OUTPUT_ATTR, QueryCmd.NATIVE_NHWC_OUTPUT_ATTR):
        a = q(cmd, 0)
        assert a.name == "y" and a.zp == -10 and abs(a.scale - 0.06) < 1e-7
    native = q(QueryCmd.NATIVE_OUTPUT_ATTR, 0)
    assert native.fmt == TensorFormat.NC1HWC2
    assert native.dims[4] == {"RK3588": 16, "RK3566": 8, "RV1106": 16}[platform]
    assert q(QueryCmd.NATIVE_NHWC_OUTPUT_ATTR, 0).fmt == TensorFormat.NHWC
    sv = q(QueryCmd.SDK_VERSION)
    assert isinstance(sv, rknnx.lowlevel.SdkVersion) and "rknnx-emulator" in sv.api_version
    assert re.fullmatch(r"\d+\.\d+\.\d+", sv.drv_version)      # as boards write it
    ms = q(QueryCmd.MEM_SIZE)
    assert isinstance(ms, rknnx.lowlevel.MemSize) and ms.total_dma_allocated_size > 0
    assert q(QueryCmd.CUSTOM_STRING) == "tiny_int8_add"
    # after a run (zero-copy works everywhere)
    mems = []
    for a in ctx.input_attrs + ctx.output_attrs:
        mems.append(track.mem(ctx.create_mem(a.size_with_stride)))
        ctx.set_io_mem(mems[-1], a)
    ctx.run()
    if HAS_PERF[platform]:
        pr = q(QueryCmd.PERF_RUN)
        assert isinstance(pr, rknnx.lowlevel.PerfRun) and pr.run_duration >= 0
        pd = q(QueryCmd.PERF_DETAIL)
        assert isinstance(pd, rknnx.lowlevel.PerfDetail) and pd.text
        for cmd in (QueryCmd.CURRENT_INPUT_ATTR, QueryCmd.CURRENT_NATIVE_INPUT_ATTR):
            assert q(cmd, 1).name == "b"
        for cmd in (QueryCmd.CURRENT_OUTPUT_ATTR, QueryCmd.CURRENT_NATIVE_OUTPUT_ATTR):
            assert q(cmd, 0).name == "y"
        # a static model: boards refuse its shape sets (docs/abi-notes.md, Board facts)
        with pytest.raises(E.ModelInvalidError) as ei:
            q(QueryCmd.INPUT_DYNAMIC_RANGE, 0)
        assert ei.value.code == -6 and ei.value.func == "rknn_query"
        assert ctx.input_ranges == () and not ctx.is_dynamic
    else:
        for cmd in (QueryCmd.PERF_RUN, QueryCmd.PERF_DETAIL, QueryCmd.CURRENT_INPUT_ATTR,
                    QueryCmd.CURRENT_OUTPUT_ATTR, QueryCmd.CURRENT_NATIVE_INPUT_ATTR,
                    QueryCmd.CURRENT_NATIVE_OUTPUT_ATTR, QueryCmd.INPUT_DYNAMIC_RANGE):
            # refused before C, naming the chip and the query (Table 3-2)
            with pytest.raises(E.NotSupportedError,
                               match=rf"^rknn_query\(RKNN_QUERY_{cmd.name}\) is not supported "
                                     rf"on {platform} ") as ei:
                q(cmd, 0)
            assert ei.value.func == "rknn_query"
    if HAS_DEVICE_MEM_INFO[platform]:
        dm = q(QueryCmd.DEVICE_MEM_INFO)
        assert isinstance(dm, rknnx.lowlevel.DeviceMemInfo) and dm.size > 0 and dm.virt_addr != 0
    else:
        with pytest.raises(E.NotSupportedError, match=f"DEVICE_MEM_INFO.* on {platform}"):
            q(QueryCmd.DEVICE_MEM_INFO)


def test_query_arguments_are_checked_before_c(track, bh, emu):
    ctx = track.model("tiny_int8_add")
    assert ctx.n_input == 2                        # the attrs are cached from here on
    emu.inject_error("rknn_query", 1, -1)          # would fire if C were called
    with pytest.raises(IndexError, match=r"input index 2 out of range: the model has 2 input\(s\), indices 0..1"):
        ctx.query(QueryCmd.INPUT_ATTR, 2)
    with pytest.raises(IndexError, match=r"output index -1 out of range"):
        ctx.query(QueryCmd.NATIVE_OUTPUT_ATTR, -1)
    with pytest.raises(ValueError, match="is not a query command; expected one of"):
        ctx.query(99)
    with pytest.raises(TypeError, match="cmd must be a QueryCmd"):
        ctx.query("SDK_VERSION")
    assert emu.pending_injections == 1
    emu.clear_injections()


def test_perf_detail_needs_the_perf_flag(track, emu):
    # without RKNN_FLAG_COLLECT_PERF_MASK the runtime answers (the vendor's custom-op
    # example relies on it) with a text that says the table was not collected
    ctx = track.model("tiny_relu")
    ctx.inputs_set([np.float32([[1, 2]])])
    ctx.run()
    pd = ctx.query(QueryCmd.PERF_DETAIL)
    assert "per-layer timing was not collected" in pd.text and "Time(us)" not in pd.text


def test_perf_run_before_any_run_says_a_run_must_come_first(track, emu):
    # librknnrt logs the reason and returns a bare RKNN_ERR_FAIL; the exception says it
    ctx = track.model("tiny_relu")
    with pytest.raises(E.RKNNFailError, match="RKNN_QUERY_PERF_RUN is valid only after "
                                              "rknn_run: run the model first") as ei:
        ctx.query(QueryCmd.PERF_RUN)
    assert ei.value.code == -1 and ei.value.func == "rknn_query"
    assert ei.value.__cause__ is None and ei.value.__suppress_context__
    ctx.inputs_set([np.float32([[1, 2]])])
    ctx.run()
    assert ctx.query(QueryCmd.PERF_RUN).run_duration >= 0


def test_attrs_cached_and_copied(track, emu):
    ctx = track.model("multi_io")
    a = ctx.input_attrs
    assert [x.name for x in a] == ["image", "feat", "seq"]
    assert [x.name for x in ctx.output_attrs] == ["conv_out", "feat_out", "seq_out", "feat_q"]
    a[0].type = TensorType.FLOAT32                  # editing a copy changes nothing cached
    assert ctx.input_attrs[0].type == TensorType.INT8
    assert ctx.n_input == 3 and ctx.n_output == 4


# ---- configuration calls ------------------------------------------------------------------------
def test_core_mask_batch_core_num_dup_wait(track, platform):
    ctx = track.model("tiny_relu", platform)
    if HAS_CORE_MASK[platform]:
        for mask in (CoreMask.AUTO, CoreMask.CORE_0, CoreMask.CORE_0_1, CoreMask.CORE_0_1_2,
                     CoreMask.ALL):
            ctx.set_core_mask(mask)
        ctx.set_batch_core_num(2)
    else:
        with pytest.raises(rknnx.RKNNError) as ei:
            ctx.set_core_mask(CoreMask.CORE_0)
        assert ei.value.func == "rknn_set_core_mask"
        with pytest.raises(rknnx.RKNNError) as ei:
            ctx.set_batch_core_num(1)
        assert ei.value.func == "rknn_set_batch_core_num"
    if HAS_DUP[platform]:
        d = ctx.dup()
        track.contexts.append(d)
        assert d.handle != ctx.handle and d.flags == ctx.flags
        assert d.input_attrs == ctx.input_attrs
        d.inputs_set([np.float32([[1, -1]])])
        d.run()
        with d.outputs_get(want_float=True) as o:
            assert np.asarray(o[0]).tolist() == [[1.0, 0.0]]
    else:
        with pytest.raises(rknnx.RKNNError) as ei:
            ctx.dup()
        assert ei.value.func == "rknn_dup_context"
    with pytest.raises(rknnx.RKNNError) as ei:   # documented unimplemented everywhere
        ctx.wait()
    assert ei.value.func == "rknn_wait"


def test_configuration_arguments_checked_before_c(track, emu):
    ctx = track.model("tiny_relu")
    with pytest.raises(ValueError, match="not a core mask"):
        ctx.set_core_mask(0x20000)
    with pytest.raises(TypeError, match="mask must be"):
        ctx.set_core_mask("all")
    with pytest.raises(ValueError, match="positive number of cores"):
        ctx.set_batch_core_num(0)


def test_set_input_shapes_validation(track, emu):
    ctx = track.model("dynamic")
    a = ctx.input_attrs[0]
    with pytest.raises(ValueError, match="one TensorAttr per input: expected 1, got 2"):
        ctx.set_input_shapes([a, a])
    with pytest.raises(TypeError, match="takes TensorAttr"):
        ctx.set_input_shapes([(1, 64, 64, 3)])
    b = a.copy()
    b.index = 3
    with pytest.raises(IndexError, match="expected each of 0..0 once"):
        ctx.set_input_shapes([b])
    a.dims = (1, 65, 64, 3)                            # not one of the model's shapes
    with pytest.raises(rknnx.RKNNError) as ei:
        ctx.set_input_shapes([a])
    assert ei.value.func == "rknn_set_input_shapes"


def test_repr_and_properties(track, emu):
    ctx = track.model("tiny_relu")
    assert repr(ctx).startswith("<Context handle=0x") and "flow=none" in repr(ctx)
    assert ctx.flow == "none" and ctx.bindings == {} and ctx.mems == []
    assert os.fspath(rknnx.emulator_path()) == rknnx.runtime_info()["path"]


# ---- a model buffer outlives the close of the context that made it ---------------------------
# A context's close() never destroys a mem that is another context's model buffer: the
# one close sequence of Context and MatmulContext refuses (BufferError), closing nothing.
# (The mem's own close() refusing is test_model_buffer_zero_copy_from_a_tensor_mem above.)

def test_matmul_close_refuses_while_its_mem_holds_a_model(track, bh, emu):
    m = bh.model_bytes("tiny_relu")
    mm = track.matmul(2, 64, 64, MatmulType.FLOAT16_MM_FLOAT16_TO_FLOAT32)
    buf = mm.create_mem(len(m))
    np.frombuffer(buf, np.uint8)[:] = np.frombuffer(m, np.uint8)
    ctx = track.context(None, model_mem=buf)
    with pytest.raises(BufferError, match="model buffer of an open Context"):
        mm.close()
    assert not mm.closed and not buf.closed            # nothing was closed
    ctx.inputs_set([np.float32([[3, -3]])])
    ctx.run()                                          # the model memory is still there
    with ctx.outputs_get(want_float=True) as o:
        assert np.asarray(o[0]).tolist() == [[3.0, 0.0]]
    ctx.close()
    buf.close()
    mm.close()
    assert mm.closed
