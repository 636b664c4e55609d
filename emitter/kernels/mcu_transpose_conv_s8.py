"""Twin of mcu_transpose_conv_s8: int8 2-D transposed convolution (ONNX ConvTranspose, group 1;
TFLite TRANSPOSE_CONV), NHWC input/output, filter [C_out, KH, KW, C_in] (OHWI, not flipped).

Every input position scatters its window into the output:
  acc[b, iy*stride_h - pad_top + ky*dilation_h, ix*stride_w - pad_left + kx*dilation_w, oc]
      += (in[b,iy,ix,ic] + input_offset) * w[oc,ky,kx,ic]
targets outside [0, H_out) x [0, W_out) are cropped (pad_top/pad_left may be negative: output rows
before the first scatter hold the bias only), then per output channel, as TFLite's per-channel
int8 TRANSPOSE_CONV:
  out = clamp(requant(acc + bias[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
One int32 sum per output element: the C kernel gathers the same terms per output (no scratch).

CMSIS-NN: not mapped (to_cmsis says why; the layer stays portable and the summary prints it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.backends.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import Dims, QuantIO, check_range, check_shape, dims_shape, output_stage
from emitter.ops.base import Prepared


@dataclass(frozen=True, eq=False)
class TransposeConvParams:
    CTYPE: ClassVar[str] = "mcu_transpose_conv_params_t"
    input: Dims
    filter: Dims
    output: Dims
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int
    q: QuantIO
    multiplier: np.ndarray  # int32 [C_out]
    shift: np.ndarray  # int32 [C_out]


def check_params(p: TransposeConvParams) -> None:
    """The checks of the C kernel (ValueError where it returns MCU_ERR_ARG)."""
    i, f, o = p.input, p.filter, p.output
    if min(i.n, i.h, i.w, i.c, f.n, f.h, f.w, f.c, o.n, o.h, o.w, o.c) < 1:
        raise ValueError(f"transpose conv dims must be >= 1: input {i}, filter {f}, output {o}")
    if f.c != i.c or f.n != o.c or o.n != i.n:
        raise ValueError(f"transpose conv dims disagree: input {i}, filter {f}, output {o}")
    if min(p.stride_h, p.stride_w, p.dilation_h, p.dilation_w) < 1:
        raise ValueError(f"transpose conv strides {p.stride_h}x{p.stride_w} and dilations "
                         f"{p.dilation_h}x{p.dilation_w} must be >= 1")
    check_range("input_offset", p.q.input_offset, -127, 128)
    check_range("output_offset", p.q.output_offset, -128, 127)
    if not -128 <= p.q.act_min <= p.q.act_max <= 127:
        raise ValueError(f"clamp [{p.q.act_min}, {p.q.act_max}] is not a sub-range of int8")
    s = np.asarray(p.shift)
    if s.shape != (o.c,) or np.asarray(p.multiplier).shape != (o.c,) or s.min() < -31 or s.max() > 30:
        raise ValueError(f"transpose conv needs {o.c} multipliers and shifts in [-31, 30]")


def mcu_transpose_conv_s8(p: TransposeConvParams, input: np.ndarray, filter: np.ndarray,
                          bias: np.ndarray | None) -> np.ndarray:
    """int8 NHWC input, int8 OHWI filter, int32 bias [C_out] or None -> int8 NHWC output."""
    check_params(p)
    check_shape("transpose conv input", input, dims_shape(p.input))
    check_shape("transpose conv filter", filter, dims_shape(p.filter))
    if bias is not None:
        check_shape("transpose conv bias", bias, (p.output.c,))
    x = input.astype(np.int64) + p.q.input_offset
    w = filter.astype(np.int64)
    acc = np.zeros(dims_shape(p.output), np.int64)
    rows = np.arange(p.input.h) * p.stride_h - p.pad_top
    cols = np.arange(p.input.w) * p.stride_w - p.pad_left
    for ky in range(p.filter.h):
        oy = rows + ky * p.dilation_h
        vy = (oy >= 0) & (oy < p.output.h)
        for kx in range(p.filter.w):
            ox = cols + kx * p.dilation_w
            vx = (ox >= 0) & (ox < p.output.w)
            if not vy.any() or not vx.any():
                continue
            part = np.einsum("nhwi,oi->nhwo", x[:, vy][:, :, vx], w[:, ky, kx, :])
            acc[:, oy[vy][:, None], ox[vx][None, :], :] += part  # one (ky, kx): distinct targets
    return output_stage(acc, bias, p.q, p.multiplier, p.shift)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    conv.refusal = ("arm_transpose_conv_wrapper_s8 (CMSIS-NN v7.0.0) is not used: its direct path "
                    "(arm_transpose_conv_s8, for C_in <= 16 or stride > 2) misplaces rows unless pad_top is a "
                    "multiple of the stride and output_padding stays within the kernel (measured: 224 of 240 "
                    "outputs off for 3x3 stride 2 pads 1 output_padding 1), it has no dilation, and its reverse "
                    "path takes a second scratch context; so ONNX geometries would not run bit-exactly")
    return None
