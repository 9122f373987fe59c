# cython: language_level=3
# The binding's shared C-level declarations (cdef classes and helpers of _core.pyx).

from librknn cimport rknnx_api

cdef rknnx_api _api                          # the resolved entry points

cdef int check(int ret, const char* fn) except -1 nogil
cdef int require(void* fnptr, const char* fn) except -1
cdef int ensure_runtime() except -1
