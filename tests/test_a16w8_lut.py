"""int16 activations (A16W8) through table ops: Sigmoid, Tanh and Softmax as TFLite's int16 LOGISTIC, TANH
and SOFTMAX (emitter/ops/a16_lut.py, mcu_sigmoid_s16 / mcu_tanh_s16 / mcu_softmax_s16). Kernels: golden ==
host C bit for bit (sigmoid/tanh over every int16 input), in both output modes (TFLite's 2^-15, and
requantized to another scale), also in place; the tables are TFLite's; models from onnxruntime
quantize_static (QInt16, ActivationSymmetric) and DQ -> op -> Q graphs over int16 codes: golden == host C ==
QEMU (M4, M55), golden vs onnxruntime within the stated bound (printed)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model, golden_run
from emitter.kernels.mcu_sigmoid_s16 import ActivationS16Params, mcu_sigmoid_s16
from emitter.kernels.mcu_softmax_s16 import SoftmaxS16Params, mcu_softmax_s16
from emitter.kernels.mcu_tanh_s16 import mcu_tanh_s16
from emitter.ops.a16_lut import input_rescale, sigmoid_table, softmax_tables
from emitter.quant import quantize_multiplier
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.verify.run import ort_run, run_verify
from tests.harness.ckernels import MCU_ERR_ARG, call_kernel, call_raw, call_status
from tests.models import a16
from tests.test_a16w8 import CMSIS, MISSING, float_npz, ort_diff, verify

ALL_INT16 = np.arange(-32768, 32768, dtype=np.int16)
GOLDEN = {"mcu_sigmoid_s16": (mcu_sigmoid_s16, 25, np.vectorize(lambda v: 1 / (1 + np.exp(-v)))),
          "mcu_tanh_s16": (mcu_tanh_s16, 23, np.tanh)}
# onnxruntime (float Sigmoid/Tanh, then QuantizeLinear) against TFLite's table, the op alone over every int16
# code; measured max |diff| in quanta: sigmoid 1, tanh 2 (tanh's slope doubles the table's interpolation error).
ORT_BOUND = {"sigmoid": 1, "tanh": 2}


def params(kernel: str, s_in: float, s_out: float | None,
           act: tuple[int, int] = (-32768, 32767)) -> ActivationS16Params:
    m, sh = input_rescale(s_in)
    if s_out is None:
        return ActivationS16Params(ALL_INT16.size, m, sh, 0, 0, 0, *act)
    om, osh = quantize_multiplier(2.0 ** -GOLDEN[kernel][1] / s_out)
    return ActivationS16Params(ALL_INT16.size, m, sh, 1, om, osh, *act)


CASES = {"tflite_pot_2^-12": (2 ** -12, None), "tflite_pot_2^-11": (2 ** -11, None),
         "calibrated": (2.797e-4, None), "wide_input": (1.3e-3, None), "fine_input": (1.1e-5, None),
         "mode1_ort": (2.797e-4, 1 / 33350), "mode1_coarse": (3e-4, 1 / 1000), "mode1_wide": (1.3e-3, 1 / 32788)}


@pytest.mark.parametrize("kernel", list(GOLDEN))
@pytest.mark.parametrize("case", list(CASES))
def test_kernel_every_input_c_equals_golden(kernel: str, case: str) -> None:
    s_in, s_out = CASES[case]
    fn, _, ref = GOLDEN[kernel]
    p = params(kernel, s_in, s_out)
    table = sigmoid_table()
    expected = fn(p, table, ALL_INT16)
    got = call_kernel(kernel, p, [table, ALL_INT16], ALL_INT16.shape, np.int16)
    np.testing.assert_array_equal(got, expected)
    in_place = ALL_INT16.copy()
    assert call_raw(kernel, p, table, in_place, in_place) == 0
    np.testing.assert_array_equal(in_place, expected)
    exact = ref(ALL_INT16.astype(np.float64) * float(np.float32(s_in))) / (s_out or 2 ** -15)
    worst = float(np.abs(expected - np.clip(exact, -32768, 32767)).max())
    print(f"{kernel} {case}: max |golden - exact| {worst:.3f} quanta")
    assert worst < 3.0


def test_power_of_two_scales_are_tflites_special_case() -> None:
    """TFLite's power-of-two branch (input * (3 << shift), no rounding) gives the same rescaled input."""
    for s_in, times in ((2 ** -12, 3), (2 ** -11, 6)):
        m, sh = input_rescale(s_in)
        rescaled = (ALL_INT16.astype(np.int64) * m + (1 << (sh - 1))) >> sh
        np.testing.assert_array_equal(rescaled, ALL_INT16.astype(np.int64) * times)


def test_table_is_tflites() -> None:
    t = sigmoid_table()
    assert t.dtype == np.uint16 and t.shape == (256,)
    assert t[:6].tolist() == [32768, 33451, 34133, 34813, 35493, 36169]  # TFLite's sigmoid_table_uint16
    assert t[-4:].tolist() == [65534, 65534, 65534, 65535]
    assert np.all(np.diff(t.astype(np.int64)) >= 0)


@pytest.mark.parametrize("kernel", list(GOLDEN))
def test_kernel_clamp_and_invalid_params(kernel: str) -> None:
    fn = GOLDEN[kernel][0]
    table = sigmoid_table()
    p = params(kernel, 3e-4, 1 / 33000, (-100, 20000))
    got = call_kernel(kernel, p, [table, ALL_INT16], ALL_INT16.shape, np.int16)
    np.testing.assert_array_equal(got, fn(p, table, ALL_INT16))
    assert got.min() >= -100 and got.max() <= 20000
    x = ALL_INT16[:8].copy()
    base = params(kernel, 3e-4, None)
    for bad in (replace(base, size=0), replace(base, input_multiplier=0), replace(base, input_multiplier=40000),
                replace(base, input_shift=32), replace(base, output_mode=2), replace(base, output_shift=1),
                replace(base, act_min=5, act_max=4)):
        assert call_status(kernel, replace(bad, size=bad.size and 8), [table, x], (8,), np.int16)[0] == MCU_ERR_ARG
        with pytest.raises(ValueError):
            fn(replace(bad, size=bad.size and 8), table, x)


OP_ALONE = {"sigmoid_ort": ("Sigmoid", 2.4e-4, 1 / 33350), "sigmoid_tflite": ("Sigmoid", 2 ** -12, 2 ** -15),
            "sigmoid_wide": ("Sigmoid", 1e-3, 1 / 32767), "tanh_ort": ("Tanh", 2.4e-4, 1 / 32788),
            "tanh_tflite": ("Tanh", 2 ** -11, 2 ** -15), "tanh_wide": ("Tanh", 1e-3, 1 / 32767)}


@pytest.mark.parametrize("case", list(OP_ALONE))
def test_op_alone_every_code_vs_onnxruntime(case: str, tmp_path: Path) -> None:
    """DequantizeLinear -> op -> QuantizeLinear on all 65536 int16 codes: golden vs onnxruntime's float op."""
    op, s_in, s_out = OP_ALONE[case]
    model = a16.unary_int16(op, s_in, s_out, tmp_path / f"{case}.onnx")
    c = compile_model(model)
    assert [p.kernel for p in c.prepared if p.kernel] == [f"mcu_{op.lower()}_s16"]
    assert c.prepared[0].params.output_mode == (0 if s_out == 2 ** -15 else 1)
    x = ALL_INT16.reshape(1, -1)
    d = np.abs(golden_run(c, [x])[0].astype(np.int64) - ort_run(c, model, [[x]])[0][0].astype(np.int64))
    print(f"{case}: golden vs onnxruntime {(d > 0).sum()}/{d.size} codes differ, max |diff| {d.max()}")
    assert d.max() <= ORT_BOUND[op.lower()]
    verify(model, "cortex-m4", tmp_path, qemu=False)  # host C == golden, bit for bit


@pytest.mark.parametrize("op", ["sigmoid", "tanh"])
def test_single_op_golden_vs_onnxruntime(op: str, tmp_path: Path) -> None:
    """quantize_static's model (a 1x1 conv in front): the conv may differ by one quantum from onnxruntime
    (test_a16w8.py), which the op's slope (max 1/4 for sigmoid, 1 for tanh) times s_in / s_out (about 8 here)
    carries to the output, on top of the op's own bound: measured sigmoid 3, tanh 11."""
    model = a16.single(op, tmp_path / f"{op}.onnx")
    c = compile_model(model)
    kernels = [p.kernel for p in c.prepared if p.kernel]
    assert f"mcu_{op}_s16" in kernels and all(k.endswith("_s16") for k in kernels), kernels
    differ, total, worst = ort_diff(model, float_npz(model, (1, 4, 6, 6)))
    print(f"{op}: golden vs onnxruntime {differ}/{total} differ, max |diff| {worst}")
    node = next(n for n in c.graph.nodes if n.op == "lut")
    s_in, s_out = (c.graph.t(t).quant.s for t in (node.inputs[0], node.outputs[0]))  # type: ignore[union-attr]
    slope = {"sigmoid": 0.25, "tanh": 1.0}[op]
    assert worst <= int(np.ceil(slope * s_in / s_out)) + ORT_BOUND[op]
    verify(model, "cortex-m4", tmp_path, qemu=False)  # host C == golden, bit for bit


@pytest.mark.qemu
@pytest.mark.skipif(bool(MISSING), reason="QEMU tier needs: " + "; ".join(MISSING))
@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m55"])
def test_lut_ops_qemu(board: str, tmp_path: Path) -> None:
    for op in ("sigmoid", "tanh", "softmax"):
        print(verify(a16.single(op, tmp_path / f"{op}.onnx"), board, tmp_path / op))


@pytest.mark.qemu
@pytest.mark.skipif(bool(MISSING), reason="QEMU tier needs: " + "; ".join(MISSING))
@pytest.mark.skipif(CMSIS is None, reason="CMSIS_NN_PATH is not set")
def test_lut_ops_stay_portable_on_cmsis_nn(tmp_path: Path) -> None:
    """The conv runs CMSIS-NN's s16 kernel, the table op stays portable with its reason; bit-exact in QEMU."""
    b = load_board("cortex-m55")
    for op in ("sigmoid", "tanh", "softmax"):
        model = a16.single(op, tmp_path / f"{op}.onnx")
        c = compile_model(model, board=b, backend="cmsis-nn", cmsis_path=Path(str(CMSIS)))
        kernels = [p.kernel for p in c.prepared if p.kernel]
        assert "arm_convolve_wrapper_s16" in kernels and f"mcu_{op}_s16" in kernels, kernels
        why = dict((k, w) for _, k, w in c.portable_layers)[f"mcu_{op}_s16"]
        assert "stays portable" in why, why
        bundle = tmp_path / f"bundle_{op}"
        write_bundle(render_bundle(c, " ".join(b.cflags), b.name), bundle, force=True)
        rep = run_verify(c, bundle, b, model, None, 4, qemu=True, work=tmp_path / f"work_{op}")
        assert rep.ok, rep.text()
        print(rep.text())


# --- Softmax ------------------------------------------------------------------------------------------------------

SOFTMAX_CASES = {"tflite": (1e-3, 2 ** -15, 3, 10), "ort": (2.4e-4, 1 / 32767, 3, 10),
                 "long_rows": (3e-4, 1 / 32767, 2, 1000), "single": (5e-4, 2 ** -15, 4, 1),
                 "coarse_out": (4e-4, 1 / 1000, 2, 16), "tiny_in": (1e-7, 1 / 32767, 2, 8),
                 "wide_in": (4.0, 2 ** -15, 2, 8)}


@pytest.mark.parametrize("case", list(SOFTMAX_CASES))
def test_softmax_kernel_c_equals_golden(case: str, tmp_path: Path) -> None:
    s_in, s_out, rows, row_size = SOFTMAX_CASES[case]
    model = a16.unary_int16("Softmax", s_in, s_out, tmp_path / "sm.onnx", rows * row_size)
    p = compile_model(model).prepared[0]
    assert p.kernel == "mcu_softmax_s16"
    params = replace(p.params, rows=rows, row_size=row_size)
    exp_lut, recip_lut = softmax_tables()
    rng = np.random.default_rng(11)
    for spread in (65535, 4000, 40, 0):
        x = rng.integers(-32768, 32768 - spread, (rows, row_size)) + rng.integers(0, spread + 1, (rows, row_size))
        x = x.astype(np.int16)
        expected = mcu_softmax_s16(params, exp_lut, recip_lut, x)
        got = call_kernel("mcu_softmax_s16", params, [exp_lut, recip_lut, x], (x.size,), np.int16)
        np.testing.assert_array_equal(got, expected)
        in_place = x.ravel().copy()
        assert call_raw("mcu_softmax_s16", params, exp_lut, recip_lut, in_place, in_place) == 0
        np.testing.assert_array_equal(in_place, expected)


def test_softmax_invalid_params() -> None:
    exp_lut, recip_lut = softmax_tables()
    base = SoftmaxS16Params(1, 4, 1 << 30, 1, 0, 0, 0)
    x = np.zeros(4, np.int16)
    bad_lut = exp_lut.copy()
    bad_lut[100] = -1
    for p, e in ((replace(base, rows=0), exp_lut), (replace(base, input_shift=16), exp_lut),
                 (replace(base, output_mode=2), exp_lut), (replace(base, output_shift=15), exp_lut),
                 (base, bad_lut), (base, np.zeros(513, np.int16))):
        assert call_status("mcu_softmax_s16", p, [e, recip_lut, x], (4,), np.int16)[0] == MCU_ERR_ARG
        with pytest.raises(ValueError):
            mcu_softmax_s16(p, e, recip_lut, x)


def test_softmax_tables_are_tflites_gen_lut() -> None:
    exp_lut, recip_lut = softmax_tables()
    assert exp_lut.shape == recip_lut.shape == (513,)
    assert exp_lut[512] == 32767 and recip_lut[0] == 32767 and recip_lut[512] == 16384  # exp(0), 1/1, 1/2
    assert exp_lut[0] == 2  # exp(-10) * 32768 = 1.49, less half the midpoint error: TFLite's floor for far elements
    xs = np.linspace(-10, 0, 513)
    assert np.abs(exp_lut - np.exp(xs) * 32768).max() < 1.5


@pytest.mark.parametrize("case", ["tflite", "ort", "long_rows"])
def test_softmax_alone_vs_onnxruntime(case: str, tmp_path: Path) -> None:
    """TFLite's int16 softmax floors exp at exp(-10) (2 quanta): each element more than 10 below its row's
    maximum adds about 2 / 32768 to the row sum, so the bound is 3 + 2 per such element (measured)."""
    s_in, s_out, rows, row_size = SOFTMAX_CASES[case]
    model = a16.unary_int16("Softmax", s_in, s_out, tmp_path / "sm.onnx", row_size)
    c = compile_model(model)
    rng = np.random.default_rng(12)
    worst, worst_far = 0, 0
    for k in range(16):
        x = (rng.integers(-32768, 32768, (1, row_size)) // (1 + 3 * k)).astype(np.int16)
        d = np.abs(golden_run(c, [x])[0].astype(np.int64) - ort_run(c, model, [[x]])[0][0].astype(np.int64))
        far = int(((x.astype(np.float64) - x.max()) * float(np.float32(s_in)) < -10).sum())
        worst, worst_far = max(worst, int(d.max())), max(worst_far, far)
        assert d.max() <= 3 + 2 * far, (k, far, d.max())
    print(f"softmax {case}: golden vs onnxruntime max |diff| {worst} (up to {worst_far} elements below exp(-10))")
    verify(model, "cortex-m4", tmp_path, qemu=False)


def test_softmax_single_op_golden_vs_onnxruntime(tmp_path: Path) -> None:
    """quantize_static's model (1x1 conv, then Softmax over rows of 6): the bound of the op alone with every
    other element of a row below exp(-10), plus the conv's one quantum through the slope (<= 1/4) of softmax."""
    model = a16.single("softmax", tmp_path / "softmax.onnx")
    c = compile_model(model)
    kernels = [p.kernel for p in c.prepared if p.kernel]
    assert "mcu_softmax_s16" in kernels and all(k.endswith("_s16") for k in kernels), kernels
    differ, total, worst = ort_diff(model, float_npz(model, (1, 4, 6, 6)))
    print(f"softmax: golden vs onnxruntime {differ}/{total} differ, max |diff| {worst}")
    node = next(n for n in c.graph.nodes if n.op == "softmax")
    s_in, s_out = (c.graph.t(t).quant.s for t in (node.inputs[0], node.outputs[0]))  # type: ignore[union-attr]
    assert worst <= 3 + 2 * (node.attrs["row_size"] - 1) + int(np.ceil(s_in / s_out / 4))
    verify(model, "cortex-m4", tmp_path, qemu=False)
