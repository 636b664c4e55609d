"""mcu_transpose_conv_s8: host C kernel == numpy golden (emitter/kernels/mcu_transpose_conv_s8.py)
bit for bit over random geometries (strides, dilations, negative and positive crops, odd sizes,
both roundings); the golden's accumulator == onnx.reference's float ConvTranspose of the offset
integers (exact in float64); invalid parameters -> MCU_ERR_ARG with the output untouched."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_transpose_conv_s8 import TransposeConvParams, mcu_transpose_conv_s8
from emitter.quant import ROUND_NEAREST_EVEN, ROUND_TFLITE
from tests.harness.ckernels import MCU_ERR_ARG, call_status, realistic_multipliers


def make(rng: np.random.Generator, n: int, h: int, w: int, cin: int, cout: int, kh: int, kw: int,
         s: tuple[int, int], d: tuple[int, int], pads: tuple[int, int, int, int], rounding: int,
         act: tuple[int, int] = (-128, 127)) -> TransposeConvParams:
    oh = s[0] * (h - 1) + (kh - 1) * d[0] + 1 - pads[0] - pads[2]
    ow = s[1] * (w - 1) + (kw - 1) * d[1] + 1 - pads[1] - pads[3]
    mult, shift = realistic_multipliers(rng, cout, max(1, kh * kw * cin // (s[0] * s[1])))
    q = QuantIO(int(rng.integers(-127, 129)), int(rng.integers(-128, 128)), act[0], act[1], rounding)
    return TransposeConvParams(Dims(n, h, w, cin), Dims(cout, kh, kw, cin), Dims(n, oh, ow, cout),
                               s[0], s[1], d[0], d[1], pads[0], pads[1], q, mult, shift)


def operands(p: TransposeConvParams, seed: int, bias: bool = True):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (p.input.n, p.input.h, p.input.w, p.input.c), dtype=np.int8)
    f = rng.integers(-127, 128, (p.filter.n, p.filter.h, p.filter.w, p.filter.c), dtype=np.int8)
    b = rng.integers(-5000, 5000, p.output.c).astype(np.int32) if bias else None
    return x, f, b


def check(p: TransposeConvParams, seed: int, bias: bool = True) -> np.ndarray:
    x, f, b = operands(p, seed, bias)
    want = mcu_transpose_conv_s8(p, x, f, b)
    status, got = call_status("mcu_transpose_conv_s8", p, [x, f, b], want.shape)
    assert status == 0
    np.testing.assert_array_equal(got, want)
    return want


def onnx_accumulator(p: TransposeConvParams, x: np.ndarray, f: np.ndarray, pads_end: tuple[int, int]) -> np.ndarray:
    """onnx.reference's ConvTranspose of the offset input (float64 holds every sum exactly), NHWC."""
    xf = (x.astype(np.float64) + p.q.input_offset).transpose(0, 3, 1, 2)
    wf = f.astype(np.float64).transpose(3, 0, 1, 2)  # OHWI -> [C_in, C_out, kH, kW]
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[p.stride_h, p.stride_w],
                            dilations=[p.dilation_h, p.dilation_w],
                            pads=[p.pad_top, p.pad_left, pads_end[0], pads_end[1]])
    g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, None),
                                        helper.make_tensor_value_info("w", TensorProto.DOUBLE, None)],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    (y,) = ReferenceEvaluator(model).run(None, {"x": xf, "w": wf})
    return np.asarray(y).transpose(0, 2, 3, 1)


CASES = {  # n, h, w, cin, cout, kh, kw, stride, dilation, pads (top, left, bottom, right)
    "k3_s2_p1": (1, 5, 5, 4, 6, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    "k4_s2_p1_dcgan": (1, 4, 3, 8, 5, (4, 4), (2, 2), (1, 1), (1, 1, 1, 1)),
    "k2_s2_p0": (1, 3, 4, 3, 4, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0)),
    "k3_s1_p1_same": (2, 4, 4, 5, 3, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    "k3_s3_dil2": (1, 3, 2, 2, 3, (3, 3), (3, 3), (2, 2), (0, 1, 2, 0)),
    "crop_beyond_kernel": (1, 6, 6, 3, 2, (2, 2), (2, 2), (1, 1), (3, 2, 3, 1)),
    "negative_pads": (1, 3, 3, 2, 3, (3, 2), (2, 1), (1, 1), (-1, 0, -2, -1)),
    "stride_gt_kernel": (1, 3, 3, 4, 4, (2, 2), (3, 3), (1, 1), (0, 0, -1, 0)),
    "one_by_n": (1, 1, 7, 16, 8, (1, 3), (1, 2), (1, 1), (0, 1, 0, 0)),
}


@pytest.mark.parametrize("rounding", [ROUND_TFLITE, ROUND_NEAREST_EVEN])
@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str, rounding: int) -> None:
    n, h, w, cin, cout, (kh, kw), s, d, pads = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)) + rounding)
    p = make(rng, n, h, w, cin, cout, kh, kw, s, d, pads, rounding)
    check(p, 1)
    check(p, 2, bias=False)


def test_accumulator_equals_onnx_reference() -> None:
    """The golden's sums are ONNX ConvTranspose's: with multiplier 2^30, shift 1 (x 1) and no clamp
    inside int8, out = acc + output_offset wherever it fits int8."""
    for name, (n, h, w, cin, cout, (kh, kw), s, d, pads) in CASES.items():
        rng = np.random.default_rng(7)
        p = make(rng, n, h, w, cin, cout, kh, kw, s, d, pads, ROUND_TFLITE)
        p = dataclasses.replace(p, multiplier=np.full(cout, 1 << 30, np.int32), shift=np.ones(cout, np.int32),
                                q=dataclasses.replace(p.q, output_offset=0))
        x, f, _ = operands(p, 3)
        x = (x // 16).astype(np.int8)  # small values: most sums stay inside int8
        f = (f // 16).astype(np.int8)
        p = dataclasses.replace(p, q=dataclasses.replace(p.q, input_offset=1))
        acc = onnx_accumulator(p, x, f, (pads[2], pads[3]))
        got = mcu_transpose_conv_s8(p, x, f, None).astype(np.float64)
        inside = np.abs(acc) <= 127
        assert inside.mean() > 0.3, name
        np.testing.assert_array_equal(got[inside], acc[inside], err_msg=name)


@st.composite
def geometries(draw: st.DrawFn) -> tuple[TransposeConvParams, int]:
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    h, w = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    full_h, full_w = s[0] * (h - 1) + (kh - 1) * d[0] + 1, s[1] * (w - 1) + (kw - 1) * d[1] + 1
    top, left = draw(st.integers(-2, full_h - 1)), draw(st.integers(-2, full_w - 1))
    bottom = draw(st.integers(-2, full_h - 1 - top))
    right = draw(st.integers(-2, full_w - 1 - left))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    p = make(rng, draw(st.integers(1, 2)), h, w, draw(st.integers(1, 9)), draw(st.integers(1, 7)), kh, kw, s, d,
             (top, left, bottom, right), draw(st.sampled_from([ROUND_TFLITE, ROUND_NEAREST_EVEN])))
    return p, seed


@settings(max_examples=150, deadline=None)
@given(case=geometries())
def test_property_golden_equals_c(case: tuple[TransposeConvParams, int]) -> None:
    p, seed = case
    check(p, seed)


INVALID = {
    "stride_0": lambda p: dataclasses.replace(p, stride_w=0),
    "dilation_0": lambda p: dataclasses.replace(p, dilation_h=0),
    "filter_c": lambda p: dataclasses.replace(p, filter=dataclasses.replace(p.filter, c=p.filter.c + 1)),
    "output_c": lambda p: dataclasses.replace(p, output=dataclasses.replace(p.output, c=p.output.c + 1)),
    "output_h_0": lambda p: dataclasses.replace(p, output=dataclasses.replace(p.output, h=0)),
    "input_offset": lambda p: dataclasses.replace(p, q=dataclasses.replace(p.q, input_offset=129)),
    "clamp": lambda p: dataclasses.replace(p, q=dataclasses.replace(p.q, act_min=5, act_max=4)),
    "shift": lambda p: dataclasses.replace(p, shift=np.full(p.output.c, 31, np.int32)),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_parameters(name: str) -> None:
    rng = np.random.default_rng(0)
    good = make(rng, 1, 3, 3, 2, 3, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1), ROUND_TFLITE)
    bad = INVALID[name](good)
    x, f, b = operands(good, 0)
    out_shape = (good.output.n, good.output.h, good.output.w, good.output.c)
    with pytest.raises(ValueError):
        mcu_transpose_conv_s8(bad, x, f, b)
    status, out = call_status("mcu_transpose_conv_s8", bad, [x, f, b], out_shape)
    assert status == MCU_ERR_ARG
    assert np.all(out.view(np.uint8) == 0x5A), "the output was written despite MCU_ERR_ARG"
