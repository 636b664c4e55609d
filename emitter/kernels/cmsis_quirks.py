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
