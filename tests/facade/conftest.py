"""Fixtures of the facade tests: a Model per sample and personality, closed at teardown with
the emulator's live counters checked back at their baseline (the root conftest's ``emu``)."""

from __future__ import annotations

import gc

import pytest

from helpers import bounded, live, model_bytes


class Models:
    """Opens rknnx.Model objects on sample models and closes them at teardown."""

    def __init__(self, ctl):
        self.ctl = ctl
        self.opened = []

    def open(self, name, platform="RK3588", **kw):
        import rknnx

        self.ctl.set_platform(platform)
        m = rknnx.Model(model_bytes(name, platform), **kw)
        self.opened.append(m)
        return m

    def close_all(self):
        gc.collect()
        for m in reversed(self.opened):
            bounded(m.close, 60)         # a close that hangs fails the test, not the suite
        self.opened.clear()
        gc.collect()


@pytest.fixture
def models(emu):
    """Open sample models (``models.open(name, platform)``); at teardown they are closed and
    no context, mem or output buffer of the emulator may be left alive."""
    before = live(emu)
    m = Models(emu)
    yield m
    m.close_all()
    assert live(emu) == before, "emulator live counters changed: leaked contexts/mems/outputs"
