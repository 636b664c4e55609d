"""CMSIS-NN's 4-bit-weight calls for mcugen's s4 kernels (issue 24): the to_cmsis(conv, p) of
mcu_fully_connected_s4, mcu_conv2d_s4 and mcu_depthwise_conv2d_s4 (each twin's KERNEL names it).

CMSIS-NN v7.0.0 packs 4-bit weights in order, two a byte, low nibble first, over the whole flat
tensor (an odd count ends in a half byte; a row of odd length straddles bytes): FC [N, K] row after
row, conv OHWI, depthwise [1, KH, KW, C_out] (cmsis_pack). mcugen's kernels keep their own layouts
(mcu_nn_s4.h), so each mapping unpacks the twin's const array and writes CMSIS-NN's as a separate
const array at build time: the bundle's flash counts the array the call reads. The numbers are the
int8 ones (TFLite rounding only, as for the s8 calls; the backend keeps mcugen's kernel under
onnxruntime numerics):

  mcu_fully_connected_s4 -> arm_fully_connected_s4 (per tensor only: v7.0.0 has no per-channel s4
                            FC; ctx unused, no scratch); bias back from the kernel sums
  mcu_conv2d_s4          -> arm_convolve_wrapper_s4 (1x1 fast / strided 1x1, 1xN, MVE even, generic);
                            bias back from the kernel sums; scratch from
                            arm_convolve_wrapper_s4_get_buffer_size[_dsp|_mve] (cmsis_sizer.c conv4)
  mcu_depthwise_conv2d_s4 -> arm_depthwise_conv_wrapper_s4; scratch from
                            arm_depthwise_conv_wrapper_s4_get_buffer_size[_dsp|_mve] (dw4); on MVE
                            not its opt path (cmsis_quirks.mve_s4_depthwise_problem: a gcc 12.2.1
                            miscompile of its constant lane mask), and on no core its generic
                            path for odd C_in (s4_depthwise_problem: its nibble indexing)

On MVE the per-channel arrays and the filter get a few zero bytes of padding (CMSIS-NN's MVE loops
read whole vectors past their ends), as the s8 mappings do.
"""
from __future__ import annotations

import numpy as np

from emitter.calls import CArg, ConstArg, NullArg, Prepared, StructArg
from emitter.kernels.cmsis_api import Converter, ScratchRequest, dims, padded, tile
from emitter.kernels.cmsis_quirks import mve_s4_depthwise_problem, s4_depthwise_problem

MVE_PAD = 4  # int32 elements past per-channel arrays
MVE_FILTER_PAD = 16  # bytes past the packed filter


def cmsis_pack(w: np.ndarray) -> np.ndarray:
    """int8 values in [-8, 7], any shape -> CMSIS-NN's s4 layout: the flat tensor in order, byte j
    = w[2j] & 15 | (w[2j + 1] & 15) << 4, an odd count's last high nibble 0. int8 [ceil(n / 2)]."""
    flat = np.asarray(w, np.int64).ravel()
    if flat.size and (flat.min() < -8 or flat.max() > 7):
        raise ValueError("4-bit weights must lie in [-8, 7]")
    if flat.size % 2:
        flat = np.concatenate([flat, np.zeros(1, np.int64)])
    u = flat & 15
    return (u[0::2] | (u[1::2] << 4)).astype(np.uint8).view(np.int8)


def cmsis_unpack(packed: np.ndarray, count: int) -> np.ndarray:
    """cmsis_pack's inverse: the first `count` weights, int8."""
    b = np.asarray(packed).view(np.uint8).astype(np.int64)
    out = np.empty(2 * b.size, np.int64)
    out[0::2], out[1::2] = b & 15, b >> 4
    return ((out[:count] ^ 8) - 8).astype(np.int8)


def _pad(conv: Converter) -> tuple[int, int]:
    return (MVE_PAD, MVE_FILTER_PAD) if conv.var == "mve" else (0, 0)


def fc_to_cmsis(conv: Converter, p: Prepared, w: np.ndarray) -> tuple[Prepared, ScratchRequest | None] | None:
    """mcu_fully_connected_s4 -> arm_fully_connected_s4 (per-tensor layers); `w`: the layer's
    weights unpacked, int8 [N, K] (the twin unpacks its own layout)."""
    from emitter.kernels.mcu_fully_connected_s8 import FCParams, bias_of_sums
    c = p.params
    assert isinstance(c, FCParams)
    if c.per_channel:
        conv.refusal = "per-channel 4-bit weights: CMSIS-NN v7.0.0's arm_fully_connected_s4 is per tensor only"
        return None
    ops = p.operands
    s = ops["kernel_sums"]
    assert isinstance(s, ConstArg)
    bias = bias_of_sums(c, w, s.data)
    _, fpad = _pad(conv)
    params = {"input_offset": c.q.input_offset, "filter_offset": 0, "output_offset": c.q.output_offset,
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    values: dict[str, CArg] = {  # ctx: (NULL, 0), added by conv.call
        "fc_params": StructArg("cmsis_nn_fc_params", "fc", params),
        "quant_params": StructArg("cmsis_nn_per_tensor_quant_params", "quant",
                                  {"multiplier": int(c.multiplier[0]), "shift": int(c.shift[0])}),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", {"n": c.batches, "h": 1, "w": 1, "c": c.in_features}),
        "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims",
                                 {"n": c.in_features, "h": 1, "w": 1, "c": c.out_features}),
        "filter_data": ConstArg("weights_cmsis_s4", padded(cmsis_pack(w), fpad)),
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.out_features}),
        "bias_data": ConstArg("bias", bias) if np.any(bias != 0) else NullArg(),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims",
                                 {"n": c.batches, "h": 1, "w": 1, "c": c.out_features}),
        "output_data": ops["output"]}
    return conv.call(p, "arm_fully_connected_s4", values)


def conv_to_cmsis(conv: Converter, p: Prepared, w: np.ndarray) -> tuple[Prepared, ScratchRequest | None] | None:
    """mcu_conv2d_s4 -> arm_convolve_wrapper_s4; `w`: the filter unpacked, int8 OHWI rows [C_out, K]."""
    from emitter.kernels.mcu_conv2d_s8 import ConvParams, per_channel_quant
    c = p.params
    assert isinstance(c, ConvParams)
    ops = p.operands
    s = ops["bias"]
    assert isinstance(s, ConstArg)
    bias = (s.data.astype(np.int64) - c.q.input_offset * w.astype(np.int64).sum(axis=1)).astype(np.int32)
    pad, fpad = _pad(conv)
    params = {"input_offset": c.q.input_offset, "output_offset": c.q.output_offset,
              "stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
              "dilation": tile(c.dilation_w, c.dilation_h),
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    return conv.call(p, "arm_convolve_wrapper_s4", {
        "conv_params": StructArg("cmsis_nn_conv_params", "conv", params),
        "quant_params": per_channel_quant(c, pad),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)),
        "filter_data": ConstArg("filter_cmsis_s4", padded(cmsis_pack(w), fpad)),
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.filter.n}),
        "bias_data": ConstArg("bias", padded(bias, pad)),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), "output_data": ops["output"]})


def depthwise_to_cmsis(conv: Converter, p: Prepared, w: np.ndarray) -> tuple[Prepared, ScratchRequest | None] | None:
    """mcu_depthwise_conv2d_s4 -> arm_depthwise_conv_wrapper_s4 (not its MVE opt path); `w`: the
    filter unpacked, int8 [KH * KW, C_out]."""
    from emitter.kernels.mcu_conv2d_s8 import per_channel_quant
    from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams
    c = p.params
    assert isinstance(c, DepthwiseConvParams)
    problem = s4_depthwise_problem(c) or (mve_s4_depthwise_problem(c) if conv.var == "mve" else None)
    if problem:
        conv.refusal = problem
        return None
    ops = p.operands
    b = ops["bias"]
    ch = c.output.c
    bias = b.data if isinstance(b, ConstArg) else np.zeros(ch, np.int32)
    pad, fpad = _pad(conv)
    params = {"input_offset": c.q.input_offset, "output_offset": c.q.output_offset, "ch_mult": c.depth_multiplier,
              "stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
              "dilation": tile(c.dilation_w, c.dilation_h),
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    return conv.call(p, "arm_depthwise_conv_wrapper_s4", {
        "dw_conv_params": StructArg("cmsis_nn_dw_conv_params", "dw", params),
        "quant_params": per_channel_quant(c, pad),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)),
        "filter_data": ConstArg("filter_cmsis_s4", padded(cmsis_pack(w), fpad)),
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": ch}),
        "bias_data": ConstArg("bias", padded(bias, pad)),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), "output_data": ops["output"]})

