"""Golden files of the generated code, and determinism (issue #5, item 5).

For four tiny models -- hello_fc (the project's own 1-16-16-1 sine model in tf2onnx's layout), a
QDQ conv+relu+avgpool and a QOperator add/concat (all three built in tests/models/tiny.py and
committed as .onnx next to their goldens) and the shared tflm_hello_world (skipped, with the
reason, where ../shared/models is absent, as on a fresh clone) --
every generated file of the bundle (NAME.h, NAME.c, NAME_weights.c/.h, NAME_f32.c, Makefile,
CMakeLists.txt, README.md, report.json, report.html) must equal its committed copy under
tests/golden_files/<model>/, and the bundle must list the same runtime files (mcu_runtime/ is
copied from the repository, so only its file names are compared).

After an intended change of the generated code, rewrite the goldens (and the tiny .onnx models)
with the one update flag, and review the diff before committing:

    MCUGEN_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_files.py

Determinism: generating a model twice, in one process and in two processes with different
PYTHONHASHSEED, gives byte-identical bundles.
"""
from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from emitter.compiler import compile_model
from emitter.render.bundle import render_bundle
from tests.harness.bundles import CM7_FLAGS, REPO, SHARED_MODELS, shared_model
from tests.models.tiny import hello_fc, tiny_qdq_conv, tiny_qop_add_concat

GOLDEN = Path(__file__).resolve().parent / "golden_files"
UPDATE = os.environ.get("MCUGEN_UPDATE_GOLDEN", "") == "1"
BUILDERS = {"hello_fc": hello_fc, "tiny_qdq_conv": tiny_qdq_conv, "tiny_qop_add_concat": tiny_qop_add_concat}
NO_SHARED = "../shared/models is not present (a fresh clone): the shared tflm_hello_world is skipped"
MODELS = (*BUILDERS, pytest.param("tflm_hello_world", marks=pytest.mark.skipif(
    not SHARED_MODELS.is_dir(), reason=NO_SHARED)))
NAMES = (*BUILDERS, "tflm_hello_world")
RUNTIME_LIST = "runtime_files.txt"  # the mcu_runtime/ paths the bundle holds, one a line


def model_path(name: str) -> Path:
    if name == "tflm_hello_world":
        return shared_model(name)
    path = GOLDEN / name / f"{name}.onnx"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(BUILDERS[name](), path)
    return path


def generate(name: str) -> dict[str, bytes]:
    return render_bundle(compile_model(model_path(name), name=name), CM7_FLAGS, "cortex-m7")


def golden_view(files: dict[str, bytes]) -> dict[str, bytes]:
    """What is compared: every generated file, plus the list of copied runtime files."""
    out = {k: v for k, v in files.items() if not k.startswith("mcu_runtime/")}
    runtime = sorted(k for k in files if k.startswith("mcu_runtime/"))
    out[RUNTIME_LIST] = "".join(f"{k}\n" for k in runtime).encode()
    return out


@pytest.mark.parametrize("name", MODELS)
def test_generated_code_matches_golden_files(name: str) -> None:
    got = golden_view(generate(name))
    folder = GOLDEN / name
    if UPDATE:
        for old in folder.glob("*"):
            if old.is_file() and old.suffix != ".onnx":
                old.unlink()
        folder.mkdir(parents=True, exist_ok=True)
        for rel, data in got.items():
            (folder / rel).write_bytes(data)
        return
    want = {p.name: p.read_bytes() for p in sorted(folder.glob("*")) if p.is_file() and p.suffix != ".onnx"}
    problems = []
    for rel in sorted(set(got) | set(want)):
        if rel not in want:
            problems.append(f"new file {rel}")
        elif rel not in got:
            problems.append(f"file {rel} is no longer generated")
        elif got[rel] != want[rel]:
            diff = difflib.unified_diff(want[rel].decode().splitlines(), got[rel].decode().splitlines(),
                                        f"golden/{rel}", f"generated/{rel}", lineterm="", n=1)
            problems.append("\n".join(list(diff)[:40]))
    assert not problems, (f"generated code of {name} differs from tests/golden_files/{name}/; if "
                          "intended: MCUGEN_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_files.py\n"
                          + "\n".join(problems))


@pytest.mark.parametrize("name", MODELS)
def test_same_model_twice_byte_identical(name: str, tmp_path: Path) -> None:
    first, second = generate(name), generate(name)
    assert first == second


GEN_SCRIPT = """
import hashlib, sys
from emitter.compiler import compile_model
from emitter.render.bundle import render_bundle
files = render_bundle(compile_model(sys.argv[1], name="net"), "", "host")
for k in sorted(files):
    print(k, hashlib.sha256(files[k]).hexdigest())
"""


def test_bundles_identical_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    """Set and dict iteration must never leak into the output: two fresh processes with different
    string-hash seeds generate the same bytes."""
    models: list[Path] = []
    for name, build in BUILDERS.items():
        models.append(tmp_path / f"{name}.onnx")
        onnx.save(build(), models[-1])
    for model in models:
        digests = []
        for seed in ("1", "2"):
            env = dict(os.environ, PYTHONHASHSEED=seed)
            res = subprocess.run([sys.executable, "-c", GEN_SCRIPT, str(model)], cwd=REPO, env=env,
                                 capture_output=True, text=True, check=False)
            assert res.returncode == 0, res.stderr[-2000:]
            digests.append(res.stdout)
        assert digests[0] == digests[1], model.name


def test_golden_models_are_what_the_builders_make() -> None:
    """The committed tiny .onnx models are exactly what tests/models/tiny.py builds (so the
    fuzz seeds and the goldens describe the same models)."""
    for name, build in BUILDERS.items():
        committed = (GOLDEN / name / f"{name}.onnx").read_bytes()
        assert hashlib.sha256(build().SerializeToString()).hexdigest() == hashlib.sha256(committed).hexdigest(), (
            f"{name}: the builder changed; MCUGEN_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_files.py")


if UPDATE:  # keep the folder tidy: no stale model folders
    for stale in (GOLDEN.glob("*") if GOLDEN.is_dir() else []):
        if stale.is_dir() and stale.name not in NAMES:
            shutil.rmtree(stale)
