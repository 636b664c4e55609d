"""Twin of mcu_maxpool_s8: TFLite int8 MAX_POOL_2D (reference_integer_ops::MaxPool).

  out = clamp(max of the valid taps, act_min, act_max)
Padding taps are skipped; a window with no valid tap gives clamp(-128), as TFLite Micro does.

CMSIS-NN: arm_max_pool_s8.
"""
from __future__ import annotations

import numpy as np

from emitter.calls import Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import PoolParams, check_pool, check_shape, dims_shape, pool_band, windows
from emitter.kernels.mcu_avgpool_s8 import pool_call


def mcu_maxpool_s8(p: PoolParams, x: np.ndarray) -> np.ndarray:
    """int8 NHWC [N, H_in, W_in, C] -> int8 NHWC [N, H_out, W_out, C]."""
    check_pool(p)
    check_shape("maxpool input", x, dims_shape(p.input))
    xi = x.astype(np.int64)
    out = np.full(dims_shape(p.output), -128, dtype=np.int64)
    for oy, ox, y0, y1, x0, x1 in windows(p):
        if y1 > y0 and x1 > x0:
            out[:, oy, ox, :] = xi[:, y0:y1, x0:x1, :].max(axis=(1, 2))
    return np.clip(out, p.act_min, p.act_max).astype(np.int8)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    return pool_call(conv, p, "arm_max_pool_s8")


BAND_C = "mcu_pool_band"  # mcu_runtime/support/mcu_band.c; overlap rule as mcu_conv2d_s8.band
band = pool_band


KERNEL = Kernel("mcu_maxpool_s8", band=band, band_c=BAND_C, to_cmsis=to_cmsis)
