"""The ``rknnx`` command: one sub-command a module (``rknnx <command> --help``).

- ``doctor``: which runtime rknnx uses and what it provides.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from rknnx.cli import doctor

_COMMANDS = (doctor,)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rknnx",
                                     description="Drive a Rockchip NPU (or its CPU emulator).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        args = parser.parse_args(["doctor"] + list(argv if argv is not None else sys.argv[1:]))
    return args.func(args)
