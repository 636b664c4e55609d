"""The memory plan and the code-size estimate as report.json states them (and report(), the whole of report.json).

  "memory": {"arena_bytes", "liveness_lower_bound_bytes", "steps",
             "buffers": [{"name", "offset", "bytes", "first", "last", "kind"}, ...]}
      one entry per planned arena buffer, in the planner's order (by offset); `first`..`last` is its
      live range in steps (= layers), inclusive; kind "tensor" (an activation) or "scratch" (a
      kernel's scratch, named "<node>#scratch"), "ring" (the last rows of a streamed layer's output,
      "<tensor>#ring") or "input" (a graph input the plan keeps in the arena).
  "code_estimate": {"about", "toolchain", "optimize", "kernels": {kernel: bytes}, "support": bytes,
                    "bytes"}
      flash code of each portable kernel the bundle calls, from mcu_runtime/code_sizes.json (made by
      scripts/code_sizes.py per core and --optimize mode; emitter/codesize.py reads it for the flash
      budget too), and `bytes`, the whole estimate (+ the schedule) the summary and the flash budget
      state; absent for a board it does not know. An estimate, not a measurement of this bundle:
      `--verify` adds the linked firmware's "code_bytes" under "measured".
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emitter import __version__, memplan
from emitter.planner import Buffer, Plan

if TYPE_CHECKING:
    from emitter.compiler import Compiled


def kind(b: Buffer, inputs: tuple[str, ...]) -> str:
    """scratch, ring (the rows a streamed layer keeps), input (a graph input in the arena) or tensor."""
    return "input" if b.kind == "tensor" and b.name in inputs else b.kind


def memory(plan: Plan, steps: int, inputs: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "arena_bytes": plan.arena_size, "liveness_lower_bound_bytes": plan.lower_bound, "steps": steps,
        "buffers": [{"name": b.name, "offset": b.offset, "bytes": b.size, "first": b.first, "last": b.last,
                     "kind": kind(b, inputs)} for b in plan.buffers],
    }


def code_estimate(board: str, kernels: list[str], optimize: str = "speed", sources: tuple[str, ...] = (),
                  calls: int = 0) -> dict[str, Any]:
    """{"code_estimate": ...}: the code bytes of each portable kernel the bundle calls (its shipped
    mcu_runtime/ files) and of the shared support code on the board's core, from the one code-size
    table (emitter/codesize.py, mcu_runtime/code_sizes.json), and the estimate of the bundle's
    code (its mcu_runtime/ `sources` and `calls` kernel calls); {} for a board it does not know."""
    from emitter.boards import load_board
    from emitter.codesize import code_bytes, table
    from emitter.errors import McugenError

    try:
        core = load_board(board).core
    except McugenError:
        return {}
    cores = table()["cores"]
    if core not in cores:
        return {}
    sizes = cores[core]["size"] if optimize == "size" else cores[core]
    files = sizes["files"]
    per_kernel = {}
    for k in kernels:
        own = [f for f in files
               if f == f"kernels/{k}.c" or (f.startswith(f"kernels/{k}_") and not f.endswith("_ref.c"))]
        if own:
            per_kernel[k] = sum(files[f] for f in own)
    support = sum(v for f, v in files.items() if f.startswith("support/"))
    about = ("text + data of each shipped mcu_runtime/ file compiled alone with the core's flags"
             if optimize == "speed" else "each shipped mcu_runtime/ file's share of a --gc-sections link at -Os "
             "with MCU_OPTIMIZE_SIZE")
    return {"code_estimate": {"about": about + " (mcu_runtime/code_sizes.json, scripts/code_sizes.py)",
                              "toolchain": table()["compiler"], "support": support, "kernels": per_kernel}
            | {"optimize": optimize, "bytes": code_bytes(sources, calls, core, optimize)[0]}}


def report(c: Compiled, ctx: dict[str, Any]) -> dict[str, Any]:
    """report.json of a bundle: the compiled model and the render context `ctx`."""
    return {
        "mcugen_version": __version__, "model": c.model.path.name, "model_sha256": c.model.sha256,
        "name": c.name, "backend": c.backend, "portable_fallbacks": list(c.fallbacks),
        "numerics": c.graph.numerics, "optimize": c.optimize,
        "cmsis_nn_version": None if c.cmsis_version is None else {
            "release": c.cmsis_version.release, "revision": c.cmsis_version.revision_text,
            "tested": c.cmsis_version.tested},
        "arena_bytes": ctx["arena_size"], "liveness_lower_bound_bytes": ctx["lower_bound"],
        "arena_gap_bytes": ctx["arena_size"] - ctx["lower_bound"],
        "weight_bytes": ctx["weight_bytes"], "macs": ctx["macs"],
        "io_bytes": {"inputs": [i["size"] for i in ctx["inputs"]], "outputs": [o["size"] for o in ctx["outputs"]]},
        "layers": [{"index": lay.index, "name": lay.name, "op": lay.op, "onnx": lay.source,
                    "kernel": lay.kernel, "output_shape": list(lay.out_shape), "macs": lay.macs,
                    "arena_offset": lay.out_offset, "output_bytes": lay.out_bytes,
                    "weight_bytes": lay.weight_bytes} for lay in ctx["layers"]],
        "memory_plan": memplan.report(c.graph, c.plan, c.memory),
        "memory": memory(c.plan, len(c.graph.nodes), c.graph.inputs), "board": ctx["board"],
        "cpu_flags": ctx["cpu_flags"],
    } | code_estimate(ctx["board"], ctx["kernels"], c.optimize, tuple(ctx["runtime_sources"]), len(ctx["layers"])) | (
        {"guard_bytes": ctx["guard"]} if ctx["guard"] else {}) | (
        {"portable_layers": [{"index": k, "kernel": kernel, "why": why} for k, kernel, why in c.portable_layers],
         "kernel_choices": [{"index": x.index, "kernel": x.kernel, "mcugen": x.ours, "cmsis_nn": x.cmsis,
                             "source": x.source, "chosen": "mcugen" if x.ours_wins else "cmsis-nn"}
                            for x in c.kernel_choices]}
        if c.backend == "cmsis-nn" else {})
