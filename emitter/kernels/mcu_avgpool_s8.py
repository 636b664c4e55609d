"""Twin of mcu_avgpool_s8: TFLite int8 AVERAGE_POOL_2D (reference_integer_ops::AveragePool).

Input and output share scale and zero point:
  out = clamp(round(sum of the raw int8 values over the valid taps / their count), act_min, act_max)
with round half away from zero (pool.rounding ROUND_TFLITE) or half to even (ROUND_NEAREST_EVEN,
onnxruntime numerics: its float average rounds ties to even).
Padding taps are neither summed nor counted; a window with no valid tap is an error.

CMSIS-NN: arm_avgpool_s8 (scratch sized by CMSIS-NN).
"""
from __future__ import annotations

import numpy as np

from emitter.calls import Prepared, StructArg
from emitter.kernels.base import Kernel, SinkC
from emitter.kernels.cmsis_api import Converter, ScratchRequest, dims, tile
from emitter.kernels.common import (
    PoolParams,
    check_pool,
    check_shape,
    dims_shape,
    div_round,
    global_pool_sink,
    pool_band,
    windows,
)


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
        out[:, oy, ox, :] = div_round(acc, count, p.rounding)
    return np.clip(out, p.act_min, p.act_max).astype(np.int8)


def pool_call(conv: Converter, p: Prepared, fn: str) -> tuple[Prepared, ScratchRequest | None]:
    """arm_avgpool_s8 / arm_max_pool_s8 of a mcu_pool_params_t call."""
    c = p.params
    assert isinstance(c, PoolParams)
    params = {"stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
              "activation": {"min": c.act_min, "max": c.act_max}}
    return conv.call(p, fn, {
        "pool_params": StructArg("cmsis_nn_pool_params", "pool", params),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), "input_data": p.operands["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", {"n": 1, "h": c.filter_h, "w": c.filter_w, "c": 1}),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), "output_data": p.operands["output"]})


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    return pool_call(conv, p, "arm_avgpool_s8")


BAND_C = "mcu_pool_band"  # mcu_runtime/support/mcu_band.c; overlap rule as mcu_conv2d_s8.band
band = pool_band


SINK_C = ("mcu_pool_sum_s8", "mcu_avgpool_s8_finish")  # mcu_runtime/support/mcu_sink.c


def sink(p: PoolParams, row_bytes: int) -> int | None:
    """A global average pool as the accumulating end of a streamed segment: its channel sums."""
    return global_pool_sink(p, row_bytes)


def sink_c(p: PoolParams, row_bytes: int) -> SinkC:
    """The data of the sink's C: each input row's pixels and channels."""
    return SinkC("channels", SINK_C[0], SINK_C[1], (row_bytes // p.input.c, p.input.c))


KERNEL = Kernel("mcu_avgpool_s8", band=band, band_c=BAND_C, sink=sink, sink_c=sink_c, to_cmsis=to_cmsis)
