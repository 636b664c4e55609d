"""Lower an ONNX model (QDQ or QOperator form) into the quantized IR.

Both forms reduce to one view of every quantized operation, a QNode: its inputs (int8 activations
with QuantParams, or constants with their integer data), its output QuantParams, and the clamp
range of a fused Relu/Clip. The op modules in emitter/ops/ turn a QNode into IR nodes; this module
only knows the two quantization forms:

    # QDQ:  DQ(x) -> op -> [Relu|Clip] -> Q         -> op(x) with clamp, out quant from Q
    # QDQ:  DQ(x) @ DQ(W) -> Add(DQ(b)) -> ... -> Q  -> fully connected with bias
    # QOp:  QLinearConv(x, xs, xzp, w, ws, wzp, ys, yzp, B) -> the same QNode as the QDQ form
    # int8: Reshape/Transpose/... on int8 tensors   -> views, quant passed through
    # uint8 activation (scale, zp)                   -> int8 (scale, zp - 128), exact

Every node that cannot be lowered is collected, and one UnsupportedError lists them all.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx

from emitter.errors import QuantError, UnsupportedError
from emitter.frontend import OnnxModel
from emitter.passes.fold import complete_qop_shapes, float_op_shape, fold_constants
from emitter.ir import Boundary, Graph, Node, QuantParams, Tensor
from emitter.quant import round_half_away

MOVEMENT_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Transpose")
# float ops whose output may stay in their input's int8 form when no QuantizeLinear follows
KEEPS_RANGE = MOVEMENT_OPS + ("Slice", "MaxPool", "AveragePool", "GlobalAveragePool", "ReduceMean",
                             "ReduceMax", "Pad")
INT8_OPS = MOVEMENT_OPS + ("MaxPool", "Pad", "Slice", "Split", "Resize")  # may run on int8 directly
ACTIVATION_OPS = ("Relu", "Clip")

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


class NodeUnsupported(Exception):
    """Raised by an op's lower(); collected into one UnsupportedError."""


@dataclass(frozen=True, eq=False)
class QIn:
    """One input of a quantized operation: an int8 activation (name) or a constant (data)."""
    name: str | None
    data: np.ndarray | None
    quant: QuantParams | None
    shape: tuple[int, ...]

    @property
    def is_const(self) -> bool:
        return self.data is not None


@dataclass(frozen=True, eq=False)
class QNode:
    """A quantized operation in the form-independent view the op modules lower."""
    onnx: onnx.NodeProto
    op_type: str  # the float op it computes: "Conv", "MatMul", ...
    inputs: list[QIn]
    output: str  # IR name of the int8 output
    out_shape: tuple[int, ...]
    out_quant: QuantParams
    act_min: int
    act_max: int
    attrs: dict[str, Any]
    bias: QIn | None = None  # MatMul + Add(bias) fused
    source: str = ""
    more_outputs: tuple[tuple[str, tuple[int, ...], QuantParams], ...] = ()  # Split: outputs 1..n-1

    @property
    def name(self) -> str:
        return self.onnx.name or self.onnx.output[0]


def onnx_attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def to_int8(data: np.ndarray, quant: QuantParams) -> tuple[np.ndarray, QuantParams]:
    """uint8 -> int8 with zero point - 128: exact, the real values are unchanged."""
    if data.dtype == np.uint8:
        data = (data.astype(np.int16) - 128).astype(np.int8)
        quant = QuantParams(quant.scale, (quant.zero_point.astype(np.int32) - 128), quant.axis)
    return data, quant


@dataclass
class LowerCtx:
    """What an op's lower() may use: emit IR nodes and tensors, look up constants."""
    m: OnnxModel
    tensors: dict[str, Tensor] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)

    def unique(self, hint: str) -> str:
        name, k = hint, 1
        while name in self.tensors:
            name, k = f"{hint}__{k}", k + 1
        return name

    def const(self, hint: str, data: np.ndarray, quant: QuantParams | None = None) -> str:
        name = self.unique(hint)
        self.tensors[name] = Tensor(name, tuple(data.shape), str(data.dtype), quant, data)
        return name

    def act(self, hint: str, shape: tuple[int, ...], quant: QuantParams) -> str:
        name = self.unique(hint)
        self.tensors[name] = Tensor(name, tuple(shape), "int8", quant)
        return name

    def emit(self, q: QNode | None, op: str, inputs: list[str], output: str,
             attrs: dict[str, Any], name: str | None = None) -> None:
        base = q.name if q is not None else output
        self.nodes.append(Node(name or base, op, tuple(inputs), (output,),
                               MappingProxyType(dict(attrs)),
                               q.source if q is not None else "", self.m.opset))

    def act_input(self, qi: QIn, q: QNode, what: str) -> str:
        """The IR name of an activation input; constants are materialized as int8 tensors."""
        if qi.name is not None:
            return qi.name
        assert qi.data is not None and qi.quant is not None
        if qi.data.dtype != np.int8 or qi.quant.axis is not None and qi.quant.scale.size > 1:
            raise NodeUnsupported(f"{what} is a constant of type {qi.data.dtype} with per-axis "
                                  "quantization; only per-tensor int8 constants can stand in for "
                                  "an activation")
        return self.const(f"{q.name}_{what}", qi.data, qi.quant)


class Lowerer:
    def __init__(self, m: OnnxModel):
        from emitter.ops import onnx_lowering  # late import: ops import this module

        complete_qop_shapes(m)
        self.m = m
        self.g = m.graph
        self.ctx = LowerCtx(m)
        self.lowering = onnx_lowering()
        self.inits = dict(m.initializers)
        self.folded = fold_constants(m, self.inits)
        self.producer = {o: n for n in self.g.node for o in n.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in self.g.node:
            for i in n.input:
                if i:
                    self.consumers.setdefault(i, []).append(n)
        self.graph_outputs = {o.name for o in self.g.output}
        self.zp_dtype: dict[str, np.dtype] = {}  # tensor -> dtype of the zero point naming it
        self.dq_const: dict[str, QIn] = {}  # float name -> constant QIn
        self.dq_act: dict[str, str] = {}  # float name -> IR int8 tensor
        self.ir_name: dict[str, str] = {}  # ONNX int8 tensor -> IR int8 tensor
        self.done: set[str] = set()  # first outputs of ONNX nodes absorbed into a pattern
        self.problems: list[tuple[str, str, int, str]] = []
        self.boundaries: dict[str, Boundary] = {}
        self.inputs: list[str] = []
        self.outputs: list[str] = []

    # -- quantization parameters ------------------------------------------------------------
    def qparams(self, node: onnx.NodeProto, scale_name: str, zp_name: str | None,
                axis: int | None, for_tensor: str) -> QuantParams:
        where = f"tensor '{for_tensor}' (node '{node.name or node.op_type}')"
        if scale_name not in self.inits:
            raise NodeUnsupported(f"scale '{scale_name}' of '{for_tensor}' is not a constant")
        scale_arr = self.inits[scale_name]
        try:  # float32/16, bfloat16 (ml_dtypes) all convert; strings and bools do not belong here
            scale = np.asarray(scale_arr, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            scale = np.zeros(0)
        if scale_arr.dtype.kind in "bOSU" or scale.size == 0:
            raise QuantError(f"{where}: scale '{scale_name}' is {scale_arr.dtype} with "
                             f"{scale_arr.size} values; scales must be non-empty float tensors: "
                             "re-quantize the model")
        if zp_name and zp_name in self.inits:
            zp_arr = self.inits[zp_name]
            if zp_arr.dtype.kind not in "iu":
                raise QuantError(f"{where}: zero point '{zp_name}' is {zp_arr.dtype}; zero points "
                                 "must be integers: re-quantize the model")
            zp = np.asarray(zp_arr, dtype=np.int64).ravel()
            dtype = zp_arr.dtype
        elif zp_name:
            raise NodeUnsupported(f"zero point '{zp_name}' of '{for_tensor}' is not a constant")
        else:
            zp, dtype = np.zeros(scale.shape, np.int64), np.dtype(np.uint8)
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise QuantError(f"{where}: scale {scale[:4]} must be finite and > 0; re-quantize "
                             "the model with valid calibration data")
        if zp.size not in (1, scale.size):
            raise QuantError(f"{where}: {zp.size} zero points for {scale.size} scales; give one "
                             "zero point per scale")
        self.zp_dtype.setdefault(for_tensor, np.dtype(dtype))
        info = np.iinfo(dtype)
        if zp.min() < info.min or zp.max() > info.max:
            raise QuantError(f"{where}: zero point out of the {dtype} range")
        zp = np.broadcast_to(zp, scale.shape).astype(np.int32)
        return QuantParams(scale, zp, axis if scale.size > 1 else None)

    def dq_axis(self, node: onnx.NodeProto, data_shape: tuple[int, ...]) -> int:
        axis = int(onnx_attrs(node).get("axis", 1))
        return axis + len(data_shape) if axis < 0 else axis

    def out_quant(self, name: str) -> QuantParams:
        """The QuantParams of an int8 tensor a Q/QLinear node produces (constants required)."""
        if name not in self.quant_of:
            raise NodeUnsupported(f"the scale and zero point of '{name}' must be constant initializers")
        return self.quant_of[name]

    def onnx_dtype(self, name: str) -> np.dtype | None:
        """The ONNX element type; com.microsoft QLinear* outputs have no inferred type, so the
        dtype of the zero point that names the tensor tells."""
        return self.m.dtypes.get(name, self.zp_dtype.get(name))

    # -- int8 tensors -----------------------------------------------------------------------
    def int8_tensor(self, onnx_name: str, quant: QuantParams,
                    shape_hint: tuple[int, ...] | None = None, synthetic: bool = False) -> str:
        """IR tensor for an ONNX int8/uint8 activation, created on first sight (synthetic: the
        int8 form mcugen chose for a float tensor of a float chain)."""
        if onnx_name in self.ir_name:
            name = self.ir_name[onnx_name]
            known = self.ctx.tensors[name].quant
            if known is not None and not known.same_as(quant):
                raise QuantError(f"tensor '{onnx_name}' is dequantized with two different scales "
                                 "or zero points; re-export the model with one per tensor")
            return name
        dtype = np.dtype(np.int8) if synthetic else self.onnx_dtype(onnx_name)
        if dtype is not None and dtype == np.uint8:
            quant = QuantParams(quant.scale, quant.zero_point - 128, quant.axis)
        elif dtype is not None and dtype != np.int8:
            raise NodeUnsupported(f"activation '{onnx_name}' has type {dtype}; mcugen runs int8 "
                                  "(or uint8) activations only")
        if quant.scale.size != 1:
            raise QuantError(f"activation '{onnx_name}' is quantized per-axis; activations must be "
                             "per-tensor (re-quantize with per-tensor activations)")
        if not -128 <= quant.zp <= 127:
            raise QuantError(f"activation '{onnx_name}' has zero point {quant.zp} (as int8), outside "
                             "[-128, 127]; its zero point does not fit its int8/uint8 type: "
                             "re-quantize the model")
        shape = self.m.shapes.get(onnx_name, shape_hint)
        if shape == ():
            shape = (1,)  # a scalar activation is stored as one element
        if shape is None:
            raise NodeUnsupported(f"shape of '{onnx_name}' is unknown after shape inference")
        name = self.ctx.act(onnx_name, shape, quant)
        if not synthetic:  # a float chain's tensor is reached through dq_act, not as int8 ONNX data
            self.ir_name[onnx_name] = name
        return name

    # -- main walk --------------------------------------------------------------------------
    def run(self) -> Graph:
        self.collect_quant()
        init_names = set(self.inits)
        for vi in self.g.input:
            if vi.name in init_names:
                continue
            self.lower_graph_input(vi.name)
        failed: set[str] = set()  # outputs of failed nodes: their consumers are not reported again
        for node in self.g.node:
            if node.output[0] in self.done:
                continue
            if any(i in failed for i in node.input):
                failed.update(node.output)
                continue
            self.absorbed: list[onnx.NodeProto] = []
            try:
                self.lower_node(node)
            except NodeUnsupported as exc:
                self.problems.append((node.name or node.output[0], node.op_type, self.opset_of(node),
                                      str(exc)))
                failed.update(node.output)
                failed.update(o for a in self.absorbed for o in a.output)
        for vi in self.g.output:
            if vi.name in failed:
                continue
            try:
                self.lower_graph_output(vi.name)
            except NodeUnsupported as exc:
                self.problems.append((vi.name, "graph output", self.m.opset, str(exc)))
        if self.problems:
            raise UnsupportedError(self.problems)
        return Graph(MappingProxyType(dict(self.ctx.tensors)), tuple(self.ctx.nodes),
                     tuple(self.inputs), tuple(self.outputs), MappingProxyType(self.boundaries),
                     self.m.opset)

    def opset_of(self, node: onnx.NodeProto) -> int:
        for o in self.m.model.opset_import:
            if o.domain == node.domain or (node.domain in ("", "ai.onnx") and o.domain in ("", "ai.onnx")):
                return int(o.version)
        return self.m.opset

    def collect_quant(self) -> None:
        """Give every int8 activation its QuantParams from the Q/DQ/QLinear node that names them,
        then pass them through int8 data-movement ops in both directions."""
        found: dict[str, QuantParams] = {}
        for node in self.g.node:
            try:
                if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
                    t = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
                    if t in self.inits:
                        continue
                    zp = node.input[2] if len(node.input) > 2 else None
                    found.setdefault(t, self.qparams(node, node.input[1], zp, None, t))
                elif node.op_type in QOP_SIGNATURES:
                    check_qop_arity(node)
                    sig = QOP_SIGNATURES[node.op_type]
                    acts = sig["acts"]
                    if acts == "concat":
                        acts = [(i, i + 1, i + 2) for i in range(2, len(node.input), 3)]
                    for d, s, z in acts:
                        if node.input[d] not in self.inits:
                            found.setdefault(node.input[d], self.qparams(node, node.input[s],
                                                                         node.input[z], None, node.input[d]))
                    s, z = sig["out"]
                    found.setdefault(node.output[0], self.qparams(node, node.input[s],
                                                                  node.input[z] if len(node.input) > z else None,
                                                                  None, node.output[0]))
            except NodeUnsupported:
                continue  # reported when the node itself is lowered
        changed = True
        while changed:
            changed = False
            for node in self.g.node:
                if node.op_type not in INT8_OPS or not node.input:
                    continue
                a = node.input[0]
                if self.m.dtypes.get(a) not in (np.dtype(np.int8), np.dtype(np.uint8)):
                    continue
                for b in (o for o in node.output if o):
                    if a in found and b not in found:
                        found[b], changed = found[a], True
                    elif b in found and a not in found:
                        found[a], changed = found[b], True
        self.quant_of = found

    def lower_graph_input(self, name: str) -> None:
        dtype = self.m.dtypes.get(name)
        if dtype in (np.dtype(np.int8), np.dtype(np.uint8)):
            if name not in self.quant_of:
                raise QuantError(f"graph input '{name}' is {dtype} but no node gives its scale/zero point")
            ir = self.int8_tensor(name, self.quant_of[name])
            self.inputs.append(ir)
            self.boundaries[ir] = Boundary(False, dtype == np.uint8, name)
            return
        users = self.consumers.get(name, [])
        if len(users) == 1 and users[0].op_type == "QuantizeLinear":
            q = users[0]
            ir = self.int8_tensor(q.output[0], self.out_quant(q.output[0]))
            self.inputs.append(ir)
            self.boundaries[ir] = Boundary(True, self.m.dtypes.get(q.output[0]) == np.uint8, name)
            self.done.add(q.output[0])
            return
        ops = sorted({u.op_type for u in users})
        self.problems.append((name, "graph input", self.m.opset,
                              f"float input read by {ops}, not by one QuantizeLinear; mcugen needs "
                              "a fully quantized model (onnxruntime quantize_static)"))

    def lower_graph_output(self, name: str) -> None:
        if name in self.ir_name:
            ir = self.ir_name[name]
            self.outputs.append(ir)
            self.boundaries[ir] = Boundary(False, self.onnx_dtype(name) == np.uint8, name)
        elif name in self.dq_act:
            ir = self.dq_act[name]
            self.outputs.append(ir)
            src = self.producer[name].input[0]
            self.boundaries[ir] = Boundary(True, self.onnx_dtype(src) == np.uint8, name)
        else:
            raise NodeUnsupported("the graph output is neither an int8 tensor nor the "
                                  "DequantizeLinear of one")

    def lower_node(self, node: onnx.NodeProto) -> None:
        op = node.op_type
        if node.output and node.output[0] in self.folded:
            return
        if op == "DequantizeLinear":
            self.lower_dq(node)
        elif op == "QuantizeLinear":
            self.lower_lone_q(node)
        elif op in QOP_SIGNATURES:
            self.lower_qop(node)
        elif node.input and node.input[0] in self.ir_name and op in INT8_OPS:
            self.lower_int8(node)
        else:
            self.lower_qdq(node)

    def lower_dq(self, node: onnx.NodeProto) -> None:
        src, out = node.input[0], node.output[0]
        zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
        if src in self.inits:
            data = self.inits[src]
            if data.size == 0:
                raise QuantError(f"constant '{src}' (node '{node.name}') is empty (shape "
                                 f"{list(data.shape)}); re-export the model with its weights")
            axis = self.dq_axis(node, data.shape)
            quant = self.qparams(node, node.input[1], zp, axis, src)
            if quant.axis is not None and not 0 <= quant.axis < data.ndim:
                raise QuantError(f"'{src}' (node '{node.name}'): per-axis quantization along axis "
                                 f"{quant.axis} of a {data.ndim}-D tensor; fix the axis attribute")
            if quant.axis is not None and data.shape[quant.axis] != quant.scale.size:
                raise QuantError(f"'{src}' (node '{node.name}'): {quant.scale.size} per-axis scales "
                                 f"for axis {quant.axis} of length {data.shape[quant.axis]}; give "
                                 "one scale per channel")
            if data.dtype == np.int32 and np.any(quant.zero_point != 0):
                # int32 (bias) with a zero point: q - zp with zero point 0 is the same real value
                zp_b = quant.zero_point.astype(np.int64)
                if quant.axis is not None:
                    zp_b = zp_b.reshape([-1 if d == quant.axis else 1 for d in range(data.ndim)])
                folded = data.astype(np.int64) - zp_b
                if folded.min() < -(1 << 31) or folded.max() >= 1 << 31:
                    raise QuantError(f"'{src}' (node '{node.name}'): int32 values minus their zero "
                                     "point overflow int32; re-quantize with zero point 0")
                data = folded.astype(np.int32)
                quant = QuantParams(quant.scale, np.zeros_like(quant.zero_point), quant.axis)
            data, quant = to_int8(data, quant)
            self.dq_const[out] = QIn(None, data, quant, tuple(data.shape))
        else:
            if src not in self.ir_name:
                raise NodeUnsupported(f"dequantizes '{src}', which is not an int8 activation "
                                      "mcugen produced (is an upstream node unsupported?)")
            self.dq_act[out] = self.ir_name[src]

    def lower_lone_q(self, node: onnx.NodeProto) -> None:
        """A QuantizeLinear not absorbed by a pattern: a requantization of a dequantized tensor."""
        src, out = node.input[0], node.output[0]
        if src in self.dq_act:
            x = self.dq_act[src]
            y = self.int8_tensor(out, self.out_quant(out))
            self.ctx.emit(None, "requantize", [x], y, {"act_min": -128, "act_max": 127},
                          name=node.name or out)
            return
        raise NodeUnsupported(f"quantizes float tensor '{src}' that does not come from a "
                              "DequantizeLinear; the producer runs in float, which mcugen does "
                              "not support yet")

    def qin(self, float_name: str) -> QIn:
        if float_name in self.dq_const:
            return self.dq_const[float_name]
        if float_name in self.dq_act:
            ir = self.dq_act[float_name]
            t = self.ctx.tensors[ir]
            return QIn(ir, None, t.quant, t.shape)
        if float_name in self.inits:
            arr = self.inits[float_name]
            return QIn(None, arr, None, tuple(arr.shape))
        if float_name == "":
            return QIn(None, None, None, ())
        raise NodeUnsupported(f"input '{float_name}' is a float tensor that no DequantizeLinear "
                              "produces; mcugen needs a fully quantized (QDQ) model")

    def single_consumer(self, t: str) -> onnx.NodeProto | None:
        users = self.consumers.get(t, [])
        if len(users) == 1 and t not in self.graph_outputs:
            return users[0]
        return None

    def lower_qdq(self, node: onnx.NodeProto) -> None:
        """DQ inputs -> node -> [Add bias] -> [Relu/Clip]* -> Q."""
        if node.op_type not in self.lowering:
            raise NodeUnsupported(f"op type {node.op_type} is not supported")
        if len([o for o in node.output if o]) > 1:
            return self.lower_multi(node)
        absorbed: list[onnx.NodeProto] = []
        t = node.output[0]
        bias = None
        lo, hi = -math.inf, math.inf
        nxt = self.single_consumer(t)
        if node.op_type == "MatMul" and nxt is not None and nxt.op_type == "Add":
            other = nxt.input[1] if nxt.input[0] == t else nxt.input[0]
            if other in self.dq_const and str(getattr(self.dq_const[other].data, "dtype", "")) == "int32":
                bias = self.dq_const[other]
                absorbed.append(nxt)
                t = nxt.output[0]
                nxt = self.single_consumer(t)
        while nxt is not None and nxt.op_type in ACTIVATION_OPS:
            a, b = self.activation_range(nxt)
            lo, hi = max(lo, a), min(hi, b)
            absorbed.append(nxt)
            t = nxt.output[0]
            nxt = self.single_consumer(t)
        if (nxt is None or nxt.op_type != "QuantizeLinear") and not absorbed and bias is None:
            synthetic = self.synthetic_quant(node)
            if synthetic is not None:  # a float chain: give this output an exact int8 form
                q = self.make_qnode(node, node.op_type, [self.qin(i) for i in node.input], t, synthetic,
                                    lo, hi, None, node.op_type + " (float chain)", synthetic=True)
                self.lowering[node.op_type](self.ctx, q)
                self.dq_act[t] = q.output
                return
        if nxt is None or nxt.op_type != "QuantizeLinear":
            raise NodeUnsupported(f"output '{node.output[0]}' is not quantized (no QuantizeLinear "
                                  "after it); float islands are not supported yet")
        absorbed.append(nxt)
        self.absorbed = absorbed
        self.done.update(a.output[0] for a in absorbed)
        out = nxt.output[0]
        out_q = self.out_quant(out)
        data_inputs = [i for i in node.input]
        q = self.make_qnode(node, node.op_type, [self.qin(i) for i in data_inputs], out, out_q,
                            lo, hi, bias, "+".join([node.op_type] + [a.op_type for a in absorbed]))
        self.lowering[node.op_type](self.ctx, q)

    def lower_multi(self, node: onnx.NodeProto) -> None:
        """A node with several outputs (Split): each output quantized by its own Q (QDQ form) or
        int8 already (int8 form)."""
        outs = []
        for o in node.output:
            if o in self.quant_of and self.onnx_dtype(o) in (np.dtype(np.int8), np.dtype(np.uint8)):
                outs.append((o, self.quant_of[o]))
                continue
            q = self.single_consumer(o)
            if q is None or q.op_type != "QuantizeLinear":
                raise NodeUnsupported(f"output '{o}' is not quantized (no QuantizeLinear after it)")
            self.absorbed.append(q)
            self.done.add(q.output[0])
            outs.append((q.output[0], self.out_quant(q.output[0])))
        first = self.make_qnode(node, node.op_type, [self.qin(i) if i not in self.ir_name else
                                                     self.act_qin(i) for i in node.input],
                                outs[0][0], outs[0][1], -math.inf, math.inf, None, node.op_type)
        more = []
        for o, oq in outs[1:]:
            ir = self.int8_tensor(o, oq)
            t = self.ctx.tensors[ir]
            assert t.quant is not None
            more.append((ir, t.shape, t.quant))
        self.lowering[node.op_type](self.ctx, replace(first, more_outputs=tuple(more)))

    def act_qin(self, onnx_name: str) -> QIn:
        ir = self.ir_name[onnx_name]
        t = self.ctx.tensors[ir]
        return QIn(ir, None, t.quant, t.shape)

    def synthetic_quant(self, node: onnx.NodeProto) -> QuantParams | None:
        """The int8 form of a float output no QuantizeLinear follows, where it is exact or nearly:
        movement and pooling ops keep their input's scale (their values stay in its range); a
        unary function gets the scale that spans its 256 possible values."""
        src = node.input[0] if node.input else ""
        if src not in self.dq_act:
            return None
        xq = self.ctx.tensors[self.dq_act[src]].quant
        assert xq is not None
        if node.op_type in KEEPS_RANGE:
            return xq
        from emitter.ops.lut import FUNCTIONS

        if node.op_type not in FUNCTIONS:
            return None
        defaults, build = FUNCTIONS[node.op_type]
        fn = build({**defaults, **onnx_attrs(node)})
        vals = np.array([fn(xq.s * (c - xq.zp)) for c in range(-128, 128)], dtype=np.float64)
        lo, hi = min(0.0, float(np.nanmin(vals))), max(0.0, float(np.nanmax(vals)))
        if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
            return None
        scale = (hi - lo) / 255.0
        zp = int(np.clip(round_half_away(-128 - lo / scale), -128, 127))
        return QuantParams.per_tensor(scale, zp)

    def make_qnode(self, node: onnx.NodeProto, op_type: str, inputs: list[QIn], out_onnx: str,
                   out_q: QuantParams, lo: float, hi: float, bias: QIn | None, source: str,
                   shape_hint: tuple[int, ...] | None = None, synthetic: bool = False) -> QNode:
        out = self.int8_tensor(out_onnx, out_q, shape_hint, synthetic)
        oq = self.ctx.tensors[out].quant
        assert oq is not None
        act_min, act_max = -128, 127
        if lo > -math.inf:
            act_min = max(act_min, oq.zp + round_half_away(lo / oq.s))
        if hi < math.inf:
            act_max = min(act_max, oq.zp + round_half_away(hi / oq.s))
        if act_min > act_max:
            raise NodeUnsupported(f"the fused clamp range [{lo}, {hi}] is empty after quantization")
        return QNode(node, op_type, inputs, out, self.ctx.tensors[out].shape, oq, act_min, act_max,
                     onnx_attrs(node), bias, source)

    def activation_range(self, node: onnx.NodeProto) -> tuple[float, float]:
        if node.op_type == "Relu":
            return 0.0, math.inf
        attrs = onnx_attrs(node)
        lo, hi = attrs.get("min", -math.inf), attrs.get("max", math.inf)
        for pos in (1, 2):
            if len(node.input) > pos and node.input[pos]:
                name = node.input[pos]
                if name in self.dq_const:
                    qi = self.dq_const[name]
                    assert qi.data is not None and qi.quant is not None
                    if qi.data.size != 1:
                        raise NodeUnsupported(f"Clip bound '{name}' must be a scalar")
                    val = float((qi.data.astype(np.float64).ravel() - qi.quant.zero_point) @ qi.quant.scale)
                elif name in self.inits:
                    if np.asarray(self.inits[name]).size != 1:
                        raise NodeUnsupported(f"Clip bound '{name}' must be a scalar")
                    val = float(np.asarray(self.inits[name]).ravel()[0])
                else:
                    raise NodeUnsupported(f"Clip bound '{name}' is not a constant")
                if pos == 1:
                    lo = val
                else:
                    hi = val
        return float(lo), float(hi)

    def lower_qop(self, node: onnx.NodeProto) -> None:
        sig = QOP_SIGNATURES[node.op_type]
        check_qop_arity(node)
        acts = sig["acts"]
        if acts == "concat":
            acts = [(i, i + 1, i + 2) for i in range(2, len(node.input), 3)]
        inputs = []
        for d, s, z in acts:
            name = node.input[d]
            if name in self.inits:
                data = self.inits[name]
                axis = 0 if node.op_type == "QLinearConv" else (1 if data.ndim == 2 else None)
                zp_name = node.input[z] if len(node.input) > z else None
                quant = self.qparams(node, node.input[s], zp_name, axis, name)
                if node.op_type == "QGemm" and onnx_attrs(node).get("transB", 0) and quant.axis == 1:
                    quant = QuantParams(quant.scale, quant.zero_point, 0)
                data, quant = to_int8(data, quant)
                inputs.append(QIn(None, data, quant, tuple(data.shape)))
            else:
                if name not in self.ir_name:
                    raise NodeUnsupported(f"input '{name}' is not an int8 activation mcugen produced")
                ir = self.ir_name[name]
                t = self.ctx.tensors[ir]
                inputs.append(QIn(ir, None, t.quant, t.shape))
        bias = None
        if "bias" in sig and len(node.input) > sig["bias"] and node.input[sig["bias"]]:
            b = self.inits.get(node.input[sig["bias"]])
            if b is None:
                raise NodeUnsupported("bias is not a constant")
            bias = QIn(None, b.astype(np.int32), None, tuple(b.shape))
        out = node.output[0]
        hint = None if out in self.m.shapes else float_op_shape(
            sig["op"], [qi.shape for qi in inputs], onnx_attrs(node), self.m.opset)
        q = self.make_qnode(node, sig["op"], inputs, out, self.out_quant(out), -math.inf, math.inf,
                            bias, node.op_type, hint)
        if node.op_type == "QLinearGlobalAveragePool" and q.attrs.get("channels_last", 0):
            raise NodeUnsupported("channels_last=1 is not supported")
        self.lowering[sig["op"]](self.ctx, q)

    def lower_int8(self, node: onnx.NodeProto) -> None:
        """Data movement directly on int8 tensors: the quant params pass through unchanged."""
        if len([o for o in node.output if o]) > 1:
            return self.lower_multi(node)
        src = self.ir_name[node.input[0]]
        quant = self.ctx.tensors[src].quant
        assert quant is not None
        t = self.ctx.tensors[src]
        inputs = [QIn(src, None, quant, t.shape)] + [self.qin(i) for i in node.input[1:]]
        out_q = self.quant_of.get(node.output[0])
        if out_q is None:
            raise NodeUnsupported(f"no scale/zero point is known for '{node.output[0]}'")
        q = self.make_qnode(node, node.op_type, inputs, node.output[0], out_q, -math.inf, math.inf,
                            None, node.op_type)
        self.lowering[node.op_type](self.ctx, q)


def check_qop_arity(node: onnx.NodeProto) -> None:
    sig = QOP_SIGNATURES[node.op_type]
    if sig["acts"] == "concat":
        ok = len(node.input) >= 5 and (len(node.input) - 2) % 3 == 0
        need = "2 + 3 per input"
    else:
        need_n = max(max(t) for t in sig["acts"] + [sig["out"]]) + 1
        ok, need = len(node.input) >= need_n, str(need_n)
    if not ok:
        raise NodeUnsupported(f"{node.op_type} has {len(node.input)} inputs, expects {need}")


def lower(m: OnnxModel) -> Graph:
    return Lowerer(m).run()
