"""``rknnx emulator``: where the bundled CPU emulator of librknnrt and the RKNN headers are
(to build C programs against it), and the sample models written to a folder."""

from __future__ import annotations

import os

from rknnx.cli._common import UserError, help_text


def include_dir() -> str:
    """The RKNN C headers installed with the package (``rknn_api.h`` ...)."""
    import rknnx

    return os.path.join(os.path.dirname(os.path.abspath(rknnx.__file__)), "include")


def run(args) -> int:
    from rknnx.emulator import library_path, samples

    try:
        lib = library_path()
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    libdir = os.path.dirname(lib)
    inc = include_dir()
    if args.write_samples:
        from rknnx import platforms

        try:
            args.target = platforms.normalize_chip(args.target)
        except ValueError:
            raise UserError(f"--target {args.target!r} is not a chip rknnx knows; expected "
                            f"one of {', '.join(platforms.CHIPS)}") from None
        os.makedirs(args.write_samples, exist_ok=True)
        for name, maker in sorted(samples.ALL.items()):
            path = os.path.join(args.write_samples, f"{name}.rknn")
            with open(path, "wb") as f:
                f.write(maker(target=args.target))
            print(f"wrote {path}")
        return 0
    print(f"library: {lib}")
    print(f"include: {inc}")
    print(f"build a C program against it:\n"
          f"  cc prog.c -I{inc} -L{libdir} -Wl,-rpath,{libdir} -lrknnrt")
    print("run Python on it: RKNNX_RUNTIME=emulator python ...   (or rknnx.load_runtime('emulator'))")
    print(f"samples: {', '.join(sorted(samples.ALL))}")
    print("  (rknnx info/run/bench --sample NAME runs one; --write-samples DIR writes them as "
          ".rknn; rknnx.emulator.samples.NAME() returns the bytes)")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("emulator", help="where the CPU emulator and headers are; sample models",
                       description=help_text(__doc__))
    p.add_argument("--write-samples", metavar="DIR",
                   help="write every sample model (.rknn for the emulator) into DIR")
    p.add_argument("--target", default="RK3588",
                   help="the chip the samples are built for (default RK3588)")
    p.set_defaults(func=run)
