"""mcu_pad_s8: host C kernel == numpy golden (emitter/kernels/mcu_pad_s8.py) == np.pad, ranks 1..6;
invalid parameters -> MCU_ERR_ARG with the output untouched."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import pad_rank
from emitter.kernels.mcu_pad_s8 import PadParams, mcu_pad_s8
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status


def make(shape: tuple[int, ...], before: tuple[int, ...], after: tuple[int, ...],
         value: int) -> PadParams:
    return PadParams(rank=len(shape), in_shape=pad_rank(shape), pad_before=pad_rank(before),
                     pad_after=pad_rank(after), pad_value=value)


def check(p: PadParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_pad_s8(p, x)
    got = call_kernel("mcu_pad_s8", p, [x], expected.shape)
    np.testing.assert_array_equal(got, expected)
    before, after = p.pad_before[:p.rank], p.pad_after[:p.rank]
    np.testing.assert_array_equal(
        expected, np.pad(x, list(zip(before, after, strict=False)), constant_values=p.pad_value))
    return expected


CASES = {
    "nhwc_spatial_zp": ((1, 4, 5, 3), (0, 1, 2, 0), (0, 1, 0, 0), -128),
    "nhwc_channels": ((1, 2, 2, 3), (0, 0, 0, 2), (0, 0, 0, 1), 5),
    "nchw_onnx_style": ((1, 3, 4, 4), (0, 0, 1, 1), (0, 0, 1, 1), 127),
    "rank1": ((7,), (3,), (2,), -1),
    "rank2_no_pad": ((3, 4), (0, 0), (0, 0), 0),
    "rank6": ((2, 1, 2, 3, 1, 2), (1, 0, 1, 0, 2, 1), (0, 2, 0, 1, 0, 1), 9),
    "only_outer": ((2, 3, 4), (2, 0, 0), (1, 0, 0), 33),
    "only_inner": ((2, 3, 4), (0, 0, 3), (0, 0, 5), -33),
    "one_element": ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1), 0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    shape, before, after, value = CASES[name]
    x = np.random.default_rng(sum(map(ord, name))).integers(-128, 128, shape, dtype=np.int8)
    check(make(shape, before, after, value), x)


@st.composite
def pads(draw: st.DrawFn) -> tuple[PadParams, int]:
    rank = draw(st.integers(1, 6))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    before = tuple(draw(st.integers(0, 3)) for _ in range(rank))
    after = tuple(draw(st.integers(0, 3)) for _ in range(rank))
    return make(shape, before, after, draw(st.integers(-128, 127))), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=150, deadline=None)
@given(case=pads())
def test_property_golden_equals_c(case: tuple[PadParams, int]) -> None:
    p, seed = case
    shape = p.in_shape[:p.rank]
    check(p, np.random.default_rng(seed).integers(-128, 128, shape, dtype=np.int8))


INVALID = {
    "rank_0": lambda p: dataclasses.replace(p, rank=0),
    "rank_7": lambda p: dataclasses.replace(p, rank=7),
    "in_shape_0": lambda p: dataclasses.replace(p, in_shape=pad_rank((2, 0, 4))),
    "pad_before_-1": lambda p: dataclasses.replace(p, pad_before=pad_rank((0, -1, 0))),
    "pad_after_-1": lambda p: dataclasses.replace(p, pad_after=pad_rank((0, 0, -1))),
    "pad_value_128": lambda p: dataclasses.replace(p, pad_value=128),
    "pad_value_-129": lambda p: dataclasses.replace(p, pad_value=-129),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p = make((2, 3, 4), (1, 1, 1), (1, 1, 1), 0)
    x = np.zeros((2, 3, 4), dtype=np.int8)
    bad = INVALID[name](p)
    status, out = call_status("mcu_pad_s8", bad, [x], (4, 5, 6))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_pad_s8(bad, x)


def test_null_pointers() -> None:
    args: list[Any] = [make((2, 3), (1, 1), (1, 1), 0), np.zeros((2, 3), dtype=np.int8),
                       np.zeros((4, 5), dtype=np.int8)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_pad_s8", *bad) == MCU_ERR_ARG
