"""Malformed requests get a 4xx with the reason as ``{"error": ...}`` and leave the server
healthy: wrong datatype, shape, size, bad JSON, binary sizes that do not add up, unknown
models, inputs and outputs, bodies over the limit, wrong methods."""

from __future__ import annotations

import json

import numpy as np
import pytest

from serving_helpers import infer_body, need, parse_response, request
from helpers import model_bytes

need("aiohttp", "serve")

import rknnx  # noqa: E402

IMAGE = np.zeros((1, 32, 32, 3), np.uint8)
FEAT = np.zeros((1, 64), np.float16)
SEQ = np.zeros((1, 8, 16), np.float32)
GOOD = {"image": IMAGE, "feat": FEAT, "seq": SEQ}
H = "Inference-Header-Content-Length"


def tensor(name, a, **extra):
    t = {"name": name, "shape": list(a.shape), "datatype": {"uint8": "UINT8", "float16": "FP16",
                                                             "float32": "FP32"}[a.dtype.name],
         "data": a.ravel().tolist()}
    t.update(extra)
    return t


def good_json(**replace):
    doc = {"inputs": [tensor("image", IMAGE), tensor("feat", FEAT), tensor("seq", SEQ)]}
    doc.update(replace)
    return doc


def with_input(k, **changes):
    doc = good_json()
    doc["inputs"][k] = dict(doc["inputs"][k], **changes)
    return doc


def binary(*, sizes=None, extra=b"", header=None, drop=0):
    body, headers = infer_body(GOOD)
    n = int(headers[H])
    doc = json.loads(body[:n])
    if sizes:
        for k, size in sizes.items():
            doc["inputs"][k]["parameters"]["binary_data_size"] = size
    head = json.dumps(doc).encode()
    data = body[n:]
    data = data[:len(data) - drop] + extra
    return head + data, {H: str(len(head)) if header is None else header}


# (what, path, body, headers, status, words in the reason)
CASES = [
    ("bad JSON", "m", b'{"inputs": [', None, 400, "not valid JSON"),
    ("binary without the header", "m", binary()[0], {}, 400, "not valid JSON"),
    ("JSON not an object", "m", [1, 2], None, 400, "JSON object"),
    ("no inputs", "m", {"outputs": []}, None, 400, "'inputs'"),
    ("unknown input", "m", with_input(0, name="picture"), None, 400, "no input 'picture'"),
    ("input twice", "m", {"inputs": good_json()["inputs"] + [tensor("seq", SEQ)]}, None, 400,
     "given twice"),
    ("missing input", "m", {"inputs": good_json()["inputs"][:2]}, None, 400,
     "missing input(s) ['seq']"),
    ("wrong datatype", "m", with_input(2, datatype="INT64"), None, 400,
     "datatype INT64 is not accepted; send FP32"),
    ("BYTES", "m", with_input(2, datatype="BYTES"), None, 400, "BYTES tensors"),
    ("not a datatype", "m", with_input(2, datatype="float"), None, 400,
     "not a KServe v2 datatype"),
    ("wrong shape", "m", with_input(0, shape=[1, 16, 64, 3]), None, 400,
     "does not match the model's (1, 32, 32, 3)"),
    ("shape not ints", "m", with_input(0, shape=[1, "32", 32, 3]), None, 400,
     "non-negative integers"),
    ("data size", "m", with_input(1, data=[0.5] * 63), None, 400, "63 elements"),
    ("data not numbers", "m", with_input(1, data=["a"] * 64), None, 400, "not a FP16 tensor"),
    ("ragged data", "m", with_input(1, shape=[2, 32], data=[[1.0] * 32, [1.0] * 31]), None,
     400, "not a FP16 tensor"),
    ("UINT8 out of range", "m", with_input(0, data=[300] * IMAGE.size), None, 400,
     "out of the range of UINT8"),
    ("floats as UINT8", "m", with_input(0, data=[0.5] * IMAGE.size), None, 400,
     "must be integers"),
    ("no data", "m", with_input(0, data=None), None, 400, "not a FP16 tensor"),
    ("binary size not the shape's", "m", *binary(sizes={1: 64}), 400,
     "binary_data_size 64 does not match shape [1, 64] of FP16 (128 bytes)"),
    ("binary data short", "m", *binary(drop=10), 400, "runs past"),
    ("binary data left over", "m", *binary(extra=b"xyz"), 400, "3 bytes of binary data"),
    ("header longer than body", "m", binary()[0], {H: "999999"}, 400,
     "must be the length of the JSON header"),
    ("header not a number", "m", binary()[0], {H: "ten"}, 400, "must be the length"),
    ("unknown output", "m", good_json(outputs=[{"name": "boxes"}]), None, 400,
     "no output 'boxes'"),
    ("classification", "m", good_json(outputs=[{"name": "feat_out",
                                                "parameters": {"classification": 3}}]),
     None, 400, "classification extension"),
    ("parameter not a bool", "m", good_json(parameters={"raw": "yes"}), None, 400,
     "'raw' must be true or false"),
    ("unknown model", "nope", good_json(), None, 404, "no model 'nope'"),
]


@pytest.mark.parametrize("what,model,body,headers,status,words", CASES,
                         ids=[c[0] for c in CASES])
def test_malformed_request_gets_4xx_with_reason(serve, what, model, body, headers, status,
                                                words):
    s = serve({"m": "multi_io"})
    if what == "no data":
        body = with_input(1)
        del body["inputs"][1]["data"]
        words = "has no 'data'"
    got, rh, rb = request(s.port, "POST", f"/v2/models/{model}/infer", body, headers)
    assert got == status, rb
    assert rh["Content-Type"].startswith("application/json")
    assert words in json.loads(rb)["error"]
    _still_healthy(s)


def test_methods_paths_and_size_limit(serve):
    s = serve({"m": "multi_io"}, max_request_bytes=64 * 1024)
    status, _, rb = request(s.port, "GET", "/v2/models/m/infer")
    assert status == 405 and "GET is not allowed" in json.loads(rb)["error"]
    status, _, rb = request(s.port, "GET", "/v2/elsewhere")
    assert status == 404 and "no such endpoint" in json.loads(rb)["error"]
    big = b'{"inputs": [' + b" " * (100 * 1024) + b"]}"
    status, _, rb = request(s.port, "POST", "/v2/models/m/infer", big,
                            {"Content-Type": "application/json"})
    assert status == 413 and "larger than" in json.loads(rb)["error"]
    # no Content-Length (chunked): aiohttp's own limit, the same answer
    def chunks():
        for _ in range(20):
            yield b" " * 8192
    status, _, rb = request(s.port, "POST", "/v2/models/m/infer", chunks(),
                            {"Transfer-Encoding": "chunked"})
    assert status == 413 and "larger than" in json.loads(rb)["error"]
    _still_healthy(s)


def _still_healthy(s):
    assert request(s.port, "GET", "/v2/health/ready")[0] == 200
    body, headers = infer_body(GOOD)
    status, rh, rb = request(s.port, "POST", "/v2/models/m/infer", body, headers)
    assert status == 200, rb
    with rknnx.Model(model_bytes("multi_io")) as model:
        want = model.run(GOOD)
    out = parse_response(rh, rb)[1]
    for t, w in zip(model.outputs, want):
        np.testing.assert_array_equal(out[t.name], w)
    stats = json.loads(request(s.port, "GET", "/v2/models/m/stats")[2])["model_stats"][0]
    assert stats["in_flight"] == 0
