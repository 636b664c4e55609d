"""Plans chosen by the RAM budget: layer-by-layer, in place / overlapped, or streamed segments.

Candidates, from cheapest to smallest:
  layer    today's plan: whole layers, graph inputs in the caller's buffers (liveness lower bound);
  inplace  whole layers, graph inputs in the arena, element-wise layers (add, LUT, requantize)
           writing exactly over an operand they read for the last time: no overhead;
  overlap  graph inputs in the arena, every layer that can run by row bands may write its output
           over the input it reads for the last time (top down or bottom up), element-wise
           layers exactly over a dying operand;
  stream   as overlap, plus runs of layers streamed row by row through rings, the runs chosen by
           a dynamic programme that minimises the estimated peak for a given overhead.
Every candidate is planned for real (emitter/plan/arena.py); the estimate only proposes. The
instruction overhead of a candidate is estimated from its kernel calls and ring moves
(CALL_INSTRUCTIONS, MOVE_INSTRUCTIONS_PER_BYTE; benchmarks/memory.py measures the real figures
in QEMU). `choose()` takes the cheapest plan that fits the budget, or without a budget the
smallest whose overhead is at most DEFAULT_OVERHEAD.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emitter.calls import Prepared
from emitter.ir import Graph
from emitter.kernels import kernel
from emitter.kernels.base import Windowed
from emitter.plan.arena import Plan, plan
from emitter.plan.stream import Schedule, Segment, Stage, exact_in_place, make_segment, stage_of
from emitter.plan.views import roots

CALL_INSTRUCTIONS = 3000  # a row call: band params, checks, the kernel's per-call set-up (fitted on QEMU counts)
WEIGHT_PASS_INSTRUCTIONS = 30.0  # per filter element and call, divided by the positions of a row: a
#   row call reads every weight once per pass over too few positions, so its cost falls with the
#   row's width. Fitted on cortex-m7 QEMU counts (benchmarks/memory.py, docs/memory.md): 7 per
#   element and call at 5 positions (KWS), 0.6 at 32 (IC)
MOVE_INSTRUCTIONS_PER_BYTE = 0.4  # memmove of ring rows (word copies)
INSTRUCTIONS_PER_MAC = {"mve": 0.9, "dsp": 1.9, "c": 5.0, "any": 1.9}  # QEMU counts of the shared models
# extra instructions per MAC of a lean (generic path) call over the fast path it replaces, fitted on
#   KWS and IC (benchmarks/memory.py): 0.6-1.0 on cortex-m7, 0.01-0.11 on cortex-m55
LEAN_EXTRA_PER_MAC = {"mve": 0.15, "dsp": 0.9, "c": 0.0, "any": 0.9}
DEFAULT_OVERHEAD = 0.05
MAX_SEGMENT = 12  # layers per streamed segment


@dataclass(frozen=True, eq=False)
class Candidate:
    plan: Plan
    overhead: int  # estimated extra instructions over the layer plan

    @property
    def kind(self) -> str:
        return self.plan.schedule.kind


def io_bytes(g: Graph, p: Plan) -> int:
    """Graph inputs and outputs outside the arena."""
    return sum(g.t(n).nbytes for n in (*g.inputs, *g.outputs) if p.location[p.root[n]][0] != "arena")


def activation_ram(g: Graph, p: Plan) -> int:
    """The figure budgets count: arena + the caller's input/output buffers."""
    return p.arena_size + io_bytes(g, p)


def runs(g: Graph, prepared: tuple[Prepared, ...]) -> list[list[int]]:
    """Maximal runs of steps that can stream into each other: each a band layer whose main input
    is the previous one's output (or a view of it: views are skipped), read by no one else and not
    a graph output. A sink (stream.sink_of) ends its run."""
    from emitter.ops import VIEW_OPS
    root = roots(g)
    readers: dict[str, list[int]] = {}
    for k, node in enumerate(g.nodes):
        for name in node.inputs:
            if name and node.op not in VIEW_OPS:
                readers.setdefault(root.get(name, name), []).append(k)
    outputs = {root[n] for n in g.outputs}
    out: list[list[int]] = []
    cur: list[int] = []
    for k, p in enumerate(prepared):
        if g.nodes[k].op in VIEW_OPS:
            continue
        prev = root[g.nodes[cur[-1]].outputs[0]] if cur else None
        if prev is not None and readers.get(prev) == [k] and prev not in outputs:
            main = next((n for n in g.nodes[k].inputs if n and root.get(n) == prev), None)
            stage = stage_of(g, k, p, main) if main is not None else None
            if stage is not None and rows_agree(stage_of(g, cur[-1], prepared[cur[-1]]), stage):
                cur.append(k)
                if stage.sink:
                    out.append(cur)
                    cur = []
                continue
        if cur:
            out.append(cur)
        cur = [k] if stage_of(g, k, p) is not None else []
    if cur:
        out.append(cur)
    return out


def rows_agree(producer: Stage | None, consumer: Stage | None) -> bool:
    """The consumer reads the producer's output as the same rows (a ring holds whole rows)."""
    return (producer is not None and consumer is not None and producer.out_rows == consumer.in_rows
            and producer.out_row_bytes == consumer.in_row_bytes[0])


def stages(g: Graph, prepared: tuple[Prepared, ...], steps: list[int]) -> list[Stage] | None:
    """The steps as the stages of one segment (None: the first cannot start one, e.g. a sink)."""
    root = roots(g)
    out: list[Stage] = []
    for k in steps:
        main = None
        if out:
            main = next(n for n in g.nodes[k].inputs if n and root.get(n) == root[out[-1].output])
        s = stage_of(g, k, prepared[k], main)
        if s is None:
            return None
        out.append(s)
    return out


def estimate(seg: Segment, trust_overlap: bool = True) -> int:
    """Bytes a segment needs at its peak, roughly: its whole input and output as the overlap
    limits place them, its rings, its scratch and its side operands."""
    first, last = seg.stages[0], seg.stages[-1]
    size_in, size_out = first.in_rows * first.in_row_bytes[0], last.out_rows * last.out_row_bytes
    down = seg.sim.down.get(first.inputs[0]) if trust_overlap or len(seg.stages) > 1 else None
    union = size_in + size_out
    if down is not None:
        union = min(union, max(size_in - down, size_out) if down <= 0 else max(size_in, down + size_out))
    up = seg.up.get(first.inputs[0]) if trust_overlap else None
    if up is not None:
        union = min(union, max(size_in, up + size_out) - min(0, up))
    sides = sum(s.in_rows * s.in_row_bytes[k] for s in seg.stages for k in range(1, len(s.inputs))
                if s.inputs[k] != first.inputs[0])
    return union + seg.ring_bytes() + seg.scratch + sides


def filter_elements(s: Stage) -> int:
    """The weights a window stage reads per output position (Windowed params); 0 for others."""
    return s.params.window().weights if isinstance(s.params, Windowed) else 0


def row_width(s: Stage) -> int:
    """Output positions of one row call (1 for a stage without a window)."""
    return max(1, s.params.window().output.w) if isinstance(s.params, Windowed) else 1


def overhead(seg: Segment, isa: str) -> int:
    """Estimated extra instructions of running the segment by rows instead of whole layers (and
    of its scratch-free calls on the slower generic path)."""
    calls = sum((s.out_rows - 1) * (CALL_INSTRUCTIONS + WEIGHT_PASS_INSTRUCTIONS * filter_elements(s) / row_width(s))
                for s in seg.stages)
    return int(calls + seg.sim.moved * MOVE_INSTRUCTIONS_PER_BYTE) + lean_cost(seg, isa)


def lean_cost(seg: Segment, isa: str) -> int:
    """Estimated extra instructions of the segment's lean calls (run by rows or whole)."""
    return int(seg.slow_macs * LEAN_EXTRA_PER_MAC.get(isa, LEAN_EXTRA_PER_MAC["any"]))


def others(g: Graph, layer: Plan) -> Callable[[Segment], int]:
    """The bytes of whole-layer tensors live during a segment that are none of its own (e.g. a
    skip connection): they add to its peak."""
    def live(seg: Segment) -> int:
        own = {layer.root.get(n, n) for s in seg.stages for n in (*s.inputs, s.output)}
        return max(sum(b.size for b in layer.buffers if b.first <= step <= b.last and b.name not in own
                       and b.kind == "tensor") for step in range(seg.first, seg.last + 1))
    return live


SegmentCache = dict[tuple[tuple[int, ...], bool, bool], Segment | None]


def whole_estimate(g: Graph, prepared: tuple[Prepared, ...], step: int) -> int:
    """A layer run whole: its activations (inputs and output) and its scratch."""
    node = g.nodes[step]
    acts = {n for n in (*node.inputs, *node.outputs) if n and not g.t(n).is_const}
    return sum(g.t(n).nbytes for n in acts) + prepared[step].scratch


def streamed(g: Graph, prepared: tuple[Prepared, ...], isa: str, limit: int | None,
             tight: bool = False, other: Callable[[Segment], int] = lambda seg: 0,
             trust_overlap: bool = True, plain: bool = False, cache: SegmentCache | None = None,
             lean: bool = False) -> list[Segment]:
    """Segments over every run: the fewest overhead whose estimated peaks stay within `limit`
    (None: the smallest estimated peak, then the fewest overhead). tight: rings of the fewest
    rows (more moves). trust_overlap=False: a single layer is estimated without its overlap, which
    the placement may not realise, so longer segments win. plain: a layer may also stay whole (no
    segment, no overhead), so layers whose rows save nothing cost nothing. lean: layers whose twin has a
    LEAN_C call it where that saves scratch."""
    cache = {} if cache is None else cache
    chosen: list[Segment] = []
    for run in runs(g, prepared):
        n = len(run)
        segs: dict[tuple[int, int], Segment] = {}
        for i in range(n):
            for j in range(i, min(n, i + MAX_SEGMENT)):
                key = (tuple(run[i:j + 1]), tight, lean)
                if key not in cache:
                    st = stages(g, prepared, run[i:j + 1])
                    cache[key] = None if st is None else make_segment(
                        st, prepared, isa, (lambda rows: 0) if tight else (lambda rows: rows), lean)
                if cache[key] is not None:
                    segs[i, j] = cache[key]  # type: ignore[assignment]
        # best[j] = (peak, overhead, segments) of run[:j]
        best: list[tuple[int, int, list[Segment]] | None] = [(0, 0, [])] + [None] * n
        for j in range(1, n + 1):
            for i in range(j):
                prev, seg = best[i], segs.get((i, j - 1))
                if prev is None:
                    continue
                options: list[tuple[int, int, list[Segment]]] = []
                if seg is not None:
                    options.append((estimate(seg, trust_overlap) + other(seg), overhead(seg, isa), [seg]))
                if plain and i == j - 1:
                    one = segs.get((i, i))
                    options.append((whole_estimate(g, prepared, run[i]) + (other(one) if one else 0), 0, []))
                for est, ovh, add in options:
                    peak, cost = max(prev[0], est), prev[1] + ovh
                    if limit is not None and peak > limit:
                        continue
                    key2 = (cost, peak) if limit is not None else (peak, cost)
                    old = best[j]
                    if old is None or key2 < ((old[1], old[0]) if limit is not None else (old[0], old[1])):
                        best[j] = (peak, cost, [*prev[2], *add])
        final = best[n]
        if final is None:  # no way under the limit: the smallest
            return streamed(g, prepared, isa, None, tight, other, trust_overlap, plain, cache, lean) \
                if limit is not None else []
        chosen += final[2]
    return chosen


def singles(g: Graph, prepared: tuple[Prepared, ...], isa: str, lean: bool = False) -> list[Segment]:
    out = []
    for run in runs(g, prepared):
        for k in run:
            st = stages(g, prepared, [k])
            seg = None if st is None else make_segment(st, prepared, isa, lean=lean)
            if seg is not None:
                out.append(seg)
    return out


def candidates(g: Graph, prepared: tuple[Prepared, ...], scratch: list[int], alignment: int,
               isa: str) -> list[Candidate]:
    """Every plan worth offering, cheapest first."""
    exact = tuple(k for k, p in enumerate(prepared) if exact_in_place(p.kernel) and not p.then)
    exact_inputs = tuple(kernel(prepared[k].kernel).exact_in_place_inputs for k in exact)

    def schedule(kind: str, segments: tuple[Segment, ...]) -> Schedule:
        return Schedule(kind, segments, exact, exact_inputs, host_inputs=True)

    out = [Candidate(plan(g, scratch, alignment), 0)]
    copy = int(sum(g.t(n).nbytes for n in g.inputs) * MOVE_INSTRUCTIONS_PER_BYTE)  # run() copies the input in
    out.append(Candidate(plan(g, scratch, alignment, 0, schedule("inplace", ())), copy))
    one = singles(g, prepared, isa)
    out.append(candidate(g, scratch, alignment, schedule("overlap", tuple(one)), copy, isa))
    free = singles(g, prepared, isa, lean=True)  # the smallest: lean calls where they save scratch
    seen = set()
    cache: SegmentCache = {}
    other = others(g, out[0].plan)
    for frac, tight, trust, plain, lean in (
            (1.0, False, True, False, False), (0.75, False, True, False, False), (0.5, False, True, False, False),
            (None, False, True, False, False), (None, True, True, False, False), (None, True, False, False, False),
            (1.0, False, True, True, False), (0.75, False, True, True, False), (0.5, False, True, True, False),
            (None, False, True, True, False), (None, True, False, True, False),
            (None, False, True, True, True), (None, True, False, True, True)):
        limit = None if frac is None else int(out[2].plan.arena_size * frac)
        segs = streamed(g, prepared, isa, limit, tight, other, trust, plain, cache, lean)
        key = tuple((s.first, s.last, s.caps, s.lean) for s in segs)
        if key in seen or (not plain and all(len(s.stages) == 1 for s in segs)) or not segs:
            continue
        seen.add(key)
        if not plain:  # every other layer that can overlap may
            covered = {k for s in segs for k in range(s.first, s.last + 1)}
            segs += [s for s in (free if lean else one) if s.first not in covered]
        segs.sort(key=lambda s: s.first)
        out.append(candidate(g, scratch, alignment, schedule("stream", tuple(segs)), copy, isa))
    if any(s.lean for s in free):
        out.append(candidate(g, scratch, alignment, schedule("overlap", tuple(free)), copy, isa))
    return out


def candidate(g: Graph, scratch: list[int], alignment: int, schedule: Schedule, copy: int, isa: str) -> Candidate:
    """The schedule planned for real, its overhead counted on the segments that run by rows."""
    p = plan(g, scratch, alignment, 0, schedule)
    return Candidate(p, copy + sum(overhead(s, isa) if p.modes.get(s.first) != "whole" else lean_cost(s, isa)
                                   for s in schedule.segments))


def model_cost(prepared: tuple[Prepared, ...], isa: str) -> int:
    """Estimated instructions of the layer plan (the base of the overhead ratio)."""
    return int(sum(p.macs for p in prepared) * INSTRUCTIONS_PER_MAC.get(isa, 1.9)) + 200 * len(prepared)


@dataclass(frozen=True)
class Choice:
    chosen: Candidate
    candidates: tuple[Candidate, ...]
    base: int  # estimated instructions of the layer plan
    why: str

    def ratio(self, c: Candidate) -> float:
        return c.overhead / self.base if self.base else 0.0


def choose(g: Graph, cands: list[Candidate], base: int, budget: int | None, budget_src: str) -> Choice:
    """The cheapest candidate within the budget; without one, the smallest within DEFAULT_OVERHEAD.
    A budget below every candidate raises BudgetError naming the smallest plan."""
    from emitter.errors import BudgetError

    by_ram = sorted(cands, key=lambda c: (activation_ram(g, c.plan), c.overhead))
    if budget is None:
        ok = [c for c in by_ram if c.overhead <= DEFAULT_OVERHEAD * base]
        pick = ok[0] if ok else cands[0]
        return Choice(pick, tuple(cands), base, f"the smallest plan within {DEFAULT_OVERHEAD:.0%} estimated overhead")
    fits = [c for c in cands if activation_ram(g, c.plan) <= budget]
    if not fits:
        small = by_ram[0]
        raise BudgetError(f"RAM: the smallest plan ({small.kind}) needs {activation_ram(g, small.plan):,} bytes of "
                          f"activation RAM (arena + input/output buffers) but the budget ({budget_src}) is "
                          f"{budget:,} bytes. Peak at {peak_layer(g, small.plan)}, which sets it. Shrink that "
                          "layer's activations (fewer channels, a stride earlier, a smaller input) or choose a "
                          "board with more RAM. Nothing was written.")
    pick = min(fits, key=lambda c: (c.overhead, activation_ram(g, c.plan)))
    return Choice(pick, tuple(cands), base, f"the fastest plan within {budget_src} ({budget:,} bytes)")


def peak_layer(g: Graph, p: Plan) -> str:
    """The first layer at which the arena's highest byte is in use (the layer that sets it)."""
    def top(step: int) -> int:
        return max((b.offset + b.size for b in p.buffers if b.first <= step <= b.last), default=0)

    if not p.buffers:
        return "no layer (the arena is empty)"
    step = max(range(len(g.nodes)), key=lambda s: (top(s), -s))
    return f"layer {step} '{g.nodes[step].name}' ({g.nodes[step].op})"


def report(g: Graph, p: Plan, choice: Choice | None) -> dict[str, Any]:
    """report.json's "memory_plan": the plan per layer (its output buffer, offset, bytes and live
    range; how it runs: whole, by rows down/up, or streamed in a segment with its ring), the
    candidates and why this one."""
    buffers = {b.key: b for b in p.buffers}
    layers = []
    for k, node in enumerate(g.nodes):
        seg = p.schedule.segment_at(k)
        mode = p.modes.get(seg.first, "whole") if seg is not None else "whole"
        out = p.root[node.outputs[0]]
        b = buffers.get(("tensor", out)) or buffers.get(("ring", out))
        row: dict[str, Any] = {"index": k, "name": node.name, "mode": mode, "band_rows": 1 if mode != "whole" else None,
                               "recompute": 1.0,  # streamed rows are computed once: no halo recomputation
                               "buffer": None if b is None else {"name": b.name, "offset": b.offset, "bytes": b.size,
                                                                 "first": b.first, "last": b.last}}
        if seg is not None and k in seg.lean:
            row["lean"] = True  # the twin's LEAN_C: the generic path, the least scratch
        if seg is not None and mode == "rows":
            row["segment"] = [seg.first, seg.last]
            if k == seg.last and seg.stages[-1].sink:
                row["accumulator_bytes"] = seg.acc_bytes
            steps = [s.step for s in seg.stages]
            pos = steps.index(k) if k in steps else len(seg.caps)  # a view inside the segment holds no ring
            if pos < len(seg.caps):
                row["ring_rows"] = seg.caps[pos]
        layers.append(row)
    layer = p if choice is None else choice.candidates[0].plan
    return {
        "kind": p.schedule.kind, "why": "whole layers asked" if choice is None else choice.why,
        "activation_ram_bytes": activation_ram(g, p), "arena_bytes": p.arena_size,
        "whole_layer_activation_ram_bytes": activation_ram(g, layer),
        "liveness_lower_bound_bytes": layer.lower_bound,
        "estimated_overhead": 0.0 if choice is None else round(choice.ratio(choice.chosen), 4),
        "inputs_in_arena": p.schedule.host_inputs,
        "candidates": [] if choice is None else [
            {"kind": c.kind, "activation_ram_bytes": activation_ram(g, c.plan),
             "estimated_overhead": round(choice.ratio(c), 4)} for c in choice.candidates],
        "layers": layers,
    }
