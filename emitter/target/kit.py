"""`mcugen qemu-kit --board=B -o DIR`: what a user's own firmware needs to run in QEMU.

The same start-up code, linker script and semihosting set-up that `--verify` links its test images
with (mcu_runtime/target/, the board's QEMU regions from boards/*.toml), written as a folder:

    startup.c        vector table, Reset_Handler (FPU/MVE on, .data/.bss, semihosting, exit(main())),
                     a fault handler that prints the fault registers and exits 4
    mcu_fault_text.h the fault report's text, included by startup.c (shared with RISC-V's)
    syscalls.c       _sbrk bounded by the linker script's heap
    board.ld         cortex_m.ld with the board's CODE and DATA regions (and RAM pools, placement.py) filled in
    toolchain.cmake  CMake toolchain file: arm-none-eabi-gcc, the board's flags, rdimon + board.ld
    qemu_kit.cmake   mcugen_qemu_kit(target): adds startup.c and syscalls.c to an executable
    run              `run app.elf [args]`: the board's QEMU machine with semihosting; exits with
                     main()'s return value
    README.md        the same, and the gcc line for a build without CMake

A RISC-V board's kit (rv32imac, esp32-c3) has the same files but syscalls.c: picolibc's crt0 and
semihosting oslib do what Reset_Handler and syscalls.c do on Arm; startup.c is
mcu_runtime/target/riscv/startup.c (its trap handler prints mcause/mepc/mtval and exits 4),
board.ld is riscv.ld (picolibc.ld given the board's regions), toolchain.cmake names
riscv64-unknown-elf-gcc with --specs=picolibc.specs --crt0=semihost --oslib=semihost, and run
starts qemu-system-riscv32 (virt, -bios none).
"""
from __future__ import annotations

import shlex
from pathlib import Path

from emitter.boards import Board
from emitter.errors import OutputError, UsageError
from emitter.resources import data_dir
from emitter.target import placement
from emitter.target.toolchain import qemu_binary

KIT_FILES = ("startup.c", "mcu_fault_text.h", "syscalls.c", "board.ld", "toolchain.cmake", "qemu_kit.cmake", "run",
             "README.md")


# The kit README's CMake paragraph (both architectures), up to its "Without CMake:" heading
README_CMAKE = ("With CMake: configure with `-DCMAKE_TOOLCHAIN_FILE=<kit>/toolchain.cmake`, and in your\n"
                "CMakeLists.txt\n\n"
                "    include(\"${MCUGEN_QEMU_KIT}/qemu_kit.cmake\")\n"
                "    mcugen_qemu_kit(my_app)\n\n"
                "then `<kit>/run build/my_app.elf` (or `cmake --build build --target run_my_app`).\n\n"
                "Without CMake:\n\n")


def qemu_command(board: Board) -> list[str]:
    """qemu-system-arm's (RISC-V: qemu-system-riscv32's) arguments for an image of this board, without -kernel.
    RISC-V: picolibc writes stdout by the semihosting console calls (SYS_WRITEC/SYS_WRITE0), which QEMU
    sends to stderr unless the console has a chardev: stdio here, so printf reaches stdout."""
    if board.arch == "riscv":
        return [qemu_binary(board.arch), "-M", board.qemu_machine, *board.qemu_args, "-nographic", "-monitor",
                "none", "-serial", "none", "-chardev", "stdio,id=semihost",
                "-semihosting-config", "enable=on,target=native,chardev=semihost"]
    return [qemu_binary(board.arch), "-M", board.qemu_machine, *board.qemu_args, "-nographic", "-monitor", "none",
            "-serial", "none", "-semihosting-config", "enable=on,target=native"]


def kit_files(board: Board, stack_bytes: int = 0x10000) -> dict[str, str]:
    """The kit's files by name."""
    if not board.qemu_machine:
        raise UsageError(f"board {board.name} has no QEMU machine (see `mcugen boards`)")
    riscv = board.arch == "riscv"
    target = data_dir("mcu_runtime") / "target"
    ld = (target / "riscv" / "riscv.ld" if riscv else target / "cortex_m.ld").read_text()
    if not riscv:  # a multi-pool bundle's arenas at the pools' origins, as in mcugen's own test image
        ld = placement.linker_script(board) or ld
    cflags = " ".join(board.cflags)
    regions = (f"/* {board.name}: {board.qemu_machine} regions (boards/{board.core}.toml), written by mcugen "
               f"qemu-kit */\n"
               f"__mcu_code_origin = 0x{board.code_origin:x};\n__mcu_code_length = 0x{board.code_length:x};\n"
               f"__mcu_data_origin = 0x{board.data_origin:x};\n__mcu_data_length = 0x{board.data_length:x};\n"
               f"__mcu_stack_size = 0x{stack_bytes:x};\n\n")
    qemu = " ".join(shlex.quote(a) for a in qemu_command(board))
    run = ("#!/bin/sh\n"
           f"# Run a {board.name} firmware image in QEMU ({board.qemu_machine}); semihosting prints its\n"
           "# output here and QEMU exits with main()'s return value (4: a fault, see startup.c).\n"
           "# usage: run APP.elf [QEMU options...]\n"
           'if [ $# -lt 1 ]; then echo "usage: $0 APP.elf [QEMU options...]" >&2; exit 2; fi\n'
           'elf=$1; shift\n'
           f'exec {qemu} -kernel "$elf" "$@"\n')
    if riscv:
        return riscv_kit(board, cflags, regions + ld, run, stack_bytes, target)
    toolchain = (f"# CMake toolchain file for {board.name}, written by mcugen qemu-kit: arm-none-eabi-gcc with\n"
                 "# the board's flags, linked with newlib's semihosting (rdimon) and the kit's board.ld.\n"
                 "# Add the kit's start-up code to your executable: mcugen_qemu_kit(<target>) (qemu_kit.cmake).\n"
                 "set(CMAKE_SYSTEM_NAME Generic)\n"
                 "set(CMAKE_SYSTEM_PROCESSOR arm)\n"
                 "set(CMAKE_C_COMPILER arm-none-eabi-gcc)\n"
                 "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)\n"
                 f'set(CMAKE_C_FLAGS_INIT "{cflags}")\n'
                 'set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=rdimon.specs -T ${CMAKE_CURRENT_LIST_DIR}/board.ld '
                 '-Wl,--gc-sections")\n'
                 "set(CMAKE_EXECUTABLE_SUFFIX_C \".elf\")\n"
                 "set(MCUGEN_QEMU_KIT \"${CMAKE_CURRENT_LIST_DIR}\")\n")
    cmake = ("# mcugen_qemu_kit(<target>): link the kit's start-up code into an executable built with the\n"
             "# kit's toolchain.cmake, and add a `run_<target>` target that runs it in QEMU.\n"
             "set(MCUGEN_QEMU_KIT \"${CMAKE_CURRENT_LIST_DIR}\")\n"
             "function(mcugen_qemu_kit target)\n"
             "    target_sources(${target} PRIVATE \"${MCUGEN_QEMU_KIT}/startup.c\"\n"
             "                   \"${MCUGEN_QEMU_KIT}/syscalls.c\")\n"
             "    add_custom_target(run_${target} COMMAND \"${MCUGEN_QEMU_KIT}/run\" $<TARGET_FILE:${target}>\n"
             "                      DEPENDS ${target} USES_TERMINAL)\n"
             "endfunction()\n")
    readme = (f"# QEMU kit for {board.name} ({board.qemu_machine})\n\n"
              "Written by `mcugen qemu-kit`: your firmware's `main()` runs in QEMU, `printf` goes to the\n"
              "terminal by semihosting, and QEMU exits with `main()`'s return value (4 after a fault: the\n"
              "fault registers are printed).\n\n"
              + README_CMAKE +
              f"    arm-none-eabi-gcc {cflags} -O2 main.c <kit>/startup.c <kit>/syscalls.c \\\n"
              "        --specs=rdimon.specs -T <kit>/board.ld -Wl,--gc-sections -o app.elf\n"
              "    <kit>/run app.elf\n\n"
              f"Memory (board.ld): code 0x{board.code_origin:x}, {board.code_length:,} bytes; data "
              f"0x{board.data_origin:x}, {board.data_length:,} bytes, of which the top {stack_bytes:,} "
              "bytes are the stack.\n")
    return {"startup.c": (target / "startup.c").read_text(),
            "mcu_fault_text.h": (target / "mcu_fault_text.h").read_text(),
            "syscalls.c": (target / "syscalls.c").read_text(),
            "board.ld": regions + ld, "toolchain.cmake": toolchain, "qemu_kit.cmake": cmake, "run": run,
            "README.md": readme}


def riscv_kit(board: Board, cflags: str, board_ld: str, run: str, stack_bytes: int, target: Path) -> dict[str, str]:
    """A RISC-V board's kit: picolibc's crt0 and semihosting instead of Reset_Handler and syscalls.c."""
    link = "--crt0=semihost --oslib=semihost"  # with --specs=picolibc.specs, given once (gcc refuses it twice)
    toolchain = (f"# CMake toolchain file for {board.name}, written by mcugen qemu-kit: riscv64-unknown-elf-gcc\n"
                 "# with the board's flags and picolibc (its crt0 and semihosting), linked with the kit's board.ld.\n"
                 "# Add the kit's trap handler to your executable: mcugen_qemu_kit(<target>) (qemu_kit.cmake).\n"
                 "set(CMAKE_SYSTEM_NAME Generic)\n"
                 "set(CMAKE_SYSTEM_PROCESSOR riscv32)\n"
                 "set(CMAKE_C_COMPILER riscv64-unknown-elf-gcc)\n"
                 "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)\n"
                 f'set(CMAKE_C_FLAGS_INIT "{cflags} --specs=picolibc.specs")\n'
                 f'set(CMAKE_EXE_LINKER_FLAGS_INIT "{link} -T ${{CMAKE_CURRENT_LIST_DIR}}/board.ld '
                 '-Wl,--gc-sections")\n'
                 "set(CMAKE_EXECUTABLE_SUFFIX_C \".elf\")\n"
                 "set(MCUGEN_QEMU_KIT \"${CMAKE_CURRENT_LIST_DIR}\")\n")
    cmake = ("# mcugen_qemu_kit(<target>): link the kit's trap handler into an executable built with the\n"
             "# kit's toolchain.cmake, and add a `run_<target>` target that runs it in QEMU.\n"
             "set(MCUGEN_QEMU_KIT \"${CMAKE_CURRENT_LIST_DIR}\")\n"
             "function(mcugen_qemu_kit target)\n"
             "    target_sources(${target} PRIVATE \"${MCUGEN_QEMU_KIT}/startup.c\")\n"
             "    add_custom_target(run_${target} COMMAND \"${MCUGEN_QEMU_KIT}/run\" $<TARGET_FILE:${target}>\n"
             "                      DEPENDS ${target} USES_TERMINAL)\n"
             "endfunction()\n")
    readme = (f"# QEMU kit for {board.name} ({board.qemu_machine})\n\n"
              "Written by `mcugen qemu-kit`: your firmware's `main()` runs in QEMU (qemu-system-riscv32,\n"
              "`-bios none`: the image starts in M-mode), `printf` goes to the terminal by semihosting\n"
              "(picolibc), and QEMU exits with `main()`'s return value (4 after a trap: mcause, mepc and\n"
              "mtval are printed).\n\n"
              + README_CMAKE +
              f"    riscv64-unknown-elf-gcc {cflags} --specs=picolibc.specs -O2 main.c <kit>/startup.c \\\n"
              f"        {link} -T <kit>/board.ld -Wl,--gc-sections -o app.elf\n"
              "    <kit>/run app.elf\n\n"
              f"Memory (board.ld): code 0x{board.code_origin:x}, {board.code_length:,} bytes; data "
              f"0x{board.data_origin:x}, {board.data_length:,} bytes, of which the top {stack_bytes:,} "
              "bytes are the stack.\n")
    startup = (target / "riscv" / "startup.c").read_text().replace('#include "../mcu_fault_text.h"',
                                                                   '#include "mcu_fault_text.h"')
    return {"startup.c": startup, "mcu_fault_text.h": (target / "mcu_fault_text.h").read_text(),
            "board.ld": board_ld, "toolchain.cmake": toolchain, "qemu_kit.cmake": cmake, "run": run,
            "README.md": readme}


def write_kit(board: Board, out: Path) -> list[Path]:
    """Write the kit into `out` (created; the kit's own files replaced, nothing else touched)."""
    files = kit_files(board)
    if out.exists() and not out.is_dir():
        raise OutputError(f"-o {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        if name == "run":
            path.chmod(0o755)
        written.append(path)
    return written
