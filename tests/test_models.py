"""The real MLPerf Tiny / TFLM models of ../shared/models, end to end on the host:
mcugen CLI -> make with ASan/UBSan -> libnet.a -> harness -> bit-exact with TFLM's outputs."""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from emitter.cli import main
from emitter.compiler import compile_model, golden_run
from emitter.resources import data_dir
from emitter.verify.harness import write_glue
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, shared_model

SANITIZE = "-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

pytestmark = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")


def ref(name: str):
    return np.load(SHARED_MODELS / name / f"{name}_ref.npz")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_golden_matches_tflm(name):
    c = compile_model(shared_model(name), name="net")
    r = ref(name)
    got = np.stack([golden_run(c, [x])[0] for x in r["inputs"]])
    np.testing.assert_array_equal(got, r["tflm_outputs"])


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_arena_within_liveness_bound(name):
    c = compile_model(shared_model(name), name="net")
    info = json.loads((SHARED_MODELS / name / f"{name}_info.json").read_text())
    bound = info["liveness"]["activation_lower_bound_bytes"]
    scratch = sum(p.scratch for p in c.prepared)
    assert c.plan.arena_size <= bound + scratch
    assert c.plan.arena_size >= c.plan.lower_bound


@pytest.mark.parametrize("name, board", [*((n, "cortex-m7") for n in MODEL_NAMES),
                                         ("mlperf_kws_dscnn", "cortex-m4"), ("mlperf_kws_dscnn", "cortex-m55")])
def test_cli_make_sanitized_harness_bit_exact(name, board, tmp_path):
    """A board's bundle built for the host (the Makefile's sanitizer line) gives TFLM's outputs: its
    plan was made for the board's DSP/MVE paths (pointwise layers written over their inputs), the
    host runs the plain C paths."""
    out = tmp_path / "out"
    assert main([str(shared_model(name)), f"--board={board}", "-o", str(out), "--name", "net", "--quiet"]) == 0
    make = subprocess.run(["make", "-C", str(out), "CC=gcc", f"CFLAGS={SANITIZE}"],
                          capture_output=True, text=True, check=False)
    assert make.returncode == 0, make.stdout[-3000:] + make.stderr[-3000:]
    assert (out / "libnet.a").is_file()
    c = compile_model(shared_model(name), name="net")
    write_glue(c, tmp_path / "glue")
    harness = data_dir("mcu_runtime") / "harness"
    exe = tmp_path / "harness"
    cc = subprocess.run(["gcc", *SANITIZE.split(), "-std=c99", "-Wall", "-Wextra", "-Werror",
                         f"-I{out}", f"-I{tmp_path / 'glue'}", f"-I{harness}",
                         str(harness / "harness_main.c"), str(out / "libnet.a"), "-o", str(exe)],
                        capture_output=True, text=True, check=False)
    assert cc.returncode == 0, cc.stderr[-3000:]
    r = ref(name)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "input.bin").write_bytes(r["inputs"].astype(np.int8).tobytes())
    res = subprocess.run([str(exe)], cwd=run_dir, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    got = np.frombuffer((run_dir / "output.bin").read_bytes(), np.int8).reshape(r["tflm_outputs"].shape)
    np.testing.assert_array_equal(got, r["tflm_outputs"])
