"""Goldens of mcu_resize_nearest_s8 and mcu_resize_bilinear_s8 (NHWC, scale and zero point
unchanged), and the build-time tables that fold every ONNX Resize coordinate mode into them.

Nearest:   out[n, y, x, c] = in[n, y_index[y], x_index[x], c]
Bilinear:  TFLite ResizeBilinearInteger arithmetic on the raw int8 values, fy = y_frac[y] and
           fx = x_frac[x] in [0, 1024] (10 fractional bits):
             acc = in[y_lo, x_lo] * (1024 - fy) * (1024 - fx) + in[y_lo, x_hi] * (1024 - fy) * fx
                 + in[y_hi, x_lo] * fy * (1024 - fx)          + in[y_hi, x_hi] * fy * fx
             out = acc / 2^20 rounded half away from zero
           (the weights sum to 2^20, so |acc| <= 2^27 and out is in [-128, 127]).

Tables, per axis, from ONNX Resize (opset 13+) semantics as onnx.reference implements them, with
`scale` the axis scale the reference uses: float(scales[axis]) when the node gives `scales`,
out_size / in_size when it gives `sizes`:
  nearest_indices   coordinate modes half_pixel, asymmetric, align_corners, pytorch_half_pixel,
                    tf_half_pixel_for_nn (opset 11); nearest modes round_prefer_floor (default),
                    round_prefer_ceil, floor, ceil
  bilinear_tables   coordinate modes half_pixel, asymmetric, align_corners, pytorch_half_pixel
  tflite_bilinear_tables   TFLite's own integer coordinates (align_corners / half_pixel_centers),
                    bit-exact with TFLite's int8 RESIZE_BILINEAR
"""
from __future__ import annotations

import math

import numpy as np

from emitter.kernel_params import Dims, ResizeBilinearParams, ResizeNearestParams

FRAC_BITS = 10
ONE = 1 << FRAC_BITS

NEAREST_COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                       "tf_half_pixel_for_nn")
LINEAR_COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


# ---------------------------------------------------------------------------------------------
# kernels

def _check_dims(inp: Dims, out: Dims, what: str) -> None:
    if min(inp.n, inp.h, inp.w, inp.c, out.h, out.w) < 1 or out.n != inp.n or out.c != inp.c:
        raise ValueError(f"{what}: dims {inp} -> {out} must be >= 1 with the same N and C")


def _check_table(table: np.ndarray, count: int, lo: int, hi: int, what: str) -> np.ndarray:
    t = np.asarray(table)
    if t.shape != (count,):
        raise ValueError(f"{what}: expected {count} entries, found shape {t.shape}")
    t = t.astype(np.int64)
    if t.size and (t.min() < lo or t.max() > hi):
        raise ValueError(f"{what}: entries {t.min()}..{t.max()} outside [{lo}, {hi}]")
    return t


def _check_input(p_input: Dims, x: np.ndarray, what: str) -> None:
    shape = (p_input.n, p_input.h, p_input.w, p_input.c)
    if x.shape != shape:
        raise ValueError(f"{what} input: expected NHWC shape {shape}, found {x.shape}")


def mcu_resize_nearest_s8(p: ResizeNearestParams, x: np.ndarray) -> np.ndarray:
    """int8 NHWC [N, H_in, W_in, C] -> int8 NHWC [N, H_out, W_out, C]."""
    _check_dims(p.input, p.output, "resize_nearest")
    yi = _check_table(p.y_index, p.output.h, 0, p.input.h - 1, "resize_nearest y_index")
    xi = _check_table(p.x_index, p.output.w, 0, p.input.w - 1, "resize_nearest x_index")
    _check_input(p.input, x, "resize_nearest")
    return np.ascontiguousarray(x[:, yi][:, :, xi]).astype(np.int8)


def mcu_resize_bilinear_s8(p: ResizeBilinearParams, x: np.ndarray) -> np.ndarray:
    """int8 NHWC [N, H_in, W_in, C] -> int8 NHWC [N, H_out, W_out, C]."""
    _check_dims(p.input, p.output, "resize_bilinear")
    ylo = _check_table(p.y_lo, p.output.h, 0, p.input.h - 1, "resize_bilinear y_lo")
    yhi = _check_table(p.y_hi, p.output.h, 0, p.input.h - 1, "resize_bilinear y_hi")
    fy = _check_table(p.y_frac, p.output.h, 0, ONE, "resize_bilinear y_frac")
    xlo = _check_table(p.x_lo, p.output.w, 0, p.input.w - 1, "resize_bilinear x_lo")
    xhi = _check_table(p.x_hi, p.output.w, 0, p.input.w - 1, "resize_bilinear x_hi")
    fx = _check_table(p.x_frac, p.output.w, 0, ONE, "resize_bilinear x_frac")
    _check_input(p.input, x, "resize_bilinear")
    v = x.astype(np.int64)
    rows_lo, rows_hi = v[:, ylo], v[:, yhi]

    def weight(wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
        return (wy[:, None] * wx[None, :])[None, :, :, None]

    acc = (rows_lo[:, :, xlo] * weight(ONE - fy, ONE - fx)
           + rows_lo[:, :, xhi] * weight(ONE - fy, fx)
           + rows_hi[:, :, xlo] * weight(fy, ONE - fx)
           + rows_hi[:, :, xhi] * weight(fy, fx))
    half = 1 << (2 * FRAC_BITS - 1)
    out = np.sign(acc) * ((np.abs(acc) + half) >> (2 * FRAC_BITS))  # half away from zero
    return np.clip(out, -128, 127).astype(np.int8)


# ---------------------------------------------------------------------------------------------
# build-time tables (ONNX Resize semantics)

def _check_axis(in_size: int, out_size: int, scale: float) -> None:
    if in_size < 1 or out_size < 1 or not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"resize axis {in_size} -> {out_size}: sizes must be >= 1 and scale "
                         f"{scale!r} finite and > 0")


def _is_identity(in_size: int, out_size: int, scale: float) -> bool:
    """onnx.reference skips an axis whose scale is close to 1 and whose size is unchanged."""
    return out_size == in_size and math.isclose(scale, 1.0)


def source_coords(in_size: int, out_size: int, scale: float, mode: str) -> np.ndarray:
    """ONNX Resize x_original of every output index (float64, exactly as onnx.reference's
    _compute_x_ori computes it; output_width = scale * in_size may be fractional)."""
    _check_axis(in_size, out_size, scale)
    y = np.arange(out_size, dtype=np.float64)
    output_width = float(scale) * in_size
    if mode == "align_corners":
        if output_width == 1:
            return np.zeros(out_size, dtype=np.float64)
        return y * (in_size - 1) / (output_width - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "pytorch_half_pixel":
        if output_width == 1:
            return np.full(out_size, -0.5, dtype=np.float64)
        return (y + 0.5) / scale - 0.5
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    raise ValueError(f"resize: coordinate_transformation_mode {mode!r} is not supported")


def nearest_indices(in_size: int, out_size: int, scale: float,
                    coordinate_transformation_mode: str = "half_pixel",
                    nearest_mode: str = "round_prefer_floor") -> np.ndarray:
    """Source index of every output index of one axis, ONNX Resize mode=nearest: int32 [out_size],
    clamped to [0, in_size - 1]. An x_original that is an integer picks itself; otherwise the
    nearest mode picks floor or floor + 1 from the fractional part r (round_prefer_floor:
    r <= 0.5 -> floor; round_prefer_ceil: r < 0.5 -> floor; floor; ceil)."""
    if coordinate_transformation_mode not in NEAREST_COORD_MODES:
        raise ValueError(f"resize nearest: coordinate_transformation_mode "
                         f"{coordinate_transformation_mode!r} is not supported")
    if nearest_mode not in NEAREST_MODES:
        raise ValueError(f"resize nearest: nearest_mode {nearest_mode!r} is not supported")
    _check_axis(in_size, out_size, scale)
    if _is_identity(in_size, out_size, scale):
        return np.arange(out_size, dtype=np.int32)
    x = source_coords(in_size, out_size, scale, coordinate_transformation_mode)
    base = np.floor(x)
    r = x - base
    if nearest_mode == "round_prefer_floor":
        up = r > 0.5
    elif nearest_mode == "round_prefer_ceil":
        up = r >= 0.5
    elif nearest_mode == "floor":
        up = np.zeros_like(r, dtype=bool)
    else:
        up = r > 0.0
    idx = base.astype(np.int64) + np.where(r == 0.0, 0, up.astype(np.int64))
    return np.clip(idx, 0, in_size - 1).astype(np.int32)


def bilinear_tables(in_size: int, out_size: int, scale: float,
                    coordinate_transformation_mode: str = "half_pixel"
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, frac), each int32 [out_size], of one axis, ONNX Resize mode=linear: with
    x = x_original, lo = clamp(floor(x)), hi = clamp(floor(x) + 1) into [0, in_size - 1] (edge
    extension) and frac = round((x - floor(x)) * 1024) the weight of hi. frac is 0 where lo == hi
    (the value does not depend on it there)."""
    if coordinate_transformation_mode not in LINEAR_COORD_MODES:
        raise ValueError(f"resize linear: coordinate_transformation_mode "
                         f"{coordinate_transformation_mode!r} is not supported")
    _check_axis(in_size, out_size, scale)
    if _is_identity(in_size, out_size, scale):
        ident = np.arange(out_size, dtype=np.int32)
        return ident, ident.copy(), np.zeros(out_size, dtype=np.int32)
    x = source_coords(in_size, out_size, scale, coordinate_transformation_mode)
    base = np.floor(x)
    frac = np.floor((x - base) * ONE + 0.5).astype(np.int64)  # >= 0: half up == half away
    lo = np.clip(base.astype(np.int64), 0, in_size - 1)
    hi = np.clip(base.astype(np.int64) + 1, 0, in_size - 1)
    frac = np.where(lo == hi, 0, frac)
    return lo.astype(np.int32), hi.astype(np.int32), frac.astype(np.int32)


def tflite_bilinear_tables(in_size: int, out_size: int, align_corners: bool = False,
                           half_pixel_centers: bool = False
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, frac) reproducing TFLite's ResizeBilinearInteger coordinates (10-bit scale and
    ComputeInterpolationValuesInteger), so mcu_resize_bilinear_s8 is bit-exact with TFLite's int8
    RESIZE_BILINEAR. Where TFLite's two taps coincide its fraction may be negative; it is set to 0
    here, which leaves the integer sum unchanged."""
    if in_size < 1 or out_size < 1:
        raise ValueError(f"resize axis {in_size} -> {out_size}: sizes must be >= 1")
    scale_10 = (ONE * in_size + out_size // 2) // out_size
    if align_corners and out_size > 1:
        scale_10 = (ONE * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    lo, hi, frac = [], [], []
    for y in range(out_size):
        scaled = y * scale_10 + (scale_10 // 2 - (ONE // 2) if half_pixel_centers else 0)
        low = max(int(scaled / ONE), 0)  # C division truncates toward zero
        high = min(int((scaled + ONE - 1) / ONE), in_size - 1)
        low = min(low, in_size - 1)  # TFLite itself would read out of bounds here
        f = scaled - ONE * low
        if low == high:
            f = 0
        lo.append(low)
        hi.append(high)
        frac.append(f)
    return (np.array(lo, dtype=np.int32), np.array(hi, dtype=np.int32),
            np.array(frac, dtype=np.int32))


def resize_nearest_params(input: Dims, out_h: int, out_w: int, scale_h: float, scale_w: float,
                          coordinate_transformation_mode: str = "half_pixel",
                          nearest_mode: str = "round_prefer_floor") -> ResizeNearestParams:
    """ResizeNearestParams of an NHWC map resized to [N, out_h, out_w, C]."""
    return ResizeNearestParams(
        input=input, output=Dims(input.n, out_h, out_w, input.c),
        y_index=nearest_indices(input.h, out_h, scale_h, coordinate_transformation_mode,
                                nearest_mode),
        x_index=nearest_indices(input.w, out_w, scale_w, coordinate_transformation_mode,
                                nearest_mode))


def resize_bilinear_params(input: Dims, out_h: int, out_w: int, scale_h: float, scale_w: float,
                           coordinate_transformation_mode: str = "half_pixel"
                           ) -> ResizeBilinearParams:
    """ResizeBilinearParams of an NHWC map resized to [N, out_h, out_w, C] (ONNX linear)."""
    y_lo, y_hi, y_frac = bilinear_tables(input.h, out_h, scale_h, coordinate_transformation_mode)
    x_lo, x_hi, x_frac = bilinear_tables(input.w, out_w, scale_w, coordinate_transformation_mode)
    return ResizeBilinearParams(input=input, output=Dims(input.n, out_h, out_w, input.c),
                                y_lo=y_lo, y_hi=y_hi, y_frac=y_frac,
                                x_lo=x_lo, x_hi=x_hi, x_frac=x_frac)
