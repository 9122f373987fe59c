# cython: language_level=3, embedsignature=True, binding=True
# distutils: language = c
"""Low-level binding of librknnrt: a 1:1, safe wrapper of the RKNN C API.

The facade (``rknnx``) is what most code should use; this module exposes the C API
faithfully (contexts, queries, general I/O, zero-copy memory) and makes it safe
(lifetimes, validation, the GIL released around every blocking call).
"""

from librknn cimport *
from rknnx.errors import (RKNNError, NotSupportedError, RuntimeNotFoundError, FlowError,
                          from_code as _from_code)

include "_loader.pxi"
