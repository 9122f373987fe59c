"""TensorMem: every way to make one, its fields, cache sync, the buffer protocol and
DLPack (zero-copy, exact export counting, no view of a closed mem), and the memory
calls of a context (set_io_mem / set_weight_mem / set_internal_mem)."""

from __future__ import annotations

import ctypes
import gc
import mmap
import os
import weakref

import numpy as np
import pytest

import rknnx
from rknnx.lowlevel import InitFlag, MemAllocFlag, MemFlag, MemSyncMode, QueryCmd, TensorAttr, TensorType

_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]

_NUMPY = tuple(int(p) for p in np.__version__.split(".")[:2])


@pytest.fixture
def ctx(track):
    return track.model("tiny_int8_add", "RK3588")


# ---- creation and fields ------------------------------------------------------------------------
def test_create_mem_fields_and_repr(ctx, track):
    m = track.mem(ctx.create_mem(100))
    assert m.size == 100 and m.offset == 0 and m.fd >= 0 and m.virt_addr != 0
    assert m.phys_addr != 0 and m.flags == MemFlag.ALLOC_INSIDE and m.context is ctx
    assert m.owner is None and m.attr is None and m.exports == 0 and not m.closed
    assert m.shape == (100,) and m.strides == (1,) and m.dtype == np.uint8
    assert "ALLOC_INSIDE size=100" in repr(m)
    assert m in ctx.mems


@pytest.mark.parametrize("flags", [MemAllocFlag.DEFAULT, MemAllocFlag.CACHEABLE,
                                   MemAllocFlag.NON_CACHEABLE, MemAllocFlag.TRY_ALLOC_SRAM,
                                   MemAllocFlag.NON_CACHEABLE | MemAllocFlag.TRY_ALLOC_SRAM])
def test_create_mem2_flags(ctx, track, flags):
    m = track.mem(ctx.create_mem2(4096, flags))
    assert m.size == 4096 and m.context is ctx
    np.asarray(m)[:] = 7
    assert bytes(m.raw()[:3]) == b"\x07\x07\x07"


def test_create_mem2_without_context(track, emu):
    m = track.mem(rknnx.lowlevel.create_mem2(64))                  # ALLOC_NO_CONTEXT by default
    assert m.context is None and m.size == 64
    with pytest.raises(ValueError, match="pass context= to sync"):
        m.sync(MemSyncMode.TO_DEVICE)
    ctx = track.model("tiny_relu")
    m.sync(MemSyncMode.TO_DEVICE, context=ctx)
    n = track.mem(ctx.create_mem2(64, MemAllocFlag.ALLOC_NO_CONTEXT))
    assert n.context is None and n not in ctx.mems
    with pytest.raises(ValueError, match="needs MemAllocFlag.ALLOC_NO_CONTEXT"):
        rknnx.lowlevel.create_mem2(64, MemAllocFlag.CACHEABLE)


@pytest.mark.parametrize("call, exc, msg", [
    (lambda c: c.create_mem(0), ValueError, r"size must be 1..4294967295 bytes, got 0"),
    (lambda c: c.create_mem(1 << 32), ValueError, "size must be 1..4294967295"),
    (lambda c: c.create_mem(-5), ValueError, "size must be"),
    (lambda c: c.create_mem(1.5), TypeError, "size must be an integer"),
    (lambda c: c.create_mem2(16, 0x100), ValueError, "unknown bits"),
    (lambda c: c.create_mem2(16, 3), ValueError, "both CACHEABLE and NON_CACHEABLE"),
    (lambda c: c.create_mem_from_fd(-1, 16), ValueError, "open file descriptor"),
    (lambda c: c.create_mem_from_fd("3", 16), TypeError, "fd must be an int"),
    (lambda c: c.create_mem_from_fd(3, 16, offset=-1), ValueError, "offset must be"),
    (lambda c: c.create_mem_from_fd(3, 16, virt_addr=b"x" * 16), ValueError, "writable"),
    (lambda c: c.create_mem_from_fd(3, 16, virt_addr=bytearray(8)), ValueError, "smaller than offset"),
    (lambda c: c.create_mem_from_phys("x", 16), ValueError, "phys_addr must be an int"),
    (lambda c: c.create_mem_from_mb_blk(0), ValueError, "non-NULL"),
])
def test_mem_arguments_checked_before_c(ctx, emu, call, exc, msg):
    emu.reset_counters()
    with pytest.raises(exc, match=msg):
        call(ctx)
    assert emu.counters()["mems_created"] == 0


def test_null_from_create_functions_is_rknn_error(ctx, emu):
    owner = _FdOwner(4096)                             # a mappable fd (stdin may be /dev/null)
    fd = owner.fd
    for fn, call in [("rknn_create_mem", lambda: ctx.create_mem(16)),
                     ("rknn_create_mem2", lambda: ctx.create_mem2(16)),
                     ("rknn_create_mem_from_fd", lambda: ctx.create_mem_from_fd(fd, 16)),
                     ("rknn_create_mem_from_phys", lambda: ctx.create_mem_from_phys(0x10, 16))]:
        emu.inject_error(fn, 1, -4)
        with pytest.raises(rknnx.RKNNError) as ei:
            call()
        assert ei.value.func == fn and "returned NULL" in str(ei.value)
    with pytest.raises(rknnx.RKNNError, match="rknn_create_mem_from_mb_blk returned NULL"):
        ctx.create_mem_from_mb_blk(0x1000)             # unsupported on every chip (V2.5.0)


class _FdOwner:
    """Owns a memfd (closed when the object goes)."""

    def __init__(self, size):
        self.fd = os.memfd_create("rknnx-test")
        os.ftruncate(self.fd, size)

    def fileno(self):
        return self.fd

    def __del__(self):
        os.close(self.fd)


def test_create_mem_from_fd_keeps_its_owner(ctx, track):
    f = _FdOwner(8192)
    fd = f.fd
    ref = weakref.ref(f)
    m = track.mem(ctx.create_mem_from_fd(f, 4096, offset=4096))
    assert m.owner is f and m.fd == fd and m.offset == 4096 and m.size == 4096
    assert m.flags == MemFlag.FROM_FD
    del f
    gc.collect()
    assert ref() is not None                             # the fd stays open
    np.asarray(m)[:4] = [1, 2, 3, 4]
    with mmap.mmap(fd, 8192) as mm:
        assert mm[4096:4100] == b"\x01\x02\x03\x04"      # the data is the file's, at offset
    m.close()
    gc.collect()
    assert ref() is None                                 # released with the descriptor


def test_create_mem_from_fd_with_a_caller_mapping(ctx, track):
    fd = os.memfd_create("rknnx-test2")
    os.ftruncate(fd, 4096)
    mm = mmap.mmap(fd, 4096)
    m = track.mem(ctx.create_mem_from_fd(fd, 1024, offset=512, virt_addr=mm, owner=mm))
    assert m.virt_addr != 0 and m.offset == 512
    np.asarray(m)[0] = 0x5A
    assert mm[512] == 0x5A                               # the caller's mapping, in place
    with pytest.raises(BufferError):
        mm.close()                                       # pinned while the mem lives
    m.close()
    del m
    gc.collect()
    mm.close()
    os.close(fd)


def test_create_mem_from_phys_aliases_the_memory(ctx, track):
    a = track.mem(ctx.create_mem(256))
    b = track.mem(ctx.create_mem_from_phys(a.phys_addr, 256, owner=a))
    assert b.flags == MemFlag.FROM_PHYS and b.phys_addr == a.phys_addr and b.owner is a
    np.asarray(a)[:] = np.arange(256, dtype=np.uint8)
    assert bytes(b) == bytes(range(256))
    with pytest.raises(rknnx.RKNNError, match="create_mem_from_phys returned NULL"):
        ctx.create_mem_from_phys(0x1234, 16)             # not an address the runtime handed out


# ---- cache maintenance ----------------------------------------------------------------------------
@pytest.mark.parametrize("platform_", ["RK3588", "RV1106"])
def test_sync_is_needed_without_the_runtime_flushes(track, emu, platform_):
    """With DISABLE_FLUSH_* the runtime does not clean/invalidate: the emulator's
    non-coherent cacheable memory then shows stale data unless TensorMem.sync is used."""
    flags = InitFlag.DISABLE_FLUSH_INPUT_MEM_CACHE | InitFlag.DISABLE_FLUSH_OUTPUT_MEM_CACHE
    ctx = track.model("tiny_relu", platform_, flags=flags)
    im = track.mem(ctx.create_mem(8))
    om = track.mem(ctx.create_mem(8))
    ctx.set_io_mem(im, ctx.input_attrs[0])
    ctx.set_io_mem(om, ctx.output_attrs[0])
    np.asarray(im)[...] = [[4.0, -1.0]]
    ctx.run()                                           # no TO_DEVICE: the NPU sees zeros
    om.sync(MemSyncMode.FROM_DEVICE)
    assert np.asarray(om).tolist() == [[0.0, 0.0]]
    im.sync(MemSyncMode.TO_DEVICE)
    ctx.run()
    assert np.asarray(om).tolist() == [[0.0, 0.0]]      # not invalidated yet: stale
    om.sync(MemSyncMode.FROM_DEVICE)
    assert np.asarray(om).tolist() == [[4.0, 0.0]]
    im.sync()                                           # BIDIRECTIONAL by default
    before = emu.counters()["syncs"]
    om.sync(MemSyncMode.BIDIRECTIONAL)
    assert emu.counters()["syncs"] > before
    for bad in (0, 4, "x"):
        with pytest.raises((ValueError, TypeError)):
            om.sync(bad)


# ---- buffer protocol ----------------------------------------------------------------------------
def test_plain_byte_views_are_zero_copy(ctx, track):
    m = track.mem(ctx.create_mem(64))
    a = np.asarray(m)
    assert a.shape == (64,) and a.dtype == np.uint8 and a.flags.writeable
    b = np.frombuffer(m, np.float32)
    mv = memoryview(m)
    assert mv.format == "B" and mv.nbytes == 64 and not mv.readonly
    a[:4] = np.frombuffer(np.float32(2.5).tobytes(), np.uint8)
    assert b[0] == 2.5 and mv[1] == a[1]
    assert np.shares_memory(a, b)
    assert a.ctypes.data == m.virt_addr + m.offset
    assert m.exports == 3
    del a, b, mv
    assert m.exports == 0


def test_bound_views_are_typed_and_shaped(ctx, track):
    attr = ctx.input_attrs[0]                            # int8 NHWC [1,4,8,8], C padded to 16
    m = track.mem(ctx.create_mem(attr.size_with_stride))
    # rows of W 8 aligned to int8's C2 on RK3588: 16 pixels (tiny_rk3588_i8, librknnrt 1.6.0)
    assert attr.w_stride == 16
    assert m.bind(attr) is m
    v = np.asarray(m)
    assert v.shape == (1, 4, 8, 8) and v.dtype == np.int8
    assert v.strides == attr.strides == (4 * 16 * 16, 16 * 16, 16, 1)  # padded channels
    assert m.attr == attr and m.attr is not attr
    mv = memoryview(m)
    assert mv.format == "b" and mv.shape == (1, 4, 8, 8)
    d = np.from_dlpack(m)
    assert d.shape == v.shape and d.strides == v.strides and np.shares_memory(d, v)
    # rebinding does not change live views
    flat = TensorAttr(dims=(attr.size_with_stride // 4,), type=TensorType.FLOAT32)
    m.bind(flat)
    assert np.asarray(m).dtype == np.float32 and v.shape == (1, 4, 8, 8) and mv.shape == (1, 4, 8, 8)
    m.unbind()
    assert np.asarray(m).shape == (attr.size_with_stride,)
    del v, mv, d


def test_bind_validates(ctx, track):
    m = track.mem(ctx.create_mem(16))
    with pytest.raises(ValueError, match="too small.*expected at least 64 bytes"):
        m.bind(TensorAttr(name="t", dims=(4, 4), type=TensorType.FLOAT32))
    with pytest.raises(TypeError, match="numpy cannot view"):
        m.bind(TensorAttr(dims=(4,), type=TensorType.INT4))
    with pytest.raises(TypeError):
        m.bind(None)


def test_float16_bool_int64_views(ctx, track):
    for t, dt in [(TensorType.FLOAT16, np.float16), (TensorType.BOOL, np.bool_),
                  (TensorType.INT64, np.int64), (TensorType.UINT16, np.uint16)]:
        m = track.mem(ctx.create_mem(64))
        m.bind(TensorAttr(dims=(2, 64 // (2 * np.dtype(dt).itemsize)), type=t))
        assert np.asarray(m).dtype == dt
        if dt is np.bool_ and _NUMPY < (1, 25):
            # numpy learnt the DLPack bool type (kDLBool) in 1.25: older ones refuse it
            with pytest.raises((BufferError, RuntimeError, TypeError),
                               match="Unsupported dtype"):
                np.from_dlpack(m)
        else:
            assert np.from_dlpack(m).dtype == dt
        assert memoryview(m).format == np.dtype(dt).char or dt is np.int64


def test_close_refuses_while_viewed_and_views_after_close_are_impossible(ctx, track):
    m = track.mem(ctx.create_mem(32))
    v1, v2 = np.asarray(m), memoryview(m)
    cap = m.__dlpack__()
    assert m.exports == 3
    with pytest.raises(BufferError, match=r"^3 buffer view\(s\) still exported; delete the numpy arrays first$"):
        m.close()
    del v1, cap
    with pytest.raises(BufferError, match=r"^1 buffer view"):
        m.close()
    v2.release()
    m.close()
    m.close()                                            # idempotent
    assert m.closed and repr(m) == "<TensorMem closed>"
    for view in (np.asarray, memoryview, np.from_dlpack, lambda x: x.raw(),
                 lambda x: np.frombuffer(x, np.uint8), lambda x: x.__dlpack__()):
        with pytest.raises(BufferError, match="closed TensorMem") as ei:
            view(m)
        assert isinstance(ei.value, ValueError)          # also "operation on closed"
    for field in ("virt_addr", "phys_addr", "fd", "offset", "size", "flags", "shape"):
        with pytest.raises(ValueError, match=f"{field} on closed TensorMem"):
            getattr(m, field)
    with pytest.raises(ValueError, match="closed TensorMem"):
        m.sync(MemSyncMode.TO_DEVICE)
    with pytest.raises(ValueError, match="closed TensorMem"):
        m.bind(ctx.input_attrs[0])


def test_dlpack_protocol(ctx, track):
    m = track.mem(ctx.create_mem(24))
    m.bind(TensorAttr(dims=(2, 3), type=TensorType.FLOAT32))
    assert m.__dlpack_device__() == (1, 0)
    legacy = m.__dlpack__()
    assert _capsule_is_valid(legacy, b"dltensor")
    versioned = m.__dlpack__(max_version=(1, 0))
    assert _capsule_is_valid(versioned, b"dltensor_versioned")
    assert m.exports == 2
    del legacy, versioned                                 # unconsumed capsules free themselves
    assert m.exports == 0
    a = np.from_dlpack(m)
    assert m.exports == 1
    # numpy >= 2.1 imports through the versioned capsule and keeps the array writable;
    # older numpy marks every DLPack import read-only, so write through a buffer view there
    numpy_version = tuple(int(p) for p in np.__version__.split(".")[:2])
    assert a.flags.writeable == (numpy_version >= (2, 1))
    target = a if a.flags.writeable else np.asarray(m)
    target[...] = [[1, 2, 3], [4, 5, 6]]
    del target
    assert a.tolist() == [[1, 2, 3], [4, 5, 6]]           # the DLPack array is the memory
    assert np.asarray(m).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert m.exports == 1
    del a
    assert m.exports == 0
    with pytest.raises(BufferError, match="copy=True"):
        m.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="device"):
        m.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream"):
        m.__dlpack__(stream=1)
    m.__dlpack__(dl_device=(1, 0), copy=False)


# ---- binding memory to a context ------------------------------------------------------------------
def test_set_io_mem_validation_before_c(ctx, track, emu):
    emu.inject_error("rknn_set_io_mem", 1, -1)            # fires only if C is called
    attr = ctx.input_attrs[0]
    small = track.mem(ctx.create_mem(attr.size_with_stride - 1))
    with pytest.raises(ValueError, match=rf"too small for input 0 \('a'\).*expected at least "
                                         rf"{attr.size_with_stride} bytes"):
        ctx.set_io_mem(small, attr)
    nameless = attr.copy()
    nameless.name = ""
    with pytest.raises(ValueError, match="does not say which tensor"):
        ctx.set_io_mem(small, nameless)
    other = attr.copy()
    other.name = "nope"
    with pytest.raises(ValueError, match=r"names no input or output of the model; expected one of \['a', 'b'\]"):
        ctx.set_io_mem(small, other)
    pt = attr.copy()
    pt.pass_through = True
    pt.type = TensorType.UINT8
    with pytest.raises(ValueError, match="pass_through needs the model type INT8, got UINT8"):
        ctx.set_io_mem(small, pt)
    closed = ctx.create_mem(16)
    closed.close()
    with pytest.raises(ValueError, match="set_io_mem on closed TensorMem"):
        ctx.set_io_mem(closed, attr)
    with pytest.raises(TypeError):
        ctx.set_io_mem(b"mem", attr)
    with pytest.raises(TypeError):
        ctx.set_io_mem(small, None)
    assert emu.pending_injections == 1 and ctx.flow == "none"
    emu.clear_injections()


def test_bindings_keep_mems_alive_and_closed_bindings_stop_run(ctx, track, emu):
    mems = {}
    for a in ctx.input_attrs + ctx.output_attrs:
        m = ctx.create_mem(a.size_with_stride)
        ctx.set_io_mem(m, a)
        mems[a.name] = weakref.ref(m)
    del m
    gc.collect()
    assert all(r() is not None for r in mems.values())   # the context holds them
    assert set(ctx.bindings) == {("input", 0), ("input", 1), ("output", 0)}
    ctx.run()
    b = mems["b"]()
    b.close()
    with pytest.raises(ValueError, match=r"bound as \('input', 1\) was closed"):
        ctx.run()
    fresh = track.mem(ctx.create_mem(ctx.input_attrs[1].size_with_stride))
    ctx.set_io_mem(fresh, ctx.input_attrs[1])            # rebinding releases the old one
    del b
    gc.collect()
    assert mems["b"]() is None
    ctx.run()
    for r in mems.values():
        if r() is not None:
            track.mem(r())


def test_mem_of_another_context_closed_under_a_binding(track, emu):
    a = track.model("tiny_relu")
    b = track.model("tiny_relu")
    m = a.create_mem(8)
    b.set_io_mem(m, b.input_attrs[0])
    o = track.mem(b.create_mem(8))
    b.set_io_mem(o, b.output_attrs[0])
    b.run()
    with pytest.warns(ResourceWarning):
        a.close()                                        # closes m, which b had bound
    with pytest.raises(ValueError, match="was closed"):
        b.run()


def test_weight_and_internal_mem_alloc_outside(track, bh, emu):
    model = bh.model_bytes("multi_io")
    ref_ctx = track.model("multi_io")
    rng = np.random.default_rng(0)
    xs = [rng.integers(0, 256, a.dims, dtype=np.uint8) if a.name == "image"
          else rng.standard_normal(a.dims).astype(a.dtype) for a in ref_ctx.input_attrs]
    ref_ctx.inputs_set(xs)
    ref_ctx.run()
    with ref_ctx.outputs_get(want_float=True) as outs:
        want = [np.asarray(o).copy() for o in outs]
    ctxs = [track.context(model, InitFlag.MEM_ALLOC_OUTSIDE) for _ in range(2)]
    sizes = ctxs[0].query(QueryCmd.MEM_SIZE)
    assert sizes.total_weight_size > 0 and sizes.total_internal_size > 0
    with pytest.raises(ValueError, match="too small for the weights"):
        ctxs[0].set_weight_mem(track.mem(ctxs[0].create_mem(sizes.total_weight_size - 1)))
    with pytest.raises(ValueError, match="too small for the internal tensors"):
        ctxs[0].set_internal_mem(track.mem(ctxs[0].create_mem(sizes.total_internal_size - 1)))
    # one internal buffer shared by both contexts through its fd (the vendor reuse demo)
    internal = track.mem(ctxs[0].create_mem(sizes.total_internal_size))
    for c in ctxs:
        c.set_weight_mem(track.mem(c.create_mem(sizes.total_weight_size)))
        shared = internal if c is ctxs[0] else track.mem(
            c.create_mem_from_fd(internal.fd, internal.size, owner=internal))
        c.set_internal_mem(shared)
        assert set(c.bindings) == {"weight", "internal"}
        ins = []
        for a, x in zip(c.input_attrs, xs):
            a.type = rknnx.lowlevel.type_of_dtype(x.dtype)
            ins.append(track.mem(c.create_mem(a.size_with_stride)))
            c.set_io_mem(ins[-1], a)
            np.asarray(ins[-1])[...] = x
        outs = []
        for a in c.output_attrs:
            a.type = TensorType.FLOAT32
            outs.append(track.mem(c.create_mem(a.nbytes_with_stride)))
            c.set_io_mem(outs[-1], a)
        c.run()
        for o, w in zip(outs, want):
            np.testing.assert_array_equal(np.asarray(o), w)


def test_run_looks_at_its_bindings_again_after_any_close_or_binding(ctx, track):
    # run() skips the look at its bound mems while no mem was closed and no binding made
    # since it last found them open; each of those makes it look, and refuse if need be
    attrs = ctx.input_attrs + ctx.output_attrs
    mems = [track.mem(ctx.create_mem(a.size_with_stride)) for a in attrs]
    for m, a in zip(mems, attrs):
        ctx.set_io_mem(m, a)
    ctx.run()
    ctx.create_mem(64).close()                           # bound nowhere: runs go on
    ctx.run()
    fresh = track.mem(ctx.create_mem(attrs[0].size_with_stride))
    ctx.set_io_mem(fresh, attrs[0])
    mems[0].close()                                      # no longer bound: runs go on
    ctx.run()
    fresh.close()
    for _ in range(2):                                   # refused each time, not once
        with pytest.raises(ValueError, match=r"bound as \('input', 0\) was closed"):
            ctx.run()
    ctx.set_io_mem(track.mem(ctx.create_mem(attrs[0].size_with_stride)), attrs[0])
    ctx.run()
    mems[2].close()                                      # closed right after a run
    with pytest.raises(ValueError, match=r"bound as \('output', 0\) was closed"):
        ctx.run()
