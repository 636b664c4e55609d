"""Twin of mcu_transpose_s16: out = in.transpose(perm) on int16 elements (numpy semantics, physical
shapes); params mcu_transpose_params_t, as mcu_transpose_s8. Used for the relayout of an int16
graph input (NCHW -> NHWC) and of int16 tensors between layouts.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import MAX_RANK, check_range
from emitter.kernels.mcu_transpose_s8 import TransposeParams

RUNTIME_DEPS = ("mcu_transpose_s8",)  # its C is a wrapper of the shared loop in mcu_transpose_s8.c


def mcu_transpose_s16(p: TransposeParams, x: np.ndarray) -> np.ndarray:
    """int16 array of the physical shape in_shape[:rank] -> int16 array of the permuted shape."""
    check_range("transpose rank", p.rank, 1, MAX_RANK)
    shape, perm = tuple(p.in_shape[:p.rank]), tuple(p.perm[:p.rank])
    if min(shape) < 1 or sorted(perm) != list(range(p.rank)) or x.shape != shape:
        raise ValueError(f"transpose: shape {shape} (input {x.shape}) and perm {perm} disagree")
    return np.ascontiguousarray(x.transpose(perm)).astype(np.int16)


KERNEL = Kernel("mcu_transpose_s16", runtime_deps=RUNTIME_DEPS)
