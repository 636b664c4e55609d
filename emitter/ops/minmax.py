"""Min and Max of two int8 operands: each requantized to the output scale, then compared
(scalar/per-channel broadcast as Add). More than two inputs become a chain of calls."""
from __future__ import annotations

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import Graph, Node
from emitter.kernels.common import Bcast
from emitter.kernels.mcu_minmax_s8 import MinMaxParams, mcu_minmax_s8
from emitter.ops import broadcast
from emitter.ops.base import LayoutPlan, LowerCtx, QNode, per_tensor
from emitter.quant import quantize_multiplier

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


def minmax_params(size: int, in1: Bcast, in2: Bcast, is_max: bool, s1: float, zp1: int,
                  s2: float, zp2: int, s_out: float, zp_out: int, act_min: int,
                  act_max: int) -> MinMaxParams:
    """MinMaxParams for ONNX Max (is_max) / Min of two quantized operands."""
    scale1, scale2, scale_out = (float(np.float32(s)) for s in (s1, s2, s_out))
    if min(scale1, scale2, scale_out) <= 0.0:
        raise QuantError(f"Min/Max scales must be > 0, found {s1!r}, {s2!r} -> {s_out!r}")
    m1, sh1 = quantize_multiplier(scale1 / scale_out)
    m2, sh2 = quantize_multiplier(scale2 / scale_out)
    return MinMaxParams(size=size, in1=in1, in2=in2, is_max=int(bool(is_max)),
                        input1_offset=-zp1, input1_multiplier=m1, input1_shift=sh1,
                        input2_offset=-zp2, input2_multiplier=m2, input2_shift=sh2,
                        output_offset=zp_out, act_min=act_min, act_max=act_max)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    a, b, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    qa, qb, qy = per_tensor(a, "input", node), per_tensor(b, "input", node), per_tensor(y, "output", node)
    ba, arg_a, ca = broadcast.operand(a, y, node, 0)
    bb, arg_b, cb = broadcast.operand(b, y, node, 1)
    p = minmax_params(y.size, ba, bb, node.attrs["is_max"], qa.s, qa.zp, qb.s, qb.zp, qy.s, qy.zp,
                      node.attrs["act_min"], node.attrs["act_max"])

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_minmax_s8(p, env[a.name] if ca is None else ca, env[b.name] if cb is None else cb)

    return Prepared("mcu_minmax_s8", p, {"input1": arg_a, "input2": arg_b, "output": TensorArg(y.name)},
                    golden,
                    summary="max" if node.attrs["is_max"] else "min")
