"""Layout pass: give every activation a physical Layout, inserting relayouts only where needed.

Walks the nodes in order. Graph inputs start in the caller's order (ONNX order, or NHWC with
--io-layout nhwc). Each op module's layout() names the layout it needs per input and the one it
produces; an input whose bytes are in another order gets one relayout node (cached per tensor and
target). Graph outputs are brought back to the caller's order at the end.

    # Transpose(x, perm)         -> view: the output layout absorbs perm
    # Reshape(x)                 -> view: same bytes, same layout
    # conv(x in ONNX order)      -> relayout(x to NHWC); conv
"""
from __future__ import annotations

from dataclasses import replace
from itertools import zip_longest
from types import MappingProxyType

from emitter.ir import Graph, Layout, Node, Tensor
from emitter.layout import equivalent, nhwc, relayout_steps
from emitter.ops import REGISTRY, VIEW_OPS


def caller_layout(t: Tensor, io_nhwc: bool) -> Layout:
    return nhwc(t.shape) if io_nhwc and len(t.shape) == 4 else Layout.identity(t.shape)


class _Relayouter:
    def __init__(self, tensors: dict[str, Tensor], nodes: list[Node]):
        self.tensors, self.nodes = tensors, nodes
        self.cache: dict[tuple[str, Layout], str] = {}

    def to(self, name: str, target: Layout, opset: int) -> str:
        src = self.tensors[name]
        assert src.layout is not None
        if equivalent(src.layout, target):
            return name
        key = (name, target)
        if key in self.cache:
            return self.cache[key]
        steps = relayout_steps(src.layout, target)
        cur = name
        for k, (shape, perm) in enumerate(steps):
            last = k == len(steps) - 1
            out = f"{name}__{'nhwc' if target.perm == (0, 2, 3, 1) else 'relayout'}{'' if last else k}"
            while out in self.tensors:
                out += "_"
            layout = target if last else Layout.identity(src.shape)
            self.tensors[out] = Tensor(out, src.shape, src.dtype, src.quant, layout=layout)
            self.nodes.append(Node(f"{name}__relayout{k}", "relayout", (cur,), (out,),
                                   MappingProxyType({"in_shape": shape, "perm": perm}),
                                   "layout", opset))
            cur = out
        self.cache[key] = cur
        return cur


def root_of(nodes: list[Node], inputs: tuple[str, ...], name: str) -> str:
    """The tensor whose bytes `name` shares through view nodes."""
    src = {n.outputs[0]: n.inputs[0] for n in nodes if n.op in VIEW_OPS}
    while name in src:
        name = src[name]
    return name


def assign_layouts(g: Graph, io_nhwc: bool = False) -> Graph:
    tensors = dict(g.tensors)
    for name in g.inputs:
        tensors[name] = replace(tensors[name], layout=caller_layout(tensors[name], io_nhwc))
    nodes: list[Node] = []
    rl = _Relayouter(tensors, nodes)
    for node in g.nodes:
        plan = REGISTRY[node.op].layout(node, replace(g, tensors=MappingProxyType(tensors)))
        inputs = []
        for name, need in zip_longest(node.inputs, plan.inputs):
            if name is None:
                break
            if name and need is not None and not tensors[name].is_const:
                name = rl.to(name, need, node.opset)
            inputs.append(name)
        nodes.append(replace(node, inputs=tuple(inputs)))
        for out in node.outputs:
            tensors[out] = replace(tensors[out], layout=plan.output)
    outputs: list[str] = []
    boundaries = dict(g.boundaries)
    for name in g.outputs:
        final = rl.to(name, caller_layout(tensors[name], io_nhwc), g.opset)
        taken = {root_of(nodes, g.inputs, n) for n in list(g.inputs) + outputs}
        if root_of(nodes, g.inputs, final) in taken:  # would share a caller buffer: copy it
            src = tensors[final]
            copy = f"{final}__copy"
            tensors[copy] = replace(src, name=copy)
            nodes.append(Node(copy, "copy", (final,), (copy,), MappingProxyType({}), "output copy", g.opset))
            final = copy
        if final != name:
            boundaries[final] = boundaries.pop(name)
        outputs.append(final)
    return replace(g, tensors=MappingProxyType(tensors), nodes=tuple(nodes), outputs=tuple(outputs),
                   boundaries=MappingProxyType(boundaries))
