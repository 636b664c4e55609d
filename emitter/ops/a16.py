"""int16 activations (TFLite's int16x8 mode): the Prepare of every layer that reads or writes an
int16 activation, in place of the op module's own.

int16 activations have zero point 0 (emitter/lower/state.py refuses others), weights are int8
symmetric, biases int64, requantization TFLite's 64-bit rule (emitter/kernels/s16.py), whatever
rounding contract the int8 layers of the model follow (onnxruntime requantizes int16 in float;
the difference is reported by verify). Each op's geometry and multipliers come from its own
module's Prepare (the int8 params structs are shared), then the int16 kernel replaces the call.
Each op module declares its own int16 variant, `A16 = Int16(rule)` beside its `prepare` (a module
without one refuses int16); emitter.ops.prepare() calls it for a layer that involves() int16:

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

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from emitter.calls import ConstArg, NullArg, Prepared
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Node
from emitter.kernels.s16 import SHIFT_MAX, SHIFT_MIN
from emitter.ops.a16_lut import LUT_FUNCTIONS

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


@dataclass(frozen=True)
class Int16:
    """An op module's int16 variant: rule(node, g) -> the layer's Prepare over int16 activations.
    mixed: the layer may read one type and write the other (requantize); otherwise a layer mixing
    int8 and int16 is refused before the rule runs."""
    rule: Callable[[Node, Graph], Prepared]
    mixed: bool = False


def tflite(g: Graph) -> Graph:
    """The graph an int16 rule runs its op's int8 Prepare on: the int16x8 multipliers are TFLite's
    (quantize_multiplier)."""
    return replace(g, numerics="tflite")


def prepare(node: Node, g: Graph, variant: Int16 | None) -> Prepared:
    """The Prepare of a layer that involves() int16, by its op module's declared variant."""
    if variant is not None and variant.mixed:
        return variant.rule(node, g)
    ins = [g.t(n) for n in node.inputs if n and not g.t(n).is_const]
    if any(t.dtype != "int16" for t in ins) or g.t(node.outputs[0]).dtype != "int16":
        raise refuse(node, g, "int8 and int16 activations in one layer; give its input and output one type "
                     "(a QuantizeLinear between them becomes a requantize layer)")
    if variant is None:
        raise refuse(node, g)
    return variant.rule(node, g)


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
