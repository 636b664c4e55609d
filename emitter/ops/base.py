"""What every op module provides, and the small vocabulary they share.

An op module (emitter/ops/<op>.py) holds all knowledge of one IR op:
  ONNX_OPS   ONNX op types it lowers, and `lower(ctx, qnode)` emitting IR nodes (QNode, LowerCtx below)
  IR_OPS     IR op names it owns
  layout(node, graph) -> LayoutPlan        which input layouts it needs, its output layout
  prepare(node, graph, isa) -> Prepared    build-time Prepare: kernel, params, golden (isa: the
                                           target's instruction set; scratch may depend on it)
(Prepared and its C argument types are the call records of emitter/calls.py.)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx

from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node, QuantParams, Tensor
from emitter.layout import physical_shape
from emitter.onnx.load import OnnxModel


@dataclass(frozen=True)
class LayoutPlan:
    inputs: tuple[Layout | None, ...]  # required layout per input (None: any / constant)
    output: Layout


def per_tensor(t: Tensor, what: str, node: Node) -> QuantParams:
    q = t.quant
    if q is None or q.scale.size != 1:
        raise NodeUnsupported(f"{what} '{t.name}' of node '{node.name}' must be per-tensor quantized")
    return q


def phys(g: Graph, name: str) -> tuple[int, ...]:
    t = g.t(name)
    assert t.layout is not None, f"tensor '{name}' has no layout yet"
    return physical_shape(t.layout)


def same_layout_plan(node: Node, g: Graph) -> LayoutPlan:
    """Element-wise ops: every full-size input in the first activation input's layout."""
    first = g.t(node.inputs[0])
    if first.layout is None:
        raise NodeUnsupported(f"node '{node.name}' ({node.op}) reads the constant '{first.name}' "
                              "where an activation is expected")
    out_shape = g.t(node.outputs[0]).shape
    reqs = []
    for name in node.inputs:
        t = g.tensors.get(name) if name else None
        reqs.append(first.layout if t is not None and not t.is_const and t.shape == out_shape else None)
    return LayoutPlan(tuple(reqs), first.layout)


@dataclass
class Attrs:
    """ONNX attributes with defaults; reading an unknown attribute name is a bug, not a default."""
    values: dict[str, Any]
    allowed: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        if key in self.values:
            return self.values[key]
        return self.allowed[key]

    def unknown(self) -> list[str]:
        return sorted(set(self.values) - set(self.allowed))


# -- what an op's lower(ctx, qnode) sees (emitter/lower/ builds these from either ONNX form) ------

@dataclass(frozen=True, eq=False)
class QIn:
    """One input of a quantized operation: an int8 activation (name) or a constant (data).

    bits: the width the constant's values fit: 4 for a 4-bit weight (ONNX INT4, or UINT4 whose
    zero point leaves it in [-8, 7]), whose data arrives as int8 values in [-8, 7] with zero point 0;
    8 otherwise. Ops with a 4-bit kernel (fc, conv) may store it packed; every other op reads the
    int8 values (exact)."""
    name: str | None
    data: np.ndarray | None
    quant: QuantParams | None
    shape: tuple[int, ...]
    bits: int = 8

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

    def act(self, hint: str, shape: tuple[int, ...], quant: QuantParams, dtype: str = "int8") -> str:
        name = self.unique(hint)
        self.tensors[name] = Tensor(name, tuple(shape), dtype, quant)
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
