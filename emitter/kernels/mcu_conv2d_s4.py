"""Twin of mcu_conv2d_s4: int8 2-D convolution with 4-bit weights (group 1; 1-D as H = 1).

The numbers are mcu_conv2d_s8's (golden: mcu_conv2d_s8 on the unpacked weights); only the weights'
storage and the bias operand differ: the filter is packed two signed nibbles a byte (pack_filter,
the layout of mcu_nn_s4.h: per output channel, blocks of 32 weights in 16 bytes, byte j = weight
j | weight 16 + j << 4, then the tail of T weights in ceil(T / 2) bytes likewise), and the kernel
takes sums[oc] = bias[oc] + input_offset * sum of w[oc] (kernel_sums) instead of the bias.

Paths and scratch (mcu_conv2d_s4.c, plan()): blocks of output channels unpacked to int8 once in
scratch (at most UNPACK_BYTES), then mcu_conv2d_s8's DSP / MVE / generic loops (where mcu_conv2d_s8
would take them); the unblocked DSP path where only it fits; buffer_size() repeats the C's formula,
lean_buffer_size() mcu_conv2d_s4_lean's (blocks of 4 channels).
CMSIS-NN form: arm_convolve_wrapper_s4 (emitter/kernels/cmsis_s4.py), chosen by measurement.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emitter.calls import ConstArg, Prepared
from emitter.kernels import c_defines, cmsis_s4
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import window_band
from emitter.kernels.mcu_conv2d_s8 import BAND_C, ConvParams, mcu_conv2d_s8

BLOCK = 32  # MCU_S4_BLOCK


def pack_rows(w: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """int8 [rows, K] in [-8, 7] -> uint8 [rows, ceil(K / 2)]: per row, blocks of `block` weights,
    byte j holding weight j (low nibble) and weight h + j (high nibble), h = block / 2 (a tail of
    t: ceil(t / 2))."""
    w = np.asarray(w, np.int64)
    if w.size and (w.min() < -8 or w.max() > 7):
        raise ValueError(f"4-bit weights must lie in [-8, 7], got [{w.min()}, {w.max()}]")
    rows, k = w.shape
    out = np.zeros((rows, (k + 1) // 2), np.uint8)
    for start in range(0, k, block):
        t = min(block, k - start)
        h = (t + 1) // 2
        lo = w[:, start:start + h] & 15
        hi = np.zeros_like(lo)
        hi[:, :t - h] = w[:, start + h:start + t] & 15
        out[:, start // 2:start // 2 + h] = (lo | (hi << 4)).astype(np.uint8)
    return out


def unpack_rows(packed: np.ndarray, k: int, block: int = BLOCK) -> np.ndarray:
    """pack_rows' inverse: uint8 [rows, ceil(K / 2)] -> int8 [rows, K] (blocks of `block` values,
    BLOCK for pack_rows; mcu_depthwise_conv2d_s4's filter rows use its own group)."""
    b = np.asarray(packed, np.uint8).astype(np.int64)
    lo, hi = ((b & 15) ^ 8) - 8, ((b >> 4) ^ 8) - 8
    out = np.zeros((b.shape[0], k), np.int8)
    for start in range(0, k, block):
        t = min(block, k - start)
        h = (t + 1) // 2
        out[:, start:start + h] = lo[:, start // 2:start // 2 + h]
        out[:, start + h:start + t] = hi[:, start // 2:start // 2 + t - h]
    return out


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    """arm_convolve_wrapper_s4 on the layer's filter (emitter/kernels/cmsis_s4.py)."""
    f, c = p.operands["filter"], p.params
    assert c is not None
    assert isinstance(f, ConstArg)
    return cmsis_s4.conv_to_cmsis(conv, p, unpack_rows(f.data.reshape(c.filter.n, -1),
                                                       c.filter.h * c.filter.w * c.filter.c))


def pack_filter(filt: np.ndarray) -> np.ndarray:
    """OHWI int8 filter -> the packed bytes, C_out * ceil(KH * KW * C_in / 2)."""
    return pack_rows(filt.reshape(filt.shape[0], -1)).ravel()


def kernel_sums(filt: np.ndarray, bias: np.ndarray | None, input_offset: int) -> np.ndarray:
    """sums[oc] = bias[oc] + input_offset * sum of w[oc] (int32; it fits: conv.check_bias_headroom)."""
    s = input_offset * filt.reshape(filt.shape[0], -1).astype(np.int64).sum(axis=1)
    if bias is not None:
        s = s + bias.astype(np.int64)
    return s.astype(np.int32)


def mcu_conv2d_s4(p: ConvParams, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """The C kernel's results: mcu_conv2d_s8 on the same (unpacked, int8) filter and bias."""
    return mcu_conv2d_s8(p, input, filter, bias)


_D = c_defines("kernels/mcu_conv2d_s4_internal.h")
DSP_BYTES = _D["MCU_CONV_S4_DSP_BYTES"]
UNPACK_BYTES = _D["MCU_CONV_S4_UNPACK_BYTES"]
_D8 = c_defines("kernels/mcu_conv2d_s8_internal.h")
PATCH_BYTES = _D8["MCU_CONV_PATCH_BYTES"]
OC_BLOCK = _D8["MCU_CONV_OC_BLOCK"]
MVE_OC_BLOCK = _D8["MCU_CONV_MVE_OC_BLOCK"]
FAST_MAX_K = _D8["MCU_CONV_FAST_MAX_K"]
DSP_OC_BLOCK = _D["MCU_CONV_S4_DSP_OC_BLOCK"]
MIN_OC_BLOCK = _D["MCU_CONV_S4_MIN_OC_BLOCK"]
LEAN_OC_BLOCK = _D["MCU_CONV_S4_LEAN_OC_BLOCK"]
DSP8_WORDS = _D8["MCU_CONV_DSP_WORDS"]
DSP8_PATCH = _D8["MCU_CONV_DSP_PATCH"]
ROUND_NEAREST_EVEN = c_defines("include/mcu_nn.h")["MCU_ROUND_NEAREST_EVEN"]
ROUND_NEAREST_NO_TIE = c_defines("include/mcu_nn.h")["MCU_ROUND_NEAREST_NO_TIE"]
# The blocked paths run mcu_conv2d_s8's generic and MVE loops: its dispatcher and path files ship.
RUNTIME_DEPS = ("mcu_conv2d_s8",)


def widened(k: int) -> int:
    """mcu_conv2d_s4_widened(): int16 taps of one window on the DSP path."""
    t = k % BLOCK
    h = (t + 1) // 2
    return k - t + (2 * ((h + 3) & ~3) if t else 0)


def gathers(p: ConvParams) -> bool:
    """mcu_conv2d_s4_gathers(): some window is not one run of the input."""
    contiguous = p.filter.h == 1 and (p.filter.w == 1 or p.dilation_w == 1)
    last_y = (p.output.h - 1) * p.stride_h + (p.filter.h - 1) * p.dilation_h - p.pad_top
    last_x = (p.output.w - 1) * p.stride_w + (p.filter.w - 1) * p.dilation_w - p.pad_left
    border = p.pad_top > 0 or p.pad_left > 0 or last_y >= p.input.h or last_x >= p.input.w
    return not contiguous or border


def dsp_positions(p: ConvParams) -> int:
    """mcu_conv2d_s4_dsp_positions()."""
    k = p.filter.h * p.filter.w * p.input.c
    if k > DSP_BYTES:
        return 0
    b = 2 * widened(k)
    per_pass = 4 if 4 * b <= DSP_BYTES else 2 if 2 * b <= DSP_BYTES else 1 if b <= DSP_BYTES else 0
    while per_pass > p.input.n * p.output.h * p.output.w:
        per_pass >>= 1
    return per_pass


def unpack_block(p: ConvParams, most: int, round_to: int, least: int = 1) -> int:
    """unpack_block(): output channels a block on the blocked paths (their unpacked weights within
    UNPACK_BYTES, `least` channels at least; a multiple of round_to when not all and that many fit)."""
    k = p.filter.h * p.filter.w * p.input.c
    n = min(max(UNPACK_BYTES // k, least), most)
    if n >= p.output.c:
        return p.output.c
    if n >= round_to:
        n -= n % round_to
    return max(n, 1)


def _sums_row(n: int) -> int:
    return 8 if n <= 8 else 16 if n <= 16 else 32 if n <= 32 else 64


def _mve_ok(p: ConvParams) -> bool:
    """mve_ok(): mcu_conv2d_s8's MVE path takes these parameters (the sums checked per call)."""
    k = p.filter.h * p.filter.w * p.input.c
    if p.q.rounding == ROUND_NEAREST_EVEN or k > FAST_MAX_K or (k > PATCH_BYTES and gathers(p)):
        return False
    return _requant2_ok(p)


def _requant2_ok(p: ConvParams) -> bool:
    """mcu_requant2_ok(multiplier, shift, 0) for every channel (the sums are checked per call)."""
    return all(-20 <= int(s) <= -1 and int(m) >= 0 for m, s in zip(p.multiplier, p.shift, strict=True))


def dsp8_positions(p: ConvParams) -> int:
    """dsp8_positions(): P of the blocked DSP path (mcu_conv2d_s8's DSP loops), 0 when it does not run."""
    words = DSP8_WORDS
    if max(p.filter.h, p.filter.w, p.input.c) > 2 * words or p.q.rounding == ROUND_NEAREST_EVEN:
        return 0
    k = p.filter.h * p.filter.w * p.input.c
    groups = (k + 3) >> 2
    if groups * 2 > words or (k > DSP8_PATCH and p.input.c % 4) or not _requant2_ok(p):
        return 0
    per_pass = 4 if groups * 8 <= words else 2 if groups * 4 <= words else 1
    while per_pass > p.input.n * p.output.h * p.output.w:
        per_pass >>= 1
    return per_pass


def _plan(p: ConvParams, isa: str) -> tuple[str, int]:
    k = p.filter.h * p.filter.w * p.input.c
    patch = k if gathers(p) else 0
    n = unpack_block(p, OC_BLOCK, 4)
    size = 4 * n + n * k + (k if k <= PATCH_BYTES and gathers(p) else 0)
    p8 = dsp8_positions(p) if isa == "dsp" else 0
    if p8:
        n = unpack_block(p, DSP_OC_BLOCK, 2, MIN_OC_BLOCK)
        dsp = (4 * n + 8 * p8 * ((k + 3) >> 2) + (8 * n if p.q.rounding == ROUND_NEAREST_NO_TIE else 0)
               + (k if p.input.c % 4 and gathers(p) else 0) + n * k)
        return "dsp", max(size, dsp)
    per_pass = dsp_positions(p) if isa == "dsp" and p.q.rounding != ROUND_NEAREST_EVEN else 0
    if per_pass:
        return "dsp", 2 * per_pass * widened(k) + patch
    if isa == "mve" and _mve_ok(p):
        n = unpack_block(p, MVE_OC_BLOCK, 2, MIN_OC_BLOCK)
        mve = 8 * n + 4 * (2 * _sums_row(n) + n + (n & 1)) + 48 * ((k + 15) >> 4) + patch + n * k
        return "mve", max(size, mve)
    return "generic", size


def path(p: ConvParams, bias: Any, isa: str) -> str:
    """mcu_conv2d_s4_path(): "dsp", "mve" or "generic" on `isa` ("c", "dsp", "mve")."""
    return _plan(p, isa)[0]


def buffer_size(p: ConvParams, bias: Any, isa: str) -> int:
    """mcu_conv2d_s4_get_buffer_size(): scratch bytes on `isa`."""
    return _plan(p, isa)[1]


def lean_buffer_size(p: ConvParams, bias: Any, isa: str = "any") -> int:  # (the same on every target)
    """mcu_conv2d_s4_lean_get_buffer_size(): the blocked generic path with blocks of LEAN_OC_BLOCK
    channels (their corrections and unpacked weights, then the patch)."""
    k = p.filter.h * p.filter.w * p.input.c
    n = min(unpack_block(p, OC_BLOCK, 4), LEAN_OC_BLOCK)
    return 4 * n + n * k + (k if k <= PATCH_BYTES and gathers(p) else 0)


def band(p: ConvParams, o0: int, o1: int) -> tuple[ConvParams, int, int]:
    """The band of output rows [o0, o1) (the params struct is mcu_conv2d_s8's: its band function)."""
    return window_band(p, o0, o1)  # type: ignore[no-any-return]


KERNEL = Kernel("mcu_conv2d_s4", band=band, band_c=BAND_C, lean_c="mcu_conv2d_s4_lean",
                lean_buffer_size=lean_buffer_size, buffer_size=buffer_size, path=path,
                runtime_deps=RUNTIME_DEPS, to_cmsis=to_cmsis)
