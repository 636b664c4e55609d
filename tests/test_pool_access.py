"""Memory pools in the QEMU test image, measured: where each pool's arena is linked, and how many
data bytes the inference loads and stores in each (mcu_runtime/qemu_plugin/insn_count.c range=).

a. The plugin on a hand-written cortex-m55 firmware whose accesses are known byte for byte: two
   arrays (one in .bss.mcugen_dtcm, linked at the DTCM's 0x30000000; one in .bss, in the ISRAM),
   volatile word/halfword/byte and MVE vector (also predicated) loads and stores between the
   markers, more outside them; the
   instruction count equals the run without ranges.
b. digits (examples/) on cortex-m55 with a fastest pool too small for the plan: two arenas, the
   dtcm one at 0x30000000+, the isram one at 0x31000000+ (nm), bit-exact with the golden model,
   the same instructions as the one-arena build, and the bytes accessed in `mcugen verify`'s figures.
c. VWW (../shared) on cortex-m55 with --pool dtcm=32768: bit-exact with TFLM, >= 80 % of the
   arena bytes accessed in dtcm, instructions <= the one-arena build's.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model, golden_run
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.resources import data_dir
from emitter.target.placement import arena_ranges, linker_script, pool_regions
from emitter.target.qemu import run_qemu
from emitter.target.toolchain import missing_tools
from emitter.verify.harness import run_in_qemu, unpack, write_glue
from emitter.verify.run import load_inputs, pool_accesses
from tests.harness.bundles import SHARED_MODELS, shared_model

MISSING = missing_tools()
pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(bool(MISSING), reason="the QEMU tier needs missing tools: " + "; ".join(MISSING)),
]
REPO = Path(__file__).resolve().parents[1]
M55 = load_board("cortex-m55")

# ---- a. the plugin on known accesses ----------------------------------------------------------

KNOWN_C = r"""
#include <arm_mve.h>
#include <stdint.h>
#include "mcu_markers.h"

uint32_t fast[8] __attribute__((section(".bss.mcugen_dtcm"), aligned(16)));
int8_t vec[32] __attribute__((section(".bss.mcugen_dtcm"), aligned(16)));
uint8_t slow[12] __attribute__((aligned(4)));

int main(void)
{
    volatile uint32_t *f = fast;
    volatile uint8_t *s = slow;
    volatile uint16_t *h = (volatile uint16_t *)slow;
    uint32_t sum = 0;
    f[0] = 7u; /* before the start marker: not counted */
    MCU_MARK_START();
    for (uint32_t i = 0; i < 8u; ++i) {
        f[i] = i;                 /* 8 word stores: 32 bytes stored in dtcm */
    }
    for (uint32_t i = 0; i < 8u; ++i) {
        sum += f[i];              /* 8 word loads: 32 bytes loaded from dtcm */
    }
    for (uint32_t i = 0; i < 12u; ++i) {
        s[i] = (uint8_t)(sum + i); /* 12 byte stores in isram */
    }
    for (uint32_t i = 0; i < 3u; ++i) {
        sum += h[i];              /* 3 halfword loads: 6 bytes loaded from isram */
    }
    /* MVE (QEMU runs these in helpers): a 16-byte vector load and store in dtcm, and a predicated
       store of 5 lanes: 16 loaded, 21 stored */
    int8x16_t v = vld1q_s8(vec);
    vst1q_s8(vec + 16, vaddq_n_s8(v, 1));
    vst1q_p_s8(vec, v, vctp8q(5));
    MCU_MARK_END();
    sum += f[1] + s[0];           /* after the end marker: not counted */
    return sum == 0u ? 1 : 0;
}
"""


def _build_known(work: Path) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    (work / "main.c").write_text(KNOWN_C)
    script = linker_script(M55)
    assert script is not None
    (work / "firmware.ld").write_text(script)
    runtime = data_dir("mcu_runtime")
    elf = work / "known.elf"
    command = ["arm-none-eabi-gcc", *M55.cflags, "-O1", "-Wall", "-Wextra", "-Werror",
               "-I", str(runtime / "harness"), "-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections",
               "--specs=rdimon.specs", "-T", str(work / "firmware.ld"),
               f"-Wl,--defsym=__mcu_code_origin=0x{M55.code_origin:x}",
               f"-Wl,--defsym=__mcu_code_length=0x{M55.code_length:x}",
               f"-Wl,--defsym=__mcu_data_origin=0x{M55.data_origin:x}",
               f"-Wl,--defsym=__mcu_data_length=0x{M55.data_length:x}",
               str(work / "main.c"), str(runtime / "target" / "startup.c"),
               str(runtime / "target" / "syscalls.c"), "-o", str(elf)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return elf


def _symbols(elf: Path) -> dict[str, tuple[int, int]]:
    out = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    return {f[3]: (int(f[0], 16), int(f[1], 16)) for f in (line.split() for line in out.splitlines()) if len(f) == 4}


def test_linker_script_places_only_pools_qemu_models():
    assert [p.name for p in pool_regions(M55)] == ["dtcm"]  # isram's origin is DATA's: stays in .bss
    assert pool_regions(load_board("cortex-m4")) == ()  # one implicit pool
    assert pool_regions(load_board("stm32h743")) == ()  # a named board: QEMU runs its generic core
    assert linker_script(load_board("cortex-m4")) is None
    assert "POOL_dtcm (rw) : ORIGIN = 0x30000000, LENGTH = 0x80000" in (linker_script(M55) or "")


def test_plugin_counts_known_accesses_per_range(tmp_path):
    elf = _build_known(tmp_path)
    syms = _symbols(elf)
    assert syms["fast"][0] >= 0x30000000 and syms["vec"][0] >= 0x30000000
    assert {syms["fast"][1], syms["vec"][1]} == {32}
    assert 0x31000000 <= syms["slow"][0] < 0x31400000 and syms["slow"][1] == 12
    plain = run_qemu(elf, M55, tmp_path)
    ranges = {"fast": syms["fast"], "vec": syms["vec"], "slow": syms["slow"]}
    counted = run_qemu(elf, M55, tmp_path, ranges=ranges)
    assert counted.instructions == plain.instructions and len(plain.instructions) == 1
    assert plain.accesses == () and plain.laps == ((),)
    assert counted.accesses == ({"fast": (32, 32), "vec": (16, 16 + 5), "slow": (6, 12)},)
    assert counted.laps == ((),)  # the range fields are not laps


def test_plugin_rejects_a_bad_range(tmp_path):
    elf = _build_known(tmp_path)
    with pytest.raises(Exception, match="range=NAME:START:LENGTH"):
        run_qemu(elf, M55, tmp_path, ranges={"dtcm": (0x30000000, 0)})


# ---- b. digits with two pools ------------------------------------------------------------------

def _build_and_run(c, work: Path, samples, pool_accesses_on: bool | None = None):
    bundle = work / "bundle"
    write_bundle(render_bundle(c, " ".join(M55.cflags), M55.name), bundle)
    write_glue(c, work / "glue")
    fw, run = run_in_qemu(bundle, work / "glue", M55, work, samples, arena_prefix=c.name,
                          pool_accesses=pool_accesses_on)
    return fw, run, unpack(c, (run.workdir / "output.bin").read_bytes(), len(samples))


def test_digits_two_pools_placed_counted_and_bit_exact(tmp_path):
    model = REPO / "examples" / "digits_cnn_int8.onnx"
    two = compile_model(model, name="digits", board=M55, pools=(("dtcm", 1024),))
    one = compile_model(model, name="digits", board=M55)
    assert two.pools is not None and two.pools.multi
    samples = load_inputs(two, str(REPO / "examples" / "digits_heldout.npz"), 2)
    gold = [golden_run(two, s) for s in samples]
    fw, run, got = _build_and_run(two, tmp_path / "two", samples)
    ranges = arena_ranges(fw.elf, M55, "digits")
    assert set(ranges) == {"dtcm", "isram"}
    assert ranges["dtcm"][0] == 0x30000000 and ranges["dtcm"][1] == two.pools.pools[0].used
    assert 0x31000000 <= ranges["isram"][0] < 0x31400000
    for k, (g, q) in enumerate(zip(gold, got, strict=True)):
        np.testing.assert_array_equal(q[0], g[0], err_msg=f"sample {k}")
    assert run.ranges == ranges and len(run.accesses) == len(samples)
    figures = pool_accesses(run)
    assert all(figures[p]["loaded"] > 0 and figures[p]["stored"] > 0 for p in ("dtcm", "isram"))
    assert figures["dtcm"]["share"] + figures["isram"]["share"] == pytest.approx(1.0)
    _, single, got_single = _build_and_run(one, tmp_path / "one", samples)
    assert single.accesses == ()  # one arena: counting stays off by default
    for multi, whole in zip(run.instructions, single.instructions, strict=True):
        assert multi <= whole  # placement moves buffers, it adds no instruction
    for g, q in zip(gold, got_single, strict=True):
        np.testing.assert_array_equal(q[0], g[0])


# ---- c. VWW with a 32 KiB DTCM (acceptance) ------------------------------------------------------

def _vww_runs(tmp_path):
    name = "mlperf_vww_mobilenetv1"
    ref = np.load(SHARED_MODELS / name / f"{name}_ref.npz")
    two = compile_model(shared_model(name), name="net", board=M55, pools=(("dtcm", 32768),))
    assert two.pools is not None and two.pools.multi
    samples = [[x.astype(np.int8).reshape(two.input_shapes[0])] for x in ref["inputs"][:2]]
    fw, run, got = _build_and_run(two, tmp_path / "two", samples)
    return name, ref, samples, run, got


@pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
def test_vww_dtcm_32k_takes_most_accesses(tmp_path):
    _name, ref, _samples, run, got = _vww_runs(tmp_path)
    for k, q in enumerate(got):
        np.testing.assert_array_equal(q[0], ref["tflm_outputs"][k].reshape(q[0].shape),
                                      err_msg=f"sample {k} differs from TFLM")
    figures = pool_accesses(run)
    assert figures["dtcm"]["address"] == 0x30000000
    assert figures["dtcm"]["share"] >= 0.80, figures


@pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
def test_vww_dtcm_32k_adds_no_instruction(tmp_path):
    name, _ref, samples, run, _got = _vww_runs(tmp_path)
    one = compile_model(shared_model(name), name="net", board=M55)
    _, single, _ = _build_and_run(one, tmp_path / "one", samples, pool_accesses_on=False)
    # per sample (VWW's counts depend on the input): placement moves buffers, it adds no instruction
    for k, (multi, whole) in enumerate(zip(run.instructions, single.instructions, strict=True)):
        assert multi <= whole, f"sample {k}: {multi:,} instructions with two pools, {whole:,} with one arena"
