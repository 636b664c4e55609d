"""Twin of mcu_lut_s8: any unary int8 function through a 256-entry table (built by ops/lut.py),
  out[i] = table[in[i] + 128]      (table[0] = f(-128), table[255] = f(127))
No params struct: mcu_lut_s8(size, table, input, output). CMSIS-NN has no such kernel.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.base import Kernel


def mcu_lut_s8(table: np.ndarray, x: np.ndarray) -> np.ndarray:
    """int8 table [256], int8 array (any shape) -> int8 array of the same shape."""
    table = np.asarray(table)
    if table.shape != (256,) or table.dtype != np.int8:
        raise ValueError(f"lut table: expected int8 [256], found {table.dtype} {table.shape}")
    return table[x.astype(np.int64) + 128]


EXACT_IN_PLACE = True  # element i is read before element i is written (mcu_nn.h: "In place OK")


KERNEL = Kernel("mcu_lut_s8", exact_in_place=EXACT_IN_PLACE)
