"""Twin of mcu_transpose_s8: out = in.transpose(perm) (numpy semantics, physical shapes);
output axis k takes input axis perm[k].

CMSIS-NN: arm_transpose_s8, rank <= 4 after squeezing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import ConstArg, Prepared, StructArg
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import U16, Converter, ScratchRequest, arr, dims4
from emitter.kernels.common import MAX_RANK, check_range
from emitter.layout import squeeze_transpose


@dataclass(frozen=True)
class TransposeParams:
    """Tuples padded to MCU_MAX_RANK with zeros."""
    CTYPE: ClassVar[str] = "mcu_transpose_params_t"
    rank: int
    in_shape: tuple[int, ...]
    perm: tuple[int, ...]


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


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, TransposeParams)
    # The smallest equivalent transpose (relayouts already are): then only rank 1 is the
    # identity, and no 4-D perm starts (0, 1), which v7.0.0 runs as a w <-> c swap on MVE.
    shape, perm = squeeze_transpose(c.in_shape[:c.rank], c.perm[:c.rank])
    if len(shape) > 4:
        return None
    # 2-D always swaps, in arm_transpose_s8_nhcw: uint16 rows and columns, and on MVE
    # gathers at uint16 offsets up to 7 * columns
    if len(shape) == 2 and (max(shape) > U16 or (conv.var == "mve" and 7 * shape[1] > U16)):
        return None
    out_shape = tuple(shape[a] for a in perm)
    params = {"num_dims": len(shape), "permutations": arr(ConstArg("perm", np.array(perm, np.uint32)))}
    return conv.call(p, "arm_transpose_s8", {
        "input_data": p.operands["input"], "output_data": p.operands["output"],
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", dims4(shape)),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", dims4(out_shape)),
        "transpose_params": StructArg("cmsis_nn_transpose_params", "transpose", params)})


KERNEL = Kernel("mcu_transpose_s8", to_cmsis=to_cmsis)
