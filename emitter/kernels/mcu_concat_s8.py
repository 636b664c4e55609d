"""Twin of mcu_concat_s8: concatenation as a copy of contiguous chunks,
  for o in 0..outer-1, for k in inputs: copy chunk[k] elements of input k (its row o) in turn.
No params struct: mcu_concat_s8(num_inputs, inputs, chunk, outer, output).

CMSIS-NN: arm_concatenation_s8_{x,y,z,w}, one call per input, uint16 sizes (concat_plan). Concat
never requantizes: lowering puts a requantize layer in front of every input whose scale/zero point
differs from the output's, so the layer itself is a pure copy.
"""
from __future__ import annotations

import math
from itertools import accumulate

import numpy as np

from emitter.calls import Call, ConstArg, IntArg, Prepared, TensorArg, TensorListArg
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import U16, Converter, ScratchRequest, operands


def mcu_concat_s8(inputs: list[np.ndarray], chunk: list[int], outer: int) -> np.ndarray:
    """Flat int8 inputs (outer * chunk[k] elements each) -> flat int8 [outer * sum(chunk)]."""
    if not inputs or len(inputs) != len(chunk) or outer < 1 or min(chunk) < 1:
        raise ValueError(f"concat: {len(inputs)} inputs, chunks {list(chunk)}, outer {outer}")
    rows = []
    for k, (x, c) in enumerate(zip(inputs, chunk, strict=False)):
        if x.size != outer * c:
            raise ValueError(f"concat input {k}: expected {outer} x {c} elements, found {x.size}")
        rows.append(np.asarray(x).reshape(outer, c))
    return np.concatenate(rows, axis=1).ravel().astype(np.int8)


def split_u16(n: int, k: int) -> tuple[int, ...] | None:
    """n as exactly k factors, each a uint16 (innermost first, largest first), or None."""
    if k == 0:
        return () if n == 1 else None
    if k == 1:
        return (n,) if n <= U16 else None
    for d in sorted((d for i in range(1, math.isqrt(n) + 1) if n % i == 0 for d in (i, n // i)), reverse=True):
        rest = split_u16(n // d, k - 1) if d <= U16 else None
        if rest is not None:
            return (d, *rest)
    return None


def concat_plan(outer: int, chunks: list[int]) -> tuple[str, tuple[int, ...], list[int], tuple[int, ...]] | None:
    """Each input is `outer` rows of chunks[i] bytes. As arm_concatenation_s8_<axis>, whose dims are
    x (innermost), y, z, w: (axis, inner dims below the axis, per-input axis sizes, outer dims
    above it), all uint16; None if no variant fits. `_w` (one copy per input) needs outer == 1."""
    for k, axis in enumerate("xyzw"):
        unit = math.gcd(*chunks) if k else 1  # bytes of the inner dims, common to every input
        inner, above = split_u16(unit, k), split_u16(outer, 3 - k)
        sizes = [c // unit for c in chunks]
        if inner is not None and above is not None and max(sizes) <= U16 and (axis == "w" or sum(sizes) <= U16):
            return axis, inner, sizes, above
    return None


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    names, chunk, outer, y = (p.operands[k] for k in ("inputs", "chunk", "outer", "output"))
    assert isinstance(names, TensorListArg) and isinstance(chunk, ConstArg) and isinstance(outer, IntArg)
    plan = concat_plan(outer.value, [int(v) for v in chunk.data])
    if plan is None:
        return None
    axis, inner, sizes, above = plan
    fn = f"arm_concatenation_s8_{axis}"
    calls = []
    for name, size, offset in zip(names.names, sizes, accumulate([0, *sizes[:-1]]), strict=False):
        xyzw = dict(zip(("input_x", "input_y", "input_z", "input_w"), map(IntArg, (*inner, size, *above)),
                        strict=True))
        total = {f"output_{axis}": IntArg(sum(sizes))} if axis != "w" else {}  # the output's size along the axis
        calls.append({"input": TensorArg(name), **xyzw, "output": y, **total, f"offset_{axis}": IntArg(offset)})
    then = tuple(Call(fn, tuple(operands(fn, c).values())) for c in calls[1:])
    return conv.call(p, fn, calls[0], then=then, summary=p.summary + "; CMSIS-NN, one call per input")


KERNEL = Kernel("mcu_concat_s8", to_cmsis=to_cmsis)
