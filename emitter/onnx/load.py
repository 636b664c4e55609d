"""Front end: read an ONNX file, check it, infer shapes, and insist on static shapes.

Returns an OnnxModel: the checked, shape-inferred ModelProto plus the facts later stages ask for
(initializers as numpy arrays, every value's shape and dtype, the default-domain opset).

The file comes from a stranger, so every check that can name the node or tensor at fault runs
before onnx's own checker, in this order:
  1. protobuf parse; every string field valid UTF-8; a graph at all
  2. tensor sizes from their declared dims (Python ints: no overflow), before any data is read
  3. external data: only regular files inside the model's folder, offsets and lengths in bounds
  4. opset range (emitter/onnx/opsets.py); graph structure: single assignment, no dangling inputs,
     no cycles, ordered; every node readable at its opset, Q/DQ attributes that keep their meaning
  5. quantized constants stored in their zero point's type; integer data in its type's range
  6. onnx.checker + strict shape inference (any failure of theirs becomes a ModelError); a value_info
     entry without a type (which fails the checker and carries no meaning) is dropped first, with a
     McugenWarning
  7. static, non-empty, MCU-sized shapes for every tensor
"""
from __future__ import annotations

import hashlib
import math
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import Message  # type: ignore[import-untyped]
from onnx import numpy_helper

from emitter.errors import McugenWarning, ModelError, QuantError, ShapeError
from emitter.onnx import opsets
from emitter.onnx.float_model import check_not_float

MAX_ELEMENTS = 1 << 28  # no MCU tensor comes near this; larger means a corrupt or hostile file
NARROW_INTS: dict[int, tuple[str, int, int]] = {  # ONNX keeps these in int32_data: their range
    onnx.TensorProto.INT8: ("int8", -128, 127), onnx.TensorProto.UINT8: ("uint8", 0, 255),
    onnx.TensorProto.INT16: ("int16", -32768, 32767), onnx.TensorProto.UINT16: ("uint16", 0, 65535)}
PLAIN_ITEMSIZE = {getattr(onnx.TensorProto, n): np.dtype(d).itemsize for n, d in (
    ("FLOAT", "f4"), ("DOUBLE", "f8"), ("FLOAT16", "f2"), ("INT8", "i1"), ("UINT8", "u1"),
    ("INT16", "i2"), ("UINT16", "u2"), ("INT32", "i4"), ("UINT32", "u4"), ("INT64", "i8"),
    ("UINT64", "u8"), ("BOOL", "?"))}


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


def _node_label(node: onnx.NodeProto, k: int) -> str:
    return f"node '{node.name}' ({node.op_type})" if node.name else f"node #{k} ({node.op_type}, unnamed)"


# ---- 1. strings ----------------------------------------------------------------------------------

def _undecodable_string(msg: Message, where: str = "model") -> str | None:
    """The first string field that is not valid UTF-8 (protobuf hands those over as bytes)."""
    for fd, value in msg.ListFields():
        if fd.type == fd.TYPE_STRING:
            values = [value] if isinstance(value, (str, bytes)) else value
            if any(isinstance(v, bytes) for v in values):
                return f"{where}.{fd.name}"
        elif fd.type == fd.TYPE_MESSAGE:
            values = [value] if isinstance(value, Message) else value
            for k, v in enumerate(values):
                found = _undecodable_string(v, f"{where}.{fd.name}[{k}]")
                if found:
                    return found
    return None


# ---- 2./3. tensors and external data ---------------------------------------------------------------

def _graph_tensors(g: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from g.initializer
    for sp in g.sparse_initializer:
        yield sp.values
        yield sp.indices
    yield from _node_tensors(g.node)


def _node_tensors(nodes: Iterator[onnx.NodeProto] | list[onnx.NodeProto]) -> Iterator[onnx.TensorProto]:
    for node in nodes:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors
            if a.HasField("sparse_tensor"):
                yield a.sparse_tensor.values
                yield a.sparse_tensor.indices
            for sp in a.sparse_tensors:
                yield sp.values
                yield sp.indices
            if a.HasField("g"):
                yield from _graph_tensors(a.g)
            for sub in a.graphs:
                yield from _graph_tensors(sub)


def all_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every TensorProto of the model: initializers, node attributes, subgraphs, functions."""
    yield from _graph_tensors(model.graph)
    for f in model.functions:
        yield from _node_tensors(f.node)


def element_count(dims: list[int] | tuple[int, ...], what: str) -> int:
    """Product of declared dims in Python integers (no int64 wrap-around), within MAX_ELEMENTS."""
    if any(d < 0 for d in dims):
        raise ShapeError(f"{what} has negative dims {list(dims)}; the file is corrupt: re-export it")
    count = math.prod(dims)
    if count > MAX_ELEMENTS:
        raise ShapeError(f"{what} has dims {list(dims)} ({count:,} elements, the limit is "
                         f"{MAX_ELEMENTS:,}): far too large for a microcontroller, or a corrupt file")
    return count


def _load_external(t: onnx.TensorProto, folder: Path) -> None:
    """Read one tensor's external data, refusing any file outside the model's folder."""
    what = f"initializer '{t.name}'"
    entries = {e.key: e.value for e in t.external_data}
    location = entries.get("location", "")
    if not location:
        raise ModelError(f"{what} is marked as external data but names no file; re-save the model "
                         "with onnx.save(..., save_as_external_data=True)")
    root = folder.resolve()
    target = (folder / location).resolve()
    if os.path.isabs(location) or ".." in Path(location).parts or root not in target.parents:
        raise ModelError(f"{what} keeps its data in '{location}', outside the model's folder "
                         f"{folder}; mcugen only reads data files next to the model: move it there "
                         "and set the location to its bare file name")
    if not target.is_file():
        raise ModelError(f"{what}: external data file '{location}' is missing (or not a regular "
                         f"file) in {folder}; copy it next to the model")
    itemsize = PLAIN_ITEMSIZE.get(t.data_type)
    if itemsize is None:
        raise ModelError(f"{what}: external data of element type {t.data_type} is not supported; "
                         "store this tensor inside the model")
    need = element_count(list(t.dims), what) * itemsize
    try:
        offset = int(entries.get("offset", "0"))
        length = int(entries["length"]) if "length" in entries else None
    except ValueError:
        raise ModelError(f"{what}: external data offset/length {entries.get('offset')!r}/"
                         f"{entries.get('length')!r} are not integers; re-save the model") from None
    size = target.stat().st_size
    if length is None:
        length = size - offset
    if offset < 0 or length < 0 or offset + length > size:
        raise ModelError(f"{what}: external data range offset {offset}, length {length} lies outside "
                         f"'{location}' ({size} bytes); the data file does not belong to this model")
    if length != need:
        raise ModelError(f"{what}: external data '{location}' holds {length} bytes, its dims {list(t.dims)} need "
                         f"{need}; the data file does not belong to this model")
    with open(target, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    t.raw_data = data
    t.data_location = onnx.TensorProto.DEFAULT
    del t.external_data[:]


# ---- 4. structure --------------------------------------------------------------------------------

def _check_structure(g: onnx.GraphProto) -> None:
    """Single assignment, every input defined, acyclic and in topological order, outputs produced."""
    available = {vi.name for vi in g.input} | {t.name for t in g.initializer}
    available |= {sp.values.name for sp in g.sparse_initializer}
    producer: dict[str, int] = {}
    for k, node in enumerate(g.node):
        for o in node.output:
            if not o:
                continue
            if o in producer or o in available:
                first = (_node_label(g.node[producer[o]], producer[o]) if o in producer
                         else "a graph input or initializer")
                raise ModelError(f"tensor '{o}' is written by {_node_label(node, k)} and by {first}; "
                                 "ONNX needs exactly one producer per tensor: re-export the model")
            producer[o] = k
    defined = set(available)
    for k, node in enumerate(g.node):
        for i in node.input:
            if i and i not in defined:
                if i in producer:
                    _order_error(g, node, k, i, producer[i])
                raise ModelError(f"{_node_label(node, k)} reads '{i}', which no initializer, graph "
                                 "input or node provides (a missing initializer or a dangling "
                                 "input); re-export the model with all its weights")
        defined.update(o for o in node.output if o)
    for vi in g.output:
        if vi.name not in defined:
            raise ModelError(f"graph output '{vi.name}' is produced by no node; remove it or "
                             "re-export the model")
    used = {i for node in g.node for i in node.input} | {vi.name for vi in g.output}
    for vi in g.input:
        if vi.name not in used and vi.name not in {t.name for t in g.initializer}:
            raise ModelError(f"graph input '{vi.name}' is read by no node (a dangling input); "
                             "remove it from the model's inputs")


def _order_error(g: onnx.GraphProto, node: onnx.NodeProto, k: int, name: str, p: int) -> None:
    """A node reads a tensor produced later: a cycle, or nodes out of topological order."""
    producers = {o: j for j, n in enumerate(g.node) for o in n.output if o}
    deps = [{producers[i] for i in n.input if i in producers} for n in g.node]
    done: set[int] = set()
    progress = True
    while progress:
        progress = False
        for j, d in enumerate(deps):
            if j not in done and d <= done:
                done.add(j)
                progress = True
    stuck = {j for j in range(len(g.node)) if j not in done}
    trimmed = True
    while trimmed:  # drop nodes that merely wait downstream of the cycle
        feeding = set().union(*(deps[j] for j in stuck)) if stuck else set()
        trimmed = bool(stuck - feeding)
        stuck &= feeding
    if stuck:
        cycle = sorted(stuck)
        names = ", ".join(_node_label(g.node[j], j) for j in cycle[:6])
        raise ModelError(f"the graph has a cycle through {names}{' ...' if len(cycle) > 6 else ''}; "
                         "an ONNX graph must be acyclic: re-export the model")
    raise ModelError(f"{_node_label(node, k)} reads '{name}' before {_node_label(g.node[p], p)} "
                     "produces it: the nodes are not in topological order, as ONNX requires; "
                     "re-export the model (or sort its nodes)")


# ---- 5. quantized constants ----------------------------------------------------------------------

def _check_quantized_constants(g: onnx.GraphProto) -> None:
    inits = {t.name: t for t in g.initializer}
    for t in g.initializer:
        narrow = NARROW_INTS.get(t.data_type)
        if narrow is not None and len(t.int32_data):
            type_name, lo, hi = narrow
            values = np.asarray(t.int32_data, dtype=np.int64)
            if values.min() < lo or values.max() > hi:
                raise QuantError(f"initializer '{t.name}' is {type_name} but stores values "
                                 f"{values.min()}..{values.max()}; the file is corrupt: re-export it")
    for k, node in enumerate(g.node):
        if node.op_type != "DequantizeLinear" or len(node.input) < 3 or not node.input[2]:
            continue
        q, zp = inits.get(node.input[0]), inits.get(node.input[2])
        if q is not None and zp is not None and q.data_type != zp.data_type:
            dt = onnx.TensorProto.DataType.Name
            raise QuantError(
                f"{_node_label(node, k)}: quantized data '{q.name}' is stored as "
                f"{dt(q.data_type).lower()} but its zero point '{zp.name}' is "
                f"{dt(zp.data_type).lower()}; store the data in the zero point's type (int8 "
                "weights: re-quantize with onnxruntime quantize_static, QuantType.QInt8)")


# ---- the front end -------------------------------------------------------------------------------

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
        element_count(shape, f"--input-shape '{spec}'")
        out[name] = shape
    return out


def _parse(raw: bytes, path: Path) -> onnx.ModelProto:
    try:
        model = onnx.load_model_from_string(raw)
    except Exception as exc:  # noqa: BLE001 -- protobuf raises several types for corrupt bytes
        raise ModelError(f"'{path}' is not a readable ONNX protobuf ({type(exc).__name__}); "
                         "check that the file is complete and really an .onnx model") from None
    bad = _undecodable_string(model)
    if bad:
        raise ModelError(f"'{path}': the string field {bad} is not valid UTF-8; the file is "
                         "corrupt or not an ONNX model")
    if not model.graph.node and not model.graph.input:
        raise ModelError(f"'{path}' holds no ONNX graph; is it really an .onnx model?")
    return model


def _set_input_shapes(model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]] | None) -> None:
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
            for d, v in zip(vi.type.tensor_type.shape.dim, shape, strict=True):
                d.Clear()
                d.dim_value = v
            continue
        bad = [d for d in dims if not isinstance(d, int) or d <= 0]
        if bad or not vi.type.tensor_type.HasField("shape"):
            example = ",".join(str(d) if isinstance(d, int) and d > 0 else "1" for d in dims) or "1"
            raise ShapeError(f"graph input '{vi.name}' has dynamic or invalid dims {dims}; "
                             f"give static ones with --input-shape {vi.name}={example}")
        element_count([int(d) for d in dims if isinstance(d, int)], f"graph input '{vi.name}'")
    if overrides:
        raise ShapeError(f"--input-shape names unknown inputs: {', '.join(sorted(overrides))}")


def _drop_untyped_value_info(g: onnx.GraphProto) -> None:
    """A value_info entry is a hint about an intermediate tensor; one without a type fails
    onnx.checker yet says nothing: drop it (shape inference recomputes what it could have said),
    with a warning."""
    keep = [vi for vi in g.value_info if vi.type.WhichOneof("value") is not None]
    dropped = [vi.name for vi in g.value_info if vi.type.WhichOneof("value") is None]
    if not dropped:
        return
    del g.value_info[:]
    g.value_info.extend(keep)
    names = ", ".join(f"'{n}'" for n in dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
    warnings.warn(f"{len(dropped)} value_info entr{'y' if len(dropped) == 1 else 'ies'} without a type "
                  f"({names}) dropped: such an entry fails the ONNX checker and carries no information "
                  "(re-export the model, or delete them, to silence this)", McugenWarning, stacklevel=3)


def load(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> OnnxModel:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read model '{path}': {exc.strerror}") from None
    model = _parse(raw, path)
    for t in all_tensors(model):
        element_count(list(t.dims), f"initializer '{t.name}'")
        if t.data_location == onnx.TensorProto.EXTERNAL:
            _load_external(t, path.parent)

    opset = opsets.default_opset(model)
    opsets.check_nodes(model, opset)
    if len(model.graph.sparse_initializer):
        raise ModelError(f"sparse initializer '{model.graph.sparse_initializer[0].values.name}' is not "
                         "supported; store the weights densely (onnx.numpy_helper.from_array)")
    _check_structure(model.graph)
    check_not_float(model, path)
    _check_quantized_constants(model.graph)
    _set_input_shapes(model, input_shapes)
    _drop_untyped_value_info(model.graph)

    try:
        onnx.checker.check_model(model)
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                  data_prop=True)
    except Exception as exc:  # noqa: BLE001 -- onnx reports through several exception types
        lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        detail = " ".join(lines[:2])[:400] if lines else type(exc).__name__
        raise ModelError(f"'{path}' fails the ONNX checker/shape inference: {detail}. mcugen needs a "
                         "model that onnx.checker.check_model and strict shape inference accept: "
                         "fix or re-export it") from None

    initializers = {}
    for init in model.graph.initializer:
        try:
            initializers[init.name] = numpy_helper.to_array(init)
        except Exception as exc:  # noqa: BLE001 -- data in the wrong field or of the wrong length
            raise ModelError(f"initializer '{init.name}' cannot be read ({type(exc).__name__}: "
                             f"{str(exc)[:120]}); the file is corrupt: re-export it") from None

    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, np.dtype] = {}
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        if not vi.type.HasField("tensor_type"):
            continue
        dims = _dims(vi)
        elem = vi.type.tensor_type.elem_type
        if elem:
            try:
                dtypes[vi.name] = onnx.helper.tensor_dtype_to_np_dtype(elem)
            except (KeyError, ValueError):
                raise ModelError(f"tensor '{vi.name}' has unknown element type {elem}") from None
        if vi.type.tensor_type.HasField("shape") and all(isinstance(d, int) and d >= 0 for d in dims):
            shape = tuple(int(d) for d in dims)  # type: ignore[arg-type]
            count = element_count(shape, f"tensor '{vi.name}'")
            if count == 0 and vi.name not in initializers:
                raise ShapeError(f"tensor '{vi.name}' has shape {list(shape)} with a zero dim: an "
                                 "empty tensor cannot be computed; fix the shapes of the model")
            shapes[vi.name] = shape
    for name, arr in initializers.items():
        shapes[name] = tuple(arr.shape)
        dtypes[name] = arr.dtype
    return OnnxModel(model, path, hashlib.sha256(raw).hexdigest(), opset, initializers, shapes, dtypes)
