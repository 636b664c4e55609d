"""Twin of mcu_transpose_conv_s4: int8 2-D transposed convolution with 4-bit weights (ONNX
ConvTranspose, group 1).

The numbers are mcu_transpose_conv_s8's (golden: it, on the unpacked OHWI filter and the same
bias); the filter is packed per (oc, ky, kx), two input channels a byte (pack_filter: channel 2j in
byte j's low nibble, 2j + 1 in its high nibble). One path, no scratch, no CMSIS-NN form.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.mcu_transpose_conv_s8 import TransposeConvParams, mcu_transpose_conv_s8


def pack_pairs(w: np.ndarray) -> np.ndarray:
    """int8 [rows, n] in [-8, 7] -> uint8 [rows, ceil(n / 2)]: element 2j low nibble, 2j + 1 high."""
    w = np.asarray(w, np.int64)
    if w.size and (w.min() < -8 or w.max() > 7):
        raise ValueError(f"4-bit weights must lie in [-8, 7], got [{w.min()}, {w.max()}]")
    if w.shape[1] % 2:
        w = np.concatenate([w, np.zeros((w.shape[0], 1), np.int64)], axis=1)
    return ((w[:, 0::2] & 15) | ((w[:, 1::2] & 15) << 4)).astype(np.uint8)


def pack_filter(filt: np.ndarray) -> np.ndarray:
    """OHWI int8 [C_out, KH, KW, C_in] -> C_out * KH * KW * ceil(C_in / 2) bytes."""
    return pack_pairs(filt.reshape(-1, filt.shape[-1])).ravel()


def mcu_transpose_conv_s4(p: TransposeConvParams, input: np.ndarray, filter: np.ndarray,
                          bias: np.ndarray | None) -> np.ndarray:
    """The C kernel's results: mcu_transpose_conv_s8 on the same (unpacked) filter and bias."""
    return mcu_transpose_conv_s8(p, input, filter, bias)


KERNEL = Kernel("mcu_transpose_conv_s4")
