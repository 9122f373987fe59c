"""The binding describes the loaded library only and locates the emulator through the one
locator of rknnx.emulator; opening a model to read versions is rknnx.runtime's job."""

from __future__ import annotations

import pytest

from rknnx import lowlevel
from rknnx import runtime as rknnx_runtime
from rknnx.emulator import _locate
from rknnx.emulator import samples


def test_binding_runtime_info_takes_no_model(general_platform):
    with pytest.raises(TypeError):
        lowlevel.runtime_info(samples.tiny_relu(target=general_platform))
    info = lowlevel.runtime_info()
    assert {"path", "source", "is_emulator", "functions", "missing"} <= set(info)
    assert "sdk_version" not in info and "driver_version" not in info


def test_runtime_info_with_a_model_adds_the_versions_and_closes_its_context(general_platform):
    before = lowlevel.live_contexts()
    info = rknnx_runtime.runtime_info(samples.tiny_relu(target=general_platform))
    assert isinstance(info["sdk_version"], str) and info["sdk_version"]
    assert isinstance(info["driver_version"], str) and info["driver_version"]
    assert lowlevel.live_contexts() == before


def test_emulator_path_is_the_one_locator(runtime):
    assert lowlevel.emulator_path() == _locate.bundled_library()
    assert rknnx_runtime.emulator_path() == _locate.bundled_library()
