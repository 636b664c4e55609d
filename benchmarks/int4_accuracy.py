#!/usr/bin/env python3
"""Top-1 of int8, int4 and `--weights auto` weights for the digits and keyword examples (onnxruntime only).

    python benchmarks/int4_accuracy.py [--budget 1] [--out docs/int4_accuracy.json]

For each example: the float model constant-folded as `mcugen quantize` does; quantized three ways
with `mcugen quantize`'s own code (emitter/commands/quantize.py: quantize_for_mcugen, choose_int4):
all weights int8 (opset as exported), all conv/FC weights int4 per-channel (opset 21), and auto
(per layer, int4 while top-1 stays within --budget points of int8 at opset 21); top-1 of each on
the labelled held-out set with onnxruntime's CPU reference (graph optimizations off). Calibration
data = the held-out inputs too: the examples' training splits cannot be rebuilt here (digits needs
scikit-learn, the keyword clips espeak), so the three variants share one calibration and differ only
in their weights. Keyword inputs: mcugen's front end (emitter.features, frontend.toml) on the
decoded mu-law clips, /128, as examples/keyword_audio/run_keyword_demo.py feeds them.
The shared MLPerf KWS DS-CNN (../shared/models/mlperf_kws_dscnn) is int8 only (no float model),
so it is not measured. Prints one table; with --out writes the figures as JSON. Deterministic.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
EXAMPLES = REPO / "examples"


def digits() -> tuple[Path, dict[str, np.ndarray], np.ndarray]:
    data = np.load(EXAMPLES / "digits_heldout.npz")
    return EXAMPLES / "digits_cnn_fp32.onnx", {"input": data["images"].astype(np.float32)}, data["labels"]


def keyword() -> tuple[Path, dict[str, np.ndarray], np.ndarray]:
    from emitter.features import features_raw, load_spec

    kw = EXAMPLES / "keyword_audio"
    sys.path.insert(0, str(kw))
    from keyword_data import decode_mulaw  # type: ignore[import-not-found]

    data = np.load(kw / "heldout.npz")
    clips = decode_mulaw(data["mulaw"], data["table"])
    spec = load_spec(kw / "frontend.toml")
    feats = np.stack([features_raw(spec, c, 49) for c in clips]).astype(np.float32) / 128.0
    return kw / "keyword_fp32.onnx", {"mfcc": feats[:, None]}, data["labels"]


def measure(name: str, model_path: Path, feeds: dict[str, np.ndarray], labels: np.ndarray,
            budget: float) -> dict[str, object]:
    from emitter.commands import quantize as q

    model = q.fold_constants(q.load_float_model(model_path))
    shapes, _ = q.graph_inputs(model)  # one sample's shape, batch 1 (as `mcugen quantize` feeds it)
    feeds = {n: feeds[n].reshape((-1,) + shape) for n, shape in shapes.items()}
    layers = q.weight_layers(model)
    raised = q.raise_opset(model)

    def top1(m: object, int4: list[q.WeightLayer], tmp: str, tag: str) -> float:
        path = Path(tmp) / f"{tag}.onnx"
        q.quantize_for_mcugen(m, feeds, path, int4)  # type: ignore[arg-type]
        return 100.0 * float(np.mean(q.ort_predictions(path, feeds) == labels))

    with tempfile.TemporaryDirectory() as tmp:
        fp32 = 100.0 * float(np.mean(q.ort_predictions(model_path, feeds) == labels))
        int8 = top1(model, [], tmp, "int8")
        int4 = top1(raised, layers, tmp, "int4")
        chosen, table = q.choose_int4(raised, feeds, feeds, labels, budget,
                                      f"on {len(labels)} held-out samples")
        auto = top1(raised, chosen, tmp, "auto")
    print(f"== {name}: {model_path.relative_to(REPO)}, {len(labels)} held-out samples")
    print(table)
    b8 = sum(w.int8_bytes for w in layers)
    picked = {w.weight for w in chosen}
    return {"model": name, "samples": len(labels), "float": fp32, "int8": int8, "int4": int4,
            "auto": auto, "auto_int4_layers": [w.node for w in chosen], "layers": len(layers),
            "weight_bytes_int8": b8, "weight_bytes_int4": sum(w.int4_bytes for w in layers),
            "weight_bytes_auto": sum(w.int4_bytes if w.weight in picked else w.int8_bytes
                                     for w in layers)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=1.0, help="auto's top-1 budget in points (default 1)")
    ap.add_argument("--out", type=Path, help="write the figures as JSON")
    args = ap.parse_args(argv)
    logging.getLogger().setLevel(logging.ERROR)  # quantize_static's "consider pre-processing" hint
    rows = [measure("digits", *digits(), args.budget), measure("keyword", *keyword(), args.budget)]
    print()
    print("| model | samples | float | int8 | int4 | auto | auto int4 layers | weight bytes int8 / int4 / auto |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    ok = True
    for r in rows:
        print(f"| {r['model']} | {r['samples']} | {r['float']:.2f}% | {r['int8']:.2f}% | {r['int4']:.2f}% | "
              f"{r['auto']:.2f}% | {len(r['auto_int4_layers'])} of {r['layers']} | "  # type: ignore[arg-type]
              f"{r['weight_bytes_int8']:,} / {r['weight_bytes_int4']:,} / {r['weight_bytes_auto']:,} |")
        ok &= float(r["auto"]) >= float(r["int8"]) - args.budget  # type: ignore[arg-type]
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    print("auto within the budget of int8:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
