"""mcu_requantize_s8: host C kernel == numpy golden (emitter/kernels/mcu_requantize_s8.py), bit for bit,
also in place; the golden within 1 quantum of float; invalid parameters -> MCU_ERR_ARG."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import QuantIO
from emitter.kernels.mcu_requantize_s8 import RequantizeParams, mcu_requantize_s8
from emitter.quant import quantize_multiplier
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status


class Case(NamedTuple):
    s_in: float = 0.05
    zp_in: int = 3
    s_out: float = 0.08
    zp_out: int = -4
    act: tuple[int, int] = (-128, 127)


CASES = {
    "downscale": Case(),
    "upscale": Case(s_in=0.08, s_out=0.01),
    "identity": Case(s_in=0.05, zp_in=7, s_out=0.05, zp_out=7),
    "zp_shift_only": Case(s_in=0.05, zp_in=-128, s_out=0.05, zp_out=0),  # uint8 -> int8 style
    "relu": Case(zp_out=-30, act=(-30, 127)),
    "relu6": Case(s_out=6 / 255, zp_out=-128, act=(-128, 127)),
    "clip_narrow": Case(act=(-10, 10)),
    "huge_gain": Case(s_in=1.0, s_out=1e-6),  # shift > 0, saturates
    "tiny_gain": Case(s_in=1e-6, s_out=1.0),
    "zp_extremes": Case(zp_in=127, zp_out=-128),
}

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


def build(case: Case) -> RequantizeParams:
    mult, shift = quantize_multiplier(float(np.float32(case.s_in)) / float(np.float32(case.s_out)))
    return RequantizeParams(size=ALL_INT8.size, q=QuantIO(-case.zp_in, case.zp_out, *case.act),
                            multiplier=mult, shift=shift)


def check(p: RequantizeParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_requantize_s8(p, x)
    got = call_kernel("mcu_requantize_s8", p, [x], x.shape)
    np.testing.assert_array_equal(got, expected)
    in_place = x.copy()
    assert call_raw("mcu_requantize_s8", p, in_place, in_place) == 0
    np.testing.assert_array_equal(in_place, expected)
    return expected


def float_reference(case: Case, x: np.ndarray) -> np.ndarray:
    real = (x.astype(np.float64) - case.zp_in) * np.float32(case.s_in) / np.float32(case.s_out)
    return np.clip(np.round(real) + case.zp_out, *case.act)


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    case = CASES[name]
    got = check(build(case), ALL_INT8)
    assert np.abs(got.astype(np.int64) - float_reference(case, ALL_INT8)).max() <= 1


@settings(max_examples=150, deadline=None)
@given(mult=st.one_of(st.just(0), st.integers(1 << 30, (1 << 31) - 1),
                     st.integers(-(1 << 31), (1 << 31) - 1)),
       shift=st.integers(-31, 30), zp_in=st.integers(-128, 127), zp_out=st.integers(-128, 127),
       act=st.lists(st.integers(-128, 127), min_size=2, max_size=2).map(sorted))
def test_property_golden_equals_c(mult: int, shift: int, zp_in: int, zp_out: int,
                                  act: list[int]) -> None:
    p = RequantizeParams(size=256, q=QuantIO(-zp_in, zp_out, act[0], act[1]), multiplier=mult,
                         shift=shift)
    check(p, ALL_INT8)


@settings(max_examples=60, deadline=None)
@given(s_in=st.floats(1e-4, 1.0), s_out=st.floats(1e-4, 1.0), zp_in=st.integers(-128, 127),
       zp_out=st.integers(-128, 127))
def test_property_float(s_in: float, s_out: float, zp_in: int, zp_out: int) -> None:
    case = Case(s_in=s_in, zp_in=zp_in, s_out=s_out, zp_out=zp_out)
    got = check(build(case), ALL_INT8)
    assert np.abs(got.astype(np.int64) - float_reference(case, ALL_INT8)).max() <= 1


INVALID = {
    "size_0": lambda p: dataclasses.replace(p, size=0),
    "size_-1": lambda p: dataclasses.replace(p, size=-1),
    "shift_31": lambda p: dataclasses.replace(p, shift=31),
    "shift_-32": lambda p: dataclasses.replace(p, shift=-32),
    "input_offset_129": lambda p: dataclasses.replace(p, q=QuantIO(129, 0, -128, 127)),
    "output_offset_128": lambda p: dataclasses.replace(p, q=QuantIO(0, 128, -128, 127)),
    "act_min_gt_act_max": lambda p: dataclasses.replace(p, q=QuantIO(0, 0, 1, 0)),
    "act_min_-129": lambda p: dataclasses.replace(p, q=QuantIO(0, 0, -129, 0)),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p = build(Case())
    bad = INVALID[name](p)
    status, out = call_status("mcu_requantize_s8", bad, [ALL_INT8], ALL_INT8.shape)
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_requantize_s8(bad, ALL_INT8)


def test_null_pointers() -> None:
    args: list[Any] = [build(Case()), ALL_INT8, np.zeros(256, dtype=np.int8)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_requantize_s8", *bad) == MCU_ERR_ARG
