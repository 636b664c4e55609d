"""Golden of mcu_conv2d_s8: int8 2-D convolution, NHWC input/output, OHWI filter.

out[b,y,x,oc] = clamp(requant(sum_{ky,kx,ic} (in[b,iy,ix,ic] + input_offset) * w[oc,ky,kx,ic]
                + bias[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
with iy = y*stride_h - pad_top + ky*dilation_h (likewise ix); taps outside the input contribute
nothing, which is padding the offset input with 0 (the input zero point). All sums in int64; the
accumulator is wrapped to int32 like the C kernel's single int32 accumulator.
"""
from __future__ import annotations

import numpy as np

from emitter.kernel_params import ConvParams, Dims, QuantIO
from emitter.quant import requantize, wrap_int32


def check_shape(what: str, array: np.ndarray, expected: tuple[int, ...]) -> None:
    if tuple(array.shape) != expected:
        raise ValueError(f"{what}: expected shape {expected}, found {tuple(array.shape)}")


def dims_shape(d: Dims) -> tuple[int, int, int, int]:
    return (d.n, d.h, d.w, d.c)


def patches(x: np.ndarray, k_h: int, k_w: int, out_h: int, out_w: int, stride_h: int,
            stride_w: int, dilation_h: int, dilation_w: int, pad_top: int,
            pad_left: int) -> np.ndarray:
    """im2col of an int64 [N,H,W,C] map (input offset already added) -> [N,out_h,out_w,KH,KW,C].

    Taps outside the input read 0, i.e. they contribute nothing to the sum.
    """
    n, h, w, c = x.shape
    span_h = (out_h - 1) * stride_h + (k_h - 1) * dilation_h + 1
    span_w = (out_w - 1) * stride_w + (k_w - 1) * dilation_w + 1
    xp = np.pad(x, ((0, 0), (pad_top, max(0, span_h - pad_top - h)),
                    (pad_left, max(0, span_w - pad_left - w)), (0, 0)))
    taps = [xp[:, ky * dilation_h:ky * dilation_h + (out_h - 1) * stride_h + 1:stride_h,
               kx * dilation_w:kx * dilation_w + (out_w - 1) * stride_w + 1:stride_w, :]
            for ky in range(k_h) for kx in range(k_w)]
    return np.stack(taps, axis=3).reshape(n, out_h, out_w, k_h, k_w, c)


def output_stage(acc: np.ndarray, bias: np.ndarray | None, q: QuantIO, multiplier: np.ndarray,
                 shift: np.ndarray) -> np.ndarray:
    """acc [..., C] int64 -> int8: + bias, requantize per channel, + output_offset, clamp."""
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64)
    acc = requantize(wrap_int32(acc), np.asarray(multiplier, dtype=np.int64),
                     np.asarray(shift, dtype=np.int64))
    return np.clip(acc + q.output_offset, q.act_min, q.act_max).astype(np.int8)


def mcu_conv2d_s8(p: ConvParams, input: np.ndarray, filter: np.ndarray,
                  bias: np.ndarray | None) -> np.ndarray:
    """int8 NHWC input, int8 OHWI filter, int32 bias [C_out] or None -> int8 NHWC output."""
    check_shape("conv input", input, dims_shape(p.input))
    check_shape("conv filter", filter, dims_shape(p.filter))
    if p.filter.c != p.input.c or p.filter.n != p.output.c or p.output.n != p.input.n:
        raise ValueError(f"conv dims disagree: input {p.input}, filter {p.filter}, "
                         f"output {p.output}")
    if bias is not None:
        check_shape("conv bias", bias, (p.output.c,))
    x = input.astype(np.int64) + p.q.input_offset
    cols = patches(x, p.filter.h, p.filter.w, p.output.h, p.output.w, p.stride_h, p.stride_w,
                   p.dilation_h, p.dilation_w, p.pad_top, p.pad_left)
    k = p.filter.h * p.filter.w * p.filter.c
    w = filter.astype(np.int64).reshape(p.filter.n, k)
    acc = (cols.reshape(-1, k) @ w.T).reshape(dims_shape(p.output))
    return output_stage(acc, bias, p.q, p.multiplier, p.shift)
