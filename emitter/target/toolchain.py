"""Finding the external tools; a missing one is a ToolchainError that says how to install it."""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from emitter.errors import ToolchainError

# RISC-V boards: the cross compiler (binutils come with it), picolibc (C library with semihosting)
# and qemu-system-riscv32; one line for all of them, whichever is missing.
RISCV_PACKAGES = ("gcc-riscv64-unknown-elf", "picolibc-riscv64-unknown-elf", "qemu-system-misc")
RISCV_INSTALL = f"apt-get install {' '.join(RISCV_PACKAGES)} (RISC-V boards)"

# tool -> how to get it (Debian/Ubuntu package names).
INSTALL_HINT: dict[str, str] = {
    "arm-none-eabi-gcc": "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi",
    "arm-none-eabi-size": "apt-get install binutils-arm-none-eabi",
    "arm-none-eabi-objdump": "apt-get install binutils-arm-none-eabi",
    "qemu-system-arm": "apt-get install qemu-system-arm",
    "riscv64-unknown-elf-gcc": RISCV_INSTALL,
    "riscv64-unknown-elf-size": RISCV_INSTALL,
    "riscv64-unknown-elf-objdump": RISCV_INSTALL,
    "picolibc": RISCV_INSTALL,
    "qemu-system-riscv32": RISCV_INSTALL,
    "gcc": "apt-get install gcc",
    "clang": "apt-get install clang (the firmware still links with arm-none-eabi-gcc and newlib)",
    "scons": "pip install scons (a dependency of mcugen: reinstall mcugen, or apt-get install scons)",
    "newlib": "apt-get install libnewlib-arm-none-eabi",
    "make": "apt-get install make",
    "cmake": "apt-get install cmake",
    "chromium": "apt-get install chromium (headless: the report.html tests)",
    "espeak-ng": "apt-get install espeak-ng (the keyword example's speech)",
}

TARGET_TOOLS = ("arm-none-eabi-gcc", "arm-none-eabi-size", "arm-none-eabi-objdump", "newlib",
                "scons")
QEMU_TOOLS = TARGET_TOOLS + ("qemu-system-arm", "gcc")
HOST_TOOLS = ("gcc", "scons")
RISCV_TARGET_TOOLS = ("riscv64-unknown-elf-gcc", "riscv64-unknown-elf-size",
                      "riscv64-unknown-elf-objdump", "picolibc", "scons")
RISCV_QEMU_TOOLS = RISCV_TARGET_TOOLS + ("qemu-system-riscv32", "gcc")

# arch (boards/*.toml `arch`) -> (binutils/gcc prefix, QEMU system emulator)
_ARCH = {"arm": ("arm-none-eabi-", "qemu-system-arm"),
         "riscv": ("riscv64-unknown-elf-", "qemu-system-riscv32")}


def cross_prefix(arch: str) -> str:
    """'arm-none-eabi-' or 'riscv64-unknown-elf-': the prefix of a board's gcc, size, objdump."""
    return _ARCH[arch][0]


def qemu_binary(arch: str) -> str:
    """qemu-system-arm or qemu-system-riscv32."""
    return _ARCH[arch][1]


def qemu_tools(arch: str = "arm") -> tuple[str, ...]:
    """Every tool a QEMU verification for a board of `arch` needs (for missing_tools)."""
    return RISCV_QEMU_TOOLS if arch == "riscv" else QEMU_TOOLS


def check_target_toolchain(arch: str) -> None:
    """ToolchainError naming the Debian packages unless the board's cross compiler, binutils and
    C library (newlib for Arm, picolibc for RISC-V) are installed."""
    prefix = cross_prefix(arch)
    for name in (prefix + "gcc", prefix + "size", prefix + "objdump"):
        find_tool(name)
    if arch == "riscv":
        check_picolibc()
    else:
        check_newlib()


def firmware_cc(cc: str | None = None) -> str:
    """The compiler of a firmware build: `cc` if given, else $CC when it names a clang (CC=clang,
    clang-14), else gcc (arm-none-eabi-gcc for the target). clang compiles the bundle and harness
    with --target=arm-none-eabi on newlib's headers; arm-none-eabi-gcc always links (SConstruct)."""
    if cc is None:
        env = os.environ.get("CC", "")
        cc = env if is_clang(env) else "gcc"
    if cc != "gcc" and not is_clang(cc):
        raise ToolchainError(f"--cc {cc}: expected gcc or a clang (clang, clang-14, /path/to/clang)")
    return cc


def is_clang(cc: str) -> bool:
    return "clang" in Path(cc.split()[0]).name if cc.strip() else False


def find_tool(name: str) -> Path:
    """Absolute path of an executable on PATH, else ToolchainError naming its package."""
    path = shutil.which(name)
    if path is None:
        raise ToolchainError(f"'{name}' was not found on PATH; install it: "
                             f"{INSTALL_HINT.get(name, 'see docs')}")
    return Path(path)


def scons_command() -> list[str]:
    """How to start SCons: this interpreter's SCons module if installed, else `scons` on PATH."""
    if importlib.util.find_spec("SCons") is not None:
        return [sys.executable, "-m", "SCons"]
    return [str(find_tool("scons"))]


@functools.cache
def _newlib_present() -> bool:
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        return False
    result = subprocess.run([gcc, "-print-file-name=rdimon.specs"], capture_output=True,
                            text=True, check=False)
    return result.returncode == 0 and Path(result.stdout.strip()).is_file()


def check_newlib() -> None:
    """ToolchainError unless arm-none-eabi-gcc finds newlib's rdimon (semihosting) specs."""
    find_tool("arm-none-eabi-gcc")
    if not _newlib_present():
        raise ToolchainError("arm-none-eabi-gcc has no newlib (rdimon.specs not found); install "
                             f"it: {INSTALL_HINT['newlib']}")


@functools.cache
def _picolibc_present() -> bool:
    gcc = shutil.which("riscv64-unknown-elf-gcc")
    if gcc is None:
        return False
    result = subprocess.run([gcc, "-print-file-name=picolibc.specs"], capture_output=True,
                            text=True, check=False)
    return result.returncode == 0 and Path(result.stdout.strip()).is_file()


def check_picolibc() -> None:
    """ToolchainError unless riscv64-unknown-elf-gcc finds picolibc (picolibc.specs)."""
    find_tool("riscv64-unknown-elf-gcc")
    if not _picolibc_present():
        raise ToolchainError("riscv64-unknown-elf-gcc has no picolibc (picolibc.specs not found); "
                             f"install it: {INSTALL_HINT['picolibc']}")


def missing_tools(names: tuple[str, ...] = QEMU_TOOLS) -> list[str]:
    """The tools of `names` that are absent, each with its install hint; [] when all are there.

    Test suites use it to skip with a stated reason."""
    missing = []
    for name in names:
        try:
            if name == "newlib":
                check_newlib()
            elif name == "picolibc":
                check_picolibc()
            elif name == "scons":
                scons_command()
            else:
                find_tool(name)
        except ToolchainError:
            missing.append(f"{name} ({INSTALL_HINT.get(name, 'install it')})")
    return missing
