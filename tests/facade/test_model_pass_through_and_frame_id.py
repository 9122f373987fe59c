"""Model.run(pass_through=...): inputs handed to the NPU unconverted, and Model.frame_id: the
frame id the runtime reports for the outputs (the previous run's in async mode)."""

from __future__ import annotations

import numpy as np
import pytest

from rknnx import lowlevel as ll
from rknnx.emulator import reference

from helpers import GENERAL_PLATFORMS, expected_outputs, model_bytes, to_model, user_inputs


def quantized(name, platform, index, x):
    """What the runtime would feed the model for user data x: the pass-through data."""
    desc = reference.as_model(model_bytes(name, platform))
    return np.ascontiguousarray(to_model(desc.tensors[desc.inputs[index]], x))


@pytest.mark.parametrize("platform", GENERAL_PLATFORMS)
def test_pass_through_input_equals_the_converted_one(models, platform):
    m = models.open("classifier", platform)
    (x,) = user_inputs(m, np.random.default_rng(3))
    q = quantized("classifier", platform, 0, x)
    assert q.dtype == np.int8 and q.shape == x.shape
    want = m.run(x)
    got = m.run(q, pass_through=[True])
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[0], expected_outputs(model_bytes("classifier", platform),
                                                        [x], True)[0], rtol=1e-3, atol=1e-3)
    # a False flag is the usual conversion
    np.testing.assert_array_equal(m.run(x, pass_through=[False])[0], want[0])


def test_pass_through_on_one_input_of_several(models):
    m = models.open("multi_io")
    xs = user_inputs(m, np.random.default_rng(4))
    want = m.run(*xs)
    q = quantized("multi_io", "RK3588", 0, xs[0])
    got = m.run(q, xs[1], xs[2], pass_through=[1, 0, 0])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_pass_through_errors(models):
    m = models.open("classifier")
    (x,) = user_inputs(m, np.random.default_rng(5))
    with pytest.raises(TypeError, match=r"input 0 \('image'\) is passed through: it must be "
                                        r"the model's int8, got uint8"):
        m.run(x, pass_through=[True])
    with pytest.raises(ValueError, match=r"pass_through needs one flag per input \(1\); got 2"):
        m.run(x, pass_through=[True, False])
    with pytest.raises(ValueError, match="pass_through data of 12 bytes is too small: need 150528 bytes"):
        m.run(np.zeros(12, np.int8), pass_through=[True])


def test_frame_id_counts_runs(models):
    m = models.open("tiny_relu")
    assert m.frame_id == 0
    x = np.ones((1, 2), np.float32)
    ids = []
    for _ in range(3):
        m.run(x)
        ids.append(m.frame_id)
    assert ids == [1, 2, 3]


def test_frame_id_in_async_mode_is_the_previous_run(models):
    m = models.open("tiny_relu", flags=ll.InitFlag.ASYNC_MASK)
    xs = [np.full((1, 2), v, np.float32) for v in (1.0, -2.0, 3.0)]
    first = m.run(xs[0])
    assert m.frame_id == 0 and not first[0].any()          # no previous frame yet
    second = m.run(xs[1])
    assert m.frame_id == 1
    np.testing.assert_array_equal(second[0], np.maximum(xs[0], 0))
    m.run(xs[2])
    assert m.frame_id == 2
