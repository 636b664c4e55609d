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
from dataclasses import dataclass

from emitter.ir import Graph

GUARD_BYTES = 16  # per side of every arena buffer in guard (debug) builds; a multiple of 16
SEARCH_MAX_BUFFERS = 16  # the exact search runs on small plans only (budget: see search())

@dataclass(frozen=True)
class Buffer:
    name: str  # root tensor name, or "<node>#scratch"
    size: int
    first: int  # step that writes it
    last: int  # last step that reads it (inclusive)
    offset: int = -1


@dataclass(frozen=True)
class Plan:
    buffers: tuple[Buffer, ...]
    arena_size: int
    lower_bound: int
    alignment: int
    root: dict[str, str]  # tensor -> root tensor whose bytes it shares
    location: dict[str, tuple[str, int]]  # root -> ("arena", offset) | ("input", k) | ("output", k)
    guard: int = 0  # guard bytes before and after every buffer (debug builds), else 0

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


def roots(g: Graph) -> dict[str, str]:
    from emitter.ops import VIEW_OPS

    root = {n: n for n in g.inputs}
    for node in g.nodes:
        for o in node.outputs:
            root[o] = root[node.inputs[0]] if node.op in VIEW_OPS else o
    return root


def lifetimes(g: Graph, scratch: list[int]) -> tuple[list[Buffer], dict[str, str], dict[str, tuple[str, int]]]:
    root = roots(g)
    location: dict[str, tuple[str, int]] = {}
    for k, name in enumerate(g.inputs):
        location[root[name]] = ("input", k)
    for k, name in enumerate(g.outputs):
        r = root[name]
        if r in location:
            from emitter.errors import UnsupportedError
            raise UnsupportedError([(name, "graph output", g.opset,
                                     ("the output is (a view of) a graph input or another output; "
                                      "mcugen needs each output computed into its own buffer"))])
        location[r] = ("output", k)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for step, node in enumerate(g.nodes):
        for i in node.inputs:
            if i and i in root:
                last[root[i]] = step
        for o in node.outputs:
            first.setdefault(root[o], step)
            last.setdefault(root[o], step)
    bufs = [Buffer(r, g.t(r).nbytes, first[r], last[r]) for r in first if r not in location]
    bufs += [Buffer(f"{g.nodes[s].name}#scratch", size, s, s) for s, size in enumerate(scratch) if size]
    return bufs, root, location


Span = tuple[int, int, int]  # (size, first step, last step), lifetime inclusive

ORDERS: tuple[tuple[str, Callable[[Span, int], tuple[int, ...]]], ...] = (
    ("largest first", lambda b, i: (-b[0], b[1], i)),
    ("first use", lambda b, i: (b[1], -b[0], i)),
    ("longest lifetime", lambda b, i: (b[1] - b[2], -b[0], i)),
    ("size x lifetime", lambda b, i: (-b[0] * (b[2] - b[1] + 1), b[1], i)),
    ("last use", lambda b, i: (-b[2], -b[0], i)),
)


def place_in_order(spans: Sequence[Span], order: Sequence[int], alignment: int = 4,
                   guard: int = 0) -> tuple[list[int], int]:
    """Greedy first fit of spans[order[0]], spans[order[1]], ...: each at the lowest aligned offset
    where it overlaps no placed span whose lifetime intersects its own. Returns the offset of
    every span (in input order; the guard bytes lie before it) and the arena size."""
    padded = [size + 2 * guard for size, _, _ in spans]
    offsets = [0] * len(spans)
    placed: list[int] = []
    for i in order:
        _, first, last = spans[i]
        live = sorted((offsets[j], offsets[j] + padded[j]) for j in placed
                      if spans[j][1] <= last and first <= spans[j][2])
        off = 0
        for lo, hi in live:  # sorted by start: the first gap wide enough wins
            if off + padded[i] <= lo:
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


def place(spans: Sequence[Span], alignment: int = 4, guard: int = 0) -> tuple[list[int], int]:
    """The smallest arena over ORDERS (ties: the earlier order), then, if that is above the lower
    bound, a bounded exact search for a smaller one. Pure and deterministic: the same spans give
    the same offsets. Guard bytes, when asked, pad each side of every span."""
    best: tuple[list[int], int] | None = None
    for _, key in ORDERS:
        order = sorted(range(len(spans)), key=lambda i: key(spans[i], i))
        trial = place_in_order(spans, order, alignment, guard)
        if best is None or trial[1] < best[1]:
            best = trial
    if best is None:
        return [], 0
    better = search(spans, alignment, guard, best[1]) if len(spans) <= SEARCH_MAX_BUFFERS else None
    return better if better is not None else best


def lower_bound(spans: Sequence[Span], steps: int) -> int:
    """The most bytes live at any one step: no plan of these lifetimes can use less."""
    return max((sum(size for size, first, last in spans if first <= s <= last) for s in range(steps)),
               default=0)


def plan(g: Graph, scratch: list[int] | None = None, alignment: int = 4, guard: int = 0) -> Plan:
    bufs, root, location = lifetimes(g, scratch or [0] * len(g.nodes))
    bufs.sort(key=lambda b: b.name)  # ties between equal spans go to the name, not dict order
    spans = [(b.size, b.first, b.last) for b in bufs]
    offsets, arena = place(spans, alignment, guard)
    placed = [Buffer(b.name, b.size, b.first, b.last, off) for b, off in zip(bufs, offsets, strict=True)]
    placed.sort(key=lambda b: (b.offset, b.first, b.name))
    for b in placed:
        if not b.name.endswith("#scratch"):
            location[b.name] = ("arena", b.offset)
    return Plan(tuple(placed), arena, lower_bound(spans, len(g.nodes)), alignment, root, location, guard)


def scratch_of(p: Plan, node_name: str) -> int | None:
    for b in p.buffers:
        if b.name == f"{node_name}#scratch":
            return b.offset
    return None


def ascii_plan(p: Plan, steps: int, width: int = 64) -> str:
    """One row per buffer: its lifetime on the step axis and its offset range (for tests/debug)."""
    rows = []
    for b in p.buffers:
        line = "".join("#" if b.first <= s <= b.last else "." for s in range(steps))
        rows.append(f"{line[:width]} [{b.offset:>7}, {b.offset + b.size:>7}) {b.name}")
    return "\n".join(rows)
