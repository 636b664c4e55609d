"""Twin of mcu_conv2d_add_s8: a convolution whose output feeds only a residual Add, as one layer.

    v   = mcu_conv2d_s8(conv, input, filter, bias)       the int8 value the conv would store
    out = mcu_add_s8(add, skip, v) if skip_first else mcu_add_s8(add, v, skip)
So the golden is the unfused golden by construction: the two twins, composed. The C kernel does
the Add in the conv's output stage (no intermediate tensor); its doubling high multiplies are
SMMULR-style products, exact for the Add's operand ranges (mcu_conv2d_s8_internal.h).

CMSIS-NN has no fused kernel: its form of the layer is arm_convolve_wrapper_s8 writing the output,
then arm_elementwise_add_s8 over it in place (the output overlaps neither input nor skip).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from emitter.backends.cmsis_api import Converter, ScratchRequest
from emitter.kernels import mcu_add_s8 as add_twin
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels.common import Bcast, check_range
from emitter.kernels.mcu_add_s8 import AddParams
from emitter.kernels.mcu_conv2d_s8 import ConvParams
from emitter.ops.base import Call, Prepared, TensorArg

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
        check_range(name, getattr(p.add, name), -31, 0)
    check_range("skip_first", p.skip_first, 0, 1)


def mcu_conv2d_add_s8(p: ConvAddParams, input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None,
                      skip: np.ndarray) -> np.ndarray:
    """int8 NHWC input, OHWI filter, int32 bias or None, int8 skip (flat, the output's size) -> flat int8."""
    check_conv_add(p)
    v = conv_twin.mcu_conv2d_s8(p.conv, input, filter, bias).ravel()
    skip = np.asarray(skip).ravel()
    return add_twin.mcu_add_s8(p.add, skip, v) if p.skip_first else add_twin.mcu_add_s8(p.add, v, skip)


def buffer_size(p: Any, bias: np.ndarray | None, isa: str) -> int:
    """Bytes of arena scratch: the convolution's (the Add needs none)."""
    return conv_twin.buffer_size(p.conv, bias, isa)


def path(p: Any, bias: np.ndarray | None, isa: str) -> str:
    """The convolution's code path on `isa` (the MVE one applies the Add after it, over the output)."""
    return conv_twin.path(p.conv, bias, isa)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    """arm_convolve_wrapper_s8 into the output, then arm_elementwise_add_s8 over it in place."""
    c = p.params
    assert isinstance(c, ConvAddParams)
    ops = p.operands
    out = ops["output"]
    assert isinstance(out, TensorArg)
    pair = (ops["skip"], out) if c.skip_first else (out, ops["skip"])
    add = add_twin.to_cmsis(conv, Prepared("mcu_add_s8", c.add, {"input1": pair[0], "input2": pair[1], "output": out},
                                           p.golden))
    if add is None:  # a Sub: CMSIS-NN's add takes no negative multiplier
        return None
    first = conv_twin.to_cmsis(conv, replace(p, params=c.conv))
    if first is None:
        return None
    call, request = first
    return replace(call, then=(Call(add[0].kernel, add[0].args),)), request
