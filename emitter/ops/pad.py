"""Pad (constant mode) in any layout: the pads follow the axes into physical order."""
from __future__ import annotations

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node
from emitter.kernels.common import pad_rank
from emitter.kernels.mcu_pad_s8 import PadParams, mcu_pad_s8
from emitter.layout import is_simple, physical_shape
from emitter.ops.base import LayoutPlan, LowerCtx, QNode
from emitter.quant import round_half_away

ONNX_OPS = ("Pad",)
IR_OPS = ("pad",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None or x.quant is None:
        raise NodeUnsupported("input must be an int8 activation")
    mode = q.attrs.get("mode", b"constant")
    if (mode.decode() if isinstance(mode, bytes) else mode) != "constant":
        raise NodeUnsupported(f"mode {mode!r}: only constant padding is supported")
    if "pads" in q.attrs:
        pads = list(q.attrs["pads"])
        value = float(q.attrs.get("value", 0.0))
    else:
        if len(q.inputs) < 2 or q.inputs[1].data is None:
            raise NodeUnsupported("pads must be a constant")
        pads = q.inputs[1].data.astype(np.int64).tolist()
        value = 0.0
        code = None
        if len(q.inputs) > 2 and q.inputs[2].data is not None and q.inputs[2].data.size:
            c = q.inputs[2]
            assert c.data is not None
            raw = c.data.ravel()[0]
            if c.quant is not None:  # QDQ: a dequantized constant
                value = float((int(raw) - c.quant.zp) * c.quant.s)
            elif c.data.dtype in (np.int8, np.uint8):  # Pad directly on int8/uint8 data: a code
                code = int(raw) - (128 if c.data.dtype == np.uint8 else 0)
            else:
                value = float(raw)
        if len(q.inputs) > 3 and q.inputs[3].shape:
            raise NodeUnsupported("the axes input of Pad is not supported")
    if min(pads) < 0:
        raise NodeUnsupported(f"negative pads {pads} are not supported")
    if not x.quant.same_as(q.out_quant):
        raise NodeUnsupported("Pad must keep its input's scale and zero point")
    if code is None:
        code = round_half_away(value / x.quant.s) + x.quant.zp
    if not -128 <= code <= 127:
        raise NodeUnsupported(f"pad value {value} is not representable in the int8 input")
    ctx.emit(q, "pad", [x.name], q.output, {"pads": tuple(pads), "value": code})


def layout(node: Node, g: Graph) -> LayoutPlan:
    x = g.t(node.inputs[0])
    assert x.layout is not None
    perm = x.layout.perm if is_simple(x.layout, x.shape) else tuple(range(len(x.shape)))
    return LayoutPlan((Layout(x.shape, perm),), Layout(g.t(node.outputs[0]).shape, perm))


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    assert x.layout is not None
    perm, rank = x.layout.perm, len(x.shape)
    pads = node.attrs["pads"]
    shape = physical_shape(x.layout)
    before = [pads[a] for a in perm]
    after = [pads[rank + a] for a in perm]
    if rank > 6:
        raise NodeUnsupported(f"Pad of rank {rank} exceeds the kernel's 6")
    p = PadParams(rank, pad_rank(shape), pad_rank(before), pad_rank(after), node.attrs["value"])

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_pad_s8(p, env[x.name].reshape(shape)).ravel()

    return Prepared("mcu_pad_s8", p, {"input": TensorArg(x.name), "output": TensorArg(y.name)}, golden)
