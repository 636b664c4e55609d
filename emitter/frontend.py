"""Front end: read an ONNX file, check it, infer shapes, and insist on static shapes.

Returns an OnnxModel: the checked, shape-inferred ModelProto plus the facts later stages ask for
(initializers as numpy arrays, every value's shape and dtype, the default-domain opset).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from emitter.errors import ModelError, ShapeError

MIN_OPSET, MAX_OPSET = 10, 21
MAX_ELEMENTS = 1 << 28  # no MCU tensor comes near this; larger means a corrupt or hostile file


@dataclass(frozen=True)
class OnnxModel:
    model: onnx.ModelProto
    path: Path
    sha256: str
    opset: int
    initializers: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, np.dtype]

    @property
    def graph(self) -> onnx.GraphProto:
        return self.model.graph


def _check_external_data(model: onnx.ModelProto, folder: Path) -> None:
    for init in model.graph.initializer:
        if init.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = {e.key: e.value for e in init.external_data}
        location = entries.get("location", "")
        target = (folder / location).resolve()
        if os.path.isabs(location) or folder.resolve() not in target.parents:
            raise ModelError(
                f"initializer '{init.name}' keeps its data in '{location}', outside the model's "
                f"folder {folder}; move the data file next to the model")
        if not target.is_file():
            raise ModelError(f"initializer '{init.name}': external data file '{location}' is missing")


def _dims(vi: onnx.ValueInfoProto) -> list[int | str | None]:
    dims: list[int | str | None] = []
    for d in vi.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def parse_input_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    """'NAME=1,49,10,1' -> {'NAME': (1, 49, 10, 1)}"""
    out: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, dims = spec.rpartition("=")
        try:
            shape = tuple(int(d) for d in dims.split(","))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or min(shape) <= 0:
            raise ShapeError(f"--input-shape '{spec}' is not NAME=D1,D2,... with positive dims")
        out[name] = shape
    return out


def load(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> OnnxModel:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read model '{path}': {exc.strerror}") from None
    try:
        model = onnx.load_model_from_string(raw)
    except Exception as exc:  # protobuf raises several types for corrupt bytes
        raise ModelError(f"'{path}' is not a readable ONNX protobuf ({type(exc).__name__}); "
                         "check that the file is complete and really an .onnx model") from None
    if not model.graph.node and not model.graph.input:
        raise ModelError(f"'{path}' holds no ONNX graph; is it really an .onnx model?")
    _check_external_data(model, path.parent)
    if any(i.data_location == onnx.TensorProto.EXTERNAL for i in model.graph.initializer):
        onnx.load_external_data_for_model(model, str(path.parent))

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ModelError(f"model opset {opset} is outside the supported range "
                         f"{MIN_OPSET}-{MAX_OPSET}; convert it with onnx.version_converter")

    inits = {i.name for i in model.graph.initializer}
    overrides = dict(input_shapes or {})
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = _dims(vi)
        if vi.name in overrides:
            shape = overrides.pop(vi.name)
            if len(shape) != len(dims):
                raise ShapeError(f"--input-shape for '{vi.name}' has rank {len(shape)}, "
                                 f"the model declares rank {len(dims)}")
            for d, v in zip(vi.type.tensor_type.shape.dim, shape):
                d.Clear()
                d.dim_value = v
            continue
        bad = [d for d in dims if not isinstance(d, int) or d <= 0]
        if bad:
            example = ",".join(str(d) if isinstance(d, int) and d > 0 else "1" for d in dims)
            raise ShapeError(f"graph input '{vi.name}' has dynamic or invalid dims {dims}; "
                             f"give static ones with --input-shape {vi.name}={example}")
    if overrides:
        raise ShapeError(f"--input-shape names unknown inputs: {', '.join(sorted(overrides))}")

    try:
        onnx.checker.check_model(model)
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                  data_prop=True)
    except Exception as exc:
        msg = str(exc).strip().splitlines()
        raise ModelError(f"'{path}' fails the ONNX checker/shape inference: "
                         f"{msg[0] if msg else type(exc).__name__}") from None

    initializers = {}
    for init in model.graph.initializer:
        count = int(np.prod(init.dims, dtype=np.int64)) if init.dims else 1
        if any(d < 0 for d in init.dims) or count > MAX_ELEMENTS:
            raise ShapeError(f"initializer '{init.name}' has invalid dims {list(init.dims)}")
        initializers[init.name] = numpy_helper.to_array(init)

    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, np.dtype] = {}
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        if not vi.type.HasField("tensor_type"):
            continue
        dims = _dims(vi)
        elem = vi.type.tensor_type.elem_type
        if elem:
            dtypes[vi.name] = onnx.helper.tensor_dtype_to_np_dtype(elem)
        if vi.type.tensor_type.HasField("shape") and all(isinstance(d, int) and d >= 0 for d in dims):
            shape = tuple(int(d) for d in dims)
            if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
                raise ShapeError(f"tensor '{vi.name}' has {shape}: too large for a microcontroller")
            shapes[vi.name] = shape
    for name, arr in initializers.items():
        shapes[name] = tuple(arr.shape)
        dtypes[name] = arr.dtype
    return OnnxModel(model, path, hashlib.sha256(raw).hexdigest(), opset, initializers, shapes, dtypes)
