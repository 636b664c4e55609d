"""Twin of mcu_pad_s8: constant padding of an N-D int8 tensor (physical shapes):
  out_shape[d] = pad_before[d] + in_shape[d] + pad_after[d], pad_value in the border.

CMSIS-NN: arm_pad_s8, rank <= 4 after squeezing (pad_axes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import IntArg, Prepared, StructArg
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest, dims4
from emitter.kernels.common import MAX_RANK, check_range


@dataclass(frozen=True)
class PadParams:
    """Tuples padded to MCU_MAX_RANK with zeros."""
    CTYPE: ClassVar[str] = "mcu_pad_params_t"
    rank: int
    in_shape: tuple[int, ...]
    pad_before: tuple[int, ...]
    pad_after: tuple[int, ...]
    pad_value: int


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
    return np.pad(x.astype(np.int8), list(zip(before, after, strict=False)), mode="constant",
                  constant_values=p.pad_value)


def pad_axes(shape: tuple[int, ...], before: tuple[int, ...],
             after: tuple[int, ...]) -> list[tuple[int, int, int]] | None:
    """(size, before, after) per axis as at most 4 axes, or None: unit axes without padding are
    dropped, and while more than 4 remain, an unpadded axis folds into its outer neighbour."""
    axes = [t for t in zip(shape, before, after, strict=False) if t != (1, 0, 0)] or [(1, 0, 0)]
    k = len(axes) - 1
    while len(axes) > 4 and k > 0:
        s, b, a = axes[k]
        if b == a == 0:
            ps, pb, pa = axes[k - 1]
            axes[k - 1:k + 1] = [(ps * s, pb * s, pa * s)]
        k -= 1
    return [(1, 0, 0)] * (4 - len(axes)) + axes if len(axes) <= 4 else None


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, PadParams)
    axes = pad_axes(c.in_shape[:c.rank], c.pad_before[:c.rank], c.pad_after[:c.rank])
    if axes is None:
        return None
    size, before, after = zip(*axes, strict=False)
    return conv.call(p, "arm_pad_s8", {
        "input": p.operands["input"], "output": p.operands["output"], "pad_value": IntArg(c.pad_value),
        "input_size": StructArg("cmsis_nn_dims", "input_size", dims4(size)),
        "pre_pad": StructArg("cmsis_nn_dims", "pre_pad", dims4(before)),
        "post_pad": StructArg("cmsis_nn_dims", "post_pad", dims4(after))})


KERNEL = Kernel("mcu_pad_s8", to_cmsis=to_cmsis)
