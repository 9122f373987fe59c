"""The emulator's ``rknn_outputs_get(want_float=1)`` makes of given NPU bytes the floats the
vendor's runtime of the version it plays makes of them, bit for bit (docs/abi-notes.md,
"NPU-side bytes").

- tests/data/vendor_dequant_rules.json: librknnrt 1.5.2 and 1.6.0 (armhf) on RK3566 and
  RK3588, 165 int8 outputs of 1 to 255 channels, 5x7 to 160x160 pixels (how they were
  recorded is in the file);
- the shared real-runtime answers of librknnrt 1.4.0 for rknn-toolkit2 2c2d03d's
  multiple_input_demo on RK3566 and RK3588, judged by compare.py with the emulator playing
  1.4.0 (``RKNN_EMU_RUNTIME_VERSION``): every element by the scalar formula.

Each case builds an emulator model with the recorded output (channels, pixels, zero point,
scale), hands its NPU side the recorded codes (``rknn_emu_set_npu_output``) and compares
the sha256 of the floats with the vendor's.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.emu_capi import api, ctl, emu, make_ctx   # noqa: F401 (fixtures)
from tests.helpers import NO_VENDOR_DATA, REAL_RUNTIME, RKNN_MODELS, \
    vendor_dequant_codes, vendor_dequant_doc

from rknnx import lowlevel as ll
from rknnx.emulator.builder import ModelBuilder

DOC = vendor_dequant_doc()
codes = vendor_dequant_codes


def _model(rec) -> bytes:
    n, c, h, w = rec["dims"]
    b = ModelBuilder(rec["chip"])
    x = b.input("x", (n, h, w, c), "int8", zp=rec["zero_point"], scale=float(rec["scale"]))
    b.output(b.relu(x, out_scale=float(rec["scale"]), out_zp=rec["zero_point"], out="y"))
    return b.build()


@pytest.mark.parametrize("runtime", ["librknnrt 1.5.2", "librknnrt 1.6.0"])
@pytest.mark.parametrize("chip", ["RK3566", "RK3588"])
def test_outputs_get_equals_the_vendors(emu, make_ctx, runtime, chip):
    # the default library plays the newest rule (1.5.2 and 1.6.0 agree on every record)
    recs = [r for r in DOC["outputs"] if r["runtime"] == runtime and r["chip"] == chip]
    assert recs
    bad = []
    for rec in recs:
        q = codes(rec)
        ctx = make_ctx(_model(rec), platform=chip)
        na = ctx.out_attr(0, 9)                      # RKNN_QUERY_NATIVE_OUTPUT_ATTR
        native = ll.nchw_to_nc1hwc2(q, int(na.dims[4]))
        ctl().set_npu_output(ctx.h, 0, native.tobytes())
        ctx.inputs_set([np.zeros((rec["dims"][0], *rec["dims"][2:], rec["dims"][1]), np.int8)],
                       types=[2], fmts=[1])
        ctx.run()
        assert np.array_equal(ctx.outputs_get(want_float=0)[0].reshape(q.shape), q)
        got = ctx.outputs_get(want_float=1)[0]
        if hashlib.sha256(got.tobytes()).hexdigest() != rec["want_float1_sha256"]:
            bad.append(f"{rec['model']} output {rec['output']} {rec['dims']}")
        ctx.close()
    assert not bad, f"{len(bad)} of {len(recs)} differ from {runtime}: " + "; ".join(bad[:12])


@pytest.mark.parametrize("chip_dir", ["RK3566_RK3568", "RK3588"])
def test_playing_1_4_0_answers_its_outputs_get(tmp_path, chip_dir):
    # real-runtime/answers/librknnrt-1.4.0-aarch64/tk2_2c2d03d__rknn_multiple_input_demo__
    # <chip>__multiple_input_demo.json, every outputs_get item (want_float 0 and 1)
    if REAL_RUNTIME is None or RKNN_MODELS is None:
        pytest.skip(NO_VENDOR_DATA)
    if shutil.which("cc") is None:
        pytest.skip("compare.py builds its probe with cc, and there is no cc here")
    answer = (REAL_RUNTIME / "answers" / "librknnrt-1.4.0-aarch64" /
              f"tk2_2c2d03d__rknn_multiple_input_demo__{chip_dir}__multiple_input_demo.json")
    lib = Path(ctl().path).with_name("librknnrt.so")
    items = {}
    for played in ("1.4.0", "1.6.0"):
        out = tmp_path / f"{played}.json"
        subprocess.run([sys.executable, str(REAL_RUNTIME / "compare.py"), str(answer),
                        "--models", str(RKNN_MODELS), "--lib", str(lib),
                        "--env", f"RKNN_EMU_RUNTIME_VERSION={played}", "--max-lines", "0",
                        "--json", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
        pairs = json.loads(out.read_text())
        items[played] = [it for p in pairs for it in p["items"] if it["cat"] == "outputs"]
    floats = [it for it in items["1.4.0"] if "(float32)" in it["field"]]
    assert len(floats) >= 2
    assert all(it["agree"] is True for it in items["1.4.0"]), \
        [(it["where"], it["field"], it["library"]) for it in items["1.4.0"] if not it["agree"]]
    if chip_dir.startswith("RK3566"):
        # playing 1.6.0 the same bytes take the vector formula: the version decides
        assert any(it["agree"] is False for it in items["1.6.0"] if "(float32)" in it["field"])
