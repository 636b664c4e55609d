"""Twin of mcu_depthwise_conv2d_s16: TFLite int16x8 depthwise convolution (reference_integer_ops
DepthwiseConvPerChannel, int16 input), NHWC int16, filter [1, KH, KW, C_out] int8, int64 bias.

out[b,y,x,oc] = clamp(requantize_s64(sum_{ky,kx} in[b,iy,ix,oc // depth_multiplier] * w[0,ky,kx,oc]
                + bias[oc], multiplier[oc], shift[oc]), act_min, act_max)
Params: mcu_depthwise_conv_params_t, shared with the int8 kernel.

CMSIS-NN: arm_depthwise_conv_wrapper_s16 with an int64 bias (MVE: per-channel arrays padded).
"""
from __future__ import annotations

import numpy as np

from emitter.calls import ConstArg, Prepared, StructArg
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest, dims, padded, tile
from emitter.kernels.common import check_shape, dims_shape, patches
from emitter.kernels.mcu_conv2d_s8 import per_channel_quant
from emitter.kernels.mcu_conv2d_s16 import check_offsets
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams
from emitter.kernels.s16 import cmsis_taps_problem, output_stage_s16


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


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, DepthwiseConvParams)
    if (problem := cmsis_taps_problem(c.filter.h * c.filter.w)) is not None:
        conv.refusal = problem
        return None
    ops = p.operands
    f, b = ops["filter"], ops["bias"]
    assert isinstance(f, ConstArg)
    pad = 4 if conv.var == "mve" else 0
    bias = b.data if isinstance(b, ConstArg) else np.zeros(c.output.c, np.int64)
    params = {"input_offset": 0, "output_offset": 0, "ch_mult": c.depth_multiplier,
              "stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
              "dilation": tile(c.dilation_w, c.dilation_h), "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    return conv.call(p, "arm_depthwise_conv_wrapper_s16", {
        "dw_conv_params": StructArg("cmsis_nn_dw_conv_params", "dw_conv", params),
        "quant_params": per_channel_quant(c, pad),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)),
        "filter_data": ConstArg("filter", padded(f.data.ravel(), pad * 4)),
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.output.c}),
        "bias_data": ConstArg("bias", padded(bias, pad)),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), "output_data": ops["output"]})


KERNEL = Kernel("mcu_depthwise_conv2d_s16", to_cmsis=to_cmsis)
