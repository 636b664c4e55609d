"""--optimize size (issue #12, item 3): one generic path per kernel, -Os, code as a first-class figure.

- Size mode is bit-exact in QEMU with TFLM and the golden on every shared model, one test per core
  (M4, M7, M55: DSP and MVE, whose fast paths size mode drops).
- Its code beyond the weights (the linked firmware's, emitter.target.firmware.Firmware.model_code)
  is smaller than speed mode's on every shared model on M7, and KWS's is at most 16 KB there.
- The bundle says so (mcu_config.h defines MCU_OPTIMIZE_SIZE, the Makefile and CMakeLists.txt use
  -Os), every conv/depthwise twin reports the generic path, and it is deterministic.
- The cmsis-nn backend in size mode calls CMSIS-NN for every layer, bit-exact (with CMSIS_NN_PATH).
- A bad --optimize is a usage error (exit code 2).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.cli import main
from emitter.compiler import compile_model, golden_run
from emitter.errors import UsageError
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin
from emitter.optimize import CMSIS_OPT_FLAGS, OPT_FLAGS
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.firmware import Firmware, build_firmware
from emitter.target.qemu import run_qemu
from emitter.target.toolchain import missing_tools
from emitter.verify.harness import pack, unpack, write_glue
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, shared_model
from tests.harness.cmsis import CMSIS_NN
from tests.models.tiny import HELLO, tiny_qdq_conv

MISSING = missing_tools()
needs_qemu = pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
needs_models = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
KWS_SIZE_LIMIT = 16 * 1024  # the acceptance: KWS code beyond weights on M7, --optimize size


def firmware(name: str, core: str, optimize: str, work: Path, cmsis: Path | None = None) -> tuple[Firmware, Any]:
    """The shared model `name` emitted for `core` with --optimize `optimize` (the cmsis-nn backend
    with `cmsis`), built for QEMU as --verify builds it."""
    board = load_board(core)
    c = compile_model(shared_model(name), name="net", board=board, optimize=optimize, cmsis_path=cmsis,
                      backend="portable" if cmsis is None else "cmsis-nn")
    bundle = work / f"{name}-{core}-{optimize}"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle / "bundle")
    write_glue(c, bundle / "glue")
    return build_firmware(bundle / "bundle", bundle / "glue", board, bundle / "fw", OPT_FLAGS[optimize], werror=True,
                          cmsis_nn=cmsis, cmsis_opt=CMSIS_OPT_FLAGS[optimize]), c


def run_reference(fw: Firmware, c: Any, name: str, work: Path) -> list[int]:
    """Run the 8 reference inputs in QEMU; assert QEMU == golden == TFLM; the instruction counts."""
    ref = np.load(SHARED_MODELS / name / f"{name}_ref.npz")
    samples = [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"]]
    work.mkdir()
    (work / "input.bin").write_bytes(pack(samples))
    run = run_qemu(fw.elf, fw.board, work)
    got = unpack(c, (work / "output.bin").read_bytes(), len(samples))
    for k, sample in enumerate(samples):
        gold = golden_run(c, sample)[0]
        np.testing.assert_array_equal(got[k][0], gold, err_msg=f"{name} on {fw.board.name}: sample {k} vs golden")
        np.testing.assert_array_equal(got[k][0], ref["tflm_outputs"][k].reshape(gold.shape),
                                      err_msg=f"{name} on {fw.board.name}: sample {k} vs TFLM")
    return list(run.instructions)


@needs_qemu
@needs_models
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m7", "cortex-m55"])
def test_size_mode_is_bit_exact_in_qemu(core: str, tmp_path: Path) -> None:
    """Every shared model, --optimize size, 8 reference inputs: QEMU == golden == TFLM."""
    for name in MODEL_NAMES:
        fw, c = firmware(name, core, "size", tmp_path)
        counts = run_reference(fw, c, name, tmp_path / f"{name}-run")
        print(f"{name} on {core} --optimize size: {min(counts):,} instructions, code {fw.model_code('net'):,} bytes")


@needs_qemu
@needs_models
@pytest.mark.skipif(not CMSIS_NN, reason="CMSIS_NN_PATH is not set (the user's CMSIS-NN)")
def test_cmsis_nn_size_mode_calls_cmsis_nn_everywhere_bit_exact(tmp_path: Path) -> None:
    """The cmsis-nn backend under --optimize size: every layer CMSIS-NN takes calls it (mcugen has
    no fast path left to prefer), CMSIS-NN at -Os; KWS on M7 bit-exact, its code below speed's."""
    cmsis = Path(str(CMSIS_NN))
    fw, c = firmware("mlperf_kws_dscnn", "cortex-m7", "size", tmp_path, cmsis)
    assert not c.portable_layers and all(not p.kernel.startswith("mcu_") for p in c.prepared if p.kernel)
    run_reference(fw, c, "mlperf_kws_dscnn", tmp_path / "run")
    speed, _ = firmware("mlperf_kws_dscnn", "cortex-m7", "speed", tmp_path, cmsis)
    assert fw.model_code("net") < speed.model_code("net")


@needs_qemu
@needs_models
def test_size_mode_code_is_smaller_and_kws_fits_16k_on_m7(tmp_path: Path) -> None:
    for name in MODEL_NAMES:
        size, speed = (firmware(name, "cortex-m7", mode, tmp_path)[0].model_code("net") for mode in ("size", "speed"))
        print(f"{name} on cortex-m7: code beyond weights {speed:,} bytes (speed), {size:,} (size)")
        assert 0 < size < speed, (name, size, speed)
        if name == "mlperf_kws_dscnn":
            assert size <= KWS_SIZE_LIMIT, f"KWS --optimize size: {size:,} bytes of code > {KWS_SIZE_LIMIT:,}"


def test_size_mode_twins_report_the_generic_path_and_plan_its_scratch(tmp_path: Path) -> None:
    """Speed takes the DSP paths on M7; size plans every conv/depthwise as generic (isa "c", as
    MCU_ISA_PLAN under MCU_OPTIMIZE_SIZE), with that path's scratch, and says so (kernel_path, which
    the per-layer profile prints)."""
    import onnx

    from emitter.kernels import kernel_path

    onnx.save(tiny_qdq_conv(), tmp_path / "conv.onnx")
    board = load_board("cortex-m7")
    for optimize, isa in (("speed", board.isa), ("size", "c")):
        c = compile_model(tmp_path / "conv.onnx", board=board, optimize=optimize)
        assert c.optimize == optimize and c.plan_isa == isa
        paths = []
        for p in c.prepared:
            twin = {"mcu_conv2d_s8": conv_twin, "mcu_depthwise_conv2d_s8": dw_twin}.get(p.kernel)
            if twin is not None:
                paths.append(kernel_path(p.kernel, p.params, p.operands, c.plan_isa))
                assert p.scratch == twin.buffer_size(p.params, p.operands["bias"].data, isa)
        assert ("dsp" in paths) if optimize == "speed" else set(paths) == {"generic"}, (optimize, paths)


def test_size_bundle_defines_the_macro_and_builds_with_os(tmp_path: Path) -> None:
    out = {}
    for optimize in ("speed", "size", "size"):
        c = compile_model(HELLO, name="hello_fc", optimize=optimize)
        files = render_bundle(c, "-mcpu=cortex-m7 -mthumb", "cortex-m7")
        assert files == out.setdefault(optimize, files), "the size bundle is not deterministic"
    speed, size = out["speed"], out["size"]
    config = "mcu_runtime/include/mcu_config.h"
    assert b"#define MCU_OPTIMIZE_SIZE 1" in size[config] and b"#define MCU_OPTIMIZE_SIZE" not in speed[config]
    assert b"CFLAGS ?= -Os" in size["Makefile"] and b"CFLAGS ?= -O2" in speed["Makefile"]
    assert b"PRIVATE -Os" in size["CMakeLists.txt"] and b"-Os" not in speed["CMakeLists.txt"]
    report = json.loads(size["report.json"])
    assert report["optimize"] == "size" and report["code_estimate"]["optimize"] == "size"
    assert report["code_estimate"]["bytes"] < json.loads(speed["report.json"])["code_estimate"]["bytes"]


def test_bad_optimize_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([str(HELLO), "--board=cortex-m7", "-o", str(tmp_path / "b"), "--optimize", "tiny"])
    assert exc.value.code == 2 and "--optimize: invalid choice: 'tiny'" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()
    with pytest.raises(UsageError, match="unknown --optimize 'fast'"):
        compile_model(HELLO, optimize="fast")


def test_summary_states_the_mode_and_the_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(HELLO), "--board=cortex-m7", "-o", str(tmp_path / "b"), "--optimize", "size"]) == 0
    out = capsys.readouterr().out
    est = json.loads((tmp_path / "b" / "report.json").read_text())["code_estimate"]["bytes"]
    assert f"+ code {est:,} bytes" in out
    assert "code estimated (mcu_runtime kernels and the schedule, --optimize size)" in out
