"""Twin of mcu_depthwise_conv2d_s16: TFLite int16x8 depthwise convolution (reference_integer_ops
DepthwiseConvPerChannel, int16 input), NHWC int16, filter [1, KH, KW, C_out] int8, int64 bias.

out[b,y,x,oc] = clamp(requantize_s64(sum_{ky,kx} in[b,iy,ix,oc // depth_multiplier] * w[0,ky,kx,oc]
                + bias[oc], multiplier[oc], shift[oc]), act_min, act_max)
Params: mcu_depthwise_conv_params_t, shared with the int8 kernel.

CMSIS-NN: arm_depthwise_conv_wrapper_s16, not called yet (needs its scratch sizing): portable,
named in the summary.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.common import check_shape, dims_shape, patches
from emitter.kernels.mcu_conv2d_s16 import check_offsets
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams
from emitter.kernels.s16 import output_stage_s16


def mcu_depthwise_conv2d_s16(p: DepthwiseConvParams, input: np.ndarray, filter: np.ndarray,
                             bias: np.ndarray | None) -> np.ndarray:
    """int16 NHWC input, int8 filter [1,KH,KW,C_out], int64 bias or None -> int16 NHWC output."""
    check_shape("depthwise input", input, dims_shape(p.input))
    check_shape("depthwise filter", filter, dims_shape(p.filter))
    check_offsets(p)  # type: ignore[arg-type]
    if (p.filter.n != 1 or p.filter.c != p.output.c or p.output.n != p.input.n
            or p.output.c != p.input.c * p.depth_multiplier):
        raise ValueError(f"depthwise dims disagree: input {p.input}, filter {p.filter}, output {p.output}")
    x = np.repeat(input.astype(np.int64), p.depth_multiplier, axis=3)
    cols = patches(x, p.filter.h, p.filter.w, p.output.h, p.output.w, p.stride_h, p.stride_w,
                   p.dilation_h, p.dilation_w, p.pad_top, p.pad_left)
    acc = np.einsum("nyxhwc,hwc->nyxc", cols, filter[0].astype(np.int64))
    return output_stage_s16(acc, bias, p.multiplier, p.shift, p.q.output_offset, p.q.act_min, p.q.act_max)
