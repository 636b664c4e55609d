"""What render.py's BundleBuilder makes of each layer before the templates write it: constant
arrays, calls and the layer record the templates and report.json read."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from emitter.calls import CRef, Prepared, StructArg, is_portable
from emitter.kernels.cmsis_api import RETURNS_VOID


@dataclass(frozen=True)
class ConstArray:
    ctype: str
    ident: str
    values: np.ndarray
    layer: int  # `Layer k` of the node it belongs to
    comment: str  # `Layer k <op>: <what it holds, with its shape>`
    header: tuple[str, ...] = ()  # the first array of a layer: the layer's name and kernel

    @property
    def count(self) -> int:
        return int(self.values.size)

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


@dataclass(frozen=True)
class LayerCall:
    text: str  # the C call expression
    kind: str  # "mcu": returns mcu_status_t; "cmsis": arm_cmsis_nn_status; "void"


def call_kind(kernel: str) -> str:
    return "mcu" if is_portable(kernel) else ("void" if kernel in RETURNS_VOID else "cmsis")


@dataclass(frozen=True)
class Layer:
    index: int
    name: str
    op: str
    source: str
    kernel: str
    summary: str
    params_type: str | None
    params_ident: str | None
    params_init: str | None
    locals: tuple[str, ...]
    calls: tuple[LayerCall, ...]  # usually one; CMSIS-NN's concatenation makes one per input
    comment: tuple[str, ...]
    out_ptr: str
    out_shape: tuple[int, ...]
    out_bytes: int
    out_offset: int | None
    macs: int
    weight_bytes: int
    structs: tuple[tuple[str, str, str], ...] = ()  # CMSIS-NN: (C type, identifier, initializer)
    precheck: str | None = None  # C condition, checked in <prefix>_init(): more scratch than planned
    inside: bool = False  # runs inside the row loop of a later layer's block
    block: tuple[str, ...] = ()  # the row loop of a segment ending here (emitter/render/segments.py)


def ctx_size(p: Prepared) -> int:
    """The size field of a CMSIS-NN call's context (0 for calls without one)."""
    ctx = p.operands.get("ctx")
    return int(ctx.fields["size"]) if isinstance(ctx, StructArg) and ctx.ctype == "cmsis_nn_context" else 0


def ctx_offset(p: Prepared) -> int:
    """Where a CMSIS-NN call's context starts in its layer's scratch (after its other buffers)."""
    ctx = p.operands.get("ctx")
    buf = ctx.fields["buf"] if isinstance(ctx, StructArg) and ctx.ctype == "cmsis_nn_context" else None
    return buf.offset if isinstance(buf, CRef) else 0
