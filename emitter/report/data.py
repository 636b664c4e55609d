"""The memory plan and the code-size estimate as report.json states them (and report(), the whole of report.json).

  "memory": {"kind", "arena_bytes", "liveness_lower_bound_bytes", "floor_bytes", "steps",
             "in_use_bytes": [per step], "floor_step_bytes": [per step],
             "buffers": [{"name", "offset", "bytes", "first", "last", "kind"[, "rows", "row_bytes",
                          "whole_bytes", "layer"]}, ...],
             "overlaps": [{"input", "output", "first", "last", "mode", "allowed_bytes", "bytes"}, ...]}
      one entry per planned arena buffer, in the planner's order (by offset); `first`..`last` is its
      live range in steps (= layers), inclusive; kind "tensor" (an activation) or "scratch" (a
      kernel's scratch, named "<node>#scratch"), "ring" (the last rows of a streamed layer's output,
      "<tensor>#ring": `rows` rows of `row_bytes`, of a tensor of `whole_bytes` that never exists
      whole; or a streamed sink's int32 sums, "<tensor>#acc") or "input" (a graph input the plan
      keeps in the arena). `overlaps`: every output the plan lets a layer write over a buffer it
      reads for the last time (overlapped and streamed plans: row band by row band, mode "down" or
      "up", or a streamed chain's output, "rows"; element-wise layers exactly, "in place"): at most
      `allowed_bytes` shared, `bytes` shared as placed.
      Per step, `in_use_bytes` is what the plan really holds: the union of the live buffers' byte
      ranges (shared bytes once). `liveness_lower_bound_bytes` is the most bytes live at one step
      counting every buffer whole; it bounds the arena only when nothing overlaps. `floor_bytes`
      bounds it always: at each step (`floor_step_bytes`) the live bytes less the most each allowed
      overlap can share -- the least RAM a plan of this kind, with these buffers, can reach; for a
      plan without overlaps it is the liveness lower bound. The arena is never below it.
  "code_estimate": {"about", "toolchain", "optimize", "kernels": {kernel: bytes}, "support": bytes,
                    "other": bytes, "schedule": bytes, "bytes"}
      flash code of the files of each portable kernel the bundle ships, of the shared support and
      other runtime files, and of the schedule, from mcu_runtime/code_sizes.json (made by
      scripts/code_sizes.py per core and --optimize mode; emitter/report/codesize.py reads it for the flash
      budget too); `bytes` is their sum, the estimate the flash budget checks; absent for a board
      it does not know. `--verify` adds the linked firmware's "code_bytes" under "measured".
  "views": [{"index", "name", "op", "onnx", "output_shape", "output_bytes", "view_of"}, ...]
      the free views (Flatten, Reshape): no code, no copy; "layers" holds the layers that run a kernel.
  "code": {"bytes", "source", "board", "estimate_bytes", "about"}
      the bundle's one code figure, which the summary and report.html state: the estimate
      ("source": "estimate") until --verify measures the linked firmware, then that ("measured").
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emitter import __version__
from emitter.ir import Graph
from emitter.plan import search
from emitter.plan.arena import Buffer, Plan
from emitter.report.summary import int4_figures

if TYPE_CHECKING:
    from emitter.compiler import Compiled


def kind(b: Buffer, inputs: tuple[str, ...]) -> str:
    """scratch, ring (the rows a streamed layer keeps), input (a graph input in the arena) or tensor."""
    return "input" if b.kind == "tensor" and b.name in inputs else b.kind


def most_shared(size_in: int, size_out: int, down: int, up: int | None, exact: bool = False) -> int:
    """The most bytes an output of size_out may share with an input of size_in when its offset
    minus the input's may be <= down, or >= up (planner.Pairs; exact: only down). Shared bytes as a
    function of that delta rise to min(sizes) over [min(0, d0), max(0, d0)], d0 = size_in - size_out,
    and fall outside: the best allowed delta is the plateau clamped into each allowed range."""
    def shared(d: int) -> int:
        return max(0, min(size_in, d + size_out) - max(0, d))

    if exact:
        return shared(down)

    lo, hi = min(0, size_in - size_out), max(0, size_in - size_out)
    best = shared(min(down, hi))
    if up is not None:
        best = max(best, shared(max(up, lo)))
    return best


def overlaps(g: Graph, plan: Plan) -> list[dict[str, Any]]:
    """The overlaps the plan's schedule allows (planner.overlap_pairs), with what they share as placed."""
    from emitter.plan.arena import overlap_pairs

    if plan.guard:  # guard builds allow none
        return []
    bufs = list(plan.buffers)
    out = []
    for (a, b), (down, up, exact) in sorted(overlap_pairs(g, bufs, plan.root, plan.schedule).items()):
        src, dst = bufs[a], bufs[b]
        first, last = max(src.first, dst.first), min(src.last, dst.last)
        allowed = most_shared(src.size, dst.size, down, up, exact)
        if first > last or not allowed:
            continue
        seg = plan.schedule.segment_at(dst.first)
        mode = plan.modes.get(seg.first, "whole") if seg is not None else "in place"
        out.append({"input": src.name, "output": dst.name, "first": first, "last": last, "mode": mode,
                    "allowed_bytes": allowed,
                    "bytes": max(0, min(src.offset + src.size, dst.offset + dst.size) - max(src.offset, dst.offset))})
    return out


def in_use(buffers: tuple[Buffer, ...], steps: int) -> list[int]:
    """Per step, the bytes the plan holds: the union of the live buffers' byte ranges."""
    out = []
    for s in range(steps):
        total, end = 0, 0
        for lo, hi in sorted((b.offset, b.offset + b.size) for b in buffers if b.first <= s <= b.last):
            if hi > end:
                total += hi - max(lo, end)
                end = hi
        out.append(total)
    return out


def rings(g: Graph, plan: Plan) -> dict[str, dict[str, Any]]:
    """Ring buffers' shape: the rows of which layer's output they hold."""
    out: dict[str, dict[str, Any]] = {}
    for seg in plan.schedule.segments:
        for s, cap in zip(seg.stages, seg.caps, strict=False):
            out[s.output] = {"rows": cap, "row_bytes": s.out_row_bytes, "whole_bytes": g.t(s.output).nbytes,
                             "layer": s.step}
    return out


def memory(plan: Plan, steps: int, inputs: tuple[str, ...] = (), g: Graph | None = None) -> dict[str, Any]:
    shapes = rings(g, plan) if g is not None else {}
    over = overlaps(g, plan) if g is not None else []
    floor = [sum(b.size for b in plan.buffers if b.first <= s <= b.last)
             - sum(o["allowed_bytes"] for o in over if o["first"] <= s <= o["last"]) for s in range(steps)]
    return {
        "kind": plan.schedule.kind, "arena_bytes": plan.arena_size, "liveness_lower_bound_bytes": plan.lower_bound,
        "floor_bytes": max(floor, default=0), "steps": steps, "in_use_bytes": in_use(plan.buffers, steps),
        "floor_step_bytes": floor,
        "buffers": [{"name": b.name, "offset": b.offset, "bytes": b.size, "first": b.first, "last": b.last,
                     "kind": kind(b, inputs)} | shapes.get(b.of if b.kind == "ring" else "", {})
                    for b in plan.buffers],
        "overlaps": over,
    }


def pools_of(c: Compiled) -> dict[str, Any]:
    """Several RAM pools (emitter/plan/pools.py): "pools" [{"name", "rank", "base", "bytes", "capacity",
    "accesses"}] fastest first (a buffer's `offset` is base + its offset in the pool) and "accesses"
    (estimated bytes read + written per buffer)."""
    assert c.pools is not None
    return {"pools": [{"name": u.pool.name, "rank": u.pool.rank, "base": u.base, "bytes": u.used,
                       "capacity": u.pool.size, "accesses": u.accesses} for u in c.pools.pools],
            "accesses": dict(sorted(c.pools.accesses.items()))}


def layer_memory(g: Graph, plan: Plan, index: int) -> dict[str, Any]:
    """Where a layer's output lives and how the layer runs: "arena_offset" (of the bytes that
    hold it: its ring's for a streamed layer; None: the caller's buffer), "output_held" (None:
    whole; else {"kind": "ring", "rows", "bytes"}) and "runs" (whole, rows, down, up, in place)."""
    out = g.nodes[index].outputs[0]
    where, at = plan.location.get(plan.root.get(out, out), ("arena", None))
    seg = plan.schedule.segment_at(index)
    runs = plan.modes.get(seg.first, "whole") if seg is not None else "whole"
    held = None
    if where == "ring":
        ring = next(b for b in plan.buffers if b.kind == "ring" and b.of == out)
        rows = next(c for s, c in zip(seg.stages, seg.caps, strict=False) if s.output == out) if seg else 0
        held = {"kind": "ring", "rows": rows, "bytes": ring.size}
    elif index in plan.schedule.exact and any(o["output"] == plan.root.get(out, out) and o["bytes"]
                                              for o in overlaps(g, plan)):
        runs = "in place"
    return {"arena_offset": at if where in ("arena", "ring") else None, "output_held": held, "runs": runs}


def code_estimate(board: str, kernels: list[str], optimize: str = "speed", sources: tuple[str, ...] = (),
                  calls: int = 0) -> dict[str, Any]:
    """{"code_estimate": ...}: the estimate of the bundle's code (its mcu_runtime/ `sources` and
    `calls` kernel calls) on the board's core, in parts that add up to its "bytes"
    (emitter/report/codesize.py's breakdown(): each portable kernel's shipped files, the shared
    support files, other runtime files, the schedule), from the one code-size table
    (mcu_runtime/code_sizes.json); {} for a board it does not know."""
    from emitter.boards import load_board
    from emitter.errors import McugenError
    from emitter.report.codesize import breakdown, table

    try:
        core = load_board(board).core
    except McugenError:
        return {}
    if core not in table()["cores"]:
        return {}
    about = ("text + data of each shipped mcu_runtime/ file compiled alone with the core's flags"
             if optimize == "speed" else "each shipped mcu_runtime/ file's share of a --gc-sections link at -Os "
             "with MCU_OPTIMIZE_SIZE")
    return {"code_estimate": {"about": about + " (mcu_runtime/code_sizes.json, scripts/code_sizes.py), and "
                                               "the schedule per kernel call",
                              "toolchain": table()["compiler"], "optimize": optimize}
            | breakdown(sources, kernels, calls, core, optimize)}


def views(c: Compiled) -> list[dict[str, Any]]:
    """The free views (a Flatten, a Reshape): layers that run no code and copy nothing; their
    output is the bytes of the tensor they view ("view_of")."""
    out = []
    for k, (node, p) in enumerate(zip(c.graph.nodes, c.prepared, strict=True)):
        if p.kernel:
            continue
        t = c.graph.t(node.outputs[0])
        out.append({"index": k, "name": node.name, "op": node.op, "onnx": node.source,
                    "output_shape": list(t.shape), "output_bytes": t.nbytes,
                    "view_of": c.plan.root.get(t.name, t.name)})
    return out


def code_of(est: dict[str, Any], board: str) -> dict[str, Any]:
    """The estimate and "code", the bundle's one code figure (codesize.code_figure: the estimate
    until --verify measures it)."""
    from emitter.report.codesize import code_figure

    fig = code_figure(est | {"board": board})
    return est | ({"code": fig} if fig is not None else {})


def report(c: Compiled, ctx: dict[str, Any]) -> dict[str, Any]:
    """report.json of a bundle: the compiled model and the render context `ctx`."""
    mem = memory(c.plan, len(c.graph.nodes), c.graph.inputs, c.graph)
    if c.pools is not None and c.pools.multi:
        mem |= pools_of(c)
    return {
        "mcugen_version": __version__, "model": c.model.path.name, "model_sha256": c.model.sha256,
        "name": c.name, "backend": c.backend, "portable_fallbacks": list(c.fallbacks),
        "numerics": c.graph.numerics, "optimize": c.optimize,
        "cmsis_nn_version": None if c.cmsis_version is None else {
            "release": c.cmsis_version.release, "revision": c.cmsis_version.revision_text,
            "tested": c.cmsis_version.tested},
        "arena_bytes": ctx["arena_size"], "liveness_lower_bound_bytes": ctx["lower_bound"],
        "plan_floor_bytes": mem["floor_bytes"], "arena_gap_bytes": ctx["arena_size"] - mem["floor_bytes"],
        "weight_bytes": ctx["weight_bytes"], "macs": ctx["macs"],
        "io_bytes": {"inputs": [i["size"] for i in ctx["inputs"]], "outputs": [o["size"] for o in ctx["outputs"]]},
        "layers": [{"index": lay.index, "name": lay.name, "op": lay.op, "onnx": lay.source,
                    "kernel": lay.kernel, "output_shape": list(lay.out_shape), "macs": lay.macs,
                    "output_bytes": lay.out_bytes, "weight_bytes": lay.weight_bytes}
                   | layer_memory(c.graph, c.plan, lay.index) for lay in ctx["layers"]],
        "views": views(c),
        "memory_plan": search.report(c.graph, c.plan, c.memory),
        "memory": mem, "board": ctx["board"],
        "cpu_flags": ctx["cpu_flags"],
    } | code_of(code_estimate(ctx["board"], ctx["kernels"], c.optimize, tuple(ctx["runtime_sources"]),
                              len(ctx["layers"])), ctx["board"]) | (
        {"guard_bytes": ctx["guard"]} if ctx["guard"] else {}) | (
        {"int4": four} if (four := int4_figures(c)) is not None else {}) | (
        {"portable_layers": [{"index": k, "kernel": kernel, "why": why} for k, kernel, why in c.portable_layers],
         "kernel_choices": [{"index": x.index, "kernel": x.kernel, "mcugen": x.ours, "cmsis_nn": x.cmsis,
                             "source": x.source, "chosen": "mcugen" if x.ours_wins else "cmsis-nn"}
                            for x in c.kernel_choices]}
        if c.backend == "cmsis-nn" else {})
