"""Twin of mcu_add_s8: TFLite int8 ADD (reference_integer_ops::Add), broadcast via Bcast.

With a = input1[(i // in1.inner) % in1.period] and b likewise, for every output element i:
  x1  = requant((a + input1_offset) << left_shift, input1_multiplier, input1_shift)   shift <= 0
  x2  = requant((b + input2_offset) << left_shift, input2_multiplier, input2_shift)
  out = clamp(requant(x1 + x2, output_multiplier, output_shift) + output_offset, act_min, act_max)
The multipliers are TFLite Micro's Prepare (ops/add.py); Sub negates input2_multiplier.

CMSIS-NN: arm_elementwise_add_s8, without broadcast or subtraction.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from emitter.calls import IntArg, Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import Bcast, broadcast_operand, check_range
from emitter.quant import requantize


@dataclass(frozen=True)
class AddParams:
    CTYPE: ClassVar[str] = "mcu_add_params_t"
    size: int
    in1: Bcast
    in2: Bcast
    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int


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


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, AddParams)
    full = Bcast(1, c.size)
    if c.in1 != full or c.in2 != full or c.input2_multiplier < 0:
        return None
    ops = p.operands
    return conv.call(p, "arm_elementwise_add_s8", {
        "input_1_vect": ops["input1"], "input_2_vect": ops["input2"],
        "input_1_offset": IntArg(c.input1_offset), "input_1_mult": IntArg(c.input1_multiplier),
        "input_1_shift": IntArg(c.input1_shift), "input_2_offset": IntArg(c.input2_offset),
        "input_2_mult": IntArg(c.input2_multiplier), "input_2_shift": IntArg(c.input2_shift),
        "left_shift": IntArg(c.left_shift), "output": ops["output"], "out_offset": IntArg(c.output_offset),
        "out_mult": IntArg(c.output_multiplier), "out_shift": IntArg(c.output_shift),
        "out_activation_min": IntArg(c.act_min), "out_activation_max": IntArg(c.act_max),
        "block_size": IntArg(c.size)})


BAND_C = "mcu_add_s8_band"  # mcu_runtime/support/mcu_band.c
EXACT_IN_PLACE = True  # element i is read before element i is written: the output may lie exactly on an input


def band_rows(p: AddParams, row_size: int, o0: int, o1: int) -> tuple[AddParams, int, int]:
    """Rows [o0, o1) of `row_size` elements each of an add of two whole same-size operands (both
    operands read the same rows)."""
    rows = p.size // row_size if row_size > 0 and p.size % row_size == 0 else 0
    if not (0 <= o0 < o1 <= rows and p.in1 == p.in2 == Bcast(1, p.size)):
        raise ValueError(f"add band [{o0}, {o1}) of {rows} rows: needs whole same-size operands")
    size = (o1 - o0) * row_size
    return replace(p, size=size, in1=Bcast(1, size), in2=Bcast(1, size)), o0, o1


KERNEL = Kernel("mcu_add_s8", row_band=band_rows, band_c=BAND_C, exact_in_place=EXACT_IN_PLACE, to_cmsis=to_cmsis)
