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

/* A word one thread writes while it holds a lock and others read without it: a context's
   lock's holder (_ContextBase._owner), which a thread compares only with its own id, so
   it needs no order, only whole loads and stores (ThreadSanitizer reported the plain
   ones as a race under scripts/test-tsan). */
#define rknnx_relaxed_load(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define rknnx_relaxed_store(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

#endif
