"""Dynamic-shape models: dup() and share_weights_with= are refused before C (the runtime
refuses rknn_dup_context and RKNN_FLAG_SHARE_WEIGHT_MEM for them), and a general-flow
input of the wrong size names the shape sets, the current one and set_input_shapes."""

from __future__ import annotations

import numpy as np
import pytest

SETS = r"\(1, 64, 64, 3\) \| \(1, 96, 96, 3\) \| \(1, 128, 160, 3\)"


def test_dup_and_shared_weights_are_refused(track, emu):
    ctx = track.model("dynamic")
    assert ctx.is_dynamic
    before = emu.counters()["live_contexts"]
    with pytest.raises(ValueError, match=rf"^dup: the model has dynamic input shapes \(input 0 "
                                         rf"'image': {SETS}\); the runtime refuses "
                                         r"rknn_dup_context for dynamic-shape models"):
        ctx.dup()
    with pytest.raises(ValueError, match=r"^share_weights_with: the source Context holds a "
                                         rf"dynamic-shape model \(input 0 'image': {SETS}\); "
                                         r"the runtime refuses RKNN_FLAG_SHARE_WEIGHT_MEM"):
        track.model("dynamic", share_weights_with=ctx)
    assert emu.counters()["live_contexts"] == before


def test_static_models_still_dup(track):
    ctx = track.model("tiny_relu")
    assert not ctx.is_dynamic
    track.contexts.append(ctx.dup())


def test_size_mismatch_names_the_shape_sets(track):
    ctx = track.model("dynamic")
    frame = np.zeros((1, 96, 96, 3), np.uint8)              # set 1
    # no shape set chosen yet: boards refuse (or abort), the binding says what to do
    with pytest.raises(ValueError, match=r"^inputs_set: the model has dynamic input shapes "
                                         rf"\(input 0 'image': {SETS}\); choose the shape set "
                                         r"of your data with set_input_shapes\(\) first$"):
        ctx.inputs_set([frame])
    a = ctx.input_attrs[0]
    a.dims = (1, 64, 64, 3)
    ctx.set_input_shapes([a])
    with pytest.raises(ValueError, match=r"^input 0 \('image'\) expects 12288 bytes .* got 27648; "
                                         r"the model has dynamic input shapes: the shape sets "
                                         rf"of input 0 are {SETS}, the current one is "
                                         r"\(1, 64, 64, 3\); call set_input_shapes\(\) with the "
                                         r"shape set of your data first$"):
        ctx.inputs_set([frame])
    a = ctx.input_attrs[0]
    a.dims = (1, 96, 96, 3)
    ctx.set_input_shapes([a])
    ctx.inputs_set([frame])                                  # now it fits
    ctx.run()


def test_static_model_message_is_unchanged(track):
    ctx = track.model("tiny_int8_add")
    with pytest.raises(ValueError, match=r"^input 0 \('a'\) expects 256 bytes \(.*\), got 4$"):
        ctx.inputs_set([np.zeros(4, np.int8), np.zeros(256, np.int8)])
