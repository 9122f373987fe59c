# cython: language_level=3
# The floor of rknnx.Model.run as a compiled method (bench/empty_run.py builds it): a
# method descriptor of the same signature, declared as rknn_ext/rknnx/_model_run.pxi
# declares _ModelRun.run (binding off, the same *inputs and keyword-only arguments, so
# the same argument parsing), doing nothing.
cimport cython


cdef class EmptyRun:
    @cython.binding(False)
    def run(self, *inputs, raw=False, out=None, data_format=None, pass_through=None):
        return None
