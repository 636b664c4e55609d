"""ConvTranspose (decoders, upsampling): group 1, 1-D and 2-D, in QDQ form.

    # DQ(x) -> ConvTranspose(DQ(W int8 [C_in, C_out, kH, kW], per channel on axis 1), DQ(B int32)) -> Q
    #                     -> conv_transpose(x, weights OHWI [C_out, kH, kW, C_in], bias)
    # W with a weight zero point (uint8)  -> conv_transpose over concat(x, x) (asym_weights.py)
    # group != 1                          -> refused by name

There is no quantized ConvTranspose in the ONNX standard, and com.microsoft has none either
(onnxruntime's QLinearConvTranspose lives in its internal NHWC domain, never in a saved model):
quantize_static leaves ConvTranspose in float in QOperator form, and quantizes it in QDQ form.

Output geometry (ONNX): with T = stride * (in - 1) + output_padding + (k - 1) * dilation + 1,
out = T - pad_begin - pad_end; `output_shape` (or auto_pad SAME_*, out = in * stride) fixes out and
splits T - out over the two pads, the odd one at the end for SAME_UPPER and at the start otherwise.
The kernel only needs pad_begin (negative allowed) and the output size.
Requantization per output channel: M[c] = s_in * s_w[c] / s_out, as Conv.
4-bit weights (QIn.bits == 4) run mcu_transpose_conv_s4, packed two input channels a byte (the
same numbers); weights changed by an asymmetric zero point's folding are stored as int8, as the
summary says.
"""
from __future__ import annotations

import numpy as np

from emitter import quant
from emitter.calls import CArg, ConstArg, NullArg, Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Node
from emitter.kernels import mcu_transpose_conv_s4 as tc4_twin
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_transpose_conv_s8 import TransposeConvParams, mcu_transpose_conv_s8
from emitter.ops import asym_weights
from emitter.ops.base import Attrs, LayoutPlan, LowerCtx, QNode, per_tensor
from emitter.ops.conv import bias_int32, check_accumulation, check_bias_headroom, dims4, feature_layout

ONNX_OPS = ("ConvTranspose",)
IR_OPS = ("conv_transpose",)
UNQUANTIZED_HINT = (": onnxruntime's QOperator format has no quantized ConvTranspose and leaves it in float; "
                    "quantize the model in QDQ format (quantize_static(..., quant_format=QuantFormat.QDQ) "
                    "or `mcugen quantize`), which quantizes ConvTranspose")
DEFAULTS = {"auto_pad": b"NOTSET", "dilations": None, "group": 1, "kernel_shape": None,
            "output_padding": None, "output_shape": None, "pads": None, "strides": None}


def geometry(in_sizes: list[int], kernel: list[int], strides: list[int], dilations: list[int],
             out_pad: list[int], pads: list[int] | None, out_shape: list[int] | None,
             mode: str) -> tuple[list[int], list[int]]:
    """(pad_begin per axis, output size per axis) of an ONNX ConvTranspose."""
    n = len(in_sizes)
    full = [s * (i - 1) + op + (k - 1) * d + 1
            for i, k, s, d, op in zip(in_sizes, kernel, strides, dilations, out_pad, strict=True)]
    if out_shape is None and mode in ("SAME_UPPER", "SAME_LOWER"):
        out_shape = [i * s for i, s in zip(in_sizes, strides, strict=True)]
    if out_shape is not None:
        if len(out_shape) != n:
            raise NodeUnsupported(f"output_shape {out_shape} must give the {n} spatial sizes")
        total = [t - o for t, o in zip(full, out_shape, strict=True)]
        upper = mode == "SAME_UPPER"
        begin = [t // 2 if upper else t - t // 2 for t in total]
        return begin, list(out_shape)
    if mode == "VALID":
        pads = [0] * (2 * n)
    pads = list(pads or [0] * (2 * n))
    if len(pads) != 2 * n:
        raise NodeUnsupported(f"pads {pads} must give {2 * n} values")
    return pads[:n], [t - b - e for t, b, e in zip(full, pads[:n], pads[n:], strict=True)]


def lower(ctx: LowerCtx, q: QNode) -> None:
    x, w = q.inputs[0], q.inputs[1]
    b = q.inputs[2] if len(q.inputs) > 2 and q.inputs[2].data is not None else None
    a = Attrs(q.attrs, DEFAULTS)
    if a.unknown():
        raise NodeUnsupported(f"unknown attributes {a.unknown()}")
    if int(a["group"]) != 1:
        raise NodeUnsupported(f"group={a['group']}: grouped (and depthwise) ConvTranspose is not "
                              "supported; only group=1 runs")
    if not w.is_const or w.data is None or w.data.dtype != np.int8:
        raise NodeUnsupported("weights must be a constant int8 tensor (DequantizeLinear of an initializer)")
    if x.name is None or len(x.shape) not in (3, 4):
        raise NodeUnsupported(f"input must be a 3-D or 4-D int8 activation, got shape {x.shape}")
    assert x.quant is not None and w.quant is not None
    nsp = len(x.shape) - 2
    c_in, c_out = x.shape[1], w.shape[1] if w.data.ndim == len(x.shape) else -1
    if w.data.ndim != len(x.shape) or w.shape[0] != c_in:
        raise NodeUnsupported(f"weights {list(w.shape)} do not fit an input with {c_in} channels: a "
                              "ConvTranspose takes weights [C_in, C_out, k...]")
    if w.quant.scale.size > 1 and w.quant.axis != 1:
        raise NodeUnsupported(f"weights are quantized per channel on axis {w.quant.axis}; ConvTranspose "
                              f"weights [C_in, C_out, k...] must be per tensor or per output channel (axis 1)")
    mode = a["auto_pad"].decode() if isinstance(a["auto_pad"], bytes) else a["auto_pad"]
    if mode not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise NodeUnsupported(f"auto_pad={mode} is not supported")
    kernel = list(a["kernel_shape"] or w.shape[2:])
    strides = list(a["strides"] or [1] * nsp)
    dilations = list(a["dilations"] or [1] * nsp)
    out_pad = list(a["output_padding"] or [0] * nsp)
    if kernel != list(w.shape[2:]) or not len(strides) == len(dilations) == len(out_pad) == nsp:
        raise NodeUnsupported(f"kernel_shape {kernel}, strides {strides}, dilations {dilations} or "
                              f"output_padding {out_pad} do not fit weights {list(w.shape)}")
    if min(strides + dilations) < 1 or min(out_pad) < 0:
        raise NodeUnsupported(f"invalid strides {strides}, dilations {dilations} or output_padding {out_pad}")
    out_shape = list(a["output_shape"])[-nsp:] if a["output_shape"] is not None else None
    begin, sizes = geometry(list(x.shape[2:]), kernel, strides, dilations, out_pad, a["pads"], out_shape, mode)
    if tuple(sizes) != tuple(q.out_shape[2:]) or min(sizes) < 1:
        raise NodeUnsupported(f"output size {sizes} from the attributes disagrees with the output "
                              f"shape {list(q.out_shape)}")
    if nsp == 1:  # 1-D runs as 2-D with H = 1
        kernel, strides, dilations, begin = [1] + kernel, [1] + strides, [1] + dilations, [0] + begin
    wdata, wquant, x_name = w.data, w.quant, x.name
    if asym_weights.is_asymmetric(w):  # the weight zero point folded: stacked input channels
        wdata = asym_weights.fold_zero_point(w.data, w.quant.zero_point, 1, 0)
        wquant = asym_weights.symmetric_quant(w.quant)
        x_name = asym_weights.stacked_input(ctx, q, x, wdata.shape[0] // c_in, 1)
    taps = int(np.prod(wdata.shape)) // c_out
    check_accumulation(taps)
    bias = bias_int32(b, x.quant.s, w.quant.scale, c_out)
    check_bias_headroom(bias, taps)
    w_name = ctx.const(f"{q.name}_weights", wdata, wquant)
    b_name = ctx.const(f"{q.name}_bias", bias) if bias is not None else ""
    attrs = {"kernel": tuple(kernel), "strides": tuple(strides), "dilations": tuple(dilations),
             "pads": tuple(begin), "act_min": q.act_min, "act_max": q.act_max}
    if w.bits == 4:  # the 4-bit kernel for the weights as given; folded ones: int8, said why
        attrs["weight_bits"] = 4 if wdata is w.data else "folded"
    ctx.emit(q, "conv_transpose", [x_name, w_name, b_name], q.output, attrs)


def layout(node: Node, g: Graph) -> LayoutPlan:
    x = g.t(node.inputs[0])
    return LayoutPlan((feature_layout(x.shape), None, None), feature_layout(g.t(node.outputs[0]).shape))


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, w, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    b = g.t(node.inputs[2]) if node.inputs[2] else None
    xq, yq = per_tensor(x, "input", node), per_tensor(y, "output", node)
    assert w.quant is not None and w.data is not None
    c_in, c_out = w.shape[0], w.shape[1]
    mult, shift, rounding = quant.layer_multipliers(g.numerics, xq.s, np.broadcast_to(w.quant.scale, (c_out,)), yq.s)
    kh, kw = node.attrs["kernel"]
    sh, sw = node.attrs["strides"]
    dh, dw = node.attrs["dilations"]
    pt, pl = node.attrs["pads"]
    qio = QuantIO(-xq.zp, yq.zp, node.attrs["act_min"], node.attrs["act_max"], rounding)
    idims, odims = dims4(x.shape), dims4(y.shape)
    filt = np.ascontiguousarray(w.data.reshape(c_in, c_out, kh, kw).transpose(1, 2, 3, 0))  # OHWI
    p = TransposeConvParams(idims, Dims(c_out, kh, kw, c_in), odims, sh, sw, dh, dw, pt, pl, qio,
                            mult, shift)
    bias = b.data if b is not None else None
    in_shape = (idims.n, idims.h, idims.w, idims.c)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_transpose_conv_s8(p, env[x.name].reshape(in_shape), filt, bias).ravel()

    kernel, summary = "mcu_transpose_conv_s8", f"{kh}x{kw} s{sh}x{sw} d{dh}x{dw} crop t{pt} l{pl}"
    filt_arg = ConstArg("filter", filt)
    bits = node.attrs.get("weight_bits")
    if bits == 4:  # the int8 golden; the weights packed two input channels a byte
        kernel, filt_arg, summary = "mcu_transpose_conv_s4", ConstArg("filter", tc4_twin.pack_filter(filt)), \
            summary + ", 4-bit weights"
    elif bits == "folded":
        summary += " (4-bit weights stored as int8: the asymmetric zero point's folding changed them)"
    operands: dict[str, CArg] = {"input": TensorArg(x.name), "filter": filt_arg,
                                 "bias": ConstArg("bias", bias) if bias is not None else NullArg(),
                                 "output": TensorArg(y.name)}
    return Prepared(kernel, p, operands, golden, macs=idims.n * idims.h * idims.w * c_in * c_out * kh * kw,
                    summary=summary)
