"""The README's and the documentation's examples run as written (on the emulator), and the
README's two set-up commands are the ones .ci/run uses.

Fenced blocks of README.md, docs/index.md, docs/board.md and docs/guide/*.md, by their
info string:

- ```` ```python ````: run in a fresh interpreter, in an empty directory, with no variable
  choosing the runtime (a PC falls back to the emulator by itself);
- ```` ```python vendor-file ````: the same, with a vendor ``.rknn`` as ``yolov5s.rknn`` in
  that directory (skipped, saying so, without the vendor corpus);
- ```` ```python board ```` and ```` ```bash board ````: only a board runs them; never run
  here, but each must say so in its first line;
- ```` ```python extra=serve ```` / ```` extra=ray ````: run by tests/serving (those extras);
- ```` ```python extra=video ````: run as plain blocks where PyAV (the ``video`` extra, in
  the ``test`` extra too) is installed, skipped naming it where it is not (a wheel's smoke
  set in a bare venv);
- ```` ```bash runnable ````: every line runs, in order, in one shell in an empty directory
  (```` ```bash runnable extra=video ````: where PyAV is installed, as above);
- other ```` ```bash ```` blocks are shown only (a board, a clone, a server that blocks).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import NO_VENDOR_DATA, REPO, RKNN_MODELS, run_python

README = (REPO / "README.md").read_text()
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", DOCS / "index.md", DOCS / "board.md",
         *sorted((DOCS / "guide").glob("*.md"))]
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)

#: the marks a python block may carry (the info string after the language)
PYTHON_MARKS = {"", "vendor-file", "board", "extra=serve", "extra=ray", "extra=video"}
BASH_MARKS = {"", "runnable", "runnable extra=video", "board"}
#: the vendor file the vendor-file blocks get (a 640x640 detector of toolkit 2.5.0, RK3588)
VENDOR_FILE = "toolkit-2.5.0/yolo640_rk3588.rknn"


def fences(path: Path):
    """(language, mark, body, line number) of each fenced block of a Markdown page."""
    out, lines = [], path.read_text().splitlines()
    k = 0
    while k < len(lines):
        m = re.match(r"^```(\w*)\s*(.*?)\s*$", lines[k])
        if m and m.group(1):
            start = k
            k += 1
            body = []
            while k < len(lines) and not lines[k].startswith("```"):
                body.append(lines[k])
                k += 1
            out.append((m.group(1), m.group(2), "\n".join(body) + "\n", start + 1))
        k += 1
    return out


def _has_pyav() -> bool:
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


#: why a block marked extra=video is skipped here, or None where it runs
NO_PYAV = None if _has_pyav() else \
    "needs PyAV (the video extra: pip install 'rknnx[video]'), not installed here"


def _blocks(language: str, mark: str, *, video: bool = False):
    """The blocks of `language` marked `mark` (and, with `video`, those marked `mark` plus
    extra=video, skipped naming PyAV where it is not installed)."""
    marks = {mark: ()}
    if video:
        marks[(mark + " extra=video").strip()] = \
            () if NO_PYAV is None else (pytest.mark.skip(reason=NO_PYAV),)
    return [pytest.param(body, id=f"{path.relative_to(REPO)}:{line}", marks=marks[mk])
            for path in PAGES for lang, mk, body, line in fences(path)
            if lang == language and mk in marks]


def test_readme_has_examples():
    assert BLOCKS
    assert _blocks("python", "")


def test_the_blocks_that_need_pyav_are_marked():
    # every plain block runs without PyAV (tests/package/test_readme.py's own run with
    # `av` hidden, below); those that read or write video say extra=video
    video = [p.id for p in _blocks("python", "extra=video") + _blocks("bash", "runnable extra=video")]
    assert "docs/guide/streams.md:9" in video and "docs/guide/streams.md:124" in video
    assert any(i.startswith("docs/guide/streams.md:") for i in
               (p.id for p in _blocks("bash", "runnable extra=video")))


@pytest.mark.parametrize("code", _blocks("python", ""))
def test_plain_examples_run_without_pyav(code, tmp_path):
    # a bare install (a wheel's smoke set, a board without the video extra) runs every
    # plain block: `av` hidden from the child (an import of it raises ImportError)
    proc = run_python("import sys\nsys.modules['av'] = None\n" + code,
                      env={"RKNNX_RUNTIME": None}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_block_carries_a_known_mark(path):
    for lang, mark, body, line in fences(path):
        if lang == "python":
            assert mark in PYTHON_MARKS, f"{path.name}:{line}: python block marked {mark!r}"
        elif lang == "bash":
            assert mark in BASH_MARKS, f"{path.name}:{line}: bash block marked {mark!r}"
        if mark == "board":
            first = body.splitlines()[0] if body.strip() else ""
            assert first.lstrip().startswith("#") and "board" in first, \
                f"{path.name}:{line}: a block only a board runs must say so in its first line"


@pytest.mark.parametrize("code", _blocks("python", "", video=True))
def test_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # as written: no environment variable chooses the runtime (a PC falls back to the
    # emulator by itself)
    proc = run_python(code, env={"RKNNX_RUNTIME": None}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("code", _blocks("python", "vendor-file"))
def test_vendor_file_example_runs(code, tmp_path):
    src = RKNN_MODELS / VENDOR_FILE if RKNN_MODELS is not None else None
    if src is None or not src.is_file():
        pytest.skip(NO_VENDOR_DATA)
    shutil.copy(src, tmp_path / "yolov5s.rknn")
    proc = run_python(code, env={"RKNNX_RUNTIME": None}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("script", _blocks("bash", "runnable", video=True))
def test_runnable_shell_block_runs(script, tmp_path):
    env = dict(os.environ)
    env.pop("RKNNX_RUNTIME", None)
    # the interpreter's scripts first: `rknnx` and `python` are this install's
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr


def test_ci_runs_the_readme_test_command():
    first_block = re.search(r"```bash\n(.*?)```", README, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci


def test_ci_builds_the_docs_with_warnings_as_errors():
    ci = (REPO / ".ci" / "run").read_text()
    assert "sphinx-build -W -b html docs build/docs" in ci
