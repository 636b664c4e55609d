"""Resize of 4-D NCHW maps over H and W (NHWC kernels): nearest (every ONNX coordinate mode
and nearest mode, as precomputed index tables) and linear (10-bit fixed-point weights).

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

from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Node
from emitter.kernels.common import Dims
from emitter.kernels.mcu_resize_bilinear_s8 import ONE, ResizeBilinearParams, mcu_resize_bilinear_s8
from emitter.kernels.mcu_resize_nearest_s8 import ResizeNearestParams, mcu_resize_nearest_s8
from emitter.ops.base import LayoutPlan, LowerCtx, QNode
from emitter.ops.conv import dims4, feature_layout
from emitter.ops.reshape import lower_view

ONNX_OPS = ("Resize", "Upsample")
IR_OPS = ("resize",)
DEFAULTS = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
            "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75, "exclude_outside": 0,
            "extrapolation_value": 0.0, "antialias": 0, "keep_aspect_ratio_policy": "stretch"}
NEAREST_COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                       "tf_half_pixel_for_nn")
LINEAR_COORD_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def text(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None or len(x.shape) != 4:
        raise NodeUnsupported("Resize needs a 4-D int8 activation")
    unknown = set(q.attrs) - set(DEFAULTS) - {"axes"}
    if unknown:
        raise NodeUnsupported(f"unknown attributes {sorted(unknown)}")
    a = {**DEFAULTS, **q.attrs}
    mode = text(a["mode"])
    if mode not in ("nearest", "linear") or a["antialias"] or a.get("axes") is not None:
        raise NodeUnsupported(f"mode {mode} (antialias {a['antialias']}, axes): only nearest and "
                              "linear over all axes are supported")
    out = q.out_shape
    if out[0] != x.shape[0] or out[1] != x.shape[1]:
        raise NodeUnsupported("Resize may only change H and W")
    scales = None
    if q.op_type == "Upsample":
        scales = [float(v) for v in a.get("scales", [])] or None
    elif len(q.inputs) > 2 and q.inputs[2].data is not None and q.inputs[2].data.size:
        sc = q.inputs[2]
        raw = sc.data.astype(np.float64).ravel()  # type: ignore[union-attr]
        scales = list(raw if sc.quant is None else (raw - sc.quant.zp) * sc.quant.s)
    scale_h = scales[2] if scales else out[2] / x.shape[2]
    scale_w = scales[3] if scales else out[3] / x.shape[3]
    lower_view(ctx, q, "resize", {
        "mode": mode, "ctm": text(a["coordinate_transformation_mode"]),
        "nearest_mode": text(a["nearest_mode"]), "scale_h": scale_h, "scale_w": scale_w})  # + requantize


def layout(node: Node, g: Graph) -> LayoutPlan:
    return LayoutPlan((feature_layout(g.t(node.inputs[0]).shape),),
                      feature_layout(g.t(node.outputs[0]).shape))


# ---- build-time tables (ONNX Resize semantics)

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


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    idims, odims = dims4(x.shape), dims4(y.shape)
    at = node.attrs
    try:
        if at["mode"] == "nearest":
            p = resize_nearest_params(idims, odims.h, odims.w, at["scale_h"], at["scale_w"],
                                      at["ctm"], at["nearest_mode"])
            fn, kernel = mcu_resize_nearest_s8, "mcu_resize_nearest_s8"
        else:
            p = resize_bilinear_params(idims, odims.h, odims.w, at["scale_h"], at["scale_w"], at["ctm"])  # type: ignore[assignment]
            fn, kernel = mcu_resize_bilinear_s8, "mcu_resize_bilinear_s8"  # type: ignore[assignment]
    except ValueError as exc:
        raise NodeUnsupported(str(exc)) from None
    in_shape = (idims.n, idims.h, idims.w, idims.c)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, env[x.name].reshape(in_shape)).ravel()

    return Prepared(kernel, p, {"input": TensorArg(x.name), "output": TensorArg(y.name)}, golden,
                    summary=f"{at['mode']} {at['ctm']}")
