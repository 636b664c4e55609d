"""Twin of mcu_mul_s16: TFLite int16 MUL (reference_integer_ops Mul, int16), two same-size operands,
zero points 0:
  out = clamp(requant(a * b, output_multiplier, output_shift), act_min, act_max)
with requant the 32-bit double rounding of quant.requantize (|a * b| <= 2^30).
Params: mcu_mul_params_t, shared with the int8 kernel (broadcast fields must be the identity).

CMSIS-NN: arm_elementwise_mul_s16 (the same recipe; it ignores the offsets, all 0 here).
"""
from __future__ import annotations

import numpy as np

from emitter.calls import IntArg, Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import Bcast, check_range
from emitter.kernels.mcu_mul_s8 import MulParams
from emitter.kernels.s16 import check_clamp
from emitter.quant import requantize


def mcu_mul_s16(p: MulParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Flat int16 operands of p.size elements -> flat int16 [p.size]."""
    check_range("size", p.size, 1, (1 << 31) - 1)
    if p.in1 != Bcast(1, p.size) or p.in2 != Bcast(1, p.size):
        raise ValueError("mcu_mul_s16 does not broadcast")
    for what, v in (("input1_offset", p.input1_offset), ("input2_offset", p.input2_offset),
                    ("output_offset", p.output_offset)):
        check_range(what, v, 0, 0)
    check_range("output_shift", p.output_shift, -31, 30)
    check_clamp(p.act_min, p.act_max)
    raw = requantize(np.asarray(a, np.int64).ravel() * np.asarray(b, np.int64).ravel(),
                     p.output_multiplier, p.output_shift)
    return np.clip(raw, p.act_min, p.act_max).astype(np.int16)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, MulParams)
    ops = p.operands
    return conv.call(p, "arm_elementwise_mul_s16", {
        "input_1_vect": ops["input1"], "input_2_vect": ops["input2"], "input_1_offset": IntArg(0),
        "input_2_offset": IntArg(0), "output": ops["output"], "out_offset": IntArg(0),
        "out_mult": IntArg(c.output_multiplier), "out_shift": IntArg(c.output_shift),
        "out_activation_min": IntArg(c.act_min), "out_activation_max": IntArg(c.act_max),
        "block_size": IntArg(c.size)})


EXACT_IN_PLACE = True  # element i is read before element i is written


KERNEL = Kernel("mcu_mul_s16", exact_in_place=EXACT_IN_PLACE, to_cmsis=to_cmsis)
