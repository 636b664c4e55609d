"""--numerics onnxruntime: onnxruntime's requantization (float32 scale, one rounding half to even)
in integer arithmetic, its golden against onnxruntime's float formula, the C twin against the
golden (host gcc, and QEMU on M0+, M4, M7, M55 for a deep onnxruntime-quantized model), the choice
of the mode from the model, and the drift figures of docs/numerics_onnxruntime.md."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from emitter import quant
from emitter.boards import load_board
from emitter.compiler import compile_model, golden_run
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.resources import data_dir
from emitter.target.firmware import build_firmware
from emitter.target.qemu import run_qemu
from emitter.target.toolchain import missing_tools
from emitter.verify.harness import pack, unpack
from emitter.verify.run import ort_run, run_host
from tests.harness.bundles import STRICT, emit
from tests.harness.cmsis import CMSIS_NN
from tests.models.deep import build, feeds


def mlas_requantize(acc: np.ndarray, scale: np.float32) -> np.ndarray:
    """onnxruntime's (MLAS) formula: RNE(float32(float32(acc) * scale)), in numpy float32."""
    prod = (acc.astype(np.float32) * np.float32(scale)).astype(np.float32)
    return np.rint(prod).astype(np.int64)  # np.rint: round half to even


def test_requantize_rne_is_the_float32_formula():
    """Equal to the float computation wherever float32(acc * scale) is not a tie the exact product
    is not: the one way the two can differ for |acc| < 2^24 and results in the int8 range (beyond
    it both saturate alike). On uniformly drawn accumulators that happens about once in 10^5."""
    rng = np.random.default_rng(0)
    mismatches = total = 0
    for s in np.exp(rng.uniform(np.log(1e-5), np.log(0.9), 300)).astype(np.float32):
        m, sh = quant.exact_multiplier(float(s))
        assert m * 2.0 ** (sh - 31) == float(s)  # the multiplier holds the float32 scale exactly
        lim = int(min(300 / float(s), 1 << 24))
        drawn = rng.integers(-lim, lim, 10_000)
        near = np.floor((np.arange(-300, 300) + 0.5) / float(s)).astype(np.int64)  # next to ties
        acc = np.concatenate([drawn, near - 1, near, near + 1])
        acc = acc[(np.abs(acc) < 1 << 24) & (np.abs(acc * float(s)) < 300)]
        got = quant.requantize_rne(acc, m, sh)
        want = mlas_requantize(acc, s)
        prod = (acc.astype(np.float32) * s).astype(np.float32)
        exact_tie = (2 * acc * m) % (1 << (32 - sh)) == (1 << (31 - sh))
        float_tie = (prod - np.floor(prod)) == 0.5
        ok = got == want
        assert np.all(ok | (float_tie & ~exact_tie)), (s, acc[~ok][:5])
        mismatches += int((got[:drawn.size] != want[:drawn.size]).sum())
        total += drawn.size
    assert mismatches < total * 1e-4, (mismatches, total)


def test_requantize_rne_ties_and_extremes_c_equals_python(tmp_path: Path):
    """mcu_requantize_rne (mcu_math.h) against quant.requantize_rne: exact ties both ways,
    saturation, the largest shifts."""
    rng = np.random.default_rng(1)
    cases = [(5 << 20, 1 << 30, -20), (3 << 20, 1 << 30, -20), (-(5 << 20), 1 << 30, -20),
             (-(3 << 20), 1 << 30, -20), (2**31 - 1, 2**31 - 1, 30), (-(2**31), 2**31 - 1, 30),
             (12345, 1 << 30, -40), (-(2**31), 1 << 30, -31), (1, 1 << 30, 0)]
    for _ in range(300):
        m, sh = quant.exact_multiplier(float(np.float32(np.exp(rng.uniform(-12, 0)))))
        cases.append((int(rng.integers(-(1 << 31), 1 << 31)), m, sh))
        cases.append((int(rng.integers(-5000, 5000)), m, sh))
    src = tmp_path / "rne.c"
    rows = ",\n".join(f"{{{x}LL, {m}, {s}}}" for x, m, s in cases)
    src.write_text('#include <stdio.h>\n#include "mcu_math.h"\n'
                   f"static const long long cases[][3] = {{\n{rows}}};\n"
                   "int main(void) {\n"
                   "    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; ++i) {\n"
                   "        printf(\"%ld\\n\", (long)mcu_requantize_rne((int32_t)cases[i][0],\n"
                   "               (int32_t)cases[i][1], (int32_t)cases[i][2]));\n"
                   "    }\n    return 0;\n}\n")
    exe = tmp_path / "rne"
    inc = data_dir("mcu_runtime") / "include"
    subprocess.run(["gcc", "-O2", *[f for f in STRICT if f != "-Wmissing-prototypes"], f"-I{inc}",
                    str(src), "-o", str(exe)], check=True, capture_output=True, text=True)
    got = [int(v) for v in subprocess.run([str(exe)], check=True, capture_output=True,
                                          text=True).stdout.split()]
    x = np.array([c[0] for c in cases], np.int64)
    want = quant.requantize_rne(x, np.array([c[1] for c in cases], np.int64),
                                np.array([c[2] for c in cases], np.int64))
    assert got == [int(v) for v in want]
    assert got[:4] == [2, 2, -2, -2]  # 2.5, 1.5, -2.5, -1.5: ties to even


# ---- deep onnxruntime-quantized models ----------------------------------------------------------

MISSING = missing_tools()
QEMU_CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")


@pytest.fixture(scope="module")
def deep(tmp_path_factory) -> dict:
    """deep MBV2 (QDQ) in both modes, 8 int8 samples, the float QDQ reference's logits."""
    work = tmp_path_factory.mktemp("deep")
    path = build("mbv2", "qdq", work)
    c = {mode: compile_model(path, name="deep", numerics=mode) for mode in quant.NUMERICS}
    t = c["tflite"].graph.t(c["tflite"].graph.inputs[0])
    assert t.quant is not None
    from emitter.verify.run import quantize
    samples = [[quantize(f["x"].astype(np.float64), t.quant.s, t.quant.zp).reshape(t.shape)]
               for f in feeds(8, 7)]
    return dict(path=path, work=work, c=c, samples=samples, ref=ort_run(c["tflite"], path, samples))


def test_mode_chosen_from_the_model(deep):
    assert compile_model(deep["path"]).graph.numerics == "onnxruntime"  # onnxruntime's quantizer
    from tests.models.tiny import HELLO  # written as tf2onnx writes a TFLite model: int8 I/O

    assert compile_model(HELLO).graph.numerics == "tflite"


def _drift(got, ref) -> tuple[int, int]:
    a = np.stack([r[0].astype(np.int32).ravel() for r in got])
    b = np.stack([r[0].astype(np.int32).ravel() for r in ref])
    return int(np.abs(a - b).max()), int((a.argmax(1) == b.argmax(1)).sum())


def test_onnxruntime_mode_tracks_onnxruntime(deep):
    """Max |diff| of the logits against the float QDQ reference no larger than onnxruntime's own
    integer kernels' (the QOperator form runs QLinearConv), argmax agreement on every sample;
    the TFLite mode drifts further on this model."""
    samples, ref = deep["samples"], deep["ref"]
    qop = build("mbv2", "qop", deep["work"])
    ort_int, _ = _drift(ort_run(deep["c"]["tflite"], qop, samples), ref)
    ours, agree = _drift([golden_run(deep["c"]["onnxruntime"], s) for s in samples], ref)
    tfl, _ = _drift([golden_run(deep["c"]["tflite"], s) for s in samples], ref)
    assert ours <= ort_int and agree == len(samples), (ours, ort_int, agree)
    assert tfl > ours, (tfl, ours)


def test_onnxruntime_mode_host_c_equals_golden(deep):
    c, samples = deep["c"]["onnxruntime"], deep["samples"]
    bundle = emit(c, deep["work"] / "ort_bundle")
    host = run_host(c, bundle, samples, deep["work"] / "ort_host")
    for k, s in enumerate(samples):
        np.testing.assert_array_equal(host[k][0], golden_run(c, s)[0], err_msg=f"sample {k}")


@pytest.mark.qemu
@pytest.mark.skipif(bool(MISSING), reason="needs: " + "; ".join(MISSING))
@pytest.mark.parametrize("core", QEMU_CORES)
def test_onnxruntime_mode_bit_exact_in_qemu(deep, core):
    board = load_board(core)
    c = compile_model(deep["path"], name="deep", numerics="onnxruntime", board=board)
    work = deep["work"] / core
    glue = deep["work"] / "ort_host" / "glue"
    if not glue.is_dir():
        run_host(c, emit(c, work / "hb"), deep["samples"], deep["work"] / "ort_host")
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), work / "bundle")
    fw = build_firmware(work / "bundle", glue, board, work / "fw")
    (work / "run").mkdir(parents=True, exist_ok=True)
    (work / "run" / "input.bin").write_bytes(pack(deep["samples"]))
    run = run_qemu(fw.elf, fw.board, work / "run")
    got = unpack(c, (work / "run" / "output.bin").read_bytes(), len(deep["samples"]))
    for k, s in enumerate(deep["samples"]):
        np.testing.assert_array_equal(got[k][0], golden_run(c, s)[0], err_msg=f"{core} sample {k}")
    assert min(run.instructions) > 0


@pytest.mark.skipif(not CMSIS_NN, reason="CMSIS_NN_PATH is not set")
def test_cmsis_nn_backend_keeps_onnxruntime_rounded_layers_portable(deep):
    """CMSIS-NN rounds as TFLite: in onnxruntime numerics its conv/FC/pool calls stay portable, named
    in the summary's list with that reason; in tflite numerics CMSIS-NN takes them."""
    board, cmsis = load_board("cortex-m4"), Path(str(CMSIS_NN))
    ort = compile_model(deep["path"], name="deep", backend="cmsis-nn", board=board, cmsis_path=cmsis,
                        cmsis_choice="cmsis")
    assert ort.graph.numerics == "onnxruntime"
    kernels = {p.kernel for p in ort.prepared if p.kernel}
    assert not any(k.startswith("arm_conv") or k.startswith("arm_depthwise") or k.startswith("arm_fully")
                   for k in kernels), kernels
    assert any("onnxruntime numerics" in why for _, _, why in ort.portable_layers)
    tfl = compile_model(deep["path"], name="deep", backend="cmsis-nn", board=board, cmsis_path=cmsis,
                        cmsis_choice="cmsis", numerics="tflite")
    assert any(p.kernel.startswith("arm_convolve") for p in tfl.prepared)
