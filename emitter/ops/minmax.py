"""Min and Max of two int8 operands: each requantized to the output scale, then compared
(scalar/per-channel broadcast as Add). More than two inputs become a chain of calls."""
from __future__ import annotations

import numpy as np

from emitter.errors import NodeUnsupported
from emitter.golden.minmax import mcu_minmax_s8, minmax_params
from emitter.ir import Graph, Node
from emitter.ops import broadcast
from emitter.ops.base import LayoutPlan, LowerCtx, Prepared, QNode, TensorArg, per_tensor

ONNX_OPS = ("Min", "Max")
IR_OPS = ("minmax",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    if q.attrs:
        raise NodeUnsupported(f"unknown attributes {sorted(q.attrs)}")
    if len(q.inputs) < 2:
        raise NodeUnsupported("Min/Max of a single input is an identity: remove the node")
    names = [ctx.act_input(qi, q, f"operand{k}") for k, qi in enumerate(q.inputs)]
    if np.broadcast_shapes(*[ctx.tensors[n].shape for n in names]) != tuple(q.out_shape):
        raise NodeUnsupported("operands do not broadcast to the output shape")
    acc = names[0]
    for k, other in enumerate(names[1:], start=1):
        last = k == len(names) - 1
        out = q.output if last else ctx.act(f"{q.output}_{k}", q.out_shape, q.out_quant)
        ctx.emit(q, "minmax", [acc, other], out,
                 {"is_max": int(q.op_type == "Max"), "act_min": q.act_min, "act_max": q.act_max},
                 name=q.name if last else f"{q.name}_{k}")
        acc = out


def layout(node: Node, g: Graph) -> LayoutPlan:
    return broadcast.layout(node, g)


def prepare(node: Node, g: Graph) -> Prepared:
    a, b, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    qa, qb, qy = per_tensor(a, "input", node), per_tensor(b, "input", node), per_tensor(y, "output", node)
    ba, arg_a, ca = broadcast.operand(a, y, node, 0)
    bb, arg_b, cb = broadcast.operand(b, y, node, 1)
    p = minmax_params(y.size, ba, bb, node.attrs["is_max"], qa.s, qa.zp, qb.s, qb.zp, qy.s, qy.zp,
                      node.attrs["act_min"], node.attrs["act_max"])

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_minmax_s8(p, env[a.name] if ca is None else ca, env[b.name] if cb is None else cb)

    return Prepared("mcu_minmax_s8", p, (arg_a, arg_b, TensorArg(y.name)), golden,
                    summary="max" if node.attrs["is_max"] else "min")
