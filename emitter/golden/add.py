"""Golden of mcu_add_s8: TFLite int8 ADD (reference_integer_ops::Add), broadcast via Bcast.

With a = input1[(i // in1.inner) % in1.period] and b likewise, for every output element i:
  x1  = requant((a + input1_offset) << left_shift, input1_multiplier, input1_shift)   shift <= 0
  x2  = requant((b + input2_offset) << left_shift, input2_multiplier, input2_shift)
  out = clamp(requant(x1 + x2, output_multiplier, output_shift) + output_offset, act_min, act_max)
`add_params` is TFLite Micro's Prepare (add_common.cc) for float scales and zero points.
"""
from __future__ import annotations

import numpy as np

from emitter.errors import QuantError
from emitter.kernel_params import AddParams, Bcast
from emitter.quant import quantize_multiplier, requantize

LEFT_SHIFT_INT8 = 20


def broadcast_operand(x: np.ndarray, b: Bcast, size: int, what: str) -> np.ndarray:
    """Flat int8 operand of `b.period` elements -> int64 [size]; element i is
    x[(i // inner) % period]."""
    if b.inner < 1 or b.period < 1:
        raise ValueError(f"{what}: inner={b.inner} and period={b.period} must both be >= 1")
    flat = np.asarray(x).ravel()
    if flat.size != b.period:
        raise ValueError(f"{what}: expected {b.period} elements (the period), found {flat.size}")
    return flat.astype(np.int64)[(np.arange(size, dtype=np.int64) // b.inner) % b.period]


def check_range(what: str, value: int, lo: int, hi: int) -> None:
    if not lo <= value <= hi:
        raise ValueError(f"{what}={value} outside [{lo}, {hi}]")


def mcu_add_s8(p: AddParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Flat int8 operands (period elements each) -> flat int8 [p.size]."""
    check_range("size", p.size, 1, (1 << 31) - 1)
    check_range("left_shift", p.left_shift, 0, 20)
    check_range("input1_offset", p.input1_offset, -127, 128)
    check_range("input2_offset", p.input2_offset, -127, 128)
    check_range("output_offset", p.output_offset, -128, 127)
    check_range("input1_shift", p.input1_shift, -31, 0)
    check_range("input2_shift", p.input2_shift, -31, 0)
    check_range("output_shift", p.output_shift, -31, 30)
    check_range("act_min", p.act_min, -128, p.act_max)
    check_range("act_max", p.act_max, p.act_min, 127)
    x1 = broadcast_operand(a, p.in1, p.size, "add input1") + p.input1_offset
    x2 = broadcast_operand(b, p.in2, p.size, "add input2") + p.input2_offset
    scaled1 = requantize(x1 << p.left_shift, p.input1_multiplier, p.input1_shift)
    scaled2 = requantize(x2 << p.left_shift, p.input2_multiplier, p.input2_shift)
    raw = requantize(scaled1 + scaled2, p.output_multiplier, p.output_shift) + p.output_offset
    return np.clip(raw, p.act_min, p.act_max).astype(np.int8)


def _smaller_than_one(real: float, what: str) -> tuple[int, int]:
    """TFLite QuantizeMultiplierSmallerThanOneExp: 0 < real < 1, shift <= 0."""
    if not 0.0 < real < 1.0:
        raise QuantError(f"ADD {what} multiplier {real!r} must lie in (0, 1); "
                         "check the input and output scales")
    mult, shift = quantize_multiplier(real)
    if shift > 0:
        raise QuantError(f"ADD {what} multiplier {real!r} rounds up to 1.0")
    return mult, shift


def add_params(size: int, in1: Bcast, in2: Bcast, s1: float, zp1: int, s2: float, zp2: int,
               s_out: float, zp_out: int, act_min: int, act_max: int) -> AddParams:
    """TFLite Micro's int8 ADD Prepare: left_shift 20, twice the larger input scale as the
    common scale, every multiplier from the float32 scales in double precision."""
    scale1, scale2, scale_out = (float(np.float32(s)) for s in (s1, s2, s_out))
    if min(scale1, scale2, scale_out) <= 0.0:
        raise QuantError(f"ADD scales must be > 0, found {s1!r}, {s2!r} -> {s_out!r}")
    twice_max_input_scale = 2.0 * max(scale1, scale2)
    m1, sh1 = _smaller_than_one(scale1 / twice_max_input_scale, "input1")
    m2, sh2 = _smaller_than_one(scale2 / twice_max_input_scale, "input2")
    mo, sho = _smaller_than_one(
        twice_max_input_scale / ((1 << LEFT_SHIFT_INT8) * scale_out), "output")
    return AddParams(size=size, in1=in1, in2=in2, input1_offset=-zp1, input2_offset=-zp2,
                     output_offset=zp_out, left_shift=LEFT_SHIFT_INT8,
                     input1_multiplier=m1, input1_shift=sh1,
                     input2_multiplier=m2, input2_shift=sh2,
                     output_multiplier=mo, output_shift=sho, act_min=act_min, act_max=act_max)
