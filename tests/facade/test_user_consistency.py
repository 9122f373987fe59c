"""What a user of one part of rknnx expects of the others (issue 27, item 4): float64 taken
alike by model.run and a session's run_arrays, InferenceSession's own name in its errors,
no private exception names, an empty model file said as such, the low-level Context on a
missing path or a directory, data_format given as a list, numpy integers as Pool sizes,
matmul's dimension limit named, frame ids on chips without the general API."""

from __future__ import annotations

import numpy as np
import pytest

import rknnx
from rknnx import lowlevel as ll
from rknnx.emulator import samples

from helpers import NEEDS_SAMPLES, skip_on_vendor_runtime


def test_float64_is_taken_by_model_run_as_by_run_arrays(models):
    """numpy's default float is taken as float32 by both (the choice: a session's
    run_arrays and rknnx.lite took it already; refusing it in model.run only would make
    the same array good for one call and not the other)."""
    m = models.open("tiny_relu", "RK3588")
    x64 = np.array([[1.5, -2.0]])
    assert x64.dtype == np.float64
    want, = m.run(x64.astype(np.float32))
    got, = m.run(x64)
    np.testing.assert_array_equal(got, want)
    with m.zero_copy() as s:
        via_session, = s.run_arrays(x64)
    np.testing.assert_array_equal(via_session, want)


def test_other_dtypes_are_still_refused_clearly(models):
    m = models.open("tiny_relu", "RK3588")
    with pytest.raises(TypeError, match=r"dtype int64 is not accepted; expected float32"):
        m.run(np.array([[1, 2]], np.int64))


def test_closed_inference_session_says_inference_session():
    from rknnx.ort import InferenceSession

    # the emulator's sample: a vendor librknnrt refuses it (scripts/test-vendor-qemu found
    # this test failing with ModelInvalidError on 1.6.0 and 1.4.0, the only facade failure)
    skip_on_vendor_runtime(NEEDS_SAMPLES)
    s = InferenceSession(samples.tiny_relu())
    s.close()
    with pytest.raises(ValueError, match=r"^run on closed InferenceSession") as e:
        s.run(None, {"x": np.zeros((1, 2), np.float32)})
    assert "Model" not in str(e.value)


def test_a_view_of_a_closed_mem_raises_a_public_error(emu):
    from rknnx.errors import ClosedViewError

    ctx = ll.Context(samples.tiny_relu())
    try:
        mem = ctx.create_mem(64)
        mem.close()
        with pytest.raises(ClosedViewError) as e:
            memoryview(mem)
    finally:
        ctx.close()
    assert type(e.value).__module__ == "rknnx.errors"
    assert type(e.value).__name__ == "ClosedViewError"
    assert isinstance(e.value, BufferError) and isinstance(e.value, ValueError)


def test_an_empty_model_file_is_said_to_be_an_empty_file(tmp_path, emu):
    p = tmp_path / "empty.rknn"
    p.write_bytes(b"")
    with pytest.raises(ValueError, match=r"model file '.*empty\.rknn' is empty \(0 bytes\)"):
        rknnx.Model(str(p))
    with pytest.raises(ValueError, match=r"model file '.*empty\.rknn' is empty \(0 bytes\)"):
        ll.Context(str(p))


def test_lowlevel_context_on_a_missing_file_or_a_directory(tmp_path, emu):
    with pytest.raises(FileNotFoundError, match=r"model file '.*nope\.rknn' does not exist"):
        ll.Context(str(tmp_path / "nope.rknn"))
    with pytest.raises(IsADirectoryError, match=r"is a directory; give the \.rknn file"):
        ll.Context(str(tmp_path))
    assert emu.counters()["live_contexts"] == 0


def test_data_format_as_a_list_gets_a_clear_error(models):
    m = models.open("classifier", "RK3588")
    image = np.zeros((1, 224, 224, 3), np.uint8)
    with pytest.raises(ValueError, match=r"data_format must be 'nhwc' or 'nchw', got \['nhwc'\]"):
        m.run(image, data_format=["nhwc"])
    out, = m.run(image, data_format="nhwc")
    assert out.shape == (1, 1000)


@pytest.mark.parametrize("workers", [np.int64(2), np.int32(2), np.uint8(2)])
def test_pool_takes_numpy_integers(models, workers):
    m = models.open("tiny_relu", "RK3588")
    with rknnx.Pool(m, workers=workers, queue_size=np.int64(4)) as pool:
        assert pool.workers == 2 and type(pool.workers) is int
        out, = pool.submit(np.ones((1, 2), np.float32)).result()
    np.testing.assert_array_equal(out, np.ones((1, 2), np.float32))


@pytest.mark.parametrize("workers", [0, -1, 2.0, True, np.bool_(True), "2", None])
def test_pool_refuses_what_is_not_a_count(models, workers):
    m = models.open("tiny_relu", "RK3588")
    with pytest.raises(ValueError, match=r"workers must be an int >= 1; got"):
        rknnx.Pool(m, workers=workers)


def test_matmul_names_its_dimension_limit(emu):
    a = np.zeros((1, 70000), np.float16)
    b = np.zeros((70000, 1), np.float16)
    with pytest.raises(ValueError, match=r"K must be in 1\.\.65536, got 70000"):
        rknnx.matmul(a, b)
    with pytest.raises(ValueError, match=r"N must be in 1\.\.65536, got 70000"):
        rknnx.Matmul(1, 64, 70000, a_dtype=np.float16, b_dtype=np.float16)


@pytest.mark.parametrize("platform", ["RV1106", "RK3588"])
def test_frame_id_counts_runs_on_every_chip(models, platform):
    """On RV1106 model.run goes through zero-copy memory: its frame ids count from 1 as the
    general flow's do."""
    m = models.open("tiny_relu", platform)
    assert m.frame_id == 0
    x = np.ones((1, 2), np.float32)
    ids = []
    for _ in range(3):
        m.run(x)
        ids.append(m.frame_id)
    assert ids == [1, 2, 3]
