"""CMSIS-NN's 4-bit-weight calls (emitter/kernels/cmsis_s4.py, issue 24) against the golden model.

Without CMSIS_NN_PATH the CMSIS-NN tests skip (CMSIS-NN is the user's library). With it:
a. the layout: CMSIS-NN's nibbles in order, low first (as arm_nnfunctions.h documents), and the
   inverse of mcugen's packings;
b. each mapping (FC per tensor, conv through every wrapper branch, depthwise) bit-exact with the
   golden model and the portable backend: on the host (CMSIS-NN's plain C) and in QEMU on
   cortex-m0plus, m4, m7 and m55, one merged image per core; the layers CMSIS-NN computes wrongly
   stay mcugen's, each with its reason;
c. the cause of the cortex-m55 depthwise mismatch, three ways: arm-none-eabi-gcc 12.2.1 loads the
   constant lane mask 0x0F0F as 0xFFFF; QEMU executes the predicated VRSHL/VSHR right; the s4
   depthwise layer with the quirk bypassed is wrong on cortex-m55 in exactly its odd channels;
d. a whole int4 model (tests/harness/int4_models.py) with --backend cmsis-nn bit-exact in QEMU;
e. the kernel choice of the s4 kernels (cost tables' s4 rows, or mcugen's kernel when unmeasured).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

from emitter.backends import kernel_choice
from emitter.backends.cost_cases import Shape, onnx_of, random_case, shape_of
from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.kernels import cmsis_quirks
from emitter.kernels.cmsis_s4 import cmsis_pack, cmsis_unpack
from emitter.kernels.mcu_conv2d_s4 import pack_filter as pack_conv
from emitter.kernels.mcu_conv2d_s4 import unpack_rows
from emitter.kernels.mcu_depthwise_conv2d_s4 import pack_filter as pack_dw
from emitter.kernels.mcu_depthwise_conv2d_s4 import unpack_filter
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.kit import write_kit
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_verify
from tests.harness.cmsis import CMSIS_NN
from tests.harness.qemu import MergedCase, run_merged

MISSING = missing_tools()
needs_cmsis = pytest.mark.skipif(CMSIS_NN is None, reason="CMSIS_NN_PATH is not set (CMSIS-NN is the user's library)")
needs_qemu = pytest.mark.skipif(bool(MISSING), reason="the QEMU tier needs missing tools: " + "; ".join(MISSING))
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")
ISA = {"cortex-m0plus": "c", "cortex-m4": "dsp", "cortex-m7": "dsp", "cortex-m55": "mve"}


# ---- a. layout ---------------------------------------------------------------------------------

def test_cmsis_pack_is_in_order_low_nibble_first() -> None:
    assert cmsis_pack(np.array([1, 2, 3, 4])).view(np.uint8).tolist() == [0x21, 0x43]  # arm_nnfunctions.h
    assert cmsis_pack(np.array([-8, 7, -1])).view(np.uint8).tolist() == [0x78, 0x0F]  # odd count: high nibble 0
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 64, 99):
        w = rng.integers(-8, 8, n).astype(np.int8)
        assert (cmsis_unpack(cmsis_pack(w), n) == w).all()
    with pytest.raises(ValueError):
        cmsis_pack(np.array([8]))


@pytest.mark.parametrize("ch", [1, 3, 8, 13, 22])
def test_unpacking_mcugens_layouts(ch: int) -> None:
    rng = np.random.default_rng(ch)
    f = rng.integers(-8, 8, (1, 3, 3, ch)).astype(np.int8)
    assert (unpack_filter(pack_dw(f), 9, ch) == f.reshape(9, ch)).all()
    w = rng.integers(-8, 8, (5, 3, 3, ch)).astype(np.int8)
    assert (unpack_rows(pack_conv(w).reshape(5, -1), 9 * ch) == w.reshape(5, -1)).all()


# ---- b. the mappings, host and QEMU ---------------------------------------------------------

def pads(p: int) -> dict[str, int]:
    return {"pt": p, "pb": p, "pl": p, "pr": p}


# label -> (shape, kernel on c / dsp / mve: the CMSIS-NN call, or mcugen's kernel where refused)
CV, DW, FC = "arm_convolve_wrapper_s4", "arm_depthwise_conv_wrapper_s4", "arm_fully_connected_s4"
DW4, FC4 = "mcu_depthwise_conv2d_s4", "mcu_fully_connected_s4"
CASES: dict[str, tuple[Shape, tuple[str, str, str]]] = {
    "conv_3x3_pad": (Shape("conv", 8, 8, 8, 16, 3, 3, **pads(1), bits=4), (CV, CV, CV)),
    "conv_1x1_odd": (Shape("conv", 6, 6, 7, 5, 1, 1, bits=4), (CV, CV, CV)),
    "conv_1x1_s2": (Shape("conv", 7, 7, 6, 9, 1, 1, 2, 2, bits=4), (CV, CV, CV)),
    "conv_1xn": (Shape("conv", 1, 12, 4, 6, 1, 3, pl=1, pr=1, bits=4), (CV, CV, CV)),
    "conv_odd_k": (Shape("conv", 9, 9, 3, 6, 5, 5, 2, 2, **pads(2), bits=4), (CV, CV, CV)),
    "conv_even_k": (Shape("conv", 7, 7, 2, 5, 3, 3, bits=4), (CV, CV, CV)),
    "conv_dilated_batch2": (Shape("conv", 8, 8, 5, 4, 3, 3, dh=2, dw=2, batches=2, bits=4), (CV, CV, CV)),
    "dw_opt": (Shape("dw", 9, 9, 6, 6, 3, 3, **pads(1), bits=4), (DW, DW, DW4)),
    "dw_opt_odd": (Shape("dw", 8, 7, 11, 11, 3, 3, 2, 2, **pads(1), bits=4), (DW, DW, DW4)),
    "dw_mult2": (Shape("dw", 9, 9, 4, 8, 3, 3, **pads(1), bits=4), (DW, DW, DW)),
    "dw_dilated": (Shape("dw", 10, 10, 6, 6, 3, 3, dh=2, dw=2, **pads(2), bits=4), (DW, DW, DW)),
    "dw_odd_mult3": (Shape("dw", 9, 9, 3, 9, 3, 3, bits=4), (DW4, DW4, DW4)),
    "fc_odd": (Shape("fc", c_in=37, c_out=11, per_channel=0, bits=4), (FC, FC, FC)),
    "fc_batch2": (Shape("fc", c_in=64, c_out=10, batches=2, per_channel=0, bits=4), (FC, FC, FC)),
    "fc_per_channel": (Shape("fc", c_in=32, c_out=7, per_channel=1, bits=4), (FC4, FC4, FC4)),
}
LABELS = tuple(CASES)


def case_model(label: str, root: Path) -> Path:
    path = root / f"{label}.onnx"
    if not path.is_file():
        shape = CASES[label][0]
        onnx.save(onnx_of([random_case(label, shape, LABELS.index(label) + 1)]), path)
    return path


def sample(c: Compiled, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, c.graph.t(n).shape).astype(np.int8) for n in c.graph.inputs]


def cmsis_compile(path: Path, core: str, name: str = "net") -> Compiled:
    return compile_model(str(path), name=name, backend="cmsis-nn", board=load_board(core), cmsis_path=CMSIS_NN,
                         cmsis_choice="cmsis", numerics="tflite")


def layer_kernel(c: Compiled) -> str:
    """The kernel of the case's conv / depthwise / FC layer (the transposes around it aside)."""
    ks = [p.kernel for p in c.prepared if p.kernel and "transpose_s8" not in p.kernel]
    assert len(ks) == 1, ks
    return ks[0]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("s4_cases")
    for label in LABELS:
        case_model(label, root)
    return root


@needs_cmsis
@pytest.mark.parametrize("core", CORES)
def test_mapped_calls_and_refusals(core: str, models: Path) -> None:
    """Each case takes the CMSIS-NN s4 call on each code path, or keeps mcugen's kernel with the
    reason the quirk names (odd C_in depthwise; the gcc 12.2.1 MVE predicate; per-channel FC)."""
    for label, (_, want) in CASES.items():
        c = cmsis_compile(case_model(label, models), core)
        kernel = layer_kernel(c)
        assert kernel == want[("c", "dsp", "mve").index(ISA[core])], label
        if kernel.startswith("mcu_"):
            why = " ".join(w for _, k, w in c.portable_layers if k == kernel)
            assert {"dw_opt": "0x0F0F", "dw_opt_odd": "0x0F0F", "dw_odd_mult3": "odd number of input channels",
                    "fc_per_channel": "per tensor only"}[label] in why, (label, why)


@needs_cmsis
@pytest.mark.parametrize("label", LABELS)
def test_mapping_bit_exact_on_host(label: str, models: Path, tmp_path: Path) -> None:
    """The host build runs CMSIS-NN's plain C path (scratch planned for it): equal to the golden."""
    c = cmsis_compile(case_model(label, models), "cortex-m4")
    b = load_board("cortex-m4")
    write_bundle(render_bundle(c, " ".join(b.cflags), b.name), tmp_path / "b")
    rep = run_verify(c, tmp_path / "b", b, str(case_model(label, models)), None, 3, qemu=False, work=tmp_path / "w")
    assert rep.ok, rep.text()


@pytest.mark.qemu
@needs_cmsis
@needs_qemu
@pytest.mark.parametrize("core", CORES)
def test_mappings_bit_exact_in_qemu(core: str, models: Path, tmp_path: Path) -> None:
    """ONE image per core: every case with the portable backend and with CMSIS-NN's s4 calls;
    both equal the golden model."""
    merged, golden = [], {}
    for k, label in enumerate(LABELS):
        path = case_model(label, models)
        c = cmsis_compile(path, core, f"c{k}")
        portable = compile_model(str(path), name=f"p{k}", board=load_board(core), numerics="tflite")
        x = sample(c, k)
        golden[label] = golden_run(c, x)
        merged += [MergedCase(label, portable, x), MergedCase(f"{label}@cmsis", c, x)]
    run = run_merged(merged, load_board(core), tmp_path, cmsis_nn=CMSIS_NN, werror=True)
    assert run.run.exit_code == 0, (run.run.exit_code, sorted(run.failures))
    bad = []
    for i, mc in enumerate(merged):
        out = run.outputs[i]
        assert out is not None, mc.label
        want = golden[mc.label.split("@")[0]]
        for got, g in zip(out, want, strict=True):
            if not np.array_equal(got.reshape(g.shape), g):
                bad.append(f"{mc.label}: {int((got.reshape(g.shape) != g).sum())}/{g.size} differ")
    assert not bad, bad


# ---- c. the cortex-m55 depthwise mismatch: its cause ---------------------------------------------

PREDICATE_C = """#include <arm_mve.h>
int32x4_t low_nibbles(int32x4_t a) { return vrshlq_m_n_s32(a, 28, 0x0F0F); }
"""


def test_m55_cause_gcc_loads_the_constant_lane_mask_as_all_lanes(tmp_path: Path) -> None:
    """The cause, compiled: CMSIS-NN's `vrshlq_m_n_s32(x, 28, lower_nibble_mask)` with the constant
    mask 0x0F0F (lanes 0 and 2) becomes `mov rN, #-1; vmsr P0, rN` (all lanes) with
    arm-none-eabi-gcc 12.2.1 at -O1 and above; at -O0 the mask is 3855. If this fails, the compiler
    is fixed: cmsis_quirks.mve_s4_depthwise_problem can be narrowed to the affected compilers."""
    if "arm-none-eabi-gcc" in " ".join(MISSING):
        pytest.skip("no arm-none-eabi-gcc")
    (tmp_path / "p.c").write_text(PREDICATE_C)
    version = subprocess.run(["arm-none-eabi-gcc", "-dumpversion"], capture_output=True, text=True).stdout.strip()

    def asm(opt: str) -> str:
        return subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", opt, "-S",
                               str(tmp_path / "p.c"), "-o", "-"], capture_output=True, text=True, check=True).stdout
    assert "3855" in asm("-O0")
    o2 = asm("-O2")
    assert re.search(r"mov\s+(r\d+), #-1\s+@ movhi\n(?:.*\n)*?\s+vmsr\s+P0, \1", o2), (version, o2)
    assert "3855" not in o2
    assert cmsis_quirks.S4_DW_NIBBLE_MASK == 3855 and "0x0F0F" in cmsis_quirks.S4_DW_MVE_CAUSE


QEMU_PREDICATE_C = r"""#include <arm_mve.h>
#include <stdio.h>
int main(void) {
    int32x4_t a = {0xa7, -100, 0x35, -15}, r = a;
    uint32_t p = 0x0F0F, s = 28;
    __asm__ volatile("vmsr p0, %[p]\n vpst\n vrshlt.s32 %q[r], %[s]" : [r] "+w"(r) : [p] "r"(p), [s] "r"(s));
    __asm__ volatile("vmsr p0, %[p]\n vpst\n vshrt.s32 %q[r], %q[r], #24" : [r] "+w"(r) : [p] "r"(p));
    printf("lanes %ld %ld %ld %ld\n", (long)vgetq_lane_s32(r, 0), (long)vgetq_lane_s32(r, 1),
           (long)vgetq_lane_s32(r, 2), (long)vgetq_lane_s32(r, 3));
    return 0;
}
"""


@pytest.mark.qemu
@needs_qemu
def test_m55_cause_qemu_executes_the_predicated_shifts_right(tmp_path: Path) -> None:
    """Not QEMU: the same two predicated instructions with the mask really in P0 (inline assembly)
    shift lanes 0 and 2 only (0xa7 -> 0x70 << 4 = 112, 0x35 -> 0x50 = 80) and keep lanes 1 and 3."""
    board = load_board("cortex-m55")
    write_kit(board, tmp_path / "kit")
    (tmp_path / "q.c").write_text(QEMU_PREDICATE_C)
    elf = tmp_path / "q.elf"
    subprocess.run(["arm-none-eabi-gcc", *board.cflags, "-O1", "-ffunction-sections", str(tmp_path / "q.c"),
                    str(tmp_path / "kit" / "startup.c"), str(tmp_path / "kit" / "syscalls.c"),
                    "--specs=rdimon.specs", "-T", str(tmp_path / "kit" / "board.ld"), "-Wl,--gc-sections",
                    "-o", str(elf)], check=True, capture_output=True)
    out = subprocess.run([str(tmp_path / "kit" / "run"), str(elf)], capture_output=True, text=True, timeout=60)
    assert "lanes 112 -100 80 -15" in out.stdout, out.stdout + out.stderr


@pytest.mark.qemu
@needs_cmsis
@needs_qemu
def test_m55_cause_the_bypassed_quirk_breaks_exactly_the_odd_channels(models: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """CMSIS-NN's s4 depthwise opt path on cortex-m55 with the quirk bypassed: every even channel
    right, odd ones (the high nibbles, lanes 1 and 3) wrong; with the quirk the layer stays
    mcugen's and is bit-exact. (CMSIS-NN's own depthwise_int4_1 vectors: 227 of 462 wrong the same way.)"""
    path = case_model("dw_opt", models)
    with_quirk = cmsis_compile(path, "cortex-m55", "q")
    monkeypatch.setattr("emitter.kernels.cmsis_s4.mve_s4_depthwise_problem", lambda c: None)
    bypassed = cmsis_compile(path, "cortex-m55", "b")
    assert layer_kernel(with_quirk) == DW4 and layer_kernel(bypassed) == DW
    x = sample(bypassed, 7)
    want = golden_run(bypassed, x)[0]
    run = run_merged([MergedCase("quirk", with_quirk, x), MergedCase("bypassed", bypassed, x)],
                     load_board("cortex-m55"), tmp_path, cmsis_nn=CMSIS_NN)
    assert run.outputs[0] is not None and run.outputs[1] is not None
    assert np.array_equal(run.outputs[0][0].reshape(want.shape), want)
    got = run.outputs[1][0].reshape(want.shape)  # NCHW: [1, C, H, W]
    wrong = (got != want).reshape(want.shape[1], -1).any(axis=1)  # per channel (a clamped one may agree)
    assert not wrong[0::2].any() and wrong[1::2].any(), wrong


# ---- d. a whole int4 model -------------------------------------------------------------------

@pytest.mark.qemu
@needs_cmsis
@needs_qemu
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_int4_model_cmsis_bit_exact_in_qemu(core: str, tmp_path: Path) -> None:
    """tests/harness/int4_models.py's depthwise model (conv, depthwise, FC, int4 per tensor),
    CMSIS-NN on every s4 layer it takes, verified on the host and in QEMU."""
    from tests.harness import int4_models
    path = int4_models.model("depthwise", tmp_path / "m", per_channel=False)
    b = load_board(core)
    c = compile_model(str(path), name="net", backend="cmsis-nn", board=b, cmsis_path=CMSIS_NN, cmsis_choice="cmsis",
                      numerics="tflite")
    ks = [p.kernel for p in c.prepared if p.kernel]
    assert any(k.startswith("arm_") and k.endswith("_s4") for k in ks), ks
    write_bundle(render_bundle(c, " ".join(b.cflags), b.name), tmp_path / "b")
    rep = run_verify(c, tmp_path / "b", b, str(path), None, 2, qemu=True, work=tmp_path / "w")
    assert rep.ok, rep.text()


# ---- e. kernel choice --------------------------------------------------------------------------

@needs_cmsis
def test_s4_layers_have_their_own_shape_and_group(models: Path) -> None:
    c = compile_model(str(case_model("conv_3x3_pad", models)), name="net", board=load_board("cortex-m4"),
                      numerics="tflite")
    p = next(p for p in c.prepared if p.kernel == "mcu_conv2d_s4")
    s = shape_of(p)
    assert s is not None and s.bits == 4 and s.as_list()[-1] == 4
    assert replace(s, bits=8).as_list() == s.as_list()[:-1]  # 8-bit rows list as before
    assert kernel_choice.cmsis_fn(s, "dsp").endswith("_s4")


@needs_cmsis
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_s4_choice_follows_the_measured_table(core: str, models: Path) -> None:
    """Each case's default choice: the cost table's s4 rows (an exact hit where the table holds the
    shape), and mcugen's kernel where CMSIS-NN's s4 call was never measured."""
    isa = ISA[core]
    for label in LABELS:
        c = compile_model(str(case_model(label, models)), name="net", board=load_board(core), numerics="tflite")
        p = next(p for p in c.prepared if p.kernel and p.kernel.endswith("_s4"))
        ch = kernel_choice.choose(p, 0, core, isa)
        assert ch is not None, label
        if ch.source == "unmeasured":
            assert ch.ours_wins and "never measured" in kernel_choice.reason(ch)
        else:
            assert ch.ours > 0 and ch.cmsis > 0
