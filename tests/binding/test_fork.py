"""fork() while another thread is inside run(): in the child every call on an inherited
Context, TensorMem or MatmulContext raises RuntimeError naming the creating process
(instead of waiting for ever on a lock held by a thread the child does not have); the
parent is unaffected.  Run in a subprocess with a timeout."""

from __future__ import annotations

from helpers import FORK_PROBE, run_python

CODE = FORK_PROBE + r"""
import os, sys, threading, time
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl
emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_log_level(0)
ctx = rknnx.lowlevel.Context(samples.tiny_relu())
a_in, a_out = ctx.input_attrs[0], ctx.output_attrs[0]
m_in, m_out = ctx.create_mem(a_in.size_with_stride), ctx.create_mem(a_out.size_with_stride)
ctx.set_io_mem(m_in, a_in); ctx.set_io_mem(m_out, a_out)
mm = rknnx.lowlevel.MatmulContext(4, 32, 32, rknnx.lowlevel.MatmulType.FLOAT16_MM_FLOAT16_TO_FLOAT32)
emu.set_npu_time_us(500_000)
t = threading.Thread(target=ctx.run)
t.start()
time.sleep(0.1)                                   # the run holds the context lock
print_calls_in_a_fork([
    ("run", ctx.run), ("attrs", lambda: ctx.input_attrs), ("close", ctx.close),
    ("sync", m_in.sync), ("view", lambda: np.asarray(m_in)), ("mem close", m_in.close),
    ("matmul", mm.run), ("matmul close", mm.close)])
t.join()
emu.set_npu_time_us(0)
ctx.run()                                        # the parent is unaffected
print("parent run ok")
m_in.close(); m_out.close(); ctx.close(); mm.close()
print("live", emu.counters()["live_contexts"], emu.counters()["live_mems"])
"""


def test_inherited_objects_refuse_every_call_in_the_child():
    proc = run_python(CODE, timeout=90)
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-2000:])
    assert proc.stdout.splitlines() == [
        "run: refused", "attrs: refused", "close: refused", "sync: refused", "view: refused",
        "mem close: refused", "matmul: refused", "matmul close: refused",
        "parent run ok", "live 0 0"], proc.stdout
