# cython: language_level=3
# What rknnx._rknnfile (the vendor-file reader) offers other extension modules at C level.
# rknnx._core cimports it: a context opened from model bytes asks the bytes first.

cdef bint file_says_static(const unsigned char* b, size_t size) noexcept
