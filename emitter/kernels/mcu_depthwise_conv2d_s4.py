"""Twin of mcu_depthwise_conv2d_s4: int8 depthwise 2-D convolution with 4-bit weights.

The numbers are mcu_depthwise_conv2d_s8's (golden: it, on the unpacked filter [1, KH, KW, C_out]
and the same bias); the filter is packed per tap, two channels a byte (pack_filter: channel 2j in
byte j's low nibble, 2j + 1 in its high nibble). One path, no scratch, no CMSIS-NN form.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import window_band
from emitter.kernels.mcu_depthwise_conv2d_s8 import BAND_C, DepthwiseConvParams, mcu_depthwise_conv2d_s8


def pack_pairs(w: np.ndarray) -> np.ndarray:
    """int8 [rows, n] in [-8, 7] -> uint8 [rows, ceil(n / 2)]: element 2j low nibble, 2j + 1 high."""
    w = np.asarray(w, np.int64)
    if w.size and (w.min() < -8 or w.max() > 7):
        raise ValueError(f"4-bit weights must lie in [-8, 7], got [{w.min()}, {w.max()}]")
    if w.shape[1] % 2:
        w = np.concatenate([w, np.zeros((w.shape[0], 1), np.int64)], axis=1)
    return ((w[:, 0::2] & 15) | ((w[:, 1::2] & 15) << 4)).astype(np.uint8)


def pack_filter(filt: np.ndarray) -> np.ndarray:
    """[1, KH, KW, C_out] int8 -> KH * KW * ceil(C_out / 2) bytes."""
    return pack_pairs(filt.reshape(-1, filt.shape[-1])).ravel()


def mcu_depthwise_conv2d_s4(p: DepthwiseConvParams, input: np.ndarray, filter: np.ndarray,
                            bias: np.ndarray | None) -> np.ndarray:
    """The C kernel's results: mcu_depthwise_conv2d_s8 on the same (unpacked) filter and bias."""
    return mcu_depthwise_conv2d_s8(p, input, filter, bias)


def band(p: DepthwiseConvParams, o0: int, o1: int) -> tuple[DepthwiseConvParams, int, int]:
    """The band of output rows [o0, o1) (mcu_depthwise_conv2d_s8's params and band function)."""
    return window_band(p, o0, o1)  # type: ignore[no-any-return]


def buffer_size(p: Any, bias: Any, isa: str) -> int:
    """No scratch on any target."""
    return 0


KERNEL = Kernel("mcu_depthwise_conv2d_s4", band=band, band_c=BAND_C, buffer_size=buffer_size)
