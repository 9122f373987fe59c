"""``ZeroCopySession.read`` makes the floats the loaded runtime's own
``rknn_outputs_get(want_float=1)`` makes of the same int8 codes, bit for bit, per runtime
version and chip (docs/abi-notes.md, "NPU-side bytes"; rknnx/_dequant.py).

The vendor's answers these tests hold read() to:

- tests/data/vendor_dequant_rules.json: what librknnrt 1.5.2 and 1.6.0 (armhf, the vendor's
  libraries under qemu with the stand-in NPU driver) made of known NPU bytes for 165 int8
  outputs on RK3566 and RK3588: the yolov8_det9/seg/pose files built for RK3566 (whose small
  outputs read() was 1 to 3 ulp off before: a [1,1,20,20] score sum is all scalar there, a
  65-channel head's last channel too), the toolkit-2.5.0 files, and outputs of 1 to 33
  channels at 20x20 and 5x7 (the rule's edges);
- the shared real-runtime answers of librknnrt 1.4.0 for rknn-toolkit2 2c2d03d's
  multiple_input_demo (RK3566 and RK3588): 1.4.0 dequantizes every element by the scalar
  formula, where 1.5.2 and 1.6.0 take the vector one on RK3566.

The emulator plays each runtime (RKNNX_RUNTIME=emulator-1.5.2 for 1.5.2, the played
version ``RKNN_EMU_RUNTIME_VERSION`` for 1.6.0 and 1.4.0); read() keys on the version the
runtime answers and the chip.  Skipped, saying why, without the vendor data.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from helpers import NO_VENDOR_DATA, REAL_RUNTIME, RKNN_MODELS, run_python, \
    skip_on_vendor_runtime, vendor_dequant_codes, vendor_dequant_doc

DOC = vendor_dequant_doc()
codes = vendor_dequant_codes

#: how the emulator plays each recorded runtime
PLAY = {"librknnrt 1.5.2": {"RKNNX_RUNTIME": "emulator-1.5.2", "RKNN_EMU_RUNTIME_VERSION": None},
        "librknnrt 1.6.0": {"RKNNX_RUNTIME": None, "RKNN_EMU_RUNTIME_VERSION": "1.6.0"},
        "librknnrt 1.4.0": {"RKNNX_RUNTIME": None, "RKNN_EMU_RUNTIME_VERSION": "1.4.0"}}


def test_the_recorded_codes_are_what_the_vendor_gave():
    # every record's codes rebuild to the vendor's want_float=0 bytes (codes() checks the hash)
    kinds = {(r["runtime"], r["chip"]) for r in DOC["outputs"]}
    assert kinds == {(v, c) for v in ("librknnrt 1.5.2", "librknnrt 1.6.0")
                     for c in ("RK3566", "RK3588")}
    for rec in DOC["outputs"]:
        codes(rec)


def _scalar_vector(rec):
    q = codes(rec).astype(np.float32)
    s, zp = np.float32(rec["scale"]), np.float32(rec["zero_point"])
    return (q - zp) * s, q * s - np.float32(zp * s)


def test_the_records_tell_the_two_formulas_apart():
    # a record where the formulas agree on every element would hold nothing: count those
    # that tell them apart on both chips, the small RK3566 outputs of the issue among them
    apart = [r for r in DOC["outputs"] if not np.array_equal(*_scalar_vector(r))]
    assert len(apart) > 100
    small = [r for r in apart if r["chip"] == "RK3566" and r["model"].startswith("yolov8_")
             and r["dims"][2:] == [20, 20]]
    assert {r["dims"][1] for r in small} >= {1, 65}


CHILD = r"""
import base64, hashlib, json, sys
import numpy as np, rknnx
from rknnx import lowlevel as ll
from rknnx.emulator.builder import ModelBuilder
recs = json.loads(sys.stdin.read())
res = []
for rec in recs:
    q = np.frombuffer(base64.b64decode(rec["q"]), np.int8).reshape(rec["dims"])
    n, c, h, w = rec["dims"]
    b = ModelBuilder(rec["chip"])
    x = b.input("x", (n, h, w, c), "int8", zp=rec["zero_point"], scale=float(rec["scale"]))
    b.output(b.relu(x, out_scale=float(rec["scale"]), out_zp=rec["zero_point"], out="y"))
    got = {}
    with rknnx.Model(b.build()) as m:
        for kind in ("raw", "native"):
            with m.zero_copy(outputs=kind) as s:
                s.run()
                v = s.outputs[0]
                if kind == "raw":
                    v[...] = q
                else:
                    v[...] = ll.nchw_to_nc1hwc2(q, v.shape[4])
                del v
                r = s.read(0)
                got[kind] = hashlib.sha256(np.ascontiguousarray(r, np.float32).tobytes()).hexdigest()
                got[kind + "_nhwc"] = hashlib.sha256(np.ascontiguousarray(
                    s.read(0, layout="NHWC").transpose(0, 3, 1, 2), np.float32).tobytes()).hexdigest()
                del r
    res.append(got)
print(json.dumps(res))
"""


def _run_child(recs, runtime, chip):
    payload = [dict(r, q=base64.b64encode(codes(r).tobytes()).decode()) for r in recs]
    env = dict(PLAY[runtime], RKNN_EMU_PLATFORM=chip)
    proc = run_python(CHILD, env=env, timeout=600, stdin=json.dumps(payload))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("runtime", ["librknnrt 1.5.2", "librknnrt 1.6.0"])
@pytest.mark.parametrize("chip", ["RK3566", "RK3588"])
def test_read_equals_the_vendors_outputs_get(runtime, chip):
    skip_on_vendor_runtime("the emulator plays each recorded runtime here")
    recs = [r for r in DOC["outputs"] if r["runtime"] == runtime and r["chip"] == chip]
    assert recs
    got = _run_child(recs, runtime, chip)
    bad = [f"{r['model']} output {r['output']} {r['dims']}: {k}"
           for r, g in zip(recs, got) for k in ("raw", "native", "raw_nhwc", "native_nhwc")
           if g[k] != r["want_float1_sha256"]]
    assert not bad, f"{len(bad)} of {4 * len(recs)} reads differ from {runtime}: " + \
        "; ".join(bad[:12])


# ---- librknnrt 1.4.0: the shared answers for the vendor's own file -------------------------------
V140 = "librknnrt-1.4.0-aarch64"
DEMO = "tk2_2c2d03d__rknn_multiple_input_demo__{}__multiple_input_demo"

CHILD_FILE = r"""
import hashlib, json, sys
import numpy as np, rknnx
path, n = sys.argv[1], int(sys.argv[2])
k = np.arange(n)
pattern = (((k * 13) % 256) - 128).astype(np.int8)    # the probe's injected NPU output bytes
with rknnx.Model(path) as m:
    with m.zero_copy(outputs="native") as s:
        s.run()
        v = s.outputs[0].reshape(-1).view(np.int8)
        v[:] = pattern[:v.size]
        del v
        r = s.read(0)
        print(json.dumps(hashlib.sha256(np.ascontiguousarray(r, np.float32).tobytes()).hexdigest()))
        del r
"""


def _answer_140(chip_dir):
    if REAL_RUNTIME is None or RKNN_MODELS is None:
        pytest.skip(NO_VENDOR_DATA)
    stem = DEMO.format(chip_dir)
    doc = json.loads((REAL_RUNTIME / "answers" / V140 / f"{stem}.json").read_text())
    path = next(RKNN_MODELS.rglob(f"{stem}.rknn"))
    ev = {e["tag"]: e for e in doc["main"]["events"] if e["ev"] == "outputs_get"}
    inj = next(e for e in doc["main"]["events"] if e["ev"] == "inject_info")
    return path, inj["regions"][0]["len"], ev["wf1_pre0"]["outputs"][0]["data"]["sha256"]


@pytest.mark.parametrize("chip,chip_dir", [("RK3566", "RK3566_RK3568"), ("RK3588", "RK3588")])
def test_read_on_1_4_0_equals_its_outputs_get(chip, chip_dir):
    # real-runtime/answers/librknnrt-1.4.0-aarch64/tk2_2c2d03d__..._multiple_input_demo.json:
    # the probe's pattern in the NPU's output, outputs_get(want_float=1) by (q - zp) * scale
    skip_on_vendor_runtime("the emulator plays librknnrt 1.4.0 here")
    path, n, want = _answer_140(chip_dir)
    proc = run_python(CHILD_FILE, env=dict(PLAY["librknnrt 1.4.0"], RKNN_EMU_PLATFORM=chip),
                      args=[str(path), str(n)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == want


def test_the_rule_is_the_versions_not_the_chips_alone():
    # the same RK3566 file and bytes read on a runtime answering 1.6.0 take the vector
    # formula for its 16,384 pixels: not what 1.4.0 answered (the 45,056 elements)
    skip_on_vendor_runtime("the emulator plays librknnrt 1.6.0 here")
    path, n, want = _answer_140("RK3566_RK3568")
    proc = run_python(CHILD_FILE, env=dict(PLAY["librknnrt 1.6.0"], RKNN_EMU_PLATFORM="RK3566"),
                      args=[str(path), str(n)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) != want
