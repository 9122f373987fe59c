"""The README's Python examples run as written (on the emulator), and its two set-up
commands are the ones .ci/run uses."""

from __future__ import annotations

import re

import pytest

from helpers import REPO, run_python

README = (REPO / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_readme_has_examples():
    assert BLOCKS


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_example_runs(i, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # as written: no environment variable chooses the runtime (a PC falls back to the
    # emulator by itself)
    proc = run_python(BLOCKS[i], env={"RKNNX_RUNTIME": None})
    assert proc.returncode == 0, proc.stderr


def test_ci_runs_the_readme_test_command():
    first_block = re.search(r"```bash\n(.*?)```", README, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci
