"""Several models in one bundle (issue 25 item 1).

`mcugen KWS.onnx digits.onnx hello_world.onnx --board=cortex-m4 -o DIR` writes one bundle: one
mcu_runtime/ (the union of what the models need), one library, one header and source per model,
one shared arena sized to the largest model's. The test builds the bundle's library with its own
Makefile (host gcc and arm-none-eabi-gcc, -Werror), links it with one main() that calls every
model into ONE QEMU firmware (the QEMU kit's start-up code), and checks:
- each model's outputs bit-exact with the golden model, and KWS's and hello world's with TFLM's
  reference outputs (../shared/models; skipped with the reason when absent);
- one copy of each runtime symbol in the firmware (arm-none-eabi-nm), no per-model arena, and the
  shared arena's size = the largest model arena;
- each model compiled as if alone: its .c/.h equal the single-model bundle's but for the arena;
- bad input (duplicate names, several boards, a --name list of the wrong length) exits 2, writing
  nothing; --concurrent keeps one arena per model.
"""
from __future__ import annotations

import difflib
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.cli import build_parser, choose_backend, compile_one, main
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.render.bundle import render_bundle
from emitter.render.runtime_files import runtime_symbols
from emitter.target import missing_tools
from emitter.verify.run import load_inputs
from tests.harness.bundles import SHARED_MODELS

REPO = Path(__file__).resolve().parent.parent
DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"
KWS = SHARED_MODELS / "mlperf_kws_dscnn" / "mlperf_kws_dscnn.onnx"
HELLO = SHARED_MODELS / "tflm_hello_world" / "tflm_hello_world.onnx"
WARN = "-std=c99 -Wall -Wextra -Wshadow -Wconversion -Wstrict-prototypes -Wmissing-prototypes -Werror"
needs_shared = pytest.mark.skipif(not KWS.is_file(), reason="../shared/models is not present (a fresh clone)")
QEMU_MISSING = missing_tools()
needs_qemu = pytest.mark.skipif(bool(QEMU_MISSING), reason="needs " + "; ".join(QEMU_MISSING))


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)
    assert res.returncode == 0, " ".join(cmd) + "\n" + res.stdout[-3000:] + res.stderr[-3000:]
    return res


def c_bytes(a: np.ndarray) -> str:
    return ", ".join(str(int(v)) for v in np.asarray(a, dtype=np.int8).ravel())


def main_c(cases: list[tuple[str, list[np.ndarray], list[np.ndarray]]]) -> str:
    """One main() that runs every model on its samples and counts the bytes that differ."""
    lines = ["#include <stdio.h>", "#include <string.h>"]
    lines += [f'#include "{name}.h"' for name, _, _ in cases]
    body = []
    for name, ins, outs in cases:
        for k, (x, y) in enumerate(zip(ins, outs, strict=True)):
            lines.append(f"static const int8_t {name}_in{k}[] = {{{c_bytes(x)}}};")
            lines.append(f"static const int8_t {name}_want{k}[] = {{{c_bytes(y)}}};")
            body += [f"    if ({name}_run({name}_in{k}, got) != 0 || memcmp(got, {name}_want{k}, "
                     f"sizeof {name}_want{k}) != 0) {{",
                     f'        printf("{name} sample {k}: MISMATCH\\n");', "        bad++;", "    } else {",
                     f'        printf("{name} sample {k}: ok\\n");', "    }"]
    inits = [f"    if ({name}_init() != 0) {{ return 3; }}" for name, _, _ in cases]
    return "\n".join([*lines, "int main(void);", "int main(void)", "{", "    static int8_t got[4096];",
                      "    int bad = 0;", *inits, *body, "    return bad;", "}", ""])


def group(tmp: Path, *extra: str, models: tuple[tuple[str, Path], ...] | None = None,
          board: str = "cortex-m4") -> Path:
    out = tmp / "bundle"
    models = models or (("kws", KWS), ("digits", DIGITS), ("hello", HELLO))
    status = main([*(str(p) for _, p in models), f"--board={board}", "--name", ",".join(n for n, _ in models),
                   "-o", str(out), "--quiet", *extra])
    assert status == 0
    return out


@needs_shared
def test_group_bundle_shares_one_runtime_and_one_arena(tmp_path: Path) -> None:
    out = group(tmp_path, "--memory", "layer")  # whole layers, as compile_model below plans alone
    board = load_board("cortex-m4")
    models = {n: compile_model(p, name=n, board=board) for n, p in
              (("kws", KWS), ("digits", DIGITS), ("hello", HELLO))}
    for name, c in models.items():  # compiled as if alone: same code but the arena's lines
        alone = render_bundle(c, " ".join(board.cflags), board.name)
        assert (out / f"{name}_weights.c").read_bytes() == alone[f"{name}_weights.c"]
        for f in (f"{name}.c", f"{name}.h"):
            diff = difflib.unified_diff(alone[f].decode().splitlines(), (out / f).read_text().splitlines(), n=0)
            changed = [x[1:] for x in diff if x[:1] in "+-" and not x.startswith(("+++", "---"))]
            arena_lines = ("#e", "#if", " *", "/*")  # the arena's block and comment
            assert all("arena" in x.lower() or not x or x.startswith(arena_lines) for x in changed), changed
    arenas = {n: c.plan.arena_size for n, c in models.items()}
    header = (out / "kws_digits_hello_arena.h").read_text()
    assert f"#define KWS_DIGITS_HELLO_ARENA_SIZE {max(arenas.values())}\n" in header
    assert not (out / "mcu_runtime" / "mcu_runtime").exists()
    page = (out / "report.html").read_text()
    assert all(f'href="{n}_report.html"' in page for n in models) and "16576 bytes" in page
    run(["make", "-j2", f"WARN_FLAGS={WARN}"], out)  # host gcc, warning-free


VWW = SHARED_MODELS / "mlperf_vww_mobilenetv1" / "mlperf_vww_mobilenetv1.onnx"
REFS = {"kws": KWS.with_name("mlperf_kws_dscnn_ref.npz"), "digits": REPO / "examples" / "digits_heldout.npz",
        "hello": HELLO.with_name("tflm_hello_world_ref.npz"), "vww": VWW.with_name("mlperf_vww_mobilenetv1_ref.npz")}
PATHS = {"kws": KWS, "digits": DIGITS, "hello": HELLO, "vww": VWW}


@needs_shared
@needs_qemu
@pytest.mark.parametrize("board, names", [
    ("cortex-m4", ("kws", "digits", "hello")),
    *(pytest.param(b, ("kws", "vww", "digits"), marks=pytest.mark.slow) for b in ("cortex-m4", "cortex-m7",
                                                                                   "cortex-m55")),
])
def test_group_firmware_runs_every_model_bit_exact_in_qemu(board: str, names: tuple[str, ...],
                                                           tmp_path: Path) -> None:
    """One firmware calls every model of the group (3 samples each): QEMU == golden (== TFLM's
    reference outputs where the shared models have them); one copy of each runtime symbol; the
    shared arena is the largest model arena."""
    out = group(tmp_path, models=tuple((n, PATHS[n]) for n in names), board=board)
    b = load_board(board)
    cases, arenas = [], {}
    for name in names:
        # as `mcugen` compiles it alone (the default plan on the board: its free savings)
        args = build_parser().parse_args(["emit", str(PATHS[name]), f"--board={board}"])
        c: Compiled = compile_one(args, str(PATHS[name]), name, b, *choose_backend(args.backend, b)[:2])
        arenas[name] = c.plan.arena_size
        samples = load_inputs(c, REFS[name], 3)[:3]
        gold = [golden_run(c, s)[0] for s in samples]
        ref = np.load(REFS[name])
        if "tflm_outputs" in ref:  # the golden model is TFLM's arithmetic
            for k, g in enumerate(gold):
                np.testing.assert_array_equal(g, ref["tflm_outputs"][k].reshape(g.shape), err_msg=f"{name} {k}")
        cases.append((name, [s[0] for s in samples], gold))
    prefix = "_".join(names)
    run(["make", "-j2", "CC=arm-none-eabi-gcc", f"WARN_FLAGS={WARN}"], out)
    run([sys.executable, "-m", "emitter.cli", "qemu-kit", f"--board={board}", "-o", str(tmp_path / "kit")], REPO)
    (tmp_path / "main.c").write_text(main_c(cases))
    kit = tmp_path / "kit"
    fw = tmp_path / "fw.elf"
    run(["arm-none-eabi-gcc", *b.cflags, "-O2", *WARN.split(), f"-I{out}", "main.c", str(kit / "startup.c"),
         str(kit / "syscalls.c"), str(out / f"lib{prefix}.a"), "--specs=rdimon.specs",
         f"-T{kit / 'board.ld'}", "-Wl,--gc-sections", "-lm", "-o", str(fw)], tmp_path)
    res = subprocess.run(["sh", str(kit / "run"), str(fw)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count(": ok\n") == 3 * len(names), res.stdout
    symbols = [line.split() for line in
               run(["arm-none-eabi-nm", "-S", "--defined-only", str(fw)], tmp_path).stdout.splitlines()]
    tag = re.search(r'MCU_VARIANT "(\w+)"', (out / "mcu_runtime/include/mcu_config.h").read_text())
    assert tag is not None
    variants = Counter(f[-1][: -len(tag.group(1)) - 1] for f in symbols if f[-1].endswith("_" + tag.group(1)))
    assert variants and set(variants.values()) == {1}  # one copy of each runtime symbol
    assert not {f[-1] for f in symbols} & set(runtime_symbols())  # none outside the variant
    sizes = {f[-1]: int(f[1], 16) for f in symbols if len(f) == 4}
    assert sizes[f"{prefix}_arena"] == max(arenas.values())
    assert not {f"{n}_arena" for n in names} & set(sizes)
    print(f"{board}: shared arena {sizes[f'{prefix}_arena']} bytes; separately {arenas} "
          f"(sum {sum(arenas.values())}); {len(variants)} runtime symbols, one copy each")


@needs_shared
def test_concurrent_keeps_one_arena_per_model(tmp_path: Path) -> None:
    out = group(tmp_path, "--concurrent")
    assert not (out / "kws_digits_hello_arena.h").exists()
    assert "int8_t kws_arena[" in (out / "kws.c").read_text()
    run(["make", "-j2", f"WARN_FLAGS={WARN}"], out)


@pytest.mark.parametrize("args, says", [
    (["--name", "a,a"], "several models have the name 'a'"),
    (["--name", "a"], "gives 1 names for 2 models"),
    (["--board", "cortex-m4,cortex-m7"], "one bundle for one board"),
    (["--concurrent", "--frontend", "x.toml"], "--frontend goes with one model"),
])
def test_bad_group_input_exits_2_and_writes_nothing(args: list[str], says: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    status = main([str(DIGITS), str(DIGITS), "-o", str(out), *args])
    assert status == 2
    assert says in capsys.readouterr().err
    assert not out.exists()


def test_same_stem_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(DIGITS), str(DIGITS), "-o", str(tmp_path / "out")]) == 2
    assert "several models have the name 'digits_cnn_int8'" in capsys.readouterr().err


@needs_qemu
def test_verify_checks_each_model_of_a_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`mcugen verify A B --board=cortex-m4`: each model host and QEMU bit-exact, in the one bundle."""
    status = main(["verify", str(DIGITS), str(REPO / "examples" / "attention" / "attention_int8.onnx"),
                   "--name", "digits,attention", "--board=cortex-m4", "-o", str(tmp_path / "two"), "--quiet",
                   "--samples", "2"])
    out = capsys.readouterr().out
    assert status == 0, out
    for name in ("digits", "attention"):
        assert f"verify {name}:" in out
    assert out.count("QEMU cortex-m4 vs golden           bit-exact") == 2, out
