"""rknnx.matmul and rknnx.Matmul: products equal to numpy for every dtype pair the NPU
supports (int4 packed, quantized operands, every B layout, dynamic shapes) on RK3588 and
RK3566, user mistakes refused before C with messages naming what was expected, the
refusal on RV1106, and the emulator's live counters back to baseline after every test
(the ``track`` fixture checks them)."""

from __future__ import annotations

import numpy as np
import pytest

import rknnx
from rknnx.linalg import KINDS, SUPPORTED
from rknnx.lowlevel import MatmulType

T = MatmulType
PAIRS = [(ka, kb, kc) for (ka, kb), outs in SUPPORTED.items() for kc in outs]
GENERAL = ("RK3588", "RK3566")


# ---- numpy side ------------------------------------------------------------------------------
def operand(kind, shape, rng):
    if kind == "float16":
        return rng.standard_normal(shape).astype(np.float16)
    lim = 8 if kind == "int4" else 100
    return rng.integers(-lim, lim, shape).astype(np.int8)


def reference(ka, kb, kc, a, b, sa=1.0, za=0, sb=1.0, zb=0, sc=1.0, zc=0, gs=0):
    """C = A @ B in float64 (integers exactly), with the quantization the types apply."""
    K, N = b.shape
    sbk = np.broadcast_to(np.asarray(sb, np.float64), (K, N)) if np.size(sb) in (1, N) else \
        np.asarray(sb, np.float64).reshape(N, K // gs).repeat(gs, axis=1).T
    zbk = np.broadcast_to(np.asarray(zb, np.int64), (K, N))
    if ka == "float16":
        bf = b.astype(np.float64) if kb == "float16" else (b.astype(np.float64) - zbk) * sbk
        return a.astype(np.float64) @ bf
    A = a.astype(np.int64) - za
    B = b.astype(np.int64) - zbk
    if kc in ("int32", "int16"):
        info = np.iinfo(kc)
        return np.clip(A @ B, info.min, info.max)
    if kc == "int8":
        return np.clip(np.rint((A @ B) * (sa * sbk[0]) / sc) + zc, -128, 127)
    return (A[:, :, None] * B[None, :, :] * sa * sbk[None]).sum(axis=1)


def compare(kc, got, want):
    if kc == "bfloat16":
        assert got.dtype == np.uint16
        got = (got.astype(np.uint32) << 16).view(np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * np.abs(want).max())
    elif kc in ("float32", "float16"):
        assert got.dtype == np.dtype(kc)
        tol = 2e-3 if kc == "float16" else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol,
                                   atol=tol * max(np.abs(want).max(), 1))
    elif kc == "int8":
        assert got.dtype == np.int8
        assert np.abs(got.astype(np.int64) - want).max() <= 1      # a tie may round either way
    else:
        assert got.dtype == np.dtype(kc)
        np.testing.assert_array_equal(got, want.astype(kc))


def dtypes_kw(ka, kb):
    return dict(a_dtype="int4" if ka == "int4" else None, b_dtype="int4" if kb == "int4" else None)


# ---- rknnx.matmul: numbers -----------------------------------------------------------------
@pytest.mark.parametrize("platform", GENERAL)
@pytest.mark.parametrize("ka, kb, kc", PAIRS)
def test_matmul_every_dtype_pair_matches_numpy(track, platform, ka, kb, kc):
    track.ctl.set_platform(platform)
    rng = np.random.default_rng(len(ka) * 7 + len(kc))
    a, b = operand(ka, (3, 64), rng), operand(kb, (64, 40), rng)
    if platform == "RK3566" and "int4" in (ka, kb):
        # RK3566's runtime has no int4 matmul: its refusal comes through unchanged
        with pytest.raises(rknnx.errors.ParamInvalidError) as ei:
            rknnx.matmul(a, b, out_dtype=kc, **dtypes_kw(ka, kb))
        assert ei.value.func == "rknn_matmul_create"
        return
    got = rknnx.matmul(a, b, out_dtype=kc, **dtypes_kw(ka, kb))
    assert got.shape == (3, 40)
    compare(kc, got, reference(ka, kb, kc, a, b))


@pytest.mark.parametrize("ka, kb, default", [
    ("float16", "float16", np.float32), ("int8", "int8", np.int32),
    ("float16", "int8", np.float32), ("float16", "int4", np.float32),
    ("int8", "int4", np.int32), ("int4", "int4", np.int16)])
def test_default_output_dtype_follows_the_operands(track, ka, kb, default):
    track.ctl.set_platform("RK3588")
    rng = np.random.default_rng(1)
    a, b = operand(ka, (2, 32), rng), operand(kb, (32, 8), rng)
    got = rknnx.matmul(a, b, **dtypes_kw(ka, kb))
    assert got.dtype == default
    compare(np.dtype(default).name, got, reference(ka, kb, np.dtype(default).name, a, b))


def test_one_dimensional_a_gives_a_one_dimensional_result_like_numpy(track):
    track.ctl.set_platform("RK3588")
    rng = np.random.default_rng(2)
    a, b = operand("float16", (48,), rng), operand("float16", (48, 24), rng)
    got = rknnx.matmul(a, b)
    assert got.shape == (24,)
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5,
                               atol=1e-5 * np.abs(got).max())
    ai, bi = operand("int8", (33,), rng), operand("int8", (33, 7), rng)   # odd K and N
    np.testing.assert_array_equal(rknnx.matmul(ai, bi), ai.astype(np.int32) @ bi)


_QUANTIZED = [("int8", "int8", "int32", "layer"), ("int8", "int8", "int8", "layer"),
              ("int8", "int8", "float32", "channel"), ("int8", "int8", "int8", "channel"),
              ("float16", "int8", "float32", "channel"), ("float16", "int8", "float16", "layer"),
              ("float16", "int4", "float32", "group"), ("float16", "int8", "float32", "group"),
              ("int8", "int4", "int32", "channel")]


def _on_chips(cases):
    """(platform, *case) for every chip that has the case's types (RK3566: no int4; its
    refusal is checked in the dtype-pair test)."""
    return [(p, *c) for p in GENERAL for c in cases if not (p == "RK3566" and "int4" in c[:2])]


@pytest.mark.needs("rknn_matmul_set_quant_params")
@pytest.mark.parametrize("platform, ka, kb, kc, how", _on_chips(_QUANTIZED))
def test_quantized_products_match_numpy(track, platform, ka, kb, kc, how):
    track.ctl.set_platform(platform)
    rng = np.random.default_rng(11)
    K, N, gs = 128, 40, (32 if how == "group" else 0)
    a, b = operand(ka, (3, K), rng), operand(kb, (K, N), rng)
    nq = {"layer": 1, "channel": N, "group": N * K // 32}[how]
    sb = rng.uniform(0.005, 0.05, nq).astype(np.float32)
    zb = 0 if how == "group" else int(rng.integers(-3, 4))
    za = int(rng.integers(-3, 4)) if ka == "int8" else 0
    quant = {"A": (0.03, za), "B": (sb, zb), "C": (0.7, 2)}
    got = rknnx.matmul(a, b, out_dtype=kc, quant=quant, group_size=gs, **dtypes_kw(ka, kb))
    want = reference(ka, kb, kc, a, b, sa=np.float32(0.03), za=za, sb=sb, zb=zb,
                     sc=np.float32(0.7), zc=2, gs=gs)
    compare(kc, got, want)


def test_core_mask_is_applied_on_rk3588(track):
    track.ctl.set_platform("RK3588")
    a, b = np.ones((2, 32), np.int8), np.ones((32, 4), np.int8)
    got = rknnx.matmul(a, b, core_mask=rknnx.lowlevel.CoreMask.CORE_0_1)
    np.testing.assert_array_equal(got, np.full((2, 4), 32, np.int32))


# ---- rknnx.matmul: mistakes, before C --------------------------------------------------------
@pytest.mark.parametrize("a, b, kw, exc, msg", [
    (np.ones((2, 4), np.float32), np.ones((4, 3), np.float32), {}, TypeError,
     r"no NPU matmul multiplies float32 x float32; supported \(a x b -> C\): "
     r"float16 x float16 -> float32 or float16; int8 x int8 -> int32 or int8 or float32"),
    (np.ones((2, 4), np.int8), np.ones((4, 3), np.float16), {}, TypeError,
     "no NPU matmul multiplies int8 x float16"),
    (np.ones((2, 4), np.float16), np.ones((4, 3), np.float16), dict(out_dtype=np.int32),
     TypeError, r"float16 x float16 gives float32 or float16, not int32 \(out_dtype\)"),
    (np.ones((2, 4), np.float16), np.ones((4, 3), np.float16), dict(b_dtype="int4"),
     TypeError, "b_dtype='int4' needs an integer array"),
    (np.ones((2, 4), np.int8), np.ones((4, 3), np.int8), dict(a_dtype=np.float16),
     TypeError, "a has dtype int8, but a_dtype says float16"),
    (np.ones((2, 4), np.float16), np.ones((5, 3), np.float16), {}, ValueError,
     r"shapes \(2, 4\) and \(5, 3\) do not chain: b must be \(K, N\) with K = 4"),
    (np.ones((2, 4), np.float16), np.ones(4, np.float16), {}, ValueError,
     r"b must be \(K, N\), got shape \(4,\)"),
    (np.ones((1, 2, 4), np.float16), np.ones((4, 3), np.float16), {}, ValueError,
     r"a must be \(M, K\) or \(K,\)"),
    (np.ones((0, 4), np.float16), np.ones((4, 3), np.float16), {}, ValueError,
     "empty operands"),
    (np.ones((2, 4), np.float16), np.full((4, 3), 8, np.int8), dict(b_dtype="int4"),
     ValueError, r"b is int4: values must be in -8..7, got 8..8"),
    (np.ones((2, 4), np.float16), np.ones((4, 3), np.float16), dict(quant={"A": 0.5}),
     ValueError, "multiplies floats: it takes no quantization"),
    (np.ones((2, 4), np.int8), np.ones((4, 3), np.int8), dict(quant={"B": [1.0, 2.0]}),
     ValueError, r"quant\['B'\] needs 1 scale \(per layer\) or N=3 scales"),
    (np.ones((2, 4), np.int8), np.ones((4, 3), np.int8), dict(quant={"D": 1.0}),
     ValueError, "quant keys must be 'A', 'B' and 'C'"),
    (np.ones((2, 4), np.int8), np.ones((4, 3), np.int8), dict(quant={"C": 0.0}),
     ValueError, r"quant\['C'\] scales must be positive and finite"),
    (np.ones((2, 4), np.int8), np.ones((4, 3), np.int8), dict(quant={"A": (1.0, 0.5)}),
     TypeError, r"quant\['A'\] zero points must be integers"),
    (np.ones((2, 4), np.int8), np.ones((4, 3), np.int8), dict(quant=[1.0]),
     TypeError, "quant must be a mapping"),
    (np.ones((2, 64), np.float16), np.ones((64, 3), np.int8),
     dict(quant={"B": np.ones(5)}, group_size=32), ValueError,
     r"per-group B quantization \(group_size=32\) needs .* 6 scales, got K=64 and 5"),
])
def test_matmul_mistakes_raise_before_c(track, a, b, kw, exc, msg):
    track.ctl.set_platform("RK3588")
    before = track.ctl.counters()["contexts_created"]
    with pytest.raises(exc, match=msg):
        rknnx.matmul(a, b, **kw)
    assert track.ctl.counters()["contexts_created"] == before


@pytest.mark.parametrize("chip", ["RV1106", "RV1103", "RK2118"])
def test_chips_without_matmul_refuse_naming_chip_and_function(track, chip):
    track.ctl.set_platform(chip)
    before = track.ctl.counters()["contexts_created"]
    with pytest.raises(rknnx.NotSupportedError,
                       match=f"rknnx.matmul: rknn_matmul_create is not supported on "
                             f"{chip}") as ei:
        rknnx.matmul(np.ones((2, 32), np.int8), np.ones((32, 4), np.int8))
    assert ei.value.func == "rknn_matmul_create"
    with pytest.raises(rknnx.NotSupportedError, match=f"rknnx.Matmul: rknn_matmul_create is not "
                                                           f"supported on {chip}"):
        rknnx.Matmul(2, 32, 4, a_dtype=np.int8, b_dtype=np.int8)
    assert track.ctl.counters()["contexts_created"] == before
    assert rknnx.lowlevel.live_contexts() == 0


# ---- rknnx.Matmul ----------------------------------------------------------------------------
@pytest.mark.needs("rknn_B_normal_layout_to_native_layout")
@pytest.mark.parametrize("b_layout", ["normal", "native", "transposed"])
@pytest.mark.parametrize("platform, ka, kb, kc", _on_chips([
    ("float16", "float16", "float32"), ("int8", "int8", "int32"), ("float16", "int8", "float16"),
    ("float16", "int4", "float32"), ("int4", "int4", "int16")]))
def test_views_of_npu_memory_reused_across_runs(track, platform, b_layout, ka, kb, kc):
    track.ctl.set_platform(platform)
    rng = np.random.default_rng(5)
    M, K, N = 4, 64, 40
    b = operand(kb, (K, N), rng)
    with rknnx.Matmul(M, K, N, a_dtype=ka, b_dtype=kb, out_dtype=kc, b=b,
                      b_layout=b_layout) as mm:
        assert mm.type == KINDS_TYPE(ka, kb, kc) and mm.shape == (M, K, N)
        A, C = mm.A, mm.C
        assert C.shape == (M, N) and C.dtype == np.dtype(kc)
        assert A.shape == ((M * K // 2,) if ka == "int4" else (M, K))
        for _ in range(3):
            a = operand(ka, (M, K), rng)
            if ka == "int4":
                mm.set_a(a)
            else:
                mm.A[...] = a                        # straight into NPU memory
            mm.run()
            compare(kc, C.copy(), reference(ka, kb, kc, a, b))
            assert mm.A is A and mm.C is C           # bound once, the same views
        del A, C


def KINDS_TYPE(ka, kb, kc):
    return SUPPORTED[(ka, kb)][kc]


@pytest.mark.needs("rknn_B_normal_layout_to_native_layout")
def test_set_b_with_native_bytes_and_call_convenience(track):
    track.ctl.set_platform("RK3588")
    rng = np.random.default_rng(6)
    b = operand("int8", (64, 32), rng)
    nb = rknnx.lowlevel.b_normal_layout_to_native_layout(b, 64, 32, T.INT8_MM_INT8_TO_INT32)
    with rknnx.Matmul(2, 64, 32, T.INT8_MM_INT8_TO_INT32, b_layout="native") as mm:
        mm.set_b(nb, layout="native")                # already converted: copied as is
        np.testing.assert_array_equal(mm.B, nb)
        a = operand("int8", (2, 64), rng)
        c = mm(a)
        assert c.dtype == np.int32 and not np.shares_memory(c, mm.C)
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b)
        with pytest.raises(ValueError, match=r"a must have shape \(2, 64\)"):
            mm(a[1])                                 # 1-D is M = 1: not this static shape
    assert mm.closed


@pytest.mark.needs("rknn_B_normal_layout_to_native_layout")
def test_call_with_b_and_one_dimensional_a(track):
    track.ctl.set_platform("RK3566")
    rng = np.random.default_rng(7)
    with rknnx.Matmul(type="FLOAT16_MM_FLOAT16_TO_FLOAT32",
                      shapes=[(1, 32, 16), (4, 32, 16)]) as mm:
        a, b = operand("float16", (32,), rng), operand("float16", (32, 16), rng)
        got = mm(a, b)                               # (1, 32, 16) is a shape: it is chosen
        assert got.shape == (16,) and mm.shape == (1, 32, 16)
        np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32),
                                   rtol=1e-5, atol=1e-4)
        a4 = operand("float16", (4, 32), rng)
        got4 = mm(a4)                                # B kept, shape switched to M = 4
        assert got4.shape == (4, 16) and mm.shape == (4, 32, 16)
        np.testing.assert_allclose(got4, a4.astype(np.float32) @ b.astype(np.float32),
                                   rtol=1e-5, atol=1e-4)


@pytest.mark.needs("rknn_matmul_create_dynamic_shape")
@pytest.mark.parametrize("platform", GENERAL)
def test_dynamic_shapes_remake_the_views(track, platform):
    track.ctl.set_platform(platform)
    rng = np.random.default_rng(8)
    shapes = [(1, 64, 32), (4, 64, 32), (7, 64, 32)]
    b = operand("int8", (64, 32), rng)
    with rknnx.Matmul(shapes=shapes, a_dtype=np.int8, b_dtype=np.int8, b=b,
                      b_layout="native") as mm:
        assert mm.shapes == tuple(shapes) and mm.shape == shapes[0]
        assert mm.A.shape == (1, 64) and mm.C.shape == (1, 32)
        for s in reversed(shapes):
            mm.set_shape(*s)
            assert mm.shape == s and mm.A.shape == (s[0], 64) and mm.C.shape == (s[0], 32)
            a = operand("int8", (s[0], 64), rng)
            mm.A[...] = a
            mm.run()
            np.testing.assert_array_equal(mm.C, a.astype(np.int64) @ b)
        with pytest.raises(ValueError, match=r"\(2, 64, 32\) is not one of this Matmul's "
                                             r"shapes \[\(1, 64, 32\), \(4, 64, 32\), \(7, 64, 32\)\]"):
            mm.set_shape(2, 64, 32)


@pytest.mark.needs("rknn_matmul_create_dynamic_shape")
def test_dynamic_shapes_with_another_k_take_a_new_b(track):
    track.ctl.set_platform("RK3588")
    rng = np.random.default_rng(9)
    with rknnx.Matmul(shapes=[(2, 32, 16), (3, 64, 16)], a_dtype="float16",
                      b_dtype="float16", b_layout="transposed") as mm:
        for s in mm.shapes:
            a, b = operand("float16", s[:2], rng), operand("float16", s[1:], rng)
            mm.set_shape(*s)
            assert mm.B.shape == (s[2], s[1])        # transposed: (N, K)
            mm.set_b(b)
            mm.set_a(a)
            mm.run()
            np.testing.assert_allclose(mm.C, a.astype(np.float32) @ b.astype(np.float32),
                                       rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("args, kw, exc, msg", [
    ((2, 64, 32), {}, TypeError, r"needs type= \(a MatmulType\) or a_dtype= and b_dtype="),
    ((2, 64, 32, T.INT8_MM_INT8_TO_INT32), dict(a_dtype=np.int8), TypeError,
     "give type= or the dtypes"),
    ((2, 64), dict(a_dtype=np.int8, b_dtype=np.int8), TypeError, "needs M, K and N"),
    ((2, 0, 32), dict(a_dtype=np.int8, b_dtype=np.int8), ValueError, r"K must be in 1\.\.65536, got 0"),
    ((2, "64", 32), dict(a_dtype=np.int8, b_dtype=np.int8), TypeError, "K must be an int"),
    ((2, 64, 32, "INT9_MM"), {}, ValueError, "'INT9_MM' is not a MatmulType name"),
    ((2, 64, 32, 13), {}, ValueError, "13 is not a MatmulType"),
    ((2, 64, 32), dict(a_dtype=np.float32, b_dtype=np.float16), TypeError,
     "no NPU matmul multiplies float32 x float16"),
    ((2, 64, 32), dict(a_dtype=np.int8, b_dtype=np.int8, b_layout="tiled"), ValueError,
     "b_layout must be 'normal', 'native' or 'transposed', got 'tiled'"),
    ((), dict(type=1, shapes=[]), ValueError, "shapes needs at least one"),
    ((), dict(type=1, shapes=[(1, 2)]), TypeError, r"shapes must be \(M, K, N\) triples"),
    ((2, 64, 32), dict(type=1, shapes=[(2, 64, 32)]), TypeError, "not both"),
    ((2, 64, 32), dict(a_dtype=np.int8, b_dtype=np.int8, b=np.ones((32, 64), np.int8)),
     ValueError, r"b must have shape \(64, 32\) .* got \(32, 64\)"),
    ((2, 64, 32), dict(a_dtype=np.int8, b_dtype=np.int8, b=np.ones((64, 32), np.float16)),
     TypeError, "b must be int8 for INT8_MM_INT8_TO_INT32, got float16"),
])
def test_matmul_object_arguments_checked(track, args, kw, exc, msg):
    track.ctl.set_platform("RK3588")
    with pytest.raises(exc, match=msg):
        rknnx.Matmul(*args, **kw)
    assert rknnx.lowlevel.live_contexts() == 0      # a failed constructor closes what it made


def test_writes_checked_against_the_current_shape(track):
    track.ctl.set_platform("RK3588")
    with rknnx.Matmul(2, 64, 32, a_dtype="int8", b_dtype="int4") as mm:
        with pytest.raises(ValueError, match=r"a must have shape \(2, 64\) for the current "
                                             r"shape \(M, K, N\) = \(2, 64, 32\), got \(64, 2\)"):
            mm.set_a(np.ones((64, 2), np.int8))
        with pytest.raises(TypeError, match="a must be int8"):
            mm.set_a(np.ones((2, 64), np.float16))
        with pytest.raises(TypeError, match="b is int4 here: give integer values in -8..7"):
            mm.set_b(np.ones((64, 32), np.float16))
        with pytest.raises(ValueError, match="b is int4: values must be in -8..7, got -9..1"):
            mm.set_b(np.where(np.eye(64, 32) > 0, -9, 1).astype(np.int8))
        with pytest.raises(ValueError, match="layout='native' needs a Matmul made with "
                                             "b_layout='native'"):
            mm.set_b(np.zeros(1024, np.uint8), layout="native")
        with pytest.raises(ValueError, match="layout must be 'normal' or 'native'"):
            mm.set_b(np.zeros((64, 32), np.int8), layout="tp")
        with pytest.raises(ValueError, match="not one of this Matmul's shapes"):
            mm.set_shape(4, 64, 32)
        with pytest.raises(ValueError, match=r"a must be 1-D \(K,\) or 2-D"):
            mm(np.ones((1, 2, 64), np.int8))
    with rknnx.Matmul(2, 64, 32, T.INT8_MM_INT8_TO_INT32, b_layout="native") as mm:
        with pytest.raises(ValueError, match="a native B here is 2048 bytes of int8"):
            mm.set_b(np.zeros(100, np.int8), layout="native")


# ---- lifetime --------------------------------------------------------------------------------
def test_close_refuses_while_a_view_is_alive_then_works(track):
    track.ctl.set_platform("RK3588")
    mm = rknnx.Matmul(2, 32, 16, a_dtype=np.int8, b_dtype=np.int8)
    kept = mm.C[0]                                   # a view derived from C
    with pytest.raises(BufferError, match="numpy views of C are still alive"):
        mm.close()
    assert not mm.closed                             # nothing was freed: still usable
    mm.set_b(np.ones((32, 16), np.int8))
    mm.A[...] = 1
    mm.run()
    np.testing.assert_array_equal(kept, np.full(16, 32, np.int32))
    del kept
    mm.close()
    assert mm.closed and repr(mm) == "<rknnx.Matmul closed>"
    mm.close()                                       # twice: nothing
    for name, call in (("run", mm.run), ("A", lambda: mm.A), ("C", lambda: mm.C),
                       ("set_a", lambda: mm.set_a(np.ones((2, 32), np.int8))),
                       ("set_b", lambda: mm.set_b(np.ones((32, 16), np.int8))),
                       ("set_shape", lambda: mm.set_shape(2, 32, 16)),
                       ("__call__", lambda: mm(np.ones((2, 32), np.int8))),
                       ("shape", lambda: mm.shape)):
        with pytest.raises(ValueError, match=rf"rknnx.Matmul.{name}: this Matmul is closed"):
            call()
    with pytest.raises(ValueError, match="closed"):
        with mm:
            pass


def test_with_block_exception_is_not_masked_by_a_live_view(track):
    track.ctl.set_platform("RK3588")
    kept = []
    with pytest.raises(KeyError, match="in the block"):
        with rknnx.Matmul(1, 32, 16, a_dtype=np.float16, b_dtype=np.float16) as mm:
            kept.append(mm.C)
            raise KeyError("in the block")
    assert not mm.closed
    kept.clear()
    mm.close()
    assert mm.closed


def test_many_products_leave_the_counters_at_baseline(track):
    from helpers import live

    track.ctl.set_platform("RK3588")
    base = live(track.ctl)
    rng = np.random.default_rng(10)
    for i in range(50):
        a, b = operand("int8", (2, 32), rng), operand("int8", (32, 8), rng)
        np.testing.assert_array_equal(rknnx.matmul(a, b), a.astype(np.int64) @ b)
    assert live(track.ctl) == base and rknnx.lowlevel.live_contexts() == 0
