"""The bundle's own regression test (issue 31 item 3): a --verify bundle carries test/ (the samples
the verification ran, the golden model's outputs, a test main and the board's QEMU kit); its
Makefile (`make test`) and CMakeLists.txt (-D<NAME>_TESTS=ON, ctest) build it and run it in QEMU,
passing only when every output byte is the expected one. Default tier: the digits model on three
held-out samples, cortex-m4."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emitter.target import missing_tools
from tests.harness.bundles import REPO

DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"
HELDOUT = REPO / "examples" / "digits_heldout.npz"
NAME = "digits"
SAMPLES = 3
needs_qemu = pytest.mark.skipif(bool(missing_tools()), reason=f"missing: {', '.join(missing_tools())}")
needs_cmake = pytest.mark.skipif(bool(missing_tools(("cmake", "ctest"))), reason="cmake/ctest missing")
TEST_FILES = sorted([f"{NAME}_test.c", f"{NAME}_test_data.c", "board.ld", "mcu_fault_text.h", "qemu_kit.cmake", "run",
                     "startup.c", "syscalls.c", "toolchain.cmake"])


def mcugen(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("CMSIS_NN_PATH", None)  # the portable backend: the same bundle on every machine
    return subprocess.run([sys.executable, "-m", "emitter.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def verified(tmp_path_factory) -> Path:
    """A cortex-m4 bundle verified on three held-out digits."""
    tmp = tmp_path_factory.mktemp("bundle_tests")
    data = np.load(HELDOUT)
    np.savez(tmp / "few.npz", images=data["images"][:SAMPLES], labels=data["labels"][:SAMPLES])
    res = mcugen("verify", str(DIGITS), "--board", "cortex-m4", "--name", NAME, "-o", "bundle", "--inputs",
                 "few.npz", "--quiet", cwd=tmp)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return tmp / "bundle"


def corrupted_copy(bundle: Path, dest: Path) -> Path:
    """A copy of `bundle` with one expected output byte changed (sample 0, output 0, byte 0)."""
    shutil.copytree(bundle, dest, ignore=shutil.ignore_patterns("build", "lib*.a"))
    path = dest / "test" / f"{NAME}_test_data.c"
    text = path.read_text()
    start = text.index("\n", text.index(f"{NAME}_test_expected0[{SAMPLES * 10}] __attribute__")) + 1
    m = re.compile(r"-?\d+").search(text, start)
    assert m is not None
    value = int(m.group())
    path.write_text(text[:m.start()] + str(value - 1 if value > -128 else value + 1) + text[m.end():])
    return dest


def test_verify_writes_the_test_folder_and_build_targets(verified):
    assert sorted(p.name for p in (verified / "test").iterdir()) == TEST_FILES
    data = (verified / "test" / f"{NAME}_test_data.c").read_text()
    assert f"const int8_t {NAME}_test_input0[{SAMPLES * 64}]" in data  # 3 samples of 8x8 int8
    assert f"const int8_t {NAME}_test_expected0[{SAMPLES * 10}]" in data  # and 10 logits each
    assert "\ntest: $(TEST_BIN)\n" in (verified / "Makefile").read_text()
    assert "option(DIGITS_TESTS " in (verified / "CMakeLists.txt").read_text()
    assert "## Regression test (`test/`)" in (verified / "README.md").read_text()
    kit = (REPO / "mcu_runtime" / "target" / "startup.c").read_text()
    assert (verified / "test" / "startup.c").read_text() == kit  # the QEMU kit's, not a copy of its own


def test_the_test_folder_is_deterministic_and_a_bundle_without_verify_has_none(verified, tmp_path):
    from emitter.boards import load_board
    from emitter.compiler import compile_model
    from emitter.render.bundle import render_bundle
    from emitter.verify.bundle_test import bundle_test_files

    board = load_board("cortex-m4")
    c = compile_model(DIGITS, name=NAME, board=board)
    npz = verified.parent / "few.npz"
    first = bundle_test_files(c, board, str(npz), 5)
    assert first == bundle_test_files(c, board, str(npz), 5)
    for rel, data in first.items():
        assert (verified / rel).read_bytes() == data, rel
    plain = render_bundle(c, " ".join(board.cflags), board.name)
    assert not any(rel.startswith("test/") for rel in plain)
    assert "test:" not in plain["Makefile"].decode() and "_TESTS" not in plain["CMakeLists.txt"].decode()
    # regenerating without --verify replaces the test folder too (it is mcugen's, not kept)
    shutil.copytree(verified, tmp_path / "b", ignore=shutil.ignore_patterns("build", "lib*.a"))
    res = mcugen("emit", str(DIGITS), "--board", "cortex-m4", "--name", NAME, "-o", "b", "--quiet", cwd=tmp_path)
    assert res.returncode == 0 and "kept" not in res.stdout, res.stdout + res.stderr
    assert not (tmp_path / "b" / "test").exists()


def test_make_test_on_the_host_runs_it_natively(verified, tmp_path):
    bundle = shutil.copytree(verified, tmp_path / "b")
    res = run(["make", "test"], bundle)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"{NAME} test: {SAMPLES}/{SAMPLES} samples bit-exact\n" in res.stdout


@needs_qemu
def test_make_test_cross_passes_in_qemu_and_fails_on_one_corrupted_byte(verified, tmp_path):
    good = shutil.copytree(verified, tmp_path / "good", ignore=shutil.ignore_patterns("build", "lib*.a"))
    res = run(["make", "test", "CC=arm-none-eabi-gcc"], good)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "sh test/run build/arm-none-eabi-gcc-" in res.stdout  # in QEMU, not on the host
    assert f"{NAME} test: {SAMPLES}/{SAMPLES} samples bit-exact\n" in res.stdout
    bad = corrupted_copy(verified, tmp_path / "bad")
    res = run(["make", "test", "CC=arm-none-eabi-gcc"], bad)
    assert res.returncode != 0
    assert f"{NAME} test: sample 0 output 0 byte 0: got" in res.stdout
    assert f"{NAME} test: {SAMPLES - 1}/{SAMPLES} samples bit-exact: FAILED" in res.stdout


@needs_qemu
@needs_cmake
def test_ctest_cross_passes_in_qemu_and_fails_on_one_corrupted_byte(verified, tmp_path):
    for case, bundle in (("good", verified), ("bad", corrupted_copy(verified, tmp_path / "bad"))):
        build = tmp_path / f"build-{case}"
        res = run(["cmake", "-S", str(bundle), "-B", str(build), "-DDIGITS_TESTS=ON",
                   f"-DCMAKE_TOOLCHAIN_FILE={bundle / 'test' / 'toolchain.cmake'}"], tmp_path)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        res = run(["cmake", "--build", str(build)], tmp_path)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        assert (build / f"{NAME}_test.elf").is_file()
        res = run(["ctest", "--test-dir", str(build), "--output-on-failure", "-V"], tmp_path)
        assert "test/run" in res.stdout  # the test command: the kit's QEMU run script
        if case == "good":
            assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
            assert f"{NAME} test: {SAMPLES}/{SAMPLES} samples bit-exact" in res.stdout
        else:
            assert res.returncode != 0
            assert f"{SAMPLES - 1}/{SAMPLES} samples bit-exact: FAILED" in res.stdout
