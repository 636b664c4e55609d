"""Twin of mcu_runtime/kernels/mcu_conv2d_s8.c: its code path and scratch size per instruction set.

`path()` and `buffer_size()` are mcu_conv2d_s8_path() / mcu_conv2d_s8_get_buffer_size() line for
line (tests/kernels/test_conv2d_dispatch.py compiles the C and compares them over a sweep); the
tuning constants are read from mcu_conv2d_s8_internal.h, their one definition.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emitter.kernels import c_defines

_C = c_defines("kernels/mcu_conv2d_s8_internal.h")
PATCH_BYTES = _C["MCU_CONV_PATCH_BYTES"]
OC_BLOCK = _C["MCU_CONV_OC_BLOCK"]
DSP_WORDS = _C["MCU_CONV_DSP_WORDS"]
DSP_PATCH = _C["MCU_CONV_DSP_PATCH"]
MVE_K = _C["MCU_CONV_MVE_K"]
MVE_OC_BLOCK = _C["MCU_CONV_MVE_OC_BLOCK"]
FAST_MAX_K = _C["MCU_CONV_FAST_MAX_K"]


def requant2_ok(p: Any, bias: np.ndarray | None) -> bool:
    """requant2_ok() (mcu_kernel_util.h) for every output channel: shift in [-20, -1],
    multiplier >= 0, |bias| < 2^29."""
    m, s = np.asarray(p.multiplier, np.int64), np.asarray(p.shift, np.int64)
    b = np.zeros(1, np.int64) if bias is None else np.asarray(bias, np.int64)
    return bool(np.all((s >= -20) & (s <= -1) & (m >= 0)) and np.all(np.abs(b) < 1 << 29))


def dsp_positions(p: Any, bias: np.ndarray | None) -> int:
    """mcu_conv2d_s8_dsp_positions(): positions per pass of the DSP path, 0 when it cannot run."""
    if max(p.filter.h, p.filter.w, p.input.c) > 2 * DSP_WORDS:
        return 0
    k = p.filter.h * p.filter.w * p.input.c
    groups = (k + 3) >> 2
    if groups * 2 > DSP_WORDS or (k > DSP_PATCH and p.input.c % 4 != 0) or not requant2_ok(p, bias):
        return 0
    positions = p.input.n * p.output.h * p.output.w
    per_pass = 4 if groups * 8 <= DSP_WORDS else (2 if groups * 4 <= DSP_WORDS else 1)
    while per_pass > positions:
        per_pass >>= 1
    return per_pass


def gathers(p: Any) -> bool:
    """mcu_conv2d_s8_gathers(): some window is not one run of the input."""
    contiguous = p.filter.h == 1 and (p.filter.w == 1 or p.dilation_w == 1)
    last_y = (p.output.h - 1) * p.stride_h + (p.filter.h - 1) * p.dilation_h - p.pad_top
    last_x = (p.output.w - 1) * p.stride_w + (p.filter.w - 1) * p.dilation_w - p.pad_left
    border = p.pad_top > 0 or p.pad_left > 0 or last_y >= p.input.h or last_x >= p.input.w
    return not contiguous or border


def _plan(p: Any, bias: np.ndarray | None, isa: str) -> tuple[str, int]:
    k = p.filter.h * p.filter.w * p.input.c
    g = gathers(p)
    if isa == "dsp" and (per_pass := dsp_positions(p, bias)) > 0:
        return "dsp", 8 * per_pass * ((k + 3) >> 2) + (k if p.input.c % 4 != 0 and g else 0)
    if isa == "mve" and k <= PATCH_BYTES and k <= FAST_MAX_K and requant2_ok(p, bias):
        if k <= MVE_K:
            size = 8 * min(p.output.c, MVE_OC_BLOCK) + 4 * ((k + 15) & ~15)
        else:
            size = 8 * min(p.output.c, OC_BLOCK)
        return "mve", size + (k if g else 0)
    return "generic", 4 * min(p.output.c, OC_BLOCK) + (k if k <= PATCH_BYTES and g else 0)


def path(p: Any, bias: np.ndarray | None, isa: str) -> str:
    """The code path mcu_conv2d_s8 takes on `isa` ("c", "dsp", "mve"): "generic", "dsp" or "mve"."""
    return _plan(p, bias, isa)[0]


def buffer_size(p: Any, bias: np.ndarray | None, isa: str) -> int:
    """Bytes of arena scratch mcu_conv2d_s8 needs on `isa`."""
    return _plan(p, bias, isa)[1]
