"""mcu_slice_s8: host C kernel == numpy golden (emitter/kernels/mcu_slice_s8.py), bit for bit; the
ONNX Slice / Split builders == onnxruntime; invalid parameters -> MCU_ERR_ARG with the output
untouched.

onnxruntime, not onnx.reference: the reference slices with numpy, which does not clamp a negative
start below zero to 0 for a negative step as the ONNX spec (and onnxruntime) do, e.g. dim 1,
start -2, end -2, step -1 is [x[0]] per the spec but empty in numpy."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from emitter.errors import ShapeError
from emitter.kernels.common import pad_rank
from emitter.kernels.mcu_slice_s8 import SliceParams, mcu_slice_s8
from emitter.ops.slice import slice_params, split_params
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status


def make(shape: tuple[int, ...], begin: tuple[int, ...], step: tuple[int, ...],
         out: tuple[int, ...]) -> SliceParams:
    return SliceParams(rank=len(shape), in_shape=pad_rank(shape), begin=pad_rank(begin),
                       step=pad_rank(step), out_shape=pad_rank(out))


def numpy_slice(p: SliceParams, x: np.ndarray) -> np.ndarray:
    """The same slice with Python slice objects (an independent spelling of the golden)."""
    index = []
    for d in range(p.rank):
        b, s, n = p.begin[d], p.step[d], p.out_shape[d]
        stop = b + n * s
        index.append(slice(b, stop if stop >= 0 else None, s))
    return x[tuple(index)]


def check(p: SliceParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_slice_s8(p, x)
    assert expected.shape == tuple(p.out_shape[:p.rank])
    np.testing.assert_array_equal(expected, numpy_slice(p, x))
    got = call_kernel("mcu_slice_s8", p, [x], expected.shape)
    np.testing.assert_array_equal(got, expected)
    return expected


CASES = {
    "rank1": make((10,), (2,), (3,), (3,)),
    "rank1_reverse": make((7,), (6,), (-1,), (7,)),
    "rank1_single": make((7,), (4,), (1,), (1,)),
    "whole_copy": make((2, 3, 4), (0, 0, 0), (1, 1, 1), (2, 3, 4)),
    "nhwc_crop": make((1, 8, 8, 3), (0, 2, 1, 0), (1, 1, 1, 1), (1, 4, 5, 3)),
    "nhwc_channels": make((1, 4, 4, 8), (0, 0, 0, 2), (1, 1, 1, 1), (1, 4, 4, 3)),
    "nhwc_stride2": make((1, 9, 9, 2), (0, 1, 0, 0), (1, 2, 2, 1), (1, 4, 5, 2)),
    "channels_stride": make((1, 3, 3, 10), (0, 0, 0, 9), (1, 1, 1, -3), (1, 3, 3, 4)),
    "flip_h": make((2, 5, 3, 4), (0, 4, 0, 0), (1, -1, 1, 1), (2, 5, 3, 4)),
    "flip_all": make((2, 3, 4), (1, 2, 3), (-1, -1, -1), (2, 3, 4)),
    "outer_only": make((6, 2, 3), (1, 0, 0), (2, 1, 1), (3, 2, 3)),
    "rank6": make((2, 3, 2, 3, 2, 4), (1, 0, 1, 2, 0, 1), (1, 2, -1, -1, 1, 2), (1, 2, 2, 3, 2, 2)),
    "huge_step_single": make((5, 4), (3, 1), (1000000, 1), (1, 3)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    p = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    check(p, rng.integers(-128, 128, p.in_shape[:p.rank], dtype=np.int8))


def onnx_slice(x: np.ndarray, starts: list[int], ends: list[int], axes: list[int] | None,
               steps: list[int] | None) -> np.ndarray:
    names = ["x", "starts", "ends"] + (["axes"] if axes is not None else [""] if steps else [])
    if steps is not None:
        names.append("steps")
    node = helper.make_node("Slice", names, ["y"])
    inits = [helper.make_tensor("starts", TensorProto.INT64, [len(starts)], starts),
             helper.make_tensor("ends", TensorProto.INT64, [len(ends)], ends)]
    if axes is not None:
        inits.append(helper.make_tensor("axes", TensorProto.INT64, [len(axes)], axes))
    if steps is not None:
        inits.append(helper.make_tensor("steps", TensorProto.INT64, [len(steps)], steps))
    graph = helper.make_graph(
        [node], "slice", [helper.make_tensor_value_info("x", TensorProto.INT8, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [None] * x.ndim)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


ONNX_CASES = {
    "plain": ((1, 8, 8, 3), [0, 2], [5, 7], [1, 2], None),
    "negative_starts": ((4, 6), [-3, -5], [-1, 100], None, None),
    "clamped_ends": ((4, 6), [1, 0], [1 << 62, 1 << 62], [0, 1], [2, 3]),
    "reverse_all": ((5, 4), [-1, 1 << 40], [-(1 << 62), -(1 << 62)], [0, 1], [-1, -1]),
    "reverse_partial": ((9,), [7], [1], [0], [-2]),
    "negative_axes": ((2, 3, 4), [1], [4], [-1], [2]),
    "step_past_end": ((10,), [3], [100], [0], [50]),
}


@pytest.mark.parametrize("name", list(ONNX_CASES))
def test_slice_params_match_onnx(name: str) -> None:
    shape, starts, ends, axes, steps = ONNX_CASES[name]
    x = np.random.default_rng(sum(map(ord, name))).integers(-128, 128, shape, dtype=np.int8)
    expected = onnx_slice(x, starts, ends, axes, steps)
    got = check(slice_params(shape, starts, ends, axes, steps), x)
    np.testing.assert_array_equal(got, expected)


def test_slice_params_empty() -> None:
    with pytest.raises(ShapeError):
        slice_params((4, 5), [3], [3], [1])
    with pytest.raises(ShapeError):
        slice_params((4, 5), [1], [3], [0], [-1])


@pytest.mark.parametrize("axis,sizes", [(0, [1, 3]), (1, [2, 2, 1]), (3, [1, 5, 2]), (-2, [3, 1])])
def test_split(axis: int, sizes: list[int]) -> None:
    shape = (4, 5, 4, 8)
    x = np.random.default_rng(axis % 4).integers(-128, 128, shape, dtype=np.int8)
    parts = [check(p, x) for p in split_params(shape, axis, sizes)]
    expected = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    for got, want in zip(parts, expected, strict=False):
        np.testing.assert_array_equal(got, want)


@st.composite
def slices(draw: st.DrawFn) -> tuple[SliceParams, int]:
    rank = draw(st.integers(1, 6))
    shape, begin, step, out = [], [], [], []
    for _ in range(rank):
        size = draw(st.integers(1, 6))
        s = draw(st.sampled_from([1, 1, 1, 2, 3, -1, -2, 7]))
        b = draw(st.integers(0, size - 1))
        room = (size - 1 - b) // s if s > 0 else b // -s
        n = draw(st.integers(1, room + 1))
        if draw(st.booleans()):  # favour whole axes: exercises the block coalescing
            b, s, n = 0, 1, size
        shape.append(size)
        begin.append(b)
        step.append(s)
        out.append(n)
    seed = draw(st.integers(0, 2**32 - 1))
    return make(tuple(shape), tuple(begin), tuple(step), tuple(out)), seed


@settings(max_examples=200, deadline=None)
@given(case=slices())
def test_property_golden_equals_c(case: tuple[SliceParams, int]) -> None:
    p, seed = case
    check(p, np.random.default_rng(seed).integers(-128, 128, p.in_shape[:p.rank], dtype=np.int8))


@settings(max_examples=100, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
       data=st.data())
def test_property_slice_params_match_onnx(shape: list[int], data: st.DataObject) -> None:
    rank = len(shape)
    axes = data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank,
                              unique_by=lambda a: a % rank))
    bound = st.integers(-8, 8)
    starts = [data.draw(bound) for _ in axes]
    ends = [data.draw(bound) for _ in axes]
    steps = [data.draw(st.sampled_from([1, 2, 3, -1, -2, -3])) for _ in axes]
    x = np.random.default_rng(0).integers(-128, 128, shape, dtype=np.int8)
    expected = onnx_slice(x, starts, ends, axes, steps)
    if expected.size == 0:
        with pytest.raises(ShapeError):
            slice_params(shape, starts, ends, axes, steps)
        return
    np.testing.assert_array_equal(check(slice_params(shape, starts, ends, axes, steps), x),
                                  expected)


BASE = make((2, 3, 4), (0, 1, 3), (1, 1, -2), (2, 2, 2))
INVALID = {
    "rank_0": lambda p: dataclasses.replace(p, rank=0),
    "rank_7": lambda p: dataclasses.replace(p, rank=7),
    "in_shape_0": lambda p: dataclasses.replace(p, in_shape=pad_rank((2, 0, 4))),
    "out_shape_0": lambda p: dataclasses.replace(p, out_shape=pad_rank((2, 0, 2))),
    "step_0": lambda p: dataclasses.replace(p, step=pad_rank((1, 0, -2))),
    "begin_negative": lambda p: dataclasses.replace(p, begin=pad_rank((0, -1, 3))),
    "begin_past_end": lambda p: dataclasses.replace(p, begin=pad_rank((2, 1, 3))),
    "last_past_end": lambda p: dataclasses.replace(p, out_shape=pad_rank((2, 3, 2))),
    "last_negative": lambda p: dataclasses.replace(p, out_shape=pad_rank((2, 2, 3))),
    "huge_count": lambda p: dataclasses.replace(p, out_shape=pad_rank((2, 2, 1 << 30))),
    "huge_step": lambda p: dataclasses.replace(p, step=pad_rank((1, 1 << 30, -2))),
    "too_many_elements": lambda p: make((1 << 16, 1 << 16), (0, 0), (1, 1), (1, 1)),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    x = np.zeros((2, 3, 4), dtype=np.int8)
    bad = INVALID[name](BASE)
    status, out = call_status("mcu_slice_s8", bad, [x], (24,))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_slice_s8(bad, x)


def test_null_and_in_place() -> None:
    x = np.zeros((2, 3, 4), dtype=np.int8)
    args: list[Any] = [BASE, x, np.zeros(8, dtype=np.int8)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_slice_s8", *bad) == MCU_ERR_ARG
    assert call_raw("mcu_slice_s8", BASE, x, x) == MCU_ERR_ARG  # not in place
