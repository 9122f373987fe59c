"""Objects made without __init__ and objects the garbage collector tears down: they say
what they are, never crash, and never write into a cleared reference."""

from __future__ import annotations


import pytest

import rknnx

from helpers import probe


def test_gc_clear_never_writes_into_none():
    # A cycle through an exporter (mem -> owner -> memoryview -> exporter -> mem): tp_clear
    # used to set the exporter's field to None before __releasebuffer__ decremented
    # a counter through it, writing into CPython's None / NoneType.
    out = probe("""
        import ctypes
        from rknnx.emulator.control import EmulatorControl, find_emulator_library
        ctl = EmulatorControl(find_emulator_library())
        live = lambda: {k: ctl.counters()[k] for k in ("live_contexts", "live_mems",
                                                       "live_output_buffers")}
        ob_size = lambda: ctypes.c_ssize_t.from_address(id(type(None)) + 16).value
        before = (type(None).__name__, ob_size(), live())
        ctx = C.Context(TINY)
        base = ctx.create_mem(4096)
        for i in range(3):
            owner = {}
            m = ctx.create_mem_from_phys(base.phys_addr, 4096, owner=owner)
            owner["view"] = m.raw()               # _RawBytes in the cycle
            del m, owner
            gc.collect()
            c = C.Context(TINY)
            c.inputs_set([np.ones((1, 2), np.float32)]); c.run()
            outs = c.outputs_get()
            owner = {}
            m = c.create_mem_from_phys(base.phys_addr, 4096, owner=owner)
            c.set_internal_mem(m)
            owner["view"] = memoryview(outs[0])   # Output in the cycle
            owner["outs"] = outs                  # Outputs too
            del c, outs, m, owner
            gc.collect()
        base.close(); ctx.close()
        print(before == (type(None).__name__, ob_size(), live()), before)
    """)
    assert out.startswith("True"), out


def test_every_class_survives_new_without_init():
    # every attribute, method (without arguments), view and repr of every class made with
    # cls.__new__(cls): exceptions only, never a crash
    out = probe("""
        import copy, pickle
        classes = [v for v in vars(C).values() if isinstance(v, type)
                   and v.__module__ == "rknnx._core" and not issubclass(v, BaseException)
                   and not hasattr(v, "_fields") and not hasattr(v, "__members__")]
        skip = {"__init__", "__new__", "__init_subclass__", "__subclasshook__", "__class__",
                "__getattribute__", "__setattr__", "__delattr__", "__reduce_ex__",
                "__format__", "__getstate__", "__setstate__", "__class_getitem__", "__dir__",
                "__sizeof__"}
        ops = [memoryview, np.asarray, np.from_dlpack, repr, pickle.dumps, copy.copy]
        for cls in classes:
            for name in sorted(set(dir(cls)) - skip):
                o = cls.__new__(cls)
                try:
                    v = getattr(o, name)
                    if callable(v):
                        v()
                except Exception:
                    pass
            for op in ops:
                try:
                    op(cls.__new__(cls))
                except Exception:
                    pass
        print(len(classes), "classes ok")
    """)
    assert "classes ok" in out


def test_objects_made_without_init_say_so():
    out = probe("""
        def err(f):
            try:
                f()
            except Exception as e:
                return f"{type(e).__name__}: {e}"
            return "no error"
        o = C.Output.__new__(C.Output)
        print(err(lambda: o.size))
        print(err(lambda: memoryview(o)))
        print(o.released, o.shape, o.dtype)
        outs = C.Outputs.__new__(C.Outputs)
        outs.release()
        print(len(outs), outs.released, repr(outs))
        print(err(lambda: C.Context.__new__(C.Context).dup()))
        print(err(lambda: C.Context.__new__(C.Context).run()))
        print(err(lambda: C.Context.__new__(C.Context).create_mem(16)))
        print(C.CustomOpContext.__new__(C.CustomOpContext).op_type)
    """).splitlines()
    assert out[0] == "ValueError: not created by the runtime: Output objects come from " \
                     "Context.outputs_get()"
    assert out[1].startswith("BufferError: not created by the runtime")
    assert out[2] == "True (0,) uint8"
    assert out[3] == "0 True <Outputs n=0 frame_id=0 released>"
    assert out[4] == "ValueError: dup on closed Context"
    assert out[5] == "ValueError: run on closed Context"
    assert out[6] == "ValueError: create_mem on closed Context"
    assert out[7] == "None"


def test_uninitialized_custom_op_is_refused(track):
    ctx = track.model("tiny_relu")
    with pytest.raises(TypeError, match="made without __init__"):
        ctx.register_custom_ops([rknnx.lowlevel.CustomOp.__new__(rknnx.lowlevel.CustomOp)])
