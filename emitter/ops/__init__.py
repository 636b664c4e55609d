"""The op registry: every op module, once. Adding an op = its module + its name in OP_MODULES.

MODULES and REGISTRY are built on first use (a module __getattr__): importing the shared vocabulary
(emitter.ops.base) must not import every op module, whose kernel twins (emitter/kernels/) use that
vocabulary themselves.
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

OP_MODULES = ("conv", "conv_add", "conv_transpose", "fully_connected", "batch_matmul", "add", "mul", "minmax",
              "pool", "requantize", "lut", "softmax", "concat", "pad", "slice", "resize", "transpose", "reshape",
              "float_island", "layernorm")
VIEW_OPS = ("reshape", "transpose")
# Two modules list ONNX MatMul: the later one's lower() is used (onnx_lowering), so batch_matmul
# comes after fully_connected and hands every MatMul with a constant right operand to it.


@functools.cache
def modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(f"emitter.ops.{name}") for name in OP_MODULES)


@functools.cache
def registry() -> dict[str, ModuleType]:
    """IR op -> the module that owns it."""
    return {op: m for m in modules() for op in m.IR_OPS}


def __getattr__(name: str) -> Any:
    if name == "MODULES":
        return modules()
    if name == "REGISTRY":
        return registry()
    raise AttributeError(f"module 'emitter.ops' has no attribute '{name}'")


def prepare(node: Any, g: Any, isa: str = "any") -> Any:
    """The Prepare of one IR node by its op module: `prepare(node, g, isa)`, or, for a layer reading or
    writing an int16 activation, the module's declared int16 variant `A16` (emitter/ops/a16.py; a
    module without one refuses int16)."""
    from emitter.ops import a16

    m = registry()[node.op]
    if a16.involves(node, g):
        return a16.prepare(node, g, getattr(m, "A16", None))
    return m.prepare(node, g, isa)


def onnx_lowering() -> dict[str, Callable]:
    """ONNX op type -> the lower(ctx, qnode) that handles it."""
    return {op: m.lower for m in modules() for op in m.ONNX_OPS}


def unquantized_hint(op_type: str) -> str:
    """What an op module says when its ONNX op reaches mcugen in float (its UNQUANTIZED_HINT)."""
    return next((getattr(m, "UNQUANTIZED_HINT", "") for m in modules() if op_type in m.ONNX_OPS), "")
