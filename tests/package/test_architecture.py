"""docs/architecture.md is kept true: its layer list against the import graph of the
sources (imports inside functions included), every module of the package listed once,
every backticked name of the page resolving (a module imports, an attribute exists, a path
is there, a C or Python name occurs in the sources), every folder of tests/ listed; and
the package has no import loop.

The import graph has one home, scripts/measure-house (loaded here as a module)."""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import re

import pytest

from helpers import REPO

DOC = REPO / "docs" / "architecture.md"
PKG = REPO / "python" / "rknnx"


def _measure():
    path = REPO / "scripts" / "measure-house"
    loader = importlib.machinery.SourceFileLoader("measure_house", str(path))
    spec = importlib.util.spec_from_loader("measure_house", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


MEASURE = _measure()
TEXT = DOC.read_text()


def _block(first_line_start: str) -> list:
    """The lines of the fenced block of the page whose first line starts so."""
    for block in re.findall(r"^```\n(.*?)^```", TEXT, re.M | re.S):
        lines = block.splitlines()
        if lines and lines[0].startswith(first_line_start):
            return lines
    raise AssertionError(f"docs/architecture.md has no block starting {first_line_start!r}")


def _first_column(line: str) -> str:
    return re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]


def doc_layers() -> list:
    """The layers of the page, top first: each a list of entries (``model.py``,
    ``_core.pyx``, ``cli/``)."""
    layers, more = [], False
    for line in _block("rknnx ")[1:]:
        if re.match(r"  \S", line):
            column = _first_column(line)
            entries = [e.strip() for e in column.split(",") if e.strip()]
            if more:                         # "a.py, b.py," goes on on the next line
                layers[-1] += entries
            else:
                layers.append(entries)
            more = column.endswith(",")
    return layers


def _entry_module(entry: str) -> str:
    if entry == "__init__.py":
        return "rknnx"
    if entry.endswith("/"):
        return "rknnx." + entry[:-1]
    stem, dot, ext = entry.rpartition(".")
    assert dot and ext in ("py", "pyx"), f"layer entry {entry!r}: expected x.py, x.pyx or x/"
    return "rknnx." + stem


def _where(module: str, entries: dict):
    """(layer index, entry) of a module: its own entry, or the package entry it is in."""
    while module:
        if module in entries:
            return entries[module]
        module = module.rpartition(".")[0]
    return None


@pytest.fixture(scope="module")
def layers():
    out = {}
    for k, layer in enumerate(doc_layers()):
        for entry in layer:
            module = _entry_module(entry)
            assert module not in out, f"{entry} is listed twice"
            out[module] = (k, entry)
    return out


def test_the_layer_list_names_every_module_once(layers):
    modules = MEASURE.all_modules()
    unlisted = sorted(m for m in modules if _where(m, layers) is None)
    assert not unlisted, f"modules missing from the layer list of docs/architecture.md: {unlisted}"
    for module, (_, entry) in layers.items():
        packaged = entry.endswith("/")
        assert module in modules, f"{entry}: no such module in python/rknnx or rknn_ext/rknnx"
        if packaged:
            assert (PKG / entry / "__init__.py").is_file(), entry
        elif entry.endswith(".pyx"):
            assert (REPO / "rknn_ext" / "rknnx" / entry).is_file(), entry


def test_every_import_goes_down(layers):
    graph = MEASURE.import_graph()
    up = []
    for src, targets in sorted(graph.items()):
        k_src, e_src = _where(src, layers)
        for dst, where, inside in targets:
            k_dst, e_dst = _where(dst, layers)
            if e_src == e_dst and e_src.endswith("/"):
                continue                 # inside one package: its own business
            if k_dst <= k_src:
                up.append(f"{src} ({e_src}) imports {dst} ({e_dst}) at {where}"
                          + (" inside a function" if inside else ""))
    assert not up, "imports that do not go down the layers of docs/architecture.md:\n" + \
        "\n".join(up)


def test_there_is_no_import_loop():
    graph = MEASURE.import_graph()
    assert MEASURE.import_loops(graph) == []


def test_the_import_graph_sees_lazy_imports():
    """The graph is not blind: an import inside a function, the package's lazy table and
    a compiled module's imports are edges (else the two tests above could not fail)."""
    graph = MEASURE.import_graph()
    lazy = {(src, dst) for src, ts in graph.items() for dst, _, inside in ts if inside}
    assert ("rknnx", "rknnx.model") in lazy               # __init__'s PEP 562 table
    assert ("rknnx.modelfile", "rknnx._rknnfile") in lazy  # inside a function
    assert any(dst == "rknnx.errors" for dst, _, _ in graph["rknnx._core"])
    loop = dict(graph)
    loop["rknnx.errors"] = [("rknnx._core", "errors.py:1", True)]
    assert any({"rknnx._core", "rknnx.errors"} <= set(c) for c in MEASURE.import_loops(loop))


def test_only_lowlevel_imports_the_runtime_binding():
    """The facade reaches the runtime only through rknnx.lowlevel."""
    graph = MEASURE.import_graph()
    users = sorted({src for src, ts in graph.items() for dst, _, _ in ts if dst == "rknnx._core"})
    assert users == ["rknnx.lowlevel"]


def test_every_test_folder_is_listed():
    lines = _block("python/rknnx/")
    start = next(i for i, line in enumerate(lines) if line.startswith("tests/"))
    listed = set()
    for line in lines[start + 1:]:
        if not line.startswith(" "):
            break
        if re.match(r"  \S", line):
            listed.add(_first_column(line).rstrip("/"))
    real = {p.name for p in (REPO / "tests").iterdir()
            if p.is_dir() and not p.name.startswith((".", "__"))}
    assert listed == real


# -- backticked names ----------------------------------------------------------------------

_SUFFIXES = (".py", ".pyx", ".pxd", ".pxi", ".pyi", ".h", ".c", ".md", ".json", ".map",
             ".txt", ".toml")
_SOURCE_DIRS = ("python", "rknn_ext", "include", "emulator", "tests", "bench", "scripts")


@pytest.fixture(scope="module")
def sources():
    files = [p for d in _SOURCE_DIRS for p in (REPO / d).rglob("*")
             if p.is_file() and p.suffix in _SUFFIXES and "__pycache__" not in p.parts
             and p.name != "test_architecture.py"]      # its examples of false names
    files += [REPO / "CMakeLists.txt", REPO / "pyproject.toml"]
    return {"text": "\n".join(p.read_text(errors="replace") for p in files),
            "names": {p.name for p in files}}


def _spans() -> list:
    return sorted(set(re.findall(r"`([^`\n]+)`", TEXT)))


@functools.lru_cache(maxsize=None)
def _top_level_names() -> dict:
    """name -> the first module of the package (or compiled module's stub) defining it at
    its top."""
    stubs = {p: "rknnx." + p.stem for p in sorted(PKG.glob("_*.pyi"))}
    files = {p: m for m, p in MEASURE.python_modules().items()}
    out = {}
    for path, module in list(files.items()) + list(stubs.items()):
        for node in ast.parse(path.read_text()).body:
            targets = []
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                targets = [node.name]
            elif isinstance(node, ast.Assign):
                targets = [getattr(t, "id", None) for t in node.targets]
            elif isinstance(node, ast.AnnAssign):
                targets = [getattr(node.target, "id", None)]
            for name in targets:
                out.setdefault(name, module)
    return out


def _defining_module(name: str):
    """The module of the package (or the compiled one's stub) defining `name` at its top."""
    return _top_level_names().get(name)


def _has_attribute(obj, attr: str) -> bool:
    if hasattr(obj, attr):
        return True
    if inspect.isclass(obj):                 # an attribute each instance sets itself
        try:
            src = inspect.getsource(obj)
        except (OSError, TypeError):
            return False
        return re.search(rf"\bself\.{re.escape(attr)}\s*[:=]", src) is not None
    return False


def _resolve_dotted(name: str):
    """None when `name` (``rknnx.runtime.note_fallback``, ``Model.close``,
    ``_guard.Role``) resolves, else why not."""
    parts = name.split(".")
    if not parts[0].startswith("rknnx") and _defining_module(parts[0]) is None \
            and importlib.util.find_spec(parts[0]) is not None:
        head, rest = importlib.import_module(parts[0]), parts[1:]   # the standard library's
        for k in range(len(rest), 0, -1):
            try:
                head, rest = importlib.import_module(".".join(parts[:k + 1])), parts[k + 1:]
                break
            except ImportError:
                continue
        return _resolve_attributes(head, rest)
    head = None
    for k in range(len(parts), 0, -1):       # the longest prefix that is a module
        for prefix in ("", "rknnx.", "rknnx.emulator."):
            candidate = prefix + ".".join(parts[:k])
            if not candidate.startswith("rknnx"):
                continue
            try:
                head = importlib.import_module(candidate)
            except ImportError:
                continue
            rest = parts[k:]
            break
        if head is not None:
            break
    if head is None:
        module = _defining_module(parts[0])
        if module is None:
            return f"no module of rknnx defines {parts[0]!r}"
        head, rest = importlib.import_module(module), parts
    return _resolve_attributes(head, rest)


def _resolve_attributes(obj, rest):
    for attr in rest:
        if not _has_attribute(obj, attr):
            return f"{getattr(obj, '__name__', obj)!r} has no attribute {attr!r}"
        obj = getattr(obj, attr, None)
    return None


def _check_span(span: str, sources):
    """None when the span resolves (or is not a name), else why not."""
    text = span.strip()
    if re.search(r"[\s<>*]", text) and not re.match(r"^[\w.]+\(.*\)$", text):
        return None                          # prose, a command, a pattern: not one name
    if text.startswith(".") or text.endswith(".so"):
        return None                          # a suffix; a library of the system
    path = text.rstrip("/")
    roots = (REPO, REPO / "python", PKG)
    if "/" in path and any((root / path.split("/")[0]).is_dir() for root in roots):
        return None if any((root / path).exists() for root in roots) else f"no path {text}"
    if "/" in path:
        return None                          # A_X/Y: two names in one
    if path.endswith(_SUFFIXES):
        return None if path in sources["names"] else f"no file {path} in the sources"
    call = re.match(r"^([A-Za-z_][\w.]*)\(.*\)(\.[\w.]+)?$", text)
    if call:
        text = call.group(1) + (call.group(2) or "")
    if not re.match(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$", text):
        return None
    if "." in text:
        return _resolve_dotted(text)
    if hasattr(builtins, text) or text in sources["text"]:
        return None
    return f"{text} occurs nowhere in the sources"


def test_every_backticked_name_resolves(sources):
    bad = [f"`{s}`: {why}" for s in _spans() if (why := _check_span(s, sources))]
    assert not bad, "names in docs/architecture.md that do not resolve:\n" + "\n".join(bad)


@pytest.mark.parametrize("span", ["_ctx_lock", "Model.no_such_method", "rknnx.no_such",
                                  "rknn_ext/rknnfile/no_such.c", "NoSuchClass.close()"])
def test_a_false_name_is_caught(span, sources):
    assert _check_span(span, sources)
