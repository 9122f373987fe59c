"""``rknnx info MODEL``: every attribute of a model's inputs and outputs (native layouts,
strides, quantization), its memory, custom string, the runtime's and driver's versions, and
whether the chip supports what the model needs."""

from __future__ import annotations

import json

from rknnx.cli._common import (add_model_arguments, fmt_shape, help_text, human_bytes,
                               load_runtime, open_model)


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


def run(args) -> int:
    load_runtime(quiet=args.json)
    with open_model(args) as model:
        d = describe(model)
    if args.json:
        print(json.dumps(d, indent=2))
    else:
        _print(d)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("info", help="describe a model: tensors, layouts, memory, versions",
                       description=help_text(__doc__))
    add_model_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=run)
