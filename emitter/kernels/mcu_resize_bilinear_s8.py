"""Twin of mcu_resize_bilinear_s8 (NHWC, scale and zero point unchanged): TFLite
ResizeBilinearInteger arithmetic on the raw int8 values, fy = y_frac[y] and fx = x_frac[x] in
[0, 1024] (10 fractional bits):
  acc = in[y_lo, x_lo] * (1024 - fy) * (1024 - fx) + in[y_lo, x_hi] * (1024 - fy) * fx
      + in[y_hi, x_lo] * fy * (1024 - fx)          + in[y_hi, x_hi] * fy * fx
  out = acc / 2^20 rounded half away from zero
(the weights sum to 2^20, so |acc| <= 2^27 and out is in [-128, 127]). The tables come from
ops/resize.py. CMSIS-NN has no such kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import Dims
from emitter.kernels.mcu_resize_nearest_s8 import check_dims, check_input, check_table

FRAC_BITS = 10
ONE = 1 << FRAC_BITS


@dataclass(frozen=True, eq=False)
class ResizeBilinearParams:
    """Per output row/column: source pair and 10-bit fraction."""
    CTYPE: ClassVar[str] = "mcu_resize_bilinear_params_t"
    input: Dims
    output: Dims
    y_lo: np.ndarray  # int32 [H_out]
    y_hi: np.ndarray  # int32 [H_out]
    y_frac: np.ndarray  # int32 [H_out], 0..1024
    x_lo: np.ndarray  # int32 [W_out]
    x_hi: np.ndarray  # int32 [W_out]
    x_frac: np.ndarray  # int32 [W_out], 0..1024


def mcu_resize_bilinear_s8(p: ResizeBilinearParams, x: np.ndarray) -> np.ndarray:
    """int8 NHWC [N, H_in, W_in, C] -> int8 NHWC [N, H_out, W_out, C]."""
    check_dims(p.input, p.output, "resize_bilinear")
    ylo = check_table(p.y_lo, p.output.h, 0, p.input.h - 1, "resize_bilinear y_lo")
    yhi = check_table(p.y_hi, p.output.h, 0, p.input.h - 1, "resize_bilinear y_hi")
    fy = check_table(p.y_frac, p.output.h, 0, ONE, "resize_bilinear y_frac")
    xlo = check_table(p.x_lo, p.output.w, 0, p.input.w - 1, "resize_bilinear x_lo")
    xhi = check_table(p.x_hi, p.output.w, 0, p.input.w - 1, "resize_bilinear x_hi")
    fx = check_table(p.x_frac, p.output.w, 0, ONE, "resize_bilinear x_frac")
    check_input(p.input, x, "resize_bilinear")
    v = x.astype(np.int64)
    rows_lo, rows_hi = v[:, ylo], v[:, yhi]

    def weight(wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
        return (wy[:, None] * wx[None, :])[None, :, :, None]

    acc = (rows_lo[:, :, xlo] * weight(ONE - fy, ONE - fx)
           + rows_lo[:, :, xhi] * weight(ONE - fy, fx)
           + rows_hi[:, :, xlo] * weight(fy, ONE - fx)
           + rows_hi[:, :, xhi] * weight(fy, fx))
    half = 1 << (2 * FRAC_BITS - 1)
    out = np.sign(acc) * ((np.abs(acc) + half) >> (2 * FRAC_BITS))  # half away from zero
    return np.clip(out, -128, 127).astype(np.int8)


KERNEL = Kernel("mcu_resize_bilinear_s8")
