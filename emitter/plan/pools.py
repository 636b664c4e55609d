"""Memory pools: the chosen plan's buffers assigned to the board's RAMs by access density.

The plan (its schedule, kernels and offsets in one arena) is chosen first and not changed: this
module only moves its buffers between pools, so no instruction changes.

Access model (estimated bytes read + written per buffer, from the plan and each layer's call):
  * a layer writes its output once (a streamed layer: its rows, into its ring) and reads each
    activation operand but the first once;
  * its first operand: a window kernel (params with `window()`: conv, depthwise, pools) meets
    W = out_n * out_h * out_w * kernel_h * kernel_w * in_c window bytes. A pool or depthwise layer
    (a window per channel) reads each once; a convolution reads them once per pair of output
    channels (max(W, MACs / 2): mcugen's and CMSIS-NN's inner loops meet two channels' weights with
    one loaded input vector). Where the kernel has scratch the windows are gathered there first
    (im2col, MVE's interleaved windows): the input is read W bytes, the scratch written W bytes and
    read the rest. Another layer with MACs (fully connected, matmul) reads max(its input, MACs / 2)
    bytes of it; the rest read it once;
  * other scratch is written and read once per use: 2 x its size;
  * a sink's int32 accumulators are read and written once per input row it adds;
  * a graph input held in the arena (host-input plans) is also written once by the copy-in.
The count says which buffers are hot, not how many cycles they cost: caches, the CMSIS-NN kernels'
blocking and im2col reuse are not modelled.

Placement: the buffers are grouped into units (buffers the plan lets overlap while live -- a
segment's output over its input, an in-place layer over its operand -- stay together with their
relative offsets, so a layer that runs in place still does). Units go, densest first (accesses per
byte; ties: more accesses, then name), to the fastest pool where they still fit: each pool is
packed by arena.place() on its own units, with their lifetimes. If the plan fits the fastest pool
whole it stays there, untouched. Units that fit no pool: UsageError naming the pools.

Addresses: each distinct activation address the run function passes to a kernel costs it one
instruction (a literal load or an add to a base) where the one-arena plan's ping-pong reuses a
register, so splitting the arena must not add distinct addresses. After packing, `coalesce()`
moves units inside their pool (same pool, same pool size, same shares) onto start addresses other
units already use wherever their lifetimes allow, and keeps the result if it has fewer distinct
addresses (VWW on cortex-m55 with --pool dtcm=32768: 7 -> 6, the one-arena plan's count).

In the Plan returned the pools lie one after another (pool k from `base`), so every offset of the
plan names one pool and one offset in it (`Placement.split`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from emitter.boards import Pool
from emitter.calls import Prepared
from emitter.errors import UsageError
from emitter.ir import Graph
from emitter.plan.arena import Buffer, Plan, place


@dataclass(frozen=True)
class PoolUse:
    """One pool the plan uses: its bytes start at `base` of the plan's offsets."""
    pool: Pool
    base: int
    used: int
    accesses: int  # estimated bytes read + written in it per inference


@dataclass(frozen=True)
class Placement:
    pools: tuple[PoolUse, ...]  # the pools holding buffers, fastest first
    where: dict[str, str]  # buffer name -> pool name
    accesses: dict[str, int]  # buffer name -> estimated bytes read + written per inference
    single_size: int  # the one-arena plan's size

    @property
    def multi(self) -> bool:
        return len(self.pools) > 1

    @property
    def total_accesses(self) -> int:
        return sum(u.accesses for u in self.pools)

    def split(self, offset: int) -> tuple[str, int]:
        """The pool and the offset in it of a plan offset."""
        for use in reversed(self.pools):
            if offset >= use.base:
                return use.pool.name, offset - use.base
        raise AssertionError(f"offset {offset} below every pool")


def access_counts(g: Graph, prepared: Sequence[Prepared], p: Plan) -> dict[str, int]:
    """Estimated bytes read + written per buffer of the plan (the module docstring's model)."""
    count = {b.name: 0 for b in p.buffers}
    tensor = {b.of or b.name: b.name for b in p.buffers if b.kind in ("tensor", "ring")}

    def add(name: str, n: int) -> None:
        b = tensor.get(p.root.get(name, name)) or tensor.get(name)
        if b is not None:
            count[b] += n

    for k in range(len(g.inputs)):
        name = g.inputs[k]
        if p.location.get(p.root[name], ("",))[0] == "arena":
            add(name, g.t(name).nbytes)  # the copy-in
    scratch = {b.of: b.name for b in p.buffers if b.kind == "scratch"}
    for step, (node, call) in enumerate(zip(g.nodes, prepared, strict=True)):
        if not call.kernel:
            continue  # a view: no code
        seg = p.schedule.segment_at(step)
        owner = scratch.get(p.scratch_alias.get(node.name, node.name))
        for pos, name in enumerate(i for i in node.inputs if i and not g.t(i).is_const):
            nbytes = g.t(name).nbytes
            if pos > 0:
                add(name, nbytes)
                continue
            reads, window = main_reads(call, nbytes)
            if window and owner is not None:  # windows gathered in scratch, then read there
                add(name, window)
                count[owner] += window + reads
            else:
                add(name, reads)
                if owner is not None:
                    count[owner] += 2 * call.scratch
        for name in node.outputs:
            add(name, g.t(name).nbytes)
        if seg is not None and seg.acc_bytes and step == seg.last:
            acc = f"{seg.stages[-1].output}#acc"
            if acc in count:
                count[acc] += 2 * seg.acc_bytes * seg.stages[-1].in_rows
    return count


def main_reads(call: Prepared, nbytes: int) -> tuple[int, int]:
    """(bytes the layer's inner loop reads of its first operand of `nbytes`, window bytes W of a
    window kernel or 0): the module docstring's model."""
    window = getattr(call.params, "window", None)
    if window is None:
        return max(nbytes, call.macs // 2), 0
    w = window()
    inner = getattr(call.params, "pool", call.params)
    f = getattr(inner, "filter", None)
    taps = f.h * f.w if f is not None else getattr(inner, "filter_h", 1) * getattr(inner, "filter_w", 1)
    win = int(w.output.n * w.output.h * w.output.w * taps * w.input.c)
    per_channel = w.weights == 0 or w.weights // max(1, w.output.c) == taps  # pool, depthwise
    return (win if per_channel else max(win, call.macs // 2)), win


def units(buffers: Sequence[Buffer]) -> list[list[int]]:
    """Indices of buffers that must stay together: live at once and overlapping in the plan."""
    parent = list(range(len(buffers)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(buffers):
        for j in range(i):
            b = buffers[j]
            if a.first <= b.last and b.first <= a.last and a.offset < b.offset + b.size \
                    and b.offset < a.offset + a.size:
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(buffers)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def assign(g: Graph, prepared: Sequence[Prepared], p: Plan, pools: Sequence[Pool]) -> tuple[Plan, Placement]:
    """The plan with its buffers in `pools` (fastest first), and where each went."""
    counts = access_counts(g, prepared, p)
    total = sum(counts.values())
    if p.arena_size <= pools[0].size or len(pools) == 1:
        return p, Placement((PoolUse(pools[0], 0, p.arena_size, total),),
                            {b.name: pools[0].name for b in p.buffers}, counts, p.arena_size)
    bufs = p.buffers
    groups = units(bufs)
    guard = p.guard
    span: list[tuple[int, int, int, int]] = []  # per unit: (lowest offset, extent, first, last)
    for members in groups:
        lo = min(bufs[i].offset - guard for i in members)
        hi = max(bufs[i].offset + bufs[i].size + guard for i in members)
        span.append((lo, hi - lo - 2 * guard, min(bufs[i].first for i in members),
                     max(bufs[i].last for i in members)))
    hits = [sum(counts[bufs[i].name] for i in members) for members in groups]
    order = sorted(range(len(groups)), key=lambda u: (-hits[u] / max(1, span[u][1]), -hits[u],
                                                      min(bufs[i].name for i in groups[u])))
    starts = [[bufs[i].offset - span[u][0] for i in members if bufs[i].kind == "tensor"]
              for u, members in enumerate(groups)]
    chosen: list[list[int]] = [[] for _ in pools]
    placed: list[tuple[list[int], int]] = [([], 0) for _ in pools]
    for u in order:
        for k, pool in enumerate(pools):
            if span[u][1] > pool.size:
                continue
            trial = chosen[k] + [u]
            offsets, size = place([span[v][1:] for v in trial], p.alignment, guard)
            if size <= pool.size:
                chosen[k], placed[k] = trial, (offsets, size)
                break
        else:
            raise UsageError(
                f"the activation buffers do not fit the memory pools "
                f"{', '.join(f'{q.name} ({q.size:,} bytes)' for q in pools)}: the plan needs "
                f"{p.arena_size:,} bytes in one arena, and a buffer group of {span[u][1]:,} bytes finds no room. "
                "Give a pool more room (--pool NAME=SIZE), add one, or ask for a smaller plan "
                "(--memory auto with --ram-budget)")
    offset: dict[str, int] = {}
    where: dict[str, str] = {}
    uses: list[PoolUse] = []
    base = 0
    for k, pool in enumerate(pools):
        if not chosen[k]:
            continue
        offsets, size = placed[k]
        offsets = coalesce([span[u][1:] for u in chosen[k]], offsets, size, [starts[u] for u in chosen[k]],
                           p.alignment, guard)
        for u, at in zip(chosen[k], offsets, strict=True):
            for i in groups[u]:
                offset[bufs[i].name] = base + at - guard + bufs[i].offset - span[u][0]
                where[bufs[i].name] = pool.name
        uses.append(PoolUse(pool, base, size, sum(hits[u] for u in chosen[k])))
        base += size
    moved = [replace(b, offset=offset[b.name]) for b in bufs]
    location = dict(p.location)
    for b in moved:
        if b.kind == "tensor":
            location[b.name] = ("arena", b.data)
        elif b.kind == "ring":
            location[b.of] = ("ring", b.offset)
    moved.sort(key=lambda b: (b.offset, b.first, b.name))
    new = replace(p, buffers=tuple(moved), arena_size=base, location=location)
    return new, Placement(tuple(uses), where, counts, p.arena_size)


def addresses(spans_at: Sequence[int], starts: Sequence[Sequence[int]], guard: int) -> set[int]:
    """The distinct start addresses (pool offsets) of the units' tensors, each unit at `at`."""
    return {at - guard + r for at, rel in zip(spans_at, starts, strict=True) for r in rel}


def coalesce(spans: Sequence[tuple[int, int, int]], offsets: Sequence[int], size: int,
             starts: Sequence[Sequence[int]], alignment: int, guard: int) -> list[int]:
    """The units' offsets in one pool (as arena.place() returns them: `at`, guard bytes before),
    moved onto addresses other units already use: units in order of first use, each at the
    feasible padded start within `size` where the most of its tensors land on an address in use
    (ties: its own offset, then the lowest), else the lowest that fits. The new offsets if they
    give fewer distinct tensor addresses (`starts`: each unit's tensors relative to its padded
    start), else `offsets` unchanged. Pure and deterministic."""
    n = len(spans)
    padded = [extent + 2 * guard for extent, _, _ in spans]
    order = sorted(range(n), key=lambda u: (spans[u][1], offsets[u], u))
    new: list[int] = [0] * n
    done: list[int] = []
    used: set[int] = set()

    def fits(u: int, ps: int) -> bool:
        if ps < 0 or ps % alignment or ps + padded[u] > size:
            return False
        _, first, last = spans[u]
        return all(not (spans[v][1] <= last and first <= spans[v][2]
                        and ps < new[v] + padded[v] and new[v] < ps + padded[u]) for v in done)

    for u in order:
        own = offsets[u] - guard
        cands = sorted({a - r for a in used for r in starts[u]} | {own})
        ok = [ps for ps in cands if fits(u, ps)]
        if not ok:
            bad = sorted((new[v], new[v] + padded[v]) for v in done
                         if spans[v][1] <= spans[u][2] and spans[u][1] <= spans[v][2])
            ps = 0
            for lo, hi in bad:
                if ps + padded[u] <= lo:
                    break
                ps = max(ps, -(-hi // alignment) * alignment)
            if not fits(u, ps):
                return list(offsets)
            ok = [ps]
        best = min(ok, key=lambda ps: (-sum(ps + r in used for r in starts[u]), ps != own, ps))
        new[u] = best
        done.append(u)
        used |= {best + r for r in starts[u]}
    moved = [ps + guard for ps in new]
    return moved if len(addresses(moved, starts, guard)) < len(addresses(offsets, starts, guard)) else list(offsets)
