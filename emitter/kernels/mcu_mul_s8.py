"""Twin of mcu_mul_s8: TFLite int8 MUL (reference_integer_ops::MulElementwise), broadcast
via Bcast; with rounding ROUND_NEAREST_EVEN (onnxruntime's numerics) the requantization is one
rounding of the exact product, half to even (the multiplier holds a float32 scale exactly).

  out = clamp(requant((a + input1_offset) * (b + input2_offset), output_multiplier, output_shift)
              + output_offset, act_min, act_max)
The multiplier is TFLite Micro's Prepare (ops/mul.py). CMSIS-NN: arm_elementwise_mul_s8, without
broadcast.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import IntArg, Prepared
from emitter.kernels.base import Kernel, Rounded
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import Bcast, broadcast_operand, check_range
from emitter.quant import ROUND_NEAREST_EVEN, ROUND_TFLITE, requantize, requantize_rne


@dataclass(frozen=True)
class MulParams(Rounded):
    CTYPE: ClassVar[str] = "mcu_mul_params_t"
    size: int
    in1: Bcast
    in2: Bcast
    input1_offset: int
    input2_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: int = ROUND_TFLITE

    def rounding_mode(self) -> int:
        return self.rounding


def mcu_mul_s8(p: MulParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Flat int8 operands (period elements each) -> flat int8 [p.size]."""
    check_range("size", p.size, 1, (1 << 31) - 1)
    check_range("output_shift", p.output_shift, -31, 30)
    check_range("input1_offset", p.input1_offset, -127, 128)
    check_range("input2_offset", p.input2_offset, -127, 128)
    check_range("output_offset", p.output_offset, -128, 127)
    check_range("act_min", p.act_min, -128, p.act_max)
    check_range("act_max", p.act_max, p.act_min, 127)
    x1 = broadcast_operand(a, p.in1, p.size, "mul input1") + p.input1_offset
    x2 = broadcast_operand(b, p.in2, p.size, "mul input2") + p.input2_offset
    if p.rounding not in (ROUND_TFLITE, ROUND_NEAREST_EVEN):
        raise ValueError(f"mul: rounding {p.rounding}")
    if p.rounding == ROUND_TFLITE:
        req = requantize(x1 * x2, p.output_multiplier, p.output_shift)
    else:  # mcu_requantize_mode: kept in [-256, 256]
        req = np.clip(requantize_rne(x1 * x2, p.output_multiplier, p.output_shift), -256, 256)
    raw = req + p.output_offset
    return np.clip(raw, p.act_min, p.act_max).astype(np.int8)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, MulParams)
    if c.rounding != ROUND_TFLITE:
        return None
    full = Bcast(1, c.size)
    if c.in1 != full or c.in2 != full:
        return None
    ops = p.operands
    return conv.call(p, "arm_elementwise_mul_s8", {
        "input_1_vect": ops["input1"], "input_2_vect": ops["input2"],
        "input_1_offset": IntArg(c.input1_offset), "input_2_offset": IntArg(c.input2_offset),
        "output": ops["output"], "out_offset": IntArg(c.output_offset), "out_mult": IntArg(c.output_multiplier),
        "out_shift": IntArg(c.output_shift), "out_activation_min": IntArg(c.act_min),
        "out_activation_max": IntArg(c.act_max), "block_size": IntArg(c.size)})


KERNEL = Kernel("mcu_mul_s8", to_cmsis=to_cmsis)
