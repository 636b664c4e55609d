#!/usr/bin/env python3
"""Top-1 of int8, int4 and auto (mixed) weights for the float examples, in onnxruntime.

Each model goes through `mcugen quantize`'s own steps (emitter/commands/quantize.py: constant
folding, quantize_static QDQ per-channel, int8 activations; int4 on the model raised to opset 21;
auto = choose_int4 with the 1-point budget against the selection labels) and is measured with
onnxruntime's CPU reference (graph optimizations off). Nothing is compiled: top-1 only.

  digits   examples/digits_cnn_fp32.onnx; calibration: the first 64 images of
           examples/digits_heldout.npz (the training split needs scikit-learn's digits, as
           examples/make_digits_model.py); auto's selection and top-1: all 359 held-out images.
  keyword  examples/keyword_audio/keyword_fp32.onnx; the clips of
           examples/keyword_audio/make_keyword_model.py regenerated (espeak-ng, same seeds; the
           held-out ones are checked against heldout.npz): calibration = its 300 training clips,
           auto's selection = its 450 validation clips, top-1 on validation and on the 36
           held-out clips of heldout.npz. Without espeak-ng: calibration and selection on the
           held-out clips (said in the output).

    python benchmarks/int4_accuracy.py [--models digits,keyword] [--budget 1]

Prints the figures of docs/int4.md, "Top-1 of int8, int4 and auto".
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from emitter.commands.quantize import (  # noqa: E402
    choose_int4,
    fold_constants,
    load_float_model,
    ort_predictions,
    quantize_for_mcugen,
    raise_opset,
    weight_layers,
)

EXAMPLES = REPO / "examples"
KWS = EXAMPLES / "keyword_audio"


@dataclass
class Case:
    name: str
    model: Path
    calib: dict[str, np.ndarray]
    select: tuple[dict[str, np.ndarray], np.ndarray, str]  # feeds, labels, what
    evals: list[tuple[dict[str, np.ndarray], np.ndarray, str]]
    note: str


def digits() -> Case:
    held = np.load(EXAMPLES / "digits_heldout.npz")
    images = held["images"].astype(np.float32)[:, None]  # [N, 1, 1, 8, 8]: samples of [1, 1, 8, 8]
    labels = held["labels"].astype(np.int64)
    sel = ({"input": images}, labels, f"{len(labels)} held-out images")
    return Case("digits", EXAMPLES / "digits_cnn_fp32.onnx", {"input": images[:64]}, sel, [sel],
                "calibration: the first 64 held-out images (the training split needs scikit-learn)")


def keyword() -> Case:
    sys.path.insert(0, str(KWS))
    from keyword_data import decode_mulaw, encode_mulaw  # type: ignore[import-not-found]

    from emitter.features import features_raw, load_spec

    spec = load_spec(KWS / "frontend.toml")

    def feats(clips: np.ndarray) -> dict[str, np.ndarray]:
        x = np.stack([features_raw(spec, c, 49) for c in clips]).astype(np.float32) / 128.0
        return {"mfcc": x[:, None]}

    held = np.load(KWS / "heldout.npz")
    held_x = feats(decode_mulaw(held["mulaw"], held["table"]))
    held_set = (held_x, held["labels"].astype(np.int64), f"{len(held['labels'])} held-out clips")
    if shutil.which("espeak-ng"):
        import make_keyword_model as mk  # type: ignore[import-not-found]
        from keyword_data import make_clips

        clips, labels = make_clips(mk.TRAIN_PER_CLASS + mk.VAL_PER_CLASS + mk.HELDOUT_PER_CLASS, seed=14)
        order = np.random.default_rng(1).permutation(len(clips))
        held_idx = order[:mk.HELDOUT_PER_CLASS * len(mk.CLASSES)]
        val = order[len(held_idx):len(held_idx) + mk.VAL_PER_CLASS * len(mk.CLASSES)]
        tr = order[len(held_idx) + len(val):]
        if np.array_equal(encode_mulaw(clips[held_idx]), held["mulaw"]):
            val_set = (feats(clips[val]), labels[val].astype(np.int64), f"{len(val)} validation clips")
            return Case("keyword", KWS / "keyword_fp32.onnx", feats(clips[tr[:300]]), val_set,
                        [val_set, held_set], "calibration: the 300 training clips of "
                        "make_keyword_model.py (regenerated, held-out clips identical)")
    return Case("keyword", KWS / "keyword_fp32.onnx", held_x, held_set, [held_set],
                "calibration and selection on the held-out clips (espeak-ng missing or its clips "
                "differ from heldout.npz)")


def top1(model: Path, feeds: dict[str, np.ndarray], labels: np.ndarray) -> float:
    return 100.0 * float(np.mean(ort_predictions(model, feeds) == labels))


def measure(case: Case, budget: float, work: Path) -> list[str]:
    folded = fold_constants(load_float_model(case.model))
    layers = weight_layers(folded)
    raised = raise_opset(folded)
    feeds, labels, what = case.select
    chosen, table = choose_int4(raised, case.calib, feeds, labels, budget, f"on {what}")
    models = {"float": case.model,
              "int8": quantize_for_mcugen(folded, case.calib, work / f"{case.name}_int8.onnx"),
              "int4": quantize_for_mcugen(raised, case.calib, work / f"{case.name}_int4.onnx", layers),
              "auto": quantize_for_mcugen(raised, case.calib, work / f"{case.name}_auto.onnx", chosen)}
    picked = {w.weight for w in chosen}
    nbytes = {"float": 4 * sum(w.count for w in layers),
              "int8": sum(w.int8_bytes for w in layers),
              "int4": sum(w.int4_bytes for w in layers),
              "auto": sum(w.int4_bytes if w.weight in picked else w.int8_bytes for w in layers)}
    rel = case.model.relative_to(REPO)
    out = [f"### {case.name}: {rel}", "", case.note + "; " + f"auto chosen on {what}.", "",
           "| weights | conv/FC weight bytes | " + " | ".join(f"top-1, {e[2]}" for e in case.evals) + " |",
           "|---|---:|" + "---:|" * len(case.evals)]
    for kind, path in models.items():
        accs = " | ".join(f"{top1(path, f, y):.2f}%" for f, y, _ in case.evals)
        label = kind if kind != "auto" else f"auto ({len(chosen)} of {len(layers)} layers int4)"
        out.append(f"| {label} | {nbytes[kind]:,} | {accs} |")
    out += ["", "```", table, "```", ""]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="digits,keyword")
    ap.add_argument("--budget", type=float, default=1.0, help="auto's top-1 budget in points")
    args = ap.parse_args()
    makers = {"digits": digits, "keyword": keyword}
    lines = ["## Top-1 of int8, int4 and auto", "",
             "onnxruntime CPU reference (optimizations off), `mcugen quantize`'s quantization; "
             f"auto budget {args.budget:g} point of int8. Measured by "
             "`python benchmarks/int4_accuracy.py`.", ""]
    with tempfile.TemporaryDirectory(prefix="mcugen-int4-acc-") as tmp:
        for name in args.models.split(","):
            lines += measure(makers[name](), args.budget, Path(tmp))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
