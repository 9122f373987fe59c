"""What the sub-commands share: the runtime (or the emulator fallback), opening a model
from a file or a sample, and the one-line error users see."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional


#: where a board gets librknnrt (doctor's advice, --strict's error; docs/board.md says more)
WHERE_TO_GET_LIBRKNNRT = (
    "On a board, install librknnrt.so into /usr/lib: it comes with the board's image, or "
    "from Rockchip's RKNPU2 runtime in rknn-toolkit2 (github.com/airockchip/rknn-toolkit2, "
    "rknpu2/runtime/Linux/librknn_api/aarch64/librknnrt.so), in the version of the toolkit "
    "that converted the models (2.x for toolkit 2.x)")


class UserError(Exception):
    """A mistake the user can fix (missing file, wrong input ...): one line, exit status 1."""


def load_runtime(strict: bool = False, quiet: bool = False) -> dict:
    """The runtime the library chooses (the board's librknnrt; on a host that cannot be a
    board, the bundled emulator, which the loader announces in one W line).  `strict`:
    refuse that stand-in.  `quiet` is kept for the callers' symmetry: the library speaks
    for itself."""
    from rknnx import lowlevel, runtime
    from rknnx.errors import RuntimeNotFoundError

    if strict and not os.environ.get("RKNNX_RUNTIME"):
        # --strict (a command's first use of the runtime): try the places a board has
        # librknnrt, and never load the emulator that would stand in for it (so no line
        # says it is used before it is refused)
        tried = []
        for candidate in lowlevel.SYSTEM_CANDIDATES:
            try:
                lowlevel.load_runtime(candidate)
                break
            except RuntimeNotFoundError:
                tried.append(candidate)
        else:
            raise RuntimeNotFoundError(
                f"no librknnrt on this host (tried {', '.join(tried)}); --strict does not "
                f"fall back to the bundled CPU emulator. {WHERE_TO_GET_LIBRKNNRT}")
    info = runtime.runtime_info()
    if strict and info["source"] == lowlevel.FALLBACK_SOURCE:
        raise RuntimeNotFoundError("the bundled CPU emulator is loaded (this host cannot be a "
                                   "board); --strict refuses it. " + WHERE_TO_GET_LIBRKNNRT)
    return info


def add_model_arguments(p, *, required: bool = True) -> None:
    p.add_argument("model", nargs="?", metavar="MODEL", help="the .rknn model file")
    p.add_argument("--sample", metavar="NAME",
                   help="a sample model of the emulator instead of MODEL "
                        "(classifier, detector, multi_io, dynamic, tiny_relu, ...)")
    p.set_defaults(_model_required=required)


def open_model(args, **kw):
    """A rknnx.Model of ``args.model`` or ``args.sample``."""
    import rknnx

    source = model_source(args)
    try:
        return rknnx.Model(source, **kw)
    except rknnx.errors.ModelInvalidError as exc:
        raise UserError(f"{_name(args)} is not a model this runtime can load ({exc})") from exc


def model_source(args):
    if args.sample:
        from rknnx.emulator import samples

        maker = samples.ALL.get(args.sample)
        if maker is None:
            raise UserError(f"no sample {args.sample!r}; the samples are "
                            f"{', '.join(sorted(samples.ALL))}")
        info = load_runtime(quiet=True)
        return maker(target=info.get("platform") or "RK3588")
    if not args.model:
        raise UserError("give a MODEL file (or --sample NAME)")
    check_model_path(args.model)
    return args.model


def check_model_path(path: str) -> None:
    """UserError unless `path` is a regular file (saying what it is instead)."""
    from rknnx.modelfile import check_file

    if os.path.isdir(path):
        raise UserError(f"{path!r} is a directory, not a model file")
    try:
        check_file(path)                 # missing, /dev/null, a pipe: saying which
    except (OSError, ValueError) as e:
        raise UserError(str(e)) from None


def help_text(doc: str) -> str:
    """A sub-command's description: the first paragraph of its module docstring, as plain
    text (reST roles such as :mod:`x` and ``literals`` lose their markup)."""
    import re

    text = " ".join(doc.strip().split("\n\n")[0].split())
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "").replace("`", "")


def _name(args) -> str:
    return f"sample {args.sample!r}" if args.sample else repr(args.model)


def fmt_shape(shape) -> str:
    return "x".join(str(d) for d in shape)


def human_bytes(n: Optional[int]) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def gray_level(text: str) -> int:
    """An argparse type: a gray level, an integer 0-255 (--pad)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a gray level 0-255, got {text!r}") from None
    if not 0 <= value <= 255:
        raise argparse.ArgumentTypeError(f"expected a gray level 0-255, got {value}")
    return value
