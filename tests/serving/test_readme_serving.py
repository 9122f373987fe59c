"""The README's serving examples run as written (```python extra=serve``` and
```python extra=ray``` blocks: tests/package/test_readme.py runs the plain ```python```
blocks, which need no extra).  The serve block talks to `rknnx serve --sample classifier`
started here, as its bash block says; the only change to the code is the port (a free one
instead of 8000, which something else on the machine may hold)."""

from __future__ import annotations

import re
import socket

import pytest

from serving_helpers import need
from helpers import REPO, run_python

README = (REPO / "README.md").read_text()
BLOCKS = {extra: re.findall(rf"```python extra={extra}\n(.*?)```", README, flags=re.S)
          for extra in ("serve", "ray")}


def test_readme_has_serving_examples():
    assert len(BLOCKS["serve"]) == 1 and len(BLOCKS["ray"]) == 1
    bash = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    assert any("rknnx serve --sample classifier" in b for b in bash)


def test_readme_serve_example(cli_server, tmp_path):
    need("aiohttp", "serve")
    need("tritonclient.http", "serve")
    server = cli_server("--sample", "classifier")
    code = BLOCKS["serve"][0].replace("127.0.0.1:8000", server.url)
    proc = run_python(code, env={"RKNNX_RUNTIME": None}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("(1, 1000) ")
    assert server.stop()[0] == 0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_readme_ray_example(tmp_path):
    need("ray", "ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = BLOCKS["ray"][0].replace('"port": 8000', f'"port": {port}')
    proc = run_python(code, env={"RKNNX_RUNTIME": None}, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()           # (Ray's workers print lines of their own)
    ids = [int(line.split()[0]) for line in lines if re.fullmatch(r"\d+ \d+", line)]
    assert sorted(ids) == list(range(8)), proc.stdout      # every row, in Ray's order
    assert any(line.isdigit() for line in lines), proc.stdout     # the Serve handle's answer
