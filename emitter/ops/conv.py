"""Conv: regular (group 1) and depthwise (group == C_in, any channel multiplier), 1-D and 2-D.

ONNX weights OIHW become OHWI (regular) or [1, KH, KW, C_out] (depthwise) at build time; the
feature maps are NHWC (a 1-D conv's [N, C, L] is stored [N, L, C] and runs as H = 1).
Requantization per output channel: M[c] = s_in * s_w[c] / s_out (double), TFLite QuantizeMultiplier.

4-bit weights (QIn.bits == 4, values in [-8, 7]) keep their own kernels, packed two a byte:
mcu_conv2d_s4 (regular, 1-D) and mcu_depthwise_conv2d_s4, the same numbers as the int8 kernels. They
are stored as int8 (the int8 kernels) where no 4-bit form exists: weights changed by an asymmetric
zero point's folding and int16 activations (prepare_a16), the summary saying so; and a convolution
fused with its residual Add (ops/conv_add.py prepares the conv from CONV_ATTRS, without weight_bits:
mcu_conv2d_add_s8 on int8 weights, its summary silent about it).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from emitter import quant
from emitter.calls import CArg, ConstArg, CRef, NullArg, Prepared, StructArg, TensorArg
from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import Graph, Layout, Node
from emitter.kernels import ISAS
from emitter.kernels import mcu_conv2d_s4 as conv4_twin
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels import mcu_depthwise_conv2d_s4 as dw4_twin
from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_conv2d_s8 import ConvParams, mcu_conv2d_s8
from emitter.kernels.mcu_conv2d_s16 import mcu_conv2d_s16
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams, mcu_depthwise_conv2d_s8
from emitter.kernels.mcu_depthwise_conv2d_s16 import mcu_depthwise_conv2d_s16
from emitter.ops import a16, asym_weights
from emitter.ops.base import Attrs, LayoutPlan, LowerCtx, QIn, QNode, per_tensor

ONNX_OPS = ("Conv",)
IR_OPS = ("conv",)
DEFAULTS = {"auto_pad": b"NOTSET", "dilations": None, "group": 1, "kernel_shape": None,
            "pads": None, "strides": None}


def symmetric_weights(w: QIn, node: str) -> None:
    assert w.quant is not None and w.data is not None
    if np.any(w.quant.zero_point != 0):
        v = asym_weights.minus_zero_point(w.data, w.quant.zero_point, 0)
        raise QuantError(
            f"node '{node}': weights have non-zero zero points {w.quant.zero_point[:4]} (as int8) "
            f"(asymmetric), and weight - zero point spans [{int(v.min())}, {int(v.max())}], beyond int8, "
            "so a 1-D depthwise layer, or one dilated along both H and W, cannot fold it; mcugen and "
            "CMSIS-NN need symmetric int8 weights. Re-quantize with onnxruntime quantize_static(..., "
            "weight_type=QuantType.QInt8, per_channel=True) (symmetric weights are its default for QInt8)")


def bias_int32(b: QIn | None, in_scale: float, w_scale: np.ndarray, c_out: int) -> np.ndarray | None:
    """int32 bias: the stored integers when quantized, else round(b / (s_in * s_w[c]))."""
    if b is None or b.data is None:
        return None
    if b.data.size != c_out:
        raise NodeUnsupported(f"bias has {b.data.size} values for {c_out} output channels")
    w_scale = np.broadcast_to(w_scale, (c_out,))
    if b.data.dtype == np.int32 and (b.quant is None or np.allclose(
            np.broadcast_to(b.quant.scale, (c_out,)), in_scale * w_scale, rtol=1e-4)):
        data = b.data.astype(np.int32).ravel()  # TFLite: the stored integers, scale s_in * s_w[c]
    else:  # a float bias, or an int32 bias quantized with another scale: requantize it exactly once
        real = b.data.astype(np.float64).ravel()
        if b.quant is not None:
            real = (real - np.broadcast_to(b.quant.zero_point, (c_out,))) * np.broadcast_to(b.quant.scale, (c_out,))
        data = quant.round_int32(real / (in_scale * w_scale))
    return data


MAX_ACCUMULATION = 65535  # taps per output: 65535 * 128 * 127 + |bias| stays inside int32


def check_accumulation(taps: int) -> None:
    if taps > MAX_ACCUMULATION:
        raise NodeUnsupported(f"{taps} multiply-accumulates per output could overflow the int32 "
                              f"accumulator (at most {MAX_ACCUMULATION}); split the layer")


def check_bias_headroom(bias: np.ndarray | None, taps: int) -> None:
    """bias + the largest sum of `taps` products ((x - zp) in [-255, 255], w in [-128, 127]) must
    fit the int32 accumulator, or the kernel (and CMSIS-NN's) would wrap around."""
    if bias is None or not bias.size:
        return
    room = quant.INT32_MAX - taps * 255 * 128
    big = int(np.abs(bias.astype(np.int64)).max())
    if big > room:
        raise NodeUnsupported(f"bias values reach {big} (in units of input scale x weight scale), "
                              f"leaving no room for the {taps} products of an output in the int32 "
                              f"accumulator (at most {room}); the bias is inconsistent with the input "
                              "and weight scales: re-quantize the model")


def same_pads(in_sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
              mode: str) -> list[int]:
    begins, ends = [], []
    for n, k, s, d in zip(in_sizes, kernel, strides, dilations, strict=False):
        out = math.ceil(n / s)
        total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return begins + ends


def lower(ctx: LowerCtx, q: QNode) -> None:
    x, w = q.inputs[0], q.inputs[1]
    b = q.bias if q.bias is not None else (q.inputs[2] if len(q.inputs) > 2 and q.inputs[2].data is not None else None)
    a = Attrs(q.attrs, DEFAULTS)
    if a.unknown():
        raise NodeUnsupported(f"unknown attributes {a.unknown()}")
    if not w.is_const or w.data is None or w.data.dtype != np.int8:
        raise NodeUnsupported("weights must be a constant int8 tensor (DequantizeLinear of an initializer)")
    if x.name is None or len(x.shape) not in (3, 4):
        raise NodeUnsupported(f"input must be a 3-D or 4-D int8 activation, got shape {x.shape}")
    nsp = len(x.shape) - 2
    kernel = list(a["kernel_shape"] or w.shape[2:])
    strides = list(a["strides"] or [1] * nsp)
    dilations = list(a["dilations"] or [1] * nsp)
    mode = a["auto_pad"].decode() if isinstance(a["auto_pad"], bytes) else a["auto_pad"]
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        pads = same_pads(x.shape[2:], kernel, strides, dilations, mode)
    elif mode in ("NOTSET", "VALID"):
        pads = list(a["pads"] or [0] * (2 * nsp)) if mode == "NOTSET" else [0] * (2 * nsp)
    else:
        raise NodeUnsupported(f"auto_pad={mode} is not supported")
    if nsp == 1:  # 1-D conv runs as 2-D with H = 1
        kernel, strides, dilations = [1] + kernel, [1] + strides, [1] + dilations
        pads = [0, pads[0], 0, pads[1]]
    c_in, c_out, group = x.shape[1], w.shape[0], int(a["group"])
    if w.data.ndim != len(x.shape) or w.shape[1] * group != c_in or c_out % group:
        raise NodeUnsupported(f"weights {w.shape} do not fit an input with {c_in} channels and group={group}")
    if group != 1 and not (group == c_in and c_out % c_in == 0 and w.shape[1] == 1):
        raise NodeUnsupported(f"group={group} with C_in={c_in}, C_out={c_out} is neither a regular "
                              "nor a depthwise convolution (grouped convolution is not supported)")
    if min(strides + dilations + kernel) < 1 or min(pads) < 0:
        raise NodeUnsupported(f"invalid strides {strides}, dilations {dilations} or pads {pads}")
    assert x.quant is not None and w.quant is not None
    if b is not None and b.data is not None and b.data.ndim != 1:
        pos = 8 if q.onnx.op_type == "QLinearConv" else 2
        name = q.onnx.input[pos] if len(q.onnx.input) > pos else "B"
        raise NodeUnsupported(f"bias '{name}' has shape {list(b.data.shape)}; a convolution takes a "
                              f"1-D bias [{c_out}]: re-export the model")
    x_name, wdata, wquant = x.name, w.data, w.quant
    in_place = asym_weights.folded_in_place(w.data, w.quant.zero_point, 0) if group != 1 else None
    if asym_weights.is_asymmetric(w) and in_place is not None:  # depthwise: w - zw fits int8 (asym_weights.py)
        wdata, wquant = in_place, asym_weights.symmetric_quant(w.quant)
    elif asym_weights.is_asymmetric(w) and group != 1 and len(x.shape) == 4 and 1 in dilations:
        # depthwise: parts interleaved along the kernel width (height, if dilated along W) over input
        # columns (rows) repeated (asym_weights.py)
        d = 1 if dilations[1] == 1 else 0  # the spatial dim: 0 = H, 1 = W
        wdata = asym_weights.interleaved_columns(w.data, w.quant.zero_point, 2 + d)
        wquant = asym_weights.symmetric_quant(w.quant)
        copies = wdata.shape[2 + d] // kernel[d]
        x_name = asym_weights.repeated_columns(ctx, q, x, copies, 2 + d)
        kernel[d], strides[d], pads[d], pads[2 + d] = (kernel[d] * copies, strides[d] * copies, pads[d] * copies,
                                                       pads[2 + d] * copies)
    elif asym_weights.is_asymmetric(w):  # the weight zero point folded: conv over [x, x] (asym_weights.py)
        if group != 1:
            symmetric_weights(w, q.name)  # depthwise, 1-D or dilated along W: not foldable
        wdata = asym_weights.fold_zero_point(w.data, w.quant.zero_point, 0, 1)
        wquant = asym_weights.symmetric_quant(w.quant)
        x_name = asym_weights.stacked_input(ctx, q, x, wdata.shape[1] // c_in, 1)
    check_accumulation(int(np.prod(wdata.shape[1:])))
    bias = bias_int32(b, x.quant.s, w.quant.scale, c_out)
    check_bias_headroom(bias, int(np.prod(wdata.shape[1:])))
    w_name = ctx.const(f"{q.name}_weights", wdata, wquant)
    b_name = ctx.const(f"{q.name}_bias", bias) if bias is not None else ""
    attrs: dict[str, Any] = {
        "kernel": tuple(kernel), "strides": tuple(strides), "dilations": tuple(dilations),
        "pads": tuple(pads), "group": group, "act_min": q.act_min, "act_max": q.act_max}
    if w.bits == 4:  # 4-bit kernels for the weights as given; folded weights: int8, said why
        attrs["weight_bits"] = 4 if wdata is w.data else "folded"
    ctx.emit(q, "conv", [x_name, w_name, b_name], q.output, attrs)


def feature_layout(shape: tuple[int, ...]) -> Layout:
    return Layout(tuple(shape), (0, 2, 3, 1) if len(shape) == 4 else (0, 2, 1))


def layout(node: Node, g: Graph) -> LayoutPlan:
    x = g.t(node.inputs[0])
    return LayoutPlan((feature_layout(x.shape), None, None), feature_layout(g.t(node.outputs[0]).shape))


def dims4(shape: tuple[int, ...]) -> Dims:
    """NCHW / NCL logical shape -> NHWC dims."""
    if len(shape) == 3:
        return Dims(shape[0], 1, shape[2], shape[1])
    return Dims(shape[0], shape[2], shape[3], shape[1])


def scratch_ctx(buffer_size: Callable[[Any, Any, str], int], p: Any, bias: np.ndarray | None,
                isa: str) -> tuple[StructArg, int]:
    """A portable kernel's scratch context (contract C) and its size: buffer_size() on `isa`, the
    largest over every instruction set for "any" (a bundle for any core)."""
    n = max(buffer_size(p, bias, i) for i in (ISAS if isa == "any" else (isa,)))
    return StructArg("mcu_context_t", "ctx", {"buf": CRef("scratch" if n else "null"), "size": n}), n


INT8_STORAGE = {"folded": "4-bit weights stored as int8: the asymmetric zero point's folding changed them",
                "a16": "4-bit weights stored as int8: no 4-bit kernel for int16 activations"}


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    return _prepare(node, g, isa, node.attrs.get("weight_bits") == 4)


def _prepare(node: Node, g: Graph, isa: str, s4: bool) -> Prepared:
    x, w, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    b = g.t(node.inputs[2]) if node.inputs[2] else None
    xq, yq = per_tensor(x, "input", node), per_tensor(y, "output", node)
    assert w.quant is not None and w.data is not None
    c_out = w.shape[0]
    mult, shift, rounding = quant.layer_multipliers(g.numerics, xq.s,
                                                    np.broadcast_to(w.quant.scale, (c_out,)), yq.s)
    kh, kw = node.attrs["kernel"]
    sh, sw = node.attrs["strides"]
    dh, dw = node.attrs["dilations"]
    pt, pl = node.attrs["pads"][0], node.attrs["pads"][1]
    if rounding == quant.ROUND_NEAREST_EVEN and quant.fast_round_ok(  # proven tie-free: fast paths
            mult, shift, quant.acc_bound(w.data.reshape(c_out, -1), b.data if b is not None else None, c_out)):
        rounding = quant.ROUND_NEAREST_NO_TIE
    qio = QuantIO(-xq.zp, yq.zp, node.attrs["act_min"], node.attrs["act_max"], rounding)
    idims, odims = dims4(x.shape), dims4(y.shape)
    wdata = w.data.reshape(c_out, w.shape[1], kh, kw)
    bias = b.data if b is not None else None
    bias_arg = ConstArg("bias", bias) if bias is not None else NullArg()
    depthwise = node.attrs["group"] != 1
    fn: Callable[..., np.ndarray]
    p: ConvParams | DepthwiseConvParams
    if depthwise:
        filt = np.ascontiguousarray(wdata.transpose(1, 2, 3, 0))  # [1, KH, KW, C_out]
        p = DepthwiseConvParams(idims, Dims(1, kh, kw, c_out), odims, c_out // idims.c,
                                sh, sw, dh, dw, pt, pl, qio, mult, shift)
        kernel, fn = "mcu_depthwise_conv2d_s8", cast(Callable[..., np.ndarray], mcu_depthwise_conv2d_s8)
        macs = odims.h * odims.w * c_out * kh * kw
    else:
        filt = np.ascontiguousarray(wdata.transpose(0, 2, 3, 1))  # OHWI
        p = ConvParams(idims, Dims(c_out, kh, kw, idims.c), odims, sh, sw, dh, dw, pt, pl, qio,
                       mult, shift)
        kernel, fn = "mcu_conv2d_s8", cast(Callable[..., np.ndarray], mcu_conv2d_s8)
        macs = odims.h * odims.w * c_out * kh * kw * idims.c
    in_shape = (idims.n, idims.h, idims.w, idims.c)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, env[x.name].reshape(in_shape), filt, bias).ravel()

    summary = (f"{kh}x{kw} s{sh}x{sw} d{dh}x{dw} pad t{pt} l{pl}"
               f"{' depthwise x' + str(c_out // idims.c) if depthwise else ''}")
    twin: Any = dw_twin if depthwise else conv_twin
    filt_arg = ConstArg("filter", filt)
    if s4 and depthwise:  # the int8 golden; the weights packed per tap, two channels a byte
        kernel, twin, filt_arg = "mcu_depthwise_conv2d_s4", dw4_twin, ConstArg("filter", dw4_twin.pack_filter(filt))
        summary += ", 4-bit weights"
    elif s4:  # the int8 golden; the weights packed, the input offset folded into the sums
        kernel, twin, filt_arg = "mcu_conv2d_s4", conv4_twin, ConstArg("filter", conv4_twin.pack_filter(filt))
        bias_arg = ConstArg("sums", conv4_twin.kernel_sums(filt, bias, qio.input_offset))
        summary += ", 4-bit weights"
    elif node.attrs.get("weight_bits") in INT8_STORAGE:
        summary += f" ({INT8_STORAGE[node.attrs['weight_bits']]})"
    ctx, scratch = scratch_ctx(twin.buffer_size, p, bias, isa)
    operands: dict[str, CArg] = {"ctx": ctx, "input": TensorArg(x.name), "filter": filt_arg,
                                 "bias": bias_arg, "output": TensorArg(y.name)}
    return Prepared(kernel, p, operands, golden, macs=macs * idims.n, scratch=scratch, summary=summary)


def prepare_a16(node: Node, g: Graph) -> Prepared:
    # its int8 Prepare with TFLite's multipliers (4-bit weights: int8 storage, no s16 4-bit kernel)
    base = _prepare(node, a16.tflite(g), "c", False)
    p: Any = base.params
    a16.check_shifts(node, g, p.shift)
    ops = base.operands
    filt = ops["filter"]
    bias = a16.bias64(ops["bias"])
    assert isinstance(filt, ConstArg)
    depthwise = node.attrs["group"] != 1
    fn = mcu_depthwise_conv2d_s16 if depthwise else mcu_conv2d_s16
    x, in_shape = node.inputs[0], (p.input.n, p.input.h, p.input.w, p.input.c)
    b = bias.data if isinstance(bias, ConstArg) else None

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, env[x].reshape(in_shape), filt.data, b).ravel()  # type: ignore[arg-type]

    return Prepared("mcu_depthwise_conv2d_s16" if depthwise else "mcu_conv2d_s16", p,
                    {"input": ops["input"], "filter": filt, "bias": bias, "output": ops["output"]},
                    golden, macs=base.macs, summary=base.summary + (
                        f" ({INT8_STORAGE['a16']})" if node.attrs.get("weight_bits") == 4 else ""))


A16 = a16.Int16(prepare_a16)  # mcu_conv2d_s16 / mcu_depthwise_conv2d_s16
