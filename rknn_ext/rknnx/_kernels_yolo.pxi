# The YOLO decoders' C (rknn_ext/kernels/yolo.c) for rknnx.vision.decode: the tensors come
# in as (array, description) tuples that rknnx.vision.decode builds from the arrays' own
# strides; every pointer the C reads is checked here against the array's extent before
# the GIL is released.  rknnx.vision.decode calls ``yolo_decode`` and ``yolo_masks``
# (public names of this private module: the contract vision calls; rknnx.vision is the
# API for people).  (Included at the end of
# _kernels.pyx, whose cimports it uses.)

from libc.stdint cimport int32_t
from libc.stdlib cimport malloc, free
from libc.string cimport strcmp

cdef extern from "kernels/yolo.h" nogil:
    ctypedef struct rknnx_y_tensor:
        const char* base
        int dtype
        Py_ssize_t C, H, W, C2
        Py_ssize_t s_c1, s_c2, s_y, s_x
        float scale, zp
        const float* lut
    ctypedef struct rknnx_y_scale:
        rknnx_y_tensor box, cls, sum
        Py_ssize_t box_off, cls_off, obj_off, group
        int na
        float anchors[16]
        float sx, sy
        int qthr, qobj, qsum
        float fsum
        const float* score_lut
        const float* exps
    ctypedef struct rknnx_y_spec:
        int family
        int nscales
        const rknnx_y_scale* scales
        Py_ssize_t nc, reg_max
        int sigmoid
        float conf, iou
        Py_ssize_t max_det, max_nms
        int agnostic
        const unsigned char* class_ok
    Py_ssize_t rknnx_y_decode(const rknnx_y_spec* spec, float* boxes, float* scores,
                              int32_t* classes, int32_t* index)
    void rknnx_y_offsets_into(rknnx_y_tensor* t, Py_ssize_t* off)
    void rknnx_y_exps(const rknnx_y_tensor* t, float* exps)
    int rknnx_y_masks_into(const rknnx_y_tensor* proto, const float* coef, Py_ssize_t nm,
                           const float* boxes, Py_ssize_t n, Py_ssize_t H, Py_ssize_t W,
                           unsigned char* out, int zeroed)

cdef enum:
    _Y_MAXSCALES = 16
    _Y_MAXBUF = 3 * 16 + 1

_Y_ITEMSIZE = (1, 1, 2, 2, 4)
cdef const char* _Y_FMT_U8 = b"B"        # a buffer without a format holds bytes


cdef int _y_tensor(object desc, rknnx_y_tensor* t, Py_buffer* buf, list keep) except -1:
    """Fill `t` from `desc` = (array, dtype code, C, H, W, C2, s_c1, s_c2, s_y, s_x, scale,
    zp, lut or None); `buf` receives the array's buffer (released by the caller)."""
    cdef Py_ssize_t i, hi, ext, isz, c1
    cdef const float[::1] lut
    (arr, code, C, H, W, C2, s_c1, s_c2, s_y, s_x, scale, zp, lut_arr) = desc
    if code < 0 or code > 4:
        raise ValueError(f"unknown tensor type code {code}")
    isz = _Y_ITEMSIZE[code]
    memset(t, 0, sizeof(rknnx_y_tensor))
    t.dtype = code
    t.C, t.H, t.W, t.C2 = C, H, W, C2
    t.s_c1, t.s_c2, t.s_y, t.s_x = s_c1, s_c2, s_y, s_x
    t.scale, t.zp = scale, zp
    if t.C <= 0 or t.H <= 0 or t.W <= 0 or t.C2 <= 0:
        raise ValueError("empty tensor")
    if t.s_c1 < 0 or t.s_c2 < 0 or t.s_y < 0 or t.s_x < 0:
        raise ValueError("negative strides")
    if code <= 1:
        if lut_arr is None:
            raise ValueError("8-bit tensor without its table")
        lut = lut_arr
        if lut.shape[0] != 256:
            raise ValueError("the table of an 8-bit tensor has 256 entries")
        keep.append(lut_arr)
        t.lut = &lut[0]
    PyObject_GetBuffer(arr, buf, PyBUF_RECORDS_RO)
    # the farthest byte the description reaches must lie inside the array's extent
    ext = 0
    for i in range(buf.ndim):
        if buf.shape[i] == 0:
            PyBuffer_Release(buf)
            raise ValueError("empty array")
        if buf.strides[i] < 0:
            PyBuffer_Release(buf)
            raise ValueError("negative strides")
        ext += (buf.shape[i] - 1) * buf.strides[i]
    ext += buf.itemsize
    c1 = (t.C + t.C2 - 1) // t.C2
    hi = (c1 - 1) * t.s_c1 + (min(t.C, t.C2) - 1) * t.s_c2 + (t.H - 1) * t.s_y + \
        (t.W - 1) * t.s_x + isz
    if hi > ext or buf.itemsize != isz:
        PyBuffer_Release(buf)
        raise ValueError(f"tensor description reaches {hi} bytes of an array of {ext}")
    t.base = <const char*>buf.buf
    return 0


cdef int _y_scales(int family, list scales, Py_ssize_t nc, Py_ssize_t reg_max,
                   rknnx_y_scale* sc, Py_buffer* bufs, int* nb, list keep) except -1:
    """Fill sc[0 .. len(scales)] from the scale descriptions (each (box, cls, sum or None,
    box_off, cls_off, obj_off, group, na, anchors, sx, sy, qthr, qobj, qsum, fsum,
    score_lut or None), tensors as _y_tensor takes them), the arrays' buffers into bufs
    (nb counts them; the caller releases them), every channel a scale reads checked to lie
    inside its tensors."""
    cdef int s, k
    cdef const float[::1] slut
    if not 0 < len(scales) <= _Y_MAXSCALES:
        raise ValueError(f"1 to {_Y_MAXSCALES} scales, got {len(scales)}")
    if reg_max < 1 or reg_max > 64:
        raise ValueError(f"DFL bins per side must be 1..64, got {reg_max}")
    if nc < 1:
        raise ValueError("no classes")
    for s in range(len(scales)):
        (box, cls, ssum, box_off, cls_off, obj_off, group, na, anchors, sx, sy, qthr,
         qobj, qsum, fsum, score_lut) = scales[s]
        memset(&sc[s], 0, sizeof(rknnx_y_scale))
        _y_tensor(box, &sc[s].box, &bufs[nb[0]], keep)
        nb[0] += 1
        _y_tensor(cls, &sc[s].cls, &bufs[nb[0]], keep)
        nb[0] += 1
        if ssum is not None:
            _y_tensor(ssum, &sc[s].sum, &bufs[nb[0]], keep)
            nb[0] += 1
        if not 1 <= na <= 8 or len(anchors) != 2 * na and family == 2:
            raise ValueError("1 to 8 anchors, (w, h) each")
        sc[s].box_off, sc[s].cls_off, sc[s].obj_off = box_off, cls_off, obj_off
        sc[s].group, sc[s].na = group, na
        for k in range(min(len(anchors), 16)):
            sc[s].anchors[k] = anchors[k]
        sc[s].sx, sc[s].sy = sx, sy
        sc[s].qthr, sc[s].qobj, sc[s].qsum, sc[s].fsum = qthr, qobj, qsum, fsum
        # the channels every anchor reads lie inside its tensors
        last = (na - 1) * group
        if (box_off + last + (4 * reg_max if family == 0 else 4) > sc[s].box.C or
                cls_off + last + nc > sc[s].cls.C or
                (family in (2, 3) and obj_off + last >= sc[s].cls.C) or
                sc[s].box.H != sc[s].cls.H or sc[s].box.W != sc[s].cls.W or
                (ssum is not None and (sc[s].sum.H != sc[s].cls.H or
                                       sc[s].sum.W != sc[s].cls.W))):
            raise ValueError("scale description outside its tensors")
        if score_lut is not None:
            slut = score_lut
            if slut.shape[0] != 256:
                raise ValueError("score table of 256 entries")
            keep.append(score_lut)
            sc[s].score_lut = &slut[0]
    return 0


cdef tuple _y_run(rknnx_y_spec* spec, const rknnx_y_scale* sc, int nscales, Py_ssize_t nc,
                  Py_ssize_t max_det, Py_ssize_t max_nms, bint agnostic, class_ok):
    """rknnx_y_decode of sc with the GIL released: (boxes, scores, classes, index), arrays
    of the rows kept (allocated for at most min(max_det, the scales' candidates))."""
    cdef const unsigned char[::1] ok
    cdef float[:, ::1] ob
    cdef float[::1] osc
    cdef int32_t[::1] ocl, oix
    cdef Py_ssize_t n, cap = 0
    cdef int s
    if class_ok is not None:
        ok = class_ok
        if ok.shape[0] != nc:
            raise ValueError("class flags: one per class")
        spec.class_ok = &ok[0]
    # the rows the kernel may fill: at most max_det, at most one per candidate (anchor of
    # a cell): what is found, not what max_det would reserve
    for s in range(nscales):
        cap += <Py_ssize_t>sc[s].na * sc[s].cls.H * sc[s].cls.W
    cap = min(cap, max(max_det, 0))
    boxes = _np.empty((max(cap, 1), 4), _np.float32)
    scores = _np.empty(max(cap, 1), _np.float32)
    classes = _np.empty(max(cap, 1), _np.int32)
    index = _np.empty(max(cap, 1), _np.int32)
    ob, osc, ocl, oix = boxes, scores, classes, index
    spec.nscales = nscales
    spec.scales = sc
    spec.max_det, spec.max_nms, spec.agnostic = cap, max_nms, agnostic
    with nogil:
        n = rknnx_y_decode(spec, &ob[0, 0], &osc[0], &ocl[0], &oix[0])
    if n < 0:
        raise MemoryError("decode: out of memory")
    return boxes[:n], scores[:n], classes[:n], index[:n]


def yolo_decode(int family, list scales, Py_ssize_t nc, Py_ssize_t reg_max, bint sigmoid,
                float conf, float iou, Py_ssize_t max_det, Py_ssize_t max_nms,
                bint agnostic, class_ok):
    """rknnx_y_decode on `scales`: each (box, cls, sum or None, box_off, cls_off, obj_off,
    group, na, anchors, sx, sy, qthr, qobj, qsum, fsum, score_lut or None), tensors as
    _y_tensor takes them.  Returns (boxes [n,4], scores [n], classes [n], index [n])."""
    cdef rknnx_y_scale sc[_Y_MAXSCALES]
    cdef Py_buffer bufs[_Y_MAXBUF]
    cdef int nb = 0, s
    cdef rknnx_y_spec spec
    cdef list keep = []
    memset(&spec, 0, sizeof(spec))
    try:
        _y_scales(family, scales, nc, reg_max, sc, bufs, &nb, keep)
        spec.family = family
        spec.nc, spec.reg_max, spec.sigmoid = nc, reg_max, sigmoid
        spec.conf, spec.iou = conf, iou
        return _y_run(&spec, sc, len(scales), nc, max_det, max_nms, agnostic, class_ok)
    finally:
        for s in range(nb):
            PyBuffer_Release(&bufs[s])


cdef class YoloPlan:
    """What one decode derives from the outputs' infos, geometry and conf, made once for
    the calls of many frames (rknnx.vision.decode keeps them): the scales as the C reads
    them (thresholds, tables, channel offsets, DFL tables), with no memory of the arrays
    but their geometry.  ``run(arrays, ...)`` reads a frame's arrays when each has the
    geometry (ndim, shape, strides, itemsize, format) of the array the plan was made
    from, and returns None otherwise: a plan never reads an array it was not made for."""

    cdef rknnx_y_scale sc[_Y_MAXSCALES]
    cdef rknnx_y_spec spec
    cdef int nscales
    cdef int src[_Y_MAXBUF]            # per tensor (box, cls, sum of each scale): its output
    cdef int nsrc                      # outputs read (0 .. nsrc - 1)
    cdef Py_ssize_t* geom              # per output: ndim, shape, strides, itemsize
    cdef list fmts                     # per output: its buffer format (bytes)
    cdef void* tables                  # channel offsets and DFL tables (one block)
    cdef list keep                     # the 8-bit value tables the structs point into
    cdef readonly Py_ssize_t nc

    def __cinit__(self):
        self.geom = NULL
        self.tables = NULL

    def __dealloc__(self):
        free(self.geom)
        free(self.tables)

    def __init__(self, int family, list scales, list sources, list arrays, Py_ssize_t nc,
                 Py_ssize_t reg_max, bint sigmoid, float conf):
        """`scales` as yolo_decode takes them; `sources`: per scale the output index of
        its box, cls and sum tensors (-1: none); `arrays`: the outputs the descriptions
        were made from (their geometry is the plan's)."""
        cdef Py_buffer bufs[_Y_MAXBUF]
        cdef Py_buffer b
        cdef int nb = 0, s, k, i, o, ntab = 0
        cdef Py_ssize_t noff = 0, at
        cdef rknnx_y_tensor* ts[3]
        cdef char* blk
        self.keep = []
        self.nc = nc
        if len(sources) != len(scales):
            raise ValueError("one source triple per scale")
        memset(&self.spec, 0, sizeof(self.spec))
        try:
            _y_scales(family, scales, nc, reg_max, self.sc, bufs, &nb, self.keep)
        finally:
            for s in range(nb):
                PyBuffer_Release(&bufs[s])
        self.nscales = len(scales)
        self.nsrc = len(arrays)
        if not 0 < self.nsrc <= _Y_MAXBUF:
            raise ValueError(f"1 to {_Y_MAXBUF} outputs")
        for s in range(self.nscales):
            for k in range(3):
                o = sources[s][k]
                if (o < 0) != (k == 2 and self.sc[s].sum.base == NULL) or o >= self.nsrc:
                    raise ValueError("a source per tensor, among the outputs")
                self.src[3 * s + k] = o
                ts[k] = &self.sc[s].box if k == 0 else (&self.sc[s].cls if k == 1 else
                                                        &self.sc[s].sum)
                if o >= 0:
                    # the description's base is the start of its output's buffer
                    noff += ts[k].C
                    ts[k].base = NULL
            if family == 0 and self.sc[s].box.dtype <= 1:
                ntab += 1
        # the geometry of each output
        self.geom = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * self.nsrc * 18)
        if self.geom == NULL:
            raise MemoryError()
        self.fmts = []
        for i in range(self.nsrc):
            PyObject_GetBuffer(arrays[i], &b, PyBUF_RECORDS_RO)
            try:
                if b.ndim > 8:
                    raise ValueError("outputs of at most 8 dimensions")
                self.geom[18 * i] = b.ndim
                self.geom[18 * i + 1] = b.itemsize
                for k in range(b.ndim):
                    self.geom[18 * i + 2 + k] = b.shape[k]
                    self.geom[18 * i + 10 + k] = b.strides[k]
                self.fmts.append(bytes(b.format) if b.format != NULL else b"B")
            finally:
                PyBuffer_Release(&b)
        # the tables: channel offsets, then the 8-bit DFL tables
        blk = <char*>malloc(sizeof(Py_ssize_t) * max(noff, 1) + sizeof(float) * 256 * ntab)
        if blk == NULL:
            raise MemoryError()
        self.tables = blk
        at = 0
        for s in range(self.nscales):
            for k in range(3):
                if self.src[3 * s + k] < 0:
                    continue
                ts[k] = &self.sc[s].box if k == 0 else (&self.sc[s].cls if k == 1 else
                                                        &self.sc[s].sum)
                rknnx_y_offsets_into(ts[k], <Py_ssize_t*>(blk + at))
                at += sizeof(Py_ssize_t) * ts[k].C
        at = sizeof(Py_ssize_t) * max(noff, 1)
        for s in range(self.nscales):
            if family == 0 and self.sc[s].box.dtype <= 1:
                rknnx_y_exps(&self.sc[s].box, <float*>(blk + at))
                self.sc[s].exps = <float*>(blk + at)
                at += sizeof(float) * 256
        self.spec.family = family
        self.spec.nc, self.spec.reg_max, self.spec.sigmoid = nc, reg_max, sigmoid
        self.spec.conf = conf

    def run(self, arrays, float iou, Py_ssize_t max_det, Py_ssize_t max_nms, bint agnostic,
            class_ok):
        """(boxes, scores, classes, index) of this frame's `arrays` (a list or tuple of the
        outputs), or None when an array is not of the plan's geometry."""
        cdef rknnx_y_scale sc[_Y_MAXSCALES]
        cdef Py_buffer bufs[_Y_MAXBUF]
        cdef rknnx_y_spec spec = self.spec
        cdef int nb = 0, i, k, s, o
        cdef bint same = True
        cdef Py_ssize_t* g
        cdef const char* fmt
        if len(arrays) != self.nsrc:
            return None
        try:
            for i in range(self.nsrc):
                a = arrays[i]
                if not isinstance(a, _np.ndarray):
                    same = False
                    break
                PyObject_GetBuffer(a, &bufs[i], PyBUF_RECORDS_RO)
                nb += 1
                g = &self.geom[18 * i]
                fmt = bufs[i].format if bufs[i].format != NULL else _Y_FMT_U8
                if bufs[i].ndim != g[0] or bufs[i].itemsize != g[1] or \
                        strcmp(fmt, <const char*>(<bytes>self.fmts[i])) != 0:
                    same = False
                    break
                for k in range(bufs[i].ndim):
                    if bufs[i].shape[k] != g[2 + k] or bufs[i].strides[k] != g[10 + k]:
                        same = False
                        break
                if not same:
                    break
            if not same:
                return None
            memcpy(sc, self.sc, sizeof(rknnx_y_scale) * self.nscales)
            for s in range(self.nscales):
                o = self.src[3 * s]
                sc[s].box.base = <const char*>bufs[o].buf
                o = self.src[3 * s + 1]
                sc[s].cls.base = <const char*>bufs[o].buf
                o = self.src[3 * s + 2]
                if o >= 0:
                    sc[s].sum.base = <const char*>bufs[o].buf
            spec.iou = iou
            return _y_run(&spec, sc, self.nscales, self.nc, max_det, max_nms, agnostic,
                          class_ok)
        finally:
            for i in range(nb):
                PyBuffer_Release(&bufs[i])


def yolo_masks(proto, coef, boxes, Py_ssize_t H, Py_ssize_t W):
    """rknnx_y_masks: bool [n, H, W] masks of `boxes` (float32 [n,4]) with coefficients
    `coef` (float32 [n, nm]) over `proto` (a tensor as _y_tensor takes it).  The output
    is numpy's zeros (pages mapped on first touch) and the kernel writes only the boxes'
    pixels (rknnx_y_masks_into, zeroed), so the pages outside every box stay untouched."""
    cdef rknnx_y_tensor t
    cdef Py_buffer buf
    cdef const float[:, ::1] cf = coef
    cdef const float[:, ::1] bx = boxes
    cdef unsigned char[:, :, ::1] o
    cdef Py_ssize_t n = bx.shape[0], nm = cf.shape[1]
    cdef int r
    cdef list keep = []
    if cf.shape[0] != n or bx.shape[1] != 4:
        raise ValueError("one row of coefficients and one box per mask")
    if H <= 0 or W <= 0:
        raise ValueError("mask size must be positive")
    out = _np.zeros((n, H, W), _np.bool_)
    if n == 0:
        return out
    o = out.view(_np.uint8)
    _y_tensor(proto, &t, &buf, keep)
    try:
        if nm > t.C:
            raise ValueError(f"{nm} coefficients for a proto of {t.C} channels")
        with nogil:
            r = rknnx_y_masks_into(&t, &cf[0, 0], nm, &bx[0, 0], n, H, W, &o[0, 0, 0], 1)
    finally:
        PyBuffer_Release(&buf)
    if r < 0:
        raise MemoryError("masks: out of memory")
    return out
