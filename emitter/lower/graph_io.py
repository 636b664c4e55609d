"""Graph inputs and outputs: the int8 tensor the caller passes or receives, and its Boundary.

    # int8/uint8 graph input x                     -> x (uint8: zero point - 128), Boundary(int8 io)
    # int16/uint16 graph input x (zero point 0 / 32768) -> int16 x (uint16: values - 32768)
    # float graph input x -> Q (its one reader)      -> Q's output, Boundary(float io)
    # float graph input x -> Transpose|Reshape|... -> Q  -> x quantized by Q, the move on int8
    # int8/uint8 graph output y                      -> y, Boundary(int8 io)
    # graph output DQ(y)                             -> y, Boundary(float io)
    # an output whose tensor is already a graph input or output (a graph of one Q or DQ node,
    # one tensor given out twice)                    -> copy(y): every caller buffer its own tensor
"""
from __future__ import annotations

import math

import numpy as np
import onnx

from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import ACT_RANGE, Boundary
from emitter.lower.qparams import narrow_type_problem
from emitter.lower.state import LowerState
from emitter.ops.base import QIn

INT8_TYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16),  # int16: emitter/ops/a16.py
              np.dtype(np.uint16))  # uint16, zero point 32768: int16 (state.py)
UNSIGNED = (np.dtype(np.uint8), np.dtype(np.uint16))  # the C API takes them signed: minus 128 / 32768
MOVES = ("Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")


def graph_input(s: LowerState, name: str) -> None:
    dtype = s.m.dtypes.get(name)
    narrow = narrow_type_problem(dtype, f"graph input '{name}'") if dtype is not None else None
    if narrow is not None:
        raise NodeUnsupported(narrow)
    if dtype in INT8_TYPES:
        if name not in s.quant_of:
            why = s.quant_unread.get(name)
            raise QuantError(f"graph input '{name}' is {dtype} but no node gives its scale/zero point"
                             + (f": {why}" if why else ""))
        ir = s.int8_tensor(name, s.quant_of[name])
        s.inputs.append(ir)
        s.boundaries[ir] = Boundary(False, dtype in UNSIGNED, name)
        return
    users = s.consumers.get(name, [])
    if len(users) == 1 and users[0].op_type in MOVES and users[0].input[0] == name:
        after = s.single_consumer(users[0].output[0])
        if after is not None and after.op_type == "QuantizeLinear":
            return moved_then_quantized(s, name, users[0], after)
    if len(users) == 1 and users[0].op_type == "QuantizeLinear":
        q = users[0]
        ir = s.int8_tensor(q.output[0], s.out_quant(q.output[0]))
        s.inputs.append(ir)
        s.boundaries[ir] = Boundary(True, s.m.dtypes.get(q.output[0]) in UNSIGNED, name)
        s.done.add(q.output[0])
        return
    ops = sorted({u.op_type for u in users})
    s.problems.append((name, "graph input", s.m.opset,
                       f"float input read by {ops}, not by one QuantizeLinear; mcugen needs "
                       "a fully quantized model (onnxruntime quantize_static)"))


def moved_then_quantized(s: LowerState, name: str, move: onnx.NodeProto, q: onnx.NodeProto) -> None:
    """float x -> Transpose/Reshape/... -> Q: the caller quantizes x with Q's scale and zero point
    (quantizing commutes with moving data), and the move runs on int8."""
    out = s.int8_tensor(q.output[0], s.out_quant(q.output[0]))
    quant = s.ctx.tensors[out].quant
    shape = s.m.shapes.get(name)
    if quant is None or not shape:
        raise NodeUnsupported(f"the shape of graph input '{name}' is unknown")
    ir = s.ctx.act(name, shape, quant)
    s.inputs.append(ir)
    s.boundaries[ir] = Boundary(True, s.m.dtypes.get(q.output[0]) in UNSIGNED, name)
    qn = s.make_qnode(move, move.op_type, [QIn(ir, None, quant, shape)] + [s.qin(i) for i in move.input[1:]],
                      q.output[0], quant, -math.inf, math.inf, None, f"{move.op_type}+QuantizeLinear")
    s.lower_qnode(move.op_type, qn)
    s.done.update((move.output[0], q.output[0]))


def graph_output(s: LowerState, name: str) -> None:
    if name in s.ir_name:
        ir, boundary = s.ir_name[name], Boundary(False, s.onnx_dtype(name) in UNSIGNED, name)
    elif name in s.dq_act:
        src = s.producer[name].input[0]
        ir, boundary = s.dq_act[name], Boundary(True, s.onnx_dtype(src) in UNSIGNED, name)
    else:
        raise NodeUnsupported("the graph output is neither an int8 tensor nor the "
                              "DequantizeLinear of one")
    if ir in s.inputs or ir in s.outputs:  # its caller buffer is taken: the output gets a copy
        t = s.ctx.tensors[ir]
        assert t.quant is not None
        copy = s.ctx.act(f"{name}__out", t.shape, t.quant, t.dtype)
        if t.dtype == "int16":  # no int16 copy kernel: a requantize into the same scale is one, exactly
            lo, hi = ACT_RANGE["int16"]
            s.ctx.emit(None, "requantize", [ir], copy, {"act_min": lo, "act_max": hi}, name=f"{name}__out")
        else:
            s.ctx.emit(None, "copy", [ir], copy, {}, name=f"{name}__out")
        ir = copy
    s.outputs.append(ir)
    s.boundaries[ir] = boundary
