"""Twin of mcu_requantize_s8_s16: int8 -> int16 requantization (a QuantizeLinear to int16 behind an
int8 layer); the formula of emitter/kernels/mcu_requantize_s16.py. Not in place (the output is wider)."""
from __future__ import annotations

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.mcu_requantize_s8 import RequantizeParams
from emitter.kernels.mcu_requantize_s16 import requantize_between

RUNTIME_DEPS = ("mcu_requantize_s16",)  # its C is a wrapper of the shared loop in mcu_requantize_s16.c


def mcu_requantize_s8_s16(p: RequantizeParams, x: np.ndarray) -> np.ndarray:
    return requantize_between(p, x, "int8", "int16")


KERNEL = Kernel("mcu_requantize_s8_s16", runtime_deps=RUNTIME_DEPS)
