"""Layers CMSIS-NN takes by its API but computes wrongly or refuses at run time, found by running
them (tests/test_cmsis_nn.py): the cmsis-nn backend keeps the portable kernel there and says why.
"""
from __future__ import annotations

from typing import Any


def mve_1xn_problem(c: Any) -> str | None:
    """Why CMSIS-NN's MVE arm_convolve_1_x_n_s8 (v7.0.0, unchanged on main of 2026-07) cannot take
    this convolution, or None. arm_convolve_wrapper_s8 takes that kernel for one input row, a 1xN
    filter, stride * C_in % 4 == 0 and no 1x1 case. Its index arithmetic, replayed here:
    - it returns ARM_CMSIS_NN_FAILURE unless pad_left * 2 + (total padding % 2) == total;
    - its right-padded windows copy N - 1 input columns and then pad_left (or, for an odd total,
      one per right-padded output) padding columns: where the last window holds fewer input
      columns (stride > 1), it reads past the input instead of padding, and the outputs are wrong
      (measured in QEMU on cortex-m55: tests/test_cmsis_nn.py, cm_conv_1xn_* cases)."""
    if (c.pad_left == 0 and c.pad_top == 0 and c.filter.w == 1 and c.filter.h == 1 and c.dilation_w == 1
            and c.dilation_h == 1 and c.input.c == c.filter.c):
        return None  # the 1x1 kernels
    if not (c.input.h == 1 and c.dilation_w == 1 and c.filter.h == 1 and c.stride_w * c.input.c % 4 == 0
            and c.input.c == c.filter.c):
        return None  # arm_convolve_s8
    k, s, pad, in_w, out_w = c.filter.w, c.stride_w, c.pad_left, c.input.w, c.output.w
    total = (out_w - 1) * s + k - in_w
    where = f"for this padding (padding left {pad}, right {total - pad})"
    fails = f"CMSIS-NN's MVE 1xN convolution returns ARM_CMSIS_NN_FAILURE {where}"
    if pad * 2 + total % 2 != total:
        return fails
    right = max(1, (pad + total % 2 + s - 1) // s) if pad + total % 2 else 0
    left = max(1, (pad + s - 1) // s) if pad else 0
    middle = max(out_w - right - left, 0)
    if right + middle + left != out_w:
        return None  # it falls back to arm_convolve_s8
    if s * left - pad < 0:
        return fails
    first = s * (left + middle) - pad  # first input column of the right-padded windows
    pad_cols = right if total % 2 else pad
    if right and (in_w - first != k - 1 or (right - 1) * s + k > k - 1 + pad_cols):
        return f"CMSIS-NN's MVE 1xN convolution reads past the input {where}"
    return None


# The constant predicate of CMSIS-NN's MVE s4 depthwise kernels, and what arm-none-eabi-gcc 12.2.1 makes of it.
S4_DW_NIBBLE_MASK = 0x0F0F  # `lower_nibble_mask = 3855` in arm_depthwise_conv_s4_opt.c, arm_nn_depthwise_conv_nt_t_s4.c
S4_DW_MVE_CAUSE = (
    "arm-none-eabi-gcc 12.2.1 miscompiles CMSIS-NN's MVE s4 depthwise (arm_depthwise_conv_s4_opt, "
    "arm_nn_depthwise_conv_nt_t_s4): their constant lane mask mve_pred16_t 0x0F0F (lanes 0 and 2) "
    "is loaded into P0 as 0xFFFF at -O1 and above (`mov rN, #-1; vmsr P0, rN`), so the masked "
    "VRSHL/VSHR unpacking the low nibbles also runs on lanes 1 and 3 and every odd channel gets its "
    "even neighbour's weight (QEMU executes the predicated instructions correctly; CMSIS-NN's "
    "plain C path, and its MVE path built at -O0, are bit-exact)")


def mve_s4_depthwise_problem(c: Any) -> str | None:
    """Why CMSIS-NN's s4 depthwise cannot take this layer on MVE, or None. arm_depthwise_conv_wrapper_s4
    takes arm_depthwise_conv_s4_opt for depth multiplier 1, one batch and no dilation; that path is
    wrong on MVE when built by arm-none-eabi-gcc 12.2.1 (S4_DW_MVE_CAUSE; tests/test_cmsis_s4.py shows
    the compiler's predicate, QEMU's predicated instructions and the failing layer). The other
    layers take arm_depthwise_conv_s4, which has no constant predicate."""
    if c.depth_multiplier == 1 and c.input.n == 1 and c.dilation_w == 1 and c.dilation_h == 1:
        return S4_DW_MVE_CAUSE
    return None


def s4_depthwise_problem(c: Any) -> str | None:
    """Why CMSIS-NN's generic s4 depthwise (arm_depthwise_conv_s4, v7.0.0; the wrapper's choice for
    depth multiplier > 1, several batches or dilation) cannot take this layer, or None. For an odd
    number of input channels it steps through the packed filter by (C_in >> 1) * ch_mult bytes a tap
    and a low/high-nibble flag flipped once per visited tap and once more per output channel for an
    odd window: the flag's parity is only right when every tap of every window is visited and the
    depth multiplier is 1. Measured on the host (its plain C): every odd C_in with a depth multiplier
    > 1 is wrong, and with depth multiplier 1 wherever a window is clipped by the padding; even C_in
    is bit-exact (tests/test_cmsis_s4.py)."""
    opt = c.depth_multiplier == 1 and c.input.n == 1 and c.dilation_w == 1 and c.dilation_h == 1
    if opt or c.input.c % 2 == 0:
        return None
    return (f"CMSIS-NN's generic s4 depthwise (arm_depthwise_conv_s4) indexes the packed filter wrongly "
            f"for an odd number of input channels ({c.input.c}, depth multiplier {c.depth_multiplier})")
