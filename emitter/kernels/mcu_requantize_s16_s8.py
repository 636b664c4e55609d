"""Twin of mcu_requantize_s16_s8: int16 -> int8 requantization (a
QuantizeLinear to int8 behind an int16 layer); the formula of emitter/kernels/mcu_requantize_s16.py."""
from __future__ import annotations

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.mcu_requantize_s8 import RequantizeParams
from emitter.kernels.mcu_requantize_s16 import requantize_between

RUNTIME_DEPS = ("mcu_requantize_s16",)  # its C is a wrapper of the shared loop in mcu_requantize_s16.c


def mcu_requantize_s16_s8(p: RequantizeParams, x: np.ndarray) -> np.ndarray:
    return requantize_between(p, x, "int16", "int8")


KERNEL = Kernel("mcu_requantize_s16_s8", runtime_deps=RUNTIME_DEPS)
