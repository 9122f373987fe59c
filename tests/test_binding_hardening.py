"""Regression tests of the binding's hardening: inputs that used to crash the process,
read or write out of bounds, leak or corrupt memory must now raise clean exceptions.

Probes that crashed (SIGFPE, SIGSEGV) run in a subprocess, so a regression fails the
test instead of killing pytest.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import rknnx
from rknnx import TensorAttr, TensorFormat, TensorType

from helpers import run_python

PRELUDE = """
import gc, sys, threading
import numpy as np
import rknnx
from rknnx import _core as C
from rknnx.emulator import samples
TINY = samples.tiny_relu()
"""


def probe(code: str) -> str:
    """Run `code` in a fresh interpreter on the emulator; it must exit cleanly."""
    proc = run_python(PRELUDE + textwrap.dedent(code), env={"RKNNX_RUNTIME": "emulator"})
    assert proc.returncode == 0, (f"probe died with status {proc.returncode}\n"
                                  f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc.stdout


# ---- layout arithmetic (findings 3 and 4) ---------------------------------------------------
HUGE = [
    dict(dims=[2**31, 2**31, 4, 1], fmt=TensorFormat.NHWC, type=TensorType.UINT8),
    dict(dims=[2**16] * 4, type=TensorType.UINT8),
    dict(dims=[3, 2**31, 2**31, 2], type=TensorType.UINT8),
    dict(dims=[1, 2**32 - 1, 2**32 - 1, 2**32 - 1], fmt=TensorFormat.NHWC,
         type=TensorType.FLOAT32, size_with_stride=16),
    dict(dims=[1, 2**32 - 1, 1, 2**32 - 1, 16], fmt=TensorFormat.NC1HWC2,
         type=TensorType.INT8),
    dict(dims=[2**20, 2**20], type=TensorType.INT64),
]


def _plain(kw):
    return {k: (v if isinstance(v, list) else int(v)) for k, v in kw.items()}


def test_overflowing_layouts_raise_in_a_subprocess():
    # used to be SIGFPE (a product overflowing to 0, then a modulo by it)
    out = probe(f"""
        for kw in {[_plain(kw) for kw in HUGE]!r}:
            a = C.TensorAttr(**kw)
            for what in ("strides", "nbytes_with_stride"):
                try:
                    getattr(a, what)
                except ValueError as e:
                    print("ValueError", "spans more than 4294967295 bytes" in str(e))
                else:
                    print("accepted", kw)
    """)
    assert out.splitlines() == ["ValueError True"] * (2 * len(HUGE))


@pytest.mark.parametrize("kw", HUGE)
def test_bind_and_set_io_mem_refuse_overflowing_layouts(track, kw):
    ctx = track.model("tiny_relu")
    mem = track.mem(ctx.create_mem(64))
    with pytest.raises(ValueError, match="spans more than 4294967295 bytes"):
        mem.bind(TensorAttr(**kw))
    assert mem.shape == (64,)
    a = ctx.input_attrs[0]
    a.dims, a.type, a.fmt = kw["dims"], kw["type"], kw.get("fmt", TensorFormat.NCHW)
    with pytest.raises(ValueError, match="spans more than 4294967295 bytes"):
        ctx.set_io_mem(mem, a)
    assert ctx.flow == "none" and mem.shape == (64,)


def test_large_but_valid_layout_names_the_size_it_needs(track):
    ctx = track.model("tiny_relu")
    mem = track.mem(ctx.create_mem(64))
    a = TensorAttr(dims=[1, 2**16, 2**15, 2], fmt=TensorFormat.NHWC, type=TensorType.UINT8)
    with pytest.raises(ValueError, match="spans more than"):
        mem.bind(a)
    a.dims = [1, 2**16, 2**15, 1]
    with pytest.raises(ValueError, match=f"expected at least {2**31} bytes"):
        mem.bind(a)
    a.dims = [0, 2**31, 4, 1]
    assert a.nbytes_with_stride == 0
    assert np.asarray(mem.bind(a)).shape == (0, 2**31, 4, 1)
