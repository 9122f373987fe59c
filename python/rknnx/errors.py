"""Exceptions of rknnx: one table from vendor status codes to exception classes.

Every negative status returned by librknnrt becomes an instance of a subclass of
:class:`RKNNError`, chosen by :data:`ERROR_TABLE` through :func:`from_code`.  Each
subclass also inherits the Python builtin that fits it, so ``except ValueError``
catches a parameter error and ``except MemoryError`` an allocation failure.

Errors that rknnx raises itself before calling C (a call from the wrong flow, a
function the runtime or platform does not provide, no runtime found) are
:class:`FlowError`, :class:`NotSupportedError` and :class:`RuntimeNotFoundError`;
they derive from :class:`RKNNError` too, with ``code`` set to ``None``.  A vendor
``.rknn`` file that rknnx's own reader (:mod:`rknnx.modelfile`) cannot read raises
:class:`ModelFileError`, naming the check that failed.
"""

from __future__ import annotations

__all__ = [
    "RKNNError",
    "RKNNFailError",
    "RKNNTimeoutError",
    "DeviceUnavailableError",
    "OutOfMemoryError",
    "ParamInvalidError",
    "ModelInvalidError",
    "ContextInvalidError",
    "InputInvalidError",
    "OutputInvalidError",
    "DeviceUnmatchError",
    "IncompatiblePreCompileModelError",
    "IncompatibleOptimizationLevelError",
    "TargetPlatformUnmatchError",
    "SkipCustomOpCompute",
    "FlowError",
    "NotSupportedError",
    "RuntimeNotFoundError",
    "ModelFileError",
    "ClosedViewError",
    "ERROR_TABLE",
    "STATUS_NAMES",
    "from_code",
]


class RKNNError(Exception):
    """Base of every rknnx error.

    Attributes
    ----------
    code : int or None
        The vendor status code (negative), or None for errors rknnx raises itself.
    name : str or None
        The vendor constant of the code, e.g. ``"RKNN_ERR_PARAM_INVALID"``.
    func : str or None
        The C function that failed, e.g. ``"rknn_init"``.
    """

    def __init__(self, message: str = "", code: int | None = None, func: str | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.func = func

    @property
    def name(self) -> str | None:
        if self.code is None:
            return None
        return STATUS_NAMES.get(self.code, "RKNN_ERR_UNKNOWN")

    def __reduce__(self):
        return (type(self), (self.message, self.code, self.func))

    def __str__(self) -> str:
        return self.message


class RKNNFailError(RKNNError):
    """RKNN_ERR_FAIL (-1): the runtime failed without a more precise reason."""


class RKNNTimeoutError(RKNNError, TimeoutError):
    """RKNN_ERR_TIMEOUT (-2): the NPU did not finish in time."""


class DeviceUnavailableError(RKNNError, OSError):
    """RKNN_ERR_DEVICE_UNAVAILABLE (-3): the NPU device cannot be used."""


class OutOfMemoryError(RKNNError, MemoryError):
    """RKNN_ERR_MALLOC_FAIL (-4): an allocation failed."""


class ParamInvalidError(RKNNError, ValueError):
    """RKNN_ERR_PARAM_INVALID (-5): an argument was rejected by the runtime."""


class ModelInvalidError(RKNNError, ValueError):
    """RKNN_ERR_MODEL_INVALID (-6): the model bytes are not a valid model."""


class ContextInvalidError(RKNNError, ValueError):
    """RKNN_ERR_CTX_INVALID (-7): the context handle is not a live context."""


class InputInvalidError(RKNNError, ValueError):
    """RKNN_ERR_INPUT_INVALID (-8): an input (index, size, type) was rejected."""


class OutputInvalidError(RKNNError, ValueError):
    """RKNN_ERR_OUTPUT_INVALID (-9): an output (index, size, type) was rejected."""


class DeviceUnmatchError(RKNNError, OSError):
    """RKNN_ERR_DEVICE_UNMATCH (-10): runtime and driver (or device) do not match."""


class IncompatiblePreCompileModelError(RKNNError):
    """RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL (-11): a pre-compiled model of another version."""


class IncompatibleOptimizationLevelError(RKNNError):
    """RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION (-12)."""


class TargetPlatformUnmatchError(RKNNError):
    """RKNN_ERR_TARGET_PLATFORM_UNMATCH (-13): the model was built for another chip."""


class SkipCustomOpCompute(RKNNError):
    """RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE (-14): a custom op asks for the built-in one."""


class FlowError(RKNNError, RuntimeError):
    """A call of one flow (general or zero-copy) on a context bound to the other."""


class NotSupportedError(RKNNError, NotImplementedError):
    """The loaded runtime or the current platform does not provide this function."""


class RuntimeNotFoundError(RKNNError, OSError):
    """No librknnrt could be loaded; the message names every place tried."""


class ModelFileError(RKNNError, ValueError):
    """A vendor ``.rknn`` file that rknnx's reader cannot read (no runtime involved).

    Attributes
    ----------
    check : str or None
        The check that failed, a stable dotted name: ``"magic"``, ``"header_length"``,
        ``"payload_length"``, ``"json_length"``, ``"version"``, ``"encrypted"``,
        ``"flatbuffer.Tensor.name"``, ``"json.syntax"``, ``"generator.depth"``, ...
        (docs/rknn-file-format.md lists them).
    offset : int or None
        The byte offset in the file where the check failed, when known.
    status : str or None
        The reader's status: ``"format"``, ``"encrypted"`` or ``"unsupported"``.
    path : str or None
        The file, when one was read from a path.
    """

    def __init__(self, message: str = "", check: str | None = None,
                 offset: int | None = None, status: str | None = None,
                 path: str | None = None):
        super().__init__(message, None, None)
        self.check = check
        self.offset = offset
        self.status = status
        self.path = path

    def __reduce__(self):
        return (type(self), (self.message, self.check, self.offset, self.status, self.path))

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        check = f" [check: {self.check}]" if self.check else ""
        return f"{where}{self.message}{check}"


class ClosedViewError(BufferError, ValueError):
    """A new view (``np.asarray``, ``memoryview``, DLPack) of memory that is closed or being
    closed: a ``TensorMem``, released ``Outputs``, a closed ``Context``.  It is a
    ``BufferError`` (what the buffer protocol raises) and a ``ValueError`` (what a call on
    a closed rknnx object raises), so either ``except`` catches it.

    .. versionadded:: 0.1.0
    """


STATUS_NAMES: dict[int, str] = {
    0: "RKNN_SUCC",
    -1: "RKNN_ERR_FAIL",
    -2: "RKNN_ERR_TIMEOUT",
    -3: "RKNN_ERR_DEVICE_UNAVAILABLE",
    -4: "RKNN_ERR_MALLOC_FAIL",
    -5: "RKNN_ERR_PARAM_INVALID",
    -6: "RKNN_ERR_MODEL_INVALID",
    -7: "RKNN_ERR_CTX_INVALID",
    -8: "RKNN_ERR_INPUT_INVALID",
    -9: "RKNN_ERR_OUTPUT_INVALID",
    -10: "RKNN_ERR_DEVICE_UNMATCH",
    -11: "RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL",
    -12: "RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION",
    -13: "RKNN_ERR_TARGET_PLATFORM_UNMATCH",
    -14: "RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE",
}

#: The one table: vendor status code -> exception class.
ERROR_TABLE: dict[int, type[RKNNError]] = {
    -1: RKNNFailError,
    -2: RKNNTimeoutError,
    -3: DeviceUnavailableError,
    -4: OutOfMemoryError,
    -5: ParamInvalidError,
    -6: ModelInvalidError,
    -7: ContextInvalidError,
    -8: InputInvalidError,
    -9: OutputInvalidError,
    -10: DeviceUnmatchError,
    -11: IncompatiblePreCompileModelError,
    -12: IncompatibleOptimizationLevelError,
    -13: TargetPlatformUnmatchError,
    -14: SkipCustomOpCompute,
}


def from_code(code: int, func: str | None = None, detail: str | None = None) -> RKNNError:
    """Build the exception for a vendor status code.

    Parameters
    ----------
    code : int
        A negative status returned by a librknnrt function.
    func : str, optional
        The C function that returned it.
    detail : str, optional
        More context, appended to the message.

    Returns
    -------
    RKNNError
        An instance of the class :data:`ERROR_TABLE` maps ``code`` to, or of
        :class:`RKNNError` for a code the table does not know.

    Raises
    ------
    ValueError
        If ``code`` is not negative (success is not an error).
    """
    code = int(code)
    if code >= 0:
        raise ValueError(f"status {code} is not an error code (errors are negative)")
    cls = ERROR_TABLE.get(code, RKNNError)
    name = STATUS_NAMES.get(code, "RKNN_ERR_UNKNOWN")
    where = f"{func} failed" if func else "librknnrt call failed"
    msg = f"{where}: {name} ({code})"
    if detail:
        msg += f": {detail}"
    return cls(msg, code, func)


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
