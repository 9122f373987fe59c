"""The `rknnx` command as a new user meets it (issue 27, item 3): --verbose after the
sub-command, doctor --strict's words and where to get librknnrt, warnings as one line,
a grayscale image said in one line, bench lines that fit a terminal."""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers import run_python

ENV = {"RKNNX_RUNTIME": "emulator"}


def cli(*args, env=ENV, cwd=None):
    code = f"import sys; from rknnx.cli import main; sys.exit(main({list(args)!r}))"
    return run_python(code, env=env, cwd=cwd)


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbose_before_or_after_the_subcommand(tmp_path, where):
    bad = tmp_path / "bad.rknn"
    bad.write_bytes(b"not a model at all")
    args = ["--verbose", "info", str(bad)] if where == "before" else ["info", str(bad),
                                                                      "--verbose"]
    proc = cli(*args)
    assert proc.returncode != 0
    assert "unrecognized arguments" not in proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr      # what --verbose adds
    quiet = cli("info", str(bad))
    assert quiet.returncode == 1 and "Traceback" not in quiet.stderr
    # the runtime's own E RKNN: lines, then rknnx's one line
    ours = [ln for ln in quiet.stderr.splitlines() if not ln.startswith("E RKNN: ")]
    assert len(ours) == 1 and ours[0].startswith("rknnx info: error: "), quiet.stderr


def test_doctor_strict_never_says_it_uses_the_emulator_it_refuses():
    """On a PC (no librknnrt): one error saying --strict refuses the emulator and where a
    board gets librknnrt; no "using the bundled CPU emulator" line before it."""
    proc = cli("doctor", "--strict", env={"RKNNX_RUNTIME": None})
    assert proc.returncode == 1
    assert "using the bundled CPU emulator" not in proc.stderr + proc.stdout
    assert "--strict does not fall back to the bundled CPU emulator" in proc.stderr
    assert "github.com/airockchip/rknn-toolkit2" in proc.stderr
    assert "librknnrt.so" in proc.stderr


def test_doctor_names_where_to_get_librknnrt():
    proc = cli("doctor", env={"RKNNX_RUNTIME": None})
    assert proc.returncode == 0, proc.stderr
    advice = [line for line in proc.stdout.splitlines() if line.startswith("-> ")]
    assert any("install librknnrt.so into /usr/lib" in a and
               "rknpu2/runtime/Linux/librknn_api/aarch64/librknnrt.so" in a for a in advice), \
        proc.stdout


def test_run_shows_a_warning_as_one_line(tmp_path):
    """A float image of 0..1 into a pixel input warns; the CLI prints it as one `W rknnx:`
    line, without Python's file name, line number and source line."""
    x = np.random.default_rng(0).random((1, 224, 224, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = run_python("import sys, warnings; warnings.resetwarnings(); "
                      "from rknnx.cli import main; "
                      f"sys.exit(main(['run', '--sample', 'classifier', '-i', "
                      f"{str(tmp_path / 'x.npy')!r}]))", env=ENV)
    assert proc.returncode == 0, proc.stderr
    w = [line for line in proc.stderr.splitlines() if "takes pixels in 0..255" in line]
    assert len(w) == 1 and w[0].startswith("W rknnx: input 0 ('image') takes pixels"), \
        proc.stderr
    assert "UserWarning" not in proc.stderr and ".py:" not in proc.stderr, proc.stderr


def test_run_says_a_grayscale_image_becomes_three_channels(tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image

    Image.fromarray(np.full((224, 224), 128, np.uint8), mode="L").save(tmp_path / "g.png")
    proc = cli("run", "--sample", "classifier", "-i", str(tmp_path / "g.png"))
    assert proc.returncode == 0, proc.stderr
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if "grayscale" in line]
    assert said == ["input 'image': g.png is grayscale; its one channel is repeated into R, "
                    "G and B"], proc.stdout + proc.stderr


def test_bench_lines_fit_a_terminal():
    proc = cli("bench", "--sample", "tiny_relu", "-n", "5", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines
    too_wide = [line for line in lines if len(line) > 100]
    assert not too_wide, "\n".join(too_wide)


def test_quick_suite_never_writes_the_tracked_results(tmp_path):
    """bench/suite.py --quick without --out writes under the temporary directory; a full run
    writes bench/results (the figures the docs show); --out wins over both."""
    import importlib.util
    import tempfile
    from pathlib import Path

    from helpers import REPO

    spec = importlib.util.spec_from_file_location("rknnx_bench_suite", REPO / "bench" / "suite.py")
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    quick = suite.results_dir(None, quick=True)
    assert quick.parent == Path(tempfile.gettempdir())
    assert REPO / "bench" / "results" not in (quick, *quick.parents)
    assert suite.results_dir(None, quick=False) == REPO / "bench" / "results"
    assert suite.results_dir(str(tmp_path), quick=True) == tmp_path
