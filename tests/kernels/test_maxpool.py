"""mcu_maxpool_s8: host C kernel == numpy golden (emitter/kernels/mcu_maxpool_s8.py), bit for bit; the
golden == an independent sliding-window max; invalid parameters -> MCU_ERR_ARG."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import Dims, PoolParams
from emitter.kernels.mcu_maxpool_s8 import mcu_maxpool_s8
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
    "batch3": Case(n=3, kh=3, kw=3, stride=(1, 2), pads=(1, 1, 1, 1)),
    "relu": Case(act=(0, 127)),
    "narrow_act": Case(act=(-5, 9)),
    "window_in_padding": Case(h=2, w=2, kh=1, kw=1, stride=(1, 1), pads=(1, 1, 1, 1)),
    "window_in_padding_relu": Case(h=2, w=2, kh=1, kw=1, stride=(1, 1), pads=(1, 1, 1, 1),
                                   act=(-20, 127)),
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


def window_reference(p: PoolParams, x: np.ndarray) -> np.ndarray:
    """Independent: pad with a value below int8 (-129), take strided window maxima."""
    o = p.output
    span_h = (o.h - 1) * p.stride_h + p.filter_h
    span_w = (o.w - 1) * p.stride_w + p.filter_w
    xp = np.full((o.n, span_h + p.pad_top + p.input.h, span_w + p.pad_left + p.input.w, o.c),
                 -129, dtype=np.int64)
    xp[:, p.pad_top:p.pad_top + p.input.h, p.pad_left:p.pad_left + p.input.w, :] = x
    windows = np.lib.stride_tricks.sliding_window_view(xp, (p.filter_h, p.filter_w), axis=(1, 2))
    out = windows[:, :span_h - p.filter_h + 1:p.stride_h, :span_w - p.filter_w + 1:p.stride_w]
    out = out.max(axis=(-2, -1))[:, :o.h, :o.w]
    return np.clip(np.maximum(out, -128), p.act_min, p.act_max)


def check(p: PoolParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_maxpool_s8(p, x)
    o = p.output
    got = call_kernel("mcu_maxpool_s8", p, [x], (o.n, o.h, o.w, o.c))
    np.testing.assert_array_equal(got, expected)
    return expected


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    p, x = build(CASES[name], np.random.default_rng(sum(map(ord, name))))
    np.testing.assert_array_equal(check(p, x), window_reference(p, x))


def test_padding_never_wins() -> None:
    """All inputs -128: padding (which is skipped, not zero) must not raise the max."""
    p, x = build(Case(h=4, w=4, kh=3, kw=3, stride=(1, 1), pads=(1, 1, 1, 1)),
                 np.random.default_rng(0))
    np.testing.assert_array_equal(check(p, np.full_like(x, -128)), -128)


def act_range(draw: st.DrawFn) -> tuple[int, int]:
    lo, hi = sorted(draw(st.integers(-128, 127)) for _ in range(2))
    return lo, hi


@st.composite
def cases(draw: st.DrawFn) -> Case:
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    return Case(n=draw(st.integers(1, 2)), h=draw(st.integers(1, 9)), w=draw(st.integers(1, 9)),
                c=draw(st.integers(1, 5)), kh=kh, kw=kw,
                stride=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
                pads=tuple(draw(st.integers(0, 4)) for _ in range(4)),  # type: ignore[arg-type]
                act=act_range(draw))


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    p, x = build(case, np.random.default_rng(seed))
    np.testing.assert_array_equal(check(p, x), window_reference(p, x))


INVALID = {
    "filter_w_0": lambda p: dataclasses.replace(p, filter_w=0),
    "stride_h_-1": lambda p: dataclasses.replace(p, stride_h=-1),
    "pad_top_-1": lambda p: dataclasses.replace(p, pad_top=-1),
    "input_n_0": lambda p: dataclasses.replace(p, input=dataclasses.replace(p.input, n=0)),
    "output_c_ne_input_c": lambda p: dataclasses.replace(
        p, output=dataclasses.replace(p.output, c=p.input.c - 1)),
    "output_w_0": lambda p: dataclasses.replace(p, output=dataclasses.replace(p.output, w=0)),
    "act_min_gt_act_max": lambda p: dataclasses.replace(p, act_min=3, act_max=2),
    "act_max_128": lambda p: dataclasses.replace(p, act_max=128),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, x = build(Case(), np.random.default_rng(0))
    bad = INVALID[name](p)
    o = bad.output
    shape = (max(o.n, 1), max(o.h, 1), max(o.w, 1), max(o.c, 1))
    status, out = call_status("mcu_maxpool_s8", bad, [x], shape)
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_maxpool_s8(bad, x)


def test_null_pointers() -> None:
    p, x = build(Case(), np.random.default_rng(0))
    o = p.output
    args: list[Any] = [p, x, np.zeros((o.n, o.h, o.w, o.c), dtype=np.int8)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_maxpool_s8", *bad) == MCU_ERR_ARG
