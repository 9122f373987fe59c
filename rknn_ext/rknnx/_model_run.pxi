# rknnx.Model.run in compiled code: the base class _ModelRun of the facade's Model
# (rknnx.model), whose `run` is a method descriptor (METH_VARARGS | METH_KEYWORDS: Cython's
# form for *inputs, whose tuple is the call's own, not a copy).  CPython calls it with no
# Python frame: the frame of a Python method of run's signature
# cost about as many instructions as the runtime's four calls on a tiny model
# (docs/benchmarks.md, "Where the nanoseconds go").  It runs the common case itself (one
# numpy array per input of its exact shape, `out` or new arrays, Context._infer's
# fast_only path: one crossing, the GIL released once) and hands everything else to the
# facade's Python (Model._run_general, Model._run_declined), which decides and words the
# errors as before.  What it reads of the Model is set once, by Model.__init__ through
# _fast_setup, before the object is shared: on a free-threaded CPython no thread writes
# a field another reads, but for `_fr_ran` (one word, atomic).

cdef object _np_empty = _np.empty               # the outputs run() allocates (no out=)


@cython.auto_pickle(False)
cdef class _ModelRun:
    """The compiled half of :class:`rknnx.Model` (internal): its :meth:`run`."""

    # -- set once, by _fast_setup (Model.__init__) --------------------------------------------
    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def _fast_setup(self, Context ctx not None, own, lock, family, specs, formats,
                    bint fast, bint pixel, /):
        """What run()'s fast path reads (internal; Model.__init__, once)."""
        if self._fr_ready:
            raise RuntimeError("_fast_setup: the Model is set up already")
        self._fr_ctx = ctx
        self._fr_own = own
        self._fr_lock = lock
        self._fr_family = family
        self._fr_fast = fast
        if fast:
            # each spec a (shape, dtype) tuple made here: run() unpacks them unchecked
            self._fr_specs_f = tuple([(tuple(shape), dtype) for shape, dtype in specs[False]])
            self._fr_specs_raw = tuple([(tuple(shape), dtype) for shape, dtype in specs[True]])
            self._fr_formats = frozenset(formats)
        self._fr_pixel = pixel
        self._fr_ready = True

    @property
    def _last(self):
        """The runner of the last run (perf, frame id), None before the first."""
        return self._fr_own if _atomic_load_int(&self._fr_ran) else None

    @_last.setter
    def _last(self, value):
        # run() runs on the model's own runner only (the general path's runner is
        # Model._own too): the flag says whether one ran
        if value is not None and value is not self._fr_own:
            raise ValueError("_last: the Model's own runner or None")
        _atomic_store_int(&self._fr_ran, value is not None)

    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def run(self, *inputs, raw=False, out=None, data_format=None, pass_through=None):
        """Run the model on numpy arrays (the general flow).

        Parameters
        ----------
        *inputs : numpy.ndarray, or one dict name -> array
            One array per input, in the model's layout or (4-D) the other of NHWC/NCHW;
            uint8 pixels, int8, float16 or float32 (the runtime converts and normalizes);
            float64, numpy's default, is taken as float32, as a session's
            :meth:`~rknnx.ZeroCopySession.run_arrays` takes it.
            A 3-D array stands for a batch of one.  For a dynamic-shape model the shape set
            is chosen from the shapes.
        raw : bool
            Return the outputs in the model's own type (e.g. int8) instead of float32.
        out : sequence of numpy.ndarray, optional
            Arrays to write the outputs into (reused across calls: no allocation); each of
            the shape and dtype that :attr:`outputs` (or ``raw``) says.
        data_format : {"nhwc", "nchw"}, optional
            The layout of 4-D inputs, when their shape leaves it ambiguous.
        pass_through : sequence of bool, optional
            One flag per input: True hands that input to the NPU as it is (``rknn_input
            .pass_through``): already normalized and quantized, in the model's own type
            and the native layout the runtime expects; it is not converted or
            shape-checked here (the runtime checks its size).  General flow only.

        Returns
        -------
        list of numpy.ndarray
            One per output (the `out` arrays when given).

        Raises
        ------
        ValueError
            Wrong number of inputs, a shape that fits neither layout (or no shape set),
            `out` arrays of the wrong shape, a closed model.
        TypeError
            An element type the runtime does not take.
        RKNNError
            The runtime failed (the subclass of its status).
        """
        cdef Context ctx
        cdef tuple specs
        cdef Py_ssize_t k, n
        if not self._fr_ready:
            # a Model whose __init__ did not get this far (or a subclass that skipped it)
            return self._run_general(inputs, raw, out, data_format, pass_through)
        if self._fr_pixel and self._pixel_inputs:
            self._check_pixel_range(inputs)
        if not self._fr_fast or pass_through is not None or not (
                data_format is None or (type(data_format) is str and
                                        data_format in self._fr_formats)):
            return self._run_general(inputs, raw, out, data_format, pass_through)
        # the common case: ndarrays handed to Context._infer as they are; it runs them if
        # they are one numpy.ndarray per input, each of its input's exact shape and a type
        # the runtime takes, and `out` (a list or tuple) holds one ndarray per output of
        # its exact shape and dtype, writable, C-contiguous, none sharing memory with
        # another (check_out's rules: all checked in C), else returns None having called
        # nothing and the facade's path decides (conversions, layouts, clear errors)
        if raw is not False and raw is not True:
            raw = self._check_raw(raw)         # (rknnx._facts.check_raw: a bool or raises)
        if out is None:
            specs = self._fr_specs_raw if raw else self._fr_specs_f
            n = len(specs)
            arrays = [None] * n
            for k in range(n):
                shape, dtype = <tuple>specs[k]
                arrays[k] = _np_empty(shape, dtype)
        else:
            arrays = out
        ctx = self._fr_ctx
        try:
            # inputs_set + run + outputs_get under one hold of the context's lock (no other
            # call comes between them: the model's lock is not needed)
            done = _infer(ctx, inputs, arrays, not raw, True)
        except RuntimeError:
            self._refuse_run_inside_run(self._fr_lock, ctx)
            raise
        except _RKNNFailError as e:
            better = self._fr_family.explain_model(e, ctx)   # custom ops not registered
            if better is e:
                raise
            raise better from None
        except ValueError:
            # closed (or closing) by a close() in another thread: the Model's words
            # (the handle loaded whole: close() stores it under the lock this call did not
            # get; rknnx_atomic.h)
            if _relaxed_load_ctx(&ctx.ctx) == 0 or self._fr_family.closing:
                raise ValueError("run on closed Model") from None
            raise
        if done is not None:
            if not _atomic_load_int(&self._fr_ran):
                _atomic_store_int(&self._fr_ran, 1)
            return done   # a new list of the arrays written (out's, as taken before the run)
        return self._run_declined(inputs, raw, out, data_format, pass_through)
