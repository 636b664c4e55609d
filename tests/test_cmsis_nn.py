"""The cmsis-nn backend against the user's CMSIS-NN (CMSIS_NN_PATH; tested with v7.0.0).

CMSIS-NN is the user's library and is never vendored: without CMSIS_NN_PATH these tests skip.
With it: every shared model, on the host and in QEMU for cores with and without DSP/MVE, must be
bit-exact with the golden model and with TFLM's reference outputs.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from emitter.backends.cmsis_nn import cmsis_path
from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.bundle import write_bundle
from emitter.render import render_bundle
from emitter.target.toolchain import missing_tools
from emitter.verify import run_verify
from tests.support import MODEL_NAMES, SHARED_MODELS, shared_model

pytestmark = [
    pytest.mark.skipif(cmsis_path() is None, reason="CMSIS_NN_PATH is not set: CMSIS-NN is the user's "
                       "library; point CMSIS_NN_PATH at a CMSIS-NN v7.0.0 checkout to run these"),
    pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present"),
]
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m55")


def emit(name: str, board: str, out: Path):
    b = load_board(board)
    c = compile_model(shared_model(name), name="net", backend="cmsis-nn", board=b, cmsis_path=cmsis_path())
    write_bundle(render_bundle(c, " ".join(b.cflags), b.name), out)
    return c, b


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_cmsis_calls_replace_portable_kernels(name, tmp_path):
    c, _ = emit(name, "cortex-m55", tmp_path / "b")
    kernels = {p.kernel for p in c.prepared if p.kernel}
    assert not any(k in kernels for k in ("mcu_conv2d_s8", "mcu_depthwise_conv2d_s8", "mcu_softmax_s8"))
    assert any(k.startswith("arm_") for k in kernels)
    text = (tmp_path / "b" / "net.c").read_text()
    assert '#include "arm_nnfunctions.h"' in text
    assert "ERR_SCRATCH" in text  # every call with scratch checks the target's size first
    assert c.plan.arena_size >= c.plan.lower_bound


@pytest.mark.qemu
@pytest.mark.skipif(bool(missing_tools()), reason="cross toolchain or QEMU missing")
@pytest.mark.parametrize("board", CORES)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_cmsis_bit_exact_host_and_qemu(name, board, tmp_path):
    c, b = emit(name, board, tmp_path / "b")
    ref = SHARED_MODELS / name / f"{name}_ref.npz"
    rep = run_verify(c, tmp_path / "b", b, shared_model(name), str(ref), 0, qemu=True, work=tmp_path / "w")
    assert rep.ok, rep.text()
    want = np.load(ref)["tflm_outputs"]
    got = np.stack([o[0] for o in rep.outputs["qemu"]])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.stack([g[0] for g in rep.outputs["golden"]]), want)


def test_cmsis_make_builds_library(tmp_path):
    import subprocess

    emit("mlperf_kws_dscnn", "cortex-m4", tmp_path / "b")
    res = subprocess.run(["make", "-C", str(tmp_path / "b"), "CC=arm-none-eabi-gcc",
                          f"CMSIS_NN_PATH={os.environ['CMSIS_NN_PATH']}"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "b" / "libnet.a").is_file()
