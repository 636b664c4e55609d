"""Python twins of the C kernels: emitter/kernels/mcu_<k>.py beside mcu_runtime/kernels/mcu_<k>.c.

A twin holds what the C kernel does at run time, and nothing the op's Prepare computes:
  <Name>Params  the params dataclass, the single Python copy of its C struct (CTYPE names it;
                tests/test_kernel_structs.py checks every field against mcu_runtime/include/mcu_nn.h)
  mcu_<k>(...)  the bit-exact numpy golden, named as the C function
  to_cmsis(conv, p)   its CMSIS-NN call (emitter/backends/cmsis_nn.py dispatches here by kernel name)
  KERNEL        its declared contract (base.py: band rule, sink, lean call, in-place rule, scratch,
                path, runtime files, CMSIS-NN mapping); later stages ask kernel(name), never the module
Shared struct twins (Dims, QuantIO, Bcast, PoolParams) and golden helpers live in common.py.
"""
from __future__ import annotations

import importlib
import re
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from emitter.calls import ConstArg
from emitter.kernels.base import Kernel
from emitter.resources import data_dir

# Every twin in this package: one per C kernel (tests/test_kernel_structs.py checks the two sets agree).
KERNELS = tuple(sorted(p.stem for p in Path(__file__).parent.glob("mcu_*.py")))


def twin(kernel: str) -> ModuleType | None:
    """The twin module of a portable kernel (None for another name, e.g. a CMSIS-NN function)."""
    if kernel not in KERNELS:
        return None
    return importlib.import_module(f"emitter.kernels.{kernel}")


@cache
def kernel(name: str) -> Kernel:
    """The declared contract of kernel `name`: its twin's KERNEL, or a record declaring nothing for
    a name without a twin (a CMSIS-NN function)."""
    module = twin(name)
    if module is None:
        return Kernel(name)
    declared: Kernel = module.KERNEL
    return declared


ISAS = ("c", "dsp", "mve")  # MCU_ISA_C, MCU_ISA_DSP, MCU_ISA_MVE in mcu_nn.h


def kernel_path(name: str, params: Any, operands: dict[str, Any], isa: str) -> str | None:
    """The code path a portable call takes when its kernels plan for `isa` (Compiled.plan_isa): its
    twin's path(), the C dispatcher's <kernel>_path(); None for a kernel without paths or a
    CMSIS-NN call."""
    path = kernel(name).path
    if path is None or params is None or isa not in ISAS:
        return None
    bias = operands.get("bias")
    return str(path(params, bias.data if isinstance(bias, ConstArg) else None, isa))


@cache
def c_defines(rel: str) -> dict[str, int]:
    """The integer `#define NAME value` lines of mcu_runtime/<rel>: tuning constants have their one
    definition in the C, and the twins read them from there."""
    text = (data_dir("mcu_runtime") / rel).read_text()
    return {m[1]: int(m[2]) for m in re.finditer(r"^#define\s+(\w+)\s+\(?(-?\d+)\)?\s*$", text, re.M)}
