"""A user's own vendor `.rknn` on a PC: every file of the vendor data (toolkits 1.1 to 2.5,
containers 1, 2, 6 and 0x1004) opens on the emulator as the chip it was built for, through
Model, a zero-copy session, Pool and the RKNNLite drop-in, with the signature the file
gives (rknnx.modelfile) and the stand-in's documented outputs (docs/standin.md).

Skipped, saying why, without the vendor data (tests/helpers.py, VENDOR_DATA)."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

import rknnx
from rknnx import modelfile

from helpers import NO_VENDOR_DATA, live, path_id, user_inputs, vendor_models

FILES = vendor_models()
if not FILES:
    pytestmark = pytest.mark.skip(reason=NO_VENDOR_DATA)
elif os.environ.get("RKNNX_RUNTIME") == "emulator-1.5.2":
    # 1.5.2 refuses more (custom operators abort it, RK3576/RV1126B families are unknown to
    # it): the emulator playing it is judged file by file against the recorded 1.5.2 by
    # tests/emulator/test_vendor_judge.py; these tests follow the default 2.x runtime
    pytestmark = pytest.mark.skip(reason="the 1.5.2 stand-in is judged by test_vendor_judge")


_id = path_id


#: the chips the RV1106 mini runtime serves (the emulator plays it for them)
MINI = next(f for f in modelfile.RUNTIME_FACTS if f.runtime.startswith("librknnmrt")).chips


def _refused(mf) -> bool:
    """Whether the runtime the emulator plays for the file's chip refuses its container: the
    mini runtime reads only 0x1004 (librknnmrt 2.3.2 on every corpus file); the 2.x runtime
    containers 2 and 6 (librknnrt 1.6.0, the judge of the default mode) and, with a W line,
    1, which no runtime on record was run on (docs/standin.md)."""
    return mf.container.version not in ((0x1004,) if mf.chip in MINI else (1, 2, 6))


def _open_as_its_chip(emu, path):
    mf = modelfile.read(path)
    emu.set_platform(mf.chip)
    return mf, rknnx.Model(str(path))


REFUSED = [p for p in FILES if _refused(modelfile.read(p))]
#: the files the runtime the emulator plays for their chip loads (every chip is played)
OPENED = [p for p in FILES if p not in REFUSED]


@pytest.mark.parametrize("path", REFUSED, ids=_id)
def test_a_file_the_runtime_refuses_says_which_runtimes_load_it(emu, path):
    mf = modelfile.read(path)
    emu.set_platform(mf.chip)
    before = live(emu)
    with pytest.raises(rknnx.RKNNError,
                       match=rf"cannot load model '.*{path.name}' \(status -\d\): it is a "
                             rf"container version .* file of rknn-toolkit2 "
                             rf"{mf.toolkit_version} for {mf.chip}.*"
                             rf"(runtimes known to load it|no runtime on record)"):
        rknnx.Model(str(path))
    assert live(emu) == before


def _frame(model, rng):
    if model.dynamic:
        return [rng.integers(0, 256, s, dtype=np.uint8) if len(s) == 4 else
                rng.standard_normal(s).astype(np.float32) for s in model.shape_sets[-1]]
    return user_inputs(model, rng)


@pytest.mark.parametrize("path", OPENED, ids=_id)
def test_a_vendor_file_opens_with_the_files_signature(emu, path):
    before = live(emu)
    mf, m = _open_as_its_chip(emu, path)
    with m:
        assert m.chip == mf.chip
        assert [t.name for t in m.inputs] == [t.name for t in mf.inputs]
        assert [t.name for t in m.outputs] == [t.name for t in mf.outputs]
        for got, want in zip(m.inputs + m.outputs, mf.file_inputs + mf.file_outputs):
            if "attr" in want.known and not m.dynamic:   # known from the file
                assert tuple(got.attr.dims) == tuple(want.dims), (got.name, want)
            if "qnt" in want.known and want.quantized:
                assert got.quant.zero_point == want.zero_point, got.name
                assert got.quant.scale == pytest.approx(want.scale, rel=1e-6), got.name
        assert m.dynamic == mf.dynamic
        # the file's rknnx.TensorInfo is the model's, but for the native view (the
        # runtime's strides) and the low-level attribute
        for got, want in zip(m.inputs + m.outputs, mf.inputs + mf.outputs):
            assert isinstance(want, rknnx.TensorInfo) and want.native is None
            assert dataclasses.replace(got, native=None) == want, (got, want)
    assert live(emu) == before


RUNNABLE = [p for p in OPENED if not modelfile.read(p).custom_ops]


@pytest.mark.parametrize("path", RUNNABLE, ids=_id)
def test_a_vendor_file_runs_on_the_stand_in_through_every_path(emu, path):
    # model.run, a zero-copy session's run_arrays and a Pool give the same outputs (the
    # stand-in's function of the input bytes: deterministic, the same on every path)
    before = live(emu)
    _, m = _open_as_its_chip(emu, path)
    rng = np.random.default_rng(0)
    with m:
        frame = _frame(m, rng)
        want = m.run(*frame)
        assert [w.shape for w in want] == [tuple(t.shape) for t in m.outputs] or m.dynamic
        again = m.run(*frame)
        for a, b in zip(want, again):
            np.testing.assert_array_equal(a, b)
        with rknnx.Pool(m, workers=2) as pool:
            for outs in pool.map([tuple(frame)] * 3):
                for a, b in zip(outs, want):
                    np.testing.assert_array_equal(a, b)
        if not m.dynamic:
            with m.zero_copy() as s:
                got = s.run_arrays(*frame)
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
            del got
    assert live(emu) == before


@pytest.mark.parametrize("path", RUNNABLE[:1] + [p for p in RUNNABLE if "rv1106" in p.name][:1],
                         ids=_id)
def test_rknnlite_loads_and_runs_a_vendor_file(emu, path):
    from rknnx.lite import RKNNLite

    mf, m = _open_as_its_chip(emu, path)
    with m:
        frame = _frame(m, np.random.default_rng(1))
        want = m.run(*frame)
    lite = RKNNLite(raise_errors=True)
    assert lite.load_rknn(str(path)) == 0
    assert lite.init_runtime() == 0
    got = lite.inference(inputs=frame)
    lite.release()
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a).reshape(b.shape), b)


def _rk2118_fp16():
    return next((p for p in FILES if p.name == "fp16_net_rk2118.rknn"), None)


@pytest.mark.skipif(_rk2118_fp16() is None, reason=NO_VENDOR_DATA)
def test_the_mini_runtime_takes_no_float16_input_as_it_is(emu, capfd):
    # fp16_net_rk2118, librknnmrt 2.3.2: set_io_mem of the float16 input with pass_through=1
    # is -5; once the outputs are bound, a run with that input left without a mem is -1; bound
    # with pass_through 0 it runs (docs/standin.md)
    from rknnx.errors import ParamInvalidError, RKNNFailError
    from rknnx.lowlevel import Context, QueryCmd, TensorType
    emu.set_platform("RK2118")
    before = live(emu)
    with Context(str(_rk2118_fp16())) as ctx:
        a_in = ctx.query(QueryCmd.NATIVE_INPUT_ATTR, 0)
        assert a_in.type == TensorType.FLOAT16
        mems = [ctx.create_mem(a_in.size_with_stride)]
        try:
            for k in range(ctx.n_output):
                a = ctx.query(QueryCmd.NATIVE_OUTPUT_ATTR, k)
                mems.append(ctx.create_mem(a.size_with_stride))
                ctx.set_io_mem(mems[-1], a)
            a_in.pass_through = True
            capfd.readouterr()
            with pytest.raises(ParamInvalidError) as e:
                ctx.set_io_mem(mems[0], a_in)
            assert e.value.code == -5
            assert "FP16 not supported in pass_through == 1" in capfd.readouterr().err
            with pytest.raises(RKNNFailError) as e:
                ctx.run()
            assert e.value.code == -1
            assert "input 0 (images) is float16 and has no mem" in capfd.readouterr().err
            a_in.pass_through = False
            ctx.set_io_mem(mems[0], a_in)
            ctx.run()
        finally:
            for m in mems:
                m.close()
    assert live(emu) == before


CONTAINER_1 = [p for p in FILES if modelfile.read(p).container.version == 1]


@pytest.mark.skipif(not CONTAINER_1, reason=NO_VENDOR_DATA)
def test_a_container_1_file_opens_and_says_once_that_no_2x_runtime_on_record_read_one():
    # toolkit 1.1 files (rknpu2 c28b080 multiple_input_demo): librknnrt 1.4.0, 1.5.2 and 1.6.0
    # load them, each on its own chip (tests/data/vendor_built_answers.json), so rknnx info
    # says so; no 2.x runtime on record was run on one, and the stand-in playing 2.x opens
    # them with a W line, once per process (docs/standin.md)
    from helpers import run_python
    for p in CONTAINER_1:
        mf = modelfile.read(p)
        verdicts = {s.runtime: s.verdict for s in mf.runtime_support()}
        assert {verdicts[r] for r in ("librknnrt 1.4.0", "librknnrt 1.5.2",
                                      "librknnrt 1.6.0")} == {"loads"}, verdicts
    chips = {modelfile.read(p).chip for p in CONTAINER_1}
    for chip in sorted(chips):
        files = [str(p) for p in CONTAINER_1 if modelfile.read(p).chip == chip]
        code = ("import rknnx\n"
                f"for p in {files!r} * 2:\n"
                "    with rknnx.Model(p) as m:\n"
                "        print(m.chip)\n")
        proc = run_python(code, env={"RKNNX_RUNTIME": "emulator", "RKNN_EMU_PLATFORM": chip})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [chip] * (2 * len(files))
        assert proc.stderr.count("W rknnx: a container version 1 file (rknn-toolkit2 1.1): "
                                 "librknnrt 1.4.0 to 1.6.0 load such files, no 2.x runtime on "
                                 "record was run on one") == 1, proc.stderr


def test_a_float16_input_reaches_the_npu_normalized_with_the_files_mean_and_std(emu):
    """fp16_net_rk3588 (its generator: mean [0], std [255, 255, 255]): a float32 frame given
    to Model.run is in the NPU's input buffer as ((x - mean) / std) rounded to float16 in the
    native layout (NHWC, rows of w_stride pixels), as librknnrt 1.5.2 and 1.6.0 leave it on
    the CPU (docs/abi-notes.md, "NPU-side bytes")."""
    path = next((p for p in FILES if p.name == "fp16_net_rk3588.rknn"), None)
    if path is None:
        pytest.skip(f"fp16_net_rk3588.rknn is not among the vendor files ({NO_VENDOR_DATA})")
    mf, m = _open_as_its_chip(emu, path)
    t = mf.file_inputs[0]
    assert (t.mean, t.std) == ((0.0,), (255.0, 255.0, 255.0))
    with m:
        info = m.inputs[0]
        assert (info.native.layout, tuple(info.native.shape)) == ("NHWC", (1, 16, 16, 3))
        n, h, w, c = info.native.shape
        ws = info.attr.w_stride
        # known values: a ramp over the range a user's float frame may have, fractions
        # included, and the edges of the pixel range
        x = np.linspace(-300.0, 555.5, n * h * w * c, dtype=np.float32).reshape(n, h, w, c)
        x[0, 0, 0] = (0.0, 255.0, 127.5)
        m.run(x)
        got = emu.read_npu_input(m._ctx.handle, 0)
    y = ((x - np.array(t.mean, np.float32)) / np.array(t.std, np.float32)).astype(np.float16)
    want = np.zeros((n, h, ws, c), np.float16)
    want[:, :, :w, :] = y
    assert got == want.tobytes()
    assert np.frombuffer(got, np.float16)[:3].tolist() == [0.0, 1.0, 0.5]
    # not the frame converted to float16 first, nor the frame left as it was
    assert got != (x.astype(np.float16).astype(np.float32) / np.float32(255)).astype(
        np.float16).tobytes()
    assert got != x.astype(np.float16).tobytes()
