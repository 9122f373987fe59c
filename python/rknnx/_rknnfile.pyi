"""Type stubs of rknnx._rknnfile, the reader of vendor .rknn files (no runtime needed)."""

from typing import Any

_Buffer = Any  # anything with the buffer protocol

def read_model_file(data: _Buffer) -> dict[str, Any]: ...
