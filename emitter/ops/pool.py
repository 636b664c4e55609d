"""AveragePool, MaxPool, GlobalAveragePool and ReduceMean over the spatial axes (NHWC kernels).

    # same quant, padding excluded from the count -> mcu_avgpool_s8 (TFLite AVERAGE_POOL_2D)
    # fixed count (global, ReduceMean, no padding, or count_include_pad=1), any quant
    #                                              -> mcu_avgpool_requant_s8 (TFLite MEAN: one rounding)
    # padding excluded and the quant changes       -> mcu_avgpool_s8, then requantize
    # MaxPool                                      -> mcu_maxpool_s8 (+ requantize if the quant changes)
    # ReduceMean/ReduceMax over the tokens (axis 1 of [N, T, C]) -> the same kernels over the
    #   tensor as it is ([N, 1, T, C] in NHWC: a 1 x T window, no layout change)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emitter import quant
from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node, QuantParams
from emitter.kernels.common import Dims, PoolParams
from emitter.kernels.mcu_avgpool_requant_s8 import AvgPoolRequantParams, mcu_avgpool_requant_s8
from emitter.kernels.mcu_avgpool_requant_s16 import mcu_avgpool_requant_s16
from emitter.kernels.mcu_avgpool_s8 import mcu_avgpool_s8
from emitter.kernels.mcu_avgpool_s16 import mcu_avgpool_s16
from emitter.kernels.mcu_maxpool_s8 import mcu_maxpool_s8
from emitter.kernels.mcu_maxpool_s16 import mcu_maxpool_s16
from emitter.ops import a16
from emitter.ops.base import Attrs, LayoutPlan, LowerCtx, QNode, per_tensor
from emitter.ops.conv import dims4, feature_layout, same_pads

ONNX_OPS = ("AveragePool", "MaxPool", "GlobalAveragePool", "ReduceMean", "ReduceMax")
IR_OPS = ("avgpool", "maxpool")
DEFAULTS = {"auto_pad": b"NOTSET", "ceil_mode": 0, "count_include_pad": 0, "dilations": None,
            "kernel_shape": None, "pads": None, "strides": None, "storage_order": 0}


def window(q: QNode) -> tuple[list[int], list[int], list[int]]:
    """kernel, strides, pads (begin..., end...) over the spatial axes."""
    x = q.inputs[0]
    nsp = len(x.shape) - 2
    if q.op_type == "GlobalAveragePool":
        if q.attrs:
            raise NodeUnsupported(f"unknown attributes {sorted(q.attrs)}")
        return list(x.shape[2:]), [1] * nsp, [0] * (2 * nsp)
    if q.op_type in ("ReduceMean", "ReduceMax"):
        unknown = sorted(set(q.attrs) - {"axes", "keepdims", "noop_with_empty_axes"})
        if unknown:
            raise NodeUnsupported(f"unknown attributes {unknown}")
        axes = q.attrs.get("axes")
        if axes is None and len(q.inputs) > 1 and q.inputs[1].data is not None:
            axes = q.inputs[1].data.tolist()
        rank = len(x.shape)
        if axes is None or sorted(a % rank for a in axes) != list(range(2, rank)):
            raise NodeUnsupported(f"{q.op_type} over axes {axes}: only the spatial axes are supported")
        return list(x.shape[2:]), [1] * nsp, [0] * (2 * nsp)
    a = Attrs(q.attrs, DEFAULTS)
    if a.unknown():
        raise NodeUnsupported(f"unknown attributes {a.unknown()}")
    kernel = list(a["kernel_shape"])
    strides = list(a["strides"] or [1] * nsp)
    if a["dilations"] and any(d != 1 for d in a["dilations"]):
        raise NodeUnsupported("dilated pooling is not supported")
    if a["storage_order"] != 0:
        raise NodeUnsupported("storage_order=1 is not supported")
    mode = a["auto_pad"].decode() if isinstance(a["auto_pad"], bytes) else a["auto_pad"]
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        pads = same_pads(x.shape[2:], kernel, strides, [1] * nsp, mode)
    elif mode == "VALID":
        pads = [0] * (2 * nsp)
    else:
        pads = list(a["pads"] or [0] * (2 * nsp))
    return kernel, strides, pads


def token_axis(q: QNode) -> bool:
    """ReduceMean/ReduceMax over axis 1 of a 3-D [N, T, C] tensor (the tokens of a transformer)."""
    if q.op_type not in ("ReduceMean", "ReduceMax") or len(q.inputs[0].shape) != 3:
        return False
    axes = q.attrs.get("axes")
    if axes is None and len(q.inputs) > 1 and q.inputs[1].data is not None:
        axes = q.inputs[1].data.tolist()
    return axes is not None and sorted(int(a) % 3 for a in axes) == [1]


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is not None and token_axis(q):
        return lower_tokens(ctx, q)
    if x.name is None or len(x.shape) not in (3, 4):
        raise NodeUnsupported(f"input must be a 3-D or 4-D activation, got {x.shape}")
    if len(q.onnx.output) > 1 and q.onnx.output[1]:
        raise NodeUnsupported("the Indices output of MaxPool is not supported")
    if q.op_type in ("ReduceMean", "ReduceMax") and q.attrs.get("noop_with_empty_axes", 0):
        raise NodeUnsupported("noop_with_empty_axes=1 is not supported")
    kernel, strides, pads = window(q)
    if len(kernel) == 1:
        kernel, strides, pads = [1] + kernel, [1] + strides, [0, pads[0], 0, pads[1]]
    ir_op = "maxpool" if q.op_type in ("MaxPool", "ReduceMax") else "avgpool"
    assert x.quant is not None
    pooled_shape = tuple(x.shape[:2]) + tuple(q.out_shape[2:]) if len(q.out_shape) == len(x.shape) \
        else tuple(x.shape[:2]) + (1,) * (len(x.shape) - 2)
    include_pad = q.op_type == "AveragePool" and bool(q.attrs.get("count_include_pad", 0))
    fixed_count = ir_op == "avgpool" and (include_pad or not any(pads))
    same_q = x.quant.same_as(q.out_quant) or fixed_count
    keep = pooled_shape == tuple(q.out_shape)
    out_q = q.out_quant if fixed_count else x.quant
    target = q.output if same_q and keep else ctx.act(f"{q.output}_pooled", pooled_shape, out_q)
    lo, hi = (q.act_min, q.act_max) if same_q else (-128, 127)
    ctx.emit(q, ir_op, [x.name], target, {"kernel": tuple(kernel), "strides": tuple(strides),
                                          "pads": tuple(pads), "act_min": lo, "act_max": hi,
                                          "fixed_count": fixed_count and not x.quant.same_as(q.out_quant)
                                          or include_pad and any(pads)})
    finish(ctx, q, target, keep, same_q, out_q)


def finish(ctx: LowerCtx, q: QNode, target: str, keep: bool, same_q: bool, out_q: QuantParams) -> None:
    """After a reduction's pool into `target`: a view dropping the unit axes (keepdims=0), then a
    requantize to the node's output quantization where the pool could not take it."""
    if not keep:
        viewed = q.output if same_q else ctx.act(f"{q.output}_view", tuple(q.out_shape), out_q)
        ctx.emit(q, "reshape", [target], viewed, {}, name=f"{q.name}_squeeze")
        target = viewed
    if not same_q:
        ctx.emit(q, "requantize", [target], q.output, {"act_min": q.act_min, "act_max": q.act_max},
                 name=f"{q.name}_requantize")


def lower_tokens(ctx: LowerCtx, q: QNode) -> None:
    """Mean/max over the tokens of [N, T, C]: a 1 x T window over [N, 1, T, C] read as it lies."""
    x = q.inputs[0]
    unknown = sorted(set(q.attrs) - {"axes", "keepdims", "noop_with_empty_axes"})
    if unknown:
        raise NodeUnsupported(f"unknown attributes {unknown}")
    assert x.name is not None and x.quant is not None
    n, t, c = x.shape
    ir_op = "maxpool" if q.op_type == "ReduceMax" else "avgpool"
    pooled_shape = (n, 1, c)
    same_q = x.quant.same_as(q.out_quant) or ir_op == "avgpool"  # a fixed count requantizes itself
    out_q = q.out_quant if ir_op == "avgpool" else x.quant
    keep = pooled_shape == tuple(q.out_shape)
    target = q.output if same_q and keep else ctx.act(f"{q.output}_pooled", pooled_shape, out_q)
    lo, hi = (q.act_min, q.act_max) if same_q else (-128, 127)
    ctx.emit(q, ir_op, [x.name], target, {"kernel": (1, t), "strides": (1, 1), "pads": (0, 0, 0, 0),
                                          "act_min": lo, "act_max": hi, "tokens": True,
                                          "fixed_count": ir_op == "avgpool" and not x.quant.same_as(q.out_quant)})
    finish(ctx, q, target, keep, same_q, out_q)


def token_dims(shape: tuple[int, ...]) -> Dims:
    """[N, T, C] as it lies in memory: NHWC [N, 1, T, C]."""
    return Dims(shape[0], 1, shape[1], shape[2])


def layout(node: Node, g: Graph) -> LayoutPlan:
    if node.attrs.get("tokens"):
        x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
        return LayoutPlan((Layout.identity(x.shape),), Layout.identity(y.shape))
    return LayoutPlan((feature_layout(g.t(node.inputs[0]).shape),),
                      feature_layout(g.t(node.outputs[0]).shape))


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    kh, kw = node.attrs["kernel"]
    sh, sw = node.attrs["strides"]
    pt, pl = node.attrs["pads"][0], node.attrs["pads"][1]
    dims = token_dims if node.attrs.get("tokens") else dims4
    idims, odims = dims(x.shape), dims(y.shape)
    ort = g.numerics == "onnxruntime" and node.op != "maxpool"
    p = PoolParams(idims, odims, kh, kw, sh, sw, pt, pl, node.attrs["act_min"], node.attrs["act_max"],
                   quant.ROUND_NEAREST_EVEN if ort else quant.ROUND_TFLITE)
    fn, kernel = (mcu_maxpool_s8, "mcu_maxpool_s8") if node.op == "maxpool" else (mcu_avgpool_s8, "mcu_avgpool_s8")
    in_shape = (idims.n, idims.h, idims.w, idims.c)
    if node.attrs.get("fixed_count"):
        xq, yq = per_tensor(x, "input", node), per_tensor(y, "output", node)
        if ort:  # onnxruntime: x_scale / (y_scale * count) in float32, held exactly
            mult, shift = quant.exact_multiplier(float(quant.f32_scale(
                xq.s, quant.f32_scale(np.float32(yq.s) * np.float32(kh * kw)))))
        else:
            mult, shift = quant.quantize_multiplier(xq.s / (yq.s * kh * kw))
        rp = AvgPoolRequantParams(p, -xq.zp, yq.zp, mult, shift)

        def golden_rq(env: dict[str, np.ndarray]) -> np.ndarray:
            return mcu_avgpool_requant_s8(rp, env[x.name].reshape(in_shape)).ravel()

        return Prepared("mcu_avgpool_requant_s8", rp, {"input": TensorArg(x.name), "output": TensorArg(y.name)},
                        golden_rq,
                        macs=y.size * kh * kw, summary=f"mean {kh}x{kw} s{sh}x{sw} pad t{pt} l{pl}, requantized")

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, env[x.name].reshape(in_shape)).ravel()

    return Prepared(kernel, p, {"input": TensorArg(x.name), "output": TensorArg(y.name)}, golden,
                    macs=y.size * kh * kw, summary=f"{kh}x{kw} s{sh}x{sw} pad t{pt} l{pl}")


def prepare_a16(node: Node, g: Graph) -> Prepared:
    base = prepare(node, a16.tflite(g), "c")  # its int8 Prepare with TFLite's multipliers
    p: Any = base.params
    x = node.inputs[0]
    if base.kernel == "mcu_avgpool_requant_s8":  # a fixed count and another output scale (TFLite MEAN)
        rq_shape = (p.pool.input.n, p.pool.input.h, p.pool.input.w, p.pool.input.c)

        def golden_rq(env: dict[str, np.ndarray]) -> np.ndarray:
            return mcu_avgpool_requant_s16(p, env[x].reshape(rq_shape)).ravel()

        return Prepared("mcu_avgpool_requant_s16", p, dict(base.operands), golden_rq, macs=base.macs,
                        summary=base.summary)
    fn, kernel = ((mcu_maxpool_s16, "mcu_maxpool_s16") if node.op == "maxpool"
                  else (mcu_avgpool_s16, "mcu_avgpool_s16"))
    in_shape = (p.input.n, p.input.h, p.input.w, p.input.c)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, env[x].reshape(in_shape)).ravel()

    return Prepared(kernel, p, dict(base.operands), golden, macs=base.macs, summary=base.summary)


A16 = a16.Int16(prepare_a16)  # mcu_maxpool_s16 / mcu_avgpool_s16 / mcu_avgpool_requant_s16
