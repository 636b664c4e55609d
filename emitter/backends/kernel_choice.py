"""Where mcugen's own kernel beats CMSIS-NN v7.0.0, per layer: the cmsis-nn backend keeps it there.

Each rule is the condition under which the portable kernel takes its fast path on that target,
asked of the kernel's twin (emitter/kernels/mcu_conv2d_s8.py path(), which equals the C
dispatcher's mcu_conv2d_s8_path(); its constants are read from the C; likewise
emitter/kernels/mcu_depthwise_conv2d_s8.py path() for depthwise), narrowed to the shapes where it was
measured faster, instruction for instruction in QEMU, than CMSIS-NN v7.0.0 built at -Ofast (the
bundle at -O2): `python benchmarks/cmsis_nn.py`, per-layer tables in docs/cmsis_nn.md. Cores
without DSP or MVE keep CMSIS-NN (its plain C was not beaten).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin
from emitter.kernels import mcu_fully_connected_s8 as fc_twin
from emitter.ops.base import ConstArg, Prepared

# Measured narrowings (benchmarks/cmsis_nn.py, docs/cmsis_nn.md), not C constants:
DSP_CONV_1X1_MIN_OUT = 8  # CMSIS-NN's 1x1 fast kernel beat ours at 16 -> 4 channels (0.75x); 16 -> 8 won
MVE_FC_MIN_INPUTS = 128  # 1.19-1.82x fewer instructions at 128..4000 inputs, a tie at 64
# MVE depthwise: border windows are its slow part; it beat CMSIS-NN at >= 55% whole windows (Kx1
# 0.6-0.8x, KWS 3x3 25x5 0.95x) and tied or lost below (VWW 6x6 0.44: 1.0x, 3x3 0.11: 1.3x)
MVE_DW_MIN_WHOLE = 0.5


def cmsis_1x1_fast(c: Any) -> bool:
    """The convolution arm_convolve_wrapper_s8 hands to arm_convolve_1x1_s8_fast."""
    return (c.filter.h == c.filter.w == 1 and c.stride_h == c.stride_w == 1 and c.pad_top == c.pad_left == 0
            and c.dilation_h == c.dilation_w == 1)


def bias_of(p: Prepared) -> np.ndarray | None:
    """The bias of a portable conv/depthwise/FC call."""
    b = p.operands.get("bias")
    return b.data if isinstance(b, ConstArg) else None


def ours_is_faster(p: Prepared, var: str) -> str | None:
    """Why mcugen's kernel is faster than CMSIS-NN's on this layer for code path `var` ("c",
    "dsp", "mve"); None where CMSIS-NN is as fast or faster (or not measured)."""
    c: Any = p.params
    if var == "c" or c is None:
        return None
    if p.kernel == "mcu_depthwise_conv2d_s8":
        if dw_twin.path(c, bias_of(p), var) == var and (
                var != "mve" or dw_twin.whole_fraction(c) >= MVE_DW_MIN_WHOLE):
            return (f"{var.upper()} depthwise fast path ({c.filter.h}x{c.filter.w}, "
                    f"{c.output.c} channels)")
    elif p.kernel == "mcu_conv2d_s8":
        k = c.filter.h * c.filter.w * c.input.c
        path = conv_twin.path(c, bias_of(p), var)
        if (var == "dsp" and path == "dsp"
                and not (cmsis_1x1_fast(c) and c.output.c < DSP_CONV_1X1_MIN_OUT)):
            return f"DSP convolution fast path (window of {k} taps)"
        # measured: only one-input-channel windows of the four-position MVE loop (K <= MVE_K)
        if var == "mve" and path == "mve" and c.input.c == 1 and k <= conv_twin.MVE_K:
            return f"MVE convolution fast path (one input channel, window of {k} taps)"
    elif p.kernel == "mcu_conv2d_add_s8":  # the residual Add fused: where our conv wins on DSP (measured
        # there: the fused Add costs fewer instructions than CMSIS-NN's separate one); on MVE CMSIS-NN's add is faster
        conv = ours_is_faster(replace(p, kernel="mcu_conv2d_s8", params=c.conv), var) if var == "dsp" else None
        return f"{conv}, residual add fused" if conv else None
    elif p.kernel == "mcu_fully_connected_s8":
        if var == "mve" and c.in_features >= MVE_FC_MIN_INPUTS:
            return f"MVE fully connected ({c.in_features} inputs)"
        # measured: 1..640 inputs from 4 outputs (one block of the layout; fewer run one row at a time)
        if var == "dsp" and c.out_features >= fc_twin.BLOCK_ROWS and fc_twin.path(c, None, var) == "dsp":
            return f"DSP fully connected ({c.in_features} inputs)"
    return None
