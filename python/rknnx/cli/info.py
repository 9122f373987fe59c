"""``rknnx info MODEL``: every attribute of a model's inputs and outputs (native layouts,
strides, quantization), its memory, custom string, the runtime's and driver's versions, and
whether the chip supports what the model needs.  A vendor ``.rknn`` file is read by rknnx's
own reader, with no runtime: its signature (with the mean/std the runtime applies to its
inputs), target, versions and which runtimes load it.

For a vendor file (magic ``RKNN``), the file alone is read (rknnx.modelfile): no librknnrt is
loaded, so this works on any machine.  Emulator models (magic ``RKNXEMDL``) and samples are
opened by the runtime, as before.

``--json`` prints the same facts as JSON; a float that is not finite (a mean of ``nan`` in a
file's generator, a quantization scale of ``inf``), which JSON cannot hold, is the string
Python's ``float()`` reads back: ``"nan"``, ``"inf"``, ``"-inf"``."""

from __future__ import annotations

import json
import math

from rknnx.cli._common import (UserError, add_model_arguments, check_model_path, fmt_shape,
                               help_text, human_bytes, load_runtime, open_model)


def describe(model) -> dict:
    """Everything ``rknnx info`` shows, as a JSON-serialisable dict."""
    from rknnx import lowlevel

    def tensor(t):
        d = {"index": t.index, "name": t.name, "shape": list(t.shape), "dtype": str(t.dtype),
             "layout": t.layout,
             "quant": {"kind": t.quant.kind, "scale": t.quant.scale,
                       "zero_point": t.quant.zero_point, "fl": t.quant.fl},
             "size_with_stride": int(t.attr.size_with_stride), "w_stride": int(t.attr.w_stride),
             "h_stride": int(t.attr.h_stride), "strides": list(t.attr.strides)}
        if t.native is not None:
            d["native"] = {"layout": t.native.layout, "shape": list(t.native.shape),
                           "dtype": str(t.native.dtype), "strides": list(t.native.strides),
                           "nbytes": t.native.nbytes}
        return d

    needs = ["rknn_run", "rknn_set_io_mem", "rknn_inputs_set", "rknn_outputs_get",
             "rknn_dup_context", "rknn_set_core_mask"]
    if model.dynamic:
        needs.append("rknn_set_input_shapes")
    ms = model.mem_size
    info = lowlevel.runtime_info()
    return {
        "chip": model.chip,
        "runtime": info["path"],
        "emulator": info["is_emulator"],
        "sdk_version": model.sdk_version,
        "driver_version": model.driver_version,
        "custom_string": model.custom_string,
        "mem_size": {"weight": ms.total_weight_size, "internal": ms.total_internal_size,
                     "dma_allocated": ms.total_dma_allocated_size,
                     "sram_total": ms.total_sram_size, "sram_free": ms.total_sram_size and
                     ms.free_sram_size},
        "dynamic": model.dynamic,
        "shape_sets": [[list(s) for s in shapes] for shapes in model.shape_sets],
        "inputs": [tensor(t) for t in model.inputs],
        "outputs": [tensor(t) for t in model.outputs],
        "chip_support": {fn: model.supports(fn) for fn in needs},
    }


def _json(d: dict) -> str:
    """`d` as JSON.  json.dumps would write NaN and Infinity, which are not JSON (RFC 8259) and
    which strict parsers refuse; a vendor file's generator may list them (it is Python's
    repr, where float('nan') reads nan), so they go out as strings float() reads back."""

    def plain(v):
        if isinstance(v, float) and not math.isfinite(v):
            return repr(v)                    # 'nan', 'inf', '-inf'
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    return json.dumps(plain(d), indent=2, allow_nan=False)


def _print(d: dict) -> None:
    print(f"chip:       {d['chip'] or 'unknown'}{' (emulator)' if d['emulator'] else ''}")
    print(f"runtime:    {d['runtime']}")
    print(f"sdk:        {d['sdk_version']}")
    print(f"driver:     {d['driver_version']}")
    if d["custom_string"]:
        print(f"custom:     {d['custom_string']}")
    m = d["mem_size"]
    print(f"memory:     weights {human_bytes(m['weight'])}, internal {human_bytes(m['internal'])}, "
          f"DMA allocated {human_bytes(m['dma_allocated'])}")
    if d["dynamic"]:
        for k, shapes in enumerate(d["shape_sets"]):
            print(f"shape set {k}: {', '.join(fmt_shape(s) for s in shapes)}")
    for kind in ("inputs", "outputs"):
        print(f"{kind}:")
        for t in d[kind]:
            q = t["quant"]
            quant = {"affine": f"affine scale={q['scale']:.6g} zp={q['zero_point']}",
                     "dfp": f"dfp fl={q['fl']}"}.get(q["kind"], "float")
            print(f"  [{t['index']}] {t['name']:<16} {fmt_shape(t['shape']):<14} {t['dtype']:<8} "
                  f"{t['layout']:<9} {quant}")
            n = t.get("native")
            if n:
                print(f"      native {fmt_shape(n['shape']):<14} {n['dtype']:<8} {n['layout']:<9} "
                      f"strides={tuple(n['strides'])} bytes={n['nbytes']}")
    missing = [fn for fn, ok in d["chip_support"].items() if not ok]
    print(f"support:    {'everything the model needs' if not missing else 'lacks ' + ', '.join(missing)}"
          + (" (zero-copy flow only: Model.run goes through NPU memory)"
             if "rknn_inputs_set" in missing else ""))


def describe_file(mf) -> dict:
    """What ``rknnx info`` shows for a vendor file read by rknnx.modelfile, as a
    JSON-serialisable dict (no runtime involved)."""

    def tensor(t):
        return {"index": t.index, "name": t.name, "shape": list(t.dims),
                "logical_shape": list(t.shape), "dtype": t.dtype, "layout": t.layout,
                "quant": {"kind": t.qnt_type, "scale": t.scale, "zero_point": t.zero_point,
                          "in_file": t.quantized, "method": t.qnt_method,
                          "per_channel": len(t.scales) > 1},
                "size": t.size,
                "native": (None if t.native_dims is None else
                           {"layout": t.native_layout, "shape": list(t.native_dims),
                            "dtype": t.dtype, "nbytes": t.native_size}),
                "mean": None if t.mean is None else list(t.mean),
                "std": None if t.std is None else list(t.std),
                "decoded": sorted(t.known)}

    c = mf.container
    return {
        "file": mf.path,
        "vendor_file": True,
        "container": {"version": c.version, "header_size": c.header_size,
                      "payload_size": c.payload_size, "json_size": c.json_size,
                      "file_size": c.file_size},
        "format_version": mf.format_version,
        "chip": mf.chip,
        "npu_family": mf.npu_family,
        "target_platform": mf.target_platform,
        "toolkit_version": mf.toolkit_version,
        "compiler_version": mf.compiler_version,
        "compiler_version_int": mf.compiler_version_int,
        "framework": mf.framework,
        "dynamic": mf.dynamic,
        "shape_sets": [[list(s) for s in shapes] for shapes in mf.shape_sets],
        "custom_ops": [{"name": o.name, "type": o.type} for o in mf.custom_ops],
        "mem_size": {"weight": mf.weight_size, "internal": mf.internal_size},
        "removed_weights": mf.removed_weights,
        "inputs": [tensor(t) for t in mf.file_inputs],
        "outputs": [tensor(t) for t in mf.file_outputs],
        "runtimes": [{"runtime": s.runtime, "verdict": s.verdict, "reason": s.reason}
                     for s in mf.runtime_support()],
    }


def _unknown(v, fmt=str):
    return "unknown" if v is None else fmt(v)


def _values(v, most=4) -> str:
    """A list of numbers as a user reads it: ``255, 255, 255``; past `most` entries, the
    first ones and how many there are (a table line stays narrow)."""
    shown = ", ".join(f"{x:g}" for x in v[:most])
    return shown + (f", ... ({len(v)} values)" if len(v) > most else "")


def _norm_lines(t: dict) -> list:
    """The continuation lines of an input the runtime normalizes: none when the file says
    nothing of it or the normalization is the identity (mean all 0, std all 1); std goes on
    a line of its own when one line would be wider than the table's rows."""
    mean, std = t.get("mean"), t.get("std")
    if mean is None or std is None or (all(x == 0 for x in mean) and all(x == 1 for x in std)):
        return []
    head, m, s = "      norm   (x - mean) / std, ", f"mean {_values(mean)}", f"std {_values(std)}"
    if len(head) + len(m) + len(s) + 2 <= 96:
        return [f"{head}{m}; {s}"]
    return [f"{head}{m};", " " * len(head) + s]


def _print_file(d: dict) -> None:
    c = d["container"]
    ver = hex(c["version"]) if c["version"] >= 0x1000 else str(c["version"])
    fam = f" (NPU {d['npu_family']})" if d["npu_family"] else ""
    plat = d["target_platform"] or "-"
    print(f"file:       {d['file']}")
    print(f"chip:       {d['chip'] or 'unknown'}{fam}, target platform {plat}")
    print(f"toolkit:    {d['toolkit_version'] or '-'}")
    print(f"compiler:   {d['compiler_version'] or '-'}")
    print(f"container:  version {ver}, payload {human_bytes(c['payload_size'])}, "
          f"format {d['format_version'] or '-'}, framework {d['framework'] or '-'}")
    m = d["mem_size"]
    if m["weight"] is not None:
        print(f"memory:     weights {human_bytes(m['weight'])}, internal "
              f"{human_bytes(m['internal'])} (planned by the compiler)")
    if d.get("removed_weights"):
        print(f"weights:    {d['removed_weights']} constant tensor(s) left out of the file "
              "(built with remove_weight=True); the weights above are those it holds")
    print(f"shapes:     {'dynamic' if d['dynamic'] else 'static'}")
    for k, shapes in enumerate(d["shape_sets"]):
        print(f"shape set {k}: {', '.join(fmt_shape(s) for s in shapes)}")
    if d["custom_ops"]:
        print("custom ops: " + ", ".join(f"{o['name'] or '?'} ({o['type']})"
                                         for o in d["custom_ops"]))
    for kind in ("inputs", "outputs"):
        print(f"{kind}:")
        for t in d[kind]:
            q = t["quant"]
            if q["kind"] is None:
                quant = "quantization unknown"
            elif q["kind"] == "affine" and q["in_file"]:
                quant = (f"affine scale={q['scale']:.6g} zp={q['zero_point']}"
                         + (" (per channel)" if q["per_channel"] else ""))
            elif q["kind"] == "affine":
                quant = "float (affine scale=1 zp=0)"
            else:
                quant = q["kind"]
            print(f"  [{t['index']}] {t['name']:<16} {fmt_shape(t['shape']):<14} "
                  f"{_unknown(t['dtype']):<8} {_unknown(t['layout']):<9} {quant} "
                  f"bytes={t['size']}")
            n = t["native"]
            if n:
                print(f"      native {fmt_shape(n['shape']):<14} {_unknown(n['dtype']):<8} "
                      f"{n['layout']:<9} bytes={n['nbytes']}")
            else:
                print("      native unknown (not decoded from this container)")
            for line in _norm_lines(t):
                print(line)
    print("runtimes:")
    for r in d["runtimes"]:
        print(f"  {r['runtime']:<18} {r['verdict']:<10} {r['reason']}")


def runtime_answers(path: str) -> dict:
    """The loaded runtime's *_ATTR answers for a file, as :func:`rknnx.modelfile.differences`
    takes them (loads the runtime)."""
    from rknnx import lowlevel

    load_runtime()
    q = lowlevel.QueryCmd
    fields = ("name", "dims", "fmt", "type", "qnt_type", "zp", "scale", "size")
    with lowlevel.Context(path) as ctx:
        out = {("IN_OUT_NUM", 0): {"n_input": ctx.n_input, "n_output": ctx.n_output}}
        for role, n, attr, native in (("INPUT", ctx.n_input, q.INPUT_ATTR, q.NATIVE_INPUT_ATTR),
                                      ("OUTPUT", ctx.n_output, q.OUTPUT_ATTR,
                                       q.NATIVE_OUTPUT_ATTR)):
            for i in range(n):
                for name, cmd in ((f"{role}_ATTR", attr), (f"NATIVE_{role}_ATTR", native)):
                    a = ctx.query(cmd, i)
                    out[(name, i)] = {f: (tuple(getattr(a, f)) if f == "dims" else
                                          int(getattr(a, f)) if f not in ("name", "scale")
                                          else getattr(a, f)) for f in fields}
    return out


def _compare(d: dict, mf, path: str) -> None:
    """--runtime: the loaded runtime's answers against the file's."""
    from rknnx import errors, modelfile, runtime

    try:
        diffs = modelfile.differences(mf, runtime_answers(path))
        d["runtime_check"] = {"runtime": runtime.runtime_info().get("path"),
                              "loaded": True, "differences": list(diffs)}
    except errors.RKNNError as exc:
        d["runtime_check"] = {"runtime": None, "loaded": False, "error": str(exc)}


def _print_compare(d: dict) -> None:
    r = d.get("runtime_check")
    if r is None:
        return
    if not r["loaded"]:
        print(f"runtime:    could not open the file: {r['error']}")
    elif not r["differences"]:
        print(f"runtime:    {r['runtime']} answers as the file says")
    else:
        print(f"runtime:    {r['runtime']} differs from the file:")
        for line in r["differences"]:
            print(f"  {line}")


def _vendor_file(args):
    """The model file if it is a vendor one (RKNN / CYPTRKNN), else None."""
    if args.sample or not args.model:
        return None
    from rknnx import modelfile

    check_model_path(args.model)
    try:
        return args.model if modelfile.is_vendor_file(args.model) else None
    except OSError as exc:
        raise UserError(f"cannot read {args.model!r}: {exc}") from exc


def run(args) -> int:
    path = _vendor_file(args)
    if path is not None:
        from rknnx import modelfile

        try:
            d = describe_file(modelfile.read(path))
        except modelfile.ModelFileError as exc:
            if exc.check == "encrypted":
                raise UserError(f"{path!r} is an encrypted RKNN model (magic CYPTRKNN): only "
                                f"the vendor runtime can read it") from exc
            raise UserError(f"{path!r} is not a readable RKNN model: {exc.message} "
                            f"[check: {exc.check}]") from exc
        if args.runtime:
            _compare(d, modelfile.read(path), path)
        if args.json:
            print(_json(d))
        else:
            _print_file(d)
            _print_compare(d)
        return 0
    load_runtime(quiet=args.json)
    with open_model(args) as model:
        d = describe(model)
    if args.json:
        print(_json(d))
    else:
        _print(d)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("info", help="describe a model: tensors, layouts, memory, versions",
                       description=help_text(__doc__))
    add_model_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--runtime", action="store_true",
                   help="for a vendor .rknn file: also open it with the runtime (on a board, "
                        "its librknnrt) and show where its answers differ from the file")
    p.set_defaults(func=run)
