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


# -- residual adds --------------------------------------------------------------------------------
#    conv(x) -> t;  add(t, s) | add(s, t) -> y    =>  conv_add(x, s) -> y      (emitter/ops/conv_add.py)
# when t feeds only that add and is no graph output, the conv is a regular one (group 1), the add
# has no broadcast (t, s and y share shape and layout) and s is an activation. With two candidate
# convs the later one takes the add. The fused node takes the add's place (every input is ready
# there) and the conv's name; t disappears (its quant lives on in the attrs).


def residual_candidate(nodes: list[Node], k: int, tensors: dict[str, Tensor], users: dict[str, int],
                       producer: dict[str, int], outputs: tuple[str, ...]) -> tuple[int, int] | None:
    """(conv index, operand position of its output) for the add at `k`, or None."""
    add = nodes[k]
    if add.op != "add" or len(add.inputs) != 2 or add.inputs[0] == add.inputs[1]:
        return None
    y = tensors[add.outputs[0]]
    best = None
    for pos, t in enumerate(add.inputs):
        j, s = producer.get(t), add.inputs[1 - pos]
        if j is None or nodes[j].op != "conv" or nodes[j].attrs["group"] != 1 or users.get(t) != 1 or t in outputs:
            continue
        tt, st = tensors[t], tensors[s]
        if st.is_const or tt.shape != y.shape or st.shape != y.shape or tt.layout != y.layout \
                or st.layout != y.layout or tt.dtype != "int8" or st.dtype != "int8" or st.alias_of or tt.alias_of:
            continue
        if best is None or j > best[0]:
            best = (j, pos)
    return best


def fuse_residual_adds(g: Graph, keep: Callable[[Node, Graph], bool] | None = None) -> Graph:
    """Every residual add that fits the rule above, and whose conv `keep(conv, g)` accepts (None: all)."""
    nodes, tensors = list(g.nodes), dict(g.tensors)
    k = 0
    while k < len(nodes):
        producer = {o: i for i, n in enumerate(nodes) for o in n.outputs}
        users: dict[str, int] = {}
        for n in nodes:
            for i in n.inputs:
                users[i] = users.get(i, 0) + 1
        found = residual_candidate(nodes, k, tensors, users, producer, g.outputs)
        if found is not None and keep is not None and not keep(nodes[found[0]], g):
            found = None
        if found is None:
            k += 1
            continue
        j, pos = found
        conv, add = nodes[j], nodes[k]
        mid = tensors.pop(conv.outputs[0])
        assert mid.quant is not None
        attrs = {**conv.attrs, "mid": mid.name, "mid_scale": float(mid.quant.scale[0]),
                 "mid_zp": int(mid.quant.zero_point[0]), "skip_first": pos == 1,
                 "subtract": bool(add.attrs.get("subtract", False)),
                 "add_act_min": int(add.attrs["act_min"]), "add_act_max": int(add.attrs["act_max"])}
        nodes[k] = Node(conv.name, "conv_add", (*conv.inputs[:3], add.inputs[1 - pos]), add.outputs,
                        MappingProxyType(attrs), f"{conv.source or 'Conv'} + {add.source or 'Add'}", conv.opset)
        del nodes[j]
    return g.with_nodes(nodes, tensors)
