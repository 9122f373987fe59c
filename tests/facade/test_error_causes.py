"""Errors that name their cause, so that a user can act on them: a vendor model's custom
operators run without an implementation (every path that runs it), a Model on RV1106 that
cannot close because a dropped session's view keeps a borrower of its weights open, and a
model path that is missing or not a regular file (Model, RKNNLite, the CLI).  Each test
asserts the exception's type and message, and the emulator's counters back at baseline.

The custom-operator tests use the vendor's ``dual_residual_custom`` files (their file names
the custom operator ``cstDualResidual``) and are skipped, saying why, without the vendor
data (tests/helpers.py, NO_VENDOR_DATA)."""

from __future__ import annotations

import gc
import os
import re
import sys

import numpy as np
import pytest

import rknnx
import rknnx.ort
from rknnx import modelfile
from rknnx.errors import ModelFileError, RKNNFailError
from rknnx.lite import RKNNLite

from helpers import NO_VENDOR_DATA, live, model_bytes, run_python, user_inputs, vendor_models

#: the chips the RV1106 mini runtime serves (no custom operators there)
MINI = next(f for f in modelfile.RUNTIME_FACTS if f.runtime.startswith("librknnmrt")).chips
#: the vendor files with custom operators that the default runtime runs
CUSTOM = [p for p in vendor_models() if "dual_residual_custom" in p.name]

#: what every path says when the file's custom operator has no implementation
UNREGISTERED = (r"rknn_run failed: RKNN_ERR_FAIL \(-1\): the model uses custom operator "
                r"'cstDualResidual' \(node cstDualResidual_0\), with no implementation "
                r"registered on this context: implement it as a function decorated with "
                r"@rknnx\.custom_op\('cstDualResidual'\) and call "
                r"model\.register_custom_ops\(op\) before running, or before opening "
                r"sessions and pools \(docs/guide/custom-ops\.md; `rknnx info` lists a "
                r"model's custom operators\)$")


@rknnx.custom_op("cstDualResidual")
def dual_residual(inputs, outputs):
    for o in outputs:
        o[...] = 0


def _custom_file(path):
    if not CUSTOM:
        pytest.skip(NO_VENDOR_DATA)
    if os.environ.get("RKNNX_RUNTIME") == "emulator-1.5.2":
        pytest.skip("librknnrt 1.5.2 has no custom operators (the vendor's aborts on these "
                    "files in rknn_init)")
    return path


def _failed_run(excinfo):
    e = excinfo.value
    assert type(e) is RKNNFailError and e.code == -1 and e.func == "rknn_run"
    assert e.__cause__ is None and e.__suppress_context__


@pytest.mark.parametrize("path", CUSTOM or [None], ids=lambda p: p.stem if p else "none")
def test_a_run_without_the_files_custom_ops_names_them_on_every_path(emu, path):
    path = _custom_file(path)
    mf = modelfile.read(path)
    assert mf.chip not in MINI and [o.type for o in mf.custom_ops] == ["cstDualResidual"]
    emu.set_platform(mf.chip)
    before = live(emu)
    with rknnx.Model(str(path)) as m:
        frame = user_inputs(m, np.random.default_rng(0))
        # Model.run: its fast path and (a layout to convert) the runner's
        with pytest.raises(RKNNFailError, match=UNREGISTERED) as ei:
            m.run(*frame)
        _failed_run(ei)
        with pytest.raises(RKNNFailError, match=UNREGISTERED) as ei:
            assert {t.layout for t in m.inputs} == {"NHWC"}
            m.run(*[np.ascontiguousarray(a.transpose(0, 3, 1, 2)) for a in frame],
                  data_format="nchw")
        _failed_run(ei)
        # a zero-copy session: run_arrays and run
        with m.zero_copy() as s:
            with pytest.raises(RKNNFailError, match=UNREGISTERED) as ei:
                s.run_arrays(*frame)
            _failed_run(ei)
            with pytest.raises(RKNNFailError, match=UNREGISTERED):
                s.run()
        # a Pool's worker, the ONNX Runtime surface
        with rknnx.Pool(m, workers=1) as pool:
            with pytest.raises(RKNNFailError, match=UNREGISTERED) as ei:
                pool.submit(*frame).result(timeout=60)
            _failed_run(ei)
        ort = rknnx.ort.InferenceSession(str(path))
        try:
            with pytest.raises(RKNNFailError, match=UNREGISTERED):
                ort.run(None, {t.name: a for t, a in zip(m.inputs, frame)})
        finally:
            ort.close()
    assert live(emu) == before


def test_rknnlite_prints_the_cause_and_returns_none(emu, capfd):
    path = _custom_file(CUSTOM[-1] if CUSTOM else None)
    mf = modelfile.read(path)
    emu.set_platform(mf.chip)
    before = live(emu)
    lite = RKNNLite()
    try:
        assert lite.load_rknn(str(path)) == 0 and lite.init_runtime() == 0
        capfd.readouterr()
        frame = [np.zeros(t.shape, np.float32) for t in mf.file_inputs]
        assert lite.inference(inputs=frame, data_format="nchw") is None   # the vendor's None
        err = capfd.readouterr().err.splitlines()
        mine = [line for line in err if line.startswith("E inference: ")]
        assert len(mine) == 1 and re.search(UNREGISTERED, mine[0][len("E inference: "):])
    finally:
        lite.release()
    assert live(emu) == before


def test_registered_ops_run_and_a_session_opened_before_says_so(emu):
    path = _custom_file(CUSTOM[-1] if CUSTOM else None)
    mf = modelfile.read(path)
    emu.set_platform(mf.chip)
    before = live(emu)
    with rknnx.Model(str(path)) as m:
        frame = user_inputs(m, np.random.default_rng(1))
        early = m.zero_copy()
        m.register_custom_ops(dual_residual)
        want = m.run(*frame)                  # registered: no error, the stand-in's digest
        with m.zero_copy() as s:
            for a, b in zip(s.run_arrays(*frame), want):
                np.testing.assert_array_equal(a, b)
        with pytest.raises(RKNNFailError, match=(
                r"^rknn_run failed: RKNN_ERR_FAIL \(-1\): the model uses custom operator "
                r"'cstDualResidual' \(node cstDualResidual_0\), with no implementation "
                r"registered on this context: 'cstDualResidual' was registered on the model "
                r"after this session was opened, and only contexts opened later get them: "
                r"open the session again after model.register_custom_ops\(\.\.\.\)$")):
            early.run_arrays(*frame)
        early.close()
    assert live(emu) == before


def test_other_run_failures_keep_the_runtimes_words(emu):
    """A model without custom operators that fails to run (an injected -1) says only what
    the runtime said: the explanation is for custom operators the file names."""
    emu.set_platform("RK3588")
    before = live(emu)
    with rknnx.Model(model_bytes("tiny_relu", "RK3588")) as m:
        emu.inject_error("rknn_run", 1, -1)
        with pytest.raises(RKNNFailError, match=r"^rknn_run failed: RKNN_ERR_FAIL "
                                                      r"\(-1\)$"):
            m.run(np.ones((1, 2), np.float32))
    assert live(emu) == before


# ---- a Model on RV1106 that cannot close ------------------------------------------------
def test_rv1106_close_names_the_view_of_a_dropped_session(emu):
    # no rknn_dup_context there: a session's context borrows the model's weights, and the
    # model's context cannot close while one is open; a dropped session whose output view
    # is alive stays open with it
    emu.set_platform("RV1106")
    before = live(emu)
    m = rknnx.Model(model_bytes("multi_io", "RV1106"))
    s = m.zero_copy()
    opened_at = f"{__file__}:{sys._getframe().f_lineno - 1}"
    view = s.outputs[1][0]                    # an array made from the view
    with pytest.warns(ResourceWarning, match="unclosed <rknnx.ZeroCopySession"):
        del s
        gc.collect()
    message = (
        "Model.close: the model's weights are lent to 1 open context that this close "
        "cannot close (here each session and new_context() borrows them: "
        "share_weights_with): a ZeroCopySession (outputs='float32', opened at "
        f"{opened_at}) was dropped without close() while a numpy array made from its "
        f"outputs[1] ({m.outputs[1].name!r}) was alive; that array keeps the session's "
        "context open: delete it (or keep a .copy() of what must outlive the session), "
        "then close the Model again; close a session before dropping it (`with "
        "model.zero_copy() as s:`).  Nothing was closed")
    with pytest.raises(BufferError) as ei:
        m.check_closable()
    assert str(ei.value) == message
    with pytest.raises(BufferError) as ei:
        m.close()
    assert str(ei.value) == message
    assert not m.closed
    m.run(*user_inputs(m, np.random.default_rng(0)))      # nothing was closed
    del view, ei
    gc.collect()
    m.close()
    assert m.closed and live(emu) == before


def test_rv1106_close_names_an_open_new_context(emu):
    emu.set_platform("RV1106")
    before = live(emu)
    m = rknnx.Model(model_bytes("tiny_relu", "RV1106"))
    ctx = m.new_context()
    with pytest.raises(RuntimeError) as ei:
        m.close()
    assert str(ei.value) == (
        "Model.close: the model's weights are lent to 1 open context that this close "
        "cannot close (here each session and new_context() borrows them: "
        "share_weights_with): a low-level Context from Model.new_context() is still open: "
        "close it first.  Nothing was closed")
    assert not m.closed
    ctx.close()
    m.close()
    assert live(emu) == before


@pytest.mark.parametrize("platform", ["RK3588", "RK3566"])
def test_a_dropped_sessions_view_does_not_hold_a_model_with_dup_context(emu, platform):
    # where the runtime duplicates contexts (rknn_dup_context) nothing is borrowed: the
    # model closes; the session's context goes with the array
    emu.set_platform(platform)
    before = live(emu)
    m = rknnx.Model(model_bytes("multi_io", platform))
    s = m.zero_copy()
    view = s.outputs[0]
    with pytest.warns(ResourceWarning, match="unclosed <rknnx.ZeroCopySession"):
        del s
        gc.collect()
    m.close()
    del view
    gc.collect()
    assert live(emu) == before


# ---- a model path that is not a model file ----------------------------------------------
def _not_files(tmp_path):
    fifo = tmp_path / "pipe.rknn"
    os.mkfifo(fifo)
    link = tmp_path / "dangling.rknn"
    link.symlink_to(tmp_path / "gone.rknn")
    return [
        ("/missing/m.rknn", FileNotFoundError, "model file '/missing/m.rknn' does not exist"),
        (str(link), FileNotFoundError,
         f"model file '{link}' is a symbolic link to '{tmp_path / 'gone.rknn'}', which does "
         "not exist"),
        ("/dev/null", ValueError, "model file '/dev/null' exists but is not a regular file "
                                  "(it is a character device): give the path of a .rknn file"),
        (str(fifo), ValueError, f"model file '{fifo}' exists but is not a regular file (it "
                                "is a named pipe (FIFO)): give the path of a .rknn file"),
    ]


def test_model_says_what_a_path_is(emu, tmp_path):
    before = live(emu)
    for path, kind, message in _not_files(tmp_path):
        with pytest.raises(kind) as ei:      # (a pipe is not opened: nothing blocks)
            rknnx.Model(path)
        assert type(ei.value) is kind and str(ei.value) == message
    assert live(emu) == before


def test_rknnlite_says_what_a_path_is(emu, tmp_path, capsys):
    lite = RKNNLite()
    capsys.readouterr()
    cases = _not_files(tmp_path) + [(str(tmp_path), IsADirectoryError,
                                     f"model file '{tmp_path}' is a directory, not a file")]
    for path, kind, message in cases:
        # the vendor's convention: an E line, the failure value (None, -1)
        assert lite.list_support_target_platform(path) is None
        assert capsys.readouterr().err == f"E list_support_target_platform: {message}\n"
        assert lite.load_rknn(path) == -1
        assert capsys.readouterr().err == f"E load_rknn: {message}\n"
    strict = RKNNLite(raise_errors=True)
    for path, kind, message in cases:
        with pytest.raises(kind) as ei:
            strict.list_support_target_platform(path)
        assert type(ei.value) is kind and str(ei.value) == message
    capsys.readouterr()


def test_rknnlite_reads_a_vendor_files_target(capsys):
    if not CUSTOM:
        pytest.skip(NO_VENDOR_DATA)
    lite = RKNNLite()
    for path in CUSTOM:
        capsys.readouterr()
        assert lite.list_support_target_platform(path) is None
        out = capsys.readouterr().out
        assert out.rstrip().endswith(f"Target platform of {path}: {modelfile.read(path).chip}")


def test_rknnlite_says_why_a_target_is_unknown(tmp_path, capsys):
    other = tmp_path / "notes.rknn"
    other.write_bytes(b"not a model")
    bad = tmp_path / "bad.rknn"
    bad.write_bytes(b"RKNN" + bytes(60))
    lite = RKNNLite()
    capsys.readouterr()
    assert lite.list_support_target_platform(other) is None
    assert capsys.readouterr().out.rstrip().endswith(
        f"Target platform of {other}: unknown (neither a vendor .rknn file nor an emulator "
        "model)")
    with pytest.raises(ModelFileError) as ei:
        modelfile.read(bytes(bad.read_bytes()))
    assert lite.list_support_target_platform(bad) is None
    assert capsys.readouterr().out.rstrip().endswith(
        f"Target platform of {bad}: unknown (rknnx's reader cannot read it: {ei.value})")


@pytest.mark.parametrize("command", [("doctor", "--model"), ("info",)])
def test_cli_says_what_a_path_is(command, tmp_path):
    code = ("import sys; from rknnx.cli import main; "
            f"sys.exit(main({list(command)!r} + sys.argv[1:]))")
    for path, _, message in _not_files(tmp_path):
        proc = run_python(f"import sys; sys.argv[1:] = [{path!r}]; {code}",
                          env={"RKNNX_RUNTIME": "emulator"})
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert proc.stderr.splitlines()[-1] == f"rknnx {command[0]}: error: {message}"
