"""Twin of mcu_conv2d_s16: TFLite int16x8 convolution (reference_integer_ops ConvPerChannel, int16
input), NHWC int16 input/output, OHWI int8 filter, int64 bias [C_out] or none.

out[b,y,x,oc] = clamp(requantize_s64(sum_{ky,kx,ic} in[b,iy,ix,ic] * w[oc,ky,kx,ic] + bias[oc],
                multiplier[oc], shift[oc]), act_min, act_max)
in int64, taps and padding as mcu_conv2d_s8 (input and output offsets are 0: int16 activations are
symmetric). Params: mcu_conv_params_t, shared with the int8 kernel (emitter/kernels/s16.py).

CMSIS-NN: arm_convolve_wrapper_s16 with an int64 bias, up to 511 taps per output (s16.CMSIS_MAX_TAPS).
"""
from __future__ import annotations

import numpy as np

from emitter.calls import ConstArg, Prepared, StructArg
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest, arr, dims, padded, tile
from emitter.kernels.common import check_shape, dims_shape, patches
from emitter.kernels.mcu_conv2d_s8 import ConvParams, per_channel_quant
from emitter.kernels.s16 import cmsis_taps_problem, output_stage_s16


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


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, ConvParams)
    if (problem := cmsis_taps_problem(c.filter.h * c.filter.w * c.filter.c)) is not None:
        conv.refusal = problem
        return None
    ops = p.operands
    pad = 4 if conv.var == "mve" else 0
    b = ops["bias"]
    bias = b.data if isinstance(b, ConstArg) else np.zeros(c.filter.n, np.int64)
    params = {"input_offset": 0, "output_offset": 0, "stride": tile(c.stride_w, c.stride_h),
              "padding": tile(c.pad_left, c.pad_top), "dilation": tile(c.dilation_w, c.dilation_h),
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    return conv.call(p, "arm_convolve_wrapper_s16", {
        "conv_params": StructArg("cmsis_nn_conv_params", "conv", params),
        "quant_params": per_channel_quant(c, pad),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)), "filter_data": ops["filter"],
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.filter.n}),
        "bias_data": StructArg("cmsis_nn_bias_data", "bias_data",
                               {"data": arr(ConstArg("bias", padded(bias, pad))), "is_int32_bias": 0}),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), "output_data": ops["output"]})


KERNEL = Kernel("mcu_conv2d_s16", to_cmsis=to_cmsis)
