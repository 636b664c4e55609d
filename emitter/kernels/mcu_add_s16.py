"""Twin of mcu_add_s16: TFLite int16x8 ADD (the general recipe of ADD with left_shift 15; TFLite
Micro's Prepare for int16 outputs), element-wise over two int16 operands of the same size.

  x1  = requant((a + input1_offset) << left_shift, input1_multiplier, input1_shift)   shift <= 0
  x2  = requant((b + input2_offset) << left_shift, input2_multiplier, input2_shift)
  out = clamp(requant(x1 + x2, output_multiplier, output_shift) + output_offset, act_min, act_max)
with requant = TFLite's 32-bit double rounding (quant.requantize), offsets 0, left_shift 15.
Params: mcu_add_params_t, shared with the int8 kernel (broadcast fields must be the identity).

CMSIS-NN: arm_elementwise_add_s16 (to_cmsis below).
"""
from __future__ import annotations

import numpy as np

from emitter.calls import IntArg, Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import Bcast, check_range
from emitter.kernels.mcu_add_s8 import AddParams
from emitter.kernels.s16 import check_clamp
from emitter.quant import requantize

LEFT_SHIFT = 15


def mcu_add_s16(p: AddParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Flat int16 operands of p.size elements -> flat int16 [p.size]."""
    check_range("size", p.size, 1, (1 << 31) - 1)
    if p.in1 != Bcast(1, p.size) or p.in2 != Bcast(1, p.size):
        raise ValueError("mcu_add_s16 does not broadcast")
    check_range("left_shift", p.left_shift, 0, LEFT_SHIFT)
    for what, v in (("input1_offset", p.input1_offset), ("input2_offset", p.input2_offset),
                    ("output_offset", p.output_offset)):
        check_range(what, v, 0, 0)
    check_range("input1_shift", p.input1_shift, -31, 0)
    check_range("input2_shift", p.input2_shift, -31, 0)
    check_range("output_shift", p.output_shift, -31, 30)
    check_clamp(p.act_min, p.act_max)
    x1 = np.asarray(a, np.int64).ravel() + p.input1_offset
    x2 = np.asarray(b, np.int64).ravel() + p.input2_offset
    scaled1 = requantize(x1 << p.left_shift, p.input1_multiplier, p.input1_shift)
    scaled2 = requantize(x2 << p.left_shift, p.input2_multiplier, p.input2_shift)
    raw = requantize(scaled1 + scaled2, p.output_multiplier, p.output_shift) + p.output_offset
    return np.clip(raw, p.act_min, p.act_max).astype(np.int16)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    """arm_elementwise_add_s16: the same recipe (32-bit double rounding), no subtraction."""
    c = p.params
    assert isinstance(c, AddParams)
    if c.input2_multiplier < 0:
        return None
    ops = p.operands
    return conv.call(p, "arm_elementwise_add_s16", {
        "input_1_vect": ops["input1"], "input_2_vect": ops["input2"],
        "input_1_offset": IntArg(0), "input_1_mult": IntArg(c.input1_multiplier),
        "input_1_shift": IntArg(c.input1_shift), "input_2_offset": IntArg(0),
        "input_2_mult": IntArg(c.input2_multiplier), "input_2_shift": IntArg(c.input2_shift),
        "left_shift": IntArg(c.left_shift), "output": ops["output"], "out_offset": IntArg(0),
        "out_mult": IntArg(c.output_multiplier), "out_shift": IntArg(c.output_shift),
        "out_activation_min": IntArg(c.act_min), "out_activation_max": IntArg(c.act_max),
        "block_size": IntArg(c.size)})


KERNEL = Kernel("mcu_add_s16", to_cmsis=to_cmsis)
