"""Sphinx configuration of the rknnx documentation (``sphinx-build -W -b html docs build/docs``).

Sphinx with autodoc + numpydoc because the docstrings are numpydoc already (numpy, h5py and
pyzmq document themselves the same way), and myst-parser so that the design notes written
in Markdown (architecture, ABI notes, serving, the file format) are pages as they are.
The API pages import the installed package: build the docs in an environment where
``pip install ".[docs]"`` ran (the emulator is bundled, so no board is needed).
"""

from __future__ import annotations

import os

import rknnx

# A PC says once that it runs on the emulator; the docs build must not depend on that.
os.environ.setdefault("RKNNX_RUNTIME", "emulator")

project = "rknnx"
author = "the rknnx authors"
copyright = "the rknnx authors, Apache-2.0"
release = version = rknnx.__version__

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Markdown: GitHub-style heading anchors so that links like abi-notes.md#board-facts work.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# autodoc + numpydoc: members in source order, no per-member stub pages.
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "show-inheritance": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# rknnx.ray imports Ray at the top (it is the ray extra); its API page needs only the names
autodoc_mock_imports = ["ray"]


html_theme = "alabaster"
html_title = f"rknnx {release}"
html_static_path: list[str] = []
