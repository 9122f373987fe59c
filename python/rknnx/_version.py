"""The package's version, in a module of its own: the modules the package's namespace
imports on first use (rknnx.lite) read it here, not from the namespace above them."""

__version__ = "0.1.0"
