"""The chip comes from the binding only (issue 26): ``rknnx.lowlevel.runtime_chip()`` is the
chip new contexts get (the emulator's personality), ``rknnx.runtime.chip_of(ctx)`` is the
context's own ``Context.chip``, and ``rknnx.custom.register`` judges a context by its own
chip, not by the personality the emulator would give the next context."""

from __future__ import annotations

import pytest

import rknnx
import rknnx.custom
from rknnx import lowlevel, runtime


@pytest.mark.parametrize("chip", ["RK3588", "RK3566", "RV1106"])
def test_runtime_chip_is_the_personality_of_new_contexts(emu, chip):
    emu.set_platform(chip)
    assert lowlevel.runtime_chip() == chip
    assert runtime.chip_of() == chip


def test_chip_of_a_context_is_its_own(track, emu):
    ctx = track.model("tiny_relu", "RV1106")
    emu.set_platform("RK3588")                # the next context's personality
    assert ctx.chip == "RV1106"
    assert runtime.chip_of(ctx) == "RV1106"
    assert runtime.chip_of() == "RK3588"


@rknnx.custom_op("cstSigmoid")
def _sigmoid(inputs, outputs):               # never called: the registration is refused
    raise AssertionError("not to be run")


def test_custom_register_refuses_by_the_contexts_chip(track, emu):
    ctx = track.model("custom_op_model", "RV1106")
    emu.set_platform("RK3588")                # a chip with custom operators, for new contexts
    with pytest.raises(rknnx.NotSupportedError,
                       match="^rknnx.custom.register: rknn_register_custom_ops is not "
                             "supported on RV1106") as ei:
        rknnx.custom.register(ctx, _sigmoid)
    assert ei.value.func == "rknn_register_custom_ops" and ctx.custom_ops == []
