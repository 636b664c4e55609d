"""Twin of mcu_avgpool_s16: TFLite int16 AVERAGE_POOL_2D; input and output share scale (zero point 0).

  out = clamp(round(sum of the int16 values over the valid taps / their count), act_min, act_max)
with round half away from zero (TFLite), int32 sum. Padding taps are neither summed nor counted;
a window with no valid tap is an error. Params: mcu_pool_params_t (rounding must be ROUND_TFLITE).

CMSIS-NN: arm_avgpool_s16 (scratch sized by CMSIS-NN).
"""
from __future__ import annotations

import numpy as np

from emitter.calls import Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import PoolParams, check_shape, dims_shape, div_round, windows
from emitter.kernels.mcu_maxpool_s16 import check_pool_s16
from emitter.quant import ROUND_TFLITE


def mcu_avgpool_s16(p: PoolParams, x: np.ndarray) -> np.ndarray:
    """int16 NHWC [N, H_in, W_in, C] -> int16 NHWC [N, H_out, W_out, C]."""
    check_pool_s16(p)
    check_shape("avgpool input", x, dims_shape(p.input))
    if p.rounding != ROUND_TFLITE:
        raise ValueError("mcu_avgpool_s16 rounds half away from zero only (TFLite)")
    if p.filter_h * p.filter_w > 65536:
        raise ValueError("an int16 average pool window holds at most 65536 taps (int32 sum)")
    xi = x.astype(np.int64)
    out = np.empty(dims_shape(p.output), dtype=np.int64)
    for oy, ox, y0, y1, x0, x1 in windows(p):
        count = max(0, y1 - y0) * max(0, x1 - x0)
        if count == 0:
            raise ValueError(f"avgpool window at output ({oy}, {ox}) lies entirely in the padding")
        out[:, oy, ox, :] = div_round(xi[:, y0:y1, x0:x1, :].sum(axis=(1, 2)), count, ROUND_TFLITE)
    return np.clip(out, p.act_min, p.act_max).astype(np.int16)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    from emitter.kernels.mcu_avgpool_s8 import pool_call

    return pool_call(conv, p, "arm_avgpool_s16")


KERNEL = Kernel("mcu_avgpool_s16", to_cmsis=to_cmsis)
