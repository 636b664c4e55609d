"""Static memory plan: one arena for every intermediate activation and kernel scratch buffer.

Algorithm (the greedy-by-size planner of TFLite Micro, with explicit tie-breaks):
  1. Views (reshape/transpose nodes) share their root tensor's bytes; a root lives from the step
     that writes it to the last step that reads it or any of its views.
  2. Graph inputs and outputs live in the caller's buffers, not in the arena.
  3. Buffers are placed largest first (ties: earlier first use, then name); each goes at the lowest
     aligned offset where it overlaps no already-placed buffer whose lifetime intersects its own.
  4. The arena is the highest end offset. The lower bound is the largest sum of live bytes at any
     step; the report states both and the gap.
"""
from __future__ import annotations

from dataclasses import dataclass

from emitter.ir import Graph


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
                                     "the output is (a view of) a graph input or another output; "
                                     "mcugen needs each output computed into its own buffer")])
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


def plan(g: Graph, scratch: list[int] | None = None, alignment: int = 4) -> Plan:
    bufs, root, location = lifetimes(g, scratch or [0] * len(g.nodes))
    order = sorted(bufs, key=lambda b: (-b.size, b.first, b.name))
    placed: list[Buffer] = []
    for b in order:
        candidates = sorted({0} | {align_up(p.offset + p.size, alignment) for p in placed})
        for off in candidates:
            trial = Buffer(b.name, b.size, b.first, b.last, off)
            if not any(overlaps(trial, p) for p in placed):
                placed.append(trial)
                break
    placed.sort(key=lambda b: (b.offset, b.first, b.name))
    arena = align_up(max((b.offset + b.size for b in placed), default=0), alignment)
    steps = range(len(g.nodes))
    bound = max((sum(b.size for b in bufs if b.first <= s <= b.last) for s in steps), default=0)
    for b in placed:
        if not b.name.endswith("#scratch"):
            location[b.name] = ("arena", b.offset)
    return Plan(tuple(placed), arena, bound, alignment, root, location)


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
