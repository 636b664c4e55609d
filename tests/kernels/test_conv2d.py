"""mcu_conv2d_s8: host C kernel == its C reference (mcu_conv2d_s8_ref.c) == numpy golden
(emitter/kernels/mcu_conv2d_s8.py), bit for bit; scratch exactly mcu_conv2d_s8_get_buffer_size()."""
from __future__ import annotations

import ctypes
import dataclasses
import time
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_conv2d_s8 import ConvParams, buffer_size, mcu_conv2d_s8
from tests.harness.ckernels import (
    MCU_ERR_ARG,
    MCU_ERR_SCRATCH,
    MCU_OK,
    call_kernel,
    call_raw,
    conv_out_size,
    realistic_multipliers,
    scratch_context,
    wide_multipliers,
)


class Case(NamedTuple):
    n: int = 1
    h: int = 6
    w: int = 6
    c_in: int = 3
    c_out: int = 4
    kh: int = 3
    kw: int = 3
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    zp_in: int = 0
    zp_out: int = 0
    act: tuple[int, int] = (-128, 127)
    bias: bool = True
    wide_shifts: bool = False


CASES = {
    "1x1": Case(h=5, w=5, kh=1, kw=1),
    "3x3_same": Case(h=8, w=8, c_in=4, c_out=6, pads=(1, 1, 1, 1)),
    "10x4_asym_pad": Case(h=12, w=9, c_in=2, c_out=3, kh=10, kw=4, pads=(4, 5, 1, 2)),
    "stride2": Case(h=9, w=7, stride=(2, 2), pads=(1, 1, 1, 1)),
    "stride_2x1_odd_pad": Case(h=8, w=7, stride=(2, 1), pads=(0, 1, 2, 0)),
    "dilation2": Case(h=10, w=10, dilation=(2, 2), pads=(2, 2, 2, 2)),
    "dilation_1x3": Case(h=7, w=11, dilation=(1, 3), stride=(1, 2)),
    "c_in1": Case(c_in=1, c_out=5, pads=(1, 1, 1, 1)),
    "c_out1": Case(c_in=7, c_out=1),
    "kernel_eq_input": Case(h=3, w=3, c_in=5, c_out=2),
    "zp_in_-128_zp_out_127": Case(zp_in=-128, zp_out=127, pads=(1, 1, 1, 1)),
    "zp_in_127_zp_out_-128": Case(zp_in=127, zp_out=-128, pads=(1, 1, 1, 1)),
    "wide_shifts": Case(c_out=16, wide_shifts=True, pads=(1, 1, 1, 1)),
    "relu": Case(zp_out=-20, act=(-20, 127)),
    "narrow_act": Case(act=(-10, 20)),
    "single_value_act": Case(act=(5, 5)),
    "no_bias": Case(bias=False, pads=(1, 1, 1, 1)),
    "batch2": Case(n=2, stride=(2, 2), pads=(1, 1, 1, 1)),
    "all_padding_rows": Case(h=2, w=2, kh=1, kw=1, pads=(3, 3, 3, 3)),
}


def build(case: Case, rng: np.random.Generator) -> tuple[ConvParams, list[Any]]:
    top, bottom, left, right = case.pads
    out_h = conv_out_size(case.h, case.kh, case.stride[0], case.dilation[0], top, bottom)
    out_w = conv_out_size(case.w, case.kw, case.stride[1], case.dilation[1], left, right)
    if case.wide_shifts:
        mult, shift = wide_multipliers(rng, case.c_out)
    else:
        mult, shift = realistic_multipliers(rng, case.c_out, case.kh * case.kw * case.c_in)
    p = ConvParams(
        input=Dims(case.n, case.h, case.w, case.c_in),
        filter=Dims(case.c_out, case.kh, case.kw, case.c_in),
        output=Dims(case.n, out_h, out_w, case.c_out),
        stride_h=case.stride[0], stride_w=case.stride[1],
        dilation_h=case.dilation[0], dilation_w=case.dilation[1],
        pad_top=top, pad_left=left,
        q=QuantIO(-case.zp_in, case.zp_out, *case.act),
        multiplier=mult, shift=shift)
    x = rng.integers(-128, 128, (case.n, case.h, case.w, case.c_in), dtype=np.int8)
    w = rng.integers(-128, 128, (case.c_out, case.kh, case.kw, case.c_in), dtype=np.int8)
    b = rng.integers(-(1 << 13), 1 << 13, case.c_out).astype(np.int32) if case.bias else None
    return p, [x, w, b]


def run_c(p: ConvParams, inputs: list[Any], scratch: int | None = None) -> tuple[int, np.ndarray]:
    """mcu_conv2d_s8 on the host (isa "c") with `scratch` bytes (default: what it needs)."""
    need = buffer_size(p, inputs[2], "c")
    ctx, keep = scratch_context(need if scratch is None else scratch)
    o = p.output
    out = np.full((o.n, o.h, o.w, o.c), 0x5A, dtype=np.int8)
    status = call_raw("mcu_conv2d_s8", ctypes.byref(ctx), p, *inputs, out)
    del keep
    return status, out


def check(p: ConvParams, inputs: list[Any]) -> np.ndarray:
    expected = mcu_conv2d_s8(p, *inputs)
    o = p.output
    status, got = run_c(p, inputs)
    assert status == MCU_OK
    np.testing.assert_array_equal(got, expected)
    ref = call_kernel("mcu_conv2d_s8_ref", p, inputs, (o.n, o.h, o.w, o.c))
    np.testing.assert_array_equal(ref, expected)
    need = buffer_size(p, inputs[2], "c")
    if need > 0:  # one byte less is refused, the output untouched
        status, got = run_c(p, inputs, need - 1)
        assert status == MCU_ERR_SCRATCH and (got == 0x5A).all()
    return expected


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    rng = np.random.default_rng(sum(map(ord, name)))
    check(*build(CASES[name], rng))


def test_extreme_values() -> None:
    """All inputs and weights at the int8 extremes, both zero-point extremes."""
    rng = np.random.default_rng(7)
    for zp_in, x_val, w_val in [(-128, 127, -128), (127, -128, -128), (-128, -128, 127)]:
        p, (x, w, b) = build(Case(zp_in=zp_in, pads=(1, 1, 1, 1)), rng)
        check(p, [np.full_like(x, x_val), np.full_like(w, w_val), b])


def test_golden_speed() -> None:
    rng = np.random.default_rng(3)
    p, inputs = build(Case(h=32, w=32, c_in=16, c_out=16, pads=(1, 1, 1, 1)), rng)
    start = time.perf_counter()
    mcu_conv2d_s8(p, *inputs)
    assert time.perf_counter() - start < 1.0
    check(p, inputs)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    return Case(
        n=draw(st.integers(1, 2)), h=draw(st.integers(1, 9)), w=draw(st.integers(1, 9)),
        c_in=draw(st.integers(1, 5)), c_out=draw(st.integers(1, 5)),
        kh=draw(st.integers(1, 4)), kw=draw(st.integers(1, 4)),
        stride=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        dilation=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        pads=tuple(draw(st.integers(0, 3)) for _ in range(4)),  # type: ignore[arg-type]
        zp_in=draw(st.integers(-128, 127)), zp_out=draw(st.integers(-128, 127)),
        act=tuple(sorted(draw(st.integers(-128, 127)) for _ in range(2))),  # type: ignore[arg-type]
        bias=draw(st.booleans()), wide_shifts=draw(st.booleans()))


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    check(*build(case, np.random.default_rng(seed)))


INVALID = {
    "stride_h_0": lambda p: dataclasses.replace(p, stride_h=0),
    "stride_w_-1": lambda p: dataclasses.replace(p, stride_w=-1),
    "dilation_h_0": lambda p: dataclasses.replace(p, dilation_h=0),
    "dilation_w_0": lambda p: dataclasses.replace(p, dilation_w=0),
    "pad_top_-1": lambda p: dataclasses.replace(p, pad_top=-1),
    "input_h_0": lambda p: dataclasses.replace(p, input=dataclasses.replace(p.input, h=0)),
    "output_w_0": lambda p: dataclasses.replace(p, output=dataclasses.replace(p.output, w=0)),
    "filter_c_ne_input_c": lambda p: dataclasses.replace(
        p, filter=dataclasses.replace(p.filter, c=p.input.c + 1)),
    "filter_n_ne_output_c": lambda p: dataclasses.replace(
        p, filter=dataclasses.replace(p.filter, n=p.output.c - 1)),
    "output_n_ne_input_n": lambda p: dataclasses.replace(
        p, output=dataclasses.replace(p.output, n=2)),
    "act_min_gt_act_max": lambda p: dataclasses.replace(p, q=QuantIO(0, 0, 10, 9)),
    "act_max_128": lambda p: dataclasses.replace(p, q=QuantIO(0, 0, -128, 128)),
    "input_offset_129": lambda p: dataclasses.replace(p, q=QuantIO(129, 0, -128, 127)),
    "shift_31": lambda p: dataclasses.replace(
        p, shift=np.where(np.arange(p.output.c) == 1, 31, p.shift).astype(np.int32)),
    "shift_-32": lambda p: dataclasses.replace(
        p, shift=np.full(p.output.c, -32, dtype=np.int32)),
    "null_multiplier": lambda p: dataclasses.replace(p, multiplier=None),
    "null_shift": lambda p: dataclasses.replace(p, shift=None),
}


@pytest.mark.parametrize("name", [*INVALID, "null_params", "null_input", "null_filter",
                                  "null_output"])
def test_invalid_params(name: str) -> None:
    p, (x, w, b) = build(Case(), np.random.default_rng(0))
    out = np.full((p.output.n, p.output.h, p.output.w, p.output.c), 0x5A, dtype=np.int8)
    ctx, keep = scratch_context(buffer_size(p, b, "c"))
    args: dict[str, Any] = {"ctx": ctypes.byref(ctx), "params": p, "input": x, "filter": w, "bias": b,
                            "output": out}
    if name in INVALID:
        args["params"] = INVALID[name](p)
    else:
        args[name.removeprefix("null_")] = None
    assert call_raw("mcu_conv2d_s8", *args.values()) == MCU_ERR_ARG
    assert (out == 0x5A).all(), "output written despite invalid params"
    del keep
