"""The emulator's C is layered as emulator/runtime.h's file map says (docs/architecture.md,
"The emulator's two halves"): the map lists every file of the runtime half once, bottom
up, and a file names (calls, or takes the address of) only functions of the files listed
before it and of the model half; the model half names nothing of the runtime half; a file
includes no header of a layer above it.  An upper file reaches a lower one's work only
through a hook the upper one sets (emu_ctx_on_free, emu_kind_add, a kind's run), which
this keeps true.  The model half is one direction too (emulator/emu_model.h's file map):
no circle of files calling each other, as exec.c, model.c and model_standin.c were (the
executor ran a stand-in by name, the parser called the executor, which called the parser's
accessors; issue 39, item 7).

The C is read as text: comments and string literals removed, a function's definition is a
name followed by its parameter list and a body at file level, a use any other occurrence
of a defined name."""

from __future__ import annotations

import re

import pytest

from helpers import REPO

EMU = REPO / "emulator"
MODEL_HALF = ("model.c", "exec.c", "model_standin.c")
# the headers each half may include (the runtime half: its own and the model half's)
MODEL_HEADERS = {"emu_model.h", "model_internal.h", "numeric.h", "rknn_file.h"}
RUNTIME_HEADERS = MODEL_HEADERS | {"runtime.h"}


def _strip(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    src = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', src)
    return re.sub(r"'(?:\\.|[^'\\\n])*'", "''", src)


# a file-level definition: a line that starts a declaration (no indent), a name, its
# parameters, then the body's brace
_DEF = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?\b(\w+)\s*\(([^;{}]*?)\)\s*\{", re.M | re.S)


def _defined(text: str) -> set:
    return {m.group(1) for m in _DEF.finditer(text)}


def _used(text: str) -> set:
    return set(re.findall(r"\b[A-Za-z_]\w*\b", text))


def layer_map(header: str = "runtime.h") -> list:
    """The files in `header`'s file map, bottom first (runtime.h: the runtime half;
    emu_model.h: the model half)."""
    head = (EMU / header).read_text().split("*/", 1)[0]
    return re.findall(r"^ \*\s{2,}(\w+\.c)\s", head, re.M)


def sources() -> dict:
    return {p.name: _strip(p.read_text()) for p in sorted(EMU.glob("*.c"))}


def upward_uses(texts: dict, order: list) -> list:
    """(user, owner, name) for every use of a function defined in a file listed after the
    user (the runtime half), or in the runtime half by the model half."""
    owner = {}
    for name, text in texts.items():
        for fn in _defined(text):
            owner[fn] = name
    rank = {name: i for i, name in enumerate(order)}
    found = []
    for user, text in texts.items():
        for fn in sorted(_used(text) & owner.keys()):
            home = owner[fn]
            if home == user:
                continue
            if user in MODEL_HALF:
                up = home not in MODEL_HALF
            else:
                up = home in rank and rank[home] > rank[user]
            if up:
                found.append((user, home, fn))
    return found


def calls_between(texts: dict, files) -> dict:
    """user -> the other files of `files` whose functions it names (calls, or takes the
    address of)."""
    owner = {fn: name for name in files for fn in _defined(texts[name])}
    return {user: sorted({owner[fn] for fn in _used(texts[user]) & owner.keys()} - {user})
            for user in files}


def circles(graph: dict) -> list:
    """Every circle of files in `graph` (user -> files it names), each from its first file
    in sorted order, without repeats."""
    found = []

    def walk(path):
        for nxt in graph.get(path[-1], ()):
            if nxt == path[0]:
                found.append(path)
            elif nxt not in path and nxt > path[0]:
                walk(path + [nxt])

    for start in sorted(graph):
        walk([start])
    return found


def test_the_model_half_has_no_circle():
    texts = sources()
    assert circles(calls_between(texts, MODEL_HALF)) == []


def test_the_model_half_map_lists_its_files_bottom_first():
    order = layer_map("emu_model.h")
    assert sorted(order) == sorted(MODEL_HALF), order
    texts = sources()
    graph = calls_between(texts, MODEL_HALF)
    for user, owners in graph.items():
        for home in owners:
            assert order.index(home) < order.index(user), \
                f"{user} names a function of {home}, listed after it in emu_model.h"


@pytest.mark.parametrize("user, snippet, circle", [
    # the executor running a stand-in by name, as it did before a kind brought its own run
    ("exec.c", "int f(const emu_model *m) { return emu_standin_model_run(m, 0, 0, 0); }",
     ["exec.c", "model_standin.c", "model.c"]),
    # the executor freeing a model (the parser's) by name
    ("exec.c", "void g(emu_model *m) { emu_model_free(m); }", ["exec.c", "model.c"]),
])
def test_a_model_half_circle_is_caught(user, snippet, circle):
    texts = sources()
    texts[user] += "\n" + _strip(snippet) + "\n"
    assert circle in circles(calls_between(texts, MODEL_HALF))


def test_the_map_lists_every_runtime_file_once():
    order = layer_map()
    files = sorted(p.name for p in EMU.glob("*.c") if p.name not in MODEL_HALF)
    assert len(order) == len(set(order)), order
    assert sorted(order) == files
    # the order the issue asked for, with the two files it did not name in place
    assert order[:2] == ["runtime_core.c", "runtime_layout.c"]
    assert order.index("runtime_npu.c") < order.index("runtime_mem.c") < \
        order.index("runtime_context.c") < order.index("runtime_io.c")


def test_no_function_is_defined_twice():
    seen = {}
    for name, text in sources().items():
        for fn in _defined(text):
            assert fn not in seen, f"{fn} is defined in {seen[fn]} and {name}"
            seen[fn] = name
    assert {"emu_ctx_put", "rknn_query", "emu_answers_query_attr"} <= seen.keys()


def test_no_file_uses_a_function_of_a_layer_above():
    assert upward_uses(sources(), layer_map()) == []


@pytest.mark.parametrize("user, owner, fn, snippet", [
    # the registry freeing a context by name, as it did before the destructor hooks
    ("runtime_core.c", "runtime_context.c", "emu_ctx_alloc",
     "void f(void) { emu_ctx_alloc(0, 0); }"),
    # a pointer to an upper function taken without a call
    ("runtime_layout.c", "runtime_io.c", "rknn_run",
     "static void *g(void) { return (void *)rknn_run; }"),
    # the model half calling the runtime half
    ("exec.c", "runtime_core.c", "emu_log", "void h(void) { emu_log(0, 0, \"x\"); }"),
])
def test_an_upward_use_is_caught(user, owner, fn, snippet):
    texts = sources()
    texts[user] += "\n" + _strip(snippet) + "\n"
    assert (user, owner, fn) in upward_uses(texts, layer_map())


def test_includes_stay_in_their_half():
    for p in sorted(EMU.glob("*.c")):
        included = set(re.findall(r'^#include\s+"([^"]+)"', p.read_text(), re.M))
        allowed = MODEL_HEADERS if p.name in MODEL_HALF else RUNTIME_HEADERS
        assert included <= allowed, (p.name, included - allowed)
    headers = {p.name for p in EMU.glob("*.h")}
    assert headers <= RUNTIME_HEADERS, headers - RUNTIME_HEADERS
