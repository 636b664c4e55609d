"""Single-op ONNX models, quantized by onnxruntime, for the per-op case-table tests.

Each `OpCase` describes one float op (graph inputs float32, constants as initializers).
`case_model` builds it with onnx.helper, quantizes it with onnxruntime `quantize_static` in QDQ
("qdq") or QOperator ("qop") form, and returns the quantized model plus seeded float test inputs
that lie inside the calibration range. Everything is seeded: the same case gives the same files.

onnxruntime 1.32 behaviour the tables encode:
- QOperator: ReduceMean and Tanh have no QLinear kernel and stay float; Add/Mul/Sigmoid/Concat/
  AveragePool/GlobalAveragePool/Softmax/Gemm become com.microsoft ops (QLinearAdd, ..., QGemm);
  MaxPool/Pad/Transpose/Reshape/Flatten run on int8 and GlobalAveragePool becomes
  QLinearGlobalAveragePool only behind a quantized producer, hence `OpCase.lead`.
- Both formats: Relu/Clip are quantized only behind a quantized producer, and then removed (their
  range goes to the producer's output QuantizeLinear) unless QDQKeepRemovableActivations is set.
`OpCase.qop` records whether the QOperator form of a case contains an integer version of the op.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_static,
)
from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

N_CALIB = 8
IR_VERSION = 8  # what torch's exporter writes for opsets 13..17; onnxruntime loads it everywhere

WeightsFn = Callable[[np.random.Generator], dict[str, np.ndarray]]


# --------------------------------------------------------------------------------------------------
# model building


def make_float_model(
    op_type: str,
    input_shapes: Sequence[tuple[int, ...]],
    attrs: Mapping[str, Any],
    *,
    weights: Mapping[str, np.ndarray] | None = None,
    opset: int = 13,
    extra_nodes: Sequence[onnx.NodeProto] | None = None,
    lead: str | None = None,
) -> onnx.ModelProto:
    """One `op_type` node over float32 graph inputs x0, x1, ... and constant `weights`.

    The node's inputs are the graph inputs, then every weight not consumed by an extra node, in dict
    order (so list weights in the op's input order: W, B / min, max / pads, value). Its output is
    "y". `extra_nodes` run after it, consume "y" (and their own weights by name), and the last
    one's first output becomes the graph output. Output shapes come from onnx shape inference.

    `lead` puts an identity-valued quantizable producer between each graph input and the op, for
    ops that onnxruntime only quantizes when their input is already quantized (see LEADS).
    """
    weights = dict(weights or {})
    extra = list(extra_nodes or [])
    extra_inputs = {name for n in extra for name in n.input}
    x_names = [f"x{i}" for i in range(len(input_shapes))]
    nodes: list[onnx.NodeProto] = []
    op_in = list(x_names)
    if lead is not None:
        if lead not in LEADS:
            raise ValueError(f"lead={lead!r}: expected one of {sorted(LEADS)}")
        for i, (name, shape) in enumerate(zip(x_names, input_shapes, strict=True)):
            node, consts = LEADS[lead](name, tuple(shape), f"lead{i}")
            nodes.append(node)
            weights.update(consts)  # lead constants are named lead<i>_*, consumed by the lead node
            extra_inputs.update(consts)
            op_in[i] = node.output[0]
    node_inputs = op_in + [k for k in weights if k not in extra_inputs]
    nodes.append(helper.make_node(op_type, node_inputs, ["y"], name=op_type.lower(), **dict(attrs)))
    nodes += extra
    out_name = extra[-1].output[0] if extra else "y"
    graph = helper.make_graph(
        nodes,
        f"{op_type.lower()}_case",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
            for n, s in zip(x_names, input_shapes, strict=True)
        ],
        [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.asarray(v), name=k) for k, v in weights.items()],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="mcugen-tests"
    )
    model.ir_version = IR_VERSION
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    shapes = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    out = shapes[out_name].type.tensor_type
    if not out.HasField("shape") or any(not d.HasField("dim_value") for d in out.shape.dim):
        raise ValueError(
            f"{op_type}: shape inference left output {out_name!r} without a static shape"
        )
    model.graph.output[0].CopyFrom(
        helper.make_tensor_value_info(
            out_name, TensorProto.FLOAT, [d.dim_value for d in out.shape.dim]
        )
    )
    onnx.checker.check_model(model, full_check=True)
    return model


def _lead_dwconv1x1(
    x: str, shape: tuple[int, ...], tag: str
) -> tuple[onnx.NodeProto, dict[str, np.ndarray]]:
    # x -> depthwise 1x1 Conv with weight 1, no bias: y == x (4-D NCHW inputs)
    if len(shape) != 4:
        raise ValueError(f"lead dwconv1x1 needs a 4-D NCHW input, got shape {shape}")
    w = np.ones((shape[1], 1, 1, 1), np.float32)
    node = helper.make_node(
        "Conv", [x, f"{tag}_W"], [f"{tag}_out"], name=tag, kernel_shape=[1, 1], group=shape[1]
    )
    return node, {f"{tag}_W": w}


def _lead_matmul(
    x: str, shape: tuple[int, ...], tag: str
) -> tuple[onnx.NodeProto, dict[str, np.ndarray]]:
    # x -> MatMul with the identity matrix: y == x (any rank >= 2)
    if len(shape) < 2:
        raise ValueError(f"lead matmul needs rank >= 2, got shape {shape}")
    w = np.eye(shape[-1], dtype=np.float32)
    return helper.make_node("MatMul", [x, f"{tag}_W"], [f"{tag}_out"], name=tag), {f"{tag}_W": w}


# Identity-valued producers. onnxruntime's QOperator quantizer leaves MaxPool, Transpose,
# Reshape, Flatten, Pad, GlobalAveragePool (and, in both formats, Relu/Clip) float when their
# input is a float graph input; a quantized producer in front gives the form they take inside a
# real model.
LEADS: dict[
    str, Callable[[str, tuple[int, ...], str], tuple[onnx.NodeProto, dict[str, np.ndarray]]]
] = {
    "dwconv1x1": _lead_dwconv1x1,
    "matmul": _lead_matmul,
}


# --------------------------------------------------------------------------------------------------
# quantization


class _Reader(CalibrationDataReader):  # type: ignore[misc]
    """Calibration feeds from a list of {input name: array} dicts."""

    def __init__(self, feeds: Sequence[dict[str, np.ndarray]]) -> None:
        self._it = iter(list(feeds))

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._it, None)


def quantize(
    model: onnx.ModelProto,
    calib: Sequence[dict[str, np.ndarray]],
    *,
    fmt: str = "qdq",
    per_channel: bool = True,
    activation_type: str = "int8",
    weight_type: str = "int8",
    reduce_range: bool = False,
    out_path: Path,
    op_types: Sequence[str] | None = None,
    extra_options: Mapping[str, Any] | None = None,
) -> Path:
    """Quantize `model` with onnxruntime quantize_static (MinMax calibration over `calib`).

    `op_types` defaults to onnxruntime's own default list plus every op type in the model, so ops
    outside onnxruntime's registries (Tanh, ReduceMean) still get QDQ around them in "qdq" form.
    In "qdq" form `ForceQuantizeNoInputCheck` is on by default: in a one-op model the op's input is
    the float graph input, and without it onnxruntime leaves MaxPool/Transpose/Reshape/... float.
    In "qop" form it stays off: there it makes those ops float even behind a quantized producer
    (onnxruntime's Direct8BitOp then only accepts an initializer as input), so use a lead instead.
    """
    types = {"int8": QuantType.QInt8, "uint8": QuantType.QUInt8}
    formats = {"qdq": QuantFormat.QDQ, "qop": QuantFormat.QOperator}
    for what, value, allowed in (
        ("fmt", fmt, formats),
        ("activation_type", activation_type, types),
        ("weight_type", weight_type, types),
    ):
        if value not in allowed:
            raise ValueError(f"{what}={value!r}: expected one of {sorted(allowed)}")
    if op_types is None:
        wanted = set(QDQRegistry) | set(QLinearOpsRegistry) | {n.op_type for n in model.graph.node}
        op_types = sorted(wanted)
    options = {"ForceQuantizeNoInputCheck": fmt == "qdq", **dict(extra_options or {})}
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    work = onnx.ModelProto()
    work.CopyFrom(model)  # quantize_static rewrites a ModelProto's initializers to external data
    quantize_static(
        work,
        str(out_path),
        _Reader(calib),
        quant_format=formats[fmt],
        op_types_to_quantize=list(op_types),
        per_channel=per_channel,
        reduce_range=reduce_range,
        activation_type=types[activation_type],
        weight_type=types[weight_type],
        extra_options=options,
    )
    return out_path


# --------------------------------------------------------------------------------------------------
# cases


@dataclass(frozen=True, eq=False)
class OpCase:
    """One single-op test model. `weights_fn(rng)` returns the constant inputs in op input order."""

    id: str
    op_type: str
    input_shapes: tuple[tuple[int, ...], ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    weights_fn: WeightsFn | None = None
    seed: int = 0
    input_range: tuple[float, float] = (-1.0, 1.0)
    extra_nodes: tuple[onnx.NodeProto, ...] = ()
    opset: int = 13
    lead: str | None = None  # identity producer put in front of the op (a key of LEADS) ...
    lead_fmts: tuple[str, ...] = ("qop",)  # ... in these formats only
    # extra_options for quantize_static, on top of quantize()'s defaults
    quant_options: Mapping[str, Any] = field(default_factory=dict)
    qop: bool = True  # QOperator form contains a quantized kernel for this op (else float/dropped)
    note: str = ""

    def weights(self) -> dict[str, np.ndarray]:
        return {} if self.weights_fn is None else self.weights_fn(np.random.default_rng(self.seed))

    def float_model(self, fmt: str = "qdq") -> onnx.ModelProto:
        """The float model quantized for `fmt` (the lead, if any, is only there for lead_fmts)."""
        return make_float_model(
            self.op_type,
            self.input_shapes,
            self.attrs,
            weights=self.weights(),
            opset=self.opset,
            extra_nodes=self.extra_nodes,
            lead=self.lead if fmt in self.lead_fmts else None,
        )

    def calib_feeds(self, n: int = N_CALIB) -> list[dict[str, np.ndarray]]:
        """`n` seeded feeds, uniform in input_range; feed 0 is the test input."""
        rng = np.random.default_rng(10_000 + self.seed)
        lo, hi = self.input_range
        return [
            {
                f"x{i}": rng.uniform(lo, hi, size=s).astype(np.float32)
                for i, s in enumerate(self.input_shapes)
            }
            for _ in range(n)
        ]


def case_model(
    case: OpCase,
    fmt: str,
    tmp_path: Path,
    *,
    activation_type: str = "int8",
    per_channel: bool = True,
    reduce_range: bool = False,
) -> tuple[Path, list[np.ndarray]]:
    """Quantized model for `case` in `fmt` ("qdq" or "qop") under tmp_path, and its float test
    inputs (one array per graph input, in graph order; they lie inside the calibration range)."""
    feeds = case.calib_feeds()
    suffix = "" if activation_type == "int8" else f"_{activation_type}"
    out = Path(tmp_path) / f"{case.id}_{fmt}{suffix}.onnx"
    quantize(
        case.float_model(fmt),
        feeds,
        fmt=fmt,
        per_channel=per_channel,
        activation_type=activation_type,
        reduce_range=reduce_range,
        out_path=out,
        extra_options=case.quant_options,
    )
    return out, [feeds[0][f"x{i}"] for i in range(len(case.input_shapes))]


# weight makers ------------------------------------------------------------------------------------


def _conv_w(cout: int, cin_per_group: int, kh: int, kw: int, *, bias: bool = True) -> WeightsFn:
    def fn(rng: np.random.Generator) -> dict[str, np.ndarray]:
        fan_in = cin_per_group * kh * kw
        w = {
            "W": (rng.standard_normal((cout, cin_per_group, kh, kw)) / np.sqrt(fan_in)).astype(
                np.float32
            )
        }
        if bias:
            w["B"] = (0.1 * rng.standard_normal(cout)).astype(np.float32)
        return w

    return fn


def _fc_w(shape: tuple[int, int], fan_in: int, bias: int | None) -> WeightsFn:
    def fn(rng: np.random.Generator) -> dict[str, np.ndarray]:
        w = {"W": (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)}
        if bias is not None:
            w["B"] = (0.1 * rng.standard_normal(bias)).astype(np.float32)
        return w

    return fn


def _const(**arrays: Any) -> WeightsFn:
    fixed = {k: np.asarray(v) for k, v in arrays.items()}
    return lambda rng: dict(fixed)


def _rand_const(name: str, shape: tuple[int, ...], lo: float, hi: float) -> WeightsFn:
    return lambda rng: {name: rng.uniform(lo, hi, size=shape).astype(np.float32)}


def _i64(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


X488 = ((1, 4, 8, 8),)
X888 = ((1, 8, 8, 8),)

CONV = [
    OpCase("conv1x1", "Conv", X888, {"kernel_shape": [1, 1]}, _conv_w(16, 8, 1, 1)),
    OpCase(
        "conv3x3_p1",
        "Conv",
        X488,
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
        _conv_w(8, 4, 3, 3),
    ),
    OpCase(
        "conv3x3_nobias", "Conv", X488, {"kernel_shape": [3, 3]}, _conv_w(8, 4, 3, 3, bias=False)
    ),
    OpCase(
        "conv3x3_s2",
        "Conv",
        X488,
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        _conv_w(8, 4, 3, 3),
    ),
    OpCase(
        "conv3x3_d2",
        "Conv",
        X488,
        {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 2, 2, 2]},
        _conv_w(8, 4, 3, 3),
    ),
    OpCase(
        "conv3x3_pads_asym",
        "Conv",
        X488,
        {"kernel_shape": [3, 3], "pads": [1, 0, 2, 1]},  # top, left, bottom, right
        _conv_w(8, 4, 3, 3),
    ),
    OpCase(
        "conv3x1_rect",
        "Conv",
        ((1, 4, 6, 8),),
        {"kernel_shape": [3, 1], "strides": [1, 2], "pads": [1, 0, 1, 0]},
        _conv_w(6, 4, 3, 1),
    ),
    OpCase(
        "conv3x3_same_upper_s2",
        "Conv",
        X488,
        {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
        _conv_w(8, 4, 3, 3),
        note="pads (0,0,1,1)",
    ),
    OpCase(
        "conv3x3_same_lower_s2",
        "Conv",
        X488,
        {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
        _conv_w(8, 4, 3, 3),
        note="pads (1,1,0,0)",
    ),
    OpCase(
        "conv3x3_valid",
        "Conv",
        X488,
        {"kernel_shape": [3, 3], "auto_pad": "VALID"},
        _conv_w(8, 4, 3, 3),
    ),
    OpCase(
        "dwconv3x3_m1",
        "Conv",
        X888,
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 8},
        _conv_w(8, 1, 3, 3),
    ),
    OpCase(
        "dwconv3x3_m2",
        "Conv",
        X888,
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 8},
        _conv_w(16, 1, 3, 3),
        note="channel multiplier 2",
    ),
    OpCase(
        "dwconv3x3_s2_nobias",
        "Conv",
        X888,
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1], "group": 8},
        _conv_w(8, 1, 3, 3, bias=False),
    ),
]

GEMM = [
    OpCase("gemm_transb1", "Gemm", ((1, 32),), {"transB": 1}, _fc_w((16, 32), 32, 16)),
    OpCase("gemm_transb0", "Gemm", ((1, 32),), {"transB": 0}, _fc_w((32, 16), 32, 16)),
    OpCase("gemm_transb1_nobias", "Gemm", ((1, 32),), {"transB": 1}, _fc_w((16, 32), 32, None)),
]

MATMUL = [
    OpCase("matmul_2d", "MatMul", ((1, 32),), {}, _fc_w((32, 16), 32, None)),
    OpCase(
        "matmul_add_bias",
        "MatMul",
        ((1, 32),),
        {},
        lambda rng: {
            **_fc_w((32, 16), 32, None)(rng),
            "bias": (0.1 * rng.standard_normal(16)).astype(np.float32),
        },
        extra_nodes=(helper.make_node("Add", ["y", "bias"], ["z"], name="add_bias"),),
        note="MatMul + Add(bias): the FC pattern of TF/Keras exports",
    ),
    OpCase("matmul_two_acts_odd", "MatMul", ((7, 13), (13, 11)),
           note="two activations (batch matmul): QDQ MatMul / QLinearMatMul, odd sizes"),
    OpCase("matmul_two_acts_4d_bcast", "MatMul", ((2, 1, 5, 8), (1, 3, 8, 6)),
           note="two activations, 4-D, both batch dims broadcast (tests/test_batch_matmul.py has more)"),
]


def _binary(op: str) -> list[OpCase]:
    lo = op.lower()
    return [
        OpCase(f"{lo}_same_shape", op, ((1, 8, 4, 4), (1, 8, 4, 4))),
        OpCase(f"{lo}_scalar_const", op, ((1, 8, 4, 4),), {}, _rand_const("c", (), 0.25, 0.75)),
        OpCase(
            f"{lo}_per_channel_const",
            op,
            ((1, 8, 4, 4),),
            {},
            _rand_const("c", (1, 8, 1, 1), -1.0, 1.0),
        ),
        OpCase(
            f"{lo}_bcast_two_acts",
            op,
            ((1, 8, 4, 4), (1, 8, 1, 1)),
            input_range=(-2.0, 2.0),
            note="second activation broadcast over H, W (squeeze-excite style)",
        ),
    ]


POOL = [
    OpCase("avgpool_k2s2", "AveragePool", X888, {"kernel_shape": [2, 2], "strides": [2, 2]}),
    OpCase(
        "avgpool_k3s1_p1_excl",
        "AveragePool",
        X888,
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 0},
    ),
    OpCase(
        "avgpool_k3s2_p1_incl",
        "AveragePool",
        X888,
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    ),
    OpCase(
        "maxpool_k2s2",
        "MaxPool",
        X888,
        {"kernel_shape": [2, 2], "strides": [2, 2]},
        lead="dwconv1x1",
    ),
    OpCase(
        "maxpool_k3s2_p1",
        "MaxPool",
        X888,
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        lead="dwconv1x1",
    ),
    OpCase(
        "maxpool_k3s1_pads_asym",
        "MaxPool",
        X488,
        {"kernel_shape": [3, 3], "pads": [0, 0, 1, 2]},
        lead="dwconv1x1",
    ),
    OpCase("gap_8x8", "GlobalAveragePool", X888, lead="dwconv1x1"),
    OpCase("gap_4x4", "GlobalAveragePool", ((1, 16, 4, 4),), lead="dwconv1x1"),
    OpCase(
        "reducemean_hw",
        "ReduceMean",
        X888,
        {"axes": [2, 3], "keepdims": 1},
        qop=False,
        note="no QLinear kernel: QOperator leaves it float between DQ and Q",
    ),
]

_KEEP = {"QDQKeepRemovableActivations": True}
_BOTH = ("qdq", "qop")

ACTIVATION = [
    OpCase(
        "relu_fused",
        "Relu",
        ((1, 8, 4, 4),),
        lead="dwconv1x1",
        lead_fmts=_BOTH,
        qop=False,
        note="onnxruntime removes the Relu in both formats: the producer's output Q gets [0, max]",
    ),
    OpCase(
        "relu_kept",
        "Relu",
        ((1, 8, 4, 4),),
        lead="dwconv1x1",
        lead_fmts=_BOTH,
        quant_options=_KEEP,
        qop=False,
        note="QDQ keeps Q/DQ around the Relu; QOperator still removes it",
    ),
    OpCase(
        "clip_0_6_fused",
        "Clip",
        ((1, 8, 4, 4),),
        {},
        _const(min=np.float32(0.0), max=np.float32(6.0)),
        input_range=(-2.0, 8.0),
        lead="dwconv1x1",
        lead_fmts=_BOTH,
        qop=False,
        note="Relu6; removed like relu_fused",
    ),
    OpCase(
        "clip_0_6_kept",
        "Clip",
        ((1, 8, 4, 4),),
        {},
        _const(min=np.float32(0.0), max=np.float32(6.0)),
        input_range=(-2.0, 8.0),
        lead="dwconv1x1",
        lead_fmts=_BOTH,
        quant_options=_KEEP,
        qop=False,
        note="Relu6; kept like relu_kept",
    ),
    OpCase("softmax_1x10", "Softmax", ((1, 10),), {"axis": -1}, input_range=(-4.0, 4.0)),
    OpCase("softmax_1x4x6", "Softmax", ((1, 4, 6),), {"axis": -1}, input_range=(-4.0, 4.0)),
    OpCase("sigmoid", "Sigmoid", ((1, 8, 4, 4),), input_range=(-6.0, 6.0)),
    OpCase(
        "tanh",
        "Tanh",
        ((1, 8, 4, 4),),
        input_range=(-3.0, 3.0),
        qop=False,
        note="no QLinear kernel: QOperator leaves it float between DQ and Q",
    ),
]

SHAPE = [
    OpCase("concat_2", "Concat", ((1, 4, 4, 4), (1, 8, 4, 4)), {"axis": 1}),
    OpCase(
        "concat_3",
        "Concat",
        ((1, 2, 4, 4), (1, 4, 4, 4), (1, 2, 4, 4)),
        {"axis": 1},
        input_range=(-2.0, 1.0),
    ),
    OpCase(
        "pad_const_hw",
        "Pad",
        X488,
        {"mode": "constant"},
        _const(pads=_i64(0, 0, 1, 1, 0, 0, 1, 1)),
        lead="dwconv1x1",
    ),
    OpCase(
        "pad_const_asym_value",
        "Pad",
        X488,
        {"mode": "constant"},
        _const(pads=_i64(0, 0, 1, 2, 0, 0, 2, 0), value=np.float32(0.5)),
        lead="dwconv1x1",
        note="non-zero pad value",
    ),
    OpCase(
        "transpose_nhwc", "Transpose", ((1, 4, 3, 5),), {"perm": [0, 2, 3, 1]}, lead="dwconv1x1"
    ),
    OpCase("transpose_2d", "Transpose", ((4, 10),), {"perm": [1, 0]}, lead="matmul"),
    OpCase(
        "reshape_flat", "Reshape", ((1, 8, 4, 4),), {}, _const(shape=_i64(1, 128)), lead="dwconv1x1"
    ),
    OpCase(
        "reshape_3d", "Reshape", ((1, 8, 4, 4),), {}, _const(shape=_i64(1, 8, -1)), lead="dwconv1x1"
    ),
    OpCase("flatten_axis1", "Flatten", ((1, 8, 4, 4),), {"axis": 1}, lead="dwconv1x1"),
]

def _sub_cases() -> list[OpCase]:
    """Sub: QDQ only (onnxruntime has no QLinearSub)."""
    return [OpCase(c.id, c.op_type, c.input_shapes, c.attrs, c.weights_fn, c.seed, c.input_range,
                   qop=False, note="no QLinear kernel") for c in _binary("Sub")]


_FLOAT_ONLY = "no QLinear kernel: QOperator leaves it float between DQ and Q"
UNARY = [
    OpCase("hardsigmoid", "HardSigmoid", ((1, 8, 4, 4),), {"alpha": 0.2, "beta": 0.5},
           input_range=(-4.0, 4.0), qop=False, note=_FLOAT_ONLY),
    OpCase("hardswish", "HardSwish", ((1, 8, 4, 4),), input_range=(-4.0, 4.0), opset=14,
           qop=False, note=_FLOAT_ONLY),
    OpCase("leakyrelu", "LeakyRelu", ((1, 8, 4, 4),), {"alpha": 0.1}, input_range=(-3.0, 3.0),
           lead="dwconv1x1"),
    OpCase("elu", "Elu", ((1, 8, 4, 4),), {"alpha": 1.0}, input_range=(-3.0, 3.0), qop=False,
           note=_FLOAT_ONLY),
    OpCase("exp", "Exp", ((1, 16),), input_range=(-3.0, 1.0), qop=False, note=_FLOAT_ONLY),
    OpCase("erf", "Erf", ((1, 16),), input_range=(-2.0, 2.0), qop=False, note=_FLOAT_ONLY),
    OpCase("neg", "Neg", ((1, 16),), qop=False, note=_FLOAT_ONLY),
    OpCase("abs", "Abs", ((1, 16),), qop=False, note=_FLOAT_ONLY),
    OpCase("softplus", "Softplus", ((1, 16),), input_range=(-3.0, 3.0), qop=False, note=_FLOAT_ONLY),
    OpCase("sqrt", "Sqrt", ((1, 16),), input_range=(0.0, 4.0), qop=False, note=_FLOAT_ONLY),
    OpCase("reciprocal", "Reciprocal", ((1, 16),), input_range=(0.5, 2.0), qop=False, note=_FLOAT_ONLY),
    OpCase("pow_square", "Pow", ((1, 16),), {}, _const(e=np.float32(2.0)), qop=False,
           note="x^2 of a decomposed LayerNorm; " + _FLOAT_ONLY),
    OpCase("pow_cube", "Pow", ((1, 16),), {}, _const(e=np.float32(3.0)), qop=False, note=_FLOAT_ONLY),
]
REDUCE = [
    OpCase("reducemax_hw", "ReduceMax", X888, {"axes": [2, 3], "keepdims": 1}, qop=False,
           note=_FLOAT_ONLY),
]

MOVE = [
    OpCase("slice_hw", "Slice", X488, {}, _const(starts=_i64(1, 0), ends=_i64(7, 6), axes=_i64(2, 3),
                                                 steps=_i64(2, 1)), lead="dwconv1x1", qop=False,
           note="onnxruntime leaves Slice float in QOperator form"),
    OpCase("slice_channels", "Slice", X488, {}, _const(starts=_i64(1), ends=_i64(3), axes=_i64(1)),
           lead="dwconv1x1", qop=False, note="onnxruntime leaves Slice float in QOperator form"),
    OpCase("resize_nearest_x2", "Resize", ((1, 4, 4, 4),), {"mode": "nearest"},
           _const(roi=np.zeros(0, np.float32), scales=np.array([1, 1, 2, 2], np.float32)),
           lead="dwconv1x1"),
    OpCase("resize_linear_x2", "Resize", ((1, 4, 4, 4),),
           {"mode": "linear", "coordinate_transformation_mode": "half_pixel"},
           _const(roi=np.zeros(0, np.float32), scales=np.array([1, 1, 2, 2], np.float32)),
           lead="dwconv1x1"),
    OpCase("max_two_acts", "Max", ((1, 8, 4, 4), (1, 8, 4, 4)), qop=False, note=_FLOAT_ONLY),
    OpCase("min_const", "Min", ((1, 8, 4, 4),), {}, _rand_const("c", (1, 8, 1, 1), -0.5, 0.5),
           qop=False, note=_FLOAT_ONLY),
]

FLOAT_ISLANDS = [
    OpCase("div_two_acts", "Div", ((1, 8, 4, 4), (1, 8, 4, 4)), input_range=(0.5, 2.0), qop=False,
           note="float island: no integer kernel"),
    OpCase("layernorm_last", "LayerNormalization", ((1, 6, 16),), {"axis": -1, "epsilon": 1e-5},
           _rand_const("scale", (16,), 0.5, 1.5), opset=17, qop=False,
           note="the integer kernel; float island beyond its ranges"),
]

# Around attention (issue 26 item 2): [N, T, C] token tensors and [N, H, T, T] scores
TOKENS = (1, 6, 16)


def _gelu_erf_consts(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"c": np.float32(np.sqrt(2.0)), "one": np.float32(1.0), "half": np.float32(0.5)}


def _ln_consts(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"scale": rng.uniform(0.5, 1.5, TOKENS[-1]).astype(np.float32),
            "B": rng.uniform(-0.5, 0.5, TOKENS[-1]).astype(np.float32)}


ATTENTION = [
    OpCase("softmax_1x2x5x8", "Softmax", ((1, 2, 5, 8),), {"axis": -1}, input_range=(-4.0, 4.0),
           note="4-D attention scores, last axis"),
    OpCase("gelu_exact_op20", "Gelu", (TOKENS,), {}, input_range=(-3.0, 3.0), opset=20, qop=False,
           note=_FLOAT_ONLY),
    OpCase("gelu_tanh_op20", "Gelu", (TOKENS,), {"approximate": "tanh"}, input_range=(-3.0, 3.0),
           opset=20, qop=False, note=_FLOAT_ONLY),
    OpCase("gelu_erf_subgraph", "Div", (TOKENS,), {}, _gelu_erf_consts, input_range=(-3.0, 3.0),
           extra_nodes=(helper.make_node("Erf", ["y"], ["e"], name="erf"),
                        helper.make_node("Add", ["e", "one"], ["a"], name="add_one"),
                        helper.make_node("Mul", ["x0", "a"], ["m"], name="mul_x"),
                        helper.make_node("Mul", ["m", "half"], ["z"], name="mul_half")),
           qop=False, note="GELU as PyTorch exports it: x * 0.5 * (1 + erf(x / sqrt 2)); QDQ only "
           "(tests/test_attention_ops.py): the QOperator form leaves Div float on the graph input"),
    OpCase("mul_last_axis_const", "Mul", (TOKENS,), {}, _rand_const("c", (TOKENS[-1],), -1.0, 1.0),
           note="a constant per last-axis element"),
    OpCase("mul_scores_scalar", "Mul", ((1, 2, 6, 6),), {}, _const(c=np.float32(0.25)),
           input_range=(-4.0, 4.0), note="attention scores times 1/sqrt(d)"),
    OpCase("reducemean_tokens_keep0", "ReduceMean", (TOKENS,), {"axes": [1], "keepdims": 0},
           qop=False, note="mean over the tokens: " + _FLOAT_ONLY),
    OpCase("reducemean_tokens_keep1", "ReduceMean", (TOKENS,), {"axes": [1], "keepdims": 1},
           qop=False, note="mean over the tokens: " + _FLOAT_ONLY),
    OpCase("layernorm_gamma_beta", "LayerNormalization", (TOKENS,), {"axis": -1, "epsilon": 1e-5},
           _ln_consts, input_range=(-2.0, 2.0), opset=17, qop=False, note="integer kernel"),
    OpCase("reshape_heads", "Reshape", (TOKENS,), {}, _const(shape=_i64(1, 6, 4, 4)), lead="matmul",
           lead_fmts=_BOTH, note="[N, T, C] -> [N, T, H, C/H]: a free view"),
    OpCase("transpose_heads", "Transpose", ((1, 6, 4, 4),), {"perm": [0, 2, 1, 3]}, lead="matmul",
           lead_fmts=_BOTH, note="[N, T, H, D] -> [N, H, T, D]"),
]

def _convt_w(cin: int, cout: int, *kernel: int, bias: bool = True) -> WeightsFn:
    """ConvTranspose weights [C_in, C_out, k...] (onnxruntime quantizes them per channel on axis 1)."""
    def fn(rng: np.random.Generator) -> dict[str, np.ndarray]:
        fan_in = cin * int(np.prod(kernel))
        w = {"W": (rng.standard_normal((cin, cout, *kernel)) / np.sqrt(fan_in)).astype(np.float32)}
        if bias:
            w["B"] = (0.1 * rng.standard_normal(cout)).astype(np.float32)
        return w

    return fn


# ConvTranspose: QDQ only (quantize_static leaves it float in QOperator form: no QLinearConvTranspose)
CONV_TRANSPOSE = [
    OpCase("convt_k2_s2", "ConvTranspose", ((1, 4, 5, 5),), {"kernel_shape": [2, 2], "strides": [2, 2]},
           _convt_w(4, 6, 2, 2), qop=False),
    OpCase("convt_k3_s2_p1_op1", "ConvTranspose", ((1, 3, 4, 5),),
           {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
           _convt_w(3, 5, 3, 3), qop=False),
    OpCase("convt_k4_s2_p1_dcgan", "ConvTranspose", ((1, 8, 3, 3),),
           {"kernel_shape": [4, 4], "strides": [2, 2], "pads": [1, 1, 1, 1]}, _convt_w(8, 4, 4, 4), qop=False),
    OpCase("convt_k3_s1_nobias", "ConvTranspose", ((1, 5, 5, 4),), {"kernel_shape": [3, 3]},
           _convt_w(5, 3, 3, 3, bias=False), qop=False),
    OpCase("convt_k3x2_s3x1_asym_pads", "ConvTranspose", ((1, 2, 3, 5),),
           {"kernel_shape": [3, 2], "strides": [3, 1], "pads": [0, 1, 2, 0], "dilations": [1, 2]},
           _convt_w(2, 7, 3, 2), qop=False),
    OpCase("convt_output_shape_same_upper", "ConvTranspose", ((1, 4, 3, 3),),
           {"kernel_shape": [3, 3], "strides": [2, 2], "output_shape": [7, 6], "auto_pad": "SAME_UPPER"},
           _convt_w(4, 4, 3, 3), qop=False),
    OpCase("convt_auto_pad_same_lower", "ConvTranspose", ((1, 3, 4, 4),),
           {"kernel_shape": [4, 4], "strides": [2, 2], "auto_pad": "SAME_LOWER"}, _convt_w(3, 2, 4, 4), qop=False),
    OpCase("convt_1d_k4_s2", "ConvTranspose", ((1, 6, 9),), {"kernel_shape": [4], "strides": [2], "pads": [1, 2]},
           _convt_w(6, 4, 4), qop=False),
    OpCase("convt_wide_channels", "ConvTranspose", ((1, 20, 3, 3),),
           {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
           _convt_w(20, 18, 3, 3), qop=False),
]


CASES: dict[str, list[OpCase]] = {
    "Conv": CONV,
    "ConvTranspose": CONV_TRANSPOSE,
    "Gemm": GEMM,
    "MatMul": MATMUL,
    "Add": _binary("Add"),
    "Mul": _binary("Mul") + ATTENTION[4:6],
    "AveragePool": POOL[0:3],
    "MaxPool": POOL[3:6],
    "GlobalAveragePool": POOL[6:8],
    "ReduceMean": POOL[8:9] + ATTENTION[6:8],
    "Relu": ACTIVATION[0:2],
    "Clip": ACTIVATION[2:4],
    "Softmax": ACTIVATION[4:6] + ATTENTION[0:1],
    "Sigmoid": ACTIVATION[6:7],
    "Tanh": ACTIVATION[7:8],
    "Concat": SHAPE[0:2],
    "Pad": SHAPE[2:4],
    "Transpose": SHAPE[4:6] + ATTENTION[10:11],
    "Reshape": SHAPE[6:8] + ATTENTION[9:10],
    "Flatten": SHAPE[8:9],
    "Sub": _sub_cases(),
    "HardSigmoid": UNARY[0:1],
    "HardSwish": UNARY[1:2],
    "LeakyRelu": UNARY[2:3],
    "Elu": UNARY[3:4],
    "Exp": UNARY[4:5],
    "Erf": UNARY[5:6],
    "Neg": UNARY[6:7],
    "Abs": UNARY[7:8],
    "Softplus": UNARY[8:9],
    "Sqrt": UNARY[9:10],
    "Reciprocal": UNARY[10:11],
    "Pow": UNARY[11:13],
    "ReduceMax": REDUCE,
    "Slice": MOVE[0:2],
    "Resize": MOVE[2:4],
    "Max": MOVE[4:5],
    "Min": MOVE[5:6],
    "Div": FLOAT_ISLANDS[0:1],
    "LayerNormalization": FLOAT_ISLANDS[1:2] + ATTENTION[8:9],
    "Gelu": ATTENTION[1:3],
}


ALL_CASES: list[OpCase] = [c for cases in CASES.values() for c in cases]


def _check_tables() -> None:
    ids = [c.id for c in ALL_CASES]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise AssertionError(f"duplicate OpCase ids: {sorted(dup)}")
    for key, cases in CASES.items():
        for c in cases:
            if c.op_type != key:
                raise AssertionError(f"case {c.id} (op {c.op_type}) listed under {key}")


_check_tables()
