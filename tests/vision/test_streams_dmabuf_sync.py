"""rknnx.vision.Streams' CPU-access bracket of a dma-buf frame (DMA_BUF_IOCTL_SYNC around
the letterbox) where the ioctl answers an errno: the answers that say "not a dma-buf" or
"no such call" (a memfd's ENOTTY on a kernel; ENOSYS from qemu-user before 8.1, which
answers it to every ioctl it does not know) leave the frame read as plain memory and
detected as the Detector detects it, any other errno fails that stream with it.  No PyAV
nor OpenCV needed: the frames are memfd NV12 buffers."""

from __future__ import annotations

import errno
import fcntl
import struct

import numpy as np
import pytest

import rknnx
from helpers import model_bytes
from rknnx.vision import Detector, Streams
from stream_helpers import memfd_nv12

SYNC = 0x40086200                    # DMA_BUF_IOCTL_SYNC: _IOW('b', 0, __u64)
READ_START, READ_END = 1, 1 | 4      # DMA_BUF_SYNC_READ | START, | END


def _frame():
    """NV12 planes: dark, a bright square, no colour (no OpenCV needed)."""
    y = np.full((360, 640), 16, np.uint8)
    y[100:200, 200:360] = 235
    return y, np.full((180, 640), 128, np.uint8)


def _answering(monkeypatch, code):
    """fcntl.ioctl answering `code` to DMA_BUF_IOCTL_SYNC; the calls, as (fd, flags)."""
    calls = []
    real = fcntl.ioctl

    def ioctl(fd, request, arg=0, *rest):
        if request != SYNC:
            return real(fd, request, arg, *rest)
        calls.append((fd, struct.unpack("Q", arg)[0]))
        raise OSError(code, f"{errno.errorcode[code]} (test)")

    monkeypatch.setattr(fcntl, "ioctl", ioctl)
    return calls


@pytest.mark.parametrize("code", [errno.ENOTTY, errno.ENOSYS],
                         ids=["ENOTTY (a kernel's memfd)", "ENOSYS (qemu-user)"])
def test_a_sync_the_fd_does_not_know_reads_it_as_plain_memory(baseline, monkeypatch, code):
    y, uv = _frame()
    buf = memfd_nv12(y, uv, pitch=768, rows=368)
    model = rknnx.Model(model_bytes("detector"))
    try:
        with Detector(model) as det:
            want = det.detect((y, uv), fmt="nv12")
        calls = _answering(monkeypatch, code)
        with Streams(model, [[buf] * 3], tracker=None) as streams:
            records = list(streams)
    finally:
        buf.close()
        model.close()
    assert [r.error for r in records] == [None] * 3
    for r in records:
        np.testing.assert_array_equal(r.detections.boxes, want.boxes)
    assert len(want) == 1 and abs(want.boxes[0] - (200, 100, 360, 200)).max() < 16
    # each frame bracketed: the start before its read, the end after
    assert calls == [(buf.fd, READ_START), (buf.fd, READ_END)] * 3


@pytest.mark.parametrize("code", [errno.EIO, errno.EPERM])
def test_any_other_sync_errno_fails_the_stream_with_it(baseline, monkeypatch, code):
    y, uv = _frame()
    buf = memfd_nv12(y, uv, pitch=640, rows=360)
    calls = _answering(monkeypatch, code)
    try:
        with Streams(model_bytes("detector"), [[buf] * 2], tracker=None) as streams:
            records = list(streams)
    finally:
        buf.close()
    errors = [r.error for r in records if r.error is not None]
    assert len(errors) == 1 and isinstance(errors[0], OSError)
    assert errors[0].errno == code and str(errors[0]).endswith(f"{errno.errorcode[code]} "
                                                               f"(test)")
    assert calls[0] == (buf.fd, READ_START)
