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
    ]:
        proc = cli("serve", *args, prelude=NO_AIOHTTP)     # checked before the extra is
        assert proc.returncode == 1, (args, proc.stderr)
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("rknnx serve: error:") and words in last, (args, last)


@pytest.mark.parametrize("args,words", [
    (("--port", "99999"), "argument --port: must be 0..65535; got 99999"),
    (("--port", "-1"), "argument --port: must be 0..65535; got -1"),
    (("--port", "80x"), "argument --port: expected an integer; got '80x'"),
    (("--max-request-mb", "-5"), "argument --max-request-mb: must be a finite number > 0; got -5"),
    (("--max-request-mb", "inf"),
     "argument --max-request-mb: must be a finite number > 0; got inf"),
    (("--max-request-mb", "0"),
     "argument --max-request-mb: must be a finite number > 0; got 0"),
    (("--max-request-mb", "nan"),
     "argument --max-request-mb: must be a finite number > 0; got nan"),
    (("--shutdown-timeout", "-1"),
     "argument --shutdown-timeout: must be a finite number >= 0; got -1"),
    (("--shutdown-timeout", "nan"),
     "argument --shutdown-timeout: must be a finite number >= 0; got nan"),
    (("--shutdown-timeout", "inf"),
     "argument --shutdown-timeout: must be a finite number >= 0; got inf"),
    (("--body-timeout", "0"), "argument --body-timeout: must be a finite number > 0; got 0"),
    (("--workers", "0"), "argument --workers: must be >= 1; got 0"),
    (("--queue", "-1"), "argument --queue: must be >= 0; got -1"),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_serve_refuses_bad_numbers_in_one_line(args, words):
    # argparse's refusal: the usage line, then one error line, exit status 2; no traceback
    # and no model opened (checked before the extra is imported)
    proc = cli("serve", "--sample", "tiny_relu", *args, prelude=NO_AIOHTTP)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("usage: rknnx serve"), lines
    assert lines[-1] == f"rknnx serve: error: {words}", lines
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_serve_refuses_a_model_named_dot_dot(tmp_path):
    # checked before the file and the extra: a base install says the same
    for name in ("..", "."):
        proc = cli("serve", f"{name}={tmp_path / 'm.rknn'}", prelude=NO_AIOHTTP)
        last = proc.stderr.strip().splitlines()[-1]
        assert proc.returncode == 1, proc.stderr
        assert last.startswith(f"rknnx serve: error: model name '{name}'"), last
        assert "relative path" in last and "Traceback" not in proc.stderr
