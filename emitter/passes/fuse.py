"""Fusion pass: a clamp moves into the node that produces its input.

A clamp is a `requantize` whose input and output have the same QuantParams and whose range is
narrower than int8 (what emitter/lower/ leaves behind an op for a Relu/Clip chain). Rules, tried on
every clamp in graph order; the first that takes it wins:

    # op(act_min a, act_max b) -> clamp(c, d)          =>  op(act_min max(a, c), act_max min(b, d))
    # lut(table) -> clamp(c, d)                         =>  lut(clip(table, c, d))
    # X -> reshape|transpose ... -> clamp(c, d)         =>  X(clamp c, d) -> reshape|transpose ...

The producer's output (and every view's) must feed only the next node and not be a graph output,
and its quant must be the clamp's. The fused node keeps the producer's name and source and writes
the clamp's output; the tensor between them disappears. A clamp nothing can take stays a layer.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

import numpy as np

from emitter.ir import ACT_RANGE, Graph, Node, Tensor

VIEWS = ("reshape", "transpose")


def clamp_attrs(node: Node, lo: int, hi: int) -> Node | None:
    """op(act_min a, act_max b) -> clamp(c, d)  =>  op(act_min max(a, c), act_max min(b, d))"""
    if "act_min" not in node.attrs or "act_max" not in node.attrs:
        return None
    a, b = max(int(node.attrs["act_min"]), lo), min(int(node.attrs["act_max"]), hi)
    if a > b:  # two disjoint clamps: the second maps everything to one end, the fused one would not
        return None
    return replace(node, attrs=MappingProxyType({**node.attrs, "act_min": a, "act_max": b}))


def clip_table(node: Node, lo: int, hi: int) -> Node | None:
    """lut(table) -> clamp(c, d)  =>  lut(clip(table, c, d))"""
    if node.op != "lut":
        return None
    table = np.clip(np.asarray(node.attrs["table"]), lo, hi).astype(np.int8)
    return replace(node, attrs=MappingProxyType({**node.attrs, "table": table}))


ABSORB: tuple[Callable[[Node, int, int], Node | None], ...] = (clamp_attrs, clip_table)


def clamp_range(node: Node, tensors: dict[str, Tensor]) -> tuple[int, int] | None:
    """(act_min, act_max) when `node` is a clamp, else None."""
    if node.op != "requantize":
        return None
    x, y = tensors[node.inputs[0]], tensors[node.outputs[0]]
    lo, hi = int(node.attrs["act_min"]), int(node.attrs["act_max"])
    if x.quant is None or not x.quant.same_as(y.quant) or (lo, hi) == ACT_RANGE[y.dtype] or x.dtype != y.dtype:
        return None
    return lo, hi


def fuse_one(g: Graph, nodes: list[Node], tensors: dict[str, Tensor]) -> bool:
    """Fold the first clamp some rule takes; False when there is none."""
    producer = {o: k for k, n in enumerate(nodes) for o in n.outputs}
    users: dict[str, int] = {}
    for n in nodes:
        for i in n.inputs:
            users[i] = users.get(i, 0) + 1

    def only_feeds_next(t: str) -> bool:
        return users.get(t, 0) == 1 and t not in g.outputs and t in producer

    for c, clamp in enumerate(nodes):
        rng = clamp_range(clamp, tensors)
        if rng is None:
            continue
        t, views = clamp.inputs[0], []
        while only_feeds_next(t) and nodes[producer[t]].op in VIEWS:
            views.append(producer[t])
            t = nodes[producer[t]].inputs[0]
        if not only_feeds_next(t) or not tensors[t].quant.same_as(tensors[clamp.outputs[0]].quant):  # type: ignore[union-attr]
            continue
        k = producer[t]
        fused = next((r for r in (rule(nodes[k], *rng) for rule in ABSORB) if r is not None), None)
        if fused is None:
            continue
        last = views[0] if views else k  # the node that now writes the clamp's output
        if not views:
            fused = replace(fused, outputs=clamp.outputs)
        else:
            nodes[last] = replace(nodes[last], outputs=clamp.outputs)
        nodes[k] = fused
        del tensors[clamp.inputs[0]]
        del nodes[c]
        return True
    return False


def fuse_activations(g: Graph) -> Graph:
    nodes, tensors = list(g.nodes), dict(g.tensors)
    while fuse_one(g, nodes, tensors):
        pass
    return g.with_nodes(nodes, tensors)
