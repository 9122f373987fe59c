"""The package imports in layers: the pure-Python modules work where the compiled extension
is missing, and the layers that need it say how to build it; reading a file and converting a
layout load their own extension modules, never the runtime binding."""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

from helpers import NO_VENDOR_DATA, REPO, RKNN_MODELS, model_bytes, run_python

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


# what a subprocess reports: the compiled modules of rknnx it has loaded, in order of names
_LOADED = "sorted(m for m in sys.modules if m.startswith('rknnx._') or m == 'rknnx.lowlevel')"


def test_reading_and_converting_an_own_model_load_no_binding(tmp_path, runtime):
    """An own-format model: the reader refuses it (not a vendor file) and the layout of its
    NC1HWC2 output converts both ways, exactly as numpy does, with no rknnx._core."""
    import rknnx

    path = tmp_path / "detector.rknn"
    path.write_bytes(model_bytes("detector_random", "RK3588"))
    with rknnx.Model(str(path)) as m:
        t = next(o for o in m.outputs if o.native is not None and o.native.layout == "NC1HWC2")
    assert t.quant.kind == "affine" and len(t.shape) == 4
    facts = dict(name=t.name, shape=t.shape, dtype=str(t.dtype), layout=t.layout,
                 quant=(t.quant.kind, t.quant.scale, t.quant.zero_point),
                 native=(t.native.layout, t.native.shape, str(t.native.dtype),
                         t.native.strides, t.native.nbytes))
    proc = run_python(textwrap.dedent(f"""
        import json, sys
        import rknnx.modelfile, rknnx.layout
        seen = [{_LOADED}]
        import numpy as np
        from rknnx import layout, modelfile
        from rknnx._tensors import NativeInfo, QuantInfo, TensorInfo

        try:
            modelfile.read({str(path)!r})
            refused = None
        except modelfile.ModelFileError as exc:
            refused = exc.check
        f = {facts!r}
        info = TensorInfo(0, f["name"], f["shape"], np.dtype(f["dtype"]), f["layout"],
                          QuantInfo(*f["quant"]), NativeInfo(f["native"][0], f["native"][1],
                          np.dtype(f["native"][2]), f["native"][3], f["native"][4]))
        native = np.random.default_rng(7).integers(-128, 128, info.native.shape, np.int8)
        dense = layout.from_native(native, info, layout="NCHW")
        n, c1, h, w, c2 = native.shape
        c = info.shape_in("NCHW")[1]
        q = native.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c2, h, w)[:, :c]
        _, scale, zp = f["quant"]
        want = (q.astype(np.float32) - np.float32(zp)) * np.float32(scale)
        back = layout.to_native(layout.quantize(dense, info), info, layout="NCHW")
        real = lambda a: a.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c2, h, w)[:, :c]
        seen.append({_LOADED})
        print(json.dumps({{"seen": seen, "refused": refused,
                           "dense": bool(np.array_equal(dense.view(np.uint32),
                                                        want.view(np.uint32))),
                           "back": bool(np.array_equal(real(back), q))}}))
    """))
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["refused"] == "magic"
    assert got["dense"] and got["back"]
    after_import, after_use = got["seen"]
    assert "rknnx._core" not in after_import + after_use, got["seen"]
    assert "rknnx.lowlevel" not in after_import + after_use, got["seen"]
    assert "rknnx._kernels" in after_use, got["seen"]     # the kernels did the converting


def test_reading_a_vendor_file_loads_no_binding():
    """rknnx.modelfile.read and `rknnx info` on a vendor file: the reader's module only."""
    path = RKNN_MODELS / "toolkit-2.5.0" / "cls_img_rk3588.rknn" if RKNN_MODELS else None
    if path is None or not path.is_file():
        pytest.skip(f"no cls_img_rk3588.rknn among the vendor files ({NO_VENDOR_DATA})")
    proc = run_python(textwrap.dedent(f"""
        import io, json, sys, contextlib
        import rknnx.modelfile, rknnx.layout
        seen = [{_LOADED}]
        from rknnx import modelfile
        mf = modelfile.read({str(path)!r})
        seen.append({_LOADED})
        from rknnx.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main(["info", {str(path)!r}, "--json"])
        seen.append({_LOADED})
        d = json.loads(out.getvalue())
        print(json.dumps({{"seen": seen, "rc": rc, "chip": mf.chip, "info_chip": d["chip"],
                           "inputs": len(mf.inputs), "info_inputs": len(d["inputs"])}}))
    """), env={"RKNNX_RUNTIME": None})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["rc"] == 0 and got["chip"] == got["info_chip"] == "RK3588"
    assert got["inputs"] == got["info_inputs"] >= 1
    assert all("rknnx._core" not in s and "rknnx.lowlevel" not in s for s in got["seen"]), \
        got["seen"]
    assert "rknnx._rknnfile" in got["seen"][1], got["seen"]   # the reader did the reading
