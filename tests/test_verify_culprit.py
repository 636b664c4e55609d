"""verify names the right culprit (issue #13): a reference that differs from the golden model while
the C equals the golden is a numerics difference, not a code-generation bug; a C that differs from
the golden model is."""
from __future__ import annotations

import re

import numpy as np
import onnx

from emitter.cli import main
from emitter.compiler import compile_model, golden_run
from emitter.verify.run import VerifyReport, load_inputs, ort_run
from tests.models.wild import qgemm


def test_reference_differing_from_golden_is_a_numerics_difference(tmp_path, capsys):
    path = tmp_path / "qgemm.onnx"
    onnx.save(qgemm((5,), seed=4), path)
    c = compile_model(path)
    samples = load_inputs(c, None, 16, seed=3)
    ort = ort_run(c, path, samples)
    gold = [golden_run(c, s) for s in samples]
    assert any((o[0] != g[0]).any() for o, g in zip(ort, gold, strict=True)), "no difference to blame"
    npz = tmp_path / "ref.npz"
    np.savez(npz, a=np.stack([s[0] for s in samples]), expected=np.stack([o[0] for o in ort]))
    status = main(["verify", str(path), "-o", str(tmp_path / "b"), "--quiet", "--no-qemu", "--inputs", str(npz)])
    captured = capsys.readouterr()
    assert status == 1, captured.err
    assert re.search(r"host gcc vs golden +bit-exact", captured.out)
    assert re.search(r"golden vs \S[^\n]* MISMATCH", captured.out)  # the reference check's label
    assert "the generated C equals mcugen's golden model bit for bit" in captured.err
    assert "numerics difference" in captured.err and "does not match the golden" not in captured.err


def test_c_differing_from_golden_is_blamed_on_the_c():
    rep = VerifyReport(1)
    same, other = [[np.zeros(3, np.int8)]], [[np.ones(3, np.int8)]]
    rep.check("host_vs_golden", "host gcc vs golden", other, same)
    rep.check("golden_vs_reference", "golden vs expected outputs", same, other)
    assert not rep.ok and "does not match the golden model" in rep.culprit()
    assert "host gcc vs golden" in rep.culprit()
    rep = VerifyReport(1)
    rep.check("host_vs_golden", "host gcc vs golden", same, same)
    rep.check("golden_vs_reference", "golden vs TFLM outputs", same, other)
    rep.check("host_vs_reference", "host gcc vs TFLM outputs", same, other)
    assert "numerics difference" in rep.culprit()
