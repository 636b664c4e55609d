"""mcu_avgpool_s8: host C kernel == numpy golden (emitter/kernels/mcu_avgpool_s8.py), bit for bit; the
golden == an independent exact mean (padding excluded, rounded half away from zero); invalid
parameters -> MCU_ERR_ARG with the output untouched."""
from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import Dims, PoolParams
from emitter.kernels.mcu_avgpool_s8 import mcu_avgpool_s8
from tests.harness.ckernels import (
    MCU_ERR_ARG,
    call_kernel,
    call_raw,
    call_status,
    conv_out_size,
)


class Case(NamedTuple):
    n: int = 1
    h: int = 6
    w: int = 6
    c: int = 3
    kh: int = 2
    kw: int = 2
    stride: tuple[int, int] = (2, 2)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    act: tuple[int, int] = (-128, 127)


CASES = {
    "2x2_s2": Case(),
    "3x3_s1_same": Case(h=7, w=5, kh=3, kw=3, stride=(1, 1), pads=(1, 1, 1, 1)),
    "3x3_s2_same": Case(h=8, w=8, c=5, kh=3, kw=3, pads=(0, 1, 0, 1)),
    "global": Case(h=5, w=7, c=8, kh=5, kw=7, stride=(1, 1)),
    "1x1": Case(kh=1, kw=1, stride=(1, 1)),
    "rect_kernel": Case(h=9, w=4, kh=4, kw=1, stride=(2, 1), pads=(2, 1, 0, 0)),
    "kernel_gt_input": Case(h=2, w=3, kh=4, kw=4, stride=(1, 1), pads=(1, 1, 1, 0)),
    "asym_pad": Case(h=5, w=5, kh=3, kw=3, stride=(2, 3), pads=(2, 0, 1, 2)),
    "c1": Case(c=1, kh=3, kw=3, stride=(1, 1), pads=(1, 1, 1, 1)),
    "batch3": Case(n=3, kh=3, kw=3, stride=(1, 2), pads=(1, 1, 1, 1)),
    "relu": Case(act=(0, 127)),
    "narrow_act": Case(act=(-5, 9)),
}


def build(case: Case, rng: np.random.Generator) -> tuple[PoolParams, np.ndarray]:
    top, bottom, left, right = case.pads
    out_h = conv_out_size(case.h, case.kh, case.stride[0], 1, top, bottom)
    out_w = conv_out_size(case.w, case.kw, case.stride[1], 1, left, right)
    p = PoolParams(input=Dims(case.n, case.h, case.w, case.c),
                   output=Dims(case.n, out_h, out_w, case.c),
                   filter_h=case.kh, filter_w=case.kw, stride_h=case.stride[0],
                   stride_w=case.stride[1], pad_top=top, pad_left=left,
                   act_min=case.act[0], act_max=case.act[1])
    x = rng.integers(-128, 128, (case.n, case.h, case.w, case.c), dtype=np.int8)
    return p, x


def exact_reference(p: PoolParams, x: np.ndarray) -> np.ndarray:
    """Slow, independent: exact rational mean of the valid taps, rounded half away from zero."""
    out = np.zeros((p.output.n, p.output.h, p.output.w, p.output.c), dtype=np.int64)
    for b in range(p.output.n):
        for oy in range(p.output.h):
            for ox in range(p.output.w):
                ys = [y for y in range(oy * p.stride_h - p.pad_top,
                                       oy * p.stride_h - p.pad_top + p.filter_h)
                      if 0 <= y < p.input.h]
                xs = [xx for xx in range(ox * p.stride_w - p.pad_left,
                                         ox * p.stride_w - p.pad_left + p.filter_w)
                      if 0 <= xx < p.input.w]
                for ch in range(p.output.c):
                    vals = [int(x[b, y, xx, ch]) for y in ys for xx in xs]
                    mean = Fraction(sum(vals), len(vals))
                    mag = int(abs(mean) + Fraction(1, 2))  # floor(|m| + 1/2)
                    away = mag if mean >= 0 else -mag
                    out[b, oy, ox, ch] = away if p.rounding == 0 else round(mean)  # ties to even
    return np.clip(out, p.act_min, p.act_max)


def check(p: PoolParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_avgpool_s8(p, x)
    o = p.output
    got = call_kernel("mcu_avgpool_s8", p, [x], (o.n, o.h, o.w, o.c))
    np.testing.assert_array_equal(got, expected)
    return expected


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    p, x = build(CASES[name], np.random.default_rng(sum(map(ord, name))))
    np.testing.assert_array_equal(check(p, x), exact_reference(p, x))


def test_rounding_ties() -> None:
    """Sums that sit exactly on .5 in both directions: +-0.5, +-1.5 round away from zero."""
    p, _ = build(Case(h=2, w=2, c=4, kh=2, kw=1, stride=(2, 1)), np.random.default_rng(0))
    x = np.array([[[[1, -1, 3, -3], [0, 0, 0, 0]],
                   [[0, 0, 0, 0], [127, -128, -128, 127]]]], dtype=np.int8)
    got = check(p, x)
    np.testing.assert_array_equal(got[0, 0, 0], [1, -1, 2, -2])
    np.testing.assert_array_equal(got, exact_reference(p, x))


def test_extremes() -> None:
    for value in (-128, 127):
        p, x = build(Case(h=8, w=8, kh=8, kw=8, stride=(1, 1)), np.random.default_rng(0))
        np.testing.assert_array_equal(check(p, np.full_like(x, value)), value)


def act_range(draw: st.DrawFn) -> tuple[int, int]:
    lo, hi = sorted(draw(st.integers(-128, 127)) for _ in range(2))
    return lo, hi


@st.composite
def cases(draw: st.DrawFn) -> Case:
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return Case(n=draw(st.integers(1, 2)), h=draw(st.integers(1, 9)), w=draw(st.integers(1, 9)),
                c=draw(st.integers(1, 5)), kh=kh, kw=kw,
                stride=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
                # pads < kernel: every window keeps a valid tap
                pads=(draw(st.integers(0, kh - 1)), draw(st.integers(0, kh - 1)),
                      draw(st.integers(0, kw - 1)), draw(st.integers(0, kw - 1))),
                act=act_range(draw))


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1), rounding=st.sampled_from([0, 1]))
def test_property_golden_equals_c(case: Case, seed: int, rounding: int) -> None:
    p, x = build(case, np.random.default_rng(seed))
    p = dataclasses.replace(p, rounding=rounding)  # 1: onnxruntime numerics, ties to even
    np.testing.assert_array_equal(check(p, x), exact_reference(p, x))


def test_rounding_ties_to_even() -> None:
    """onnxruntime numerics (rounding 1): 0.5 -> 0, -0.5 -> 0, 1.5 -> 2, -1.5 -> -2, 2.5 -> 2."""
    p, _ = build(Case(h=2, w=2, c=5, kh=2, kw=1, stride=(2, 1)), np.random.default_rng(0))
    p = dataclasses.replace(p, rounding=1)
    x = np.array([[[[1, -1, 3, -3, 5], [0, 0, 0, 0, 0]],
                   [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]]], dtype=np.int8)
    got = check(p, x)
    np.testing.assert_array_equal(got[0, 0, 0], [0, 0, 2, -2, 2])
    np.testing.assert_array_equal(got, exact_reference(p, x))


INVALID = {
    "filter_h_0": lambda p: dataclasses.replace(p, filter_h=0),
    "stride_w_0": lambda p: dataclasses.replace(p, stride_w=0),
    "pad_left_-1": lambda p: dataclasses.replace(p, pad_left=-1),
    "input_c_0": lambda p: dataclasses.replace(p, input=dataclasses.replace(p.input, c=0)),
    "output_c_ne_input_c": lambda p: dataclasses.replace(
        p, output=dataclasses.replace(p.output, c=p.input.c + 1)),
    "output_n_ne_input_n": lambda p: dataclasses.replace(
        p, output=dataclasses.replace(p.output, n=2)),
    "output_h_0": lambda p: dataclasses.replace(p, output=dataclasses.replace(p.output, h=0)),
    "act_min_gt_act_max": lambda p: dataclasses.replace(p, act_min=3, act_max=2),
    "act_min_-129": lambda p: dataclasses.replace(p, act_min=-129),
    # the last window starts below the input: only padding
    "window_in_bottom_padding": lambda p: dataclasses.replace(
        p, output=dataclasses.replace(p.output, h=p.output.h + 1)),
    # the first window ends before the input: only padding
    "window_in_left_padding": lambda p: dataclasses.replace(p, pad_left=p.filter_w),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, x = build(Case(), np.random.default_rng(0))
    bad = INVALID[name](p)
    o = bad.output
    shape = (max(o.n, 1), max(o.h, 1), max(o.w, 1), max(o.c, 1))
    status, out = call_status("mcu_avgpool_s8", bad, [x], shape)
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_avgpool_s8(bad, x)


def test_null_pointers() -> None:
    p, x = build(Case(), np.random.default_rng(0))
    o = p.output
    args: list[Any] = [p, x, np.zeros((o.n, o.h, o.w, o.c), dtype=np.int8)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_avgpool_s8", *bad) == MCU_ERR_ARG
