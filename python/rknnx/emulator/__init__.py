"""rknnx.emulator: build model files for the bundled CPU runtime, and check them in numpy.

The emulator (``librknnrt.so`` built from ``emulator/``) cannot run real ``.rknn`` files
(they hold compiled NPU code); it runs models in its own small format, specified in
``emulator/FORMAT.md``.  This package is pure Python (numpy only) and never imports the
compiled extension:

- :mod:`.builder` -- :class:`ModelBuilder` writes model files; :func:`decode` reads them;
- :mod:`.reference` -- :func:`run_reference`, the numpy implementation of every op;
- :mod:`.samples` -- sample models (classifier, detector, multi-I/O, dynamic, custom op);
- :mod:`.control` -- the emulator's own controls (personality, NPU time, counters, errors);
- :func:`library_path` -- where the emulator library is (the loader asks it too).
"""

from .builder import (FormatError, ModelBuilder, ModelDesc, OpDesc, TensorDesc, decode, encode,
                      infer_shapes)
from .reference import run_reference
from ._locate import bundled_library, library_path
from . import samples

__all__ = ["ModelBuilder", "ModelDesc", "OpDesc", "TensorDesc", "FormatError", "encode", "decode",
           "infer_shapes", "run_reference", "samples", "library_path", "bundled_library"]


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
