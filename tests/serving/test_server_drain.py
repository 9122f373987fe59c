"""`rknnx serve` drains on SIGTERM without a connection closed under a request: the CLI
in a subprocess (5 ms of simulated NPU time a frame), 16 aiohttp clients (8 keep-alive, 8
opening a connection per request) sending back to back, SIGTERM mid-load.  Every request
ends one of three ways: answered 200 (bit-equal to model.run), answered 503 with
``Connection: close``, or refused at connect (the listener is closed: nothing ran).  None
may end with its connection closed or reset and no answer.  Besides, on raw sockets:
keep-alive connections idle at the signal that send a request within the drain window
(503, then the server closes), one that stays silent (closed after the window, never
before), and a request whose body is still being written, slowly, when the signal comes
(every byte is taken, and it is answered).  See docs/serving.md, "Shutdown".

A race: without the drain, about 10 of some 200 requests were lost in every run.  Time
bounds are generous."""

from __future__ import annotations

import asyncio
import errno
import json
import signal
import socket
import sys
import time

import numpy as np
import pytest

from serving_helpers import HOST, infer_body, need, parse_response
from helpers import model_bytes, user_inputs

aiohttp = need("aiohttp", "serve")

import rknnx  # noqa: E402

PATH = "/v2/models/multi_io/infer"
#: --shutdown-timeout of the server: the drain window is 1 s of it
TIMEOUT = 5.0


@pytest.fixture(scope="module")
def reference():
    model = rknnx.Model(model_bytes("multi_io"))
    rng = np.random.default_rng(23)
    names = [t.name for t in model.inputs], [t.name for t in model.outputs]
    frames = [user_inputs(model, rng) for _ in range(6)]
    wants = [model.run(*f) for f in frames]
    bodies = [infer_body(dict(zip(names[0], f)), parameters={"binary_data_output": True})
              for f in frames]
    yield names[1], bodies, wants
    model.close()


class Tally:
    """Per request: "ok" (200, right numbers), "503" (shutting down, closes), "refused"
    (at connect) or "lost" (no answer, with the error)."""

    def __init__(self, out_names, wants):
        self.out_names, self.wants = out_names, wants
        self.counts = {"ok": 0, "503": 0, "refused": 0, "lost": 0}
        self.lost = []
        self.wrong = []

    def answer(self, status, headers, data, j):
        if status == 200:
            out = parse_response(headers, data)[1]
            if list(out) != self.out_names or not all(
                    np.array_equal(out[n], w) for n, w in zip(self.out_names, self.wants[j])):
                self.wrong.append((j, "200 with other numbers"))
            self.counts["ok"] += 1
        elif (status == 503 and headers.get("Connection", "").lower() == "close"
              and "shutting down" in json.loads(data)["error"]):
            self.counts["503"] += 1
        else:
            self.wrong.append((status, dict(headers), data[:200]))


def refused(e: BaseException) -> bool:
    os_error = getattr(e, "os_error", None)
    return (isinstance(e, aiohttp.ClientConnectorError) and os_error is not None
            and os_error.errno == errno.ECONNREFUSED)


async def load_client(port, bodies, k, keep_alive, tally, started, until):
    """Requests back to back until one is refused at connect (the server is gone)."""
    connector = aiohttp.TCPConnector(limit=1, force_close=not keep_alive)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        i = 0
        while time.monotonic() < until:
            j = (k + i) % len(bodies)
            i += 1
            body, headers = bodies[j]
            try:
                async with session.post(f"http://{HOST}:{port}{PATH}", data=body,
                                        headers=headers) as r:
                    data = await r.read()
                    tally.answer(r.status, r.headers, data, j)
                    started.set()
            except Exception as e:           # aiohttp's errors, OSError, a timeout
                if refused(e):
                    tally.counts["refused"] += 1
                    return
                tally.counts["lost"] += 1
                tally.lost.append(f"{'keep-alive' if keep_alive else 'close'}: {e!r}")
                await asyncio.sleep(0.01)


async def read_response(reader):
    """(status, headers, body) of one HTTP/1.1 response with a Content-Length."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = dict(line.split(": ", 1) for line in lines[1:] if line)
    body = await reader.readexactly(int(headers.get("Content-Length", 0)))
    return status, headers, body


def request_bytes(body, headers):
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{head}\r\n"
            .encode())


async def idle_keepalive(port, body, headers, signalled, send_after, log):
    """One request (200, kept alive), then silence; `send_after` s after the signal one
    more request (None: none).  Logs the answers, what came after, and when."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(request_bytes(body, headers) + body)
        log["first"] = (await read_response(reader))[0]
        t = await signalled
        if send_after is not None:
            await asyncio.sleep(t + send_after - time.monotonic())
            writer.write(request_bytes(body, headers) + body)
            log["second"] = await read_response(reader)
        log["rest"] = await reader.read()            # b"" at EOF
        log["eof"] = time.monotonic() - t
    except Exception as e:
        log["error"] = repr(e)
    finally:
        writer.close()


async def slow_body(port, body, headers, signalled, log):
    """Headers and a quarter of the body before the signal, the rest in small pieces
    every 0.1 s for about 1.5 s after it (longer than the drain window); its answer."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(request_bytes(body, headers) + body[:len(body) // 4])
        await writer.drain()
        t = await signalled
        rest = body[len(body) // 4:]
        step = -(-len(rest) // 15)
        for i in range(0, len(rest), step):
            await asyncio.sleep(0.1)
            writer.write(rest[i:i + step])
            await writer.drain()
        log["sent"] = time.monotonic() - t
        log["answer"] = await read_response(reader)
        log["rest"] = await reader.read()
    except Exception as e:
        log["error"] = repr(e)
    finally:
        writer.close()


async def scenario(server, bodies, tally):
    loop = asyncio.get_running_loop()
    signalled = loop.create_future()
    started = [asyncio.Event() for _ in range(16)]
    until = time.monotonic() + 60
    clients = [asyncio.ensure_future(load_client(server.port, bodies, k, k % 2 == 0, tally,
                                                 started[k], until)) for k in range(16)]
    body, headers = bodies[0]
    idle = [{} for _ in range(3)]
    slow = {}
    extra = [asyncio.ensure_future(idle_keepalive(server.port, body, headers, signalled, after,
                                                  log))
             for after, log in zip((0.3, 0.5, None), idle)]
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 30)
    extra.append(asyncio.ensure_future(slow_body(server.port, body, headers, signalled, slow)))
    await asyncio.sleep(0.5)                          # load: every client has had answers
    t = time.monotonic()
    server.signal(signal.SIGTERM)
    signalled.set_result(t)
    await asyncio.wait_for(asyncio.gather(*clients, *extra), 60)
    return t, idle, slow


def test_drain_under_load_answers_or_refuses_never_resets(cli_server, reference):
    out_names, bodies, wants = reference
    server = cli_server("--sample", "multi_io", "--workers", "2", "--queue", "32",
                        "--shutdown-timeout", str(TIMEOUT),
                        env={"RKNN_EMU_NPU_TIME_US": "5000"})
    tally = Tally(out_names, wants)
    t_signal, idle, slow = asyncio.run(scenario(server, bodies, tally))
    code, out, err = server.stop(timeout=30)
    t_exit = time.monotonic()
    counts = tally.counts
    print(f"\ndrain under load: {counts}; exit {t_exit - t_signal:.2f} s after SIGTERM")

    assert tally.lost == [], (counts, tally.lost[:5])      # no request closed unanswered
    assert tally.wrong == [], tally.wrong[:5]
    assert counts["ok"] >= 16 and counts["refused"] == 16, counts
    # idle keep-alive connections that send within the drain window: 503 and close
    for log in idle[:2]:
        assert "error" not in log, log
        assert log["first"] == 200
        status, headers, data = log["second"]
        assert status == 503 and headers["Connection"].lower() == "close", log
        assert "shutting down" in json.loads(data)["error"]
        assert log["rest"] == b""
    # the silent one is closed (EOF, nothing sent), after the window, within the timeout
    assert "error" not in idle[2] and idle[2]["rest"] == b"", idle[2]
    assert 0.8 < idle[2]["eof"] < TIMEOUT + 3, idle[2]
    # the slow body: every byte taken, then an answer (not admitted before the signal)
    assert "error" not in slow, slow
    status, headers, data = slow["answer"]
    assert status == 503 and headers["Connection"].lower() == "close", slow
    assert "shutting down" in json.loads(data)["error"] and slow["rest"] == b""
    assert t_exit - t_signal < TIMEOUT + 3
    assert code == 0 and "rknnx serve: stopped" in out, err
    assert "Traceback" not in err and "ERROR" not in err, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux socket filter")
def test_listener_refuses_new_handshakes_and_keeps_its_queue():
    from rknnx.serve import _accept_queued, _refuse_new_handshakes

    listener = socket.create_server((HOST, 0))
    port = listener.getsockname()[1]
    queued = socket.create_connection((HOST, port), timeout=5)   # in the accept queue
    try:
        assert _refuse_new_handshakes(listener)
        late = socket.socket()
        late.settimeout(0.3)
        with pytest.raises(TimeoutError):        # its SYN is dropped: no connection
            late.connect((HOST, port))
        late.close()
        got = _accept_queued(listener)           # the queued one is taken, and works
        assert [c.getpeername() for c in got] == [queued.getsockname()]
        queued.sendall(b"x")
        got[0].setblocking(True)
        assert got[0].recv(1) == b"x"
        got[0].close()
        assert _accept_queued(listener) == []
    finally:
        listener.close()
        queued.close()
    with pytest.raises(ConnectionRefusedError):  # closed: refused at once
        socket.create_connection((HOST, port), timeout=5)
