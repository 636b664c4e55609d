"""The cmsis-nn backend against the user's CMSIS-NN (CMSIS_NN_PATH; tested with v7.0.0).

CMSIS-NN is the user's library and is never vendored: without CMSIS_NN_PATH these tests skip.
With it: every shared model, on the host and in QEMU for cores with and without DSP/MVE, must be
bit-exact with the golden model and with TFLM's reference outputs.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from emitter.backends.cmsis_nn import cmsis_path
from emitter.backends.cmsis_nn import sources as cmsis_sources
from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.bundle import write_bundle
from emitter.render import render_bundle
from emitter.target.toolchain import missing_tools
from emitter.verify import run_verify
from tests.support import MODEL_NAMES, SHARED_MODELS, STRICT, shared_model
from tests.test_robustness import tiny_qdq_conv

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
    assert "ERR_SCRATCH" in text  # net_init() checks every call's scratch against the target's
    assert c.plan.arena_size >= c.plan.lower_bound


def test_version_of_the_users_cmsis_nn_in_bundle(tmp_path):
    """The API table of cmsis_version.py matches the real headers; the detected version reaches
    the bundle's header, README and report.json."""
    from emitter.backends.cmsis_version import api_changes, detect

    assert api_changes(cmsis_path() / "Include") == []
    v = detect(cmsis_path())
    c, _ = emit("tflm_hello_world", "cortex-m4", tmp_path / "b")
    assert c.cmsis_version == v
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["cmsis_nn_version"] == {"release": v.release, "revision": v.revision_text, "tested": v.tested}
    for name in ("net.h", "README.md", "net.c"):
        assert f"CMSIS-NN {v}" in (tmp_path / "b" / name).read_text(), name


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
    root = cmsis_path()
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


@needs_arm_gcc
def test_cmsis_make_builds_library(tmp_path):
    """Default: CMSIS-NN compiled from CMSIS_NN_PATH into libnet.a at -Ofast (CMSIS_OPT overrides)."""
    _, b = emit("mlperf_kws_dscnn", "cortex-m4", tmp_path / "b")
    res = subprocess.run(["make", "-C", str(tmp_path / "b"), "-j2", "CC=arm-none-eabi-gcc",
                          f"CMSIS_NN_PATH={os.environ['CMSIS_NN_PATH']}"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    cmsis_compiles = [line for line in res.stdout.splitlines() if "/Source/" in line and " -c " in line]
    assert cmsis_compiles and all("-Ofast" in line and "-mcpu=cortex-m4" in line for line in cmsis_compiles)
    assert not any(suffix in line for line in cmsis_compiles for suffix in ("_f16.c", "_f32.c"))
    symbols = link_firmware(b, [tmp_path / "b" / "libnet.a"], tmp_path / "fw.elf", tmp_path / "b")
    assert {"net_init", "net_run", "arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8"} <= symbols
    dry = subprocess.run(["make", "-C", str(tmp_path / "b"), "-n", "-B", "CC=arm-none-eabi-gcc", "CMSIS_OPT=-O2",
                          f"CMSIS_NN_PATH={os.environ['CMSIS_NN_PATH']}"], capture_output=True, text=True, check=True)
    assert all("-Ofast" not in line and " -O2 " in line for line in dry.stdout.splitlines() if "/Source/" in line)


def test_cmsis_make_links_prebuilt_library(tmp_path, arm_cmsis_lib):
    """make CMSIS_NN_LIB=FILE: libnet.a holds the model only; the firmware links it with FILE."""
    _, b = emit("mlperf_kws_dscnn", "cortex-m4", tmp_path / "b")
    res = subprocess.run(["make", "-C", str(tmp_path / "b"), "-j2", "CC=arm-none-eabi-gcc",
                          f"CMSIS_NN_PATH={os.environ['CMSIS_NN_PATH']}", f"CMSIS_NN_LIB={arm_cmsis_lib}"],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "/Source/" not in res.stdout  # nothing of CMSIS-NN compiled
    nm = subprocess.run(["arm-none-eabi-nm", str(tmp_path / "b" / "libnet.a")], capture_output=True, text=True,
                        check=True).stdout
    assert " U arm_convolve_wrapper_s8" in nm and " T arm_" not in nm
    symbols = link_firmware(b, [tmp_path / "b" / "libnet.a", arm_cmsis_lib], tmp_path / "fw.elf", tmp_path / "b")
    assert {"net_init", "arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8_get_buffer_size"} <= symbols
    bad = subprocess.run(["make", "-C", str(tmp_path / "b"), "CC=arm-none-eabi-gcc", "CMSIS_NN_LIB=/no/such.a",
                          f"CMSIS_NN_PATH={os.environ['CMSIS_NN_PATH']}"], capture_output=True, text=True, check=False)
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


@pytest.mark.skipif(bool(missing_tools(("cmake", "arm-none-eabi-gcc"))), reason="cmake or arm-none-eabi-gcc missing")
@pytest.mark.parametrize("mode", ["source", "library-file", "cmake-target"])
def test_cmsis_cmake_builds_and_links(mode, tmp_path, arm_cmsis_lib):
    """The bundle's CMakeLists.txt in a firmware project (arm-none-eabi toolchain file): CMSIS-NN
    from CMSIS_NN_PATH at -Ofast, or -DCMSIS_NN_LIB=<file>, or -DCMSIS_NN_LIB=cmsis-nn (CMSIS-NN's
    own CMake target); the firmware links in every case."""
    _, b = emit("tflm_hello_world", "cortex-m4", tmp_path / "b")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "CMakeLists.txt").write_text(CMAKE_APP)
    (tmp_path / "app" / "main.c").write_text(FIRMWARE_MAIN)
    (tmp_path / "arm.cmake").write_text(CMAKE_TOOLCHAIN.format(flags=" ".join(b.cflags)))
    root = str(cmsis_path())
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


@pytest.mark.qemu
@pytest.mark.skipif(bool(missing_tools()), reason="cross toolchain or QEMU missing")
def test_scons_prebuilt_library_bit_exact_in_qemu(tmp_path, arm_cmsis_lib):
    """SConstruct cmsis_nn=DIR cmsis_nn_lib=FILE links the prebuilt library (nothing of CMSIS-NN
    compiled); the firmware is bit-exact with TFLM's reference outputs in QEMU."""
    from emitter.target.firmware import build_firmware
    from emitter.target.qemu import run_qemu
    from emitter.verify import load_inputs, pack, unpack, write_glue

    name = "mlperf_kws_dscnn"
    c, b = emit(name, "cortex-m4", tmp_path / "b")
    ref = SHARED_MODELS / name / f"{name}_ref.npz"
    samples = load_inputs(c, str(ref), 0)
    write_glue(c, tmp_path / "glue")
    fw = build_firmware(tmp_path / "b", tmp_path / "glue", b, tmp_path / "fw", cmsis_nn=cmsis_path(),
                        cmsis_nn_lib=arm_cmsis_lib, jobs=2)
    assert not (tmp_path / "fw" / "cmsis_nn").exists()
    assert f"{arm_cmsis_lib}(arm_convolve_wrapper_s8.o)" in fw.map_file.read_text()
    assert fw.model_flash > 0
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
    root = cmsis_path()
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
    c = compile_model(model, name="net", backend="cmsis-nn", board=b, cmsis_path=cmsis_path())
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
    sources = [str(p) for p in sorted(bundle.glob("*.c")) + sorted(bundle.glob("mcu_runtime/kernels/*.c"))]
    exe = tmp_path / "init_test"
    res = subprocess.run(["gcc", "-O1", *STRICT, "-include", str(tmp_path / "hook.h"), f"-I{bundle}",
                          f"-I{bundle / 'mcu_runtime' / 'include'}", f"-I{cmsis_path() / 'Include'}",
                          str(tmp_path / "main.c"), *sources, str(host_cmsis_lib), "-lm", "-o", str(exe)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip()
    kernels = sum(1 for p in c.prepared if p.kernel)
    if undersized:
        assert out == f"run=2,2 init=2 scratch_layer={conv} layers_run=0 untouched=1"
    else:
        assert out == f"run=0,0 init=0 scratch_layer=-1 layers_run={2 * kernels} untouched=0"
