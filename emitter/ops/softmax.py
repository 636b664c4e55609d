"""Softmax over the last axis with TFLite's int8 kernel (gemmlowp fixed-point exp).

Output scale 1/256 with zero point -128 is TFLite's own (bit-exact with TFLM/CMSIS-NN); any other
output quantization (onnxruntime gives 1/255) requantizes the same fixed-point probability.
"""
from __future__ import annotations

import math

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import Graph, Layout, Node
from emitter.kernels.mcu_softmax_s8 import SCALED_DIFF_INTEGER_BITS, SoftmaxParams, mcu_softmax_s8
from emitter.ops import a16
from emitter.ops.a16_lut import softmax_rule
from emitter.ops.base import LayoutPlan, LowerCtx, QNode, per_tensor
from emitter.quant import quantize_multiplier, round_half_away

ONNX_OPS = ("Softmax",)
IR_OPS = ("softmax",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None:
        raise NodeUnsupported("input must be an int8 activation")
    rank = len(x.shape)
    opset = int(q.attrs.get("opset", ctx.m.opset))  # QLinearSoftmax names the Softmax version
    axis = int(q.attrs.get("axis", -1 if opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if set(q.attrs) - {"axis", "opset"}:
        raise NodeUnsupported(f"unknown attributes {sorted(set(q.attrs) - {'axis', 'opset'})}")
    if opset >= 13 and axis != rank - 1:
        raise NodeUnsupported(f"softmax over axis {axis} of a rank-{rank} tensor: only the last "
                              "axis is supported")
    row_size = int(np.prod(x.shape[axis:]))
    ctx.emit(q, "softmax", [x.name], q.output, {"row_size": row_size})


def layout(node: Node, g: Graph) -> LayoutPlan:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    return LayoutPlan((Layout.identity(x.shape),), Layout.identity(y.shape))


def _quantize_multiplier_greater_than_one(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplierGreaterThanOne in double-rounding builds: no clamp of the shift
    at 30 (a real multiplier in [2^30, 2^31) gives shift 31)."""
    if not real > 1.0:
        raise QuantError(f"softmax input multiplier {real!r} must exceed 1; "
                         "the input scale is too small")
    q, shift = math.frexp(real)
    q_fixed = round_half_away(q * (1 << 31))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    return q_fixed, shift


def softmax_params(input_scale: float, rows: int, row_size: int, output_scale: float,
                   output_zero_point: int) -> SoftmaxParams:
    """TFLite Micro's int8 softmax Prepare with beta = 1 (PreprocessSoftmaxScaling with 5 integer
    bits, diff_min = -CalculateInputRadius). Output mode 0 for TFLite's output quantization
    (scale 1/256, zero point -128), else mode 1 with a multiplier for 2^-31 / output_scale."""
    beta = 1.0
    scale_in = float(np.float32(input_scale))
    scale_out = float(np.float32(output_scale))
    if scale_in <= 0.0 or scale_out <= 0.0:
        raise QuantError(f"softmax scales must be > 0, found {input_scale!r} -> {output_scale!r}")
    if not -128 <= output_zero_point <= 127:
        raise QuantError(f"softmax output zero point {output_zero_point} is not int8")
    real = min(beta * scale_in * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)
    input_multiplier, input_left_shift = _quantize_multiplier_greater_than_one(real)
    max_input_rescaled = (1.0 * ((1 << SCALED_DIFF_INTEGER_BITS) - 1)
                          * (1 << (31 - SCALED_DIFF_INTEGER_BITS)) / (1 << input_left_shift))
    diff_min = -math.floor(max_input_rescaled)
    if scale_out == 1.0 / 256 and output_zero_point == -128:
        mode, out_mult, out_shift, out_offset = 0, 0, 0, -128
    else:
        out_mult, out_shift = quantize_multiplier(2.0 ** -31 / scale_out)
        mode, out_offset = 1, output_zero_point
    return SoftmaxParams(rows=rows, row_size=row_size, input_multiplier=input_multiplier,
                         input_left_shift=input_left_shift, diff_min=diff_min,
                         output_mode=mode, output_multiplier=out_mult, output_shift=out_shift,
                         output_offset=out_offset)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    xq, yq = per_tensor(x, "input", node), per_tensor(y, "output", node)
    row_size = node.attrs["row_size"]
    rows = x.size // row_size
    p = softmax_params(xq.s, rows, row_size, yq.s, yq.zp)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_softmax_s8(p, env[x.name].reshape(rows, row_size)).ravel()

    return Prepared("mcu_softmax_s8", p, {"input": TensorArg(x.name), "output": TensorArg(y.name)}, golden,
                    summary=f"{rows} rows of {row_size}, output mode {p.output_mode}")


A16 = a16.Int16(softmax_rule)  # mcu_softmax_s16 (emitter/ops/a16_lut.py: its own Prepare)
