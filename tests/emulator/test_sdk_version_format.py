"""RKNN_QUERY_SDK_VERSION: both strings start with "X.Y.Z" and have no other dot, since
clients split them on "." into exactly three pieces (RKNNLite does); the emulator's
identity stands in the parentheses of api_version, where boards write the build's
hash@time; drv_version is a plain "X.Y.Z" as on boards (docs/abi-notes.md)."""

import re

import pytest

from emu_capi import Q_SDK_VERSION, emu, make_ctx, samples

__all__ = ["emu", "make_ctx"]


@pytest.mark.parametrize("chip", ["RK3588", "RK3566", "RV1106"])
def test_version_strings_split_into_three(emu, make_ctx, chip):
    v = make_ctx(samples.tiny_int8_add(target=chip), platform=chip).query(Q_SDK_VERSION)
    api_v, drv_v = v.api_version.decode(), v.drv_version.decode()
    assert re.match(r"\d+\.\d+\.\d+ \(", api_v), api_v
    assert re.fullmatch(r"\d+\.\d+\.\d+", drv_v), drv_v
    for s in (api_v, drv_v):
        major, minor, patch = s.split(".")          # exactly three pieces
        assert major.isdigit() and minor.isdigit() and patch.split(" ")[0].isdigit()
    assert api_v.startswith("2.5.0 (") and "rknnx-emulator" in api_v

