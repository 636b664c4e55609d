"""Static memory plan: one arena for every intermediate activation and kernel scratch buffer.

Algorithm (the greedy planner of TFLite Micro, tried in several orders, with explicit tie-breaks):
  1. Views (reshape/transpose nodes) share their root tensor's bytes; a root lives from the step
     that writes it to the last step that reads it or any of its views.
  2. Graph inputs and outputs live in the caller's buffers, not in the arena.
  3. `place` puts buffers one at a time, in a given order, each at the lowest aligned offset where
     it overlaps no already-placed buffer whose lifetime intersects its own.
  4. It does so for a few orders (largest first -- TFLite Micro's --, earliest first use, longest
     lifetime, largest size x lifetime, last use) and keeps the smallest arena; ties go to the
     earlier order in that list, and within an order to the buffer listed first. Small plans
     (up to SEARCH_MAX_BUFFERS buffers) above the lower bound then get a bounded exact search.
  5. The arena is the highest end offset. The lower bound is the largest sum of live bytes at any
     step; the report states both and the gap.
  6. Debug builds (guard > 0) reserve `guard` bytes before and after every buffer, never shared
     with another live buffer, so the generated code can check them after every layer.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from emitter.ir import Graph
from emitter.plan.stream import Schedule
from emitter.plan.views import roots

GUARD_BYTES = 16  # per side of every arena buffer in guard (debug) builds; a multiple of 16
SEARCH_MAX_BUFFERS = 16  # the exact search runs on small plans only (budget: see search())

@dataclass(frozen=True)
class Buffer:
    name: str  # root tensor name, "<node>#scratch" or "<tensor>#ring" (for people: `kind`/`of` decide)
    size: int
    first: int  # step that writes it
    last: int  # last step that reads it (inclusive)
    offset: int = -1
    kind: str = "tensor"  # "tensor" | "scratch" (a kernel's) | "ring" (a streamed layer's last rows)
    of: str = ""  # scratch: the node it serves; ring: the tensor whose rows it holds
    lead: int = 0  # tensor: bytes before its data (a homing call writes there first: stream.InPlace.home)

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.of or self.name)

    @property
    def data(self) -> int:
        """Where the tensor's data starts (its offset, after the lead)."""
        return self.offset + self.lead


@dataclass(frozen=True)
class Plan:
    buffers: tuple[Buffer, ...]
    arena_size: int
    lower_bound: int
    alignment: int
    root: dict[str, str]  # tensor -> root tensor whose bytes it shares
    location: dict[str, tuple[str, int]]  # root -> ("arena" | "ring", offset) | ("input" | "output", k)
    guard: int = 0  # guard bytes before and after every buffer (debug builds), else 0
    schedule: Schedule = Schedule("layer")
    modes: dict[int, str] = field(default_factory=dict)  # segment's first step -> "rows" | "down" | "up" | "whole"
    scratch_alias: dict[str, str] = field(default_factory=dict)  # node -> node whose scratch it uses
    feeds: dict[str, str] = field(default_factory=dict)  # fed segment's first node -> root leading with its scratch

    @property
    def gap(self) -> int:
        return self.arena_size - self.lower_bound

    def offset_of(self, tensor: str) -> int | None:
        kind, where = self.location[self.root[tensor]]
        return where if kind == "arena" else None


def align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def overlaps(a: Buffer, b: Buffer) -> bool:
    time = a.first <= b.last and b.first <= a.last
    space = a.offset < b.offset + b.size and b.offset < a.offset + a.size
    return time and space


def lifetimes(g: Graph, scratch: list[int],
              host_inputs: bool = False) -> tuple[list[Buffer], dict[str, str], dict[str, tuple[str, int]]]:
    """Buffers with their live steps. With host_inputs the graph inputs are arena buffers too,
    live from step 0 (the caller writes them there, or run() copies them in)."""
    root = roots(g)
    location: dict[str, tuple[str, int]] = {}
    for k, name in enumerate(g.inputs):
        if not host_inputs:
            location[root[name]] = ("input", k)
    for k, name in enumerate(g.outputs):
        r = root[name]
        if r in location:
            from emitter.errors import UnsupportedError
            raise UnsupportedError([(name, "graph output", g.opset,
                                     ("the output is (a view of) a graph input or another output; "
                                      "mcugen needs each output computed into its own buffer"))])
        location[r] = ("output", k)
    first: dict[str, int] = {root[n]: 0 for n in g.inputs} if host_inputs else {}
    last: dict[str, int] = dict(first)
    for step, node in enumerate(g.nodes):
        for i in node.inputs:
            if i and i in root:
                last[root[i]] = step
        for o in node.outputs:
            first.setdefault(root[o], step)
            last.setdefault(root[o], step)
    bufs = [Buffer(r, g.t(r).nbytes, first[r], last[r]) for r in first if r not in location]
    bufs += [Buffer(f"{g.nodes[s].name}#scratch", size, s, s, kind="scratch", of=g.nodes[s].name)
             for s, size in enumerate(scratch) if size]
    return bufs, root, location


Span = tuple[int, int, int]  # (size, first step, last step), lifetime inclusive

ORDERS: tuple[tuple[str, Callable[[Span, int], tuple[int, ...]]], ...] = (
    ("largest first", lambda b, i: (-b[0], b[1], i)),
    ("first use", lambda b, i: (b[1], -b[0], i)),
    ("longest lifetime", lambda b, i: (b[1] - b[2], -b[0], i)),
    ("size x lifetime", lambda b, i: (-b[0] * (b[2] - b[1] + 1), b[1], i)),
    ("last use", lambda b, i: (-b[2], -b[0], i)),
    ("latest write", lambda b, i: (-b[1], -b[0], i)),  # overlapped plans: an output below its input
    ("latest write, shortest", lambda b, i: (-b[1], b[2] - b[1], -b[0], i)),
)


Pairs = dict[tuple[int, int], tuple[int, int | None, bool]]
"""(a, b) -> (down, up, exact): span b, written while span a is read for the last time, may overlap a
when offset(b) - offset(a) <= down, or >= up when up is not None (emitter/plan/stream.py derives them
from the kernels' band rules); exact: only when it is down (a kernel whose channel groups each run
over the whole output: another start would put one group's writes on another's inputs); any other
overlap of live spans is forbidden."""


def forbidden(i: int, j: int, off_j: int, spans: Sequence[Span], padded: Sequence[int],
              pairs: Pairs) -> list[tuple[int, int]]:
    """The open intervals of offsets of span i that conflict with span j placed at off_j (both live
    at once): (off_j - size_i, off_j + size_j), narrowed by an overlap pair of the two (an exact
    one leaves that one offset out of it)."""
    lo, hi = off_j - padded[i], off_j + padded[j]
    if (j, i) in pairs:  # i writes over j
        down, up, exact = pairs[j, i]
        if exact:
            return [(lo, off_j + down), (off_j + down, hi)]
        lo = max(lo, off_j + down)
        if up is not None:
            hi = min(hi, off_j + up)
    elif (i, j) in pairs:  # j writes over i
        down, up, exact = pairs[i, j]
        if exact:
            return [(lo, off_j - down), (off_j - down, hi)]
        hi = min(hi, off_j - down)
        if up is not None:
            lo = max(lo, off_j - up)
    return [(lo, hi)]


def place_in_order(spans: Sequence[Span], order: Sequence[int], alignment: int = 4,
                   guard: int = 0, pairs: Pairs | None = None) -> tuple[list[int], int]:
    """Greedy first fit of spans[order[0]], spans[order[1]], ...: each at the lowest aligned offset
    where it conflicts with no placed span whose lifetime intersects its own (conflict: overlap,
    except as `pairs` allow). Returns the offset of every span (in input order; the guard bytes
    lie before it) and the arena size."""
    padded = [size + 2 * guard for size, _, _ in spans]
    offsets = [0] * len(spans)
    placed: list[int] = []
    for i in order:
        _, first, last = spans[i]
        bad = sorted(iv for j in placed if spans[j][1] <= last and first <= spans[j][2]
                     for iv in forbidden(i, j, offsets[j], spans, padded, pairs or {}))
        off = 0
        for lo, hi in bad:  # sorted by start: the first offset outside every interval wins
            if off <= lo:
                break
            off = max(off, align_up(hi, alignment))
        offsets[i] = off
        placed.append(i)
    arena = align_up(max((o + p for o, p in zip(offsets, padded, strict=True)), default=0), alignment)
    return [o + guard for o in offsets], arena


def search(spans: Sequence[Span], alignment: int, guard: int, bound: int,
           budget: int = 3000) -> tuple[list[int], int] | None:
    """Depth-first search for a plan with an arena smaller than `bound`: buffers largest first,
    each tried at 0 and at the aligned end of every buffer placed before it, lowest first; a
    branch stops as soon as it reaches the best arena so far, the whole search after `budget`
    placements (so it stays fast and deterministic). None when nothing smaller is found."""
    padded = [size + 2 * guard for size, _, _ in spans]
    order = sorted(range(len(spans)), key=lambda i: (-padded[i], spans[i][1], i))
    floor = align_up(lower_bound([(p, f, la) for p, (_, f, la) in zip(padded, spans, strict=True)],
                                 1 + max((la for _, _, la in spans), default=0)), alignment)
    offsets = [0] * len(spans)
    best: list[tuple[list[int], int]] = []
    limit = [bound, budget]

    def dfs(k: int, top: int) -> bool:
        if k == len(order):
            best.append((list(offsets), top))
            limit[0] = top
            return top <= floor  # a plan at the lower bound cannot be beaten: stop
        i = order[k]
        _, first, last = spans[i]
        live = [(offsets[j], offsets[j] + padded[j]) for j in order[:k]
                if spans[j][1] <= last and first <= spans[j][2]]
        for off in sorted({0} | {align_up(offsets[j] + padded[j], alignment) for j in order[:k]}):
            end = align_up(off + padded[i], alignment)
            if max(top, end) >= limit[0]:
                break
            if any(off < hi and lo < off + padded[i] for lo, hi in live):
                continue
            limit[1] -= 1
            if limit[1] < 0:
                return True
            offsets[i] = off
            if dfs(k + 1, max(top, end)):
                return True
        return False

    dfs(0, 0)
    if not best:
        return None
    found, arena = best[-1]
    return [o + guard for o in found], arena


def place(spans: Sequence[Span], alignment: int = 4, guard: int = 0,
          pairs: Pairs | None = None) -> tuple[list[int], int]:
    """The smallest arena over ORDERS (ties: the earlier order), then, if that is above the lower
    bound and no overlap pairs are given, a bounded exact search for a smaller one. Pure and
    deterministic: the same spans give the same offsets. Guard bytes, when asked, pad each side
    of every span."""
    best: tuple[list[int], int] | None = None
    for _, key in ORDERS:
        order = sorted(range(len(spans)), key=lambda i: key(spans[i], i))
        trial = place_in_order(spans, order, alignment, guard, pairs)
        if best is None or trial[1] < best[1]:
            best = trial
    if best is None:
        return [], 0
    small = len(spans) <= SEARCH_MAX_BUFFERS and not pairs
    better = search(spans, alignment, guard, best[1]) if small else None
    return better if better is not None else best


def lower_bound(spans: Sequence[Span], steps: int) -> int:
    """The most bytes live at any one step: no plan of these lifetimes can use less."""
    return max((sum(size for size, first, last in spans if first <= s <= last) for s in range(steps)),
               default=0)


def plan(g: Graph, scratch: list[int] | None = None, alignment: int = 4, guard: int = 0,
         schedule: Schedule | None = None) -> Plan:
    schedule = schedule or Schedule("layer")
    scratch = list(scratch or [0] * len(g.nodes))
    for step in schedule.exact:  # an in-place call through another function has its own scratch
        call = schedule.call_at(step)
        if call is not None and call.call:
            scratch[step] = call.scratch
    bufs, root, location = lifetimes(g, scratch, schedule.host_inputs)
    alias: dict[str, str] = {}
    feeds: dict[str, str] = {}
    if schedule.segments or schedule.exact:
        bufs, alias, feeds = scheduled(g, bufs, root, schedule)
    bufs = with_leads(g, bufs, root, schedule)
    bufs.sort(key=lambda b: b.name)  # ties between equal spans go to the name, not dict order
    spans = [(b.size, b.first, b.last) for b in bufs]
    pairs = overlap_pairs(g, bufs, root, schedule) if not guard else {}
    offsets, arena = place(spans, alignment, guard, pairs)
    placed = [replace(b, offset=off) for b, off in zip(bufs, offsets, strict=True)]
    at = {b.name: b.data for b in placed if b.kind == "tensor"}
    placed.sort(key=lambda b: (b.offset, b.first, b.name))
    for b in placed:
        if b.kind == "tensor":
            location[b.name] = ("arena", b.data)
        elif b.kind == "ring":  # a streamed layer's output: only its last rows, in a ring
            location[b.of] = ("ring", b.offset)
    return Plan(tuple(placed), arena, lower_bound(spans, len(g.nodes)), alignment, root, location, guard,
                schedule, modes(schedule, root, at, guard), alias, feeds)


def scheduled(g: Graph, bufs: list[Buffer], root: dict[str, str],
              schedule: Schedule) -> tuple[list[Buffer], dict[str, str], dict[str, str]]:
    """Lifetimes under a schedule: a segment's inner outputs become rings, its whole inputs live
    to its end, its output from its start, and its layers share one scratch buffer: its own, or
    (a fed segment, stream.fed) the lead of its first layer's input where that input is an arena
    tensor the segment reads for the last time (feeds: the segment's first node -> that tensor)."""
    by_key = {b.key: b for b in bufs}
    alias: dict[str, str] = {}
    feeds: dict[str, str] = {}
    for seg in schedule.segments:
        inner = {root[s.output] for s in seg.stages[:-1]}
        for name in inner:
            by_key.pop(("tensor", name), None)
        for s, cap in zip(seg.stages, seg.caps, strict=False):
            by_key["ring", s.output] = Buffer(f"{s.output}#ring", cap * s.out_row_bytes, seg.first, seg.last,
                                              kind="ring", of=s.output)
        if seg.acc_bytes:  # a sink's int32 sums
            acc = f"{seg.stages[-1].output}#acc"
            by_key["ring", acc] = Buffer(acc, seg.acc_bytes, seg.first, seg.last, kind="ring", of=acc)
        for name in seg.whole_inputs():
            b = by_key.get(("tensor", root[name]))
            if b is not None:
                by_key[b.key] = replace(b, first=min(b.first, seg.first), last=max(b.last, seg.last))
        out = by_key.get(("tensor", root[seg.stages[-1].output]))
        if out is not None:
            by_key[out.key] = replace(out, first=seg.first, last=max(out.last, seg.last))
        head = g.nodes[seg.first].name
        for s in seg.stages:
            by_key.pop(("scratch", g.nodes[s.step].name), None)
            alias[g.nodes[s.step].name] = head
        if not seg.scratch:
            continue
        first = seg.stages[0]
        src = by_key.get(("tensor", root[first.inputs[0]]))
        if seg.feed and src is not None and src.last == seg.last and not src.lead \
                and src.size == first.in_rows * first.in_row_bytes[0]:  # its rows, one after another
            by_key[src.key] = replace(src, size=src.size + seg.feed, lead=seg.feed)
            feeds[head] = src.name
            continue
        by_key["scratch", head] = Buffer(f"{head}#scratch", seg.scratch, seg.first, seg.last, kind="scratch",
                                         of=head)
    return list(by_key.values()), alias, feeds


def with_leads(g: Graph, bufs: list[Buffer], root: dict[str, str], schedule: Schedule) -> list[Buffer]:
    """The output of a homing call (stream.InPlace.home) leads with the bytes below its data where
    the call writes before it moves the output up onto its input: they are the output's own, so
    the call is right wherever the buffer lands."""
    lead = {root[g.nodes[k].outputs[0]]: c.down for k in schedule.exact
            if (c := schedule.call_at(k)) is not None and c.home}
    # (a fed segment's input may lead already: the two use the bytes at different steps)
    return [replace(b, size=b.size + max(0, lead[b.name] - b.lead), lead=max(b.lead, lead[b.name]))
            if b.kind == "tensor" and b.name in lead else b for b in bufs]


def overlap_pairs(g: Graph, bufs: list[Buffer], root: dict[str, str], schedule: Schedule) -> Pairs:
    """The overlaps the schedule allows, as pairs of buffer indices: a segment's output over a
    whole input it reads for the last time; an exact in-place layer's output over such an operand."""
    index = {b.name: k for k, b in enumerate(bufs) if b.kind == "tensor"}
    pairs: Pairs = {}

    def allow(src: str, out: str, down: int, up: int | None, end: int, exact: bool = False) -> None:
        """down, up: between the tensors' data (the buffers' offsets differ by their leads too)."""
        a, b = index.get(root[src]), index.get(root[out])
        if a is not None and b is not None and a != b and bufs[a].last == end and bufs[a].first <= bufs[b].first:
            shift = bufs[a].lead - bufs[b].lead
            pairs[a, b] = (down + shift, None if up is None else up + shift, exact)

    for seg in schedule.segments:
        out = seg.stages[-1].output
        for name in seg.whole_inputs():
            # a fed segment's passed input rows are its scratch's, not its output's (a sink's output is
            # written after its last band)
            if seg.feed and name == seg.stages[0].inputs[0] and not seg.stages[-1].sink:
                continue
            if name in seg.sim.down:
                allow(name, out, seg.sim.down[name], seg.up.get(name), seg.last)
    inputs = dict(zip(schedule.exact, schedule.exact_inputs, strict=False))  # a missing entry: any
    calls = dict(zip(schedule.exact, schedule.in_place, strict=False))  # None: element-wise, exactly on it
    for step in schedule.exact:
        chain = schedule.segment_at(step)
        # by rows in a chain (or a convolution by rows alone): the replay above set the limits
        if chain is not None and (len(chain.stages) > 1 or calls.get(step) is not None):
            continue
        node, only = g.nodes[step], inputs.get(step, ())
        # bytes the kernel reads through another operand than those it may write over (a conv_add whose
        # skip is its convolution's own input: the windows still read rows the output has reached)
        other = {root.get(n, n) for k, n in enumerate(node.inputs) if n and only and k not in only}
        for pos, name in enumerate(node.inputs):
            if only and pos not in only:  # the kernel's exact_in_place_inputs (empty: any operand)
                continue
            if name and not g.t(name).is_const and g.t(name).nbytes == g.t(node.outputs[0]).nbytes \
                    and root.get(name, name) not in other:
                call = calls.get(step)  # Pairs: offset(out) - offset(in) <= down (exact: == down)
                homed = call is not None and call.home  # (its output moved up exactly onto its input)
                allow(name, node.outputs[0], -call.down if call is not None and not homed else 0, None, step,
                      call is not None and (call.exact or homed))
    return pairs


def modes(schedule: Schedule, root: dict[str, str], at: dict[str, int], guard: int) -> dict[int, str]:
    """How each segment runs, given where its buffers landed: "rows" (several layers, row by
    row), "down" / "up" (one layer by rows, top down / bottom up, its output over its input) or
    "whole" (one plain call)."""
    out: dict[int, str] = {}
    for seg in schedule.segments:
        if len(seg.stages) > 1:
            out[seg.first] = "rows"
            continue
        s = seg.stages[0]
        src, dst = at.get(root[s.inputs[0]]), at.get(root[s.output])
        mode = "whole"
        if src is not None and dst is not None and not guard:
            size_in, size_out = s.in_rows * s.in_row_bytes[0], s.out_rows * s.out_row_bytes
            if dst < src + size_in and src < dst + size_out:  # they overlap: the pair allowed it
                mode = "down" if dst - src <= seg.sim.down.get(s.inputs[0], -(1 << 40)) else "up"
        out[seg.first] = mode
    return out


def scratch_of(p: Plan, node_name: str) -> int | None:
    owner = p.scratch_alias.get(node_name, node_name)
    if owner in p.feeds:  # the lead of the fed segment's input
        return next(b.offset for b in p.buffers if b.kind == "tensor" and b.name == p.feeds[owner])
    for b in p.buffers:
        if b.kind == "scratch" and b.of == owner:
            return b.offset
    return None


def ascii_plan(p: Plan, steps: int, width: int = 64) -> str:
    """One row per buffer: its lifetime on the step axis and its offset range (for tests/debug)."""
    rows = []
    for b in p.buffers:
        line = "".join("#" if b.first <= s <= b.last else "." for s in range(steps))
        rows.append(f"{line[:width]} [{b.offset:>7}, {b.offset + b.size:>7}) {b.name}")
    return "\n".join(rows)
