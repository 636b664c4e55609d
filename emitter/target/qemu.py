"""Running a firmware image in qemu-system-arm (or -riscv32) with semihosting and the instruction-count plugin.

The harness (mcu_runtime/harness/harness_main.c) reads input.bin and writes output.bin and
stack.txt in QEMU's working directory; the plugin (mcu_runtime/qemu_plugin/insn_count.c) writes
one executed-instruction count per inference. The image's exit codes are in EXIT_MEANING.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from emitter.boards import Board
from emitter.errors import ToolchainError, VerifyError
from emitter.resources import cache_dir as resources_cache_dir
from emitter.resources import data_dir
from emitter.target import toolchain

EXIT_MEANING = {
    0: "success",
    1: "harness file error (input.bin missing or truncated, output not writable)",
    3: "the model returned a non-zero status (status=<code> lines on stdout)",
    4: "unexpected exception, e.g. HardFault (fault registers on stderr)",
    5: "the inference overflowed the reserved stack (rebuild with a larger stack_bytes)",
}
COUNTS_FILE = "insn_counts.txt"


@dataclass(frozen=True)
class QemuRun:
    """One QEMU run. instructions: executed instructions per inference, in sample order (empty
    without the plugin); stack_bytes: the deepest inference stack (None if stack.txt is absent);
    laps: per inference, the instructions between lap markers (a per-layer profile build);
    accesses: per inference, the data bytes loaded and stored in each range of run_qemu's ranges=."""

    exit_code: int
    stdout: str
    stderr: str
    instructions: tuple[int, ...]
    stack_bytes: int | None
    command: tuple[str, ...]
    workdir: Path
    laps: tuple[tuple[int, ...], ...] = ()
    # per inference, range name -> (bytes loaded, bytes stored) in it (run_qemu's ranges=)
    accesses: tuple[dict[str, tuple[int, int]], ...] = ()
    ranges: dict[str, tuple[int, int]] | None = None  # the ranges= counted: name -> (address, bytes)


def run_qemu(elf: Path | str, board: Board, workdir: Path | str, timeout: float = 120,
             count_instructions: bool = True, *, check: bool = True,
             ranges: Mapping[str, tuple[int, int]] | None = None) -> QemuRun:
    """Run `elf` on the board's QEMU machine with cwd=workdir (which must hold input.bin).

    Stale output.bin/stack.txt/counts are removed first. QEMU is killed after `timeout` seconds
    (VerifyError). ranges: name -> (address, bytes); the plugin then also counts the data bytes
    loaded and stored in each per inference (QemuRun.accesses; memory callbacks on every access, so
    slower; needs count_instructions). With check=True a non-zero exit raises VerifyError quoting the image's output
    (ToolchainError when QEMU itself failed); with check=False the QemuRun is returned as is."""
    qemu = toolchain.find_tool(toolchain.qemu_binary(board.arch))
    work = Path(workdir).resolve()
    elf_path = Path(elf).resolve()
    for stale in ("output.bin", "stack.txt", COUNTS_FILE):
        (work / stale).unlink(missing_ok=True)
    command = [str(qemu), "-M", board.qemu_machine, *board.qemu_args, "-nographic",
               "-monitor", "none", "-serial", "none",
               "-semihosting-config", "enable=on,target=native", "-kernel", str(elf_path)]
    if count_instructions:
        plugin, counts = (str(p).replace(",", ",,") for p in (build_plugin(), work / COUNTS_FILE))
        spans = "".join(f",range={name}:0x{start:x}:0x{size:x}" for name, (start, size) in (ranges or {}).items())
        command += ["-plugin", f"{plugin},out={counts},arch={board.arch}{spans}"]  # QEMU syntax: "," doubled
    try:
        result = subprocess.run(command, cwd=work, stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, errors="replace", timeout=timeout, check=False)
    except subprocess.TimeoutExpired as expired:
        output = _text(expired.stdout) + _text(expired.stderr)
        raise VerifyError(f"{elf_path.name} on {board.name} ({board.qemu_machine}) did not finish "
                          f"in {timeout:g} s and was killed; a hang, or raise timeout=.\n"
                          f"{output[-2000:]}") from None
    run = QemuRun(exit_code=result.returncode, stdout=result.stdout, stderr=result.stderr,
                  instructions=_read_counts(work / COUNTS_FILE) if count_instructions else (),
                  laps=_read_laps(work / COUNTS_FILE) if count_instructions else (),
                  accesses=_read_accesses(work / COUNTS_FILE) if count_instructions and ranges else (),
                  ranges=dict(ranges) if count_instructions and ranges else None,
                  stack_bytes=_read_stack(work / "stack.txt"), command=tuple(command),
                  workdir=work)
    if check and run.exit_code != 0:
        _raise(run, elf_path, board)
    return run


def _raise(run: QemuRun, elf: Path, board: Board) -> None:
    where = f"{elf.name} on {board.name} ({board.qemu_machine})"
    qemu = toolchain.qemu_binary(board.arch)
    if f"{qemu}:" in run.stderr:
        raise ToolchainError(f"{qemu} failed for {where} (exit {run.exit_code}):\n"
                             f"{run.stderr.strip()}\ncommand: {' '.join(run.command)}")
    meaning = EXIT_MEANING.get(run.exit_code, "unknown exit code")
    details = "\n".join(part for part in (run.stdout.strip(), run.stderr.strip()) if part)
    raise VerifyError(f"{where} exited with {run.exit_code}: {meaning}"
                      + (f"\n{details[-4000:]}" if details else ""))


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _read_counts(path: Path) -> tuple[int, ...]:
    """One count per inference: the first number of each line the plugin wrote."""
    if not path.is_file():
        return ()
    return tuple(int(line.split()[0]) for line in path.read_text().splitlines() if line.strip())


def _read_laps(path: Path) -> tuple[tuple[int, ...], ...]:
    """Per inference, the instructions between lap markers (empty without lap markers)."""
    if not path.is_file():
        return ()
    return tuple(tuple(int(v) for v in line.split()[1:] if ":" not in v)
                 for line in path.read_text().splitlines() if line.strip())


def _read_accesses(path: Path) -> tuple[dict[str, tuple[int, int]], ...]:
    """Per inference, range name -> (bytes loaded, bytes stored): the "NAME:LOADED:STORED" fields."""
    if not path.is_file():
        return ()
    result = []
    for line in path.read_text().splitlines():
        fields = [v.rsplit(":", 2) for v in line.split()[1:] if ":" in v]
        if line.strip():
            result.append({name: (int(loaded), int(stored)) for name, loaded, stored in fields})
    return tuple(result)


def _read_stack(path: Path) -> int | None:
    if not path.is_file():
        return None
    text = path.read_text().strip()
    return int(text) if text.isdigit() else None


def build_plugin(cache_dir: Path | str | None = None) -> Path:
    """The instruction-count plugin, built once per plugin source into a cache folder.

    Default cache: resources.cache_dir ($MCUGEN_CACHE_DIR, else $XDG_CACHE_HOME/mcugen, else
    ~/.cache/mcugen)."""
    source = data_dir("mcu_runtime") / "qemu_plugin" / "insn_count.c"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    target = Path(cache_dir if cache_dir is not None else resources_cache_dir("")) / f"insn_count-{digest}.so"
    if target.is_file():
        return target
    toolchain.find_tool("gcc")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        command = toolchain.scons_command() + [
            "-Q", "-f", str(data_dir("SConstruct")), "plugin=1", f"build={scratch}"]
        result = subprocess.run(command, cwd=scratch, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ToolchainError(f"building the QEMU plugin failed:\n{result.stdout}{result.stderr}")
        os.replace(Path(scratch) / "insn_count.so", target)  # atomic: safe for parallel tests
    return target
