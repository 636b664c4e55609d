"""Resize of 4-D NCHW maps over H and W (NHWC kernels): nearest (every ONNX coordinate mode
and nearest mode, as precomputed index tables) and linear (10-bit fixed-point weights)."""
from __future__ import annotations

import numpy as np

from emitter.errors import NodeUnsupported
from emitter.golden.resize import (mcu_resize_bilinear_s8, mcu_resize_nearest_s8,
                                   resize_bilinear_params, resize_nearest_params)
from emitter.ir import Graph, Node
from emitter.ops.base import LayoutPlan, LowerCtx, Prepared, QNode, TensorArg
from emitter.ops.conv import dims4, feature_layout
from emitter.ops.reshape import lower_view

ONNX_OPS = ("Resize", "Upsample")
IR_OPS = ("resize",)
DEFAULTS = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
            "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75, "exclude_outside": 0,
            "extrapolation_value": 0.0, "antialias": 0, "keep_aspect_ratio_policy": "stretch"}


def text(v) -> str:
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


def prepare(node: Node, g: Graph) -> Prepared:
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

    return Prepared(kernel, p, (TensorArg(x.name), TensorArg(y.name)), golden,
                    summary=f"{at['mode']} {at['ctm']}")
