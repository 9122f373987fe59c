"""The package imports in layers: the pure-Python modules work where the compiled extension
is missing, and the layers that need it say how to build it."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from helpers import REPO, run_python

PURE = ("rknnx", "rknnx.errors", "rknnx.emulator", "rknnx.emulator.builder",
        "rknnx.emulator.reference", "rknnx.emulator.samples", "rknnx.emulator.control",
        "rknnx.runtime", "rknnx.cli", "rknnx.lite", "rknnx.platforms")


@pytest.fixture(scope="module")
def unbuilt(tmp_path_factory):
    """The package's Python sources alone, as if the extension had failed to build."""
    root = tmp_path_factory.mktemp("unbuilt")
    shutil.copytree(REPO / "python" / "rknnx", root / "rknnx",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    assert not list((root / "rknnx").glob("_core*.so"))
    return root


def _run(root, code):
    prelude = f"import sys; sys.path.insert(0, {str(root)!r})\n"
    return run_python(prelude + textwrap.dedent(code))


def test_pure_layers_import_without_extension(unbuilt):
    proc = _run(unbuilt, f"""
        import importlib
        for name in {PURE!r}:
            importlib.import_module(name)
        import rknnx
        assert rknnx.__file__.startswith({str(unbuilt)!r}), rknnx.__file__
        assert "rknnx._core" not in sys.modules, "a pure layer imported the extension"
        from rknnx.emulator import samples, reference
        from rknnx.emulator.builder import decode
        assert decode(samples.tiny_relu()).inputs
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok"]


def test_lowlevel_without_extension_says_how_to_build(unbuilt):
    proc = _run(unbuilt, """
        import rknnx
        try:
            rknnx.lowlevel
        except ImportError as exc:
            print(exc)
        else:
            raise SystemExit("imported a missing extension")
    """)
    assert proc.returncode == 0, proc.stderr
    assert "rknnx._core" in proc.stdout and "pip install ." in proc.stdout


def test_top_level_names_resolve():
    import rknnx

    for name in rknnx.__all__:
        assert getattr(rknnx, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'Contxt'"):
        rknnx.Contxt  # noqa: B018
