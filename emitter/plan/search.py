"""Plans chosen by the RAM budget: layer-by-layer, in place / overlapped, or streamed segments.

Candidates, from cheapest to smallest:
  layer    today's plan: whole layers, graph inputs in the caller's buffers (liveness lower bound);
  inplace  whole layers, graph inputs in the arena, element-wise layers (add, LUT, requantize)
           writing exactly over an operand they read for the last time, pointwise and depthwise
           convolutions in their own call over their input, starting as far below it as their
           path's order of writes needs (stream.in_place_call): no overhead; then again with the
           depthwise layers that set the peak written exactly over their input channel block by
           channel block (their in_place_c, stream.in_place_c_call: copies and calls, with_cost);
           then with homing calls (stream.InPlace.home: each moves its output back up onto its
           input, so a chain of them does not sink by each offset; homing(): the move's cost), and
           again with lean depthwise calls where they start nearer their input with their scratch;
  overlap  graph inputs in the arena, every layer that can run by row bands may write its output
           over the input it reads for the last time (top down or bottom up), element-wise
           layers exactly over a dying operand;
  stream   as overlap, plus runs of layers streamed row by row through rings, the runs chosen by
           a dynamic programme that minimises the estimated peak for a given overhead; each
           layer of a run makes a band of 1, 2, 4, 8 or more rows a call (taller bands: bigger
           rings, fewer calls; with a budget, taller() raises them within what it leaves).
The segments come from emitter/plan/propose.py (runs, estimates, the dynamic programme); every
candidate is planned for real (emitter/plan/arena.py): the estimate only proposes. The
instruction overhead of a candidate is estimated from its kernel calls and ring moves
(CALL_INSTRUCTIONS, MOVE_PER_BYTE; benchmarks/memory.py measures the real figures
in QEMU).

The ranking is one cost key (Goal.key): with --memory auto and an explicit RAM budget
(--ram-budget, --ram-reserve) the fastest plan that fits, (overhead, activation RAM); otherwise the
smallest, (activation RAM, overhead) - for auto without a budget or within the board's own RAM
among the plans without streamed chains whose estimated overhead is at most FREE_OVERHEAD ("free
savings": e.g. in-place element-wise layers cost nothing; the fastest plan that fits when none of
those fits the board),
for a plan kind among the candidates of that kind. `--memory layer` keeps whole layers.
`search()` lists one execution order's candidates and takes
the lowest key (`choose()`); `search_orders()` does so for every order of emitter/plan/order.py
and takes the lowest key again.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast

from emitter.backends.kernel_choice import bias_of
from emitter.calls import Prepared
from emitter.ir import Graph
from emitter.kernels import kernel
from emitter.plan.arena import Plan, plan
from emitter.plan.order import orders, reorder
from emitter.plan.propose import (
    LEAN_EXTRA_PER_MAC,
    MOVE_INSTRUCTIONS_PER_BYTE,
    MOVE_PER_BYTE,
    Costs,
    LayerCost,
    SegmentCache,
    base_estimate,
    estimate,
    layer_costs,
    lean_cost,
    others,
    overhead,
    raise_heights,
    singles,
    streamed,
)
from emitter.plan.stream import (
    InPlace,
    Schedule,
    Segment,
    band_params,
    exact_in_place,
    fed,
    in_place_c_call,
    in_place_call,
    lean_in_place_call,
    without_lean,
)

INSTRUCTIONS_PER_MAC = {"mve": 0.9, "dsp": 1.9, "c": 5.0, "any": 1.9}  # QEMU counts of the shared models
FREE_OVERHEAD = 0.02  # auto without an explicit budget: the smallest plan within this estimated overhead
HOMING = True  # offer in-place plans whose layers move their output back up (tests of the plain rule: False)
FEED = True  # relax() feeds streamed segments (stream.fed; tests of the plain plans: False)
RELAX_ROUNDS = 3  # relax() rounds on the chosen plan at most (each may free room for the next)


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



def candidates(g: Graph, prepared: tuple[Prepared, ...], scratch: list[int], alignment: int,
               isa: str, core: str = "", most: int | None = None, budget: int | None = None) -> list[Candidate]:
    """Every plan worth offering, cheapest first; overheads from the core's cost table where it has
    the layer (propose.layer_costs). most (free savings: FREE_OVERHEAD of the base): no streamed
    proposal is planned, free savings never take one (Goal.eligible). budget (the fastest plan
    within it): each streamed plan that fits it is offered again with taller bands
    (taller()), within the bytes it leaves."""
    costs = layer_costs(prepared, core, isa)
    # whole calls over a dying operand: element-wise layers exactly; convolutions in their own call
    # (pointwise ones then never run by rows alone: as low or lower in RAM, no band calls; depthwise
    # ones may, a row lower than their own call needs at least); depthwise ones through their
    # channel-block call (in_place_c: copies and calls cost), where it lowers the peak
    calls = {k: c for k, p in enumerate(prepared) if (c := in_place_call(p, isa)) is not None}
    alt = {k: with_cost(c, prepared[k]) for k, p in enumerate(prepared) if (c := in_place_c_call(p, isa)) is not None}
    own = frozenset(k for k, c in calls.items() if not c.exact)  # never by rows alone
    blocks = frozenset(alt)

    def schedule(kind: str, segments: tuple[Segment, ...], use: frozenset[int] = frozenset(),
                 over: dict[int, InPlace] | None = None) -> Schedule:
        """use: the depthwise layers that write over their input (blocks); over: calls instead of
        `calls` (homing ones)."""
        rows = {st.step for s in segments for st in s.stages}
        exact = tuple(k for k, p in enumerate(prepared)
                      if (exact_in_place(p.kernel) and not p.then) or (k in calls and k not in rows) or k in use)
        return Schedule(kind, segments, exact,
                        tuple((0,) if k in calls or k in use else kernel(prepared[k].kernel).exact_in_place_inputs
                              for k in exact),
                        tuple(alt[k] if k in use else (over or {}).get(k, calls.get(k)) for k in exact),
                        host_inputs=True)

    out = [Candidate(plan(g, scratch, alignment), 0)]
    copy = int(sum(g.t(n).nbytes for n in g.inputs) * MOVE_INSTRUCTIONS_PER_BYTE)  # run() copies the input in
    out.append(candidate(g, scratch, alignment, schedule("inplace", ()), copy, isa, costs))
    use = frozenset[int]()  # the depthwise layers at the peak, while they alone set it and it falls
    for _ in blocks:
        steps = peak_steps(g, out[-1].plan)
        if not steps <= blocks or steps <= use:
            break
        got = candidate(g, scratch, alignment, schedule("inplace", (), use | steps), copy, isa, costs)
        if got.plan.arena_size >= out[-1].plan.arena_size:
            break
        use |= steps
        out.append(got)
    # the same with the layers over their input homing (their output moved back up onto the input:
    # a chain of them stays in place instead of sinking by each offset), then with lean calls where
    # those start nearer the input with their scratch
    base = out[0].plan  # (an output in the caller's buffer has no room below it)
    homes = {k: homing(c, prepared[k], isa=isa) for k, c in calls.items() if c.down > 0 and k not in use
             and base.location[base.root[g.nodes[k].outputs[0]]][0] == "arena"}
    if homes and HOMING:
        homed = candidate(g, scratch, alignment, schedule("inplace", (), use, homes), copy, isa, costs)
        out.append(homed)
        leans = {k: homing(c, prepared[k], costs.get(k), isa) for k in homes
                 if (c := lean_in_place_call(prepared[k], isa)) is not None
                 and c.down + c.scratch < homes[k].down + scratch[k]}
        if leans:
            out.append(candidate(g, scratch, alignment, schedule("inplace", (), use, homes | leans), copy, isa,
                                 costs))
        out += leaner(g, prepared, scratch, alignment, isa, costs, calls, homes, use, schedule, copy, homed.plan)
    one = [s for s in singles(g, prepared, isa) if s.first not in own]
    out.append(candidate(g, scratch, alignment, schedule("overlap", tuple(one)), copy, isa, costs))
    if blocks:  # the depthwise layers in place rather than by rows
        out.append(candidate(g, scratch, alignment, schedule("overlap", tuple(s for s in one if s.first not in blocks),
                                                             blocks), copy, isa, costs))
    free = [s for s in singles(g, prepared, isa, lean=True) if s.first not in own]  # lean calls: the least scratch
    seen = set()
    cache: SegmentCache = {}
    other = others(g, out[0].plan)
    # free savings take no streamed chain (their estimate is the least sure: docs/memory.md): not planned
    for frac, tight, trust, plain, lean, spread in () if most is not None else (
            (1.0, False, True, False, False, False), (0.75, False, True, False, False, False),
            (0.5, False, True, False, False, False), (None, False, True, False, False, False),
            (None, True, True, False, False, False), (None, True, False, False, False, False),
            (1.0, False, True, True, False, False), (0.75, False, True, True, False, False),
            (0.5, False, True, True, False, False), (None, False, True, True, False, False),
            (None, True, False, True, False, False), (None, False, True, True, True, False),
            (None, True, False, True, True, False), (None, False, True, False, False, True),
            (None, True, True, False, False, True), (None, False, True, True, True, True)):
        limit = None if frac is None else int(out[2].plan.arena_size * frac)
        segs = [s for s in streamed(g, prepared, isa, limit, tight, other, trust, plain, cache, lean, costs, spread)
                if len(s.stages) > 1 or s.first not in own]
        key = tuple((s.first, s.last, s.caps, s.lean, s.heights) for s in segs)
        if key in seen or (not plain and all(len(s.stages) == 1 for s in segs)) or not segs:
            continue
        seen.add(key)
        if not plain:  # every other layer that can overlap may
            covered = {k for s in segs for k in range(s.first, s.last + 1)}
            segs += [s for s in (free if lean else one) if s.first not in covered]
        segs.sort(key=lambda s: s.first)
        out.append(candidate(g, scratch, alignment, schedule("stream", tuple(segs)), copy, isa, costs))
    if any(s.lean for s in free):
        out.append(candidate(g, scratch, alignment, schedule("overlap", tuple(free)), copy, isa, costs))
    if budget is not None:
        out += taller(g, prepared, scratch, alignment, isa, costs, out, budget, other)
    return out


def leaner(g: Graph, prepared: tuple[Prepared, ...], scratch: list[int], alignment: int, isa: str, costs: Costs,
           calls: dict[int, InPlace], homes: dict[int, InPlace], use: frozenset[int], schedule: Any,
           copy: int, start: Plan) -> list[Candidate]:
    """The in-place plan `start` again with the layers that set its peak on their lean calls where
    those need fewer bytes, while the arena falls: a layer over its input through its lean call
    (lean_in_place_call; homing where it starts below it), another as one whole lean call (a
    single-layer segment of propose.singles with lean, its output over no input: it runs whole).
    Each lean call with the scratch of its faster variant (Kernel.lean_wide_buffer_size: these plans
    are for speed; a streamed plan's lean calls take what their segment has)."""
    def wider(s: Segment) -> Segment:
        """The single layer's segment run whole (its output over no input) with its wide scratch."""
        t, p = kernel(prepared[s.first].kernel), prepared[s.first]
        need = s.scratch if t.lean_wide_buffer_size is None else \
            max(s.scratch, t.lean_wide_buffer_size(band_params(p), bias_of(p), isa))
        return replace(s, sim=replace(s.sim, down={}), up={}, scratch=need)

    alone = {s.first: wider(s) for s in singles(g, prepared, isa, lean=True) if s.lean and s.first not in calls}
    over, whole = dict(homes), dict[int, Segment]()
    out: list[Candidate] = []
    size = start.arena_size
    for _ in range(len(prepared)):
        changed = False
        for k in sorted(peak_steps(g, out[-1].plan if out else start)):
            lean = lean_in_place_call(prepared[k], isa) if k in calls and k not in use else None
            now = over.get(k, calls.get(k))
            if lean is not None and now is not None and now.call != lean.call \
                    and lean.down + lean.scratch < now.down + (now.scratch if now.call else scratch[k]):
                over[k] = homing(lean, prepared[k], costs.get(k), isa) if lean.down > 0 else \
                    replace(lean, cost=lean_extra(prepared[k], costs.get(k), isa, lean.scratch))
                changed = True
            elif k in alone and k not in whole:
                whole[k] = alone[k]
                changed = True
        if not changed:
            break
        got = candidate(g, scratch, alignment, schedule("inplace", tuple(whole[k] for k in sorted(whole)), use, over),
                        copy, isa, costs)
        if got.plan.arena_size >= size:
            break
        size = got.plan.arena_size
        out.append(got)
    return out


def taller(g: Graph, prepared: tuple[Prepared, ...], scratch: list[int], alignment: int, isa: str, costs: Costs,
           cands: list[Candidate], budget: int, other: Any) -> list[Candidate]:
    """The streamed candidates within `budget` with taller bands (propose.raise_heights: the layers
    whose taller bands save the most estimated instructions per byte), each segment's estimated
    peak growing by at most a share of the bytes the plan leaves under the budget (the estimate's
    bytes are rough: the plan is made for real and kept where it fits)."""
    out: list[Candidate] = []
    seen = set()
    for c in cands:
        ram = activation_ram(g, c.plan)
        if c.kind != "stream" or ram > budget:
            continue
        for share in (1.0, 0.7, 0.4):
            for tight in (False, True):
                segs = tuple(raise_heights(s, g, prepared, isa, estimate(s) + other(s) + int(share * (budget - ram)),
                                           tight, other, True, bool(s.lean), costs)
                             for s in c.plan.schedule.segments)
                key = tuple((s.first, s.last, s.caps, s.lean, s.heights) for s in segs)
                if key in seen or all(not s.heights for s in segs):
                    continue
                seen.add(key)
                got = candidate(g, scratch, alignment, replace(c.plan.schedule, segments=segs), 0, isa, costs)
                got = replace(got, overhead=got.overhead + c.overhead - schedule_overhead(c.plan, isa, costs))
                out.append(got)
    return out


def candidate(g: Graph, scratch: list[int], alignment: int, schedule: Schedule, copy: int, isa: str,
              costs: Costs | None = None) -> Candidate:
    """The schedule planned for real, its overhead counted on the segments that run by rows and on
    the in-place calls through another function."""
    p = plan(g, scratch, alignment, 0, schedule)
    return Candidate(p, copy + schedule_overhead(p, isa, costs))


def schedule_overhead(p: Plan, isa: str, costs: Costs | None) -> int:
    """Estimated instructions a plan's schedule adds: its segments (by rows, or lean whole calls)
    and its in-place calls (with_cost)."""
    sched = p.schedule
    return sum(overhead(s, isa, costs) if p.modes.get(s.first) != "whole" else lean_cost(s, isa, costs)
               for s in sched.segments) + sum(c.cost for k in sched.exact if (c := sched.call_at(k)) is not None)


IN_PLACE_BLOCK_CALL = 1400  # a depthwise in-place block's kernel call (QEMU, KWS on cortex-m7: 8 channels a block)
IN_PLACE_PER_BYTE = 1.0  # ... and its copies out and back, per byte copied


def with_cost(c: InPlace, p: Prepared) -> InPlace:
    """The in-place call through another function (a depthwise layer's in_place_c) with its
    estimated extra instructions: it copies the tensor out and back, and makes its kernel calls
    (the twin's in_place_c_calls: a call per block of channels)."""
    params = cast(Any, p.params)
    out = params.output
    nbytes = out.n * out.h * out.w * out.c
    count = kernel(p.kernel).in_place_c_calls
    calls = count(params) if count is not None else 1
    return replace(c, cost=int(2 * nbytes * IN_PLACE_PER_BYTE) + IN_PLACE_BLOCK_CALL * calls)




def lean_extra(p: Prepared, cost: LayerCost | None, isa: str, room: int = 0) -> int:
    """Estimated instructions a layer's whole lean call (with `room` bytes of scratch) costs over its
    fast call (the core's table: LayerCost.lean_at, else LEAN_EXTRA_PER_MAC)."""
    if cost is not None:
        return max(0, cost.lean_at(room) - cost.whole)
    return int(p.macs * LEAN_EXTRA_PER_MAC.get(isa, LEAN_EXTRA_PER_MAC["any"]))


def homing(c: InPlace, p: Prepared, cost: LayerCost | None = None, isa: str = "any") -> InPlace:
    """The in-place call writing `down` below its input, then moving its output up onto it, with its
    estimated extra instructions: the move, and for a lean call (c.call) what it costs over the
    fast call (the core's table, else LEAN_EXTRA_PER_MAC)."""
    out = cast(Any, p.params).output
    extra = lean_extra(p, cost, isa, c.scratch) if c.call else 0
    per_byte = MOVE_PER_BYTE.get(isa, MOVE_PER_BYTE["any"])
    return replace(c, home=True, cost=int(out.n * out.h * out.w * out.c * per_byte) + extra)


def model_cost(prepared: tuple[Prepared, ...], isa: str) -> int:
    """Estimated instructions of the layer plan (the base of the overhead ratio)."""
    return int(sum(p.macs for p in prepared) * INSTRUCTIONS_PER_MAC.get(isa, 1.9)) + 200 * len(prepared)


@dataclass(frozen=True)
class Choice:
    chosen: Candidate
    candidates: tuple[Candidate, ...]
    base: int  # estimated instructions of the layer plan
    why: str
    free: bool = False  # chosen as free savings (Goal.free): the smallest within FREE_OVERHEAD

    def ratio(self, c: Candidate) -> float:
        return c.overhead / self.base if self.base else 0.0


# -- the ranking: one cost key over every candidate, within an execution order and across orders --

MEMORY = ("auto", "layer", "inplace", "overlap", "stream")


def board_own(budget_src: str) -> bool:
    """The budget is the board's own RAM, not one the user gave (--ram-budget, --ram-reserve):
    emitter/cli.ram_budget names it `board NAME RAM`."""
    return budget_src.startswith("board ") and budget_src.endswith(" RAM")


@dataclass(frozen=True)
class Goal:
    """What the search optimises: the plan kind asked (`memory`: "auto" chooses), the RAM `budget`
    (activation bytes; None: none, `budget_src` names where it comes from) and `base`, the
    estimated instructions of the whole-layer plan that overheads are weighed against.
    free_first=False: auto within the board's own RAM where no free plan fits (the fastest that fits)."""
    memory: str
    budget: int | None
    budget_src: str
    base: int
    free_first: bool = True

    @property
    def free(self) -> bool:
        """auto without an explicit budget: the smallest plan within FREE_OVERHEAD (free savings)."""
        return self.memory == "auto" and self.free_first and (self.budget is None or board_own(self.budget_src))

    @property
    def fastest(self) -> bool:
        """auto with an explicit budget (or no free plan within the board's): the fastest plan that
        fits; otherwise the smallest."""
        return self.memory == "auto" and self.budget is not None and not self.free

    def key(self, g: Graph, c: Candidate) -> tuple[int, int]:
        """The one cost key: (overhead, activation RAM) for the fastest plan, else (RAM, overhead)."""
        ram = activation_ram(g, c.plan)
        return (c.overhead, ram) if self.fastest else (ram, c.overhead)

    def eligible(self, g: Graph, cands: list[Candidate]) -> list[Candidate]:
        """The candidates the goal may take: those of the kind asked (overlap where nothing streams);
        for auto, those within the budget, and without an explicit one those within FREE_OVERHEAD
        of the base."""
        if self.memory != "auto":
            return [c for c in cands if c.kind == self.memory] or [c for c in cands if c.kind == "overlap"]
        fit = cands if self.budget is None else [c for c in cands if activation_ram(g, c.plan) <= self.budget]
        if self.free:  # no streamed chain: its estimate is the least sure (docs/memory.md, estimate error)
            return [c for c in fit if c.overhead <= FREE_OVERHEAD * self.base and c.kind != "stream"]
        return fit

    def why(self) -> str:
        if self.memory != "auto":
            return f"--memory {self.memory}"
        if self.free:
            return (f"free savings: the smallest plan within {FREE_OVERHEAD:.0%} estimated instructions; "
                    "--memory layer keeps whole layers")
        if self.budget is not None:
            return f"the fastest plan within {self.budget_src} ({self.budget:,} bytes)"
        return "the fastest plan"


def choose(g: Graph, cands: list[Candidate], goal: Goal) -> Choice:
    """The eligible candidate of the lowest cost key (the first on a tie). Within the board's own
    RAM where no plan within FREE_OVERHEAD fits, the fastest that fits. A budget below every
    candidate raises BudgetError naming the smallest plan."""
    from emitter.errors import BudgetError

    ok = goal.eligible(g, cands)
    if not ok and goal.free and goal.budget is not None:
        goal = replace(goal, free_first=False)
        ok = goal.eligible(g, cands)
    if not ok and goal.fastest:
        assert goal.budget is not None
        small = min(cands, key=lambda c: (activation_ram(g, c.plan), c.overhead))
        raise BudgetError(f"RAM: the smallest plan ({small.kind}) needs {activation_ram(g, small.plan):,} bytes of "
                          f"activation RAM (arena + input/output buffers) but the budget ({goal.budget_src}) is "
                          f"{goal.budget:,} bytes. Peak at {peak_layer(g, small.plan)}, which sets it. Shrink that "
                          "layer's activations (fewer channels, a stride earlier, a smaller input) or choose a "
                          "board with more RAM. Nothing was written.")
    pick = min(ok, key=lambda c: goal.key(g, c)) if ok else cands[0]
    return Choice(pick, tuple(cands), goal.base, goal.why(), goal.free and bool(ok))


def search(g: Graph, prepared: tuple[Prepared, ...], scratch: list[int], align: int, isa: str, memory: str,
           ram_budget: int | None, budget_src: str, core: str = "") -> Choice:
    """The plan of one execution order: its candidates (candidates()), ranked by the goal's key.
    auto with a budget the whole-layer plan meets takes it at once (the fastest; nothing else to weigh)."""
    # the base of the overhead ratio: mcugen's counts in the core's cost table (propose.base_estimate;
    # the Arm tables too), else the ISA's instructions per MAC
    from emitter.errors import UsageError

    per_mac = INSTRUCTIONS_PER_MAC.get(isa, 1.9)
    table = base_estimate(prepared, core, isa, per_mac, 200) if core else None
    goal = Goal(memory, ram_budget, budget_src, table if table is not None else model_cost(prepared, isa))
    if goal.fastest and ram_budget is not None:
        layer = Candidate(plan(g, scratch, align), 0)
        if activation_ram(g, layer.plan) <= ram_budget:
            return Choice(layer, (layer,), goal.base, goal.why())
    if memory not in MEMORY:
        raise UsageError(f"--memory {memory}: use auto, layer, inplace, overlap or stream")
    # free savings where the whole-layer plan fits (it is free itself, so no fallback can be needed):
    # proposals over FREE_OVERHEAD are not planned
    most = int(FREE_OVERHEAD * goal.base) if goal.free and (
        ram_budget is None or activation_ram(g, plan(g, scratch, align)) <= ram_budget) else None
    choice = choose(g, candidates(g, prepared, scratch, align, isa, core, most,
                                  ram_budget if goal.fastest else None), goal)
    costs, got = layer_costs(prepared, core, isa), choice.chosen
    for _ in range(RELAX_ROUNDS):  # again while it gains (taller segments leave room for fast calls), not
        again = relax(g, prepared, scratch, align, isa, costs, got)  # once a segment is fed (its bytes
        if again is got:  # are laid out for its bands as they are)
            break
        got = again
        if any(s.feed for s in got.plan.schedule.segments):
            break
    return choice if got is choice.chosen else replace(choice, chosen=got, candidates=(*choice.candidates, got))


def relax(g: Graph, prepared: tuple[Prepared, ...], scratch: list[int], alignment: int, isa: str, costs: Costs,
          c: Candidate) -> Candidate:
    """The chosen plan at no more activation RAM for fewer instructions: each of its lean calls (the
    generic path, the least scratch) back on its layer's fast call, one at a time, where the RAM
    does not grow (a plan proposed lean everywhere needs the least scratch only at its peak); then
    a streamed plan's bands taller where the RAM does not grow (taller() within its own RAM); then
    each segment fed (stream.fed: its scratch below its first layer's input, the bands from where the
    rows passed hold the fast call's scratch running it) where that saves instructions in the same RAM."""
    ram = activation_ram(g, c.plan)
    best = c
    for k, seg in enumerate(c.plan.schedule.segments):
        for step in seg.lean:
            segs = list(best.plan.schedule.segments)
            fast = without_lean(segs[k], prepared, isa, step)
            if fast is None:
                continue
            segs[k] = fast
            p = plan(g, scratch, alignment, 0, replace(best.plan.schedule, segments=tuple(segs)))
            over = best.overhead - schedule_overhead(best.plan, isa, costs) + schedule_overhead(p, isa, costs)
            if activation_ram(g, p) <= ram and over <= best.overhead:  # (the fast call is never the slower)
                best = Candidate(p, over)
    if best.kind == "stream":  # then taller bands where they fit in the same RAM
        taller_ones = [t for t in taller(g, prepared, scratch, alignment, isa, costs, [best], ram,
                                         others(g, plan(g, scratch, alignment)))
                       if activation_ram(g, t.plan) <= ram]
        best = min([best, *taller_ones], key=lambda t: t.overhead)
    # then each segment fed (its scratch below its first layer's input: stream.fed) where the RAM does not grow
    for k, seg in enumerate(best.plan.schedule.segments):
        got = fed(seg, prepared, isa) if FEED else None
        if got is None:
            continue
        segs = list(best.plan.schedule.segments)
        segs[k] = got
        p = plan(g, scratch, alignment, 0, replace(best.plan.schedule, segments=tuple(segs)))
        over = best.overhead - schedule_overhead(best.plan, isa, costs) + schedule_overhead(p, isa, costs)
        if activation_ram(g, p) <= ram and over < best.overhead and p.feeds:
            best = Candidate(p, over)
    return best


def search_orders(g: Graph, prepared: tuple[Prepared, ...], align: int, isa: str, memory: str,
                  ram_budget: int | None, budget_src: str, core: str = "") -> tuple[list[int], Choice]:
    """The plan over the candidate execution orders of a branching graph (emitter/plan/order.py):
    each order's plan (search()), the order of the lowest cost key (Goal.key) taken, the file's
    order on a tie. A budget no order meets raises the file order's BudgetError."""
    from emitter.errors import BudgetError

    best: tuple[tuple[int, int], list[int], Choice] | None = None
    error: BudgetError | None = None
    goal = Goal(memory, ram_budget, budget_src, 0)  # its key: the base does not enter it
    for k, order in enumerate(orders(g)):
        g2, p2 = reorder(g, order), tuple(prepared[i] for i in order)
        try:
            c = search(g2, p2, [p.scratch for p in p2], align, isa, memory, ram_budget, budget_src, core)
        except BudgetError as e:
            error = error or e
            continue
        key = goal.key(g2, c.chosen)
        if k > 0:
            c = replace(c, why=f"{c.why}; the layers run in a memory-aware order, not the file's "
                                  "(emitter/plan/order.py)")
        if best is None or key < best[0]:
            best = (key, order, c)
        if k == 0 and len(c.candidates) == 1:  # the whole-layer plan fits: nothing else to weigh
            break
    if best is None:
        assert error is not None
        raise error
    return best[1], best[2]


def peak_steps(g: Graph, p: Plan) -> frozenset[int]:
    """The steps at which the arena's highest byte is in use (the layers that set it)."""
    tops = [max((b.offset + b.size for b in p.buffers if b.first <= step <= b.last), default=0)
            for step in range(len(g.nodes))]
    return frozenset(s for s, t in enumerate(tops) if t == max(tops, default=0))


def peak_layer(g: Graph, p: Plan) -> str:
    """The first layer at which the arena's highest byte is in use (the layer that sets it)."""
    if not p.buffers:
        return "no layer (the arena is empty)"
    step = min(peak_steps(g, p))
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
        steps = [s.step for s in seg.stages] if seg is not None else []
        band_rows = seg.height(steps.index(k)) if seg is not None and k in steps else 1
        row: dict[str, Any] = {"index": k, "name": node.name, "mode": mode,
                               "band_rows": band_rows if mode != "whole" else None,
                               "recompute": 1.0,  # streamed rows are computed once: no halo recomputation
                               "buffer": None if b is None else {"name": b.name, "offset": b.offset, "bytes": b.size,
                                                                 "first": b.first, "last": b.last}}
        if seg is not None and k in seg.lean:
            row["lean"] = True  # the twin's LEAN_C: the generic path, the least scratch
        if seg is not None and mode == "rows":
            row["segment"] = [seg.first, seg.last]
            if k == seg.last and seg.stages[-1].sink:
                row["accumulator_bytes"] = seg.acc_bytes
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
