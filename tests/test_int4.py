"""4-bit weights (issue 24): the front end (INT4/UINT4 DequantizeLinear constants, refusals), the
kernel mcu_fully_connected_s4 against its golden on host and in QEMU, int4 models bit-exact with
the golden on host and in QEMU and within onnxruntime's drift, and their flash (docs/int4.md)."""
from __future__ import annotations

import ctypes
from typing import Any, NamedTuple

import numpy as np
import pytest

from emitter.kernels.common import QuantIO
from emitter.kernels.mcu_fully_connected_s4 import (
    mcu_fully_connected_s4,
    pack_weights,
    unpack_weights,
)
from emitter.kernels.mcu_fully_connected_s8 import FCParams, kernel_sums
from tests.harness.ckernels import MCU_ERR_ARG, MCU_OK, call_raw, realistic_multipliers, scratch_context

# -- the kernel ------------------------------------------------------------------------------


class FcCase(NamedTuple):
    batches: int
    k: int
    n: int
    per_channel: bool
    zp_in: int = 0
    zp_out: int = 0
    act: tuple[int, int] = (-128, 127)
    rounding: int = 0


def fc_case(case: FcCase, rng: np.random.Generator) -> tuple[FCParams, list[Any]]:
    channels = case.n if case.per_channel else 1
    mult, shift = realistic_multipliers(rng, channels, case.k)
    p = FCParams(case.batches, case.k, case.n, QuantIO(-case.zp_in, case.zp_out, *case.act, case.rounding),
                 int(case.per_channel), mult, shift)
    x = rng.integers(-128, 128, (case.batches, case.k), dtype=np.int8)
    w = rng.integers(-8, 8, (case.n, case.k), dtype=np.int8)
    b = rng.integers(-(1 << 12), 1 << 12, case.n).astype(np.int32)
    return p, [x, w, b]


def check_fc(p: FCParams, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> None:
    expected = mcu_fully_connected_s4(p, x, w, b)
    ctx, _keep = scratch_context(0)
    got = np.full((p.batches, p.out_features), 0x5A, dtype=np.int8)
    sums = kernel_sums(p, w, b)
    assert call_raw("mcu_fully_connected_s4", ctypes.byref(ctx), p, x, pack_weights(w), sums, got) == MCU_OK
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("n,k", [(1, 1), (4, 32), (5, 33), (9, 49), (8, 64), (3, 17), (11, 100), (4, 2)])
def test_layout_round_trip(n: int, k: int) -> None:
    w = np.random.default_rng(n * k).integers(-8, 8, (n, k)).astype(np.int8)
    packed = pack_weights(w)
    assert packed.dtype == np.uint8 and packed.size == n * ((k + 1) // 2)
    np.testing.assert_array_equal(unpack_weights(packed, n, k), w)
    if n >= 4 and k >= 32:  # byte j of row 0's first chunk: weight j low, weight j + 16 high (+ 8)
        u = w[0].astype(np.int32) + 8
        np.testing.assert_array_equal(packed[:16], u[:16] | (u[16:32] << 4))


def random_fc_cases(count: int, seed: int) -> list[FcCase]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2))
        out.append(FcCase(int(rng.integers(1, 4)), int(rng.integers(1, 140)), int(rng.integers(1, 14)),
                          bool(i % 2), int(rng.integers(-128, 128)), int(rng.integers(-128, 128)),
                          (lo, hi) if i % 3 else (-128, 127), int(i % 4 == 3)))
    return out


FC_CASES = [FcCase(1, 1, 1, False), FcCase(1, 32, 4, True), FcCase(2, 33, 5, False, 7, -3),
            FcCase(1, 49, 31, True, -128, 127), FcCase(3, 17, 9, False), FcCase(1, 64, 8, True, 0, 0, (-5, 60)),
            FcCase(2, 255, 7, True, 12, 0, (-128, 127), 1), *random_fc_cases(24, 7)]


@pytest.mark.parametrize("case", FC_CASES, ids=[f"b{c.batches}_k{c.k}_n{c.n}_{'pc' if c.per_channel else 'pt'}"
                                                f"_r{c.rounding}" for c in FC_CASES])
def test_kernel_equals_golden(case: FcCase) -> None:
    """The host C (generic path, UBSan) == the golden over odd K and N, per tensor and per channel,
    both roundings."""
    p, (x, w, b) = fc_case(case, np.random.default_rng(case.k * 31 + case.n))
    check_fc(p, x, w, b)


def test_kernel_extremes_and_null_sums() -> None:
    """Largest products (x = -128, w = -8 on every input), no bias with input offset 0 (NULL sums)."""
    p, (x, w, b) = fc_case(FcCase(2, 301, 6, True, -128), np.random.default_rng(3))
    check_fc(p, np.full_like(x, -128), np.full_like(w, -8), b)
    check_fc(p, np.full_like(x, 127), np.full_like(w, 7), b)
    p, (x, w, _) = fc_case(FcCase(2, 45, 6, False), np.random.default_rng(4))
    expected = mcu_fully_connected_s4(p, x, w, None)
    got = np.zeros_like(expected)
    ctx, _keep = scratch_context(0)
    assert call_raw("mcu_fully_connected_s4", ctypes.byref(ctx), p, x, pack_weights(w), None, got) == MCU_OK
    np.testing.assert_array_equal(got, expected)


def test_kernel_invalid_params() -> None:
    p, (x, w, b) = fc_case(FcCase(1, 20, 4, True), np.random.default_rng(5))
    out = np.full((1, 4), 0x5A, dtype=np.int8)
    ctx, _keep = scratch_context(0)
    bad = FCParams(p.batches, 0, p.out_features, p.q, p.per_channel, p.multiplier, p.shift)
    assert call_raw("mcu_fully_connected_s4", ctypes.byref(ctx), bad, x, pack_weights(w), None, out) == MCU_ERR_ARG
    assert (out == 0x5A).all()


# -- models: front end ---------------------------------------------------------------------------

MODEL_CASES = [  # (kind, weight type, per channel, activation type, WeightSymmetric) -> expected weight bits
    (("fc", "int4", True, "int8", True), 4),
    (("mlp_odd", "int4", True, "int8", True), 4),
    (("mlp_odd", "int4", False, "int8", True), 4),
    (("fc_batch", "int4", True, "int8", True), 4),
    (("fc_batch", "int4", False, "uint8", True), 4),
    (("mlp_odd", "uint4", True, "int8", True), 4),  # zero point 8: exactly int4
    (("mlp_odd", "uint4", False, "int8", False), 8),  # other zero points: s8 where q - zp leaves [-8, 7]
]
CASE_IDS = ["_".join(str(v) for v in c[0]) for c in MODEL_CASES]


@pytest.fixture(scope="session")
def int4_root(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The quantized test models, made once per session (tests/harness/int4_models.py)."""
    return tmp_path_factory.getbasetemp() / "int4"


def compiled_case(root: Any, case: tuple[str, str, bool, str, bool], name: str, **options: Any) -> Any:
    from emitter.compiler import compile_model
    from tests.harness import int4_models

    kind, wt, pc, act, sym = case
    return compile_model(int4_models.model(kind, root, wt, pc, act, sym), name=name, **options)


def samples_of(c: Any, kind: str, n: int = 4) -> list[list[np.ndarray]]:
    from tests.harness import int4_models
    from tests.harness.bundles import int8_inputs

    return [int8_inputs(c, [f["x"]]) for f in int4_models.feeds(kind, n, seed=9)]


@pytest.mark.parametrize("case,bits", MODEL_CASES, ids=CASE_IDS)
def test_front_end_weight_bits(case: tuple[str, str, bool, str, bool], bits: int, int4_root: Any) -> None:
    """int4 (zero point 0) and uint4 of zero point 8 run every MatMul/Gemm on mcu_fully_connected_s4;
    uint4 of another zero point runs as int8 values q - zp: on the s8 kernel where they leave [-8, 7]."""
    c = compiled_case(int4_root, case, "m")
    fcs = [(n, p) for n, p in zip(c.graph.nodes, c.prepared, strict=True) if n.op == "fc"]
    assert fcs
    kernels = {p.kernel for _, p in fcs}
    assert kernels == {"mcu_fully_connected_s4"} if bits == 4 else "mcu_fully_connected_s8" in kernels
    for n, p in fcs:
        w = c.graph.t(n.inputs[1]).data
        assert w is not None and w.dtype == np.int8
        fits = -8 <= int(w.min()) and int(w.max()) <= 7
        assert (p.kernel == "mcu_fully_connected_s4") == fits
        if fits:
            assert -8 <= int(w.min()) and int(w.max()) <= 7
            packed = p.operands["weights"]
            assert packed.data.dtype == np.uint8 and packed.data.size == w.shape[0] * ((w.shape[1] + 1) // 2)


def _qdq_model(nodes: list[Any], inits: list[Any], in_shape: list[int], out_shape: list[int],
               opset: int = 21) -> Any:
    from onnx import TensorProto, helper

    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def _matmul_model(w_type: int, w_vals: np.ndarray, zp_type: int, zp_vals: list[int], *, x_type: int = 3,
                  block: int | None = None, w_scale: np.ndarray | None = None, axis: int = 1, opset: int = 21,
                  batches: int = 1, x_zp: int = 0) -> Any:
    """x (int8 activation, or x_type) -> MatMul by DQ(w of w_type) -> Q int8 -> y."""
    from onnx import helper, numpy_helper

    k, n = w_vals.shape
    scale = w_scale if w_scale is not None else np.full(n, 0.05, np.float32)
    dq_attrs: dict[str, Any] = {"axis": axis}
    if block is not None:
        dq_attrs["block_size"] = block
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], **dq_attrs),
             helper.make_node("MatMul", ["xd", "wd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["mq"]),
             helper.make_node("DequantizeLinear", ["mq", "ys", "yz"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             helper.make_tensor("xz", x_type, [], [x_zp]),
             helper.make_tensor("w", w_type, [k, n], w_vals.ravel().tolist()),
             numpy_helper.from_array(scale.astype(np.float32), "ws"),
             helper.make_tensor("wz", zp_type, list(scale.shape), zp_vals),
             numpy_helper.from_array(np.array(0.1, np.float32), "ys"),
             numpy_helper.from_array(np.array(0, np.int8), "yz")]
    return _qdq_model(nodes, inits, [batches, k], [batches, n], opset)


def _compile_error(model: Any, tmp_path: Any) -> Any:
    import onnx

    from emitter.compiler import compile_model
    from emitter.errors import McugenError, exit_status

    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(McugenError) as info:
        compile_model(path)
    assert exit_status(info.value) == 2
    return str(info.value)


def test_front_end_hand_made_int4_uint4(tmp_path: Any) -> None:
    """A hand-made INT4 and UINT4 (zero point 8) MatMul at opsets 21 and 25: the same int8 values,
    bits 4, the same golden."""
    import onnx
    from onnx import TensorProto

    from emitter.compiler import compile_model, golden_run

    w = np.random.default_rng(1).integers(-8, 8, (33, 7))
    outs = []
    for opset in (21, 25):
        for name, model in (("i4", _matmul_model(TensorProto.INT4, w, TensorProto.INT4, [0] * 7, opset=opset)),
                            ("u4", _matmul_model(TensorProto.UINT4, w + 8, TensorProto.UINT4, [8] * 7, opset=opset))):
            path = tmp_path / f"{name}_{opset}.onnx"
            onnx.save(model, path)
            c = compile_model(path)
            fc = next(p for n, p in zip(c.graph.nodes, c.prepared, strict=True) if n.op == "fc")
            assert fc.kernel == "mcu_fully_connected_s4"
            x = np.random.default_rng(2).integers(-128, 128, (1, 33)).astype(np.int8)
            outs.append(golden_run(c, [x])[0])
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


def test_refusals(tmp_path: Any) -> None:
    """Exit 2 naming the tensor and what to do: int2 weights, a 4-bit activation, block-wise
    weights over several blocks; one block over the whole axis is read per channel."""
    from onnx import TensorProto

    w = np.random.default_rng(1).integers(-2, 2, (32, 4))
    msg = _compile_error(_matmul_model(TensorProto.INT2, w, TensorProto.INT2, [0] * 4, opset=25), tmp_path)
    assert "int2" in msg and "'w'" in msg and "QInt4" in msg
    msg = _compile_error(_matmul_model(TensorProto.INT4, w, TensorProto.INT4, [0] * 4, x_type=TensorProto.INT4),
                         tmp_path)
    assert "4-bit activations are not supported" in msg and "xz" in msg
    scale = np.full((2, 4), 0.05, np.float32)
    msg = _compile_error(_matmul_model(TensorProto.INT4, w, TensorProto.INT4, [0] * 8, block=16, w_scale=scale,
                                       axis=0), tmp_path)
    assert "block quantization (block_size=16)" in msg and "'w'" in msg and "per channel" in msg


def test_one_block_over_the_whole_axis_is_per_channel(tmp_path: Any) -> None:
    import onnx
    from onnx import TensorProto

    from emitter.compiler import compile_model, golden_run

    w = np.random.default_rng(3).integers(-8, 8, (32, 4))
    scale = np.array([0.05, 0.04, 0.03, 0.06], np.float32)
    x = np.random.default_rng(4).integers(-128, 128, (1, 32)).astype(np.int8)
    outs = []
    for name, model in (("blocked", _matmul_model(TensorProto.INT4, w, TensorProto.INT4, [0] * 4, block=32,
                                                  w_scale=scale.reshape(1, 4), axis=0)),
                        ("per_channel", _matmul_model(TensorProto.INT4, w, TensorProto.INT4, [0] * 4,
                                                      w_scale=scale, axis=1))):
        onnx.save(model, tmp_path / f"{name}.onnx")
        c = compile_model(tmp_path / f"{name}.onnx")
        outs.append(golden_run(c, [x])[0])
    np.testing.assert_array_equal(outs[0], outs[1])


# -- models: host, QEMU, onnxruntime, flash ---------------------------------------------------------


def test_models_bit_exact_on_host(int4_root: Any, tmp_path: Any) -> None:
    """Every model case's bundle (gcc, the generic path) == the golden, one shared library."""
    from emitter.compiler import golden_run
    from tests.harness.bundles import build_library, emit, run_c

    compiled = [compiled_case(int4_root, case, f"i4_{k}") for k, (case, _) in enumerate(MODEL_CASES)]
    lib = build_library([emit(c, tmp_path / c.name) for c in compiled], tmp_path / "libint4.so")
    for (case, _), c in zip(MODEL_CASES, compiled, strict=True):
        for sample in samples_of(c, case[0]):
            for got, want in zip(run_c(lib, c, sample), golden_run(c, sample), strict=True):
                np.testing.assert_array_equal(got, want, err_msg=str(case))


QEMU_CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")


@pytest.mark.parametrize("core", QEMU_CORES)
def test_models_bit_exact_in_qemu(core: str, int4_root: Any, tmp_path: Any) -> None:
    """Every model case compiled for `core` (its DSP / MVE path), one merged firmware, == the golden."""
    from emitter.boards import load_board
    from emitter.compiler import golden_run
    from emitter.target.toolchain import missing_tools
    from tests.harness.qemu import MergedCase, run_merged

    if missing_tools():
        pytest.skip("missing tools: " + "; ".join(missing_tools()))
    board = load_board(core)
    cases = []
    for k, (case, _) in enumerate(MODEL_CASES):
        c = compiled_case(int4_root, case, f"i4_{k}", board=board)
        cases.append(MergedCase("_".join(map(str, case)), c, samples_of(c, case[0], 1)[0]))
    for k, case in enumerate([("fc", "int4", True, "int8", True), ("fc", "int4", False, "int8", True)]):
        c = compiled_case(int4_root, case, f"i4_tflite_{k}", board=board, numerics="tflite")  # the other rounding
        cases.append(MergedCase("_".join(map(str, case)) + "_tflite", c, samples_of(c, case[0], 1)[0]))
    result = run_merged(cases, board, tmp_path, werror=True)
    assert not result.failures, result.failures
    for m, got in zip(cases, result.outputs, strict=True):
        assert got is not None
        for g, want in zip(got, golden_run(m.compiled, m.inputs), strict=True):
            np.testing.assert_array_equal(g, want, err_msg=f"{m.label} on {core}")


def _drift(c: Any, path: Any, samples: list[list[np.ndarray]]) -> tuple[float, int]:
    """(share of output elements where the golden differs from onnxruntime's QDQ reference, max |diff|)"""
    from emitter.compiler import golden_run
    from emitter.verify.run import ort_run

    ref = ort_run(c, path, samples)
    diffs = [np.abs(g.astype(np.int32) - r.astype(np.int32)).ravel()
             for s, rr in zip(samples, ref, strict=True) for g, r in zip(golden_run(c, s), rr, strict=True)]
    d = np.concatenate(diffs)
    return float((d != 0).mean()), int(d.max())


@pytest.mark.parametrize("kind", ["mlp_odd", "fc_batch"])
def test_within_onnxruntime_drift(kind: str, int4_root: Any) -> None:
    """The int4 golden against onnxruntime's own QDQ run of the int4 model drifts no more than the
    int8 twin's against its model (docs/numerics_onnxruntime.md): at most 1 quantum, on at most
    twice the int8 twin's share of elements (+ 1 %)."""
    from tests.harness import int4_models

    share = {}
    for wt in ("int4", "int8"):
        path = int4_models.model(kind, int4_root, wt, True)
        c = compiled_case(int4_root, (kind, wt, True, "int8", True), f"d_{wt}")
        share[wt], worst = _drift(c, path, samples_of(c, kind, 16))
        assert worst <= 1, (kind, wt, worst)
    assert share["int4"] <= 2 * share["int8"] + 0.01, share


def test_flash_int4_vs_int8(int4_root: Any) -> None:
    """The bundle's weight bytes (its const arrays) of the int4 model are <= 55 % of its int8 twin's;
    the summary line counts the packed bytes."""
    from emitter.render.bundle import render_bundle
    from emitter.report.summary import int4_line

    def weight_bytes(c: Any) -> int:
        import json

        return int(json.loads(render_bundle(c, "", "host")["report.json"])["weight_bytes"])

    four = compiled_case(int4_root, ("fc_wide", "int4", True, "int8", True), "w4")
    eight = compiled_case(int4_root, ("fc_wide", "int8", True, "int8", True), "w8")
    assert weight_bytes(four) <= 0.55 * weight_bytes(eight), (weight_bytes(four), weight_bytes(eight))
    line = int4_line(four)
    assert line is not None and line.startswith("int4 weights: 3 of 3 layers; their weights take ")
    assert ", 20,800 B of flash saved" in line
    import json

    fig = json.loads(render_bundle(four, "", "host")["report.json"])["int4"]
    assert fig["layers"] == fig["weighted_layers"] == 3 and fig["saved_bytes"] == 20_800
    assert fig["packed_bytes"] <= 0.51 * fig["int8_bytes"]  # two per byte, an odd row's last nibble at most
    assert f"({fig['packed_bytes'] / fig['int8_bytes']:.0%})" in line
    assert int4_line(eight) is None
    assert "int4" not in json.loads(render_bundle(eight, "", "host")["report.json"])


def shape_sweep(seed: int = 11) -> list[tuple[int, int, int, bool]]:
    """(batches, K, N, per channel): odd and even K around the 32-input chunk, N around the 4-row block."""
    rng = np.random.default_rng(seed)
    ks = [1, 2, 3, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 97, 130, 257]
    return [(int(rng.integers(1, 4)), k, int(rng.integers(1, 14)), bool(i % 2)) for i, k in enumerate(ks)]


@pytest.mark.parametrize("core", QEMU_CORES)
def test_kernel_shapes_in_qemu(core: str, tmp_path: Any) -> None:
    """mcu_fully_connected_s4 on each core's path (generic, DSP, MVE) over random shapes (odd K and
    N, per tensor / per channel, input zero points, both roundings) == the golden: one merged
    firmware per core."""
    import onnx
    from onnx import TensorProto

    from emitter.boards import load_board
    from emitter.compiler import compile_model, golden_run
    from emitter.target.toolchain import missing_tools
    from tests.harness.qemu import MergedCase, run_merged

    if missing_tools():
        pytest.skip("missing tools: " + "; ".join(missing_tools()))
    board = load_board(core)
    rng = np.random.default_rng(5)
    cases = []
    for i, (b, k, n, pc) in enumerate(shape_sweep()):
        w = rng.integers(-8, 8, (k, n))
        scale = rng.uniform(0.01, 0.08, n if pc else 1).astype(np.float32)
        model = _matmul_model(TensorProto.INT4, w, TensorProto.INT4, [0] * scale.size, w_scale=scale,
                              axis=1, batches=b, x_zp=int(rng.integers(-20, 20)))
        onnx.save(model, tmp_path / f"s{i}.onnx")
        c = compile_model(tmp_path / f"s{i}.onnx", name=f"s{i}", board=board,
                          numerics="tflite" if i % 3 else "onnxruntime")  # both output stages
        assert any(p.kernel == "mcu_fully_connected_s4" for p in c.prepared)
        x = rng.integers(-128, 128, (b, k)).astype(np.int8)
        cases.append(MergedCase(f"b{b}_k{k}_n{n}_{'pc' if pc else 'pt'}", c, [x]))
    result = run_merged(cases, board, tmp_path / "run", werror=True)
    assert not result.failures, result.failures
    for m, got in zip(cases, result.outputs, strict=True):
        assert got is not None
        for g, want in zip(got, golden_run(m.compiled, m.inputs), strict=True):
            np.testing.assert_array_equal(g, want, err_msg=f"{m.label} on {core}")


def test_four_bit_constant_of_another_op_reads_its_int8_values(tmp_path: Any) -> None:
    """A 4-bit constant that feeds no 4-bit kernel (here an Add) is read as its int8 values: the
    same golden as the INT8 constant of the same values, UINT4 with zero point 8 too."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from emitter.compiler import compile_model, golden_run

    vals = np.random.default_rng(6).integers(-8, 8, (1, 12))
    outs = []
    for name, ctype, cvals, zp in (("i8", TensorProto.INT8, vals, 0), ("i4", TensorProto.INT4, vals, 0),
                                   ("u4", TensorProto.UINT4, vals + 8, 8)):
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
                 helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
                 helper.make_node("DequantizeLinear", ["c", "cs", "cz"], ["cd"]),
                 helper.make_node("Add", ["xd", "cd"], ["a"]),
                 helper.make_node("QuantizeLinear", ["a", "ys", "yz"], ["aq"]),
                 helper.make_node("DequantizeLinear", ["aq", "ys", "yz"], ["y"])]
        inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
                 numpy_helper.from_array(np.array(0, np.int8), "xz"),
                 helper.make_tensor("c", ctype, [1, 12], cvals.ravel().tolist()),
                 numpy_helper.from_array(np.array(0.05, np.float32), "cs"),
                 helper.make_tensor("cz", ctype, [], [zp]),
                 numpy_helper.from_array(np.array(0.04, np.float32), "ys"),
                 numpy_helper.from_array(np.array(0, np.int8), "yz")]
        onnx.save(_qdq_model(nodes, inits, [1, 12], [1, 12]), tmp_path / f"{name}.onnx")
        c = compile_model(tmp_path / f"{name}.onnx")
        x = np.random.default_rng(7).integers(-128, 128, (1, 12)).astype(np.int8)
        outs.append(golden_run(c, [x])[0])
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
