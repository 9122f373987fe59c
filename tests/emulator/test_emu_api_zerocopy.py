"""Emulator runtime half: zero-copy memory, cache emulation, set_io_mem, outside memory
on RK3588, RK3566 and RV1106."""

import ctypes as C
import mmap
import os

import numpy as np
import pytest

from emu_capi import (CTX_INVALID, F32, FAIL, FLAG_INTERNAL_OUTSIDE,
                                 FLAG_MEM_OUTSIDE, FLAG_MODEL_ZERO_COPY, FLAG_NO_FLUSH_IN,
                                 FLAG_NO_FLUSH_OUT, I8, MEM_CACHEABLE, MEM_NO_CONTEXT,
                                 MEM_NON_CACHEABLE, MEM_TRY_SRAM, NC1HWC2, NCHW, NHWC,
                                 PARAM_INVALID, PLATFORMS, Q_MEM_SIZE, Q_NATIVE_INPUT_ATTR,
                                 Q_NATIVE_NHWC_OUTPUT_ATTR, Q_NATIVE_OUTPUT_ATTR, SUCC,
                                 SYNC_BIDIR, SYNC_FROM_DEVICE, SYNC_TO_DEVICE, U8, InitExtend,
                                 ModelBuilder, TensorAttr, addr, api, desc_of, emu, float_output,
                                 make_ctx, mem_view, model_input_from_user, reference, samples)

__all__ = ["emu", "make_ctx"]


def img_model(target, w=30, h=4, c=3, cout=5):
    """uint8-fed image x int8 NHWC [1,h,w,c] (mean/std) -> 1x1 conv (cout) -> y int8 NCHW."""
    rng = np.random.default_rng(11)
    b = ModelBuilder(target, "zc")
    x = b.input("x", (1, h, w, c), "int8", "NHWC", zp=-10, scale=0.03, mean=[20.0] * c,
                std=[30.0] * c)
    wq = rng.integers(-100, 100, (cout, c, 1, 1)).astype(np.int8)
    y = b.conv2d(x, wq, rng.integers(-50, 50, cout).astype(np.int32), weight_scale=0.01,
                 out_scale=0.02, out_zp=3, fmt="NCHW", out="y")
    b.output(y)
    return b.build()


def reference_out(model, img_u8):
    m = desc_of(model)
    x = model_input_from_user(m.tensors[m.inputs[0]], img_u8, NHWC)
    (q,) = reference.run_reference(m, [x])
    return m.tensors[m.outputs[0]], q


def write_strided(mem, img, w_stride):
    """The demo's row-by-row copy into a zero-copy input of w_stride pixels per row."""
    n, h, w, ch = img.shape
    v = mem_view(mem)
    rows = v[: n * h * w_stride * ch].reshape(n * h, w_stride * ch)
    rows[:, : w * ch] = img.reshape(n * h, w * ch)


def from_nc1hwc2(buf, shape_nchw, c2):
    n, ch, h, w = shape_nchw
    c1 = -(-ch // c2)
    blk = buf[: n * c1 * h * w * c2].reshape(n, c1, h, w, c2)
    return blk.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c2, h, w)[:, :ch]


@pytest.mark.parametrize("chip", PLATFORMS)
def test_create_mem_demo_flow(emu, make_ctx, chip):
    """rknn_create_mem_demo: UINT8 NHWC input with w_stride rows, FLOAT32 NCHW output."""
    model = img_model(chip)
    c = make_ctx(model, platform=chip)
    ia = c.in_attr(0)
    ia.type, ia.fmt = U8, NHWC
    assert ia.w_stride == (32 if chip == "RK3588" else 32) and ia.w_stride != 30
    im = c.create_mem(ia.size_with_stride)
    img = np.random.default_rng(12).integers(0, 256, (1, 4, 30, 3), dtype=np.uint8)
    write_strided(im, img, ia.w_stride)
    oa = c.out_attr(0)
    om = c.create_mem(oa.n_elems * 4)
    oa.type = F32
    assert c.set_io_mem(im, ia) == SUCC
    assert c.set_io_mem(om, oa) == SUCC
    base = emu.counters()
    for _ in range(2):
        c.run()
    t, q = reference_out(model, img)
    got = mem_view(om, oa.n_elems * 4, np.float32).reshape(oa.shape)
    np.testing.assert_array_equal(got, float_output(t, q))
    after = emu.counters()
    assert after["bytes_in"] == base["bytes_in"] and after["bytes_out"] == base["bytes_out"]
    assert after["syncs"] - base["syncs"] == 4          # clean input + invalidate output, x2


@pytest.mark.parametrize("chip", PLATFORMS)
def test_native_outputs(emu, make_ctx, chip):
    """RV1106 demo: NATIVE (NC1HWC2) and NATIVE_NHWC int8 outputs, converted by the caller."""
    model = img_model(chip, cout=5)
    c2 = 8 if chip == "RK3566" else 16
    img = np.random.default_rng(13).integers(0, 256, (1, 4, 30, 3), dtype=np.uint8)
    t, q = reference_out(model, img)
    for cmd in (Q_NATIVE_OUTPUT_ATTR, Q_NATIVE_NHWC_OUTPUT_ATTR):
        c = make_ctx(model, platform=chip)
        ia = c.in_attr(0, Q_NATIVE_INPUT_ATTR)
        ia.type = U8
        im = c.create_mem(ia.size_with_stride)
        write_strided(im, img, ia.w_stride)
        oa = c.out_attr(0, cmd)
        om = c.create_mem(oa.size_with_stride)
        assert c.set_io_mem(im, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
        c.run()
        raw = mem_view(om, oa.size_with_stride, np.int8)
        if cmd == Q_NATIVE_OUTPUT_ATTR:
            assert oa.fmt == NC1HWC2 and oa.dims[4] == c2
            got = from_nc1hwc2(raw, q.shape, oa.dims[4])
        else:
            # the pixels hold the channels the dims say: C padded to C2 on RK3566 only
            # (cls_img_rk3566 [1,32,32,8] for 5, cls_img_rk3588 [1,32,32,5], librknnrt
            # 1.6.0); size_with_stride is what to allocate: align(size, C2), the NC1HWC2
            # bytes on the mini runtime (cls_img_rv1106: 16,384, librknnmrt 2.3.2)
            cs = oa.dims[3]
            assert oa.fmt == NHWC and cs == (c2 if chip == "RK3566" else 5)
            assert oa.size_with_stride == (4 * 30 * c2 if chip == "RV1106"
                                           else -(-4 * 30 * cs // c2) * c2)
            got = raw[:4 * 30 * cs].reshape(1, 4, 30, cs)[..., :5].transpose(0, 3, 1, 2)
        np.testing.assert_array_equal(got, q)


@pytest.mark.parametrize("chip", ["RK3588", "RV1106"])
def test_pass_through_nc1hwc2_input(emu, make_ctx, chip):
    b = ModelBuilder(chip, "nc")
    x = b.input("x", (1, 3, 5, 20), "int8", "NHWC", zp=0, scale=0.1)
    b.output(b.relu(x, out_scale=0.1, out_zp=0, out="y"))
    c = make_ctx(b.build(), platform=chip)
    ia = c.in_attr(0, Q_NATIVE_INPUT_ATTR)
    assert ia.fmt == NC1HWC2
    ia.pass_through = 1
    q = np.random.default_rng(14).integers(-128, 128, (1, 3, 5, 20)).astype(np.int8)
    im = c.create_mem(ia.size_with_stride)
    nc = q.transpose(0, 3, 1, 2)
    c2 = ia.dims[4]
    v = mem_view(im, ia.size_with_stride, np.int8).reshape(1, -1, 3, 5, c2)
    for ch in range(20):
        v[0, ch // c2, :, :, ch % c2] = nc[0, ch]
    oa = c.out_attr(0)
    om = c.create_mem(oa.size)
    assert c.set_io_mem(im, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    c.run()
    np.testing.assert_array_equal(mem_view(om, oa.size, np.int8).reshape(oa.shape),
                                  np.maximum(nc, 0))


def simple_ctx(make_ctx, flags=0, chip="RK3588"):
    """tiny_relu (float32 [1,2]) with input and output mems bound."""
    c = make_ctx(samples.tiny_relu(target=chip), flags=flags, platform=chip)
    ia, oa = c.in_attr(0), c.out_attr(0)
    return c, ia, oa


def bind(c, ia, oa, flags=None):
    im, om = c.create_mem(8, flags), c.create_mem(8, flags)
    assert c.set_io_mem(im, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    return mem_view(im, 8, np.float32), mem_view(om, 8, np.float32), im, om


@pytest.mark.parametrize("chip", PLATFORMS)
def test_cache_default_flushes(emu, make_ctx, chip):
    c, ia, oa = simple_ctx(make_ctx, chip=chip)
    x, y, _, _ = bind(c, ia, oa)
    x[:] = [-1, 2]
    c.run()
    assert y.tolist() == [0, 2]
    x[:] = [3, -4]
    c.run()
    assert y.tolist() == [3, 0]


@pytest.mark.parametrize("chip", PLATFORMS)
def test_cache_stale_input_without_sync(emu, make_ctx, chip):
    c, ia, oa = simple_ctx(make_ctx, FLAG_NO_FLUSH_IN, chip)
    x, y, im, _ = bind(c, ia, oa)
    x[:] = [5, 6]
    c.run()
    assert y.tolist() == [0, 0]           # the NPU read the stale (zero) device copy
    assert c.sync(im, SYNC_TO_DEVICE) == SUCC
    c.run()
    assert y.tolist() == [5, 6]


@pytest.mark.parametrize("chip", PLATFORMS)
def test_cache_stale_output_without_sync(emu, make_ctx, chip):
    c, ia, oa = simple_ctx(make_ctx, FLAG_NO_FLUSH_OUT, chip)
    x, y, _, om = bind(c, ia, oa)
    x[:] = [7, 8]
    c.run()
    assert y.tolist() == [0, 0]           # the CPU still sees its own (stale) view
    assert c.sync(om, SYNC_FROM_DEVICE) == SUCC
    assert y.tolist() == [7, 8]


def test_cache_non_cacheable_is_coherent(emu, make_ctx):
    c, ia, oa = simple_ctx(make_ctx, FLAG_NO_FLUSH_IN | FLAG_NO_FLUSH_OUT)
    x, y, _, _ = bind(c, ia, oa, MEM_NON_CACHEABLE)
    x[:] = [9, -1]
    base = emu.counters()["bytes_synced"]
    c.run()
    assert y.tolist() == [9, 0]
    assert emu.counters()["bytes_synced"] == base


def test_mem_sync_counters_and_modes(emu, make_ctx):
    c, ia, oa = simple_ctx(make_ctx, FLAG_NO_FLUSH_IN | FLAG_NO_FLUSH_OUT)
    _, _, im, _ = bind(c, ia, oa)
    emu.reset_counters()
    assert c.sync(im, SYNC_TO_DEVICE) == SUCC
    assert c.sync(im, SYNC_BIDIR) == SUCC
    k = emu.counters()
    assert (k["syncs"], k["bytes_synced"]) == (3, 24) and k["bytes_copied"] == 24
    assert c.sync(im, 0) == PARAM_INVALID and c.sync(im, 4) == PARAM_INVALID
    assert c.sync(None, SYNC_TO_DEVICE) == PARAM_INVALID
    assert api().rknn_mem_sync(12345, im, SYNC_TO_DEVICE) == CTX_INVALID


def test_mem_lifecycle(emu, make_ctx):
    lib = api()
    c = make_ctx(samples.tiny_relu())
    base = emu.counters()["live_mems"]
    m = lib.rknn_create_mem(c.h, 100)
    mm = m.contents
    assert mm.fd >= 0 and mm.virt_addr and mm.phys_addr and mm.size == 100 and mm.flags == 1
    assert emu.counters()["live_mems"] == base + 1
    assert lib.rknn_destroy_mem(c.h, m) == SUCC
    assert lib.rknn_destroy_mem(c.h, m) == PARAM_INVALID     # double destroy
    assert lib.rknn_destroy_mem(c.h, None) == PARAM_INVALID
    junk = C.create_string_buffer(64)
    assert lib.rknn_destroy_mem(c.h, junk) == PARAM_INVALID   # never a mem
    assert emu.counters()["live_mems"] == base
    assert not lib.rknn_create_mem(c.h, 0)
    assert not lib.rknn_create_mem2(c.h, 16, MEM_CACHEABLE | MEM_NON_CACHEABLE)
    assert not lib.rknn_create_mem2(c.h, 16, 0x1000)
    assert not lib.rknn_create_mem2(0, 16, MEM_CACHEABLE)     # context needed
    m = lib.rknn_create_mem2(0, 16, MEM_NO_CONTEXT)
    assert m and lib.rknn_destroy_mem(0, m) == SUCC           # any context may free it
    m = lib.rknn_create_mem(c.h, 16)
    assert lib.rknn_destroy_mem(0, m) == CTX_INVALID
    assert lib.rknn_destroy_mem(c.h, m) == SUCC


def test_destroyed_mem_still_bound(emu, make_ctx):
    c, ia, oa = simple_ctx(make_ctx)
    _, _, im, _ = bind(c, ia, oa)
    assert c.destroy_mem(im) == SUCC
    assert c.run_rc() == PARAM_INVALID                       # never a crash


def test_try_sram(emu, make_ctx):
    c = make_ctx(samples.tiny_relu())
    free0 = c.query(Q_MEM_SIZE).free_sram_size
    m = c.create_mem(4096, MEM_TRY_SRAM)
    assert c.query(Q_MEM_SIZE).free_sram_size == free0 - 4096
    big = c.create_mem(2 << 20, MEM_TRY_SRAM)                 # does not fit: DRAM
    assert c.query(Q_MEM_SIZE).free_sram_size == free0 - 4096
    c.destroy_mem(m)
    c.destroy_mem(big)
    assert c.query(Q_MEM_SIZE).free_sram_size == free0


def test_set_io_mem_validation(emu, make_ctx):
    model = img_model("RK3588")
    c = make_ctx(model)
    lib = api()
    ia, oa = c.in_attr(0), c.out_attr(0)
    small = c.create_mem(ia.size_with_stride - 1)
    assert c.set_io_mem(small, ia) == PARAM_INVALID
    ok = c.create_mem(ia.size_with_stride)
    assert lib.rknn_set_io_mem(c.h, ok, None) == PARAM_INVALID
    assert c.set_io_mem(None, ia) == PARAM_INVALID
    bad = TensorAttr.from_buffer_copy(ia)
    bad.name = b"nope"
    assert c.set_io_mem(ok, bad) == PARAM_INVALID
    bad = TensorAttr.from_buffer_copy(oa)
    bad.fmt, bad.type = NC1HWC2, F32
    assert c.set_io_mem(ok, bad) == PARAM_INVALID
    bad = TensorAttr.from_buffer_copy(ia)
    bad.pass_through, bad.type = 1, U8
    assert c.set_io_mem(ok, bad) == PARAM_INVALID
    fo = TensorAttr.from_buffer_copy(oa)
    fo.type = F32
    om = c.create_mem(oa.n_elems * 4 - 1)
    assert c.set_io_mem(om, fo) == PARAM_INVALID
    assert c.set_io_mem(ok, ia) == SUCC


def test_create_mem_from_fd(emu, make_ctx):
    """A caller-owned memfd: virt NULL (the runtime maps it), offsets honoured."""
    c, ia, oa = simple_ctx(make_ctx)
    lib = api()
    fd = os.memfd_create("user-buf")
    os.ftruncate(fd, 3 * 4096)
    buf = mmap.mmap(fd, 3 * 4096)
    x = np.frombuffer(buf, np.float32)
    x[1024:1026] = [-2, 5]                                    # file offset 4096
    im = lib.rknn_create_mem_from_fd(c.h, fd, None, 8, 4096)
    om = lib.rknn_create_mem_from_fd(c.h, fd, None, 8, 8192)
    assert im and om and im.contents.offset == 4096 and im.contents.fd == fd
    assert im.contents.flags == 2
    c.mems += [im, om]
    assert c.set_io_mem(im, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    c.run()
    assert x[2048:2050].tolist() == [0, 5]
    x[1024:1026] = [4, 4]
    c.run()
    assert x[2048:2050].tolist() == [4, 4]
    assert not lib.rknn_create_mem_from_fd(c.h, fd, None, 8, 3 * 4096 - 4)   # past the end
    assert not lib.rknn_create_mem_from_fd(c.h, -1, None, 8, 0)
    assert not lib.rknn_create_mem_from_fd(c.h, fd, None, 8, -1)
    for m in c.mems:
        assert lib.rknn_destroy_mem(c.h, m) == SUCC
    c.mems = []
    del x
    buf.close()
    os.close(fd)


def test_create_mem_from_fd_with_virt(emu, make_ctx):
    """The fd of a runtime allocation, with its virt_addr: shares its device copy."""
    c, ia, oa = simple_ctx(make_ctx, FLAG_NO_FLUSH_IN | FLAG_NO_FLUSH_OUT)
    lib = api()
    a = c.create_mem(4096)
    b = lib.rknn_create_mem_from_fd(c.h, a.contents.fd, a.contents.virt_addr, 8, 16)
    assert addr(b) and b.contents.virt_addr == a.contents.virt_addr
    c.mems.append(b)
    va = mem_view(a, 4096, np.float32)
    va[4:6] = [1, -1]                                         # offset 16 = element 4
    assert c.sync(a, SYNC_TO_DEVICE) == SUCC                  # clean through the other mem
    om = c.create_mem(8)
    assert c.set_io_mem(b, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    c.run()
    assert c.sync(om, SYNC_FROM_DEVICE) == SUCC
    assert mem_view(om, 8, np.float32).tolist() == [1, 0]


def test_create_mem_from_phys(emu, make_ctx):
    c, ia, oa = simple_ctx(make_ctx)
    lib = api()
    a = c.create_mem(4096)
    p = a.contents.phys_addr
    m = lib.rknn_create_mem_from_phys(c.h, p + 64, None, 8)
    assert addr(m) and m.contents.virt_addr == a.contents.virt_addr + 64 and m.contents.flags == 3
    c.mems.append(m)
    mem_view(a, 4096, np.float32)[16:18] = [3, -3]
    om = c.create_mem(8)
    assert c.set_io_mem(m, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    c.run()
    assert mem_view(om, 8, np.float32).tolist() == [3, 0]
    assert not lib.rknn_create_mem_from_phys(c.h, 0x1234, None, 8)
    assert not lib.rknn_create_mem_from_phys(c.h, p + 4090, None, 8)   # runs past the end
    assert not lib.rknn_create_mem_from_mb_blk(c.h, None, 0)


def _dma_heap_alloc(heap: str, size: int) -> int:
    """A dma-buf fd of `size` bytes from a Linux dma-heap (DMA_HEAP_IOCTL_ALLOC)."""
    import fcntl
    import struct

    # struct dma_heap_allocation_data { __u64 len; __u32 fd; __u32 fd_flags; __u64 heap_flags; }
    # DMA_HEAP_IOCTL_ALLOC = _IOWR('H', 0x0, that struct): dir 3, size 24, type 'H', nr 0
    ioctl_alloc = (3 << 30) | (24 << 16) | (ord("H") << 8) | 0
    req = bytearray(struct.pack("=QIIQ", size, 0, os.O_RDWR | os.O_CLOEXEC, 0))
    hfd = os.open(heap, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(hfd, ioctl_alloc, req, True)
    finally:
        os.close(hfd)
    return struct.unpack("=QIIQ", bytes(req))[1]


def test_dma_heap(emu, make_ctx):
    """A buffer from a real dma-heap (what camera/RGA pipelines hand over), imported by fd."""
    heap = "/dev/dma_heap/system"
    if not os.path.exists(heap):
        pytest.skip("no dma-heap on this machine (the same import path is tested with memfd)")
    c, ia, oa = simple_ctx(make_ctx)
    lib = api()
    fd = _dma_heap_alloc(heap, 2 * 4096)
    buf = mmap.mmap(fd, 2 * 4096)
    x = np.frombuffer(buf, np.float32)
    x[0:2] = [-2, 5]
    im = lib.rknn_create_mem_from_fd(c.h, fd, None, 8, 0)
    om = lib.rknn_create_mem_from_fd(c.h, fd, None, 8, 4096)
    assert im and om and im.contents.fd == fd and om.contents.offset == 4096
    c.mems += [im, om]
    assert c.set_io_mem(im, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    c.run()
    assert x[1024:1026].tolist() == [0, 5]
    for m in c.mems:
        assert lib.rknn_destroy_mem(c.h, m) == SUCC
    c.mems = []
    del x
    buf.close()
    os.close(fd)


@pytest.mark.parametrize("chip", PLATFORMS)
def test_mem_alloc_outside(emu, make_ctx, chip):
    """rknn_set_internal_mem_from_fd / internal_mem_reuse demos."""
    model = img_model(chip)
    lib = api()
    c = make_ctx(model, flags=FLAG_MEM_OUTSIDE, platform=chip)
    ms = c.query(Q_MEM_SIZE)
    assert ms.total_weight_size > 0 and ms.total_internal_size > 0
    ia, oa = c.in_attr(0), c.out_attr(0)
    ia.type = U8
    oa.type = F32
    im, om = c.create_mem(ia.size_with_stride), c.create_mem(oa.n_elems * 4)
    assert c.set_io_mem(im, ia) == SUCC and c.set_io_mem(om, oa) == SUCC
    assert c.run_rc() == FAIL                                   # no weights yet
    w_small = c.create_mem(ms.total_weight_size - 1)
    assert lib.rknn_set_weight_mem(c.h, w_small) == PARAM_INVALID
    w = c.create_mem(ms.total_weight_size)
    assert lib.rknn_set_weight_mem(c.h, w) == SUCC
    assert c.run_rc() == FAIL                                   # no internal memory yet
    shared = c.create_mem(ms.total_internal_size + 4096)
    i1 = lib.rknn_create_mem_from_fd(c.h, shared.contents.fd, shared.contents.virt_addr,
                                     ms.total_internal_size, 0)
    c.mems.append(i1)
    assert lib.rknn_set_internal_mem(c.h, i1) == SUCC
    img = np.random.default_rng(15).integers(0, 256, (1, 4, 30, 3), dtype=np.uint8)
    write_strided(im, img, ia.w_stride)
    c.run()
    t, q = reference_out(model, img)
    np.testing.assert_array_equal(mem_view(om, oa.n_elems * 4, np.float32).reshape(oa.shape),
                                  float_output(t, q))
    # a second context reuses the same internal buffer
    c2 = make_ctx(model, flags=FLAG_MEM_OUTSIDE, platform=chip)
    i2 = lib.rknn_create_mem_from_fd(c2.h, shared.contents.fd, None, ms.total_internal_size, 0)
    c2.mems.append(i2)
    w2 = c2.create_mem(ms.total_weight_size)
    assert lib.rknn_set_internal_mem(c2.h, i2) == SUCC
    assert lib.rknn_set_weight_mem(c2.h, w2) == SUCC
    om2 = c2.create_mem(oa.n_elems * 4)
    assert c2.set_io_mem(im, ia) == SUCC and c2.set_io_mem(om2, oa) == SUCC
    c2.run()
    np.testing.assert_array_equal(mem_view(om2, oa.n_elems * 4, np.float32).reshape(oa.shape),
                                  float_output(t, q))
    # the general flow has no memory of its own in this mode (the mini runtime refuses it
    # anyway: -5, librknnmrt 2.3.2 on cls_img_rv1106)
    assert c2.inputs_set_rc([img]) == (PARAM_INVALID if chip == "RV1106" else FAIL)


def test_internal_alloc_outside_general(emu, make_ctx):
    model = img_model("RK3566")
    c = make_ctx(model, flags=FLAG_INTERNAL_OUTSIDE, platform="RK3566")
    img = np.zeros((1, 4, 30, 3), np.uint8)
    c.inputs_set([img])
    assert c.run_rc() == FAIL
    ms = c.query(Q_MEM_SIZE)
    m = c.create_mem(ms.total_internal_size)
    assert api().rknn_set_internal_mem(c.h, m) == SUCC
    c.run()
    t, q = reference_out(model, img)
    np.testing.assert_array_equal(c.outputs_get()[0], float_output(t, q))


def test_model_buffer_zero_copy(emu, make_ctx):
    lib = api()
    model = samples.tiny_relu()
    m = lib.rknn_create_mem2(0, len(model) + 100, MEM_NO_CONTEXT)
    C.memmove(m.contents.virt_addr + 100, model, len(model))
    ext = InitExtend()
    ext.model_buffer_fd = m.contents.fd
    ext.real_model_offset = 100
    ext.real_model_size = len(model)
    c = make_ctx(model, flags=FLAG_MODEL_ZERO_COPY, extend=ext)
    c.inputs_set([np.float32([[-1, 1]])])
    c.run()
    assert c.outputs_get()[0].tolist() == [[0, 1]]
    c.close()
    assert lib.rknn_destroy_mem(0, m) == SUCC
    bad = InitExtend()
    bad.model_buffer_fd = -1
    h = C.c_uint64()
    assert lib.rknn_init(C.byref(h), None, 0, FLAG_MODEL_ZERO_COPY, C.byref(bad)) == PARAM_INVALID
