"""The reader (rknnfile/, include/rknnx/rknn_file.h) on container-0x1004 files (RV1103,
RV1106, RK2118) against the vendor's files and the RV1106 mini runtime's answers for them.

The C reader is compiled here with a small harness (tests/c/rknn_file_v1004_check.c), once
optimised and once under -fsanitize=address,undefined when the compiler can.  With the vendor
data (tests/helpers.py: RKNN_MODELS, REAL_RUNTIME) every 0x1004 file is read and each field
is compared with what librknnmrt 2.3.2 answered for that file (real-runtime/answers/
librknnmrt-2.3.2-armhf-uclibc/<stem>.json); the expected values are read from those answers,
not copied here.  What the runtime computes beyond the file (strides, padded sizes) is the
emulator's: tests/emulator/test_standin.py holds its answers to the same records.  Without
the data those tests skip; the error-path tests use files built here and always run.
The format: docs/rknn-file-format-v1004.md.
"""

from __future__ import annotations

import json
import struct
import subprocess

import pytest

from helpers import (NO_VENDOR_DATA, REAL_RUNTIME, REPO, RKNN_MODELS, cc, compile_c, flatbuffer,
                     vendor_models)

SOURCES = [REPO / "tests" / "c" / "rknn_file_v1004_check.c",
           *sorted((REPO / "rknnfile").glob("*.c"))]
FLAGS = [f"-I{REPO / 'include' / 'rknnx'}", "-Wpedantic", "-Wshadow", "-Wconversion",
         "-Wno-sign-conversion"]
SANITIZE = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all"]
MINI = "librknnmrt-2.3.2-armhf-uclibc"
#: rknn_api.h values
INT8, FLOAT16 = 2, 1
NCHW, NHWC, NC1HWC2, UNDEFINED = 0, 1, 2, 3
AFFINE = 2
#: rknn_file.h's RKNNX_FILE_KNOWN_* bits: shape, attr, qnt, native
KNOWN_VIEWS = 0x0F


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


# ---- read fields against the runtime's answers -----------------------------------------------

@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_read_fields_agree_with_the_runtime(path, decoded):
    _need_data(path)
    m = decoded(path)
    ans = _answer(path)
    qs = _queries(ans)
    io = _first(qs, "IN_OUT_NUM")
    assert (len(m["inputs"]), len(m["outputs"])) == (io["n_input"], io["n_output"])
    mem = _first(qs, "MEM_SIZE")
    assert m["has_mem_sizes"] == 1
    assert m["weight_size"] == mem["total_weight_size"]
    assert m["internal_size"] == mem["total_internal_size"]
    # the runtime's "model" DMA buffer (its init log at level 5) is regcmd + the compiler's
    # constants + weight + internal, its "task" buffer the task region
    init_log = "\n".join(ans["init"][1]["log"])
    model_size = m["regcmd_size"] + m["const_size"] + m["weight_size"] + m["internal_size"]
    assert "name: model, virt addr" in init_log
    assert f"size: {model_size}, aligned size" in init_log
    assert "name: task, virt addr" in init_log and f"size: {m['task_size']}, aligned" in init_log
    assert 0 < m["task_count"] * 40 <= m["task_size"]
    assert m["platform"] == ans["model"]["target"]
    assert m["chip"] == m["platform"].upper()
    assert m["format_version"] == 6 and m["compiler_version_int"] == 20500
    assert m["compiler_version"].startswith("2.5.0 (")
    assert m["npu_family"] == {"rk2118": "RKNPU w2"}.get(m["platform"], "RKNPU t3")

    checked = 0
    for kind, tensors in (("INPUT", m["inputs"]), ("OUTPUT", m["outputs"])):
        for i, t in enumerate(tensors):
            plain = _first(qs, f"{kind}_ATTR", i)
            native = _first(qs, f"NATIVE_{kind}_ATTR", i)
            assert t["known"] == KNOWN_VIEWS, t                 # shape, attr, qnt, native
            assert (t["name"], t["index"]) == (plain["name"], i)
            assert (t["type"], t["qnt_type"], t["zp"]) == \
                (plain["type"], plain["qnt_type"], plain["zp"])
            assert t["scale"] == pytest.approx(plain["scale"], rel=1e-6, abs=0)
            assert t["quantized"] == (t["type"] != FLOAT16)
            assert (t["dims"], t["fmt"], t["n_elems"], t["size"]) == \
                (plain["dims"], plain["fmt"], plain["n_elems"], plain["size"])
            assert (t["native_dims"], t["native_fmt"], t["native_size"]) == \
                (native["dims"], native["fmt"], native["size"])
            if len(t["shape"]) == 4:
                n, c, h, w = t["shape"]
                assert plain["dims"] == ([n, h, w, c] if kind == "INPUT" else t["shape"])
                assert plain["fmt"] == (NHWC if kind == "INPUT" else NCHW)
            else:
                assert plain["fmt"] == UNDEFINED and t["native_fmt"] == UNDEFINED
            if kind == "OUTPUT":
                # the compiler's planned bytes: what NATIVE_OUTPUT_ATTR reports as its size
                assert t["file_planned_size"] == native["size"] == native["size_with_stride"]
            elif len(t["shape"]) == 4:
                # an input's planned bytes hold its rows padded to the file's width alignment
                # (the runtime's w_stride) and are its size_with_stride
                a = t["file_width_align"]
                assert a in (8, 16) and -(-t["shape"][3] // a) * a == plain["w_stride"]
                assert t["file_planned_size"] == plain["size_with_stride"]
            checked += 1
    assert checked == io["n_input"] + io["n_output"]


@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_offsets_and_sizes_match_the_toolkit_summary(path, decoded):
    """The toolkit's own 'Feature Tensor Information Table' (MANIFEST.json) gives each
    tensor's [start, end) in the model buffer: start = regcmd + the compiler's constants +
    weight + the file's offset."""
    _need_data(path)
    m = decoded(path)
    man = json.loads((RKNN_MODELS / "MANIFEST.json").read_text())
    entry = next((f for f in man["toolkit-2.5.0"]["files"] if f["file"] == path.name), None)
    table = ((entry or {}).get("toolkit_summary") or {}).get("Feature Tensor Information Table")
    if not table:
        pytest.skip(f"MANIFEST.json has no toolkit summary for {path.name}")
    base = m["regcmd_size"] + m["const_size"] + m["weight_size"]
    rows = {}
    for line in table[1:]:
        cols = line.split()
        start, size = cols[-3], cols[-1]
        rows[cols[2]] = (int(start.split("*")[0], 16), int(size, 16))
    seen = 0
    for t in m["inputs"] + m["outputs"]:
        if t["name"] in rows:
            start, size = rows[t["name"]]
            assert start - base == t["file_mem_offset"], t["name"]
            assert size == t["file_planned_size"], t["name"]
            seen += 1
    assert seen == len(m["inputs"]) + len(m["outputs"])


@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_the_compilers_constants_region(path, decoded):
    """The payload header's u32 at offset 24 sizes a region between the register commands and
    the weights: the constants the compiler generated (yolov8_pose_rv1106: 17,472 bytes, the
    identity kernels of the convolutions its Concat outputs became and its int16 ops'
    kernels; 0 in the files without such a graph).  librknnmrt 2.3.2 loads it into its
    "model" buffer between the register commands and the weights (DEVICE_MEM_INFO.size and
    the init log's model size count it), but MEM_SIZE's weight size does not."""
    _need_data(path)
    m = decoded(path)
    raw = path.read_bytes()
    assert m["const_size"] == struct.unpack_from("<I", raw, 64 + 24)[0]
    assert raw[64 + 28:64 + 64] == bytes(36)
    qs = _queries(_answer(path))
    mem = _first(qs, "MEM_SIZE")
    model_size = m["regcmd_size"] + m["const_size"] + m["weight_size"] + m["internal_size"]
    assert _first(qs, "DEVICE_MEM_INFO")["size"] == model_size
    assert mem["total_dma_allocated_size"] == -(-model_size // 4096) * 4096
    if path.stem == "yolov8_pose_rv1106":
        assert m["const_size"] == 17472 and mem["total_weight_size"] == m["weight_size"]
        # its keypoint output is int16 (Tensor dtype code 5), as the runtime reports it
        kp = m["outputs"][3]
        assert (kp["file_dtype_code"], kp["type"], kp["known"]) == (5, 4, KNOWN_VIEWS)
        assert _first(qs, "OUTPUT_ATTR", 3)["type"] == 4


def test_a_constants_region_is_framed_like_the_others(harness, tmp_path):
    """A synthetic payload with a constants region: read when the header counts it, refused
    (naming the sizes) when it does not."""
    p = _synthetic_payload()
    fb_size, task = struct.unpack_from("<2I", p, 0)
    with_const = (_patch(p, 24, "<I", 96)[:64 + task + 64] + bytes(96)
                  + p[64 + task + 64:])
    m = _dump(harness, tmp_path, with_const)
    assert m["status"] == 0 and (m["const_size"], m["weight_size"]) == (96, 32), m
    assert m["outputs"][0]["native_dims"] == [1, 2, 4, 6, 16]
    r = _dump(harness, tmp_path, _patch(with_const, 24, "<I", 0))
    assert (r["check"], r["status"]) == ("v1004.payload", -4)
    assert "longer than its header's region sizes" in r["message"], r


# ---- malformed payloads ----------------------------------------------------------------------

@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_truncated_and_corrupted_vendor_payloads_are_refused_not_crashed(path, harness):
    _need_data(path)
    big = path.stat().st_size > 100000
    r = _run(harness, "fuzz", path, 1000 if big else 5000)
    assert r["truncations"] > (400 if big else 1000) and r["byte_sets"] > 1000
    assert r["refused"] > r["truncations"]            # every truncation, and more
    assert r["decoded"] > 0                            # harmless byte changes still read
    assert (r["null_data"], r["null_out"], r["null_err"]) == (-1, -1, 0)


@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_fuzz_under_sanitizers(path, harness_asan):
    _need_data(path)
    r = _run(harness_asan, "fuzz", path, 1000 if path.stat().st_size < 60000 else 200)
    assert r["refused"] > r["truncations"] and r["decoded"] > 0


# A file built here, so that the error paths are tested without the vendor's data.

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
                  3: ("str", "{'attrs': {}}"), 4: ("u32", 20500),
                  5: ("str", "2.5.0(compiler version: 2.5.0 (x))"),
                  6: ("str", "rv1106"), 7: ("str", "ONNX"), 8: ("str", "")})
    task_size, regcmd, weight, internal = 128, 64, 32, 1024
    head = struct.pack("<6I", len(fb), task_size, tasks, regcmd, internal, weight)
    return head + bytes(64 - len(head)) + bytes(task_size + regcmd + weight) + fb


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
FB = 288    # the synthetic payload's FlatBuffer offset: 64 + 128 + 64 + 32


def _dump(harness, tmp_path, payload, io=SYNTH_IO):
    f = tmp_path / "synthetic.rknn"
    f.write_bytes(_container(payload, _tail(io)))
    return _run(harness, "dump", f)


def test_a_synthetic_file_reads(harness, tmp_path):
    m = _dump(harness, tmp_path, _synthetic_payload())
    assert m["status"] == 0, m
    assert (m["platform"], m["npu_family"], m["framework"], m["chip"]) == \
        ("rv1106", "RKNPU t3", "ONNX", "RV1106")
    assert (m["task_count"], m["task_size"], m["regcmd_size"], m["weight_size"],
            m["internal_size"]) == (2, 128, 64, 32, 1024)
    assert m["compiler_version"] == "2.5.0 (x)" and m["toolkit_version"] == "2.5.0"
    (i0,), (o0, o1) = m["inputs"], m["outputs"]
    assert (i0["name"], i0["dims"], i0["fmt"], i0["type"], i0["scale"], i0["zp"]) == \
        ("in0", [1, 4, 6, 3], NHWC, INT8, 0.5, -3)
    # an input's native view is its NHWC view; its planned bytes and width alignment are kept
    assert (i0["native_dims"], i0["native_fmt"], i0["native_size"]) == ([1, 4, 6, 3], NHWC, 72)
    assert (i0["file_planned_size"], i0["file_width_align"], i0["file_mem_offset"]) == \
        (192, 16, 0)
    assert (o0["dims"], o0["fmt"], o0["native_dims"], o0["native_fmt"], o0["native_size"]) == \
        ([1, 20, 4, 6], NCHW, [1, 2, 4, 6, 16], NC1HWC2, 768)
    assert (o1["name"], o1["type"], o1["fmt"], o1["native_fmt"], o1["qnt_type"],
            o1["file_mem_offset"], o1["size"], o1["scale"], o1["zp"], o1["quantized"]) == \
        ("out1", FLOAT16, UNDEFINED, UNDEFINED, AFFINE, 960, 10, 0, 0, 0)
    assert all(t["known"] == KNOWN_VIEWS for t in (i0, o0, o1))


def _patch(b, off, fmt, v):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, v)
    return bytes(b)


@pytest.mark.parametrize("mutate, check, words", [
    (lambda p: p[:63], "v1004.payload", "payload shorter than its 64-byte header"),
    (lambda p: _patch(p, 0, "<I", len(p)), "v1004.payload",
     "payload shorter than its header's region sizes"),
    (lambda p: p + b"\0", "v1004.payload", "payload longer than its header's region sizes"),
    (lambda p: _patch(p, 8, "<I", 1000), "v1004.payload",
     "task region smaller than its task count"),
    (lambda p: _patch(p, FB + 4, "4s", b"RKNX"), "flatbuffer.identifier", "not 'RKNN'"),
    (lambda p: _patch(p, FB, "<I", 0xFFFFFF00), "flatbuffer.Model.root", "lies outside"),
    (lambda p: _patch(p, 0, "<I", 6)[:FB + 6], "flatbuffer.root", "too short"),
    (lambda p: p[:64] + bytes(len(p) - 64), "flatbuffer.identifier", "not 'RKNN'"),
])
def test_malformed_payloads_name_the_failed_check(harness, tmp_path, mutate, check, words):
    r = _dump(harness, tmp_path, mutate(_synthetic_payload()))
    assert (r["status"], r["check"]) == (-4, check), r
    assert words in r["message"] and r["offset"] >= 64, r


def test_hostile_offsets_inside_the_flatbuffer(harness, tmp_path):
    p = _synthetic_payload()
    root = struct.unpack_from("<I", p, FB)[0]
    # the Model table's soffset pointing before the buffer
    r = _dump(harness, tmp_path, _patch(p, FB + root, "<i", root + 100))
    assert (r["check"], r["offset"]) == ("flatbuffer.Model.root", 64 + FB + root), r
    assert "points outside" in r["message"]
    # a vtable size that is odd
    vt = root - struct.unpack_from("<i", p, FB + root)[0]
    r = _dump(harness, tmp_path, _patch(p, FB + vt, "<H", 7))
    assert r["check"] == "flatbuffer.Model.root" and "not an even length" in r["message"], r
    # a field offset beyond the object size (slot 0, the format version)
    r = _dump(harness, tmp_path, _patch(p, FB + vt + 4, "<H", 200))
    assert r["check"] == "flatbuffer.Model.version" and "outside the table" in r["message"], r
    # the npu-family string (Model slot 1) claiming 1 MB
    at = FB + root + struct.unpack_from("<H", p, FB + vt + 6)[0]
    s = at + struct.unpack_from("<I", p, at)[0]
    r = _dump(harness, tmp_path, _patch(p, s, "<I", 1 << 20))
    assert r["check"] == "flatbuffer.Model.target" and "beyond the FlatBuffer" in r["message"], r


def test_unknown_cases_stay_unknown_not_invented(harness, tmp_path):
    """A dtype code and a rank no vendor answer covers: read, its raw codes kept, and the
    views it does not settle left unknown (known = shape only)."""
    graph = {0: ("vtable", [
        _tensor(1, 64, 1, [1, 1, 4, 6, 3], [1, 3, 4, 6], "f32in", [], [], 288, 0, 0, 16),
        _tensor(3, 0, 2, [2, 3, 4], [2, 3, 4], "rank3", [0.1], [0], 24, 288, 1)]),
        2: ("vu32", [0]), 3: ("vu32", [1])}
    fb = flatbuffer({0: ("u32", 6), 2: ("vtable", [graph])})
    m = _dump(harness, tmp_path, _synthetic_payload(fb),
              [("input", "f32in", [1, 3, 4, 6], "float32"), ("output", "rank3", [2, 3, 4], "int8")])
    assert m["status"] == 0, m
    (i0,), (o0,) = m["inputs"], m["outputs"]
    assert (i0["file_dtype_code"], i0["type"], i0["known"]) == (1, 0, 0x01)   # FLOAT32, tail's
    assert (o0["dims"], o0["type"], o0["known"], o0["fmt"]) == ([2, 3, 4], INT8, 0x01, -1)
    assert (o0["native_fmt"], o0["qnt_type"], o0["file_planned_size"]) == (-1, -1, 24)


# ---- the Python face (rknnx.modelfile) -------------------------------------------------------

def _modelfile():
    return pytest.importorskip("rknnx.modelfile")


@pytest.mark.parametrize("path", V1004_PARAMS, ids=V1004_IDS)
def test_the_modelfile_says_what_the_runtime_says(path):
    """rknnx.modelfile's FileTensor of every input and output against librknnmrt 2.3.2's
    (NATIVE_)INPUT_ATTR / OUTPUT_ATTR of the same file."""
    _need_data(path)
    mf = _modelfile().read(path)
    qs = _queries(_answer(path))
    fmt = {0: "NCHW", 1: "NHWC", 2: "NC1HWC2", 3: "UNDEFINED"}
    assert (mf.format_version, mf.compiler_version_int) == (6, 20500)
    for kind, tensors in (("INPUT", mf.file_inputs), ("OUTPUT", mf.file_outputs)):
        for t in tensors:
            a = _first(qs, f"{kind}_ATTR", t.index)
            nat = _first(qs, f"NATIVE_{kind}_ATTR", t.index)
            assert t.known == {"shape", "attr", "qnt", "native"}
            assert (t.name, t.dims, t.layout, t.n_elems, t.size) == \
                (a["name"], tuple(a["dims"]), fmt[a["fmt"]], a["n_elems"], a["size"])
            assert (t.native_dims, t.native_layout, t.native_size) == \
                (tuple(nat["dims"]), fmt[nat["fmt"]], nat["size"])
            assert (t.qnt_type, t.zero_point) == ("affine", a["zp"])
            assert t.scale == pytest.approx(a["scale"], rel=1e-6, abs=0)
            assert t.quantized == (t.dtype != "float16")


def test_the_reader_reads_a_synthetic_0x1004_file():
    mf = _modelfile().read(_container(_synthetic_payload(), _tail(SYNTH_IO)))
    assert mf.chip == "RV1106" and mf.npu_family == "RKNPU t3"
    i0, o0, o1 = mf.file_inputs[0], mf.file_outputs[0], mf.file_outputs[1]
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


def test_a_broken_payload_fails_the_read_with_the_check_that_failed():
    mf = _modelfile()
    p = bytearray(_synthetic_payload())
    p[FB + 4:FB + 8] = b"RKNX"
    with pytest.raises(mf.ModelFileError) as info:
        mf.read(_container(bytes(p), _tail(SYNTH_IO)))
    assert info.value.check == "flatbuffer.identifier"
    assert "identifier is not 'RKNN'" in info.value.message
    assert info.value.offset == 64 + FB + 4
