"""What IDEs and type checkers see of the package: every lazily resolved name of
``rknnx`` is also imported for type checkers (else they see ``Any``), and the public
modules' namespaces show their public names in tab completion, not their imports."""

from __future__ import annotations

import ast
import importlib

import pytest

from helpers import REPO

PUBLIC = ["rknnx", "rknnx.errors", "rknnx.platforms", "rknnx.runtime", "rknnx.lowlevel",
          "rknnx.linalg", "rknnx.layout", "rknnx.custom", "rknnx.benchmark", "rknnx.emulator",
          "rknnx.emulator.builder", "rknnx.emulator.reference", "rknnx.emulator.control",
          "rknnx.emulator.samples", "rknnx.ort", "rknnx.modelfile"]


def test_type_checkers_see_every_lazy_name():
    import rknnx

    tree = ast.parse((REPO / "python" / "rknnx" / "__init__.py").read_text())
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in ast.walk(node):
                if isinstance(imp, (ast.Import, ast.ImportFrom)):
                    seen |= {a.asname or a.name for a in imp.names}
    assert seen == set(rknnx._LAZY)


@pytest.mark.parametrize("name", PUBLIC)
def test_tab_completion_shows_the_public_names(name):
    mod = importlib.import_module(name)
    shown = set(dir(mod))
    assert shown == set(mod.__all__)
    for leak in ("np", "Optional", "Sequence", "Tuple", "annotations", "os", "importlib"):
        assert leak not in shown, (name, leak)


@pytest.mark.parametrize("cls, attrs", [
    ("Model", ["inputs", "outputs", "chip", "closed", "dynamic", "shape_sets"]),
    ("ZeroCopySession", ["inputs", "outputs", "closed", "perf"]),
    ("Pool", ["model", "workers"])])
def test_help_documents_the_attributes(cls, attrs):
    import inspect

    import rknnx

    doc = inspect.getdoc(getattr(rknnx, cls))
    section = doc.split("Attributes\n----------\n", 1)[1]
    for a in attrs:
        assert any(line.startswith(a) or f", {a}" in line.split(" : ")[0]
                   for line in section.splitlines()), (cls, a)


def test_zero_copy_options_are_typed():
    import inspect

    import rknnx

    params = inspect.signature(rknnx.Model.zero_copy).parameters
    assert {"outputs", "input_dtypes", "cacheable", "flags", "sync", "inputs"} <= set(params)
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for n, p in params.items()
               if n != "self")
