"""Twin of mcu_conv2d_s8: int8 2-D convolution, NHWC input/output, OHWI filter.

out[b,y,x,oc] = clamp(requant(sum_{ky,kx,ic} (in[b,iy,ix,ic] + input_offset) * w[oc,ky,kx,ic]
                + bias[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
with iy = y*stride_h - pad_top + ky*dilation_h (likewise ix); taps outside the input contribute
nothing, which is padding the offset input with 0 (the input zero point). All sums in int64; the
accumulator is wrapped to int32 like the C kernel's single int32 accumulator.

CMSIS-NN: arm_convolve_wrapper_s8 (scratch sized by CMSIS-NN itself).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from emitter.calls import ConstArg, Prepared, StructArg
from emitter.kernels import ISAS, kernel_info
from emitter.kernels.base import Kernel, Rounded, Window, Windowed
from emitter.kernels.cmsis_api import Converter, ScratchRequest, arr, dims, padded, tile
from emitter.kernels.cmsis_quirks import mve_1xn_problem
from emitter.kernels.common import (
    Dims,
    QuantIO,
    check_shape,
    dims_shape,
    output_stage,
    patches,
    window_band,
)
from emitter.quant import ROUND_NEAREST_NO_TIE


@dataclass(frozen=True, eq=False)
class ConvParams(Windowed, Rounded):
    CTYPE: ClassVar[str] = "mcu_conv_params_t"
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
    kernel_sums: np.ndarray | None = None  # int32 [C_out] or None: band_constants()
    requant_bases: np.ndarray | None = None  # int32 [C_out] or None: band_constants()
    channels_fast: int = 0  # 1: mcu_conv2d_s8_channels_fast() holds (band_constants())

    def window(self) -> Window:
        return Window(self.input, self.output, self.filter.n * self.filter.h * self.filter.w * self.filter.c)

    def rounding_mode(self) -> int:
        return self.q.rounding


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


def per_channel_quant(c: Any, pad: int) -> StructArg:
    """cmsis_nn_per_channel_quant_params of a conv / depthwise / FC params (MVE: padded arrays)."""
    return StructArg("cmsis_nn_per_channel_quant_params", "quant",
                     {"multiplier": arr(ConstArg("multiplier", padded(c.multiplier, pad)), "(int32_t *)"),
                      "shift": arr(ConstArg("shift", padded(c.shift, pad)), "(int32_t *)")})


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, ConvParams)
    ops = p.operands
    if conv.var == "mve" and (problem := mve_1xn_problem(c)):
        conv.refusal = problem
        return None
    pad = 4 if conv.var == "mve" else 0
    b = ops["bias"]
    bias = b.data if isinstance(b, ConstArg) else np.zeros(c.filter.n, np.int32)
    params = {"input_offset": c.q.input_offset, "output_offset": c.q.output_offset,
              "stride": tile(c.stride_w, c.stride_h), "padding": tile(c.pad_left, c.pad_top),
              "dilation": tile(c.dilation_w, c.dilation_h),
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    return conv.call(p, "arm_convolve_wrapper_s8", {
        "conv_params": StructArg("cmsis_nn_conv_params", "conv", params),
        "quant_params": per_channel_quant(c, pad),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims(c.input)), "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", dims(c.filter)), "filter_data": ops["filter"],
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.filter.n}),
        "bias_data": ConstArg("bias", padded(bias, pad)),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims(c.output)), "output_data": ops["output"]})


# -- the C dispatcher's path choice and scratch size: its own answers (kernel_info.c) --
def path(p: Any, bias: np.ndarray | None, isa: str) -> str:
    """The code path mcu_conv2d_s8 takes on `isa` ("c", "dsp", "mve"): "generic", "dsp" or "mve"
    (mcu_conv2d_s8_path(), asked of the C)."""
    return kernel_info.ask("conv", p, bias, isa)[0]


def buffer_size(p: Any, bias: np.ndarray | None, isa: str) -> int:
    """Bytes of arena scratch mcu_conv2d_s8 needs on `isa` (mcu_conv2d_s8_get_buffer_size(), asked
    of the C)."""
    return kernel_info.ask("conv", p, bias, isa)[1]


# little scratch: a lean variant of the fast path, else the generic path; the fast call itself where
# its ctx has room for that call's scratch and it is the faster (lean_fast; a streamed plan's bands over
# the rows they have passed: stream.fed). mcugen gives every lean call the build-time constants
# (band_constants; stream.band_params): its MVE variant then takes every channel a pass in groups, with
# the least scratch, and may write over its input (lean_in_place) given the room to copy the windows;
# with less, where every window is one run of the input, the groups read them where they lie (only
# their sums in scratch: MCU_CONV_MVE_LEAN_DIRECT, not over its input). The C is asked about the params
# as they are: with the constants ("leans", "rooms", "lpws") or without.
LEAN_C = "mcu_conv2d_s8_lean"


def _with(kind: str, p: Any) -> str:
    """The tool's query `kind` for params with the build-time constants (band_constants) or without."""
    return kind + "s" if getattr(p, "kernel_sums", None) is not None and \
        getattr(p, "requant_bases", None) is not None else kind


def lean_path(p: Any, bias: np.ndarray | None, isa: str) -> str:
    """The code path LEAN_C takes on `isa`: the fast path's lean variant ("dsp": at most two
    positions a pass, channel pairs; "mve": with the build-time constants every channel of three
    positions in groups of 8 or 16, their windows copied or read where they lie, else blocks of 8
    channels a call) where it needs at most
    MCU_CONV_LEAN_EXTRA bytes more than the generic path, else "generic" (mcu_conv2d_s8_lean_path(),
    asked of the C)."""
    return kernel_info.ask(_with("lean", p), p, bias, isa)[0]


def lean_path_with(p: Any, bias: np.ndarray | None, isa: str, room: int) -> str:
    """The code path LEAN_C takes on `isa` with `room` bytes of scratch (its MVE groups where the room
    holds them, the fast path where it holds that's scratch: mcu_conv2d_s8_lean_path() given the room,
    asked of the C)."""
    return kernel_info.ask(_with("room", p), p, bias, isa, room)[0]


def lean_fast(p: Any, bias: np.ndarray | None, isa: str, room: int) -> bool:
    """Whether LEAN_C with `room` bytes of scratch runs the fast call on `isa` (where that fits and is
    the faster: mcu_conv2d_s8_lean_fast(), asked of the C); for "any" on every target."""
    return all(kernel_info.ask(_with("room", p), p, bias, i, room)[1] == 1 for i in ((isa,) if isa in ISAS else ISAS))


def lean_buffer_size(p: Any, bias: np.ndarray | None, isa: str) -> int:
    """Scratch bytes of LEAN_C on `isa` (mcu_conv2d_s8_lean_buffer_size(), asked of the C); for
    "any" (no board) the most any target's lean call needs."""
    return max(kernel_info.ask(_with("lean", p), p, bias, i)[1] for i in ((isa,) if isa in ISAS else ISAS))


def lean_wide_buffer_size(p: ConvParams, bias: np.ndarray | None, isa: str) -> int:
    """Scratch bytes with which LEAN_C's MVE variant in groups takes the wide ones (fewer passes:
    mcu_conv2d_s8_lean_wide_buffer_size(), asked of the C); elsewhere lean_buffer_size's."""
    return max(kernel_info.ask(_with("wide", p), p, bias, i)[1] for i in ((isa,) if isa in ISAS else ISAS))


BAND_C = "mcu_conv2d_s8_band"  # mcu_runtime/support/mcu_band.c


def band(p: ConvParams, o0: int, o1: int) -> tuple[ConvParams, int, int]:
    """mcu_conv2d_s8_band(): the parameters of output rows [o0, o1) and the input rows [lo, hi) they read.
    Overlap rule (the planner's only source): a band reads input rows [lo, hi) while it writes its
    output rows, so no output byte of a band may lie on input rows >= lo."""
    return window_band(p, o0, o1)  # type: ignore[no-any-return]


def band_constants(p: ConvParams, filter: np.ndarray, bias: np.ndarray | None) -> ConvParams:
    """The params of a layer called band by band (or by its lean call), with what each call would
    recompute: kernel_sums (bias + input_offset * each output channel's sum of weights, mod 2^32: the
    C's offset corrections), channels_fast (mcu_conv2d_s8_channels_fast(), asked of the C) and, where
    that holds, requant_bases (mcu_requant2_base_q(): 2^(r-1) + output_offset * 2^r, r = -shift, and
    for onnxruntime's rounding less 1 + (M >> 2) + (M >> (v + 1)), 2^v the multiplier's lowest set
    bit; mod 2^32: the MVE path's)."""
    sums = p.q.input_offset * filter.reshape(p.filter.n, -1).astype(np.int64).sum(axis=1)
    if bias is not None:
        sums = sums + bias.astype(np.int64)
    fast = kernel_info.ask("ok", p, bias, "c")[1]
    bases = None
    if fast:
        r = -np.asarray(p.shift, dtype=np.int64)  # >= 1 where channels_fast holds
        base = (np.int64(1) << (r - 1)) + p.q.output_offset * (np.int64(1) << r)
        m = np.asarray(p.multiplier, dtype=np.int64)
        if p.q.rounding == ROUND_NEAREST_NO_TIE and (m > 0).all():  # (fast_round_ok: every M > 0)
            low = m & -m  # 2^v
            base = base - 1 - (m >> 2) - m // (2 * low)
        bases = _wrap(base)
    return replace(p, kernel_sums=_wrap(sums), channels_fast=fast, requant_bases=bases)


def _wrap(v: np.ndarray) -> np.ndarray:
    """int64 values mod 2^32 as int32."""
    return ((v + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def in_place(p: ConvParams, bias: np.ndarray | None, isa: str) -> int | None:
    """How far below its input (bytes) one whole call may start writing its output over it (a
    pointwise layer on a path that reads a group of positions before it writes them), None where it
    may not (mcu_conv2d_s8_in_place_down(), asked of the C)."""
    down = kernel_info.ask("pw", p, bias, isa)[1]
    return None if down < 0 else down


def lean_in_place(p: ConvParams, bias: np.ndarray | None, isa: str) -> int | None:
    """As in_place, of the lean call with no room for the fast call (its MVE variant in groups, with
    the build-time constants: mcu_conv2d_s8_lean_in_place_down(), asked of the C)."""
    down = kernel_info.ask(_with("lpw", p), p, bias, isa)[1]
    return None if down < 0 else down


KERNEL = Kernel("mcu_conv2d_s8", band=band, band_c=BAND_C, lean_c=LEAN_C, lean_buffer_size=lean_buffer_size,
                lean_fast=lean_fast, lean_wide_buffer_size=lean_wide_buffer_size, in_place=in_place,
                lean_in_place=lean_in_place, buffer_size=buffer_size,
                path=path, to_cmsis=to_cmsis, band_constants=band_constants)
