"""The QEMU tier on generated code: cross-compiled bundles run in qemu-system-arm, bit for bit.

a. Every shared MLPerf Tiny / TFLM model (../shared/models) on several cores: compile_model ->
   emit -> build_firmware -> run_qemu on the 8 reference inputs of NAME_ref.npz; the outputs equal
   TFLM's (`tflm_outputs`) and the host gcc build bit for bit, the firmware sizes equal what
   arm-none-eabi-size reports, and (on one core) two runs of one ELF count the same instructions.
b. Every op case of tests/models/ops.py (QDQ, and QOperator where the case has one) on cortex-m0plus
   (Armv6-M: unaligned loads fault) and cortex-m55 (MVE): all cases in ONE firmware per core
   (tests/harness/qemu.py), run once, each case bit-exact with the golden model.
The CLI's budget checks are tested in tests/test_cli.py.
"""
from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.firmware import Firmware, build_firmware
from emitter.target.qemu import run_qemu
from emitter.target.toolchain import missing_tools
from emitter.verify.harness import pack, unpack
from emitter.verify.run import run_host
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, emit, int8_inputs, shared_model
from tests.harness.qemu import MergedCase, MergedRun, run_merged
from tests.models.ops import CASES, case_model

MISSING = missing_tools()
pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(bool(MISSING), reason="the QEMU tier needs missing tools: " + "; ".join(MISSING)),
]
needs_models = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")

MODEL_CORES = ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")
REPEAT_CORE = "cortex-m4"  # where two runs of one ELF must count the same instructions
OP_CORES = ("cortex-m0plus", "cortex-m55")
OP_PARAMS = [(f"{case.id}-{fmt}", case, fmt)
             for cases in CASES.values() for case in cases for fmt in ("qdq", "qop")
             if fmt == "qdq" or case.qop]


# ---- a. shared models ----------------------------------------------------------------------

class ModelRuns:
    """Per model: compiled once, host build once; per (model, core): emitted and built once."""

    def __init__(self, root: Path):
        self.root = root
        self.models: dict[str, dict] = {}
        self.firmware: dict[tuple[str, str], Firmware] = {}
        self.compiled: dict[tuple[str, str], Compiled] = {}  # per (model, core): planned for the core

    def model(self, name: str) -> dict:
        if name not in self.models:
            c = compile_model(shared_model(name), name="net")
            ref = np.load(SHARED_MODELS / name / f"{name}_ref.npz")
            samples = [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"]]
            assert len(samples) == 8 and len(c.graph.inputs) == 1 == len(c.graph.outputs)
            work = self.root / name
            bundle = emit(c, work / "bundle")
            host = run_host(c, bundle, samples, work / "host")  # also writes work/host/glue
            self.models[name] = dict(c=c, samples=samples, work=work, glue=work / "host" / "glue",
                                     tflm=ref["tflm_outputs"], host=host)
        return self.models[name]

    def build(self, name: str, core: str) -> Firmware:
        if (name, core) not in self.firmware:
            m, board = self.model(name), load_board(core)
            bundle = m["work"] / core / "bundle"
            c = compile_model(shared_model(name), name="net", board=board)  # scratch for its paths
            self.compiled[name, core] = c
            write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle)
            self.firmware[name, core] = build_firmware(bundle, m["glue"], board, m["work"] / core / "fw")
        return self.firmware[name, core]

    def run(self, name: str, core: str, tag: str):
        m, fw = self.model(name), self.build(name, core)
        run_dir = m["work"] / core / tag
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "input.bin").write_bytes(pack(m["samples"]))
        run = run_qemu(fw.elf, fw.board, run_dir)
        return run, unpack(m["c"], (run_dir / "output.bin").read_bytes(), len(m["samples"]))


@pytest.fixture(scope="module")
def model_runs(tmp_path_factory) -> ModelRuns:
    return ModelRuns(tmp_path_factory.mktemp("qemu_models"))


@needs_models
@pytest.mark.parametrize("core", MODEL_CORES)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_bit_exact_in_qemu(name, core, model_runs):
    m = model_runs.model(name)
    run, got = model_runs.run(name, core, "run")
    assert len(run.instructions) == len(m["samples"]) and min(run.instructions) > 0, run.instructions
    assert run.stack_bytes is not None and 0 < run.stack_bytes < 0x10000
    for k, (q, h, t) in enumerate(zip(got, m["host"], m["tflm"], strict=False)):
        np.testing.assert_array_equal(q[0], t.reshape(q[0].shape),
                                      err_msg=f"{name} on {core}: sample {k} differs from TFLM")
        np.testing.assert_array_equal(q[0], h[0],
                                      err_msg=f"{name} on {core}: sample {k} differs from the host build")


@needs_models
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_instruction_counts_repeatable(name, model_runs):
    first, _ = model_runs.run(name, REPEAT_CORE, "repeat1")
    second, _ = model_runs.run(name, REPEAT_CORE, "repeat2")
    assert len(first.instructions) == 8
    assert first.instructions == second.instructions, f"{name} on {REPEAT_CORE}"
    assert first.stack_bytes == second.stack_bytes


def _size_tool(elf: Path, *args: str) -> str:
    res = subprocess.run(["arm-none-eabi-size", *args, str(elf)], capture_output=True, text=True,
                         check=True)
    return res.stdout


@needs_models
@pytest.mark.parametrize("core", MODEL_CORES)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_firmware_sizes_match_size_tool(name, core, model_runs):
    fw = model_runs.build(name, core)
    sysv = {f[0]: int(f[1]) for f in (line.split() for line in _size_tool(fw.elf, "-A").splitlines())
            if len(f) == 3 and f[1].isdigit()}
    berkeley = _size_tool(fw.elf).splitlines()[1].split()
    b_text, b_data, b_bss = (int(v) for v in berkeley[:3])
    assert fw.text == sysv[".text"]
    assert fw.data == sysv[".data"]
    assert fw.bss == sysv[".bss"] == b_bss
    # Berkeley text = code + read-only data; its data = .data + the (writable) init arrays, which
    # the Firmware counts as rodata since they stay in flash. Both sum to the flash image.
    assert fw.flash == b_text + b_data
    assert fw.rodata == b_text + b_data - sysv[".text"] - sysv[".data"]
    assert fw.ram == fw.data + fw.bss
    assert 0 < fw.model_flash <= fw.flash and 0 < fw.model_ram <= fw.ram
    assert fw.model_bss >= model_runs.compiled[name, core].plan.arena_size  # the arena is the bundle's .bss


# ---- b. op cases, one merged firmware per core -----------------------------------------------

@pytest.fixture(scope="module")
def op_cases(tmp_path_factory) -> tuple[list[MergedCase], dict[str, Exception], dict[str, list[np.ndarray]]]:
    """Every op case quantized, compiled as op<k>, with one sample and its golden outputs."""
    tmp = tmp_path_factory.mktemp("qemu_opcases")
    cases, errors, golden = [], {}, {}
    for k, (label, case, fmt) in enumerate(OP_PARAMS):
        path, xs = case_model(case, fmt, tmp)
        try:
            c = compile_model(path, name=f"op{k}")
        except Exception as exc:  # reported by that case's test
            errors[label] = exc
            continue
        sample = int8_inputs(c, xs)
        cases.append(MergedCase(label, c, sample))
        golden[label] = golden_run(c, sample)
    return cases, errors, golden


@pytest.fixture(scope="module")
def merged_runs(op_cases, tmp_path_factory):
    cases = op_cases[0]
    cache: dict[str, MergedRun] = {}

    def get(core: str) -> MergedRun:
        if core not in cache:  # each case compiled for the core: its kernels' scratch fits its paths
            board = load_board(core)
            for_core = [replace(m, compiled=compile_model(m.compiled.model.path,
                                                          replace(m.compiled.options, board=board)))
                        for m in cases]
            cache[core] = run_merged(for_core, board, tmp_path_factory.mktemp(f"merged_{core}"))
        return cache[core]
    return get


@pytest.mark.parametrize("core", OP_CORES)
@pytest.mark.parametrize("label", [p[0] for p in OP_PARAMS])
def test_op_case_bit_exact_in_qemu(label, core, op_cases, merged_runs):
    cases, errors, golden = op_cases
    if label in errors:
        raise errors[label]
    result = merged_runs(core)
    assert label not in result.failures, result.failures[label]
    k = next(i for i, m in enumerate(cases) if m.label == label)
    got = result.outputs[k]
    assert got is not None
    for j, (q, g) in enumerate(zip(got, golden[label], strict=False)):
        d = q.astype(np.int32) - g.astype(np.int32)
        assert not d.any(), (f"op case {label} ({cases[k].compiled.name}) on {core}: output {j} "
                             f"differs from the golden model in {int((d != 0).sum())}/{d.size} "
                             f"elements, max |diff| {int(np.abs(d).max())}")


@pytest.mark.parametrize("core", OP_CORES)
def test_op_cases_merged_image_ran_cleanly(core, merged_runs):
    result = merged_runs(core)
    assert result.run.exit_code == 0, (
        f"merged op-case image on {core} exited {result.run.exit_code}"
        + (f", faulting in {result.crashed_in}" if result.crashed_in else "")
        + f"; failing cases: {sorted(result.failures)}")
