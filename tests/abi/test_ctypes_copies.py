"""The ctypes copies of the ABI structs that the tests drive the C API with (emu_capi.py)
match the published ABI facts: size, alignment, and every field's offset and size."""

from __future__ import annotations

import ctypes
import json

import pytest

from emu_capi import ABI_STRUCTS
from helpers import DATA

FACTS = json.loads((DATA / "rknn_api_v2.json").read_text())["structs"]


def test_every_abi_struct_has_a_copy():
    assert sorted(ABI_STRUCTS.values()) == sorted(FACTS)


@pytest.mark.parametrize("cls", list(ABI_STRUCTS), ids=lambda c: ABI_STRUCTS[c])
def test_copy_matches_facts(cls):
    fact = FACTS[ABI_STRUCTS[cls]]
    assert ctypes.sizeof(cls) == fact["size"]
    assert ctypes.alignment(cls) == fact["align"]
    names = [f[0] for f in cls._fields_]
    assert names == [f["name"] for f in fact["fields"]]
    for f in fact["fields"]:
        member = getattr(cls, f["name"])
        assert (member.offset, member.size) == (f["offset"], f["size"]), f["name"]
