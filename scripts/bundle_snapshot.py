"""Emit every bundle a refactor must leave byte-identical, and list their files' sha256.

    python scripts/bundle_snapshot.py OUT_DIR            # writes OUT_DIR/<case>/... and OUT_DIR/MANIFEST
    python scripts/bundle_snapshot.py OUT_DIR --compare BASE_DIR

Cases: the shared models (../shared/models, when present), the zoo and the demo model, portable on
every generic core, and cmsis-nn on every generic Arm core when CMSIS_NN_PATH is set. `--compare`
prints every file that differs from an earlier snapshot (exit 1 if any). `--cores`, `--memory`
(plans: layer, stream, auto; a case other than layer is named <model>.<core>.<backend>.<memory>)
and `--no-zoo` narrow or widen the cases.
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from emitter.boards import load_board  # noqa: E402
from emitter.compiler import compile_model  # noqa: E402
from emitter.errors import McugenError  # noqa: E402
from emitter.render.bundle import render_bundle  # noqa: E402

CORES = ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")


def models(zoo: bool = True) -> list[Path]:
    shared = REPO.parent / "shared" / "models"
    out = sorted(shared.glob("*/*.onnx")) if shared.is_dir() else []
    if zoo:
        out += sorted((REPO / "tests" / "models" / "zoo" / "models").glob("*.onnx"))
    out.append(REPO / "examples" / "digits_cnn_int8.onnx")
    return out


def snapshot(out: Path, cores: tuple[str, ...] = CORES, memories: tuple[str, ...] = ("layer",),
             zoo: bool = True) -> dict[str, str]:
    cmsis = os.environ.get("CMSIS_NN_PATH")
    manifest: dict[str, str] = {}
    for model in models(zoo):
        for core in cores:
            board = load_board(core)
            backends = ["portable"] + (["cmsis-nn"] if cmsis else [])
            for backend, memory in ((b, m) for b in backends for m in memories):
                case = f"{model.stem}.{core}.{backend}" + ("" if memory == "layer" else f".{memory}")
                try:
                    c = compile_model(model, backend=backend, board=board, memory=memory,
                                      cmsis_path=Path(cmsis) if backend == "cmsis-nn" and cmsis else None)
                    files = render_bundle(c, " ".join(board.cflags), board.name)
                except McugenError as exc:  # a refusal is part of the snapshot too
                    files = {"REFUSED": str(exc).encode()}
                for rel, data in sorted(files.items()):
                    dest = out / case / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(data)
                    manifest[f"{case}/{rel}"] = hashlib.sha256(data).hexdigest()
    (out / "MANIFEST").write_text("".join(f"{h}  {k}\n" for k, h in sorted(manifest.items())))
    return manifest


def compare(out: Path, base: Path, show: int) -> int:
    def read(p: Path) -> dict[str, str]:
        return {k: h for h, k in (line.split("  ", 1) for line in p.read_text().splitlines())}

    new, old = read(out / "MANIFEST"), read(base / "MANIFEST")
    bad = sorted(k for k in set(new) | set(old) if new.get(k) != old.get(k))
    for k in bad:
        print(f"differs: {k}" if k in new and k in old else f"{'only new' if k in new else 'only old'}: {k}")
    for k in [k for k in bad if k in new and k in old][:show]:
        a = (base / k).read_text(errors="replace").splitlines()
        b = (out / k).read_text(errors="replace").splitlines()
        sys.stdout.writelines(line + "\n" for line in list(difflib.unified_diff(a, b, k, k, lineterm=""))[:60])
    print(f"{len(new)} files, {len(bad)} differ")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--compare", type=Path, help="an earlier snapshot to compare with")
    ap.add_argument("--show", type=int, default=3, help="diffs to print with --compare")
    ap.add_argument("--cores", default=",".join(CORES), help="comma-separated cores (default: every generic core)")
    ap.add_argument("--memory", default="layer", help="comma-separated plans: layer, stream, auto (default: layer)")
    ap.add_argument("--no-zoo", action="store_true", help="the shared models and the demo model only")
    args = ap.parse_args()
    snapshot(args.out, tuple(args.cores.split(",")), tuple(args.memory.split(",")), not args.no_zoo)
    return compare(args.out, args.compare, args.show) if args.compare else 0


if __name__ == "__main__":
    sys.exit(main())
