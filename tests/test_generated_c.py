"""The generated C reads as a reviewer expects (issue 10, item 5).

Every shared model (portable; cmsis-nn too when CMSIS_NN_PATH is set), the golden-file models and a
guard-byte build are emitted, and for each bundle:
- no comment line of a generated .c/.h is longer than 120 characters;
- every const array of NAME_weights.c carries NAME_WEIGHTS_ATTRIBUTES and NAME_ALIGNED (16 bytes),
  under a comment naming its layer, which is the `l<k>` of its identifier;
- NAME.c ties NAME_OK/NAME_ERR_* to the runtime's MCU_OK/MCU_ERR_* with static asserts, and they
  fire when the values disagree (C99 and C11);
- `Layer k` of the comment blocks in NAME_run_multi() are the kernel rows of the CLI summary and
  the "index" of report.json, in order;
- the bundle's C compiles warning-free with the strict flags plus -Wpedantic, as C99 and C11, on
  host gcc and arm-none-eabi-gcc.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model
from emitter.render.bundle import render_bundle
from emitter.report.summary import summary
from emitter.resources import data_dir
from tests.harness.bundles import SHARED_MODELS, STRICT
from tests.harness.cmsis import CMSIS_NN

GOLDEN = Path(__file__).resolve().parent / "golden_files"
CMSIS = CMSIS_NN
WIDTH = 120


def cases() -> list[tuple[str, Path, str, str, bool]]:
    """(id, model, backend, core, guard)"""
    out = []
    for model in sorted(SHARED_MODELS.glob("*/*.onnx")) if SHARED_MODELS.is_dir() else []:
        out.append((f"{model.stem}-portable", model, "portable", "cortex-m4", False))
        if CMSIS:
            out += [(f"{model.stem}-cmsis-{core}", model, "cmsis-nn", core, False)
                    for core in ("cortex-m4", "cortex-m55")]
    out += [(f"{m.stem}-portable", m, "portable", "cortex-m7", False) for m in sorted(GOLDEN.glob("*/*.onnx"))]
    out.append(("tiny_qdq_conv-guard", GOLDEN / "tiny_qdq_conv" / "tiny_qdq_conv.onnx", "portable",
                "cortex-m7", True))
    return out


CASES = cases()


def build(model: Path, backend: str, core: str, guard: bool) -> tuple[Compiled, dict[str, str]]:
    board = load_board(core)
    c = compile_model(model, backend=backend, board=board, guard=guard,
                      cmsis_path=Path(CMSIS) if backend == "cmsis-nn" and CMSIS else None)
    files = render_bundle(c, " ".join(board.cflags), board.name)
    return c, {k: v.decode() for k, v in files.items() if not k.startswith("mcu_runtime/")}


def comment_lines(text: str) -> list[str]:
    """Every line holding part of a /* */ or // comment (string and char literals skipped)."""
    out, inside = [], False
    for line in text.splitlines():
        has, quote, i = inside, "", 0
        while i < len(line):
            if inside:
                end = line.find("*/", i)
                if end < 0:
                    break
                inside, i = False, end + 2
            elif quote:
                if line[i] == quote:
                    quote = ""
                i += 2 if line[i] == "\\" else 1
            elif line.startswith("/*", i):
                inside, has, i = True, True, i + 2
            elif line.startswith("//", i):
                has = True
                break
            else:
                quote = line[i] if line[i] in "\"'" else ""
                i += 1
        if has:
            out.append(line)
    return out


def test_comment_lines_scanner() -> None:
    text = 'int a; /* x\n y */ int b;\nchar *s = "\\" /* not a comment";\n// c\nint d; /**/\n'
    assert comment_lines(text) == ["int a; /* x", " y */ int b;", "// c", "int d; /**/"]


def summary_layers(c: Compiled) -> list[int]:
    """The `#` of the summary's rows that call a kernel (not the free views)."""
    lines = summary(c, 0, "board", "backend").splitlines()
    header = lines[0]
    at = header.index("kernel")
    rows = lines[2:lines.index("")]
    return [int(r.split()[0]) for r in rows if r[at:].split()[0] != "(view)"]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_generated_c_reads_as_reviewed(case: tuple[str, Path, str, str, bool]) -> None:
    _, model, backend, core, guard = case
    c, files = build(model, backend, core, guard)
    p, P = c.name, c.name.upper()
    long = [(name, line) for name, text in files.items() if name.endswith((".c", ".h"))
            for line in comment_lines(text) if len(line) > WIDTH]
    assert not long, f"comment lines over {WIDTH} characters: {long[:3]}"

    weights = files[f"{p}_weights.c"]
    assert f"#ifndef {P}_WEIGHTS_ATTRIBUTES\n#define {P}_WEIGHTS_ATTRIBUTES\n#endif" in weights
    assert f"#define {P}_ALIGNED __attribute__((aligned(16)))" in weights
    declared = re.findall(r"^extern const \w+ (\w+)\[\d+\];$", files[f"{p}_weights.h"], re.M)
    lines = weights.splitlines()
    defined = [(k, line) for k, line in enumerate(lines) if line.startswith("const ")]
    assert [re.match(r"const \w+ (\w+)\[", line).group(1) for _, line in defined] == declared  # type: ignore[union-attr]
    report = json.loads(files["report.json"])
    ops = {lay["index"]: lay["op"] for lay in report["layers"]}
    for k, line in defined:
        m = re.fullmatch(rf"const \w+ {p}_l(\d+)_\w+\[\d+\] {P}_WEIGHTS_ATTRIBUTES {P}_ALIGNED = {{", line)
        assert m, line
        layer = int(m.group(1))
        assert lines[k - 1].startswith(f"/* Layer {layer} {ops[layer]}: "), (lines[k - 1], line)

    code = files[f"{p}.c"]
    for name, mcu in (("OK", "MCU_OK"), ("ERR_ARG", "MCU_ERR_ARG"), ("ERR_SCRATCH", "MCU_ERR_SCRATCH"),
                      ("ERR_GUARD", "MCU_ERR_GUARD")):
        assert re.search(rf"^{P}_STATIC_ASSERT\({P}_{name} == {mcu}, {p}_status_\w+\);$", code, re.M), name

    body = code[code.index(f"int {p}_run_multi("):]
    in_comments = [int(k) for k in re.findall(r"^     \* Layer (\d+): ", body, re.M)]
    assert in_comments == summary_layers(c) == [lay["index"] for lay in report["layers"]]
    assert in_comments == [int(k) for k in re.findall(rf"^    {P}_AFTER_LAYER\((\d+), ", body, re.M)]


def compile_bundle(cc: str, flags: list[str], files: dict[str, str], folder: Path, std: str,
                   backend: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    sources = [str(folder / n) for n in sorted(files) if n.endswith(".c")]
    incs = [f"-I{folder}", f"-I{data_dir('mcu_runtime') / 'include'}"]
    if backend == "cmsis-nn":
        incs.append(f"-I{Path(CMSIS or '') / 'Include'}")
    return subprocess.run([cc, *flags, "-O1", "-fsyntax-only", *[f for f in STRICT if f != "-std=c99"],
                           f"-std={std}", "-Wpedantic", *incs, *sources],
                          capture_output=True, text=True, check=False)


COMPILE_CASES = [c for c in CASES if c[0].startswith(("mlperf_kws_dscnn", "tflm_micro_speech", "tiny_"))]


@pytest.mark.parametrize("cc", ["gcc", "arm-none-eabi-gcc"])
@pytest.mark.parametrize("case", COMPILE_CASES, ids=[c[0] for c in COMPILE_CASES])
def test_bundle_compiles_pedantic_c99_and_c11(case: tuple[str, Path, str, str, bool], cc: str,
                                              tmp_path: Path) -> None:
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} missing")
    _, model, backend, core, guard = case
    c, files = build(model, backend, core, guard)
    flags = list(load_board(core).cflags) if cc.startswith("arm-") else []
    for std in ("c99", "c11"):
        res = compile_bundle(cc, flags, files, tmp_path / std, std, backend)
        assert res.returncode == 0 and not res.stderr, res.stderr[-3000:]


@pytest.mark.parametrize("std", ["c99", "c11"])
def test_status_asserts_fire_on_a_mismatch(std: str, tmp_path: Path) -> None:
    _, files = build(GOLDEN / "tiny_qdq_conv" / "tiny_qdq_conv.onnx", "portable", "cortex-m7", False)
    header = "tiny_qdq_conv.h"
    assert "#define TINY_QDQ_CONV_ERR_SCRATCH 2\n" in files[header]
    files[header] = files[header].replace("#define TINY_QDQ_CONV_ERR_SCRATCH 2\n",
                                          "#define TINY_QDQ_CONV_ERR_SCRATCH 7\n")
    res = compile_bundle("gcc", [], files, tmp_path, std, "portable")
    assert res.returncode != 0
    assert "tiny_qdq_conv_status_scratch" in res.stderr
