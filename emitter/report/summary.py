"""The per-layer table and totals printed after generation."""
from __future__ import annotations

from typing import Any

from emitter.boards import Board
from emitter.compiler import Compiled
from emitter.layout import physical_shape
from emitter.report.names import short_name

OVERHEAD_WARN = 0.25  # a chosen plan estimated this much slower than whole layers says so even under --quiet


def fmt_bytes(n: int) -> str:
    return f"{n:,}"


def float_layers(c: Compiled) -> int:
    from emitter.ops.float_island import FLOAT_KERNELS

    return sum(1 for p in c.prepared if p.kernel in FLOAT_KERNELS)


def memory_lines(c: Compiled) -> list[str]:
    """The memory plan: its kind, what it beat and what it costs."""
    from emitter.plan.search import FREE_OVERHEAD, activation_ram

    g, plan, choice = c.graph, c.plan, c.memory
    layer = plan if choice is None else choice.candidates[0].plan
    bound = layer.lower_bound + sum(g.t(n).nbytes for n in g.inputs + g.outputs)
    if choice is None or plan.schedule.kind == "layer":
        why = "" if choice is None else (f"; no smaller plan within {FREE_OVERHEAD:.0%} estimated instructions "
                                         "(--memory auto's free savings)" if choice.free else f"; {choice.why}")
        return [f"plan:  whole layers (liveness lower bound {fmt_bytes(plan.lower_bound)}, gap {fmt_bytes(plan.gap)})"
                + why]
    rows = sum(1 for m in plan.modes.values() if m in ("down", "up"))
    if choice.free:  # the default's free savings: which plan, against whole layers, and why
        head = (f"plan:  {plan.schedule.kind}, activation RAM {fmt_bytes(activation_ram(g, plan))} bytes vs "
                f"{fmt_bytes(activation_ram(g, layer))} whole-layer, {choice.ratio(choice.chosen):+.1%} estimated "
                f"instructions ({choice.why})")
    else:
        head = (f"plan:  {plan.schedule.kind}, {choice.why}: activation RAM {fmt_bytes(activation_ram(g, plan))} "
                f"bytes vs {fmt_bytes(bound)} for whole layers at their liveness lower bound; estimated overhead "
                f"{choice.ratio(choice.chosen):.1%} of the instructions")
    streams = [s for s in plan.schedule.segments if plan.modes.get(s.first) == "rows"]
    text = [head,
            f"       {rows} layers write over their input row by row, {len(streams)} streamed chains"
            + "".join(f"; layers {s.first}-{s.last}" + (" (into an accumulating head)" if s.stages[-1].sink else "")
                      for s in streams)]
    lean = sum(len(s.lean) for s in plan.schedule.segments)
    if lean:
        text.append(f"       {lean} layers call their lean generic path (the least scratch, more instructions)")
    text += [f"       input {k} lives in the arena: write it at {macro} to save its copy"
             for k, macro in hosted_inputs(c)]
    return text


def hosted_inputs(c: Compiled) -> list[tuple[int, str]]:
    """(index, its NAME_INPUTk_BUFFER macro) of each graph input the plan keeps in the arena."""
    import re

    prefix = re.sub(r"[^0-9A-Za-z_]", "_", c.name).upper()  # render.cfmt.upper_ident, as model.h names it
    return [(k, f"{prefix}_INPUT{k}_BUFFER") for k, n in enumerate(c.graph.inputs) if c.plan.offset_of(n) is not None]


def overhead_line(c: Compiled) -> str | None:
    """One line when the chosen plan's estimated instruction overhead is over OVERHEAD_WARN: printed
    even under --quiet, since the plan was taken silently otherwise."""
    choice = c.memory
    if choice is None or c.plan.schedule.kind == "layer":
        return None
    ratio = choice.ratio(choice.chosen)
    if ratio <= OVERHEAD_WARN:
        return None
    return (f"cost:  an estimated +{ratio:.1%} instructions over whole layers: the {c.plan.schedule.kind} plan, "
            f"{choice.why}, saves RAM; a larger --ram-budget or --memory layer runs faster")


def code_line(weight_bytes: int, code: dict[str, Any] | None, c: Compiled) -> str:
    """The flash line: the weights and the bundle's one code figure (report.codesize.code_figure),
    estimate or measured, saying which, and their sum -- the figures of report.json and report.html."""
    text = f"flash: weights and parameters {fmt_bytes(weight_bytes)} bytes"
    if code is None:
        return text
    text += f" + code {fmt_bytes(code['bytes'])} bytes = {fmt_bytes(weight_bytes + code['bytes'])} bytes; code "
    if code["source"] == "measured":
        return text + (f"measured by --verify in the linked firmware on {code['board']}"
                       + (f" (the estimate was {fmt_bytes(code['estimate_bytes'])})"
                          if code.get("estimate_bytes") is not None else ""))
    return text + ("estimated (mcu_runtime kernels and the schedule" + (", not CMSIS-NN's" if c.backend == "cmsis-nn"
                                                                       else "")
                   + f", --optimize {c.optimize}); `--verify` measures it")


def budget_line(board: Board, ram_src: str, flash_src: str) -> str | None:
    """Says so when the RAM/flash budget is a generic core's (no --board named a part)."""
    if not board.is_generic or (ram_src.startswith("--") and flash_src.startswith("--")):
        return None
    return (f"budget: {board.name} is a generic core, not a part: its RAM ({fmt_bytes(board.ram_bytes)} bytes) and "
            f"flash ({fmt_bytes(board.flash_bytes)} bytes) are generic figures; name your part with --board "
            "(`mcugen boards`) or set --ram-budget/--flash-budget")


def pool_lines(c: Compiled) -> list[str]:
    """One line per RAM pool (bytes used / its size, share of the estimated accesses), when the board
    lists several pools or --pool is given (emitter/plan/pools.py)."""
    placement, board = c.pools, c.options.board
    if placement is None or (not c.options.pools and (board is None or len(board.ram_pools) < 2)):
        return []
    from emitter.boards import pools_with_overrides

    listed = pools_with_overrides(board.ram_pools if board is not None else (), c.options.pools)
    used = {u.pool.name: u for u in placement.pools}
    total = placement.total_accesses or 1
    lines = []
    for pool in listed:
        u = used.get(pool.name)
        size, hits = (u.used, u.accesses) if u is not None else (0, 0)
        lines.append(f"pool {pool.name}: {fmt_bytes(size)} / {fmt_bytes(pool.size)} bytes, "
                     f"{100 * hits / total:.1f} % of the estimated activation accesses "
                     f"({fmt_bytes(hits)} bytes per inference; rank {pool.rank})")
    if not placement.multi:
        lines[0] += "; the whole plan fits it: one arena"
    return lines


def summary(c: Compiled, weight_bytes: int, board: str, backend_note: str, has_fpu: bool = True,
            code_bytes: int | None = None, code: dict[str, Any] | None = None,
            budget_note: str | None = None) -> str:
    """The table and the totals. `code`: the one code figure (codesize.code_figure); a bare
    `code_bytes` is taken as an estimate."""
    g, plan = c.graph, c.plan
    rows = [("#", "layer", "op", "kernel", "output", "MACs", "offset", "bytes")]
    macs = 0
    for k, (node, p) in enumerate(zip(g.nodes, c.prepared, strict=True)):
        out = g.t(node.outputs[0])
        kind, where = plan.location[plan.root[out.name]]
        offset = f"{where:,}" if kind == "arena" else kind
        if kind == "arena" and c.pools is not None and c.pools.multi:
            pool, at = c.pools.split(where)
            offset = f"{pool}+{at:,}"
        if not p.kernel:
            offset = f"view of {short_name(plan.root[out.name], 16)}" if kind == "arena" else offset
        rows.append((str(k), short_name(node.name), node.op, p.kernel or "(view)",
                     "x".join(map(str, physical_shape(out.layout))) if out.layout else "?",
                     fmt_bytes(p.macs), offset, fmt_bytes(out.nbytes)))
        macs += p.macs
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.rjust(w) if i in (0, 5, 6, 7) else cell.ljust(w)
                       for i, (cell, w) in enumerate(zip(r, widths, strict=True))).rstrip() for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    from emitter.plan.search import activation_ram, io_bytes

    io = io_bytes(g, plan)
    kernels = sum(1 for p in c.prepared if p.kernel)
    lines += [
        "",
        f"model {c.model.path.name}: {kernels} kernel calls, {len(c.prepared) - kernels} free views, "
        f"{fmt_bytes(macs)} MACs per inference; board {board}; {backend_note}",
        code_line(weight_bytes, code if code is not None or code_bytes is None else
                  {"bytes": code_bytes, "source": "estimate"}, c),
        f"RAM:   arena {fmt_bytes(plan.arena_size)} bytes + caller's input/output buffers {fmt_bytes(io)} bytes "
        f"= activation RAM {fmt_bytes(activation_ram(g, plan))} bytes",
        *memory_lines(c),
        *pool_lines(c),
        *([line] if (line := overhead_line(c)) else []),
        *([budget_note] if budget_note else []),
        f"float: {float_layers(c)} of {kernels} layers run in float32 (float islands)"
        + ("" if has_fpu or not float_layers(c) else
           f"; WARNING: {board} has no FPU, they use soft-float (slow, still bit-exact)"),
    ]
    lines.append(numerics_note(c))
    from emitter.ops.asym_weights import summary_line

    if (folded := summary_line(g.nodes)) is not None:
        lines.append(folded)
    if (four := int4_line(c)) is not None:
        lines.append(four)
    if c.backend == "cmsis-nn":
        lines.append(f"CMSIS-NN: {kernels - len(c.portable_layers)} of {kernels} layers call CMSIS-NN directly"
                     + ("; portable kernels:" if c.portable_layers else ""))
        lines += [f"  layer {k} {kernel}: {why}" for k, kernel, why in c.portable_layers]
        lines += choice_lines(c)
    return "\n".join(lines)


WEIGHTED_OPS = ("conv", "conv_add", "conv_transpose", "fc")  # the IR ops with a weight matrix/filter


def int4_figures(c: Compiled) -> dict[str, int] | None:
    """The 4-bit weights' figures (report.json `int4`), None when no layer stores them packed:
    `layers` of `weighted_layers` (the layers with weights) run an mcu_*_s4 kernel, whose weight
    arrays take `packed_bytes` (its uint8 const arrays) against `int8_bytes` as int8 (one byte per
    weight); `saved_bytes` is the difference. Parameters (multipliers, shifts, bias) are the int8
    kernels' and are not counted here."""
    from emitter.calls import ConstArg

    weighted = four = packed = int8 = 0
    for node, p in zip(c.graph.nodes, c.prepared, strict=True):
        if node.op not in WEIGHTED_OPS:
            continue
        weighted += 1
        if p.kernel.endswith("_s4"):
            four += 1
            packed += sum(a.data.nbytes for a in p.operands.values()
                          if isinstance(a, ConstArg) and str(a.data.dtype) == "uint8")
            int8 += c.graph.t(node.inputs[1]).size
    if not four:
        return None
    return {"layers": four, "weighted_layers": weighted, "packed_bytes": packed, "int8_bytes": int8,
            "saved_bytes": int8 - packed}


def int4_line(c: Compiled) -> str | None:
    """The 4-bit weights' note: how many of the layers with weights store them packed, their
    weight bytes against int8, and the flash that saves; None when no layer does."""
    f = int4_figures(c)
    if f is None:
        return None
    share = f["packed_bytes"] / f["int8_bytes"] if f["int8_bytes"] else 0.0
    return (f"int4 weights: {f['layers']} of {f['weighted_layers']} layers; their weights take "
            f"{fmt_bytes(f['packed_bytes'])} B packed vs {fmt_bytes(f['int8_bytes'])} B as int8 ({share:.0%}), "
            f"{fmt_bytes(f['saved_bytes'])} B of flash saved (two weights per byte, read packed: mcu_*_s4 kernels)")


def choice_lines(c: Compiled) -> list[str]:
    """The kernel choice: one line, plus one per layer with --tune (both candidates' counts)."""
    ch = c.kernel_choices
    if not ch:
        return []
    measured = sum(1 for x in ch if x.source == "measured")
    ours = sum(1 for x in ch if x.ours_wins)
    src = (f"{measured} measured in QEMU (--tune)" if measured == len(ch) else
           f"{len(ch) - measured} from the cost table" + (f", {measured} measured (--tune)" if measured else ""))
    kinds = "conv/depthwise/FC" + ("/batch MatMul" if any("batch_matmul" in x.kernel for x in ch) else "")
    lines = [f"kernel choice: {len(ch)} {kinds} layers, {src}; mcugen's kernel on {ours}, "
             "CMSIS-NN on the rest (fewer executed instructions)"]
    if c.options.tune is not None:
        lines += [f"  layer {x.index:>3} {x.kernel:<24} mcugen {x.ours:>10,}  CMSIS-NN {x.cmsis:>10,}  "
                  f"{x.source:<8} -> {'mcugen' if x.ours_wins else 'CMSIS-NN'}" for x in ch]
    return lines


def numerics_note(c: Compiled) -> str:
    """The rounding contract, and whether the user or the model chose it."""
    chosen = "--numerics" if c.options.numerics is not None else "chosen from the model"
    a16 = sum(1 for n in c.graph.nodes if c.graph.t(n.outputs[0]).dtype == "int16")
    s16 = (f"; {a16} layers with int16 outputs: TFLite int16x8 (int64 bias, 64-bit requantization) "
           "whatever the numerics" if a16 else "")  # emitter/ops/a16.py
    if c.graph.numerics == "onnxruntime":
        return (f"numerics: onnxruntime ({chosen}): conv/depthwise/FC/requantize as onnxruntime "
                "(float32 scale, one rounding half to even), average pools ties to even, in integer "
                "arithmetic, portable kernels (CMSIS-NN rounds as TFLite); other ops as TFLite" + s16)
    return f"numerics: tflite ({chosen}): TFLite int8 arithmetic, double rounding" + s16
