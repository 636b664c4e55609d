"""Twin of mcu_avgpool_requant_s16: int16 average with requantization and one rounding (TFLite MEAN
for int16; ONNX GlobalAveragePool, ReduceMean, AveragePool with a fixed count), zero points 0:
  acc = sum of in over the valid taps (int32; at most 65535 taps)
  out = clamp(requant(acc, multiplier, shift), pool.act_min, pool.act_max)
multiplier/shift encode in_scale / (out_scale * filter_h * filter_w) (ops/pool.py); requant is the
32-bit double rounding of quant.requantize. Params: mcu_avgpool_requant_params_t (int8 kernel's).
CMSIS-NN has no such kernel.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import check_range, check_shape, dims_shape, windows
from emitter.kernels.mcu_avgpool_requant_s8 import AvgPoolRequantParams
from emitter.kernels.mcu_maxpool_s16 import check_pool_s16
from emitter.quant import ROUND_TFLITE, requantize

MAX_TAPS = 65535  # 32768 * 65535 < 2^31: the int32 sum cannot overflow


def mcu_avgpool_requant_s16(p: AvgPoolRequantParams, x: np.ndarray) -> np.ndarray:
    """int16 NHWC [N, H_in, W_in, C] -> int16 NHWC [N, H_out, W_out, C]."""
    pool = p.pool
    check_pool_s16(pool)
    check_range("input_offset", p.input_offset, 0, 0)
    check_range("output_offset", p.output_offset, 0, 0)
    check_range("shift", p.shift, -31, 30)
    check_range("filter taps", pool.filter_h * pool.filter_w, 1, MAX_TAPS)
    if pool.rounding != ROUND_TFLITE:
        raise ValueError("mcu_avgpool_requant_s16 rounds as TFLite only")
    check_shape("avgpool_requant input", x, dims_shape(pool.input))
    xi = x.astype(np.int64)
    acc = np.empty(dims_shape(pool.output), dtype=np.int64)
    for oy, ox, y0, y1, x0, x1 in windows(pool):
        if y1 <= y0 or x1 <= x0:
            raise ValueError(f"avgpool_requant window at output ({oy}, {ox}) lies entirely in the padding")
        acc[:, oy, ox, :] = xi[:, y0:y1, x0:x1, :].sum(axis=(1, 2))
    raw = requantize(acc, p.multiplier, p.shift)
    return np.clip(raw, pool.act_min, pool.act_max).astype(np.int16)


KERNEL = Kernel("mcu_avgpool_requant_s16")
