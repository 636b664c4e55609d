"""Fully connected: MatMul with a constant right operand (+ Add bias, tf2onnx's form) and Gemm.

Weights are stored [N, K]. When the input's bytes are not in logical order (a Flatten of an NHWC
feature map), the weight columns are permuted at build time instead of moving the data.
"""
from __future__ import annotations

import numpy as np

from emitter import quant
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node, QuantParams
from emitter.kernels import mcu_fully_connected_s8 as fc_twin
from emitter.kernels.common import QuantIO
from emitter.kernels.mcu_fully_connected_s8 import FCParams, mcu_fully_connected_s8
from emitter.layout import index_map
from emitter.ops.base import Attrs, ConstArg, LayoutPlan, LowerCtx, NullArg, Prepared, QNode, TensorArg, per_tensor
from emitter.ops.conv import bias_int32, check_accumulation, scratch_ctx, symmetric_weights

ONNX_OPS = ("MatMul", "Gemm")
IR_OPS = ("fc",)
GEMM_DEFAULTS = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}


def lower(ctx: LowerCtx, q: QNode) -> None:
    x, w = q.inputs[0], q.inputs[1]
    if q.op_type == "Gemm":
        a = Attrs(q.attrs, GEMM_DEFAULTS)
        if a.unknown():
            raise NodeUnsupported(f"unknown attributes {a.unknown()}")
        if a["transA"] or a["alpha"] != 1.0 or a["beta"] != 1.0:
            raise NodeUnsupported("only transA=0, alpha=1, beta=1 Gemm is supported")
        trans_b = bool(a["transB"])
        b = q.bias
        if b is None and len(q.inputs) > 2 and q.inputs[2].data is not None:
            b = q.inputs[2]
    else:
        if q.attrs:
            raise NodeUnsupported(f"unknown attributes {sorted(q.attrs)}")
        trans_b, b = False, q.bias
    if x.name is None or w.data is None or w.data.dtype != np.int8 or w.data.ndim != 2:
        raise NodeUnsupported("needs an int8 activation times a constant 2-D int8 weight matrix")
    symmetric_weights(w, q.name)
    assert w.quant is not None and x.quant is not None
    weights = w.data.T if not trans_b else w.data  # -> [N, K]
    n_out, k = weights.shape
    if x.shape[-1] != k:
        raise NodeUnsupported(f"input has {x.shape[-1]} features, weights expect {k}")
    check_accumulation(k)
    axis = w.quant.axis
    if w.quant.scale.size > 1 and axis != (0 if trans_b else 1):
        raise NodeUnsupported(f"per-axis weight scales along axis {axis} are not per output feature")
    bias = bias_int32(b, x.quant.s, w.quant.scale, n_out)
    wq = QuantParams(w.quant.scale, w.quant.zero_point, 0 if w.quant.scale.size > 1 else None)
    w_name = ctx.const(f"{q.name}_weights", np.ascontiguousarray(weights), wq)
    b_name = ctx.const(f"{q.name}_bias", bias) if bias is not None else ""
    ctx.emit(q, "fc", [x.name, w_name, b_name], q.output,
             {"act_min": q.act_min, "act_max": q.act_max})


def layout(node: Node, g: Graph) -> LayoutPlan:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    batches = x.size // x.shape[-1]
    need = None if batches == 1 else Layout.identity(x.shape)
    return LayoutPlan((need, None, None), Layout.identity(y.shape))


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, w, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    b = g.t(node.inputs[2]) if node.inputs[2] else None
    xq, yq = per_tensor(x, "input", node), per_tensor(y, "output", node)
    assert w.quant is not None and w.data is not None and x.layout is not None
    n_out, k = w.shape
    batches = x.size // k
    weights = w.data
    if batches == 1:  # physical position j holds logical feature idx[j]
        weights = np.ascontiguousarray(weights[:, index_map(x.layout)])
    mult, shift, rounding = quant.layer_multipliers(g.numerics, xq.s, w.quant.scale, yq.s)
    p = FCParams(batches, k, n_out, QuantIO(-xq.zp, yq.zp, node.attrs["act_min"], node.attrs["act_max"],
                                            rounding), int(mult.size > 1), mult, shift)
    bias = b.data if b is not None else None

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_fully_connected_s8(p, env[x.name].reshape(batches, k), weights, bias).ravel()

    ctx, scratch = scratch_ctx(fc_twin.buffer_size, p, bias, isa)
    return Prepared("mcu_fully_connected_s8", p,
                    {"ctx": ctx, "input": TensorArg(x.name), "weights": ConstArg("weights", weights),
                     "bias": ConstArg("bias", bias) if bias is not None else NullArg(),
                     "output": TensorArg(y.name)},
                    golden, macs=batches * k * n_out, scratch=scratch,
                    summary=f"{k} -> {n_out}, batches {batches}")
