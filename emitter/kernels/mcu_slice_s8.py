"""Twin of mcu_slice_s8: N-D strided slice of the physical tensor,
  out[i_0, ..., i_{r-1}] = in[begin[0] + i_0 * step[0], ..., begin[r-1] + i_{r-1} * step[r-1]]
with every visited index in range (steps != 0, may be negative; no empty outputs). ONNX Slice and
Split become these params in ops/slice.py. CMSIS-NN has no such kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import MAX_RANK, check_range


@dataclass(frozen=True)
class SliceParams:
    """Tuples padded to MCU_MAX_RANK with pad_rank; physical shapes."""
    CTYPE: ClassVar[str] = "mcu_slice_params_t"
    rank: int
    in_shape: tuple[int, ...]
    begin: tuple[int, ...]
    step: tuple[int, ...]
    out_shape: tuple[int, ...]


def _check(p: SliceParams) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...],
                                    tuple[int, ...]]:
    check_range("slice rank", p.rank, 1, MAX_RANK)
    r = p.rank
    shape, begin, step, out = (tuple(int(v) for v in t[:r])
                               for t in (p.in_shape, p.begin, p.step, p.out_shape))
    for d in range(r):
        if shape[d] < 1 or out[d] < 1 or step[d] == 0:
            raise ValueError(f"slice axis {d}: in_shape {shape[d]} and out_shape {out[d]} must be "
                             f">= 1, step {step[d]} != 0")
        last = begin[d] + (out[d] - 1) * step[d]
        if not (0 <= begin[d] < shape[d] and 0 <= last < shape[d]):
            raise ValueError(f"slice axis {d}: indices {begin[d]}..{last} outside "
                             f"[0, {shape[d] - 1}]")
    if int(np.prod(shape, dtype=np.int64)) > (1 << 31) - 1:
        raise ValueError(f"slice input {shape} has more than INT32_MAX elements")
    return shape, begin, step, out


def mcu_slice_s8(p: SliceParams, x: np.ndarray) -> np.ndarray:
    """int8 array of the physical shape in_shape[:rank] -> int8 array of shape out_shape[:rank]."""
    shape, begin, step, out = _check(p)
    if x.shape != shape:
        raise ValueError(f"slice input: expected shape {shape}, found {x.shape}")
    index = [b + s * np.arange(n) for b, s, n in zip(begin, step, out, strict=False)]
    return np.ascontiguousarray(x[np.ix_(*index)]).astype(np.int8)


KERNEL = Kernel("mcu_slice_s8")
