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

CMSIS-NN: arm_transpose_conv_wrapper_s8 where cmsis_problem() finds its result bit-exact; elsewhere the
layer stays portable and the summary prints why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import ConstArg, CRef, Prepared, StructArg
from emitter.kernels.base import Kernel, Rounded
from emitter.kernels.cmsis_api import Converter, ScratchRequest, dims, padded, tile
from emitter.kernels.common import Dims, QuantIO, check_range, check_shape, dims_shape, output_stage
from emitter.kernels.mcu_conv2d_s8 import per_channel_quant


@dataclass(frozen=True, eq=False)
class TransposeConvParams(Rounded):
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

    def rounding_mode(self) -> int:
        return self.q.rounding


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


REVERSE_MIN_C_IN = 17  # arm_transpose_conv_wrapper_s8: strides <= 2 and C_in > 16 take the reverse conv


def cmsis_problem(p: TransposeConvParams, var: str) -> str | None:
    """Why arm_transpose_conv_wrapper_s8 (CMSIS-NN v7.0.0) would not compute these params
    bit-exactly, or None. Its reverse path (strides <= 2, C_in > 16) is a convolution over the
    zero-upscaled input with padding k - 1 - pad; its direct path (arm_transpose_conv_s8) fills a
    ring of max(k, stride) accumulator rows and writes `stride` rows per input row from the first
    one at or below pad_top, so pad_top must be a multiple of the stride and the output end where
    those rows plus the ring's last k - stride rows end. Neither has dilation. (A sweep of 690
    geometries against this golden: every one this predicate accepts is exact.)"""
    i, f, o = p.input, p.filter, p.output
    if (p.dilation_h, p.dilation_w) != (1, 1):
        return "CMSIS-NN's transpose conv has no dilation"
    if p.stride_h <= 2 and p.stride_w <= 2 and i.c >= REVERSE_MIN_C_IN:
        if not (0 <= p.pad_top < f.h and 0 <= p.pad_left < f.w):
            return "its reverse-conv path needs 0 <= pads < kernel"
        if var == "mve":
            return "CMSIS-NN v7.0.0 defines no MVE scratch size for its reverse-conv path"
        return None
    ring_y, ring_x = max(f.h, p.stride_h), max(f.w, p.stride_w)
    first = p.stride_h * i.h - p.pad_top
    if p.pad_top < 0 or p.pad_top % p.stride_h or not first <= o.h <= first + ring_y - p.stride_h:
        return ("its direct path (arm_transpose_conv_s8) places rows right only for pad_top a multiple of "
                "the stride and output_padding within the kernel (TFLite's SAME/VALID geometry)")
    if p.pad_left < 0 or p.pad_left + o.w > (i.w - 1) * p.stride_w + ring_x:
        return "its direct path needs the output columns inside the scattered width"
    return None


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, TransposeConvParams)
    if (problem := cmsis_problem(c, conv.var)) is not None:
        conv.refusal = f"arm_transpose_conv_wrapper_s8 would not be bit-exact here: {problem}"
        return None
    ops = p.operands
    pad = 4 if conv.var == "mve" else 0
    b = ops["bias"]
    bias = b.data if isinstance(b, ConstArg) else np.zeros(c.output.c, np.int32)
    reverse = c.stride_h <= 2 and c.stride_w <= 2 and c.input.c >= REVERSE_MIN_C_IN
    flipped = c.input.c * c.filter.h * c.filter.w * c.output.c if reverse else 0  # the reversed filter
    params = {"input_offset": c.q.input_offset, "output_offset": c.q.output_offset,
              "stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
              "padding_offsets": tile(0, 0), "dilation": tile(1, 1),
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    return conv.call(p, "arm_transpose_conv_wrapper_s8", {
        # the reversed filter first, the context the sizer sizes after it (16-byte aligned)
        "ctx": StructArg("cmsis_nn_context", "ctx", {"buf": CRef("scratch", offset=(flipped + 15) & ~15), "size": 0}),
        "output_ctx": StructArg("cmsis_nn_context", "output_ctx",
                                {"buf": CRef("scratch") if flipped else CRef("null"), "size": flipped}),
        "transpose_conv_params": StructArg("cmsis_nn_transpose_conv_params", "tconv", params),
        "quant_params": per_channel_quant(c, pad),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)), "filter_data": ops["filter"],
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.output.c}),
        "bias_data": ConstArg("bias", padded(bias, pad)),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), "output_data": ops["output"]})


KERNEL = Kernel("mcu_transpose_conv_s8", to_cmsis=to_cmsis)
