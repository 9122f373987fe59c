"""``rknnx.ort.InferenceSession``: an RKNN model behind the ONNX Runtime session surface.

Applications that run detectors in ONNX Runtime (NVRs, photo libraries, home-automation
add-ons) code against ``onnxruntime.InferenceSession``: ``get_inputs()`` /
``get_outputs()`` (name, shape, type string), ``run(output_names, input_feed)``,
``get_modelmeta()``, ``get_providers()``.  This class gives them that surface over a
:class:`rknnx.Model` (the general flow: numpy in, float32 out), so that an RKNN path is a
change of import::

    from rknnx.ort import InferenceSession
    session = InferenceSession("yolov8n.rknn")
    boxes, = session.run(None, {session.get_inputs()[0].name: frame})

What differs from ONNX Runtime, by necessity:

- inputs are the RKNN model's: an image input is usually uint8 NHWC pixels (the model
  normalizes and quantizes on the NPU), reported as ``tensor(uint8)``; NCHW arrays and
  float32 are accepted too, as :meth:`rknnx.Model.run` accepts them;
- the one provider is ``"RKNPUExecutionProvider"``; asking for others is accepted and
  ignored with no effect (there is no CPU fallback to choose);
- a dynamic-shape model's varying dims are reported as ``None`` (ONNX Runtime writes a
  symbol or None); its inputs choose the shape set;
- ``SessionOptions`` / ``RunOptions`` are accepted and not used.

Pure Python over :mod:`rknnx.model`; no onnxruntime needed (the tests compare this
surface with the real package's).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

__all__ = ["InferenceSession", "NodeArg", "ModelMetadata", "SessionOptions", "RunOptions",
           "PROVIDER", "get_available_providers"]

#: the execution provider this session stands for
PROVIDER = "RKNPUExecutionProvider"

# numpy dtype -> ONNX Runtime's type string
_TYPES = {"float32": "tensor(float)", "float16": "tensor(float16)", "float64": "tensor(double)",
          "int8": "tensor(int8)", "uint8": "tensor(uint8)", "int16": "tensor(int16)",
          "uint16": "tensor(uint16)", "int32": "tensor(int32)", "uint32": "tensor(uint32)",
          "int64": "tensor(int64)", "bool": "tensor(bool)"}


def get_available_providers() -> List[str]:
    """As ``onnxruntime.get_available_providers()``: the providers this package runs."""
    return [PROVIDER]


@dataclass(frozen=True)
class NodeArg:
    """An input or output, as ``onnxruntime.NodeArg``: ``name``, ``shape`` (ints; None for
    a dim that varies between the shape sets of a dynamic model) and ``type``."""

    name: str
    shape: List[Optional[int]]
    type: str


@dataclass(frozen=True)
class ModelMetadata:
    """As ``onnxruntime.ModelMetadata``; ``description`` holds the RKNN model's custom
    string, ``custom_metadata_map`` the chip and runtime versions."""

    producer_name: str = "rknn-toolkit2"
    graph_name: str = ""
    domain: str = ""
    description: str = ""
    graph_description: str = ""
    version: int = 0
    custom_metadata_map: Dict[str, str] = field(default_factory=dict)


class SessionOptions:
    """Accepted for compatibility (``onnxruntime.SessionOptions``); nothing in it is used."""


class RunOptions:
    """Accepted for compatibility (``onnxruntime.RunOptions``); nothing in it is used."""


class InferenceSession:
    """An RKNN model with the session surface of ONNX Runtime.

    Parameters
    ----------
    path_or_bytes : str, os.PathLike or bytes
        The ``.rknn`` file, or its bytes.
    sess_options : SessionOptions, optional
        Accepted, not used.
    providers, provider_options : optional
        Accepted; the session runs on :data:`PROVIDER` whatever they say.
    **kwargs
        Passed to :class:`rknnx.Model` (``core_mask``, ``flags``, ``perf``).

    Attributes
    ----------
    model : rknnx.Model
        The model underneath (zero-copy sessions, perf, pools are there).

    Notes
    -----
    ``run`` calls are serialized by the model; for several NPU cores use a
    :class:`rknnx.Pool` on :attr:`model`.  Close the session (or use ``with``) to free
    the NPU context.
    """

    def __init__(self, path_or_bytes: Union[str, "os.PathLike[str]", bytes],
                 sess_options: Optional[SessionOptions] = None,
                 providers: Optional[Sequence[Any]] = None,
                 provider_options: Optional[Sequence[Dict[Any, Any]]] = None, **kwargs):
        from rknnx.model import Model

        if not isinstance(path_or_bytes, (str, bytes, os.PathLike)):
            raise TypeError(f"path_or_bytes must be a path or bytes, as for onnxruntime; got "
                            f"{type(path_or_bytes).__name__}")
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self.model = Model(path_or_bytes, **kwargs)
        self._inputs = [self._arg(t, t.shape, _dtype_in(t), self.model.dynamic)
                        for t in self.model.inputs]
        self._outputs = [self._arg(t, t.shape, np.dtype(np.float32), self.model.dynamic)
                         for t in self.model.outputs]
        self._out_index = {t.name: i for i, t in enumerate(self.model.outputs)}

    def _arg(self, t, shape, dtype, dynamic: bool) -> NodeArg:
        dims: List[Optional[int]] = list(shape)
        if dynamic and t in self.model.inputs:
            k = self.model.inputs.index(t)
            for d in range(len(dims)):
                if len({s[k][d] for s in self.model.shape_sets}) > 1:
                    dims[d] = None
        return NodeArg(t.name, dims, _TYPES.get(np.dtype(dtype).name, "tensor(float)"))

    # -- description -----------------------------------------------------------------------
    def get_inputs(self) -> List[NodeArg]:
        """The model's inputs (name, shape, type string)."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs: float32, in the shape :meth:`run` returns them."""
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        """None: an RKNN model's constants are compiled in."""
        return []

    def get_modelmeta(self) -> ModelMetadata:
        m = self.model
        return ModelMetadata(description=m.custom_string,
                             custom_metadata_map={"chip": str(m.chip),
                                                  "sdk_version": m.sdk_version,
                                                  "driver_version": m.driver_version})

    def get_providers(self) -> List[str]:
        return [PROVIDER]

    def get_provider_options(self) -> Dict[str, Dict[str, str]]:
        return {PROVIDER: {}}

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def set_providers(self, providers: Optional[Sequence[Any]] = None,
                      provider_options: Optional[Sequence[Dict[Any, Any]]] = None) -> None:
        """Accepted: the session runs on :data:`PROVIDER` whatever is asked."""

    def disable_fallback(self) -> None:
        """Nothing to disable: there is no fallback provider."""

    def enable_fallback(self) -> None:
        """Nothing to enable: there is no fallback provider."""

    def end_profiling(self) -> str:
        """No profile file is written (``rknnx.Model(perf=True)`` has per-layer timing)."""
        return ""

    def get_profiling_start_time_ns(self) -> int:
        return 0

    # -- running ---------------------------------------------------------------------------
    def run(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, Any],
            run_options: Optional[RunOptions] = None) -> List[np.ndarray]:
        """Run the model: `input_feed` maps each input's name to its array; the outputs
        named in `output_names` (all of them for None or an empty list) are returned in
        that order, float32.

        Raises
        ------
        ValueError
            An input missing or not of the model, an output name the model does not have,
            a shape or dtype the model does not take (the message says which), a closed
            session.
        """
        if self.model.closed:
            # the session's own name, not the Model's it wraps
            raise ValueError("run on closed InferenceSession (close() was called)")
        if not isinstance(input_feed, dict):
            raise TypeError(f"input_feed must be a dict of input name -> array; got "
                            f"{type(input_feed).__name__}")
        names = [t.name for t in self.model.inputs]
        unknown = sorted(set(input_feed) - set(names))
        if unknown:
            raise ValueError(f"invalid input name(s) {unknown}; the model's inputs are {names}")
        missing = [n for n in names if n not in input_feed]
        if missing:
            raise ValueError(f"missing input(s) {missing}; the model's inputs are {names}")
        wanted = list(output_names) if output_names else [t.name for t in self.model.outputs]
        bad = [n for n in wanted if n not in self._out_index]
        if bad:
            raise ValueError(f"invalid output name(s) {bad}; the model's outputs are "
                             f"{list(self._out_index)}")
        outs = self.model.run(*[np.asarray(input_feed[n]) for n in names])
        return [outs[self._out_index[n]] for n in wanted]

    def run_async(self, output_names: Optional[Sequence[str]], input_feed: Dict[str, Any],
                  callback: Callable[[Any, Any, str], None], user_data: Any,
                  run_options: Optional[RunOptions] = None) -> None:
        """As ``onnxruntime.InferenceSession.run_async``: run on a thread, then call
        ``callback(outputs, user_data, err)`` (``err`` "" on success, else the message;
        outputs None then)."""
        def work():
            try:
                outs = self.run(output_names, input_feed, run_options)
            except Exception as e:            # handed to the callback, as ORT does
                callback(None, user_data, f"{type(e).__name__}: {e}")
            else:
                callback(outs, user_data, "")
        threading.Thread(target=work, name="rknnx-ort-run", daemon=True).start()

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Free the NPU context (ONNX Runtime frees it when the session is collected)."""
        self.model.close()

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        # an ONNX Runtime session needs no close(): neither does this one
        model = getattr(self, "model", None)
        if model is not None and not model.closed:
            try:
                model.close()
            except Exception:                 # a view still alive, interpreter teardown
                pass


def _dtype_in(t) -> np.dtype:
    from rknnx._tensors import default_dtype

    return default_dtype(t)


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
