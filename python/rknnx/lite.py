"""``rknnx.lite.RKNNLite``: the RKNNLite API of rknn-toolkit-lite2 2.5.0 on rknnx.

Moving a script from the vendor's package is one line::

    from rknnx.lite import RKNNLite          # was: from rknnlite.api import RKNNLite

Every member, argument, default, constant and return convention of ``RKNNLite`` 2.5.0 is
here: methods log an ``E`` line and return -1 (or None) instead of raising, unless the
object is made with ``RKNNLite(raise_errors=True)``.  Underneath is a
:class:`rknnx.Model`: the attributes are queried once in :meth:`RKNNLite.init_runtime`
(not on every call), the runtime converts layout and type itself (no numpy transpose or
staging copy), ``reuse_outputs=True`` has the runtime write into the same arrays every
call, and a call leaves no reference cycles behind (memory stays flat without
``gc.collect()``).  It runs on the CPU emulator too (``RKNNX_RUNTIME=emulator``), where
the vendor's package refuses to run off-board.

Where rknnx differs from the vendor's 2.5.0 (measured side by side on every sample model by
``scripts/compare-rknnlite``; docs/rknnlite-compat.md has the whole list):

- a dynamic-shape model's outputs have the current shape set's shape (the vendor's are
  shaped for the largest set, only their first values this run's);
- ``data_format`` may be in any case; as a list (one entry per input, as the vendor's own
  examples pass ``['nchw']``) it is taken like the vendor's, without its W line on every
  call;
- ``inputs`` may be a single ndarray (one input) or any sequence, not only a list;
- each input's shape is checked, not only its number of dims (the vendor hands a bigger
  array of a static model's input to librknnrt, which reads part of it);
- float64 inputs are converted to float32 (the vendor refuses them); int16, uint16, int32,
  uint32, int64 and bool ones too (the vendor hands them to librknnrt with their own
  tensor types);
- ``data_type`` is accepted and not checked: the element type of each input is its
  array's dtype (the vendor refuses a ``data_type`` other than the arrays' dtype);
- ``reuse_outputs=True`` returns the very same array objects every call (the vendor's are
  new views of the same memory);
- an ``init_runtime`` that fails leaves no runtime (the vendor's keeps the context it
  opened before a refused ``core_mask``, and inference runs on it);
- the environment is left alone (the vendor's constructor sets ``RKNN_LOG_LEVEL`` to 2, or
  4 with ``verbose=True``, when it is unset);
- ``load_rknn(path, key_path=...)``: encrypted models are refused with a clear message;
- ``target`` / ``device_id`` (remote devices over adb) are ignored: rknnx runs on the
  local NPU or the emulator, and :meth:`RKNNLite.list_devices` reports no devices.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, List, Optional, Sequence

import numpy as np

__all__ = ["RKNNLite"]

#: the RKNNLite version whose API this module reproduces
API_VERSION = "2.5.0"

_FORMATS = ("nhwc", "nchw")
#: element types rknnx's facade does not hand to the runtime: RKNNLite 2.5.0 passes int16 ...
#: bool arrays to librknnrt as RKNN_TENSOR_INT16 ... BOOL (and refuses float64); given to an
#: input of another type, they are converted to float32 here (exact up to 2**24)
_TO_F32 = frozenset(np.dtype(t) for t in (np.float64, np.int16, np.uint16, np.int32,
                                          np.uint32, np.int64, np.bool_))


class RKNNLite:
    """The RKNNLite API (rknn-toolkit-lite2 2.5.0) on :class:`rknnx.Model`.

    Parameters
    ----------
    verbose : bool
        Also print the debug lines (what each call does), not only errors and warnings.
    verbose_file : str, optional
        A file the log lines are appended to as well.
    raise_errors : bool, keyword only
        Raise exceptions (the original ones: ``ValueError``, ``TypeError``,
        ``FileNotFoundError``, :class:`rknnx.RKNNError` ...) instead of logging an ``E``
        line and returning -1 / None.  Calls out of order (``init_runtime`` before
        ``load_rknn``, ``inference`` before ``init_runtime``) raise ``RuntimeError``.

    Raises
    ------
    Nothing by default (see `raise_errors`).

    Examples
    --------
    >>> from rknnx.lite import RKNNLite                    # doctest: +SKIP
    >>> rknn_lite = RKNNLite()
    >>> rknn_lite.load_rknn("model.rknn")
    0
    >>> rknn_lite.init_runtime(core_mask=RKNNLite.NPU_CORE_0)
    0
    >>> outputs = rknn_lite.inference(inputs=[img])         # float32 arrays
    >>> rknn_lite.release()
    """

    NPU_CORE_AUTO = 0
    NPU_CORE_0 = 1
    NPU_CORE_1 = 2
    NPU_CORE_2 = 4
    NPU_CORE_0_1 = 3
    NPU_CORE_0_1_2 = 7
    NPU_CORE_ALL = 0xFFFF

    _CORE_MASKS = (0, 1, 2, 4, 3, 7, 0xFFFF)

    def __init__(self, verbose: bool = False, verbose_file: Optional[str] = None, *,
                 raise_errors: bool = False):
        from rknnx._version import __version__

        self.verbose = bool(verbose)
        self.verbose_file = os.fspath(verbose_file) if verbose_file is not None else None
        self.raise_errors = bool(raise_errors)
        self._model_data: Optional[bytes] = None
        self._model = None
        self._in_ndims: tuple = ()     # dims of each input
        self._in_nhwc: tuple = ()      # whether each input is 4-D NHWC
        self._in_dtypes: tuple = ()    # the element type of each input
        self._dynamic = False
        self._async = False
        self._reuse: dict = {}
        self._data_type_noted = False
        self._log("W", f"rknnx {__version__}: RKNNLite {API_VERSION} API (rknnx.lite)")

    # -- logging and the error convention ---------------------------------------------------
    def _log(self, level: str, message: str) -> None:
        """One line ``"<level> <message>"``: E and W always, D and I with ``verbose``; to
        stderr and to ``verbose_file``."""
        if level in "DI" and not self.verbose:
            return
        line = f"{level} {message}\n"
        sys.stderr.write(line)
        if self.verbose_file is not None:
            try:
                with open(self.verbose_file, "a", encoding="utf-8") as f:
                    f.write(line)
            except OSError:
                pass

    def _fail(self, where: str, exc: BaseException, result):
        """The error convention: log ``E <where>: <message>`` (and the traceback with
        ``verbose``) and return `result`; or raise with ``raise_errors``."""
        if self.raise_errors:
            raise exc
        self._log("E", f"{where}: {exc}")
        if self.verbose:
            for line in traceback.format_exception(type(exc), exc, exc.__traceback__):
                for part in line.rstrip("\n").split("\n"):
                    self._log("D", part)
        return result

    # -- the API ---------------------------------------------------------------------------
    def load_rknn(self, path, key_path=None) -> int:
        """Read an RKNN model file (the whole file, into memory).

        Parameters
        ----------
        path : str or os.PathLike
            The ``.rknn`` file.
        key_path : str, optional
            Key of an encrypted model: encrypted models are not supported by rknnx.

        Returns
        -------
        int
            0 on success, -1 on error (the ``E`` line says why).

        Raises
        ------
        FileNotFoundError, ValueError, TypeError
            Only with ``raise_errors=True``: no such file, an encrypted model, a path that
            is not a string.
        """
        try:
            if key_path is not None:
                raise ValueError("encrypted models (key_path) are not supported by rknnx; "
                                 "use an unencrypted .rknn file")
            from rknnx.modelfile import check_file

            p = os.fspath(path)
            check_file(p)                # missing, a directory, /dev/null: saying which
            with open(p, "rb") as f:
                self._model_data = f.read()
            self._log("D", f"load_rknn: {p} ({len(self._model_data)} bytes)")
            return 0
        except Exception as e:
            return self._fail("load_rknn", e, -1)

    def init_runtime(self, target=None, device_id=None, async_mode: bool = False,
                     core_mask: int = NPU_CORE_AUTO) -> int:
        """Open the model on the NPU (``rknn_init`` with priority medium).

        Parameters
        ----------
        target, device_id : optional
            Remote devices (adb) in the vendor's package; ignored here: rknnx runs on the
            local NPU, or on the emulator (``RKNNX_RUNTIME=emulator``).
        async_mode : bool
            ``RKNN_FLAG_ASYNC_MASK``: each :meth:`inference` returns the previous frame's
            outputs (the first call returns zeros), so that the CPU work of frame k
            overlaps the NPU work of frame k+1.
        core_mask : int
            One of the ``NPU_CORE_*`` constants; ``rknn_set_core_mask`` is called unless it
            is ``NPU_CORE_AUTO`` (only RK3588/RK3576 have several cores).

        Returns
        -------
        int
            0 on success, -1 on error.  A second call closes the first runtime.

        Raises
        ------
        RuntimeError, ValueError, rknnx.RKNNError
            Only with ``raise_errors=True``: no model loaded, a core mask that is none of
            the constants, a runtime that refuses the model or the mask.
        """
        try:
            from rknnx import lowlevel
            from rknnx.model import Model

            if self._model_data is None:
                raise RuntimeError("the model is not loaded: call load_rknn before "
                                   "init_runtime")
            mask = int(core_mask)
            if mask not in self._CORE_MASKS:
                raise ValueError(f"core_mask {core_mask!r} is not one of the NPU_CORE_* "
                                 f"values {list(self._CORE_MASKS)}")
            if target is not None or device_id is not None:
                self._log("D", "init_runtime: target/device_id are ignored (rknnx runs on "
                               "the local NPU or the emulator)")
            self._close_model()
            flags = int(lowlevel.InitFlag.PRIOR_MEDIUM)
            if async_mode:
                flags |= int(lowlevel.InitFlag.ASYNC_MASK)
            model = Model(self._model_data, flags=flags,
                          core_mask=None if mask == self.NPU_CORE_AUTO else mask)
            self._model = model
            self._in_ndims = tuple(len(t.shape) for t in model.inputs)
            self._in_nhwc = tuple(len(t.shape) == 4 and t.layout == "NHWC"
                                  for t in model.inputs)
            self._dynamic = model.dynamic
            self._async = bool(async_mode)
            self._in_dtypes = tuple(t.dtype for t in model.inputs)
            self._log("D", f"init_runtime: {model!r}, sdk {model.sdk_version}, "
                           f"driver {model.driver_version}")
            return 0
        except Exception as e:
            return self._fail("init_runtime", e, -1)

    def inference(self, inputs, data_type=None, data_format=None, inputs_pass_through=None,
                  get_frame_id: bool = False, reuse_outputs: bool = False):
        """Run the model on numpy arrays.

        Parameters
        ----------
        inputs : list of numpy.ndarray
            One array per input, with as many dims as the input has; uint8, int8, float16
            or float32 (float64, int16, uint16, int32, uint32, int64 and bool are converted
            to float32, unless the input has that type).  The runtime normalizes and
            quantizes.  For a dynamic-shape model the shapes pick the shape set.
        data_type : optional
            Accepted and not checked: the type is each array's dtype (RKNNLite 2.5.0
            refuses a `data_type` other than the arrays' dtype).
        data_format : {'nhwc', 'nchw'} or list of them, optional
            The layout of 4-D inputs (default 'nhwc'); 'nchw' data is converted by the
            runtime.  A list gives one per input.
        inputs_pass_through : list of 0/1, optional
            One flag per input: 1 hands that input to the NPU unconverted (already
            normalized and quantized, the model's type and the NPU's native layout).
        get_frame_id : bool
            Append two frame ids to the returned list, as RKNNLite 2.5.0 does: the outputs'
            (``rknn_output_extend.frame_id``), then the one of the frame this call ran
            (``rknn_run_extend.frame_id``).  They are equal in sync mode; in async mode the
            outputs are the previous frame's, and the second id is the first plus one.
        reuse_outputs : bool
            Return the same output arrays on every call, overwritten by the runtime (no
            allocation; a copy is yours to make if you keep results).

        Returns
        -------
        list of numpy.ndarray or None
            The outputs as float32 arrays shaped as the model's outputs (NCHW for 4-D),
            plus the two frame ids with `get_frame_id`; None on error.

        Raises
        ------
        RuntimeError, ValueError, TypeError, rknnx.RKNNError
            Only with ``raise_errors=True``: no runtime, wrong number of inputs, a wrong
            number of dims ("The input[0] need 4dims input, but 3dims input buffer
            feed."), a shape or dtype the model does not take, a runtime failure.
        """
        try:
            return self._inference(inputs, data_type, data_format, inputs_pass_through,
                                   get_frame_id, reuse_outputs)
        except Exception as e:
            return self._fail("inference", e, None)

    def _inference(self, inputs, data_type, data_format, pass_through, get_frame_id,
                   reuse_outputs) -> List[Any]:
        model = self._model
        if model is None:
            raise RuntimeError("the runtime is not initialized: call init_runtime before "
                               "inference")
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        ndims = self._in_ndims
        if len(inputs) != len(ndims):
            raise ValueError(f"The model needs {len(ndims)} input(s), but {len(inputs)} "
                             f"input(s) are fed.")
        arrays = []
        for i, a in enumerate(inputs):
            if not isinstance(a, np.ndarray):
                raise TypeError(f"The input[{i}] must be a numpy.ndarray, got "
                                f"{type(a).__name__}.")
            if a.ndim != ndims[i]:
                raise ValueError(f"The input[{i}] need {ndims[i]}dims input, but {a.ndim}dims "
                                 f"input buffer feed.")
            if a.dtype in _TO_F32 and a.dtype != self._in_dtypes[i] and not (
                    pass_through is not None and i < len(pass_through) and pass_through[i]):
                a = a.astype(np.float32)
            arrays.append(a)
        if data_type is not None and not self._data_type_noted:
            self._data_type_noted = True
            self._log("D", "inference: data_type is ignored: each input's type is its "
                           "array's dtype")
        fmt = self._formats(arrays, data_format)
        flags = None
        if pass_through is not None:
            flags = [bool(p) for p in pass_through]
            if len(flags) != len(arrays):
                raise ValueError(f"inputs_pass_through needs one 0/1 per input "
                                 f"({len(arrays)}); got {len(flags)}")
            if fmt == "nchw":
                # a passed-through input is handed over as NHWC data, transposed here
                for i, p in enumerate(flags):
                    if p and self._in_nhwc[i]:
                        arrays[i] = np.ascontiguousarray(arrays[i].transpose(0, 2, 3, 1))
                if any(flags):
                    fmt = self._mixed(arrays, [None if p else "nchw" for p in flags])
            if not any(flags):
                flags = None
        out = None
        key = None
        if reuse_outputs:
            key = (tuple(a.shape for a in arrays), fmt) if self._dynamic else 0
            out = self._reuse.get(key)
        outputs = model.run(*arrays, out=out, data_format=fmt, pass_through=flags)
        if reuse_outputs and out is None:
            self._reuse[key] = outputs
            outputs = list(outputs)
        if get_frame_id:
            # as RKNNLite 2.5.0: the outputs' frame id (rknn_output_extend.frame_id), then
            # the id of the frame this call ran (rknn_run_extend.frame_id): the same in sync
            # mode; in async mode the outputs are those of the frame before
            frame = model.frame_id
            outputs.append(frame)
            outputs.append(frame + 1 if self._async else frame)
        return outputs

    def _formats(self, arrays, data_format) -> str:
        """The one layout name the model's run takes for `data_format` (transposing inputs
        here when a list gives different layouts)."""
        if data_format is None:
            return "nhwc"
        if isinstance(data_format, str):
            fmt = data_format.lower()
            if fmt not in _FORMATS:
                raise ValueError(f"data_format must be 'nhwc' or 'nchw', got {data_format!r}")
            return fmt
        if isinstance(data_format, (list, tuple)):
            fmts = [None if f is None else str(f).lower() for f in data_format]
            if len(fmts) != len(arrays) or any(f not in _FORMATS + (None,) for f in fmts):
                raise ValueError(f"data_format as a list needs one 'nhwc' or 'nchw' per "
                                 f"input ({len(arrays)}); got {list(data_format)!r}")
            used = {f or "nhwc" for f, nd in zip(fmts, self._in_ndims) if nd == 4}
            if len(used) <= 1:
                return used.pop() if used else "nhwc"
            return self._mixed(arrays, fmts)
        raise TypeError(f"data_format must be 'nhwc', 'nchw' or a list of them, got "
                        f"{type(data_format).__name__}")

    def _mixed(self, arrays, fmts) -> str:
        """Inputs in different layouts: the NCHW ones of NHWC inputs are transposed."""
        for i, f in enumerate(fmts):
            if f == "nchw" and self._in_nhwc[i]:
                arrays[i] = np.ascontiguousarray(arrays[i].transpose(0, 2, 3, 1))
        return "nhwc"

    def get_sdk_version(self) -> Optional[str]:
        """The runtime's and the driver's versions (several lines), or None on error
        (before :meth:`init_runtime`: librknnrt reports them only on an open model).

        Raises
        ------
        RuntimeError
            Only with ``raise_errors=True``: the runtime is not initialized.
        """
        try:
            from rknnx._version import __version__
            from rknnx.runtime import runtime_info

            model = self._model
            if model is None:
                raise RuntimeError("the runtime is not initialized: call init_runtime before "
                                   "get_sdk_version")
            info = runtime_info()
            where = "emulator" if info.get("is_emulator") else "librknnrt"
            return (f"rknnx {__version__} (RKNNLite {API_VERSION} API)\n"
                    f"API: {model.sdk_version}\n"
                    f"DRV: {model.driver_version}\n"
                    f"runtime: {info.get('path')} ({where}), chip: {model.chip}")
        except Exception as e:
            return self._fail("get_sdk_version", e, None)

    def list_support_target_platform(self, rknn_model=None) -> None:
        """Print the chips this API runs on and, for `rknn_model`, the chip it was built
        for (read from a vendor ``.rknn`` by :mod:`rknnx.modelfile`, or from a model written
        by :mod:`rknnx.emulator`).  Returns None; a path that is not a model file (missing,
        a directory, ``/dev/null``) prints an E line saying which and nothing else.
        """
        try:
            from rknnx import platforms

            general = [c for c in platforms.CHIPS if platforms.supports(c, "rknn_inputs_set")]
            zc_only = [c for c in platforms.CHIPS if c not in general]
            lines = ["Target platforms of rknnx.lite:",
                     f"  general API:    {' '.join(general)}",
                     f"  zero-copy only: {' '.join(zc_only)} (inference runs through "
                     "zero-copy memory; no inputs_pass_through)"]
            if rknn_model is not None:          # (a missing file: an E line, no table)
                lines.append(f"Target platform of {os.fspath(rknn_model)}: "
                             f"{_model_target(rknn_model)}")
            print("\n".join(lines))
        except Exception as e:
            return self._fail("list_support_target_platform", e, None)
        return None

    def list_devices(self):
        """Remote devices (adb, ntb): none, rknnx runs on the local NPU or the emulator.

        Returns
        -------
        tuple
            ``([], [])``: adb device ids, ntb device ids.
        """
        print("rknnx.lite runs on the local NPU (or the emulator): no adb/ntb devices")
        return [], []

    def release(self) -> None:
        """Close the runtime (``rknn_destroy``).  The model stays loaded, as in RKNNLite
        2.5.0: :meth:`init_runtime` opens it again.  A second call does nothing."""
        try:
            self._close_model()         # the model stays loaded, as in RKNNLite 2.5.0:
        except Exception as e:          # init_runtime may open it again
            return self._fail("release", e, None)
        return None

    def _close_model(self) -> None:
        self._reuse.clear()
        model, self._model = self._model, None
        if model is not None:
            model.close()

    def __del__(self):
        model = getattr(self, "_model", None)
        if model is not None:
            try:
                self._reuse.clear()
                model.close()
            except Exception:
                pass


def _model_target(path) -> str:
    """The chip a model was built for: written in an emulator model, read from a vendor
    ``.rknn`` by :mod:`rknnx.modelfile`; else a sentence saying why it is unknown.  A path
    that is not a regular file raises (FileNotFoundError, IsADirectoryError, ValueError),
    saying what it is."""
    from rknnx.modelfile import check_file

    p = os.fspath(path)
    check_file(p)
    with open(p, "rb") as f:
        data = f.read()
    if data[:4] == b"RKNN":
        from rknnx import modelfile

        try:
            return modelfile.read(data).chip
        except Exception as e:           # a file rknnx's reader refuses: say why
            return f"unknown (rknnx's reader cannot read it: {e})"
    try:
        from rknnx.emulator import reference

        return str(reference.as_model(data).target)
    except Exception:
        return "unknown (neither a vendor .rknn file nor an emulator model)"
