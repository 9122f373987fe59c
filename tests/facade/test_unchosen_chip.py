"""A PC user's model for another chip (issue 39, item 5): with no chip chosen (neither
RKNN_EMU_PLATFORM nor EmulatorControl.set_platform), the emulator plays the chip a model
was built for, vendor file or rknnx sample, and says so once per chip in a ``W rknnx:``
line; where a chip was chosen, a model of another is refused, as a board refuses it.

The vendor files are read in place (tests/helpers.py, VENDOR_DATA); their tests skip,
saying why, without them."""

from __future__ import annotations

import os

import numpy as np
import pytest

import rknnx
from rknnx import errors as E
from rknnx import modelfile
from rknnx.emulator import samples

from helpers import NO_VENDOR_DATA, RKNN_MODELS, live, run_python

#: a vendor file built for RK3566 (rknn-toolkit2 2.5.0, a 640x640 detector) and one for
#: RV1106 (the mini runtime's chip)
RK3566_FILE = RKNN_MODELS / "toolkit-2.5.0" / "yolo640_rk3566.rknn" if RKNN_MODELS else None
RV1106_FILE = RKNN_MODELS / "toolkit-2.5.0" / "cls_img_rv1106.rknn" if RKNN_MODELS else None
needs_vendor_data = pytest.mark.skipif(
    RK3566_FILE is None or not RK3566_FILE.exists() or not RV1106_FILE.exists(),
    reason=NO_VENDOR_DATA)

NOTICE = "W rknnx: no chip chosen"


def _emulator_word() -> str:
    """RKNNX_RUNTIME for a child process: the emulator the suite runs on."""
    word = os.environ.get("RKNNX_RUNTIME", "")
    return word if word.startswith("emulator") else "emulator"


@pytest.fixture
def unchosen(emu, monkeypatch):
    """The emulator with no chip chosen: the control reverted (the emu fixture) and no
    RKNN_EMU_PLATFORM in the environment the library reads."""
    monkeypatch.delenv("RKNN_EMU_PLATFORM", raising=False)
    assert emu.platform == "RK3588"
    return emu


@needs_vendor_data
def test_a_vendor_file_of_another_chip_opens_on_a_fresh_emulator_as_its_chip(emu):
    word = _emulator_word()
    # the emulator playing librknnrt 1.5.2 (a glibc runtime) refuses an RV1106 file as that
    # runtime does on every platform (the mini runtime serves RV1106: docs/standin.md)
    files = [(RK3566_FILE, "RK3566"), (RK3566_FILE, "RK3566")]
    if word != "emulator-1.5.2":
        files.append((RV1106_FILE, "RV1106"))
    code = (
        "import rknnx\n"
        "for p in %r:\n"
        "    with rknnx.Model(p) as m:\n"
        "        print(m.chip, [tuple(t.shape) for t in m.inputs],\n"
        "              [tuple(t.shape) for t in m.outputs], sep='|')\n"
    ) % ([str(p) for p, _ in files],)
    proc = run_python(code, env={"RKNNX_RUNTIME": word, "RKNN_EMU_PLATFORM": None,
                                 "RKNN_LOG_LEVEL": None})
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("|") for line in proc.stdout.splitlines()]
    assert len(rows) == len(files)
    for row, (path, chip) in zip(rows, files):
        mf = modelfile.read(path)
        assert row == [chip, str([tuple(t.shape) for t in mf.inputs]),
                       str([tuple(t.shape) for t in mf.outputs])]
    # said once per chip, in the emulator's notice form
    said = [line for line in proc.stderr.splitlines() if line.startswith(NOTICE)]
    assert said == [
        f"{NOTICE} (RKNN_EMU_PLATFORM or EmulatorControl.set_platform): the emulator plays "
        f"{chip}, the chip the model was built for; a chosen chip refuses a model of "
        "another, as a board does" for chip in dict.fromkeys(c for _, c in files)], proc.stderr
    assert "E RKNN:" not in proc.stderr


@needs_vendor_data
def test_a_vendor_file_of_another_chip_plays_as_if_its_chip_were_chosen(unchosen):
    """The unchosen emulator answers for the file what the chosen chip answers."""
    rng = np.random.default_rng(5)
    with rknnx.Model(str(RK3566_FILE)) as m:
        assert m.chip == "RK3566" and unchosen.platform == "RK3588"
        x = rng.integers(0, 256, m.inputs[0].shape, dtype=np.uint8)
        got = m.run(x)
        natives = [t.native for t in m.outputs]
    unchosen.set_platform("RK3566")
    with rknnx.Model(str(RK3566_FILE)) as m:
        want = m.run(x)
        assert [t.native for t in m.outputs] == natives
    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))


@needs_vendor_data
def test_a_vendor_file_of_another_chip_is_refused_where_a_chip_was_chosen(emu):
    emu.set_platform("RK3588")
    before = live(emu)
    mf = modelfile.read(RK3566_FILE)
    with pytest.raises(E.TargetPlatformUnmatchError,
                       match=rf"^model '{RK3566_FILE}' was built for RK3566 \(NPU "
                             rf"{mf.npu_family}, rknn-toolkit2 {mf.toolkit_version}\), but this "
                             r"NPU is RK3588: the emulator plays RK3566 when told so "
                             r"\(RKNN_EMU_PLATFORM=RK3566 in the environment\) or when no chip "
                             r"is chosen; for a board of RK3588, convert the model again"):
        rknnx.Model(str(RK3566_FILE))
    assert live(emu) == before


def test_a_sample_of_another_chip_opens_as_its_chip(unchosen):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2)).astype(np.float32)
    before = live(unchosen)
    with rknnx.Model(samples.tiny_relu(target="RK3566")) as m:
        assert m.chip == "RK3566"
        np.testing.assert_array_equal(m.run(x)[0], np.maximum(x, 0))
    with rknnx.Model(samples.tiny_relu(target="RV1106")) as m:
        assert m.chip == "RV1106"
        np.testing.assert_array_equal(m.run(x)[0], np.maximum(x, 0))
    # a model of the default chip's NPU, or naming none of the chips, plays the default
    with rknnx.Model(samples.tiny_relu(target="RK3588")) as m:
        assert m.chip == "RK3588"
    assert unchosen.platform == "RK3588" and live(unchosen) == before


def test_a_sample_of_another_chip_is_refused_where_a_chip_was_chosen(emu, monkeypatch):
    before = live(emu)
    model = samples.tiny_relu(target="RK3566")
    emu.set_platform("RK3588")
    with pytest.raises(E.TargetPlatformUnmatchError,
                       match=r"^the model \(\d+ bytes\) was built for RK3566, but this NPU is "
                             r"RK3588: the emulator plays RK3566 when told so"):
        rknnx.Model(model)
    # chosen through the environment: the same
    emu.set_platform(None)
    monkeypatch.setenv("RKNN_EMU_PLATFORM", "RK3588")
    with pytest.raises(E.TargetPlatformUnmatchError, match="but this NPU is RK3588"):
        rknnx.Model(model)
    assert live(emu) == before
