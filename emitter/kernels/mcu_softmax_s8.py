"""Twin of mcu_softmax_s8: TFLite int8 SOFTMAX (reference_ops::Softmax), gemmlowp fixed point.

Per row (all values int32 held in int64):
  diff  = in - max(row); elements with diff < diff_min are skipped (probability 0)
  a     = SRDHM(diff << input_left_shift, input_multiplier)             Q5.26
  e     = exp_on_negative_values(a)                                     Q0.31
  sum   = min(sum RoundingDivideByPOT(e, 12), INT32_MAX)                Q12.19
  scale = GetReciprocal(sum) -> Q0.31 and num_bits_over_unit
  mode 0: out = clamp(RoundingDivideByPOT(SRDHM(scale, e), num_bits_over_unit + 23) - 128)
          (0 where that exponent exceeds 31: TFLite aborts there)
  mode 1: p = RoundingDivideByPOT(SRDHM(scale, e), num_bits_over_unit)  probability, Q0.31
          out = clamp(requant(p, output_multiplier, output_shift) + output_offset)
The params are TFLite Micro's Prepare (ops/softmax.py). CMSIS-NN: arm_softmax_s8, mode 0 only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import IntArg, Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import check_range
from emitter.quant import (
    INT32_MAX,
    INT32_MIN,
    requantize,
    rounding_divide_by_pot,
    srdhm,
    wrap_int32,
)


@dataclass(frozen=True)
class SoftmaxParams:
    CTYPE: ClassVar[str] = "mcu_softmax_params_t"
    rows: int
    row_size: int
    input_multiplier: int
    input_left_shift: int
    diff_min: int
    output_mode: int
    output_multiplier: int
    output_shift: int
    output_offset: int


SCALED_DIFF_INTEGER_BITS = 5  # Q5.26 input differences
ACCUM_INTEGER_BITS = 12  # Q12.19 sum of exponentials
# exp(-2^k) in Q0.31 for k = -2..4: gemmlowp's barrel-shifter constants.
EXP_OF_MINUS_POT = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)


def sat_shl(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT for a positive exponent: x * 2^e, saturated."""
    return np.clip(np.asarray(x, dtype=np.int64) << exponent, INT32_MIN, INT32_MAX)


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """exp(a), a in [-1/4, 0), Q0.31: degree-4 Taylor expansion around -1/8."""
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = a + (1 << 28)  # a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(srdhm(x4_over_4 + x3, constant_1_over_3) + x2, 1)
    return constant_term + srdhm(np.asarray(constant_term), x + poly)


def exp_on_negative_values(a: np.ndarray) -> np.ndarray:
    """gemmlowp exp_on_negative_values: Q5.26 input <= 0 -> Q0.31 exp."""
    fractional_bits = 31 - SCALED_DIFF_INTEGER_BITS
    one_quarter = 1 << (fractional_bits - 2)
    a = np.asarray(a, dtype=np.int64)
    a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        sat_shl(a_mod_quarter_minus_one_quarter, SCALED_DIFF_INTEGER_BITS))
    remainder = wrap_int32(a_mod_quarter_minus_one_quarter - a)
    for k, multiplier in enumerate(EXP_OF_MINUS_POT):
        bit = 1 << (fractional_bits - 2 + k)
        result = np.where((remainder & bit) != 0, srdhm(result, multiplier), result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """gemmlowp 1 / (1 + a), a in [0, 1) Q0.31 -> Q0.31: Newton-Raphson in Q2.29."""
    s = np.asarray(a, dtype=np.int64) + INT32_MAX
    half_denominator = np.where(s >= 0, (s + 1) // 2, -((1 - s) // 2))  # RoundingHalfSum
    x = 1515870810 + srdhm(half_denominator, -1010580540)  # 48/17 - 32/17 * d
    for _ in range(3):
        one_minus_half_denominator_times_x = (1 << 29) - srdhm(half_denominator, x)
        x = x + sat_shl(srdhm(x, one_minus_half_denominator_times_x), 2)
    return sat_shl(x, 1)


def get_reciprocal(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetReciprocal per row: Q12.19 sums > 0 -> (Q0.31 scale, num_bits_over_unit)."""
    headroom_plus_one = np.array([32 - int(s).bit_length() for s in sums], dtype=np.int64)
    num_bits_over_unit = ACCUM_INTEGER_BITS - headroom_plus_one
    shifted_sum_minus_one = (np.asarray(sums, dtype=np.int64) << headroom_plus_one) - (1 << 31)
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


def mcu_softmax_s8(p: SoftmaxParams, x: np.ndarray) -> np.ndarray:
    """int8 [rows, row_size] -> int8 [rows, row_size], softmax over the last axis."""
    check_range("rows", p.rows, 1, (1 << 31) - 1)
    check_range("row_size", p.row_size, 1, (1 << 31) - 1)
    check_range("input_multiplier", p.input_multiplier, 0, INT32_MAX)
    check_range("input_left_shift", p.input_left_shift, 0, 31)
    check_range("diff_min", p.diff_min, INT32_MIN, 0)
    check_range("output_mode", p.output_mode, 0, 1)
    if p.output_mode == 0:
        check_range("output_offset (mode 0)", p.output_offset, -128, -128)
    else:
        check_range("output_shift", p.output_shift, -31, 30)
        check_range("output_offset", p.output_offset, -128, 127)
    if x.size != p.rows * p.row_size:
        raise ValueError(f"softmax input: expected {p.rows} x {p.row_size}, found {x.shape}")
    xi = x.astype(np.int64).reshape(p.rows, p.row_size)

    diff = xi - xi.max(axis=1, keepdims=True)
    valid = diff >= p.diff_min
    exps = exp_on_negative_values(requantize(diff, p.input_multiplier, p.input_left_shift))
    terms = np.where(valid, rounding_divide_by_pot(exps, ACCUM_INTEGER_BITS), 0)
    sums = np.minimum(terms.sum(axis=1), INT32_MAX)  # terms >= 0: saturating running sum
    shifted_scale, num_bits_over_unit = get_reciprocal(sums)
    product = srdhm(shifted_scale[:, None], exps)

    if p.output_mode == 0:
        exponent = (num_bits_over_unit + 31 - 8)[:, None]
        unsat = rounding_divide_by_pot(product, np.minimum(exponent, 31))
        unsat = np.where(valid & (exponent <= 31), unsat, 0)
        out = unsat - 128
    else:
        prob = np.where(valid, rounding_divide_by_pot(product, num_bits_over_unit[:, None]), 0)
        out = requantize(prob, p.output_multiplier, p.output_shift) + p.output_offset
    return np.clip(out, -128, 127).astype(np.int8)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, SoftmaxParams)
    if c.output_mode != 0:
        return None
    return conv.call(p, "arm_softmax_s8", {
        "input": p.operands["input"], "num_rows": IntArg(c.rows), "row_size": IntArg(c.row_size),
        "mult": IntArg(c.input_multiplier), "shift": IntArg(c.input_left_shift), "diff_min": IntArg(c.diff_min),
        "output": p.operands["output"]})


KERNEL = Kernel("mcu_softmax_s8", to_cmsis=to_cmsis)
