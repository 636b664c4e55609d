"""mcu_softmax_s8: host C kernel == numpy golden (emitter/kernels/mcu_softmax_s8.py), bit for bit; the
golden == TFLite's reference int8 softmax on published vectors, and within 1 quantum of the float
softmax (mode 0: scale 1/256, zp -128; mode 1: scale 1/255, zp -128); invalid parameters ->
MCU_ERR_ARG with the output untouched."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.mcu_softmax_s8 import SoftmaxParams, mcu_softmax_s8
from emitter.ops.softmax import softmax_params
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status

MODE0 = (1.0 / 256, -128)
MODE1 = (1.0 / 255, -128)


class Case(NamedTuple):
    rows: int = 3
    row_size: int = 10
    s_in: float = 0.1
    out: tuple[float, int] = MODE0
    spread: int = 256  # inputs drawn from [-128, -128 + spread)


CASES = {
    "mode0": Case(),
    "mode1": Case(out=MODE1),
    "mode1_zp0": Case(out=(1.0 / 128, 0)),
    "mode1_coarse": Case(out=(0.1, -100)),
    "mode1_scale_1_256_zp_0": Case(out=(1.0 / 256, 0)),  # not TFLite's pair: mode 1
    "row_size_1": Case(row_size=1),
    "row_size_1_mode1": Case(row_size=1, out=MODE1),
    "one_row": Case(rows=1, row_size=37),
    "small_scale": Case(s_in=0.004),
    "large_scale_skips": Case(s_in=0.9),  # diff_min cuts most elements
    "scale_over_16": Case(s_in=20.0),  # input_left_shift 31, only the max survives
    "scale_tiny": Case(s_in=2e-7),  # near-uniform rows
    "narrow_inputs": Case(spread=4, row_size=50),
    "keyword_spotting": Case(rows=1, row_size=12, s_in=0.0625),
}


def build(case: Case, rng: np.random.Generator) -> tuple[SoftmaxParams, np.ndarray]:
    p = softmax_params(case.s_in, case.rows, case.row_size, *case.out)
    lo = -128 + int(rng.integers(0, 257 - case.spread))
    x = rng.integers(lo, lo + case.spread, (case.rows, case.row_size)).astype(np.int8)
    return p, x


def check(p: SoftmaxParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_softmax_s8(p, x)
    got = call_kernel("mcu_softmax_s8", p, [x], x.shape)
    np.testing.assert_array_equal(got, expected)
    return expected


def float_reference(case: Case, x: np.ndarray) -> np.ndarray:
    real = x.astype(np.float64) * np.float32(case.s_in)
    e = np.exp(real - real.max(axis=1, keepdims=True))
    prob = e / e.sum(axis=1, keepdims=True)
    scale, zp = case.out
    return np.clip(np.round(prob / np.float32(scale)) + zp, -128, 127)


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    case = CASES[name]
    p, x = build(case, np.random.default_rng(sum(map(ord, name))))
    assert p.output_mode == (0 if case.out == MODE0 else 1)
    got = check(p, x)
    assert np.abs(got.astype(np.int64) - float_reference(case, x)).max() <= 1


# Published int8 softmax vectors (CMSIS-NN unit-test data, generated with TFLite's reference
# kernel): (rows, row_size, input_multiplier, input_left_shift, diff_min, input, expected).
TFLITE_VECTORS = [
    (1, 5, 1077952576, 23, -248, [-80, -48, 16, 0, -96], [-128, -125, 56, -60, -128]),
    (2, 5, 1077952640, 19, -3968, [101, 49, 6, -34, -75, -79, -38, 120, -55, 115],
     [-57, -70, -79, -86, -92, -94, -88, -54, -91, -56]),
]


@pytest.mark.parametrize("vector", TFLITE_VECTORS, ids=["cmsis_nn_1x5", "cmsis_nn_2x5"])
def test_tflite_vectors(vector: tuple[Any, ...]) -> None:
    rows, row_size, mult, shift, diff_min, x, expected = vector
    p = SoftmaxParams(rows=rows, row_size=row_size, input_multiplier=mult,
                      input_left_shift=shift, diff_min=diff_min, output_mode=0,
                      output_multiplier=0, output_shift=0, output_offset=-128)
    xa = np.array(x, dtype=np.int8).reshape(rows, row_size)
    np.testing.assert_array_equal(check(p, xa).ravel(), expected)


def test_params_match_tflite() -> None:
    """softmax_params follows PreprocessSoftmaxScaling / CalculateInputRadius (values worked out
    by hand: 2^26 / 16 = 2^22 -> multiplier 2^30, shift 23, radius floor(31 * 2^26 / 2^23))."""
    p = softmax_params(1.0 / 16, 1, 5, *MODE0)
    assert (p.input_multiplier, p.input_left_shift, p.diff_min) == (1 << 30, 23, -248)
    p = softmax_params(0.1, 1, 5, *MODE0)
    assert (p.input_multiplier, p.input_left_shift, p.diff_min) == (1717986944, 23, -248)


def test_uniform_rows() -> None:
    """Equal inputs: every probability is 1/n; wide rows exercise the large-sum paths (where
    TFLite's exponent check fails, mode 0 gives probability 0, i.e. -128)."""
    for n in (1, 2, 3, 255, 256, 511, 512, 600, 5000):
        for out in (MODE0, MODE1):
            case = Case(rows=1, row_size=n, out=out)
            p, _ = build(case, np.random.default_rng(n))
            x = np.full((1, n), 17, dtype=np.int8)
            got = check(p, x)
            assert len(set(got.ravel().tolist())) == 1
            if n < 512:
                assert abs(int(got[0, 0]) - int(float_reference(case, x)[0, 0])) <= 1


@st.composite
def cases(draw: st.DrawFn) -> Case:
    out = draw(st.one_of(st.just(MODE0), st.just(MODE1),
                         st.tuples(st.floats(1.0 / 512, 0.05), st.integers(-128, 127))))
    return Case(rows=draw(st.integers(1, 4)), row_size=draw(st.integers(1, 64)),
                s_in=draw(st.floats(1e-3, 2.0)), out=out, spread=draw(st.integers(1, 256)))


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    p, x = build(case, np.random.default_rng(seed))
    got = check(p, x)
    if case.out in (MODE0, MODE1):
        assert np.abs(got.astype(np.int64) - float_reference(case, x)).max() <= 1


@settings(max_examples=60, deadline=None)
@given(mult=st.integers(0, (1 << 31) - 1), shift=st.integers(0, 31),
       diff_min=st.integers(-(1 << 31), 0), out_mult=st.integers(0, (1 << 31) - 1),
       out_shift=st.integers(-31, 30), mode=st.integers(0, 1), seed=st.integers(0, 2**32 - 1))
def test_property_raw_params(mult: int, shift: int, diff_min: int, out_mult: int,
                             out_shift: int, mode: int, seed: int) -> None:
    """Arbitrary (even inconsistent) parameters in range: C and golden still agree."""
    p, x = build(Case(), np.random.default_rng(seed))
    check(dataclasses.replace(p, input_multiplier=mult, input_left_shift=shift,
                              diff_min=diff_min, output_mode=mode, output_multiplier=out_mult,
                              output_shift=out_shift, output_offset=-128), x)


INVALID = {
    "rows_0": lambda p: dataclasses.replace(p, rows=0),
    "row_size_-1": lambda p: dataclasses.replace(p, row_size=-1),
    "input_multiplier_-1": lambda p: dataclasses.replace(p, input_multiplier=-1),
    "input_left_shift_32": lambda p: dataclasses.replace(p, input_left_shift=32),
    "input_left_shift_-1": lambda p: dataclasses.replace(p, input_left_shift=-1),
    "diff_min_1": lambda p: dataclasses.replace(p, diff_min=1),
    "output_mode_2": lambda p: dataclasses.replace(p, output_mode=2),
    "mode0_offset_0": lambda p: dataclasses.replace(p, output_offset=0),
    "mode1_shift_31": lambda p: dataclasses.replace(p, output_mode=1, output_shift=31),
    "mode1_offset_128": lambda p: dataclasses.replace(p, output_mode=1, output_offset=128),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, x = build(Case(), np.random.default_rng(0))
    bad = INVALID[name](p)
    status, out = call_status("mcu_softmax_s8", bad, [x], x.shape)
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_softmax_s8(bad, x)


def test_null_pointers() -> None:
    p, x = build(Case(), np.random.default_rng(0))
    args: list[Any] = [p, x, np.zeros_like(x)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_softmax_s8", *bad) == MCU_ERR_ARG
