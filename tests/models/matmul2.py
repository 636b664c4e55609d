"""Two-activation MatMul models (attention's Q x K^T and P x V), quantized by onnxruntime
quantize_static as QDQ or QOperator (QLinearMatMul): tests/test_batch_matmul.py.

A case is the shapes of the two graph inputs and which of them passes through a Transpose of
its last two axes before the MatMul (K^T). In QOperator form each input first goes through an
identity MatMul (tests.models.ops.LEADS["matmul"]): onnxruntime quantizes a Transpose there only
behind a quantized producer.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.models.ops import IR_VERSION, N_CALIB, quantize


@dataclass(frozen=True)
class MatMulCase:
    id: str
    a: tuple[int, ...]  # graph input shapes (before any Transpose)
    b: tuple[int, ...]
    trans_a: bool = False  # MatMul(Transpose(x0, swap last two), ...)
    trans_b: bool = False
    seed: int = 0


CASES = [
    MatMulCase("mm2d", (5, 12), (12, 7)),
    MatMulCase("mm2d_odd", (7, 13), (13, 11)),
    MatMulCase("mm3d", (3, 6, 10), (3, 10, 9)),
    MatMulCase("mm4d", (2, 3, 5, 8), (2, 3, 8, 6)),
    MatMulCase("mm_bcast_rhs", (2, 3, 5, 8), (3, 8, 6)),
    MatMulCase("mm_bcast_lhs", (4, 8), (3, 8, 5)),
    MatMulCase("mm_bcast_both", (2, 1, 5, 8), (1, 3, 8, 6)),
    MatMulCase("mm_trans_b", (2, 5, 8), (2, 6, 8), trans_b=True),  # Q x K^T
    MatMulCase("mm_trans_b_4d_odd", (1, 2, 7, 9), (1, 2, 5, 9), trans_b=True),
    MatMulCase("mm_trans_a", (2, 8, 5), (2, 8, 6), trans_a=True),
    MatMulCase("mm_k1", (6, 1), (1, 4)),
    MatMulCase("mm_m1", (1, 16), (16, 9)),
    MatMulCase("mm_trans_b_k37", (2, 5, 37), (2, 6, 37), trans_b=True),  # whole 16-byte chunks + a tail
    MatMulCase("mm_m2_k40", (2, 40), (40, 7)),
]


def swap_last2(rank: int) -> list[int]:
    perm = list(range(rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return perm


def float_model(case: MatMulCase, lead: bool) -> onnx.ModelProto:
    nodes, inits = [], []
    ins = []
    for i, (shape, trans) in enumerate(((case.a, case.trans_a), (case.b, case.trans_b))):
        t = f"x{i}"
        if lead:
            inits.append(numpy_helper.from_array(np.eye(shape[-1], dtype=np.float32), f"lead{i}_W"))
            nodes.append(helper.make_node("MatMul", [t, f"lead{i}_W"], [f"lead{i}"], name=f"lead{i}"))
            t = f"lead{i}"
        if trans:
            nodes.append(helper.make_node("Transpose", [t], [f"t{i}"], name=f"transpose{i}",
                                          perm=swap_last2(len(shape))))
            t = f"t{i}"
        ins.append(t)
    nodes.append(helper.make_node("MatMul", ins, ["y"], name="matmul"))
    graph = helper.make_graph(
        nodes, case.id, [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, list(s))
                         for i, s in enumerate((case.a, case.b))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = IR_VERSION
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    return model


def feeds(case: MatMulCase, n: int = N_CALIB) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(20_000 + case.seed)
    return [{f"x{i}": rng.uniform(-1.0, 1.0, s).astype(np.float32) for i, s in enumerate((case.a, case.b))}
            for _ in range(n)]


def case_model(case: MatMulCase, fmt: str, tmp: Path, activation_type: str = "int8") -> tuple[Path, list[np.ndarray]]:
    """The quantized model of `case` in `fmt` ("qdq" or "qop") and its float test inputs."""
    f = feeds(case)
    out = Path(tmp) / f"{case.id}_{fmt}_{activation_type}.onnx"
    quantize(float_model(case, lead=fmt == "qop"), f, fmt=fmt, activation_type=activation_type, out_path=out)
    return out, [f[0]["x0"], f[0]["x1"]]
