"""The facade on every runtime boards have (docs/architecture.md, "Runtimes boards have").

A static model on a runtime that refuses ``INPUT_DYNAMIC_RANGE`` (every board: the default
emulator answers so) opens and runs in Model, sessions, Pool, rknnx.lite and the CLI; the
runtime's warning line is printed once per Model, not per context.  On librknnrt 1.5.2
(``RKNNX_RUNTIME=emulator-1.5.2``: the functions it lacks are not exported) the facade
falls back where it can, with one ``W rknnx:`` line per process, and raises
NotSupportedError naming the library, its version and the call where it cannot.  The
errors a board user meets first (no NPU device, a model for another chip, a file that is
not a model) say their cause and fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rknnx
from rknnx import errors as E
from rknnx.emulator import samples

from helpers import run_python

DYN_W = "query RKNN_QUERY_INPUT_DYNAMIC_RANGE error, rknn model is static shape type"


def run_on(runtime: str, code: str, **env) -> "tuple[str, str]":
    """Run `code` in a fresh interpreter on the emulator playing `runtime`; its output."""
    p = run_python(textwrap.dedent(code), env={"RKNNX_RUNTIME": runtime, **env}, timeout=180)
    assert p.returncode == 0, f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    return p.stdout, p.stderr


EVERY_PATH = """
    import numpy as np, rknnx
    from rknnx.emulator import samples, reference
    from rknnx.lite import RKNNLite
    model = samples.classifier(target="RK3588")
    img = np.random.default_rng(0).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    with rknnx.Model(model) as m:
        assert not m.dynamic and m.shape_sets == []
        ref, = m.run(img)
        with m.zero_copy() as s:
            s.inputs[0][...] = img
            s.run()
            assert np.array_equal(s.outputs[0], ref)
        with rknnx.Pool(m, workers=3) as pool:
            for out in pool.map([img] * 6):
                assert np.array_equal(out[0], ref)
    lite = RKNNLite(raise_errors=True)
    open("m.rknn", "wb").write(model)
    assert lite.load_rknn("m.rknn") == 0 and lite.init_runtime() == 0
    out, = lite.inference([img])
    assert np.allclose(out, ref)
    lite.release()
    d = rknnx.Model(samples.dynamic(target="RK3588"))
    assert d.dynamic and len(d.shape_sets) == 3
    for shape in ((1, 96, 96, 3), (1, 64, 64, 3)):
        x = np.zeros(shape, np.uint8)
        outs = d.run(x)
        with d.zero_copy() as s:
            s.set_shape_set(d.shape_sets.index((shape,)))
            s.inputs[0][...] = x
            s.run()
            assert all(np.array_equal(a, b) for a, b in zip(outs, s.outputs))
    d.close()
    print("ok")
"""


def test_static_model_opens_and_runs_everywhere_without_the_runtimes_warning(tmp_path):
    """The issue boards showed: the query refused on a static model must not fail Model,
    sessions, Pool or the drop-in.  The file says the model is static, so its shape sets
    are never asked and the runtime's W line never prints (it printed once per Model)."""
    os.chdir(tmp_path)
    out, err = run_on("emulator", EVERY_PATH)
    assert out.strip() == "ok"
    assert err.count(DYN_W) == 0, err


LOW_LEVEL = """
from rknnx import lowlevel as ll
from rknnx.emulator import samples
open("m.rknn", "wb").write(samples.classifier(target="RK3588"))
with ll.Context(samples.classifier(target="RK3588")) as c:     # bytes: the file says static
    print("bytes", c.input_ranges, c.is_dynamic)
with ll.Context("m.rknn") as c:                                 # a path: the runtime is asked
    print("path", c.input_ranges, c.is_dynamic)
with ll.Context(samples.dynamic(target="RK3588")) as c:         # dynamic: asked, answered
    print("dynamic", len(c.input_ranges[0].dyn_range))
"""


def test_a_context_asks_the_shape_sets_only_when_the_bytes_do_not_say(tmp_path):
    os.chdir(tmp_path)
    out, err = run_on("emulator", LOW_LEVEL)
    assert out.split("\n")[:3] == ["bytes () False", "path () False", "dynamic 3"], out
    assert err.count(DYN_W) == 1, err                 # the path's context only


@pytest.mark.parametrize("command", [["info"], ["run", "-i", "x.npy"],
                                     ["bench", "--seconds", "0.2"]])
def test_cli_opens_a_static_model(tmp_path, command):
    """`rknnx info/run/bench` on a static model (boards refuse its shape sets)."""
    path = tmp_path / "c.rknn"
    path.write_bytes(samples.classifier(target="RK3588"))
    np.save(tmp_path / "x.npy", np.zeros((1, 224, 224, 3), np.uint8))
    args = [sys.executable, "-m", "rknnx", command[0], str(path), *command[1:]]
    p = subprocess.run(args, capture_output=True, text=True, timeout=180, cwd=tmp_path,
                       env=dict(os.environ, RKNNX_RUNTIME="emulator"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "not a model" not in p.stdout + p.stderr


def test_old_runtime_falls_back_and_says_so_once(tmp_path):
    """librknnrt 1.5.2 has no rknn_create_mem2: sessions allocate with rknn_create_mem,
    and one W line names the library and its version; everything runs as on 2.x."""
    os.chdir(tmp_path)
    out, err = run_on("emulator-1.5.2", EVERY_PATH)
    assert out.strip() == "ok"
    notes = [ln for ln in err.splitlines() if ln.startswith("W rknnx:")]
    assert notes == [f"W rknnx: librknnrt 1.5.2 at {rknnx.emulator.bundled_library('1.5.2')}: "
                     "rknn_create_mem2 is not available; sessions allocate with "
                     "rknn_create_mem"], err
    # the 1.x wording of the runtime's own lines
    _, err = run_on("emulator-1.5.2", """
        import rknnx
        from rknnx.emulator import samples
        rknnx.Model(samples.tiny_relu()).close()
    """, RKNN_LOG_LEVEL="2")
    assert "RKNN Runtime Information: librknnrt version: 1.5.2 (" in err
    assert "RKNN Driver Information: version: 0.8.2" in err


def test_old_runtime_refuses_what_cannot_fall_back():
    """What 1.5.2 cannot do raises NotSupportedError naming the library, its version and
    the call: custom operators, a session that syncs caches itself, non-cacheable memory."""
    out, _ = run_on("emulator-1.5.2", """
        import rknnx, numpy as np
        from rknnx.emulator import samples
        from rknnx.lowlevel import InitFlag
        with rknnx.Model(samples.custom_op_model(target="RK3588")) as m:
            for what, call in [
                    ("custom", lambda: m.register_custom_ops(
                        rknnx.custom_op("cstSigmoid")(lambda inputs, outputs: None))),
                    ("sync", lambda: m.zero_copy(flags=InitFlag.DISABLE_FLUSH_INPUT_MEM_CACHE)),
                    ("coherent", lambda: m.zero_copy(cacheable=False))]:
                try:
                    call()
                except rknnx.NotSupportedError as e:
                    print(what, e.func, "librknnrt 1.5.2 at" in str(e))
    """)
    assert out.split("\n")[:3] == ["custom rknn_register_custom_ops True",
                                   "sync rknn_mem_sync True",
                                   "coherent rknn_create_mem2 True"]


def test_runtime_info_names_the_version_and_what_is_missing():
    out, _ = run_on("emulator-1.5.2", """
        import rknnx
        from rknnx.emulator import samples
        rknnx.Model(samples.tiny_relu()).close()
        info = rknnx.runtime_info()
        print(info["version"], sorted(info["missing"]))
    """)
    version, missing = out.split(" ", 1)
    assert version == "1.5.2"
    for fn in ("rknn_create_mem2", "rknn_mem_sync", "rknn_register_custom_ops"):
        assert fn in missing


def test_pool_on_single_core_chip_needs_no_mask(models):
    """RK3566 answers rknn_set_core_mask with -13: a Pool that did not ask for masks never
    calls it, one that asks is refused before C."""
    m = models.open("classifier", "RK3566")
    img = np.zeros(m.inputs[0].shape, np.uint8)
    with rknnx.Pool(m, workers=2) as pool:
        assert len(list(pool.map([img] * 4))) == 4
    with pytest.raises(E.NotSupportedError, match="one NPU core"):
        rknnx.Pool(m, workers=2, core_masks=[1])


def test_pool_drops_a_mask_it_chose_when_the_runtime_refuses(models, emu, capfd):
    """A runtime that refuses the masks the pool picked on its own (an RK3588 whose
    runtime says no): the pool runs unpinned, one W line says why; asked-for masks raise."""
    m = models.open("classifier", "RK3588")
    img = np.zeros(m.inputs[0].shape, np.uint8)
    ref, = m.run(img)
    with emu.injected("rknn_set_core_mask", 1, "RKNN_ERR_TARGET_PLATFORM_UNMATCH"):
        with rknnx.Pool(m, workers=3) as pool:
            assert all(np.array_equal(o[0], ref) for o in pool.map([img] * 3))
    assert "rknn_set_core_mask is not available; pool workers run on the cores the runtime " \
        "chooses" in capfd.readouterr().err
    with emu.injected("rknn_set_core_mask", 1, "RKNN_ERR_TARGET_PLATFORM_UNMATCH"):
        with pytest.raises(E.TargetPlatformUnmatchError):
            rknnx.Pool(m, workers=1, core_masks=[1])


# ---- errors a board user meets first ----------------------------------------------------

def test_no_npu_device_names_the_nodes_and_the_fix(models, emu, monkeypatch):
    monkeypatch.setenv("RKNN_EMU_NO_DEVICE", "1")
    with pytest.raises(E.DeviceUnavailableError) as ei:
        rknnx.Model(samples.tiny_relu())
    msg = str(ei.value)
    assert ei.value.code == -1 and ei.value.func == "rknn_init"
    for part in ("/dev/dri/renderD129", "video", "--device /dev/dri/renderD129",
                 "/proc/device-tree/compatible"):
        assert part in msg, msg


def test_device_problems_on_a_board(tmp_path, monkeypatch):
    """What rknnx._board sees on a board: no node, or a node this user may not open."""
    from rknnx import _board

    monkeypatch.delenv("RKNN_EMU_NO_DEVICE", raising=False)
    assert "rknpu kernel driver is not loaded" in _board.npu_device_problem(str(tmp_path))
    node = tmp_path / "dev" / "dri" / "renderD129"
    node.parent.mkdir(parents=True)
    node.write_bytes(b"")
    assert _board.npu_device_problem(str(tmp_path)) is None
    node.chmod(0)
    if os.geteuid() != 0:                          # root may open anything
        assert "may not open it" in _board.npu_device_problem(str(tmp_path))


def test_model_for_another_chip_names_both(models, emu, tmp_path):
    path = tmp_path / "det.rknn"
    path.write_bytes(samples.classifier(target="RK3566"))
    emu.set_platform("RK3588")
    with pytest.raises(E.TargetPlatformUnmatchError,
                       match=rf"^model '{path}' was built for RK3566, but this NPU is RK3588: "
                             r"the emulator plays RK3566 when told so \(RKNN_EMU_PLATFORM=RK3566 "
                             r"in the environment\) or when no chip is chosen; for a board of "
                             r"RK3588, convert the model "
                             r"again with rknn-toolkit2 for target_platform='rk3588'"):
        rknnx.Model(path)
    # what the message says works
    code = f"import rknnx; m = rknnx.Model({str(path)!r}); print(m.chip); m.close()"
    proc = run_python(code, env={"RKNNX_RUNTIME": "emulator", "RKNN_EMU_PLATFORM": "RK3566"})
    assert proc.returncode == 0 and proc.stdout.split()[-1] == "RK3566", proc.stderr


def test_a_damaged_vendor_model_says_which_check_of_the_file_failed(models, tmp_path):
    # the emulator stands in for vendor files it can read; one it cannot is refused with
    # the reader's words (rknnx.modelfile), not a bare "invalid model"
    path = tmp_path / "yolov5s.rknn"
    path.write_bytes(b"RKNN\0\0\0\0" + bytes(200))
    with pytest.raises(E.ModelInvalidError, match=r"cannot load model '.*yolov5s.rknn' "
                                                  r"\(status -6\): container version 0 .*"
                                                  r"\[check: version\]"):
        rknnx.Model(path)


def test_a_directory_is_not_a_model(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a directory"):
        rknnx.Model(tmp_path)


def test_model_keeps_its_bytes(models, emu, tmp_path):
    """Sessions opened later load the bytes the Model was given: reusing the caller's
    buffer or replacing the file does not change what they run."""
    emu.set_platform("RK3588")
    buf = bytearray(samples.classifier(target="RK3588"))
    path = tmp_path / "m.rknn"
    path.write_bytes(bytes(buf))
    other = samples.tiny_relu(target="RK3588")
    img = np.random.default_rng(1).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    for source in (buf, path):
        with rknnx.Model(source) as m:
            ref, = m.run(img)
            buf[:len(other)] = other                   # the caller reuses its buffer
            path.unlink()                              # the file goes away
            with m.zero_copy() as s:
                s.inputs[0][...] = img
                s.run()
                assert np.array_equal(s.outputs[0], ref)
        buf[:] = samples.classifier(target="RK3588")
        path.write_bytes(bytes(buf))
