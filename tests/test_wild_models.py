"""Quantized ONNX from the wild (issue #13), tests/models/wild.py: every case builds and runs
exactly (host C == golden bit for bit, golden within one quantum of onnxruntime on random int8
samples), in QEMU too (cortex-m4, cortex-m55, and cortex-m55 with CMSIS-NN when CMSIS_NN_PATH is set:
all cases in one firmware per run); every refusal is one McugenError, exit status 2, naming its
cause, nothing written."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx
import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model, golden_run
from emitter.errors import McugenError
from emitter.target.toolchain import missing_tools
from emitter.verify.run import diff_stats, load_inputs, ort_run
from tests.harness.bundles import build_library, emit, run_c
from tests.harness.cmsis import CMSIS_NN
from tests.harness.qemu import MergedCase, MergedRun, run_merged
from tests.models.wild import WILD_CASES, WILD_REFUSALS
from tests.test_robustness import expect_error

SAMPLES = 4
QEMU_CORES = ("cortex-m4", "cortex-m55")
CMSIS = CMSIS_NN


@pytest.fixture(scope="module")
def wild(tmp_path_factory):
    """Every case saved, compiled as wild<k>, with its samples; one host library for all."""
    tmp = tmp_path_factory.mktemp("wild")
    compiled, bundles = {}, []
    for k, (name, build) in enumerate(WILD_CASES.items()):
        path = tmp / f"{name}.onnx"
        onnx.save(build(), path)
        c = compile_model(path, name=f"wild{k}")
        compiled[name] = (path, c, load_inputs(c, None, SAMPLES, seed=k))
        bundles.append(emit(c, tmp / f"wild{k}"))
    return compiled, build_library(bundles, tmp / "libwild.so")


@pytest.mark.parametrize("name", list(WILD_CASES))
def test_wild_case_exact(name, wild):
    compiled, lib = wild
    path, c, samples = compiled[name]
    gold = [golden_run(c, s) for s in samples]
    for s, g in zip(samples, gold, strict=True):
        for h, want in zip(run_c(lib, c, s), g, strict=True):
            np.testing.assert_array_equal(h, want, err_msg="host C differs from the golden model")
    d, n, mx = diff_stats(gold, ort_run(c, path, samples))
    assert mx <= 1, f"golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"


@pytest.mark.parametrize("name", list(WILD_REFUSALS))
def test_wild_refusal(name, tmp_path, capsys):
    case = WILD_REFUSALS[name]
    expect_error(case.build(), tmp_path, capsys, McugenError, *case.fragments)


@pytest.fixture(scope="module")
def wild_qemu(wild, tmp_path_factory):
    compiled = wild[0]
    cache: dict[tuple[str, str], MergedRun] = {}

    def get(core: str, backend: str) -> MergedRun:
        if (core, backend) not in cache:
            board = load_board(core)
            extra = {"board": board} | ({"backend": backend, "cmsis_path": CMSIS} if backend == "cmsis-nn" else {})
            cases = [MergedCase(name, compile_model(path, replace(c.options, **extra)), samples[0])
                     for name, (path, c, samples) in compiled.items()]
            cache[core, backend] = run_merged(cases, board, tmp_path_factory.mktemp(f"wild_{core}_{backend}"),
                                              cmsis_nn=CMSIS if backend == "cmsis-nn" else None)
        return cache[core, backend]
    return get


@pytest.mark.qemu
@pytest.mark.skipif(bool(missing_tools()), reason="the QEMU tier needs missing tools")
@pytest.mark.parametrize("core,backend", [(core, "portable") for core in QEMU_CORES] + [
    pytest.param("cortex-m55", "cmsis-nn", marks=pytest.mark.skipif(CMSIS is None, reason="CMSIS_NN_PATH is not set"))])
def test_wild_cases_in_qemu(core, backend, wild, wild_qemu):
    result = wild_qemu(core, backend)
    assert result.run.exit_code == 0, (result.crashed_in, result.failures)
    for k, (name, (_, c, samples)) in enumerate(wild[0].items()):
        got = result.outputs[k]
        assert got is not None, name
        for q, g in zip(got, golden_run(c, samples[0]), strict=True):
            np.testing.assert_array_equal(q, g, err_msg=f"{name} on {core} differs from the golden model")
