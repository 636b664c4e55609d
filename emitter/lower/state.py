"""What the lowering rules share: indices over the ONNX graph, and the IR being built.

The rules (qdq.py, qoperator.py, float_chains.py, graph_io.py) read the ONNX graph through a
LowerState and add IR tensors and nodes through its LowerCtx; an op's own lower() only sees the
QNode and the LowerCtx (emitter/ops/base.py).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import onnx

from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import ACT_RANGE, Boundary, QuantParams
from emitter.lower.qparams import onnx_attrs, read_qparams
from emitter.onnx.load import OnnxModel
from emitter.ops.base import LowerCtx, QIn, QNode
from emitter.quant import round_half_away

FULL_RANGE = (-128, 127)  # a clamp to this range is no clamp


class LowerState:
    def __init__(self, m: OnnxModel, lowering: dict[str, Callable[[LowerCtx, QNode], None]],
                 inits: dict[str, np.ndarray], folded: set[str]):
        self.m = m
        self.g = m.graph
        self.ctx = LowerCtx(m)
        self.lowering = lowering  # ONNX op type -> its op module's lower()
        self.inits = inits
        self.folded = folded  # first outputs of nodes evaluated at build time (passes/fold.py)
        self.producer = {o: n for n in self.g.node for o in n.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in self.g.node:
            for i in n.input:
                if i:
                    self.consumers.setdefault(i, []).append(n)
        self.graph_outputs = {o.name for o in self.g.output}
        self.quant_of: dict[str, QuantParams] = {}  # ONNX int8 tensor -> its QuantParams
        self.zp_dtype: dict[str, np.dtype] = {}  # tensor -> dtype of the zero point naming it
        self.zp_given: dict[str, np.dtype] = {}  # tensor -> dtype of its first explicit zero point
        self.quant_unread: dict[str, str] = {}  # tensor -> why a node reading it gave no QuantParams
        self.dq_const: dict[str, QIn] = {}  # float name -> constant QIn
        self.dq_act: dict[str, str] = {}  # float name -> IR int8 tensor
        self.ir_name: dict[str, str] = {}  # ONNX int8 tensor -> IR int8 tensor
        self.done: set[str] = set()  # first outputs of ONNX nodes absorbed into a pattern
        self.absorbed: list[onnx.NodeProto] = []  # nodes the current pattern absorbed
        self.problems: list[tuple[str, str, int, str]] = []
        self.synthetic16: set[str] = set()  # float tensors of a float chain over int16 data: int16 forms
        self.boundaries: dict[str, Boundary] = {}
        self.inputs: list[str] = []
        self.outputs: list[str] = []

    def qparams(self, node: onnx.NodeProto, scale_name: str, zp_name: str | None,
                axis: int | None, for_tensor: str) -> QuantParams:
        if zp_name and zp_name in self.inits:
            self.zp_given.setdefault(for_tensor, self.inits[zp_name].dtype)
        return read_qparams(self.inits, self.zp_dtype, node, scale_name, zp_name, axis, for_tensor)

    def out_quant(self, name: str) -> QuantParams:
        """The QuantParams of an int8 tensor a Q/QLinear node produces (constants required)."""
        if name not in self.quant_of:
            raise NodeUnsupported(f"the scale and zero point of '{name}' must be constant initializers")
        return self.quant_of[name]

    def onnx_dtype(self, name: str) -> np.dtype | None:
        """The ONNX element type; com.microsoft QLinear* outputs have no inferred type, so the
        dtype of the zero point that names the tensor tells."""
        return self.m.dtypes.get(name, self.zp_dtype.get(name))

    def opset_of(self, node: onnx.NodeProto) -> int:
        for o in self.m.model.opset_import:
            if o.domain == node.domain or (node.domain in ("", "ai.onnx") and o.domain in ("", "ai.onnx")):
                return int(o.version)
        return self.m.opset

    def single_consumer(self, t: str) -> onnx.NodeProto | None:
        users = self.consumers.get(t, [])
        if len(users) == 1 and t not in self.graph_outputs:
            return users[0]
        return None

    def int8_tensor(self, onnx_name: str, quant: QuantParams,
                    shape_hint: tuple[int, ...] | None = None, synthetic: bool = False) -> str:
        """IR tensor for an ONNX int8/uint8 activation, created on first sight (synthetic: the
        int8 form mcugen chose for a float tensor of a float chain)."""
        if onnx_name in self.ir_name:
            name = self.ir_name[onnx_name]
            known = self.ctx.tensors[name].quant
            if known is not None and not known.same_as(quant):
                raise QuantError(f"tensor '{onnx_name}' is dequantized with two different scales "
                                 "or zero points; re-export the model with one per tensor")
            return name
        if synthetic and onnx_name in self.synthetic16:  # a float move of int16 data (float_chains.py)
            if quant.zp != 0:
                raise QuantError(f"'{onnx_name}' needs zero point 0 as int16")
            return self.ctx.act(onnx_name, self.m.shapes.get(onnx_name, shape_hint) or (1,), quant, "int16")
        dtype = np.dtype(np.int8) if synthetic else self.onnx_dtype(onnx_name)
        if dtype is not None and dtype == np.uint8:
            quant = QuantParams(quant.scale, quant.zero_point - 128, quant.axis)
        elif dtype is not None and dtype == np.int16:  # TFLite int16x8 (emitter/ops/a16.py)
            return self.int16_tensor(onnx_name, quant, shape_hint)
        elif dtype is not None and dtype == np.uint16:  # zero point 32768: int16, zero point 0, exactly
            if quant.scale.size != 1 or quant.zp != 32768:
                raise QuantError(f"uint16 activation '{onnx_name}' has zero point {quant.zero_point[:4].tolist()}; "
                                 "mcugen runs 16-bit activations as int16 with zero point 0, which is uint16 "
                                 "with zero point 32768 (values - 32768): re-quantize symmetric, with "
                                 "quantize_static(..., activation_type=QuantType.QUInt16 or QInt16, "
                                 "extra_options={'ActivationSymmetric': True})")
            return self.int16_tensor(onnx_name, QuantParams(quant.scale, quant.zero_point - 32768, quant.axis),
                                     shape_hint)
        elif dtype is not None and dtype != np.int8:
            raise NodeUnsupported(f"activation '{onnx_name}' has type {dtype}; mcugen runs int8 "
                                  "(or uint8) activations only: quantize the model with 8-bit "
                                  "activations (`mcugen quantize`, or quantize_static with "
                                  "activation_type=QInt8)")
        if quant.scale.size != 1:
            raise QuantError(f"activation '{onnx_name}' is quantized per-axis; activations must be "
                             "per-tensor (re-quantize with per-tensor activations)")
        if not -128 <= quant.zp <= 127:
            raise QuantError(f"activation '{onnx_name}' has zero point {quant.zp} (as int8), outside "
                             "[-128, 127]; its zero point does not fit its int8/uint8 type: "
                             "re-quantize the model")
        zp_dtype = self.zp_given.get(onnx_name)
        if not synthetic and dtype is not None and zp_dtype is not None and zp_dtype != dtype:
            raise QuantError(f"tensor '{onnx_name}' is {dtype} but the zero point that quantizes it is "
                             f"{zp_dtype}; ONNX needs both of one type: re-export the model")
        shape = self.m.shapes.get(onnx_name, shape_hint)
        if shape == ():
            shape = (1,)  # a scalar activation is stored as one element
        if shape is None:
            raise NodeUnsupported(f"shape of '{onnx_name}' is unknown after shape inference")
        name = self.ctx.act(onnx_name, shape, quant)
        if not synthetic:  # a float chain's tensor is reached through dq_act, not as int8 ONNX data
            self.ir_name[onnx_name] = name
        return name

    def int16_tensor(self, onnx_name: str, quant: QuantParams, shape_hint: tuple[int, ...] | None) -> str:
        """IR tensor for an ONNX int16 activation: per-tensor, zero point 0 (TFLite's int16x8 mode)."""
        if quant.scale.size != 1 or quant.zp != 0:
            raise QuantError(f"int16 activation '{onnx_name}' has zero point {quant.zero_point[:4].tolist()}; "
                             "mcugen runs int16 activations with zero point 0 only (TFLite's int16x8 "
                             "mode): re-quantize with quantize_static(..., activation_type=QuantType."
                             "QInt16, extra_options={'ActivationSymmetric': True})")
        shape = self.m.shapes.get(onnx_name, shape_hint)
        if shape is None:
            raise NodeUnsupported(f"shape of '{onnx_name}' is unknown after shape inference")
        name = self.ctx.act(onnx_name, shape if shape != () else (1,), quant, "int16")
        self.ir_name[onnx_name] = name
        return name

    def qin(self, float_name: str) -> QIn:
        """The QIn a float tensor of a QDQ pattern stands for: DQ(constant), DQ(activation) or a
        plain (float) initializer; "" is an absent optional input."""
        if float_name in self.dq_const:
            return self.dq_const[float_name]
        if float_name in self.dq_act:
            ir = self.dq_act[float_name]
            t = self.ctx.tensors[ir]
            return QIn(ir, None, t.quant, t.shape)
        if float_name in self.inits:
            arr = self.inits[float_name]
            return QIn(None, arr, None, tuple(arr.shape))
        if float_name == "":
            return QIn(None, None, None, ())
        raise NodeUnsupported(f"input '{float_name}' is a float tensor that no DequantizeLinear "
                              "produces; mcugen needs a fully quantized (QDQ) model")

    def act_qin(self, onnx_name: str) -> QIn:
        ir = self.ir_name[onnx_name]
        t = self.ctx.tensors[ir]
        return QIn(ir, None, t.quant, t.shape)

    def make_qnode(self, node: onnx.NodeProto, op_type: str, inputs: list[QIn], out_onnx: str,
                   out_q: QuantParams, lo: float, hi: float, bias: QIn | None, source: str,
                   shape_hint: tuple[int, ...] | None = None, synthetic: bool = False) -> QNode:
        """The QNode of `node`, its output tensor created; [lo, hi] (real values) is the range of a
        fused Relu/Clip chain, quantized to the output's int8 codes."""
        out = self.int8_tensor(out_onnx, out_q, shape_hint, synthetic)
        oq = self.ctx.tensors[out].quant
        assert oq is not None
        act_min, act_max = ACT_RANGE[self.ctx.tensors[out].dtype]
        if lo > -math.inf:
            act_min = max(act_min, oq.zp + round_half_away(lo / oq.s))
        if hi < math.inf:
            act_max = min(act_max, oq.zp + round_half_away(hi / oq.s))
        if act_min > act_max:
            raise NodeUnsupported(f"the fused clamp range [{lo}, {hi}] is empty after quantization")
        return QNode(node, op_type, inputs, out, self.ctx.tensors[out].shape, oq, act_min, act_max,
                     onnx_attrs(node), bias, source)

    def lower_qnode(self, op_type: str, q: QNode, clamp_name: str = "") -> None:
        """Run the op module's lower() for q. A clamp narrower than int8 (a Relu/Clip chain) is
        not the op's business here: the op writes its output unclamped, and one standalone
        `requantize` node (same quant in and out) clamps it into q.output; passes/fuse.py moves it
        back into the op where the op can take it."""
        full = ACT_RANGE[self.ctx.tensors[q.output].dtype]
        if (q.act_min, q.act_max) == full:
            self.lowering[op_type](self.ctx, q)
            return
        nodes, start = self.ctx.nodes, len(self.ctx.nodes)
        self.lowering[op_type](self.ctx, replace(q, act_min=full[0], act_max=full[1]))
        mid = self.ctx.unique(f"{q.output}__unclamped")
        self.ctx.tensors[mid] = replace(self.ctx.tensors[q.output], name=mid)
        k = next(k for k in range(start, len(nodes)) if q.output in nodes[k].outputs)
        nodes[k] = replace(nodes[k], outputs=tuple(mid if o == q.output else o for o in nodes[k].outputs))
        self.ctx.emit(q, "requantize", [mid], q.output, {"act_min": q.act_min, "act_max": q.act_max},
                      name=clamp_name or None)
