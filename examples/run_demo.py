"""The main job on the bundled example: emit, build, run in QEMU, check, and measure accuracy.

    python examples/run_demo.py [--board cortex-m7] [--out out/digits]

1. mcugen emits a C bundle for examples/digits_cnn_int8.onnx (made by make_digits_model.py);
2. verification builds it with gcc and with arm-none-eabi-gcc, runs it on the held-out digits on
   the host and in QEMU, and checks both bit for bit against mcugen's golden model;
3. top-1 accuracy on the held-out digits: float model, onnxruntime int8, generated C (host, QEMU).
Exits non-zero if any check fails.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def accuracy(logits: list[np.ndarray], labels: np.ndarray) -> float:
    pred = np.array([int(np.argmax(x)) for x in logits])
    return float((pred == labels).mean())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="cortex-m7")
    ap.add_argument("--out", default="out/digits")
    args = ap.parse_args()

    import onnxruntime as ort

    from emitter.cli import main as mcugen

    model = HERE / "digits_cnn_int8.onnx"
    data = np.load(HERE / "digits_heldout.npz")
    images, labels = data["images"].astype(np.float32), data["labels"]
    print(f"$ mcugen {model.name} --board={args.board} -o {args.out} --verify --inputs digits_heldout.npz")
    status = mcugen([str(model), f"--board={args.board}", "-o", args.out, "--name", "digits", "--quiet"])
    if status != 0:
        return status

    from emitter.boards import load_board
    from emitter.compiler import compile_model
    from emitter.verify import run_verify

    c = compile_model(model, name="digits")
    rep = run_verify(c, Path(args.out), load_board(args.board), model, str(HERE / "digits_heldout.npz"), 0)
    print(rep.text())

    def ort_logits(path: Path) -> list[np.ndarray]:
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        return [sess.run(None, {name: x[None]})[0] for x in images]

    rows = [("float model (onnxruntime)", accuracy(ort_logits(HERE / "digits_cnn_fp32.onnx"), labels)),
            ("int8 model (onnxruntime)", accuracy(ort_logits(model), labels)),
            ("generated C, host gcc", accuracy([o[0] for o in rep.outputs["host"]], labels))]
    if "qemu" in rep.outputs:
        rows.append((f"generated C, QEMU {args.board}", accuracy([o[0] for o in rep.outputs["qemu"]], labels)))
    print(f"\ntop-1 accuracy on {len(labels)} held-out digits (scikit-learn digits):")
    for what, acc in rows:
        print(f"  {what:<32} {100 * acc:6.2f}%")
    if not rep.ok:
        print("FAILED: the generated C does not match the golden model", file=sys.stderr)
        return 1
    print("\nOK: host and QEMU outputs are bit-exact with mcugen's golden model.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
