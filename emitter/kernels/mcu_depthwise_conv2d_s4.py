"""Twin of mcu_depthwise_conv2d_s4: int8 depthwise 2-D convolution with 4-bit weights.

The numbers are mcu_depthwise_conv2d_s8's (golden: it, on the unpacked filter [1, KH, KW, C_out]
and the same bias); the filter is packed per tap in groups of 8 channels (pack_filter: 4 bytes,
byte j holding channel j low and 4 + j high; the last C_out % 8 channels likewise with half of
them rounded up). Filters of at most MCU_DW_S4_UNPACK_BYTES weights are unpacked to int8 in scratch
once a call and run through mcu_depthwise_conv2d_s8 (its path; its scratch plus KH * KW * C_out
bytes); larger ones take the s4 paths: DSP and MVE (depth multiplier 1; 8 * C_out bytes of
scratch), generic (none).
CMSIS-NN form: arm_depthwise_conv_wrapper_s4 (emitter/kernels/cmsis_s4.py), where its known faults
(emitter/kernels/cmsis_quirks.py) do not apply; chosen by measurement.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emitter.calls import ConstArg, Prepared
from emitter.kernels import cmsis_s4
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import window_band
from emitter.kernels.mcu_conv2d_s4 import pack_rows, unpack_rows
from emitter.kernels.mcu_depthwise_conv2d_s8 import BAND_C, DepthwiseConvParams, mcu_depthwise_conv2d_s8

GROUP = 8  # MCU_DW_S4_GROUP


def pack_filter(filt: np.ndarray) -> np.ndarray:
    """[1, KH, KW, C_out] int8 -> KH * KW * ceil(C_out / 2) bytes (mcu_conv2d_s4's block layout
    with blocks of 8 along the channels of each tap)."""
    return pack_rows(filt.reshape(-1, filt.shape[-1]), GROUP).ravel()


def unpack_filter(packed: np.ndarray, taps: int, ch: int) -> np.ndarray:
    """pack_filter's inverse: int8 [taps, C_out] (each tap's row ceil(C_out / 2) bytes in blocks of GROUP)."""
    return unpack_rows(np.asarray(packed, np.uint8).reshape(taps, (ch + 1) // 2), ch, GROUP)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    """arm_depthwise_conv_wrapper_s4 on the layer's filter (emitter/kernels/cmsis_s4.py)."""
    f, c = p.operands["filter"], p.params
    assert c is not None
    assert isinstance(f, ConstArg)
    return cmsis_s4.depthwise_to_cmsis(conv, p, unpack_filter(f.data, c.filter.h * c.filter.w, c.output.c))


def mcu_depthwise_conv2d_s4(p: DepthwiseConvParams, input: np.ndarray, filter: np.ndarray,
                            bias: np.ndarray | None) -> np.ndarray:
    """The C kernel's results: mcu_depthwise_conv2d_s8 on the same (unpacked) filter and bias."""
    return mcu_depthwise_conv2d_s8(p, input, filter, bias)


def band(p: DepthwiseConvParams, o0: int, o1: int) -> tuple[DepthwiseConvParams, int, int]:
    """The band of output rows [o0, o1) (mcu_depthwise_conv2d_s8's params and band function)."""
    return window_band(p, o0, o1)  # type: ignore[no-any-return]


# Filters of at most UNPACK_BYTES weights run through mcu_depthwise_conv2d_s8 (its dispatcher and
# path files ship with this kernel).
RUNTIME_DEPS = ("mcu_depthwise_conv2d_s8",)


def unpack_bytes() -> int:
    """MCU_DW_S4_UNPACK_BYTES: the largest filter (KH * KW * C_out weights) unpacked to int8."""
    from emitter.kernels import c_defines
    return int(c_defines("kernels/mcu_depthwise_conv2d_s4_internal.h")["MCU_DW_S4_UNPACK_BYTES"])


def unpacked(p: DepthwiseConvParams) -> int:
    """unpacked_bytes(): KH * KW * C_out when the filter is unpacked in scratch, else 0."""
    n = p.filter.h * p.filter.w * p.output.c
    return n if n <= unpack_bytes() else 0


def path(p: DepthwiseConvParams, bias: Any, isa: str) -> str:
    """mcu_depthwise_conv2d_s4_path(): an unpacked filter takes mcu_depthwise_conv2d_s8's path (asked
    without the bias); else "mve" / "dsp" on MVE / DSP with depth multiplier 1, else "generic"."""
    if unpacked(p):
        from emitter.kernels import mcu_depthwise_conv2d_s8 as dw8
        return str(dw8.path(p, None, isa))
    return isa if isa in ("mve", "dsp") and p.depth_multiplier == 1 else "generic"


def buffer_size(p: DepthwiseConvParams, bias: Any, isa: str) -> int:
    """mcu_depthwise_conv2d_s4_get_buffer_size(): mcu_depthwise_conv2d_s8's scratch plus the unpacked
    filter; else 8 * C_out bytes on the s4 DSP and MVE paths, none on the generic one."""
    if n := unpacked(p):
        from emitter.kernels import mcu_depthwise_conv2d_s8 as dw8
        return int(dw8.buffer_size(p, None, isa)) + n
    return 8 * p.output.c if path(p, bias, isa) != "generic" else 0


KERNEL = Kernel("mcu_depthwise_conv2d_s4", band=band, band_c=BAND_C, buffer_size=buffer_size, path=path,
                runtime_deps=RUNTIME_DEPS, to_cmsis=to_cmsis)
