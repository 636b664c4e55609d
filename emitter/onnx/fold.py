"""Build-time evaluation before lowering: constant folding.

    # Constant, shape arithmetic, QuantizeLinear(constant), Shape(static)  -> initializers
    # shapes that depended on those values                                  -> inferred again

(The shapes of com.microsoft QLinear* outputs are completed by emitter/lower/qoperator.py.)

DequantizeLinear is never folded: its integer data and scales are what the lowering needs.
"""
from __future__ import annotations

import numpy as np
import onnx

from emitter.onnx.load import OnnxModel


def fold_constants(m: OnnxModel, inits: dict[str, np.ndarray]) -> set[str]:
    """Evaluate, at build time, every node whose inputs are all constants (Constant, shape
    arithmetic, QuantizeLinear of a constant, ...) and Shape of a static tensor, with onnx's
    reference evaluator; their outputs join `inits`. DequantizeLinear stays (its integer data and
    scales are what the lowering needs). Returns the first outputs of folded nodes."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    folded: set[str] = set()
    for node in m.graph.node:
        if not node.output or node.op_type == "DequantizeLinear" or node.domain not in ("", "ai.onnx"):
            continue
        values: list[np.ndarray] | None = None
        if node.op_type == "Constant":
            v = constant_value(node)
            values = [v] if v is not None else None
        elif node.op_type == "Shape" and node.input[0] in m.shapes and node.input[0] not in inits:
            a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
            shape = np.array(m.shapes[node.input[0]], dtype=np.int64)
            values = [shape[a.get("start", 0):a.get("end", len(shape))]]
        elif node.input and all(i == "" or i in inits for i in node.input):
            try:
                feeds = [numpy_helper.from_array(np.asarray(inits[i]), i) for i in node.input if i]
                g = helper.make_graph([node], "fold", [], [helper.make_tensor_value_info(o, 0, None)
                                                          for o in node.output if o], feeds)
                model = helper.make_model(g, opset_imports=[helper.make_opsetid("", m.opset)])
                values = [np.asarray(v) for v in ReferenceEvaluator(model).run(None, {})]
            except Exception:
                values = None  # not foldable here: lowered (or reported) like any other node
        if values is None:
            continue
        for name, value in zip([o for o in node.output if o], values, strict=False):
            inits[name] = value
            m.shapes.setdefault(name, tuple(value.shape))  # type: ignore[misc]
            m.dtypes.setdefault(name, value.dtype)  # type: ignore[misc]
        folded.add(node.output[0])
    if folded:
        infer_with_constants(m, inits, folded)
    return folded


def infer_with_constants(m: OnnxModel, inits: dict[str, np.ndarray], folded: set[str]) -> None:
    """Shapes that depended on folded values (Pad pads from a shape subgraph, Reshape targets):
    shape inference again, with every folded value as an initializer."""
    from onnx import numpy_helper

    model = onnx.ModelProto()
    model.CopyFrom(m.model)
    keep = [n for n in model.graph.node if not (n.output and n.output[0] in folded)]
    del model.graph.node[:]
    model.graph.node.extend(keep)
    known = {i.name for i in model.graph.initializer}
    produced = {o for n in keep for o in n.output}
    for name, value in inits.items():
        if name not in known and name not in produced:
            model.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    record_inferred(m, model)


def record_inferred(m: OnnxModel, model: onnx.ModelProto, dtypes: bool = False) -> None:
    """Run onnx shape inference (with data propagation) on `model` and record every static shape it
    finds, and with `dtypes` every element type, that `m` does not know yet. A model onnx cannot
    infer leaves `m` as it was."""
    try:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:
        return
    for vi in list(model.graph.value_info) + list(model.graph.output):
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if tt.HasField("shape") and all(d is not None and d >= 0 for d in dims):
            m.shapes.setdefault(vi.name, tuple(int(d or 0) for d in dims))  # type: ignore[misc]
        if dtypes and tt.elem_type:
            m.dtypes.setdefault(vi.name, onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))


def constant_value(node: onnx.NodeProto) -> np.ndarray | None:
    """The tensor a Constant node holds (None for sparse or unknown forms: reported later)."""
    from onnx import numpy_helper

    a = {x.name: x for x in node.attribute}
    if "value" in a:
        return numpy_helper.to_array(a["value"].t)
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in a:
            return np.array(onnx.helper.get_attribute_value(a[key]), dtype=dtype)
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in a:
            return np.array(list(onnx.helper.get_attribute_value(a[key])), dtype=dtype)
    return None
