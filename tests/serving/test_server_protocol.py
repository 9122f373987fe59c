"""`rknnx serve` speaks KServe v2: health, metadata with KServe datatypes, and inference
with JSON and binary tensors whose answers equal model.run on the same frames, for several
models at once (in-process server, raw HTTP)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from serving_helpers import infer_body, need, parse_response, request
from helpers import model_bytes, user_inputs

need("aiohttp", "serve")

import rknnx  # noqa: E402


def frames(model, n, seed=0):
    rng = np.random.default_rng(seed)
    return [dict(zip([t.name for t in model.inputs], user_inputs(model, rng))) for _ in range(n)]


def test_health_metadata_and_several_models(serve):
    s = serve({"classifier": "classifier", "multi_io": "multi_io", "dyn": "dynamic"})
    assert request(s.port, "GET", "/v2/health/live")[0] == 200
    assert request(s.port, "GET", "/v2/health/ready")[0] == 200
    status, _, body = request(s.port, "GET", "/v2")
    assert status == 200 and "binary_tensor_data" in json.loads(body)["extensions"]

    def meta(name):
        status, headers, body = request(s.port, "GET", f"/v2/models/{name}")
        assert status == 200 and headers["Content-Type"].startswith("application/json")
        return json.loads(body)

    m = meta("classifier")
    assert m["name"] == "classifier" and m["versions"] == ["1"]
    assert m["inputs"] == [{"name": "image", "datatype": "UINT8", "shape": [1, 224, 224, 3]}]
    assert m["outputs"] == [{"name": "logits", "datatype": "FP32", "shape": [1, 1000]}]
    m = meta("multi_io")
    assert [(t["name"], t["datatype"], t["shape"]) for t in m["inputs"]] == [
        ("image", "UINT8", [1, 32, 32, 3]), ("feat", "FP16", [1, 64]),
        ("seq", "FP32", [1, 8, 16])]
    assert [t["datatype"] for t in m["outputs"]] == ["FP32"] * 4
    m = meta("dyn")                              # the dims that vary between shape sets
    assert m["inputs"][0]["shape"] == [1, -1, -1, 3]
    assert meta("multi_io") == json.loads(request(s.port, "GET",
                                                  "/v2/models/multi_io/versions/1")[2])
    assert request(s.port, "GET", "/v2/models/multi_io/ready")[0] == 200
    status, _, body = request(s.port, "GET", "/v2/models/multi_io/versions/2")
    assert status == 404 and "no version '2'" in json.loads(body)["error"]
    config = json.loads(request(s.port, "GET", "/v2/models/classifier/config")[2])
    assert config["input"][0]["data_type"] == "TYPE_UINT8" and config["max_batch_size"] == 0
    index = json.loads(request(s.port, "POST", "/v2/repository/index")[2])
    assert [(i["name"], i["state"]) for i in index] == [
        ("classifier", "READY"), ("multi_io", "READY"), ("dyn", "READY")]


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_infer_equals_model_run(serve, binary):
    s = serve({"multi_io": "multi_io", "classifier": "classifier"})
    with rknnx.Model(model_bytes("multi_io")) as model:
        for k, frame in enumerate(frames(model, 4, seed=1)):
            body, headers = infer_body(frame, binary=binary,
                                       parameters={"binary_data_output": binary})
            status, rh, rb = request(s.port, "POST", "/v2/models/multi_io/infer", body, headers)
            assert status == 200, rb
            assert ("Inference-Header-Content-Length" in rh) == binary
            doc, out = parse_response(rh, rb)
            assert doc["model_name"] == "multi_io" and doc["model_version"] == "1"
            want = model.run(frame)
            assert list(out) == [t.name for t in model.outputs]
            for t, w in zip(model.outputs, want):
                assert out[t.name].dtype == np.float32
                np.testing.assert_array_equal(out[t.name], w)
    with rknnx.Model(model_bytes("classifier")) as model:     # the other model, same server
        frame = frames(model, 1, seed=2)[0]
        body, headers = infer_body(frame, binary=binary, parameters={"binary_data_output": True})
        status, rh, rb = request(s.port, "POST", "/v2/models/classifier/infer", body, headers)
        assert status == 200, rb
        np.testing.assert_array_equal(parse_response(rh, rb)[1]["logits"], model.run(frame)[0])


def test_outputs_raw_id_and_layouts(serve):
    s = serve({"m": "multi_io"})
    with rknnx.Model(model_bytes("multi_io")) as model:
        frame = frames(model, 1, seed=3)[0]
        # some outputs, one binary and one JSON, in the model's own types, with an id
        body, headers = infer_body(frame, outputs=["feat_q", "seq_out"], binary_out=None,
                                   parameters={"raw": True})
        doc = json.loads(body[:int(headers["Inference-Header-Content-Length"])])
        doc["id"] = "frame-7"
        doc["outputs"][0]["parameters"] = {"binary_data": True}
        head = json.dumps(doc).encode()
        rest = body[int(headers["Inference-Header-Content-Length"]):]
        status, rh, rb = request(s.port, "POST", "/v2/models/m/infer", head + rest,
                                 {"Inference-Header-Content-Length": str(len(head))})
        assert status == 200, rb
        doc, out = parse_response(rh, rb)
        assert doc["id"] == "frame-7" and list(out) == ["feat_q", "seq_out"]
        assert doc["outputs"][0]["datatype"] == "INT8" and "data" in doc["outputs"][1]
        raw = model.run(frame, raw=True)
        np.testing.assert_array_equal(out["feat_q"], raw[3])
        np.testing.assert_array_equal(out["seq_out"], raw[2])
        # an NCHW image and the other accepted types are converted as model.run converts
        nchw = dict(frame, image=frame["image"].transpose(0, 3, 1, 2))
        body, headers = infer_body(nchw)
        status, rh, rb = request(s.port, "POST", "/v2/models/m/infer", body, headers)
        assert status == 200, rb
        np.testing.assert_array_equal(parse_response(rh, rb)[1]["conv_out"],
                                      model.run(frame)[0])
        as_f32 = dict(frame, feat=frame["feat"].astype(np.float32))
        body, headers = infer_body(as_f32)
        status, rh, rb = request(s.port, "POST", "/v2/models/m/infer", body, headers)
        assert status == 200, rb
        np.testing.assert_array_equal(parse_response(rh, rb)[1]["feat_out"],
                                      model.run(as_f32)[1])
    stats = json.loads(request(s.port, "GET", "/v2/models/m/stats")[2])["model_stats"][0]
    assert stats["inference_count"] == 3 and stats["inference_stats"]["fail"]["count"] == 0
    assert stats["in_flight"] == 0


def test_dynamic_model_picks_the_shape_set(serve):
    s = serve({"dyn": "dynamic"})
    rng = np.random.default_rng(4)
    with rknnx.Model(model_bytes("dynamic")) as model:
        for shape in [(1, 96, 96, 3), (1, 64, 64, 3), (1, 128, 160, 3), (1, 64, 64, 3)]:
            image = rng.integers(0, 256, shape, dtype=np.uint8)
            body, headers = infer_body({"image": image}, parameters={"binary_data_output": True})
            status, rh, rb = request(s.port, "POST", "/v2/models/dyn/infer", body, headers)
            assert status == 200, rb
            out = parse_response(rh, rb)[1]
            for t, w in zip(model.outputs, model.run(image)):
                np.testing.assert_array_equal(out[t.name], w)


def test_runtime_failure_is_500_and_the_server_lives_on(serve, emu):
    s = serve({"m": "multi_io"}, workers=1)
    with rknnx.Model(model_bytes("multi_io")) as model:
        frame = frames(model, 1, seed=5)[0]
        want = model.run(frame)
    body, headers = infer_body(frame)
    with emu.injected("rknn_run", 1, "RKNN_ERR_TIMEOUT"):
        status, _, rb = request(s.port, "POST", "/v2/models/m/infer", body, headers)
    assert status == 500
    assert json.loads(rb)["error"].startswith("the runtime failed: ")
    status, rh, rb = request(s.port, "POST", "/v2/models/m/infer", body, headers)
    assert status == 200
    for t, w in zip(model.outputs, want):
        np.testing.assert_array_equal(parse_response(rh, rb)[1][t.name], w)
    stats = json.loads(request(s.port, "GET", "/v2/models/m/stats")[2])["model_stats"][0]
    assert stats["inference_stats"]["fail"]["count"] == 1 and stats["in_flight"] == 0


def test_large_bodies_are_decoded_and_encoded_off_the_loop(serve, monkeypatch):
    import rknnx.serve

    monkeypatch.setattr(rknnx.serve, "_BIG_JSON", 0)       # every body, every output
    monkeypatch.setattr(rknnx.serve, "_BIG_OUTPUT", 0)
    s = serve({"m": "multi_io"})
    with rknnx.Model(model_bytes("multi_io")) as model:
        for binary in (True, False):
            frame = frames(model, 1, seed=6)[0]
            body, headers = infer_body(frame, binary=binary)
            status, rh, rb = request(s.port, "POST", "/v2/models/m/infer", body, headers)
            assert status == 200, rb
            out = parse_response(rh, rb)[1]
            for t, w in zip(model.outputs, model.run(frame)):
                np.testing.assert_array_equal(out[t.name], w)


def test_a_model_given_open_stays_the_callers(serve, emu):
    model = rknnx.Model(model_bytes("tiny_relu"))
    try:
        s = serve({"relu": model}, workers=2, queue=4)
        body, headers = infer_body({"x": np.float32([[-1.0, 3.0]])})
        status, rh, rb = request(s.port, "POST", "/v2/models/relu/infer", body, headers)
        assert status == 200
        np.testing.assert_array_equal(parse_response(rh, rb)[1]["y"], [[0.0, 3.0]])
        s.close()
        assert not model.closed                       # the server shut its pool down only
        np.testing.assert_array_equal(model.run(np.float32([[2.0, -2.0]]))[0], [[2.0, 0.0]])
    finally:
        model.close()


def test_server_arguments():
    from rknnx.serve import Server

    with pytest.raises(ValueError, match="no models to serve"):
        Server({})
    with pytest.raises(ValueError, match="use letters, digits"):
        Server({"a/b": b""})
    with pytest.raises(ValueError, match="given twice"):
        Server(["x/m.rknn", "y/m.rknn"])
    with pytest.raises(ValueError, match="needs a name"):
        Server([b"bytes"])
    with pytest.raises(ValueError, match="queue must be an int >= 0"):
        Server({"m": b""}, queue=-1)
    import rknnx.serve

    assert set(dir(rknnx.serve)) == set(rknnx.serve.__all__)
