"""Separately generated bundles link into one firmware (issue 25 item 2).

Every external symbol of a bundle's mcu_runtime/ ends in the bundle's variant,
_<optimize>_<isa>_<hash> (render/runtime_files.py: variant_tag, the hash of the board's CPU flags
and the runtime's sources), renamed by the #defines of the bundle's mcu_config.h. So:
- every external symbol any runtime file defines is renamed (host gcc and arm-none-eabi-gcc for
  cortex-m55, whose MVE paths are the most files), nothing is left under its plain name;
- two bundles of KWS, `--optimize speed` (`fast`) and `--optimize size` (`small`), link into one
  program (host gcc) and one cortex-m4 QEMU firmware: nm shows each model's object calling its own
  variant's kernels and both variants' kernels in the image, and both run bit-exact with the golden
  model and TFLM's reference outputs;
- bundles made with the same options share the variant and ship byte-identical runtime files:
  one copy is as good as the other, and the linker keeps one.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.cli import main
from emitter.compiler import compile_model, golden_run
from emitter.render.runtime_files import runtime_symbols
from emitter.resources import data_dir
from emitter.target import missing_tools
from emitter.verify.run import load_inputs
from tests.test_multi_model import DIGITS, KWS, REPO, WARN, main_c, needs_qemu, needs_shared, run

RUNTIME = data_dir("mcu_runtime")


def runtime_sources() -> list[str]:
    return sorted(p.relative_to(RUNTIME).as_posix() for d in ("kernels", "support")
                  for p in (RUNTIME / d).glob("*.c") if not p.stem.endswith("_ref"))


def variant(bundle: Path) -> str:
    m = re.search(r'#define MCU_VARIANT "(\w+)"', (bundle / "mcu_runtime/include/mcu_config.h").read_text())
    assert m is not None
    return m.group(1)


def defined(nm: str, path: Path) -> set[str]:
    out = run([nm, "--defined-only", "-g", str(path)], path.parent).stdout
    return {f[2] for f in (line.split() for line in out.splitlines()) if len(f) == 3}


def undefined(nm: str, path: Path) -> set[str]:
    return set(run([nm, "-u", str(path)], path.parent).stdout.split()) - {"U"}


@pytest.mark.parametrize("cc, flags", [("gcc", ()), ("arm-none-eabi-gcc", tuple(load_board("cortex-m55").cflags))])
def test_every_runtime_symbol_gets_the_variant(cc: str, flags: tuple[str, ...], tmp_path: Path) -> None:
    if missing_tools((cc,)):
        pytest.skip(f"{cc} is missing")
    names = set(runtime_symbols())
    nm = "nm" if cc == "gcc" else "arm-none-eabi-nm"
    found: set[str] = set()
    for rel in runtime_sources():
        obj = tmp_path / (Path(rel).stem + ".o")
        run([cc, *flags, "-O2", "-std=c99", f"-I{RUNTIME / 'include'}", "-c", str(RUNTIME / rel), "-o", str(obj)],
            tmp_path)
        found |= defined(nm, obj)
    assert found and found <= names, sorted(found - names)


def two_bundles(tmp: Path, cc: str) -> dict[str, Path]:
    out = {}
    for name, optimize in (("fast", "speed"), ("small", "size")):
        out[name] = tmp / name
        assert main([str(KWS), "--board=cortex-m4", "--name", name, "--optimize", optimize, "-o", str(out[name]),
                     "--quiet"]) == 0
        run(["make", "-j2", f"CC={cc}", f"WARN_FLAGS={WARN}"], out[name])
    assert variant(out["fast"]).startswith("speed_dsp_") and variant(out["small"]).startswith("size_dsp_")
    return out


def cases(count: int = 2) -> list[tuple[str, list[np.ndarray], list[np.ndarray]]]:
    npz = KWS.with_name("mlperf_kws_dscnn_ref.npz")
    ref = np.load(npz)
    out = []
    for name, optimize in (("fast", "speed"), ("small", "size")):
        c = compile_model(KWS, name=name, board=load_board("cortex-m4"), optimize=optimize)
        samples = load_inputs(c, npz, count)[:count]
        gold = [golden_run(c, s)[0] for s in samples]
        for k, g in enumerate(gold):
            np.testing.assert_array_equal(g, ref["tflm_outputs"][k].reshape(g.shape))
        out.append((name, [s[0] for s in samples], gold))
    return out


def check_calls(nm: str, bundles: dict[str, Path], image: Path) -> None:
    """nm: each model's object calls its own variant's kernels; the image holds both variants."""
    image_syms = defined(nm, image)
    for name, bundle in bundles.items():
        tag = variant(bundle)
        obj = next(bundle.glob(f"build/*/{name}.o"))
        calls = {s for s in undefined(nm, obj) if s.startswith("mcu_")}
        assert calls and all(s.endswith("_" + tag) for s in calls), (name, sorted(calls))
        assert calls <= image_syms
    assert not image_syms & set(runtime_symbols())  # no runtime symbol under its plain name


@needs_shared
def test_speed_and_size_bundles_link_into_one_host_program(tmp_path: Path) -> None:
    bundles = two_bundles(tmp_path, "gcc")
    (tmp_path / "main.c").write_text(main_c(cases()))
    exe = tmp_path / "both"
    run(["gcc", "-O2", *WARN.split(), f"-I{bundles['fast']}", f"-I{bundles['small']}", "main.c",
         str(bundles["fast"] / "libfast.a"), str(bundles["small"] / "libsmall.a"), "-lm", "-o", str(exe)], tmp_path)
    res = run([str(exe)], tmp_path)
    assert res.stdout.count(": ok\n") == 4, res.stdout
    check_calls("nm", bundles, exe)


@needs_shared
@needs_qemu
def test_speed_and_size_bundles_link_into_one_qemu_firmware(tmp_path: Path) -> None:
    bundles = two_bundles(tmp_path, "arm-none-eabi-gcc")
    board = load_board("cortex-m4")
    (tmp_path / "main.c").write_text(main_c(cases()))
    run([sys.executable, "-m", "emitter.cli", "qemu-kit", "--board=cortex-m4", "-o", str(tmp_path / "kit")], REPO)
    kit, fw = tmp_path / "kit", tmp_path / "fw.elf"
    run(["arm-none-eabi-gcc", *board.cflags, "-O2", *WARN.split(), f"-I{bundles['fast']}", f"-I{bundles['small']}",
         "main.c", str(kit / "startup.c"), str(kit / "syscalls.c"), str(bundles["fast"] / "libfast.a"),
         str(bundles["small"] / "libsmall.a"), "--specs=rdimon.specs", f"-T{kit / 'board.ld'}",
         "-Wl,--gc-sections", "-lm", "-o", str(fw)], tmp_path)
    res = subprocess.run(["sh", str(kit / "run"), str(fw)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 0 and res.stdout.count(": ok\n") == 4, res.stdout + res.stderr
    check_calls("arm-none-eabi-nm", bundles, fw)


def test_same_options_same_variant_same_runtime_bytes(tmp_path: Path) -> None:
    """Two bundles made with the same options: one variant, and every runtime file they both ship
    byte-identical (the copy the linker keeps does not matter); another board: another variant."""
    outs = {}
    for name, model, board in (("a", DIGITS, "cortex-m4"), ("b", REPO / "tests/golden_files/tiny_qdq_conv/"
                                                           "tiny_qdq_conv.onnx", "cortex-m4"),
                               ("c", DIGITS, "cortex-m7"), ("d", DIGITS, "cortex-m0plus")):
        outs[name] = tmp_path / name
        assert main([str(model), f"--board={board}", "--name", name, "-o", str(outs[name]), "--quiet"]) == 0
    assert variant(outs["a"]) == variant(outs["b"])
    assert len({variant(outs[n]) for n in "acd"}) == 3
    common = {p.relative_to(outs["a"]) for p in (outs["a"] / "mcu_runtime").rglob("*.[ch]")} & \
             {p.relative_to(outs["b"]) for p in (outs["b"] / "mcu_runtime").rglob("*.[ch]")}
    assert common and all((outs["a"] / p).read_bytes() == (outs["b"] / p).read_bytes() for p in common)
