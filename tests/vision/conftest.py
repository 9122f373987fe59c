"""Fixtures of the vision tests."""

from __future__ import annotations

import gc
import threading

import pytest

from helpers import live
from rknnx import _kernels


@pytest.fixture
def baseline(emu):
    """Threads and the emulator's live counters before the test; both must be back after."""
    emu.set_platform("RK3588")
    gc.collect()
    threads = set(threading.enumerate())
    counters = live(emu)
    yield
    gc.collect()
    left = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
    assert not left, f"threads left running: {left}"
    assert live(emu) == counters


@pytest.fixture(params=_kernels._kernel_paths())
def path(request):
    """Each path of the kernels' dispatch this build and processor have."""
    before = _kernels._kernel_path(request.param)
    yield request.param
    _kernels._kernel_path(before)
