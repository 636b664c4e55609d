"""Golden of mcu_slice_s8: N-D strided slice of the physical tensor,
  out[i_0, ..., i_{r-1}] = in[begin[0] + i_0 * step[0], ..., begin[r-1] + i_{r-1} * step[r-1]]
with every visited index in range (steps != 0, may be negative; no empty outputs).

`slice_params` is ONNX Slice (opset 13) start/end clamping; `split_params` is ONNX Split, one
SliceParams per output. Both take physical shapes and physical axes: an op module maps ONNX axes
through the tensor's layout first.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from emitter.errors import ShapeError
from emitter.golden.add import check_range
from emitter.kernel_params import MAX_RANK, SliceParams, pad_rank


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
    index = [b + s * np.arange(n) for b, s, n in zip(begin, step, out)]
    return np.ascontiguousarray(x[np.ix_(*index)]).astype(np.int8)


def slice_params(in_shape: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                 axes: Sequence[int] | None = None,
                 steps: Sequence[int] | None = None) -> SliceParams:
    """ONNX Slice (opset 13) on a physical shape: negative starts/ends count from the end, then
    start is clamped to [0, dim] ([0, dim - 1] for a negative step) and end to [0, dim]
    ([-1, dim - 1]); out = ceil((end - start) / step). Raises ShapeError for an empty result."""
    shape = tuple(int(v) for v in in_shape)
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError("slice: starts, ends, axes and steps must have the same length")
    begin, step, out = [0] * rank, [1] * rank, list(shape)
    seen = set()
    for start, end, axis, st in zip(starts, ends, axes, steps):
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank or axis in seen:
            raise ValueError(f"slice: axis {axis} repeated or outside a rank-{rank} tensor")
        seen.add(axis)
        if st == 0:
            raise ValueError("slice: step 0")
        dim = shape[axis]
        start, end = int(start), int(end)
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if st > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        count = max(0, -(-(end - start) // st))  # ceil division
        if count == 0:
            raise ShapeError(f"slice of {shape} is empty along axis {axis}")
        begin[axis], step[axis], out[axis] = start, (st if count > 1 else 1), count
    return SliceParams(rank=rank, in_shape=pad_rank(shape), begin=pad_rank(begin),
                       step=pad_rank(step), out_shape=pad_rank(out))


def split_params(in_shape: Sequence[int], axis: int, sizes: Sequence[int]) -> list[SliceParams]:
    """ONNX Split on a physical shape: output k takes sizes[k] consecutive indices of `axis`."""
    shape = tuple(int(v) for v in in_shape)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape):
        raise ValueError(f"split: axis {axis} outside a rank-{len(shape)} tensor")
    if sum(sizes) != shape[axis] or min(sizes) < 1:
        raise ShapeError(f"split sizes {list(sizes)} must be >= 1 and sum to {shape[axis]}")
    out, offset = [], 0
    for size in sizes:
        begin = [0] * len(shape)
        begin[axis] = offset
        out_shape = list(shape)
        out_shape[axis] = int(size)
        out.append(SliceParams(rank=len(shape), in_shape=pad_rank(shape), begin=pad_rank(begin),
                               step=pad_rank([1] * len(shape)), out_shape=pad_rank(out_shape)))
        offset += int(size)
    return out
