"""``rknnx doctor``: which runtime rknnx uses, the chip, the NPU's device nodes, what the
chip supports, and what to do about anything missing.

On a board it loads the installed librknnrt; on a host without one it says so and falls
back to the bundled CPU emulator, so the command works anywhere.
"""

from __future__ import annotations

import glob
import os
import sys

from rknnx import _board
from rknnx.cli._common import help_text

_NODES = ("/dev/dri/renderD*", "/dev/rknpu*", "/sys/kernel/debug/rknpu")


def device_nodes() -> list:
    """The NPU's device nodes present on this machine."""
    found = []
    for pattern in _NODES:
        found.extend(sorted(glob.glob(pattern)))
    return found


def run(args) -> int:
    import rknnx
    from rknnx import platforms, runtime
    from rknnx.cli._common import load_runtime

    try:
        info = load_runtime(strict=args.strict, quiet=True)
        fallback = None
    except rknnx.RuntimeNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    if info["source"] == rknnx.lowlevel.FALLBACK_SOURCE:
        fallback = True
    model = args.model
    if model is not None:
        from rknnx.cli._common import check_model_path

        check_model_path(model)
    if model is None and info["is_emulator"]:
        from rknnx.emulator import samples

        model = samples.tiny_relu(target=info.get("platform", "RK3588"))
    opened = None
    if model is not None:
        opened = _open(model)
        if isinstance(opened, rknnx.Model):
            info = dict(info, sdk_version=opened.sdk_version,
                        driver_version=opened.driver_version)
    board_chip = platforms.detect_chip()
    chip = runtime.chip_of()               # the binding's: the personality, else the board's
    models_chip = False
    if isinstance(opened, rknnx.Model) and opened.chip and opened.chip != chip:
        # the emulator with no chip chosen plays the chip the model was built for
        chip, models_chip = opened.chip, True
    nodes = device_nodes()
    print(f"rknnx {rknnx.__version__}")
    _print_runtime(info, fallback, chip, board_chip, nodes, models_chip)
    _print_chip(chip)
    cma = _cma()
    if cma and not info["is_emulator"]:
        print(f"NPU memory: {cma[0] // 1024} MiB free of {cma[1] // 1024} MiB (CMA)")
    status = 0
    if isinstance(opened, rknnx.Model) and args.model is None:
        opened.close()                   # a sample, opened for the versions only
    elif isinstance(opened, rknnx.Model):
        _print_model(opened, model)
    elif opened is not None:
        print(f"model:     cannot be opened: {opened}")
        status = 1
    if args.model is not None:
        for line in file_lines(model, info.get("sdk_version") or info.get("version"), chip):
            print(line)
    for line in _advice(info, nodes, fallback):
        print(f"-> {line}")
    if model is None:
        print("(pass --model FILE.rknn to check that the model opens here, and to read the "
              "runtime and driver versions)")
    return status


def _print_runtime(info: dict, fallback, chip, board_chip, nodes: list,
                   models_chip: bool = False) -> None:
    """The runtime loaded, why, its entry points and versions; the chip (`models_chip`: the
    emulator plays the model's, no chip being chosen) and the NPU's device nodes."""
    if fallback:
        print("no NPU runtime on this machine, which cannot be a board -> the library uses "
              "the bundled CPU emulator (set RKNNX_RUNTIME to choose a library)")
    kind = "CPU emulator" if info["is_emulator"] else "librknnrt"
    print(f"runtime:   {info['path']} ({kind})")
    print(f"chosen by: {chosen_by(info, fallback)}")
    print(f"functions: {len(info['functions'])} of {len(info['functions']) + len(info['missing'])} "
          "RKNN API entry points")
    if info["missing"]:
        print(f"missing:   {', '.join(info['missing'])} (an older librknnrt: calling them raises "
              "NotSupportedError; update the RKNPU2 runtime for them)")
    for key, label in (("sdk_version", "sdk:      "), ("driver_version", "driver:   ")):
        if info.get(key):
            print(f"{label} {info[key]}")
    where = "emulator personality" if info["is_emulator"] else "device tree"
    if models_chip:
        where += (": the model's chip, as no chip is chosen (RKNN_EMU_PLATFORM chooses "
                  "one)")
    print(f"chip:      {chip or 'unknown'} ({where})")
    if info["is_emulator"] and board_chip:
        print(f"board:     {board_chip} (device tree)")
    print(f"NPU nodes: {', '.join(nodes) if nodes else 'none'}")


def _print_chip(chip) -> None:
    """What the chip lacks of the API (rknnx.platforms' table)."""
    from rknnx import platforms

    if not chip:
        return
    try:
        lacks = sorted(platforms.unsupported_functions(chip))
    except ValueError:
        lacks = []
    if lacks:
        print(f"{chip} lacks: {', '.join(lacks)}")
        if "rknn_inputs_set" in lacks:
            print("  (zero-copy flow only: rknnx.Model.run goes through NPU memory)")
    else:
        print(f"{chip} supports every function of the API")


def _print_model(opened, model) -> None:
    """The model given with --model, opened here: its target, shapes, NPU memory and
    notes; then closed."""
    if isinstance(model, bytes):
        target = _board.model_target(model)
    else:
        with open(model, "rb") as f:
            target = _board.model_target(f.read())
    ins = ", ".join(f"{t.name}{list(t.shape)}:{t.dtype}" for t in opened.inputs)
    outs = ", ".join(f"{t.name}{list(t.shape)}:{t.dtype}" for t in opened.outputs)
    kind = "dynamic shapes" if opened.dynamic else "static shapes"
    built = f"built for {target}" if target else "the file names no chip"
    print(f"model:     opens here ({kind}; {built}; inputs {ins})")
    print(f"           outputs {outs}")
    ms = opened.mem_size
    if ms is not None and ms.total_dma_allocated_size:
        print(f"           NPU memory it takes: {_size(ms.total_dma_allocated_size)}")
    elif ms is not None:
        # the emulator's stand-in for a vendor file knows the file's plan only: the
        # runtime's own buffers come on top on a board (docs/standin.md)
        print(f"           NPU memory it plans: weights {_size(ms.total_weight_size)} + "
              f"internal {_size(ms.total_internal_size)} (the runtime's own buffers "
              "come on top)")
    for note in opened.notes:
        print(f"           {note}")
    opened.close()


def _advice(info: dict, nodes: list, fallback) -> list:
    """What to do about what is missing: the NPU's device nodes, a runtime to install, an
    emulator chosen on a machine with an NPU."""
    advice = []
    problem = None if info["is_emulator"] and not os.environ.get("RKNN_EMU_NO_DEVICE") \
        else _board.npu_device_problem()
    if problem:
        advice.append(problem)
    if info["is_emulator"] and not nodes and fallback:
        from rknnx.cli._common import WHERE_TO_GET_LIBRKNNRT

        advice.append(WHERE_TO_GET_LIBRKNNRT[0].lower() + WHERE_TO_GET_LIBRKNNRT[1:])
    if info["is_emulator"] and nodes:
        advice.append("this machine has an NPU but rknnx uses the emulator: install "
                      "librknnrt.so or unset RKNNX_RUNTIME")
    return advice


def file_lines(path, runtime_version, chip=None) -> list:
    """What a vendor ``.rknn`` says of itself and of the runtimes that load it (the facts
    of :data:`rknnx.modelfile.RUNTIME_FACTS`, as ``rknnx info`` and the load errors use
    them), with the verdict for the runtime of `runtime_version` on `chip` (the chip the
    runtime serves; None: any); no lines for a file that is not a vendor file or that cannot
    be read."""
    from rknnx import modelfile

    try:
        if not modelfile.is_vendor_file(path):
            return []
        mf = modelfile.read(path)
    except modelfile.ModelFileError as exc:
        return [f"file:      not readable: {exc}"]
    except OSError:
        # a file the system cannot read: the model line above already says why (the error
        # of opening it), and the rest of the report still applies
        return []
    ver = mf.container.version
    shapes = "dynamic shapes" if mf.dynamic else "static shapes"
    out = [f"file:      container {ver if ver < 10 else hex(ver)}, rknn-toolkit2 "
           f"{mf.toolkit_version or '(version not in the file)'}, for "
           f"{mf.chip or 'an unknown chip'}; {shapes}"]
    verdicts = mf.runtime_support()
    for verdict, label in (("loads", "loads on:  "), ("refuses", "refused by:"),
                           ("crashes", "crashes:   "), ("unusable", "unusable:  "),
                           ("unknown", "no record: ")):
        names = [s.runtime if verdict == "loads" else f"{s.runtime} ({s.reason})"
                 for s in verdicts if s.verdict == verdict]
        if names:
            out.append(f"           {label} {'; '.join(names)}")
    # a runtime of the facts is its library and version: librknnrt and the mini runtime
    # librknnmrt share version numbers (2.3.2 of both ship with rknn-toolkit2 2.3.2), and
    # which of the two runs here follows from the chip (the mini runtime's chips, RV1106 and
    # its kin, run no other), as _board does for load errors
    mine = str(runtime_version or "").split(" ")[0]
    chips = {f.runtime: f.chips for f in modelfile.RUNTIME_FACTS}
    here = [s for s in verdicts if mine and s.runtime.split(" ")[-1] == mine
            and (chip is None or chip.upper() in chips.get(s.runtime, ()))]
    if here:
        out.append(f"           this runtime ({here[0].runtime}): {here[0].verdict} "
                   f"({here[0].reason})")
    elif mine:
        out.append(f"           this runtime ({mine}{' on ' + chip if chip else ''}): no record "
                   "of it in the facts (recorded: "
                   + ", ".join(f.runtime for f in modelfile.RUNTIME_FACTS) + ")")
    if mf.custom_ops:
        out.append(f"           custom operators: {', '.join(o.type for o in mf.custom_ops)} "
                   "(register them before running it)")
    return out


def chosen_by(info: dict, fallback: bool) -> str:
    """Who chose the runtime, in words (from ``runtime_info()["source"]``)."""
    source = info.get("source")
    if fallback:
        return ("the loader: no librknnrt on this host, which cannot be a Rockchip board, so "
                "the bundled CPU emulator (RKNNX_RUNTIME=PATH chooses a library)")
    if source == "RKNNX_RUNTIME":
        return f"the environment: RKNNX_RUNTIME={os.environ.get('RKNNX_RUNTIME', '')}"
    if source == "system loader":
        return ("the system loader: librknnrt.so on its search path (ldconfig, "
                "LD_LIBRARY_PATH); RKNNX_RUNTIME=PATH chooses another")
    if source == "vendor path":
        return (f"rknnx's search of the places boards install it ({info['path']}); "
                "RKNNX_RUNTIME=PATH chooses another")
    if source == "load_runtime()":
        return "rknnx.load_runtime(PATH) in this program"
    return str(source)


def _open(model):
    """The model opened with rknnx.Model, or the error that says why it cannot be."""
    import rknnx

    try:
        return rknnx.Model(model)
    except (rknnx.RKNNError, OSError, ValueError) as exc:
        return exc


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


def _cma():
    """(free, total) KiB of the contiguous memory the NPU allocates from, or None."""
    try:
        with open("/proc/meminfo") as f:
            rows = dict(line.split(":", 1) for line in f if ":" in line)
        return int(rows["CmaFree"].split()[0]), int(rows["CmaTotal"].split()[0])
    except (OSError, KeyError, ValueError):
        return None


def add_parser(sub) -> None:
    p = sub.add_parser("doctor", help="show the runtime, the chip and what it supports",
                       description=help_text(__doc__))
    p.add_argument("--strict", action="store_true",
                   help="fail instead of falling back to the emulator")
    p.add_argument("--model", metavar="FILE",
                   help="a model to open, to read the runtime and driver versions")
    p.set_defaults(func=run)
