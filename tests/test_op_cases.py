"""Op case tables from real ONNX (onnx.helper + onnxruntime quantize_static, QDQ and QOperator):
golden vs onnxruntime within 1 quantum (isolated op), host C vs golden bit-exact."""
from __future__ import annotations

import numpy as np
import pytest

from emitter.compiler import compile_model, golden_run
from emitter.verify.run import diff_stats, ort_run
from tests.harness.bundles import build_library, emit, int8_inputs, run_c
from tests.models.ops import CASES, case_model

U8_OPS = ("Conv", "ConvTranspose", "Gemm", "Add", "Mul", "AveragePool", "GlobalAveragePool", "Softmax", "Sigmoid",
          "Concat", "LeakyRelu", "MaxPool")
PARAMS = [pytest.param(case, fmt, act, id=f"{case.id}-{fmt}" + ("-u8" if act == "uint8" else ""))
          for op, cases in CASES.items() for case in cases for fmt in ("qdq", "qop")
          for act in (("int8", "uint8") if op in U8_OPS else ("int8",))
          if fmt == "qdq" or case.qop]


@pytest.fixture(scope="module")
def compiled_cases(tmp_path_factory):
    """Every case compiled and emitted; one shared library holds all their bundles."""
    tmp = tmp_path_factory.mktemp("opcases")
    results, bundles = {}, []
    for k, p in enumerate(PARAMS):
        case, fmt, act = p.values
        # uint8 QOperator models get 7-bit weights (reduce_range), as onnxruntime advises: its
        # U8S8 kernels clip int16 pair sums on x86 without VNNI (tests.harness.bundles.ort_u8s8_saturates)
        # and it is the reference here. Full-range weights under uint8 are covered by test_zoo.
        path, xs = case_model(case, fmt, tmp, activation_type=act,
                              reduce_range=(fmt == "qop" and act == "uint8"))
        try:
            c = compile_model(path, name=f"op{k}")
        except Exception as exc:  # reported per case by the test itself
            results[p.id] = (path, xs, exc)
            continue
        bundles.append(emit(c, tmp / f"op{k}"))
        results[p.id] = (path, xs, c)
    lib = build_library(bundles, tmp / "libcases.so")
    return results, lib


@pytest.mark.parametrize("case,fmt,act", PARAMS)
def test_op_case(case, fmt, act, compiled_cases, request):
    results, lib = compiled_cases
    path, xs, c = results[request.node.callspec.id]
    if isinstance(c, Exception):
        raise c
    samples = int8_inputs(c, xs)
    gold = golden_run(c, samples)
    host = run_c(lib, c, samples)
    for g, h in zip(gold, host, strict=True):
        np.testing.assert_array_equal(h, g, err_msg="host C differs from the golden model")
    d, n, mx = diff_stats([gold], ort_run(c, path, [samples]))
    assert mx <= 1, f"golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"
