"""A context's close() never destroys a mem that is another context's model buffer: the
one close sequence of Context and MatmulContext refuses (BufferError), closing nothing."""

from __future__ import annotations

import numpy as np
import pytest

from rknnx.lowlevel import MatmulType


def test_matmul_close_refuses_while_its_mem_holds_a_model(track, bh, emu):
    m = bh.model_bytes("tiny_relu")
    mm = track.matmul(2, 64, 64, MatmulType.FLOAT16_MM_FLOAT16_TO_FLOAT32)
    buf = mm.create_mem(len(m))
    np.frombuffer(buf, np.uint8)[:] = np.frombuffer(m, np.uint8)
    ctx = track.context(None, model_mem=buf)
    with pytest.raises(BufferError, match="model buffer of an open Context"):
        mm.close()
    assert not mm.closed and not buf.closed            # nothing was closed
    ctx.inputs_set([np.float32([[3, -3]])])
    ctx.run()                                          # the model memory is still there
    with ctx.outputs_get(want_float=True) as o:
        assert np.asarray(o[0]).tolist() == [[3.0, 0.0]]
    ctx.close()
    buf.close()
    mm.close()
    assert mm.closed
