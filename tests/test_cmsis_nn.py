"""The cmsis-nn backend against the user's CMSIS-NN (CMSIS_NN_PATH; tested with v7.0.0).

CMSIS-NN is the user's library and is never vendored: without CMSIS_NN_PATH every test here skips.
With it:
a. every op case of tests/models/ops.py (QDQ, and QOperator where the case has one) and the
   CMSIS-specific cases below, each compiled with BOTH backends into ONE firmware per core
   (cortex-m0plus: pure C, m4 and m7: DSP, m55: MVE; see tests/harness/qemu.py), run once in QEMU:
   every case's cmsis-nn output equals the golden model and the portable backend's output;
b. every shared model (../shared/models), on the host and in QEMU on the same cores, bit-exact
   with the golden model and with TFLM's reference outputs;
c. the MVE pitfalls on cortex-m55: fully connected kernel sums are a const array computed at build
   time, and depthwise convolutions with C % 4 != 0 read zero-padded per-channel arrays;
d. the transpose / concat / pad conversions: the CMSIS-NN calls are emitted, and the portable
   kernel stays (reported as a fallback) where CMSIS-NN cannot express the op;
e. the builds (bundle Makefile, CMakeLists, SConstruct; CMSIS-NN from source or a prebuilt
   library), the detected CMSIS-NN version in the bundle, and the scratch check once in
   <name>_init().
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from emitter.backends.cmsis_nn import Converter
from emitter.backends.cmsis_nn import sources as cmsis_sources
from emitter.boards import load_board
from emitter.calls import ConstArg, IntArg, Prepared, TensorArg, TensorListArg
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.kernels.common import pad_rank
from emitter.kernels.mcu_concat_s8 import concat_plan, mcu_concat_s8
from emitter.kernels.mcu_pad_s8 import pad_axes
from emitter.kernels.mcu_transpose_s8 import TransposeParams, mcu_transpose_s8
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_verify
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, STRICT, int8_inputs, shared_model
from tests.harness.cmsis import CMSIS_NN
from tests.harness.qemu import MergedCase, MergedRun, run_merged
from tests.models.ops import CASES, IR_VERSION, OpCase, _const, _conv_w, _fc_w, _i64, case_model
from tests.models.tiny import tiny_qdq_conv

CMSIS = CMSIS_NN
MISSING = missing_tools()
pytestmark = pytest.mark.skipif(
    CMSIS is None, reason="CMSIS_NN_PATH is not set: CMSIS-NN is the user's library; point "
    "CMSIS_NN_PATH at a CMSIS-NN v7.0.0 checkout to run these")
needs_models = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
needs_qemu = pytest.mark.skipif(bool(MISSING), reason="the QEMU tier needs missing tools: " + "; ".join(MISSING))
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")  # pure C, DSP, DSP, MVE


# ---- b. shared models ------------------------------------------------------------------------

def emit(name: str, board: str, out: Path, choice: str = "cmsis"):
    """The bundle with CMSIS-NN on every layer it takes (choice "cmsis"), or mcugen's default
    per-layer choice ("fastest": portable where measured faster, emitter/backends/kernel_choice.py)."""
    b = load_board(board)
    c = compile_model(shared_model(name), name="net", backend="cmsis-nn", board=b, cmsis_path=CMSIS,
                      cmsis_choice=choice)
    write_bundle(render_bundle(c, " ".join(b.cflags), b.name), out)
    return c, b


@needs_models
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_cmsis_calls_replace_portable_kernels(name, tmp_path):
    c, _ = emit(name, "cortex-m55", tmp_path / "b")
    kernels = {p.kernel for p in c.prepared if p.kernel}
    assert not any(k in kernels for k in ("mcu_conv2d_s8", "mcu_depthwise_conv2d_s8", "mcu_softmax_s8"))
    assert any(k.startswith("arm_") for k in kernels)
    text = (tmp_path / "b" / "net.c").read_text()
    assert '#include "arm_nnfunctions.h"' in text
    assert "ERR_SCRATCH" in text  # net_init() checks every call's scratch against the target's
    assert c.plan.arena_size >= c.plan.lower_bound


# The default tier: one of each kind of core and choice on two models; every other pair in the slow
# tier (bash scripts/test.sh -m slow), since each firmware compiles the whole CMSIS-NN.
BIT_EXACT_DEFAULT = {("mlperf_kws_dscnn", "cortex-m4", "fastest"), ("mlperf_kws_dscnn", "cortex-m55", "fastest"),
                     ("tflm_micro_speech", "cortex-m0plus", "cmsis"), ("mlperf_ic_resnet8", "cortex-m7", "cmsis")}


@needs_models
@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("name,board,choice", [
    pytest.param(n, b, ch, marks=() if (n, b, ch) in BIT_EXACT_DEFAULT else pytest.mark.slow)
    for n in MODEL_NAMES for b, ch in [(b, "cmsis") for b in CORES]
    + [(b, "fastest") for b in CORES if b != "cortex-m0plus"]])
def test_cmsis_bit_exact_host_and_qemu(name, board, choice, tmp_path):
    """CMSIS-NN on every layer it takes, and the default mix with mcugen's faster kernels (the
    same as "cmsis" on the pure-C core): bit-exact with TFLM on the host and in QEMU."""
    c, b = emit(name, board, tmp_path / "b", choice)
    ref = SHARED_MODELS / name / f"{name}_ref.npz"
    rep = run_verify(c, tmp_path / "b", b, shared_model(name), str(ref), 0, qemu=True, work=tmp_path / "w")
    assert rep.ok, rep.text()
    want = np.load(ref)["tflm_outputs"]
    got = np.stack([o[0] for o in rep.outputs["qemu"]])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.stack([g[0] for g in rep.outputs["golden"]]), want)


@needs_models
def test_version_of_the_users_cmsis_nn_in_bundle(tmp_path):
    """The API table of cmsis_version.py matches the real headers; the detected version reaches
    the bundle's header, README and report.json."""
    from emitter.backends.cmsis_version import api_changes, detect

    assert api_changes(CMSIS_NN / "Include") == []
    v = detect(CMSIS_NN)
    c, _ = emit("tflm_hello_world", "cortex-m4", tmp_path / "b")
    assert c.cmsis_version == v
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["cmsis_nn_version"] == {"release": v.release, "revision": v.revision_text, "tested": v.tested}
    for name in ("net.h", "README.md", "net.c"):
        assert f"CMSIS-NN {v}" in (tmp_path / "b" / name).read_text(), name


# ---- builds: CMSIS-NN compiled from CMSIS_NN_PATH, or a prebuilt library the user names -----------

needs_arm_gcc = pytest.mark.skipif(bool(missing_tools(("arm-none-eabi-gcc",))), reason="arm-none-eabi-gcc missing")
FIRMWARE_MAIN = """#include "net.h"
int main(void)
{
    static int8_t in[NET_INPUT_SIZE], out[NET_OUTPUT_SIZE];
    return net_init() != NET_OK ? 1 : net_run(in, out);
}
"""


def link_firmware(board, objects: list[Path], out: Path, include: Path) -> set[str]:
    """Compile FIRMWARE_MAIN and link it with `objects` (nosys); the symbols the ELF defines."""
    (out.parent / "main.c").write_text(FIRMWARE_MAIN)
    res = subprocess.run(["arm-none-eabi-gcc", *board.cflags, "-O2", f"-I{include}", "--specs=nosys.specs",
                          "-Wl,--gc-sections", str(out.parent / "main.c"), *map(str, objects), "-lm", "-o", str(out)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    nm = subprocess.run(["arm-none-eabi-nm", "--defined-only", str(out)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in nm.stdout.splitlines()}


@pytest.fixture(scope="module")
def arm_cmsis_lib(tmp_path_factory) -> Path:
    """The user's CMSIS-NN built once with arm-none-eabi-gcc for cortex-m4 at -Ofast (outside the repo)."""
    if missing_tools(("arm-none-eabi-gcc",)):
        pytest.skip("arm-none-eabi-gcc missing")
    root = CMSIS_NN
    assert root is not None
    work = tmp_path_factory.mktemp("arm_cmsis")
    flags = [*load_board("cortex-m4").cflags, "-Ofast", "-ffunction-sections", "-fdata-sections"]
    sources = [str(p) for p in cmsis_sources(root)]
    for k in range(0, len(sources), 16):
        res = subprocess.run(["arm-none-eabi-gcc", *flags, f"-I{root / 'Include'}", "-c", *sources[k:k + 16]],
                             cwd=work, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr[-3000:]
    subprocess.run(["arm-none-eabi-ar", "rcs", "libcmsis-nn.a", *sorted(p.name for p in work.glob("*.o"))],
                   cwd=work, check=True)
    return work / "libcmsis-nn.a"


@needs_models
@needs_arm_gcc
def test_cmsis_make_builds_library(tmp_path):
    """Default: CMSIS-NN compiled from CMSIS_NN_PATH into libnet.a at -Ofast (CMSIS_OPT overrides)."""
    _, b = emit("mlperf_kws_dscnn", "cortex-m4", tmp_path / "b")
    res = subprocess.run(["make", "-C", str(tmp_path / "b"), "-j2", "CC=arm-none-eabi-gcc",
                          f"CMSIS_NN_PATH={str(CMSIS_NN)}"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    cmsis_compiles = [line for line in res.stdout.splitlines() if "/Source/" in line and " -c " in line]
    assert cmsis_compiles and all("-Ofast" in line and "-mcpu=cortex-m4" in line for line in cmsis_compiles)
    assert not any(suffix in line for line in cmsis_compiles for suffix in ("_f16.c", "_f32.c"))
    symbols = link_firmware(b, [tmp_path / "b" / "libnet.a"], tmp_path / "fw.elf", tmp_path / "b")
    assert {"net_init", "net_run", "arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8"} <= symbols
    dry = subprocess.run(["make", "-C", str(tmp_path / "b"), "-n", "-B", "CC=arm-none-eabi-gcc", "CMSIS_OPT=-O2",
                          f"CMSIS_NN_PATH={str(CMSIS_NN)}"], capture_output=True, text=True, check=True)
    assert all("-Ofast" not in line and " -O2 " in line for line in dry.stdout.splitlines() if "/Source/" in line)


@needs_models
def test_cmsis_make_links_prebuilt_library(tmp_path, arm_cmsis_lib):
    """make CMSIS_NN_LIB=FILE: libnet.a holds the model only; the firmware links it with FILE."""
    _, b = emit("mlperf_kws_dscnn", "cortex-m4", tmp_path / "b")
    res = subprocess.run(["make", "-C", str(tmp_path / "b"), "-j2", "CC=arm-none-eabi-gcc",
                          f"CMSIS_NN_PATH={str(CMSIS_NN)}", f"CMSIS_NN_LIB={arm_cmsis_lib}"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "/Source/" not in res.stdout  # nothing of CMSIS-NN compiled
    nm = subprocess.run(["arm-none-eabi-nm", str(tmp_path / "b" / "libnet.a")], capture_output=True, text=True,
                        check=True).stdout
    assert " U arm_convolve_wrapper_s8" in nm and " T arm_" not in nm
    symbols = link_firmware(b, [tmp_path / "b" / "libnet.a", arm_cmsis_lib], tmp_path / "fw.elf", tmp_path / "b")
    assert {"net_init", "arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8_get_buffer_size"} <= symbols
    bad = subprocess.run(["make", "-C", str(tmp_path / "b"), "CC=arm-none-eabi-gcc", "CMSIS_NN_LIB=/no/such.a",
                          f"CMSIS_NN_PATH={str(CMSIS_NN)}"], capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "CMSIS_NN_LIB=/no/such.a does not exist" in bad.stderr


CMAKE_APP = """cmake_minimum_required(VERSION 3.15.6)
project(app C)
if(CMSIS_NN_SUBDIR)
    add_subdirectory(${CMSIS_NN_SUBDIR} cmsis_nn_build)  # defines the target cmsis-nn
endif()
add_subdirectory(${BUNDLE} bundle)
add_executable(app main.c)
target_link_libraries(app PRIVATE net)
"""
CMAKE_TOOLCHAIN = """set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "{flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nosys.specs -Wl,--gc-sections")
"""


@needs_models
@pytest.mark.skipif(bool(missing_tools(("cmake", "arm-none-eabi-gcc"))), reason="cmake or arm-none-eabi-gcc missing")
@pytest.mark.parametrize("mode", ["source", "library-file", "cmake-target"])
def test_cmsis_cmake_builds_and_links(mode, tmp_path, arm_cmsis_lib):
    """The bundle's CMakeLists.txt in a firmware project (arm-none-eabi toolchain file): CMSIS-NN
    from CMSIS_NN_PATH at -Ofast, or -DCMSIS_NN_LIB=<file>, or -DCMSIS_NN_LIB=cmsis-nn (CMSIS-NN's
    own CMake target); the firmware links in every case."""
    if mode == "cmake-target" and not (Path(str(CMSIS_NN)) / "CMakeLists.txt").is_file():
        pytest.skip(f"{CMSIS_NN} has no CMakeLists.txt (Include/ and Source/ only): CMSIS-NN's own CMake "
                    "target needs a full CMSIS-NN checkout")
    _, b = emit("tflm_hello_world", "cortex-m4", tmp_path / "b")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "CMakeLists.txt").write_text(CMAKE_APP)
    (tmp_path / "app" / "main.c").write_text(FIRMWARE_MAIN)
    (tmp_path / "arm.cmake").write_text(CMAKE_TOOLCHAIN.format(flags=" ".join(b.cflags)))
    root = str(CMSIS_NN)
    options = {"source": [f"-DCMSIS_NN_PATH={root}"],
               "library-file": [f"-DCMSIS_NN_PATH={root}", f"-DCMSIS_NN_LIB={arm_cmsis_lib}"],
               "cmake-target": ["-DCMSIS_NN_PATH=", f"-DCMSIS_NN_SUBDIR={root}", "-DCMSIS_NN_LIB=cmsis-nn"]}[mode]
    build = tmp_path / "build"
    res = subprocess.run(["cmake", "-S", str(tmp_path / "app"), "-B", str(build), f"-DBUNDLE={tmp_path / 'b'}",
                          f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / 'arm.cmake'}", *options],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    res = subprocess.run(["cmake", "--build", str(build), "-j2", "-v"], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    cmsis_compiles = [line for line in res.stdout.splitlines() if "/Source/" in line and " -c " in line]
    if mode == "library-file":
        assert not cmsis_compiles
    else:
        assert cmsis_compiles and all("-Ofast" in line for line in cmsis_compiles)
    if mode == "source":
        assert all("-mcpu=cortex-m4" in line for line in cmsis_compiles)
    nm = subprocess.run(["arm-none-eabi-nm", "--defined-only", str(build / "app")], capture_output=True, text=True,
                        check=True).stdout
    assert " T net_init" in nm and " T arm_fully_connected_s8" in nm


@needs_models
@pytest.mark.qemu
@needs_qemu
def test_scons_prebuilt_library_bit_exact_in_qemu(tmp_path, arm_cmsis_lib):
    """SConstruct cmsis_nn=DIR cmsis_nn_lib=FILE links the prebuilt library (nothing of CMSIS-NN
    compiled); the firmware is bit-exact with TFLM's reference outputs in QEMU."""
    from emitter.target.firmware import build_firmware
    from emitter.target.qemu import run_qemu
    from emitter.verify.harness import pack, unpack, write_glue
    from emitter.verify.run import load_inputs

    name = "mlperf_kws_dscnn"
    c, b = emit(name, "cortex-m4", tmp_path / "b")
    ref = SHARED_MODELS / name / f"{name}_ref.npz"
    samples = load_inputs(c, str(ref), 0)
    write_glue(c, tmp_path / "glue")
    fw = build_firmware(tmp_path / "b", tmp_path / "glue", b, tmp_path / "fw", cmsis_nn=CMSIS_NN,
                        cmsis_nn_lib=arm_cmsis_lib, jobs=2)
    assert not (tmp_path / "fw" / "cmsis_nn").exists()
    assert f"{arm_cmsis_lib}(arm_convolve_wrapper_s8.o)" in fw.map_file.read_text()
    assert fw.model_flash > 0
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "input.bin").write_bytes(pack(samples))
    run_qemu(fw.elf, b, tmp_path / "run", count_instructions=False)
    got = np.stack([o[0] for o in unpack(c, (tmp_path / "run" / "output.bin").read_bytes(), len(samples))])
    np.testing.assert_array_equal(got, np.load(ref)["tflm_outputs"][:len(samples)].reshape(got.shape))


@needs_models
@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("name,board", [
    pytest.param(n, b, marks=() if (n, b) == ("mlperf_kws_dscnn", "cortex-m7") else pytest.mark.slow)
    for n in MODEL_NAMES for b in ("cortex-m4", "cortex-m7", "cortex-m55")])
def test_bundle_makefile_build_bit_exact_with_tflm_in_qemu(name, board, tmp_path):
    """The user's path: the bundle's own Makefile (`make CC=arm-none-eabi-gcc CMSIS_NN_PATH=...`)
    builds libnet.a, model and CMSIS-NN together at the board's flags; the harness links that
    library (SConstruct bundle_lib=) and runs TFLM's reference inputs in QEMU: bit-exact with
    tflm_outputs, mcugen's default kernel choice."""
    from emitter.target.firmware import build_firmware
    from emitter.target.qemu import run_qemu
    from emitter.verify.harness import pack, unpack, write_glue
    from emitter.verify.run import load_inputs

    c, b = emit(name, board, tmp_path / "b", "fastest")
    res = subprocess.run(["make", "-C", str(tmp_path / "b"), f"-j{os.cpu_count() or 2}", "CC=arm-none-eabi-gcc",
                          f"CMSIS_NN_PATH={CMSIS}"], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    ref = SHARED_MODELS / name / f"{name}_ref.npz"
    samples = load_inputs(c, str(ref), 0)
    write_glue(c, tmp_path / "glue")
    fw = build_firmware(tmp_path / "b", tmp_path / "glue", b, tmp_path / "fw", bundle_lib=tmp_path / "b" / "libnet.a")
    assert not (tmp_path / "fw" / "obj" / "bundle").exists()  # nothing of the bundle compiled by SCons
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "input.bin").write_bytes(pack(samples))
    run_qemu(fw.elf, b, tmp_path / "run", count_instructions=False)
    got = np.stack([o[0] for o in unpack(c, (tmp_path / "run" / "output.bin").read_bytes(), len(samples))])
    np.testing.assert_array_equal(got, np.load(ref)["tflm_outputs"][:len(samples)].reshape(got.shape))


# ---- scratch check once, in <name>_init() -------------------------------------------------------

INIT_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "net.h"

int layers_run = 0; /* counted by NET_AFTER_LAYER (see hook.h) */

int main(void)
{
    static int8_t in[NET_INPUT_SIZE], out[NET_OUTPUT_SIZE];
    static uint8_t arena_before[sizeof(net_arena)];
    size_t i;
    int run1, run2, init, untouched;

    for (i = 0; i < sizeof(in); ++i) in[i] = (int8_t)(i * 7u);
    memset(out, 0x5a, sizeof(out));
    memset(net_arena, 0xa5, sizeof(net_arena));
    memcpy(arena_before, net_arena, sizeof(net_arena));
    run1 = net_run(in, out); /* checks the scratch itself on first use */
    run2 = net_run(in, out);
    init = net_init();
    untouched = memcmp(arena_before, net_arena, sizeof(net_arena)) == 0;
    for (i = 0; i < sizeof(out); ++i) untouched = untouched && out[i] == 0x5a;
    printf("run=%d,%d init=%d scratch_layer=%d layers_run=%d untouched=%d\n",
           run1, run2, init, net_scratch_layer, layers_run, untouched);
    return 0;
}
"""
INIT_HOOK = "extern int layers_run;\n#define NET_AFTER_LAYER(index, output, bytes) (++layers_run)\n"


@pytest.fixture(scope="module")
def host_cmsis_lib(tmp_path_factory) -> Path:
    """The user's CMSIS-NN compiled once with the host gcc (its plain C path) into libcmsis-nn.a."""
    root = CMSIS_NN
    assert root is not None
    work = tmp_path_factory.mktemp("host_cmsis")
    sources = [str(p) for p in cmsis_sources(root)]
    for k in range(0, len(sources), 16):
        res = subprocess.run(["gcc", "-O1", "-w", f"-I{root / 'Include'}", "-c", *sources[k:k + 16]],
                             cwd=work, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr[-3000:]
    subprocess.run(["ar", "rcs", "libcmsis-nn.a", *sorted(p.name for p in work.glob("*.o"))],
                   cwd=work, check=True)
    return work / "libcmsis-nn.a"


@pytest.mark.parametrize("undersized", [False, True], ids=["planned", "undersized"])
def test_init_checks_scratch_once(undersized, tmp_path, monkeypatch, host_cmsis_lib):
    """The plan gives a kernel less scratch than the linked CMSIS-NN asks for: <name>_init() and
    every <name>_run() return NET_ERR_SCRATCH naming the layer, and no kernel runs."""
    from emitter.backends import cmsis_nn

    real = cmsis_nn.ask_sizes
    if undersized:  # the sizer "says" 4 bytes less than CMSIS-NN needs for every kernel with scratch
        monkeypatch.setattr(cmsis_nn, "ask_sizes", lambda path, q: [max(s - 4, 0) for s in real(path, q)])
    model = tmp_path / "tiny.onnx"
    onnx.save(tiny_qdq_conv(), model)
    b = load_board("cortex-m0plus")  # plain C code path: the same sizes as the host build of CMSIS-NN
    c = compile_model(model, name="net", backend="cmsis-nn", board=b, cmsis_path=CMSIS_NN)
    conv = next(k for k, p in enumerate(c.prepared) if p.kernel == "arm_convolve_wrapper_s8")
    assert c.prepared[conv].scratch > 0 or undersized
    bundle = tmp_path / "b"
    write_bundle(render_bundle(c, " ".join(b.cflags), b.name), bundle)
    text = (bundle / "net.c").read_text()
    run_body = text[text.index("int net_run_multi("):]
    assert "get_buffer_size" in text[:text.index("int net_run_multi(")]
    assert "get_buffer_size" not in run_body  # no per-call check on the hot path
    (tmp_path / "main.c").write_text(INIT_MAIN)
    (tmp_path / "hook.h").write_text(INIT_HOOK)
    sources = [str(p) for p in sorted(bundle.glob("*.c")) + sorted(bundle.glob("mcu_runtime/*/*.c"))]
    exe = tmp_path / "init_test"
    res = subprocess.run(["gcc", "-O1", *STRICT, "-include", str(tmp_path / "hook.h"), f"-I{bundle}",
                          f"-I{bundle / 'mcu_runtime' / 'include'}", f"-I{CMSIS_NN / 'Include'}",
                          str(tmp_path / "main.c"), *sources, str(host_cmsis_lib), "-lm", "-o", str(exe)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip()
    kernels = sum(1 for p in c.prepared if p.kernel)
    if undersized:
        assert out == f"run=2,2 init=2 scratch_layer={conv} layers_run=0 untouched=1"
    else:
        assert out == f"run=0,0 init=0 scratch_layer=-1 layers_run={2 * kernels} untouched=0"


# ---- CMSIS-specific op cases (QDQ), run in the merged image with the op-case tables -----------

class SelfConcat(OpCase):
    """Concat of x0 with itself: every input already has the output's scale and zero point."""

    def float_model(self, fmt: str = "qdq") -> onnx.ModelProto:
        shape, axis = list(self.input_shapes[0]), self.attrs["axis"]
        out = [d * 2 if k == axis else d for k, d in enumerate(shape)]
        graph = helper.make_graph([helper.make_node("Concat", ["x0", "x0"], ["y"], name="concat", axis=axis)],
                                  "self_concat", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = IR_VERSION
        return model


FC_SUMS = ("cm_fc_sums-qdq", "cm_fc_sums_pt-qdq")  # input zero point != 0: the sums matter
DW_ODD_C = ("cm_dw_c6-qdq", "cm_dw_c10_m2-qdq")
EXTRA = [  # (case, per-channel weights)
    (OpCase("cm_transpose_3d", "Transpose", ((2, 3, 4),), {"perm": [2, 1, 0]}), True),
    (OpCase("cm_transpose_4d", "Transpose", ((2, 3, 4, 5),), {"perm": [3, 2, 1, 0]}), True),
    (OpCase("cm_transpose_4d_b", "Transpose", ((2, 3, 4, 5),), {"perm": [1, 3, 0, 2]}), True),
    (OpCase("cm_transpose_5d", "Transpose", ((2, 3, 2, 3, 2),), {"perm": [4, 3, 2, 1, 0]},
            note="rank 5: stays portable"), True),
    (OpCase("cm_conv_batch2", "Conv", ((2, 4, 5, 5),), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
            _conv_w(6, 4, 3, 3), note="NCHW <-> NHWC relayouts of rank 3"), True),
    (OpCase("cm_pad_4d", "Pad", ((2, 3, 4, 5),), {"mode": "constant"},
            _const(pads=_i64(1, 0, 2, 1, 0, 2, 1, 1), value=np.float32(0.25))), True),
    (OpCase("cm_pad_5d_fold", "Pad", ((2, 3, 2, 3, 4),), {"mode": "constant"},
            _const(pads=_i64(1, 1, 0, 1, 0, 0, 1, 0, 2, 0)), note="unpadded axes fold: 4-D"), True),
    (OpCase("cm_pad_5d_all", "Pad", ((2, 3, 2, 3, 4),), {"mode": "constant"},
            _const(pads=_i64(1, 1, 1, 1, 1, 0, 0, 0, 0, 0)), note="5 padded axes: stays portable"), True),
    (SelfConcat("cm_concat_shared", "Concat", ((1, 3, 4, 5),), {"axis": 2}), True),
    (OpCase("cm_concat_last", "Concat", ((2, 3, 4), (2, 3, 6)), {"axis": 2}), True),
    (OpCase("cm_concat_big", "Concat", ((2, 2, 100, 200), (2, 2, 100, 200)), {"axis": 1},
            note="80,000-byte output rows: arm_concatenation_s8_y"), True),
    (OpCase("cm_dw_c6", "Conv", ((1, 6, 7, 7),), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 6},
            _conv_w(6, 1, 3, 3)), True),
    (OpCase("cm_dw_c10_m2", "Conv", ((1, 5, 6, 6),),
            {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "group": 5},
            _conv_w(10, 1, 3, 3), note="channel multiplier 2"), True),
    (OpCase("cm_conv_1xn_pad_2_1", "Conv", ((1, 8, 1, 32),),
            {"kernel_shape": [1, 5], "strides": [1, 2], "pads": [0, 2, 0, 2]}, _conv_w(16, 8, 1, 5),
            note="1xN, effective padding left 2 right 1: CMSIS-NN's MVE 1xN path fails, stays portable there"),
     True),
    (OpCase("cm_conv_1xn_pad_1_2", "Conv", ((1, 8, 1, 32),),
            {"kernel_shape": [1, 5], "strides": [1, 2], "pads": [0, 1, 0, 2]}, _conv_w(16, 8, 1, 5),
            note="1xN, padding left 1 right 2: CMSIS-NN's MVE 1xN path reads past the input, stays portable"),
     True),
    (OpCase("cm_conv_1xn_same_s1", "Conv", ((1, 8, 1, 32),),
            {"kernel_shape": [1, 5], "pads": [0, 2, 0, 2]}, _conv_w(16, 8, 1, 5),
            note="1xN, stride 1: arm_convolve_1_x_n_s8 on MVE (less scratch than plain C)"), True),
    (OpCase("cm_conv_1xn_s2_k4", "Conv", ((1, 8, 1, 32),),
            {"kernel_shape": [1, 4], "strides": [1, 2], "pads": [0, 1, 0, 1]}, _conv_w(16, 8, 1, 4),
            note="1xN, stride 2, one padding column each side: arm_convolve_1_x_n_s8 on MVE"), True),
    (OpCase("cm_fc_sums", "Gemm", ((2, 20),), {"transB": 1}, _fc_w((6, 20), 20, 6), input_range=(-0.5, 2.0)),
     True),
    (OpCase("cm_fc_sums_pt", "Gemm", ((2, 20),), {"transB": 1}, _fc_w((6, 20), 20, 6), input_range=(-0.5, 2.0)),
     False),
]
OP_PARAMS = ([(f"{case.id}-{fmt}", case, fmt, True) for cases in CASES.values() for case in cases
              for fmt in ("qdq", "qop") if fmt == "qdq" or case.qop]
             + [(f"{case.id}-qdq", case, "qdq", per_channel) for case, per_channel in EXTRA])
LABELS = [p[0] for p in OP_PARAMS]


@dataclass(frozen=True, eq=False)
class OpModel:
    path: Path
    portable: Compiled
    sample: list[np.ndarray]
    golden: list[np.ndarray]


@pytest.fixture(scope="module")
def op_models(tmp_path_factory) -> dict[str, OpModel | Exception]:
    """Every case quantized once, compiled for the portable backend, one sample and its golden."""
    tmp = tmp_path_factory.mktemp("cmsis_opcases")
    out: dict[str, OpModel | Exception] = {}
    for k, (label, case, fmt, per_channel) in enumerate(OP_PARAMS):
        try:
            path, xs = case_model(case, fmt, tmp, per_channel=per_channel)
            # TFLite numerics: CMSIS-NN's arithmetic (onnxruntime numerics keeps those layers portable)
            c = compile_model(path, name=f"p{k}", numerics="tflite")
        except Exception as exc:  # reported by that case's test
            out[label] = exc
            continue
        sample = int8_inputs(c, xs)
        out[label] = OpModel(path, c, sample, golden_run(c, sample))
    return out


def model(op_models, label: str) -> OpModel:
    m = op_models[label]
    if isinstance(m, Exception):
        raise m
    return m


def cmsis_compile(m: OpModel, core: str, name: str = "net") -> Compiled:
    """CMSIS-NN on every layer it takes (the cases test its calls, not mcugen's kernel choice)."""
    return compile_model(m.path, name=name, backend="cmsis-nn", board=load_board(core), cmsis_path=CMSIS,
                         cmsis_choice="cmsis", numerics="tflite")


def files(c: Compiled, core: str) -> dict[str, str]:
    b = load_board(core)
    return {k: v.decode() for k, v in render_bundle(c, " ".join(b.cflags), b.name).items()}


def kernels(c: Compiled) -> list[str]:
    return [p.kernel for p in c.prepared if p.kernel]


# ---- a. op cases in QEMU: cmsis-nn == golden == portable, one merged image per core -----------

@dataclass
class CoreRun:
    compiled: dict[str, Compiled | Exception]  # label -> its cmsis-nn compilation
    result: MergedRun
    index: dict[str, int]  # merged case label -> position in result.outputs


@pytest.fixture(scope="module")
def cmsis_runs(op_models, tmp_path_factory):
    """Per core, ONE image with every case twice: `label` (portable) and `label@cmsis`."""
    cache: dict[str, CoreRun] = {}

    def get(core: str) -> CoreRun:
        if core not in cache:
            compiled: dict[str, Compiled | Exception] = {}
            merged = []
            for k, label in enumerate(LABELS):
                m = op_models[label]
                if isinstance(m, Exception):
                    continue
                try:
                    compiled[label] = c = cmsis_compile(m, core, f"c{k}")
                except Exception as exc:  # reported by that case's test
                    compiled[label] = exc
                    continue
                portable = compile_model(m.portable.model.path,  # for the core: scratch fits its paths
                                         replace(m.portable.options, board=load_board(core)))
                merged += [MergedCase(label, portable, m.sample), MergedCase(f"{label}@cmsis", c, m.sample)]
            result = run_merged(merged, load_board(core), tmp_path_factory.mktemp(f"cmsis_{core}"),
                                cmsis_nn=CMSIS, werror=True)
            cache[core] = CoreRun(compiled, result, {mc.label: i for i, mc in enumerate(merged)})
        return cache[core]
    return get


def differs(got: np.ndarray, want: np.ndarray) -> str | None:
    d = got.astype(np.int32) - want.astype(np.int32)
    return f"{int((d != 0).sum())}/{d.size} elements differ, max |diff| {int(np.abs(d).max())}" if d.any() else None


@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("label", LABELS)
def test_op_case_cmsis_bit_exact_in_qemu(label, core, op_models, cmsis_runs):
    m = model(op_models, label)
    run = cmsis_runs(core)
    c = run.compiled[label]
    if isinstance(c, Exception):
        raise c
    for lab in (label, f"{label}@cmsis"):
        assert lab not in run.result.failures, run.result.failures[lab]
    portable, cmsis = (run.result.outputs[run.index[lab]] for lab in (label, f"{label}@cmsis"))
    assert portable is not None and cmsis is not None
    for j, (q, p, g) in enumerate(zip(cmsis, portable, m.golden, strict=False)):
        for what, want in (("the golden model", g), ("the portable backend", p)):
            why = differs(q, want)
            assert why is None, f"{label} cmsis-nn on {core}: output {j} differs from {what}: {why}"


@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("core", CORES)
def test_op_cases_cmsis_image_ran_cleanly(core, cmsis_runs):
    run = cmsis_runs(core)
    assert run.result.run.exit_code == 0, (
        f"merged cmsis-nn op-case image on {core} exited {run.result.run.exit_code}"
        + (f", faulting in {run.result.crashed_in}" if run.result.crashed_in else "")
        + f"; failing cases: {sorted(run.result.failures)}")  # the bundles were built with -Werror


# ---- c. MVE pitfalls on cortex-m55 -------------------------------------------------------------

def c_array(text: str, ident: str) -> tuple[str, np.ndarray]:
    """(C type, values) of `const <type> <ident>[n] ... = {...};` in a generated weights.c."""
    match = re.search(rf"const (\w+) {ident}\[(\d+)\][^=]*= \{{([^}}]*)\}};", text)
    assert match is not None, f"{ident} is not a const array in the generated code"
    values = np.array([int(v) for v in match.group(3).replace(",", " ").split()], np.int64)
    assert values.size == int(match.group(2))
    return match.group(1), values


@pytest.mark.parametrize("label", FC_SUMS)
def test_mve_fc_kernel_sums_are_a_build_time_const_array(label, op_models):
    m = model(op_models, label)
    c = cmsis_compile(m, "cortex-m55")
    k = next(i for i, p in enumerate(c.prepared) if p.kernel.startswith("arm_fully_connected"))
    portable = m.portable.prepared[k]
    assert portable.kernel == "mcu_fully_connected_s8"
    fc, w, s = portable.params, portable.operands["weights"], portable.operands["kernel_sums"]
    assert isinstance(w, ConstArg) and isinstance(s, ConstArg)
    assert fc.q.input_offset != 0, "the case must have an input zero point for the sums to matter"
    want = s.data  # the portable kernel's: bias + input offset x row sums (tests/kernels/test_fully_connected.py)
    out = files(c, "cortex-m55")
    ctype, sums = c_array(out["net_weights.c"], f"net_l{k}_kernel_sums")
    assert ctype == "int32_t"
    np.testing.assert_array_equal(sums, want)
    assert f".buf = (void *)net_l{k}_kernel_sums," in out["net.c"]
    assert f".size = {4 * fc.out_features}," in out["net.c"]
    assert "arm_vector_sum_s8" not in out["net.c"]  # nothing computed at run time
    want_kernel = "arm_fully_connected_per_channel_s8" if fc.per_channel else "arm_fully_connected_s8"
    assert c.prepared[k].kernel == want_kernel


@pytest.mark.parametrize("label", DW_ODD_C)
def test_mve_depthwise_odd_channels_gets_padded_arrays(label, op_models):
    m = model(op_models, label)
    for core, pad in (("cortex-m55", 4), ("cortex-m4", 0)):  # only MVE reads past the end
        c = cmsis_compile(m, core)
        k = next(i for i, p in enumerate(c.prepared) if p.kernel == "arm_depthwise_conv_wrapper_s8")
        ch = m.portable.prepared[k].params.output.c
        kh, kw = m.portable.prepared[k].params.filter.h, m.portable.prepared[k].params.filter.w
        assert ch % 4 != 0
        weights = files(c, core)["net_weights.c"]
        for suffix, real in (("bias", ch), ("multiplier", ch), ("shift", ch), ("filter", kh * kw * ch)):
            _, values = c_array(weights, f"net_l{k}_{suffix}")
            extra = pad * 4 if suffix == "filter" else pad
            assert values.size == real + extra, f"{label} on {core}: {suffix} has {values.size} entries"
            assert not values[real:].any(), f"{label} on {core}: {suffix} padding is not zero"


@pytest.mark.qemu
@needs_qemu
@pytest.mark.parametrize("label", FC_SUMS + DW_ODD_C)
def test_mve_pitfall_cases_bit_exact_on_m55(label, op_models, cmsis_runs):
    m = model(op_models, label)
    run = cmsis_runs("cortex-m55")
    got = run.result.outputs[run.index[f"{label}@cmsis"]]
    assert got is not None, run.result.failures.get(f"{label}@cmsis")
    for q, g in zip(got, m.golden, strict=False):
        assert differs(q, g) is None, f"{label} on cortex-m55: {differs(q, g)}"


def test_mve_1xn_paddings_cmsis_gets_wrong_stay_portable(op_models):
    """CMSIS-NN's MVE arm_convolve_1_x_n_s8 fails (left 2, right 1) or reads past the input (left 1,
    right 2, stride 2): on cortex-m55 those layers stay portable, saying why; the paddings it gets
    right, and every padding on the other cores, are CMSIS-NN calls (all bit-exact in QEMU above)."""
    why = {"cm_conv_1xn_pad_2_1": "returns ARM_CMSIS_NN_FAILURE for this padding (padding left 2, right 1)",
           "cm_conv_1xn_pad_1_2": "reads past the input for this padding (padding left 1, right 2)"}
    for case, reason in why.items():
        m = model(op_models, f"{case}-qdq")
        c = cmsis_compile(m, "cortex-m55")
        assert "arm_convolve_wrapper_s8" not in kernels(c)
        assert [w for _, kernel, w in c.portable_layers if kernel == "mcu_conv2d_s8"] == [
            "CMSIS-NN's MVE 1xN convolution " + reason]
        assert "arm_convolve_wrapper_s8" in kernels(cmsis_compile(m, "cortex-m4"))
    for case in ("cm_conv_1xn_same_s1", "cm_conv_1xn_s2_k4"):
        assert "arm_convolve_wrapper_s8" in kernels(cmsis_compile(model(op_models, f"{case}-qdq"), "cortex-m55"))


@needs_qemu
@pytest.mark.qemu
def test_host_check_of_an_mve_bundle_plans_plain_c_scratch(op_models, tmp_path):
    """The host build runs CMSIS-NN's plain C path, which needs more scratch here (im2col) than
    the MVE 1xN kernel planned for cortex-m55: verify runs the host twin (same kernels, scratch
    sized for plain C) and the board's bundle in QEMU, both bit-exact."""
    from emitter.verify.run import host_twin

    m = model(op_models, "cm_conv_1xn_same_s1-qdq")
    b = load_board("cortex-m55")
    c = cmsis_compile(m, "cortex-m55")
    twin, plain = host_twin(c), cmsis_compile(m, "cortex-m0plus")
    assert twin is not None and host_twin(plain) is None and kernels(twin) == kernels(c)
    assert [p.scratch for p in twin.prepared] == [p.scratch for p in plain.prepared]
    conv = kernels(c).index("arm_convolve_wrapper_s8")
    assert twin.prepared[conv].scratch > c.prepared[conv].scratch
    write_bundle(render_bundle(c, " ".join(b.cflags), b.name), tmp_path / "b")
    rep = run_verify(c, tmp_path / "b", b, m.path, None, 3, qemu=True, work=tmp_path / "w")
    assert rep.ok, rep.text()


# ---- d. transpose / concat / pad conversions ---------------------------------------------------

@pytest.mark.parametrize("label,ranks", [("transpose_2d-qdq", [2]), ("cm_transpose_3d-qdq", [3]),
                                         ("cm_transpose_4d-qdq", [4]), ("cm_transpose_4d_b-qdq", [4]),
                                         ("cm_conv_batch2-qdq", [3, 3])])
@pytest.mark.parametrize("core", ["cortex-m0plus", "cortex-m55"])
def test_transpose_becomes_arm_transpose_s8(label, ranks, core, op_models):
    c = cmsis_compile(model(op_models, label), core)
    assert "mcu_transpose_s8" not in kernels(c) and "mcu_transpose_s8" not in c.fallbacks
    text = files(c, core)["net.c"]
    assert text.count("arm_transpose_s8(") == len(ranks)
    assert re.findall(r"\.num_dims = (\d+),", text) == [str(r) for r in ranks]
    assert "static const cmsis_nn_transpose_params" in text


def test_transpose_of_rank_5_stays_portable(op_models):
    c = cmsis_compile(model(op_models, "cm_transpose_5d-qdq"), "cortex-m4")
    assert kernels(c) == ["mcu_transpose_s8"]
    assert c.fallbacks == ("mcu_transpose_s8",)
    assert json.loads(files(c, "cortex-m4")["report.json"])["portable_fallbacks"] == ["mcu_transpose_s8"]


def relayout(shape: tuple[int, ...], perm: tuple[int, ...]) -> Prepared:
    p = TransposeParams(len(shape), pad_rank(shape), pad_rank(perm))
    return Prepared("mcu_transpose_s8", p, {"input": TensorArg("x"), "output": TensorArg("y")},
                    lambda env: mcu_transpose_s8(p, env["x"].reshape(shape)).ravel())


@pytest.mark.parametrize("shape,perm,c_ok,mve_ok,num_dims", [
    ((4, 9000), (1, 0), True, True, 2),  # 7 * 9000 < 65536
    ((4, 20000), (1, 0), True, False, 2),  # MVE gathers at uint16 offsets up to 7 * columns
    ((70000, 2), (1, 0), False, False, 2),  # uint16 rows
    ((2, 3, 4, 5), (0, 1, 3, 2), True, True, 3),  # squeezed: never the MVE 4-D (0, 1, ...) path
    ((2, 1, 3), (2, 1, 0), True, True, 2),
    ((2, 3, 4, 5, 6), (4, 3, 2, 1, 0), False, False, 5),
])
def test_transpose_limits(shape, perm, c_ok, mve_ok, num_dims):
    for core, ok in (("cortex-m0plus", c_ok), ("cortex-m55", mve_ok)):
        assert CMSIS is not None
        p, _ = Converter(CMSIS, load_board(core)).convert(relayout(shape, perm))
        assert p.kernel == ("arm_transpose_s8" if ok else "mcu_transpose_s8"), (shape, perm, core)
        if ok:
            assert p.args[-1].fields["num_dims"] == num_dims


@pytest.mark.parametrize("outer,chunks,want", [
    (16, [4, 8], ("x", (), [4, 8], (16, 1, 1))),  # NHWC channel concat
    (1, [64, 128], ("x", (), [64, 128], (1, 1, 1))),
    (2, [40000, 40000], ("y", (40000,), [1, 1], (2, 1))),  # output rows > uint16: x unit 40000
    (70000, [2, 3], ("x", (), [2, 3], (35000, 2, 1))),  # outer split over y, z, w
    (4, [140000, 70000], ("z", (35000, 2), [2, 1], (4,))),
    (3, [65537, 65537 * 2], None),  # 65537 is prime: no uint16 dims hold a chunk
    (65537, [1, 1], None),  # nor the outer rows
])
def test_concat_plan(outer, chunks, want):
    assert concat_plan(outer, chunks) == want


def test_concat_one_call_per_input(op_models):
    c = cmsis_compile(model(op_models, "concat_3-qdq"), "cortex-m7")
    p = next(p for p in c.prepared if p.kernel == "arm_concatenation_s8_x")
    assert len(p.then) == 2 and {q.kernel for q in p.then} == {"arm_concatenation_s8_x"}
    text = files(c, "cortex-m7")["net.c"]
    calls = re.findall(r"arm_concatenation_s8_x\((.*)\);", text)
    assert len(calls) == 3
    assert [int(call.split(", ")[-1]) for call in calls] == [0, 32, 96]  # offsets along x
    assert c.fallbacks == ("mcu_requantize_s8",)  # inputs with other scales: requantized first


def test_concat_of_shared_scale_needs_no_requantize(op_models):
    c = cmsis_compile(model(op_models, "cm_concat_shared-qdq"), "cortex-m55")
    assert [n.op for n in c.graph.nodes if n.op != "transpose"] == ["concat"]
    assert kernels(c) == ["arm_concatenation_s8_x"] and c.fallbacks == ()


def test_concat_big_rows_use_y_variant(op_models):
    c = cmsis_compile(model(op_models, "cm_concat_big-qdq"), "cortex-m0plus")
    assert "arm_concatenation_s8_y" in kernels(c)
    assert files(c, "cortex-m0plus")["net.c"].count("arm_concatenation_s8_y(") == 2


def test_concat_falls_back_when_no_uint16_dims_fit():
    chunks, outer = [65537, 65537 * 2], 3
    names = ("a", "b")
    p = Prepared("mcu_concat_s8", None, {"num_inputs": IntArg(2), "inputs": TensorListArg(names),
                                         "chunk": ConstArg("chunk", np.array(chunks, np.int32)), "outer": IntArg(outer),
                                         "output": TensorArg("y")},
                 lambda env: mcu_concat_s8([env[n] for n in names], chunks, outer))
    assert CMSIS is not None
    out, _ = Converter(CMSIS, load_board("cortex-m4")).convert(p)
    assert out is p


@pytest.mark.parametrize("label,core", [("cm_pad_4d-qdq", "cortex-m4"), ("cm_pad_5d_fold-qdq", "cortex-m55"),
                                        ("pad_const_asym_value-qdq", "cortex-m0plus"),
                                        ("pad_const_hw-qop", "cortex-m55")])
def test_pad_becomes_arm_pad_s8(label, core, op_models):
    c = cmsis_compile(model(op_models, label), core)
    assert "arm_pad_s8" in kernels(c) and "mcu_pad_s8" not in c.fallbacks
    text = files(c, core)["net.c"]
    assert text.count("arm_pad_s8(") == 1 and "cmsis_nn_dims" in text and "pre_pad" in text


def test_pad_of_five_padded_axes_stays_portable(op_models):
    c = cmsis_compile(model(op_models, "cm_pad_5d_all-qdq"), "cortex-m55")
    assert kernels(c) == ["mcu_pad_s8"] and c.fallbacks == ("mcu_pad_s8",)


@pytest.mark.parametrize("shape,before,after,want", [
    ((1, 8, 8, 4), (0, 1, 1, 0), (0, 1, 1, 0), [(1, 0, 0), (8, 1, 1), (8, 1, 1), (4, 0, 0)]),
    ((5,), (2,), (1,), [(1, 0, 0), (1, 0, 0), (1, 0, 0), (5, 2, 1)]),
    ((2, 3, 4, 5, 6, 7), (0, 1, 0, 0, 1, 0), (0, 0, 0, 0, 1, 0), [(2, 0, 0), (3, 1, 0), (20, 0, 0), (42, 7, 7)]),
    ((2, 3, 2, 3, 2), (1, 1, 1, 1, 1), (0, 0, 0, 0, 0), None),
])
def test_pad_axes(shape, before, after, want):
    assert pad_axes(shape, before, after) == want
