"""Golden of mcu_transpose_s8: out = in.transpose(perm) (numpy semantics, physical shapes);
output axis k takes input axis perm[k].
"""
from __future__ import annotations

import numpy as np

from emitter.golden.add import check_range
from emitter.kernel_params import MAX_RANK, TransposeParams


def mcu_transpose_s8(p: TransposeParams, x: np.ndarray) -> np.ndarray:
    """int8 array of the physical shape in_shape[:rank] -> int8 array of the permuted shape."""
    check_range("transpose rank", p.rank, 1, MAX_RANK)
    shape = tuple(p.in_shape[:p.rank])
    perm = tuple(p.perm[:p.rank])
    if min(shape) < 1 or sorted(perm) != list(range(p.rank)):
        raise ValueError(f"transpose: shape {shape} must be >= 1 and perm {perm} a permutation")
    if x.shape != shape:
        raise ValueError(f"transpose input: expected shape {shape}, found {x.shape}")
    return np.ascontiguousarray(x.transpose(perm)).astype(np.int8)
