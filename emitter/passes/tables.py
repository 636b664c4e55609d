"""Table pass: an element-wise chain fed by one int8 tensor, with a float island in it, becomes one
256-entry lookup table (mcu_lut_s8).

    # x -> Div(sqrt 2) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5)  (GELU as torch exports it, each
    #      step requantized by onnxruntime)          =>  lut(x): no float island, one layer

Every node of the chain is lut, add, mul, eltwise_f32 or requantize over int8 per-tensor tensors of
one shape, its constants are scalars, and its activation inputs all descend from the same tensor x
through such nodes: each output is then a function of x's int8 code alone. The table is the
chain's own golden run on the 256 codes (emitter/ops/ prepare of each node on a 256-element copy of
the chain), so the result equals the unfused layers bit for bit, in either numerics. Only chains
holding an eltwise_f32 node are folded (its float island is what the table removes); every tensor
of the chain read outside it (or a graph output) gets its own table from x.
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import numpy as np

from emitter.ir import Graph, Layout, Node, Tensor
from emitter.ops import prepare

CHAIN_OPS = ("lut", "add", "mul", "eltwise_f32", "requantize")
CODES = 256


def _int8_per_tensor(t: Tensor) -> bool:
    return t.dtype == "int8" and t.quant is not None and t.quant.scale.size == 1 and not t.is_const


def chain_roots(g: Graph) -> dict[str, str]:
    """Output of a chain node -> the tensor x it is a function of."""
    root: dict[str, str] = {}
    for n in g.nodes:
        if n.op not in CHAIN_OPS or len(n.outputs) != 1 or (n.op == "lut" and "table" not in n.attrs):
            continue
        y = g.t(n.outputs[0])
        names = [i for i in n.inputs if i]
        acts = [i for i in names if not g.t(i).is_const]
        if not _int8_per_tensor(y) or not acts or any(g.t(i).size != 1 for i in names if g.t(i).is_const):
            continue
        if any(g.t(a).shape != y.shape or not _int8_per_tensor(g.t(a)) for a in acts):
            continue
        sources = {root.get(a, a) for a in acts}
        if len(sources) == 1:
            root[n.outputs[0]] = sources.pop()
    return root


def chain_tables(g: Graph, x: str, chain: list[Node], exits: list[str]) -> dict[str, np.ndarray]:
    """Each exit's 256 entries: the chain's goldens run on a 256-element copy of it."""
    flat = (CODES,)

    def small(t: Tensor) -> Tensor:
        if t.is_const:
            assert t.data is not None
            return replace(t, shape=(), data=np.asarray(t.data).reshape(()))
        return replace(t, shape=flat, layout=Layout.identity(flat), alias_of=None)

    names = {x} | {i for n in chain for i in n.inputs if i} | {n.outputs[0] for n in chain}
    mini = replace(g, tensors=MappingProxyType({k: small(g.t(k)) for k in names}), nodes=tuple(chain),
                   inputs=(x,), outputs=tuple(exits), boundaries=MappingProxyType({}))
    env: dict[str, np.ndarray] = {x: np.arange(-128, 128, dtype=np.int8)}
    for n in chain:
        env[n.outputs[0]] = np.asarray(prepare(n, mini, "any").golden(env)).reshape(flat).astype(np.int8)
    return {e: env[e] for e in exits}


def fold_tables(g: Graph) -> Graph:
    root = chain_roots(g)
    consumers = g.consumers()
    nodes = list(g.nodes)
    tensors = dict(g.tensors)
    for x in dict.fromkeys(root[n.outputs[0]] for n in g.nodes if n.outputs and n.outputs[0] in root):
        chain = [n for n in g.nodes if n.outputs and root.get(n.outputs[0]) == x]
        if not any(n.op == "eltwise_f32" for n in chain):
            continue
        inside = {n.outputs[0] for n in chain}
        exits = [o for o in inside if o in g.outputs
                 or any(c.outputs[0] not in inside for c in consumers.get(o, []) if c.outputs)]
        tables = chain_tables(g, x, chain, exits)
        for n in chain:
            k = next(i for i, m in enumerate(nodes) if m is n)
            out = n.outputs[0]
            if out in tables:
                source = " + ".join(dict.fromkeys(m.source or m.op for m in chain))
                nodes[k] = Node(n.name, "lut", (x,), (out,),
                                MappingProxyType({"table": tables[out], "function": "element-wise chain"}),
                                source, n.opset)
            else:
                del nodes[k]
                del tensors[out]
    return g.with_nodes(nodes, tensors)
