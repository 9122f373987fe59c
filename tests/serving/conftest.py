"""Fixtures of the serving tests: `rknnx serve` (in this process on a thread, or as the CLI
in a subprocess on a free port of 127.0.0.1) and plain HTTP helpers.

These tests need the extras (``pip install ".[serve,ray]" "tritonclient[http]"``): each
module skips, saying which, where its extra is missing, so the main ``python -m pytest``
of a base install skips them cleanly; .ci/run runs them in their own step ("Serving and
scale-out").  Every network request goes to 127.0.0.1, and every loop is bounded.
"""

from __future__ import annotations

import gc
import os

import pytest

from helpers import live, model_bytes
from serving_helpers import Background, Subprocess

# Ray reports usage statistics to its makers unless told not to: these tests (and the
# processes they start) send nothing off this machine
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"


@pytest.fixture
def serve(emu):
    """``serve({name: sample or Model}, **options)`` starts a Server on a free port; at
    teardown it stops, and no emulator object may be left alive."""
    from rknnx.serve import Server

    before = live(emu)
    running = []

    def start(models, **kw):
        sources = {n: model_bytes(m) if isinstance(m, str) else m for n, m in models.items()}
        kw.setdefault("port", 0)
        bg = Background(Server(sources, **kw))
        running.append(bg)
        return bg

    yield start
    for bg in running:
        bg.close()
    gc.collect()
    assert live(emu) == before, "emulator live counters changed: leaked contexts/mems"


@pytest.fixture
def cli_server():
    """``cli_server(*args, env=...)`` runs `rknnx serve --port 0 *args`; stopped at teardown."""
    started = []

    def start(*args, env=None):
        s = Subprocess(list(args), env=env)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.stop()
        s.err.close()
