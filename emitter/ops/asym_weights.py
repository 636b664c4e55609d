"""Asymmetric weights (a non-zero weight zero point: onnxruntime's u8u8 models, weight_type=QUInt8)
run exactly on the symmetric int8 kernels: the zero point is folded into the integers at build time.

    acc = sum_k (x[k] + input_offset) * (w[k] - zw)            w - zw in [-255, 255]: not int8, so
        = sum_k (x[k] + input_offset) * (a[k] + b[k])          a + b = w - zw, a and b int8
        = sum_{k < 2K} ([x, x][k] + input_offset) * [a, b][k]

    # fc(x, w, zw != 0)    -> concat(x, x) along the features ; fc(weights [a | b], zero point 0)
    # conv(x, w, zw != 0)  -> concat(x, x) along the channels ; conv(weights [a | b] over input channels)
    # depthwise conv       -> w - zw itself when it fits int8 (exact, no stacking); else
    #                         resize(x) repeating every column 2 (3) times ; depthwise with the parts
    #                         interleaved along the kernel's width, strides and pads along W times 2 (3)
    #                         (its channels cannot be stacked; its columns can, with dilation 1 along W;
    #                         dilated along W but not H: its rows, the same way)

Depthwise, interleaved: output column o reads input columns o*s + j - p (j < kw); over x' (column
c*i + t = x column i, t < c) with kernel width c*kw, stride c*s and pad c*p it reads x' column
c*(o*s + j - p) + t at kernel column c*j + t = part t of w - zw at column j: the same sum.

The accumulator holds the very same integer as asymmetric arithmetic would, so the result is exact
(bit for bit the golden, onnxruntime's integer kernels up to its requantization rounding) on every
backend, CMSIS-NN included; the price is twice the multiply-accumulates and one copy of the input.
Padding stays exact: a padded position holds the zero point, x + input_offset = 0 in both copies.
The split a = floor(v / 2), b = floor((v + 1) / 2) fits int8 for v in [-256, 254]; v = 255 (weight
255, zero point 0, as uint8) takes three copies, floor((v + i) / 3) for i = 0, 1, 2.
"""
from __future__ import annotations

import numpy as np

from emitter.ir import Node, QuantParams
from emitter.ops.base import LowerCtx, QIn, QNode


def is_asymmetric(w: QIn) -> bool:
    return w.quant is not None and bool(np.any(w.quant.zero_point != 0))


def fold_zero_point(w: np.ndarray, zero_point: np.ndarray, out_axis: int, in_axis: int) -> np.ndarray:
    """int8 weights w with zero points along out_axis (one, or one per output channel) -> the
    stacked int8 parts of w - zw along in_axis, which sum to w - zw in the accumulator."""
    v = minus_zero_point(w, zero_point, out_axis)
    copies = 2 if int(v.max()) <= 254 else 3
    parts = [np.floor_divide(v + i, copies) for i in range(copies)]
    assert all(-128 <= int(p.min()) and int(p.max()) <= 127 for p in parts)
    return np.concatenate(parts, axis=in_axis).astype(np.int8)


def minus_zero_point(w: np.ndarray, zero_point: np.ndarray, out_axis: int) -> np.ndarray:
    """w - zw as int32, zero points along out_axis (one, or one per output channel)."""
    zp = zero_point.astype(np.int32)
    zp = zp.reshape([-1 if d == out_axis else 1 for d in range(w.ndim)]) if zp.size > 1 else zp.ravel()[:1]
    return w.astype(np.int32) - zp


def folded_in_place(w: np.ndarray, zero_point: np.ndarray, out_axis: int) -> np.ndarray | None:
    """w - zw as int8 weights of zero point 0 where every value fits int8 (the same accumulator,
    no stacking needed), else None."""
    v = minus_zero_point(w, zero_point, out_axis)
    return v.astype(np.int8) if -128 <= int(v.min()) and int(v.max()) <= 127 else None


def interleaved_columns(w: np.ndarray, zero_point: np.ndarray, axis: int = 3) -> np.ndarray:
    """Depthwise weights [C_out, 1, kh, kw] with zero points along axis 0 -> the int8 parts of
    w - zw interleaved along the width (axis 3; the height: axis 2): [C_out, 1, kh, c * kw],
    column c*j + t = part t at column j."""
    k = w.shape[axis]
    stacked = fold_zero_point(w, zero_point, 0, axis)  # [part 0 | part 1 (| part 2)] along the axis
    c = stacked.shape[axis] // k
    split = stacked.shape[:axis] + (c, k) + stacked.shape[axis + 1:]
    return np.ascontiguousarray(np.swapaxes(stacked.reshape(split), axis, axis + 1).reshape(
        stacked.shape))


def repeated_columns(ctx: LowerCtx, q: QNode, x: QIn, copies: int, axis: int = 3) -> str:
    """x [N, C, H, W] -> [N, C, H, copies * W] (axis 2: [N, C, copies * H, W]), every column (row)
    repeated (nearest resize, exact)."""
    assert x.name is not None and x.quant is not None
    shape = list(x.shape)
    shape[axis] *= copies
    out = ctx.act(f"{q.output}_repeated_{'columns' if axis == 3 else 'rows'}", tuple(shape), x.quant)
    ctx.emit(q, "resize", [x.name], out, {"mode": "nearest", "ctm": "asymmetric", "nearest_mode": "floor",
                                          "scale_h": float(copies) if axis == 2 else 1.0,
                                          "scale_w": float(copies) if axis == 3 else 1.0, FOLDED: q.name},
             name=f"{q.name}_weight_zero_point")
    return out


def symmetric_quant(quant: QuantParams) -> QuantParams:
    """The weights' scales with zero point 0: the stacked parts hold w - zw."""
    return QuantParams(quant.scale, np.zeros_like(quant.zero_point), quant.axis)


def stacked_input(ctx: LowerCtx, q: QNode, x: QIn, copies: int, axis: int) -> str:
    """concat(x, x[, x]) along `axis`: the input each stacked weight part reads."""
    assert x.name is not None and x.quant is not None
    shape = list(x.shape)
    shape[axis] *= copies
    out = ctx.act(f"{q.output}_stacked_input", tuple(shape), x.quant)
    ctx.emit(q, "concat", [x.name] * copies, out, {"axis": axis, FOLDED: q.name}, name=f"{q.name}_weight_zero_point")
    return out


FOLDED = "weight_zero_point_of"  # the stacking concat's attribute: the layer whose zero point it folds


def summary_line(nodes: tuple[Node, ...]) -> str | None:
    """The summary's note on folded weight zero points, None when the model has none."""
    layers = [str(n.attrs[FOLDED]) for n in nodes if FOLDED in n.attrs]
    if not layers:
        return None
    return (f"weights: {len(layers)} layer(s) with asymmetric (non-zero zero point) weights: "
            + ", ".join(layers) + "; CMSIS-NN has no such kernel: the zero point is folded at build time, "
            "each runs as a symmetric int8 layer over its input stacked 2 or 3 times (along the channels; "
            "a depthwise layer's columns) (2-3x MACs, bit-exact)")
