"""rknnx.ort.InferenceSession against the real onnxruntime package: the same names,
parameters and return types where applications touch them, and the numbers of
rknnx.Model underneath."""

from __future__ import annotations

import inspect
import threading

import numpy as np
import pytest

import rknnx
from rknnx import ort
from rknnx.emulator import samples

onnxruntime = pytest.importorskip("onnxruntime")   # in the [test] extra

SURFACE = ["run", "get_inputs", "get_outputs", "get_modelmeta", "get_providers",
           "get_overridable_initializers", "get_provider_options", "get_session_options",
           "set_providers", "disable_fallback", "enable_fallback", "end_profiling",
           "get_profiling_start_time_ns", "run_async"]


def params(f):
    return [(p.name, p.kind, p.default is inspect.Parameter.empty)
            for p in inspect.signature(f).parameters.values()]


@pytest.mark.parametrize("name", SURFACE + ["__init__"])
def test_methods_take_what_onnxruntime_takes(name):
    assert params(getattr(ort.InferenceSession, name)) == \
        params(getattr(onnxruntime.InferenceSession, name))


def test_description_objects_have_the_same_fields():
    for ours, theirs in ((ort.NodeArg, onnxruntime.NodeArg),
                         (ort.ModelMetadata, onnxruntime.ModelMetadata)):
        public = {n for n in dir(theirs) if not n.startswith("_")}
        assert public <= set(ours.__dataclass_fields__), (ours, public)
    assert ort.get_available_providers() == ["RKNPUExecutionProvider"]


def test_run_gives_the_models_numbers(models, emu):
    emu.set_platform("RK3588")
    model = samples.detector_random(target="RK3588")
    img = np.random.default_rng(3).integers(0, 256, (1, 640, 640, 3), dtype=np.uint8)
    with rknnx.Model(model) as m:
        ref = m.run(img)
    with ort.InferenceSession(model, providers=["RKNPUExecutionProvider",
                                                "CPUExecutionProvider"]) as sess:
        ins, outs = sess.get_inputs(), sess.get_outputs()
        assert [(i.name, i.shape, i.type) for i in ins] == [("images", [1, 640, 640, 3],
                                                              "tensor(uint8)")]
        assert all(o.type == "tensor(float)" for o in outs) and len(outs) == len(ref)
        got = sess.run(None, {ins[0].name: img})
        assert isinstance(got, list) and all(type(a) is np.ndarray for a in got)
        assert all(np.array_equal(a, b) for a, b in zip(got, ref))
        names = [o.name for o in outs]
        last_first = sess.run(names[::-1], {ins[0].name: img})
        assert all(np.array_equal(a, b) for a, b in zip(last_first, ref[::-1]))
        meta = sess.get_modelmeta()
        assert meta.description == "rknnx sample: detector_random"
        assert meta.custom_metadata_map["chip"] == "RK3588"
        assert sess.get_providers() == ["RKNPUExecutionProvider"]
        with pytest.raises(ValueError, match=r"invalid input name\(s\) \['x'\]; the model's "
                                             r"inputs are \['images'\]"):
            sess.run(None, {"x": img})
        with pytest.raises(ValueError, match=r"missing input\(s\) \['images'\]"):
            sess.run(None, {})
        with pytest.raises(ValueError, match=r"invalid output name\(s\) \['nope'\]"):
            sess.run(["nope"], {"images": img})
        done = threading.Event()
        box = {}

        def callback(outputs, user_data, err):
            box.update(outputs=outputs, user_data=user_data, err=err)
            done.set()

        sess.run_async(None, {"images": img}, callback, "tag")
        assert done.wait(30)
        assert box["err"] == "" and box["user_data"] == "tag"
        assert all(np.array_equal(a, b) for a, b in zip(box["outputs"], ref))
        done.clear()
        sess.run_async(None, {"x": img}, callback, None)
        assert done.wait(30) and box["outputs"] is None and "invalid input name" in box["err"]


def test_dynamic_dims_are_none(models, emu):
    emu.set_platform("RK3588")
    with ort.InferenceSession(samples.dynamic(target="RK3588")) as sess:
        shape = sess.get_inputs()[0].shape
        assert shape[0] == 1 and shape[3] == 3 and shape[1] is None and shape[2] is None
        out = sess.run(None, {"image": np.zeros((1, 96, 96, 3), np.uint8)})
        assert out[0].shape[-2:] == (48, 48)


def test_a_session_nobody_closes_frees_its_context(models, emu):
    import gc

    before = emu.counters()["live_contexts"]
    sess = ort.InferenceSession(samples.tiny_relu())
    assert emu.counters()["live_contexts"] == before + 1
    del sess
    gc.collect()
    assert emu.counters()["live_contexts"] == before
