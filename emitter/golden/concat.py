"""Golden of mcu_concat_s8: concatenation as a copy of contiguous chunks,
  for o in 0..outer-1, for k in inputs: copy chunk[k] elements of input k (its row o) in turn.
"""
from __future__ import annotations

import numpy as np


def mcu_concat_s8(inputs: list[np.ndarray], chunk: list[int], outer: int) -> np.ndarray:
    """Flat int8 inputs (outer * chunk[k] elements each) -> flat int8 [outer * sum(chunk)]."""
    if not inputs or len(inputs) != len(chunk) or outer < 1 or min(chunk) < 1:
        raise ValueError(f"concat: {len(inputs)} inputs, chunks {list(chunk)}, outer {outer}")
    rows = []
    for k, (x, c) in enumerate(zip(inputs, chunk)):
        if x.size != outer * c:
            raise ValueError(f"concat input {k}: expected {outer} x {c} elements, found {x.size}")
        rows.append(np.asarray(x).reshape(outer, c))
    return np.concatenate(rows, axis=1).ravel().astype(np.int8)
