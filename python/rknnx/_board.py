"""What a board user meets first when ``rknn_init`` fails, turned into one clear exception.

The runtime says why in its own ``E RKNN:`` lines on stderr and returns a bare status
(docs/abi-notes.md, "Board facts"): -1 for a missing NPU device, a device the user may not
open, or NPU memory that is exhausted; -6 for a model that is not a model, or one made by a
newer toolkit than the runtime; -13 (or -1 on old runtimes) for a model built for another
chip.  rknnx cannot read those lines, so it checks what it can see (the device nodes, their
permissions, the chip in the model and on the board) and raises the error of the status
with the cause and the fix in its message.  ``rknnx doctor`` runs the same checks.

Pure Python: imports without the compiled extension.
"""

from __future__ import annotations

import grp
import os
from typing import List, Optional

from rknnx import errors, platforms

__all__ = ["npu_device_problem", "explain_init_failure", "model_target", "DEVICE_NODES",
           "emulator_fallback_reason"]

#: the NPU's device nodes: the DRM render node of the rknpu driver (RK3588 ... ), the misc
#: node of older kernels and of the RV1106 family
DEVICE_NODES = ("/dev/dri/renderD129", "/dev/rknpu", "/dev/dri/renderD128")

_FIX = ("add the user to the group that owns the node (usually `video` or `render`: "
        "`sudo usermod -aG video $USER`, then log in again) or run as root; in Docker pass "
        "the node and the device tree: `--device /dev/dri/renderD129 "
        "-v /proc/device-tree/compatible:/proc/device-tree/compatible:ro`")


def npu_device_problem(root: str = "/") -> Optional[str]:
    """Why this process cannot open the NPU, or None when a device node it may open exists.

    Parameters
    ----------
    root : str
        The file system root to look under (for tests).
    """
    if os.environ.get("RKNN_EMU_NO_DEVICE", "0") not in ("", "0"):
        # the emulator plays a board whose device is missing (emulator/FORMAT.md, controls)
        return (f"no NPU device node ({', '.join(DEVICE_NODES[:2])}) can be opened (the "
                "emulator plays a board without one: RKNN_EMU_NO_DEVICE is set); on a board: "
                "is the rknpu driver loaded (`dmesg | grep -i rknpu`)? then " + _FIX)
    found: List[str] = []
    for node in DEVICE_NODES:
        path = os.path.join(root, node.lstrip("/"))
        if os.path.exists(path):
            if os.access(path, os.R_OK | os.W_OK):
                return None
            found.append(path)
    if found:
        owners = []
        for path in found:
            try:
                owners.append(f"{path} (group {grp.getgrgid(os.stat(path).st_gid).gr_name})")
            except (KeyError, OSError):
                owners.append(path)
        return (f"the NPU device exists but this user may not open it: {', '.join(owners)}; "
                + _FIX)
    return (f"no NPU device node exists ({', '.join(DEVICE_NODES[:2])}): the rknpu kernel "
            "driver is not loaded (a board image without it, or a kernel module to load with "
            "`modprobe rknpu`), or this is a container started without it; " + _FIX)


#: the machine names of the CPUs Rockchip NPUs sit beside
_ARM = ("aarch64", "arm64", "armv7l", "armv8l", "armv7", "armhf", "arm")


def emulator_fallback_reason(machine: Optional[str] = None, root: str = "/") -> Optional[str]:
    """Why this host cannot be a Rockchip board (so no librknnrt can exist here and the
    bundled emulator stands in), or None when it may be one: then a missing librknnrt is
    an error, never a silent fallback.

    Parameters
    ----------
    machine : str, optional
        ``platform.machine()`` (for tests).
    root : str
        The file system root to look under (for tests).
    """
    import platform as _platform

    machine = (machine or _platform.machine()).lower()
    if machine not in _ARM:
        return f"this is an {machine} host, not a Rockchip board"
    tree = os.path.join(root, "proc/device-tree/compatible")
    if platforms.detect_chip(tree) is not None:
        return None
    try:
        with open(tree, "rb") as f:
            compatible = [e.decode("ascii", "replace").strip()
                          for e in f.read(4096).split(b"\0") if e.strip()]
    except OSError:
        compatible = None                   # no device tree: the device nodes decide
    # the DRM render nodes are any GPU's (a Raspberry Pi's, a Jetson's): only a device
    # tree that names no SoC of another vendor lets them stand for an NPU
    nodes = DEVICE_NODES if not compatible else ("/dev/rknpu",)
    if any(os.path.exists(os.path.join(root, n.lstrip("/"))) for n in nodes):
        return None
    if compatible:
        return (f"this {machine} host's device tree names {compatible[-1]!r}, not a "
                "Rockchip chip with an NPU, and it has no NPU device")
    return f"this {machine} host has no Rockchip chip in its device tree and no NPU device"


def model_target(model: bytes) -> Optional[str]:
    """The chip a model was built for, when the bytes say it (a model written by
    ``rknnx.emulator``, or a ``.rknn`` whose metadata names ``target_platform``)."""
    if model[:8] == b"RKNXEMDL":
        try:
            from rknnx.emulator import builder

            return builder.decode(model).target.upper()
        except Exception:                    # a damaged file: the runtime says so itself
            return None
    head = model[:1 << 20]
    k = head.find(b'"target_platform"')
    if k < 0:
        return None
    tail = head[k:k + 200].decode("ascii", "replace")
    for part in tail.replace("[", '"').replace("]", '"').split('"')[2:]:
        part = part.strip(" :,")
        if part:
            try:
                return platforms.normalize_chip(part)
            except ValueError:
                return part.upper()
    return None


def _mini_refuses_container(model: bytes, chip: Optional[str]) -> bool:
    """Whether `chip` runs the RV1106 mini runtime, which reads only container 0x1004
    files (rknnx.modelfile.RUNTIME_FACTS), and `model` is another container."""
    from rknnx import modelfile

    mini = next(f for f in modelfile.RUNTIME_FACTS if f.runtime.startswith("librknnmrt"))
    if not chip or chip.upper() not in mini.chips or len(model) < 16:
        return False
    return int.from_bytes(model[8:16], "little") not in mini.reads


def _other_chip_fix(runtime: dict, built_for: str, chip: str) -> str:
    """What to do about a model built for another chip: on a board, convert it again; on
    the emulator, which plays every chip (the model's own when none is chosen: it refuses
    only where one was), choose the model's."""
    again = f"convert the model again with rknn-toolkit2 for target_platform='{chip.lower()}'"
    if runtime.get("is_emulator"):
        return (f"the emulator plays {built_for} when told so (RKNN_EMU_PLATFORM={built_for} in "
                f"the environment) or when no chip is chosen; for a board of {chip}, {again}")
    return again


def _explain_vendor_file(exc: errors.RKNNError, model: bytes, what: str, lib: str,
                         runtime: dict, chip: Optional[str]) -> Optional[errors.RKNNError]:
    """The error for a vendor .rknn the runtime refused, from what the file says
    (rknnx.modelfile: the check that failed, the chip of its NPU family, which runtime
    versions load its container), or None when the file says nothing of the refusal."""
    from rknnx import modelfile

    code = f"status {exc.code}"
    try:
        mf = modelfile.read(model)
    except errors.ModelFileError as e:
        return errors.ModelInvalidError(f"{lib} cannot load {what} ({code}): {e}",
                                        exc.code, exc.func)
    if chip and mf.chip and not platforms.same_npu(mf.chip, chip):
        return errors.TargetPlatformUnmatchError(
            f"{what} was built for {mf.chip} (NPU {mf.npu_family}, rknn-toolkit2 "
            f"{mf.toolkit_version}), but this NPU is {chip}: "
            f"{_other_chip_fix(runtime, mf.chip, chip)} ({code})", exc.code, exc.func)
    verdicts = mf.runtime_support()
    loads = [s.runtime for s in verdicts if s.verdict == "loads"]
    refused = [f"{s.runtime}: {s.reason}" for s in verdicts if s.verdict == "refuses"]
    ver = mf.container.version
    ver_s = f"0x{ver:x}" if ver > 9 else str(ver)
    saying = (f"it is a container version {ver_s} file of rknn-toolkit2 "
              f"{mf.toolkit_version or 'of unknown version'} for {mf.chip or 'an unknown chip'}"
              f"{' (dynamic shapes)' if mf.dynamic else ''}")
    known = (f"runtimes known to load it: {', '.join(loads)}" if loads else
             "no runtime on record loads it")
    if refused:
        known += f"; refused by {'; '.join(refused)}"
    if mf.custom_ops:
        known += (f"; it has custom operators ({', '.join(o.type for o in mf.custom_ops)}): "
                  "register them before running it")
    return type(exc)(f"{lib} cannot load {what} ({code}): {saying}; {known} (rknnx info shows "
                     "the file). Convert the model with the rknn-toolkit2 matching the "
                     "runtime, or use the runtime that reads it.", exc.code, exc.func)


def explain_init_failure(exc: errors.RKNNError, model: bytes, path: Optional[str],
                         runtime: dict, chip: Optional[str]) -> errors.RKNNError:
    """The error to raise for a failed ``rknn_init`` of `model`: of the same status, with
    the cause rknnx can see and its fix in the message (`exc` itself when it sees none)."""
    what = f"model {path!r}" if path else f"the model ({len(model)} bytes)"
    # the version is known once a context asked (SDK_VERSION); a first failing rknn_init
    # has printed it in its own "RKNN Runtime Information" line
    version = runtime.get("version")
    lib = f"librknnrt {version} at {runtime.get('path')}" if version else \
        f"librknnrt at {runtime.get('path')}"
    if exc.code == -1:
        problem = npu_device_problem()
        if problem is not None and not (runtime.get("is_emulator")
                                        and "RKNN_EMU_NO_DEVICE" not in os.environ):
            return errors.DeviceUnavailableError(
                f"rknn_init of {what} failed (status -1): {problem}", exc.code, exc.func)
    if (model[:4] == b"RKNN" or model[:8] == b"CYPTRKNN") and (
            exc.code != -1 or _mini_refuses_container(model, chip)):
        # -6 is the file's fault; -1 is, on the mini runtime, a container it does not read
        # (and anywhere a device or memory problem, which the runtime's lines say)
        better = _explain_vendor_file(exc, model, what, lib, runtime, chip)
        if better is not None:
            return better
    target = model_target(model)
    if target and chip and target != chip and not platforms.same_npu(target, chip):
        return errors.TargetPlatformUnmatchError(
            f"{what} was built for {target}, but this NPU is {chip}: "
            f"{_other_chip_fix(runtime, target, chip)} (status {exc.code})", exc.code, exc.func)
    if exc.code == -1:
        return errors.RKNNFailError(
            f"rknn_init of {what} failed (status -1) on {lib}; the runtime's E lines above "
            "say why. When they say 'failed to malloc npu memory', the NPU memory is "
            "exhausted: close other models and sessions, or free CMA memory (a larger "
            "cma= on the kernel command line)", exc.code, exc.func)
    if exc.code == -6:
        hint = ""
        if model[:8] != b"RKNXEMDL" and not runtime.get("is_emulator"):
            hint = (" If the file is a .rknn made by a newer rknn-toolkit2 than the runtime, "
                    "update the runtime: models of toolkit 2.x need librknnrt >= 2.0.0, of "
                    "1.5.2/1.6.0 need >= 1.5.2; else convert the model again.")
        return errors.ModelInvalidError(
            f"{lib} cannot load {what} (status -6, RKNN_ERR_MODEL_INVALID).{hint}",
            exc.code, exc.func)
    return exc
