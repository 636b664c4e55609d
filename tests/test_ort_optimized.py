"""onnxruntime's optimized graph against its own QDQ reference (issue 30, docs/onnxruntime_optimized_graph.md).

The reproducer (tests/ort_u8s8_repro.py) is built at test time. On this machine's CPU the default
session either equals the reference (AVX-512 VNNI, Arm) or gives the documented saturated value;
with qemu-x86_64 installed, the test also runs it on an emulated Haswell (AVX2, no VNNI), where the
saturation must show and the named transformers must be the cause."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ort_u8s8_repro as repro  # noqa: E402

import emitter.verify.run as verify  # noqa: E402

pytest.importorskip("onnxruntime")


def test_reproducer_reference_and_default_session(tmp_path: Path) -> None:
    path = repro.build(tmp_path / "repro.onnx")
    assert np.array_equal(repro.run(path, optimize=False), repro.REFERENCE)
    opt = repro.run(path, optimize=True)
    assert np.array_equal(opt, repro.REFERENCE) or np.array_equal(opt, repro.SATURATED), opt
    assert np.array_equal(repro.run(path, optimize=True, config=repro.X64_PRECISION), repro.REFERENCE)


BISECT = """
import sys, numpy as np, onnxruntime as ort
sys.path.insert(0, {tests!r})
import ort_u8s8_repro as r
p = r.build(__import__("pathlib").Path({path!r}))
def run(disabled):
    so = ort.SessionOptions()
    s = ort.InferenceSession(str(p), so, providers=["CPUExecutionProvider"], disabled_optimizers=disabled)
    return [float(s.run(None, {{"x": x}})[0].ravel()[0]) for x in r.INPUTS]
print(run([]) == r.SATURATED.tolist(), run(["QDQS8ToU8Transformer"]) == r.REFERENCE.tolist(),
      run(["QDQSelectorActionTransformer"]) == r.REFERENCE.tolist(), run(["NhwcTransformer"]) == r.SATURATED.tolist())
"""


@pytest.mark.skipif(shutil.which("qemu-x86_64") is None, reason="qemu-x86_64 (qemu-user) not installed")
def test_reproducer_on_a_cpu_without_vnni(tmp_path: Path) -> None:
    """Emulated Haswell: the default session saturates; disabling QDQS8ToU8Transformer or
    QDQSelectorActionTransformer (not NhwcTransformer) gives the reference back."""
    code = BISECT.format(tests=str(Path(__file__).resolve().parent), path=str(tmp_path / "repro.onnx"))
    res = subprocess.run(["qemu-x86_64", "-cpu", "Haswell", str(Path(sys.executable).resolve()), "-c", code],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["True"] * 4, res.stdout


def test_verify_names_an_optimized_graph_that_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The line verify and debug print, from the outputs of the two sessions (faked here)."""
    ref = [[np.array([[10, 20, 30]], np.int8)], [np.array([[0, 0, 0]], np.int8)]]
    calls: list[tuple[bool, object]] = []

    def fake(c: object, model: Path, samples: object, optimize: bool = False,
             config: dict[str, str] | None = None) -> list[list[np.ndarray]]:
        calls.append((optimize, config))
        if config:
            return ref
        return [[np.array([[10, 21, 90]], np.int8)], [np.array([[0, 0, 0]], np.int8)]]

    monkeypatch.setattr(verify, "ort_run", fake)
    figures: dict = {}
    lines = verify.ort_optimized_lines(None, Path("m.onnx"), [], ref, figures)  # type: ignore[arg-type]
    assert lines[0] == ("onnxruntime's optimized graph differs from its own QDQ reference: 2/6 elements, "
                        "max |diff| 60; accuracy measured with a default onnxruntime session is not this model's")
    assert "session.x64quantprecision=1" in lines[1]
    assert figures == {"ort_optimized_differ": 2, "ort_optimized_elements": 6, "ort_optimized_max_diff": 60}
    calls.clear()
    monkeypatch.setattr(verify, "ort_run", lambda *a, **k: [[r[0].copy() + 1] for r in ref])
    assert verify.ort_optimized_lines(None, Path("m.onnx"), [], ref) == []  # type: ignore[arg-type]
