"""Command line: ``rknnx doctor`` (alias ``info``) shows which runtime rknnx uses.

On a board it loads the installed librknnrt; on a host without one it says so and
falls back to the bundled CPU emulator, so the command works anywhere.
"""

from __future__ import annotations

import argparse
import os
import sys


def _doctor(args) -> int:
    import rknnx

    fallback = None
    try:
        info = rknnx.runtime_info()
    except rknnx.RuntimeNotFoundError as exc:
        if args.strict:
            print(exc, file=sys.stderr)
            return 1
        fallback = str(exc).splitlines()
        info = rknnx.load_runtime("emulator")
    model = args.model
    if model is None and info["is_emulator"]:
        from rknnx.emulator import samples

        model = samples.tiny_relu(target=info.get("platform", "RK3588"))
    if model is not None:
        info = rknnx.runtime_info(model)
    print(f"rknnx {rknnx.__version__}")
    if fallback:
        print("no NPU runtime found on this machine:")
        for line in fallback[1:-1]:
            print(f"  {line.strip()}")
        print("-> using the bundled CPU emulator (set RKNNX_RUNTIME to choose a library)")
    kind = "CPU emulator" if info["is_emulator"] else "librknnrt"
    print(f"runtime:   {info['path']} ({kind}, chosen by {info['source']})")
    print(f"functions: {len(info['functions'])} of {len(info['functions']) + len(info['missing'])} "
          "RKNN API entry points")
    if info["missing"]:
        print(f"missing:   {', '.join(info['missing'])}")
    for key, label in (("sdk_version", "sdk:      "), ("driver_version", "driver:   "),
                       ("platform", "platform: ")):
        if info.get(key):
            print(f"{label} {info[key]}")
    if model is None:
        print("(pass --model FILE.rknn to read the runtime and driver versions)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="rknnx", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    doctor = sub.add_parser("doctor", aliases=["info"], help="show the runtime rknnx uses")
    doctor.add_argument("--strict", action="store_true",
                        help="fail instead of falling back to the emulator")
    doctor.add_argument("--model", metavar="FILE",
                        help="a model to open, to read the runtime and driver versions")
    doctor.set_defaults(func=_doctor)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        args = parser.parse_args(["doctor"] + list(argv or []))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
