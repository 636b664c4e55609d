"""Twin of mcu_resize_nearest_s8 (NHWC, scale and zero point unchanged):
  out[n, y, x, c] = in[n, y_index[y], x_index[x], c]
The index tables fold every ONNX Resize coordinate and nearest mode in (ops/resize.py). CMSIS-NN has
no such kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import Dims


@dataclass(frozen=True, eq=False)
class ResizeNearestParams:
    CTYPE: ClassVar[str] = "mcu_resize_params_t"
    input: Dims
    output: Dims
    y_index: np.ndarray  # int32 [H_out]
    x_index: np.ndarray  # int32 [W_out]


def check_dims(inp: Dims, out: Dims, what: str) -> None:
    if min(inp.n, inp.h, inp.w, inp.c, out.h, out.w) < 1 or out.n != inp.n or out.c != inp.c:
        raise ValueError(f"{what}: dims {inp} -> {out} must be >= 1 with the same N and C")


def check_table(table: np.ndarray, count: int, lo: int, hi: int, what: str) -> np.ndarray:
    t = np.asarray(table)
    if t.shape != (count,):
        raise ValueError(f"{what}: expected {count} entries, found shape {t.shape}")
    t = t.astype(np.int64)
    if t.size and (t.min() < lo or t.max() > hi):
        raise ValueError(f"{what}: entries {t.min()}..{t.max()} outside [{lo}, {hi}]")
    return t


def check_input(p_input: Dims, x: np.ndarray, what: str) -> None:
    shape = (p_input.n, p_input.h, p_input.w, p_input.c)
    if x.shape != shape:
        raise ValueError(f"{what} input: expected NHWC shape {shape}, found {x.shape}")


def mcu_resize_nearest_s8(p: ResizeNearestParams, x: np.ndarray) -> np.ndarray:
    """int8 NHWC [N, H_in, W_in, C] -> int8 NHWC [N, H_out, W_out, C]."""
    check_dims(p.input, p.output, "resize_nearest")
    yi = check_table(p.y_index, p.output.h, 0, p.input.h - 1, "resize_nearest y_index")
    xi = check_table(p.x_index, p.output.w, 0, p.input.w - 1, "resize_nearest x_index")
    check_input(p.input, x, "resize_nearest")
    return np.ascontiguousarray(x[:, yi][:, :, xi]).astype(np.int8)


KERNEL = Kernel("mcu_resize_nearest_s8")
