"""QOperator form: com.microsoft / ONNX QLinear* nodes carry their scales and zero points as inputs.

Each becomes the same QNode as the QDQ form of the float op it computes:

    # QLinearConv(x, xs, xzp, w, ws, wzp, ys, yzp, B)   -> QNode(Conv, [x, w], bias B, out (ys, yzp))
    # QGemm(a, as, azp, b, bs, bzp, C, ys, yzp)          -> QNode(Gemm, [a, b], bias C)
    # QLinearConcat(ys, yzp, (x, xs, xzp)...)            -> QNode(Concat, [x...])
    # QLinearX(x, xs, xzp[, ...], ys, yzp)               -> QNode(X, [x...])
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import onnx

from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import QuantParams
from emitter.lower.qparams import onnx_attrs, to_int8
from emitter.lower.state import LowerState
from emitter.onnx.fold import record_inferred
from emitter.onnx.load import OnnxModel
from emitter.ops.base import QIn

# QOperator input positions: (activation inputs as (data, scale, zp)), (output scale, zp), const inputs
QOP_SIGNATURES: dict[str, dict[str, Any]] = {
    "QLinearConv": {"op": "Conv", "acts": [(0, 1, 2), (3, 4, 5)], "out": (6, 7), "bias": 8},
    "QLinearMatMul": {"op": "MatMul", "acts": [(0, 1, 2), (3, 4, 5)], "out": (6, 7)},
    "QGemm": {"op": "Gemm", "acts": [(0, 1, 2), (3, 4, 5)], "out": (7, 8), "bias": 6},
    "QLinearAdd": {"op": "Add", "acts": [(0, 1, 2), (3, 4, 5)], "out": (6, 7)},
    "QLinearMul": {"op": "Mul", "acts": [(0, 1, 2), (3, 4, 5)], "out": (6, 7)},
    "QLinearAveragePool": {"op": "AveragePool", "acts": [(0, 1, 2)], "out": (3, 4)},
    "QLinearGlobalAveragePool": {"op": "GlobalAveragePool", "acts": [(0, 1, 2)], "out": (3, 4)},
    "QLinearSigmoid": {"op": "Sigmoid", "acts": [(0, 1, 2)], "out": (3, 4)},
    "QLinearSoftmax": {"op": "Softmax", "acts": [(0, 1, 2)], "out": (3, 4)},
    "QLinearLeakyRelu": {"op": "LeakyRelu", "acts": [(0, 1, 2)], "out": (3, 4)},
    "QLinearConcat": {"op": "Concat", "acts": "concat", "out": (0, 1)},
}


def qop_acts(node: onnx.NodeProto) -> list[tuple[int, int, int]]:
    """(data, scale, zero point) input positions of every activation input."""
    acts = QOP_SIGNATURES[node.op_type]["acts"]
    return [(i, i + 1, i + 2) for i in range(2, len(node.input), 3)] if acts == "concat" else acts


def check_qop_arity(node: onnx.NodeProto) -> None:
    sig = QOP_SIGNATURES[node.op_type]
    if sig["acts"] == "concat":
        ok = len(node.input) >= 5 and (len(node.input) - 2) % 3 == 0
        need = "2 + 3 per input"
    else:
        need_n = max(max(t) for t in sig["acts"] + [sig["out"]]) + 1
        if node.domain == "com.microsoft" and node.op_type != "QGemm":
            need_n -= 1  # the output zero point is optional: 0, of the input's type
        ok, need = len(node.input) >= need_n, str(need_n)
    if not ok:
        raise NodeUnsupported(f"{node.op_type} has {len(node.input)} inputs, expects {need}")


def collect_quant(s: LowerState, node: onnx.NodeProto, found: dict[str, QuantParams],
                  named_by: dict[str, str] | None = None) -> None:
    """The QuantParams a QLinear node gives its activation inputs and its output. An int8/uint8
    graph input with no QuantizeLinear takes them from the QLinear nodes that read it; `named_by`
    (tensor -> the QLinear node that first gave its quantization) catches two QLinear nodes that
    disagree on one tensor (onnxruntime would read its integers two ways)."""
    check_qop_arity(node)
    sc, z = QOP_SIGNATURES[node.op_type]["out"]
    given = [(node.input[d], node.input[dsc], node.input[dz]) for d, dsc, dz in qop_acts(node)
             if node.input[d] not in s.inits]
    given.append((node.output[0], node.input[sc], node.input[z] if len(node.input) > z else None))
    label = node.name or node.output[0]
    if len(node.input) <= z or not node.input[z]:  # no output zero point: 0, of the input's type
        first = node.input[qop_acts(node)[0][0]]
        in_type = s.onnx_dtype(first)
        zps = [node.input[dz] for _, _, dz in qop_acts(node) if node.input[dz] in s.inits]
        s.zp_dtype.setdefault(node.output[0], in_type if in_type is not None
                              else s.inits[zps[0]].dtype if zps else np.dtype(np.uint8))
    for t, scale, zp in given:
        quant = s.qparams(node, scale, zp, None, t)
        if named_by is not None and t in named_by and t in found and not found[t].same_as(quant):
            a = found[t]
            raise QuantError(f"tensor '{t}': node '{named_by[t]}' quantizes it with scale {a.s:.6g}, zero "
                             f"point {a.zp}, node '{label}' ({node.op_type}) with scale {quant.s:.6g}, zero "
                             f"point {quant.zp}; the QLinear nodes disagree on its quantization: give them one "
                             "scale and zero point for it (re-export the model)")
        if t not in found:
            found[t] = quant
            if named_by is not None:
                named_by[t] = label


def lower_qop(s: LowerState, node: onnx.NodeProto) -> None:
    sig = QOP_SIGNATURES[node.op_type]
    check_qop_arity(node)
    inputs = []
    for d, sc, z in qop_acts(node):
        name = node.input[d]
        if name in s.inits:
            data = s.inits[name]
            axis = 0 if node.op_type == "QLinearConv" else (1 if data.ndim == 2 else None)
            zp_name = node.input[z] if len(node.input) > z else None
            if zp_name and zp_name in s.inits and s.inits[zp_name].dtype != data.dtype:
                raise QuantError(f"constant '{name}' (node '{node.name or node.op_type}') is {data.dtype} "
                                 f"but its zero point '{zp_name}' is {s.inits[zp_name].dtype}; store "
                                 "both in one type: re-export the model")
            quant = s.qparams(node, node.input[sc], zp_name, axis, name)
            if node.op_type == "QGemm" and onnx_attrs(node).get("transB", 0) and quant.axis == 1:
                quant = QuantParams(quant.scale, quant.zero_point, 0)
            if quant.scale.size > 1 and (quant.axis is None or quant.axis >= data.ndim
                                         or data.shape[quant.axis] != quant.scale.size):
                raise QuantError(f"constant '{name}' (node '{node.name or node.op_type}') of shape "
                                 f"{list(data.shape)} has {quant.scale.size} scales, which match no "
                                 "per-channel axis of it; give one scale, or one per output channel")
            data, quant = to_int8(data, quant)
            inputs.append(QIn(None, data, quant, tuple(data.shape)))
        else:
            if name not in s.ir_name:
                raise NodeUnsupported(f"input '{name}' is not an int8 activation mcugen produced")
            inputs.append(s.act_qin(name))
    bias = None
    if "bias" in sig and len(node.input) > sig["bias"] and node.input[sig["bias"]]:
        b = s.inits.get(node.input[sig["bias"]])
        if b is None:
            raise NodeUnsupported("bias is not a constant")
        if b.dtype != np.int32:
            raise QuantError(f"bias '{node.input[sig['bias']]}' of node '{node.name or node.op_type}' is "
                             f"{b.dtype}; {node.op_type} takes an int32 bias (scale: input scale x weight "
                             "scale): re-export the model")
        bias = QIn(None, b.astype(np.int32), None, tuple(b.shape))
    out = node.output[0]
    hint = None if out in s.m.shapes else float_op_shape(
        sig["op"], [qi.shape for qi in inputs], onnx_attrs(node), s.m.opset)
    channels_last = onnx_attrs(node).get("channels_last", 0)
    if channels_last:  # com.microsoft pooling: 0 (the default) is NCHW, as the float op
        raise NodeUnsupported(f"channels_last={channels_last} (NHWC data) is not supported; export "
                              "the model with channels_last=0 (NCHW, the default)")
    q = s.make_qnode(node, sig["op"], inputs, out, s.out_quant(out), -math.inf, math.inf,
                     bias, node.op_type, hint)
    q = replace(q, attrs={k: v for k, v in q.attrs.items() if k != "channels_last"})
    s.lower_qnode(sig["op"], q)


def complete_qop_shapes(m: OnnxModel, rounds: int = 8) -> None:
    """com.microsoft QLinear* ops have no ONNX shape inference, so nothing after them gets a
    shape. Give their outputs the shape of the float op they compute and infer again."""
    from onnx import helper

    for _ in range(rounds):
        added = []
        for node in m.graph.node:
            out = node.output[0] if node.output else ""
            if node.op_type not in QOP_SIGNATURES or not out or out in m.shapes:
                continue
            sig = QOP_SIGNATURES[node.op_type]
            shapes = [m.shapes.get(node.input[d]) for d, _, _ in qop_acts(node)]
            if any(sh is None for sh in shapes):
                continue
            shape = float_op_shape(sig["op"], shapes, onnx_attrs(node), m.opset)  # type: ignore[arg-type]
            zp = node.input[sig["out"][1]] if len(node.input) > sig["out"][1] else ""
            first = node.input[qop_acts(node)[0][0]]  # no output zero point: the input's type
            dtype = m.initializers[zp].dtype if zp in m.initializers else m.dtypes.get(first, np.dtype(np.uint8))
            if shape is not None:
                added.append(helper.make_tensor_value_info(
                    out, helper.np_dtype_to_tensor_dtype(dtype), list(shape)))
        if not added:
            return
        model = onnx.ModelProto()
        model.CopyFrom(m.model)
        model.graph.value_info.extend(added)
        record_inferred(m, model, dtypes=True)


def float_op_shape(op_type: str, shapes: list[tuple[int, ...]], attrs: dict[str, Any],
                   opset: int, consts: dict[int, np.ndarray] | None = None,
                   absent: frozenset[int] = frozenset()) -> tuple[int, ...] | None:
    """Output shape of the float op a QOperator node computes (com.microsoft ops have no ONNX
    shape inference), or of an int8 op after one (its input shapes known only in the IR):
    onnx.shape_inference on a one-node float graph. `consts`: input positions whose values shape
    inference needs (Reshape's shape), given as initializers; `absent`: omitted optional inputs."""
    from onnx import TensorProto, helper, numpy_helper

    consts = consts or {}
    names = ["" if k in absent else f"i{k}" for k in range(len(shapes))]
    keep = {k: v for k, v in attrs.items() if k not in ("channels_last",)}
    try:
        node = helper.make_node(op_type, names, ["y"], **keep)
        inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
                  for k, (n, s) in enumerate(zip(names, shapes, strict=False)) if n and k not in consts]
        inits = [numpy_helper.from_array(np.asarray(v), f"i{k}") for k, v in consts.items() if k not in absent]
        out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        graph = helper.make_graph([node], "shape", inputs, [out], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(opset, 13))])
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        dims = inferred.graph.output[0].type.tensor_type.shape.dim
        shape = tuple(int(d.dim_value) for d in dims)
        return shape if dims and all(d.HasField("dim_value") for d in dims) else None
    except Exception:
        return None
