"""`rknnx serve` and `rknnx.serve` / `rknnx.ray` on a base install: without their extra
they say what to install (one line, no traceback); the arguments are checked before any
model opens.  Runs in the main test run (the server itself is tested in tests/serving)."""

from __future__ import annotations

import pytest

from helpers import run_python

ENV = {"RKNNX_RUNTIME": "emulator"}
# as if the extra were not installed: `import aiohttp` / `import ray` fail
NO_AIOHTTP = "import sys; sys.modules['aiohttp'] = None; "
NO_RAY = "import sys; sys.modules['ray'] = None; "


def cli(*args, prelude=""):
    code = prelude + f"import sys; from rknnx.cli import main; sys.exit(main({list(args)!r}))"
    return run_python(code, env=ENV)


def test_serve_without_the_extra_says_what_to_install():
    proc = cli("serve", "--sample", "tiny_relu", prelude=NO_AIOHTTP)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        'rknnx serve: error: rknnx serve needs aiohttp, the serve extra: '
        'pip install "rknnx[serve]"')
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("module,prelude,words", [
    ("rknnx.serve", NO_AIOHTTP, "rknnx.serve needs aiohttp: pip install 'rknnx[serve]'"),
    ("rknnx.ray", NO_RAY, "rknnx.ray needs Ray: pip install 'rknnx[ray]'"),
])
def test_modules_without_their_extra_say_what_to_install(module, prelude, words):
    proc = run_python(prelude + f"import {module}", env=ENV)
    assert proc.returncode == 1 and words in proc.stderr.splitlines()[-1], proc.stderr


def test_serve_help_and_argument_errors():
    proc = cli("serve", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: rknnx serve")
    assert "127.0.0.1" in proc.stdout and "--sample" in proc.stdout
    for args, words in [
        ((), "give at least one MODEL file (or --sample NAME)"),
        (("missing.rknn",), "model file 'missing.rknn' does not exist"),
        (("--sample", "nope"), "no sample 'nope'"),
        (("--sample", "tiny_relu", "--sample", "tiny_relu"), "given twice"),
        (("--sample", "tiny_relu", "--workers", "0"), "--workers must be >= 1"),
    ]:
        proc = cli("serve", *args, prelude=NO_AIOHTTP)     # checked before the extra is
        assert proc.returncode == 1, (args, proc.stderr)
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("rknnx serve: error:") and words in last, (args, last)
