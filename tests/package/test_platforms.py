"""rknnx.platforms: the vendor's Tables 3-1/3-2 as data, checked against the emulator's own
C tables (parsed from its source) and the ABI facts file, the chip helpers, the device-tree
reader, and that the module imports without the compiled extension."""

from __future__ import annotations

import json
import re

import pytest

from helpers import DATA, REPO, run_python
from rknnx import platforms

CORE_C = REPO / "emulator" / "runtime_core.c"
FAM_COLUMN = {"EMU_FAM_RK356X": 0, "EMU_FAM_RK3588": 1, "EMU_FAM_RV1106": 2, "EMU_FAM_RK2118": 3}


def _emulator_platforms() -> dict[str, int]:
    """chip -> family column, from the emulator's g_platforms table."""
    src = CORE_C.read_text()
    body = src[src.index("g_platforms[] = {"):]
    body = body[:body.index("};")]
    rows = re.findall(r'\{"(\w+)",\s*(EMU_FAM_\w+)', body)
    assert len(rows) >= 11, body
    return {chip: FAM_COLUMN[fam] for chip, fam in rows}


def _emulator_functions() -> dict[str, tuple[int, ...]]:
    """function -> support per family column, from the emulator's g_func_support table."""
    src = CORE_C.read_text()
    body = src[src.index("g_func_support[] = {"):]
    body = body[:body.index("};")]
    rows = re.findall(r'\{"(\w+)",\s*\{(\d),\s*(\d),\s*(\d),\s*(\d)\}\}', body)
    assert len(rows) >= 30, body
    return {fn: tuple(int(x) for x in f) for fn, *f in rows}


def _emulator_queries() -> dict[str, str]:
    """query name -> the expression emu_platform_supports_query returns for it."""
    src = CORE_C.read_text()
    body = src[src.index("int emu_platform_supports_query("):]
    body = body[:body.index("\n}\n")]
    out, pending = {}, []
    for line in body.splitlines():
        m = re.match(r"\s*case (RKNN_QUERY_\w+):", line)
        if m:
            pending.append(m.group(1))
            continue
        m = re.match(r"\s*return (.+);", line)
        if m and pending:
            for q in pending:
                out[q] = m.group(1).strip()
            pending = []
    assert len(out) >= 15, body
    return out


def _emulator_query_supported(expr: str, col: int) -> bool:
    # the emulator's query columns: 0 RK356X, 1 RK3588, 2 RV1106 and RK2118
    return {"1": True, "0": False, "col != 2": col != 2, "col == 2": col == 2}[expr]


def test_chips_and_families_match_the_emulator():
    emu = _emulator_platforms()
    assert set(emu) == set(platforms.CHIPS)
    fams = list(platforms.FAMILIES)
    for chip, col in emu.items():
        assert platforms.family(chip) == fams[col], chip


def test_function_table_matches_the_emulator():
    emu_plat = _emulator_platforms()
    emu_fn = _emulator_functions()
    assert set(emu_fn) == set(platforms.FUNCTIONS)
    for fn, row in emu_fn.items():
        for chip, col in emu_plat.items():
            assert platforms.supports(chip, fn) == bool(row[col]), (fn, chip)


def test_query_table_matches_the_emulator():
    emu_plat = _emulator_platforms()
    emu_q = _emulator_queries()
    for name, code in platforms.QUERY_CODES.items():
        # the NC1HWC2 names are the same commands as NATIVE_INPUT/OUTPUT_ATTR
        canonical = name.replace("NATIVE_NC1HWC2_", "NATIVE_")
        assert canonical in emu_q, name
        for chip, col in emu_plat.items():
            qcol = min(col, 2)
            want = _emulator_query_supported(emu_q[canonical], qcol)
            assert platforms.supports_query(chip, name) == want, (name, chip)
            assert platforms.supports_query(chip, code) == want, (code, chip)


def test_tables_match_the_abi_facts():
    facts = json.loads((DATA / "platform_support.json").read_text())
    for fn, cols in facts["functions"].items():
        for fam, ok in cols.items():
            for chip in facts["families"][fam]:
                assert platforms.supports(chip, fn) == ok, (fn, chip)
    for q, cols in facts["queries"].items():
        for fam, ok in cols.items():
            for chip in fam.split("/"):
                assert platforms.supports_query(chip, q) == ok, (q, chip)


def test_helpers():
    assert platforms.normalize_chip(" rk3588 ") == "RK3588"
    assert platforms.normalize_chip("rockchip,rv1106b") == "RV1106B"
    assert platforms.family("rv1103b") == "RV1106"
    with pytest.raises(ValueError, match=r"unknown chip 'RK9999'; expected one of RV1126B"):
        platforms.normalize_chip("RK9999")
    with pytest.raises(TypeError, match="chip must be a str"):
        platforms.normalize_chip(3588)
    assert platforms.supports("RK3588", "inputs_set") is True
    assert platforms.supports("RV1106", "rknn_inputs_set") is False
    assert platforms.supports("RK3566", "rknn_set_core_mask") is False
    assert platforms.supports("RK2118", "rknn_create_mem_from_fd") is False
    assert platforms.supports_query("RK3588", "PERF_RUN") is True
    assert platforms.supports_query("RV1103", "RKNN_QUERY_PERF_RUN") is False
    assert platforms.supports_query("RV1103", 12) is True          # DEVICE_MEM_INFO
    assert platforms.supports_query("RK3588", 99) is False
    with pytest.raises(ValueError, match="unknown query 'NOPE'"):
        platforms.supports_query("RK3588", "NOPE")
    assert "rknn_inputs_set" in platforms.unsupported_functions("RV1106")
    assert "rknn_wait" in platforms.unsupported_functions("RK3588")
    msg = platforms.why_not("RV1106", "rknn_inputs_set")
    assert msg.startswith("rknn_inputs_set is not supported on RV1106 (the RV1106/RV1103/")
    assert "zero-copy flow only" in msg
    assert platforms.why_not("RK3588", "rknn_wait").startswith(
        "rknn_wait is not supported on RK3588 (nor on any other chip)")
    assert platforms.why_not("RV1106", cmd=4).startswith(
        "rknn_query(RKNN_QUERY_PERF_RUN) is not supported on RV1106")


def test_detect_chip_reads_the_device_tree(tmp_path):
    dt = tmp_path / "compatible"
    dt.write_bytes(b"radxa,rock-5b\0rockchip,rk3588\0")
    assert platforms.detect_chip(dt) == "RK3588"
    dt.write_bytes(b"luckfox,pico-max\0rockchip,rv1106g3\0rockchip,rv1106\0")
    assert platforms.detect_chip(dt) == "RV1106"
    dt.write_bytes(b"raspberrypi,4-model-b\0brcm,bcm2711\0")
    assert platforms.detect_chip(dt) is None
    assert platforms.detect_chip(tmp_path / "missing") is None


def test_imports_without_the_extension():
    code = ("import sys; sys.modules['rknnx._core'] = None\n"
            "import rknnx.platforms as p\n"
            "print(p.supports('RV1106', 'rknn_inputs_set'), p.family('RK3568'))\n"
            "import rknnx\n"
            "try:\n"
            "    rknnx.lowlevel\n"
            "except ImportError as e:\n"
            "    print('ImportError:', e)\n")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "False RK356X"
    assert lines[1].startswith("ImportError: rknnx's compiled extension (rknnx._core) is missing")


def test_npu_cores_agree_with_the_emulator(track):
    """platforms.NPU_CORES is the one home of the fact; the emulator's chips take exactly
    the core masks their core count allows (a single-core NPU refuses every mask)."""
    from rknnx import errors, platforms
    from rknnx.lowlevel import CoreMask

    for chip in ("RK3588", "RK3576", "RK3566", "RK3562"):
        ctx = track.model("tiny_relu", chip)
        n = platforms.npu_cores(chip)
        for mask, need in ((CoreMask.CORE_0, 2), (CoreMask.CORE_1, 2),
                           (CoreMask.CORE_0_1_2, 3)):
            if n >= need:
                ctx.set_core_mask(mask)
            else:
                with pytest.raises((errors.NotSupportedError, errors.RKNNError)):
                    ctx.set_core_mask(mask)
    assert platforms.npu_cores(None) == platforms.npu_cores("RV1106") == 1
