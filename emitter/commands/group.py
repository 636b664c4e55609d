"""`mcugen A.onnx B.onnx ... --board=B -o DIR`: the checks of a several-model invocation, made
before anything is compiled or written (issue 25 item 1; emitter/render/group.py renders it).

Each refusal is a UsageError (exit 2), with nothing written: several boards, a --name list that
does not give one name per model, duplicate names, a model file that does not exist, and the
options that belong to one model (a feature front end, --inputs, --tune's cache, --junit/--json).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from emitter.compiler import c_name
from emitter.errors import UsageError


def model_names(name: str | None, paths: list[str]) -> list[str]:
    """The models' C prefixes: --name's comma-separated list, one per model, or the file stems."""
    if name is None:
        return [c_name(Path(p).stem) for p in paths]
    names = [n.strip() for n in name.split(",")]
    if len(names) != len(paths) or not all(names):
        raise UsageError(f"--name '{name}' gives {len([n for n in names if n])} names for {len(paths)} models: "
                         "give one per model, comma-separated, in the models' order")
    return names


def check_group_args(args: argparse.Namespace, paths: list[str], boards: list[str]) -> None:
    if len(boards) > 1:
        raise UsageError(f"several models go into one bundle for one board, but --board names {len(boards)} "
                         f"({', '.join(boards)}): run mcugen once per board")
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        raise UsageError(f"model file '{missing[0]}' does not exist")
    for option, given in (("--frontend", getattr(args, "frontend", None)), ("--inputs", args.inputs),
                          ("--junit", args.junit), ("--json", args.json)):
        if given:
            raise UsageError(f"{option} goes with one model; several models are verified on random samples "
                             "each (run `mcugen verify` per model for the others)")
    seen = model_names(args.name, paths)
    dup = next((n for k, n in enumerate(seen) if n in seen[:k]), None)
    if dup is not None:
        raise UsageError(f"several models have the name '{dup}' (from the file stems or --name): "
                         "give each a different one with --name a,b,...")
