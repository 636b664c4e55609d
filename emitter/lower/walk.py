"""The walk: every ONNX node once, in graph order, handed to the rules of its form.

    # folded at build time (passes/fold.py)          -> nothing: its value is an initializer
    # DequantizeLinear / QuantizeLinear              -> qdq.lower_dq / qdq.lower_lone_q
    # QLinear* (QOperator)                           -> qoperator.lower_qop
    # Reshape/Unsqueeze/... of a DQ(constant)        -> qdq.fold_const_view
    # data movement on an int8 tensor                -> float_chains.lower_int8
    # anything else                                  -> qdq.lower_qdq (the QDQ pattern rules)

A node a rule cannot lower raises NodeUnsupported; the walk collects every one of them (the
consumers of a failed node are not reported again) and raises one UnsupportedError listing all.
"""
from __future__ import annotations

from types import MappingProxyType

import onnx

from emitter.errors import NodeUnsupported, UnsupportedError
from emitter.ir import Graph, QuantParams
from emitter.lower import float_chains, graph_io, qdq, qoperator
from emitter.lower.state import LowerState
from emitter.onnx.fold import fold_constants
from emitter.onnx.load import OnnxModel
from emitter.ops import onnx_lowering


def collect_quant(s: LowerState) -> None:
    """Give every int8 activation its QuantParams from the Q/DQ/QLinear node that names it, then
    pass them through int8 data-movement ops in both directions."""
    found: dict[str, QuantParams] = {}
    named_by: dict[str, str] = {}  # tensor -> the QLinear node that gave its QuantParams
    for node in s.g.node:
        try:
            if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
                qdq.collect_quant(s, node, found)
            elif node.op_type in qoperator.QOP_SIGNATURES:
                qoperator.collect_quant(s, node, found, named_by)
        except NodeUnsupported as exc:  # reported when the node itself is lowered
            for i in node.input[:1] if node.op_type == "DequantizeLinear" else node.input:
                s.quant_unread.setdefault(i, f"node '{node.name or node.output[0]}' ({node.op_type}) reads it, "
                                             f"but {exc}")
            continue
    float_chains.propagate_quant(s, found)
    s.quant_of = found


def lower_node(s: LowerState, node: onnx.NodeProto) -> None:
    op = node.op_type
    if node.output and node.output[0] in s.folded:
        return
    if op == "DequantizeLinear":
        qdq.lower_dq(s, node)
    elif op == "QuantizeLinear":
        qdq.lower_lone_q(s, node)
    elif op in qoperator.QOP_SIGNATURES:
        qoperator.lower_qop(s, node)
    elif qdq.is_const_view(s, node):
        qdq.fold_const_view(s, node)
    elif float_chains.runs_on_int8(s, node):
        float_chains.lower_int8(s, node)
    else:
        qdq.lower_qdq(s, node)


# dynamic quantization: integer ops with int32 outputs, scales computed at run time
DYNAMIC_OPS = ("ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "DynamicQuantizeMatMul",
               "MatMulIntegerToFloat", "DynamicQuantizeLSTM")


def refuse_dynamic(m: OnnxModel) -> None:
    """A dynamically quantized model is refused as such (its other refusals would mislead)."""
    found = [(n.name or n.output[0], n.op_type, m.opset,
              "dynamic quantization (int32 outputs, scales computed at run time) is not supported: "
              "quantize the float model statically with `mcugen quantize` (or onnxruntime "
              "quantize_static)") for n in m.graph.node if n.op_type in DYNAMIC_OPS]
    if found:
        raise UnsupportedError(found)


def lower(m: OnnxModel) -> Graph:
    """The quantized IR of an ONNX model in QDQ or QOperator form (or a mix)."""
    refuse_dynamic(m)
    qoperator.complete_qop_shapes(m)
    inits = dict(m.initializers)
    s = LowerState(m, onnx_lowering(), inits, fold_constants(m, inits))
    collect_quant(s)
    failed: set[str] = set()  # outputs of failed nodes: their consumers are not reported again
    for vi in s.g.input:
        if vi.name not in s.inits:
            try:
                graph_io.graph_input(s, vi.name)
            except NodeUnsupported as exc:
                s.problems.append((vi.name, "graph input", s.m.opset, str(exc)))
                failed.add(vi.name)
    for node in s.g.node:
        if node.output[0] in s.done:
            continue
        if any(i in failed for i in node.input):
            failed.update(node.output)
            continue
        s.absorbed = []
        try:
            lower_node(s, node)
        except NodeUnsupported as exc:
            s.problems.append((node.name or node.output[0], node.op_type, s.opset_of(node), str(exc)))
            failed.update(node.output)
            failed.update(o for a in s.absorbed for o in a.output)
    for vi in s.g.output:
        if vi.name in failed:
            continue
        try:
            graph_io.graph_output(s, vi.name)
        except NodeUnsupported as exc:
            s.problems.append((vi.name, "graph output", s.m.opset, str(exc)))
    if s.problems:
        raise UnsupportedError(s.problems)
    return Graph(MappingProxyType(dict(s.ctx.tensors)), tuple(s.ctx.nodes), tuple(s.inputs),
                 tuple(s.outputs), MappingProxyType(s.boundaries), m.opset)
