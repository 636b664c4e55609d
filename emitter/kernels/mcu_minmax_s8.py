"""Twin of mcu_minmax_s8: element-wise Min/Max of two int8 operands with their own
quantization, broadcast via Bcast (as mcu_add_s8). For every output element i, with
a = input1[(i // in1.inner) % in1.period] and b likewise:
  a1  = requant(a + input1_offset, input1_multiplier, input1_shift) + output_offset
  a2  = requant(b + input2_offset, input2_multiplier, input2_shift) + output_offset
  out = clamp(max(a1, a2) if is_max else min(a1, a2), act_min, act_max)
The multipliers (s_in / s_out) come from ops/minmax.py. CMSIS-NN has no such kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import Bcast, broadcast_operand, check_range
from emitter.quant import requantize

INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class MinMaxParams:
    """Each input requantized to the output scale, then min or max."""
    CTYPE: ClassVar[str] = "mcu_minmax_params_t"
    size: int
    in1: Bcast
    in2: Bcast
    is_max: int
    input1_offset: int
    input1_multiplier: int
    input1_shift: int
    input2_offset: int
    input2_multiplier: int
    input2_shift: int
    output_offset: int
    act_min: int
    act_max: int


def mcu_minmax_s8(p: MinMaxParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Flat int8 operands (period elements each) -> flat int8 [p.size]."""
    check_range("size", p.size, 1, INT32_MAX)
    check_range("is_max", p.is_max, 0, 1)
    check_range("input1_offset", p.input1_offset, -127, 128)
    check_range("input2_offset", p.input2_offset, -127, 128)
    check_range("output_offset", p.output_offset, -128, 127)
    check_range("input1_multiplier", p.input1_multiplier, 0, INT32_MAX)
    check_range("input2_multiplier", p.input2_multiplier, 0, INT32_MAX)
    check_range("input1_shift", p.input1_shift, -31, 30)
    check_range("input2_shift", p.input2_shift, -31, 30)
    check_range("act_min", p.act_min, -128, p.act_max)
    check_range("act_max", p.act_max, p.act_min, 127)
    x1 = broadcast_operand(a, p.in1, p.size, "minmax input1") + p.input1_offset
    x2 = broadcast_operand(b, p.in2, p.size, "minmax input2") + p.input2_offset
    a1 = requantize(x1, p.input1_multiplier, p.input1_shift) + p.output_offset
    a2 = requantize(x2, p.input2_multiplier, p.input2_shift) + p.output_offset
    raw = np.maximum(a1, a2) if p.is_max else np.minimum(a1, a2)
    return np.clip(raw, p.act_min, p.act_max).astype(np.int8)


KERNEL = Kernel("mcu_minmax_s8")
