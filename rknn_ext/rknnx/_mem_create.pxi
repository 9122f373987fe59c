# Making a TensorMem: the bodies of Context.create_mem* (the methods in _context.pxi are
# their documented wrappers) and the module-level create_mem2 (ALLOC_NO_CONTEXT).
#
# Every call follows one sequence: the arguments are checked and the TensorMem object is
# made first (no Python object is allocated while the context lock is held, see
# _context.pxi), then under the lock the runtime allocates with the GIL released, and the
# new mem is registered with its context before the lock is released (_adopt_created), so
# a close() in another thread either refused the call or finds the mem.


cdef int _adopt_created(_ContextBase self, TensorMem t, rknn_tensor_mem* m, object owner,
                        bint no_ctx) except -1:
    """With the lock held right after a create call: give `m` to `t` and register it with
    the context (unless `m` is NULL), then release the lock.  0 when `m` is NULL (the
    caller raises, naming the call), else 1."""
    if m == NULL:
        self._release()
        return 0
    try:
        self._adopt(t, m, owner, no_ctx)
    finally:
        self._release()
    return 1


cdef object _unmappable_fd_kind(int mode, unsigned long long rdev):
    """What an fd is, when it is a kind that can never hold NPU memory (else None)."""
    if _stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if _stat.S_ISSOCK(mode):
        return "a socket"
    if _stat.S_ISDIR(mode):
        return "a directory"
    if _stat.S_ISCHR(mode) and _os.major(rdev) == 1 and _os.minor(rdev) in (3, 7, 8, 9):
        # /dev/null, /dev/full, /dev/random, /dev/urandom (Linux mem devices)
        names = {3: "/dev/null", 7: "/dev/full", 8: "/dev/random", 9: "/dev/urandom"}
        return f"the character device {names[_os.minor(rdev)]}"
    return None



cdef TensorMem _create_mem(Context self, object size):
    cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
    cdef rknn_tensor_mem* m
    cdef TensorMem t = TensorMem.__new__(TensorMem)
    self._check_open(b"create_mem")
    require(<void*>_api.rknn_create_mem, b"rknn_create_mem")
    self._enter(b"create_mem")
    with nogil:
        m = _api.rknn_create_mem(self.ctx, <uint32_t>n)
    if not _adopt_created(self, t, m, None, False):
        raise RKNNError(f"rknn_create_mem returned NULL (size {n})", None, "rknn_create_mem")
    return t


cdef TensorMem _create_mem2(Context self, object size, object flags):
    cdef uint64_t f = _alloc_flags(flags)
    cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
    cdef rknn_tensor_mem* m
    cdef TensorMem t = TensorMem.__new__(TensorMem)
    self._check_open(b"create_mem2")
    require(<void*>_api.rknn_create_mem2, b"rknn_create_mem2")
    self._enter(b"create_mem2")
    with nogil:
        m = _api.rknn_create_mem2(self.ctx, n, f)
    if not _adopt_created(self, t, m, None, (f & RKNN_MEM_FLAG_ALLOC_NO_CONTEXT) != 0):
        raise RKNNError(f"rknn_create_mem2 returned NULL (size {n}, flags 0x{f:x})", None,
                        "rknn_create_mem2")
    return t


cdef TensorMem _create_mem_from_fd(Context self, object fd, object size, object offset,
                                   object virt_addr, object owner):
    cdef long long cfd, coff
    cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
    cdef void* virt = NULL
    cdef Py_ssize_t vlen = 0
    cdef rknn_tensor_mem* m
    cdef TensorMem t = TensorMem.__new__(TensorMem)
    if isinstance(fd, int):
        cfd = fd
    elif hasattr(fd, "fileno"):
        cfd = fd.fileno()
        if owner is None:
            owner = fd
    else:
        raise TypeError(f"fd must be an int or have fileno(), got {type(fd).__name__}")
    if not 0 <= cfd <= 0x7FFFFFFF:
        raise ValueError(f"fd must be an open file descriptor (>= 0), got {cfd}")
    coff = offset
    if not 0 <= coff <= 0x7FFFFFFF:
        raise ValueError(f"offset must be 0..2147483647, got {coff}")
    try:
        st = _os.fstat(cfd)
    except OSError as e:
        raise ValueError(f"fd {cfd} is not an open file descriptor ({e.strerror})") from None
    # a regular file (or memfd) knows its size; a dma-buf may report 0: not checked
    if _stat.S_ISREG(st.st_mode) and coff + n > st.st_size:
        raise ValueError(f"offset + size ({coff} + {n}) is beyond the end of fd {cfd} "
                         f"({st.st_size} bytes)")
    pin = None
    if virt_addr is not None:
        if isinstance(virt_addr, int):
            if virt_addr == 0:
                raise ValueError("virt_addr 0 is not an address (pass None to let the "
                                 "runtime map the fd)")
            virt = <void*><size_t>virt_addr
        else:
            pin = _view_pin(virt_addr, &virt, &vlen)
            if <uint64_t>vlen < <uint64_t>coff + n:
                raise ValueError(f"virt_addr buffer of {vlen} bytes is smaller than "
                                 f"offset + size ({coff + n})")
    self._check_open(b"create_mem_from_fd")
    kind = _unmappable_fd_kind(st.st_mode, st.st_rdev)
    if kind is not None:
        raise ValueError(f"create_mem_from_fd: fd {cfd} is {kind}, which cannot be mapped "
                         "as NPU memory; expected a dma-buf, a memfd or a regular file")
    require(<void*>_api.rknn_create_mem_from_fd, b"rknn_create_mem_from_fd")
    self._require_chip(b"rknn_create_mem_from_fd")
    self._enter(b"create_mem_from_fd")
    with nogil:
        m = _api.rknn_create_mem_from_fd(self.ctx, <int32_t>cfd, virt, <uint32_t>n,
                                         <int32_t>coff)
    if not _adopt_created(self, t, m, owner, False):
        raise RKNNError(f"rknn_create_mem_from_fd returned NULL (fd {cfd}, size {n}, "
                        f"offset {coff})", None, "rknn_create_mem_from_fd")
    t._virt_pin = pin
    return t


cdef TensorMem _create_mem_from_phys(Context self, object phys_addr, object size,
                                     object virt_addr, object owner):
    cdef uint64_t phys
    cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
    cdef void* virt = NULL
    cdef Py_ssize_t vlen = 0
    cdef rknn_tensor_mem* m
    cdef TensorMem t = TensorMem.__new__(TensorMem)
    try:
        phys = phys_addr
    except (TypeError, OverflowError):
        raise ValueError(f"phys_addr must be an int in 0..2**64-1, got {phys_addr!r}") from None
    pin = None
    if virt_addr is not None:
        if isinstance(virt_addr, int):
            virt = <void*><size_t>virt_addr
        else:
            pin = _view_pin(virt_addr, &virt, &vlen)
            if <uint64_t>vlen < n:
                raise ValueError(f"virt_addr buffer of {vlen} bytes is smaller than size {n}")
    self._check_open(b"create_mem_from_phys")
    require(<void*>_api.rknn_create_mem_from_phys, b"rknn_create_mem_from_phys")
    self._enter(b"create_mem_from_phys")
    with nogil:
        m = _api.rknn_create_mem_from_phys(self.ctx, phys, virt, <uint32_t>n)
    if not _adopt_created(self, t, m, owner, False):
        raise RKNNError(f"rknn_create_mem_from_phys returned NULL (phys 0x{phys:x}, "
                        f"size {n})", None, "rknn_create_mem_from_phys")
    t._virt_pin = pin
    return t


cdef TensorMem _create_mem_from_mb_blk(Context self, object mb_blk, object offset,
                                       object owner):
    cdef size_t blk
    cdef long long coff = offset
    cdef rknn_tensor_mem* m
    cdef TensorMem t = TensorMem.__new__(TensorMem)
    try:
        blk = mb_blk
    except (TypeError, OverflowError):
        raise TypeError(f"mb_blk must be an int handle, got {mb_blk!r}") from None
    if blk == 0:
        raise ValueError("mb_blk must be a non-NULL MB_BLK handle")
    if not 0 <= coff <= 0x7FFFFFFF:
        raise ValueError(f"offset must be 0..2147483647, got {coff}")
    self._check_open(b"create_mem_from_mb_blk")
    require(<void*>_api.rknn_create_mem_from_mb_blk, b"rknn_create_mem_from_mb_blk")
    self._require_chip(b"rknn_create_mem_from_mb_blk")
    self._enter(b"create_mem_from_mb_blk")
    with nogil:
        m = _api.rknn_create_mem_from_mb_blk(self.ctx, <void*>blk, <int32_t>coff)
    if not _adopt_created(self, t, m, owner, False):
        raise RKNNError("rknn_create_mem_from_mb_blk returned NULL (unsupported by this "
                        "runtime or platform)", None, "rknn_create_mem_from_mb_blk")
    return t


# ---- allocation (module level: for ALLOC_NO_CONTEXT) ----------------------------------------
def create_mem2(size, flags=RKNN_MEM_FLAG_ALLOC_NO_CONTEXT, Context context=None):
    """Allocate NPU memory with ``rknn_create_mem2``, with or without a context.

    Parameters
    ----------
    size : int
        Bytes (1 .. 2**32 - 1).
    flags : MemAllocFlag, default ALLOC_NO_CONTEXT
        ``CACHEABLE``/``NON_CACHEABLE``/``TRY_ALLOC_SRAM``, OR-ed with
        ``ALLOC_NO_CONTEXT`` to allocate without a context (then ``context`` must be
        None): the way to hold a model for ``RKNN_FLAG_MODEL_BUFFER_ZERO_COPY``.
    context : Context, optional
        The allocating context (required without ``ALLOC_NO_CONTEXT``).

    Returns
    -------
    TensorMem

    Raises
    ------
    ValueError
        For a bad size or flags, or a closed / missing context.
    RKNNError
        If the runtime returns NULL.

    .. versionadded:: 0.1.0
    """
    cdef uint64_t f = _alloc_flags(flags)
    if context is not None:
        return context.create_mem2(size, flags)
    if not f & RKNN_MEM_FLAG_ALLOC_NO_CONTEXT:
        raise ValueError("create_mem2 without a context needs MemAllocFlag.ALLOC_NO_CONTEXT "
                         "in flags (or pass context=)")
    cdef uint64_t n = _mem_size(size, 0xFFFFFFFF)
    cdef rknn_tensor_mem* m = NULL
    cdef TensorMem t = TensorMem.__new__(TensorMem)
    ensure_runtime()
    # counted before the call (GIL released), under the loader lock, as Context() is: a
    # runtime switch cannot happen while the mem is being made in the current runtime
    with _load_lock:
        _atomic_add_ssize(&_live_free_mems, 1)
    try:
        require(<void*>_api.rknn_create_mem2, b"rknn_create_mem2")
        with nogil:
            m = _api.rknn_create_mem2(0, n, f)
    finally:
        if m == NULL:
            _atomic_add_ssize(&_live_free_mems, -1)
    if m == NULL:
        raise RKNNError(f"rknn_create_mem2 returned NULL (size {n}, flags 0x{f:x})", None,
                        "rknn_create_mem2")
    t.mem = m
    return t


cdef uint64_t _mem_size(object size, uint64_t limit) except 0:
    cdef object v
    if isinstance(size, bool):
        raise TypeError(f"size must be an integer number of bytes, got bool ({size!r})")
    try:
        v = size.__index__()
    except AttributeError:
        raise TypeError(f"size must be an integer number of bytes, got "
                        f"{type(size).__name__}") from None
    if not 0 < v <= limit:
        raise ValueError(f"size must be 1..{limit} bytes, got {v}")
    return <uint64_t>v


cdef uint64_t _alloc_flags(object flags) except? 0xFFFFFFFFFFFFFFFF:
    cdef object v = int(flags)
    cdef object known = (RKNN_FLAG_MEMORY_CACHEABLE | RKNN_FLAG_MEMORY_NON_CACHEABLE |
                         RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM | RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    if v < 0:
        raise ValueError(f"flags must be a non-negative combination of MemAllocFlag values "
                         f"(CACHEABLE, NON_CACHEABLE, TRY_ALLOC_SRAM, ALLOC_NO_CONTEXT), got {v}")
    if v & ~known:
        raise ValueError(f"flags 0x{v:x} has unknown bits; expected MemAllocFlag values "
                         f"(CACHEABLE, NON_CACHEABLE, TRY_ALLOC_SRAM, ALLOC_NO_CONTEXT)")
    if (v & RKNN_FLAG_MEMORY_CACHEABLE) and (v & RKNN_FLAG_MEMORY_NON_CACHEABLE):
        raise ValueError("flags cannot be both CACHEABLE and NON_CACHEABLE")
    return <uint64_t>v
