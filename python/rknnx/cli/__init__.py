"""The ``rknnx`` command: one sub-command a module (``rknnx <command> --help``).

- ``info``: describe a model (tensors, native layouts, memory, versions, chip support);
- ``run``: run a model on .npy arrays or images and save the outputs;
- ``detect``: find objects in an image with a YOLO model and draw them;
- ``track``: follow objects in videos with a YOLO model and a tracker; draw and write them;
- ``bench``: general vs zero-copy, phase by phase;
- ``doctor``: which runtime rknnx uses, the chip and what it supports;
- ``emulator``: where the CPU emulator and the C headers are; the sample models;
- ``serve``: serve models over HTTP (KServe v2 / Triton protocol; the serve extra).

User errors (a missing file, a corrupt model, a wrong input) end with one line on stderr
and exit status 1; ``--verbose`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import List, Optional

from rknnx.cli import bench, detect, doctor, emulator, info, run, serve, track
from rknnx.cli._common import UserError

_COMMANDS = (info, run, detect, track, bench, doctor, emulator, serve)


def build_parser() -> argparse.ArgumentParser:
    from rknnx import __version__

    parser = argparse.ArgumentParser(
        prog="rknnx", description="Drive a Rockchip NPU (or its CPU emulator) from the shell.")
    parser.add_argument("--version", action="version", version=f"rknnx {__version__}")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(sub)
    # `--verbose` after the sub-command too (`rknnx info bad.rknn --verbose`): each
    # sub-parser takes it, with a default that leaves the main parser's value alone
    for p in sub.choices.values():
        p.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                       help="show the traceback of an error")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings():
            # rknnx's warnings (a float image in 0..1, a runtime fallback) as one line
            # each, without Python's file name, line number and source line
            warnings.showwarning = _show_warning
            return args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:          # `rknnx info ... | head`
        sys.stderr.close()
        return 0
    except (UserError, OSError, ValueError, TypeError, KeyError, ImportError) as exc:
        if args.verbose:
            raise
        print(f"rknnx {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # an RKNNError and anything the runtime raised
        from rknnx.errors import RKNNError

        if args.verbose or not isinstance(exc, RKNNError):
            raise
        print(f"rknnx {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    text = " ".join(str(message).split())
    kind = "" if category is UserWarning else f"{category.__name__}: "
    print(f"W rknnx: {kind}{text}", file=file or sys.stderr)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    first = text.splitlines()[0]
    return first if not isinstance(exc, KeyError) else first.strip("'\"")
