"""mcu_depthwise_conv2d_s8: host C kernel == its C reference (_ref.c) == numpy golden
(emitter/kernels/mcu_depthwise_conv2d_s8.py). The host runs the generic path (the DSP/MVE paths and every
C fallback run in QEMU: test_depthwise_conv2d_qemu.py); the path and scratch queries are tested in
test_depthwise_conv2d_dispatch.py."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams, mcu_depthwise_conv2d_s8
from tests.harness.ckernels import (
    MCU_ERR_ARG,
    MCU_OK,
    call_raw,
    conv_out_size,
    realistic_multipliers,
    wide_multipliers,
)


class Case(NamedTuple):
    n: int = 1
    h: int = 6
    w: int = 6
    c_in: int = 3
    depth_multiplier: int = 1
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
    "1x1": Case(kh=1, kw=1),
    "3x3_same": Case(h=8, w=8, c_in=8, pads=(1, 1, 1, 1)),
    "dm2": Case(depth_multiplier=2, pads=(1, 1, 1, 1)),
    "dm8_c_in1": Case(c_in=1, depth_multiplier=8, pads=(1, 1, 1, 1)),
    "dm8_c_in3": Case(c_in=3, depth_multiplier=8),
    "c_in1_dm1": Case(c_in=1),
    "10x4_asym_pad": Case(h=12, w=9, c_in=2, kh=10, kw=4, pads=(4, 5, 1, 2)),
    "stride2": Case(h=9, w=7, stride=(2, 2), pads=(1, 1, 1, 1)),
    "stride_1x2": Case(h=7, w=9, stride=(1, 2), pads=(0, 0, 1, 1)),
    "dilation2": Case(h=10, w=10, dilation=(2, 2), pads=(2, 2, 2, 2)),
    "dilation_3x1_dm2": Case(h=11, w=7, dilation=(3, 1), depth_multiplier=2),
    "zp_in_-128_zp_out_127": Case(zp_in=-128, zp_out=127, pads=(1, 1, 1, 1)),
    "zp_in_127_zp_out_-128": Case(zp_in=127, zp_out=-128, pads=(1, 1, 1, 1)),
    "wide_shifts": Case(c_in=4, depth_multiplier=4, wide_shifts=True, pads=(1, 1, 1, 1)),
    "relu6_like": Case(zp_out=-128, act=(-128, 30)),
    "narrow_act": Case(act=(-10, 20)),
    "no_bias": Case(bias=False, pads=(1, 1, 1, 1)),
    "batch2": Case(n=2, depth_multiplier=2, stride=(2, 2), pads=(1, 1, 1, 1)),
    "all_padding_rows": Case(h=2, w=2, kh=1, kw=1, pads=(3, 3, 3, 3)),
}


def build(case: Case, rng: np.random.Generator) -> tuple[DepthwiseConvParams, list[Any]]:
    top, bottom, left, right = case.pads
    c_out = case.c_in * case.depth_multiplier
    out_h = conv_out_size(case.h, case.kh, case.stride[0], case.dilation[0], top, bottom)
    out_w = conv_out_size(case.w, case.kw, case.stride[1], case.dilation[1], left, right)
    if case.wide_shifts:
        mult, shift = wide_multipliers(rng, c_out)
    else:
        mult, shift = realistic_multipliers(rng, c_out, case.kh * case.kw)
    p = DepthwiseConvParams(
        input=Dims(case.n, case.h, case.w, case.c_in),
        filter=Dims(1, case.kh, case.kw, c_out),
        output=Dims(case.n, out_h, out_w, c_out),
        depth_multiplier=case.depth_multiplier,
        stride_h=case.stride[0], stride_w=case.stride[1],
        dilation_h=case.dilation[0], dilation_w=case.dilation[1],
        pad_top=top, pad_left=left,
        q=QuantIO(-case.zp_in, case.zp_out, *case.act),
        multiplier=mult, shift=shift)
    x = rng.integers(-128, 128, (case.n, case.h, case.w, case.c_in), dtype=np.int8)
    w = rng.integers(-128, 128, (1, case.kh, case.kw, c_out), dtype=np.int8)
    b = rng.integers(-(1 << 13), 1 << 13, c_out).astype(np.int32) if case.bias else None
    return p, [x, w, b]


def run_c(name: str, p: DepthwiseConvParams, inputs: list[Any], *ctx: Any) -> np.ndarray:
    """C `name`([ctx, ]&p, *inputs, out); asserts MCU_OK. The output starts as 0x5A bytes."""
    o = p.output
    out = np.full((o.n, o.h, o.w, o.c), 0x5A, dtype=np.int8)
    status = call_raw(name, *ctx, p, *inputs, out)
    assert status == MCU_OK, f"{name} returned {status}"
    return out


def check(p: DepthwiseConvParams, inputs: list[Any]) -> None:
    """kernel (no scratch on the host: ctx NULL) == reference == golden"""
    expected = mcu_depthwise_conv2d_s8(p, *inputs)
    np.testing.assert_array_equal(run_c("mcu_depthwise_conv2d_s8", p, inputs, None), expected)
    np.testing.assert_array_equal(run_c("mcu_depthwise_conv2d_s8_ref", p, inputs), expected)


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    rng = np.random.default_rng(sum(map(ord, name)))
    check(*build(CASES[name], rng))


def test_channel_mapping() -> None:
    """Output channel oc reads input channel oc // depth_multiplier: with a 1x1 identity filter
    and multiplier 1.0 (>> 0) the output repeats each input channel depth_multiplier times."""
    x = np.arange(-6, 6, dtype=np.int8).reshape(1, 2, 2, 3)
    p = DepthwiseConvParams(
        input=Dims(1, 2, 2, 3), filter=Dims(1, 1, 1, 6), output=Dims(1, 2, 2, 6),
        depth_multiplier=2, stride_h=1, stride_w=1, dilation_h=1, dilation_w=1, pad_top=0,
        pad_left=0, q=QuantIO(0, 0, -128, 127),
        multiplier=np.full(6, 1 << 30, dtype=np.int32), shift=np.full(6, 1, dtype=np.int32))
    inputs: list[Any] = [x, np.ones((1, 1, 1, 6), dtype=np.int8), None]
    np.testing.assert_array_equal(mcu_depthwise_conv2d_s8(p, *inputs), np.repeat(x, 2, axis=3))
    check(p, inputs)


def test_extreme_values() -> None:
    rng = np.random.default_rng(11)
    for zp_in, x_val, w_val in [(-128, 127, -128), (127, -128, -128), (-128, -128, 127)]:
        p, (x, w, b) = build(Case(zp_in=zp_in, depth_multiplier=2, pads=(1, 1, 1, 1)), rng)
        check(p, [np.full_like(x, x_val), np.full_like(w, w_val), b])


@st.composite
def cases(draw: st.DrawFn) -> Case:
    return Case(
        n=draw(st.integers(1, 2)), h=draw(st.integers(1, 9)), w=draw(st.integers(1, 9)),
        c_in=draw(st.integers(1, 5)), depth_multiplier=draw(st.sampled_from([1, 2, 3, 8])),
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


def _dims(p: DepthwiseConvParams, which: str, **kw: int) -> DepthwiseConvParams:
    return dataclasses.replace(p, **{which: dataclasses.replace(getattr(p, which), **kw)})


INVALID = {
    "stride_h_0": lambda p: dataclasses.replace(p, stride_h=0),
    "stride_w_0": lambda p: dataclasses.replace(p, stride_w=0),
    "dilation_h_-1": lambda p: dataclasses.replace(p, dilation_h=-1),
    "dilation_w_0": lambda p: dataclasses.replace(p, dilation_w=0),
    "pad_left_-1": lambda p: dataclasses.replace(p, pad_left=-1),
    "depth_multiplier_0": lambda p: dataclasses.replace(p, depth_multiplier=0),
    "output_c_ne_c_in_x_dm": lambda p: dataclasses.replace(p, depth_multiplier=3),
    "filter_c_ne_output_c": lambda p: _dims(p, "filter", c=p.output.c + 1),
    "filter_n_2": lambda p: _dims(p, "filter", n=2),
    "input_w_0": lambda p: _dims(p, "input", w=0),
    "output_h_-1": lambda p: _dims(p, "output", h=-1),
    "output_n_ne_input_n": lambda p: _dims(p, "output", n=2),
    "act_min_gt_act_max": lambda p: dataclasses.replace(p, q=QuantIO(0, 0, 1, 0)),
    "act_min_-129": lambda p: dataclasses.replace(p, q=QuantIO(0, 0, -129, 127)),
    "output_offset_128": lambda p: dataclasses.replace(p, q=QuantIO(0, 128, -128, 127)),
    "shift_31": lambda p: dataclasses.replace(p, shift=np.full(p.output.c, 31, dtype=np.int32)),
    "null_multiplier": lambda p: dataclasses.replace(p, multiplier=None),
    "null_shift": lambda p: dataclasses.replace(p, shift=None),
}


@pytest.mark.parametrize("name", [*INVALID, "null_params", "null_input", "null_filter",
                                  "null_output"])
def test_invalid_params(name: str) -> None:
    p, (x, w, b) = build(Case(depth_multiplier=2), np.random.default_rng(0))
    out = np.full((p.output.n, p.output.h, p.output.w, p.output.c), 0x5A, dtype=np.int8)
    args: dict[str, Any] = {"ctx": None, "params": p, "input": x, "filter": w, "bias": b, "output": out}
    if name in INVALID:
        args["params"] = INVALID[name](p)
    else:
        args[name.removeprefix("null_")] = None
    assert call_raw("mcu_depthwise_conv2d_s8", *args.values()) == MCU_ERR_ARG
    assert (out == 0x5A).all(), "output written despite invalid params"
