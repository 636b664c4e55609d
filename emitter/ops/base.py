"""What every op module provides, and the small vocabulary they share.

An op module (emitter/ops/<op>.py) holds all knowledge of one IR op:
  ONNX_OPS   ONNX op types it lowers, and `lower(ctx, qnode)` emitting IR nodes (QNode, LowerCtx below)
  IR_OPS     IR op names it owns
  layout(node, graph) -> LayoutPlan        which input layouts it needs, its output layout
  prepare(node, graph) -> Prepared         build-time Prepare: kernel, params, golden
"""
from __future__ import annotations

from collections.abc import Callable
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
class TensorArg:
    """Pointer to an activation (arena, or the caller's input/output buffer)."""
    name: str


@dataclass(frozen=True, eq=False)
class ConstArg:
    """A `static const` array in flash; `suffix` names it after the layer."""
    suffix: str
    data: np.ndarray


@dataclass(frozen=True)
class IntArg:
    value: int


@dataclass(frozen=True)
class NullArg:
    pass


@dataclass(frozen=True)
class TensorListArg:
    """`const int8_t *const name[]` built from several activations (e.g. concat inputs)."""
    names: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class CRef:
    """A C expression in a struct field: a const array (optionally cast) or the scratch pointer."""
    kind: str  # "array" | "scratch" | "null"
    array: ConstArg | None = None
    cast: str = ""
    offset: int = 0  # "scratch": bytes past the start of the layer's scratch (a call with two buffers)


@dataclass(frozen=True, eq=False)
class StructArg:
    """A `static const <ctype>` built from nested dicts of ints / CRefs, passed by address."""
    ctype: str
    suffix: str
    fields: dict[str, Any]


CArg = TensorArg | ConstArg | IntArg | NullArg | TensorListArg | StructArg


@dataclass(frozen=True, eq=False)
class Call:
    """A further call of the same layer, `kernel(*args)` (no params struct)."""
    kernel: str
    args: tuple[CArg, ...]


@dataclass(frozen=True, eq=False)
class Prepared:
    """One layer: a kernel call, its params struct (or None) and its named operands.

    The C call is `kernel(&params, *operands.values())` (or without params). Operands are named as
    the C function's parameters (`input`, `filter`, `bias`, `output`, ...; CMSIS-NN's own names
    after the cmsis-nn backend converted the call), in call order; by convention the last one is
    the output. `golden(env)` computes the layer in numpy from the physical, flat int8 arrays in
    env and returns the output, flat. `then` holds further calls of the layer, run in order after
    the first (e.g. CMSIS-NN's concatenation: one call per input); every StructArg/ConstArg suffix
    stays distinct across a layer's calls."""
    kernel: str
    params: Any | None
    operands: dict[str, CArg]
    golden: Callable[[dict[str, np.ndarray]], np.ndarray]
    macs: int = 0
    scratch: int = 0
    summary: str = ""
    then: tuple[Call, ...] = ()

    @property
    def args(self) -> tuple[CArg, ...]:
        """The operands in call order."""
        return tuple(self.operands.values())


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
