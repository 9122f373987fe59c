"""`rknnx serve` under load on 127.0.0.1 (bounded in count and time): many concurrent
clients, every answer equal to model.run on its frame, nothing lost, the server's memory
flat; the bounded queue answers 503 when full; SIGTERM lets the requests in flight finish.
The server runs as the CLI with simulated NPU time (RKNN_EMU_NPU_TIME_US)."""

from __future__ import annotations

import json
import queue
import signal
import threading
import time

import numpy as np
import pytest

from serving_helpers import infer_body, need, parse_response, request
from helpers import model_bytes, user_inputs

need("aiohttp", "serve")
httpclient = need("tritonclient.http", "serve")

import rknnx  # noqa: E402

TYPES = {"uint8": "UINT8", "float16": "FP16", "float32": "FP32"}


@pytest.fixture(scope="module")
def reference():
    model = rknnx.Model(model_bytes("multi_io"))
    rng = np.random.default_rng(5)
    frames = [user_inputs(model, rng) for _ in range(8)]
    wants = [model.run(*f) for f in frames]
    yield model, frames, wants
    model.close()


def check(out, want, names):
    assert list(out) == names
    for n, w in zip(names, want):
        np.testing.assert_array_equal(out[n], w)


def raw_clients(port, frames, wants, names, threads, per_thread, errors, done):
    """Threads with a keep-alive connection each, sending binary requests."""
    import http.client

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            for i in range(per_thread):
                j = (k + i) % len(frames)
                body, headers = infer_body(dict(zip(names[0], frames[j])),
                                           parameters={"binary_data_output": True})
                conn.request("POST", "/v2/models/multi_io/infer", body, headers)
                r = conn.getresponse()
                rb = r.read()
                if r.status != 200:
                    errors.append(f"{r.status} {rb[:200]!r}")
                    continue
                check(parse_response(dict(r.getheaders()), rb)[1], wants[j], names[1])
                done.put(j)
        except Exception as e:              # reported by the test
            errors.append(repr(e))
        finally:
            conn.close()

    ts = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(threads)]
    for t in ts:
        t.start()
    return ts


def test_many_concurrent_clients_every_answer_right_memory_flat(cli_server, reference):
    model, frames, wants = reference
    in_names = [t.name for t in model.inputs]
    out_names = [t.name for t in model.outputs]
    server = cli_server("--sample", "multi_io", "--workers", "3", "--queue", "64",
                        env={"RKNN_EMU_NPU_TIME_US": "2000"})
    client = httpclient.InferenceServerClient(server.url, concurrency=16,
                                              connection_timeout=60, network_timeout=60)
    deadline = time.monotonic() + 240

    def inputs(frame):
        ins = []
        for n, a in zip(in_names, frame):
            x = httpclient.InferInput(n, list(a.shape), TYPES[a.dtype.name])
            x.set_data_from_numpy(a, binary_data=True)
            ins.append(x)
        return ins

    def round_(n_async, threads, per_thread):
        errors, done = [], queue.Queue()
        ts = raw_clients(server.port, frames, wants, (in_names, out_names), threads,
                         per_thread, errors, done)
        pending = [(i % len(frames), client.async_infer("multi_io", inputs(frames[i % len(frames)])))
                   for i in range(n_async)]
        answered = 0
        for j, p in pending:
            result = p.get_result(timeout=max(1, deadline - time.monotonic()))
            check({n: result.as_numpy(n) for n in out_names}, wants[j], out_names)
            answered += 1
        for t in ts:
            t.join(max(1, deadline - time.monotonic()))
            assert not t.is_alive(), "a client thread did not finish in time"
        assert not errors, errors[:5]
        assert answered == n_async and done.qsize() == threads * per_thread  # nothing lost
        return answered + done.qsize()

    try:
        assert round_(100, 8, 10) == 180                    # warm-up: pools, buffers, caches
        rss_before = server.rss_kib()
        total = 0
        for _ in range(3):
            total += round_(160, 8, 20)
        rss_after = server.rss_kib()
        stats = client.get_inference_statistics("multi_io")["model_stats"][0]
    finally:
        client.close()
    assert total == 3 * 320
    assert stats["inference_count"] == 180 + total and stats["inference_stats"]["fail"]["count"] == 0
    assert stats["rejected_count"] == 0 and stats["in_flight"] == 0
    grown = rss_after - rss_before
    print(f"server RSS {rss_before} -> {rss_after} KiB over {total} requests")
    assert grown < 4 * 1024, f"server RSS grew by {grown} KiB over {total} requests"
    code, out, err = server.stop()
    assert code == 0, err


def test_full_queue_answers_503_and_recovers(cli_server, reference):
    model, frames, wants = reference
    in_names = [t.name for t in model.inputs]
    out_names = [t.name for t in model.outputs]
    # one worker, one waiting place: two requests in flight at most; each run takes 0.4 s
    server = cli_server("--sample", "multi_io", "--workers", "1", "--queue", "1",
                        env={"RKNN_EMU_NPU_TIME_US": "400000"})
    results = [None] * 6
    body, headers = infer_body(dict(zip(in_names, frames[0])),
                               parameters={"binary_data_output": True})

    def send(k):
        results[k] = request(server.port, "POST", "/v2/models/multi_io/infer", body, headers)

    ts = [threading.Thread(target=send, args=(k,)) for k in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    codes = sorted(r[0] for r in results)
    assert set(codes) <= {200, 503} and codes.count(200) >= 2 and 503 in codes, codes
    for status, rh, rb in results:
        if status == 503:
            assert "queue is full" in json.loads(rb)["error"] and rh["Retry-After"] == "1"
        else:
            check(parse_response(rh, rb)[1], wants[0], out_names)
    stats = json.loads(request(server.port, "GET", "/v2/models/multi_io/stats")[2])
    assert stats["model_stats"][0]["rejected_count"] == codes.count(503)
    status, rh, rb = request(server.port, "POST", "/v2/models/multi_io/infer", body, headers)
    assert status == 200
    check(parse_response(rh, rb)[1], wants[0], out_names)
    assert server.stop()[0] == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_shutdown_finishes_requests_in_flight(cli_server, reference, sig):
    model, frames, wants = reference
    in_names = [t.name for t in model.inputs]
    out_names = [t.name for t in model.outputs]
    server = cli_server("--sample", "multi_io", "--workers", "1", "--queue", "8",
                        env={"RKNN_EMU_NPU_TIME_US": "300000"})
    results = {}

    def send(k):
        body, headers = infer_body(dict(zip(in_names, frames[k])),
                                   parameters={"binary_data_output": True})
        results[k] = request(server.port, "POST", "/v2/models/multi_io/infer", body, headers)

    ts = [threading.Thread(target=send, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    deadline = time.monotonic() + 30
    while True:                                  # all four admitted (one runs, three wait)
        stats = json.loads(request(server.port, "GET", "/v2/models/multi_io/stats")[2])
        if stats["model_stats"][0]["in_flight"] == 4:
            break
        assert time.monotonic() < deadline, stats
        time.sleep(0.02)
    server.signal(sig)
    time.sleep(0.2)
    try:                                         # no longer listening (or refusing: 503)
        status = request(server.port, "GET", "/v2/health/ready", timeout=5)[0]
        assert status == 503
    except (ConnectionRefusedError, ConnectionResetError):
        pass
    for t in ts:
        t.join(60)
    assert sorted(results) == [0, 1, 2, 3]
    for k, (status, rh, rb) in results.items():
        assert status == 200, rb
        check(parse_response(rh, rb)[1], wants[k], out_names)
    code, out, err = server.stop()
    assert code == 0 and "rknnx serve: stopped" in out, err
