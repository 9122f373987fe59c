# The tracker's C (rknn_ext/kernels/track.h) for rknnx.vision.Tracker: one TrackState per
# tracker, owning one rknnx_tracker (its tracks and scratch) and one lock.  An update
# takes the lock with the GIL released, runs the frame without the GIL, copies the output
# into new numpy arrays and lets the lock go: two threads updating one tracker are
# serialized, trackers of different streams never wait for each other.  rknnx.vision
# checks the user's arguments; this slice checks what the C would read (dtypes, shapes,
# contiguity) so that a wrong call is an exception, never a crash.  (Included at the end
# of _kernels.pyx, whose cimports it uses.)

from libc.stdint cimport int32_t, int64_t
from cpython.pythread cimport (PyThread_type_lock, PyThread_allocate_lock,
                               PyThread_free_lock, PyThread_acquire_lock,
                               PyThread_release_lock, WAIT_LOCK)

cdef extern from "kernels/track.h" nogil:
    enum:
        RKNNX_T_OK
        RKNNX_T_ENOMEM
        RKNNX_T_EINVAL
    ctypedef struct rknnx_t_params:
        double high, low, new_track, match, match_low, match_unconfirmed, max_lost, dup_iou
        int min_hits, state, per_class, fuse_score, second_lost
    ctypedef struct rknnx_t_out:
        Py_ssize_t n
        float* boxes
        float* scores
        int32_t* classes
        int64_t* ids
        int64_t* detection
        Py_ssize_t nstarted, nended
        int64_t* started
        int64_t* ended
    ctypedef struct rknnx_tracker:
        pass
    rknnx_tracker* rknnx_t_new(const rknnx_t_params* p)
    void rknnx_t_free(rknnx_tracker* t)
    void rknnx_t_reset(rknnx_tracker* t)
    int rknnx_t_update(rknnx_tracker* t, const float* boxes, const float* scores,
                       const int32_t* classes, Py_ssize_t n, double step)
    const rknnx_t_out* rknnx_t_result(const rknnx_tracker* t)
    Py_ssize_t rknnx_t_live(const rknnx_tracker* t)
    size_t rknnx_t_bytes(const rknnx_tracker* t)
    Py_ssize_t rknnx_t_assign(const double* cost, Py_ssize_t rows, Py_ssize_t cols,
                              double thresh, Py_ssize_t* match4row)

_T_F32 = _np.dtype(_np.float32)
_T_I32 = _np.dtype(_np.int32)
_T_I64 = _np.dtype(_np.int64)
_t_empty = _np.empty
_T_NOBOX = _np.zeros((0, 4), _np.float32)


cdef object _t_ids(const int64_t* src, Py_ssize_t n):
    o = _t_empty(n, _T_I64)
    cdef int64_t[::1] v
    if n:
        v = o
        memcpy(&v[0], src, n * sizeof(int64_t))
    return o


cdef class TrackState:
    """The C state of one rknnx.vision.Tracker (rknn_ext/kernels/track.h): its tracks,
    their Kalman filters, the id counter and the frame's scratch, behind one lock.

    ``TrackState(high, low, new_track, match, match_low, match_unconfirmed, max_lost,
    dup_iou, min_hits, state, per_class, fuse_score, second_lost)``; ``state`` 0 is x, y,
    a, h (the paper's), 1 is x, y, w, h."""

    cdef rknnx_tracker* _t
    cdef PyThread_type_lock _lock

    def __cinit__(self, double high, double low, double new_track, double match,
                  double match_low, double match_unconfirmed, double max_lost,
                  double dup_iou, int min_hits, int state, bint per_class, bint fuse_score,
                  bint second_lost):
        cdef rknnx_t_params p
        if state not in (0, 1):
            raise ValueError(f"TrackState: state must be 0 (xyah) or 1 (xywh), got {state}")
        if min_hits < 0:
            raise ValueError(f"TrackState: min_hits must be >= 0, got {min_hits}")
        p.high, p.low, p.new_track, p.match = high, low, new_track, match
        p.match_low, p.match_unconfirmed, p.max_lost, p.dup_iou = \
            match_low, match_unconfirmed, max_lost, dup_iou
        p.min_hits, p.state, p.per_class, p.fuse_score, p.second_lost = \
            min_hits, state, per_class, fuse_score, second_lost
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError("TrackState: no lock")
        self._t = rknnx_t_new(&p)
        if self._t == NULL:
            raise MemoryError("TrackState: out of memory")

    def __dealloc__(self):
        # nothing else can hold the lock: an update holds a reference to self
        if self._t != NULL:
            rknnx_t_free(self._t)
            self._t = NULL
        if self._lock != NULL:
            PyThread_free_lock(self._lock)
            self._lock = NULL

    cdef inline void _acquire(self) noexcept:
        with nogil:
            PyThread_acquire_lock(self._lock, WAIT_LOCK)

    def update(self, boxes, scores, classes, double step):
        """One frame: ``boxes`` float32 [n, 4], ``scores`` float32 [n], ``classes`` int32
        [n], all C-contiguous; ``step`` in frames (>= 0).  Returns (boxes [k, 4], scores
        [k], classes [k], ids [k], detection [k], started, ended), new arrays."""
        cdef const float[:, ::1] vb
        cdef const float[::1] vs
        cdef const int32_t[::1] vc
        cdef Py_ssize_t n
        cdef const float* pb = NULL
        cdef const float* ps = NULL
        cdef const int32_t* pc = NULL
        cdef int rc
        cdef const rknnx_t_out* o
        cdef float[:, ::1] ob
        cdef float[::1] osc
        cdef int32_t[::1] ocl
        if type(boxes) is not _np.ndarray or boxes.dtype != _T_F32 or boxes.ndim != 2 or \
                boxes.shape[1] != 4:
            raise TypeError("TrackState.update: boxes must be a float32 array [n, 4]")
        n = boxes.shape[0]
        if type(scores) is not _np.ndarray or scores.dtype != _T_F32 or \
                scores.shape != (n,):
            raise TypeError(f"TrackState.update: scores must be a float32 array [{n}]")
        if type(classes) is not _np.ndarray or classes.dtype != _T_I32 or \
                classes.shape != (n,):
            raise TypeError(f"TrackState.update: classes must be an int32 array [{n}]")
        if n:
            vb = boxes
            vs = scores
            vc = classes
            pb = &vb[0, 0]
            ps = &vs[0]
            pc = &vc[0]
        self._acquire()
        try:
            with nogil:
                rc = rknnx_t_update(self._t, pb, ps, pc, n, step)
            if rc == RKNNX_T_EINVAL:
                raise ValueError("TrackState.update: a box or score is not finite, or the "
                                 "step is not a finite number >= 0")
            if rc != RKNNX_T_OK:
                raise MemoryError("TrackState.update: out of memory (the tracker was reset)")
            o = rknnx_t_result(self._t)
            k = o.n
            if k:
                rb = _t_empty((k, 4), _T_F32)
                rs = _t_empty(k, _T_F32)
                rcl = _t_empty(k, _T_I32)
                ob = rb
                osc = rs
                ocl = rcl
                memcpy(&ob[0, 0], o.boxes, k * 4 * sizeof(float))
                memcpy(&osc[0], o.scores, k * sizeof(float))
                memcpy(&ocl[0], o.classes, k * sizeof(int32_t))
            else:
                rb = _T_NOBOX.copy()
                rs = _t_empty(0, _T_F32)
                rcl = _t_empty(0, _T_I32)
            return (rb, rs, rcl, _t_ids(o.ids, k), _t_ids(o.detection, k),
                    _t_ids(o.started, o.nstarted), _t_ids(o.ended, o.nended))
        finally:
            PyThread_release_lock(self._lock)

    def reset(self):
        """No tracks; ids from 1 again."""
        self._acquire()
        rknnx_t_reset(self._t)
        PyThread_release_lock(self._lock)

    @property
    def live(self):
        """Tracks alive (confirmed tracked or lost, and unconfirmed)."""
        self._acquire()
        r = rknnx_t_live(self._t)
        PyThread_release_lock(self._lock)
        return r

    @property
    def nbytes(self):
        """Bytes of state and scratch held in C."""
        self._acquire()
        r = rknnx_t_bytes(self._t)
        PyThread_release_lock(self._lock)
        return r


def track_assign(cost, double thresh):
    """The tracker's assignment (rknnx_t_assign) on a float64 [rows, cols] cost matrix:
    the column of each row or -1 (pairs costing more than ``thresh`` never match; an
    unmatched row or column costs ``thresh / 2``)."""
    a = _np.ascontiguousarray(cost, _np.float64)
    if a.ndim != 2:
        raise ValueError(f"track_assign: cost must be 2-D, got shape {a.shape}")
    cdef const double[:, ::1] c = a
    out = _np.full(a.shape[0], -1, _np.intp)
    cdef Py_ssize_t[::1] m = out
    cdef Py_ssize_t r
    if a.shape[0] == 0 or a.shape[1] == 0:
        return out
    with nogil:
        r = rknnx_t_assign(&c[0, 0], c.shape[0], c.shape[1], thresh, &m[0])
    if r < 0:
        raise MemoryError("track_assign: out of memory")
    return out
