"""mcu_concat_s8: host C kernel == numpy golden (emitter/kernels/mcu_concat_s8.py) == np.concatenate on
the tensor shapes; invalid parameters -> MCU_ERR_ARG."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.mcu_concat_s8 import mcu_concat_s8
from tests.harness.ckernels import MCU_ERR_ARG, call_raw


def run(inputs: list[np.ndarray], chunk: list[int], outer: int) -> np.ndarray:
    expected = mcu_concat_s8(inputs, chunk, outer)
    out = np.full(outer * sum(chunk), 0x5A, dtype=np.int8)
    status = call_raw("mcu_concat_s8", len(inputs), [x.ravel() for x in inputs],
                      np.array(chunk, dtype=np.int32), outer, out)
    assert status == 0
    np.testing.assert_array_equal(out, expected)
    return expected


def concat_via_shapes(shapes: list[tuple[int, ...]], axis: int, rng: np.random.Generator) -> None:
    """Build the kernel arguments from tensor shapes and check against np.concatenate."""
    xs = [rng.integers(-128, 128, s, dtype=np.int8) for s in shapes]
    outer = int(np.prod(shapes[0][:axis], dtype=np.int64))
    chunk = [int(np.prod(s[axis:], dtype=np.int64)) for s in shapes]
    got = run([x.ravel() for x in xs], chunk, outer)
    np.testing.assert_array_equal(got, np.concatenate(xs, axis=axis).ravel())


CASES: dict[str, tuple[list[tuple[int, ...]], int]] = {
    "channels_nhwc": ([(1, 4, 4, 3), (1, 4, 4, 5)], 3),
    "width": ([(1, 4, 2, 3), (1, 4, 5, 3)], 2),
    "height": ([(1, 2, 4, 3), (1, 1, 4, 3), (1, 3, 4, 3)], 1),
    "batch": ([(2, 2, 2, 2), (1, 2, 2, 2)], 0),
    "flat": ([(7,), (1,), (13,)], 0),
    "single_input": ([(2, 3, 4)], 1),
    "many_channels_of_1": ([(1, 3, 3, 1)] * 8, 3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    shapes, axis = CASES[name]
    concat_via_shapes(shapes, axis, np.random.default_rng(sum(map(ord, name))))


@st.composite
def shape_sets(draw: st.DrawFn) -> tuple[list[tuple[int, ...]], int]:
    rank = draw(st.integers(1, 4))
    base = [draw(st.integers(1, 4)) for _ in range(rank)]
    axis = draw(st.integers(0, rank - 1))
    shapes = []
    for _ in range(draw(st.integers(1, 5))):
        s = list(base)
        s[axis] = draw(st.integers(1, 5))
        shapes.append(tuple(s))
    return shapes, axis


@settings(max_examples=100, deadline=None)
@given(sets=shape_sets(), seed=st.integers(0, 2**32 - 1))
def test_property_matches_numpy(sets: tuple[list[tuple[int, ...]], int], seed: int) -> None:
    concat_via_shapes(*sets, np.random.default_rng(seed))


def test_invalid_params() -> None:
    a, b = np.arange(6, dtype=np.int8), np.arange(4, dtype=np.int8)
    chunk = np.array([3, 2], dtype=np.int32)
    out = np.zeros(10, dtype=np.int8)
    assert call_raw("mcu_concat_s8", 0, [a, b], chunk, 2, out) == MCU_ERR_ARG
    assert call_raw("mcu_concat_s8", 2, None, chunk, 2, out) == MCU_ERR_ARG
    assert call_raw("mcu_concat_s8", 2, [a, None], chunk, 2, out) == MCU_ERR_ARG
    assert call_raw("mcu_concat_s8", 2, [a, b], None, 2, out) == MCU_ERR_ARG
    assert call_raw("mcu_concat_s8", 2, [a, b], np.array([3, 0], dtype=np.int32), 2,
                    out) == MCU_ERR_ARG
    assert call_raw("mcu_concat_s8", 2, [a, b], np.array([-1, 2], dtype=np.int32), 2,
                    out) == MCU_ERR_ARG
    assert call_raw("mcu_concat_s8", 2, [a, b], chunk, 0, out) == MCU_ERR_ARG
    assert call_raw("mcu_concat_s8", 2, [a, b], chunk, 2, None) == MCU_ERR_ARG
    with pytest.raises(ValueError):
        mcu_concat_s8([a, b], [3, 3], 2)
