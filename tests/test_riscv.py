"""RISC-V boards (issue 27): rv32imac (generic) and esp32-c3 (RV32IMC), verified in qemu-system-riscv32.

Default tier: the board files (arch, flags, portable backend and why); the digits example on both
boards, bit-exact with the golden model in QEMU `virt` with instruction counts (the plugin's
RISC-V markers), flash/RAM/stack figures and an ELF of the right ISA (no "A" extension on the
ESP32-C3); tflm_hello_world and mlperf_ad_fc_autoencoder bit-exact with TFLM's `tflm_outputs` on
both boards; the bundle's own Makefile cross-builds with riscv64-unknown-elf-gcc; a PATH without the
RISC-V tools gives one message naming the Debian packages (exit 3 from the CLI); the rv32imac cost
table (mcugen's counts only) gives the memory plan's estimate on RISC-V, within 10 % of QEMU on KWS
and AD.
Slow tier: every shared model on both boards, bit-exact with `tflm_outputs`.
Instruction counts per model: benchmarks/riscv.py (docs/riscv.md).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.cli import choose_backend, main
from emitter.compiler import compile_model, golden_run
from emitter.errors import ToolchainError
from emitter.plan.propose import base_estimate
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target import toolchain
from emitter.target.firmware import build_firmware
from emitter.verify.harness import run_in_qemu, unpack, write_glue
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, shared_model

REPO = Path(__file__).resolve().parents[1]
DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"
HELDOUT = REPO / "examples" / "digits_heldout.npz"
BOARDS = ("rv32imac", "esp32-c3")
MISSING = toolchain.missing_tools(toolchain.RISCV_QEMU_TOOLS)
needs_riscv = pytest.mark.skipif(bool(MISSING), reason="needs " + "; ".join(MISSING))
needs_shared = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason=f"shared models absent ({SHARED_MODELS})")
PACKAGES = ("gcc-riscv64-unknown-elf", "picolibc-riscv64-unknown-elf", "qemu-system-misc")


def test_riscv_boards_and_backend_choice() -> None:
    generic, esp = load_board("riscv32"), load_board("esp32c3")
    assert (generic.name, generic.arch, generic.cflags) == ("rv32imac", "riscv", ("-march=rv32imac", "-mabi=ilp32"))
    assert (esp.core, esp.arch, esp.cflags) == ("rv32imac", "riscv", ("-march=rv32imc", "-mabi=ilp32"))
    assert (esp.ram_bytes, esp.flash_bytes) == (400 * 1024, 4 * 1024 * 1024)
    assert esp.qemu_machine == generic.qemu_machine == "virt" and esp.isa == "c"
    assert load_board("cortex-m4").arch == "arm"
    for board in (generic, esp):
        backend, path, why = choose_backend("auto", board)
        assert backend == "portable" and path is None and "CMSIS-NN is Arm-only" in why


def digits_samples(count: int, c) -> list[list[np.ndarray]]:
    from emitter.verify.run import quantize

    images = np.load(HELDOUT)["images"][:count]
    t = c.graph.t(c.graph.inputs[0])
    return [[quantize(x.astype(np.float64), t.quant.s, t.quant.zp).reshape(t.shape)] for x in images]


def run_riscv(model: Path, board_name: str, work: Path, samples=None, count: int = 0):
    """Emit `model` for the board, build it with -Werror, run it in QEMU; (compiled, outputs, fw, run)."""
    board = load_board(board_name)
    c = compile_model(model, name="net", board=board)
    if samples is None:
        samples = digits_samples(count, c)
    bundle = work / "bundle"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle, force=True)
    write_glue(c, work / "glue")
    fw, run = run_in_qemu(bundle, work / "glue", board, work, samples, ("-Werror",))
    return c, samples, unpack(c, (run.workdir / "output.bin").read_bytes(), len(samples)), fw, run


@needs_riscv
@pytest.mark.parametrize("board_name", BOARDS)
def test_digits_bit_exact_in_qemu_riscv32(board_name: str, tmp_path: Path) -> None:
    c, samples, got, fw, run = run_riscv(DIGITS, board_name, tmp_path, count=4)
    for g, s in zip(got, samples, strict=True):
        np.testing.assert_array_equal(g[0], golden_run(c, s)[0])
    # one count per inference from the RISC-V markers; the 32k-MAC model needs ~300k instructions
    assert len(run.instructions) == 4 and all(100_000 < n < 1_000_000 for n in run.instructions), run.instructions
    assert run.stack_bytes is not None and 0 < run.stack_bytes < 4096
    assert fw.model_flash > 4_976 and fw.model_ram >= 904 and fw.text > fw.model_text > 0
    assert "warning" not in fw.build_log
    attributes = subprocess.run(["riscv64-unknown-elf-readelf", "-A", str(fw.elf)], capture_output=True,
                                text=True, check=True).stdout
    arch = load_board(board_name).cflags[0].removeprefix("-march=")  # rv32imac / rv32imc
    assert 'Tag_RISCV_arch: "rv32i2p1_m2p0_' in attributes, attributes
    assert ("_a2p1" in attributes) == ("a" in arch[5:]), attributes


@needs_riscv
@needs_shared
@pytest.mark.parametrize("board_name", BOARDS)
@pytest.mark.parametrize("name", ("tflm_hello_world", "mlperf_ad_fc_autoencoder"))
def test_small_shared_models_bit_exact_with_tflm(name: str, board_name: str, tmp_path: Path) -> None:
    check_shared_model(name, board_name, tmp_path)


def check_shared_model(name: str, board_name: str, work: Path) -> None:
    model = shared_model(name)
    ref = np.load(model.parent / f"{name}_ref.npz")
    board = load_board(board_name)
    shape = compile_model(model, name="net", board=board).input_shapes[0]
    samples = [[x.astype(np.int8).reshape(shape)] for x in ref["inputs"]]
    _, _, got, _, run = run_riscv(model, board_name, work, samples)
    want = ref["tflm_outputs"]
    assert len(got) == len(want) and len(run.instructions) == len(want) and min(run.instructions) > 0
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g[0].ravel(), w.ravel())


@pytest.mark.slow
@needs_riscv
@needs_shared
@pytest.mark.parametrize("board_name", BOARDS)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_every_shared_model_bit_exact_with_tflm(name: str, board_name: str, tmp_path: Path) -> None:
    check_shared_model(name, board_name, tmp_path)


@pytest.mark.skipif(bool(toolchain.missing_tools(("riscv64-unknown-elf-gcc", "picolibc", "make"))),
                    reason="needs riscv64-unknown-elf-gcc, picolibc and make")
def test_bundle_makefile_cross_builds_for_riscv(tmp_path: Path) -> None:
    board = load_board("esp32-c3")
    c = compile_model(DIGITS, name="net", board=board)
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), tmp_path, force=True)
    done = subprocess.run(["make", "CC=riscv64-unknown-elf-gcc", "WARN_FLAGS=-std=c99 -Wall -Wextra -Werror"],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "-march=rv32imc -mabi=ilp32" in done.stdout and "--specs=picolibc.specs" in done.stdout
    assert "mismatch" not in done.stderr
    members = subprocess.run(["riscv64-unknown-elf-objdump", "-f", str(tmp_path / "libnet.a")],
                             capture_output=True, text=True, check=True).stdout
    assert "elf32-littleriscv" in members and "arm" not in members
    # no Arm-only runtime file (DSP/MVE paths) is shipped to a RISC-V board
    assert not [p for p in (tmp_path / "mcu_runtime").rglob("*.c") if p.stem.endswith(("_dsp", "_mve"))]
    mismatch = subprocess.run(["make", "CC=riscv64-unknown-elf-gcc", "CFLAGS=-O2 -march=rv32imac -mabi=ilp32"],
                              cwd=tmp_path, capture_output=True, text=True, check=False)
    assert "CPU mismatch" in mismatch.stderr and "(-march=rv32imc)" in mismatch.stderr


def test_missing_riscv_tools_name_the_debian_packages(tmp_path: Path, monkeypatch, capsys) -> None:
    import shutil

    # a PATH with the host's compiler (the host half of --verify) but no RISC-V tool
    host_only = tmp_path / "bin"
    host_only.mkdir()
    for tool in ("gcc", "cc", "as", "ld", "sh"):
        found = shutil.which(tool)
        if found is not None:
            (host_only / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(host_only))
    missing = toolchain.missing_tools(toolchain.RISCV_QEMU_TOOLS)
    assert any(m.startswith("riscv64-unknown-elf-gcc") for m in missing)
    assert any(m.startswith("qemu-system-riscv32") and PACKAGES[2] in m for m in missing)
    with pytest.raises(ToolchainError) as error:
        build_firmware(tmp_path, tmp_path, load_board("esp32-c3"), tmp_path / "fw")
    assert all(package in str(error.value) for package in PACKAGES), error.value
    # the CLI: one message naming the three packages, exit 3 (docs/ci.md: a tool is missing)
    code = main(["verify", str(DIGITS), "--board=rv32imac", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 3, err
    assert err.count("mcugen: error:") == 1 and "riscv64-unknown-elf-gcc" in err, err
    assert all(package in err for package in PACKAGES), err


def test_rv32imac_cost_table_gives_the_plan_estimate() -> None:
    """The committed rv32imac table (scripts/cost_tables.py --cores rv32imac): mcugen's counts only
    (no CMSIS-NN on RISC-V, so no kernel choice), every kind; the ESP32-C3 reads it through its core;
    the memory plan's instruction base on RISC-V comes from it (on Arm cores from theirs)."""
    import json

    from emitter.backends import kernel_choice as kc
    from emitter.plan import search

    data = json.loads((kc.TABLES / "rv32imac.json").read_text())
    assert data["core"] == "rv32imac" and data["cmsis_nn"] is None and data["isa"] == "c"
    assert data["command"] == "python scripts/cost_tables.py --cores rv32imac"
    rows = kc.load_costs("rv32imac")
    assert len(rows) >= 300 and {"conv", "dw", "fc"} <= {r.shape.kind for r in rows}
    assert all(r.ours > 0 for r in rows) and {r.path for r in rows if r.shape.kind != "bmm"} == {"generic"}
    assert kc.load_table("rv32imac") == () and kc.load_costs("cortex-m4") == ()
    assert load_board("esp32-c3").core == "rv32imac"
    model = DIGITS
    for board_name in ("rv32imac", "esp32-c3", "cortex-m4"):
        board = load_board(board_name)
        c = compile_model(model, name="net", board=board, memory="auto", ram_budget=100_000, budget_src="test")
        assert c.memory is not None
        per_mac = search.INSTRUCTIONS_PER_MAC.get(board.isa, 1.9)
        table = base_estimate(c.prepared, board.core, board.isa, per_mac, 200)
        # every core with a cost table of mcugen's counts (RISC-V's, the Arm ones) gives the base
        assert table is not None and c.memory.base == table != search.model_cost(c.prepared, board.isa)


def test_rv32imac_cost_table_predicts_its_own_cases() -> None:
    """Each case predicted from all the others (leave-one-out): half within 5 %, and an exact hit
    returns the measured count."""
    from emitter.backends import kernel_choice as kc

    rows = kc.load_costs("rv32imac")
    errors = sorted(abs(kc.predict_ours(rows[:i] + rows[i + 1:], r.shape, r.path) / r.ours - 1)  # type: ignore[operator]
                    for i, r in enumerate(rows))
    assert errors[len(errors) // 2] < 0.05, errors[len(errors) // 2]
    assert all(kc.predict_ours(rows, r.shape, r.path) == r.ours for r in rows[:20])


@needs_riscv
@needs_shared
@pytest.mark.parametrize("name", ("mlperf_kws_dscnn", "mlperf_ad_fc_autoencoder"))
def test_rv32imac_estimate_within_10_percent_of_qemu(name: str, tmp_path: Path) -> None:
    """The estimate from the rv32imac table (what the memory plan weighs overheads against) within
    10 % of the instructions counted in QEMU."""

    model = shared_model(name)
    ref = np.load(model.parent / f"{name}_ref.npz")
    board = load_board("rv32imac")
    c = compile_model(model, name="net", board=board)
    samples = [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"][:2]]
    _, _, _, _, run = run_riscv(model, "rv32imac", tmp_path, samples)
    measured = int(np.median(run.instructions))
    estimate = base_estimate(c.prepared, "rv32imac", "c", 5.0, 200)
    assert estimate is not None and abs(estimate / measured - 1) < 0.10, (estimate, measured)


CLANG_MISSING = toolchain.missing_tools(("clang", "riscv64-unknown-elf-gcc", "picolibc"))


def picolibc_include() -> str:
    """picolibc's include folder, as riscv64-unknown-elf-gcc --specs=picolibc.specs (and SConstruct) finds it."""
    err = subprocess.run(["riscv64-unknown-elf-gcc", "--specs=picolibc.specs", "-E", "-v", "-x", "c", "/dev/null"],
                         capture_output=True, text=True, check=True).stderr
    return next(line.strip() for line in err.splitlines()
                if "picolibc" in line and (Path(line.strip()) / "stdio.h").is_file())


@pytest.mark.skipif(bool(CLANG_MISSING), reason="needs " + "; ".join(CLANG_MISSING))
@pytest.mark.parametrize("opt", ("-O2", "-O0"))
def test_clang_compiles_the_runtime_for_riscv(opt: str, tmp_path: Path) -> None:
    """Every kernel and support file and the digits bundle with `clang --target=riscv32-unknown-elf`
    on picolibc's headers for the ESP32-C3 (rv32imc), the style's warnings, none reported."""
    from tests.harness.bundles import STRICT

    board = load_board("esp32-c3")
    c = compile_model(DIGITS, name="digits", board=board)
    bundle = tmp_path / "bundle"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle, force=True)
    runtime = REPO / "mcu_runtime"
    sources = sorted([*map(str, bundle.glob("*.c")), *map(str, (runtime / "kernels").glob("*.c")),
                      *map(str, (runtime / "support").glob("*.c"))])
    resource = subprocess.run(["clang", "-print-resource-dir"], capture_output=True, text=True,
                              check=True).stdout.strip()
    command = ["clang", "--target=riscv32-unknown-elf", "-nostdinc", "-isystem", picolibc_include(),
               "-isystem", f"{resource}/include", *board.cflags, opt, *STRICT, "-Werror", f"-I{bundle}",
               f"-I{runtime / 'include'}", "-c", *sources]
    res = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert res.returncode == 0 and not res.stderr.strip(), res.stderr[-4000:]
    assert len(list(tmp_path.glob("*.o"))) == len(sources)


@needs_riscv
@pytest.mark.skipif(bool(CLANG_MISSING), reason="needs " + "; ".join(CLANG_MISSING))
@pytest.mark.parametrize("board_name", BOARDS)
def test_clang_firmware_bit_exact_on_riscv(board_name: str, tmp_path: Path) -> None:
    """The digits firmware compiled by clang (SConstruct cc=clang: --target=riscv32-unknown-elf on
    picolibc's headers, linked by riscv64-unknown-elf-gcc), -Werror, bit-exact with the golden in
    QEMU, its instructions counted."""
    board = load_board(board_name)
    c = compile_model(DIGITS, name="net", board=board)
    samples = digits_samples(4, c)
    bundle = tmp_path / "bundle"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle, force=True)
    write_glue(c, tmp_path / "glue")
    fw, run = run_in_qemu(bundle, tmp_path / "glue", board, tmp_path, samples, ("-Werror",), cc="clang")
    assert "warning" not in fw.build_log, fw.build_log[-3000:]
    got = unpack(c, (run.workdir / "output.bin").read_bytes(), len(samples))
    for g, s in zip(got, samples, strict=True):
        np.testing.assert_array_equal(g[0], golden_run(c, s)[0])
    assert len(run.instructions) == 4 and all(100_000 < n < 1_000_000 for n in run.instructions)
