"""int16 activations (TFLite's int16x8 mode): the Prepare of every layer that reads or writes an
int16 activation, in place of the op module's own.

int16 activations have zero point 0 (emitter/lower/state.py refuses others), weights are int8
symmetric, biases int64, requantization TFLite's 64-bit rule (emitter/kernels/s16.py), whatever
rounding contract the int8 layers of the model follow (onnxruntime requantizes int16 in float;
the difference is reported by verify). Each op's geometry and multipliers come from its own
module's Prepare (the int8 params structs are shared), then the int16 kernel replaces the call:

    # conv (regular)        -> mcu_conv2d_s16           # conv (depthwise) -> mcu_depthwise_conv2d_s16
    # fc                    -> mcu_fully_connected_s16  # add (same shapes) -> mcu_add_s16 (left_shift 15)
    # mul (same shapes)     -> mcu_mul_s16
    # maxpool               -> mcu_maxpool_s16          # avgpool (same quant) -> mcu_avgpool_s16
    # avgpool over a fixed count, another scale (GlobalAveragePool, ReduceMean) -> mcu_avgpool_requant_s16
    # relayout              -> mcu_transpose_s16        # reshape / transpose views: free
    # requantize int8 -> int16, int16 -> int8, int16 -> int16 (a QuantizeLinear between the types, a
    #   standalone Relu/Clip) -> mcu_requantize_s8_s16 / _s16_s8 / _s16: mixed graphs in one arena
    # Sigmoid, Tanh (lut)   -> mcu_sigmoid_s16 / mcu_tanh_s16 (emitter/ops/a16_lut.py: their own Prepare)
    # softmax               -> mcu_softmax_s16 (emitter/ops/a16_lut.py)
The cmsis-nn backend keeps the table ops portable: CMSIS-NN's arm_nn_activation_s16 takes power-of-two input
scales and TFLite's output scale only, and its arm_softmax_s16 TFLite's output scale only.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from emitter.calls import ConstArg, NullArg, Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Node
from emitter.kernels import mcu_fully_connected_s8 as fc_twin
from emitter.kernels.common import Bcast, QuantIO
from emitter.kernels.mcu_add_s16 import LEFT_SHIFT, mcu_add_s16
from emitter.kernels.mcu_avgpool_requant_s16 import mcu_avgpool_requant_s16
from emitter.kernels.mcu_avgpool_s16 import mcu_avgpool_s16
from emitter.kernels.mcu_conv2d_s16 import mcu_conv2d_s16
from emitter.kernels.mcu_depthwise_conv2d_s16 import mcu_depthwise_conv2d_s16
from emitter.kernels.mcu_fully_connected_s16 import mcu_fully_connected_s16
from emitter.kernels.mcu_maxpool_s16 import mcu_maxpool_s16
from emitter.kernels.mcu_mul_s16 import mcu_mul_s16
from emitter.kernels.mcu_requantize_s8 import RequantizeParams
from emitter.kernels.mcu_requantize_s8_s16 import mcu_requantize_s8_s16
from emitter.kernels.mcu_requantize_s16 import mcu_requantize_s16
from emitter.kernels.mcu_requantize_s16_s8 import mcu_requantize_s16_s8
from emitter.kernels.mcu_transpose_s16 import mcu_transpose_s16
from emitter.kernels.s16 import SHIFT_MAX, SHIFT_MIN
from emitter.ops.a16_lut import LUT_FUNCTIONS, lut_rule, softmax_rule
from emitter.quant import quantize_multiplier

SUPPORTED = ("Conv (regular and depthwise), Gemm/MatMul, Add, Mul, MaxPool, AveragePool, GlobalAveragePool, "
             f"ReduceMean, {', '.join(LUT_FUNCTIONS)}, Softmax, Reshape/Flatten/Transpose, Relu/Clip and "
             "QuantizeLinear between int8 and int16")


def involves(node: Node, g: Graph) -> bool:
    """Does `node` read or write an int16 activation?"""
    return any(n and not g.t(n).is_const and g.t(n).dtype == "int16" for n in (*node.inputs, *node.outputs))


def refuse(node: Node, g: Graph, why: str = "") -> NodeUnsupported:
    dtypes = sorted({g.t(n).dtype for n in (*node.inputs, *node.outputs) if n and not g.t(n).is_const})
    what = f"{node.source or node.op} ({node.op}, activations {'/'.join(dtypes)})"
    return NodeUnsupported(f"int16 activations are supported for {SUPPORTED}; {what} is not yet"
                           f"{': ' + why if why else ''}. Quantize this layer with 8-bit activations, "
                           "or the whole model with activation_type=QInt8")


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    from emitter.ops import REGISTRY

    ins = [g.t(n) for n in node.inputs if n and not g.t(n).is_const]
    if node.op == "requantize":  # a QuantizeLinear between int8 and int16, a scale change, a clamp
        return requantize_rule(node, g)
    if any(t.dtype != "int16" for t in ins) or g.t(node.outputs[0]).dtype != "int16":
        raise refuse(node, g, "int8 and int16 activations in one layer; give its input and output one type "
                     "(a QuantizeLinear between them becomes a requantize layer)")
    if node.op == "lut":  # Sigmoid, Tanh: TFLite's int16 table kernels, their own Prepare
        if node.attrs["function"] not in LUT_FUNCTIONS:
            raise refuse(node, g)
        return lut_rule(node, g)
    if node.op == "softmax":
        return softmax_rule(node, g)
    rule = RULES.get(node.op)
    if rule is None:
        raise refuse(node, g)
    prep = REGISTRY[node.op].prepare
    tflite = replace(g, numerics="tflite")  # the int16x8 multipliers are TFLite's (quantize_multiplier)
    base = prep(node, tflite, "c")
    return rule(node, g, base)


def check_shifts(node: Node, g: Graph, shift: np.ndarray) -> None:
    s = np.asarray(shift)
    if s.size and (s.min() < SHIFT_MIN or s.max() > SHIFT_MAX):
        raise refuse(node, g, f"its scales give a requantization shift {int(s.max())} outside TFLite's "
                     f"[{SHIFT_MIN}, {SHIFT_MAX}] for int16")


def bias64(arg: Any) -> ConstArg | NullArg:
    """The int32 bias of the int8 Prepare as TFLite's int64 bias (the same values)."""
    if not isinstance(arg, ConstArg):
        return NullArg()
    return ConstArg("bias", np.asarray(arg.data, np.int64).ravel())


def conv_rule(node: Node, g: Graph, base: Prepared) -> Prepared:
    p: Any = base.params
    check_shifts(node, g, p.shift)
    ops = base.operands
    filt = ops["filter"]
    bias = bias64(ops["bias"])
    assert isinstance(filt, ConstArg)
    depthwise = node.attrs["group"] != 1
    fn = mcu_depthwise_conv2d_s16 if depthwise else mcu_conv2d_s16
    x, in_shape = node.inputs[0], (p.input.n, p.input.h, p.input.w, p.input.c)
    b = bias.data if isinstance(bias, ConstArg) else None

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, env[x].reshape(in_shape), filt.data, b).ravel()  # type: ignore[arg-type]

    return Prepared("mcu_depthwise_conv2d_s16" if depthwise else "mcu_conv2d_s16", p,
                    {"input": ops["input"], "filter": filt, "bias": bias, "output": ops["output"]},
                    golden, macs=base.macs, summary=base.summary)


def fc_rule(node: Node, g: Graph, base: Prepared) -> Prepared:
    p: Any = base.params
    check_shifts(node, g, p.shift)
    ops = base.operands
    packed, sums = ops["weights"], ops["kernel_sums"]
    assert isinstance(packed, ConstArg) and isinstance(sums, ConstArg)
    # the int8 Prepare stores its weights in its kernel's block layout and the bias as kernel sums
    # (emitter/kernels/mcu_fully_connected_s8.py): the int16 kernel takes them row-major, plain
    rows = fc_twin.unpack_weights(packed.data, p.out_features, p.in_features)
    w = ConstArg("weights", rows)
    bias = bias64(ConstArg("bias", fc_twin.bias_of_sums(p, rows, sums.data)))
    b = bias.data if isinstance(bias, ConstArg) else None
    x = node.inputs[0]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_fully_connected_s16(p, env[x].reshape(p.batches, p.in_features), w.data, b).ravel()

    return Prepared("mcu_fully_connected_s16", p, {"input": ops["input"], "weights": w, "bias": bias,
                                                  "output": ops["output"]},
                    golden, macs=base.macs, summary=base.summary)


def add_rule(node: Node, g: Graph, base: Prepared) -> Prepared:
    from emitter.ops.add import add_params

    p: Any = base.params
    if p.in1 != Bcast(1, p.size) or p.in2 != Bcast(1, p.size):
        raise refuse(node, g, "broadcasting")
    a, b, y = (g.t(n) for n in (*node.inputs[:2], node.outputs[0]))
    assert a.quant is not None and b.quant is not None and y.quant is not None
    p16 = add_params(p.size, p.in1, p.in2, a.quant.s, 0, b.quant.s, 0, y.quant.s, 0, p.act_min, p.act_max,
                     left_shift=LEFT_SHIFT)
    if node.attrs.get("subtract"):
        p16 = replace(p16, input2_multiplier=-p16.input2_multiplier)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_add_s16(p16, env[a.name], env[b.name])

    return Prepared("mcu_add_s16", p16, dict(base.operands), golden, macs=base.macs, summary=base.summary)


def mul_rule(node: Node, g: Graph, base: Prepared) -> Prepared:
    p: Any = base.params  # the int8 Prepare's multiplier is TFLite's s_a * s_b / s_out already
    if p.in1 != Bcast(1, p.size) or p.in2 != Bcast(1, p.size):
        raise refuse(node, g, "broadcasting")
    a, b = node.inputs[:2]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_mul_s16(p, env[a], env[b])

    return Prepared("mcu_mul_s16", p, dict(base.operands), golden, macs=base.macs, summary=base.summary)


def pool_rule(node: Node, g: Graph, base: Prepared) -> Prepared:
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


def move_rule(node: Node, g: Graph, base: Prepared) -> Prepared:
    if not base.kernel:  # a free view
        return base
    if base.kernel != "mcu_transpose_s8":
        raise refuse(node, g)
    p: Any = base.params
    x, shape = node.inputs[0], tuple(p.in_shape[:p.rank])

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_transpose_s16(p, env[x].reshape(shape)).ravel()

    return Prepared("mcu_transpose_s16", p, {"input": TensorArg(x), "output": TensorArg(node.outputs[0])},
                    golden, summary=base.summary)


REQUANTIZE = {("int16", "int16"): (mcu_requantize_s16, "mcu_requantize_s16"),
              ("int8", "int16"): (mcu_requantize_s8_s16, "mcu_requantize_s8_s16"),
              ("int16", "int8"): (mcu_requantize_s16_s8, "mcu_requantize_s16_s8")}


def requantize_rule(node: Node, g: Graph) -> Prepared:
    """TFLite's requantization (32-bit, double rounding) between any two of int8 and int16."""
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    assert x.quant is not None and y.quant is not None
    mult, shift = quantize_multiplier(x.quant.s / y.quant.s)
    if shift > 15:
        raise refuse(node, g, f"a scale ratio {x.quant.s / y.quant.s:.4g} too large to requantize")
    p = RequantizeParams(y.size, QuantIO(-x.quant.zp, y.quant.zp, node.attrs["act_min"], node.attrs["act_max"]),
                         mult, shift)
    fn, kernel = REQUANTIZE[(x.dtype, y.dtype)]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, env[x.name])

    return Prepared(kernel, p, {"input": TensorArg(x.name), "output": TensorArg(y.name)}, golden,
                    summary=f"{x.dtype} -> {y.dtype}")


RULES = {"conv": conv_rule, "fc": fc_rule, "add": add_rule, "mul": mul_rule, "maxpool": pool_rule, "avgpool": pool_rule,
         "relayout": move_rule, "transpose": move_rule, "reshape": move_rule}
