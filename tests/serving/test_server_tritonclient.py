"""The real client: ``tritonclient.http`` against `rknnx serve` run as a user runs it (the
CLI in a subprocess, two sample models): health, metadata, config, repository index,
statistics, inference with binary and JSON tensors (sync and async), and its exception on
a refused request."""

from __future__ import annotations

import numpy as np
import pytest

from serving_helpers import need
from helpers import model_bytes, user_inputs

need("aiohttp", "serve")
httpclient = need("tritonclient.http", "serve")
from tritonclient.utils import InferenceServerException  # noqa: E402

import rknnx  # noqa: E402

TYPES = {"uint8": "UINT8", "float16": "FP16", "float32": "FP32", "int8": "INT8"}


def inputs_for(model, frame, binary=True):
    ins = []
    for t, a in zip(model.inputs, frame):
        x = httpclient.InferInput(t.name, list(a.shape), TYPES[a.dtype.name])
        x.set_data_from_numpy(a, binary_data=binary)
        ins.append(x)
    return ins


@pytest.fixture(scope="module")
def reference():
    """multi_io opened here, to compare with (closed at the end of the module)."""
    model = rknnx.Model(model_bytes("multi_io"))
    yield model
    model.close()


def test_tritonclient_against_rknnx_serve(cli_server, reference):
    server = cli_server("--sample", "multi_io", "--sample", "tiny_relu")
    client = httpclient.InferenceServerClient(server.url, concurrency=4)
    try:
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready("multi_io") and client.is_model_ready("tiny_relu")
        assert not client.is_model_ready("nope")
        assert "binary_tensor_data" in client.get_server_metadata()["extensions"]
        meta = client.get_model_metadata("multi_io")
        assert [(t["name"], t["datatype"]) for t in meta["inputs"]] == [
            ("image", "UINT8"), ("feat", "FP16"), ("seq", "FP32")]
        assert client.get_model_config("tiny_relu")["input"][0]["data_type"] == "TYPE_FP32"
        assert {m["name"] for m in client.get_model_repository_index()} == {"multi_io",
                                                                            "tiny_relu"}
        rng = np.random.default_rng(11)
        frames = [user_inputs(reference, rng) for _ in range(6)]
        names = [t.name for t in reference.outputs]
        for k, frame in enumerate(frames[:2]):           # binary, then JSON, both ways
            binary = k == 0
            result = client.infer("multi_io", inputs_for(reference, frame, binary),
                                  outputs=[httpclient.InferRequestedOutput(n, binary_data=binary)
                                           for n in names], request_id=f"r{k}")
            assert result.get_response()["id"] == f"r{k}"
            for n, want in zip(names, reference.run(*frame)):
                np.testing.assert_array_equal(result.as_numpy(n), want)
        pending = [(f, client.async_infer("multi_io", inputs_for(reference, f)))
                   for f in frames * 3]
        for frame, p in pending:
            result = p.get_result(timeout=60)
            for n, want in zip(names, reference.run(*frame)):
                np.testing.assert_array_equal(result.as_numpy(n), want)
        x = httpclient.InferInput("x", [1, 2], "FP32")
        x.set_data_from_numpy(np.float32([[-1.5, 2.0]]))
        np.testing.assert_array_equal(client.infer("tiny_relu", [x]).as_numpy("y"),
                                      [[0.0, 2.0]])
        for algorithm in ("gzip", "deflate"):          # tritonclient compresses the body
            result = client.infer("multi_io", inputs_for(reference, frames[3]),
                                  request_compression_algorithm=algorithm)
            for n, want in zip(names, reference.run(*frames[3])):
                np.testing.assert_array_equal(result.as_numpy(n), want)
        stats = client.get_inference_statistics("multi_io")["model_stats"][0]
        assert stats["inference_count"] == 2 + 18 + 2
        # refusals: the client raises with the server's status and reason
        bad = httpclient.InferInput("image", [1, 16, 16, 3], "UINT8")
        bad.set_data_from_numpy(np.zeros((1, 16, 16, 3), np.uint8))
        with pytest.raises(InferenceServerException, match="does not match the model's") as e:
            client.infer("multi_io", [bad] + inputs_for(reference, frames[0])[1:])
        assert e.value.status() == "400"
        wrong = httpclient.InferInput("x", [1, 2], "INT32")
        wrong.set_data_from_numpy(np.int32([[1, 2]]))
        with pytest.raises(InferenceServerException, match="INT32 is not accepted"):
            client.infer("tiny_relu", [wrong])
        with pytest.raises(InferenceServerException, match="no model 'nope'"):
            client.infer("nope", [x])
        with pytest.raises(InferenceServerException, match="no model 'nope'"):
            client.get_model_metadata("nope")
        assert client.is_server_ready()
    finally:
        client.close()
    code, out, err = server.stop()
    assert code == 0 and "rknnx serve: stopped" in out, err
