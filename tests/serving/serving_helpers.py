"""Helpers of the serving tests: HTTP requests and KServe v2 bodies, the server on a
thread of this process or as `rknnx serve` in a subprocess (fixtures in conftest.py)."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

HOST = "127.0.0.1"
#: the header of the binary tensor extension
HEADER = "Inference-Header-Content-Length"


def need(module: str, extra: str):
    """Import `module` or skip (the test module, at module level), saying what brings it:
    an extra of rknnx, or tritonclient (the test client)."""
    what = '"tritonclient[http]"' if module.startswith("tritonclient") else f'".[{extra}]"'
    return pytest.importorskip(module, reason=f"needs {module}: pip install {what}")


class Background:
    """A rknnx.serve.Server running on an event loop in a thread of this process."""

    def __init__(self, server):
        self.server = server
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                       name="rknnx-serve-test")
        self.thread.start()
        self.call(server.start())

    def call(self, coro, timeout=60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    @property
    def port(self) -> int:
        return self.server.port

    @staticmethod
    async def _cancel_rest():
        """What asyncio.run does at its end (as `rknnx serve` runs): the tasks still
        pending (aiohttp lingering on a connection a client left) are cancelled."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def close(self):
        if self.loop.is_closed():
            return
        try:
            self.call(self.server.stop())
        finally:
            self.call(self._cancel_rest())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)
            self.loop.close()


def request(port, method, path, body=None, headers=None, timeout=60):
    """(status, headers, body bytes) of one HTTP request to 127.0.0.1:port."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        chunked = body is not None and not isinstance(body, (bytes, bytearray, memoryview))
        conn.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def infer_body(inputs, binary=True, outputs=None, parameters=None, binary_out=None):
    """A KServe v2 request body for {name: array}: (body, headers)."""
    from rknnx._kserve import datatype_of

    doc = {"inputs": []}
    chunks = []
    for name, a in inputs.items():
        a = np.ascontiguousarray(a)
        t = {"name": name, "shape": list(a.shape), "datatype": datatype_of(a.dtype)}
        if binary:
            t["parameters"] = {"binary_data_size": a.nbytes}
            chunks.append(a.tobytes())
        else:
            t["data"] = a.ravel().tolist()
        doc["inputs"].append(t)
    if outputs is not None:
        doc["outputs"] = [{"name": n, **({"parameters": {"binary_data": binary_out}}
                                         if binary_out is not None else {})} for n in outputs]
    if parameters:
        doc["parameters"] = parameters
    head = json.dumps(doc).encode()
    if not binary:
        return head, {"Content-Type": "application/json"}
    return head + b"".join(chunks), {HEADER: str(len(head))}


def parse_response(headers, body):
    """{output name: array} of an inference response (JSON or binary)."""
    from rknnx._kserve import DATATYPES

    n = headers.get(HEADER)
    head = body[:int(n)] if n is not None else body
    rest = memoryview(body)[int(n):] if n is not None else memoryview(b"")
    doc = json.loads(head)
    out = {}
    offset = 0
    for t in doc["outputs"]:
        dtype = DATATYPES[t["datatype"]]
        size = (t.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            a = np.frombuffer(rest[offset:offset + size], dtype=dtype).reshape(t["shape"])
            offset += size
        else:
            a = np.asarray(t["data"], dtype=dtype).reshape(t["shape"])
        out[t["name"]] = a
    return doc, out


class Subprocess:
    """`rknnx serve ...` as a user runs it, on a free port; `.url`, `.port`, `.proc`."""

    def __init__(self, args, env=None, timeout=90):
        full = dict(os.environ)
        full.update(env or {})
        # stderr to a file: a pipe nobody reads could fill and stall the server
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "rknnx", "serve", "--port", "0",
                                      *args], stdout=subprocess.PIPE, stderr=self.err,
                                     text=True, env=full)
        self.lines = []
        self.signalled = False
        deadline = time.monotonic() + timeout
        while True:
            line = self.proc.stdout.readline()
            if not line:
                code = self.proc.wait()
                raise AssertionError(f"rknnx serve exited ({code}): {self.stderr()}")
            self.lines.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError("rknnx serve did not start in time")
        self.url = f"{HOST}:{self.port}"

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read()

    def signal(self, sig=signal.SIGTERM):
        self.signalled = True
        self.proc.send_signal(sig)

    def stop(self, timeout=60):
        """SIGTERM (unless signalled already), then (exit status, stdout, stderr)."""
        if self.proc.poll() is None and not self.signalled:
            self.signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        return self.proc.returncode, "".join(self.lines) + out, self.stderr()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
        self.err.close()


