"""Lower an ONNX model (QDQ or QOperator form) into the quantized IR.

Both forms reduce to one view of every quantized operation, a QNode (emitter/ops/base.py): its
inputs (int8 activations with QuantParams, or constants with their integer data), its output
QuantParams, and the clamp range of a Relu/Clip chain. The op modules in emitter/ops/ turn a QNode
into IR nodes; this package only knows the quantization forms:

    qparams.py       scales and zero points; uint8 (scale, zp) -> int8 (scale, zp - 128), exact
    graph_io.py      graph inputs and outputs, and their boundaries (int8 or float at the edge)
    qdq.py           the QDQ patterns, as a rule table (DQ -> op -> [Add bias] -> [Relu|Clip]* -> Q)
    qoperator.py     QLinear* nodes -> the same QNode as the QDQ form
    float_chains.py  float tensors given an exact int8 form; ops that run on int8 data directly
    walk.py          every node once, to the rules of its form; one UnsupportedError for all failures

A Relu/Clip chain leaves lowering as a standalone clamp behind its op; passes/fuse.py folds it in.
"""
from __future__ import annotations

from emitter.lower.walk import lower

__all__ = ["lower"]
