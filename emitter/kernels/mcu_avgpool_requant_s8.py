"""Twin of mcu_avgpool_requant_s8: int8 average pool with requantization and one rounding (the
TFLite MEAN scheme; ONNX AveragePool count_include_pad=1, GlobalAveragePool, ReduceMean):
  acc = sum of (in + input_offset) over the valid taps (padding skipped = padding with the input
        zero point)
  out = clamp(requant(acc, multiplier, shift) + output_offset, pool.act_min, pool.act_max)
multiplier/shift encode in_scale / (out_scale * filter_h * filter_w) (ops/pool.py); requant is
TFLite's (pool.rounding ROUND_TFLITE) or onnxruntime's (float32 scale, one rounding half to even). A window with no
valid tap is an error, as in mcu_avgpool_s8. CMSIS-NN has no such kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel, Rounded, SinkC, Window, Windowed
from emitter.kernels.common import (
    PoolParams,
    check_pool,
    check_range,
    check_shape,
    dims_shape,
    global_pool_sink,
    pool_band,
    windows,
)
from emitter.quant import ROUND_TFLITE, requantize, requantize_rne

# 255 * 2^23 < 2^31: the largest valid window whose int32 sum cannot overflow (C: same limit).
MAX_TAPS = 1 << 23


@dataclass(frozen=True)
class AvgPoolRequantParams(Windowed, Rounded):
    """pool.act_min/act_max clamp the output."""
    CTYPE: ClassVar[str] = "mcu_avgpool_requant_params_t"
    pool: PoolParams
    input_offset: int
    output_offset: int
    multiplier: int
    shift: int

    def window(self) -> Window:
        return self.pool.window()

    def rounding_mode(self) -> int:
        return self.pool.rounding


def check_avgpool_requant(p: AvgPoolRequantParams) -> None:
    """The parameter checks of the C kernel (ValueError where C returns MCU_ERR_ARG), except the
    per-window "no valid tap" check, made while pooling."""
    check_pool(p.pool)
    check_range("input_offset", p.input_offset, -127, 128)
    check_range("output_offset", p.output_offset, -128, 127)
    check_range("shift", p.shift, -31, 30)
    taps = min(p.pool.filter_h, p.pool.input.h) * min(p.pool.filter_w, p.pool.input.w)
    check_range("valid taps per window", taps, 1, MAX_TAPS)


def mcu_avgpool_requant_s8(p: AvgPoolRequantParams, x: np.ndarray) -> np.ndarray:
    """int8 NHWC [N, H_in, W_in, C] -> int8 NHWC [N, H_out, W_out, C]."""
    check_avgpool_requant(p)
    pool = p.pool
    check_shape("avgpool_requant input", x, dims_shape(pool.input))
    xi = x.astype(np.int64) + p.input_offset
    acc = np.empty(dims_shape(pool.output), dtype=np.int64)
    for oy, ox, y0, y1, x0, x1 in windows(pool):
        if y1 <= y0 or x1 <= x0:
            raise ValueError(f"avgpool_requant window at output ({oy}, {ox}) lies entirely in "
                             "the padding")
        acc[:, oy, ox, :] = xi[:, y0:y1, x0:x1, :].sum(axis=(1, 2))
    rq = requantize if pool.rounding == ROUND_TFLITE else requantize_rne
    raw = np.clip(rq(acc, p.multiplier, p.shift), -256, 256) + p.output_offset
    return np.clip(raw, pool.act_min, pool.act_max).astype(np.int8)


BAND_C = "mcu_avgpool_requant_s8_band"  # mcu_runtime/support/mcu_band.c


def band(p: AvgPoolRequantParams, o0: int, o1: int) -> tuple[AvgPoolRequantParams, int, int]:
    """The parameters of output rows [o0, o1) and their input rows [lo, hi); overlap rule as
    mcu_conv2d_s8.band."""
    pool, lo, hi = pool_band(p.pool, o0, o1)
    return replace(p, pool=pool), lo, hi


SINK_C = ("mcu_pool_sum_s8", "mcu_avgpool_requant_s8_finish")  # mcu_runtime/support/mcu_sink.c


def sink(p: AvgPoolRequantParams, row_bytes: int) -> int | None:
    """A global average pool as the accumulating end of a streamed segment: its channel sums."""
    return global_pool_sink(p.pool, row_bytes)


def sink_c(p: AvgPoolRequantParams, row_bytes: int) -> SinkC:
    """The data of the sink's C: each input row's pixels and channels."""
    return SinkC("channels", SINK_C[0], SINK_C[1], (row_bytes // p.pool.input.c, p.pool.input.c))


KERNEL = Kernel("mcu_avgpool_requant_s8", band=band, band_c=BAND_C, sink=sink, sink_c=sink_c)
