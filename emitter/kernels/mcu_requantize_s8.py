"""Twin of mcu_requantize_s8: element-wise int8 requantization (scale/zero-point change,
standalone Relu/Clip):
  out = clamp(requant(in + input_offset, multiplier, shift) + output_offset, act_min, act_max)
CMSIS-NN has no such kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel, Rounded
from emitter.kernels.common import QuantIO, check_range
from emitter.quant import ROUND_TFLITE, requantize, requantize_rne


@dataclass(frozen=True)
class RequantizeParams(Rounded):
    CTYPE: ClassVar[str] = "mcu_requantize_params_t"
    size: int
    q: QuantIO
    multiplier: int
    shift: int

    def rounding_mode(self) -> int:
        return self.q.rounding


def mcu_requantize_s8(p: RequantizeParams, x: np.ndarray) -> np.ndarray:
    """int8 array of p.size elements (any shape) -> int8 array of the same shape."""
    check_range("size", p.size, 1, (1 << 31) - 1)
    if x.size != p.size:
        raise ValueError(f"requantize input: expected {p.size} elements, found {x.size}")
    check_range("input_offset", p.q.input_offset, -127, 128)
    check_range("output_offset", p.q.output_offset, -128, 127)
    check_range("shift", p.shift, -31, 30)
    check_range("act_min", p.q.act_min, -128, p.q.act_max)
    check_range("act_max", p.q.act_max, p.q.act_min, 127)
    if p.q.rounding == ROUND_TFLITE:
        raw = requantize(x.astype(np.int64) + p.q.input_offset, p.multiplier, p.shift)
    else:  # onnxruntime numerics (C: mcu_requantize_mode keeps it in [-256, 256])
        raw = np.clip(requantize_rne(x.astype(np.int64) + p.q.input_offset, p.multiplier, p.shift), -256, 256)
    return np.clip(raw + p.q.output_offset, p.q.act_min, p.q.act_max).astype(np.int8)


EXACT_IN_PLACE = True  # element i is read before element i is written (mcu_nn.h: "In place OK")


KERNEL = Kernel("mcu_requantize_s8", exact_in_place=EXACT_IN_PLACE)
