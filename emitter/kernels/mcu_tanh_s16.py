"""Twin of mcu_tanh_s16: TFLite int16 TANH (reference_integer_ops::Tanh, int16), zero points 0, through the
sigmoid table of mcu_sigmoid_s16 (tanh(x) = 2 * sigmoid(2x) - 1: one table step = 256 input units of
1/(3 * 4096)):

  x  = (in * input_multiplier + 2^(input_shift - 1)) >> input_shift
  r  = |x| >> 8 >= 255 ? 0xFFFF << 8 : (t[|x| >> 8] << 8) + (|x| & 255) * (t[.. + 1] - t[..])    sigmoid(2|x|), Q0.24
  mode 0 (output scale 2^-15): out = x >= 0 ? (r - 2^23 + 2^7) >> 8 : (2^23 - r + 2^7 - 1) >> 8
  mode 1 (any other scale):    out = requant(x >= 0 ? r - 2^23 : 2^23 - r, output_multiplier, output_shift)
(r - 2^23 is tanh(|x|) in Q0.23), then clamped to [act_min, act_max]. Params: mcu_activation_s16_params_t
(mcu_sigmoid_s16.py). CMSIS-NN: arm_nn_activation_s16, power-of-two input scales only; portable here.
"""
from __future__ import annotations

import numpy as np

from emitter.calls import Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.mcu_sigmoid_s16 import ActivationS16Params, check, interpolate, rescale
from emitter.quant import requantize


def mcu_tanh_s16(p: ActivationS16Params, table: np.ndarray, x: np.ndarray) -> np.ndarray:
    """int16 array of p.size elements -> flat int16 [p.size]."""
    check(p, table, x)
    v = rescale(p, x)
    r = interpolate(table, np.abs(v), 8, 0xFFFF << 8)
    if p.output_mode == 0:
        out = np.where(v >= 0, (r - (1 << 23) + (1 << 7)) >> 8, ((1 << 23) - r + (1 << 7) - 1) >> 8)
    else:
        out = requantize(np.where(v >= 0, r - (1 << 23), (1 << 23) - r), p.output_multiplier, p.output_shift)
    return np.clip(out, p.act_min, p.act_max).astype(np.int16)


EXACT_IN_PLACE = True  # element i is read before element i is written


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    conv.refusal = ("int16 Tanh stays portable: "
                    "CMSIS-NN's arm_nn_activation_s16 takes power-of-two input scales and the 2^-15 output scale only")
    return None


KERNEL = Kernel("mcu_tanh_s16", exact_in_place=EXACT_IN_PLACE, to_cmsis=to_cmsis)
