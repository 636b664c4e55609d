"""Golden of mcu_pad_s8: constant padding of an N-D int8 tensor (physical shapes):
  out_shape[d] = pad_before[d] + in_shape[d] + pad_after[d], pad_value in the border.
"""
from __future__ import annotations

import numpy as np

from emitter.golden.add import check_range
from emitter.kernel_params import MAX_RANK, PadParams


def mcu_pad_s8(p: PadParams, x: np.ndarray) -> np.ndarray:
    """int8 array of the physical shape in_shape[:rank] -> int8 padded array."""
    check_range("pad rank", p.rank, 1, MAX_RANK)
    check_range("pad_value", p.pad_value, -128, 127)
    shape = tuple(p.in_shape[:p.rank])
    before, after = p.pad_before[:p.rank], p.pad_after[:p.rank]
    if min(shape) < 1 or min(before) < 0 or min(after) < 0:
        raise ValueError(f"pad: shape {shape} must be >= 1, pads {before} / {after} >= 0")
    if x.shape != shape:
        raise ValueError(f"pad input: expected shape {shape}, found {x.shape}")
    return np.pad(x.astype(np.int8), list(zip(before, after)), mode="constant",
                  constant_values=p.pad_value)
