"""Golden of mcu_maxpool_s8: TFLite int8 MAX_POOL_2D (reference_integer_ops::MaxPool).

  out = clamp(max of the valid taps, act_min, act_max)
Padding taps are skipped; a window with no valid tap gives clamp(-128), as TFLite Micro does.
"""
from __future__ import annotations

import numpy as np

from emitter.golden.avgpool import check_pool, windows
from emitter.golden.conv2d import check_shape, dims_shape
from emitter.kernel_params import PoolParams


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
