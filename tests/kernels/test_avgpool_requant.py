"""mcu_avgpool_requant_s8: host C kernel == numpy golden (emitter/kernels/mcu_avgpool_requant_s8.py), bit
for bit; the golden == an independent reference (explicit zero-point padding, full windows); the
golden is within one output quantum of the float mean (divisor filter_h * filter_w); invalid
parameters -> MCU_ERR_ARG with the output untouched."""
from __future__ import annotations

import dataclasses
import os
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import Dims, PoolParams, windows
from emitter.kernels.mcu_avgpool_requant_s8 import AvgPoolRequantParams, mcu_avgpool_requant_s8
from emitter.quant import quantize_multiplier, requantize
from emitter.render.cfmt import c_struct
from tests.harness.ckernels import (
    INCLUDE,
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
    zp_in: int = 3
    zp_out: int = -7
    scale_ratio: float = 0.8  # in_scale / out_scale


CASES = {
    "global_8x8": Case(h=8, w=8, c=16, kh=8, kw=8, stride=(1, 1)),
    "3x3_s2_pad1": Case(h=9, w=9, c=5, kh=3, kw=3, pads=(1, 1, 1, 1)),
    "2x2_s2": Case(),
    "non_square": Case(h=7, w=10, c=4, kh=3, kw=2, stride=(2, 1), pads=(1, 1, 0, 1)),
    "c1": Case(c=1, kh=3, kw=3, stride=(1, 1), pads=(1, 1, 1, 1)),
    "zp_in_min_zp_out_max": Case(h=5, w=5, kh=3, kw=3, stride=(1, 1), pads=(1, 1, 1, 1),
                                 zp_in=-128, zp_out=127),
    "zp_in_max_zp_out_min": Case(h=5, w=5, kh=3, kw=3, stride=(1, 1), pads=(1, 1, 1, 1),
                                 zp_in=127, zp_out=-128),
    "batch2_asym_pad": Case(n=2, h=5, w=6, kh=3, kw=3, stride=(2, 3), pads=(2, 0, 1, 2)),
    "kernel_gt_input": Case(h=2, w=3, kh=4, kw=4, stride=(1, 1), pads=(1, 1, 1, 0)),
    "upscale": Case(scale_ratio=7.5),
    "downscale": Case(h=8, w=8, kh=8, kw=8, stride=(1, 1), scale_ratio=0.01),
    "relu": Case(act=(-7, 127)),
    "narrow_act": Case(act=(-5, 9)),
}


def pool_params(case: Case) -> PoolParams:
    top, bottom, left, right = case.pads
    out_h = conv_out_size(case.h, case.kh, case.stride[0], 1, top, bottom)
    out_w = conv_out_size(case.w, case.kw, case.stride[1], 1, left, right)
    return PoolParams(input=Dims(case.n, case.h, case.w, case.c),
                      output=Dims(case.n, out_h, out_w, case.c),
                      filter_h=case.kh, filter_w=case.kw, stride_h=case.stride[0],
                      stride_w=case.stride[1], pad_top=top, pad_left=left,
                      act_min=case.act[0], act_max=case.act[1])


def build(case: Case, rng: np.random.Generator) -> tuple[AvgPoolRequantParams, np.ndarray]:
    mult, shift = quantize_multiplier(case.scale_ratio / (case.kh * case.kw))
    p = AvgPoolRequantParams(pool=pool_params(case), input_offset=-case.zp_in,
                             output_offset=case.zp_out, multiplier=mult, shift=shift)
    x = rng.integers(-128, 128, (case.n, case.h, case.w, case.c), dtype=np.int8)
    return p, x


def independent_reference(p: AvgPoolRequantParams, x: np.ndarray) -> np.ndarray:
    """Slow, independent of emitter.kernels: pad explicitly with the input zero point, sum full
    filter_h x filter_w windows of (x + input_offset), requantize, clamp."""
    q = p.pool
    bottom = max(0, (q.output.h - 1) * q.stride_h + q.filter_h - q.input.h - q.pad_top)
    right = max(0, (q.output.w - 1) * q.stride_w + q.filter_w - q.input.w - q.pad_left)
    xp = np.pad(x.astype(np.int64), ((0, 0), (q.pad_top, bottom), (q.pad_left, right), (0, 0)),
                constant_values=-p.input_offset) + p.input_offset
    out = np.zeros((q.output.n, q.output.h, q.output.w, q.output.c), dtype=np.int64)
    for oy in range(q.output.h):
        for ox in range(q.output.w):
            y, xx = oy * q.stride_h, ox * q.stride_w
            acc = xp[:, y:y + q.filter_h, xx:xx + q.filter_w, :].sum(axis=(1, 2))
            out[:, oy, ox, :] = requantize(acc, p.multiplier, p.shift) + p.output_offset
    return np.clip(out, q.act_min, q.act_max)


def check(p: AvgPoolRequantParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_avgpool_requant_s8(p, x)
    o = p.pool.output
    got = call_kernel("mcu_avgpool_requant_s8", p, [x], (o.n, o.h, o.w, o.c))
    np.testing.assert_array_equal(got, expected)
    return expected


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    p, x = build(CASES[name], np.random.default_rng(sum(map(ord, name))))
    np.testing.assert_array_equal(check(p, x), independent_reference(p, x))


def test_extremes() -> None:
    """Constant inputs at both int8 ends, both extreme input zero points: a mean of a constant
    with no padding requantizes to the constant itself (scale ratio 1, zp_out = zp_in)."""
    for value in (-128, 127):
        for zp in (-128, 127):
            case = Case(h=8, w=8, kh=8, kw=8, stride=(1, 1), zp_in=zp, zp_out=zp, scale_ratio=1.0)
            p, x = build(case, np.random.default_rng(0))
            np.testing.assert_array_equal(check(p, np.full_like(x, value)), value)


def test_largest_window() -> None:
    """2^23 valid taps of 127 with input_offset 128: the accumulator peaks at 255 * 2^23, just
    below 2^31 (the C build runs under UBSan, so an overflow would fail)."""
    case = Case(h=2048, w=4096, c=1, kh=2048, kw=4096, stride=(1, 1), zp_in=-128, zp_out=0,
                scale_ratio=1.0 / 256)
    p, x = build(case, np.random.default_rng(0))
    got = check(p, np.full_like(x, 127))
    np.testing.assert_array_equal(got, 1)  # 255/256 rounds to 1


def act_range(draw: st.DrawFn) -> tuple[int, int]:
    lo, hi = sorted(draw(st.integers(-128, 127)) for _ in range(2))
    return lo, hi


@st.composite
def cases(draw: st.DrawFn) -> Case:
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    return Case(n=draw(st.integers(1, 2)), h=draw(st.integers(1, 9)), w=draw(st.integers(1, 9)),
                c=draw(st.integers(1, 5)), kh=kh, kw=kw,
                stride=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
                # pads < kernel: every window keeps a valid tap
                pads=(draw(st.integers(0, kh - 1)), draw(st.integers(0, kh - 1)),
                      draw(st.integers(0, kw - 1)), draw(st.integers(0, kw - 1))),
                act=act_range(draw), zp_in=draw(st.integers(-128, 127)),
                zp_out=draw(st.integers(-128, 127)),
                scale_ratio=2.0 ** draw(st.floats(-8.0, 5.0)))


@settings(max_examples=200, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    p, x = build(case, np.random.default_rng(seed))
    np.testing.assert_array_equal(check(p, x), independent_reference(p, x))


@settings(max_examples=100, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1),
       multiplier=st.one_of(st.just(0), st.integers(1 << 30, (1 << 31) - 1)),
       shift=st.integers(-31, 30))
def test_property_any_multiplier(case: Case, seed: int, multiplier: int, shift: int) -> None:
    """Every (multiplier, shift) the struct admits, including left shifts that wrap in int32 and
    requantized values far outside int8: C == golden."""
    p, x = build(case, np.random.default_rng(seed))
    p = dataclasses.replace(p, multiplier=multiplier, shift=shift)
    np.testing.assert_array_equal(check(p, x), independent_reference(p, x))


@settings(max_examples=100, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1),
       multiplier=st.one_of(st.just(0), st.integers(1 << 23, (1 << 24) - 1).map(lambda m: m << 7)),
       shift=st.integers(-31, 30))
def test_property_onnxruntime_rounding(case: Case, seed: int, multiplier: int, shift: int) -> None:
    """onnxruntime numerics (pool.rounding 1, a float32 mantissa as multiplier): C == golden ==
    the exact mean sum * multiplier * 2^(shift - 31) rounded half to even, clamped."""
    p, x = build(case, np.random.default_rng(seed))
    p = dataclasses.replace(p, pool=dataclasses.replace(p.pool, rounding=1), multiplier=multiplier,
                            shift=shift)
    got = check(p, x)
    q = p.pool
    for oy, ox, y0, y1, x0, x1 in windows(q):
        acc = x[:, y0:y1, x0:x1, :].astype(np.int64).sum(axis=(1, 2)) + p.input_offset * (y1 - y0) * (x1 - x0)
        exact = [round(Fraction(int(a) * multiplier) * Fraction(2) ** (shift - 31)) for a in acc.ravel()]
        want = np.clip(np.clip(exact, -256, 256) + p.output_offset, q.act_min, q.act_max)
        np.testing.assert_array_equal(got[:, oy, ox, :].ravel(), want)


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1),
       in_scale=st.floats(1e-3, 1.0), log2_ratio=st.floats(-6.0, 4.0))
def test_golden_near_float_mean(case: Case, seed: int, in_scale: float,
                                log2_ratio: float) -> None:
    """With multiplier = quantize(in_scale / (out_scale * kh * kw)) the golden is within one
    quantum of the float mean: padding is real 0 (the input zero point) and the divisor is always
    kh * kw (count_include_pad=1)."""
    case = case._replace(act=(-128, 127))
    out_scale = in_scale / 2.0 ** log2_ratio
    mult, shift = quantize_multiplier(in_scale / (out_scale * case.kh * case.kw))
    p, x = build(case, np.random.default_rng(seed))
    p = dataclasses.replace(p, multiplier=mult, shift=shift)
    got = mcu_avgpool_requant_s8(p, x).astype(np.float64)

    q = p.pool
    real = (x.astype(np.float64) - case.zp_in) * in_scale
    bottom = max(0, (q.output.h - 1) * q.stride_h + q.filter_h - q.input.h - q.pad_top)
    right = max(0, (q.output.w - 1) * q.stride_w + q.filter_w - q.input.w - q.pad_left)
    real = np.pad(real, ((0, 0), (q.pad_top, bottom), (q.pad_left, right), (0, 0)))
    want = np.zeros(got.shape)
    for oy in range(q.output.h):
        for ox in range(q.output.w):
            y, xx = oy * q.stride_h, ox * q.stride_w
            window = real[:, y:y + q.filter_h, xx:xx + q.filter_w, :]
            want[:, oy, ox, :] = window.sum(axis=(1, 2)) / (q.filter_h * q.filter_w)
    want = np.clip(want / out_scale + case.zp_out, -128, 127)
    assert np.abs(got - want).max() <= 1.0


def _replace_pool(**changes: Any) -> Any:
    return lambda p: dataclasses.replace(p, pool=dataclasses.replace(p.pool, **changes))


def _replace_dims(which: str, **changes: int) -> Any:
    return lambda p: dataclasses.replace(p, pool=dataclasses.replace(
        p.pool, **{which: dataclasses.replace(getattr(p.pool, which), **changes)}))


INVALID = {
    "filter_h_0": _replace_pool(filter_h=0),
    "stride_w_0": _replace_pool(stride_w=0),
    "pad_left_-1": _replace_pool(pad_left=-1),
    "input_c_0": _replace_dims("input", c=0),
    "output_c_ne_input_c": _replace_dims("output", c=4),
    "output_n_ne_input_n": _replace_dims("output", n=2),
    "output_h_0": _replace_dims("output", h=0),
    "act_min_gt_act_max": _replace_pool(act_min=3, act_max=2),
    "act_min_-129": _replace_pool(act_min=-129),
    "act_max_128": _replace_pool(act_max=128),
    "input_offset_129": lambda p: dataclasses.replace(p, input_offset=129),
    "input_offset_-128": lambda p: dataclasses.replace(p, input_offset=-128),
    "output_offset_128": lambda p: dataclasses.replace(p, output_offset=128),
    "output_offset_-129": lambda p: dataclasses.replace(p, output_offset=-129),
    "shift_-32": lambda p: dataclasses.replace(p, shift=-32),
    "shift_31": lambda p: dataclasses.replace(p, shift=31),
    # the last window starts below the input: only padding
    "window_in_bottom_padding": _replace_dims("output", h=4),
    # the first window ends before the input: only padding
    "window_in_left_padding": _replace_pool(pad_left=2),
    # 4096 * 2049 valid taps > 2^23: the int32 sum could overflow (rejected before reading input)
    "too_many_taps": lambda p: dataclasses.replace(p, pool=dataclasses.replace(
        p.pool, input=Dims(1, 4096, 2049, 3), filter_h=4096, filter_w=2049)),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, x = build(Case(), np.random.default_rng(0))  # 6x6x3, 2x2 stride 2 -> 3x3
    bad = INVALID[name](p)
    o = bad.pool.output
    shape = (max(o.n, 1), max(o.h, 1), max(o.w, 1), max(o.c, 1))
    status, out = call_status("mcu_avgpool_requant_s8", bad, [x], shape)
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_avgpool_requant_s8(bad, x)


def test_null_pointers() -> None:
    p, x = build(Case(), np.random.default_rng(0))
    o = p.pool.output
    args: list[Any] = [p, x, np.zeros((o.n, o.h, o.w, o.c), dtype=np.int8)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw("mcu_avgpool_requant_s8", *bad) == MCU_ERR_ARG


def test_c_struct_renders_nested_params(tmp_path: Path) -> None:
    """emitter/render/cfmt.c_struct renders the two-level nested struct as nested designated
    initializers that gcc accepts (-Wextra -Werror: no missing field) and that hold the values."""
    p, _ = build(CASES["non_square"], np.random.default_rng(0))
    assert AvgPoolRequantParams.CTYPE == "mcu_avgpool_requant_params_t"
    text = c_struct(p, {})
    assert "    .pool = {\n        .input = {.n = 1, .h = 7, .w = 10, .c = 4},\n" in text
    q = p.pool
    values = [q.input.n, q.input.h, q.input.w, q.input.c, q.output.n, q.output.h, q.output.w,
              q.output.c, q.filter_h, q.filter_w, q.stride_h, q.stride_w, q.pad_top, q.pad_left,
              q.act_min, q.act_max, p.input_offset, p.output_offset, p.multiplier, p.shift]
    src = tmp_path / "nested.c"
    src.write_text(
        "#include <stdio.h>\n#include \"mcu_nn.h\"\n"
        f"static const mcu_avgpool_requant_params_t params = {text};\n"
        "int main(void)\n{\n    const mcu_pool_params_t *q = &params.pool;\n"
        "    printf(\"%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld "
        "%ld %ld %ld %ld\\n\",\n"
        "           (long)q->input.n, (long)q->input.h, (long)q->input.w, (long)q->input.c,\n"
        "           (long)q->output.n, (long)q->output.h, (long)q->output.w, (long)q->output.c,\n"
        "           (long)q->filter_h, (long)q->filter_w, (long)q->stride_h, (long)q->stride_w,\n"
        "           (long)q->pad_top, (long)q->pad_left, (long)q->act_min, (long)q->act_max,\n"
        "           (long)params.input_offset, (long)params.output_offset,\n"
        "           (long)params.multiplier, (long)params.shift);\n"
        "    return 0;\n}\n")
    exe = tmp_path / "nested"
    cc = os.environ.get("CC", "gcc")
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}", "-o",
                    str(exe), str(src)], check=True, capture_output=True, text=True)
    res = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    assert [int(v) for v in res.stdout.split()] == values
