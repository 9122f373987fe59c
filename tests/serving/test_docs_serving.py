"""The documentation's serving examples run as written: the ```python extra=serve``` and
```python extra=ray``` blocks of docs/guide/ (tests/package/test_readme.py runs the plain
blocks and finds these by the same parser).  As for the README's (test_readme_serving.py),
the only change to the code is the port: a free one instead of 8000."""

from __future__ import annotations

import re
import socket

import pytest

from serving_helpers import need
from helpers import REPO, run_python

GUIDE = sorted((REPO / "docs" / "guide").glob("*.md"))
BLOCKS = {extra: [b for page in GUIDE
                  for b in re.findall(rf"```python extra={extra}\n(.*?)```", page.read_text(),
                                      flags=re.S)]
          for extra in ("serve", "ray")}


def test_the_guide_has_serving_examples():
    assert len(BLOCKS["serve"]) == 1 and len(BLOCKS["ray"]) == 1
    serve_page = (REPO / "docs" / "guide" / "serve.md").read_text()
    assert "rknnx serve --sample classifier" in serve_page


def test_guide_serve_example(cli_server, tmp_path):
    need("aiohttp", "serve")
    need("tritonclient.http", "serve")
    server = cli_server("--sample", "classifier")
    code = BLOCKS["serve"][0].replace("127.0.0.1:8000", server.url)
    proc = run_python(code, env={"RKNNX_RUNTIME": None}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("(1, 1000) ")
    assert server.stop()[0] == 0


def test_guide_ray_example(tmp_path):
    """Run with DeprecationWarning as an error in the example's own process: the guide's
    map_batches call uses no deprecated argument (``concurrency=`` is, from Ray 2.51)."""
    need("ray", "ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = BLOCKS["ray"][0].replace('"port": 8000', f'"port": {port}')
    code = ("import warnings\nwarnings.filterwarnings('error', message='.*concurrency.*')\n"
            + code)
    proc = run_python(code, env={"RKNNX_RUNTIME": None}, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    ids = [int(line.split()[0]) for line in lines if re.fullmatch(r"\d+ \d+", line)]
    assert sorted(ids) == list(range(8)), proc.stdout
    assert any(line.isdigit() for line in lines), proc.stdout
