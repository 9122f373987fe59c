"""The emulator's model half (emulator/model.c, emulator/exec.c, emulator/model_standin.c)
against the numpy reference.

The C files are compiled at test time into a small shared library (no runtime half needed)
and driven through ctypes with the contract of emulator/emu_model.h.  Integer outputs must
be *equal* to python/rknnx/emulator/reference.py; float outputs close to rounding.
"""

import ctypes as C
import pathlib
import shutil
import subprocess
import threading
import zlib

import numpy as np
import pytest


ROOT = pathlib.Path(__file__).resolve().parents[2]
RKNN_SUCC, RKNN_ERR_FAIL, RKNN_ERR_PARAM_INVALID, RKNN_ERR_MODEL_INVALID = 0, -1, -5, -6
RKNN_ERR_INPUT_INVALID, RKNN_ERR_OUTPUT_INVALID = -8, -9
TARGETS = ["RK3588", "RK3566", "RV1106"]


from rknnx.emulator import ModelBuilder, builder, reference, samples


# ---- ctypes view of emu_model.h ---------------------------------------------------------------

class Desc(C.Structure):
    _fields_ = [("name", C.c_char * 256), ("n_dims", C.c_uint32), ("dims", C.c_uint32 * 16),
                ("fmt", C.c_int), ("type", C.c_int), ("qnt_type", C.c_int), ("fl", C.c_int8),
                ("zp", C.c_int32), ("scale", C.c_float), ("n_norm", C.c_uint32),
                ("mean", C.c_float * 15), ("std", C.c_float * 15), ("vendor_rules", C.c_int)]


class View(C.Structure):
    _fields_ = [("desc", Desc), ("data", C.c_void_p)]


CUSTOM_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_uint32, C.c_char_p, C.POINTER(View),
                        C.c_uint32, C.POINTER(View), C.c_uint32)


class Env(C.Structure):
    _fields_ = [("weights", C.c_void_p), ("internal", C.c_void_p), ("internal_size", C.c_uint64),
                ("shape_set", C.c_uint32), ("custom_op", CUSTOM_FN), ("custom_user", C.c_void_p),
                ("op_time_us", C.POINTER(C.c_int64))]


def _sig(lib, name, res, *args):
    f = getattr(lib, name)
    f.restype, f.argtypes = res, list(args)


@pytest.fixture(scope="session")
def lib(tmp_path_factory):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    out = tmp_path_factory.mktemp("emu_model") / "libemu_model.so"
    cmd = [cc, "-std=c11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
           "-ffp-contract=off", f"-I{ROOT}/include/rknnx", f"-I{ROOT}/emulator",
           str(ROOT / "emulator" / "model.c"), str(ROOT / "emulator" / "exec.c"),
           str(ROOT / "emulator" / "model_standin.c"), "-lm", "-o", str(out)]
    subprocess.run(cmd, check=True)
    L = C.CDLL(str(out))
    P, U32, U64 = C.c_void_p, C.c_uint32, C.c_uint64
    _sig(L, "emu_model_load", C.c_int, C.c_char_p, C.c_size_t, C.POINTER(P))
    _sig(L, "emu_model_free", None, P)
    _sig(L, "emu_model_target", C.c_char_p, P)
    _sig(L, "emu_model_custom_string", C.c_char_p, P)
    _sig(L, "emu_model_n_inputs", U32, P)
    _sig(L, "emu_model_n_outputs", U32, P)
    _sig(L, "emu_model_input", C.POINTER(Desc), P, U32)
    _sig(L, "emu_model_output", C.POINTER(Desc), P, U32)
    _sig(L, "emu_model_n_shape_sets", U32, P)
    _sig(L, "emu_model_input_dims", C.POINTER(U32), P, U32, U32, C.POINTER(U32))
    _sig(L, "emu_model_output_dims", C.POINTER(U32), P, U32, U32, C.POINTER(U32))
    _sig(L, "emu_model_weight_size", U64, P)
    _sig(L, "emu_model_weights", P, P)
    _sig(L, "emu_model_internal_size", U64, P)
    _sig(L, "emu_model_n_ops", U32, P)
    _sig(L, "emu_model_op_name", C.c_char_p, P, U32)
    _sig(L, "emu_model_op_type", C.c_char_p, P, U32)
    _sig(L, "emu_model_op_attr", C.c_int, P, U32, C.c_char_p, C.POINTER(C.c_int), C.POINTER(U32),
         C.POINTER(C.c_void_p))
    _sig(L, "emu_model_run", C.c_int, P, P, P, C.POINTER(Env))
    return L


class CModel:
    """One emu_model loaded through the C parser."""

    def __init__(self, lib, data: bytes):
        self.lib, self.h = lib, C.c_void_p()
        self.rc = lib.emu_model_load(data, len(data), C.byref(self.h))
        self.desc = builder.decode(data) if self.rc == 0 else None

    def close(self):
        if self.h:
            self.lib.emu_model_free(self.h)
            self.h = C.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def dims(self, kind, set_, i):
        n = C.c_uint32()
        f = self.lib.emu_model_input_dims if kind == "in" else self.lib.emu_model_output_dims
        p = f(self.h, set_, i, C.byref(n))
        return None if not p else tuple(p[k] for k in range(n.value))

    def run(self, inputs, shape_set=0, custom=None, weights=None, internal=None, op_times=None):
        """Run; returns (status, outputs)."""
        m = self.desc
        n_sets = max(1, m.n_shape_sets)
        outs = []
        for o in range(len(m.outputs)):
            d = self.dims("out", min(shape_set, n_sets - 1), o)
            outs.append(np.zeros(d, builder.np_dtype(m.tensors[m.outputs[o]].dtype)))
        ins = [np.ascontiguousarray(a) for a in inputs]
        if internal is None:
            internal = np.zeros(max(1, self.lib.emu_model_internal_size(self.h)), np.uint8)
        wptr = self.lib.emu_model_weights(self.h) if weights is None else weights.ctypes.data
        env = Env(wptr, internal.ctypes.data, internal.size, shape_set,
                  custom if custom is not None else CUSTOM_FN(0), None, op_times)
        ip = (C.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
        op = (C.c_void_p * len(outs))(*[a.ctypes.data for a in outs])
        rc = self.lib.emu_model_run(self.h, ip, op, C.byref(env))
        return rc, outs


def random_inputs(m, rng, shape_set=0):
    dims = builder.infer_shapes(m, shape_set)
    arrs = []
    for n in m.inputs:
        t = m.tensors[n]
        dt = builder.np_dtype(t.dtype)
        if dt.kind in "iu":
            info = np.iinfo(dt)
            arrs.append(rng.integers(info.min, int(info.max) + 1, size=dims[n]).astype(dt))
        else:
            arrs.append((rng.standard_normal(dims[n]) * 2).astype(dt))
    return arrs


def assert_matches(m, outs, refs, rtol=1e-5, atol=1e-6):
    for name, o, r in zip(m.outputs, outs, refs):
        assert o.dtype == r.dtype and o.shape == r.shape, name
        if o.dtype.kind in "iu":
            np.testing.assert_array_equal(o, r, err_msg=name)
        elif o.dtype == np.float16:
            np.testing.assert_allclose(o.astype(np.float32), r.astype(np.float32), rtol=2e-3, atol=2e-3,
                                       err_msg=name)
        else:
            np.testing.assert_allclose(o, r, rtol=rtol, atol=atol, err_msg=name)


def check_model(lib, data, seed=0, shape_sets=None, custom=None, custom_ref=None, n_runs=1):
    with CModel(lib, data) as cm:
        assert cm.rc == RKNN_SUCC
        m = cm.desc
        rng = np.random.default_rng(seed)
        for s in (shape_sets if shape_sets is not None else range(max(1, m.n_shape_sets))):
            for _ in range(n_runs):
                ins = random_inputs(m, rng, s)
                rc, outs = cm.run(ins, s, custom)
                assert rc == RKNN_SUCC
                refs = reference.run_reference(m, ins, s, custom_ops=custom_ref)
                assert_matches(m, outs, refs)
        return m


# ---- sample models ----------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["classifier", "detector_random", "multi_io", "dynamic", "tiny_relu",
                                  "tiny_int8_add"])
def test_sample_matches_reference(lib, name, target):
    data = samples.ALL[name](target)
    m = check_model(lib, data, seed=zlib.crc32(f"{name}/{target}".encode()) % 1000)
    with CModel(lib, data) as cm:
        assert cm.lib.emu_model_target(cm.h).decode() == target
        assert cm.lib.emu_model_custom_string(cm.h).decode() == m.custom_string
        assert cm.lib.emu_model_n_inputs(cm.h) == len(m.inputs)
        assert cm.lib.emu_model_n_outputs(cm.h) == len(m.outputs)


def test_sample_outputs_use_their_range(lib):
    """Calibration worked: the int8 outputs of the samples are not saturated constants."""
    for name in ("classifier", "detector_random"):
        data = samples.ALL[name]()
        m = builder.decode(data)
        ins = random_inputs(m, np.random.default_rng(1))
        for r in reference.run_reference(m, ins):
            assert len(np.unique(r)) > 50
            assert np.mean((r == 127) | (r == -128)) < 0.05


def test_io_descs(lib):
    data = samples.multi_io("RK3566")
    with CModel(lib, data) as cm:
        m = cm.desc
        d = cm.lib.emu_model_input(cm.h, 0).contents
        assert d.name == b"image" and d.n_dims == 4 and tuple(d.dims[:4]) == (1, 32, 32, 3)
        assert d.fmt == 1 and d.type == 2 and d.qnt_type == 2          # NHWC, INT8, AFFINE
        t = m.tensors["image"]
        assert d.zp == t.zp[0] and d.scale == pytest.approx(t.scale[0], rel=1e-7)
        assert d.n_norm == 3 and list(d.mean[:3]) == [127.5] * 3 and list(d.std[:3]) == [127.5] * 3
        d = cm.lib.emu_model_input(cm.h, 1).contents
        assert (d.name, d.type, d.fmt, d.qnt_type, d.n_norm) == (b"feat", 1, 3, 0, 0)
        d = cm.lib.emu_model_input(cm.h, 2).contents
        assert (d.name, d.type, d.n_dims, tuple(d.dims[:3])) == (b"seq", 0, 3, (1, 8, 16))
        outs = [cm.lib.emu_model_output(cm.h, i).contents for i in range(4)]
        assert [o.name for o in outs] == [b"conv_out", b"feat_out", b"seq_out", b"feat_q"]
        assert outs[0].fmt == 0 and tuple(outs[0].dims[:4]) == (1, 8, 16, 16)   # NCHW
        assert outs[3].type == 2 and outs[3].zp == -128
        assert not cm.lib.emu_model_input(cm.h, 3)
        assert not cm.lib.emu_model_output(cm.h, 4)
        assert cm.dims("in", 0, 0) == (1, 32, 32, 3)       # static model: set 0 answers
        assert cm.dims("in", 1, 0) is None
        assert cm.lib.emu_model_n_shape_sets(cm.h) == 0
        names = [cm.lib.emu_model_op_name(cm.h, i) for i in range(cm.lib.emu_model_n_ops(cm.h))]
        assert len(names) == len(m.ops) and cm.lib.emu_model_op_type(cm.h, 0) == b"conv2d"
        assert cm.lib.emu_model_op_name(cm.h, 999) is None


def test_weights_read_through_env(lib):
    """The executor reads constants only through env->weights."""
    data = samples.classifier()
    with CModel(lib, data) as cm:
        ins = random_inputs(cm.desc, np.random.default_rng(3))
        size = cm.lib.emu_model_weight_size(cm.h)
        copy = np.frombuffer(C.string_at(cm.lib.emu_model_weights(cm.h), size), np.uint8).copy()
        rc, a = cm.run(ins, weights=copy)
        assert rc == 0
        assert_matches(cm.desc, a, reference.run_reference(cm.desc, ins))
        rc, b = cm.run(ins, weights=np.zeros_like(copy))
        assert rc == 0 and not np.array_equal(a[0], b[0])


def test_run_validation(lib):
    data = samples.dynamic()
    with CModel(lib, data) as cm:
        ins = random_inputs(cm.desc, np.random.default_rng(0))
        need = cm.lib.emu_model_internal_size(cm.h)
        rc, _ = cm.run(ins, internal=np.zeros(need - 1, np.uint8))
        assert rc == RKNN_ERR_PARAM_INVALID
        rc, _ = cm.run(ins, shape_set=3)
        assert rc == RKNN_ERR_PARAM_INVALID
        env = Env(cm.lib.emu_model_weights(cm.h), None, 0, 0, CUSTOM_FN(0), None, None)
        rc = cm.lib.emu_model_run(cm.h, (C.c_void_p * 1)(None), (C.c_void_p * 2)(None, None), C.byref(env))
        assert rc == RKNN_ERR_PARAM_INVALID
        internal = np.zeros(need, np.uint8)
        env = Env(cm.lib.emu_model_weights(cm.h), internal.ctypes.data, need, 0, CUSTOM_FN(0), None, None)
        rc = cm.lib.emu_model_run(cm.h, (C.c_void_p * 1)(None), (C.c_void_p * 2)(None, None), C.byref(env))
        assert rc == RKNN_ERR_INPUT_INVALID
        assert cm.lib.emu_model_run(None, None, None, None) == RKNN_ERR_PARAM_INVALID


def _standin_digest(inputs) -> int:
    """docs/standin.md's digest of the packed inputs."""
    d, prime, mask = 14695981039346656037, 1099511628211, (1 << 64) - 1
    for i, raw in enumerate(inputs):
        raw = raw + bytes(-len(raw) % 8)
        for k in range(0, len(raw), 8):
            d = ((d ^ int.from_bytes(raw[k:k + 8], "little")) * prime) & mask
        d = ((d ^ (i + 1)) * prime) & mask
    return d


def test_each_kind_runs_its_own_models(lib):
    """A stand-in runs by its kind's run (emu_standin_model_run), an own model by the
    graph's (emu_model_run); neither runs the other's model (issue 39, item 7: the
    executor no longer runs a stand-in by name)."""
    P = C.c_void_p
    _sig(lib, "emu_model_new_standin", C.c_int, C.c_char_p, C.POINTER(Desc), C.c_uint32,
         C.POINTER(Desc), C.c_uint32, C.c_uint32, P, P, C.POINTER(P))
    _sig(lib, "emu_standin_model_run", C.c_int, P, P, P, C.POINTER(Env))
    x_desc, y_desc = Desc(), Desc()
    x_desc.name, x_desc.n_dims, x_desc.type, x_desc.fmt = b"x", 2, 2, 3     # int8 [1, 13]
    x_desc.dims[0], x_desc.dims[1] = 1, 13
    y_desc.name, y_desc.n_dims, y_desc.type, y_desc.fmt = b"y", 2, 0, 3     # float32 [1, 300]
    y_desc.dims[0], y_desc.dims[1] = 1, 300
    h = P()
    assert lib.emu_model_new_standin(b"RK3588", C.byref(x_desc), 1, C.byref(y_desc), 1, 0,
                                     None, None, C.byref(h)) == RKNN_SUCC
    try:
        x = np.arange(13, dtype=np.int8) - 6
        y = np.full((1, 300), np.nan, np.float32)
        env = Env(None, None, 0, 0, CUSTOM_FN(0), None, None)
        ip, op = (P * 1)(x.ctypes.data), (P * 1)(y.ctypes.data)
        assert lib.emu_model_run(h, ip, op, C.byref(env)) == RKNN_ERR_PARAM_INVALID
        assert np.isnan(y).all()                       # the graph's run wrote nothing
        assert lib.emu_standin_model_run(h, ip, op, C.byref(env)) == RKNN_SUCC
        p = (_standin_digest([x.tobytes()]) ^ (0x9E3779B97F4A7C15 & ((1 << 64) - 1))) >> 56
        want = ((p + np.arange(300)) % 256 - 128).astype(np.float32) / 32
        np.testing.assert_array_equal(y[0], want)
        env.shape_set = 1                              # a static stand-in has set 0 only
        assert lib.emu_standin_model_run(h, ip, op, C.byref(env)) == RKNN_ERR_PARAM_INVALID
        env.shape_set = 0
        assert lib.emu_standin_model_run(h, (P * 1)(None), op, C.byref(env)) == \
            RKNN_ERR_INPUT_INVALID
    finally:
        lib.emu_model_free(h)
    with CModel(lib, samples.tiny_relu()) as cm:
        x = np.float32([[-1, 2]])
        y = np.zeros((1, 2), np.float32)
        env = Env(None, None, 0, 0, CUSTOM_FN(0), None, None)
        ip, op = (P * 1)(x.ctypes.data), (P * 1)(y.ctypes.data)
        assert lib.emu_standin_model_run(cm.h, ip, op, C.byref(env)) == RKNN_ERR_PARAM_INVALID
        internal = np.zeros(max(1, lib.emu_model_internal_size(cm.h)), np.uint8)
        env = Env(None, internal.ctypes.data, internal.size, 0, CUSTOM_FN(0), None, None)
        assert lib.emu_model_run(cm.h, ip, op, C.byref(env)) == RKNN_SUCC
        assert y.tolist() == [[0, 2]]


def test_op_times(lib):
    data = samples.detector_random()
    with CModel(lib, data) as cm:
        n = cm.lib.emu_model_n_ops(cm.h)
        times = (C.c_int64 * n)(*([-1] * n))
        rc, _ = cm.run(random_inputs(cm.desc, np.random.default_rng(0)), op_times=times)
        assert rc == 0 and all(t >= 0 for t in times) and sum(times) > 0


def test_reentrant_threads(lib):
    """Distinct internal buffers: concurrent runs of one model give the same results."""
    data = samples.classifier()
    with CModel(lib, data) as cm:
        ins = random_inputs(cm.desc, np.random.default_rng(5))
        expect = reference.run_reference(cm.desc, ins)[0]
        results = []

        def work():
            for _ in range(3):
                results.append(cm.run(ins))
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(results) == 9
        for rc, outs in results:
            assert rc == 0
            np.testing.assert_array_equal(outs[0], expect)


# ---- dynamic shapes ----------------------------------------------------------------------------

def test_dynamic_shape_sets(lib):
    data = samples.dynamic()
    with CModel(lib, data) as cm:
        assert cm.lib.emu_model_n_shape_sets(cm.h) == 3
        sets = samples.DYNAMIC_SETS
        for s, (n, h, w, c) in enumerate(sets):
            assert cm.dims("in", s, 0) == (n, h, w, c)
            assert cm.dims("out", s, 0) == (1, 4, h // 2, w // 2)
            assert cm.dims("out", s, 1) == (1, 4, h // 2, w // 2)
        assert cm.dims("in", 3, 0) is None and cm.dims("out", 0, 2) is None
        d = cm.lib.emu_model_input(cm.h, 0).contents
        assert tuple(d.dims[:4]) == sets[0]
    check_model(lib, data, seed=11)


def test_dynamic_inconsistent_set_rejected(lib):
    b = ModelBuilder()
    x = b.input("x", (1, 8), "float32")
    y = b.dense(x, np.ones((4, 8), np.float32), out="y")
    b.output(y)
    b.model.shape_sets = [[(1, 8)], [(1, 9)]]      # K mismatch in set 1
    with CModel(lib, builder.encode(b.model)) as cm:
        assert cm.rc == RKNN_ERR_MODEL_INVALID
    b.model.shape_sets = [[(2, 8)], [(1, 8)]]      # set 0 differs from the declared dims
    with CModel(lib, builder.encode(b.model)) as cm:
        assert cm.rc == RKNN_ERR_MODEL_INVALID
    b.model.shape_sets = [[(1, 8)], [(3, 8)], [(5, 8)]]
    with CModel(lib, builder.encode(b.model)) as cm:
        assert cm.rc == 0
        assert [cm.dims("out", s, 0) for s in range(3)] == [(1, 4), (3, 4), (5, 4)]
    check_model(lib, builder.encode(b.model))


def test_dynamic_reshape_infers(lib):
    b = ModelBuilder()
    x = b.input("x", (1, 4, 6), "float32")
    r = b.reshape(x, (0, -1))
    b.output(b.relu(r, out="y"))
    b.shape_sets([[(1, 4, 6)], [(2, 4, 6)], [(1, 2, 3)]])
    data = b.build()
    with CModel(lib, data) as cm:
        assert [cm.dims("out", s, 0) for s in range(3)] == [(1, 24), (2, 24), (1, 6)]
    check_model(lib, data)


# ---- custom ops -----------------------------------------------------------------------------------

def test_custom_op(lib):
    data = samples.custom_op_model()
    calls = []

    @CUSTOM_FN
    def hook(user, model, op_index, op_type, ins, n_in, outs, n_out):
        calls.append((op_index, op_type, n_in, n_out))
        d = ins[0].desc
        n = int(np.prod(d.dims[:d.n_dims]))
        x = np.ctypeslib.as_array(C.cast(ins[0].data, C.POINTER(C.c_float)), (n,))
        y = np.ctypeslib.as_array(C.cast(outs[0].data, C.POINTER(C.c_float)), (n,))
        y[:] = 1.0 / (1.0 + np.exp(-x))
        return 0

    with CModel(lib, data) as cm:
        assert cm.lib.emu_model_op_type(cm.h, 0) == b"cstSigmoid"
        assert cm.lib.emu_model_op_name(cm.h, 0) == b"cst_sigmoid"
        dt, n, p = C.c_int(), C.c_uint32(), C.c_void_p()
        assert cm.lib.emu_model_op_attr(cm.h, 0, b"alpha", C.byref(dt), C.byref(n), C.byref(p)) == 0
        assert dt.value == 0 and n.value == 1 and C.cast(p, C.POINTER(C.c_float))[0] == 1.0
        assert cm.lib.emu_model_op_attr(cm.h, 0, b"mode", C.byref(dt), C.byref(n), C.byref(p)) == 0
        assert dt.value == 6 and n.value == 2 and C.cast(p, C.POINTER(C.c_int32))[1] == 1
        assert cm.lib.emu_model_op_attr(cm.h, 0, b"nope", None, None, None) != 0
        assert cm.lib.emu_model_op_attr(cm.h, 9, b"alpha", None, None, None) == RKNN_ERR_PARAM_INVALID
        ins = [np.linspace(-4, 4, 16, dtype=np.float32).reshape(1, 16)]
        rc, _ = cm.run(ins)
        assert rc == RKNN_ERR_FAIL               # no hook: the run fails
        rc, outs = cm.run(ins, custom=hook)
        assert rc == 0 and calls == [(0, b"cstSigmoid", 1, 1)]
        ref = reference.run_reference(cm.desc, ins, custom_ops={
            "cstSigmoid": lambda xs, attrs: [1.0 / (1.0 + np.exp(-xs[0].astype(np.float64)))]})
        np.testing.assert_allclose(outs[0], ref[0], rtol=1e-6)

        @CUSTOM_FN
        def failing(*args):
            return -8

        rc, _ = cm.run(ins, custom=failing)
        assert rc == -8


# ---- single ops -----------------------------------------------------------------------------------

def _int8(rng, shape):
    return rng.integers(-128, 128, size=shape).astype(np.int8)


@pytest.mark.parametrize("in_fmt,out_fmt", [("NHWC", "NCHW"), ("NCHW", "NCHW"), ("NHWC", "NHWC"),
                                            ("NCHW", "NHWC")])
@pytest.mark.parametrize("k,stride,pad,dil,groups", [(3, 1, 1, 1, 1), (3, 2, 1, 1, 1), (1, 1, 0, 1, 1),
                                                     (3, 2, (0, 1, 2, 1), 2, 1), (3, 1, 1, 1, 2),
                                                     (5, 3, 2, 1, 4), (2, (1, 2), 0, (2, 1), 1)])
def test_conv2d_int8(lib, in_fmt, out_fmt, k, stride, pad, dil, groups):
    rng = np.random.default_rng(k * 100 + groups)
    cin, cout, h, w = 8, 12, 11, 9
    b = ModelBuilder()
    shape = (2, h, w, cin) if in_fmt == "NHWC" else (2, cin, h, w)
    x = b.input("x", shape, "int8", in_fmt, zp=-7, scale=0.03)
    wq = _int8(rng, (cout, cin // groups, k, k))
    ws = rng.uniform(0.002, 0.01, cout).astype(np.float32)
    bias = rng.integers(-2000, 2000, cout).astype(np.int32)
    y = b.conv2d(x, wq, bias, stride=stride, pad=pad, dilation=dil, groups=groups, weight_scale=ws,
                 out_scale=0.05, out_zp=3, fmt=out_fmt, relu=bool(groups % 2), out="y")
    b.output(y)
    check_model(lib, b.build(), n_runs=2)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_conv2d_float(lib, dtype, fmt):
    rng = np.random.default_rng(2)
    b = ModelBuilder()
    x = b.input("x", (1, 10, 10, 4) if fmt == "NHWC" else (1, 4, 10, 10), dtype, fmt)
    w = (rng.standard_normal((6, 2, 3, 3)) * 0.3).astype(np.float32)
    y = b.conv2d(x, w, rng.standard_normal(6).astype(np.float32), stride=2, pad=1, groups=2, relu=True,
                 out="y", fmt="NCHW")
    z = b.conv2d(x, w[:, :, :1, :1].repeat(2, 1), None, out="z", fmt="NHWC")
    b.output(y, z)
    check_model(lib, b.build(), n_runs=2)


def test_requant_ties_round_half_to_even(lib):
    """Ties in requantization round half to even, in C and in the reference."""
    b = ModelBuilder()
    x = b.input("x", (1, 8), "int8", zp=0, scale=1.0)
    y = b.dense(x, np.eye(8, dtype=np.int8), weight_scale=1.0, out_scale=2.0, out_zp=0, out="y")
    b.output(y)
    with CModel(lib, b.build()) as cm:
        xin = np.array([[-5, -3, -1, 1, 3, 5, 7, 2]], np.int8)
        rc, outs = cm.run([xin])
        assert rc == 0
        # x/2: -2.5 -1.5 -0.5 0.5 1.5 2.5 3.5 1 -> half to even
        assert outs[0].tolist() == [[-2, -2, 0, 0, 2, 2, 4, 1]]
        np.testing.assert_array_equal(outs[0], reference.run_reference(cm.desc, [xin])[0])


@pytest.mark.parametrize("dtype", ["int8", "float32", "float16"])
@pytest.mark.parametrize("lead", [(1,), (3,), (2, 5)])
def test_dense(lib, dtype, lead):
    rng = np.random.default_rng(len(lead))
    K, N = 37, 19
    b = ModelBuilder()
    if dtype == "int8":
        x = b.input("x", lead + (K,), "int8", zp=4, scale=0.1)
        wz = rng.integers(-3, 3, N)
        y = b.dense(x, _int8(rng, (N, K)), rng.integers(-500, 500, N).astype(np.int32),
                    weight_scale=rng.uniform(0.001, 0.01, N), weight_zp=wz, out_scale=0.2, out_zp=-2,
                    relu=True, out="y")
    else:
        x = b.input("x", lead + (K,), dtype)
        y = b.dense(x, rng.standard_normal((N, K)).astype(np.float32) * 0.2,
                    rng.standard_normal(N).astype(np.float32), out="y")
    b.output(y)
    check_model(lib, b.build(), n_runs=2)


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("bshape", [(1, 6, 5, 4), (1, 6, 1, 1), (4,), (1,), (5, 1)])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32", "float16"])
def test_binary_broadcast(lib, op, bshape, dtype):
    b = ModelBuilder()
    if dtype in ("int8", "uint8"):
        a = b.input("a", (1, 6, 5, 4), dtype, "NCHW", zp=5, scale=0.04)
        c = b.input("b", bshape, dtype, zp=-3 if dtype == "int8" else 130, scale=0.07)
        y = getattr(b, op)(a, c, out_scale=0.03 if op == "add" else 0.01, out_zp=1, out="y")
    else:
        a = b.input("a", (1, 6, 5, 4), dtype, "NCHW")
        c = b.input("b", bshape, dtype)
        y = getattr(b, op)(a, c, out="y")
    b.output(y)
    check_model(lib, b.build(), n_runs=2)


def test_binary_mixed_quant_types_and_constants(lib):
    rng = np.random.default_rng(4)
    b = ModelBuilder()
    a = b.input("a", (2, 3, 4), "int8", zp=0, scale=0.5)
    k = b.constant(rng.integers(0, 256, (3, 1)).astype(np.uint8), "uint8", zp=128, scale=0.25)
    y = b.add(a, k, out_scale=0.7, out_zp=10, out_dtype="int16", out="y")
    z = b.mul(a, k, out_scale=0.3, out_zp=100, out_dtype="uint8", out="z")
    b.output(y, z)
    check_model(lib, b.build(), n_runs=3)


@pytest.mark.parametrize("op", ["relu", "sigmoid"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32", "float16"])
def test_activations(lib, op, dtype):
    b = ModelBuilder()
    if dtype in ("int8", "uint8"):
        x = b.input("x", (3, 70), dtype, zp=-20 if dtype == "int8" else 100, scale=0.06)
        kw = {"out_scale": 0.02, "out_zp": -100 if dtype == "int8" else 20} if op == "relu" else {}
        y = getattr(b, op)(x, out="y", **kw)
    else:
        x = b.input("x", (3, 70), dtype)
        y = getattr(b, op)(x, out="y")
    b.output(y)
    check_model(lib, b.build(), n_runs=2)


def test_reshape_transpose(lib):
    b = ModelBuilder()
    x = b.input("x", (2, 3, 4, 5), "int16", "NCHW")
    r = b.reshape(x, (0, -1, 5))
    t = b.transpose(r, (2, 0, 1), out="t")
    t4 = b.transpose(x, (0, 2, 3, 1), fmt="NHWC", out="t4")
    b.output(t, t4)
    data = b.build()
    with CModel(lib, data) as cm:
        ins = random_inputs(cm.desc, np.random.default_rng(0))
        rc, outs = cm.run(ins)
        assert rc == 0
        np.testing.assert_array_equal(outs[0], ins[0].reshape(2, 12, 5).transpose(2, 0, 1))
        np.testing.assert_array_equal(outs[1], ins[0].transpose(0, 2, 3, 1))
    check_model(lib, data)


def test_quantize_dequantize_cast(lib):
    b = ModelBuilder()
    x = b.input("x", (4, 33), "float32")
    q = b.quantize(x, scale=0.5, zp=3, out="q")
    q16 = b.quantize(b.cast(x, "float16"), scale=0.01, zp=0, dtype="int16", out="q16")
    rq = b.quantize(q, scale=0.3, zp=128, dtype="uint8", out="rq")
    dq = b.dequantize(rq, dtype="float16", out="dq")
    ci = b.cast(x, "int8", out="ci")
    cf = b.cast(ci, "float32", out="cf")
    b.output(q, q16, rq, dq, ci, cf)
    data = b.build()
    with CModel(lib, data) as cm:
        xin = np.concatenate([np.array([-1.25, -0.75, -0.25, 0.25, 0.75, 1.25, 1e9, -1e9, np.nan,
                                        np.inf, -np.inf, 63.5, 64.5, -0.0, 2.5, 3.5], np.float32),
                              np.random.default_rng(0).standard_normal(4 * 33 - 16).astype(np.float32) * 80])
        xin = xin.reshape(4, 33)
        rc, outs = cm.run([xin])
        assert rc == 0
        refs = reference.run_reference(cm.desc, [xin])
        assert_matches(cm.desc, outs, refs)
        # x / 0.5 = -2.5 -1.5 -0.5 0.5 1.5 2.5 -> -2 -2 0 0 2 2, + zp 3; saturation; NaN -> zp
        assert outs[0][0, :11].tolist() == [1, 1, 3, 3, 5, 5, 127, -128, 3, 127, -128]
        assert outs[4][0, :6].tolist() == [-1, -1, 0, 0, 1, 1]        # cast: half to even
    check_model(lib, data)


def test_output_consumed_by_later_op(lib):
    b = ModelBuilder()
    x = b.input("x", (1, 16), "float32")
    y = b.relu(x, out="y")
    z = b.add(y, y, out="z")
    b.output(z, y)
    check_model(lib, b.build())


def _add_one_hook(calls):
    @CUSTOM_FN
    def hook(user, model, op_index, op_type, ins, n_in, outs, n_out):
        calls.append(op_type)
        d, e = ins[0].desc, outs[0].desc
        n = int(np.prod(d.dims[:d.n_dims]))
        if op_type != b"cstAddOne" or d.type != 0 or e.type != 0 or n != int(np.prod(e.dims[:e.n_dims])):
            return -1
        x = np.ctypeslib.as_array(C.cast(ins[0].data, C.POINTER(C.c_float)), (n,))
        y = np.ctypeslib.as_array(C.cast(outs[0].data, C.POINTER(C.c_float)), (n,))
        y[:] = x + np.float32(1.0)
        return 0
    return hook


@pytest.mark.parametrize("target", TARGETS)
def test_all_ops_sample_every_shape_set(lib, target):
    calls = []
    hook = _add_one_hook(calls)
    m = check_model(lib, samples.all_ops(target), seed=21, custom=hook, n_runs=2,
                    custom_ref={"cstAddOne": lambda xs, attrs: [xs[0] + attrs["alpha"][0]]})
    assert m.n_shape_sets == 3 and calls == [b"cstAddOne"] * 6


def test_zero_point_outside_type_range_rejected(lib):
    b = ModelBuilder()
    x = b.input("x", (1, 4), "int8", zp=0, scale=0.1)
    b.output(b.relu(x, out="y"))
    m = b.model
    m.tensors["y"].zp = (200,)                    # int8 zero point out of range
    with CModel(lib, builder.encode(m)) as cm:
        assert cm.rc == RKNN_ERR_MODEL_INVALID
    m.tensors["y"].zp = (127,)
    with CModel(lib, builder.encode(m)) as cm:
        assert cm.rc == RKNN_SUCC
    with pytest.raises(ValueError):
        ModelBuilder().input("u", (1, 4), "uint8", zp=-1, scale=0.1)
