"""examples/firmware (docs/firmware.md "Adding mcugen to your firmware", issue #15 item 11), built by running
the page's own lines: the digits bundle for cortex-m4, then the project with the host compiler
(run: both held-out digits classified as the page shows) and with arm-none-eabi-gcc through
examples/firmware/cortex-m4.cmake (the ELF's attributes say FPv4 hard-float; no warning anywhere)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from emitter.target import missing_tools
from tests.harness.bundles import REPO

pytestmark = pytest.mark.skipif(bool(missing_tools(("cmake", "gcc", "arm-none-eabi-gcc"))),
                                reason="cmake, gcc or arm-none-eabi-gcc missing")
EXAMPLE = REPO / "examples" / "firmware"


def readme_steps() -> list[tuple[list[str], str]]:
    """The commands of docs/firmware.md's "Adding mcugen to your firmware" block, each with the
    output the page shows under it (its `# ` lines)."""
    text = (REPO / "docs" / "firmware.md").read_text()
    lines = text[text.index("## Adding mcugen to your firmware"):].splitlines()
    first = next(k for k, line in enumerate(lines) if line.startswith("    "))
    steps: list[tuple[list[str], str]] = []
    for line in lines[first:]:
        if not line.startswith("    "):
            break
        if line.startswith("    # "):
            cmd, out = steps[-1]
            steps[-1] = (cmd, out + line[6:] + "\n")
        else:
            steps.append((shlex.split(line), ""))
    return steps


def test_readme_steps_build_the_example_on_the_host_and_for_cortex_m4(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(REPO / "examples")  # the repository root, as the README says
    env = dict(os.environ, PYTHONPATH=str(REPO))
    steps = readme_steps()
    assert [cmd[0] for cmd, _ in steps] == ["mcugen", "cmake", "cmake", "out/fw-host/digits_app", "cmake", "cmake"]
    for cmd, shown in steps:
        cmd = [arg.replace("$PWD", str(tmp_path)) for arg in cmd]  # as the shell expands it
        argv = [sys.executable, "-m", "emitter.cli", *cmd[1:]] if cmd[0] == "mcugen" else cmd
        res = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        assert res.returncode == 0, " ".join(cmd) + "\n" + res.stdout[-3000:] + res.stderr[-3000:]
        assert "CMake Warning" not in res.stderr and "warning:" not in res.stdout + res.stderr
        if shown:
            assert res.stdout == shown
    attrs = subprocess.run(["arm-none-eabi-readelf", "-A", "out/fw-m4/digits_app.elf"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert "Tag_FP_arch: VFPv4-D16" in attrs and "Tag_ABI_VFP_args: VFP registers" in attrs
    symbols = subprocess.run(["arm-none-eabi-nm", "--defined-only", "out/fw-m4/digits_app.elf"], cwd=tmp_path,
                             capture_output=True, text=True, check=True).stdout
    assert " T digits_run_f32" in symbols and " T mcu_conv2d_s8" in symbols


def test_example_firmware_says_how_to_make_a_bundle(tmp_path: Path) -> None:
    res = subprocess.run(["cmake", "-S", str(EXAMPLE), "-B", str(tmp_path / "b"), f"-DDIGITS_BUNDLE={tmp_path}"],
                         capture_output=True, text=True, check=False)
    assert res.returncode != 0 and "mcugen examples/digits_cnn_int8.onnx --board=cortex-m4" in " ".join(
        res.stderr.split())


KIT_TOOLS = {"cortex-m4": ("qemu-system-arm", "newlib"), "cortex-m55": ("qemu-system-arm", "newlib"),
             "esp32-c3": ("qemu-system-riscv32", "riscv64-unknown-elf-gcc", "picolibc")}


@pytest.mark.parametrize("board", ["cortex-m4", "cortex-m55", "esp32-c3"])
def test_example_firmware_runs_in_qemu_through_the_qemu_kit(board: str, tmp_path: Path) -> None:
    """`mcugen qemu-kit` (issue 31 item 4; RISC-V: issue 27): the example's own main.c, built with the
    kit's toolchain file and start-up code (no mcugen harness), runs on the board's QEMU machine
    through the kit's `run` script, prints both predictions and exits with main()'s 0. The ESP32-C3's
    kit has no syscalls.c (picolibc's crt0 and semihosting)."""
    missing = missing_tools(KIT_TOOLS[board])
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("CMSIS_NN_PATH", None)

    def run(*cmd: str) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(list(cmd), cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        assert res.returncode == 0, " ".join(cmd) + "\n" + res.stdout[-3000:] + res.stderr[-3000:]
        return res

    mcugen = (sys.executable, "-m", "emitter.cli")
    run(*mcugen, str(REPO / "examples" / "digits_cnn_int8.onnx"), f"--board={board}", "--name", "digits",
        "-o", "digits", "--quiet")
    kit = run(*mcugen, "qemu-kit", f"--board={board}", "-o", "kit")
    assert sorted(p.name for p in (tmp_path / "kit").iterdir()) == sorted(
        ["startup.c", "mcu_fault_text.h", "board.ld", "toolchain.cmake", "qemu_kit.cmake", "run", "README.md"]
        + ([] if board == "esp32-c3" else ["syscalls.c"]))
    assert "wrote kit/" in kit.stdout
    run("cmake", "-S", str(EXAMPLE), "-B", "fw", f"-DDIGITS_BUNDLE={tmp_path / 'digits'}",
        f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / 'kit' / 'toolchain.cmake'}")
    build = run("cmake", "--build", "fw")
    assert "warning:" not in build.stdout + build.stderr
    res = subprocess.run(["kit/run", "fw/digits_app.elf"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60, check=False)
    assert (res.returncode, res.stdout) == (0, "sample 0: predicted 8 (label 8)\nsample 1: predicted 3 (label 3)\n"), \
        res.stderr
    machine = {"cortex-m4": "mps2-an386", "cortex-m55": "mps3-an547", "esp32-c3": "virt"}[board]
    assert f"-M {machine}" in (tmp_path / "kit" / "run").read_text()
