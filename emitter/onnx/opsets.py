"""The ONNX opsets mcugen reads, and what it takes from opsets newer than the one its rules know.

mcugen's lowering rules are written against the default-domain ops up to opset 21 (KNOWN). Newer
opsets (22..25) mostly widen element types (bfloat16, float4, float8e8m0, int2) and add attributes
whose default keeps the old meaning, so a model written at opset 22..25 is read as it is, with one
check per node, from the onnx schemas themselves (onnx.defs):

    # op's schema at the model's opset == its schema at 21, up to element types      -> as at 21
    # ... plus attributes new since 21 that the node leaves unset                      -> as at 21
    # ... and a new attribute the node sets (QuantizeLinear `precision`,
    #     DequantizeLinear `output_dtype`)                                             -> qdq_attribute_problem()
    # anything else new since 21 (inputs, attribute defaults)                          -> refused, naming op and opset

QuantizeLinear/DequantizeLinear attributes (opsets 19..25), meaning-preserving values accepted:

    # saturate (any value)            -> accepted: it only concerns float8 outputs, refused anyway
    # block_size = 0                  -> per tensor / per axis, as before
    # block_size > 0, DQ of a constant whose blocks span its whole axis (one block)
    #                                 -> per tensor / per axis (emitter/lower/qparams.py)
    # block_size > 0 otherwise        -> refused (several blocks along the axis)
    # output_dtype = 0 or int8/uint8  -> (Q) the 8-bit type a zero point would give; anything else refused
    # output_dtype = 0 or float       -> (DQ) float32 as before; float16/bfloat16 outputs refused
    # precision = 0 or float          -> (Q) the division in float32 as before; lower precisions refused

A model importing no default-domain opset at all (com.microsoft QLinear* ops only) is read at KNOWN.
"""
from __future__ import annotations

import onnx
from onnx import defs

from emitter.errors import ModelError, UnsupportedError

MIN_OPSET, KNOWN, MAX_OPSET = 10, 21, 25
EIGHT_BIT = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
FLOAT = onnx.TensorProto.FLOAT


def default_opset(model: onnx.ModelProto) -> int:
    """The default-domain opset, within MIN_OPSET..MAX_OPSET (KNOWN when the model imports none
    and uses no default-domain op); a ModelError otherwise."""
    versions = [int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        default_ops = sorted({n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")})
        if default_ops:
            raise ModelError(f"the model uses ONNX ops {default_ops[:4]} but imports no opset of the "
                             "default ONNX domain; add one (onnx.helper.make_opsetid('', 21))")
        return KNOWN
    opset = versions[0]
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ModelError(f"model opset {opset} is outside the supported range {MIN_OPSET}-{MAX_OPSET}; "
                         f"convert it with onnx.version_converter.convert_version(model, {KNOWN})")
    return opset


def _signature(s: defs.OpSchema) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    return ([(i.name, str(i.option)) for i in s.inputs], [(o.name, str(o.option)) for o in s.outputs])


def newer_op_problem(node: onnx.NodeProto, opset: int) -> str | None:
    """Why `node` (default domain) cannot be read as at opset KNOWN, or None."""
    if opset <= KNOWN or node.domain not in ("", "ai.onnx"):
        return None
    try:
        new = defs.get_schema(node.op_type, opset, "")
        old = defs.get_schema(node.op_type, KNOWN, "")
    except defs.SchemaError:
        return None  # an op unknown to onnx or new since KNOWN: lowering reports it unsupported
    if new.since_version <= KNOWN:
        return None
    changed = [a for a in old.attributes if a not in new.attributes or
               new.attributes[a].default_value != old.attributes[a].default_value]
    added = {a for a in new.attributes if a not in old.attributes}
    used = sorted(added & {a.name for a in node.attribute})
    if _signature(new) != _signature(old) or changed:
        return (f"{node.op_type} changed in opset {new.since_version} (inputs, outputs or attribute "
                f"defaults) in a way mcugen does not read; convert the model to opset {KNOWN} "
                "with onnx.version_converter")
    if used and node.op_type not in ("QuantizeLinear", "DequantizeLinear"):
        return (f"attribute(s) {used} of {node.op_type}-{new.since_version} are not supported; "
                f"leave them unset or convert the model to opset {KNOWN}")
    return None


def block_problem(block: int, axis_len: int | None, what: str) -> str | None:
    """Why a block-wise DequantizeLinear (block_size > 0) of `what` cannot be read, or None: one block
    spanning the whole axis (length axis_len, None: not a constant) is per tensor / per axis."""
    if not block or (axis_len is not None and block >= axis_len):
        return None
    along = f" ({axis_len} elements along its axis: {-(-axis_len // block)} blocks)" if axis_len else ""
    return (f"block quantization (block_size={block}) of {what}{along} is not supported; quantize per "
            "tensor or per channel (block_size=0; onnxruntime: quantize_static with per_channel=True, "
            "not the MatMulNBits/blocked weight quantizers)")


def qdq_attribute_problem(node: onnx.NodeProto, const_shapes: dict[str, tuple[int, ...]] | None = None) -> str | None:
    """Why a QuantizeLinear/DequantizeLinear's attributes change what mcugen would compute, or None.
    const_shapes: the initializers' shapes (a DequantizeLinear of a constant may have one block)."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    unknown = sorted(set(attrs) - {"axis", "saturate", "block_size", "output_dtype", "precision"})
    if unknown:
        return f"unknown attribute(s) {unknown}"
    block = int(attrs.get("block_size", 0))
    shape = (const_shapes or {}).get(node.input[0]) if node.op_type == "DequantizeLinear" else None
    axis_len = None
    if shape is not None and len(shape) > 0:
        axis = int(attrs.get("axis", 1))
        axis_len = shape[axis + len(shape) if axis < 0 else axis] if -len(shape) <= axis < len(shape) else None
    why = block_problem(block, axis_len, f"'{node.input[0]}'")
    if why is not None:
        return why
    out = int(attrs.get("output_dtype", 0))
    def name(dtype: int) -> str:
        return onnx.TensorProto.DataType.Name(dtype) if dtype in onnx.TensorProto.DataType.values() else str(dtype)

    if node.op_type == "QuantizeLinear":
        if out and out not in EIGHT_BIT:
            return (f"output_dtype={name(out)} is not supported: mcugen runs 8-bit (int8/uint8) "
                    "quantized tensors; quantize to int8")
        precision = int(attrs.get("precision", 0))
        if precision and precision != FLOAT:
            return (f"precision={name(precision)} (the division by the scale in a narrower float) "
                    "is not supported; leave precision unset (float32)")
    elif out and out != FLOAT:
        return (f"output_dtype={name(out)} (a dequantized {name(out).lower()} tensor) is not "
                "supported; dequantize to float32 (output_dtype unset)")
    return None


def check_nodes(model: onnx.ModelProto, opset: int) -> None:
    """Every default-domain node readable at `opset` (newer_op_problem, qdq_attribute_problem); one
    UnsupportedError listing every node that is not."""
    problems = []
    shapes = {t.name: tuple(int(d) for d in t.dims) for t in model.graph.initializer}
    for k, node in enumerate(model.graph.node):
        why = newer_op_problem(node, opset)
        if why is None and node.op_type in ("QuantizeLinear", "DequantizeLinear") and node.domain in ("", "ai.onnx"):
            why = qdq_attribute_problem(node, shapes)
        if why is not None:
            problems.append((node.name or node.output[0] if node.output else f"#{k}", node.op_type, opset, why))
    if problems:
        raise UnsupportedError(problems)
