"""Segment proposals for the plan search (emitter/plan/search.py): which runs of layers may stream
into each other, the stages of a segment, its estimated peak bytes and instruction overhead, and
the dynamic programme that picks segments over a run for a peak limit.

The estimates only propose: search.candidates() plans each proposal for real (emitter/plan/arena.py).
The instruction figures come from the core's cost table where it has the layer's kernel (conv and
depthwise: layer_costs(), each row call predicted as its own band shape on the path it takes, the
lean generic path included), else from constants fitted on QEMU counts (benchmarks/memory.py,
docs/memory.md).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, cast

from emitter.backends.cost_cases import band_path, lean_call
from emitter.calls import Prepared
from emitter.ir import Graph
from emitter.kernels.base import Windowed
from emitter.plan.arena import Plan
from emitter.plan.stream import Segment, Stage, band_params, make_segment, stage_of
from emitter.plan.views import roots

CALL_INSTRUCTIONS = 3000  # a row call: band params, checks, the kernel's per-call set-up (fitted on QEMU counts)
WEIGHT_PASS_INSTRUCTIONS = 30.0  # per filter element and call, divided by the positions of a row: a
#   row call reads every weight once per pass over too few positions, so its cost falls with the
#   row's width. Fitted on cortex-m7 QEMU counts (benchmarks/memory.py, docs/memory.md): 7 per
#   element and call at 5 positions (KWS), 0.6 at 32 (IC)
MOVE_INSTRUCTIONS_PER_BYTE = 0.4  # memcpy of a model's input into the arena (run(): word copies)
# mcu_move_up_s8 / mcu_move_down_s8 per byte moved (a homing call's output, a ring's held rows): Thumb-2
# (the DSP and MVE cores) an LDM and an STM a 16 bytes (QEMU, cortex-m7: 2,523 instructions for 8,000
# bytes); else four loads and stores and the loop
MOVE_PER_BYTE = {"dsp": 0.32, "mve": 0.32, "c": 0.75, "any": 0.75}
# extra instructions per MAC of a lean (generic path) call over the fast path it replaces, fitted on
#   KWS and IC (benchmarks/memory.py): 0.6-1.0 on cortex-m7, 0.01-0.11 on cortex-m55
LEAN_EXTRA_PER_MAC = {"mve": 0.15, "dsp": 0.9, "c": 0.0, "any": 0.9}
# Lean calls where the core's table has no rows of them (lean_call(): `python scripts/cost_tables.py
#   --planner` measures them), over their path's table counts:
# mcu_conv2d_s8_lean's DSP variant (two positions a pass, channel pairs), per position each computes
#   (PASS_POSITIONS): QEMU, KWS's 1x1 layers by rows on cortex-m4 (5 positions a row: the fast call
#   47,293 a row, the lean call ~36,800) and micro_speech's first conv (20 a row): 1.0-1.04
LEAN_DSP_FACTOR = 1.04
# mcu_conv2d_s8_lean's MVE variant with the build-time constants (groups of 16 channels a pass) over the
#   MVE path's table counts: QEMU, KWS's whole layers on cortex-m55, 158,025 against 141,537 (1x1) and
#   190,702 against 173,701 (its first conv, gathered windows); the tables have no rows of it
LEAN_MVE_FACTOR = 1.11
# a whole lean call of a 3x3 depthwise layer the DSP path runs by row pairs (the lean variant: single
#   rows, shifted windows) over the layer's count: QEMU, KWS's depthwise layers in place on cortex-m4,
#   388,219 against 315,492
LEAN_DW_PAIRS_FACTOR = 1.23
# A streamed segment's sink (a pool or fully connected layer taking the rows as they come: Stage.sink),
#   per call beyond its whole-layer count: QEMU, micro_speech's fully connected layer fed by rows on
#   cortex-m4, 30.6k against 24.1k whole in 25 calls (the global pool of KWS costs less by rows)
SINK_CALL_INSTRUCTIONS = 260
MAX_SEGMENT = 12  # layers per streamed segment
HEIGHTS = (1, 2, 4, 8)  # band heights the search tries: output rows a layer of a segment makes per call
# mcu_conv2d_s8's DSP path computes 4 output positions a pass, its last pass over a call's positions
#   overlapping the one before (mcu_runtime/kernels/mcu_conv2d_s8_dsp.c), and its lean DSP variant 2: a
#   band of 5 positions computes 8 on the fast path, 6 on the lean one (lean_band without lean rows)
PASS_POSITIONS = {("mcu_conv2d_s8", "dsp"): (4, 2)}  # (fast, lean)
# A convolution with its residual Add fused (mcu_conv2d_add_s8): its conv's count plus this per output
#   element. QEMU, IC's first residual layer against the conv of the same shape before it: 60 on
#   cortex-m4/m7 (DSP), 13 on cortex-m55 (MVE); 90-106 on rv32imac (plain C)
FUSED_ADD_PER_OUTPUT = {"mve": 13, "dsp": 60, "c": 100, "any": 100}
# A residual Add on its own (mcu_add_s8: a plan that runs the convolution by rows unfuses it), per
#   output element, on its fast path (full operands): QEMU, 10.5 on cortex-m55, 53 on m4/m7, 62 on
#   m3 and 229 on m0+ (tests/kernels/test_add_cores.py's shapes)
ADD_PER_OUTPUT = {"mve": 11, "dsp": 53, "c": 100, "any": 100}
# An average pool (mcu_avgpool_s8), per input element: QEMU, the global pools of KWS (25x5x64), IC
#   (8x8x64) and VWW (3x3x256): 7.5-8.2 on cortex-m4/m7 (11.8 on VWW's, whose windows are short),
#   5.6-6.0 on cortex-m55 (10)
AVGPOOL_PER_INPUT = {"mve": 6, "dsp": 8}


@cache
def cost_rows(core: str, isa: str) -> tuple[Any, ...]:
    """mcugen's own counts ("ours") of the core's committed cost table (emitter/backends/cost_tables;
    the Arm tables hold CMSIS-NN's beside them), else of the table of a core with the same ISA."""
    from emitter.backends import kernel_choice as kc

    f = kc.TABLES / f"{core}.json"
    if not f.is_file():
        if isa not in kc.SAME_ISA or core == kc.SAME_ISA[isa]:
            return ()
        return cost_rows(kc.SAME_ISA[isa], isa)
    return tuple(kc.Cost(kc.Shape.from_list(r["shape"]), r["path"], r["ours"])
                 for r in json.loads(f.read_text())["cases"])


def base_estimate(prepared: tuple[Prepared, ...], core: str, isa: str, per_mac: float, per_call: int) -> int | None:
    """Instructions of the whole-layer plan on `core`, the base of every overhead ratio: each conv,
    depthwise and fully connected layer from the core's cost table (kernel_choice.predict_ours: the
    line fitted on the table's cases, corrected by its nearest ones; a CMSIS-NN call at the price its
    conversion gave it, Prepared.instructions; a fused residual Add as
    FUSED_ADD_PER_OUTPUT per output; an Add on its own as ADD_PER_OUTPUT per output; an average pool
    as AVGPOOL_PER_INPUT per input element), any other layer per_mac x its MACs + per_call. None: no
    table for the core's ISA."""
    from emitter.backends import kernel_choice as kc
    from emitter.backends.cost_cases import shape_of

    rows = cost_rows(core, isa) if core else ()
    if not rows:
        return None
    total = 0
    for p in prepared:
        got, extra, layer = None, 0, p
        if p.kernel == "mcu_conv2d_add_s8" and p.params is not None:
            params: Any = p.params
            o = params.conv.output
            layer = replace(p, kernel="mcu_conv2d_s8", params=params.conv)
            extra = FUSED_ADD_PER_OUTPUT.get(isa, FUSED_ADD_PER_OUTPUT["any"]) * o.n * o.h * o.w * o.c
        if p.instructions:  # a CMSIS-NN call, priced by the conversion (cmsis_nn.price); a layer it runs
            got = p.instructions  # on bands (cmsis_nn.Banded) as mcugen's, as its band calls are estimated
        elif p.kernel == "mcu_add_s8" and p.params is not None:
            got = ADD_PER_OUTPUT.get(isa, ADD_PER_OUTPUT["any"]) * cast(Any, p.params).size + per_call
        elif p.kernel == "mcu_avgpool_s8" and isa in AVGPOOL_PER_INPUT:
            got = AVGPOOL_PER_INPUT[isa] * p.macs + per_call
        elif layer.kernel in ("mcu_conv2d_s8", "mcu_depthwise_conv2d_s8", "mcu_fully_connected_s8"):
            shape = shape_of(layer)
            got = kc.predict_ours(rows, shape, kc.path_of(layer, isa)) if shape is not None else None
        total += got + extra if got is not None else int(p.macs * per_mac) + per_call
    return total


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


@dataclass(frozen=True)
class LayerCost:
    """A layer's instructions from the core's cost table: whole on its fast path, whole on the
    generic (lean) path, and by rows (one call per output row, each row's band shape) on either;
    `bands`: by bands of h rows (h > 1 of HEIGHTS: one call per band, each its own band shape),
    (fast, lean) per h."""
    whole: int
    whole_lean: int
    rows: int
    rows_lean: int
    bands: tuple[tuple[int, int, int], ...] = ()  # (h, fast, lean)
    whole_wide: int = 0  # whole on the lean call's faster variant, given wide_room bytes (0: none)
    wide_room: int = 0
    bands_wide: tuple[tuple[int, int], ...] = ()  # (h, instructions) by bands of h rows on its MVE groups,
    band_wide_room: int = 0  # which a band's lean call takes with this much scratch (0: never)

    def lean_at(self, room: int) -> int:
        """A whole lean call with `room` bytes of scratch: its faster variant where that holds it."""
        return self.whole_wide if self.wide_room and room >= self.wide_room else self.whole_lean

    def by_bands(self, h: int, lean: bool, wide: bool = False) -> int:
        """Instructions by bands of h rows (1: by rows); lean: on the lean call's path, wide: its faster
        variant (the room of the band calls holds it: lean_band_wide)."""
        got = next((b for b in self.bands if b[0] == h), None) if h > 1 else None
        if h > 1 and got is None:  # h beyond the table's: as the largest predicted
            got = max(self.bands, default=(1, self.rows, self.rows_lean))
        fast, slow = (self.rows, self.rows_lean) if got is None else got[1:]
        if lean and wide:
            return next((b[1] for b in self.bands_wide if b[0] == (got[0] if got else 1)), slow)
        return slow if lean else fast


Costs = dict[int, LayerCost]  # step -> its table costs (layers the table has)
TABLE_KERNELS = ("mcu_conv2d_s8", "mcu_depthwise_conv2d_s8")
_PREDICTED: dict[tuple[str, str, Any, str], int | None] = {}


def predicted(core: str, isa: str, shape: Any, path: str) -> int | None:
    """kernel_choice.predict_ours on the core's table, cached per shape and path."""
    from emitter.backends import kernel_choice as kc

    key = (core, isa, shape, path)
    if key not in _PREDICTED:
        _PREDICTED[key] = kc.predict_ours(cost_rows(core, isa), shape, path)
    return _PREDICTED[key]


MIN_PLANNER_ROWS = 40  # planner rows of a kind and path the table needs before they predict (else its layers')


@cache
def planner_rows(core: str, isa: str, kind: str, path: str) -> int:
    """How many rows of `kind` on `path` the core's table holds (the planner's: a band path, a lean call's)."""
    return sum(1 for r in cost_rows(core, isa) if r.shape.kind == kind and r.path == path)


def band_predicted(core: str, isa: str, shape: Any, path: str) -> int | None:
    """A band call's instructions on `path`: from the table's band rows of that path (band_path: measured
    with the band calls' build-time constants) where the table has MIN_PLANNER_ROWS of them (on the
    generic path, else the lean call's generic band rows: the same loops), else from its layers' rows."""
    for rows in (band_path(path), band_path(lean_call(path)) if path == "generic" else ""):
        if rows and planner_rows(core, isa, shape.kind, rows) >= MIN_PLANNER_ROWS:
            return predicted(core, isa, shape, rows)
    return predicted(core, isa, shape, path)


def whole_lean(core: str, isa: str, shape: Any, slow: str, slower: float) -> int | None:
    """A whole layer's instructions through its lean call with the least scratch: from the table's rows
    of lean calls that took its path (lean_call(slow), measured as such) where it has MIN_PLANNER_ROWS
    of them, else its layers' rows of the lean call's path (lean_path_of: `slow`, times `slower`; a 3x3
    depthwise layer the DSP path runs by row pairs times LEAN_DW_PAIRS_FACTOR: its lean call takes
    single rows)."""
    if planner_rows(core, isa, shape.kind, lean_call(slow)) >= MIN_PLANNER_ROWS:
        return predicted(core, isa, shape, lean_call(slow))
    got = predicted(core, isa, shape, slow)
    if got is None:
        return None
    pairs = shape.kind == "dw" and slow == "dsp" and shape.kh == shape.kw == 3 and shape.sh == shape.dh == 1 \
        and shape.out_h > 1
    return int(got * slower * (LEAN_DW_PAIRS_FACTOR if pairs else 1.0))


def lean_band(core: str, isa: str, shape: Any, n: int, slow: str, slower: float,
              passes: tuple[int, int]) -> int | None:
    """A band call's instructions through its lean call with the least scratch: from the table's band
    rows of lean calls that took its path (lean_call(slow), measured as such) where it has them, else
    the layers' rows of the lean call's path (lean_path_of: `slow`, times `slower`) and the positions
    its passes compute of the band's n against the fast path's (PASS_POSITIONS)."""
    lean = band_path(lean_call(slow))
    got = predicted(core, isa, shape, lean) if planner_rows(core, isa, shape.kind, lean) >= MIN_PLANNER_ROWS \
        else None
    if got is not None:
        return got
    got = predicted(core, isa, shape, slow)
    if got is None:
        return None
    return int(got * slower) * (-(-n // passes[1]) * passes[1]) // (-(-n // passes[0]) * passes[0])


def layer_costs(prepared: tuple[Prepared, ...], core: str, isa: str) -> Costs:
    """Table costs of every conv and depthwise layer (emitter/backends/cost_tables: mcugen's counts per
    core, fast and generic paths). A row call is predicted as the convolution of that one output row
    (its twin's band(): its input rows, its own padding), so the per-call set-up and the positions a
    short row wastes come from the table, per kernel, path and core."""
    from emitter.backends import kernel_choice as kc
    from emitter.backends.cost_cases import shape_of
    from emitter.kernels import kernel as twin

    if not core or not cost_rows(core, isa):
        return {}
    out: Costs = {}
    for k, p in enumerate(prepared):
        band: Any = twin(p.kernel).band if p.kernel in TABLE_KERNELS and p.params is not None else None
        shape = shape_of(p) if band is not None else None
        if band is None or shape is None:
            continue
        fast, params = kc.path_of(p, isa), cast(Any, p.params)
        slow, slower = lean_path_of(p, isa)
        whole, lean = predicted(core, isa, shape, fast), whole_lean(core, isa, shape, slow, slower)
        by: list[tuple[int, int, int]] = []
        passes = PASS_POSITIONS.get((p.kernel, fast), (1, 1)) if slow == fast else (1, 1)
        for h in HEIGHTS:
            fast_sum = lean_sum = 0
            for o in range(0, params.output.h, h):
                bp = replace(p, params=band(params, o, min(o + h, params.output.h))[0])
                bs = shape_of(bp)
                n = (min(o + h, params.output.h) - o) * params.output.w
                # the band's own fast path (a band of few positions may not take the layer's)
                rf = band_predicted(core, isa, bs, kc.path_of(bp, isa)) if bs is not None else None
                rl = lean_band(core, isa, bs, n, slow, slower, passes) if bs is not None else None
                if rf is None or rl is None:
                    fast_sum = -1
                    break
                fast_sum, lean_sum = fast_sum + rf, lean_sum + rl
            if fast_sum < 0:
                if h == 1:
                    break
                continue
            by.append((h, fast_sum, lean_sum))
        if whole is None or lean is None or not by or by[0][0] != 1:
            continue
        wide_room, wide_path, wider = wide_lean_of(p, isa)
        got = predicted(core, isa, shape, wide_path) if wide_room else None
        band_room = band_wide_room(p, isa) if slow == "generic" and fast == "mve" else 0
        out[k] = LayerCost(whole, lean, by[0][1], by[0][2], tuple(by[1:]),
                           int(got * wider) if got is not None else 0, wide_room if got is not None else 0,
                           tuple((h, int(f * LEAN_MVE_FACTOR)) for h, f, _ in by) if band_room else (), band_room)
    return out


def band_wide_room(p: Prepared, isa: str) -> int:
    """The least scratch with which a convolution's lean call on a band of one row takes its MVE groups
    instead of the generic path (mcu_conv2d_s8_lean_room_path, asked of the C), 0 where none does."""
    from emitter.backends.kernel_choice import bias_of
    from emitter.kernels import mcu_conv2d_s8 as conv_twin

    if p.kernel != "mcu_conv2d_s8":
        return 0
    params, bias = band_params(p), bias_of(p)
    mid = params.output.h // 2
    bp = conv_twin.band(params, mid, mid + 1)[0]
    lo, hi = conv_twin.lean_buffer_size(bp, bias, isa), conv_twin.lean_wide_buffer_size(bp, bias, isa)
    if conv_twin.lean_path_with(bp, bias, isa, hi) == "generic":
        return 0
    while lo < hi:  # the path given the room is monotone: more room, a faster call
        m = (lo + hi) // 2
        lo, hi = (lo, m) if conv_twin.lean_path_with(bp, bias, isa, m) != "generic" else (m + 1, hi)
    return hi


def lean_path_of(p: Prepared, isa: str) -> tuple[str, float]:
    """The path a layer's lean call takes on `isa` (mcu_conv2d_s8, mcu_depthwise_conv2d_s8: their
    twins' lean_path; else the generic path), and the factor on that path's table counts: the
    convolution's lean DSP variant (two positions a pass, channel pairs) runs LEAN_DSP_FACTOR times
    the table's DSP rows (four positions a pass), its MVE variant (groups of channels) LEAN_MVE_FACTOR
    times the MVE rows; the depthwise one (the DSP path's single rows, or the MVE path from its build-time
    groups) is that path's own rows."""
    from emitter.backends.kernel_choice import bias_of
    from emitter.kernels import mcu_conv2d_s8 as conv_twin
    from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin

    if p.kernel == "mcu_depthwise_conv2d_s8":  # with its build-time groups, as the lean call runs
        return dw_twin.lean_path(band_params(p), bias_of(p), isa), 1.0
    if p.kernel != "mcu_conv2d_s8":
        return "generic", 1.0
    path = conv_twin.lean_path(band_params(p), bias_of(p), isa)
    return path, LEAN_DSP_FACTOR if path == "dsp" else LEAN_MVE_FACTOR if path == "mve" else 1.0


def wide_lean_of(p: Prepared, isa: str) -> tuple[int, str, float]:
    """(room, path, factor) of a convolution's lean call with the scratch of its faster variant
    (mcu_conv2d_s8_lean_wide_buffer_size: its MVE groups where its least scratch is the generic
    path's), as lean_path_of; (0, "", 1.0) where it has none beyond its least."""
    from emitter.backends.kernel_choice import bias_of
    from emitter.kernels import mcu_conv2d_s8 as conv_twin

    if p.kernel != "mcu_conv2d_s8" or isa not in ("dsp", "mve"):
        return 0, "", 1.0
    params = band_params(p)
    room = conv_twin.lean_wide_buffer_size(params, bias_of(p), isa)
    if room <= conv_twin.lean_buffer_size(params, bias_of(p), isa):
        return 0, "", 1.0
    path = conv_twin.lean_path_with(params, bias_of(p), isa, room)
    return room, path, LEAN_DSP_FACTOR if path == "dsp" else LEAN_MVE_FACTOR if path == "mve" else 1.0


def calls_of(s: Stage, h: int) -> int:
    """Kernel calls of a stage by bands of h rows."""
    return -(-s.out_rows // h)


def overhead(seg: Segment, isa: str, costs: Costs | None = None) -> int:
    """Estimated extra instructions of running the segment by rows instead of whole layers (and
    of its scratch-free calls on the slower generic path): from the table's row calls where it has
    the layer (layer_costs), else CALL_INSTRUCTIONS and WEIGHT_PASS_INSTRUCTIONS per extra call."""
    costs = costs or {}
    extra = 0.0
    for i, s in enumerate(seg.stages):
        c, h = costs.get(s.step), seg.height(i)
        calls = calls_of(s, h)
        # a fed segment's first layer runs its fast call on the bands whose ctx has room (stream.fed)
        slow = 1.0 - seg.feed_fast if i == 0 and seg.feed else 1.0
        if c is not None and not s.sink:
            wide = bool(c.band_wide_room) and seg.scratch >= c.band_wide_room
            lean = c.by_bands(h, True, wide) if s.step in seg.lean else c.by_bands(h, False)
            bands = slow * lean + (1.0 - slow) * c.by_bands(h, False)
            extra += bands - c.whole  # (below 0 where the bands are predicted cheaper: a sink, a short layer)
        elif s.sink:
            extra += (calls - 1) * SINK_CALL_INSTRUCTIONS
        else:
            per_call = CALL_INSTRUCTIONS + WEIGHT_PASS_INSTRUCTIONS * filter_elements(s) / (row_width(s) * h)
            extra += (calls - 1) * per_call
            if s.step in seg.lean:
                extra += slow * lean_macs(seg, s) * LEAN_EXTRA_PER_MAC.get(isa, LEAN_EXTRA_PER_MAC["any"])
    return int(extra + seg.sim.moved * MOVE_PER_BYTE.get(isa, MOVE_PER_BYTE["any"]))


def lean_macs(seg: Segment, s: Stage) -> int:
    """The MACs of one lean stage (the segment counts them together: its share by filter size)."""
    lean = [x for x in seg.stages if x.step in seg.lean]
    weights = [max(1, filter_elements(x) * x.out_rows * row_width(x)) for x in lean]
    return int(seg.slow_macs * weights[lean.index(s)] / sum(weights)) if s in lean else 0


def lean_cost(seg: Segment, isa: str, costs: Costs | None = None) -> int:
    """Estimated extra instructions of the segment's lean calls when its layers run whole."""
    costs = costs or {}
    extra = 0.0
    for s in seg.stages:
        if s.step not in seg.lean:
            continue
        c = costs.get(s.step)
        extra += max(0, c.lean_at(seg.scratch) - c.whole) if c is not None else \
            lean_macs(seg, s) * LEAN_EXTRA_PER_MAC.get(isa, LEAN_EXTRA_PER_MAC["any"])
    return int(extra)


def others(g: Graph, layer: Plan) -> Callable[[Segment], int]:
    """The bytes of whole-layer tensors live during a segment that are none of its own (e.g. a
    skip connection): they add to its peak."""
    def live(seg: Segment) -> int:
        own = {layer.root.get(n, n) for s in seg.stages for n in (*s.inputs, s.output)}
        return max(sum(b.size for b in layer.buffers if b.first <= step <= b.last and b.name not in own
                       and b.kind == "tensor") for step in range(seg.first, seg.last + 1))
    return live


SegmentCache = dict[tuple[tuple[int, ...], bool, bool, int], Segment | None]


def whole_estimate(g: Graph, prepared: tuple[Prepared, ...], step: int) -> int:
    """A layer run whole: its activations (inputs and output) and its scratch."""
    node = g.nodes[step]
    acts = {n for n in (*node.inputs, *node.outputs) if n and not g.t(n).is_const}
    return sum(g.t(n).nbytes for n in acts) + prepared[step].scratch


def streamed(g: Graph, prepared: tuple[Prepared, ...], isa: str, limit: int | None,
             tight: bool = False, other: Callable[[Segment], int] = lambda seg: 0,
             trust_overlap: bool = True, plain: bool = False, cache: SegmentCache | None = None,
             lean: bool = False, costs: Costs | None = None, spread: bool = False) -> list[Segment]:
    """Segments over every run: the fewest overhead whose estimated peaks stay within `limit`
    (None: the smallest estimated peak, then the fewest overhead). tight: rings of the fewest
    rows (more moves). trust_overlap=False: a single layer is estimated without its overlap, which
    the placement may not realise, so longer segments win. plain: a layer may also stay whole (no
    segment, no overhead), so layers whose rows save nothing cost nothing. lean: layers whose twin has a
    LEAN_C call it where that saves scratch. A segment of several layers is offered at every band
    height of HEIGHTS (its layers making that many rows a call; bigger rings, fewer calls), so the
    limit picks the height with the fewest overhead that fits, and no limit the smallest peak (spread: of
    those, the least sum of the segments' peaks before the fewest overhead)."""
    cache = {} if cache is None else cache
    chosen: list[Segment] = []
    for run in runs(g, prepared):
        n = len(run)
        segs: dict[tuple[int, int], list[Segment]] = {}
        for i in range(n):
            for j in range(i, min(n, i + MAX_SEGMENT)):
                for h in HEIGHTS if j > i else (1,):
                    key = (tuple(run[i:j + 1]), tight, lean, h)
                    if key not in cache:
                        st = stages(g, prepared, run[i:j + 1])
                        seg = None if st is None else make_segment(
                            st, prepared, isa, (lambda rows: 0) if tight else (lambda rows: rows), lean, h)
                        cache[key] = seg if seg is not None and (h == 1 or seg.heights) else None
                    if cache[key] is not None:
                        segs.setdefault((i, j), []).append(cache[key])  # type: ignore[arg-type]
        # best[j] = (peak, overhead, the sum of its segments' peaks, segments) of run[:j]; no limit: the
        #   smallest peak, then the fewest overhead, or (spread) the smallest sum of peaks first (every
        #   segment as small as it goes, not only the one at the peak: the estimates are rough)
        best: list[tuple[int, int, int, list[Segment]] | None] = [(0, 0, 0, [])] + [None] * n
        for j in range(1, n + 1):
            for i in range(j):
                prev = best[i]
                if prev is None:
                    continue
                options: list[tuple[int, int, list[Segment]]] = []
                for seg in segs.get((i, j - 1), []):
                    options.append((estimate(seg, trust_overlap) + other(seg), overhead(seg, isa, costs), [seg]))
                if plain and i == j - 1:
                    one = segs[i, i][0] if (i, i) in segs else None
                    options.append((whole_estimate(g, prepared, run[i]) + (other(one) if one else 0), 0, []))
                for est, ovh, add in options:
                    peak, cost, total = max(prev[0], est), prev[1] + ovh, prev[2] + est
                    if limit is not None and peak > limit:
                        continue
                    key2 = (cost, peak, 0) if limit is not None else (peak, total, cost) if spread else (peak, cost, 0)
                    old = best[j]
                    if old is None or key2 < ((old[1], old[0], 0) if limit is not None else
                                              (old[0], old[2], old[1]) if spread else (old[0], old[1], 0)):
                        best[j] = (peak, cost, total, [*prev[3], *add])
        final = best[n]
        if final is None:  # no way under the limit: the smallest
            return streamed(g, prepared, isa, None, tight, other, trust_overlap, plain, cache, lean, costs, spread) \
                if limit is not None else []
        if limit is not None:
            final = (final[0], final[1], final[2], [raise_heights(seg, g, prepared, isa, limit, tight, other,
                                                                  trust_overlap, lean, costs) for seg in final[3]])
        chosen += final[3]
    return chosen


def raise_heights(seg: Segment, g: Graph, prepared: tuple[Prepared, ...], isa: str, limit: int, tight: bool,
                  other: Callable[[Segment], int], trust_overlap: bool, lean: bool, costs: Costs | None) -> Segment:
    """The segment with taller bands where they pay (greedy): each round, of the layers whose band
    height may double (up to the layer's height), the one that saves the most estimated overhead per byte
    its estimated peak grows, while that peak stays within `limit`; until none saves any."""
    if len(seg.stages) < 2:
        return seg
    st = list(seg.stages)
    cur, cost = seg, overhead(seg, isa, costs)
    hs = [seg.height(i) for i in range(len(st))]
    slack: Callable[[int], int] = (lambda rows: 0) if tight else (lambda rows: rows)
    while True:
        best: tuple[float, Segment, list[int], int] | None = None
        peak = estimate(cur, trust_overlap) + other(cur)
        for i, s in enumerate(st):
            if s.sink or hs[i] >= s.out_rows:
                continue
            trial = [*hs]
            trial[i] = min(2 * hs[i], s.out_rows)
            got = make_segment(st, prepared, isa, slack, lean, tuple(trial))
            if got is None or tuple(got.heights or (1,) * len(st)) != tuple(trial):
                continue
            c2, p2 = overhead(got, isa, costs), estimate(got, trust_overlap) + other(got)
            if c2 >= cost or p2 > limit:
                continue
            score = (cost - c2) / max(1, p2 - peak)
            if best is None or score > best[0]:
                best = (score, got, trial, c2)
        if best is None:
            return cur
        _, cur, hs, cost = best


def singles(g: Graph, prepared: tuple[Prepared, ...], isa: str, lean: bool = False) -> list[Segment]:
    out = []
    for run in runs(g, prepared):
        for k in run:
            st = stages(g, prepared, [k])
            seg = None if st is None else make_segment(st, prepared, isa, lean=lean)
            if seg is not None:
                out.append(seg)
    return out
