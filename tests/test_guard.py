"""Guard-byte debug builds (`mcugen --guard`, issue #5 item 4).

A guard build runs bit-exact like a normal one and reports status 0; a kernel that writes one byte
outside its output (a wrapper around the real kernel, linked instead of it) is caught right after
its layer: <NAME>_ERR_GUARD (3), <name>_guard_layer = that layer's index and <name>_layer_names
gives its ONNX node name.
"""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from emitter.cli import main
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.plan.arena import GUARD_BYTES
from tests.harness.bundles import (
    MODEL_NAMES,
    SHARED_MODELS,
    STRICT,
    build_library,
    emit,
    run_c,
    shared_model,
)
from tests.models.tiny import HELLO, TINY_MODELS

ERR_GUARD = 3

# One byte past (or before) the output of the real mcu_conv2d_s8: the bug guard builds must catch.
BAD_CONV = """
#include <stddef.h>
#include "mcu_nn.h"

mcu_status_t mcu_conv2d_s8_real(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                                const int8_t *input, const int8_t *filter, const int32_t *bias,
                                int8_t *output);

mcu_status_t mcu_conv2d_s8(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const int8_t *filter, const int32_t *bias,
                           int8_t *output)
{
    const mcu_status_t status = mcu_conv2d_s8_real(ctx, params, input, filter, bias, output);
    const size_t bytes = (size_t)params->output.n * (size_t)params->output.h *
                         (size_t)params->output.w * (size_t)params->output.c;
    int8_t *const victim = OFFSET < 0 ? output - 1 : output + bytes;
    *victim = (int8_t)(*victim + 1);
    return status;
}
"""


@pytest.fixture(scope="module")
def tiny_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tiny")
    paths = {}
    for name, build in TINY_MODELS.items():
        paths[name] = folder / f"{name}.onnx"
        onnx.save(build(), paths[name])
    return paths


def random_inputs(c: Compiled, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, s, dtype=np.int64).astype(np.int8) for s in c.input_shapes]


def test_guard_builds_run_bit_exact(tiny_paths: dict[str, Path], tmp_path: Path) -> None:
    models = {"hello": HELLO, **tiny_paths}
    if SHARED_MODELS.is_dir():
        models.update({name: shared_model(name) for name in MODEL_NAMES})
    compiled, bundles = [], []
    for k, path in enumerate(models.values()):
        c = compile_model(path, name=f"g{k}", guard=True)
        plain = compile_model(path, name=f"g{k}")
        assert c.plan.guard == GUARD_BYTES and plain.plan.guard == 0
        assert c.plan.arena_size >= plain.plan.arena_size
        compiled.append(c)
        bundles.append(emit(c, tmp_path / f"g{k}"))
        text = (tmp_path / f"g{k}" / f"g{k}.c").read_text()
        assert f"G{k}_ERR_GUARD" in text and f"g{k}_guard_check" in text
    lib = build_library(bundles, tmp_path / "libguard.so")
    for c in compiled:
        for seed in range(3):
            xs = random_inputs(c, seed)
            got = run_c(lib, c, xs)
            for g, want in zip(got, golden_run(c, xs), strict=True):
                np.testing.assert_array_equal(g, want)
            assert ctypes.c_int.in_dll(lib, f"{c.name}_guard_layer").value == -1


def build_with_bad_conv(bundle: Path, offset: int, lib: Path) -> ctypes.CDLL:
    """The bundle, its kernels, and BAD_CONV linked in place of mcu_conv2d_s8 (renamed _real)."""
    include = bundle / "mcu_runtime" / "include"
    objs = []
    for src in sorted(bundle.glob("*.c")) + sorted((bundle / "mcu_runtime").glob("*/*.c")):
        if src.name.endswith("_f32.c"):
            continue
        obj = lib.parent / f"{src.stem}.o"
        rename = ["-Dmcu_conv2d_s8=mcu_conv2d_s8_real"] if src.name == "mcu_conv2d_s8.c" else []
        cmd = ["gcc", "-c", "-O1", "-fPIC", *STRICT, *rename, f"-I{include}", f"-I{bundle}", str(src), "-o", str(obj)]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr[-3000:]
        objs.append(str(obj))
    bad = lib.parent / "bad_conv.c"
    bad.write_text(BAD_CONV)
    cmd = ["gcc", "-shared", "-O1", "-fPIC", *STRICT, f"-DOFFSET={offset}", f"-I{include}", str(bad), *objs,
           "-o", str(lib)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return ctypes.CDLL(str(lib))


@pytest.mark.parametrize("offset", [1, -1], ids=["one-past-the-end", "one-before"])
def test_guard_catches_out_of_bounds_kernel(tiny_paths: dict[str, Path], tmp_path: Path, offset: int) -> None:
    c = compile_model(tiny_paths["tiny_qdq_conv"], name="oob", guard=True)
    conv = next(k for k, n in enumerate(c.graph.nodes) if n.op == "conv")
    assert c.plan.offset_of(c.graph.nodes[conv].outputs[0]) is not None, "conv must write the arena"
    bundle = emit(c, tmp_path / "oob")
    lib = build_with_bad_conv(bundle, offset, tmp_path / "liboob.so")
    xs = random_inputs(c, 0)
    outs = [np.zeros(s, np.int8) for s in c.output_shapes]
    in_ptrs = (ctypes.c_void_p * len(xs))(*[x.ctypes.data for x in xs])
    out_ptrs = (ctypes.c_void_p * len(outs))(*[y.ctypes.data for y in outs])
    assert lib.oob_run_multi(in_ptrs, out_ptrs) == ERR_GUARD
    assert ctypes.c_int.in_dll(lib, "oob_guard_layer").value == conv
    names = (ctypes.c_char_p * len(c.graph.nodes)).in_dll(lib, "oob_layer_names")
    assert names[conv].decode() == c.graph.nodes[conv].name == "conv"


def test_same_bad_kernel_goes_unnoticed_without_guard(tiny_paths: dict[str, Path], tmp_path: Path) -> None:
    """The control: without guard bytes the same wrapper returns 0 (and silently corrupts)."""
    c = compile_model(tiny_paths["tiny_qdq_conv"], name="oob")
    bundle = emit(c, tmp_path / "oob")
    assert "oob_guard_" not in (bundle / "oob.c").read_text()  # no guard code (OOB_ERR_GUARD is always declared)
    lib = build_with_bad_conv(bundle, 1, tmp_path / "liboob.so")
    xs = random_inputs(c, 0)
    outs = [np.zeros(s, np.int8) for s in c.output_shapes]
    in_ptrs = (ctypes.c_void_p * len(xs))(*[x.ctypes.data for x in xs])
    out_ptrs = (ctypes.c_void_p * len(outs))(*[y.ctypes.data for y in outs])
    assert lib.oob_run_multi(in_ptrs, out_ptrs) == 0


def test_cli_guard_option(tmp_path: Path) -> None:
    out = tmp_path / "b"
    assert main([str(HELLO), "-o", str(out), "--name", "hw", "--quiet", "--guard"]) == 0
    header = (out / "hw.h").read_text()
    assert f"#define HW_GUARD_BYTES {GUARD_BYTES}" in header and "extern int hw_guard_layer;" in header
    assert '"guard_bytes": 16' in (out / "report.json").read_text()
    plain = tmp_path / "p"
    assert main([str(HELLO), "-o", str(plain), "--name", "hw", "--quiet"]) == 0
    assert "GUARD_BYTES" not in (plain / "hw.h").read_text()
    assert "guard_bytes" not in (plain / "report.json").read_text()
