"""Twin of mcu_depthwise_conv2d_s8: int8 depthwise 2-D convolution, NHWC, filter [1,KH,KW,C_out].

out[b,y,x,oc] = clamp(requant(sum_{ky,kx} (in[b,iy,ix,oc // depth_multiplier] + input_offset)
                * w[0,ky,kx,oc] + bias[oc], multiplier[oc], shift[oc]) + output_offset,
                act_min, act_max)
with the tap positions and padding rule of mcu_conv2d_s8.

CMSIS-NN: arm_depthwise_conv_wrapper_s8.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from emitter.calls import ConstArg, Prepared, StructArg
from emitter.kernels import ISAS, c_defines, kernel_info
from emitter.kernels.base import Kernel, Rounded, Window, Windowed
from emitter.kernels.cmsis_api import Converter, ScratchRequest, dims, padded, tile
from emitter.kernels.common import (
    Dims,
    QuantIO,
    check_shape,
    dims_shape,
    output_stage,
    patches,
    window_band,
)
from emitter.kernels.mcu_conv2d_s8 import per_channel_quant
from emitter.quant import ROUND_NEAREST_NO_TIE


@dataclass(frozen=True, eq=False)
class DepthwiseConvParams(Windowed, Rounded):
    CTYPE: ClassVar[str] = "mcu_depthwise_conv_params_t"
    input: Dims
    filter: Dims
    output: Dims
    depth_multiplier: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int
    q: QuantIO
    multiplier: np.ndarray
    shift: np.ndarray
    channels_fast: int = 0  # 1: mcu_depthwise_conv2d_s8_channels_fast() holds (band_constants())
    dsp_groups: np.ndarray | None = None  # int32: the DSP lean variant's prepared groups (dsp_groups())
    mve_groups: np.ndarray | None = None  # int32: the MVE path's prepared groups (mve_groups())

    def window(self) -> Window:
        return Window(self.input, self.output, self.filter.n * self.filter.h * self.filter.w * self.filter.c)

    def rounding_mode(self) -> int:
        return self.q.rounding


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


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, DepthwiseConvParams)
    ops = p.operands
    f, b = ops["filter"], ops["bias"]
    assert isinstance(f, ConstArg)
    pad = 4 if conv.var == "mve" else 0
    bias = b.data if isinstance(b, ConstArg) else np.zeros(c.output.c, np.int32)
    params = {"input_offset": c.q.input_offset, "output_offset": c.q.output_offset, "ch_mult": c.depth_multiplier,
              "stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
              "dilation": tile(c.dilation_w, c.dilation_h),
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    return conv.call(p, "arm_depthwise_conv_wrapper_s8", {
        "dw_conv_params": StructArg("cmsis_nn_dw_conv_params", "dw", params),
        "quant_params": per_channel_quant(c, pad),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)),
        "filter_data": ConstArg("filter", padded(f.data.ravel(), pad * 4)),
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.output.c}),
        "bias_data": ConstArg("bias", padded(bias, pad)),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), "output_data": ops["output"]})


# -- the C dispatcher's path choice and scratch size (mcu_depthwise_conv2d_s8_path / _get_buffer_size) --
def path(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> str:
    """The path the C dispatcher takes on `isa` ("c", "dsp", "mve"): "mve" / "dsp" (the fast
    path) or "generic" (mcu_depthwise_conv2d_s8_path(), asked of the C)."""
    return kernel_info.ask("dw", p, bias, isa)[0]


def _inside(pad: int, stride: int, dilation: int, taps: int, size: int, out: int) -> int:
    """Output positions along one axis whose window has every tap inside the input (inside() in
    _mve.c)."""
    last = size - 1 - (taps - 1) * dilation + pad
    begin = min(-(-pad // stride), out)
    end = min(last // stride + 1 if last >= 0 else 0, out)
    return max(end - begin, 0)


def whole_fraction(p: DepthwiseConvParams) -> float:
    """The share of output positions whose window lies inside the input: the fast paths' whole
    windows (the others take the slower border code)."""
    rows = _inside(p.pad_top, p.stride_h, p.dilation_h, p.filter.h, p.input.h, p.output.h)
    cols = _inside(p.pad_left, p.stride_w, p.dilation_w, p.filter.w, p.input.w, p.output.w)
    return rows * cols / (p.output.h * p.output.w)


def buffer_size(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> int:
    """Scratch bytes of the call on `isa`: the fast path's prepared group (and on MVE its ring),
    none on the generic path (mcu_depthwise_conv2d_s8_get_buffer_size(), asked of the C)."""
    return kernel_info.ask("dw", p, bias, isa)[1]


LEAN_C = "mcu_depthwise_conv2d_s8_lean"  # the least scratch: the DSP path's lean variant, else generic


def lean_path(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> str:
    """The code path LEAN_C takes on `isa`: "dsp" (the DSP path's single rows and lines, its scratch
    the group's constants and the taps' weights, at most DW_DSP_LEAN_MAX_BYTES), else "generic"
    (mcu_depthwise_conv2d_s8_lean_path(), asked of the C); "generic" where the target is not known."""
    return kernel_info.ask("dwlean", p, bias, isa)[0] if isa in ISAS else "generic"


def lean_buffer_size(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> int:
    """Scratch bytes of LEAN_C (mcu_depthwise_conv2d_s8_lean_buffer_size(), asked of the C); for
    "any" (no board) the most any target's lean call needs."""
    return max(kernel_info.ask("dwlean", p, bias, i)[1] for i in ((isa,) if isa in ISAS else ISAS))


BAND_C = "mcu_depthwise_conv2d_s8_band"  # mcu_runtime/support/mcu_band.c


def band(p: DepthwiseConvParams, o0: int, o1: int) -> tuple[DepthwiseConvParams, int, int]:
    """mcu_depthwise_conv2d_s8_band(): the parameters of output rows [o0, o1) and the input rows [lo, hi) they read.
    Overlap rule (the planner's only source): a band reads input rows [lo, hi) while it writes its
    output rows, so no output byte of a band may lie on input rows >= lo."""
    return window_band(p, o0, o1)  # type: ignore[no-any-return]


def band_constants(p: DepthwiseConvParams, filter: np.ndarray, bias: np.ndarray | None) -> DepthwiseConvParams:
    """The params of a layer called band by band (or by its lean call), with what each call would
    check or prepare again: channels_fast (mcu_depthwise_conv2d_s8_channels_fast(), asked of the C)
    and the fast paths' channel groups (dsp_groups(), mve_groups(): the lean call then prepares
    nothing and needs no scratch; a bundle keeps those of its own instruction set only)."""
    p = replace(p, channels_fast=kernel_info.ask("dwok", p, bias, "c")[1])
    if lean_path(p, bias, "dsp") == "dsp":
        p = replace(p, dsp_groups=dsp_groups(p, filter, bias))
    if path(p, bias, "mve") == "mve":
        p = replace(p, mve_groups=mve_groups(p, filter, bias))
    return p


def _int32(v: np.ndarray) -> np.ndarray:
    return (np.asarray(v, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _requant2(p: DepthwiseConvParams) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each channel's multiplier, r = -shift, doubled lift and base as the fast paths' preparation
    computes them (mcu_requant.h: mcu_requant2_base, or mcu_requant2_no_tie_q for onnxruntime's
    rounding, every multiplier > 0 there), int64."""
    c_out = p.output.c
    m = np.asarray(p.multiplier, dtype=np.int64)[:c_out]
    r = -np.asarray(p.shift, dtype=np.int64)[:c_out]
    oo = int(p.q.output_offset)
    if p.q.rounding != ROUND_NEAREST_NO_TIE:
        return m, r, np.zeros(c_out, np.int64), (1 << (r - 1)) + (oo << r)
    low = m & -m  # 2^v, the multiplier's lowest set bit (every multiplier > 0: quant.fast_round_ok)
    v = np.zeros_like(m)
    v[low > 0] = np.log2(low[low > 0]).astype(np.int64)
    lift2 = np.where(r == 0, 1 << 30, (1 << 30) + ((1 << 31) >> v))
    base = np.where(r == 0, oo - (m >> 2), (1 << np.maximum(r - 1, 0)) + (oo << r) - 1 - (m >> 2) - (m >> (v + 1)))
    return m, r, lift2, base


def dsp_groups(p: DepthwiseConvParams, filter: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """What the DSP lean variant's prepare_group (_dsp.c) writes for each group of four channels
    c .. c + 3, at build time: floor(C / 4) groups. The group (mcu_dw_group4_t, channels in the
    order c, c + 2, c + 1, c + 3): 2 * bias plus the doubled lift, the multiplier, the base, r =
    -shift, 16 words; then the taps' weights doubled as int16 lane pairs (2 w[c], 2 w[c + 2]),
    (2 w[c + 1], 2 w[c + 3]): [ky][kx + 1], three rows between zero columns, where the C's group
    holds more taps than KH * KW (its 3x3 layout for shifted windows, asked of the C), else
    [ky * KW + kx]."""
    c_out = p.output.c
    m, r, lift2, base = _requant2(p)
    b = np.zeros(c_out, np.int64) if bias is None else np.asarray(bias, dtype=np.int64)
    bias2 = 2 * b + lift2
    taps = filter.reshape(p.filter.h * p.filter.w, c_out).astype(np.int64) * 2
    n_taps = (kernel_info.ask("dwgw", p, bias, "dsp")[1] - 16) // 2
    shifted = n_taps != p.filter.h * p.filter.w
    cols = n_taps // 3
    out = np.zeros((c_out // 4, 16 + 2 * n_taps), np.int64)
    for g in range(c_out // 4):
        c = 4 * g
        order = [c, c + 2, c + 1, c + 3]
        out[g, 0:4], out[g, 4:8], out[g, 8:12], out[g, 12:16] = bias2[order], m[order], base[order], r[order]
        pairs = np.stack([(taps[:, c] & 0xFFFF) | (taps[:, c + 2] << 16),
                          (taps[:, c + 1] & 0xFFFF) | (taps[:, c + 3] << 16)], axis=1)  # [tap][2]
        w = out[g, 16:].reshape(n_taps, 2)
        if shifted:
            for ky in range(3):
                w[ky * cols + 1:ky * cols + 4] = pairs[3 * ky:3 * ky + 3]
        else:
            w[:] = pairs
    return _int32(out.ravel())


def mve_groups(p: DepthwiseConvParams, filter: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """What the MVE path's mcu_dw_mve_prepare (_mve_ring.c) writes for each group of eight channels
    c .. c + 7, at build time: ceil(C / 8) groups of MCU_DW_MVE_GROUP_BYTES(KH * KW) bytes, as int32
    words. [even/odd][j] is channel c + 2 j + odd: bias (plus half the doubled lift), bias_full
    (that plus input_offset times the channel's sum of weights), multiplier, base, shift = -r; then
    the weights as int16 [tap][8 channels]. Lanes past C: zero weights, bias and multiplier, shift
    -1 and its base. A 3x3 filter's groups are followed by each group's edge sums
    (MCU_DW_MVE_EDGE_BYTES, what _mve.c's edge_sums computes): for the left then the right window
    of a row, whose first / last column of taps lies outside the input, [even/odd][j] bias_full
    minus input_offset times that column's weights."""
    c_out, n_taps = p.output.c, p.filter.h * p.filter.w
    m, r, lift2, base = _requant2(p)
    b = np.zeros(c_out, np.int64) if bias is None else np.asarray(bias, dtype=np.int64)
    w = filter.reshape(n_taps, c_out).astype(np.int64)
    groups = -(-c_out // 8)
    lanes = groups * 8  # every constant padded to whole groups (the lanes past C)
    pad = lanes - c_out
    start = np.concatenate([b + lift2 // 2, np.zeros(pad, np.int64)])
    full = start + p.q.input_offset * np.concatenate([w.sum(axis=0), np.zeros(pad, np.int64)])
    mult = np.concatenate([m, np.zeros(pad, np.int64)])
    rr = np.concatenate([r, np.ones(pad, np.int64)])
    bases = np.concatenate([base, 1 + (np.int64(p.q.output_offset) << 1) + np.zeros(pad, np.int64)])
    weights = np.concatenate([w, np.zeros((n_taps, pad), np.int64)], axis=1)
    out = []
    for g in range(groups):
        lane = 8 * g + np.array([0, 2, 4, 6, 1, 3, 5, 7])  # [odd][j]: c + 2 j + odd
        consts = np.concatenate([start[lane], full[lane], mult[lane], bases[lane], -rr[lane]])
        wg = weights[:, 8 * g:8 * g + 8] & 0xFFFF  # int16 lanes, two a word (little-endian)
        out += [consts, (wg[:, 0::2] | (wg[:, 1::2] << 16)).ravel()]
    if (p.filter.h, p.filter.w) == (3, 3):
        for g in range(groups):
            lane = 8 * g + np.array([0, 2, 4, 6, 1, 3, 5, 7])
            out += [full[lane] - p.q.input_offset * weights[col::3][:, lane].sum(axis=0) for col in (0, 2)]
    return _int32(np.concatenate(out))


IN_PLACE_C = "mcu_depthwise_conv2d_s8_in_place"  # the output over its input, channel block by block
IN_PLACE_BLOCK = c_defines("include/mcu_nn.h")["MCU_DW_IN_PLACE_CHANNELS"]  # channels a block: its calls


def in_place(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> int | None:
    """One whole call writes its output over its input when it starts exactly these bytes below it
    (mcu_depthwise_conv2d_s8_overlap_down(), asked of the C: the path's order of writes against the
    windows still to read; 3x3 with padding 1: a row and a pixel). Exactly (in_place_exact): the
    fast paths run groups of channels over the whole output, and another start would put a group's
    writes on channels of a group still to run."""
    if p.output != p.input:  # (the planner overlaps same-size tensors only)
        return None
    down = kernel_info.ask("dwov", p, bias, isa)[1]
    return None if down < 0 else down


def lean_in_place(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> int | None:
    """in_place() of the lean call (mcu_depthwise_conv2d_s8_lean_overlap_down(), asked of the C: its
    path runs no row pairs, so it starts nearer its input: 3x3 with padding 1, a row and a pixel)."""
    if p.output != p.input:
        return None
    down = kernel_info.ask("dwlov", p, bias, isa)[1]
    return None if down < 0 else down


def in_place_buffer_size(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> int | None:
    """Scratch of IN_PLACE_C (mcu_depthwise_conv2d_s8_in_place_get_buffer_size(), asked of the C),
    which writes the output exactly over its input when they have the same dims (a block's channels
    are copied out before any of them is written, and no other block reads them)."""
    if p.output != p.input or p.depth_multiplier != 1:
        return None
    return kernel_info.ask("dwip", p, bias, isa)[1]


def in_place_c_calls(p: DepthwiseConvParams) -> int:
    """Kernel calls of IN_PLACE_C: one a block of channels."""
    return -(-p.output.c // IN_PLACE_BLOCK)


KERNEL = Kernel("mcu_depthwise_conv2d_s8", band=band, band_c=BAND_C, lean_c=LEAN_C, lean_buffer_size=lean_buffer_size,
                in_place=in_place, in_place_exact=True, lean_in_place=lean_in_place, in_place_c=IN_PLACE_C,
                in_place_buffer_size=in_place_buffer_size, in_place_c_calls=in_place_c_calls,
                buffer_size=buffer_size, path=path, to_cmsis=to_cmsis, band_constants=band_constants)
