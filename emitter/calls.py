"""The call records: what the build-time Prepare step of every layer hands to every later stage.

`Prepared` is one layer's kernel call (kernel name, params struct, named operands, numpy golden,
MACs, scratch bytes, further calls); the `CArg` family are its C arguments (an activation pointer,
a const array, an int, NULL, a pointer list, a params struct with nested `CRef` fields). Op modules
and kernel twins build them (emitter/ops/, emitter/kernels/), the cmsis-nn backend rewrites them
(emitter/backends/), the planner sizes scratch from them (emitter/plan/), the renderer turns them
into C (emitter/render/), and the report and verification read them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

PORTABLE_PREFIX = "mcu_"  # mcu_runtime/'s kernels; every other kernel name is a CMSIS-NN function


def is_portable(kernel: str) -> bool:
    """The one place that says whose a kernel is: ours (mcu_runtime/) or CMSIS-NN's."""
    return kernel.startswith(PORTABLE_PREFIX)


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
    instructions: int = 0  # a CMSIS-NN call's count on the board's core (cmsis_nn.price); 0: the planner's

    @property
    def is_portable(self) -> bool:
        """The call is one of our kernels (not a CMSIS-NN function)."""
        return is_portable(self.kernel)

    @property
    def bias(self) -> np.ndarray | None:
        """The bias operand's values (None: no constant bias), as the twins' path/scratch rules take them."""
        b = self.operands.get("bias")
        return b.data if isinstance(b, ConstArg) else None

    @property
    def args(self) -> tuple[CArg, ...]:
        """The operands in call order."""
        return tuple(self.operands.values())
