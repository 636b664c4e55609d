"""int16 activations with int8 weights (A16W8, TFLite's int16x8 mode) from onnxruntime quantize_static
(activation_type=QInt16, ActivationSymmetric=True): golden == host C == QEMU bit for bit (M4, M55;
the cmsis-nn backend with CMSIS_NN_PATH), golden vs onnxruntime within one quantum per op (onnxruntime
requantizes in float, TFLite's int16x8 rule reduces the multiplier to 16 bits), refusals by name."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model, golden_run
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.toolchain import missing_tools
from emitter.verify.run import load_inputs, ort_run, run_verify
from tests.harness.cmsis import CMSIS_NN
from tests.models import a16

OPS = ("conv", "depthwise", "fc", "add", "mul", "maxpool", "avgpool", "gap")
MISSING = missing_tools()
CMSIS = CMSIS_NN


def float_npz(model: Path, shape: tuple[int, ...], n: int = 6) -> Path:
    """Float inputs inside the calibration range (what the model was quantized for)."""
    path = model.with_suffix(".npz")
    np.savez(path, x=np.stack([f["x"][0] for f in a16.feeds(shape, n, seed=7)]))
    return path


def ort_diff(model: Path, npz: Path) -> tuple[int, int, int]:
    c = compile_model(model)
    samples = load_inputs(c, npz, 16)
    gold = [golden_run(c, s) for s in samples]
    ort = ort_run(c, model, samples)
    d = [np.abs(g[0].astype(np.int64) - o[0].astype(np.int64)) for g, o in zip(gold, ort, strict=True)]
    return int(sum((x > 0).sum() for x in d)), int(sum(x.size for x in d)), int(max(x.max() for x in d))


@pytest.mark.parametrize("op", OPS)
def test_single_op_golden_vs_onnxruntime(op: str, tmp_path: Path) -> None:
    model = a16.single(op, tmp_path / f"{op}.onnx")
    c = compile_model(model)
    kernels = [p.kernel for p in c.prepared if p.kernel]
    assert all(k.endswith("_s16") for k in kernels), kernels
    assert all(c.graph.t(n).dtype == "int16" for n in (*c.graph.inputs, *c.graph.outputs))
    differ, total, worst = ort_diff(model, float_npz(model, (1, 24) if op == "fc" else (1, 4, 6, 6)))
    print(f"{op}: golden vs onnxruntime {differ}/{total} differ, max |diff| {worst}")
    assert worst <= 1
    verify(model, "cortex-m4", tmp_path, qemu=False)  # host C == golden, bit for bit


def verify(model: Path, board: str, tmp: Path, backend: str = "portable", qemu: bool = True) -> str:
    b = load_board(board)
    c = compile_model(model, board=b, backend=backend, cmsis_path=Path(CMSIS) if backend == "cmsis-nn" else None)
    if backend == "cmsis-nn" and model.stem == "fc":
        assert [p.kernel for p in c.prepared if p.kernel] == ["arm_fully_connected_s16"]
    elif backend == "cmsis-nn":  # the s16 kernels mcugen calls in CMSIS-NN; the others stay portable, named
        kernels = [p.kernel for p in c.prepared if p.kernel]
        assert kernels == ["mcu_transpose_s16", "arm_convolve_wrapper_s16", "arm_depthwise_conv_wrapper_s16",
                           "arm_elementwise_add_s16", "arm_elementwise_mul_s16", "arm_max_pool_s16", "arm_avgpool_s16",
                           "mcu_fully_connected_s16"], kernels
        assert "per-channel weights" in dict((k, why) for _, k, why in c.portable_layers)["mcu_fully_connected_s16"]
    bundle = tmp / f"bundle_{board}_{backend}"
    write_bundle(render_bundle(c, " ".join(b.cflags), b.name), bundle, force=True)
    rep = run_verify(c, bundle, b, model, None, 4, qemu=qemu, work=tmp / f"work_{board}_{backend}")
    assert rep.ok, rep.text()
    return rep.text()


def test_net_host_bit_exact_and_planned_in_two_bytes(tmp_path: Path) -> None:
    model = a16.net(tmp_path / "net.onnx")
    c = compile_model(model)
    assert [p.kernel for p in c.prepared if p.kernel] == [
        "mcu_transpose_s16", "mcu_conv2d_s16", "mcu_depthwise_conv2d_s16", "mcu_add_s16", "mcu_mul_s16",
        "mcu_maxpool_s16", "mcu_avgpool_s16", "mcu_fully_connected_s16"]
    assert c.plan.lower_bound == 3 * 8 * 8 * 8 * 2  # conv out, depthwise out, add out: int16
    print(verify(model, "cortex-m4", tmp_path, qemu=False))
    differ, total, worst = ort_diff(model, float_npz(model, (1, 3, 8, 8)))
    print(f"net: golden vs onnxruntime {differ}/{total} differ, max |diff| {worst}")
    assert worst <= 3  # six requantizations compound; each op alone is within one (above)


def test_mixed_int8_int16_graph_in_one_arena(tmp_path: Path) -> None:
    model = a16.mixed(tmp_path / "mixed.onnx")
    c = compile_model(model)
    assert [p.kernel for p in c.prepared if p.kernel] == [
        "mcu_transpose_s8", "mcu_conv2d_s8", "mcu_requantize_s8_s16", "mcu_conv2d_s16", "mcu_requantize_s16_s8",
        "mcu_conv2d_s8", "mcu_transpose_s8"]
    sizes = {n: c.graph.t(n).nbytes for n in c.graph.tensors if not c.graph.t(n).is_const}
    assert sizes["c1_convert_QuantizeLinear_Output"] == 2 * sizes["c1_QuantizeLinear_Output"]
    print(verify(model, "cortex-m4", tmp_path, qemu=False))
    differ, total, worst = ort_diff(model, float_npz(model, (1, 3, 6, 6)))
    print(f"mixed: golden vs onnxruntime {differ}/{total} differ, max |diff| {worst}")
    assert worst <= 1


@pytest.mark.qemu
@pytest.mark.skipif(bool(MISSING), reason="QEMU tier needs: " + "; ".join(MISSING))
@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m55"])
def test_net_qemu(board: str, tmp_path: Path) -> None:
    print(verify(a16.net(tmp_path / "net.onnx"), board, tmp_path))
    print(verify(a16.mixed(tmp_path / "mixed.onnx"), board, tmp_path / "mixed"))
    print(verify(a16.single("gap", tmp_path / "gap.onnx"), board, tmp_path / "gap"))


@pytest.mark.qemu
@pytest.mark.skipif(bool(MISSING), reason="QEMU tier needs: " + "; ".join(MISSING))
@pytest.mark.skipif(CMSIS is None, reason="CMSIS_NN_PATH is not set")
@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m55"])
def test_net_cmsis_nn(board: str, tmp_path: Path) -> None:
    print(verify(a16.net(tmp_path / "net.onnx"), board, tmp_path, backend="cmsis-nn"))
    fc = a16.single("fc_per_tensor", tmp_path / "fc.onnx")
    print(verify(fc, board, tmp_path / "fc", backend="cmsis-nn"))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "emitter.cli", *args], capture_output=True, text=True, check=False)


def test_tflite_style_int16_io(tmp_path: Path) -> None:
    """int16 graph input and output (the caller's data is int16), float bias, TFLite numerics."""
    model = a16.tflite_style(tmp_path / "tfl.onnx")
    c = compile_model(model)
    assert c.graph.numerics == "tflite" and [c.graph.t(n).dtype for n in (*c.graph.inputs, *c.graph.outputs)] == [
        "int16", "int16"]
    print(verify(model, "cortex-m4", tmp_path, qemu=False))
    samples = load_inputs(c, None, 6)
    gold = [golden_run(c, s) for s in samples]
    worst = max(int(np.abs(g[0].astype(np.int64) - o[0].astype(np.int64)).max())
                for g, o in zip(gold, ort_run(c, model, samples), strict=True))
    print(f"tflite-style: golden vs onnxruntime max |diff| {worst}")
    assert worst <= 1


def test_non_zero_int16_zero_point_refused(tmp_path: Path) -> None:
    from onnx import helper

    rng = np.random.default_rng(5)
    model = a16.quantize16([helper.make_node("Conv", ["x", "w"], ["y"])], {"w": rng.normal(0, .3, (2, 3, 1, 1))},
                           (1, 3, 4, 4), tmp_path / "asym.onnx", symmetric=False)
    res = cli(str(model), "--board=cortex-m4", "-o", str(tmp_path / "out"))
    assert res.returncode == 2, res.stderr
    assert "int16 activation 'x_QuantizeLinear_Output' has zero point" in res.stderr
    assert "ActivationSymmetric" in res.stderr
    assert not (tmp_path / "out").exists()


def test_unsupported_int16_op_refused_by_name(tmp_path: Path) -> None:
    from onnx import helper

    rng = np.random.default_rng(6)
    model = a16.quantize16([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("LeakyRelu", ["c"], ["y"])],
                           {"w": rng.normal(0, .3, (2, 3, 1, 1))}, (1, 3, 4, 4), tmp_path / "leaky.onnx")
    res = cli(str(model), "--board=cortex-m4", "-o", str(tmp_path / "out"))
    assert res.returncode == 2, res.stderr
    assert "int16 activations are supported for Conv" in res.stderr
    assert "LeakyRelu" in res.stderr and "is not yet" in res.stderr and "Sigmoid, Tanh" in res.stderr
