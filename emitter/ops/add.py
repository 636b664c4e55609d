"""Add and Sub: TFLite int8 ADD (left_shift 20, per-input multipliers), scalar/per-channel
broadcast. Sub is the same kernel with the second input's multiplier negated."""
from __future__ import annotations

import numpy as np

from dataclasses import replace

from emitter.golden.add import add_params, mcu_add_s8
from emitter.ir import Graph, Node
from emitter.ops import broadcast
from emitter.ops.base import LayoutPlan, LowerCtx, Prepared, QNode, TensorArg, per_tensor

ONNX_OPS = ("Add", "Sub")
IR_OPS = ("add",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    broadcast.lower_binary(ctx, q, "add", {"subtract": q.op_type == "Sub"})


def layout(node: Node, g: Graph) -> LayoutPlan:
    return broadcast.layout(node, g)


def prepare(node: Node, g: Graph) -> Prepared:
    a, b, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    qa, qb, qy = per_tensor(a, "input", node), per_tensor(b, "input", node), per_tensor(y, "output", node)
    ba, arg_a, ca = broadcast.operand(a, y, node, 0)
    bb, arg_b, cb = broadcast.operand(b, y, node, 1)
    p = add_params(y.size, ba, bb, qa.s, qa.zp, qb.s, qb.zp, qy.s, qy.zp,
                   node.attrs["act_min"], node.attrs["act_max"])
    if node.attrs.get("subtract"):
        p = replace(p, input2_multiplier=-p.input2_multiplier)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_add_s8(p, env[a.name] if ca is None else ca, env[b.name] if cb is None else cb)

    return Prepared("mcu_add_s8", p, (arg_a, arg_b, TensorArg(y.name)), golden, macs=y.size,
                    summary="subtract" if node.attrs.get("subtract") else "")
