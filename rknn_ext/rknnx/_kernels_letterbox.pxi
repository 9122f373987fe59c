# The letterbox kernel (rknn_ext/kernels/letterbox.h): one C pass from a camera frame to
# a network input, the GIL released.  rknnx.vision.letterbox checks the user's arguments
# and works out the geometry; this slice only refuses parameters under which the C would
# touch memory outside the arrays it was given (every byte it reads or writes is inside
# their extents), so a wrong call is an exception, never a crash.

from libc.stdint cimport int32_t
from libc.string cimport strcmp
from cpython.buffer cimport (PyObject_GetBuffer as _lb_getbuf,
                             PyBuffer_Release as _lb_release, PyBUF_RECORDS_RO as _LB_RO,
                             PyBUF_RECORDS as _LB_RW)

cdef extern from "kernels/letterbox.h" nogil:
    enum:
        RKNNX_LB_BGR
        RKNNX_LB_NV12
        RKNNX_LB_I420
        RKNNX_LB_OK
        RKNNX_LB_ENOMEM
    ctypedef struct rknnx_lb_params:
        int fmt
        Py_ssize_t w, h
        const unsigned char* src
        Py_ssize_t src_row, src_px, src_ch
        const unsigned char* uv
        Py_ssize_t uv_row
        const unsigned char* v
        Py_ssize_t v_row
        int matrix
        unsigned char* dst
        Py_ssize_t W, H
        Py_ssize_t dst_row, dst_px
        Py_ssize_t dst_ch[3]
        Py_ssize_t nw, nh, left, top
        int swap_rb
        const unsigned char* lut
        unsigned char pad[3]
        int elem
        unsigned char padx[12]
    int rknnx_lb_run(const rknnx_lb_params* p)
    void rknnx_lb_taps(Py_ssize_t s, Py_ssize_t n, int bits, int32_t* i, int32_t* wgt)


cdef int _lb_extent(Py_buffer* v, long long* lo, long long* hi) except -1:
    """The byte offsets (from v.buf) of the first and last byte of the buffer."""
    cdef int k
    cdef long long a = 0, b = 0, e
    if v.ndim == 0 or v.strides == NULL:
        lo[0] = 0
        hi[0] = <long long>v.len - 1
        return 0
    for k in range(v.ndim):
        if v.shape[k] == 0:
            raise ValueError("letterbox: an empty array")
        e = <long long>(v.shape[k] - 1) * v.strides[k]
        if e < 0:
            a += e
        else:
            b += e
    lo[0] = a
    hi[0] = b + v.itemsize - 1
    return 0


cdef int _lb_inside(long long c0, long long c1, const long long* ch, long long lo,
                    long long hi, str what) except -1:
    """Every offset i c0 + j c1 + ch[k] (i, j in {0, 1}, k < 3) within [lo, hi]: the
    corners of the rows and columns touched, every channel."""
    cdef int i, j, k
    cdef long long o
    for i in range(2):
        for j in range(2):
            for k in range(3):
                o = i * c0 + j * c1 + ch[k]
                if o < lo or o > hi:
                    raise ValueError(f"letterbox: the {what} geometry reaches outside its "
                                     f"array (byte {o}, the array spans {lo}..{hi})")
    return 0


def letterbox_run(src, uv, dst, int fmt, Py_ssize_t w, Py_ssize_t h, Py_ssize_t src_row,
                  Py_ssize_t src_px, Py_ssize_t src_ch, Py_ssize_t uv_row,
                  Py_ssize_t W, Py_ssize_t H, Py_ssize_t dst_row, Py_ssize_t dst_px,
                  tuple dst_ch, Py_ssize_t nw, Py_ssize_t nh, Py_ssize_t left,
                  Py_ssize_t top, bint swap_rb, lut, bytes pad, vplane=None,
                  Py_ssize_t v_row=0, int matrix=0, int elem=1, bytes padx=None,
                  bint keep=False, frame=None):
    """The C pass rknnx.vision.letterbox calls (rknnx.vision.letterbox is the API for
    people: it checks the user's arguments and works out these numbers).  Byte strides and offsets are
    relative to each array's first element (``a.ctypes.data``); `lut` is None or 768
    bytes, `pad` 3 bytes; I420: `uv` is the U plane, `vplane` the V plane; `matrix` 0
    (BT.601) or 1 (BT.709); `elem` the output's element bytes (1, or 2 / 4 for float16 /
    float32: `lut` then holds 768 elements, `padx` the 3 pad elements).  With `keep`,
    returns a :class:`LetterboxPlan` of these numbers and the geometry of `dst` and of
    `frame` (what the user gave: one array holding every plane, default `src`, or a tuple
    or list of the planes `src`, `uv`, `vplane` themselves), each plane's place in it
    (None where a plane is not inside it): its ``run`` repeats the pass on arrays of that
    geometry."""
    cdef rknnx_lb_params p
    cdef LetterboxPlan plan = None
    cdef Py_buffer vs, vu, vv, vd
    cdef Py_buffer* planes[3]
    cdef const unsigned char[::1] lv
    cdef long long lo, hi
    cdef long long ext[3]
    cdef long long chs[3]
    cdef int k, r = RKNNX_LB_OK
    if fmt != RKNNX_LB_BGR and fmt != RKNNX_LB_NV12 and fmt != RKNNX_LB_I420:
        raise ValueError(f"letterbox: unknown format code {fmt}")
    if matrix != 0 and matrix != 1:
        raise ValueError(f"letterbox: unknown matrix code {matrix}")
    if w < 2 or h < 2 or nw < 1 or nh < 1 or left < 0 or top < 0 or left + nw > W \
            or top + nh > H:
        raise ValueError("letterbox: a region outside the output, or a frame under 2x2")
    if fmt != RKNNX_LB_BGR and (w % 2 or h % 2):
        raise ValueError("letterbox: an NV12 or I420 frame has an even width and height")
    if len(dst_ch) != 3 or len(pad) != 3:
        raise ValueError("letterbox: three channels")
    if elem != 1 and elem != 2 and elem != 4:
        raise ValueError(f"letterbox: elements of 1, 2 or 4 bytes; got {elem}")
    if elem > 1 and (lut is None or padx is None or len(padx) != 3 * elem):
        raise ValueError("letterbox: float elements need the table and three pad elements")
    memset(&p, 0, sizeof(p))
    p.fmt = fmt
    p.w = w
    p.h = h
    p.src_row = src_row
    p.src_px = src_px
    p.src_ch = src_ch
    p.uv_row = uv_row
    p.v_row = v_row
    p.matrix = matrix
    p.W = W
    p.H = H
    p.dst_row = dst_row
    p.dst_px = dst_px
    p.nw = nw
    p.nh = nh
    p.left = left
    p.top = top
    p.swap_rb = swap_rb
    p.elem = elem
    if elem > 1:
        for k in range(3 * elem):
            p.padx[k] = padx[k]
    for k in range(3):
        p.dst_ch[k] = dst_ch[k]
        chs[k] = p.dst_ch[k]
        p.pad[k] = pad[k]
    if lut is not None:
        lv = lut
        if lv.shape[0] != 768 * elem:
            raise ValueError("letterbox: the table has 3 x 256 entries")
        p.lut = &lv[0]
    if keep:
        plan = LetterboxPlan.__new__(LetterboxPlan)
        plan.lut = lv if lut is not None else None
    vs.buf = NULL
    vu.buf = NULL
    vv.buf = NULL
    vd.buf = NULL
    _lb_getbuf(src, &vs, _LB_RO)
    try:
        if vs.itemsize != 1:
            raise TypeError("letterbox: the frame has 8-bit elements")
        _lb_extent(&vs, &lo, &hi)
        if fmt == RKNNX_LB_BGR:
            for k in range(3):
                ext[k] = <long long>k * src_ch
            _lb_inside(<long long>(h - 1) * src_row, <long long>(w - 1) * src_px, ext,
                       lo, hi, "frame")
        else:
            for k in range(3):
                ext[k] = 0
            _lb_inside(<long long>(h - 1) * src_row, <long long>(w - 1), ext, lo, hi,
                       "Y plane")
            _lb_getbuf(uv, &vu, _LB_RO)
            if vu.itemsize != 1:
                raise TypeError("letterbox: the UV plane has 8-bit elements")
            _lb_extent(&vu, &lo, &hi)
            # NV12: w bytes of U, V pairs a row; I420: w / 2 bytes of U
            _lb_inside(<long long>(h // 2 - 1) * uv_row,
                       <long long>(w - 1 if fmt == RKNNX_LB_NV12 else w // 2 - 1), ext, lo,
                       hi, "UV plane" if fmt == RKNNX_LB_NV12 else "U plane")
            p.uv = <const unsigned char*>vu.buf
            if fmt == RKNNX_LB_I420:
                if vplane is None:
                    raise ValueError("letterbox: an I420 frame needs its V plane")
                _lb_getbuf(vplane, &vv, _LB_RO)
                if vv.itemsize != 1:
                    raise TypeError("letterbox: the V plane has 8-bit elements")
                _lb_extent(&vv, &lo, &hi)
                _lb_inside(<long long>(h // 2 - 1) * v_row, <long long>(w // 2 - 1), ext, lo,
                           hi, "V plane")
                p.v = <const unsigned char*>vv.buf
        _lb_getbuf(dst, &vd, _LB_RW)
        if vd.itemsize != elem:
            raise TypeError(f"letterbox: the output has {8 * elem}-bit elements")
        _lb_extent(&vd, &lo, &hi)
        # every element's last byte inside too
        _lb_inside(<long long>(H - 1) * dst_row, <long long>(W - 1) * dst_px, chs, lo,
                   hi - (elem - 1), "output")
        if plan is not None:
            plan.p = p
            planes[0] = &vs
            planes[1] = &vu
            planes[2] = &vv
            if not _lb_plan_parts(plan, src if frame is None else frame, planes,
                                  1 if fmt == RKNNX_LB_BGR else
                                  2 if fmt == RKNNX_LB_NV12 else 3):
                plan = None
        if plan is not None:
            _lb_geometry(&vd, plan.dst_shape, plan.dst_strides, &plan.dst_ndim)
            plan.dst_format = vd.format if vd.format != NULL else b"B"
            plan.dst_lo = lo
            plan.dst_hi = hi
        p.src = <const unsigned char*>vs.buf
        p.dst = <unsigned char*>vd.buf
        with nogil:
            r = rknnx_lb_run(&p)
    finally:
        if vd.buf != NULL:
            _lb_release(&vd)
        if vv.buf != NULL:
            _lb_release(&vv)
        if vu.buf != NULL:
            _lb_release(&vu)
        if vs.buf != NULL:
            _lb_release(&vs)
    if r == RKNNX_LB_ENOMEM:
        raise MemoryError("letterbox: no memory for the row buffers")
    if r != RKNNX_LB_OK:
        raise ValueError(f"letterbox: the kernel refused its parameters ({r})")
    return plan


cdef int _lb_geometry(Py_buffer* v, Py_ssize_t* shape, Py_ssize_t* strides,
                      int* ndim) except -1:
    """A buffer's shape and byte strides (up to 5 dimensions) into the arrays given."""
    cdef int k
    if v.ndim > 5 or v.shape == NULL or v.strides == NULL:
        raise ValueError("letterbox: a plan is of arrays of at most 5 dimensions")
    ndim[0] = v.ndim
    for k in range(v.ndim):
        shape[k] = v.shape[k]
        strides[k] = v.strides[k]
    return 0


cdef bint _lb_same(Py_buffer* v, const Py_ssize_t* shape, const Py_ssize_t* strides,
                   int ndim, bytes fmt):
    """The buffer has this shape, these byte strides and this element format."""
    cdef int k
    if v.ndim != ndim or v.shape == NULL or v.strides == NULL:
        return False
    for k in range(ndim):
        if v.shape[k] != shape[k] or v.strides[k] != strides[k]:
            return False
    if v.format == NULL:
        return fmt == b"B"
    return strcmp(v.format, fmt) == 0


cdef int _lb_plan_parts(LetterboxPlan plan, object frame, Py_buffer** planes,
                        int nplanes) except -1:
    """The frame's parts into the plan: one array holding every plane (each plane at a
    byte offset from its start), or a tuple or list of the planes (plane k is part k, at
    its start).  Returns 0 (no plan) where a plane is not inside its part so: a later
    frame of the same geometry would not hold that plane at the same place."""
    cdef Py_buffer vb
    cdef int k, n, part
    cdef long long lo, hi, plo, phi, off
    if isinstance(frame, (tuple, list)):
        n = len(frame)
        if n != nplanes:
            return 0
        parts = tuple(frame)
    else:
        n = 1
        parts = (frame,)
    plan.nsrc = n
    formats = []
    for part in range(n):
        vb.buf = NULL
        _lb_getbuf(parts[part], &vb, _LB_RO)
        try:
            _lb_geometry(&vb, plan.src_shape[part], plan.src_strides[part],
                         &plan.src_ndim[part])
            formats.append(vb.format if vb.format != NULL else b"B")
            _lb_extent(&vb, &lo, &hi)
            plan.src_lo[part] = lo
            plan.src_hi[part] = hi
            for k in range(nplanes):
                if n > 1 and k != part:
                    continue
                off = <long long>(<const char*>planes[k].buf - <const char*>vb.buf)
                _lb_extent(planes[k], &plo, &phi)
                if off + plo < lo or off + phi > hi or (n > 1 and off != 0):
                    return 0
                plan.off[k] = <Py_ssize_t>off
        finally:
            _lb_release(&vb)
    plan.src_format = tuple(formats)
    plan.nplanes = nplanes
    return 1


cdef class LetterboxPlan:
    """The numbers of one letterbox pass (letterbox_run(..., keep=True)) and the geometry
    of its frame (one array, or the tuple of its planes) and output: :meth:`run` repeats
    the pass on another frame and output of exactly that geometry (shape, byte strides,
    element type of each array; each plane at its place in the frame), so a repeated call
    of rknnx.vision.letterbox is a look-up and this.  Nothing is kept of the arrays
    themselves: a plan holds no buffer."""
    cdef rknnx_lb_params p
    cdef int nsrc                   # 1: one array holds every plane; 2, 3: a plane each
    cdef int nplanes                # 1 (BGR), 2 (NV12: Y, UV), 3 (I420: Y, U, V)
    cdef Py_ssize_t off[3]          # each plane's first byte from its part's
    cdef Py_ssize_t src_shape[3][5]
    cdef Py_ssize_t src_strides[3][5]
    cdef Py_ssize_t dst_shape[5]
    cdef Py_ssize_t dst_strides[5]
    cdef int src_ndim[3]
    cdef int dst_ndim
    cdef tuple src_format
    cdef bytes dst_format
    cdef long long src_lo[3]
    cdef long long src_hi[3]
    cdef long long dst_lo, dst_hi
    cdef object lut                 # the table the params point into, kept alive
    cdef public object box          # rknnx.vision's Letterbox of the pass
    cdef public object ref          # a weak reference to a session's input view, or None

    def run(self, src, dst):
        """The pass from `src` (an array, or a tuple or list of planes, as the plan's
        frame was) into `dst` when each has the plan's geometry, `dst` is writable and
        apart from every part of `src` (then True); else False, nothing done (the caller
        takes the checking path, which says what is wrong)."""
        cdef Py_buffer vs[3]
        cdef Py_buffer vd
        cdef rknnx_lb_params p
        cdef const char* a
        cdef const char* b
        cdef const unsigned char* base[3]
        cdef int k, n = self.nsrc, r = RKNNX_LB_OK
        if isinstance(src, (tuple, list)):
            if n == 1 or len(src) != n:
                return False
            parts = src
        elif n != 1:
            return False
        else:
            parts = (src,)
        for k in range(3):
            vs[k].buf = NULL
        vd.buf = NULL
        try:
            for k in range(n):
                _lb_getbuf(parts[k], &vs[k], _LB_RO)
                if not _lb_same(&vs[k], self.src_shape[k], self.src_strides[k],
                                self.src_ndim[k], self.src_format[k]):
                    return False
            _lb_getbuf(dst, &vd, _LB_RO)
            if vd.readonly or not _lb_same(&vd, self.dst_shape, self.dst_strides,
                                           self.dst_ndim, self.dst_format):
                return False
            b = <const char*>vd.buf
            for k in range(n):
                a = <const char*>vs[k].buf
                if a + self.src_lo[k] <= b + self.dst_hi and \
                        b + self.dst_lo <= a + self.src_hi[k]:
                    return False        # overlapping (np.may_share_memory's bounds)
                base[k] = <const unsigned char*>vs[k].buf
            p = self.p
            p.src = base[0] + self.off[0]
            if self.nplanes > 1:
                p.uv = base[0 if n == 1 else 1] + self.off[1]
            if self.nplanes > 2:
                p.v = base[0 if n == 1 else 2] + self.off[2]
            p.dst = <unsigned char*>vd.buf
            with nogil:
                r = rknnx_lb_run(&p)
        finally:
            if vd.buf != NULL:
                _lb_release(&vd)
            for k in range(3):
                if vs[k].buf != NULL:
                    _lb_release(&vs[k])
        if r == RKNNX_LB_ENOMEM:
            raise MemoryError("letterbox: no memory for the row buffers")
        if r != RKNNX_LB_OK:
            raise ValueError(f"letterbox: the kernel refused its parameters ({r})")
        return True


def _letterbox_taps(Py_ssize_t s, Py_ssize_t n, int bits):
    """Private (tests): the C's taps of one axis, (index, weight) as two int32 arrays."""
    cdef int32_t[::1] iv
    cdef int32_t[::1] wv
    if s < 2 or n < 1 or bits not in (8, 11):
        raise ValueError("letterbox taps: s >= 2, n >= 1, bits 8 or 11")
    i = _np.empty(n, _np.int32)
    wg = _np.empty(n, _np.int32)
    iv = i
    wv = wg
    rknnx_lb_taps(s, n, bits, &iv[0], &wv[0])
    return i, wg
