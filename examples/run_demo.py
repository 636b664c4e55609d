"""The main job on the bundled example: emit, build, run in QEMU, check, and measure accuracy.

    python examples/run_demo.py [--board cortex-m7] [--out out/digits]

1. the command it prints: `mcugen examples/digits_cnn_int8.onnx --board=... -o ... --name digits
   --verify --inputs examples/digits_heldout.npz --quiet` (in this process): mcugen emits a C bundle
   for the model (made by make_digits_model.py), builds it with gcc and with arm-none-eabi-gcc,
   runs it on the held-out digits on the host and in QEMU, and checks both bit for bit against
   mcugen's golden model;
2. top-1 accuracy on the held-out digits: float model, onnxruntime int8 (its QDQ reference, graph
   optimizations off; a default session's figure beside it when that differs), generated C (host,
   QEMU), the last two from that verification's outputs.
Exits non-zero if any check fails. README.md quotes this printout (scripts/readme_demo.py).
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).absolute().parent  # not resolved: shown() prints paths as the user typed them


def shown(path: Path) -> str:
    """`path` as typed from the current folder (relative when below it)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def accuracy(logits: list[np.ndarray], labels: np.ndarray) -> float:
    pred = np.array([int(np.argmax(x)) for x in logits])
    return float((pred == labels).mean())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="cortex-m7")
    ap.add_argument("--out", default="out/digits")
    args = ap.parse_args()

    import onnxruntime as ort

    import emitter.verify.run
    from emitter.cli import main as mcugen

    model, heldout = HERE / "digits_cnn_int8.onnx", HERE / "digits_heldout.npz"
    data = np.load(heldout)
    images, labels = data["images"].astype(np.float32), data["labels"]
    reports: list[emitter.verify.run.VerifyReport] = []
    run_verify = emitter.verify.run.run_verify

    def keep(*a: object, **k: object) -> emitter.verify.run.VerifyReport:
        reports.append(run_verify(*a, **k))  # type: ignore[arg-type]
        return reports[-1]

    emitter.verify.run.run_verify = keep  # the command's own verification; its outputs give the accuracies
    argv = [shown(model), f"--board={args.board}", "-o", args.out, "--name", "digits",
            "--verify", "--inputs", shown(heldout), "--quiet"]
    print("$ mcugen " + shlex.join(argv), flush=True)
    status = mcugen(argv)
    if not reports:
        return status or 1
    rep = reports[0]

    def ort_logits(path: Path, optimize: bool = True) -> list[np.ndarray]:
        so = ort.SessionOptions()  # optimize=False: the QDQ reference (no fused integer kernels)
        if not optimize:
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        return [sess.run(None, {name: x[None]})[0] for x in images]

    rows = [("float model (onnxruntime)", accuracy(ort_logits(HERE / "digits_cnn_fp32.onnx"), labels)),
            ("int8 model (onnxruntime)", accuracy(ort_logits(model, optimize=False), labels)),
            ("generated C, host gcc", accuracy([o[0] for o in rep.outputs["host"]], labels))]
    if "qemu" in rep.outputs:
        rows.append((f"generated C, QEMU {args.board}", accuracy([o[0] for o in rep.outputs["qemu"]], labels)))
    print(f"\ntop-1 accuracy on {len(labels)} held-out digits (scikit-learn digits):")
    optimized = accuracy(ort_logits(model), labels)  # a default session: docs/onnxruntime_optimized_graph.md
    for what, acc in rows:
        beside = (f"   (a default, optimized onnxruntime session: {100 * optimized:.2f}%, not this model's)"
                  if what.startswith("int8") and optimized != acc else "")
        print(f"  {what:<32} {100 * acc:6.2f}%{beside}")
    if not rep.ok:
        print("FAILED: the generated C does not match the golden model", file=sys.stderr)
        return 1
    print("\nOK: host and QEMU outputs are bit-exact with mcugen's golden model.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
