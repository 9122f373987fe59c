"""The 0x1004 .rknn payload decoder (rknn_ext/rknnfile/rknn_file_v1004.c) against the
vendor's files and the RV1106 mini runtime's answers for them.

The C decoder is compiled here with a small harness (tests/c/rknn_file_v1004_check.c),
once optimised and once under -fsanitize=address,undefined when the compiler can.  With
the vendor data (tests/helpers.py: RKNN_MODELS, REAL_RUNTIME) every 0x1004 file is decoded
and each decoded field, and each attribute the decoder derives, is compared with what
librknnmrt 2.3.2 answered for that file (real-runtime/answers/librknnmrt-2.3.2-armhf-uclibc/
<stem>.json); the expected values are read from those answers, not copied here.  Without the
data those tests skip; the error-path tests use a payload built here and always run.
The format: docs/rknn-file-format-v1004.md.
"""

from __future__ import annotations

import json
import math
import struct
import subprocess

import pytest

from helpers import (NO_VENDOR_DATA, REAL_RUNTIME, REPO, RKNN_MODELS, cc, compile_c, flatbuffer,
                     vendor_models)

SRC = REPO / "rknn_ext" / "rknnfile"
SOURCES = [REPO / "tests" / "c" / "rknn_file_v1004_check.c", SRC / "rknn_file_v1004.c"]
FLAGS = [f"-I{SRC}", "-Wpedantic", "-Wshadow", "-Wconversion", "-Wno-sign-conversion"]
SANITIZE = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all"]
MINI = "librknnmrt-2.3.2-armhf-uclibc"
ATTR_QUERIES = ("INPUT_ATTR", "OUTPUT_ATTR", "NATIVE_INPUT_ATTR", "NATIVE_OUTPUT_ATTR",
                "NATIVE_NHWC_INPUT_ATTR", "NATIVE_NHWC_OUTPUT_ATTR")
ATTR_FIELDS = ("index", "name", "n_dims", "dims", "n_elems", "size", "fmt", "type",
               "qnt_type", "fl", "zp", "scale", "w_stride", "size_with_stride",
               "pass_through", "h_stride")
#: rknn_api.h values
INT8, FLOAT16 = 2, 1
NCHW, NHWC, NC1HWC2, UNDEFINED = 0, 1, 2, 3
AFFINE = 2


# ---- the vendor's 0x1004 files ---------------------------------------------------------------

def _container_version(path):
    head = path.read_bytes()[:16]
    if len(head) < 16 or head[:4] != b"RKNN":
        return None
    return struct.unpack_from("<Q", head, 8)[0]


V1004_FILES = [p for p in vendor_models() if _container_version(p) == 0x1004]
V1004_IDS = [p.stem for p in V1004_FILES] or ["no-vendor-data"]
V1004_PARAMS = V1004_FILES or [None]


def _need_data(path):
    if path is None or REAL_RUNTIME is None:
        pytest.skip(NO_VENDOR_DATA)


def _answer(path):
    f = REAL_RUNTIME / "answers" / MINI / f"{path.stem}.json"
    assert f.is_file(), f"no {MINI} answer for {path.name}"
    return json.loads(f.read_text())


def _queries(answer):
    """Every successful rknn_query the probe recorded (all modes but the out-of-bounds one,
    whose struct sizes are deliberately wrong)."""
    out = []

    def walk(x, mode):
        if isinstance(x, dict):
            if x.get("ev") == "query" and x.get("status") == 0 and mode != "oob":
                out.append(x)
            for k, v in x.items():
                walk(v, x.get("mode", mode) if k == "events" else mode)
        elif isinstance(x, list):
            for v in x:
                walk(v, mode)

    walk(answer, None)
    return out


def _first(queries, cmd, index=0):
    for q in queries:
        if q["cmd_name"] == cmd and q["index"] == index:
            return q["result"]
    raise AssertionError(f"no successful {cmd} #{index} recorded")


# ---- the harness -----------------------------------------------------------------------------

def _sanitizers_work(tmp):
    probe = tmp / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    r = subprocess.run([cc(), *SANITIZE, str(probe), "-o", str(tmp / "probe")],
                       capture_output=True)
    return r.returncode == 0 and subprocess.run([str(tmp / "probe")]).returncode == 0


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("v1004")
    return compile_c(SOURCES, tmp / "v1004_check", flags=FLAGS + ["-O2"])


@pytest.fixture(scope="module")
def harness_asan(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("v1004_asan")
    if not _sanitizers_work(tmp):
        pytest.skip("the C compiler cannot build and run -fsanitize=address,undefined here")
    return compile_c(SOURCES, tmp / "v1004_check", flags=FLAGS + SANITIZE)


def _run(program, *args, timeout=300):
    r = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0 and not r.stderr, (r.returncode, r.stderr[-4000:])
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def decoded(harness):
    cache = {}

    def get(path):
        if path not in cache:
            cache[path] = _run(harness, "dump", path)
            assert cache[path]["status"] == 0, cache[path]
        return cache[path]
    return get


# ---- the corpus ------------------------------------------------------------------------------

def test_corpus_has_the_v1004_files():
    if RKNN_MODELS is None:
        pytest.skip(NO_VENDOR_DATA)
    # toolkit 2.5.0 writes 0x1004 for the static RV1103/RV1106/RK2118 models
    stems = {p.stem for p in V1004_FILES}
    assert len(stems) >= 9, stems
    assert {s.rsplit("_", 1)[-1] for s in stems} >= {"rv1103", "rv1106", "rk2118", "i8"}


# ---- decoded fields against the runtime's answers --------------------------------------------

@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_decoded_fields_agree_with_the_runtime(path, decoded):
    _need_data(path)
    m = decoded(path)
    ans = _answer(path)
    qs = _queries(ans)
    io = _first(qs, "IN_OUT_NUM")
    assert (len(m["inputs"]), len(m["outputs"])) == (io["n_input"], io["n_output"])
    mem = _first(qs, "MEM_SIZE")
    assert m["weight_size"] == mem["total_weight_size"]
    assert m["internal_size"] == mem["total_internal_size"]
    assert m["mem_size"] == {k: mem[k] for k in m["mem_size"]}
    # the runtime's "model" DMA buffer (its init log at level 5) is regcmd + weight + internal
    init_log = "\n".join(ans["init"][1]["log"])
    assert "name: model, virt addr" in init_log
    assert f"size: {m['model_mem_size']}, aligned size" in init_log
    assert "name: task, virt addr" in init_log and f"size: {m['task_size']}, aligned" in init_log
    assert m["platform"] == ans["model"]["target"]
    assert m["format_version"] == 6 and m["compiler_version"] == 20500
    assert m["compiler"].startswith("2.5.0(compiler version: 2.5.0")
    assert m["npu_family"] == {"rk2118": "RKNPU w2"}.get(m["platform"], "RKNPU t3")
    payload_gen = path.read_bytes()[64 + m["generator_offset"]:][:m["generator_len"]]
    assert payload_gen.startswith(b"{'attrs': {")

    checked = 0
    for kind, tensors in (("INPUT", m["inputs"]), ("OUTPUT", m["outputs"])):
        for i, t in enumerate(tensors):
            plain = _first(qs, f"{kind}_ATTR", i)
            native = _first(qs, f"NATIVE_{kind}_ATTR", i)
            assert t["known"] & 0x7F == 0x7F, t          # name .. native size all known
            assert t["name"] == plain["name"]
            assert t["dtype"] == plain["type"] and t["qnt_type"] == plain["qnt_type"]
            assert t["zp"] == plain["zp"]
            assert t["scale"] == pytest.approx(plain["scale"], rel=1e-6, abs=0)
            assert t["elem_size"] == {INT8: 1, FLOAT16: 2}[plain["type"]]
            d = t["dims"]
            if len(d) == 4:
                n, c, h, w = d
                want = [n, h, w, c] if kind == "INPUT" else d
                assert plain["fmt"] == (NHWC if kind == "INPUT" else NCHW)
            else:
                want = d
                assert plain["fmt"] == UNDEFINED and t["native_fmt"] == UNDEFINED
            assert plain["dims"] == want
            if kind == "OUTPUT":
                assert t["native_dims"] == native["dims"]
                assert t["native_fmt"] == native["fmt"]
                assert t["native_size"] == native["size"] == native["size_with_stride"]
            elif len(d) == 4:
                assert t["native_size"] == plain["size_with_stride"]
                a = t["width_align"]
                assert -(-d[3] // a) * a == plain["w_stride"]
                assert t["native_dims"] == [d[0], 1, d[2], d[3], d[1]]
            if kind == "INPUT":
                assert t["known"] & (1 << 9)
                assert t["norm_std"][0] in (1.0, 255.0)
            checked += 1
    assert checked == io["n_input"] + io["n_output"]


@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_every_recorded_attribute_query_is_reproduced(path, decoded):
    _need_data(path)
    m = decoded(path)
    mine = {(a["query"], a["index"]): a for a in m["attrs"]}
    fields = 0
    for q in _queries(_answer(path)):
        if q["cmd_name"] not in ATTR_QUERIES:
            continue
        got = mine[(q["cmd_name"], q["index"])]
        assert got["status"] == 0, got
        for f in ATTR_FIELDS:
            want, have = q["result"][f], got["result"][f]
            if f == "scale":
                assert have == pytest.approx(want, rel=1e-6, abs=0), (q["cmd_name"], q["index"])
            else:
                assert have == want, (q["cmd_name"], q["index"], f)
            fields += 1
    assert fields >= 6 * 2 * len(ATTR_FIELDS)
    # one past the last index is refused, not invented
    n_in, n_out = len(m["inputs"]), len(m["outputs"])
    for a in m["attrs"]:
        if a["index"] == (n_out if "OUTPUT" in a["query"] else n_in):
            assert a["status"] == -1 and "index" in a["why"]


@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_offsets_and_sizes_match_the_toolkit_summary(path, decoded):
    """The toolkit's own 'Feature Tensor Information Table' (MANIFEST.json) gives each
    tensor's [start, end) in the model buffer: start = regcmd + weight + the file's offset."""
    _need_data(path)
    m = decoded(path)
    man = json.loads((RKNN_MODELS / "MANIFEST.json").read_text())
    entry = next((f for f in man["toolkit-2.5.0"]["files"] if f["file"] == path.name), None)
    table = ((entry or {}).get("toolkit_summary") or {}).get("Feature Tensor Information Table")
    if not table:
        pytest.skip(f"MANIFEST.json has no toolkit summary for {path.name}")
    base = m["regcmd_size"] + m["weight_size"]
    rows = {}
    for line in table[1:]:
        cols = line.split()
        start, size = cols[-3], cols[-1]
        rows[cols[2]] = (int(start.split("*")[0], 16), int(size, 16))
    seen = 0
    for t in m["inputs"] + m["outputs"]:
        if t["name"] in rows:
            start, size = rows[t["name"]]
            assert start - base == t["mem_offset"], t["name"]
            assert size == t["native_size"], t["name"]
            seen += 1
    assert seen == len(m["inputs"]) + len(m["outputs"])


# ---- malformed payloads ----------------------------------------------------------------------

@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_truncated_and_corrupted_vendor_payloads_are_refused_not_crashed(path, harness):
    _need_data(path)
    r = _run(harness, "fuzz", path, 20000)
    assert r["truncations"] > 1000 and r["byte_sets"] > 1000
    assert r["refused"] > r["truncations"]            # every truncation, and more
    assert r["decoded"] > 0                            # harmless byte changes still decode
    assert (r["null_payload"], r["null_out"], r["null_model"]) == (-1, -1, -1)
    assert r["null_why"] == 0


@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_fuzz_under_sanitizers(path, harness_asan):
    _need_data(path)
    r = _run(harness_asan, "fuzz", path, 5000 if path.stat().st_size < 60000 else 1000)
    assert r["refused"] > r["truncations"] and r["decoded"] > 0


# A payload built here, so that the error paths are tested without the vendor's data.

def _tensor(dtype, layout, kind, native, shape, name, scale, zp, size, offset, tid, walign=None):
    t = {0: ("u8", dtype), 2: ("u8", kind), 3: ("vu32", native), 4: ("vu32", shape),
         5: ("str", name), 6: ("vf32", scale), 7: ("vi32", zp), 8: ("u32", size),
         10: ("u32", tid)}
    if layout:
        t[1] = ("u8", layout)
    if offset:
        t[9] = ("u32", offset)
    if walign:
        t[12] = ("u32", walign)
    return t


def _synthetic_payload(fb=None, tasks=2):
    """A payload of the layout the vendor files have: header, task records, regcmd,
    weights, FlatBuffer; one int8 4-D input, one int8 4-D output, one float16 2-D output."""
    if fb is None:
        graph = {
            0: ("vtable", [
                _tensor(3, 64, 1, [1, 1, 4, 6, 3], [1, 3, 4, 6], "in0", [0.5], [-3],
                        4 * 16 * 3, 0, 0, 16),
                _tensor(3, 64, 2, [1, 2, 4, 6, 16], [1, 20, 4, 6], "out0", [0.25], [7],
                        768, 192, 1),
                _tensor(10, 0, 2, [1, 5], [1, 5], "out1", [], [], 64, 960, 2),
            ]),
            2: ("vu32", [0]), 3: ("vu32", [1, 2]),
            4: ("vtable", [{0: ("vf32", [0.0] * 4), 1: ("vf32", [255.0] * 4),
                            2: ("vu32", [0, 1, 2, 3])}]),
        }
        fb = flatbuffer({0: ("u32", 6), 1: ("str", "RKNPU t3"), 2: ("vtable", [graph]),
                  3: ("str", "{'attrs': {}}"), 4: ("u32", 20500), 5: ("str", "2.5.0(x)"),
                  6: ("str", "rv1106"), 7: ("str", "ONNX"), 8: ("str", "")})
    task_size, regcmd, weight, internal = 128, 64, 32, 1024
    head = struct.pack("<6I", len(fb), task_size, tasks, regcmd, internal, weight)
    return head + bytes(64 - len(head)) + bytes(task_size + regcmd + weight) + fb


def _raw(harness, tmp_path, payload):
    f = tmp_path / "payload.bin"
    f.write_bytes(payload)
    return _run(harness, "raw", f)


def _dump_synthetic(harness, tmp_path, payload):
    f = tmp_path / "synthetic.rknn"
    f.write_bytes(b"RKNN\0\0\0\0" + struct.pack("<QQ", 0x1004, len(payload)) + bytes(40)
                  + payload + struct.pack("<Q", 2) + b"{}")
    return _run(harness, "dump", f)


def test_a_synthetic_payload_decodes(harness, tmp_path):
    m = _dump_synthetic(harness, tmp_path, _synthetic_payload())
    assert m["status"] == 0, m
    assert (m["platform"], m["npu_family"], m["framework"]) == ("rv1106", "RKNPU t3", "ONNX")
    assert (m["task_offset"], m["regcmd_offset"], m["weight_offset"], m["fb_offset"]) == \
        (64, 192, 256, 288)
    assert m["model_mem_size"] == 64 + 32 + 1024
    assert m["mem_size"] == {"total_weight_size": 32, "total_internal_size": 1024,
                             "total_dma_allocated_size": 4096}
    i0, (o0, o1) = m["inputs"][0], m["outputs"]
    assert (i0["name"], i0["dims"], i0["dtype"], i0["scale"], i0["zp"]) == \
        ("in0", [1, 3, 4, 6], INT8, 0.5, -3)
    assert (o1["name"], o1["dtype"], o1["native_fmt"], o1["qnt_type"], o1["mem_offset"]) == \
        ("out1", FLOAT16, UNDEFINED, AFFINE, 960)
    attrs = {(a["query"], a["index"]): a for a in m["attrs"]}
    a = attrs[("INPUT_ATTR", 0)]["result"]
    assert (a["dims"], a["fmt"], a["w_stride"], a["size"], a["size_with_stride"]) == \
        ([1, 4, 6, 3], NHWC, 16, 72, 192)
    a = attrs[("NATIVE_OUTPUT_ATTR", 0)]["result"]
    assert (a["dims"], a["fmt"], a["n_elems"], a["size"], a["w_stride"]) == \
        ([1, 2, 4, 6, 16], NC1HWC2, 768, 768, 6)
    a = attrs[("NATIVE_NHWC_OUTPUT_ATTR", 0)]["result"]
    assert (a["dims"], a["size"], a["size_with_stride"]) == ([1, 4, 6, 20], 480, 768)
    a = attrs[("OUTPUT_ATTR", 1)]["result"]
    assert (a["dims"], a["fmt"], a["size"], a["scale"], a["zp"]) == ([1, 5], UNDEFINED, 10, 0, 0)


def _patch(b, off, fmt, v):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, v)
    return bytes(b)


@pytest.mark.parametrize("mutate, status, why", [
    (lambda p: p[:63], -2, "payload shorter than its 64-byte header"),
    (lambda p: _patch(p, 0, "<I", len(p)), -2, "payload shorter than its header's region sizes"),
    (lambda p: p + b"\0", -3, "payload longer than its header's region sizes"),
    (lambda p: _patch(p, 8, "<I", 1000), -3, "task region smaller than its task count"),
    (lambda p: _patch(p, 288 + 4, "4s", b"RKNX"), -3, "FlatBuffer file identifier is not RKNN"),
    (lambda p: _patch(p, 288, "<I", 0xFFFFFF00), -3, "FlatBuffer table offset out of bounds"),
    (lambda p: _patch(p, 0, "<I", 6)[:288 + 6], -2,
     "FlatBuffer shorter than its root offset and identifier"),
    (lambda p: p[:64] + bytes(len(p) - 64), -3, "FlatBuffer file identifier is not RKNN"),
])
def test_malformed_payloads_name_the_failed_check(harness, tmp_path, mutate, status, why):
    r = _raw(harness, tmp_path, mutate(_synthetic_payload()))
    assert (r["status"], r["why"]) == (status, why)


def test_hostile_offsets_inside_the_flatbuffer(harness, tmp_path):
    p = _synthetic_payload()
    fb = 288
    root = struct.unpack_from("<I", p, fb)[0]
    # the Model table's soffset pointing before the buffer
    r = _raw(harness, tmp_path, _patch(p, fb + root, "<i", root + 100))
    assert (r["status"], r["why"]) == (-3, "FlatBuffer vtable offset out of bounds")
    # a vtable size that is odd
    vt = root - struct.unpack_from("<i", p, fb + root)[0]
    r = _raw(harness, tmp_path, _patch(p, fb + vt, "<H", 7))
    assert (r["status"], r["why"]) == (-3, "FlatBuffer vtable size invalid")
    # a field offset beyond the object size
    r = _raw(harness, tmp_path, _patch(p, fb + vt + 4, "<H", 200))
    assert (r["status"], r["why"]) == (-3, "FlatBuffer field outside its table")
    # the npu-family string (Model slot 1) claiming 1 MB
    at = fb + root + struct.unpack_from("<H", p, fb + vt + 6)[0]
    s = at + struct.unpack_from("<I", p, at)[0]
    r = _raw(harness, tmp_path, _patch(p, s, "<I", 1 << 20))
    assert (r["status"], r["why"]) == (-3, "FlatBuffer vector or string longer than the buffer")


def test_unknown_cases_are_refused_not_invented(harness, tmp_path):
    """A dtype code and a rank no vendor answer covers: decoded, flagged unknown, and the
    runtime view refused."""
    graph = {0: ("vtable", [
        _tensor(1, 64, 1, [1, 1, 4, 6, 3], [1, 3, 4, 6], "f32in", [], [], 288, 0, 0, 16),
        _tensor(3, 0, 2, [2, 3, 4], [2, 3, 4], "rank3", [0.1], [0], 24, 288, 1)]),
        2: ("vu32", [0]), 3: ("vu32", [1])}
    fb = flatbuffer({0: ("u32", 6), 2: ("vtable", [graph])})
    m = _dump_synthetic(harness, tmp_path, _synthetic_payload(fb))
    assert m["status"] == 0, m
    i0, o0 = m["inputs"][0], m["outputs"][0]
    assert i0["dtype_code"] == 1 and i0["dtype"] == -1 and not i0["known"] & (1 << 3)
    assert o0["dims"] == [2, 3, 4] and o0["dtype"] == INT8
    for a in m["attrs"]:
        if a["index"] == 0:
            assert a["status"] == -5, a
    assert "established" in next(a["why"] for a in m["attrs"] if a["query"] == "OUTPUT_ATTR")


def test_generator_offset_points_at_the_text(harness, tmp_path):
    p = _synthetic_payload()
    m = _dump_synthetic(harness, tmp_path, p)
    assert p[m["generator_offset"]:m["generator_offset"] + m["generator_len"]] == b"{'attrs': {}}"
    assert math.isclose(m["inputs"][0]["norm_std"][0], 255.0)


# ---- joined to the vendor-file reader (rknn_file_v1004_plug.c, rknnx.modelfile) ----------

def _modelfile():
    return pytest.importorskip("rknnx.modelfile")


@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_the_reader_gives_what_the_decoder_decodes(path, decoded):
    """One truth: rknnx.modelfile (the product's C reader with the plug) equals the
    decoder's own output for every input and output."""
    _need_data(path)
    mf = _modelfile().read(path)
    m = decoded(path)
    attrs = {(a["query"], a["index"]): a["result"] for a in m["attrs"] if a["status"] == 0}
    fmt = {0: "NCHW", 1: "NHWC", 2: "NC1HWC2", 3: "UNDEFINED"}
    assert (mf.format_version, mf.npu_family, mf.target_platform) == \
        (6, m["npu_family"], m["platform"])
    assert mf.compiler_version_int == m["compiler_version"]
    for kind, tensors in (("INPUT", mf.inputs), ("OUTPUT", mf.outputs)):
        for t in tensors:
            a = attrs[(f"{kind}_ATTR", t.index)]
            nat = attrs[(f"NATIVE_{kind}_ATTR", t.index)]
            assert t.known == {"shape", "attr", "qnt", "native"}
            assert (t.name, t.dims, t.layout, t.n_elems, t.size) == \
                (a["name"], tuple(a["dims"]), fmt[a["fmt"]], a["n_elems"], a["size"])
            assert (t.native_dims, t.native_layout, t.native_size) == \
                (tuple(nat["dims"]), fmt[nat["fmt"]], nat["size"])
            assert (t.qnt_type, t.zero_point) == ("affine", a["zp"])
            assert t.scale == pytest.approx(a["scale"], rel=1e-6, abs=0)
            assert t.quantized == (t.dtype == "int8")


def _tail(names_shapes):
    ins = [n for n in names_shapes if n[0] == "input"]
    graph, norm = [], []
    for k, (role, name, shape, dtype) in enumerate(names_shapes):
        idx = k if role == "input" else k - len(ins)
        graph.append({"left": role, "left_tensor_id": idx, "right": "norm_tensor",
                      "right_tensor_id": k})
        norm.append({"tensor_id": k, "url": name, "size": shape,
                     "dtype": {"vx_type": dtype, "qnt_method": "layer"}})
    return json.dumps({"input_num": len(ins), "output_num": len(names_shapes) - len(ins),
                       "version": "2.5.0", "target_platform": ["rv1106"], "graph": graph,
                       "norm_tensor": norm}).encode()


def _container(payload, tail):
    return (b"RKNN\0\0\0\0" + struct.pack("<QQ", 0x1004, len(payload)) + bytes(40) + payload
            + struct.pack("<Q", len(tail)) + tail)


SYNTH_IO = [("input", "in0", [1, 3, 4, 6], "int8"), ("output", "out0", [1, 20, 4, 6], "int8"),
            ("output", "out1", [1, 5], "float16")]


def test_the_reader_reads_a_synthetic_0x1004_file():
    mf = _modelfile().read(_container(_synthetic_payload(), _tail(SYNTH_IO)))
    assert mf.chip == "RV1106" and mf.npu_family == "RKNPU t3"
    i0, o0, o1 = mf.inputs[0], mf.outputs[0], mf.outputs[1]
    assert (i0.dims, i0.layout, i0.scale, i0.zero_point) == ((1, 4, 6, 3), "NHWC", 0.5, -3)
    assert (o0.native_dims, o0.native_layout, o0.native_size) == ((1, 2, 4, 6, 16), "NC1HWC2",
                                                                   768)
    assert (o1.dtype, o1.layout, o1.scale, o1.zero_point, o1.quantized) == \
        ("float16", "UNDEFINED", 0.0, 0, False)


@pytest.mark.parametrize("io, check, words", [
    ([("input", "inX", [1, 3, 4, 6], "int8"), *SYNTH_IO[1:]], "v1004.io", "name differs"),
    ([("input", "in0", [1, 3, 4, 7], "int8"), *SYNTH_IO[1:]], "v1004.io", "shape differs"),
    ([("input", "in0", [1, 3, 4, 6], "float16"), *SYNTH_IO[1:]], "v1004.io", "dtype differs"),
    (SYNTH_IO[:2], "v1004.io", "other inputs/outputs"),
])
def test_payload_and_tail_must_agree(io, check, words):
    mf = _modelfile()
    with pytest.raises(mf.ModelFileError) as info:
        mf.read(_container(_synthetic_payload(), _tail(io)))
    assert info.value.check == check and words in info.value.message, info.value


def test_a_broken_payload_fails_the_read_with_the_decoders_check():
    mf = _modelfile()
    p = bytearray(_synthetic_payload())
    p[288 + 4:288 + 8] = b"RKNX"
    with pytest.raises(mf.ModelFileError) as info:
        mf.read(_container(bytes(p), _tail(SYNTH_IO)))
    assert info.value.check == "v1004.payload"
    assert "FlatBuffer file identifier is not RKNN" in info.value.message
