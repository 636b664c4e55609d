"""Test helpers: emit bundles, build many of them into one host shared library, run them."""
from __future__ import annotations

import ctypes
import importlib.util
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np

from emitter.compiler import Compiled
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.resources import data_dir

REPO = Path(__file__).resolve().parents[2]
SHARED_MODELS = REPO.parent / "shared" / "models"


def memory_measure() -> Callable[..., dict]:
    """benchmarks/memory.py's measure(): one plan of a shared model built, run in QEMU and compared
    with TFLM (its row of docs/memory.md)."""
    spec = importlib.util.spec_from_file_location("memory_bench", REPO / "benchmarks" / "memory.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.measure  # type: ignore[no-any-return]


MODEL_NAMES = ("mlperf_kws_dscnn", "mlperf_ic_resnet8", "mlperf_ad_fc_autoencoder",
               "tflm_hello_world", "tflm_micro_speech", "mlperf_vww_mobilenetv1")
STRICT = ("-std=c99", "-Wall", "-Wextra", "-Wshadow", "-Wconversion", "-Wstrict-prototypes",
          "-Wmissing-prototypes", "-Wvla", "-Werror")
CM7_FLAGS = "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16"
# A CMake toolchain file for arm-none-eabi-gcc (format with flags=...): a firmware project that
# add_subdirectory()s a bundle, linked with newlib's nosys stubs.
ARM_TOOLCHAIN_CMAKE = """set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "{flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nosys.specs -Wl,--gc-sections")
"""


def ort_u8s8_saturates() -> bool:
    """True where onnxruntime's uint8-activation x int8-weight kernels (MLAS "U8S8") may saturate:
    on x86-64 without VNNI they multiply with VPMADDUBSW, whose int16 sum of two adjacent
    products clips, so onnxruntime itself is off by many quanta (its quantization docs: use
    reduce_range on such CPUs). Our golden and C do not clip; this machine's ORT is then no
    reference for full-range int8 weights under uint8 activations."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True
    return "avx512_vnni" not in flags and "avx_vnni" not in flags


def int8_inputs(c: Compiled, xs: list[np.ndarray]) -> list[np.ndarray]:
    """Float inputs (one per graph input, in graph order) quantized to the graph inputs' int8."""
    from emitter.verify.run import quantize

    out = []
    for name, x in zip(c.graph.inputs, xs, strict=True):
        t = c.graph.t(name)
        out.append(quantize(x.astype(np.float64), t.quant.s, t.quant.zp).reshape(t.shape))
    return out


def shared_model(name: str) -> Path:
    return SHARED_MODELS / name / f"{name}.onnx"


def emit(c: Compiled, out: Path) -> Path:
    write_bundle(render_bundle(c, CM7_FLAGS, "cortex-m7"), out)
    return out


def build_library(bundles: list[Path], lib: Path) -> ctypes.CDLL:
    """One shared library from several bundles (distinct --name each) and the runtime kernels."""
    kernels = sorted(data_dir("mcu_runtime").glob("kernels/*.c")) + sorted(data_dir("mcu_runtime").glob("support/*.c"))
    sources = [str(k) for k in kernels]
    for b in bundles:
        sources += [str(p) for p in sorted(b.glob("*.c")) if not p.name.endswith("_f32.c")]
    incs = [f"-I{data_dir('mcu_runtime') / 'include'}"] + [f"-I{b}" for b in bundles]
    cmd = ["gcc", "-O1", "-shared", "-fPIC", *STRICT, *incs, *sources, "-o", str(lib), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-4000:]
    return ctypes.CDLL(str(lib))


def run_c(lib: ctypes.CDLL, c: Compiled, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Call <name>_run_multi through ctypes; asserts status 0."""
    g = c.graph  # int8 tensors, or int16 (emitter/ops/a16.py)
    ins = [np.ascontiguousarray(x, dtype=g.t(n).dtype) for x, n in zip(inputs, g.inputs, strict=True)]
    outs = [np.zeros(g.t(n).shape, dtype=g.t(n).dtype) for n in g.outputs]
    in_ptrs = (ctypes.c_void_p * len(ins))(*[x.ctypes.data for x in ins])
    out_ptrs = (ctypes.c_void_p * len(outs))(*[y.ctypes.data for y in outs])
    status = getattr(lib, f"{c.name}_run_multi")(in_ptrs, out_ptrs)
    assert status == 0, f"{c.name}_run_multi returned {status}"
    return outs
