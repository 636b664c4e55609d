"""QDQ form: float ops between DequantizeLinear (DQ) and QuantizeLinear (Q) nodes.

DQ and Q themselves:

    # DQ(initializer)       -> a constant QIn: its integer data and QuantParams (qparams.py)
    # DQ(x), x int8         -> x: the float tensor stands for the int8 activation
    # DQ(x) -> Q            -> requantize(x) into Q's scale and zero point
    # DQ(initializer) -> Reshape|Flatten|Squeeze|Unsqueeze|Identity|Transpose ...
    #                       -> a constant QIn of the moved integers (per-axis: the axis follows)

Every other node is matched against RULES, in order; the first rule whose match function accepts
it lowers it. "clamp" is the range of the Relu/Clip chain, quantized to the output's int8 codes: the
op is lowered without it and a standalone clamp (a requantize with equal quant in and out) follows
it; passes/fuse.py folds it into the op. A clamp spanning all of int8 is no clamp and not emitted.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx

from emitter.errors import NodeUnsupported
from emitter.ir import ACT_RANGE, QuantParams
from emitter.lower.float_chains import lower_float_chain, lower_multi, synthetic_quant
from emitter.lower.qparams import dequantized_const, onnx_attrs
from emitter.lower.state import LowerState
from emitter.ops import unquantized_hint
from emitter.ops.base import QIn

ACTIVATION_OPS = ("Relu", "Clip")


def collect_quant(s: LowerState, node: onnx.NodeProto, found: dict[str, QuantParams]) -> None:
    """The QuantParams a Q or DQ node gives the int8 activation it writes or reads."""
    t = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
    if t in s.inits:
        return
    zp = node.input[2] if len(node.input) > 2 else None
    found.setdefault(t, s.qparams(node, node.input[1], zp, None, t))


def lower_dq(s: LowerState, node: onnx.NodeProto) -> None:
    src, out = node.input[0], node.output[0]
    if src in s.inits:
        s.dq_const[out] = dequantized_const(s.inits, s.zp_dtype, node)
    else:
        if src not in s.ir_name:
            raise NodeUnsupported(f"dequantizes '{src}', which is not an int8 activation "
                                  "mcugen produced (is an upstream node unsupported?)")
        s.dq_act[out] = s.ir_name[src]


CONST_VIEWS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose")


def is_const_view(s: LowerState, node: onnx.NodeProto) -> bool:
    return node.op_type in CONST_VIEWS and bool(node.input) and node.input[0] in s.dq_const


def _run(s: LowerState, node: onnx.NodeProto, first: np.ndarray) -> np.ndarray:
    """The node on `first` (its other inputs: initializers), with onnx's reference evaluator."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    rest = [i for i in node.input[1:] if i]
    if any(i not in s.inits for i in rest):
        raise NodeUnsupported(f"reshapes the constant '{node.input[0]}' by a shape that is not constant")
    feeds = [numpy_helper.from_array(first, node.input[0])]
    feeds += [numpy_helper.from_array(np.asarray(s.inits[i]), i) for i in rest]
    g = helper.make_graph([node], "view", [], [helper.make_tensor_value_info(node.output[0], 0, None)], feeds)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", s.m.opset)])
    outputs = list(ReferenceEvaluator(model).run(None, {}))
    return np.asarray(outputs[0])


def fold_const_view(s: LowerState, node: onnx.NodeProto) -> None:
    """DQ(constant) -> view op: the view applied to the integers at build time; a per-axis
    quantization follows its axis (found by moving the axis' index along), or is refused."""
    qi = s.dq_const[node.input[0]]
    assert qi.data is not None and qi.quant is not None
    data = _run(s, node, qi.data)
    quant = qi.quant
    if quant.axis is not None and quant.scale.size > 1:
        size = quant.scale.size
        index = np.broadcast_to(np.arange(size).reshape([-1 if d == quant.axis else 1 for d in range(qi.data.ndim)]),
                                qi.data.shape)
        moved = _run(s, node, np.ascontiguousarray(index, dtype=np.int64))
        axis = next((k for k in range(moved.ndim) if moved.shape[k] == size and np.array_equal(
            moved, np.broadcast_to(np.arange(size).reshape([-1 if d == k else 1 for d in range(moved.ndim)]),
                                   moved.shape))), None)
        if axis is None:
            raise NodeUnsupported(f"moves the per-channel quantized constant '{node.input[0]}' across "
                                  "its channel axis; quantize it per tensor")
        quant = QuantParams(quant.scale, quant.zero_point, axis)
    s.dq_const[node.output[0]] = QIn(None, data, quant, tuple(data.shape), qi.bits)


def lower_lone_q(s: LowerState, node: onnx.NodeProto) -> None:
    """A QuantizeLinear not absorbed by a pattern: a requantization of a dequantized tensor."""
    src, out = node.input[0], node.output[0]
    if src in s.dq_act:
        x = s.dq_act[src]
        y = s.int8_tensor(out, s.out_quant(out), s.ctx.tensors[x].shape)
        lo, hi = ACT_RANGE[s.ctx.tensors[y].dtype]  # int8, or int16 (emitter/ops/a16.py)
        s.ctx.emit(None, "requantize", [x], y, {"act_min": lo, "act_max": hi},
                   name=node.name or out)
        return
    raise NodeUnsupported(f"quantizes float tensor '{src}' that does not come from a "
                          "DequantizeLinear; the producer runs in float, which mcugen does "
                          "not support yet")


@dataclass
class Chain:
    """What follows an op, single consumer after single consumer, up to its QuantizeLinear."""
    bias: QIn | None = None  # Add(DQ(int32)) after a MatMul
    acts: list[onnx.NodeProto] = field(default_factory=list)  # Relu/Clip nodes, in order
    absorbed: list[onnx.NodeProto] = field(default_factory=list)  # Add and Relu/Clip nodes, in order
    lo: float = -math.inf  # real clamp range of the op itself (if Relu/Clip) and of acts
    hi: float = math.inf
    q: onnx.NodeProto | None = None  # the QuantizeLinear that ends the chain


def follow(s: LowerState, node: onnx.NodeProto) -> Chain:
    ch = Chain()
    if node.op_type in ACTIVATION_OPS:
        ch.lo, ch.hi = activation_range(s, node)
    t = node.output[0]
    nxt = s.single_consumer(t)
    if node.op_type == "MatMul" and nxt is not None and nxt.op_type == "Add":
        other = nxt.input[1] if nxt.input[0] == t else nxt.input[0]
        if other in s.dq_const and str(getattr(s.dq_const[other].data, "dtype", "")) == "int32":
            ch.bias = s.dq_const[other]
            ch.absorbed.append(nxt)
            t = nxt.output[0]
            nxt = s.single_consumer(t)
    while nxt is not None and nxt.op_type in ACTIVATION_OPS:
        a, b = activation_range(s, nxt)
        ch.lo, ch.hi = max(ch.lo, a), min(ch.hi, b)
        ch.acts.append(nxt)
        ch.absorbed.append(nxt)
        t = nxt.output[0]
        nxt = s.single_consumer(t)
    if nxt is not None and nxt.op_type == "QuantizeLinear":
        ch.q = nxt
    return ch


def activation_range(s: LowerState, node: onnx.NodeProto) -> tuple[float, float]:
    """The real range a Relu or Clip keeps."""
    if node.op_type == "Relu":
        return 0.0, math.inf
    attrs = onnx_attrs(node)
    lo, hi = attrs.get("min", -math.inf), attrs.get("max", math.inf)
    for pos in (1, 2):
        if len(node.input) > pos and node.input[pos]:
            name = node.input[pos]
            if name in s.dq_const:
                qi = s.dq_const[name]
                assert qi.data is not None and qi.quant is not None
                if qi.data.size != 1:
                    raise NodeUnsupported(f"Clip bound '{name}' must be a scalar")
                val = float((qi.data.astype(np.float64).ravel() - qi.quant.zero_point) @ qi.quant.scale)
            elif name in s.inits:
                if np.asarray(s.inits[name]).size != 1:
                    raise NodeUnsupported(f"Clip bound '{name}' must be a scalar")
                val = float(np.asarray(s.inits[name]).ravel()[0])
            else:
                raise NodeUnsupported(f"Clip bound '{name}' is not a constant")
            if pos == 1:
                lo = val
            else:
                hi = val
    return float(lo), float(hi)


# -- the rules: match(s, node, chain) is truthy when the rule applies; lower(s, node, chain, match)

def several_outputs(s: LowerState, node: onnx.NodeProto, ch: Chain) -> bool:
    return is_multi_output(node)


def is_multi_output(node: onnx.NodeProto) -> bool:
    return len([o for o in node.output if o]) > 1


def matmul_bias(s: LowerState, node: onnx.NodeProto, ch: Chain) -> bool:
    return ch.q is not None and ch.bias is not None


def activation(s: LowerState, node: onnx.NodeProto, ch: Chain) -> bool:
    return ch.q is not None and node.op_type in ACTIVATION_OPS


def quantized(s: LowerState, node: onnx.NodeProto, ch: Chain) -> bool:
    return ch.q is not None


def float_chain(s: LowerState, node: onnx.NodeProto, ch: Chain) -> QuantParams | None:
    if ch.q is not None or ch.absorbed:
        return None
    return synthetic_quant(s, node)


def lower_several(s: LowerState, node: onnx.NodeProto, ch: Chain, match: object) -> None:
    lower_multi(s, node)


def lower_quantized(s: LowerState, node: onnx.NodeProto, ch: Chain, match: object) -> None:
    assert ch.q is not None
    absorbed = ch.absorbed + [ch.q]
    s.absorbed = absorbed
    s.done.update(a.output[0] for a in absorbed)
    out = ch.q.output[0]
    out_q = s.out_quant(out)
    q = s.make_qnode(node, node.op_type, [s.qin(i) for i in node.input], out, out_q, ch.lo, ch.hi,
                     ch.bias, "+".join([node.op_type] + [a.op_type for a in absorbed]))
    first_act = ch.acts[0] if ch.acts else node
    s.lower_qnode(node.op_type, q, clamp_name=first_act.name or first_act.output[0])


def lower_synthetic(s: LowerState, node: onnx.NodeProto, ch: Chain, match: object) -> None:
    assert isinstance(match, QuantParams)
    lower_float_chain(s, node, match)


Rule = tuple[Callable[[LowerState, onnx.NodeProto, Chain], object],
             Callable[[LowerState, onnx.NodeProto, Chain, object], None]]
RULES: tuple[Rule, ...] = (
    # DQ -> Split -> Q per output                                 =>  slice per output
    (several_outputs, lower_several),
    # DQ -> MatMul -> Add(DQ(int32 bias)) -> [Relu|Clip]* -> Q    =>  fc(bias) ; clamp
    (matmul_bias, lower_quantized),
    # DQ -> Relu|Clip -> [Relu|Clip]* -> Q                         =>  requantize ; clamp
    (activation, lower_quantized),
    # DQ -> op -> [Relu|Clip]* -> Q                                =>  op ; clamp
    (quantized, lower_quantized),
    # DQ -> movement|pooling|unary op, no Q after                  =>  op into an exact int8 form
    (float_chain, lower_synthetic),
)


def lower_qdq(s: LowerState, node: onnx.NodeProto) -> None:
    if node.op_type not in s.lowering:
        raise NodeUnsupported(f"op type {node.op_type} is not supported")
    ch = Chain() if is_multi_output(node) else follow(s, node)  # Split: nothing follows one output
    for match, lower in RULES:
        found = match(s, node, ch)
        if found:
            lower(s, node, ch, found)
            return
    raise NodeUnsupported(f"output '{node.output[0]}' is not quantized (no QuantizeLinear "
                          "after it); float islands are not supported yet" + unquantized_hint(node.op_type))
