"""A float model (no quantization in it at all) gets one error naming the fix: the exact
`mcugen quantize` command for it (issue #15, item 6), instead of one "not quantized" line per node."""
from __future__ import annotations

import shlex
from pathlib import Path

import onnx

from emitter.errors import QuantError

FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16)
QUANT_OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QGemm", "ConvInteger",
             "MatMulInteger")


def is_quantized(g: onnx.GraphProto) -> bool:
    return any(n.op_type in QUANT_OPS or n.op_type.startswith("QLinear") for n in g.node)


def check_not_float(model: onnx.ModelProto, path: Path) -> None:
    """QuantError (exit 2) with the quantize command when the model has float inputs and no
    quantization node (QuantizeLinear/DequantizeLinear, QLinear*, QGemm, *Integer)."""
    g = model.graph
    consts = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name not in consts]
    floats = [i.name for i in inputs if i.type.tensor_type.elem_type in FLOAT_TYPES]
    if not floats or is_quantized(g):
        return
    out = path.with_name(f"{path.stem}_int8.onnx")
    names = ", ".join(f"'{n}'" for n in floats)
    raise QuantError(
        f"'{path}' is a float model (float input {names}, no QuantizeLinear/DequantizeLinear or "
        "QLinear* node): mcugen compiles int8 models. Quantize it first, with a few hundred "
        "representative inputs in CALIB.npz (one array per input name, or `inputs` for a one-input "
        "model; first axis = samples):\n"
        f"    mcugen quantize {shlex.quote(str(path))} --calibration CALIB.npz -o {shlex.quote(str(out))}\n"
        f"then: mcugen {shlex.quote(str(out))} --board=<your board>")
