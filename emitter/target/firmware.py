"""Building a bundle + harness with SConstruct: a QEMU firmware image or a host executable.

Sizes of a firmware come from the ELF (`arm-none-eabi-size -A` for bytes, `objdump -h` for each
section's flags) and are split into the whole image and the model's share: the input sections
that the linker map attributes to the bundle's objects (and to CMSIS-NN, when linked).
"""
from __future__ import annotations

import itertools
import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from emitter.boards import Board
from emitter.errors import ToolchainError
from emitter.resources import data_dir
from emitter.target import placement, toolchain

_KINDS = ("text", "rodata", "data", "bss")


@dataclass(frozen=True)
class Firmware:
    """A linked test image. Sizes in bytes; `model_*` counts only the bundle's (+ CMSIS-NN's) code
    and data, the rest is harness, start-up code and newlib.

    flash = text + rodata + data (the .data initialisers are stored in flash);
    RAM = data + bss, without the stack (QemuRun.stack_bytes measures the inference's stack)."""

    elf: Path
    map_file: Path
    board: Board
    opt: str
    text: int
    rodata: int
    data: int
    bss: int
    model_text: int
    model_rodata: int
    model_data: int
    model_bss: int
    build_log: str  # compiler and linker output (warnings), as SCons printed it
    model_files: dict[str, int] = field(default_factory=dict)  # flash bytes per model object (build-relative)

    @property
    def flash(self) -> int:
        return self.text + self.rodata + self.data

    @property
    def ram(self) -> int:
        return self.data + self.bss

    @property
    def model_flash(self) -> int:
        return self.model_text + self.model_rodata + self.model_data

    @property
    def model_ram(self) -> int:
        return self.model_data + self.model_bss

    def model_code(self, name: str) -> int:
        """The model's flash beyond its weights: everything the map attributes to the bundle (and
        CMSIS-NN) but the constants of NAME_weights.c, the bundle of model `name`."""
        return self.model_flash - self.model_files.get(f"obj/bundle/{name}_weights.o", 0)


def build_firmware(bundle_dir: Path | str, glue_dir: Path | str, board: Board,
                   build_dir: Path | str, opt: str = "-O2", *, cflags: Sequence[str] = (),
                   werror: bool = False, stack_bytes: int = 0x10000,
                   cmsis_nn: Path | str | None = None, cmsis_opt: str = "-Ofast",
                   cmsis_nn_lib: Path | str | None = None, jobs: int | None = None,
                   bundle_lib: Path | str | None = None, cc: str = "gcc") -> Firmware:
    """Cross-compile bundle + harness + start-up code for `board` into build_dir/firmware.elf.

    bundle_lib: link this library of the bundle (built by its own Makefile) instead of compiling
    the bundle's sources here. cc: gcc (arm-none-eabi-gcc) or a clang (toolchain.firmware_cc),
    which compiles for --target=arm-none-eabi on newlib's headers (RISC-V: --target=riscv32-unknown-elf
    on picolibc's); arm-none-eabi-gcc (riscv64-unknown-elf-gcc) links either.

    cflags are appended to every compile and link; werror adds -Werror to the style's warnings;
    stack_bytes is the stack reserved (and measured) by the harness; cmsis_nn is a CMSIS-NN
    source tree compiled at cmsis_opt and linked, or with cmsis_nn_lib (a prebuilt CMSIS-NN
    library) only its headers are used. ToolchainError (with the compiler output) on failure.
    """
    toolchain.check_target_toolchain(board.arch)
    if cc != "gcc":
        toolchain.find_tool(cc)
    build = Path(build_dir).resolve()
    args = [f"cc={cc}",
        f"board={board.name}",
        f"cpu_flags={' '.join(board.cflags)}",
        f"code=0x{board.code_origin:x}:0x{board.code_length:x}",
        f"data=0x{board.data_origin:x}:0x{board.data_length:x}",
        f"arch={board.arch}",
        f"stack={stack_bytes}",
    ]
    if cmsis_nn is not None:
        args += [f"cmsis_nn={Path(cmsis_nn).resolve()}", f"cmsis_opt={cmsis_opt}"]
    if cmsis_nn_lib is not None:
        args.append(f"cmsis_nn_lib={Path(cmsis_nn_lib).resolve()}")
    if bundle_lib is not None:
        args.append(f"bundle_lib={Path(bundle_lib).resolve()}")
    script = placement.linker_script(board)
    if script is not None:  # the board's RAM pools at their origins
        build.mkdir(parents=True, exist_ok=True)
        ld_path = build / "firmware.ld"
        if not ld_path.is_file() or ld_path.read_text() != script:
            ld_path.write_text(script)
        args.append(f"ld_script={ld_path}")
    log = _scons(bundle_dir, glue_dir, build, opt, cflags, werror, jobs, args)
    elf = build / "firmware.elf"
    map_file = build / "firmware.map"
    totals, kinds = _section_sizes(elf, board)
    model, per_file = _model_sizes(map_file, build, kinds,
                                   tuple(Path(lib).resolve() for lib in (cmsis_nn_lib, bundle_lib) if lib is not None))
    return Firmware(elf=elf, map_file=map_file, board=board, opt=opt,
                    text=totals["text"], rodata=totals["rodata"], data=totals["data"],
                    bss=totals["bss"], model_text=model["text"], model_rodata=model["rodata"],
                    model_data=model["data"], model_bss=model["bss"], build_log=log,
                    model_files=per_file)


def build_host(bundle_dir: Path | str, glue_dir: Path | str, build_dir: Path | str,
               cflags: Sequence[str] = (), *, opt: str = "-O2", werror: bool = False,
               jobs: int | None = None, cmsis_nn: Path | str | None = None) -> Path:
    """Build the harness + bundle with the host gcc; returns build_dir/harness.

    Run it in a folder holding input.bin; it writes output.bin there (see harness_main.c).
    cflags go to compile and link, e.g. ("-fsanitize=address,undefined",)."""
    toolchain.find_tool("gcc")
    build = Path(build_dir).resolve()
    extra = ["board=host"] + ([f"cmsis_nn={Path(cmsis_nn).resolve()}"] if cmsis_nn is not None else [])
    _scons(bundle_dir, glue_dir, build, opt, cflags, werror, jobs, extra)
    return build / "harness"


def _scons(bundle_dir: Path | str, glue_dir: Path | str, build: Path, opt: str,
           cflags: Sequence[str], werror: bool, jobs: int | None, extra: list[str]) -> str:
    build.mkdir(parents=True, exist_ok=True)
    command = toolchain.scons_command() + [
        "-Q", f"-j{jobs or os.cpu_count() or 1}", "-f", str(data_dir("SConstruct")),
        f"bundle={Path(bundle_dir).resolve()}", f"glue={Path(glue_dir).resolve()}",
        f"build={build}", f"opt={opt}", f"cflags={' '.join(cflags)}",
        f"werror={int(werror)}", *extra]
    result = subprocess.run(command, cwd=build, capture_output=True, text=True, check=False)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        raise ToolchainError(f"building {Path(bundle_dir).name} ({' '.join(extra[:1])}) failed:\n"
                             f"{_tail(log)}\ncommand: {' '.join(command)}")
    return log


def _tail(text: str, lines: int = 60) -> str:
    kept = text.rstrip().splitlines()
    return "\n".join((["..."] if len(kept) > lines else []) + kept[-lines:])


def _run(tool: str, *args: str) -> str:
    result = subprocess.run([str(toolchain.find_tool(tool)), *args], capture_output=True,
                            text=True, check=False)
    if result.returncode != 0:
        raise ToolchainError(f"{tool} {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def _section_kinds(elf: Path, board: Board) -> dict[str, str]:
    """Allocated section name -> text | rodata | data | bss, from `objdump -h`: where the section
    runs (the board's CODE or DATA region) and whether it is code / has contents."""
    kinds: dict[str, str] = {}
    lines = _run(toolchain.cross_prefix(board.arch) + "objdump", "-h", str(elf)).splitlines()
    for header, flags in itertools.pairwise(lines):
        fields = header.split()
        if len(fields) < 7 or not fields[0].isdigit():
            continue
        name, size, vma = fields[1], int(fields[2], 16), int(fields[3], 16)
        flag_set = {flag.strip() for flag in flags.split(",")}
        if "ALLOC" not in flag_set or size == 0 or name == ".stack":
            continue  # picolibc.ld's (RISC-V) stack reservation: not RAM of the image, as on Arm
        if board.code_origin <= vma < board.code_origin + board.code_length:
            kinds[name] = "text" if "CODE" in flag_set else "rodata"
        elif board.data_origin <= vma < board.data_origin + board.data_length:
            kinds[name] = "data" if "LOAD" in flag_set else "bss"
        elif placement.pool_of_section(board, vma) is not None and "LOAD" not in flag_set:
            kinds[name] = "bss"  # a pool's arena at the pool's origin (placement.linker_script)
        else:
            raise ToolchainError(f"{elf}: section {name} at 0x{vma:x} lies outside the board's "
                                 f"CODE and DATA regions and its RAM pools")
    return kinds


def _section_sizes(elf: Path, board: Board) -> tuple[dict[str, int], dict[str, str]]:
    """Totals per kind from `<cross>-size -A`, and the kind of every allocated section."""
    kinds = _section_kinds(elf, board)
    totals = dict.fromkeys(_KINDS, 0)
    for line in _run(toolchain.cross_prefix(board.arch) + "size", "-A", str(elf)).splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] in kinds and fields[1].isdigit():
            totals[kinds[fields[0]]] += int(fields[1])
    return totals, kinds


# Input-section lines of a GNU ld map: " .text.f  0xADDR  0xSIZE  file", the file possibly on
# the line after a long section name.
_INPUT_ONE_LINE = re.compile(r"^ (\S+)\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)\s+(\S.*)$")
_INPUT_NAME = re.compile(r"^ (\S+)$")
_INPUT_REST = re.compile(r"^\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)\s+(\S.*)$")
_OUTPUT = re.compile(r"^(\S+)(\s|$)")


def _model_sizes(map_file: Path, build: Path, kinds: dict[str, str],
                 extra_roots: tuple[Path, ...] = ()) -> tuple[dict[str, int], dict[str, int]]:
    """Bytes per kind contributed by the bundle's objects (build/obj/bundle/), CMSIS-NN
    (build/cmsis_nn/, or a prebuilt library in extra_roots) and a front end's CMSIS-DSP
    (build/cmsis_dsp/); and the flash bytes (text, rodata, data) per such object, relative to
    build (a library's members by the library's path)."""
    model_roots = (build / "obj" / "bundle", build / "cmsis_nn", build / "cmsis_dsp", *extra_roots)
    sizes = dict.fromkeys(_KINDS, 0)
    per_file: dict[str, int] = {}
    for output, size, origin in input_sections(map_file):
        kind = kinds.get(output)
        if kind is None:
            continue
        obj = origin.split("(", 1)[0]  # "lib.a(member.o)" -> "lib.a"
        path = Path(obj) if os.path.isabs(obj) else build / obj
        if any(_is_under(path, root) for root in model_roots):
            sizes[kind] += size
            if kind != "bss":
                rel = os.path.relpath(path, build)
                per_file[rel] = per_file.get(rel, 0) + size
    return sizes, dict(sorted(per_file.items()))


def input_sections(map_file: Path) -> Iterator[tuple[str, int, str]]:
    """(output section, bytes, origin file) of every input section a GNU ld map lists."""
    text = map_file.read_text(errors="replace")
    start = text.find("Linker script and memory map")
    if start < 0:
        raise ToolchainError(f"{map_file}: not a GNU ld map file")
    output: str | None = None
    pending: str | None = None
    for line in text[start:].splitlines()[1:]:
        entry = None
        if pending is not None:
            match = _INPUT_REST.match(line)
            entry = (match.group(2), match.group(3)) if match else None
            pending = None
        if entry is None:
            match = _INPUT_ONE_LINE.match(line)
            if match:
                entry = (match.group(3), match.group(4))
            elif _INPUT_NAME.match(line) and not line.startswith(" *"):
                pending = line
                continue
            else:
                out = _OUTPUT.match(line)
                if out:
                    output = out.group(1)
                continue
        if output is not None:
            yield output, int(entry[0], 16), entry[1].strip()


def _is_under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True
