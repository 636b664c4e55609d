"""IC ResNet-8 (portable kernels) at --ram-budget 32000 against its whole-layer plan, counted in QEMU:
the budget plan streams the residual blocks, so it runs each block's Add as its own mcu_add_s8
(by bands or whole) where the whole-layer plan fuses it into the conv (mcu_conv2d_add_s8). The
budget plan must stay within 1.10x of the whole layers' instructions, bit-exact with TFLM.

mcu_add_s8's scalar loop took 133-137 instructions an element on m4/m7/m55 (13 for the fused Add's
MVE stage): the 28,672 unfused Add elements cost ~3.5M instructions on cortex-m55, 6,884,609 vs
3,362,514 (2.05x). Its fast path for full operands (mcu_conv_fuse_one / mcu_conv_fuse4: 10.5 an
element on m55, 53 on m4/m7) gives 3,463,743 (1.03x) on m55, 0.99x on m4/m7."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.firmware import build_firmware
from emitter.target.qemu import run_qemu
from emitter.target.toolchain import missing_tools
from emitter.verify.harness import pack, unpack
from emitter.verify.run import run_host
from tests.harness.bundles import SHARED_MODELS, emit, shared_model

MISSING = missing_tools()
MODEL = "mlperf_ic_resnet8"
BUDGET = 32_000
LIMIT = 1.10  # budget plan instructions / whole-layer plan instructions


def run(c: Compiled, samples: list[list[np.ndarray]], tmp: Path) -> tuple[int, list[np.ndarray]]:
    """Median instructions per inference in QEMU, and the outputs."""
    assert c.options.board is not None
    board = c.options.board
    host_c = compile_model(shared_model(MODEL), name="net", memory="layer", isa="c")
    run_host(host_c, emit(host_c, tmp / "host_bundle"), samples, tmp / "host")  # writes the glue
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), tmp / "bundle")
    fw = build_firmware(tmp / "bundle", tmp / "host" / "glue", board, tmp / "fw")
    (tmp / "run").mkdir()
    (tmp / "run" / "input.bin").write_bytes(pack(samples))
    got = run_qemu(fw.elf, fw.board, tmp / "run")
    outs = unpack(c, (tmp / "run" / "output.bin").read_bytes(), len(samples))
    return int(np.median(got.instructions)), [np.asarray(o[0]).ravel() for o in outs]


@pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
@pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m7", "cortex-m55"])
def test_ic_budget_plan_near_whole_layers(core: str, tmp_path: Path) -> None:
    board = load_board(core)
    ref = np.load(SHARED_MODELS / MODEL / f"{MODEL}_ref.npz")
    layer = compile_model(shared_model(MODEL), name="net", board=board, memory="layer")
    budget = compile_model(shared_model(MODEL), name="net", board=board, memory="auto", ram_budget=BUDGET)
    assert budget.plan.schedule.segments, "the budget plan streams no layers"
    samples = [[x.astype(np.int8).reshape(layer.input_shapes[0])] for x in ref["inputs"][:2]]
    whole, whole_out = run(layer, samples, tmp_path / "layer")
    banded, banded_out = run(budget, samples, tmp_path / "budget")
    for k, want in enumerate(ref["tflm_outputs"][:2]):
        assert np.array_equal(whole_out[k], want.ravel().astype(np.int8)), (core, "layer", k)
        assert np.array_equal(banded_out[k], want.ravel().astype(np.int8)), (core, "budget", k)
    assert banded <= LIMIT * whole, f"{core}: budget plan {banded:,} vs whole layers {whole:,} ({banded / whole:.2f}x)"
