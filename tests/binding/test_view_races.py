"""One rule for freeing memory that views point into (TensorMem.close, Outputs.release,
Context.close): once a close has started, new views are refused, even while the close
waits for a run in another thread to finish.  Run in a subprocess: before the rule, the
view outlived the memory and writing through it crashed the interpreter."""

from __future__ import annotations

from helpers import run_python

PRELUDE = """
import threading, time
import numpy as np
import rknnx
from rknnx.emulator import samples
from rknnx.emulator.control import EmulatorControl
emu = EmulatorControl(rknnx.load_runtime("emulator")["path"])
emu.set_log_level(0)

def later(delay, fn, out):
    def body():
        time.sleep(delay)
        try:
            fn()
            out.append("ok")
        except Exception as e:
            out.append(f"{type(e).__name__}: {e}")
    t = threading.Thread(target=body)
    t.start()
    return t
"""


def _run(code):
    proc = run_python(PRELUDE + code, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    return proc.stdout.splitlines()


def test_tensor_mem_refuses_views_while_closing():
    out = _run("""
ctx = rknnx.lowlevel.Context(samples.tiny_relu())
a_in, a_out = ctx.input_attrs[0], ctx.output_attrs[0]
m_in, m_out = ctx.create_mem(a_in.size_with_stride), ctx.create_mem(a_out.size_with_stride)
ctx.set_io_mem(m_in, a_in); ctx.set_io_mem(m_out, a_out)
emu.set_npu_time_us(400_000)            # each run holds the context lock for 0.4 s
res_run, res_close = [], []
t_run = later(0.0, ctx.run, res_run)
t_close = later(0.1, m_in.close, res_close)   # waits behind the run
time.sleep(0.2)
try:
    v = np.asarray(m_in)                 # the window: the close has started
    v[...] = 1                           # (before the rule: freed under it, then a crash)
    t_close.join(); t_run.join()
    v[...] = 2
    print("view handed out", res_close)
except BufferError as e:
    print("refused:", e)
t_close.join(); t_run.join()
print("close:", res_close, "run:", res_run, "closed:", m_in.closed)
emu.set_npu_time_us(0)
m_in2 = ctx.create_mem(a_in.size_with_stride)   # rebind and run again
ctx.set_io_mem(m_in2, a_in)
m_in2.sync(); ctx.run(); m_out.sync()
m_in2.close(); m_out.close(); ctx.close()
print("live", emu.counters()["live_mems"], emu.counters()["live_contexts"])
""")
    assert out[0] == "refused: cannot export a view: the TensorMem is being closed", out
    assert out[1] == "close: ['ok'] run: ['ok'] closed: True", out
    assert out[2] == "live 0 0", out


def test_outputs_refuse_views_while_releasing():
    out = _run("""
ctx = rknnx.lowlevel.Context(samples.tiny_relu())
x = np.ones(ctx.input_attrs[0].dims, np.float32)
ctx.inputs_set([x]); ctx.run()
outs = ctx.outputs_get(want_float=True)
emu.set_npu_time_us(400_000)
res_run, res_rel = [], []
t_run = later(0.0, ctx.run, res_run)
t_rel = later(0.1, outs.release, res_rel)     # waits behind the run
time.sleep(0.2)
try:
    v = np.asarray(outs[0])
    t_rel.join()
    print("view handed out", res_rel, outs.released)
    del v
except BufferError as e:
    print("refused:", e)
t_rel.join(); t_run.join()
print("release:", res_rel, "run:", res_run, "released:", outs.released)
emu.set_npu_time_us(0)
ctx.close()
print("live", emu.counters()["live_output_buffers"], emu.counters()["live_contexts"])
""")
    assert out[0] == "refused: cannot export a view: the outputs are being released", out
    assert out[1] == "release: ['ok'] run: ['ok'] released: True", out
    assert out[2] == "live 0 0", out


def test_context_close_counts_views_made_while_it_waited():
    out = _run("""
ctx = rknnx.lowlevel.Context(samples.tiny_relu())
a_in, a_out = ctx.input_attrs[0], ctx.output_attrs[0]
m_in, m_out = ctx.create_mem(a_in.size_with_stride), ctx.create_mem(a_out.size_with_stride)
ctx.set_io_mem(m_in, a_in); ctx.set_io_mem(m_out, a_out)
emu.set_npu_time_us(400_000)
res_run, res_close = [], []
t_run = later(0.0, ctx.run, res_run)
t_close = later(0.1, ctx.close, res_close)    # waits behind the run, then marks closing
time.sleep(0.2)
v = np.asarray(m_out)                         # made before the close marked anything
t_close.join(); t_run.join()
print("close:", res_close, ctx.closed, m_out.closed)
v[...] = 0                                    # still valid memory
del v
emu.set_npu_time_us(0)
m_in.close(); m_out.close(); ctx.close()
print("live", emu.counters()["live_mems"], emu.counters()["live_contexts"])
""")
    assert out[0] == ("close: ['BufferError: 1 buffer view(s) still exported; delete the numpy "
                      "arrays first'] False False"), out
    assert out[1] == "live 0 0", out
