"""mcu_minmax_s8: host C kernel == numpy golden (emitter/kernels/mcu_minmax_s8.py), bit for bit; the
golden within 1 quantum of float Min/Max; invalid parameters -> MCU_ERR_ARG with the output
untouched."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.errors import QuantError
from emitter.kernels.common import Bcast
from emitter.kernels.mcu_minmax_s8 import MinMaxParams, mcu_minmax_s8
from emitter.ops.minmax import minmax_params
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status


class Case(NamedTuple):
    size: int = 24
    in1: Bcast = Bcast(1, 24)
    in2: Bcast = Bcast(1, 24)
    is_max: bool = True
    s1: float = 0.05
    zp1: int = 3
    s2: float = 0.02
    zp2: int = -7
    s_out: float = 0.06
    zp_out: int = 1
    act: tuple[int, int] = (-128, 127)


# An NHWC map [1, 2, 3, 4] (24 elements) with a second operand of various broadcast shapes.
CASES = {
    "max_full": Case(),
    "min_full": Case(is_max=False),
    "max_scalar_rhs": Case(in2=Bcast(1, 1)),
    "min_scalar_lhs": Case(in1=Bcast(1, 1), is_max=False),
    "max_per_channel_rhs": Case(in2=Bcast(1, 4)),
    "min_per_pixel_rhs": Case(in2=Bcast(4, 6), is_max=False),
    "max_per_row_rhs": Case(in2=Bcast(12, 2)),
    "both_broadcast": Case(in1=Bcast(4, 6), in2=Bcast(1, 4)),
    "same_quant": Case(s1=0.03, zp1=5, s2=0.03, zp2=5, s_out=0.03, zp_out=5),
    "same_quant_min": Case(s1=0.03, zp1=-128, s2=0.03, zp2=-128, s_out=0.03, zp_out=-128,
                           is_max=False),
    "upscale_inputs": Case(s1=0.5, s2=0.2, s_out=0.01),
    "tiny_vs_large_scale": Case(s1=1e-6, s2=0.5, s_out=0.5),
    "zp_extremes": Case(zp1=-128, zp2=127, zp_out=-128),
    "zp_extremes_min": Case(zp1=127, zp2=-128, zp_out=127, is_max=False),
    "relu_like": Case(zp_out=-10, act=(-10, 127)),
    "narrow_act": Case(act=(-5, 9), is_max=False),
    "size1": Case(size=1, in1=Bcast(1, 1), in2=Bcast(1, 1)),
    "large": Case(size=4096, in1=Bcast(1, 4096), in2=Bcast(1, 4096)),
}


def build(case: Case, rng: np.random.Generator) -> tuple[MinMaxParams, list[np.ndarray]]:
    p = minmax_params(case.size, case.in1, case.in2, case.is_max, case.s1, case.zp1, case.s2,
                      case.zp2, case.s_out, case.zp_out, *case.act)
    a = rng.integers(-128, 128, case.in1.period, dtype=np.int8)
    b = rng.integers(-128, 128, case.in2.period, dtype=np.int8)
    return p, [a, b]


def check(p: MinMaxParams, inputs: list[np.ndarray]) -> np.ndarray:
    expected = mcu_minmax_s8(p, *inputs)
    args: list[np.ndarray | None] = [*inputs]
    got = call_kernel("mcu_minmax_s8", p, args, (p.size,))
    np.testing.assert_array_equal(got, expected)
    return expected


def float_reference(case: Case, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    idx = np.arange(case.size)
    x1 = a.astype(np.float64)[(idx // case.in1.inner) % case.in1.period]
    x2 = b.astype(np.float64)[(idx // case.in2.inner) % case.in2.period]
    r1 = np.float32(case.s1) * (x1 - case.zp1)
    r2 = np.float32(case.s2) * (x2 - case.zp2)
    real = np.maximum(r1, r2) if case.is_max else np.minimum(r1, r2)
    q = np.round(real / np.float32(case.s_out)) + case.zp_out
    return np.clip(q, *case.act)


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    case = CASES[name]
    p, inputs = build(case, np.random.default_rng(sum(map(ord, name))))
    got = check(p, inputs)
    assert np.abs(got.astype(np.int64) - float_reference(case, *inputs)).max() <= 1


@pytest.mark.parametrize("is_max", [True, False])
def test_all_input_pairs(is_max: bool) -> None:
    """Every (a, b) int8 pair once, extreme zero points."""
    a = np.repeat(np.arange(-128, 128), 256).astype(np.int8)
    b = np.tile(np.arange(-128, 128), 256).astype(np.int8)
    case = Case(size=a.size, in1=Bcast(1, a.size), in2=Bcast(1, a.size), zp1=-128, zp2=127,
                is_max=is_max)
    p, _ = build(case, np.random.default_rng(0))
    got = check(p, [a, b])
    assert np.abs(got.astype(np.int64) - float_reference(case, a, b)).max() <= 1


@pytest.mark.parametrize("is_max", [True, False])
def test_same_quantization_is_exact(is_max: bool) -> None:
    """Equal input and output quantization: multiplier 2^30, shift 1, exactly numpy's max/min."""
    a = np.repeat(np.arange(-128, 128), 256).astype(np.int8)
    b = np.tile(np.arange(-128, 128), 256).astype(np.int8)
    case = Case(size=a.size, in1=Bcast(1, a.size), in2=Bcast(1, a.size), s1=0.1, zp1=-3, s2=0.1,
                zp2=-3, s_out=0.1, zp_out=-3, is_max=is_max)
    p, _ = build(case, np.random.default_rng(0))
    assert (p.input1_multiplier, p.input1_shift) == (1 << 30, 1)
    want = np.maximum(a, b) if is_max else np.minimum(a, b)
    np.testing.assert_array_equal(check(p, [a, b]), want)


def act_range(draw: st.DrawFn) -> tuple[int, int]:
    lo, hi = sorted(draw(st.integers(-128, 127)) for _ in range(2))
    return lo, hi


@st.composite
def cases(draw: st.DrawFn) -> Case:
    outer, mid, inner = (draw(st.integers(1, 5)) for _ in range(3))
    size = outer * mid * inner
    shapes = [Bcast(1, size), Bcast(1, 1), Bcast(1, inner), Bcast(inner, mid),
              Bcast(inner, outer * mid), Bcast(mid * inner, outer)]
    scale = st.floats(1e-4, 1.0)
    s1, s2 = draw(scale), draw(scale)
    s_out = draw(st.floats(max(s1, s2) / 8, max(s1, s2) * 8))
    return Case(size=size, in1=draw(st.sampled_from(shapes)), in2=draw(st.sampled_from(shapes)),
                is_max=draw(st.booleans()),
                s1=s1, zp1=draw(st.integers(-128, 127)), s2=s2, zp2=draw(st.integers(-128, 127)),
                s_out=s_out, zp_out=draw(st.integers(-128, 127)), act=act_range(draw))


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    p, inputs = build(case, np.random.default_rng(seed))
    got = check(p, inputs)
    assert np.abs(got.astype(np.int64) - float_reference(case, *inputs)).max() <= 1


@settings(max_examples=100, deadline=None)
@given(m1=st.integers(0, (1 << 31) - 1), m2=st.integers(0, (1 << 31) - 1),
       sh1=st.integers(-31, 30), sh2=st.integers(-31, 30), is_max=st.integers(0, 1),
       seed=st.integers(0, 2**32 - 1))
def test_property_raw_params(m1: int, m2: int, sh1: int, sh2: int, is_max: int,
                             seed: int) -> None:
    """Any multiplier/shift within the documented ranges, including left-shift wrap-around and
    requantized values far outside int8 (the C kernel pre-clamps them; same result)."""
    p, inputs = build(Case(), np.random.default_rng(seed))
    check(dataclasses.replace(p, input1_multiplier=m1, input2_multiplier=m2, input1_shift=sh1,
                              input2_shift=sh2, is_max=is_max), inputs)


INVALID = {
    "size_0": lambda p: dataclasses.replace(p, size=0),
    "in1_inner_0": lambda p: dataclasses.replace(p, in1=Bcast(0, 24)),
    "in2_period_0": lambda p: dataclasses.replace(p, in2=Bcast(1, 0)),
    "is_max_2": lambda p: dataclasses.replace(p, is_max=2),
    "is_max_-1": lambda p: dataclasses.replace(p, is_max=-1),
    "input1_offset_129": lambda p: dataclasses.replace(p, input1_offset=129),
    "input2_offset_-128": lambda p: dataclasses.replace(p, input2_offset=-128),
    "output_offset_128": lambda p: dataclasses.replace(p, output_offset=128),
    "input1_multiplier_negative": lambda p: dataclasses.replace(p, input1_multiplier=-1),
    "input2_multiplier_negative": lambda p: dataclasses.replace(p, input2_multiplier=-(1 << 31)),
    "input1_shift_31": lambda p: dataclasses.replace(p, input1_shift=31),
    "input2_shift_-32": lambda p: dataclasses.replace(p, input2_shift=-32),
    "act_min_gt_act_max": lambda p: dataclasses.replace(p, act_min=10, act_max=9),
    "act_min_-129": lambda p: dataclasses.replace(p, act_min=-129),
    "act_max_128": lambda p: dataclasses.replace(p, act_max=128),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, inputs = build(Case(), np.random.default_rng(0))
    bad = INVALID[name](p)
    args: list[np.ndarray | None] = [*inputs]
    status, out = call_status("mcu_minmax_s8", bad, args, (p.size,))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_minmax_s8(bad, *inputs)


def test_null_pointers() -> None:
    p, (a, b) = build(Case(), np.random.default_rng(0))
    out = np.zeros(p.size, dtype=np.int8)
    args: list[Any] = [p, a, b, out]
    for i in range(4):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_minmax_s8", *bad) == MCU_ERR_ARG


def test_in_place_on_full_operand() -> None:
    p, (a, b) = build(Case(in2=Bcast(1, 4)), np.random.default_rng(1))
    expected = mcu_minmax_s8(p, a, b)
    buf = a.copy()
    assert call_raw("mcu_minmax_s8", p, buf, b, buf) == 0
    np.testing.assert_array_equal(buf, expected)


def test_params_reject_bad_scales() -> None:
    with pytest.raises(QuantError):
        minmax_params(4, Bcast(1, 4), Bcast(1, 4), True, 0.0, 0, 0.1, 0, 0.1, 0, -128, 127)
