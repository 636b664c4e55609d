"""Golden of mcu_minmax_s8: element-wise Min/Max of two int8 operands with their own
quantization, broadcast via Bcast (as mcu_add_s8). For every output element i, with
a = input1[(i // in1.inner) % in1.period] and b likewise:
  a1  = requant(a + input1_offset, input1_multiplier, input1_shift) + output_offset
  a2  = requant(b + input2_offset, input2_multiplier, input2_shift) + output_offset
  out = clamp(max(a1, a2) if is_max else min(a1, a2), act_min, act_max)
`minmax_params` builds the multipliers of s_in / s_out from the float32 scales in double precision
(TFLite QuantizeMultiplier); equal input and output quantization requantizes exactly.
"""
from __future__ import annotations

import numpy as np

from emitter.errors import QuantError
from emitter.golden.add import broadcast_operand, check_range
from emitter.kernel_params import Bcast, MinMaxParams
from emitter.quant import quantize_multiplier, requantize

INT32_MAX = (1 << 31) - 1


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
