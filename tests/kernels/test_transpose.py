"""mcu_transpose_s8: host C kernel == numpy golden (emitter/kernels/mcu_transpose_s8.py) ==
ndarray.transpose, ranks 1..6; invalid parameters -> MCU_ERR_ARG with the output untouched."""
from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import pad_rank
from emitter.kernels.mcu_transpose_s8 import TransposeParams, mcu_transpose_s8
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status


def make(shape: tuple[int, ...], perm: tuple[int, ...]) -> TransposeParams:
    return TransposeParams(rank=len(shape), in_shape=pad_rank(shape), perm=pad_rank(perm))


def check(p: TransposeParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_transpose_s8(p, x)
    got = call_kernel("mcu_transpose_s8", p, [x], expected.shape)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(expected, x.transpose(p.perm[:p.rank]))
    return expected


CASES = {
    "nchw_to_nhwc": ((1, 3, 4, 5), (0, 2, 3, 1)),
    "nhwc_to_nchw": ((1, 4, 5, 3), (0, 3, 1, 2)),
    "matrix": ((3, 7), (1, 0)),
    "rank1": ((9,), (0,)),
    "identity4": ((2, 3, 4, 5), (0, 1, 2, 3)),
    "reverse6": ((2, 1, 3, 2, 2, 3), (5, 4, 3, 2, 1, 0)),
    "rotate5": ((2, 3, 1, 4, 2), (1, 2, 3, 4, 0)),
    "unit_dims": ((1, 1, 6, 1), (3, 2, 1, 0)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    shape, perm = CASES[name]
    x = np.random.default_rng(sum(map(ord, name))).integers(-128, 128, shape, dtype=np.int8)
    check(make(shape, perm), x)


def test_every_perm_rank4() -> None:
    x = np.random.default_rng(4).integers(-128, 128, (2, 3, 4, 5), dtype=np.int8)
    for perm in itertools.permutations(range(4)):
        check(make(x.shape, perm), x)


@st.composite
def transposes(draw: st.DrawFn) -> tuple[TransposeParams, int]:
    rank = draw(st.integers(1, 6))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    perm = tuple(draw(st.permutations(range(rank))))
    return make(shape, perm), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=150, deadline=None)
@given(case=transposes())
def test_property_golden_equals_c(case: tuple[TransposeParams, int]) -> None:
    p, seed = case
    check(p, np.random.default_rng(seed).integers(-128, 128, p.in_shape[:p.rank], dtype=np.int8))


INVALID = {
    "rank_0": lambda p: dataclasses.replace(p, rank=0),
    "rank_7": lambda p: dataclasses.replace(p, rank=7),
    "in_shape_0": lambda p: dataclasses.replace(p, in_shape=pad_rank((2, 0, 4))),
    "perm_repeats": lambda p: dataclasses.replace(p, perm=pad_rank((0, 1, 1))),
    "perm_out_of_range": lambda p: dataclasses.replace(p, perm=pad_rank((0, 1, 3))),
    "perm_negative": lambda p: dataclasses.replace(p, perm=pad_rank((0, -1, 2))),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p = make((2, 3, 4), (2, 0, 1))
    x = np.zeros((2, 3, 4), dtype=np.int8)
    bad = INVALID[name](p)
    status, out = call_status("mcu_transpose_s8", bad, [x], (24,))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_transpose_s8(bad, x)


def test_null_and_in_place() -> None:
    p = make((2, 3), (1, 0))
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    args: list[Any] = [p, x, np.zeros((3, 2), dtype=np.int8)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_transpose_s8", *bad) == MCU_ERR_ARG
    assert call_raw("mcu_transpose_s8", p, x, x) == MCU_ERR_ARG  # not in place
