"""``rknnx doctor``: which runtime rknnx uses, and what it provides.

On a board it loads the installed librknnrt; on a host without one it says so and
falls back to the bundled CPU emulator, so the command works anywhere.
"""

from __future__ import annotations

import sys


def run(args) -> int:
    import rknnx
    from rknnx import runtime

    fallback = None
    try:
        info = runtime.runtime_info()
    except rknnx.RuntimeNotFoundError as exc:
        if args.strict:
            print(exc, file=sys.stderr)
            return 1
        fallback = str(exc).splitlines()
        info = runtime.load_runtime("emulator")
    model = args.model
    if model is None and info["is_emulator"]:
        from rknnx.emulator import samples

        model = samples.tiny_relu(target=info.get("platform", "RK3588"))
    if model is not None:
        info = runtime.runtime_info(model)
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


def add_parser(sub) -> None:
    p = sub.add_parser("doctor", help="show the runtime rknnx uses",
                       description="Show which librknnrt rknnx loads (or the CPU emulator it "
                                   "falls back to) and what it provides.")
    p.add_argument("--strict", action="store_true",
                   help="fail instead of falling back to the emulator")
    p.add_argument("--model", metavar="FILE",
                   help="a model to open, to read the runtime and driver versions")
    p.set_defaults(func=run)
