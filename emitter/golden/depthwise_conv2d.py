"""Golden of mcu_depthwise_conv2d_s8: int8 depthwise 2-D convolution, NHWC, filter [1,KH,KW,C_out].

out[b,y,x,oc] = clamp(requant(sum_{ky,kx} (in[b,iy,ix,oc // depth_multiplier] + input_offset)
                * w[0,ky,kx,oc] + bias[oc], multiplier[oc], shift[oc]) + output_offset,
                act_min, act_max)
with the tap positions and padding rule of mcu_conv2d_s8 (see conv2d.py).
"""
from __future__ import annotations

import numpy as np

from emitter.golden.conv2d import check_shape, dims_shape, output_stage, patches
from emitter.kernel_params import DepthwiseConvParams


def mcu_depthwise_conv2d_s8(p: DepthwiseConvParams, input: np.ndarray, filter: np.ndarray,
                            bias: np.ndarray | None) -> np.ndarray:
    """int8 NHWC input, int8 filter [1,KH,KW,C_out], int32 bias [C_out] or None -> int8 NHWC."""
    check_shape("depthwise input", input, dims_shape(p.input))
    check_shape("depthwise filter", filter, dims_shape(p.filter))
    if (p.filter.n != 1 or p.filter.c != p.output.c or p.output.n != p.input.n
            or p.output.c != p.input.c * p.depth_multiplier):
        raise ValueError(f"depthwise dims disagree: input {p.input}, filter {p.filter}, "
                         f"output {p.output}, depth_multiplier {p.depth_multiplier}")
    if bias is not None:
        check_shape("depthwise bias", bias, (p.output.c,))
    # Output channel oc = ic * depth_multiplier + m reads input channel ic.
    x = np.repeat(input.astype(np.int64) + p.q.input_offset, p.depth_multiplier, axis=3)
    cols = patches(x, p.filter.h, p.filter.w, p.output.h, p.output.w, p.stride_h, p.stride_w,
                   p.dilation_h, p.dilation_w, p.pad_top, p.pad_left)
    acc = np.einsum("nyxhwc,hwc->nyxc", cols, filter[0].astype(np.int64))
    return output_stage(acc, bias, p.q, p.multiplier, p.shift)
