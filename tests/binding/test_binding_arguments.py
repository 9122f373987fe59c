"""Argument checks before C: bad sizes, flags, fds and indices raise a clear Python
exception that says what was expected."""

from __future__ import annotations

import numpy as np
import pytest

import rknnx


def test_bad_arguments_raise_clear_errors(track, tmp_path):
    ctx = track.model("tiny_relu")
    x = np.ones((1, 2), np.float32)
    with pytest.raises(IndexError, match=f"input index {2**70} out of range"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, index=2**70)])
    with pytest.raises(TypeError, match="Input.type must be an int, got str"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, type="f")])
    with pytest.raises(TypeError, match="Input.fmt must be an int, got str"):
        ctx.inputs_set([rknnx.lowlevel.Input(x, fmt="NHWC")])
    with pytest.raises(ValueError, match=r"timeout_ms must be 0..4294967295"):
        ctx.run(timeout_ms=2**40)
    with pytest.raises(ValueError, match=r"timeout_ms must be 0..4294967295"):
        ctx.wait(timeout_ms=-1)
    with pytest.raises(ValueError, match="flags must be a non-negative combination.*got -1"):
        rknnx.lowlevel.create_mem2(16, -1)
    with pytest.raises(TypeError, match="got bool"):
        ctx.create_mem(True)
    mem = track.mem(ctx.create_mem(16))
    with pytest.raises(TypeError, match="max_version must be a .major, minor. tuple"):
        mem.__dlpack__(max_version=())
    ctx.inputs_set([x])
    ctx.run()
    with pytest.raises(ValueError, match="needs exactly 8 bytes"):
        ctx.outputs_get(want_float=True, out=[np.empty(100, np.float32)])
    with pytest.raises(TypeError, match="out must be a sequence .list or tuple. of buffers"):
        ctx.outputs_get(want_float=True, out=np.empty((1, 2), np.float32))
    got = ctx.outputs_get(want_float=True, out=[np.empty((1, 2), np.float32)])
    np.testing.assert_array_equal(got[0], [[1, 1]])          # relu


def test_create_mem_from_fd_checks_the_file(track, tmp_path):
    import os

    ctx = track.model("tiny_relu")
    path = tmp_path / "data"
    path.write_bytes(b"\0" * 64)
    fd = os.open(path, os.O_RDWR)
    os.close(fd)
    with pytest.raises(ValueError, match=f"fd {fd} is not an open file descriptor"):
        ctx.create_mem_from_fd(fd, 16)
    with open(path, "r+b") as f:
        with pytest.raises(ValueError, match=r"offset \+ size \(60 \+ 16\) is beyond the end "
                                             r"of fd \d+ \(64 bytes\)"):
            ctx.create_mem_from_fd(f, 16, 60)
        m = track.mem(ctx.create_mem_from_fd(f, 16, 48))
        assert m.size == 16
        m.close()
