"""The `rknnx` command, run as a user runs it (a subprocess on the emulator): each
sub-command's output, --help, --json, and one clear line (no traceback) for user errors."""

from __future__ import annotations

import json
import os
import re
import sys

import numpy as np
import pytest

from helpers import run_python

ENV = {"RKNNX_RUNTIME": "emulator"}


def cli(*args, env=ENV):
    code = f"import sys; from rknnx.cli import main; sys.exit(main({list(args)!r}))"
    return run_python(code, env=env)


def test_module_and_console_script_exist():
    proc = run_python("import runpy, sys; sys.argv = ['rknnx', '--help']; "
                      "runpy.run_module('rknnx', run_name='__main__')")
    assert proc.returncode == 0 and "info" in proc.stdout and "doctor" in proc.stdout
    import shutil

    script = shutil.which("rknnx", path=str(__import__("pathlib").Path(sys.executable).parent))
    assert script, "the rknnx console script is not installed"


@pytest.mark.parametrize("command", ["info", "run", "bench", "doctor", "emulator"])
def test_every_command_has_help(command):
    proc = cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: rknnx {command}")


def test_info_text_and_json():
    proc = cli("info", "--sample", "multi_io")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "chip:       RK3588 (emulator)" in out
    assert "[0] image            1x32x32x3      int8     NHWC      affine" in out
    assert "native 1x1x16x16x16   int8     NC1HWC2   strides=(4096, 4096, 256, 16, 1)" in out
    assert "custom:     rknnx sample: multi_io" in out
    assert "support:    everything the model needs" in out
    d = json.loads(cli("info", "--sample", "dynamic", "--json").stdout)
    assert d["dynamic"] and d["shape_sets"] == [[[1, 64, 64, 3]], [[1, 96, 96, 3]],
                                                 [[1, 128, 160, 3]]]
    assert d["inputs"][0]["quant"]["kind"] == "affine"
    assert d["sdk_version"].startswith("2.5.0")


def test_info_on_a_zero_copy_only_chip():
    proc = cli("info", "--sample", "tiny_relu", env={**ENV, "RKNN_EMU_PLATFORM": "RV1106"})
    assert proc.returncode == 0, proc.stderr
    assert "lacks rknn_inputs_set" in proc.stdout and "zero-copy flow only" in proc.stdout


@pytest.mark.parametrize("flow", ["general", "zero-copy"])
def test_run_saves_outputs(tmp_path, flow):
    import rknnx
    from rknnx.emulator import samples

    model = tmp_path / "classifier.rknn"
    model.write_bytes(samples.classifier())
    x = np.random.default_rng(0).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    np.save(tmp_path / "x.npy", x)
    proc = cli("run", str(model), "--input", str(tmp_path / "x.npy"), "--flow", flow,
                 "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert f"{flow} flow:" in proc.stdout
    assert "output 0 'logits': 1x1000 float32" in proc.stdout and "top-5:" in proc.stdout
    saved = np.load(tmp_path / "out" / "output0_logits.npy")
    rknnx.load_runtime("emulator")
    with rknnx.Model(model) as m:
        np.testing.assert_array_equal(saved, m.run(x)[0])
    top = int(np.argmax(saved))
    assert f"top-5: {top} (" in proc.stdout


@pytest.mark.parametrize("flow", ["general", "zero-copy"])
@pytest.mark.parametrize("platform", ["RK3588", "RV1106"])
def test_a_failed_run_is_one_line_in_both_flows(tmp_path, flow, platform):
    # the zero-copy flow printed a traceback: the BufferError of the session's close
    # replaced the runtime's error
    np.save(tmp_path / "x.npy", np.zeros((1, 2), np.float32))
    code = (f"import sys, rknnx; from rknnx.emulator.control import EmulatorControl\n"
            f"emu = EmulatorControl(rknnx.load_runtime('emulator')['path'])\n"
            f"emu.inject_error('rknn_run', 1, 'RKNN_ERR_TIMEOUT')\n"
            f"from rknnx.cli import main\n"
            f"sys.exit(main(['run', '--sample', 'tiny_relu', '-i', "
            f"{str(tmp_path / 'x.npy')!r}, '--flow', {flow!r}]))")
    proc = run_python(code, env={**ENV, "RKNN_EMU_PLATFORM": platform})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1] == \
        "rknnx run: error: rknn_run failed: RKNN_ERR_TIMEOUT (-2)", proc.stderr


def test_run_reads_an_image(tmp_path):
    from PIL import Image

    from rknnx.emulator import samples

    model = tmp_path / "classifier.rknn"
    model.write_bytes(samples.classifier())
    Image.fromarray(np.full((100, 120, 3), 200, np.uint8)).save(tmp_path / "cat.png")
    proc = cli("run", str(model), "-i", str(tmp_path / "cat.png"), "--raw")
    assert proc.returncode == 0, proc.stderr
    assert "output 0 'logits': 1x1000 int8" in proc.stdout


def test_emulator_paths_build_a_c_program(tmp_path):
    proc = cli("emulator")
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines()[:2])
    import os

    assert os.path.isfile(lines["library"])
    assert os.path.isfile(os.path.join(lines["include"], "rknn_api.h"))
    from helpers import compile_c

    src = tmp_path / "v.c"
    src.write_text('#include "rknn_api.h"\n#include <stdio.h>\n'
                   "int main(void){ rknn_context c = 0; printf(\"%d\\n\", rknn_destroy(c) < 0);"
                   " return 0; }\n")
    libdir = os.path.dirname(lines["library"])
    exe = compile_c([src], tmp_path / "v", flags=[f"-I{lines['include']}", f"-L{libdir}",
                                                  f"-Wl,-rpath,{libdir}"], libs=["-lrknnrt"])
    import subprocess

    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout.strip() == "1"
    out = cli("emulator", "--write-samples", str(tmp_path / "s"))
    assert out.returncode == 0
    assert (tmp_path / "s" / "classifier.rknn").is_file()


def test_doctor():
    proc = cli("doctor")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "CPU emulator" in out and "functions: 35 of 35" in out
    assert "chip:      RK3588 (emulator personality)" in out
    assert "NPU nodes:" in out


@pytest.mark.parametrize("args,message", [
    (("info", "missing.rknn"), "rknnx info: error: model file 'missing.rknn' does not exist"),
    (("info", "--sample", "nope"), "rknnx info: error: no sample 'nope'; the samples are"),
    (("run", "--sample", "tiny_relu", "-i", "nofile.npy"),
     "rknnx run: error: input file 'nofile.npy' does not exist"),
    (("run", "--sample", "multi_io"),
     "rknnx run: error: the model has 3 input(s) (image, feat, seq); got 0 --input"),
    (("info",), "rknnx info: error: give a MODEL file (or --sample NAME)"),
    (("info", "/"), "rknnx info: error: '/' is a directory, not a model file"),
    (("doctor", "--model", "missing.rknn"),
     "rknnx doctor: error: model file 'missing.rknn' does not exist"),
    (("emulator", "--write-samples", "unused", "--target", "RK9999"),
     "rknnx emulator: error: --target 'RK9999' is not a chip rknnx knows; expected one of"),
    (("bench", "--sample", "tiny_relu", "--plot", "out.txt"),
     "rknnx bench: error: --plot writes a PNG: give a FILE.png, got 'out.txt'"),
    (("bench", "--sample", "tiny_relu", "--seconds", "-1"),
     "rknnx bench: error: --seconds must be > 0; got -1.0"),
])
def test_user_errors_are_one_line(args, message):
    proc = cli(*args)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert message in proc.stderr.splitlines()[-1]


def test_corrupt_model_and_verbose(tmp_path):
    bad = tmp_path / "bad.rknn"
    bad.write_bytes(b"garbage" * 100)
    proc = cli("info", str(bad))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"rknnx info: error: '{bad}' is not a model this runtime can load" in proc.stderr
    proc = cli("--verbose", "info", str(bad))
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_wrong_input_shape(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((1, 3), np.float32))
    proc = cli("run", "--sample", "tiny_relu", "-i", str(tmp_path / "x.npy"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "input 0 ('x'): shape (1, 3) does not match the model's (1, 2)" in proc.stderr


def test_bench_json_and_table(tmp_path):
    proc = cli("bench", "--sample", "tiny_relu", "-n", "30", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert set(d["flows"]) == {"general-float32", "general-raw", "zero-copy"}
    assert d["flows"]["zero-copy"]["bytes_per_frame"]["copied_by_api"] == 0
    assert d["flows"]["general-float32"]["bytes_per_frame"]["copied_by_api"] == 16
    proc = cli("bench", "--sample", "tiny_relu", "-n", "30", "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stderr
    assert "bytes copied by the API per frame: 16 B -> 0 B" in proc.stdout
    assert json.loads((tmp_path / "r.json").read_text())["iterations"] == 30


def test_readme_first_command_is_the_main_job():
    import re

    from helpers import REPO

    block = re.search(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S).group(1)
    first = block.splitlines()[0].split("#")[0].strip()
    assert first == "pip install . && rknnx bench --sample classifier"
    proc = cli("bench", "--sample", "classifier", "-n", "3", "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    assert "general-float32" in proc.stdout and "of host CPU per frame" in proc.stdout


def test_bench_on_a_chip_without_the_general_api():
    proc = cli("bench", "--sample", "tiny_relu", "-n", "5", env={**ENV, "RKNN_EMU_PLATFORM": "RV1106"})
    assert proc.returncode == 0, proc.stderr
    assert "RV1106 has no general API: model.run copies through zero-copy memory)" in proc.stdout


def test_help_says_the_whole_first_paragraph():
    proc = cli("doctor", "--help")
    assert "what to do about anything missing" in " ".join(proc.stdout.split())


# ---- issue 18, item 3: what zero-copy saves -----------------------------------------------------
def test_bench_reports_host_cpu_without_the_emulated_npu_work(tmp_path):
    proc = cli("bench", "--sample", "classifier", "-n", "3", "--warmup", "1", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["npu_work"]["emulated"] is True and "runs on this CPU" in d["npu_work"]["text"]
    for name, f in d["flows"].items():
        assert f["host_cpu_ns_per_frame"] > 0, name
        assert f["npu_cpu_ns_per_frame"] > 0, name       # the classifier's graph, emulated
        assert set(f["phases"]) == {"set", "sync", "npu", "run", "get", "python"}
    assert d["model"]["name"] == "classifier"
    proc = cli("bench", "--sample", "classifier", "-n", "3", "--warmup", "1")
    out = proc.stdout
    assert "npu (emul.)" in out.splitlines()[1] and "host CPU/frame" in out.splitlines()[7]
    assert "(emulated: the NPU's work" in out
    # the saving in words that read right, whichever way it goes
    assert re.search(r"^zero-copy (saves \S+ \S+ of host CPU per frame \(\d+\.\dx less: "
                     r"|costs \S+ \S+ more host CPU per frame \()", out, flags=re.M), out


def test_bench_plot_without_matplotlib_fails_before_measuring(tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; from rknnx.cli import main; "
            f"sys.exit(main(['bench', '--sample', 'classifier', '-n', '3', '--plot', "
            f"{str(tmp_path / 'p.png')!r}]))")
    proc = run_python(code, env=ENV)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "rknnx bench: error: plotting needs matplotlib: pip install 'rknnx[bench]' "
        "(or pip install matplotlib)")
    assert proc.stdout == "", "it measured first"


def test_readme_names_the_extras():
    from helpers import REPO

    text = (REPO / "README.md").read_text()
    assert "rknnx[bench]" in text and "rknnx[image]" in text


# ---- issue 18, item 7: CLI gaps -------------------------------------------------------------
def test_version():
    import rknnx

    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"rknnx {rknnx.__version__}"


def test_emulator_lists_the_samples():
    from rknnx.emulator import samples

    proc = cli("emulator")
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("samples: "))
    assert line == "samples: " + ", ".join(sorted(samples.ALL))


@pytest.mark.parametrize("command", [None, "info", "run", "bench", "doctor", "emulator"])
def test_help_has_no_rest_markup(command):
    proc = cli(*([command] if command else []), "--help")
    assert proc.returncode == 0, proc.stderr
    assert not re.search(r"``|:[a-z]+:`|`", proc.stdout), proc.stdout


def test_doctor_says_who_chose_the_runtime():
    proc = cli("doctor")
    assert "chosen by: the environment: RKNNX_RUNTIME=emulator" in proc.stdout
    proc = cli("doctor", env={"RKNNX_RUNTIME": None, "LD_LIBRARY_PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert "chosen by: the loader: no librknnrt on this host, which cannot be a Rockchip " \
        "board, so the bundled CPU emulator" in proc.stdout


def test_doctor_model_describes_the_model(tmp_path):
    from rknnx.emulator import samples

    model = tmp_path / "classifier.rknn"
    model.write_bytes(samples.classifier())
    proc = cli("doctor", "--model", str(model))
    assert proc.returncode == 0, proc.stderr
    assert ("model:     opens here (static shapes; built for RK3588; inputs "
            "image[1, 224, 224, 3]:int8)") in proc.stdout
    assert "           outputs logits[1, 1000]:int8" in proc.stdout
    assert "           NPU memory it takes: " in proc.stdout
    # a model of another chip: the emulator with no chip chosen plays the model's (issue 39,
    # item 5); a chosen chip refuses it
    other = tmp_path / "rk3566.rknn"
    other.write_bytes(samples.classifier(target="RK3566"))
    proc = cli("doctor", "--model", str(other), env={**ENV, "RKNN_EMU_PLATFORM": None})
    assert proc.returncode == 0, proc.stderr
    assert ("chip:      RK3566 (emulator personality: the model's chip, as no chip is chosen "
            "(RKNN_EMU_PLATFORM chooses one))") in proc.stdout.splitlines()
    assert "model:     opens here (static shapes; built for RK3566; inputs " in proc.stdout
    proc = cli("doctor", "--model", str(other), env={**ENV, "RKNN_EMU_PLATFORM": "RK3588"})
    assert proc.returncode == 1
    assert "model:     cannot be opened: " in proc.stdout and "RK3566" in proc.stdout


def test_doctor_names_this_runtimes_facts_by_library_not_version_alone(tmp_path):
    # librknnrt and the mini runtime librknnmrt share version numbers (both ship as 2.3.2 in
    # rknn-toolkit2 2.3.2): on an RK3588 board whose librknnrt says 2.3.2, the facts recorded
    # for librknnmrt 2.3.2 (a runtime of RV1106 and its kin) are not this runtime's
    from helpers import synthetic_rknn
    from rknnx.cli.doctor import file_lines

    path = tmp_path / "rk3588.rknn"
    path.write_bytes(synthetic_rknn("{'attrs': {}}"))
    lines = file_lines(str(path), "2.3.2 (429f97ae6b@2025-04-09T09:09:27)", "RK3588")
    mine = [ln for ln in lines if "this runtime" in ln]
    assert mine == ["           this runtime (2.3.2 on RK3588): no record of it in the facts "
                    "(recorded: librknnrt 1.4.0, librknnrt 1.5.2, librknnrt 1.6.0, librknnmrt "
                    "2.3.2)"], lines
    # on a chip the mini runtime serves, 2.3.2 is librknnmrt 2.3.2: its verdict (the file is
    # of a chip it does not serve)
    lines = file_lines(str(path), "2.3.2 (429f97ae6b@2025-04-09T09:09:27)", "RV1106")
    assert [ln for ln in lines if "this runtime" in ln] == [
        "           this runtime (librknnmrt 2.3.2): other chip (serves RV1103, RV1106, "
        "RV1103B, RV1106B, RK2118, not RK3588)"], lines
    # and a glibc runtime of the facts on its own chips
    lines = file_lines(str(path), "1.6.0 (9a7b5d24c@2023-12-13T17:31:11)", "RK3588")
    assert "           this runtime (librknnrt 1.6.0): loads (reads container 6)" in lines

@pytest.mark.skipif(not os.path.isfile("/proc/self/mem"), reason="needs Linux's /proc")
def test_doctor_model_that_cannot_be_read_still_gets_the_whole_report():
    # a regular file whose read fails (/proc/self/mem at offset 0: EIO, even for root, where
    # a file without read permission would still open): the model line says why, and the
    # report goes on to its end, as it did before the file's facts were added to it (its
    # last line here: the advice for a board without an NPU device node)
    proc = cli("doctor", "--model", "/proc/self/mem",
               env={**ENV, "RKNN_EMU_NO_DEVICE": "1"})
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "rknnx doctor: error" not in proc.stderr, \
        proc.stderr
    lines = proc.stdout.splitlines()
    assert "model:     cannot be opened: [Errno 5] Input/output error" in lines
    assert not any(ln.startswith("file:") for ln in lines)
    assert lines[-1].startswith("-> no NPU device node"), lines[-3:]


def test_doctor_model_of_a_vendor_file_says_which_runtimes_load_it():
    # the facts of rknnx.modelfile.RUNTIME_FACTS, as rknnx info and the load errors use
    # them: yolo640_rk3588 is a container-6 file, which 1.5.2 and 1.6.0 load and 1.4.0
    # refuses ('Invalid RKNN model version 6', the recorded 1.4.0 init)
    from helpers import NO_VENDOR_DATA, RKNN_MODELS
    if RKNN_MODELS is None:
        pytest.skip(NO_VENDOR_DATA)
    path = RKNN_MODELS / "toolkit-2.5.0" / "yolo640_rk3588.rknn"
    proc = cli("doctor", "--model", str(path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "file:      container 6, rknn-toolkit2 2.5.0, for RK3588; static shapes" in lines
    assert "           loads on:   librknnrt 1.5.2; librknnrt 1.6.0" in lines
    assert ("           refused by: librknnrt 1.4.0 (container 6: Invalid RKNN model "
            "version 6)") in lines
    plan = next(ln for ln in lines if "NPU memory it plans" in ln)
    assert re.search(r"weights \d+\.\d (KiB|MiB) \+ internal 4\.\d MiB", plan), plan
    # the emulator playing 1.5.2 is a runtime of the facts: its own verdict
    proc = cli("doctor", "--model", str(path), env={"RKNNX_RUNTIME": "emulator-1.5.2"})
    assert proc.returncode == 0, proc.stderr
    assert "           this runtime (librknnrt 1.5.2): loads (reads container 6)" in \
        proc.stdout.splitlines()
    # a file of a chip the emulator is not playing: what to set, and the file's facts
    other = RKNN_MODELS / "toolkit-2.5.0" / "cls_img_rv1106.rknn"
    proc = cli("doctor", "--model", str(other), env={**ENV, "RKNN_EMU_PLATFORM": "RK3588"})
    assert proc.returncode == 1
    assert "RKNN_EMU_PLATFORM=RV1106" in proc.stdout
    assert "file:      container 0x1004, rknn-toolkit2 2.5.0, for RV1106" in proc.stdout
    assert "           loads on:   librknnmrt 2.3.2" in proc.stdout.splitlines()


def test_doctor_gives_one_answer_for_an_int16_file_on_1_5_2(tmp_path):
    """librknnrt 1.5.2 (the emulator playing it) loads a file with int16 tensors but answers
    type 10 for them, which rknnx refuses (NotSupportedError): doctor's file section says
    the file is unusable there, as the model line does, and exits 1 (it said 'loads on:
    librknnrt 1.5.2' and then exited 1); the 2.x runtime opens it, exit 0."""
    from helpers import synthetic_rknn

    path = tmp_path / "w16a16i_dfp.rknn"
    path.write_bytes(synthetic_rknn("{'attrs': {}}", dtype=("int16", 5)))
    proc = cli("doctor", "--model", str(path),
               env={"RKNNX_RUNTIME": "emulator-1.5.2", "RKNN_EMU_PLATFORM": "RK3588"})
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert any(ln.startswith("model:     cannot be opened: ") and "type 10" in ln
               for ln in lines), lines
    assert "           loads on:   librknnrt 1.6.0" in lines
    assert ("           unusable:   librknnrt 1.5.2 (int16 tensors: it answers type 10 for "
            "them (INT4 in the 2.x header), which rknnx cannot hold in a numpy array; "
            "rknnx.Model refuses the file there (NotSupportedError))") in lines
    assert not any("loads on:" in ln and "1.5.2" in ln for ln in lines), lines
    proc = cli("doctor", "--model", str(path), env={**ENV, "RKNN_EMU_PLATFORM": "RK3588"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "model:     opens here (static shapes; " in proc.stdout


def test_run_says_when_it_resizes_and_letterboxes(tmp_path):
    from PIL import Image

    from rknnx.emulator import samples

    model = tmp_path / "classifier.rknn"
    model.write_bytes(samples.classifier())
    Image.fromarray(np.full((100, 120, 3), 200, np.uint8)).save(tmp_path / "cat.png")
    proc = cli("run", str(model), "-i", str(tmp_path / "cat.png"))
    assert proc.returncode == 0, proc.stderr
    assert ("input 'image': cat.png 120x100 resized to 224x224 (stretched: the aspect ratio "
            "changes; --letterbox keeps it)") in proc.stdout
    proc = cli("run", str(model), "-i", str(tmp_path / "cat.png"), "--letterbox")
    assert proc.returncode == 0, proc.stderr
    assert ("input 'image': cat.png 120x100 letterboxed to 224x224: scale 1.867 (to 224x187), "
            "padding top 18 bottom 19 left 0 right 0 (gray 114)") in proc.stdout


def test_run_and_detect_pad_with_the_gray_asked(tmp_path):
    from PIL import Image

    from rknnx.emulator import samples

    model = tmp_path / "classifier.rknn"
    model.write_bytes(samples.classifier())
    Image.fromarray(np.full((100, 120, 3), 200, np.uint8)).save(tmp_path / "cat.png")
    proc = cli("run", str(model), "-i", str(tmp_path / "cat.png"), "--letterbox", "--pad", "0")
    assert proc.returncode == 0, proc.stderr
    assert "padding top 18 bottom 19 left 0 right 0 (gray 0)" in proc.stdout
    for command in (("run", str(model), "--letterbox"),
                    ("detect", "--sample", "detector", "-o", str(tmp_path / "o.png"))):
        for bad, said in (("256", "256"), ("grey", "'grey'")):
            proc = cli(*command, "-i", str(tmp_path / "cat.png"), "--pad", bad)
            assert proc.returncode == 2
            assert f"--pad: expected a gray level 0-255, got {said}" in proc.stderr


def test_letterbox_keeps_the_aspect_ratio_and_pads_with_114():
    from PIL import Image

    from rknnx.cli.run import letterbox

    img = Image.fromarray(np.full((100, 120, 3), 200, np.uint8))
    arr, scale, pad = letterbox(img, 224, 224)
    assert arr.shape == (224, 224, 3) and arr.dtype == np.uint8
    assert scale == 224 / 120 and pad == (18, 19, 0, 0)
    assert (arr[:18] == 114).all() and (arr[224 - 19:] == 114).all()
    assert (arr[18:224 - 19] == 200).all()
    tall = Image.fromarray(np.full((640, 320, 3), 7, np.uint8))
    arr, scale, pad = letterbox(tall, 640, 640)
    assert scale == 1.0 and pad == (0, 0, 160, 160)
    assert (arr[:, :160] == 114).all() and (arr[:, 160:480] == 7).all()


def test_run_without_out_saves_nothing_and_says_so(tmp_path):
    import re as _re

    from helpers import REPO

    np.save(tmp_path / "x.npy", np.float32([[1, -2]]))
    proc = cli("run", "--sample", "tiny_relu", "-i", str(tmp_path / "x.npy"))
    assert proc.returncode == 0, proc.stderr
    assert "(nothing saved: --out DIR saves each output as DIR/output<i>_<name>.npy)" \
        in proc.stdout
    assert not any(p.suffix == ".npy" and p.name != "x.npy" for p in tmp_path.iterdir())
    row = next(ln for ln in (REPO / "README.md").read_text().splitlines()
               if ln.startswith("| `rknnx run "))
    assert _re.search(r"without `--out`,? nothing is saved|`--out DIR` saves", row), row


def _squares_png(path, w=900, h=700):
    """A dark picture with three bright squares spread diagonally; their boxes."""
    from PIL import Image

    img = np.random.default_rng(5).integers(0, 40, (h, w, 3), np.uint8)
    boxes = [(30, 40, 90, 100), (200, 220, 380, 400), (470, 460, 590, 580)]
    for (x1, y1, x2, y2), colour in zip(boxes, [(255, 255, 0), (255, 0, 0), (0, 255, 255)]):
        img[y1:y2, x1:x2] = colour
    Image.fromarray(img).save(path)
    return np.array(boxes, np.float32)


def _iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def test_detect_finds_the_squares_and_draws_them(tmp_path):
    from PIL import Image

    truth = _squares_png(tmp_path / "squares.png")
    out = tmp_path / "boxes.png"
    proc = cli("detect", "--sample", "detector", "-i", str(tmp_path / "squares.png"),
               "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith("square ")]
    assert len(lines) == 3, proc.stdout
    boxes = np.array([[float(v) for v in ln[2:]] for ln in lines])
    assert all(0.25 <= float(ln[1]) <= 1 for ln in lines)
    for t in truth:
        assert max(_iou(t, b) for b in boxes) >= 0.5, (t, boxes)
    assert "3 boxes (yolov8)" in proc.stdout
    drawn = np.asarray(Image.open(out).convert("RGB"))
    assert drawn.shape == (700, 900, 3)
    # the box outlines are drawn in class 0's colour around each square
    x1, y1 = (int(round(v)) for v in boxes[0][:2])
    assert (np.abs(drawn[max(y1, 1) - 1:y1 + 2, x1 + 5:x1 + 40].astype(int) -
                   (255, 56, 56)).sum(axis=-1) < 30).any()


def test_detect_with_names_and_family(tmp_path):
    _squares_png(tmp_path / "squares.png")
    (tmp_path / "names.txt").write_text("box\n")
    proc = cli("detect", "--sample", "detector", "-i", str(tmp_path / "squares.png"),
               "-o", str(tmp_path / "o.png"), "--names", str(tmp_path / "names.txt"),
               "--family", "yolov8", "--conf", "0.5")
    assert proc.returncode == 0, proc.stderr
    lines = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith("box ")]
    assert len(lines) == 3 and all(float(ln[1]) >= 0.5 for ln in lines), proc.stdout


@pytest.mark.parametrize("args, message", [
    (("--sample", "detector_random"), "family not given and the model's outputs fit yolov5 "
                                      "and yolox: pass family="),
    (("--sample", "detector", "--family", "yolov8-seg"), "these 6 outputs are not "
                                                        "yolov8-seg's"),
    (("--sample", "detector", "--conf", "2"), "--conf is a score threshold in 0..1; got 2.0"),
    (("--sample", "detector", "--iou", "1.5"), "--iou is an overlap threshold in 0..1; got "
                                               "1.5"),
    (("--sample", "detector", "--iou", "-0.1"), "--iou is an overlap threshold in 0..1; got "
                                                "-0.1"),
    (("--sample", "detector", "--names", "nope.txt"), "--names file 'nope.txt' does not exist"),
])
def test_detect_errors_are_one_line(tmp_path, args, message):
    _squares_png(tmp_path / "squares.png")
    proc = cli("detect", *args, "-i", str(tmp_path / "squares.png"), "-o",
               str(tmp_path / "o.png"))
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == f"rknnx detect: error: {message}" or \
        message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("ext", [".xbm", ".msp", ".bufr", ".nope"])
def test_detect_refuses_a_picture_format_before_touching_the_file(tmp_path, ext):
    """An extension Pillow knows and then refuses for RGB (or does not know): one line
    naming -o, the existing file left as it was, no temporary file left beside it."""
    _squares_png(tmp_path / "squares.png")
    old = tmp_path / f"old{ext}"
    old.write_bytes(b"the user's file")
    proc = cli("detect", "--sample", "detector", "-i", str(tmp_path / "squares.png"),
               "-o", str(old))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"rknnx detect: error: -o '{old}': Pillow does not write an RGB picture as " \
        f"{ext}" in proc.stderr, proc.stderr
    assert old.read_bytes() == b"the user's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["squares.png", old.name])


def test_detect_replaces_an_existing_picture_whole(tmp_path):
    """A picture written over an existing file goes through a temporary file renamed
    over it: the new picture, nothing left beside it."""
    from PIL import Image

    _squares_png(tmp_path / "squares.png")
    out = tmp_path / "o.png"
    out.write_bytes(b"old")
    proc = cli("detect", "--sample", "detector", "-i", str(tmp_path / "squares.png"),
               "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    with Image.open(out) as img:
        assert img.size == (900, 700)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.png", "squares.png"]


def test_detect_on_a_vendor_stand_in_says_its_boxes_are_not_the_networks(tmp_path):
    from helpers import RKNN_MODELS

    path = RKNN_MODELS / "toolkit-2.5.0" / "yolov8_det9_rk3588.rknn" if RKNN_MODELS else None
    if path is None or not path.is_file():
        pytest.skip("the vendor's yolov8_det9_rk3588.rknn is not here")
    _squares_png(tmp_path / "squares.png")
    proc = cli("detect", str(path), "-i", str(tmp_path / "squares.png"), "-o",
               str(tmp_path / "o.png"), env={**ENV, "RKNN_EMU_PLATFORM": "RK3588"})
    assert proc.returncode == 0, proc.stderr
    assert "these boxes are not the network's" in proc.stdout
    assert (tmp_path / "o.png").is_file()


def test_bench_detect_prints_each_stage():
    proc = cli("bench", "--sample", "detector", "--detect", "-n", "3", "--warmup", "1")
    assert proc.returncode == 0, proc.stderr
    for stage in ("letterbox", "npu (emul.)", "decode", "frame"):
        assert re.search(rf"^{re.escape(stage)}\s+\S+ \S*s\s+\S+ \S*s", proc.stdout, re.M), \
            proc.stdout
    assert "4 boxes a frame" in proc.stdout
