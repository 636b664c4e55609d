"""Census of quantized ONNX "from the wild" (issue #13): every case of tests/models/wild.py (built
and refused ones) and every onnx operator test case of tests/models/onnx_backend.py, through
compile_model + render_bundle, then golden vs onnxruntime on 3 random int8 samples.

    python scripts/wild_census.py            # one line per case, then the totals

Outcomes: exact / within1 (golden vs onnxruntime max |diff|), OFF (a build more than one quantum
off onnxruntime: a silently wrong answer), refused (a McugenError: exit status 2), CRASH (anything
else: a traceback). Host C vs golden is checked by tests/test_wild_models.py, not here.
"""
from __future__ import annotations

import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    from emitter.compiler import compile_model, golden_run
    from emitter.errors import McugenError
    from emitter.render.bundle import render_bundle
    from emitter.verify.run import diff_stats, load_inputs, ort_run
    from tests.models.onnx_backend import backend_models
    from tests.models.wild import WILD_CASES, WILD_REFUSALS

    cases = {name: build for name, build in WILD_CASES.items()}
    cases.update({name: r.build for name, r in WILD_REFUSALS.items()})
    cases.update({name: (lambda raw=raw: onnx.load_model_from_string(raw)) for name, raw in backend_models().items()})
    totals: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="mcugen-census-") as tmp:
        for name, build in cases.items():
            path = Path(tmp) / f"{name}.onnx"
            onnx.save(build(), path)
            try:
                c = compile_model(path)
                render_bundle(c, "", "host")
                samples = load_inputs(c, None, 3, seed=1)
                _, _, mx = diff_stats([golden_run(c, s) for s in samples], ort_run(c, path, samples))
                outcome, detail = ("exact" if mx == 0 else "within1" if mx <= 1 else "OFF"), f"max |diff| {mx}"
            except McugenError as exc:
                outcome, detail = "refused", " ".join(str(exc).split())[:140]
            except Exception as exc:  # noqa: BLE001 -- a crash is what this census counts
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                outcome, detail = "CRASH", f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}"
            group = "onnx" if name.startswith("test_") else "wild"
            totals[f"{group} {outcome}"] += 1
            print(f"{group} {name:<40} {outcome:<8} {detail}")
    print(dict(sorted(totals.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
