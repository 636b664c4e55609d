"""clang as a first-class compiler (issue 28): warning-free, bit-exact, the firmware built with it.

Compile tier (default, one clang process per core and mode): every mcu_runtime kernel and support
file plus a generated bundle (examples/digits_cnn_int8.onnx emitted for that core, with its
mcu_config.h) compile with `clang --target=arm-none-eabi` and the core's flags, the style's
warning set (-Werror included), for --optimize speed (-O2: the DSP/MVE paths and their inline assembly)
and size (-Os, MCU_OPTIMIZE_SIZE); the slow tier adds -O0 (the C fallbacks of the assembly).
QEMU tier (default): the digits model built with clang (-Werror, SConstruct cc=clang, linked by
arm-none-eabi-gcc) on cortex-m7 and cortex-m55 is bit-exact with the golden model; slow tier:
every shared model on cortex-m4, -m7 and -m55 is bit-exact with TFLM's `tflm_outputs`.
Instruction counts gcc vs clang: benchmarks/compilers.py (docs/clang.md).
"""
from __future__ import annotations

import glob
import subprocess
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model, golden_run
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.toolchain import missing_tools
from emitter.verify.harness import run_in_qemu, unpack, write_glue
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, STRICT, shared_model

REPO = Path(__file__).resolve().parents[1]
RUNTIME = REPO / "mcu_runtime"
DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"
CORES = ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")
MISSING = missing_tools(("clang", "arm-none-eabi-gcc", "newlib"))
pytestmark = pytest.mark.skipif(bool(MISSING), reason="needs " + "; ".join(MISSING))
QEMU_MISSING = missing_tools(("clang", "qemu-system-arm", "scons", "arm-none-eabi-gcc", "newlib"))
needs_qemu = pytest.mark.skipif(bool(QEMU_MISSING), reason="needs " + "; ".join(QEMU_MISSING))
MODES = {"speed": "-O2", "size": "-Os"}


@cache
def newlib_root() -> str:
    """newlib's folder (include/, lib/) next to arm-none-eabi-gcc, as SConstruct finds it."""
    libc = subprocess.run(["arm-none-eabi-gcc", "-print-file-name=libc.a"], capture_output=True,
                          text=True, check=True).stdout.strip()
    return str(Path(libc).resolve().parents[1])


def clang_compile(core: str, optimize: str, opt: str, work: Path) -> None:
    """The digits bundle for `core` and every runtime file, one clang process, -Werror."""
    board = load_board(core)
    c = compile_model(DIGITS, name="digits", board=board, optimize=optimize)
    bundle = work / "bundle"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle, force=True)
    sources = sorted(glob.glob(str(bundle / "*.c")) + glob.glob(str(RUNTIME / "kernels" / "*.c"))
                     + glob.glob(str(RUNTIME / "support" / "*.c")))
    command = ["clang", "--target=arm-none-eabi", f"--sysroot={newlib_root()}", *board.cflags, opt,
               *STRICT, f"-I{bundle}", f"-I{bundle / 'mcu_runtime' / 'include'}",
               f"-I{RUNTIME / 'include'}", "-c", *sources]
    res = subprocess.run(command, cwd=work, capture_output=True, text=True, check=False)
    assert res.returncode == 0 and not res.stderr.strip(), (
        f"clang {core} --optimize {optimize} {opt}:\n{res.stderr[-4000:]}")
    objects = list(work.glob("*.o"))
    assert len(objects) == len(sources), "one object per source"


@pytest.mark.parametrize("optimize", sorted(MODES))
@pytest.mark.parametrize("core", CORES)
def test_clang_compiles_warning_free(core: str, optimize: str, tmp_path: Path) -> None:
    clang_compile(core, optimize, MODES[optimize], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("core", CORES)
def test_clang_unoptimized_fallbacks_warning_free(core: str, tmp_path: Path) -> None:
    clang_compile(core, "speed", "-O0", tmp_path)


def run_clang_firmware(model: Path, core: str, work: Path, samples: list[list[np.ndarray]]
                       ) -> list[list[np.ndarray]]:
    board = load_board(core)
    c = compile_model(model, name="net", board=board)
    bundle = work / "bundle"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle, force=True)
    write_glue(c, work / "glue")
    fw, run = run_in_qemu(bundle, work / "glue", board, work, samples, ("-Werror",), cc="clang",
                          count_instructions=False)
    # clang's objects follow arm-none-eabi-gcc's enum ABI (SConstruct: -fshort-enums), or ld warns
    assert "enums yet the output" not in fw.build_log, fw.build_log[-3000:]
    return unpack(c, (run.workdir / "output.bin").read_bytes(), len(samples))


@needs_qemu
@pytest.mark.parametrize("core", ("cortex-m7", "cortex-m55"))
def test_clang_firmware_bit_exact_with_golden(core: str, tmp_path: Path) -> None:
    c = compile_model(DIGITS, name="net", board=load_board(core))
    rng = np.random.default_rng(28)
    samples = [[rng.integers(-128, 128, size=c.input_shapes[0], dtype=np.int8)] for _ in range(4)]
    got = run_clang_firmware(DIGITS, core, tmp_path, samples)
    want = [golden_run(c, s) for s in samples]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g[0], w[0])


@pytest.mark.slow
@needs_qemu
@pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason=f"shared models absent ({SHARED_MODELS})")
@pytest.mark.parametrize("core", ("cortex-m4", "cortex-m7", "cortex-m55"))
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_clang_shared_models_bit_exact_with_tflm(name: str, core: str, tmp_path: Path) -> None:
    model = shared_model(name)
    ref = np.load(model.parent / f"{name}_ref.npz")
    c = compile_model(model, name="net", board=load_board(core))
    samples = [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"]]
    got = run_clang_firmware(model, core, tmp_path, samples)
    want = ref["tflm_outputs"]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g[0].ravel(), w.ravel())
