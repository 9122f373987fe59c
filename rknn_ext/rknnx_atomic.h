/* Counters of the binding (rknnx._core) that threads touch without a common lock: the
   views of a TensorMem or an output group, the claims on a mem or a context, the live
   contexts and mems that block a runtime switch, the count of mems marked dead.  On a
   GIL build the GIL made each `+= 1` whole; on a free-threaded CPython (no GIL) two
   threads' read-modify-writes could lose one, so each is one atomic operation (GCC and
   Clang builtins, inline on every target the wheels are built for: x86-64, i386,
   aarch64, armv7).  Sequentially consistent: a count read after a flag was set sees
   every change made before that flag was read (docs/architecture.md, Free threading). */
#ifndef RKNNX_ATOMIC_H
#define RKNNX_ATOMIC_H

#define rknnx_atomic_add(p, d) __atomic_add_fetch((p), (d), __ATOMIC_SEQ_CST)
#define rknnx_atomic_load(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define rknnx_atomic_store(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

/* A word one thread writes while it holds a lock and others read without it.  Each such
   read is a check that only picks what to say or skips work; what decides is read again
   under the lock (or in the critical section on the object) that orders it with the
   write, so the words need no order, only whole loads and stores.  ThreadSanitizer
   reported the plain ones as races under scripts/test-tsan (docs/wheels.md):
   - a context's lock's holder (_ContextBase._owner), which a thread compares only with
     its own id;
   - a context's handle (_ContextBase.ctx, 0 once destroyed) and its closing mark;
   - a TensorMem's descriptor pointer (TensorMem.mem, NULL once destroyed), its closing
     and dead marks;
   - an output group's array (_OutputGroup.outs, NULL once released) and closing mark;
   - a context's flow and the call that chose it (Context._flow, _flow_set_by), set once
     under its lock by the first call of a flow, read early by every call of the other
     flow (and by `flow`, repr) to raise FlowError before anything else.
   Type-generic (pointers, ints, the 64-bit handle): GCC and Clang inline them on every
   target the wheels are built for (x86-64, i386, aarch64, armv7 with LDREXD/STREXD for
   64-bit words, as rknnx_atomic_load of the u64 counters already is).  On x86-64 and
   aarch64 a relaxed load or store is the plain instruction: no cost. */
#define rknnx_relaxed_load(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define rknnx_relaxed_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

#endif
