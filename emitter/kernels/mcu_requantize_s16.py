"""Twins of mcu_requantize_s16 (int16 -> int16), and, beside it, of mcu_requantize_s8_s16 and
mcu_requantize_s16_s8 (their own small modules): element-wise requantization between activation
types, TFLite's QUANTIZE / requantize (reference_ops::Requantize):

  out = clamp(requant(in + input_offset, multiplier, shift) + output_offset, act_min, act_max)
with requant the 32-bit double rounding of quant.requantize, shift in [-31, 15], and the clamp
inside the output type. Params: mcu_requantize_params_t, shared with mcu_requantize_s8.
CMSIS-NN has no such kernel.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import check_range
from emitter.kernels.mcu_requantize_s8 import RequantizeParams
from emitter.quant import ROUND_TFLITE, requantize

RANGES = {"int8": (-128, 127), "int16": (-32768, 32767)}


def requantize_between(p: RequantizeParams, x: np.ndarray, in_type: str, out_type: str) -> np.ndarray:
    """Flat `in_type` array of p.size elements -> `out_type` array of the same shape."""
    check_range("size", p.size, 1, (1 << 31) - 1)
    if x.size != p.size:
        raise ValueError(f"requantize input: expected {p.size} elements, found {x.size}")
    lo, hi = RANGES[in_type]
    check_range("input_offset", p.q.input_offset, -hi, -lo)
    check_range("output_offset", p.q.output_offset, *RANGES[out_type])
    check_range("shift", p.shift, -31, 15)
    check_range("act_min", p.q.act_min, RANGES[out_type][0], p.q.act_max)
    check_range("act_max", p.q.act_max, p.q.act_min, RANGES[out_type][1])
    if p.q.rounding != ROUND_TFLITE:
        raise ValueError("requantization between int8 and int16 rounds as TFLite only")
    raw = requantize(x.astype(np.int64) + p.q.input_offset, p.multiplier, p.shift)
    return np.clip(raw + p.q.output_offset, p.q.act_min, p.q.act_max).astype(out_type)


def mcu_requantize_s16(p: RequantizeParams, x: np.ndarray) -> np.ndarray:
    return requantize_between(p, x, "int16", "int16")


EXACT_IN_PLACE = True  # element i is read before element i is written


KERNEL = Kernel("mcu_requantize_s16", exact_in_place=EXACT_IN_PLACE)
