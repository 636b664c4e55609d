"""mcu_resize_nearest_s8 / mcu_resize_bilinear_s8: host C kernels == numpy goldens
(emitter/kernels/mcu_resize_*_s8.py), bit for bit; nearest_indices == onnx.reference's Resize (nearest) for
every coordinate / nearest mode, and == onnxruntime for exactly representable scales
(tf_half_pixel_for_nn, gone from the reference, at opset 11); bilinear golden within 1 quantum
of onnx.reference's float Resize (linear) of the dequantized input; tflite_bilinear_tables ==
TFLite's ResizeBilinearInteger; invalid parameters -> MCU_ERR_ARG with the output untouched."""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from emitter.kernels.common import Dims
from emitter.kernels.mcu_resize_bilinear_s8 import ResizeBilinearParams, mcu_resize_bilinear_s8
from emitter.kernels.mcu_resize_nearest_s8 import ResizeNearestParams, mcu_resize_nearest_s8
from emitter.ops.resize import (
    LINEAR_COORD_MODES,
    NEAREST_MODES,
    bilinear_tables,
    nearest_indices,
    resize_bilinear_params,
    resize_nearest_params,
    source_coords,
    tflite_bilinear_tables,
)
from emitter.quant import round_half_away
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status

REFERENCE_COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")


# ---------------------------------------------------------------------------------------------
# ONNX Resize on NCHW float/int data

def onnx_resize(x: np.ndarray, mode: str, ctm: str, nearest_mode: str | None = None,
                scales: list[float] | None = None, sizes: list[int] | None = None,
                runtime: str = "reference", opset: int = 19) -> np.ndarray:
    attrs: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": ctm}
    if nearest_mode is not None:
        attrs["nearest_mode"] = nearest_mode
    elem = TensorProto.FLOAT if x.dtype == np.float32 else TensorProto.INT8
    inits = [helper.make_tensor("roi", TensorProto.FLOAT, [0], [])]
    if scales is not None:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [4], scales))
        names = ["x", "roi", "scales"]
    else:
        assert sizes is not None
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [4], sizes))
        names = ["x", "roi", "", "sizes"]
    node = helper.make_node("Resize", names, ["y"], **attrs)
    graph = helper.make_graph([node], "resize",
                              [helper.make_tensor_value_info("x", elem, list(x.shape))],
                              [helper.make_tensor_value_info("y", elem, [None] * 4)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    if runtime == "reference":
        outs: Any = ReferenceEvaluator(model).run(None, {"x": x})
        return np.asarray(outs[0])
    model.ir_version = 7
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


class Axis(NamedTuple):
    """One resized axis: the scale the node gives (None: the node gives sizes)."""
    in_size: int
    out_size: int
    scale: float


def axis_from_scale(in_size: int, scale: float) -> Axis:
    s = float(np.float32(scale))
    return Axis(in_size, int(np.float32(s) * np.int64(in_size)), s)  # reference: astype(int)


def axis_from_size(in_size: int, out_size: int) -> Axis:
    return Axis(in_size, out_size, out_size / in_size)


def onnx_indices(ay: Axis, ax: Axis, by_scale: bool, ctm: str, nearest_mode: str,
                 runtime: str = "reference", opset: int = 19) -> tuple[np.ndarray, np.ndarray]:
    """Source rows/columns ONNX Resize (nearest) picks, decoded from x[h, w] = 1000h + w."""
    grid = 1000 * np.arange(ay.in_size)[:, None] + np.arange(ax.in_size)[None, :]
    x = grid.astype(np.float32)[None, None]
    kw: dict[str, Any] = ({"scales": [1.0, 1.0, ay.scale, ax.scale]} if by_scale
                          else {"sizes": [1, 1, ay.out_size, ax.out_size]})
    y = onnx_resize(x, "nearest", ctm, nearest_mode, runtime=runtime, opset=opset, **kw)[0, 0]
    assert y.shape == (ay.out_size, ax.out_size)
    return (y[:, 0] // 1000).astype(np.int64), (y[0, :] % 1000).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# nearest

def check_nearest(p: ResizeNearestParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_resize_nearest_s8(p, x)
    got = call_kernel("mcu_resize_nearest_s8", p, [x], expected.shape)
    np.testing.assert_array_equal(got, expected)
    return expected


NEAREST_CASES = {
    "up2_half_pixel": (Dims(1, 4, 5, 3), 8, 10, 2.0, 2.0, "half_pixel", "round_prefer_floor"),
    "up2_asymmetric_floor": (Dims(1, 4, 5, 3), 8, 10, 2.0, 2.0, "asymmetric", "floor"),
    "up3_align_corners": (Dims(2, 3, 3, 2), 9, 9, 3.0, 3.0, "align_corners", "round_prefer_ceil"),
    "down_half_pixel": (Dims(1, 9, 7, 4), 4, 3, 4 / 9, 3 / 7, "half_pixel", "round_prefer_floor"),
    "odd_pytorch": (Dims(1, 5, 3, 1), 7, 1, 7 / 5, 1 / 3, "pytorch_half_pixel", "ceil"),
    "tf_nn": (Dims(1, 3, 4, 5), 5, 6, 5 / 3, 1.5, "tf_half_pixel_for_nn", "round_prefer_floor"),
    "identity": (Dims(1, 3, 4, 8), 3, 4, 1.0, 1.0, "half_pixel", "floor"),
    "one_pixel": (Dims(1, 1, 1, 16), 4, 3, 4.0, 3.0, "asymmetric", "round_prefer_floor"),
    "to_one_pixel": (Dims(1, 6, 5, 3), 1, 1, 1 / 6, 1 / 5, "align_corners", "round_prefer_floor"),
}


@pytest.mark.parametrize("name", list(NEAREST_CASES))
def test_nearest_case_table(name: str) -> None:
    dims, oh, ow, sh, sw, ctm, nm = NEAREST_CASES[name]
    p = resize_nearest_params(dims, oh, ow, sh, sw, ctm, nm)
    x = np.random.default_rng(sum(map(ord, name))).integers(
        -128, 128, (dims.n, dims.h, dims.w, dims.c), dtype=np.int8)
    got = check_nearest(p, x)
    if ctm != "tf_half_pixel_for_nn":  # the whole tensor == onnx.reference on int8 NCHW data
        want = onnx_resize(x.transpose(0, 3, 1, 2).copy(), "nearest", ctm, nm,
                           sizes=[dims.n, dims.c, oh, ow])
        np.testing.assert_array_equal(got, want.transpose(0, 2, 3, 1))


@st.composite
def axis_pairs(draw: st.DrawFn) -> tuple[Axis, Axis, bool]:
    by_scale = draw(st.booleans())
    axes = []
    for _ in range(2):
        n = draw(st.integers(1, 9))
        if by_scale:
            scale = draw(st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 0.3, 0.7, 1.3, 2.6]))
            a = axis_from_scale(n, scale)
            if a.out_size < 1:
                a = axis_from_scale(n, 1.0)
        else:
            a = axis_from_size(n, draw(st.integers(1, 20)))
        axes.append(a)
    return axes[0], axes[1], by_scale


@settings(max_examples=200, deadline=None)
@given(case=axis_pairs(), ctm=st.sampled_from(REFERENCE_COORD_MODES),
       nearest_mode=st.sampled_from(NEAREST_MODES))
def test_property_nearest_indices_match_onnx_reference(case: tuple[Axis, Axis, bool], ctm: str,
                                                       nearest_mode: str) -> None:
    ay, ax, by_scale = case
    want_y, want_x = onnx_indices(ay, ax, by_scale, ctm, nearest_mode)
    assert_reference_indices(ay, ctm, nearest_mode, want_y)
    assert_reference_indices(ax, ctm, nearest_mode, want_x)


def assert_reference_indices(a: Axis, ctm: str, nearest_mode: str, want: np.ndarray) -> None:
    """nearest_indices == onnx.reference, except where the reference's neighbour search rounds:
    it looks for neighbours around x + 1 (edge padding) in float64, so an x within an ulp above an
    integer k (x + 1 == k + 1 exactly) gets the neighbours k - 1, k instead of k, k + 1, while the
    coefficients, taken from x itself, still choose between "floor" and "ceil": the reference's
    pick is one below the spec's there (k - 1 for a floor choice, k for a ceil choice)."""
    got = nearest_indices(*a, ctm, nearest_mode)
    x = source_coords(*a, ctm)
    artefact = (x != np.floor(x)) & (x + 1.0 == np.floor(x + 1.0))
    ok = (got == want) | (artefact & (want == np.maximum(got - 1, 0)))
    assert ok.all(), f"{a} {ctm} {nearest_mode}: got {got}, onnx.reference {want}"


@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.parametrize("ctm", REFERENCE_COORD_MODES + ("tf_half_pixel_for_nn",))
def test_nearest_indices_match_onnxruntime_exact_scales(ctm: str, nearest_mode: str) -> None:
    """onnxruntime too, for scales that float32 holds exactly (k, 1/k, 1.5, 2.5), given as scales
    or as sizes. onnxruntime computes coordinates in float32, so for other scales it can pick the
    other neighbour where x_original lies within float32 noise of a rounding tie or an integer.
    tf_half_pixel_for_nn: opset 11 (dropped from the spec at 13), scales only."""
    opset = 11 if ctm == "tf_half_pixel_for_nn" else 19
    for in_size in range(1, 9):
        for k in (2.0, 3.0, 4.0, 0.5, 0.25, 1.5, 2.5):
            out_size = int(in_size * k)
            if out_size < 1 or out_size != in_size * k:
                continue
            for by_scale in (True, False) if opset > 11 else (True,):
                a = axis_from_scale(in_size, k) if by_scale else axis_from_size(in_size, out_size)
                want, _ = onnx_indices(a, a, by_scale, ctm, nearest_mode, runtime="onnxruntime",
                                       opset=opset)
                np.testing.assert_array_equal(nearest_indices(*a, ctm, nearest_mode), want,
                                              err_msg=f"{a} by_scale={by_scale}")


@settings(max_examples=150, deadline=None)
@given(case=axis_pairs(), ctm=st.sampled_from(REFERENCE_COORD_MODES + ("tf_half_pixel_for_nn",)),
       nearest_mode=st.sampled_from(NEAREST_MODES), n=st.integers(1, 2), c=st.integers(1, 6),
       seed=st.integers(0, 2**32 - 1))
def test_property_nearest_golden_equals_c(case: tuple[Axis, Axis, bool], ctm: str,
                                          nearest_mode: str, n: int, c: int, seed: int) -> None:
    ay, ax, _ = case
    dims = Dims(n, ay.in_size, ax.in_size, c)
    p = resize_nearest_params(dims, ay.out_size, ax.out_size, ay.scale, ax.scale, ctm, nearest_mode)
    check_nearest(p, np.random.default_rng(seed).integers(-128, 128, (n, dims.h, dims.w, c),
                                                          dtype=np.int8))


# ---------------------------------------------------------------------------------------------
# bilinear

def check_bilinear(p: ResizeBilinearParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_resize_bilinear_s8(p, x)
    got = call_kernel("mcu_resize_bilinear_s8", p, [x], expected.shape)
    np.testing.assert_array_equal(got, expected)
    return expected


def float_bilinear(x: np.ndarray, s: float, zp: int, ay: Axis, ax: Axis, by_scale: bool,
                   ctm: str) -> np.ndarray:
    """onnx.reference's float Resize (linear) of the dequantized NHWC input, requantized with the
    same scale and zero point (ties away from zero), NHWC."""
    s32 = np.float32(s)
    real = (s32 * (x.astype(np.float32) - np.float32(zp))).transpose(0, 3, 1, 2).copy()
    n, _, _, c = x.shape
    kw: dict[str, Any] = ({"scales": [1.0, 1.0, ay.scale, ax.scale]} if by_scale
                          else {"sizes": [n, c, ay.out_size, ax.out_size]})
    y = onnx_resize(real, "linear", ctm, **kw).transpose(0, 2, 3, 1)
    q = np.vectorize(round_half_away)(y.astype(np.float64) / float(s32)) + zp
    return np.clip(q, -128, 127)


def reference_ok(a: Axis, ctm: str) -> np.ndarray:
    """Output positions of one axis where onnx.reference's linear Resize is trustworthy: not where
    x_original lies within an ulp above an integer k (x + 1 == k + 1 in float64), where the
    reference's neighbour search (around x + 1, edge padding) returns k - 1, k and puts the weight
    1 - r ~ 1 on k - 1, a whole pixel off (see assert_reference_indices)."""
    x = source_coords(*a, ctm)
    return ~((x != np.floor(x)) & (x + 1.0 == np.floor(x + 1.0)))


def assert_near_reference(got: np.ndarray, want: np.ndarray, ay: Axis, ax: Axis, ctm: str) -> None:
    rows, cols = reference_ok(ay, ctm), reference_ok(ax, ctm)
    diff = np.abs(got.astype(np.int64) - want)[:, rows][:, :, cols]
    assert diff.size == 0 or diff.max() <= 1, f"golden vs onnx.reference: {diff.max()} quanta"


BILINEAR_CASES = {
    "up2_half_pixel": (Dims(1, 4, 5, 3), 8, 10, 2.0, 2.0, "half_pixel"),
    "up2_align_corners": (Dims(1, 4, 5, 3), 8, 10, 2.0, 2.0, "align_corners"),
    "up_odd_asymmetric": (Dims(2, 3, 4, 2), 7, 9, 7 / 3, 9 / 4, "asymmetric"),
    "down_half_pixel": (Dims(1, 9, 8, 4), 4, 3, 4 / 9, 3 / 8, "half_pixel"),
    "pytorch_to_one_row": (Dims(1, 5, 6, 3), 1, 9, 1 / 5, 1.5, "pytorch_half_pixel"),
    "from_one_pixel": (Dims(1, 1, 1, 8), 3, 5, 3.0, 5.0, "half_pixel"),
    "identity": (Dims(1, 3, 4, 8), 3, 4, 1.0, 1.0, "align_corners"),
    "wide_channels": (Dims(1, 2, 3, 40), 5, 4, 2.5, 4 / 3, "half_pixel"),
}


@pytest.mark.parametrize("name", list(BILINEAR_CASES))
def test_bilinear_case_table(name: str) -> None:
    dims, oh, ow, sh, sw, ctm = BILINEAR_CASES[name]
    p = resize_bilinear_params(dims, oh, ow, sh, sw, ctm)
    x = np.random.default_rng(sum(map(ord, name))).integers(
        -128, 128, (dims.n, dims.h, dims.w, dims.c), dtype=np.int8)
    got = check_bilinear(p, x)
    ay, ax = axis_from_size(dims.h, oh), axis_from_size(dims.w, ow)
    assert_near_reference(got, float_bilinear(x, 0.05, 3, ay, ax, False, ctm), ay, ax, ctm)


def test_bilinear_extremes() -> None:
    """All -128 / all 127 / a checkerboard of both: the accumulator bounds and the rounding of
    negative sums."""
    dims = Dims(1, 4, 4, 2)
    p = resize_bilinear_params(dims, 7, 9, 7 / 4, 9 / 4, "half_pixel")
    for x in (np.full((1, 4, 4, 2), -128, np.int8), np.full((1, 4, 4, 2), 127, np.int8),
              np.where((np.indices((1, 4, 4, 2)).sum(0) % 2) == 0, -128, 127).astype(np.int8)):
        got = check_bilinear(p, x)
        if (x == x.flat[0]).all():
            assert (got == x.flat[0]).all()


@settings(max_examples=150, deadline=None)
@given(case=axis_pairs(), ctm=st.sampled_from(LINEAR_COORD_MODES), n=st.integers(1, 2),
       c=st.integers(1, 5), s=st.floats(1e-3, 1.0), zp=st.integers(-128, 127),
       seed=st.integers(0, 2**32 - 1))
def test_property_bilinear_golden_equals_c_and_float(case: tuple[Axis, Axis, bool], ctm: str,
                                                     n: int, c: int, s: float, zp: int,
                                                     seed: int) -> None:
    ay, ax, by_scale = case
    dims = Dims(n, ay.in_size, ax.in_size, c)
    p = resize_bilinear_params(dims, ay.out_size, ax.out_size, ay.scale, ax.scale, ctm)
    x = np.random.default_rng(seed).integers(-128, 128, (n, dims.h, dims.w, c), dtype=np.int8)
    got = check_bilinear(p, x)
    assert_near_reference(got, float_bilinear(x, s, zp, ay, ax, by_scale, ctm), ay, ax, ctm)


@settings(max_examples=100, deadline=None)
@given(in_size=st.integers(1, 12), out_size=st.integers(1, 30),
       ctm=st.sampled_from(LINEAR_COORD_MODES))
def test_property_bilinear_tables_in_range(in_size: int, out_size: int, ctm: str) -> None:
    lo, hi, frac = bilinear_tables(in_size, out_size, out_size / in_size, ctm)
    assert lo.dtype == hi.dtype == frac.dtype == np.int32
    assert ((0 <= lo) & (lo <= hi) & (hi < in_size)).all()
    assert ((0 <= frac) & (frac <= 1024)).all() and (frac[lo == hi] == 0).all()
    assert ((hi - lo) <= 1).all()


def tflite_resize_bilinear_integer(x: np.ndarray, out_h: int, out_w: int, align_corners: bool,
                                   half_pixel_centers: bool) -> np.ndarray:
    """Line-by-line port of TFLite's reference_ops::ResizeBilinearInteger (int8, default double
    rounding), NHWC."""
    def tdiv(a: int, b: int) -> int:  # C division
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q

    n, in_h, in_w, c = x.shape
    hs = tdiv((1 << 10) * in_h + out_h // 2, out_h)
    ws = tdiv((1 << 10) * in_w + out_w // 2, out_w)
    if align_corners and out_h > 1:
        hs = tdiv((1 << 10) * (in_h - 1) + (out_h - 1) // 2, out_h - 1)
    if align_corners and out_w > 1:
        ws = tdiv((1 << 10) * (in_w - 1) + (out_w - 1) // 2, out_w - 1)

    def interp(v: int, scale: int, size: int) -> tuple[int, int, int]:
        sv = v * scale + tdiv(scale, 2) - (1 << 9) if half_pixel_centers else v * scale
        return sv, max(tdiv(sv, 1 << 10), 0), min(tdiv(sv + (1 << 10) - 1, 1 << 10), size - 1)

    out = np.zeros((n, out_h, out_w, c), dtype=np.int8)
    v = x.astype(np.int64)
    for b in range(n):
        for y in range(out_h):
            iy, y0, y1 = interp(y, hs, in_h)
            for xx in range(out_w):
                ix, x0, x1 = interp(xx, ws, in_w)
                for ch in range(c):
                    dy, dx = iy - (1 << 10) * y0, ix - (1 << 10) * x0
                    o = (v[b, y0, x0, ch] * ((1 << 10) - dy) * ((1 << 10) - dx)
                         + v[b, y1, x0, ch] * dy * ((1 << 10) - dx)
                         + v[b, y0, x1, ch] * ((1 << 10) - dy) * dx
                         + v[b, y1, x1, ch] * dy * dx)
                    rnd = (1 << 19) if o > 0 else -(1 << 19)
                    out[b, y, xx, ch] = tdiv(int(o) + rnd, 1 << 20)
    return out


@settings(max_examples=100, deadline=None)
@given(in_h=st.integers(1, 6), in_w=st.integers(1, 6), out_h=st.integers(1, 12),
       out_w=st.integers(1, 12), align_corners=st.booleans(), half_pixel_centers=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_property_tflite_tables_bit_exact(in_h: int, in_w: int, out_h: int, out_w: int,
                                          align_corners: bool, half_pixel_centers: bool,
                                          seed: int) -> None:
    if align_corners and half_pixel_centers:  # TFLite rejects the combination
        half_pixel_centers = False
    dims = Dims(1, in_h, in_w, 2)
    y_lo, y_hi, y_frac = tflite_bilinear_tables(in_h, out_h, align_corners, half_pixel_centers)
    x_lo, x_hi, x_frac = tflite_bilinear_tables(in_w, out_w, align_corners, half_pixel_centers)
    p = ResizeBilinearParams(dims, Dims(1, out_h, out_w, 2), y_lo, y_hi, y_frac, x_lo, x_hi, x_frac)
    x = np.random.default_rng(seed).integers(-128, 128, (1, in_h, in_w, 2), dtype=np.int8)
    got = check_bilinear(p, x)
    np.testing.assert_array_equal(
        got, tflite_resize_bilinear_integer(x, out_h, out_w, align_corners, half_pixel_centers))


# ---------------------------------------------------------------------------------------------
# invalid parameters

NEAREST_BASE = resize_nearest_params(Dims(1, 3, 4, 2), 6, 8, 2.0, 2.0)
BILINEAR_BASE = resize_bilinear_params(Dims(1, 3, 4, 2), 6, 8, 2.0, 2.0)


def _set(p: Any, field: str, index: int, value: int) -> Any:
    table = getattr(p, field).copy()
    table[index] = value
    return dataclasses.replace(p, **{field: table})


COMMON_INVALID = {
    "input_h_0": lambda p: dataclasses.replace(p, input=Dims(1, 0, 4, 2)),
    "input_c_0": lambda p: dataclasses.replace(p, input=Dims(1, 3, 4, 0), output=Dims(1, 6, 8, 0)),
    "input_n_0": lambda p: dataclasses.replace(p, input=Dims(0, 3, 4, 2), output=Dims(0, 6, 8, 2)),
    "n_mismatch": lambda p: dataclasses.replace(p, output=Dims(2, 6, 8, 2)),
    "c_mismatch": lambda p: dataclasses.replace(p, output=Dims(1, 6, 8, 3)),
    "output_w_0": lambda p: dataclasses.replace(p, output=Dims(1, 6, 0, 2)),
}
NEAREST_INVALID = {
    **COMMON_INVALID,
    "y_index_negative": lambda p: _set(p, "y_index", 2, -1),
    "y_index_past_end": lambda p: _set(p, "y_index", 5, 3),
    "x_index_past_end": lambda p: _set(p, "x_index", 0, 4),
}
BILINEAR_INVALID = {
    **COMMON_INVALID,
    "y_lo_negative": lambda p: _set(p, "y_lo", 0, -1),
    "y_hi_past_end": lambda p: _set(p, "y_hi", 5, 3),
    "y_frac_negative": lambda p: _set(p, "y_frac", 1, -1),
    "x_lo_past_end": lambda p: _set(p, "x_lo", 7, 4),
    "x_hi_negative": lambda p: _set(p, "x_hi", 3, -2),
    "x_frac_1025": lambda p: _set(p, "x_frac", 2, 1025),
}


@pytest.mark.parametrize("name", list(NEAREST_INVALID))
def test_nearest_invalid_params(name: str) -> None:
    x = np.zeros((1, 3, 4, 2), dtype=np.int8)
    bad = NEAREST_INVALID[name](NEAREST_BASE)
    status, out = call_status("mcu_resize_nearest_s8", bad, [x], (96,))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_resize_nearest_s8(bad, x)


@pytest.mark.parametrize("name", list(BILINEAR_INVALID))
def test_bilinear_invalid_params(name: str) -> None:
    x = np.zeros((1, 3, 4, 2), dtype=np.int8)
    bad = BILINEAR_INVALID[name](BILINEAR_BASE)
    status, out = call_status("mcu_resize_bilinear_s8", bad, [x], (96,))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_resize_bilinear_s8(bad, x)


@pytest.mark.parametrize("kernel,base", [("mcu_resize_nearest_s8", NEAREST_BASE),
                                         ("mcu_resize_bilinear_s8", BILINEAR_BASE)])
def test_null_pointers_and_in_place(kernel: str, base: Any) -> None:
    x = np.zeros((1, 3, 4, 2), dtype=np.int8)
    args: list[Any] = [base, x, np.zeros(96, dtype=np.int8)]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw(kernel, *bad) == MCU_ERR_ARG
    for f in dataclasses.fields(base):
        if isinstance(getattr(base, f.name), np.ndarray):
            assert call_raw(kernel, dataclasses.replace(base, **{f.name: None}), x,
                            args[2]) == MCU_ERR_ARG
    assert call_raw(kernel, base, x, x) == MCU_ERR_ARG  # not in place


def test_table_helpers_reject_bad_modes() -> None:
    with pytest.raises(ValueError):
        nearest_indices(4, 8, 2.0, "tf_crop_and_resize")
    with pytest.raises(ValueError):
        nearest_indices(4, 8, 2.0, "half_pixel", "round")
    with pytest.raises(ValueError):
        bilinear_tables(4, 8, 2.0, "tf_half_pixel_for_nn")
    with pytest.raises(ValueError):
        bilinear_tables(4, 8, 0.0, "half_pixel")
