"""Twin of mcu_conv2d_s4: int8 2-D convolution with 4-bit weights (group 1; 1-D as H = 1).

The numbers are mcu_conv2d_s8's (golden: mcu_conv2d_s8 on the unpacked weights); only the weights'
storage and the bias operand differ: the filter is packed two signed nibbles a byte (pack_filter,
the layout of mcu_nn_s4.h: per output channel, blocks of 32 weights in 16 bytes, byte j = weight
j | weight 16 + j << 4, then the tail of T weights in ceil(T / 2) bytes likewise), and the kernel
takes sums[oc] = bias[oc] + input_offset * sum of w[oc] (kernel_sums) instead of the bias.

Paths and scratch (mcu_conv2d_s4.c, plan()): DSP for at most 576 widened taps (P = 4, 2 or 1
positions a pass), MVE always, generic otherwise; buffer_size() repeats its formula.
No CMSIS-NN form (CMSIS-NN 7.0.0 has no 4-bit convolution).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emitter.kernels import c_defines
from emitter.kernels.base import Kernel
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


def unpack_rows(packed: np.ndarray, k: int) -> np.ndarray:
    """pack_rows' inverse: uint8 [rows, ceil(K / 2)] -> int8 [rows, K]."""
    b = packed.astype(np.int64)
    lo, hi = ((b & 15) ^ 8) - 8, ((b >> 4) ^ 8) - 8
    out = np.zeros((b.shape[0], k), np.int8)
    for start in range(0, k, BLOCK):
        t = min(BLOCK, k - start)
        h = (t + 1) // 2
        out[:, start:start + h] = lo[:, start // 2:start // 2 + h]
        out[:, start + h:start + t] = hi[:, start // 2:start // 2 + t - h]
    return out


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
MVE_POSITIONS = _D["MCU_CONV_S4_MVE_POSITIONS"]
MVE_OC_BLOCK = _D["MCU_CONV_S4_MVE_OC_BLOCK"]


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


def _plan(p: ConvParams, isa: str) -> tuple[str, int]:
    k = p.filter.h * p.filter.w * p.input.c
    patch = k if gathers(p) else 0
    per_pass = dsp_positions(p) if isa == "dsp" else 0
    if per_pass:
        return "dsp", 2 * per_pass * widened(k) + patch
    if isa == "mve":
        return "mve", 4 * (2 + MVE_POSITIONS) * MVE_OC_BLOCK + MVE_POSITIONS * patch
    return "generic", patch


def path(p: ConvParams, bias: Any, isa: str) -> str:
    """mcu_conv2d_s4_path(): "dsp", "mve" or "generic" on `isa` ("c", "dsp", "mve")."""
    return _plan(p, isa)[0]


def buffer_size(p: ConvParams, bias: Any, isa: str) -> int:
    """mcu_conv2d_s4_get_buffer_size(): scratch bytes on `isa`."""
    return _plan(p, isa)[1]


def lean_buffer_size(p: ConvParams, bias: Any) -> int:
    """Scratch bytes of mcu_conv2d_s4_lean (the generic path)."""
    return buffer_size(p, bias, "c")


def band(p: ConvParams, o0: int, o1: int) -> tuple[ConvParams, int, int]:
    """The band of output rows [o0, o1) (the params struct is mcu_conv2d_s8's: its band function)."""
    return window_band(p, o0, o1)  # type: ignore[no-any-return]


KERNEL = Kernel("mcu_conv2d_s4", band=band, band_c=BAND_C, lean_c="mcu_conv2d_s4_lean",
                lean_buffer_size=lean_buffer_size, buffer_size=buffer_size, path=path)
