"""`rknnx serve` on a user's own vendor `.rknn` on a PC: the emulator stands in for it
(docs/standin.md), so the server's metadata is the file's signature and its answers equal
Model.run on the same frames.  Skipped, saying why, without the vendor data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from serving_helpers import infer_body, need, parse_response, request
from helpers import NO_VENDOR_DATA, RKNN_MODELS

need("aiohttp", "serve")

import rknnx  # noqa: E402

FILES = ["toolkit-2.5.0/yolo_heads_rk3588.rknn", "toolkit-2.5.0/multi_io_rv1106.rknn"]


@pytest.mark.parametrize("name", FILES, ids=lambda n: n.split("/")[-1])
def test_serve_a_vendor_file(serve, emu, name):
    if RKNN_MODELS is None or not (RKNN_MODELS / name).is_file():
        pytest.skip(NO_VENDOR_DATA)
    from rknnx import modelfile

    data = (RKNN_MODELS / name).read_bytes()
    emu.set_platform(modelfile.read(data).chip)
    s = serve({"mine": data})
    status, _, body = request(s.port, "GET", "/v2/models/mine")
    assert status == 200
    meta = json.loads(body)
    rng = np.random.default_rng(3)
    with rknnx.Model(data) as model:
        assert [t["name"] for t in meta["inputs"]] == [t.name for t in model.inputs]
        assert [t["shape"] for t in meta["outputs"]] == [list(t.shape) for t in model.outputs]
        frame = {}
        for t in model.inputs:
            if len(t.shape) == 4:
                frame[t.name] = rng.integers(0, 256, t.shape, dtype=np.uint8)
            else:
                frame[t.name] = rng.standard_normal(t.shape).astype(np.float32)
        body, headers = infer_body(frame, binary=True, parameters={"binary_data_output": True})
        status, rh, rb = request(s.port, "POST", "/v2/models/mine/infer", body, headers)
        assert status == 200, rb
        _, out = parse_response(rh, rb)
        for t, want in zip(model.outputs, model.run(frame)):
            np.testing.assert_array_equal(out[t.name], want)
