"""Row-band execution: which layers can run a band of output rows at a time, and what running a
chain of them row by row ("a segment") costs and allows.

A segment is a run of consecutive layers L0..Ln-1, each reading the previous one's output on the
rows its window needs (its twin's band()). It runs as one loop, one kernel call per band of rows
(each layer's band height `h`, Segment.heights: 1 by default; the last band may be shorter): each
step the layer nearest the end whose next band's input rows are made makes that band, so rows are
consumed as soon as they can be (depth first). A layer's output inside the segment never exists
whole: it lives in a ring of `cap` rows (mcu_runtime/support/mcu_band.c) that drops the rows its
consumer has passed. The first
layer reads a whole tensor; so do the "side" operands of an add; the last layer writes a whole
tensor.

`simulate()` replays the generated loop exactly (rows, rings, moves) and derives what the
planner may overlap: the last layer's output may lie *below* a tensor the segment reads for the
last time by `down` bytes or more (rows are written top to bottom, behind the reads), and a
one-layer segment run bottom to top may lie *above* it by `up` bytes or more.

Eligible kernels are those whose twin declares a band rule (emitter/kernels/base.py: band, or
row_band for an element-wise kernel) and its band_c; an exact_in_place twin (element i read before
element i is written) may write exactly over its operand in one whole call. A twin declaring a
sink (fully connected, global average pool) may end a
segment as a "sink": it adds each row of its input into int32 accumulators as soon as the row is
made and writes its output once, after the last row (mcu_runtime/support/mcu_sink.h), so the
rows feeding it never exist whole.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from emitter.backends.kernel_choice import bias_of
from emitter.calls import ConstArg, Prepared
from emitter.ir import Graph
from emitter.kernels import ISAS
from emitter.kernels import kernel as twin
from emitter.kernels.base import Windowed
from emitter.plan.views import roots


def can_stream(p: Prepared) -> bool:
    """The layer's kernel can run by rows or end a streamed chain (a band kernel or a sink)."""
    return twin(p.kernel).can_stream


def exact_in_place(kernel: str) -> bool:
    """The kernel's twin says element i is read before element i is written (exact_in_place; a
    kernel without a Python twin states no rule)."""
    return twin(kernel).exact_in_place


@dataclass(frozen=True)
class InPlace:
    """A layer's whole call that writes its output over its main input (its twin's in_place)."""
    down: int  # bytes below the input where the output may start at most (0: exactly on it)
    exact: bool = False  # there and nowhere lower (the twin's in_place_exact)
    call: str = ""  # the C function of that call ("": the layer's own)
    scratch: int = 0  # that call's scratch (with `call`)
    cost: int = 0  # its estimated extra instructions (search.with_cost)
    home: bool = False  # writes `down` below its input, then moves the output up exactly onto it


_CONSTANTS: dict[int, tuple[Prepared, Any]] = {}  # id(layer) -> (layer, its params with the constants)
_CONSTANTS_MOST = 4096  # layers remembered (a long session compiles many models)


def band_params(p: Prepared) -> Any:
    """The params of a layer a segment calls band by band, or by its lean call: with the constants
    its twin computes at build time for such a layer (Kernel.band_constants; the generated code
    carries them, and the C is asked about these params), else its own. Remembered per layer."""
    got = _CONSTANTS.get(id(p))
    if got is not None and got[0] is p:
        return got[1]
    hook = twin(p.kernel).band_constants
    f, b = p.operands.get("filter"), p.operands.get("bias")
    if hook is None or p.params is None:
        return p.params
    assert isinstance(f, ConstArg), f"{p.kernel}: a layer called by bands or lean has a constant filter"
    out = hook(p.params, f.data, b.data if isinstance(b, ConstArg) else None)
    if len(_CONSTANTS) >= _CONSTANTS_MOST:
        _CONSTANTS.clear()
    _CONSTANTS[id(p)] = (p, out)
    return out


def _ours(p: Prepared, isa: str) -> bool:
    """A whole call of the layer is mcugen's own code on a known path: not fused with what follows,
    a board's isa (not "any": the path is not known), not run through CMSIS-NN (cmsis_nn.Banded)."""
    return not p.then and p.params is not None and isa in ISAS and p.is_portable


def in_place_call(p: Prepared, isa: str) -> InPlace | None:
    """How the layer's own whole call may write its output over its main input (its twin's in_place:
    a pointwise or depthwise convolution), None where it may not."""
    t = twin(p.kernel)
    if t.in_place is None or not _ours(p, isa):
        return None
    down = t.in_place(p.params, bias_of(p), isa)
    return None if down is None else InPlace(down, t.in_place_exact)


def lean_in_place_call(p: Prepared, isa: str) -> InPlace | None:
    """The layer's lean call (its twin's lean_c) over its main input (its twin's lean_in_place), None
    where there is none; with the scratch of its faster variant where the twin has one
    (lean_wide_buffer_size: a convolution's lean call writes over its input only with the room for
    its MVE groups), else the least (lean_buffer_size)."""
    t = twin(p.kernel)
    if t.lean_in_place is None or not t.lean_c or t.lean_buffer_size is None or not _ours(p, isa):
        return None
    params = band_params(p)
    down = t.lean_in_place(params, bias_of(p), isa)
    if down is None:
        return None
    size = t.lean_wide_buffer_size if t.lean_wide_buffer_size is not None else t.lean_buffer_size
    return InPlace(down, t.in_place_exact, t.lean_c, size(params, bias_of(p), isa))


def in_place_c_call(p: Prepared, isa: str) -> InPlace | None:
    """The layer's call through its twin's in_place_c (a depthwise one channel block by block):
    exactly over its main input, with its scratch; None where there is none."""
    t = twin(p.kernel)
    if not t.in_place_c or not _ours(p, isa):
        return None
    assert t.in_place_buffer_size is not None, f"{p.kernel}: in_place_c without its scratch"
    scratch = t.in_place_buffer_size(p.params, bias_of(p), isa)
    return None if scratch is None else InPlace(0, call=t.in_place_c, scratch=scratch)


@dataclass(frozen=True, eq=False)
class Stage:
    """One layer of a segment."""
    step: int
    kernel: str
    params: Any
    inputs: tuple[str, ...]  # tensors read on the band's rows: the main input first
    output: str
    in_rows: int
    in_row_bytes: tuple[int, ...]  # per input
    out_rows: int
    out_row_bytes: int
    row_size: int = 0  # add: elements per row
    sink: int = 0  # a sink: its int32 accumulators (its "output rows" are the input rows it has added)
    _rows: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict, repr=False)

    def band(self, o0: int, o1: int) -> tuple[Any, int, int]:
        t = twin(self.kernel)
        if self.sink:
            return self.params, o0, o1
        if t.row_band is not None:
            return t.row_band(self.params, self.row_size, o0, o1)
        assert t.band is not None, f"{self.kernel} declares no band rule"
        return t.band(self.params, o0, o1)

    def rows(self, o0: int, o1: int) -> tuple[int, int]:
        """Input rows [lo, hi) of output rows [o0, o1) (cached: the replays ask often)."""
        got = self._rows.get((o0, o1))
        if got is None:
            _, lo, hi = self.band(o0, o1)
            got = self._rows[o0, o1] = (lo, hi)
        return got


def rows_of(g: Graph, name: str) -> tuple[int, int] | None:
    """(rows, bytes per row) of an NHWC activation of batch 1 (4-D physical [1, H, W, C])."""
    from emitter.ops.base import phys

    t = g.t(name)
    if t.layout is None or t.dtype != "int8":
        return None
    shape = phys(g, name)
    if len(shape) != 4 or shape[0] != 1:
        return None
    return shape[1], shape[2] * shape[3]


def sink_of(g: Graph, step: int, p: Prepared, main: str) -> Stage | None:
    """The layer at `step` as a sink reading `main` (or a view of it) row by row, or None."""
    t = twin(p.kernel)
    if t.sink is None or p.then or p.params is None:
        return None
    node = g.nodes[step]
    acts = [n for n in node.inputs if n and not g.t(n).is_const]
    geo = rows_of(g, main)
    root = roots(g)
    if geo is None or len(acts) != 1 or root.get(acts[0]) != root.get(main) \
            or g.t(acts[0]).nbytes != geo[0] * geo[1]:
        return None
    acc = t.sink(p.params, geo[1])
    if acc is None:
        return None
    return Stage(step, p.kernel, band_params(p), (acts[0],), node.outputs[0], geo[0], (geo[1],), geo[0], 0,
                 sink=acc)


def stage_of(g: Graph, step: int, p: Prepared, main: str | None = None) -> Stage | None:
    """The layer at `step` as a segment stage (reading `main` as its main input), or None. A
    layer that can be a sink is one when it reads `main`."""
    if main is not None:
        sink = sink_of(g, step, p, main)
        if sink is not None:
            return sink
    t = twin(p.kernel)
    if not t.by_rows or p.then or p.params is None:
        return None
    node = g.nodes[step]
    names = tuple(n for n in node.inputs if n and not g.t(n).is_const)
    if main is not None:
        if main not in names:
            return None
        names = (main, *(n for n in names if n != main))
    if t.row_band is not None:  # element-wise: rows of the tensors' own geometry
        geo = [rows_of(g, n) for n in (*names, node.outputs[0])]
        if len(names) != 2 or None in geo or len(set(geo)) != 1:
            return None
        h, row = geo[0]  # type: ignore[misc]
        stage = Stage(step, p.kernel, band_params(p), names, node.outputs[0], h, (row, row), h, row, row)
        try:
            stage.band(0, 1)
        except ValueError:  # broadcasting operands: not by rows
            return None
        return stage
    assert isinstance(p.params, Windowed), f"{p.kernel}: a band kernel's params declare their window()"
    window = p.params.window()  # avgpool_requant's: its pool's
    i, o = window.input, window.output
    if len(names) != 1 or i.n != 1 or g.t(names[0]).nbytes != i.h * i.w * i.c \
            or g.t(node.outputs[0]).nbytes != o.h * o.w * o.c:
        return None
    return Stage(step, p.kernel, band_params(p), names, node.outputs[0], i.h, (i.w * i.c,), o.h, o.w * o.c)


@dataclass
class Sim:
    """What running a segment (with the given ring capacities) does."""
    calls: int = 0
    moved: int = 0  # bytes memmove'd by the rings
    down: dict[str, int] = field(default_factory=dict)  # tensor -> most negative allowed offset delta
    peak_rows: list[int] = field(default_factory=list)  # per ring: most rows held at once


def _lowest(stages: list[Stage], done: list[int], tensor: str) -> int | None:
    """The lowest row of `tensor` any stage will still read (None: none will)."""
    low = None
    for i, s in enumerate(stages):
        for k, name in enumerate(s.inputs):
            if name == tensor and (k > 0 or i == 0) and done[i] < s.out_rows:
                lo = s.rows(done[i], done[i] + 1)[0]
                low = lo if low is None else min(low, lo)
    return low


def band_end(s: Stage, h: int, r: int) -> int:
    """The end of the band of (at most) h rows starting at row r (a sink adds one row a call)."""
    return r + 1 if s.sink else min(r + h, s.out_rows)


def ready(stages: list[Stage], done: list[int], i: int, heights: tuple[int, ...] = ()) -> bool:
    """Stage i's next band can be made: the rows it reads of the previous stage are made."""
    h = heights[i] if heights else 1
    return i == 0 or stages[i].rows(done[i], band_end(stages[i], h, done[i]))[1] <= done[i - 1]


def simulate(stages: list[Stage], caps: list[int] | None, heights: tuple[int, ...] = ()) -> Sim | None:
    """Replay the segment loop (rings of `caps` rows; None: unbounded, to measure them; `heights`:
    each stage's band height, () all 1). Returns None when a ring is too small. Each step, the
    stage nearest the end whose next band's input rows are made makes that band (depth first: a
    row is consumed as soon as it can be, so a ring holds little more than its consumer's
    window). Pushing a band of m rows into a ring that cannot take them first drops the rows its
    consumer has passed (mcu_ring_push_rows). Reads the whole tensors: stage 0's main input and
    every side operand (inputs[1:]); every other input is the previous stage's ring."""
    n = len(stages)
    sim = Sim(peak_rows=[0] * (n - 1))
    done = [0] * n
    base, count = [0] * (n - 1), [0] * (n - 1)
    whole = {(i, k): name for i, s in enumerate(stages) for k, name in enumerate(s.inputs) if k > 0 or i == 0}
    while done[-1] < stages[-1].out_rows:
        i = n - 1
        while not ready(stages, done, i, heights):
            i -= 1
        s, r = stages[i], done[i]
        end = band_end(s, heights[i] if heights else 1, r)
        m = end - r
        lo, hi = s.rows(r, end)
        if i > 0 and not (base[i - 1] <= lo and hi <= base[i - 1] + count[i - 1]):
            return None
        sim.calls += 1
        if i < n - 1:
            nxt = stages[i + 1]
            keep = nxt.rows(done[i + 1], done[i + 1] + 1)[0] if done[i + 1] < nxt.out_rows else end
            if caps is not None and count[i] + m > caps[i]:
                drop = keep - base[i]
                if drop <= 0:
                    return None
                if drop < count[i]:
                    sim.moved += (count[i] - drop) * s.out_row_bytes
                    count[i] -= drop
                    base[i] = keep
                else:
                    base[i] += count[i]
                    count[i] = 0
                if count[i] + m > caps[i]:
                    return None
            elif caps is None:  # unbounded: drop what is passed, without moving
                drop = max(0, min(keep - base[i], count[i]))
                base[i] += drop
                count[i] -= drop
            count[i] += m
            sim.peak_rows[i] = max(sim.peak_rows[i], count[i])
        done[i] = end
        if i == n - 1:
            _write_limits(sim, stages, done, whole, r, end)
    return sim


def _write_limits(sim: Sim, stages: list[Stage], done: list[int], whole: dict[tuple[int, int], str],
                  r: int, end: int) -> None:
    """Output rows [r, end) of the last stage were just written, by one call: how far below each
    whole input may the output start (delta = output offset - input offset)? A call of several
    rows writes all of them below the lowest row it reads (an exact-in-place kernel: each row at
    or below its own input rows, as the call goes element by element)."""
    last = stages[-1]
    exact = exact_in_place(last.kernel)
    for (i, k), name in whole.items():
        rb = stages[i].in_row_bytes[k]
        low = _lowest(stages, done, name)
        limit = None if low is None else low * rb - end * last.out_row_bytes
        if i == len(stages) - 1:  # read by this very call
            if exact:
                now = min(last.rows(y, y + 1)[0] * rb - y * last.out_row_bytes for y in range(r, end))
            else:
                now = last.rows(r, end)[0] * rb - end * last.out_row_bytes
            limit = now if limit is None else min(limit, now)
        if limit is not None:
            sim.down[name] = min(sim.down.get(name, limit), limit)


def simulate_up(stage: Stage) -> dict[str, int]:
    """A one-stage segment run from its last row to its first: the smallest delta (output offset -
    input offset) at which the output, written upwards, never lands on input rows still to read."""
    up = 0 - (1 << 40)
    for r in range(stage.out_rows - 1, -1, -1):
        _, hi = stage.rows(r, r + 1)  # this call and every later one read rows below hi
        up = max(up, hi * stage.in_row_bytes[0] - r * stage.out_row_bytes)
    return {stage.inputs[0]: up}


def ring_caps(stages: list[Stage], slack: Callable[[int], int] = lambda rows: rows,
              heights: tuple[int, ...] = ()) -> list[int] | None:
    """Ring capacities: the most rows each ring holds at once (unbounded replay), plus `slack`
    rows (fewer moves); checked by a bounded replay."""
    free = simulate(stages, None, heights)
    if free is None:
        return None
    caps = [rows + slack(rows) for rows in free.peak_rows]
    caps = [min(c, s.out_rows) for c, s in zip(caps, stages, strict=False)]
    return caps if simulate(stages, caps, heights) is not None else None


@dataclass(frozen=True, eq=False)
class Segment:
    """Layers run together by rows (one stage: a layer that may run by bands in place)."""
    stages: tuple[Stage, ...]
    caps: tuple[int, ...]  # ring rows of every stage but the last
    scratch: int  # bytes, shared by the stages' calls (run one after another)
    sim: Sim
    up: dict[str, int]  # one stage: delta limits running upwards
    lean: tuple[int, ...] = ()  # steps that call their twin's lean_c: the generic path, the least scratch
    slow_macs: int = 0  # MACs of those steps (they run slower: memplan's overhead counts them)
    heights: tuple[int, ...] = ()  # per stage: output rows a call makes (its band height); (): 1 each
    feed: int = 0  # its scratch bytes as the lead of its first layer's whole input (fed), else 0: its own buffer
    feed_fast: float = 0.0  # fed: the share of the first layer's bands that run its fast call

    def height(self, i: int) -> int:
        """Stage i's band height (rows a call makes; the last band may be shorter)."""
        return self.heights[i] if self.heights else 1

    @property
    def first(self) -> int:
        return self.stages[0].step

    @property
    def last(self) -> int:
        return self.stages[-1].step

    def whole_inputs(self) -> list[str]:
        return [name for i, s in enumerate(self.stages) for k, name in enumerate(s.inputs) if k > 0 or i == 0]

    def ring_bytes(self) -> int:
        """Its rings and a sink's accumulators."""
        return sum(c * s.out_row_bytes for c, s in zip(self.caps, self.stages, strict=False)) + self.acc_bytes

    @property
    def acc_bytes(self) -> int:
        return 4 * self.stages[-1].sink


@dataclass(frozen=True)
class Schedule:
    """How the planner may run the layers: which run as segments, which layers may write over a
    dying operand in one whole call (element-wise layers exactly; pointwise and depthwise
    convolutions as their in_place says), and whether graph inputs live in the arena."""

    kind: str  # "layer" | "overlap" | "stream"
    segments: tuple[Segment, ...] = ()
    exact: tuple[int, ...] = ()  # steps of exact-in-place kernels that may write over a dying same-size operand
    exact_inputs: tuple[tuple[int, ...], ...] = ()  # per exact step: the node inputs it may lie on (empty: any)
    in_place: tuple[InPlace | None, ...] = ()  # per exact step: its in-place call (None: element-wise, exactly)
    host_inputs: bool = False

    def segment_at(self, step: int) -> Segment | None:
        return next((s for s in self.segments if s.first <= step <= s.last), None)

    def call_at(self, step: int) -> InPlace | None:
        """The in-place call of an exact step that runs whole (in no segment), or None."""
        if step not in self.exact or self.segment_at(step) is not None:
            return None
        return dict(zip(self.exact, self.in_place, strict=False)).get(step)


def band_starts(stage: Stage, h: int) -> list[tuple[int, int]]:
    """The bands of height h to check for scratch: the first, a middle one and the last."""
    starts = list(range(0, stage.out_rows, h))
    return [(r, min(r + h, stage.out_rows)) for r in sorted({starts[0], starts[len(starts) // 2], starts[-1]})]


_SCRATCH: dict[tuple[int, str, bool, int, int, int], tuple[Prepared, int | None]] = {}


def without_lean(seg: Segment, prepared: tuple[Prepared, ...], isa: str, step: int) -> Segment | None:
    """The segment with layer `step` back on its fast call (its own scratch: more bytes, fewer
    instructions), None when a band of it would need more than the layer planned for, or when the
    segment is fed and `step` its first layer (its lean call runs fast where the ctx has room: fed())."""
    if seg.feed and step == seg.first:
        return None
    lean = tuple(k for k in seg.lean if k != step)
    hs = seg.heights or (1,) * len(seg.stages)
    need = [band_scratch(s, prepared[s.step], isa, s.step in lean, h=x) for s, x in zip(seg.stages, hs, strict=True)]
    if any(x is None for x in need):
        return None
    return replace(seg, lean=lean, scratch=max(x for x in need if x is not None),
                   slow_macs=sum(prepared[k].macs for k in lean))


def fed(seg: Segment, prepared: tuple[Prepared, ...], isa: str) -> Segment | None:
    """The segment with its scratch below its first layer's whole input, as that buffer's lead
    (arena.scheduled), where that layer takes its lean call and the call runs the fast one when its
    ctx has room (Kernel.lean_fast): a band's ctx then holds the scratch and every input row above
    it that the bands have passed (rows below the band's first are read no more), so the bands from
    where those reach the fast call's scratch run fast, in the same bytes. None where no band would,
    or another stage reads that input too (its rows stay live)."""
    s = seg.stages[0]
    t = twin(s.kernel)
    if len(seg.stages) < 2 or seg.first not in seg.lean or t.lean_fast is None or not seg.scratch \
            or seg.whole_inputs().count(s.inputs[0]) != 1:
        return None
    bias, h = prepared[seg.first].bias, seg.height(0)
    bands = [(o0, min(o0 + h, s.out_rows)) for o0 in range(0, s.out_rows, h)]
    fast = 0
    for o0, o1 in bands:
        bp, lo, _ = s.band(o0, o1)
        fast += t.lean_fast(bp, bias, isa, seg.scratch + lo * s.in_row_bytes[0])
    return replace(seg, feed=seg.scratch, feed_fast=fast / len(bands)) if fast else None


def band_scratch(stage: Stage, p: Prepared, isa: str, lean: bool = False, h: int = 1) -> int | None:
    """The scratch every band (of h rows) of the stage needs (the layer's own, when no band needs
    more), or None when some band needs more than the layer planned for (its ctx says how much it
    has). lean: what the twin's lean_c needs instead (its generic path, the least scratch).
    Remembered per layer (the search asks for the same layers' bands many times)."""
    key = (id(p), isa, lean, h, stage.sink, stage.out_rows)
    got = _SCRATCH.get(key)
    if got is not None and got[0] is p:
        return got[1]
    if len(_SCRATCH) > 20000:
        _SCRATCH.clear()
    need = _band_scratch(stage, p, isa, lean, h)
    _SCRATCH[key] = (p, need)
    return need


def _band_scratch(stage: Stage, p: Prepared, isa: str, lean: bool, h: int) -> int | None:
    t = twin(stage.kernel)
    if getattr(p, "cmsis", None) is not None and not lean:
        return p.scratch  # cmsis_nn.Banded: CMSIS-NN's call on each band, its scratch the most any band needs
    if t.buffer_size is None:
        return p.scratch
    bias = p.bias
    bands = band_starts(stage, h)
    if lean and t.lean_buffer_size is not None:  # by rows, or whole (where the planner finds no overlap)
        return max([t.lean_buffer_size(stage.band(o0, o1)[0], bias, isa) for o0, o1 in bands]
                   + [t.lean_buffer_size(stage.params, bias, isa)])
    for o0, o1 in bands:
        bp, _, _ = stage.band(o0, o1)
        need = max(t.buffer_size(bp, bias, i) for i in (ISAS if isa == "any" else (isa,)))
        if need > p.scratch:
            return None
    return p.scratch


def stage_heights(stages: list[Stage], prepared: tuple[Prepared, ...], h: int | tuple[int, ...]) -> tuple[int, ...]:
    """Band heights of a segment whose layers make h rows a call (or h[i], stage i): a sink adds
    one row a call, a layer whose band CMSIS-NN computes (cmsis_nn.Banded) makes one; () when
    every height is 1."""
    hs = h if isinstance(h, tuple) else (h,) * len(stages)
    out = tuple(1 if s.sink or getattr(prepared[s.step], "cmsis", None) is not None else max(1, min(x, s.out_rows))
                for s, x in zip(stages, hs, strict=True))
    return () if all(x == 1 for x in out) else out


def make_segment(stages: list[Stage], prepared: tuple[Prepared, ...], isa: str,
                 slack: Callable[[int], int] = lambda rows: rows, lean: bool = False,
                 h: int | tuple[int, ...] = 1) -> Segment | None:
    """The stages as one segment (None when they cannot run so). lean: stages whose twin has a
    lean_c call it (less scratch, more instructions) where that saves scratch. h: the band height
    of its layers, or of each (several layers only: one layer alone runs by single rows)."""
    heights = stage_heights(stages, prepared, h) if len(stages) > 1 else ()
    caps = ring_caps(stages, slack, heights) if len(stages) > 1 else []
    if caps is None:
        return None
    sim = simulate(stages, caps, heights)
    hs = heights or (1,) * len(stages)
    full = [band_scratch(s, prepared[s.step], isa, h=x) for s, x in zip(stages, hs, strict=True)]
    small = [band_scratch(s, prepared[s.step], isa, True, h=x) for s, x in zip(stages, hs, strict=True)] \
        if lean else full
    if sim is None or any(x is None for x in full):
        return None
    pairs = list(zip(stages, full, small, strict=True))
    # lean calls where they lower the segment's scratch: a stage whose fast call needs no more than
    # the least the segment needs anyway keeps its fast call (the same bytes, fewer instructions)
    least = max((b if b is not None and a is not None and b < a else a) for _, a, b in pairs if a is not None)
    free = tuple(s.step for s, a, b in pairs if a is not None and b is not None and b < a and a > least)
    scratch = [b if s.step in free else a for s, a, b in pairs]
    up = simulate_up(stages[0]) if len(stages) == 1 else {}
    return Segment(tuple(stages), tuple(caps), max(x for x in scratch if x is not None), sim, up, free,
                   sum(prepared[k].macs for k in free), heights)
