"""A user's own vendor `.rknn` on a PC: every file of the vendor data (toolkits 1.1 to 2.5,
containers 1, 2, 6 and 0x1004) opens on the emulator as the chip it was built for, through
Model, a zero-copy session, Pool and the RKNNLite drop-in, with the signature the file
gives (rknnx.modelfile) and the stand-in's documented outputs (docs/standin.md).

Skipped, saying why, without the vendor data (tests/helpers.py, VENDOR_DATA)."""

from __future__ import annotations

import numpy as np
import pytest

import rknnx
from rknnx import modelfile

from helpers import NO_VENDOR_DATA, live, user_inputs, vendor_models

FILES = vendor_models()
if not FILES:
    pytestmark = pytest.mark.skip(reason=NO_VENDOR_DATA)


def _id(p):
    return p.stem


def _open_as_its_chip(emu, path):
    mf = modelfile.read(path)
    emu.set_platform(mf.chip)
    return mf, rknnx.Model(str(path))


def _frame(model, rng):
    if model.dynamic:
        return [rng.integers(0, 256, s, dtype=np.uint8) if len(s) == 4 else
                rng.standard_normal(s).astype(np.float32) for s in model.shape_sets[-1]]
    return user_inputs(model, rng)


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_a_vendor_file_opens_with_the_files_signature(emu, path):
    before = live(emu)
    mf, m = _open_as_its_chip(emu, path)
    with m:
        assert m.chip == mf.chip
        assert [t.name for t in m.inputs] == [t.name for t in mf.inputs]
        assert [t.name for t in m.outputs] == [t.name for t in mf.outputs]
        for got, want in zip(m.inputs + m.outputs, mf.inputs + mf.outputs):
            if "attr" in want.known and not m.dynamic:   # known from the file
                assert tuple(got.attr.dims) == tuple(want.dims), (got.name, want)
            if "qnt" in want.known and want.quantized:
                assert got.quant.zero_point == want.zero_point, got.name
                assert got.quant.scale == pytest.approx(want.scale, rel=1e-6), got.name
        assert m.dynamic == mf.dynamic
    assert live(emu) == before


RUNNABLE = [p for p in FILES if not modelfile.read(p).custom_ops] if FILES else []


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
