"""Twin of mcu_conv2d_s16: TFLite int16x8 convolution (reference_integer_ops ConvPerChannel, int16
input), NHWC int16 input/output, OHWI int8 filter, int64 bias [C_out] or none.

out[b,y,x,oc] = clamp(requantize_s64(sum_{ky,kx,ic} in[b,iy,ix,ic] * w[oc,ky,kx,ic] + bias[oc],
                multiplier[oc], shift[oc]), act_min, act_max)
in int64, taps and padding as mcu_conv2d_s8 (input and output offsets are 0: int16 activations are
symmetric). Params: mcu_conv_params_t, shared with the int8 kernel (emitter/kernels/s16.py).

CMSIS-NN: arm_convolve_wrapper_s16, not called yet (needs its scratch sizing): portable, named
in the summary.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.common import check_shape, dims_shape, patches
from emitter.kernels.mcu_conv2d_s8 import ConvParams
from emitter.kernels.s16 import output_stage_s16


def check_offsets(p: ConvParams) -> None:
    if p.q.input_offset != 0 or p.q.output_offset != 0:
        raise ValueError(f"int16 activations have zero point 0: offsets {p.q.input_offset}, {p.q.output_offset}")


def mcu_conv2d_s16(p: ConvParams, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """int16 NHWC input, int8 OHWI filter, int64 bias [C_out] or None -> int16 NHWC output."""
    check_shape("conv input", input, dims_shape(p.input))
    check_shape("conv filter", filter, dims_shape(p.filter))
    check_offsets(p)
    if p.filter.c != p.input.c or p.filter.n != p.output.c or p.output.n != p.input.n:
        raise ValueError(f"conv dims disagree: input {p.input}, filter {p.filter}, output {p.output}")
    cols = patches(input.astype(np.int64), p.filter.h, p.filter.w, p.output.h, p.output.w, p.stride_h,
                   p.stride_w, p.dilation_h, p.dilation_w, p.pad_top, p.pad_left)
    k = p.filter.h * p.filter.w * p.filter.c
    acc = (cols.reshape(-1, k) @ filter.astype(np.int64).reshape(p.filter.n, k).T).reshape(dims_shape(p.output))
    return output_stage_s16(acc, bias, p.multiplier, p.shift, p.q.output_offset, p.q.act_min, p.q.act_max)
