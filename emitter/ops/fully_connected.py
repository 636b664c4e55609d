"""Fully connected: MatMul with a constant right operand (+ Add bias, tf2onnx's form) and Gemm.

Weights are stored [N, K]. When the input's bytes are not in logical order (a Flatten of an NHWC
feature map), the weight columns are permuted at build time instead of moving the data.

A bias (Gemm's C, QGemm's C, the Add after a MatMul) may have any shape that broadcasts to the
output [.., M, N]; its int32 values go into the accumulator, as the kernel adds a bias:

    # C of shape [], [1], [N], [1, N] (the same row for every output row)  ->  fc(bias [N])
    # C of shape [M, 1], [M, N] (rows differ), x [M, K]                    ->  per row m:
    #     slice(x, row m) -> fc(bias row m) ; concat(rows, axis 0)   (exact: bias before requantize)
    # anything else                                                        ->  refused, naming C

A MatMul by a constant [B, K, N] (one weight matrix per batch) is one fc per batch over slices of
x [B, M, K], concatenated.

4-bit weights (QIn.bits == 4: int4, or uint4 of zero point 8, emitter/lower/qparams.py) lower to
the same fc with attribute weight_bits=4; Prepare then calls mcu_fully_connected_s4 with the
weights packed two per byte (emitter/kernels/mcu_fully_connected_s4.py), the same params, kernel
sums and golden as the int8 kernel. (The int16-activation variant reads them as int8.)
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import onnx

from emitter import quant
from emitter.calls import ConstArg, Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node, QuantParams
from emitter.kernels import mcu_fully_connected_s4 as s4_twin
from emitter.kernels import mcu_fully_connected_s8 as fc_twin
from emitter.kernels.common import QuantIO
from emitter.kernels.mcu_fully_connected_s8 import FCParams, mcu_fully_connected_s8
from emitter.kernels.mcu_fully_connected_s16 import mcu_fully_connected_s16
from emitter.layout import index_map
from emitter.ops import a16, asym_weights
from emitter.ops.base import Attrs, LayoutPlan, LowerCtx, QIn, QNode, per_tensor
from emitter.ops.conv import check_accumulation, check_bias_headroom, scratch_ctx

ONNX_OPS = ("MatMul", "Gemm")
IR_OPS = ("fc",)
GEMM_DEFAULTS = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}
WEIGHT_BITS = "weight_bits"  # fc attribute: 4 for packed 4-bit weights (absent: 8)


def lower(ctx: LowerCtx, q: QNode) -> None:
    x, w = q.inputs[0], q.inputs[1]
    if q.op_type == "Gemm":
        a = Attrs(q.attrs, GEMM_DEFAULTS)
        if a.unknown():
            raise NodeUnsupported(f"unknown attributes {a.unknown()}")
        if a["transA"] or a["alpha"] != 1.0 or a["beta"] != 1.0:
            raise NodeUnsupported("only transA=0, alpha=1, beta=1 Gemm is supported")
        trans_b = bool(a["transB"])
        b = q.bias
        if b is None and len(q.inputs) > 2 and q.inputs[2].data is not None:
            b = q.inputs[2]
        elif b is None and len(q.inputs) > 2 and q.inputs[2].name is not None:
            raise NodeUnsupported(f"C '{bias_name(q)}' is an activation; only a constant C is supported")
    else:
        if q.attrs:
            raise NodeUnsupported(f"unknown attributes {sorted(q.attrs)}")
        trans_b, b = False, q.bias
    if w.data is not None and w.data.ndim == 3 and q.op_type == "MatMul":
        return lower_batched(ctx, q)
    if w.data is not None and w.data.ndim > 2:
        raise NodeUnsupported(f"the constant weight has shape {list(w.data.shape)}: a batched MatMul "
                              "needs an input [B, M, K] and a weight [B, K, N]")
    if x.name is None or w.data is None or w.data.dtype != np.int8 or w.data.ndim != 2:
        raise NodeUnsupported("needs an int8 activation times a constant 2-D int8 weight matrix")
    assert w.quant is not None and x.quant is not None
    weights = w.data.T if not trans_b else w.data  # -> [N, K]
    n_out, k = weights.shape
    if x.shape[-1] != k:
        raise NodeUnsupported(f"input has {x.shape[-1]} features, weights expect {k}")
    axis = w.quant.axis
    if w.quant.scale.size > 1 and axis != (0 if trans_b else 1):
        raise NodeUnsupported(f"per-axis weight scales along axis {axis} are not per output feature")
    bias = bias_rows(b, q, x.quant.s, np.broadcast_to(w.quant.scale, (n_out,)))
    x_name, wquant = x.name, w.quant
    if asym_weights.is_asymmetric(w):  # the weight zero point folded: fc over [x, x] (asym_weights.py)
        weights = asym_weights.fold_zero_point(weights, w.quant.zero_point, 0, 1)
        wquant = asym_weights.symmetric_quant(w.quant)
        x_name = asym_weights.stacked_input(ctx, q, x, weights.shape[1] // k, len(x.shape) - 1)
        k = weights.shape[1]
    check_accumulation(k)
    check_bias_headroom(bias, k)
    wq = QuantParams(wquant.scale, wquant.zero_point, 0 if wquant.scale.size > 1 else None)
    w_name = ctx.const(f"{q.name}_weights", np.ascontiguousarray(weights), wq)
    attrs: dict[str, Any] = {"act_min": q.act_min, "act_max": q.act_max}
    if w.bits == 4 and wquant is w.quant:  # packed 4-bit weights (a folded zero point: int8)
        attrs[WEIGHT_BITS] = 4
    if bias is None or bias.shape[0] == 1:
        b_name = ctx.const(f"{q.name}_bias", bias[0]) if bias is not None else ""
        ctx.emit(q, "fc", [x_name, w_name, b_name], q.output, attrs)
        return
    rows = []  # a bias that differs per output row: one fc per row, each with its own bias row
    for m in range(bias.shape[0]):
        xm = ctx.act(f"{q.output}_x{m}", (1, k), x.quant)
        ctx.emit(q, "slice", [x_name], xm, {"starts": (m,), "ends": (m + 1,), "axes": (0,), "steps": (1,)},
                 name=f"{q.name}_row{m}_slice")
        ym = ctx.act(f"{q.output}_y{m}", (1, n_out), q.out_quant)
        ctx.emit(q, "fc", [xm, w_name, ctx.const(f"{q.name}_bias{m}", bias[m])], ym, attrs,
                 name=f"{q.name}_row{m}")
        rows.append(ym)
    ctx.emit(q, "concat", rows, q.output, {"axis": 0})


def lower_batched(ctx: LowerCtx, q: QNode) -> None:
    """MatMul of x [B, M, K] by a constant [B, K, N] (one weight matrix per batch):
    per batch b, slice(x, b) -> fc(weights[b]) ; concat(batches, axis 0)."""
    x, w = q.inputs[0], q.inputs[1]
    assert w.data is not None and w.quant is not None
    n_batch = w.data.shape[0]
    if x.name is None or x.quant is None or len(x.shape) != 3 or x.shape[0] != n_batch:
        raise NodeUnsupported(f"the constant weight has shape {list(w.data.shape)}: a batched MatMul "
                              f"needs an input [{n_batch}, M, K], got {list(x.shape)}")
    axis = w.quant.axis if w.quant.scale.size > 1 else None
    if axis == 0:
        raise NodeUnsupported("per-axis weight scales along the batch axis are not supported")
    if axis == 1:  # onnxruntime's per_channel=True on a [B, K, N] weight
        raise NodeUnsupported(f"the constant weight {list(w.data.shape)} is quantized per axis 1 (K, the axis "
                              "the MatMul sums over): its scales cannot be taken out of the sum; quantize it "
                              "per tensor (quantize_static per_channel=False) or per output feature (axis 2)")
    wq = QuantParams(w.quant.scale, w.quant.zero_point, None if axis is None else axis - 1)
    outs = []
    for bi in range(n_batch):
        xb = ctx.act(f"{q.output}_x{bi}", (1,) + tuple(x.shape[1:]), x.quant)
        ctx.emit(q, "slice", [x.name], xb, {"starts": (bi,), "ends": (bi + 1,), "axes": (0,), "steps": (1,)},
                 name=f"{q.name}_batch{bi}_slice")
        yb = ctx.act(f"{q.output}_y{bi}", (1,) + tuple(q.out_shape[1:]), q.out_quant)
        node = onnx.NodeProto()
        node.CopyFrom(q.onnx)
        node.name = f"{q.name}_batch{bi}"
        lower(ctx, replace(q, onnx=node, inputs=[QIn(xb, None, x.quant, (1,) + tuple(x.shape[1:])),
                                                 QIn(None, w.data[bi], wq, tuple(w.data.shape[1:]), w.bits)],
                           output=yb, out_shape=(1,) + tuple(q.out_shape[1:])))
        outs.append(yb)
    ctx.emit(q, "concat", outs, q.output, {"axis": 0})


def bias_name(q: QNode) -> str:
    """The ONNX name of the bias tensor, for messages."""
    pos = {"Gemm": 2, "QGemm": 6}.get(q.onnx.op_type)
    return q.onnx.input[pos] if pos is not None and len(q.onnx.input) > pos else "(the Add's bias)"


def bias_rows(b: QIn | None, q: QNode, in_scale: float, w_scale: np.ndarray) -> np.ndarray | None:
    """The bias as int32 [rows, N]: one row when every output row adds the same bias, else one
    per output row (x must then be [M, K]). int32 values quantized with scale in_scale * w_scale[n]
    are taken as stored; any other bias is requantized exactly once, round half away from zero."""
    if b is None or b.data is None:
        return None
    out, shape = q.out_shape, tuple(b.data.shape)
    if len(shape) > len(out) or any(d not in (1, o) for d, o in zip(shape[::-1], out[::-1], strict=False)):
        raise NodeUnsupported(f"bias '{bias_name(q)}' has shape {list(shape)}, which does not "
                              f"broadcast to the output {list(out)}; give it shape [N], [1, N], "
                              "[M, 1] or [M, N]")
    data = b.data
    scale = np.ones(shape) if b.quant is None else per_element(b.quant.scale, b.quant.axis, shape)
    zp = np.zeros(shape) if b.quant is None else per_element(b.quant.zero_point, b.quant.axis, shape)
    n_out = out[-1]
    rows = 1 if all(d == 1 for d in shape[:-1]) else int(np.prod(out[:-1]))
    if rows > 1 and len(out) != 2:
        raise NodeUnsupported(f"bias '{bias_name(q)}' of shape {list(shape)} differs per row of a "
                              f"{len(out)}-D output {list(out)}; per-row biases need a 2-D input")
    target = (rows, n_out)

    def full(a: np.ndarray) -> np.ndarray:  # a, of the bias's shape, over every output row
        every = np.broadcast_to(a.reshape((1,) * (len(out) - len(shape)) + shape), out)
        return every.reshape(-1, n_out)[:rows]

    want = in_scale * w_scale[None, :]
    if data.dtype == np.int32 and (b.quant is None or np.allclose(full(scale), np.broadcast_to(want, target),
                                                                  rtol=1e-4)):
        return np.ascontiguousarray(full(data.astype(np.int32)))  # the stored integers (TFLite)
    real = (full(data.astype(np.float64)) - full(zp.astype(np.float64))) * full(scale.astype(np.float64))
    return quant.round_int32((real / want).reshape(target))


def per_element(values: np.ndarray, axis: int | None, shape: tuple[int, ...]) -> np.ndarray:
    """Per-tensor or per-axis quantization parameters spread over a tensor of `shape`."""
    if axis is None or values.size == 1:
        return np.broadcast_to(values.ravel()[:1].reshape((1,) * len(shape)), shape)
    return np.broadcast_to(values.reshape([-1 if d == axis else 1 for d in range(len(shape))]), shape)


def layout(node: Node, g: Graph) -> LayoutPlan:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    batches = x.size // x.shape[-1]
    need = None if batches == 1 else Layout.identity(x.shape)
    return LayoutPlan((need, None, None), Layout.identity(y.shape))


def prepare(node: Node, g: Graph, isa: str = "any", packed4: bool = True) -> Prepared:
    """The int8 kernel's call, or mcu_fully_connected_s4's for 4-bit weights (`packed4`)."""
    x, w, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    b = g.t(node.inputs[2]) if node.inputs[2] else None
    xq, yq = per_tensor(x, "input", node), per_tensor(y, "output", node)
    assert w.quant is not None and w.data is not None and x.layout is not None
    n_out, k = w.shape
    batches = x.size // k
    weights = w.data
    if batches == 1:  # physical position j holds logical feature idx[j]
        weights = np.ascontiguousarray(weights[:, index_map(x.layout)])
    mult, shift, rounding = quant.layer_multipliers(g.numerics, xq.s, w.quant.scale, yq.s)
    p = FCParams(batches, k, n_out, QuantIO(-xq.zp, yq.zp, node.attrs["act_min"], node.attrs["act_max"],
                                            rounding), int(mult.size > 1), mult, shift)
    bias = b.data if b is not None else None
    sums = fc_twin.kernel_sums(p, weights, bias)  # fits: check_bias_headroom at lowering

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_fully_connected_s8(p, env[x.name].reshape(batches, k), weights, bias).ravel()

    if packed4 and node.attrs.get(WEIGHT_BITS) == 4:
        def golden4(env: dict[str, np.ndarray]) -> np.ndarray:
            return s4_twin.mcu_fully_connected_s4(p, env[x.name].reshape(batches, k), weights, bias).ravel()

        ctx4, scratch4 = scratch_ctx(s4_twin.buffer_size, p, sums, isa)
        return Prepared("mcu_fully_connected_s4", p,
                        {"ctx": ctx4, "input": TensorArg(x.name),
                         "weights": ConstArg("weights_s4", s4_twin.pack_weights(weights)),
                         "kernel_sums": ConstArg("kernel_sums", sums), "output": TensorArg(y.name)},
                        golden4, macs=batches * k * n_out, scratch=scratch4,
                        summary=f"{k} -> {n_out}, batches {batches}, int4 weights")
    ctx, scratch = scratch_ctx(fc_twin.buffer_size, p, sums, isa)
    return Prepared("mcu_fully_connected_s8", p,
                    {"ctx": ctx, "input": TensorArg(x.name),
                     "weights": ConstArg("weights_blocked", fc_twin.pack_weights(weights)),
                     "kernel_sums": ConstArg("kernel_sums", sums), "output": TensorArg(y.name)},
                    golden, macs=batches * k * n_out, scratch=scratch,
                    summary=f"{k} -> {n_out}, batches {batches}")


def prepare_a16(node: Node, g: Graph) -> Prepared:
    base = prepare(node, a16.tflite(g), "c", packed4=False)  # its int8 Prepare, TFLite's multipliers
    p: Any = base.params
    a16.check_shifts(node, g, p.shift)
    ops = base.operands
    packed, sums = ops["weights"], ops["kernel_sums"]
    assert isinstance(packed, ConstArg) and isinstance(sums, ConstArg)
    # the int8 Prepare stores its weights in its kernel's block layout and the bias as kernel sums
    # (emitter/kernels/mcu_fully_connected_s8.py): the int16 kernel takes them row-major, plain
    rows = fc_twin.unpack_weights(packed.data, p.out_features, p.in_features)
    w = ConstArg("weights", rows)
    bias = a16.bias64(ConstArg("bias", fc_twin.bias_of_sums(p, rows, sums.data)))
    b = bias.data if isinstance(bias, ConstArg) else None
    x = node.inputs[0]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_fully_connected_s16(p, env[x].reshape(p.batches, p.in_features), w.data, b).ravel()

    return Prepared("mcu_fully_connected_s16", p, {"input": ops["input"], "weights": w, "bias": bias,
                                                  "output": ops["output"]},
                    golden, macs=base.macs, summary=base.summary)


A16 = a16.Int16(prepare_a16)  # mcu_fully_connected_s16
