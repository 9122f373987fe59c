"""`rknnx serve` shutting down under load, as the CLI in a subprocess on 127.0.0.1, with
real keep-alive clients: every request whose headers reached the server gets an HTTP
answer (its result, bit-equal to model.run, if it was admitted; else 503 with
``Connection: close``), a keep-alive connection is closed only after a response, ``ready``
answers 503 during the drain, new connections are refused, and the drain lasts at most the
shutdown timeout (docs/serving.md, "What the server guarantees").  Every loop is bounded (seconds)."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import threading
import time

import numpy as np
import pytest

from serving_helpers import HOST, infer_body, need, parse_response
from helpers import model_bytes, user_inputs

need("aiohttp", "serve")

import rknnx  # noqa: E402

PATH = "/v2/models/multi_io/infer"


@pytest.fixture(scope="module")
def reference():
    model = rknnx.Model(model_bytes("multi_io"))
    rng = np.random.default_rng(11)
    names = [t.name for t in model.inputs], [t.name for t in model.outputs]
    frames = [user_inputs(model, rng) for _ in range(6)]
    wants = [model.run(*f) for f in frames]
    bodies = [infer_body(dict(zip(names[0], f)), parameters={"binary_data_output": True})
              for f in frames]
    yield names, bodies, wants
    model.close()


def check_answer(status, headers, data, j, wants, out_names):
    """A 200 equal to model.run on frame j, or the shutdown's 503 that closes."""
    if status == 200:
        out = parse_response(headers, data)[1]
        assert list(out) == out_names
        for n, w in zip(out_names, wants[j]):
            np.testing.assert_array_equal(out[n], w)
        return "ok"
    assert status == 503, (status, data[:200])
    assert headers.get("Connection", "").lower() == "close", headers
    assert "shutting down" in json.loads(data)["error"]
    return "refused"


class KeepAliveClient(threading.Thread):
    """One keep-alive connection sending requests back to back until a response closes it
    (as HTTP clients do, it sends nothing after ``Connection: close``).  `log` gets one
    entry per request sent: its answer, or how it was lost."""

    def __init__(self, port, bodies, k, pause=0.0):
        super().__init__(daemon=True)
        self.port, self.bodies, self.k, self.pause = port, bodies, k, pause
        self.log = []

    def run(self):
        conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
        i = 0
        try:
            conn.connect()
            while i < 10_000:
                j = (self.k + i) % len(self.bodies)
                body, headers = self.bodies[j]
                try:
                    conn.request("POST", PATH, body, headers)
                    r = conn.getresponse()
                    data = r.read()
                except Exception as e:         # sent (or sending) and no answer: a loss
                    self.log.append(("lost", j, repr(e)))
                    return
                h = dict(r.getheaders())
                self.log.append((r.status, j, h, data))
                if h.get("Connection", "").lower() == "close":
                    return
                i += 1
                if self.pause:
                    time.sleep(self.pause)
        finally:
            conn.close()


def poll_ready(conn, until, seen):
    """`conn` (a keep-alive connection opened before the signal) asking /v2/health/ready
    until a 503 comes (or `until`)."""
    while time.monotonic() < until:
        try:
            conn.request("GET", "/v2/health/ready")
            r = conn.getresponse()
            r.read()
            seen.append((time.monotonic(), r.status, r.getheader("Connection")))
            if r.status == 503:
                return
        except OSError as e:
            seen.append((time.monotonic(), repr(e)))
            return
        time.sleep(0.005)


def partial_body(port, body, headers, got):
    """Headers and half a body, then silence: the drain answers it 503 once it has been
    silent for the drain window (a second), and closes it a window later."""
    s = socket.create_connection((HOST, port), timeout=20)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    s.sendall(f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{head}\r\n"
              .encode() + body[:len(body) // 2])
    got["sent"] = time.monotonic()
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        got["error"] = repr(e)
    got["answer"], got["at"] = data, time.monotonic()
    s.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_shutdown_under_load_answers_every_request(cli_server, reference, sig):
    (in_names, out_names), bodies, wants = reference
    timeout = 5.0
    server = cli_server("--sample", "multi_io", "--workers", "2", "--queue", "16",
                        "--shutdown-timeout", str(timeout),
                        env={"RKNN_EMU_NPU_TIME_US": "15000"})
    clients = [KeepAliveClient(server.port, bodies, k) for k in range(8)]
    # one more connection, idle (one request, then a pause) when the signal comes: it
    # sends its next request just after it, and gets the 503 that closes
    idle = KeepAliveClient(server.port, bodies, 99, pause=1.5)
    for c in clients + [idle]:
        c.start()
    time.sleep(1.0)                            # load: every client has had answers
    assert all(c.log for c in clients) and len(idle.log) == 1
    slow = {}
    slow_thread = threading.Thread(target=partial_body, args=(server.port, *bodies[0], slow),
                                   daemon=True)
    slow_thread.start()
    probe = http.client.HTTPConnection(HOST, server.port, timeout=5)
    probe.request("GET", "/v2/health/ready")
    assert probe.getresponse().read() == b"" and probe.sock is not None
    time.sleep(0.2)
    seen = []
    t_signal = time.monotonic()
    server.signal(sig)
    poll_ready(probe, t_signal + 5, seen)
    # a new connection is refused: the server stopped listening at the signal (and it is
    # still draining: the stalled body below holds it for a second or two)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((HOST, server.port), timeout=5).close()
    assert server.proc.poll() is None
    for c in clients + [idle]:
        c.join(30)
        assert not c.is_alive(), "a client got no answer in time"
    slow_thread.join(30)
    code, out, err = server.stop(timeout=30)
    t_exit = time.monotonic()

    counts = {"ok": 0, "refused": 0}
    for c in clients + [idle]:
        lost = [e for e in c.log if e[0] == "lost"]
        assert not lost, lost                       # every request sent got its answer
        for status, j, h, data in c.log:
            counts[check_answer(status, h, data, j, wants, out_names)] += 1
        # the connection was closed by a response that said so: the last one
        assert c.log[-1][2].get("Connection", "").lower() == "close"
    assert counts["ok"] > 8 and counts["refused"] >= 1, counts
    assert idle.log[-1][0] == 503 and len(idle.log) == 2    # answered in the grace
    # the request whose body stalled: 503 with Connection: close after the drain window
    # (1 s) of silence, closed after another; well before the timeout (5 s)
    head, _, data = slow["answer"].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503") and b"Connection: close" in head, slow
    assert "shutting down" in json.loads(data)["error"]
    assert slow["at"] - t_signal < 3.5
    # ready said 503 (closing) on the connection the probe kept open, within the drain
    assert seen and seen[-1][1:] == (503, "close") and seen[-1][0] - t_signal < 2, seen
    assert t_exit - t_signal < timeout + 3.0
    assert code == 0 and "rknnx serve: stopped" in out, err
    assert "Traceback" not in err and "ERROR" not in err, err
    print(f"\nshutdown under load ({sig.name}): {sum(len(c.log) for c in clients)} requests "
          f"of 8 keep-alive clients, {counts['ok']} answers bit-equal to model.run, "
          f"{counts['refused']} 503 on shutdown, 0 lost; exit {t_exit - t_signal:.2f} s "
          f"after the signal")


def test_drain_ends_at_the_shutdown_timeout_with_503_for_what_still_runs(cli_server, reference):
    (in_names, out_names), bodies, wants = reference
    # one worker, 1.5 s per frame, a 0.6 s drain: the frame on the NPU cannot finish in
    # time and those queued behind it even less; each gets 503 when the time is up
    server = cli_server("--sample", "multi_io", "--workers", "1", "--queue", "4",
                        "--shutdown-timeout", "0.6", env={"RKNN_EMU_NPU_TIME_US": "1500000"})
    results = {}

    def send(k):
        c = http.client.HTTPConnection(HOST, server.port, timeout=30)
        c.request("POST", PATH, *bodies[k])
        r = c.getresponse()
        results[k] = (r.status, dict(r.getheaders()), r.read(), time.monotonic())
        c.close()

    ts = [threading.Thread(target=send, args=(k,), daemon=True) for k in range(3)]
    for t in ts:
        t.start()
    deadline = time.monotonic() + 20
    while True:                                  # all three admitted
        c = http.client.HTTPConnection(HOST, server.port, timeout=5)
        c.request("GET", "/v2/models/multi_io/stats")
        stats = json.loads(c.getresponse().read())["model_stats"][0]
        c.close()
        if stats["in_flight"] == 3:
            break
        assert time.monotonic() < deadline, stats
        time.sleep(0.02)
    t_signal = time.monotonic()
    server.signal(signal.SIGTERM)
    for t in ts:
        t.join(30)
    assert sorted(results) == [0, 1, 2]
    for status, h, data, at in results.values():
        assert status == 503 and h["Connection"].lower() == "close", data
        assert "did not finish within 0.6 s" in json.loads(data)["error"]
        assert at - t_signal < 0.6 + 1.0
    code, out, err = server.stop(timeout=30)
    assert code == 0 and "Traceback" not in err, err
