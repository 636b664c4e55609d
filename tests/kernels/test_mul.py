"""mcu_mul_s8: host C kernel == numpy golden (emitter/kernels/mcu_mul_s8.py), bit for bit; the golden
within 1 quantum of float; invalid parameters -> MCU_ERR_ARG with the output untouched."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import Bcast
from emitter.kernels.mcu_mul_s8 import MulParams, mcu_mul_s8
from emitter.ops.mul import mul_params
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status


class Case(NamedTuple):
    size: int = 24
    in1: Bcast = Bcast(1, 24)
    in2: Bcast = Bcast(1, 24)
    s1: float = 0.05
    zp1: int = 3
    s2: float = 0.02
    zp2: int = -7
    s_out: float = 0.1
    zp_out: int = 1
    act: tuple[int, int] = (-128, 127)


# An NHWC map [1, 2, 3, 4] (24 elements) with a second operand of various broadcast shapes.
CASES = {
    "full": Case(),
    "scalar_rhs": Case(in2=Bcast(1, 1)),
    "scalar_lhs": Case(in1=Bcast(1, 1)),
    "per_channel_rhs": Case(in2=Bcast(1, 4)),
    "per_pixel_rhs": Case(in2=Bcast(4, 6)),
    "both_broadcast": Case(in1=Bcast(4, 6), in2=Bcast(1, 4)),
    "square": Case(s1=0.02, s2=0.02, zp1=0, zp2=0, s_out=0.01),
    "output_scale_tiny": Case(s_out=1e-4),  # multiplier > 1: positive shift
    "output_scale_huge": Case(s_out=50.0),
    "zp_extremes": Case(zp1=-128, zp2=127, zp_out=-128),
    "zp_extremes_2": Case(zp1=127, zp2=-128, zp_out=127),
    "relu": Case(zp_out=-10, act=(-10, 127)),
    "narrow_act": Case(act=(-5, 9)),
    "size1": Case(size=1, in1=Bcast(1, 1), in2=Bcast(1, 1)),
}


def build(case: Case, rng: np.random.Generator) -> tuple[MulParams, list[np.ndarray]]:
    p = mul_params(case.size, case.in1, case.in2, case.s1, case.zp1, case.s2, case.zp2,
                   case.s_out, case.zp_out, *case.act)
    a = rng.integers(-128, 128, case.in1.period, dtype=np.int8)
    b = rng.integers(-128, 128, case.in2.period, dtype=np.int8)
    return p, [a, b]


def check(p: MulParams, inputs: list[np.ndarray]) -> np.ndarray:
    expected = mcu_mul_s8(p, *inputs)
    args: list[np.ndarray | None] = [*inputs]
    got = call_kernel("mcu_mul_s8", p, args, (p.size,))
    np.testing.assert_array_equal(got, expected)
    return expected


def float_reference(case: Case, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    idx = np.arange(case.size)
    x1 = a.astype(np.float64)[(idx // case.in1.inner) % case.in1.period]
    x2 = b.astype(np.float64)[(idx // case.in2.inner) % case.in2.period]
    real = np.float32(case.s1) * (x1 - case.zp1) * np.float32(case.s2) * (x2 - case.zp2)
    return np.clip(np.round(real / np.float32(case.s_out)) + case.zp_out, *case.act)


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    case = CASES[name]
    p, inputs = build(case, np.random.default_rng(sum(map(ord, name))))
    got = check(p, inputs)
    assert np.abs(got.astype(np.int64) - float_reference(case, *inputs)).max() <= 1


def test_all_input_pairs() -> None:
    a = np.repeat(np.arange(-128, 128), 256).astype(np.int8)
    b = np.tile(np.arange(-128, 128), 256).astype(np.int8)
    case = Case(size=a.size, in1=Bcast(1, a.size), in2=Bcast(1, a.size), zp1=-128, zp2=127,
                s_out=0.5)
    p, _ = build(case, np.random.default_rng(0))
    got = check(p, [a, b])
    assert np.abs(got.astype(np.int64) - float_reference(case, a, b)).max() <= 1


@pytest.mark.parametrize("seed", range(4))
def test_onnxruntime_rounding(seed: int) -> None:
    """numerics "onnxruntime" (rounding 1: one rounding of the exact product, half to even; C == twin)
    against onnxruntime's QDQ Mul (float32 DequantizeLinear, product, QuantizeLinear) on every input
    pair, at seeded calibration-like scales: a tenth of TFLite's double-rounding misses or fewer (those
    are within float32's error of a tie), each one quantum."""
    rng = np.random.default_rng(seed)
    s1, s2, so = (float(np.float32(v)) for v in rng.uniform(0.002, 0.05, 3) * [1, 1, 4])
    zp1, zp2, zpo = (int(v) for v in rng.integers(-128, 128, 3))
    a = np.repeat(np.arange(-128, 128), 256).astype(np.int8)
    b = np.tile(np.arange(-128, 128), 256).astype(np.int8)
    f32 = np.float32
    qdq = np.clip(np.rint(((a.astype(np.int32) - zp1).astype(f32) * f32(s1))
                          * ((b.astype(np.int32) - zp2).astype(f32) * f32(s2)) / f32(so)) + zpo, -128, 127)
    misses = {}
    for numerics in ("tflite", "onnxruntime"):
        p = mul_params(a.size, Bcast(1, a.size), Bcast(1, a.size), s1, zp1, s2, zp2, so, zpo, -128, 127,
                       numerics=numerics)
        assert p.rounding == (numerics == "onnxruntime")
        got = check(p, [a, b]).astype(np.int64)
        assert np.abs(got - qdq).max() <= 1
        misses[numerics] = int((got != qdq).sum())
    assert misses["onnxruntime"] * 10 <= misses["tflite"], misses


def act_range(draw: st.DrawFn) -> tuple[int, int]:
    lo, hi = sorted(draw(st.integers(-128, 127)) for _ in range(2))
    return lo, hi


@st.composite
def cases(draw: st.DrawFn) -> Case:
    outer, mid, inner = (draw(st.integers(1, 5)) for _ in range(3))
    size = outer * mid * inner
    shapes = [Bcast(1, size), Bcast(1, 1), Bcast(1, inner), Bcast(inner, mid),
              Bcast(inner, outer * mid), Bcast(mid * inner, outer)]
    s1, s2 = draw(st.floats(1e-4, 1.0)), draw(st.floats(1e-4, 1.0))
    s_out = s1 * s2 * draw(st.floats(0.5, 20000.0))
    return Case(size=size, in1=draw(st.sampled_from(shapes)), in2=draw(st.sampled_from(shapes)),
                s1=s1, zp1=draw(st.integers(-128, 127)), s2=s2, zp2=draw(st.integers(-128, 127)),
                s_out=s_out, zp_out=draw(st.integers(-128, 127)),
                act=act_range(draw))


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    p, inputs = build(case, np.random.default_rng(seed))
    got = check(p, inputs)
    assert np.abs(got.astype(np.int64) - float_reference(case, *inputs)).max() <= 1


@settings(max_examples=100, deadline=None)
@given(mult=st.integers(0, (1 << 31) - 1), shift=st.integers(-31, 30),
       seed=st.integers(0, 2**32 - 1))
def test_property_raw_params(mult: int, shift: int, seed: int) -> None:
    p, inputs = build(Case(), np.random.default_rng(seed))
    check(dataclasses.replace(p, output_multiplier=mult, output_shift=shift), inputs)


INVALID = {
    "size_0": lambda p: dataclasses.replace(p, size=0),
    "in1_period_0": lambda p: dataclasses.replace(p, in1=Bcast(1, 0)),
    "in2_inner_-1": lambda p: dataclasses.replace(p, in2=Bcast(-1, 24)),
    "output_shift_31": lambda p: dataclasses.replace(p, output_shift=31),
    "output_shift_-32": lambda p: dataclasses.replace(p, output_shift=-32),
    "input1_offset_-128": lambda p: dataclasses.replace(p, input1_offset=-128),
    "input2_offset_129": lambda p: dataclasses.replace(p, input2_offset=129),
    "output_offset_-129": lambda p: dataclasses.replace(p, output_offset=-129),
    "act_min_gt_act_max": lambda p: dataclasses.replace(p, act_min=10, act_max=9),
    "act_max_128": lambda p: dataclasses.replace(p, act_max=128),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, inputs = build(Case(), np.random.default_rng(0))
    bad = INVALID[name](p)
    args: list[np.ndarray | None] = [*inputs]
    status, out = call_status("mcu_mul_s8", bad, args, (p.size,))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_mul_s8(bad, *inputs)


def test_null_pointers() -> None:
    p, (a, b) = build(Case(), np.random.default_rng(0))
    args: list[Any] = [p, a, b, np.zeros(p.size, dtype=np.int8)]
    for i in range(4):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_mul_s8", *bad) == MCU_ERR_ARG
