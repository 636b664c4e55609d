"""Twin of mcu_transpose_conv_s4: int8 2-D transposed convolution with 4-bit weights (ONNX
ConvTranspose, group 1).

The numbers are mcu_transpose_conv_s8's (golden: it, on the unpacked OHWI filter and the same
bias); the filter is packed per (oc, ky, kx), two input channels a byte (pack_filter: channel 2j in
byte j's low nibble, 2j + 1 in its high nibble). One path, no scratch, no CMSIS-NN form.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.mcu_depthwise_conv2d_s4 import pack_pairs
from emitter.kernels.mcu_transpose_conv_s8 import TransposeConvParams, mcu_transpose_conv_s8


def pack_filter(filt: np.ndarray) -> np.ndarray:
    """OHWI int8 [C_out, KH, KW, C_in] -> C_out * KH * KW * ceil(C_in / 2) bytes."""
    return pack_pairs(filt.reshape(-1, filt.shape[-1])).ravel()


def mcu_transpose_conv_s4(p: TransposeConvParams, input: np.ndarray, filter: np.ndarray,
                          bias: np.ndarray | None) -> np.ndarray:
    """The C kernel's results: mcu_transpose_conv_s8 on the same (unpacked) filter and bias."""
    return mcu_transpose_conv_s8(p, input, filter, bias)


KERNEL = Kernel("mcu_transpose_conv_s4")
