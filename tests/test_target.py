"""The cross-compile + QEMU tier: boards, host harness, firmware builds, QEMU runs, sizes.

A hand-written fake bundle stands in for generated code: two inputs (10 and 6 bytes) and two
outputs, out[i] = in[i] + 1 (wrapping) through a 256-byte const table, with one .data and one .bss
variable in the bundle so that the model's flash/RAM split has something in every section.
"""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from emitter.boards import format_board_table, list_boards, load_board
from emitter.errors import UsageError, VerifyError
from emitter.target import Firmware, build_firmware, build_host, missing_tools, run_qemu
from emitter.target.toolchain import HOST_TOOLS

CORES = ["cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55"]
INPUT_SIZES = (10, 6)
SAMPLES = 3

NET_H = """\
#ifndef NET_H
#define NET_H
#include <stdint.h>
/* Fake bundle: out[k][i] = in[k][i] + 1 (wrapping), for inputs of 10 and 6 bytes. */
int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);
extern int8_t net_fail_on; /* a first input byte that makes the call fail (status 7) */
extern int32_t net_calls;
#endif
"""
NET_C = """\
#include "net.h"
#include "mcu_fake.h"
int8_t net_fail_on = 0x55;  /* .data */
int32_t net_calls;          /* .bss */
static const uint8_t net_sizes[2] = {10u, 6u};
int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)
{
    ++net_calls;
    if (inputs[0][0] == net_fail_on) {
        return 7;
    }
    for (int k = 0; k < 2; ++k) {
        mcu_fake_add_one_s8(inputs[k], outputs[k], net_sizes[k]);
    }
    return 0;
}
"""
FAKE_H = """\
#ifndef MCU_FAKE_H
#define MCU_FAKE_H
#include <stdint.h>
void mcu_fake_add_one_s8(const int8_t *input, int8_t *output, uint32_t size);
#endif
"""
FAKE_C = """\
#include "mcu_fake.h"
/* 256-entry table in flash: (x + 1) wrapping, indexed by x + 128. */
static const int8_t mcu_fake_lut[256] = {
#define R(b) (int8_t)(b + 1), (int8_t)(b + 2), (int8_t)(b + 3), (int8_t)(b + 4)
#define R16(b) R(b), R(b + 4), R(b + 8), R(b + 12)
    R16(-128), R16(-112), R16(-96), R16(-80), R16(-64), R16(-48), R16(-32), R16(-16),
    R16(0), R16(16), R16(32), R16(48), R16(64), R16(80), R16(96), R16(112)};
void mcu_fake_add_one_s8(const int8_t *input, int8_t *output, uint32_t size)
{
    for (uint32_t i = 0; i < size; ++i) {
        output[i] = mcu_fake_lut[input[i] + 128];
    }
}
"""
GLUE_H = """\
#include "net.h"
#define GLUE_NUM_INPUTS 2
#define GLUE_NUM_OUTPUTS 2
#define GLUE_INPUT_BYTES 16
#define GLUE_OUTPUT_BYTES 16
static const unsigned long glue_input_sizes[GLUE_NUM_INPUTS] = {10, 6};
static const unsigned long glue_output_sizes[GLUE_NUM_OUTPUTS] = {10, 6};
static int glue_run(const int8_t *const *inputs, int8_t *const *outputs) { return net_run_multi(inputs, outputs); }
"""


def _samples(count: int = SAMPLES, first: int = 0) -> bytes:
    data = bytes((first + 37 * i) % 256 for i in range(count * sum(INPUT_SIZES)))
    # never start a sample with 0x55 (the fake's failure trigger) unless asked to
    return bytes(b if i % 16 or b != 0x55 else 0x56 for i, b in enumerate(data))


def _expected(data: bytes) -> bytes:
    return bytes((b + 1) % 256 for b in data)  # outputs are laid out like the inputs


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("fake")
    bundle, glue = root / "net", root / "glue"
    (bundle / "mcu_runtime" / "include").mkdir(parents=True)
    glue.mkdir()
    (bundle / "net.h").write_text(NET_H)
    (bundle / "net.c").write_text(NET_C)
    (bundle / "mcu_runtime" / "include" / "mcu_fake.h").write_text(FAKE_H)
    (bundle / "mcu_runtime" / "mcu_fake_add_one_s8.c").write_text(FAKE_C)
    (glue / "model_glue.h").write_text(GLUE_H)
    return bundle, glue


@pytest.fixture(scope="module", autouse=True)
def plugin_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    old = os.environ.get("MCUGEN_CACHE_DIR")
    os.environ["MCUGEN_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        del os.environ["MCUGEN_CACHE_DIR"]
    else:
        os.environ["MCUGEN_CACHE_DIR"] = old


def _skip_unless(tools: tuple[str, ...] | None = None) -> None:
    missing = missing_tools(tools) if tools else missing_tools()
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))


# ---- boards --------------------------------------------------------------------------------

def test_unknown_board_lists_valid_names() -> None:
    with pytest.raises(UsageError) as info:
        load_board("arduino-uno")
    message = str(info.value)
    assert "arduino-uno" in message
    for name in CORES + ["nucleo-l4r5zi", "rp2040"]:
        assert name in message


@pytest.mark.parametrize(("name", "core", "ram_kib", "flash_kib"), [
    ("nucleo-l4r5zi", "cortex-m4", 640, 2048),
    ("nucleo-h7a3zi-q", "cortex-m7", 1380, 2048),
    ("stm32f746g-disco", "cortex-m7", 320, 1024),
    ("nrf52840-dk", "cortex-m4", 256, 1024),
    ("rp2040", "cortex-m0plus", 264, 2048),
    ("blackpill-f411", "cortex-m4", 128, 512),
    ("nano33-ble", "cortex-m4", 256, 1024),
])
def test_named_boards(name: str, core: str, ram_kib: int, flash_kib: int) -> None:
    board = load_board(name.upper())
    generic = load_board(core)
    assert board.core == core
    assert (board.ram_bytes, board.flash_bytes) == (ram_kib << 10, flash_kib << 10)
    assert not board.is_generic and generic.is_generic
    assert (board.qemu_machine, board.qemu_args) == (generic.qemu_machine, generic.qemu_args)
    assert (board.code_origin, board.data_origin) == (generic.code_origin, generic.data_origin)
    assert board.ram_bytes <= generic.data_length  # its test image fits the QEMU machine


def test_board_aliases_and_table() -> None:
    assert load_board("m4") == load_board("cortex-m4")
    assert load_board("pico").name == "rp2040"
    assert "-mfpu=fpv5-sp-d16" in load_board("stm32f746g-disco").cflags  # SP-only FPU on F74x
    assert load_board("cortex-m55").has_mve and not load_board("cortex-m33").has_mve
    names = [board.name for board in list_boards()]
    assert names[:6] == CORES
    table = format_board_table()
    assert "nucleo-h7a3zi-q" in table and "mps3-an547" in table and "640 KiB" in table


# ---- host ----------------------------------------------------------------------------------

def test_host_harness(fake: tuple[Path, Path], tmp_path: Path) -> None:
    _skip_unless(HOST_TOOLS)
    exe = build_host(*fake, tmp_path / "build", werror=True)
    run = tmp_path / "run"
    run.mkdir()
    data = _samples()
    (run / "input.bin").write_bytes(data)
    result = subprocess.run([str(exe)], cwd=run, capture_output=True, text=True, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert (run / "output.bin").read_bytes() == _expected(data)
    assert not (run / "stack.txt").exists()  # target builds only

    (run / "input.bin").write_bytes(data[:20])  # 1.25 samples
    result = subprocess.run([str(exe)], cwd=run, capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "ends inside sample 1" in result.stderr


# ---- QEMU ----------------------------------------------------------------------------------

def _size_a(path: Path) -> dict[str, int]:
    out = subprocess.run(["arm-none-eabi-size", "-A", str(path)], capture_output=True, text=True,
                         check=True).stdout
    sizes: dict[str, int] = {}
    for line in out.splitlines()[2:]:
        fields = line.split()
        if len(fields) == 3 and fields[1].isdigit():
            sizes[fields[0]] = int(fields[1])
    return sizes


def _check_sizes(firmware: Firmware) -> None:
    # Totals: every allocated section of `size -A`, and the Berkeley total.
    sections = _size_a(firmware.elf)
    kept = {name: size for name, size in sections.items()
            if not name.startswith((".debug", ".comment", ".ARM.attributes"))}
    assert firmware.text == kept[".text"]
    assert firmware.rodata == sum(kept.get(n, 0) for n in (".rodata", ".init_array", ".ARM.exidx",
                                                           ".ARM.extab"))
    assert (firmware.data, firmware.bss) == (kept[".data"], kept[".bss"])
    berkeley = subprocess.run(["arm-none-eabi-size", str(firmware.elf)], capture_output=True,
                              text=True, check=True).stdout.splitlines()[1].split()
    assert firmware.text + firmware.rodata + firmware.data + firmware.bss == int(berkeley[3])
    # Model share: exactly the bundle's objects (nothing of the fake is garbage-collected).
    objects = sorted((firmware.elf.parent / "obj" / "bundle").rglob("*.o"))
    assert len(objects) == 2
    expected = dict.fromkeys(("text", "rodata", "data", "bss"), 0)
    for obj in objects:
        for name, size in _size_a(obj).items():
            kind = name.split(".")[1] if name.count(".") >= 1 else ""
            if kind in expected:
                expected[kind] += size
    got = {"text": firmware.model_text, "rodata": firmware.model_rodata,
           "data": firmware.model_data, "bss": firmware.model_bss}
    assert got == expected
    assert firmware.model_rodata >= 256 and firmware.model_data >= 1 and firmware.model_bss >= 4
    assert firmware.model_flash <= firmware.flash and firmware.model_ram <= firmware.ram


@pytest.mark.qemu
@pytest.mark.parametrize("core", CORES)
def test_qemu_core(core: str, fake: tuple[Path, Path], tmp_path: Path) -> None:
    _skip_unless()
    board = load_board(core)
    firmware = build_firmware(*fake, board, tmp_path / "build", werror=True)
    _check_sizes(firmware)

    data = _samples()
    runs = []
    for attempt in range(2):
        work = tmp_path / f"run{attempt}"
        work.mkdir()
        (work / "input.bin").write_bytes(data)
        run = run_qemu(firmware.elf, board, work, timeout=60)
        assert (run.exit_code, run.stdout) == (0, "")
        assert (work / "output.bin").read_bytes() == _expected(data)
        assert (work / "stack.txt").is_file()
        runs.append(run)
    first, second = runs
    assert len(first.instructions) == SAMPLES and all(count > 0 for count in first.instructions)
    assert first.instructions == second.instructions
    assert first.stack_bytes is not None and 0 < first.stack_bytes < 1024
    assert first.stack_bytes == second.stack_bytes
    print(f"{core}: {first.instructions[0]} instructions/inference, stack {first.stack_bytes} B, "
          f"flash {firmware.flash} (model {firmware.model_flash}), RAM {firmware.ram} "
          f"(model {firmware.model_ram})")


@pytest.mark.qemu
def test_qemu_failures(fake: tuple[Path, Path], tmp_path: Path) -> None:
    _skip_unless()
    board = load_board("cortex-m4")
    firmware = build_firmware(*fake, board, tmp_path / "build")
    work = tmp_path / "run"
    work.mkdir()

    # A failing call: status line, exit 3, the other samples still written.
    data = bytearray(_samples())
    data[16] = 0x55
    (work / "input.bin").write_bytes(bytes(data))
    run = run_qemu(firmware.elf, board, work, check=False)
    assert (run.exit_code, run.stdout) == (3, "status=7\n")
    assert len(run.instructions) == SAMPLES
    with pytest.raises(VerifyError, match=r"(?s)exited with 3.*status=7"):
        run_qemu(firmware.elf, board, work, count_instructions=False)

    # No input file: exit 1 with the harness's message.
    (work / "input.bin").unlink()
    with pytest.raises(VerifyError, match="cannot open input.bin"):
        run_qemu(firmware.elf, board, work)


@pytest.mark.qemu
def test_qemu_hardfault(fake: tuple[Path, Path], tmp_path: Path) -> None:
    _skip_unless()
    bundle = tmp_path / "faulty"
    (bundle / "mcu_runtime" / "include").mkdir(parents=True)
    (bundle / "net.h").write_text(NET_H)
    (bundle / "net.c").write_text(
        '#include "net.h"\n'
        "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)\n"
        "{\n    (void)inputs;\n    (void)outputs;\n"
        "    return *(volatile const int *)0xF0000000u; /* no memory there: bus fault */\n}\n")
    board = load_board("cortex-m3")
    firmware = build_firmware(bundle, fake[1], board, tmp_path / "build")
    work = tmp_path / "run"
    work.mkdir()
    (work / "input.bin").write_bytes(_samples(1))
    with pytest.raises(VerifyError, match=r"(?s)exited with 4.*HardFault.*BFAR=0xf0000000.*PC=0x"):
        run_qemu(firmware.elf, board, work, timeout=30)


@pytest.mark.qemu
def test_qemu_timeout(fake: tuple[Path, Path], tmp_path: Path) -> None:
    _skip_unless()
    bundle = tmp_path / "hang"
    (bundle / "mcu_runtime" / "include").mkdir(parents=True)
    (bundle / "net.h").write_text(NET_H)
    (bundle / "net.c").write_text(
        '#include "net.h"\n'
        "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)\n"
        "{\n    (void)inputs;\n    (void)outputs;\n"
        "    for (;;) {\n        __asm__ volatile(\"\" ::: \"memory\");\n    }\n}\n")
    board = load_board("cortex-m3")
    firmware = build_firmware(bundle, fake[1], board, tmp_path / "build")
    work = tmp_path / "run"
    work.mkdir()
    (work / "input.bin").write_bytes(_samples(1))
    with pytest.raises(VerifyError, match="did not finish in 1.5 s and was killed"):
        run_qemu(firmware.elf, board, work, timeout=1.5)
