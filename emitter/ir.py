"""The typed IR: a Graph of quantized Nodes over Tensors, with explicit layout and QuantParams.

Tensor shapes are always the ONNX (logical) shapes; where the bytes sit is the tensor's Layout
(emitter/layout.py). Activations are int8 after lowering; constants carry their data. Passes are
pure functions Graph -> Graph and Graph.verify() runs after each one.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from emitter.errors import McugenError

ACTIVATION_DTYPES = ("int8", "int16")  # int16: TFLite's int16x8 mode (emitter/ops/a16.py)
ACT_RANGE = {"int8": (-128, 127), "int16": (-32768, 32767)}  # a clamp to this range is no clamp


class IRError(McugenError):
    """An internal inconsistency found by Graph.verify() (a bug in a pass)."""


@dataclass(frozen=True, eq=False)
class QuantParams:
    """real = scale * (q - zero_point); per-axis when axis is not None."""
    scale: np.ndarray  # float64 [1] or [C]
    zero_point: np.ndarray  # int32, same length
    axis: int | None = None

    @staticmethod
    def per_tensor(scale: float, zero_point: int) -> QuantParams:
        return QuantParams(np.array([scale], np.float64), np.array([zero_point], np.int32))

    @property
    def s(self) -> float:
        """The per-tensor scale (callers check per-tensor-ness first)."""
        return float(self.scale[0])

    @property
    def zp(self) -> int:
        return int(self.zero_point[0])

    def same_as(self, other: QuantParams | None) -> bool:
        return (other is not None and self.axis == other.axis
                and np.array_equal(self.scale, other.scale)
                and np.array_equal(self.zero_point, other.zero_point))


@dataclass(frozen=True)
class Layout:
    """physical bytes = logical.reshape(view).transpose(perm).ravel()"""
    view: tuple[int, ...]
    perm: tuple[int, ...]

    @staticmethod
    def identity(shape: tuple[int, ...]) -> Layout:
        return Layout(tuple(shape), tuple(range(len(shape))))


@dataclass(frozen=True, eq=False)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str  # "int8", "int32", "float32", ...
    quant: QuantParams | None = None
    data: np.ndarray | None = None  # constants only
    layout: Layout | None = None  # activations only; None before the layout pass
    alias_of: str | None = None  # a view: shares the buffer of this tensor

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    @property
    def is_const(self) -> bool:
        return self.data is not None


@dataclass(frozen=True)
class Node:
    name: str  # the ONNX node name (or a derived one for inserted nodes)
    op: str  # IR op, a key of emitter.ops.REGISTRY
    inputs: tuple[str, ...]  # "" for an absent optional input
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    source: str = ""  # the ONNX op type(s) this node came from, for reports
    opset: int = 0

    def attr(self, key: str) -> Any:
        return self.attrs[key]


@dataclass(frozen=True)
class Boundary:
    """How a graph input/output meets the caller: int8 data, and the float it stands for."""
    float_io: bool  # the ONNX graph had float here (QuantizeLinear / DequantizeLinear at the edge)
    from_uint8: bool  # the ONNX tensor was uint8; the C API uses int8 (zero point - 128)
    onnx_name: str


@dataclass(frozen=True)
class Graph:
    tensors: Mapping[str, Tensor]
    nodes: tuple[Node, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    boundaries: Mapping[str, Boundary] = field(default_factory=lambda: MappingProxyType({}))
    opset: int = 13
    numerics: str = "tflite"  # the rounding contract, quant.NUMERICS (compile_model sets it)

    def t(self, name: str) -> Tensor:
        return self.tensors[name]

    def with_nodes(self, nodes: list[Node], tensors: dict[str, Tensor] | None = None) -> Graph:
        return replace(self, nodes=tuple(nodes),
                       tensors=MappingProxyType(dict(tensors if tensors is not None else self.tensors)))

    def producers(self) -> dict[str, Node]:
        return {o: n for n in self.nodes for o in n.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i:
                    out.setdefault(i, []).append(n)
        return out

    def verify(self) -> None:
        """SSA, topological order, known tensors, int8 activations with quant, layouts consistent."""
        defined = set(self.inputs) | {n for n, t in self.tensors.items() if t.is_const}
        for name in self.inputs:
            if name not in self.tensors:
                raise IRError(f"graph input '{name}' has no tensor")
        for node in self.nodes:
            for i in node.inputs:
                if i and i not in defined:
                    raise IRError(f"node '{node.name}' ({node.op}) reads '{i}' before it is defined")
            for o in node.outputs:
                if o in defined:
                    raise IRError(f"tensor '{o}' is defined twice (node '{node.name}')")
                if o not in self.tensors:
                    raise IRError(f"node '{node.name}' writes unknown tensor '{o}'")
                t = self.tensors[o]
                if t.dtype not in ACTIVATION_DTYPES or t.quant is None:
                    raise IRError(f"activation '{o}' must be int8 (or int16) with quant params, got {t.dtype}")
                if t.layout is not None and int(np.prod(t.layout.view, dtype=np.int64)) != t.size:
                    raise IRError(f"tensor '{o}' layout view {t.layout.view} != shape {t.shape}")
                defined.add(o)
        for name in self.outputs:
            if name not in defined:
                raise IRError(f"graph output '{name}' is never produced")
