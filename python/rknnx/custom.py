"""Custom operators in Python for people: :func:`custom_op`, :class:`CustomOperator`,
:func:`register`.

A model converted with custom operators (op types such as ``"cstSigmoid"``) needs their
implementation at run time.  Here an implementation is a Python function that receives
numpy views of the op's tensors and fills the outputs::

    @rknnx.custom_op("cstSigmoid")
    def sigmoid(inputs, outputs):
        np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])

``inputs`` are read-only views of the input tensors, ``outputs`` writable views of the
output tensors, both in the shapes and dtypes of the op's tensor attributes, valid only
during the call (copy what you keep).  A function with a third parameter also receives
the op's :class:`rknnx.lowlevel.CustomOpContext` (its ``input_attrs``,
``output_attrs``, ``get_op_attr(name)`` for the op's attributes in the model, and a free
``state`` slot).  For per-node setup and teardown, subclass :class:`CustomOperator` and
define ``init`` / ``prepare`` / ``destroy``.

:func:`register` installs operators on a :class:`rknnx.lowlevel.Context` (built on
``Context.register_custom_ops``).  An exception raised by an operator makes the run fail
and is re-raised from ``run()``, chained from the runtime's error; the locals of the
operator's frames are cleared from its traceback (they held views of the context's memory,
which a kept error would pin: ``close()`` would refuse).  The RV1106/RV1103
family and RK2118 have no custom operators: there :func:`register` raises
:class:`rknnx.NotSupportedError`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable, List, Optional, Sequence, Union

from rknnx.runtime import refuse_if_unsupported

__all__ = ["custom_op", "CustomOperator", "register"]


def _check_op_type(op_type: Any, where: str) -> str:
    if not isinstance(op_type, str):
        raise TypeError(f"{where}: op_type must be a str naming the op in the model, such as "
                        f"'cstSigmoid', got {type(op_type).__name__}")
    if not op_type:
        raise ValueError(f"{where}: op_type is empty; give the op type the model uses, such "
                         "as 'cstSigmoid'")
    if len(op_type.encode("utf-8")) > 255:
        raise ValueError(f"{where}: op_type must be at most 255 UTF-8 bytes, got "
                         f"{len(op_type.encode('utf-8'))}")
    return op_type


def _wants_context(fn: Callable, where: str) -> bool:
    """True if `fn` takes (inputs, outputs, op_ctx), False for (inputs, outputs)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):     # a builtin without a signature: the two-argument form
        return False
    params = list(sig.parameters.values())
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if len(required) > 3 or len(positional) < 2:
        raise TypeError(f"{where}: an operator function takes (inputs, outputs) or "
                        f"(inputs, outputs, op_ctx); {getattr(fn, '__name__', fn)!r} takes "
                        f"{sig}")
    return len(positional) >= 3


class CustomOperator:
    """A custom operator: its op type and the Python code that computes it.

    Make one with :func:`custom_op` (a decorator), or subclass it::

        class Sigmoid(rknnx.CustomOperator):
            op_type = "cstSigmoid"

            def init(self, inputs, outputs, op_ctx):      # once per node, at registration
                op_ctx.state = float(op_ctx.get_op_attr("alpha")[0])

            def compute(self, inputs, outputs, op_ctx):   # on every run
                np.divide(1.0, 1.0 + np.exp(-op_ctx.state * inputs[0]), out=outputs[0])

        rknnx.custom.register(ctx, [Sigmoid()])

    ``compute`` (required), ``init`` and ``prepare`` (before each compute) take
    ``(inputs, outputs)`` or ``(inputs, outputs, op_ctx)``; ``destroy(op_ctx)`` runs once
    per node when the context closes.  ``init`` may return
    :data:`rknnx.lowlevel.SKIP_CUSTOM_OP_COMPUTE` to ask for the runtime's built-in
    implementation of the op type.  Calling the operator calls ``compute``.

    Parameters
    ----------
    op_type : str
        The op type in the model, e.g. ``"cstSigmoid"`` (a subclass may set it as a class
        attribute instead).
    compute, init, prepare, destroy : callable, optional
        The functions, when not defined as methods of a subclass.

    Examples
    --------
    >>> import numpy as np, rknnx
    >>> op = rknnx.custom.CustomOperator("cstNeg", lambda i, o: np.negative(i[0], out=o[0]))
    >>> op.op_type
    'cstNeg'
    """

    op_type: str = ""

    def __init__(self, op_type: Optional[str] = None, compute: Optional[Callable] = None, *,
                 init: Optional[Callable] = None, prepare: Optional[Callable] = None,
                 destroy: Optional[Callable] = None):
        where = f"rknnx.{type(self).__name__}"
        self.op_type = _check_op_type(op_type if op_type is not None else type(self).op_type,
                                      where)
        for name, fn in (("compute", compute), ("init", init), ("prepare", prepare),
                         ("destroy", destroy)):
            if fn is not None:
                if not callable(fn):
                    raise TypeError(f"{where}: {name} must be callable, got "
                                    f"{type(fn).__name__}")
                setattr(self, name, fn)
        if not callable(getattr(self, "compute", None)):
            raise TypeError(f"{where}({self.op_type!r}): needs a compute function "
                            "(inputs, outputs[, op_ctx])")
        self._lowlevel = None

    # a subclass overrides compute; init, prepare and destroy are optional
    init: Optional[Callable] = None
    prepare: Optional[Callable] = None
    destroy: Optional[Callable] = None

    def __call__(self, inputs: Sequence[Any], outputs: Sequence[Any], op_ctx: Any = None) -> Any:
        """Run ``compute`` directly (e.g. to test it on numpy arrays)."""
        if _wants_context(self.compute, f"rknnx.custom_op({self.op_type!r})"):
            return self.compute(inputs, outputs, op_ctx)
        return self.compute(inputs, outputs)

    def __repr__(self) -> str:
        fn = getattr(self.compute, "__qualname__", type(self).__name__)
        return f"<rknnx.CustomOperator {self.op_type!r} compute={fn}>"

    def lowlevel(self):
        """This operator as a :class:`rknnx.lowlevel.CustomOp` (made once)."""
        if self._lowlevel is None:
            from rknnx.lowlevel import CustomOp

            where = f"rknnx.custom_op({self.op_type!r})"

            def adapt(fn: Optional[Callable], returns: bool) -> Optional[Callable]:
                if fn is None:
                    return None
                if _wants_context(fn, where):
                    def call(op_ctx, inputs, outputs):
                        r = fn(inputs, outputs, op_ctx)
                        return r if returns else None
                else:
                    def call(op_ctx, inputs, outputs):
                        r = fn(inputs, outputs)
                        return r if returns else None
                return call

            destroy = self.destroy
            self._lowlevel = CustomOp(self.op_type, adapt(self.compute, False),
                                      init=adapt(self.init, True),
                                      prepare=adapt(self.prepare, False),
                                      destroy=destroy)
        return self._lowlevel


def custom_op(op_type: str, *, init: Optional[Callable] = None,
              prepare: Optional[Callable] = None,
              destroy: Optional[Callable] = None) -> Callable[[Callable], CustomOperator]:
    """Decorator: make a function the implementation of the model's op type `op_type`.

    The function takes ``(inputs, outputs)`` or ``(inputs, outputs, op_ctx)`` and writes
    the outputs (see the module documentation); the decorator returns a
    :class:`CustomOperator` for :func:`register` (still callable like the function).

    Examples
    --------
    >>> import numpy as np, rknnx
    >>> @rknnx.custom_op("cstSigmoid")
    ... def sigmoid(inputs, outputs):
    ...     np.divide(1.0, 1.0 + np.exp(-inputs[0]), out=outputs[0])
    >>> out = [np.empty(2, np.float32)]
    >>> sigmoid([np.zeros(2, np.float32)], out); out[0]
    array([0.5, 0.5], dtype=float32)
    """
    where = "rknnx.custom_op"
    _check_op_type(op_type, where)
    if callable(op_type):  # pragma: no cover - caught above as a non-str
        raise TypeError(f"{where}: use @rknnx.custom_op('opType'), with the op type")

    def decorate(fn: Callable) -> CustomOperator:
        if not callable(fn):
            raise TypeError(f"{where}({op_type!r}) decorates a function, got "
                            f"{type(fn).__name__}")
        _wants_context(fn, f"{where}({op_type!r})")
        op = CustomOperator(op_type, fn, init=init, prepare=prepare, destroy=destroy)
        try:
            op.__doc__ = fn.__doc__
            op.__wrapped__ = fn
        except AttributeError:  # pragma: no cover
            pass
        return op

    return decorate


def register(context: Any, ops: Union[CustomOperator, Any, Iterable[Any]]) -> List[Any]:
    """Install custom operators on a :class:`rknnx.lowlevel.Context`.

    Parameters
    ----------
    context : rknnx.lowlevel.Context
        An open context on a model that uses the ops.
    ops : CustomOperator, rknnx.lowlevel.CustomOp, or a sequence of them
        The operators (each op type once; an op type may be registered once per context).

    Returns
    -------
    list of rknnx.lowlevel.CustomOp
        The low-level ops registered (``context.custom_ops`` lists them too).

    Raises
    ------
    TypeError, ValueError
        For anything that is not an operator, an empty list, an op type given twice or
        registered already, a closed context.
    rknnx.NotSupportedError
        On a chip without custom operators (RV1106/RV1103, RK2118).

    Examples
    --------
    >>> from rknnx.emulator import samples                 # doctest: +SKIP
    >>> with rknnx.lowlevel.Context(samples.custom_op_model()) as ctx:   # doctest: +SKIP
    ...     rknnx.custom.register(ctx, [sigmoid])
    ...     ctx.inputs_set([np.zeros((1, 16), np.float32)]); ctx.run()
    """
    from rknnx.lowlevel import Context, CustomOp

    where = "rknnx.custom.register"
    if not isinstance(context, Context):
        raise TypeError(f"{where}: needs a rknnx.lowlevel.Context, got {type(context).__name__}")
    if context.closed:
        raise ValueError(f"{where}: the context is closed")
    if isinstance(ops, (CustomOperator, CustomOp)):
        ops = [ops]
    elif callable(ops) or isinstance(ops, (str, bytes)):
        raise TypeError(f"{where}: takes CustomOperator objects (from @rknnx.custom_op("
                        f"'opType')), got {type(ops).__name__}; decorate the function first")
    try:
        ops = list(ops)
    except TypeError:
        raise TypeError(f"{where}: ops must be a CustomOperator or a sequence of them, got "
                        f"{type(ops).__name__}") from None
    if not ops:
        raise ValueError(f"{where}: needs at least one operator")
    low = []
    for op in ops:
        if isinstance(op, CustomOperator):
            low.append(op.lowlevel())
        elif isinstance(op, CustomOp):
            low.append(op)
        else:
            hint = (" (a plain function: decorate it with @rknnx.custom_op('opType'))"
                    if callable(op) else "")
            raise TypeError(f"{where}: takes CustomOperator or rknnx.lowlevel.CustomOp "
                            f"objects, got {type(op).__name__}{hint}")
    seen = set()
    registered = {o.op_type for o in context.custom_ops}
    for o in low:
        if o.op_type in seen:
            raise ValueError(f"{where}: op type {o.op_type!r} given twice")
        if o.op_type in registered:
            raise ValueError(f"{where}: op type {o.op_type!r} is registered already on "
                             "this context")
        seen.add(o.op_type)
    refuse_if_unsupported(where, "rknn_register_custom_ops", context)
    context.register_custom_ops(low)
    return low


def __dir__():
    # tab completion shows the public names, not the imports
    return sorted(__all__)
