"""Every object of a bundle's library is built for the target core (issue #22, items 1 and 2).

The bundle's Makefile compiled CMSIS-NN (and a front end's CMSIS-DSP) without the CPU flags of
CFLAGS, so the README's drop-in line `make CC=arm-none-eabi-gcc CFLAGS="-O2 -mcpu=..."` gave
ARMv4T, ARM-state, soft-float CMSIS objects next to the bundle's own: a hard-float firmware did
not link ("uses VFP register arguments, libnet.a(arm_softmax_s8.o) does not").

For both backends (portable, cmsis-nn), each with and without a feature front end (the keyword
example's model and examples/keyword_audio/frontend.toml), the library is built every documented
way -- make with the CPU in CFLAGS (the drop-in line), make CPU_FLAGS=..., plain
`make CC=arm-none-eabi-gcc` (the board's flags), CMake add_subdirectory() under a toolchain file,
a standalone CMake build, SConstruct -- and EVERY object of every archive (CMSIS-NN's and
CMSIS-DSP's included) is read with arm-none-eabi-readelf -A: Tag_CPU_name, Tag_CPU_arch,
Tag_THUMB_ISA_use (and no Tag_ARM_ISA_use), Tag_FP_arch, Tag_ABI_VFP_args and Tag_MVE_arch must
equal those of an object compiled with the core's own flags. All ways on cortex-m4 hard float; the
drop-in line also on cortex-m55 and cortex-m0plus soft float, whose libraries are then linked
into the QEMU harness (SConstruct bundle_lib=) and run bit-exact with the golden model (front
end: the features equal the cmsisdsp reference, the network output the golden model's on them).

Builds are shared within the module (one per core, variant and way). The slow tier runs the
README's drop-in line with --backend cmsis-nn on cortex-m4, -m7 and -m55 for four shared models,
bit-exact with TFLM's reference outputs in QEMU.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import Board, load_board
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.features.sources import cmsis_dsp_path
from emitter.render.bundle import render_bundle
from emitter.render.frontend import FrontEnd
from emitter.render.write import write_bundle
from emitter.target import missing_tools
from tests.features_cases import KWS_MODEL, KWS_SPEC
from tests.harness.bundles import ARM_TOOLCHAIN_CMAKE as TOOLCHAIN
from tests.harness.bundles import SHARED_MODELS, shared_model
from tests.harness.cmsis import CMSIS_NN, NO_CMSIS

MISSING = missing_tools(("make", "cmake", "scons", "arm-none-eabi-gcc"))
pytestmark = pytest.mark.skipif(bool(MISSING), reason="needs " + "; ".join(MISSING))
DSP = cmsis_dsp_path(required=False)
NO_DSP = "CMSIS-DSP's sources are absent (python -m emitter.features.sources fetch)"
QEMU_MISSING = missing_tools()
needs_qemu = pytest.mark.skipif(bool(QEMU_MISSING), reason="the QEMU tier needs " + "; ".join(QEMU_MISSING))

# The tags that say which core, instruction set, FPU and float ABI an object was built for.
TAGS = ("Tag_CPU_name", "Tag_CPU_arch", "Tag_ARM_ISA_use", "Tag_THUMB_ISA_use", "Tag_FP_arch",
        "Tag_ABI_VFP_args", "Tag_MVE_arch")
# What gcc 12 writes for each core's flags (the reference object must agree: see core_tags).
EXPECTED = {
    "cortex-m4": {"Tag_CPU_name": '"7E-M"', "Tag_THUMB_ISA_use": "Thumb-2", "Tag_ABI_VFP_args": "VFP registers"},
    "cortex-m7": {"Tag_CPU_name": '"7E-M"', "Tag_THUMB_ISA_use": "Thumb-2", "Tag_ABI_VFP_args": "VFP registers"},
    "cortex-m55": {"Tag_CPU_name": '"cortex-m55"', "Tag_THUMB_ISA_use": "Yes", "Tag_ABI_VFP_args": "VFP registers"},
    "cortex-m0plus": {"Tag_CPU_name": '"6S-M"', "Tag_THUMB_ISA_use": "Thumb-1", "Tag_ABI_VFP_args": None},
}
VARIANTS = ("portable", "portable+frontend", "cmsis-nn", "cmsis-nn+frontend")
WAYS = ("make-cflags", "make-cpu-flags", "make-board", "cmake-project", "cmake-standalone", "scons")
PROJECT = """cmake_minimum_required(VERSION 3.13)
project(firmware C)
add_subdirectory(${BUNDLE} net)
add_executable(firmware main.c)
target_link_libraries(firmware PRIVATE net m)
"""
MAIN = """#include "net.h"
{include}
int main(void)
{{
    static int8_t in[NET_INPUT_SIZE], out[NET_OUTPUT_SIZE];
{features}    if (net_init() != NET_OK) return 1;
    return net_run(in, out);
}}
"""


def run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, " ".join(cmd) + "\n" + res.stdout[-3000:] + res.stderr[-3000:]
    return res


def requires(variant: str) -> None:
    if variant.startswith("cmsis-nn") and CMSIS_NN is None:
        pytest.skip(NO_CMSIS)
    if variant.endswith("+frontend") and DSP is None:
        pytest.skip(NO_DSP)


# ---- reading the attributes --------------------------------------------------------------------

def object_tags(path: Path) -> dict[str, dict[str, str]]:
    """readelf -A of an object, an archive (every member) or an ELF: name -> {tag: value}."""
    text = run(["arm-none-eabi-readelf", "-A", str(path)]).stdout
    blocks = re.split(r"^File: ", text, flags=re.M)
    if len(blocks) == 1:  # a single object: no "File:" line
        blocks = ["", f"{path.name}\n{text}"]
    return {block.split("\n", 1)[0].strip(): dict(re.findall(r"^\s+(Tag_\w+): (.*)$", block, flags=re.M))
            for block in blocks[1:]}


def members(archive: Path) -> list[str]:
    return run(["arm-none-eabi-ar", "t", str(archive)]).stdout.split()


def wanted(tags: dict[str, str]) -> dict[str, str | None]:
    return {t: tags.get(t) for t in TAGS}


@cache
def core_tags(core: str, scratch: Path) -> dict[str, str | None]:
    """The tags of an object compiled with the core's board flags (and gcc 12's values checked)."""
    src = scratch / f"ref_{core}.c"
    src.write_text("float ref_scale(float x) { return 2.0f * x; }\n")
    run(["arm-none-eabi-gcc", *load_board(core).cflags, "-O2", "-c", str(src), "-o", str(src.with_suffix(".o"))])
    tags = wanted(object_tags(src.with_suffix(".o"))[src.with_suffix(".o").name])
    for tag, value in EXPECTED[core].items():
        assert tags[tag] == value, (core, tag, tags)
    assert tags["Tag_ARM_ISA_use"] is None, tags  # Thumb only: no ARM-state code
    return tags


def check_archive(archive: Path, core: str, scratch: Path) -> dict[str, int]:
    """Every member of `archive` carries the core's tags; returns member counts by origin."""
    want = core_tags(core, scratch)
    names = members(archive)
    tags = object_tags(archive)
    read = {name.split("(", 1)[1].rstrip(")") for name in tags}
    assert read == set(names), f"{archive}: readelf read {len(read)} of {len(names)} members"
    wrong = {name: wanted(t) for name, t in tags.items() if wanted(t) != want}
    assert not wrong, (f"{archive}: {len(wrong)} of {len(tags)} objects not built for {core} "
                       f"({want}); e.g. {sorted(wrong.items())[:3]}")
    return {"objects": len(names), "arm_": sum(n.startswith("arm_") for n in names)}


# ---- bundles and their builds (shared within the module) ---------------------------------------

@dataclass(frozen=True)
class Bundle:
    variant: str
    board: Board
    folder: Path
    compiled: Compiled
    frontend: FrontEnd | None
    dsp_files: int  # CMSIS-DSP sources the front end lists (0 without one)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("abi")


_BUNDLES: dict[tuple[str, str, str], Bundle] = {}
_BUILDS: dict[tuple[str, str, str], list[Path]] = {}


def make_bundle(core: str, variant: str, scratch: Path, way: str = "") -> Bundle:
    """The keyword model for `core` with the variant's backend and front end; a separate copy per
    build way (each build keeps its own objects in the bundle folder)."""
    key = (core, variant, way)
    if key not in _BUNDLES:
        from emitter.features import load_spec
        from emitter.render.frontend import bind

        board = load_board(core)
        cmsis = variant.startswith("cmsis-nn")
        c = compile_model(KWS_MODEL, name="net", backend="cmsis-nn" if cmsis else "portable", board=board,
                          cmsis_path=CMSIS_NN if cmsis else None)
        fe = bind(load_spec(KWS_SPEC), c) if variant.endswith("+frontend") else None
        folder = scratch / f"{core}-{variant}-{way or 'src'}" / "net"
        write_bundle(render_bundle(c, " ".join(board.cflags), board.name, fe), folder)
        listing = folder / "cmsis_dsp_sources.txt"
        dsp_files = len(listing.read_text().split()) if listing.is_file() else 0
        _BUNDLES[key] = Bundle(variant, board, folder, c, fe, dsp_files)
    return _BUNDLES[key]


def lib_vars(b: Bundle) -> list[str]:
    out = []
    if b.variant.startswith("cmsis-nn"):
        out.append(f"CMSIS_NN_PATH={CMSIS_NN}")
    if b.frontend is not None:
        out.append(f"CMSIS_DSP_PATH={DSP}")
    return out


def build(core: str, variant: str, way: str, scratch: Path) -> list[Path]:
    """Build the bundle `way`; returns the archives holding its objects (lib<name>.a first)."""
    key = (core, variant, way)
    if key in _BUILDS:
        return _BUILDS[key]
    b = make_bundle(core, variant, scratch, way)
    flags = " ".join(b.board.cflags)
    jobs = f"-j{os.cpu_count() or 2}"
    if way.startswith("make"):
        extra = {"make-cflags": [f"CFLAGS=-O2 {flags}"], "make-cpu-flags": [f"CPU_FLAGS={flags}"],
                 "make-board": []}[way]
        res = run(["make", jobs, "CC=arm-none-eabi-gcc", *extra, *lib_vars(b)], cwd=b.folder)
        assert "warning" not in res.stderr.lower(), res.stderr
        archives = [b.folder / "libnet.a"]
    elif way.startswith("cmake"):
        root = b.folder.parent
        defines = [f"-D{v}" for v in lib_vars(b)]
        if way == "cmake-project":
            (root / "app").mkdir()
            (root / "app" / "CMakeLists.txt").write_text(PROJECT)
            fe = b.frontend is not None
            features = "    static int16_t pcm[6400];\n    if (net_features(pcm, in) != 0) return 2;\n"
            (root / "app" / "main.c").write_text(MAIN.format(include='#include "net_frontend.h"' if fe else "",
                                                             features=features if fe else ""))
            (root / "tc.cmake").write_text(TOOLCHAIN.format(flags=flags))
            source, defines = root / "app", [f"-DBUNDLE={b.folder}", *defines]
        else:
            (root / "tc.cmake").write_text(TOOLCHAIN.format(flags=""))  # the bundle adds the board's flags
            source = b.folder
        out = root / "build"
        configured = run(["cmake", "-S", str(source), "-B", str(out), f"-DCMAKE_TOOLCHAIN_FILE={root / 'tc.cmake'}",
                          *defines])
        assert "CMake Warning" not in configured.stderr, configured.stderr
        run(["cmake", "--build", str(out), jobs])
        found = sorted(out.rglob("*.a"), key=lambda p: (p.name != "libnet.a", p.name))
        assert found and found[0].name == "libnet.a", found
        if way == "cmake-project":
            found.append(out / "firmware")  # linked: one float ABI throughout
        archives = found
    else:  # scons: the QEMU harness's own build of bundle, CMSIS-NN and CMSIS-DSP from source
        from emitter.target.firmware import build_firmware
        from emitter.verify.harness import write_glue

        glue = b.folder.parent / "glue"
        write_glue(b.compiled, glue)
        fw = build_firmware(b.folder, glue, b.board, b.folder.parent / "fw", jobs=os.cpu_count() or 2,
                            cmsis_nn=CMSIS_NN if b.variant.startswith("cmsis-nn") else None)
        objs = fw.elf.parent
        archives = sorted(objs.rglob("*.a")) + sorted(objs.rglob("*.o")) + [fw.elf]
    _BUILDS[key] = archives
    return archives


def check_build(core: str, variant: str, way: str, scratch: Path) -> None:
    requires(variant)
    b = make_bundle(core, variant, scratch, way)
    want = core_tags(core, scratch)
    counts = {"objects": 0, "arm_": 0}
    for path in build(core, variant, way, scratch):
        if path.suffix == ".a":
            for k, v in check_archive(path, core, scratch).items():
                counts[k] += v
        else:  # an object or a linked image
            for name, tags in object_tags(path).items():
                assert wanted(tags) == want, (path, name, wanted(tags), want)
            counts["objects"] += path.suffix == ".o"
            counts["arm_"] += path.name.startswith("arm_")
    # CMSIS-NN's 113 kernels (v7.0.0, without the float ones) and the front end's CMSIS-DSP files were read
    cmsis = 100 if variant.startswith("cmsis-nn") else 0
    assert counts["arm_"] >= cmsis + b.dsp_files, counts
    if not variant.startswith("cmsis-nn") and b.frontend is None:
        assert counts["arm_"] == 0, counts


# Every way for the bundle alone and for the bundle with all three kinds of objects (its own,
# CMSIS-NN's, CMSIS-DSP's); the other two variants by the drop-in line here and in the QEMU test
# (with CPU_FLAGS or the board's flags the libraries' flags do not depend on the variant).
# The default tier builds the variant that holds all three kinds every way; the rest is the slow tier
# (bash scripts/test.sh -m slow).
M4_CASES = ([(v, w) for v in ("portable", "cmsis-nn+frontend") for w in WAYS]
            + [(v, "make-cflags") for v in ("portable+frontend", "cmsis-nn")])
DEFAULT_TIER = ("cmsis-nn+frontend", "portable")


def tiered(cases: list[tuple[str, str]]) -> list[object]:
    return [pytest.param(v, w, marks=() if v == DEFAULT_TIER[0] or (v, w) == (DEFAULT_TIER[1], "make-cflags")
                         else pytest.mark.slow) for v, w in cases]


@pytest.mark.parametrize("variant,way", tiered(M4_CASES))
def test_every_object_built_for_cortex_m4_hard_float(variant: str, way: str, scratch: Path) -> None:
    check_build("cortex-m4", variant, way, scratch)


# ---- the drop-in line on M55 and M0+, and the libraries run in QEMU ------------------------------

QEMU_CORES = ("cortex-m4", "cortex-m55", "cortex-m0plus")


@needs_qemu
@pytest.mark.qemu
@pytest.mark.parametrize("variant", [pytest.param(v, marks=() if v in DEFAULT_TIER else pytest.mark.slow)
                                     for v in VARIANTS])
@pytest.mark.parametrize("core", QEMU_CORES)
def test_drop_in_make_library_runs_bit_exact_in_qemu(core: str, variant: str, scratch: Path) -> None:
    """`make CC=arm-none-eabi-gcc CFLAGS="-O2 <core flags>"`: every object built for the core, and
    lib<name>.a linked into the harness (nothing of the bundle compiled by SCons) runs bit-exact."""
    from emitter.target.firmware import build_firmware
    from emitter.target.qemu import run_qemu
    from emitter.verify.harness import run_folder, unpack, write_glue

    check_build(core, variant, "make-cflags", scratch)
    b = make_bundle(core, variant, scratch, "make-cflags")
    work = b.folder.parent
    glue = work / "glue"
    c = b.compiled
    if b.frontend is None:
        samples = load_samples(c)
        write_glue(c, glue)
    else:
        from emitter.verify.frontend import glue_text
        from tests.features_cases import speech_clips

        fe = b.frontend
        clips = [np.resize(p, fe.window_samples).astype(np.int16) for p in speech_clips()[:4]]
        samples = [[p.view(np.int8)] for p in clips]
        glue.mkdir(parents=True, exist_ok=True)
        (glue / "model_glue.h").write_text(glue_text(fe, c, "window"))
    fw = build_firmware(b.folder, glue, b.board, work / "fw", bundle_lib=b.folder / "libnet.a",
                        jobs=os.cpu_count() or 2)
    assert not (work / "fw" / "obj" / "bundle").exists()
    assert wanted(object_tags(fw.elf)[fw.elf.name]) == core_tags(core, scratch)
    run_dir = run_folder(work / "run", samples)
    run_qemu(fw.elf, b.board, run_dir, count_instructions=False)
    raw = (run_dir / "output.bin").read_bytes()
    if b.frontend is None:
        got = unpack(c, raw, len(samples))
        for k, s in enumerate(samples):
            for g, w in zip(got[k], golden_run(c, s), strict=True):
                np.testing.assert_array_equal(g, w, err_msg=f"sample {k}")
        return
    from emitter.features.reference import features_raw, quantize_raw, to_layout

    fe = b.frontend
    spec, q = fe.spec, fe.quant
    per_in, per_out = fe.input_size, int(np.prod(c.output_shapes[0]))
    assert len(raw) == (per_in + per_out) * len(clips)
    for k, pcm in enumerate(clips):
        row = raw[k * (per_in + per_out):(k + 1) * (per_in + per_out)]
        features = np.frombuffer(row[:per_in], np.int8)
        want = to_layout(spec, quantize_raw(spec, q, features_raw(spec, pcm, fe.frames)))
        np.testing.assert_array_equal(features, np.asarray(want).ravel(), err_msg=f"features of clip {k}")
        gold = golden_run(c, [features.reshape(c.input_shapes[0])])[0]
        np.testing.assert_array_equal(np.frombuffer(row[per_in:], np.int8), gold.ravel(), err_msg=f"clip {k}")


def load_samples(c: Compiled, count: int = 3) -> list[list[np.ndarray]]:
    from emitter.verify.run import load_inputs

    return load_inputs(c, None, count, seed=22)


# ---- slow: the README's drop-in line, cmsis-nn, shared models, TFLM's outputs ---------------------

SLOW_MODELS = ("mlperf_kws_dscnn", "mlperf_ic_resnet8", "mlperf_ad_fc_autoencoder", "tflm_micro_speech")
DROP_IN = {"cortex-m4": "-O2 -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16",
           "cortex-m7": "-O2 -mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16",
           "cortex-m55": "-O2 -mcpu=cortex-m55 -mthumb -mfloat-abi=hard"}


@pytest.mark.slow
@needs_qemu
@pytest.mark.qemu
@pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present (a fresh clone)")
@pytest.mark.skipif(CMSIS_NN is None, reason=NO_CMSIS)
@pytest.mark.parametrize("core", tuple(DROP_IN))
@pytest.mark.parametrize("name", SLOW_MODELS)
def test_readme_drop_in_make_cmsis_nn_bit_exact_with_tflm(name: str, core: str, tmp_path: Path) -> None:
    """The README's drop-in build with --backend cmsis-nn: `make CC=arm-none-eabi-gcc CFLAGS="-O2
    -mcpu=... -mfloat-abi=hard ..."`; the firmware links (one float ABI) and runs TFLM's inputs
    bit-exact with tflm_outputs in QEMU."""
    from emitter.target.firmware import build_firmware
    from emitter.target.qemu import run_qemu
    from emitter.verify.harness import pack, unpack, write_glue
    from emitter.verify.run import load_inputs

    board = load_board(core)
    c = compile_model(shared_model(name), name="net", backend="cmsis-nn", board=board, cmsis_path=CMSIS_NN)
    b = tmp_path / "net"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), b)
    res = run(["make", f"-j{os.cpu_count() or 2}", "CC=arm-none-eabi-gcc", f"CFLAGS={DROP_IN[core]}",
               f"CMSIS_NN_PATH={CMSIS_NN}"], cwd=b)
    assert "warning" not in res.stderr.lower(), res.stderr
    check_archive(b / "libnet.a", core, tmp_path)
    ref = SHARED_MODELS / name / f"{name}_ref.npz"
    samples = load_inputs(c, str(ref), 0)
    write_glue(c, tmp_path / "glue")
    fw = build_firmware(b, tmp_path / "glue", board, tmp_path / "fw", bundle_lib=b / "libnet.a")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "input.bin").write_bytes(pack(samples))
    run_qemu(fw.elf, board, tmp_path / "run", count_instructions=False)
    got = np.stack([o[0] for o in unpack(c, (tmp_path / "run" / "output.bin").read_bytes(), len(samples))])
    np.testing.assert_array_equal(got, np.load(ref)["tflm_outputs"][:len(samples)].reshape(got.shape))
