"""`rknnx serve` against the same frames through `rknnx.Pool` in-process: throughput with N
clients and the overhead per request.

For each N in ``--clients``, N clients each send one frame at a time, for ``--requests``
frames in all:

- ``pool``:   N threads in this process calling ``pool.submit(frame).result()`` on a Pool of
  ``--workers`` contexts (what a program that owns the NPU gets);
- ``server``: N asyncio clients (aiohttp, keep-alive connections, binary tensors) against
  ``rknnx serve --workers W`` started as a subprocess on 127.0.0.1 (what separate processes
  get through the server).

Both run with the same simulated NPU time per run (``RKNN_EMU_NPU_TIME_US``, ``--npu-us``)
on the emulator.  It prints frames per second, the median and p95 latency, and the
overhead per request (server median latency at one client minus the Pool's), for the
``frame`` model (224x224x3 uint8 in, a cheap conv, 1x4x14x14 float32 out: what a frame
costs on the wire) and the ``tiny`` one (8 bytes in and out: the protocol alone), and writes
``bench/results/serve.json``.  On a shared 2-core host the clients, the server and the
emulator's CPU work compete for the same cores: read the ratios.

Usage::

    pip install ".[serve]"
    python bench/serve.py                          # 5 ms NPU time, 1/3/8/16 clients
    python bench/serve.py --npu-us 0 --clients 1,8 --requests 400
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HEADER = "Inference-Header-Content-Length"


def frame_model() -> bytes:
    """224x224x3 uint8 image (mean/std, int8) -> one 16x16 stride-16 conv -> 1x4x14x14."""
    from rknnx.emulator.builder import ModelBuilder
    from rknnx.emulator.samples import IMAGENET_MEAN, IMAGENET_STD, _image_input, _Int8Net

    rng = np.random.default_rng(0)
    b = ModelBuilder("RK3588", "bench: frame")
    x, real = _image_input(b, "image", (1, 224, 224, 3), IMAGENET_MEAN, IMAGENET_STD, rng)
    y, _ = _Int8Net(b, rng).conv(x, real, 4, 16, 16, out="feat")
    b.output(y)
    return b.build()


def tiny_model() -> bytes:
    from rknnx.emulator import samples

    return samples.tiny_relu()


def frames_for(model, n=8):
    rng = np.random.default_rng(1)
    out = []
    for _ in range(n):
        frame = {}
        for t in model.inputs:
            if len(t.shape) == 4:
                frame[t.name] = rng.integers(0, 256, t.shape, dtype=np.uint8)
            else:
                frame[t.name] = rng.standard_normal(t.shape).astype(t.dtype)
        out.append(frame)
    return out


def stats(latencies_s, wall_s):
    lat = sorted(latencies_s)
    return {"fps": len(lat) / wall_s, "median_ms": statistics.median(lat) * 1e3,
            "p95_ms": lat[min(len(lat) - 1, int(0.95 * (len(lat) - 1)))] * 1e3,
            "requests": len(lat)}


def run_pool(pool, frames, clients, requests):
    lat = []
    lock = threading.Lock()
    count = iter(range(requests))

    def client(k):
        i = k
        while True:
            with lock:
                if next(count, None) is None:
                    return
            t0 = time.perf_counter()
            pool.submit(frames[i % len(frames)]).result()
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
            i += 1

    ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return stats(lat, time.perf_counter() - t0)


def body_of(frame):
    from rknnx._kserve import datatype_of

    doc = {"inputs": [], "parameters": {"binary_data_output": True}}
    chunks = []
    for name, a in frame.items():
        doc["inputs"].append({"name": name, "shape": list(a.shape),
                              "datatype": datatype_of(a.dtype),
                              "parameters": {"binary_data_size": a.nbytes}})
        chunks.append(a.tobytes())
    head = json.dumps(doc).encode()
    return head + b"".join(chunks), {HEADER: str(len(head))}


async def run_server(url, name, frames, clients, requests):
    import aiohttp

    bodies = [body_of(f) for f in frames]
    lat = []
    left = [requests]

    async def client(session, k):
        i = k
        while left[0] > 0:
            left[0] -= 1
            body, headers = bodies[i % len(bodies)]
            t0 = time.perf_counter()
            async with session.post(f"{url}/v2/models/{name}/infer", data=body,
                                    headers=headers) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{r.status}: {await r.text()}")
            lat.append(time.perf_counter() - t0)
            i += 1

    conn = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=conn) as session:
        await client(session, 0)                 # warm-up: one request, not counted
        lat.clear()
        left[0] = requests
        t0 = time.perf_counter()
        await asyncio.gather(*(client(session, k) for k in range(clients)))
        wall = time.perf_counter() - t0
        async with session.get(f"{url}/v2/models/{name}/stats") as r:
            st = (await r.json())["model_stats"][0]["inference_stats"]
    return stats(lat, wall), st


def start_server(path, name, workers, env):
    proc = subprocess.Popen([sys.executable, "-m", "rknnx", "serve", f"{name}={path}",
                             "--port", "0", "--workers", str(workers), "--queue", "64"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return proc, m.group(1)
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError("rknnx serve did not start")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--npu-us", type=int, default=5000, help="simulated NPU time per run")
    ap.add_argument("--clients", default="1,3,8,16", help="client counts, comma-separated")
    ap.add_argument("--requests", type=int, default=600, help="requests per measurement")
    ap.add_argument("--workers", type=int, default=3, help="pool workers (both sides)")
    ap.add_argument("--models", default="frame,tiny", help="frame and/or tiny")
    ap.add_argument("--json", default=str(HERE / "results" / "serve.json"))
    args = ap.parse_args(argv)
    os.environ["RKNN_EMU_NPU_TIME_US"] = str(args.npu_us)
    os.environ.setdefault("RKNNX_RUNTIME", "emulator")
    import rknnx

    clients = [int(c) for c in args.clients.split(",")]
    results = {"npu_us": args.npu_us, "workers": args.workers, "requests": args.requests,
               "cpus": os.cpu_count(), "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            data = {"frame": frame_model, "tiny": tiny_model}[name]()
            path = os.path.join(tmp, f"{name}.rknn")
            with open(path, "wb") as f:
                f.write(data)
            model = rknnx.Model(path)
            frames = frames_for(model)
            row = results["models"][name] = {
                "input_bytes": sum(a.nbytes for a in frames[0].values()), "by_clients": {}}
            print(f"\n{name}: inputs {row['input_bytes']} bytes, NPU {args.npu_us} us/run, "
                  f"{args.workers} workers, {args.requests} requests per line")
            print(f"{'clients':>7}  {'pool fps':>9} {'server fps':>10} {'ratio':>6}   "
                  f"{'pool med/p95 ms':>16} {'server med/p95 ms':>18}")
            with rknnx.Pool(model, workers=args.workers) as pool:
                pool.submit(frames[0]).result()
                pool_res = {n: run_pool(pool, frames, n, args.requests) for n in clients}
            proc, url = start_server(path, name, args.workers, dict(os.environ))
            try:
                server_res = {}
                for n in clients:
                    server_res[n], st = asyncio.run(run_server(url, name, frames, n,
                                                               args.requests))
            finally:
                proc.terminate()
                proc.wait(30)
            model.close()
            for n in clients:
                p, s = pool_res[n], server_res[n]
                row["by_clients"][n] = {"pool": p, "server": s}
                print(f"{n:>7}  {p['fps']:9.0f} {s['fps']:10.0f} {s['fps'] / p['fps']:6.2f}   "
                      f"{p['median_ms']:7.2f} / {p['p95_ms']:6.2f} "
                      f"{s['median_ms']:9.2f} / {s['p95_ms']:6.2f}")
            one = clients[0]
            over = (row["by_clients"][one]["server"]["median_ms"]
                    - row["by_clients"][one]["pool"]["median_ms"])
            ok, comp = st["success"], st["compute_infer"]
            inside = (ok["ns"] / ok["count"] - comp["ns"] / comp["count"]) / 1e6 \
                if ok["count"] and comp["count"] else float("nan")
            row["overhead_ms"] = over
            row["server_internal_ms"] = inside
            print(f"overhead per request at {one} client: {over:.2f} ms (server median minus "
                  f"pool median); inside the server (handler time minus pool time, mean): "
                  f"{inside:.2f} ms")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
