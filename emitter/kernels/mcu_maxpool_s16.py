"""Twin of mcu_maxpool_s16: TFLite int16 MAX_POOL_2D; input and output share scale (zero point 0).

  out = clamp(max over the taps inside the input of in[...], act_min, act_max)
Padding taps are skipped; a window with no valid tap yields clamp(-32768). Params: mcu_pool_params_t.

CMSIS-NN: arm_max_pool_s16 (to_cmsis below).
"""
from __future__ import annotations

import numpy as np

from emitter.calls import Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import PoolParams, check_shape, dims_shape, windows
from emitter.kernels.s16 import INT16_MIN, check_clamp


def check_pool_s16(p: PoolParams) -> None:
    i, o = p.input, p.output
    if min(i.n, i.h, i.w, i.c, o.h, o.w) < 1 or o.n != i.n or o.c != i.c:
        raise ValueError(f"pool dims disagree or are empty: input {i}, output {o}")
    if min(p.filter_h, p.filter_w, p.stride_h, p.stride_w) < 1 or min(p.pad_top, p.pad_left) < 0:
        raise ValueError("pool filter and stride must be >= 1, pads >= 0")
    check_clamp(p.act_min, p.act_max)


def mcu_maxpool_s16(p: PoolParams, x: np.ndarray) -> np.ndarray:
    """int16 NHWC [N, H_in, W_in, C] -> int16 NHWC [N, H_out, W_out, C]."""
    check_pool_s16(p)
    check_shape("maxpool input", x, dims_shape(p.input))
    out = np.full(dims_shape(p.output), INT16_MIN, dtype=np.int64)
    for oy, ox, y0, y1, x0, x1 in windows(p):
        if y1 > y0 and x1 > x0:
            out[:, oy, ox, :] = x[:, y0:y1, x0:x1, :].astype(np.int64).max(axis=(1, 2))
    return np.clip(out, p.act_min, p.act_max).astype(np.int16)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    from emitter.kernels.mcu_avgpool_s8 import pool_call

    return pool_call(conv, p, "arm_max_pool_s16")


KERNEL = Kernel("mcu_maxpool_s16", to_cmsis=to_cmsis)
