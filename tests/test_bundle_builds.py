"""The bundle in a user's firmware build (issue #15, items 3 and 4): real builds with the bundle's
own Makefile and CMakeLists.txt, host gcc and arm-none-eabi-gcc, of hello_fc generated for a
Cortex-M7 (-mfpu=fpv5-d16, hard float) and dropped into a Cortex-M4 project (fpv4-sp-d16, softfp).

- CMake inside a parent project: the parent's CPU flags win (the objects say FPv4 and softfp, and the
  firmware links), a -mcpu other than the board's is a configure-time warning; the board's flags
  apply to a standalone build of the bundle folder, or when asked (-D<NAME>_USE_BOARD_FLAGS=ON).
- make: CFLAGS holding a -mcpu replace the board's CPU_FLAGS (reported when they differ); the build
  folder is keyed by compiler and flags, so `make` then `make CC=arm-none-eabi-gcc` rebuilds and
  lib<name>.a is the archive of the last build (also after switching back).
The CPU the objects were built for is read back with arm-none-eabi-readelf -A.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from emitter.cli import main
from emitter.target import missing_tools
from tests.harness.bundles import ARM_TOOLCHAIN_CMAKE as TOOLCHAIN
from tests.models.tiny import HELLO

pytestmark = pytest.mark.skipif(bool(missing_tools(("cmake", "make", "gcc", "arm-none-eabi-gcc"))),
                                reason="cmake, make, gcc or arm-none-eabi-gcc missing")

M4_SOFTFP = "-mcpu=cortex-m4 -mthumb -mfloat-abi=softfp -mfpu=fpv4-sp-d16"
PARENT = """cmake_minimum_required(VERSION 3.13)
project(firmware C)
add_subdirectory(${BUNDLE} hello_fc)
add_executable(firmware main.c)
target_link_libraries(firmware PRIVATE hello_fc m)
"""
MAIN = """#include "hello_fc.h"
int main(void)
{
    float x = 1.5f, y = 0.0f;
    if (hello_fc_init() != HELLO_FC_OK) return 1;
    return hello_fc_run_f32(&x, &y) != HELLO_FC_OK || y < 0.9f;
}
"""


def run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, " ".join(cmd) + "\n" + res.stdout[-3000:] + res.stderr[-3000:]
    return res


def bundle(tmp_path: Path, board: str = "cortex-m7") -> Path:
    out = tmp_path / "hello_fc"
    assert main([str(HELLO), f"--board={board}", "-o", str(out), "--quiet"]) == 0
    return out


def attributes(path: Path) -> str:
    """arm-none-eabi-readelf -A of an object or of every member of an archive."""
    return run(["arm-none-eabi-readelf", "-A", str(path)]).stdout


def machines(archive: Path) -> set[str]:
    out = run(["readelf", "-h", str(archive)]).stdout
    return {line.split(":", 1)[1].strip() for line in out.splitlines() if line.strip().startswith("Machine:")}


def assert_m4_softfp(attrs: str) -> None:
    assert "Tag_FP_arch: VFPv4-D16" in attrs and "Tag_ABI_HardFP_use: SP only" in attrs, attrs
    assert "FPv5" not in attrs and "Tag_ABI_VFP_args: VFP registers" not in attrs, attrs


def assert_m7_hard(attrs: str) -> None:
    assert "Tag_FP_arch: FPv5/FP-D16 for ARMv8" in attrs and "Tag_ABI_VFP_args: VFP registers" in attrs, attrs
    assert "VFPv4" not in attrs, attrs


def said(res: subprocess.CompletedProcess[str]) -> str:
    """stderr with CMake's line wrapping undone."""
    return " ".join(res.stderr.split())


def firmware(tmp_path: Path, b: Path, *options: str,
             target: str = "all") -> tuple[subprocess.CompletedProcess[str], Path]:
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(PARENT)
    (app / "main.c").write_text(MAIN)
    (tmp_path / "m4.cmake").write_text(TOOLCHAIN.format(flags=M4_SOFTFP))
    build = tmp_path / "build"
    configured = run(["cmake", "-S", str(app), "-B", str(build), f"-DBUNDLE={b}",
                      f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / 'm4.cmake'}", *options])
    run(["cmake", "--build", str(build), "-j2", "--target", target])
    return configured, build


def test_cmake_in_an_m4_softfp_project_uses_the_projects_flags_and_warns(tmp_path: Path) -> None:
    configured, build = firmware(tmp_path, bundle(tmp_path))
    text = said(configured)
    assert "CMake Warning" in text and "hello_fc: CPU mismatch" in text
    assert "board cortex-m7 (-mcpu=cortex-m7)" in text and "compiles with -mcpu=cortex-m4" in text
    assert "builds with the project's flags" in text and "-DHELLO_FC_USE_BOARD_FLAGS=ON" in text
    assert_m4_softfp(attributes(build / "hello_fc" / "libhello_fc.a"))
    assert_m4_softfp(attributes(build / "firmware"))  # and it linked: one float ABI throughout


def test_cmake_board_flags_standalone_or_when_asked(tmp_path: Path) -> None:
    b = bundle(tmp_path)
    (tmp_path / "bare.cmake").write_text(TOOLCHAIN.format(flags=""))
    alone = tmp_path / "alone"
    configured = run(["cmake", "-S", str(b), "-B", str(alone), f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / 'bare.cmake'}"])
    assert "CMake Warning" not in configured.stderr
    run(["cmake", "--build", str(alone), "-j2"])
    assert_m7_hard(attributes(alone / "libhello_fc.a"))
    # the library only: a hard-float library does not link into this softfp firmware (as before the fix)
    configured, build = firmware(tmp_path, b, "-DHELLO_FC_USE_BOARD_FLAGS=ON", target="hello_fc")
    assert "hello_fc: CPU mismatch" in said(configured) and "uses the board's" in said(configured)
    assert_m7_hard(attributes(build / "hello_fc" / "libhello_fc.a"))


def test_cmake_matching_project_has_no_warning_and_host_build_works(tmp_path: Path) -> None:
    b = bundle(tmp_path, "cortex-m4")
    configured, build = firmware(tmp_path, b)
    assert "CMake Warning" not in configured.stderr, configured.stderr
    assert_m4_softfp(attributes(build / "hello_fc" / "libhello_fc.a"))  # softfp: the project's, not the board's
    host = tmp_path / "host"
    host.mkdir()
    (host / "CMakeLists.txt").write_text(PARENT)
    (host / "main.c").write_text(MAIN)
    configured = run(["cmake", "-S", str(host), "-B", str(host / "build"), f"-DBUNDLE={b}", "-DCMAKE_C_COMPILER=gcc"])
    assert "CMake Warning" not in configured.stderr
    run(["cmake", "--build", str(host / "build"), "-j2"])
    run([str(host / "build" / "firmware")])  # sin(1.5) > 0.9 on the host too


def test_make_switching_compiler_rebuilds_and_the_archive_follows(tmp_path: Path) -> None:
    b = bundle(tmp_path)
    lib = b / "libhello_fc.a"
    run(["make", "-j2"], cwd=b)
    host = machines(lib)
    assert host and "ARM" not in host
    cross = run(["make", "-j2", "CC=arm-none-eabi-gcc"], cwd=b)
    assert "arm-none-eabi-gcc" in cross.stdout and "Nothing to be done" not in cross.stdout
    assert machines(lib) == {"ARM"}
    assert_m7_hard(attributes(lib))  # standalone make: the board's flags
    assert "CPU mismatch" not in cross.stderr
    back = run(["make", "-j2"], cwd=b)
    assert " -c " not in back.stdout  # the host objects are still there: nothing recompiled
    assert machines(lib) == host
    assert len(list((b / "build").iterdir())) == 2


def test_make_firmware_cflags_replace_the_board_cpu_flags(tmp_path: Path) -> None:
    b = bundle(tmp_path)
    res = run(["make", "-j2", "CC=arm-none-eabi-gcc", f"CFLAGS=-O2 {M4_SOFTFP}"], cwd=b)
    compiles = [line for line in res.stdout.splitlines() if " -c " in line]
    assert compiles and not any("cortex-m7" in line or "fpv5" in line or "=hard" in line for line in compiles)
    assert "hello_fc: CPU mismatch" in res.stderr and "(-mcpu=cortex-m7)" in res.stderr
    assert "-mcpu=cortex-m4" in res.stderr
    assert_m4_softfp(attributes(b / "libhello_fc.a"))
