"""The ONNX operator test cases for quantized ops, as models mcugen can be given (issue #13 seeds).

onnx ships the generators of its backend test data (onnx/backend/test/case/node/<op>.py): each
`export*` function builds a node and its input/output arrays and hands them to `expect`. Here
`expect` is replaced by a collector, so no data folder is needed, and every case becomes a model
whose first input stays a graph input while the others (scales, zero points, weights, biases)
become initializers, as a quantizer writes them. The opset is the lowest that has every element
type the case uses (the generators themselves write onnx's newest).
"""
from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np
import onnx
from onnx import helper as H
from onnx import numpy_helper as NH

MODULES = ("qlinearconv", "qlinearmatmul", "quantizelinear", "dequantizelinear", "convinteger",
           "matmulinteger")
NEWER_TYPES = {  # element type -> the first opset of QuantizeLinear/DequantizeLinear that has it
    onnx.TensorProto.FLOAT16: 21,  # as scales of QLinearMatMul
    onnx.TensorProto.INT16: 21, onnx.TensorProto.UINT16: 21, onnx.TensorProto.INT4: 21,
    onnx.TensorProto.UINT4: 21, onnx.TensorProto.FLOAT8E4M3FN: 19, onnx.TensorProto.FLOAT8E5M2: 19,
    onnx.TensorProto.FLOAT4E2M1: 23, onnx.TensorProto.INT2: 25, onnx.TensorProto.UINT2: 25}


def _collect() -> list[tuple[onnx.NodeProto, list[Any], list[Any], str]]:
    from onnx.backend.test.case.base import Base

    caught: list[tuple[onnx.NodeProto, list[Any], list[Any], str]] = []

    def collect(node: onnx.NodeProto, inputs: list[Any], outputs: list[Any], name: str, **_: Any) -> None:
        caught.append((node, list(inputs), list(outputs), name))

    for name in MODULES:
        mod = importlib.import_module(f"onnx.backend.test.case.node.{name}")
        saved = mod.expect
        mod.expect = collect
        try:
            for cls in vars(mod).values():
                if isinstance(cls, type) and issubclass(cls, Base) and cls is not Base:
                    for attr in sorted(dir(cls)):
                        if attr.startswith("export"):
                            with np.errstate(all="ignore"):
                                getattr(cls, attr)()
        finally:
            mod.expect = saved
    return caught


def _tensor(value: Any, name: str) -> onnx.TensorProto:
    if isinstance(value, onnx.TensorProto):
        t = onnx.TensorProto()
        t.CopyFrom(value)
        t.name = name
        return t
    return NH.from_array(np.asarray(value), name)


@functools.cache
def backend_models() -> dict[str, bytes]:
    """onnx's test cases of QLinearConv, QLinearMatMul, QuantizeLinear, DequantizeLinear,
    ConvInteger, MatMulInteger as serialized models, keyed by the onnx test name."""
    models = {}
    for node, inputs, outputs, name in _collect():
        present = [i for i in node.input if i]
        tensors = [_tensor(v, n) for v, n in zip(inputs, present, strict=False)]
        x = tensors[0]
        outs = [_tensor(v, n) for v, n in zip(outputs, [o for o in node.output if o], strict=False)]
        types = {t.data_type for t in tensors + outs}
        opset = max([13] + [NEWER_TYPES.get(t, 13) for t in types])
        if node.attribute and any(a.name in ("block_size", "output_dtype", "precision") for a in node.attribute):
            opset = max(opset, 21)
        graph = H.make_graph([node], name, [H.make_tensor_value_info(x.name, x.data_type, list(x.dims))],
                             [H.make_tensor_value_info(o.name, o.data_type, list(o.dims)) for o in outs],
                             tensors[1:])
        m = H.make_model(graph, opset_imports=[H.make_opsetid("", opset)], producer_name="onnx-backend-test")
        m.ir_version = 8 if opset <= 19 else 10 if opset <= 22 else 11
        models[name] = m.SerializeToString()
    return models
