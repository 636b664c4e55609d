"""Float chains, and the ops that run directly on int8 data.

    # Reshape/Transpose/MaxPool/Pad/Slice/Split/Resize on an int8 tensor  -> the op, quant passed through
    # DQ -> movement/pooling op, no Q after   -> the op, output keeps the input's scale (its values
    #                                            stay in the input's range): exact
    # DQ -> unary function, no Q after        -> a LUT into the scale that spans its 256 possible
    #                                            values (the float tensor gets an exact int8 form)
    # several outputs (Split), each int8 or quantized by its own Q  -> one QNode, more_outputs
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import onnx

from emitter.errors import NodeUnsupported
from emitter.ir import QuantParams
from emitter.lower.qoperator import float_op_shape
from emitter.lower.qparams import onnx_attrs
from emitter.lower.state import FULL_RANGE, LowerState
from emitter.ops.base import QIn
from emitter.ops.lut import FUNCTIONS
from emitter.quant import round_half_away

MOVEMENT_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Transpose")
# float ops whose output may stay in their input's int8 form when no QuantizeLinear follows
KEEPS_RANGE = MOVEMENT_OPS + ("Slice", "MaxPool", "AveragePool", "GlobalAveragePool", "ReduceMean",
                             "ReduceMax", "Pad")
INT8_OPS = MOVEMENT_OPS + ("MaxPool", "Pad", "Slice", "Split", "Resize")  # may run on int8 directly
INT8_TYPES = (np.dtype(np.int8), np.dtype(np.uint8))


def propagate_quant(s: LowerState, found: dict[str, QuantParams]) -> None:
    """Pass QuantParams through int8 data-movement ops, in both directions, until nothing changes."""
    changed = True
    while changed:
        changed = False
        for node in s.g.node:
            if node.op_type not in INT8_OPS or not node.input:
                continue
            a = node.input[0]
            if s.m.dtypes.get(a) not in INT8_TYPES:
                continue
            for b in (o for o in node.output if o):
                if a in found and b not in found:
                    found[b], changed = found[a], True
                elif b in found and a not in found:
                    found[a], changed = found[b], True


def runs_on_int8(s: LowerState, node: onnx.NodeProto) -> bool:
    return bool(node.input) and node.input[0] in s.ir_name and node.op_type in INT8_OPS


def lower_int8(s: LowerState, node: onnx.NodeProto) -> None:
    """Data movement directly on int8 tensors: the quant params pass through unchanged."""
    if len([o for o in node.output if o]) > 1:
        return lower_multi(s, node)
    src = s.ir_name[node.input[0]]
    quant = s.ctx.tensors[src].quant
    assert quant is not None
    t = s.ctx.tensors[src]
    inputs = [QIn(src, None, quant, t.shape)] + [s.qin(i) for i in node.input[1:]]
    out_q = s.quant_of.get(node.output[0])
    if out_q is None:
        raise NodeUnsupported(f"no scale/zero point is known for '{node.output[0]}'")
    q = s.make_qnode(node, node.op_type, inputs, node.output[0], out_q, -math.inf, math.inf,
                     None, node.op_type, ir_shape(s, node, inputs))
    s.lower_qnode(node.op_type, q)


def ir_shape(s: LowerState, node: onnx.NodeProto, inputs: list[QIn]) -> tuple[int, ...] | None:
    """The output shape of an int8 op from its inputs' IR shapes, where ONNX shape inference gave
    none (behind a com.microsoft QLinear op, e.g. Flatten after QLinearGlobalAveragePool)."""
    if node.output[0] in s.m.shapes:
        return None
    consts = {k: qi.data for k, qi in enumerate(inputs) if qi.data is not None}
    absent = frozenset(k for k, name in enumerate(node.input) if not name)
    return float_op_shape(node.op_type, [qi.shape for qi in inputs], onnx_attrs(node), s.m.opset,
                          consts, absent)


def lower_multi(s: LowerState, node: onnx.NodeProto) -> None:
    """A node with several outputs (Split): each output quantized by its own Q (QDQ form) or
    int8 already (int8 form)."""
    outs = []
    for o in node.output:
        if o in s.quant_of and s.onnx_dtype(o) in INT8_TYPES:
            outs.append((o, s.quant_of[o]))
            continue
        q = s.single_consumer(o)
        if q is None or q.op_type != "QuantizeLinear":
            raise NodeUnsupported(f"output '{o}' is not quantized (no QuantizeLinear after it)")
        s.absorbed.append(q)
        s.done.add(q.output[0])
        outs.append((q.output[0], s.out_quant(q.output[0])))
    first = s.make_qnode(node, node.op_type, [s.qin(i) if i not in s.ir_name else s.act_qin(i)
                                              for i in node.input],
                         outs[0][0], outs[0][1], -math.inf, math.inf, None, node.op_type)
    more = []
    for o, oq in outs[1:]:
        ir = s.int8_tensor(o, oq)
        t = s.ctx.tensors[ir]
        assert t.quant is not None
        more.append((ir, t.shape, t.quant))
    assert (first.act_min, first.act_max) == FULL_RANGE
    s.lower_qnode(node.op_type, replace(first, more_outputs=tuple(more)))


def synthetic_quant(s: LowerState, node: onnx.NodeProto) -> QuantParams | None:
    """The int8 form of a float output no QuantizeLinear follows, where it is exact or nearly:
    movement and pooling ops keep their input's scale (their values stay in its range); a
    unary function gets the scale that spans its 256 possible values."""
    src = node.input[0] if node.input else ""
    if src not in s.dq_act:
        return None
    xq = s.ctx.tensors[s.dq_act[src]].quant
    assert xq is not None
    if node.op_type in KEEPS_RANGE:
        return xq
    if node.op_type not in FUNCTIONS or s.ctx.tensors[s.dq_act[src]].dtype != "int8":  # tables: int8 only
        return None
    defaults, build = FUNCTIONS[node.op_type]
    fn = build({**defaults, **onnx_attrs(node)})
    vals = np.array([fn(xq.s * (c - xq.zp)) for c in range(-128, 128)], dtype=np.float64)
    lo, hi = min(0.0, float(np.nanmin(vals))), max(0.0, float(np.nanmax(vals)))
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
        return None
    scale = (hi - lo) / 255.0
    zp = int(np.clip(round_half_away(-128 - lo / scale), -128, 127))
    return QuantParams.per_tensor(scale, zp)


def lower_float_chain(s: LowerState, node: onnx.NodeProto, quant: QuantParams) -> None:
    """`node`'s float output gets the int8 form `quant` (from synthetic_quant) and stands for it."""
    t = node.output[0]
    src = node.input[0] if node.input else ""
    if src in s.dq_act and s.ctx.tensors[s.dq_act[src]].dtype == "int16":
        s.synthetic16.add(t)  # moves and pools of int16 data stay int16
    q = s.make_qnode(node, node.op_type, [s.qin(i) for i in node.input], t, quant,
                     -math.inf, math.inf, None, node.op_type + " (float chain)", synthetic=True)
    s.lower_qnode(node.op_type, q)
    s.dq_act[t] = q.output
