"""The op registry: every op module, once. Adding an op = its module + its entry here."""
from __future__ import annotations

from types import ModuleType
from typing import Callable

from emitter.ops import (add, concat, conv, float_island, fully_connected, lut, minmax, mul, pad,
                         pool, requantize, reshape, resize, slice, softmax, transpose)

MODULES: tuple[ModuleType, ...] = (conv, fully_connected, add, mul, minmax, pool, requantize, lut,
                                   softmax, concat, pad, slice, resize, transpose, reshape,
                                   float_island)

REGISTRY: dict[str, ModuleType] = {op: m for m in MODULES for op in m.IR_OPS}
VIEW_OPS = ("reshape", "transpose")


def onnx_lowering() -> dict[str, Callable]:
    """ONNX op type -> the lower(ctx, qnode) that handles it."""
    return {op: m.lower for m in MODULES for op in m.ONNX_OPS}
