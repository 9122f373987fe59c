"""The same int8 codes dequantize to floats a rounding apart on RK3588 and RK3566
(docs/guide/flows.md, "Comparing results across chips"; the rule and its recordings are
in docs/abi-notes.md, "NPU-side bytes").

The vendor's runtime dequantizes an int8 output by two formulas, `(q - zp) * scale` and
`q * scale - zp * scale`, and which elements take which depends on the chip (librknnrt
1.5.2 and 1.6.0: on RK3588 the whole C2 blocks of 16 channels at the whole groups of 4
pixels; on RK3566 the whole groups of 8 pixels, every channel but the last of a C % 8 == 1
output; tests/facade/test_vendor_dequant.py holds the rule to the vendor's answers). A
model built here has an output where the two chips pick differently ([1,9,5,5] with zero
point -100: no whole block of 16 channels on RK3588, all scalar; on RK3566 channels 0-7 at
pixels 0-23 vector): the raw codes agree bit for bit and the floats differ in some
elements, each equal to its chip's formula and within the documented bound (two float32
ulps of 256 * scale).
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import NEEDS_SAMPLES, run_python, skip_on_vendor_runtime

CHILD = """
import numpy as np, rknnx, sys
from rknnx.emulator.builder import ModelBuilder
b = ModelBuilder({chip!r})
x = b.input("x", (1, 5, 5, 9), "int8", zp=-100, scale=0.0173)
b.output(b.relu(x, out_scale=0.0173, out_zp=-100, out="y"))
img = np.random.default_rng(0).uniform(-1, 3.5, (1, 5, 5, 9)).astype(np.float32)
with rknnx.Model(b.build()) as m:
    floats = m.run(img)
    raw = m.run(img, raw=True)
    quant = [(o.quant.scale, o.quant.zero_point) for o in m.outputs]
np.savez({path!r}, *floats, *raw, quant=np.array(quant))
"""


@pytest.fixture(scope="module")
def both_chips(tmp_path_factory):
    skip_on_vendor_runtime(NEEDS_SAMPLES)
    out = {}
    for chip in ("RK3588", "RK3566"):
        path = str(tmp_path_factory.mktemp("dq") / f"{chip}.npz")
        proc = run_python(CHILD.format(chip=chip, path=path),
                          env={"RKNN_EMU_PLATFORM": chip, "RKNNX_RUNTIME": None})
        assert proc.returncode == 0, proc.stderr
        with np.load(path) as z:
            n = (len(z.files) - 1) // 2
            out[chip] = ([z[f"arr_{i}"] for i in range(n)],
                         [z[f"arr_{i + n}"] for i in range(n)], z["quant"])
    return out


def test_raw_codes_agree_across_chips(both_chips):
    for x, y in zip(both_chips["RK3588"][1], both_chips["RK3566"][1]):
        assert x.dtype == y.dtype == np.int8
        assert np.array_equal(x, y)


def test_floats_differ_within_the_documented_bound(both_chips):
    floats_a, floats_b = both_chips["RK3588"][0], both_chips["RK3566"][0]
    differing = 0
    for a, b, (scale, _) in zip(floats_a, floats_b, both_chips["RK3588"][2]):
        bound = 2 * np.spacing(np.float32(256 * np.float32(scale)))
        assert np.all(np.abs(a - b) <= bound)
        assert np.allclose(a, b, rtol=0, atol=scale / 1000)     # the guide's advice
        differing += int(np.count_nonzero(a != b))
    # the [1,9,5,5] output is where the chips pick differently
    assert differing > 0


def test_each_chip_uses_its_formula(both_chips):
    raw, quant = both_chips["RK3588"][1][0], both_chips["RK3588"][2][0]
    scale, zp = np.float32(quant[0]), np.float32(quant[1])
    q = raw.astype(np.float32).reshape(1, 9, 5, 5)
    scalar = (q - zp) * scale                  # RK3588: 9 channels, no whole C2 block
    vector = q * scale - zp * scale            # RK3566: channels 0-7, pixels 0-23
    assert zp != 0 and not np.array_equal(scalar[:, :8, :4], vector[:, :8, :4])
    assert np.array_equal(both_chips["RK3588"][0][0].reshape(q.shape), scalar)
    rk3566 = both_chips["RK3566"][0][0].reshape(q.shape)
    assert np.array_equal(rk3566[:, :8].reshape(1, 8, 25)[..., :24],
                          vector[:, :8].reshape(1, 8, 25)[..., :24])
    assert np.array_equal(rk3566[:, 8], scalar[:, 8])                 # C % 8 == 1
    assert np.array_equal(rk3566.reshape(1, 9, 25)[..., 24], scalar.reshape(1, 9, 25)[..., 24])
