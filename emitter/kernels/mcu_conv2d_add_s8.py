"""Twin of mcu_conv2d_add_s8: a convolution whose output feeds only a residual Add, as one layer.

    v   = mcu_conv2d_s8(conv, input, filter, bias)       the int8 value the conv would store
    out = mcu_add_s8(add, skip, v) if skip_first else mcu_add_s8(add, v, skip)
So the golden is the unfused golden by construction: the two twins, composed. The C kernel does
the Add in the conv's output stage (no intermediate tensor); its doubling high multiplies are
SMMULR-style products, exact for the Add's operand ranges (mcu_conv2d_s8_internal.h).

CMSIS-NN has no fused kernel: the compiler fuses only where mcugen's convolution is the chosen one
(emitter/compiler.py residual_fusion).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from emitter.kernels import mcu_add_s8 as add_twin
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels.base import Kernel
from emitter.kernels.common import Bcast, check_range
from emitter.kernels.mcu_add_s8 import AddParams
from emitter.kernels.mcu_conv2d_s8 import ConvParams

RUNTIME_DEPS = ("mcu_conv2d_s8",)  # the conv's dispatcher and path files ship with this kernel


@dataclass(frozen=True, eq=False)
class ConvAddParams:
    CTYPE: ClassVar[str] = "mcu_conv_add_params_t"
    conv: ConvParams
    add: AddParams
    skip_first: int  # 1: the skip is the Add's input1 (the conv value input2)


def check_conv_add(p: ConvAddParams) -> None:
    """The checks mcu_conv2d_add_s8 makes beyond mcu_conv2d_s8's (ValueError where C returns MCU_ERR_ARG)."""
    o = p.conv.output
    size = o.n * o.h * o.w * o.c
    full = Bcast(1, size)
    if p.add.size != size or p.add.in1 != full or p.add.in2 != full:
        raise ValueError(f"conv_add: the add covers {p.add.size} elements ({p.add.in1}, {p.add.in2}); "
                         f"the conv writes {size}, without broadcast")
    for name in ("input1_shift", "input2_shift", "output_shift"):
        check_range(name, getattr(p.add, name), -30, 0)
    check_range("skip_first", p.skip_first, 0, 1)


def mcu_conv2d_add_s8(p: ConvAddParams, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None,
                      skip: np.ndarray) -> np.ndarray:
    """int8 NHWC input, OHWI filter, int32 bias or None, int8 skip (flat, the output's size) -> flat int8."""
    check_conv_add(p)
    v = conv_twin.mcu_conv2d_s8(p.conv, input, filter, bias).ravel()
    skip = np.asarray(skip).ravel()
    return add_twin.mcu_add_s8(p.add, skip, v) if p.skip_first else add_twin.mcu_add_s8(p.add, v, skip)


def buffer_size(p: Any, bias: np.ndarray | None, isa: str) -> int:
    """Bytes of arena scratch: the convolution's on the path it takes (the Add needs none)."""
    return conv_twin.buffer_size(p.conv, bias, isa)


def path(p: Any, bias: np.ndarray | None, isa: str) -> str:
    """The convolution's code path on `isa` (mcu_conv2d_s8.c): each applies the Add."""
    return conv_twin.path(p.conv, bias, isa)


# Every path reads skip element i just before it writes output element i, and computes each
# element once: the output may lie exactly on the skip (node input 3 of the conv_add op; never on
# the conv's input, which is read by windows).
EXACT_IN_PLACE = True
EXACT_IN_PLACE_INPUTS = (3,)  # the skip


KERNEL = Kernel("mcu_conv2d_add_s8", exact_in_place=EXACT_IN_PLACE, exact_in_place_inputs=EXACT_IN_PLACE_INPUTS,
                buffer_size=buffer_size, path=path, runtime_deps=RUNTIME_DEPS)
