"""The C declarations in include/rknnx match the published ABI facts, field by field.

A probe is generated from tests/data/rknn_api_v2.json (a copy of the facts), compiled
against our headers and run; every struct size/alignment, every field offset/size,
every enum member and constant value, and every function prototype is compared.
Anything missing from our headers fails compilation, which fails the test.
"""

from __future__ import annotations

import ctypes
import json
import subprocess

import pytest

from emu_capi import ABI_STRUCTS
from rknnx.emulator import control
from helpers import DATA, compile_c

FACTS = json.loads((DATA / "rknn_api_v2.json").read_text())

# Which recorded layout this process has: the facts hold LP64 (x86-64 == aarch64) and
# 32-bit ARM EABI hard-float ("armhf": pointers of 4 bytes, rknn_context of 32 bits).
# A 32-bit x86 process (scripts/test-32bit) has neither: its uint64_t aligns to 4.
if ctypes.sizeof(ctypes.c_void_p) == 8:
    ABI = "lp64"
elif control.RKNN_CONTEXT is ctypes.c_uint32:
    ABI = "armhf"
else:
    ABI = None
needs_layout = pytest.mark.skipif(ABI is None, reason="the ABI facts record the LP64 and "
                                  "armhf layouts; this 32-bit x86 process has neither")


def _struct(name):
    """(size, align, {field: (offset, size)}) of a struct in this process's ABI."""
    st = FACTS["structs"][name]
    if ABI == "armhf":
        a = st["armhf"]
        return a["size"], a["align"], {f: (a["offsets"][f], a["sizes"][f]) for f in a["offsets"]}
    return st["size"], st["align"], {f["name"]: (f["offset"], f["size"]) for f in st["fields"]}

HEADERS = ("rknn_api.h", "rknn_matmul_api.h", "rknn_custom_op.h")


def _probe_source() -> str:
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <stdalign.h>"]
    lines += [f'#include "{h}"' for h in HEADERS]
    lines.append("#define FIELD_SIZE(T, f) sizeof(((T *)0)->f)")
    # Function prototypes: a compile-time check that the type of our declaration is the
    # facts' type (return and every parameter); a missing declaration fails to compile.
    for fn in FACTS["functions"]:
        params = ", ".join(p["type"] for p in fn["params"]) or "void"
        lines.append(f"_Static_assert(__builtin_types_compatible_p(__typeof__(&{fn['name']}), "
                     f"{fn['return']} (*)({params})), \"prototype of {fn['name']}\");")
    lines.append("int main(void) {")
    for name, st in FACTS["structs"].items():
        lines.append(f'  printf("struct {name} %zu %zu\\n", sizeof({name}), alignof({name}));')
        for f in st["fields"]:
            lines.append(f'  printf("field {name}.{f["name"]} %zu %zu\\n", '
                         f'offsetof({name}, {f["name"]}), FIELD_SIZE({name}, {f["name"]}));')
    for enum, members in FACTS["enums"].items():
        lines.append(f'  printf("enumsize {enum} %zu\\n", sizeof({enum}));')
        for m in members:
            lines.append(f'  printf("enum {enum}.{m} %lld\\n", (long long)({m}));')
    for const in FACTS["constants"]:
        lines.append(f'  printf("const {const} %lld\\n", (long long)({const}));')
    for td, info in FACTS["typedefs"].items():
        if td.startswith("_") or td == "get_custom_op_func":
            continue
        lines.append(f'  printf("typedef {td} %zu\\n", sizeof({td}));')
    lines.append("  return 0;\n}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    d = tmp_path_factory.mktemp("abi")
    src = d / "probe.c"
    src.write_text(_probe_source())
    exe = compile_c([src], d / "probe", flags=["-Wno-unused-variable"])
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    table = {}
    for line in out.splitlines():
        kind, key, *vals = line.split()
        table[(kind, key)] = [int(v) for v in vals]
    return table


@needs_layout
def test_every_struct_size_and_alignment(probe):
    for name in FACTS["structs"]:
        size, align, _ = _struct(name)
        assert probe[("struct", name)] == [size, align], name


@needs_layout
def test_every_field_offset_and_size(probe):
    n = 0
    for name, st in FACTS["structs"].items():
        fields = _struct(name)[2]
        for f in st["fields"]:
            got = probe[("field", f"{name}.{f['name']}")]
            assert got == list(fields[f["name"]]), f"{name}.{f['name']}: {got}"
            n += 1
    assert n == sum(len(st["fields"]) for st in FACTS["structs"].values()) > 100


def test_every_enum_member(probe):
    for enum, members in FACTS["enums"].items():
        assert probe[("enumsize", enum)] == [FACTS["enum_info"][enum]["sizeof"]], enum
        for m, v in members.items():
            assert probe[("enum", f"{enum}.{m}")] == [v], m


def test_every_constant(probe):
    for const, v in FACTS["constants"].items():
        assert probe[("const", const)] == [v], const


def test_handle_typedefs(probe):
    for td, info in FACTS["typedefs"].items():
        if td.startswith("_") or td == "get_custom_op_func":
            continue
        want = info["sizeof_armhf"] if ABI == "armhf" else info["sizeof_lp64"]
        if td.startswith("rknn_") and ABI is None:      # i386: uint64_t handles
            want = 8
        assert probe[("typedef", td)] == [want], td


def test_struct_and_enum_typedef_tags(tmp_path):
    # The vendor tags (struct _rknn_tensor_attr, enum _rknn_query_cmd, ...) exist too,
    # so C code that spells the tag compiles.
    lines = [f'#include "{h}"' for h in HEADERS]
    for td, tag in FACTS["typedefs"]["_struct_and_enum_typedefs"].items():
        if tag.startswith("anonymous"):
            continue
        lines.append(f"static {tag} *tag_{td}; static {td} **same_{td} = &tag_{td};")
    lines.append("int main(void) { return 0; }")
    src = tmp_path / "tags.c"
    src.write_text("\n".join(lines) + "\n")
    compile_c([src], tmp_path / "tags", flags=["-Wno-unused-variable"])


def test_probe_covers_every_function():
    # all 35 prototypes are checked at compile time by the probe above
    assert len(FACTS["functions"]) == 35
    from rknnx.lowlevel import api_function_names
    assert sorted(api_function_names()) == sorted(f["name"] for f in FACTS["functions"])


# ---- the tests' ctypes copies of the structs ---------------------------------------------------
# The ctypes copies of the ABI structs that the tests drive the C API with (emu_capi.py)
# match the published ABI facts: size, alignment, and every field's offset and size.

STRUCT_FACTS = FACTS["structs"]


def test_every_abi_struct_has_a_copy():
    assert sorted(ABI_STRUCTS.values()) == sorted(STRUCT_FACTS)


@needs_layout
@pytest.mark.parametrize("cls", list(ABI_STRUCTS), ids=lambda c: ABI_STRUCTS[c])
def test_copy_matches_facts(cls):
    fact = STRUCT_FACTS[ABI_STRUCTS[cls]]
    size, align, fields = _struct(ABI_STRUCTS[cls])
    assert ctypes.sizeof(cls) == size
    assert ctypes.alignment(cls) == align
    names = [f[0] for f in cls._fields_]
    assert names == [f["name"] for f in fact["fields"]]
    for f in fact["fields"]:
        member = getattr(cls, f["name"])
        assert (member.offset, member.size) == fields[f["name"]], f["name"]
