"""The suite collects under the pytest a board's Debian has (bookworm: 7.2.1), which asks
the id of an empty parameter set's placeholder: the vendor-file tests' parameters are empty
where the vendor data is absent (a root built to test a vendor runtime)."""

from __future__ import annotations

import subprocess
import sys

from helpers import REPO, path_id


def test_path_id_takes_what_pytest_gives_an_empty_parameter_set():
    assert path_id(REPO / "x" / "cls_img_rk3588.rknn") == "cls_img_rk3588"
    assert isinstance(path_id(object()), str)


def test_an_empty_file_parameter_set_collects_with_the_running_pytest(tmp_path):
    (tmp_path / "test_empty.py").write_text(
        "import sys, pytest\n"
        f"sys.path.insert(0, {str(REPO / 'tests')!r})\n"
        "from helpers import path_id\n"
        "@pytest.mark.parametrize('kind', ['a', 'b'])\n"
        "@pytest.mark.parametrize('path', [], ids=path_id)\n"
        "def test_x(path, kind):\n"
        "    pass\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--rootdir", str(tmp_path), str(tmp_path / "test_empty.py")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "2 skipped" in p.stdout, p.stdout[-2000:]


def _pytest(*args):
    """pytest on one quick file of the suite, as a user starts it (not as a worker of this
    run: no PYTEST_XDIST_* in its environment)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args, "tests/package/test_errors.py"],
                          capture_output=True, text=True, timeout=600, cwd=REPO, env=env)


def test_the_suites_options_run_without_xdist():
    """pyproject.toml's options work under a pytest without pytest-xdist (a board's Debian
    pytest; `pip install .` does not bring xdist): the suite runs in one process, where
    `-n auto --dist loadgroup` in addopts stopped it at once ('unrecognized arguments')."""
    p = _pytest("-p", "no:xdist")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-2000:]
    assert "unrecognized arguments" not in out and "bringing up nodes" not in out
    assert " passed" in p.stdout


def test_the_suite_runs_in_parallel_where_xdist_is_installed():
    """Where xdist is loaded, `python -m pytest` runs in workers, one per core, as the README
    says (tests/conftest.py adds `-n auto --dist loadgroup`); `-n 0` runs in one process."""
    pytest = __import__("pytest")
    pytest.importorskip("xdist", reason="pytest-xdist is not installed here")
    p = _pytest()
    assert p.returncode == 0, (p.stdout + p.stderr)[-2000:]
    assert "bringing up nodes" in p.stdout and " passed" in p.stdout
    p = _pytest("-n", "0")
    assert p.returncode == 0 and "bringing up nodes" not in p.stdout, p.stdout[-2000:]
