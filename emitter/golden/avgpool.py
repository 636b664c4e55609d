"""Golden of mcu_avgpool_s8: TFLite int8 AVERAGE_POOL_2D (reference_integer_ops::AveragePool).

Input and output share scale and zero point:
  out = clamp(round_half_away(sum of the raw int8 values over the valid taps / their count),
              act_min, act_max)
Padding taps are neither summed nor counted; a window with no valid tap is an error.
"""
from __future__ import annotations

import numpy as np

from emitter.golden.conv2d import check_shape, dims_shape
from emitter.kernel_params import PoolParams


def check_pool(p: PoolParams) -> None:
    """The parameter checks both pooling kernels make (ValueError where C returns MCU_ERR_ARG)."""
    i, o = p.input, p.output
    if min(i.n, i.h, i.w, i.c, o.h, o.w) < 1 or o.n != i.n or o.c != i.c:
        raise ValueError(f"pool dims disagree or are empty: input {i}, output {o}")
    if min(p.filter_h, p.filter_w, p.stride_h, p.stride_w) < 1 or min(p.pad_top, p.pad_left) < 0:
        raise ValueError(f"pool filter {p.filter_h}x{p.filter_w} / stride {p.stride_h}x"
                         f"{p.stride_w} must be >= 1, pads {p.pad_top},{p.pad_left} >= 0")
    if not -128 <= p.act_min <= p.act_max <= 127:
        raise ValueError(f"pool clamp [{p.act_min}, {p.act_max}] is not a sub-range of int8")


def windows(p: PoolParams) -> list[tuple[int, int, int, int, int, int]]:
    """(out_y, out_x, y0, y1, x0, x1) per output position: the valid input rows [y0, y1) and
    columns [x0, x1) of its window (possibly empty)."""
    out = []
    for oy in range(p.output.h):
        y_origin = oy * p.stride_h - p.pad_top
        y0, y1 = max(0, y_origin), min(p.input.h, y_origin + p.filter_h)
        for ox in range(p.output.w):
            x_origin = ox * p.stride_w - p.pad_left
            x0, x1 = max(0, x_origin), min(p.input.w, x_origin + p.filter_w)
            out.append((oy, ox, y0, y1, x0, x1))
    return out


def mcu_avgpool_s8(p: PoolParams, x: np.ndarray) -> np.ndarray:
    """int8 NHWC [N, H_in, W_in, C] -> int8 NHWC [N, H_out, W_out, C]."""
    check_pool(p)
    check_shape("avgpool input", x, dims_shape(p.input))
    xi = x.astype(np.int64)
    out = np.empty(dims_shape(p.output), dtype=np.int64)
    for oy, ox, y0, y1, x0, x1 in windows(p):
        count = max(0, y1 - y0) * max(0, x1 - x0)
        if count == 0:
            raise ValueError(f"avgpool window at output ({oy}, {ox}) lies entirely in the padding")
        acc = xi[:, y0:y1, x0:x1, :].sum(axis=(1, 2))
        # Round half away from zero: C's truncating division of acc +- count/2.
        half = count // 2
        out[:, oy, ox, :] = np.where(acc > 0, (acc + half) // count, -((half - acc) // count))
    return np.clip(out, p.act_min, p.act_max).astype(np.int8)
