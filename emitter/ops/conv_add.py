"""conv_add: a convolution (group 1) whose output feeds only a residual Add, made by
emitter/passes/fuse.py (fuse_residual_adds) after the layout pass; never lowered from ONNX.

Inputs (x, weights, bias, skip); output the Add's. The attrs keep what the removed tensor between
the two carried: its name (`mid`), scale and zero point (`mid_scale`, `mid_zp`), and the Add's:
`skip_first` (the skip is the Add's first input), `subtract`, `add_act_min`, `add_act_max`; the
conv's own attrs (kernel, strides, ..., act_min/act_max of the conv value) stay as they were.
Prepare is the two ops' Prepare: conv.prepare on the graph with the middle tensor restored, and
add.add_params, so every constant is theirs.
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import numpy as np

from emitter.calls import ConstArg, Prepared, TensorArg
from emitter.ir import Graph, Node, QuantParams, Tensor
from emitter.kernels import mcu_conv2d_add_s8 as fused_twin
from emitter.kernels.common import Bcast
from emitter.kernels.mcu_conv2d_add_s8 import ConvAddParams, mcu_conv2d_add_s8
from emitter.kernels.mcu_conv2d_s8 import ConvParams
from emitter.ops import conv
from emitter.ops.add import add_params
from emitter.ops.base import LayoutPlan, per_tensor

ONNX_OPS: tuple[str, ...] = ()
IR_OPS = ("conv_add",)
CONV_ATTRS = ("kernel", "strides", "dilations", "pads", "group", "act_min", "act_max")


def layout(node: Node, g: Graph) -> LayoutPlan:
    plan = conv.layout(node, g)
    return LayoutPlan((*plan.inputs, plan.output), plan.output)


def conv_node(node: Node, g: Graph) -> tuple[Node, Graph]:
    """The convolution alone, writing the middle tensor, and the graph that holds that tensor."""
    y = g.t(node.outputs[0])
    a = node.attrs
    mid = Tensor(a["mid"], y.shape, "int8", QuantParams.per_tensor(a["mid_scale"], a["mid_zp"]), layout=y.layout)
    n = Node(node.name, "conv", node.inputs[:3], (mid.name,), MappingProxyType({k: a[k] for k in CONV_ATTRS}),
             node.source, node.opset)
    return n, replace(g, tensors=MappingProxyType({**g.tensors, mid.name: mid}))


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    n, g2 = conv_node(node, g)
    pc = conv.prepare(n, g2, isa)
    mid, skip, y = g2.t(n.outputs[0]), g.t(node.inputs[3]), g.t(node.outputs[0])
    qm, qs, qy = per_tensor(mid, "input", node), per_tensor(skip, "input", node), per_tensor(y, "output", node)
    first, second = (qs, qm) if node.attrs["skip_first"] else (qm, qs)
    full = Bcast(1, y.size)
    ap = add_params(y.size, full, full, first.s, first.zp, second.s, second.zp, qy.s, qy.zp,
                    node.attrs["add_act_min"], node.attrs["add_act_max"])
    if node.attrs["subtract"]:
        ap = replace(ap, input2_multiplier=-ap.input2_multiplier)
    assert isinstance(pc.params, ConvParams)
    p = ConvAddParams(pc.params, ap, int(bool(node.attrs["skip_first"])))
    filt = pc.operands["filter"]
    bias = pc.operands["bias"]
    assert isinstance(filt, ConstArg)
    b = bias.data if isinstance(bias, ConstArg) else None
    c = p.conv
    in_shape = (c.input.n, c.input.h, c.input.w, c.input.c)
    x_name = node.inputs[0]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_conv2d_add_s8(p, env[x_name].reshape(in_shape), filt.data, b, env[skip.name])

    ctx, scratch = conv.scratch_ctx(fused_twin.buffer_size, p, b, isa)  # the fused call's path
    ops = {**{k: v for k, v in pc.operands.items() if k != "output"}, "ctx": ctx, "skip": TensorArg(skip.name),
           "output": TensorArg(y.name)}
    how = "subtract" if node.attrs["subtract"] else "add"
    return Prepared("mcu_conv2d_add_s8", p, ops, golden, macs=pc.macs + y.size, scratch=scratch,
                    summary=f"{pc.summary}, residual {how} of '{skip.name}' fused")
