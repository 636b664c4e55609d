"""Twin of mcu_runtime/kernels/mcu_depthwise_conv2d_s8.c: its code path and scratch size per ISA.

`path()` and `buffer_size()` are mcu_depthwise_conv2d_s8_path() / _get_buffer_size() line for line
(tests/kernels/test_depthwise_conv2d_dispatch.py compiles the C and compares them over a sweep).
The tuning constants and scratch sizes are read from mcu_depthwise_conv2d_s8_internal.h and the
fast-requantization range from requant2_ok() in mcu_kernel_util.h: their one definition is the C.
"""
from __future__ import annotations

import re
from functools import cache

import numpy as np

from emitter.kernel_params import DepthwiseConvParams
from emitter.kernels import c_defines
from emitter.resources import data_dir

_C = c_defines("kernels/mcu_depthwise_conv2d_s8_internal.h")
DW_DSP_MAX_TAPS = _C["DW_DSP_MAX_TAPS"]
DW_MVE_MAX_TAPS = _C["DW_MVE_MAX_TAPS"]
DSP_SCRATCH_BYTES = _C["MCU_DW_DSP_SCRATCH_BYTES"]
MVE_SCRATCH_BYTES = _C["MCU_DW_MVE_SCRATCH_BYTES"]

# requant2_ok()'s body, whitespace collapsed; its numbers are captured
_REQUANT2_OK = re.compile(
    r"static inline int requant2_ok\(int32_t multiplier, int32_t shift, int32_t bias\) \{ "
    r"return shift >= (-\d+) && shift <= (-\d+) && multiplier >= 0 && "
    r"bias > -\(1 << (\d+)\) && bias < \(1 << (\d+)\); \}")


@cache
def requant2_range() -> tuple[int, int, int]:
    """(lowest shift, highest shift, bias bits) of requant2_ok() in mcu_kernel_util.h: shift in
    [lowest, highest], multiplier >= 0, |bias| < 2^bits."""
    text = " ".join((data_dir("mcu_runtime") / "include" / "mcu_kernel_util.h").read_text().split())
    m = _REQUANT2_OK.search(text)
    if m is None or m[3] != m[4]:
        raise RuntimeError("requant2_ok() in mcu_runtime/include/mcu_kernel_util.h no longer has "
                           "the form emitter/kernels/mcu_depthwise_conv2d_s8.py reads: update both")
    return int(m[1]), int(m[2]), int(m[3])


def requant_fast(p: DepthwiseConvParams, bias: np.ndarray | None) -> bool:
    """requant2_ok() for every output channel (the kernel's requant_fast())."""
    lo, hi, bits = requant2_range()
    m, s = np.asarray(p.multiplier, np.int64), np.asarray(p.shift, np.int64)
    b = np.zeros(1, np.int64) if bias is None else np.asarray(bias, np.int64)
    return bool(np.all((s >= lo) & (s <= hi) & (m >= 0)) and np.all(np.abs(b) < 1 << bits))


def path(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> str:
    """The path the C dispatcher takes on `isa` ("c", "dsp", "mve"): "mve" / "dsp" (the fast
    path; depth_multiplier 1, at most DW_*_MAX_TAPS taps, requant2_ok() for every channel, and
    on DSP at least four channels) or "generic"."""
    max_taps = DW_MVE_MAX_TAPS if isa == "mve" else DW_DSP_MAX_TAPS
    if (isa not in ("dsp", "mve") or p.depth_multiplier != 1 or (isa == "dsp" and p.output.c < 4)
            or p.filter.h * p.filter.w > max_taps or not requant_fast(p, bias)):
        return "generic"
    return isa


def buffer_size(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> int:
    """Scratch bytes of the call on `isa`: the fast path's prepared group, none on the generic
    path."""
    return {"dsp": DSP_SCRATCH_BYTES, "mve": MVE_SCRATCH_BYTES}.get(path(p, bias, isa), 0)
