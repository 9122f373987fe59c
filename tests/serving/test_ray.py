"""rknnx.ray on a local Ray cluster over the emulator (a node advertising ``rknpu: 3`` as a
board does): Predictor in Ray Data's map_batches gives model.run's numbers in the dataset's
order (preserve_order), by column name or the one column, with a Pool per actor; the Ray
Serve deployment answers handles and KServe v2 HTTP (tritonclient) as model.run does.
Predictor's column rules are also checked directly, without Ray."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from serving_helpers import infer_body, need, parse_response, request
from helpers import model_bytes, user_inputs

ray = need("ray", "ray")
need("ray.data", "ray")

import rknnx  # noqa: E402
import rknnx.ray as rray  # noqa: E402

# Ray deprecates its own settings as it goes (warnings raised inside ray, about ray's
# internals); every other warning is still an error here
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster: this machine's 2 CPUs and 3 units of rknpu (one RK3588 board)."""
    ray.init(num_cpus=2, resources={"rknpu": 3}, include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def multi_io():
    model = rknnx.Model(model_bytes("multi_io"))
    yield model
    model.close()


def test_predictor_one_column_feeds_the_one_input_in_order(cluster):
    with rknnx.Model(model_bytes("classifier")) as model:
        rng = np.random.default_rng(0)
        images = rng.integers(0, 256, (10, 224, 224, 3), dtype=np.uint8)
        want = [model.run(im)[0][0] for im in images]
    # one column, not named like the input ("image")
    ds = ray.data.from_items([{"pixels": im} for im in images], override_num_blocks=4)
    rows = ds.map_batches(rray.Predictor,
                          fn_constructor_kwargs={"model": model_bytes("classifier")},
                          concurrency=2, num_cpus=0.25, resources={"rknpu": 1},
                          batch_size=3).take_all()
    assert len(rows) == 10 and set(rows[0]) == {"logits"}
    for row, w in zip(rows, want):                        # in the dataset's order
        assert row["logits"].shape == (1000,) and row["logits"].dtype == np.float32
        np.testing.assert_array_equal(row["logits"], w)


def test_predictor_columns_by_name_with_a_pool_per_actor(cluster, multi_io):
    rng = np.random.default_rng(1)
    frames = [user_inputs(multi_io, rng) for _ in range(24)]
    items = [{"id": i, "image": f[0][0], "feat": f[1][0], "seq": f[2][0]}
             for i, f in enumerate(frames)]
    ds = ray.data.from_items(items)
    out = ds.map_batches(rray.Predictor,
                         fn_constructor_kwargs={"model": model_bytes("multi_io"), "workers": 3},
                         concurrency=1, num_cpus=0.25, resources={"rknpu": 3},
                         batch_size=8).take_all()
    assert [r["id"] for r in out] == list(range(24))      # order kept, ids passed through
    names = [t.name for t in multi_io.outputs]
    for r in out:
        assert set(r) == {"id", *names}
        for n, w in zip(names, multi_io.run(*frames[r["id"]])):
            np.testing.assert_array_equal(r[n], w[0])
    raw = ds.limit(4).map_batches(rray.Predictor,
                                  fn_constructor_kwargs={"model": model_bytes("multi_io"),
                                                         "raw": True},
                                  concurrency=1, num_cpus=0.25, resources={"rknpu": 1},
                                  batch_size=4).take_all()
    for r in raw:
        np.testing.assert_array_equal(r["feat_q"], multi_io.run(*frames[r["id"]], raw=True)[3][0])


def test_serve_deployment_handle_and_kserve_http(cluster, multi_io):
    from ray import serve

    httpclient = need("tritonclient.http", "serve")
    with socket.socket() as s:                  # a free port on 127.0.0.1 for Serve's proxy
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        app = rray.deployment(model_bytes("multi_io"), name="multi_io", workers=2,
                              num_cpus=0.25)
        handle = serve.run(app, name="multi_io", route_prefix="/v2/models/multi_io")
        rng = np.random.default_rng(2)
        frames = [user_inputs(multi_io, rng) for _ in range(6)]
        responses = [handle.infer.remote(*f) for f in frames]
        for f, resp in zip(frames, responses):
            for got, want in zip(resp.result(timeout_s=60), multi_io.run(*f)):
                np.testing.assert_array_equal(got, want)
        # the KServe v2 paths through Serve's HTTP proxy: tritonclient, and raw requests
        status, _, body = request(port, "GET", "/v2/models/multi_io")
        assert status == 200 and json.loads(body)["inputs"][1]["datatype"] == "FP16"
        client = httpclient.InferenceServerClient(f"127.0.0.1:{port}")
        try:
            ins = []
            for t, a in zip(multi_io.inputs, frames[0]):
                x = httpclient.InferInput(t.name, list(a.shape),
                                          {"uint8": "UINT8", "float16": "FP16",
                                           "float32": "FP32"}[a.dtype.name])
                x.set_data_from_numpy(a)
                ins.append(x)
            result = client.infer("multi_io", ins)
            for t, want in zip(multi_io.outputs, multi_io.run(*frames[0])):
                np.testing.assert_array_equal(result.as_numpy(t.name), want)
        finally:
            client.close()
        names = [t.name for t in multi_io.inputs]
        body, headers = infer_body(dict(zip(names, frames[1])), binary=False)
        status, rh, rb = request(port, "POST", "/v2/models/multi_io/infer", body, headers)
        assert status == 200, rb
        out = parse_response(rh, rb)[1]
        for t, want in zip(multi_io.outputs, multi_io.run(*frames[1])):
            np.testing.assert_array_equal(out[t.name], want)
        bad = dict(zip(names, frames[1]), seq=np.zeros((1, 4, 16), np.float32))
        body, headers = infer_body(bad)
        status, _, rb = request(port, "POST", "/v2/models/multi_io/infer", body, headers)
        assert status == 400 and "does not match the model's" in json.loads(rb)["error"]
    finally:
        serve.shutdown()


# -- Predictor's column rules, without Ray ----------------------------------------------------

def test_predictor_column_rules(emu):
    rng = np.random.default_rng(3)
    p = rray.Predictor(model_bytes("multi_io"),
                       input_columns={"image": "img", "feat": "f", "seq": "s"})
    try:
        frames = [user_inputs(p.model, rng) for _ in range(3)]
        batch = {"img": np.concatenate([f[0] for f in frames]),
                 "f": np.concatenate([f[1] for f in frames]),
                 "s": np.concatenate([f[2] for f in frames]), "path": np.array(["a", "b", "c"])}
        out = p(batch)
        assert list(out["path"]) == ["a", "b", "c"]
        for k, f in enumerate(frames):
            np.testing.assert_array_equal(out["conv_out"][k], p.model.run(*f)[0][0])
        with pytest.raises(ValueError, match=r"need column\(s\) \['img'\]"):
            p({"f": batch["f"], "s": batch["s"]})
        empty = p({c: v[:0] for c, v in batch.items()})
        assert empty["feat_out"].shape == (0, 32) and empty["feat_out"].dtype == np.float32
        import pandas as pd

        df = pd.DataFrame({"img": list(batch["img"]), "f": list(batch["f"]),
                           "s": list(batch["s"])})
        np.testing.assert_array_equal(p(df)["seq_out"], out["seq_out"])
    finally:
        p.close()
    with pytest.raises(ValueError, match="input_columns must name each input"):
        rray.Predictor(model_bytes("multi_io"), input_columns={"image": "x"})
    with pytest.raises(ValueError, match="workers must be an int >= 1"):
        rray.Predictor(model_bytes("tiny_relu"), workers=0)
    # a dynamic model: rows of several shapes give a column of arrays of several shapes
    p = rray.Predictor(model_bytes("dynamic"))
    try:
        images = np.empty(2, dtype=object)
        images[0] = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
        images[1] = rng.integers(0, 256, (96, 96, 3), dtype=np.uint8)
        out = p({"image": images})
        assert out["prob"].dtype == object and out["prob"][1].shape == (4, 48, 48)
        np.testing.assert_array_equal(out["prob"][1], p.model.run(images[1])[1][0])
    finally:
        p.close()
    assert set(dir(rray)) == set(rray.__all__)
