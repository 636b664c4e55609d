"""Golden of mcu_mul_s8: TFLite int8 MUL (reference_integer_ops::MulElementwise), broadcast
via Bcast.

  out = clamp(requant((a + input1_offset) * (b + input2_offset), output_multiplier, output_shift)
              + output_offset, act_min, act_max)
`mul_params` is TFLite Micro's Prepare (mul_common.cc): real = s1 * s2 / s_out, QuantizeMultiplier.
"""
from __future__ import annotations

import numpy as np

from emitter.errors import QuantError
from emitter.golden.add import broadcast_operand, check_range
from emitter.kernel_params import Bcast, MulParams
from emitter.quant import quantize_multiplier, requantize


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
    raw = requantize(x1 * x2, p.output_multiplier, p.output_shift) + p.output_offset
    return np.clip(raw, p.act_min, p.act_max).astype(np.int8)


def mul_params(size: int, in1: Bcast, in2: Bcast, s1: float, zp1: int, s2: float, zp2: int,
               s_out: float, zp_out: int, act_min: int, act_max: int) -> MulParams:
    """TFLite Micro's int8 MUL Prepare from float32 scales (multiplier computed in double)."""
    scale1, scale2, scale_out = (float(np.float32(s)) for s in (s1, s2, s_out))
    if min(scale1, scale2, scale_out) <= 0.0:
        raise QuantError(f"MUL scales must be > 0, found {s1!r}, {s2!r} -> {s_out!r}")
    mult, shift = quantize_multiplier(scale1 * scale2 / scale_out)
    return MulParams(size=size, in1=in1, in2=in2, input1_offset=-zp1, input2_offset=-zp2,
                     output_offset=zp_out, output_multiplier=mult, output_shift=shift,
                     act_min=act_min, act_max=act_max)
