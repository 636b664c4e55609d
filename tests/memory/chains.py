"""Random quantized chains and branches of spatial layers (conv, depthwise, pooling, residual add)
for the memory-plan property tests: float ONNX built with onnx.helper, quantized by onnxruntime."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.models.ops import quantize

IR_VERSION = 8


def random_chain(seed: int, out: Path) -> Path:
    """A model of 3-8 layers over an NCHW input with odd sizes, strides, paddings, channel
    multipliers and residual adds; quantized QDQ int8, per channel."""
    rng = np.random.default_rng(seed)
    c, h, w = int(rng.integers(1, 9)), int(rng.integers(5, 19)), int(rng.integers(3, 12))
    nodes, inits = [], []
    cur, shape = "x", (1, c, h, w)

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    skip: tuple[str, tuple[int, int, int, int]] | None = None
    for k in range(int(rng.integers(3, 9))):
        _, c, h, w = shape
        kind = rng.choice(["conv", "dw", "pool", "add", "conv"])
        name = f"n{k}"
        if kind == "add" and skip is not None and skip[1] == shape:
            nodes.append(helper.make_node("Add", [cur, skip[0]], [name], name=name))
            cur, skip = name, None
            continue
        kh = int(rng.choice([1, 3, 5])) if h >= 5 else 1
        kw = int(rng.choice([1, 3])) if w >= 3 else 1
        s = int(rng.choice([1, 1, 2])) if h >= 6 else 1
        pt, pb = int(rng.integers(0, kh)), int(rng.integers(0, kh))
        pl, pr = int(rng.integers(0, kw)), int(rng.integers(0, kw))
        oh, ow = (h + pt + pb - kh) // s + 1, (w + pl + pr - kw) // s + 1
        if oh < 1 or ow < 1:
            continue
        if kind == "pool":
            op = str(rng.choice(["MaxPool", "AveragePool"]))
            attrs = {"kernel_shape": [kh, kw], "strides": [s, s], "pads": [pt, pl, pb, pr]}
            if op == "AveragePool":
                attrs["count_include_pad"] = int(rng.integers(0, 2))
            nodes.append(helper.make_node(op, [cur], [name], name=name, **attrs))
            shape = (1, c, oh, ow)
        else:
            mult = int(rng.choice([1, 2])) if kind == "dw" else 1
            co = c * mult if kind == "dw" else int(rng.integers(1, 17))
            group = c if kind == "dw" else 1
            wt = rng.normal(0, 0.5, (co, c // group, kh, kw))
            b = rng.normal(0, 0.1, co)
            conv = helper.make_node("Conv", [cur, const(f"{name}_w", wt), const(f"{name}_b", b)], [f"{name}_c"],
                                    name=name, kernel_shape=[kh, kw], strides=[s, s], pads=[pt, pl, pb, pr],
                                    group=group)
            nodes += [conv, helper.make_node("Relu", [f"{name}_c"], [name], name=f"{name}_relu")]
            shape = (1, co, oh, ow)
        if skip is None and rng.random() < 0.5:
            skip = (name, shape)
        cur = name
    cur = head(rng, cur, shape, nodes, const)
    graph = helper.make_graph(nodes, f"chain{seed}", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                   [1, *shape_in(seed)])],
                              [helper.make_tensor_value_info(cur, TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = IR_VERSION
    model = onnx.shape_inference.infer_shapes(model)
    calib = [{"x": rng.normal(0, 1, (1, *shape_in(seed))).astype(np.float32)} for _ in range(8)]
    return quantize(model, calib, out_path=out / f"chain{seed}.onnx")


def head_chain(kind: str, out: Path) -> Path:
    """Two 3x3 convolutions that widen the tensor (its largest at the end), then a head `kind`
    ("gap", "gap_fc" or "fc"): the plan is smallest when the head accumulates the last rows."""
    rng = np.random.default_rng(7)
    nodes, inits = [], []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    cur, c = "x", 3
    for k, co in enumerate((8, 24)):
        w = const(f"w{k}", rng.normal(0, 0.4, (co, c, 3, 3)))
        nodes += [helper.make_node("Conv", [cur, w, const(f"b{k}", rng.normal(0, 0.1, co))], [f"c{k}"],
                                   kernel_shape=[3, 3], pads=[1, 1, 1, 1], name=f"conv{k}"),
                  helper.make_node("Relu", [f"c{k}"], [f"r{k}"], name=f"relu{k}")]
        cur, c = f"r{k}", co
    cur = head(rng, cur, (1, c, 11, 9), nodes, const, kind)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 11, 9])
    graph = helper.make_graph(nodes, f"head_{kind}", [x], [helper.make_tensor_value_info(cur, TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = IR_VERSION
    model = onnx.shape_inference.infer_shapes(model)
    calib = [{"x": rng.normal(0, 1, (1, 3, 11, 9)).astype(np.float32)} for _ in range(8)]
    return quantize(model, calib, out_path=out / f"head_{kind}.onnx")


def head(rng: np.random.Generator, cur: str, shape: tuple[int, int, int, int], nodes: list[onnx.NodeProto],
         const: Callable[[str, np.ndarray], str], kind: str | None = None) -> str:
    """Maybe (kind None: drawn) a classifier head (what a streamed chain may end in, accumulating):
    a global average pool, a fully connected layer over the flattened tensor, or both."""
    kind = kind or str(rng.choice(["none", "gap", "gap_fc", "fc"]))
    c = shape[1]
    if kind in ("gap", "gap_fc"):
        nodes.append(helper.make_node("GlobalAveragePool", [cur], ["gap"], name="gap"))
        cur = "gap"
    if kind in ("gap_fc", "fc"):
        k = c if kind == "gap_fc" else int(np.prod(shape))
        n = int(rng.integers(2, 11))
        nodes.append(helper.make_node("Flatten", [cur], ["flat"], name="flat"))
        nodes.append(helper.make_node("Gemm", ["flat", const("fc_w", rng.normal(0, 0.3, (n, k))),
                                               const("fc_b", rng.normal(0, 0.1, n))], ["fc"], name="fc", transB=1))
        cur = "fc"
    return cur


def shape_in(seed: int) -> tuple[int, int, int]:
    rng = np.random.default_rng(seed)
    return int(rng.integers(1, 9)), int(rng.integers(5, 19)), int(rng.integers(3, 12))


def same_size_convs(c: int, h: int, w: int, kernels: tuple[int | tuple[int, int], ...],
                    depthwise: bool | tuple[bool, ...], out: Path, seed: int = 0) -> Path:
    """Convolutions of c -> c channels over [1, c, h, w], one per kernel size (k x k, or (kh, kw); padding
    k // 2 on each side: each output as large as its input; depthwise: group c, for all or per layer),
    each with ReLU; quantized QDQ int8."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    cur = "x"
    flags = depthwise if isinstance(depthwise, tuple) else (depthwise,) * len(kernels)
    for k, (size, dw) in enumerate(zip(kernels, flags, strict=True)):
        kh, kw = (size, size) if isinstance(size, int) else size
        inits += [numpy_helper.from_array(rng.normal(0, 0.5 if dw else 0.4, (c, 1 if dw else c, kh, kw))
                                          .astype(np.float32), f"w{k}"),
                  numpy_helper.from_array(rng.normal(0, 0.1, c).astype(np.float32), f"b{k}")]
        ph, pw = kh // 2, kw // 2
        nodes += [helper.make_node("Conv", [cur, f"w{k}", f"b{k}"], [f"c{k}"], name=f"conv{k}",
                                   group=c if dw else 1, kernel_shape=[kh, kw], pads=[ph, pw, ph, pw]),
                  helper.make_node("Relu", [f"c{k}"], [f"r{k}"], name=f"relu{k}")]
        cur = f"r{k}"
    name = f"{'mixed' if len(set(flags)) > 1 else 'dw' if flags[0] else 'conv'}_{c}_{h}x{w}"
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                              [helper.make_tensor_value_info(cur, TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = IR_VERSION
    calib = [{"x": rng.normal(0, 1, (1, c, h, w)).astype(np.float32)} for _ in range(8)]
    return quantize(onnx.shape_inference.infer_shapes(model), calib, out_path=out / f"{name}.onnx")
