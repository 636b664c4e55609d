"""Fuzzing the whole pipeline (issue #5, item 3): mutated valid models, byte-level and structural.

Every case runs compile_model -> render_bundle -> write_bundle into a fresh folder and must end in
success (a complete bundle, exactly the rendered files) or a McugenError (nothing written, no
temporary folder left) -- never another exception, a crash, a hang (per-case deadline) or a
partial bundle. Seeds: the tiny models of tests/models/tiny.py
(hello_fc among them), and the shared tflm_hello_world model where ../shared/models is present.

Two tiers (this file and tests/test_fuzz_wild.py):
- the default run (the README's test command) cannot fail by chance: a fixed seed (the same cases
  every run for a given hypothesis version), 2,500 byte-level + 2,500 structural cases (about 25 s),
  plus every crash ever found, replayed: the REGRESSIONS below (@example) and the committed
  database tests/.hypothesis-db (read-only here);
- the wide tier hunts for new cases: fresh random seeds, 20,000 cases per test, and a failing case
  is saved into tests/.hypothesis-db:

      MCUGEN_FUZZ=wide python -m pytest -q -s -p no:cacheprovider tests/test_fuzz.py tests/test_fuzz_wild.py

  Every crash it finds becomes a committed regression case: fix it, add its bytes' builder to
  REGRESSIONS (or a case in a regression test), and commit tests/.hypothesis-db.
MCUGEN_FUZZ_EXAMPLES=<per test> sets the count in either tier (MCUGEN_FUZZ_RANDOM=1: the wide tier,
as before). The count and time are printed (`pytest -s`) and recorded as properties (`--junitxml`).
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, example, given, seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase
from onnx import TensorProto as TP
from onnx import numpy_helper as NH

from emitter.compiler import compile_model
from emitter.errors import McugenError
from emitter.render.bundle import render_bundle
from emitter.render.write import MANIFEST, manifest, write_bundle
from tests.harness.bundles import SHARED_MODELS, shared_model
from tests.models.tiny import TINY_MODELS, hello_fc

WIDE = os.environ.get("MCUGEN_FUZZ", "") == "wide" or os.environ.get("MCUGEN_FUZZ_RANDOM", "") == "1"
EXAMPLES = int(os.environ.get("MCUGEN_FUZZ_EXAMPLES", "20000" if WIDE else "2500"))
FUZZ_SEED = 20260530  # the default tier's fixed seed (hypothesis' derandomize would turn the database off)
DATABASE_DIR = Path(__file__).resolve().parent / ".hypothesis-db"


def tiered(case: Callable[..., None], examples: int) -> Callable[..., None]:
    """`case` (already under @given) with the tier's settings: the default tier a fixed seed and the
    committed database read-only, the wide tier fresh seeds and the database written."""
    db = DirectoryBasedExampleDatabase(str(DATABASE_DIR))
    case = settings(max_examples=examples, deadline=None, derandomize=False,
                    database=db if WIDE else ReadOnlyDatabase(db), suppress_health_check=list(HealthCheck))(case)
    return case if WIDE else seed(FUZZ_SEED)(case)
DEADLINE_S = 10  # per case; the slowest legitimate case takes well under a second

SEEDS: dict[str, onnx.ModelProto] = {"hello_fc": hello_fc()}
SEEDS.update({name: build() for name, build in TINY_MODELS.items()})
if SHARED_MODELS.is_dir():
    SEEDS["tflm_hello_world"] = onnx.load(shared_model("tflm_hello_world"))
SEED_BYTES = {name: m.SerializeToString() for name, m in SEEDS.items()}


# Crashes found by this fuzzer in mcugen's own passes, not yet fixed, each with a reproducer in
# tests/test_robustness.py::test_known_crash (strict xfail). They are counted, not failed on; when
# one is fixed its reproducer starts passing (and fails as XPASS): remove it here and there.
# Signature: (exception type, "file.py:function" of the innermost mcugen frame).
KNOWN_BUGS: dict[tuple[str, str], str] = {}  # (exception type, "file:function") -> what; keep empty


def signature(exc: BaseException) -> tuple[str, str]:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f"{os.sep}emitter{os.sep}" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].name}" if frames else "?"
    return type(exc).__name__, where


class Hang(Exception):
    """A case ran past its deadline."""


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise Hang(f"case ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_case(raw: bytes) -> str:
    """The pipeline on one model file; returns 'ok' or the McugenError class name.

    Anything else propagates and fails the test (hypothesis then shrinks it)."""
    with tempfile.TemporaryDirectory(prefix="mcugen-fuzz-") as tmp:
        folder = Path(tmp)
        model = folder / "model.onnx"
        model.write_bytes(raw)
        out = folder / "out"
        try:
            with deadline(DEADLINE_S):
                c = compile_model(model)
                files = render_bundle(c, "", "host")
                write_bundle(files, out)
        except McugenError as exc:
            assert str(exc).strip(), "an error without a message"
            assert sorted(p.name for p in folder.iterdir()) == ["model.onnx"], "something was written"
            return type(exc).__name__
        except Exception as exc:
            if signature(exc) not in KNOWN_BUGS:
                raise
            assert sorted(p.name for p in folder.iterdir()) == ["model.onnx"], "something was written"
            return "known bug: " + KNOWN_BUGS[signature(exc)]
        written = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        assert written == {**files, MANIFEST: manifest(files)}, "the bundle on disk is not exactly the rendered files"
        assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "out"]
        return "ok"


def fuzz(record_property: Callable[[str, object], None], label: str,
         strategy: st.SearchStrategy[bytes]) -> None:
    stats: Counter[str] = Counter()

    def case(raw: bytes) -> None:
        stats[run_case(raw)] += 1

    for build in reversed(REGRESSIONS.get(label, [])):
        case = example(build())(case)
    case = tiered(given(strategy)(case), EXAMPLES)

    t0 = time.perf_counter()
    case()
    elapsed = time.perf_counter() - t0
    total = sum(stats.values())
    record_property(f"{label}_cases", total)
    record_property(f"{label}_seconds", round(elapsed, 2))
    record_property(f"{label}_outcomes", dict(stats))
    print(f"\nfuzz {label}: {total} cases in {elapsed:.1f} s: {dict(sorted(stats.items()))}")
    known = {k: v for k, v in stats.items() if k.startswith("known bug")}
    if known:
        print(f"fuzz {label}: WARNING: {sum(known.values())} cases hit known, unfixed crashes: {known}")
    assert total >= min(EXAMPLES, 1000)


# ---- byte-level mutations ------------------------------------------------------------------------

@st.composite
def mutated_bytes(draw: st.DrawFn) -> bytes:
    """A seed's protobuf bytes after 1-4 bit flips, byte overwrites, truncations, splices,
    duplications or deletions."""
    data = bytearray(SEED_BYTES[draw(st.sampled_from(sorted(SEED_BYTES)))])
    for _ in range(draw(st.integers(1, 4))):
        n = len(data)
        if n == 0:
            break
        kind = draw(st.sampled_from(["flip", "byte", "truncate", "splice", "dup", "delete"]))
        i = draw(st.integers(0, n - 1))
        if kind == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            data[i] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0x08, 0x12, 0x1A]))
        elif kind == "truncate":
            del data[i:]
        elif kind == "splice":
            j = draw(st.integers(0, n - 1))
            length = draw(st.integers(1, 64))
            data[i:i] = data[j:j + length]
        elif kind == "dup":
            length = draw(st.integers(1, 32))
            data[i:i] = data[i:i + length]
        else:
            del data[i:i + draw(st.integers(1, 16))]
    return bytes(data)


def test_fuzz_protobuf_bytes(record_property: Callable[[str, object], None]) -> None:
    fuzz(record_property, "bytes", mutated_bytes())


# ---- structural mutations ------------------------------------------------------------------------

OP_TYPES = ["Conv", "MatMul", "Gemm", "Add", "Mul", "Relu", "Clip", "AveragePool", "MaxPool",
            "GlobalAveragePool", "Softmax", "Sigmoid", "Tanh", "Concat", "Reshape", "Transpose",
            "Flatten", "Squeeze", "Identity", "QuantizeLinear", "DequantizeLinear", "Pad",
            "QLinearConv", "QLinearAdd", "QLinearConcat", "QLinearMatMul", "Erf", "TopK", "Loop"]
DIMS = [0, -1, 1, 2, 3, 4, 6, 8, 16, 1 << 31, 1 << 62]
ELEM_TYPES = [TP.FLOAT, TP.INT8, TP.UINT8, TP.INT32, TP.INT64, TP.INT16, TP.FLOAT16, TP.DOUBLE,
              TP.BOOL, TP.STRING, 0, 99]
SPECIAL = [0.0, -1.0, 1.0, np.nan, np.inf, -np.inf, 1e30, 1e-30, 1e-45, 127.0, -128.0, 255.0, 2.0 ** 31]


def all_names(m: onnx.ModelProto) -> list[str]:
    g = m.graph
    names = {vi.name for vi in list(g.input) + list(g.output) + list(g.value_info)}
    names |= {t.name for t in g.initializer}
    for n in g.node:
        names.update(n.input)
        names.update(n.output)
    return sorted(names) + ["", "ghost"]


def new_values(draw: st.DrawFn, t: onnx.TensorProto) -> onnx.TensorProto:
    arr = NH.to_array(t)
    kind = draw(st.sampled_from(["random", "special", "reshape", "retype"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "random":
        if arr.dtype.kind == "f":
            vals = rng.normal(0, draw(st.sampled_from([1e-3, 1.0, 1e6])), arr.shape)
        else:
            info = np.iinfo(arr.dtype) if arr.dtype.kind in "iu" else np.iinfo(np.int8)
            vals = rng.integers(info.min, info.max, arr.shape, endpoint=True)
        arr = np.asarray(vals).astype(arr.dtype)
    elif kind == "special":
        v = draw(st.sampled_from(SPECIAL))
        with np.errstate(all="ignore"):
            arr = np.full(arr.shape, v).astype(arr.dtype) if arr.dtype.kind == "f" or np.isfinite(v) \
                else np.zeros(arr.shape, arr.dtype)
        if arr.size > 1 and draw(st.booleans()):
            arr = arr.copy()
            arr.flat[0] = NH.to_array(t).flat[0]
    elif kind == "reshape":
        size = draw(st.sampled_from([0, 1, 2, 3, 5, 16]))
        arr = np.resize(arr.ravel(), size).reshape(draw(st.sampled_from([(size,), (1, size)])))
    else:
        dtype = draw(st.sampled_from([np.int8, np.uint8, np.int32, np.int64, np.float32, np.int16]))
        with np.errstate(all="ignore"):
            arr = arr.astype(dtype)
    return NH.from_array(arr, t.name)


def mutate_attribute(draw: st.DrawFn, node: onnx.NodeProto) -> None:
    if node.attribute and draw(st.booleans()):
        a = node.attribute[draw(st.integers(0, len(node.attribute) - 1))]
        choice = draw(st.sampled_from(["ints", "int", "delete", "float"]))
        if choice == "delete":
            node.attribute.remove(a)
            return
        if a.type == onnx.AttributeProto.INTS and choice == "ints":
            new = draw(st.lists(st.sampled_from([-2, -1, 0, 1, 2, 3, 5, 1 << 40]), min_size=0, max_size=6))
            del a.ints[:]
            a.ints.extend(new)
        elif a.type == onnx.AttributeProto.INT:
            a.i = draw(st.sampled_from([-2, -1, 0, 1, 2, 3, 4, 1 << 40]))
        elif a.type == onnx.AttributeProto.FLOAT:
            a.f = draw(st.sampled_from(SPECIAL))
    else:
        name = draw(st.sampled_from(["axis", "pads", "strides", "kernel_shape", "group", "dilations",
                                     "perm", "auto_pad", "ceil_mode", "transB", "bogus"]))
        if name == "auto_pad":
            value: object = draw(st.sampled_from(["SAME_UPPER", "VALID", "WEIRD"]))
        elif name in ("axis", "group", "ceil_mode", "transB"):
            value = draw(st.sampled_from([-1, 0, 1, 2, 3]))
        else:
            value = draw(st.lists(st.sampled_from([-1, 0, 1, 2, 3]), min_size=1, max_size=4))
        for a in list(node.attribute):
            if a.name == name:
                node.attribute.remove(a)
        node.attribute.append(onnx.helper.make_attribute(name, value))


@st.composite
def mutated_graph(draw: st.DrawFn) -> bytes:
    """A seed model after 1-3 structural edits: drop/duplicate/reorder/rewire nodes, change op
    types, attributes, dims, dtypes, initializer values, opsets; re-serialized."""
    m = onnx.ModelProto()
    m.CopyFrom(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
    g = m.graph
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["drop", "dup", "swap", "rewire_in", "rewire_out", "op_type",
                                     "attr", "attr", "dims", "dtype", "init", "init", "init", "opset",
                                     "drop_init", "drop_io", "strip_shapes", "domain"]))
        nodes = len(g.node)
        k = draw(st.integers(0, max(nodes - 1, 0)))
        if kind == "drop" and nodes:
            del g.node[k]
        elif kind == "dup" and nodes:
            copy = onnx.NodeProto()
            copy.CopyFrom(g.node[k])
            g.node.insert(draw(st.integers(0, nodes)), copy)
        elif kind == "swap" and nodes > 1:
            j = draw(st.integers(0, nodes - 1))
            a, b = onnx.NodeProto(), onnx.NodeProto()
            a.CopyFrom(g.node[k])
            b.CopyFrom(g.node[j])
            g.node[k].CopyFrom(b)
            g.node[j].CopyFrom(a)
        elif kind == "rewire_in" and nodes and g.node[k].input:
            j = draw(st.integers(0, len(g.node[k].input) - 1))
            g.node[k].input[j] = draw(st.sampled_from(all_names(m)))
        elif kind == "rewire_out" and nodes:
            g.node[k].output[0] = draw(st.sampled_from(all_names(m)))
        elif kind == "op_type" and nodes:
            g.node[k].op_type = draw(st.sampled_from(OP_TYPES))
        elif kind == "attr" and nodes:
            mutate_attribute(draw, g.node[k])
        elif kind == "dims":
            vis = list(g.input) + list(g.output) + list(g.value_info)
            if not vis:
                continue
            vi = vis[draw(st.integers(0, len(vis) - 1))]
            dims = vi.type.tensor_type.shape.dim
            if len(dims) and draw(st.booleans()):
                d = dims[draw(st.integers(0, len(dims) - 1))]
                if draw(st.integers(0, 5)) == 0:
                    d.dim_param = "n"
                else:
                    d.dim_value = draw(st.sampled_from(DIMS))
            else:
                new = draw(st.lists(st.sampled_from(DIMS[1:9]), min_size=0, max_size=5))
                del vi.type.tensor_type.shape.dim[:]
                for v in new:
                    vi.type.tensor_type.shape.dim.add().dim_value = v
        elif kind == "dtype":
            vis = list(g.input) + list(g.output)
            if not vis:
                continue
            vis[draw(st.integers(0, len(vis) - 1))].type.tensor_type.elem_type = draw(st.sampled_from(ELEM_TYPES))
        elif kind == "init" and len(g.initializer):
            j = draw(st.integers(0, len(g.initializer) - 1))
            g.initializer[j].CopyFrom(new_values(draw, g.initializer[j]))
        elif kind == "opset":
            m.opset_import[0].version = draw(st.sampled_from([1, 9, 10, 11, 13, 17, 19, 21, 22, 99]))
        elif kind == "drop_init" and len(g.initializer):
            del g.initializer[draw(st.integers(0, len(g.initializer) - 1))]
        elif kind == "drop_io":
            coll = g.input if draw(st.booleans()) else g.output
            if len(coll):
                del coll[draw(st.integers(0, len(coll) - 1))]
        elif kind == "strip_shapes":
            del g.value_info[:]
            for vi in g.output:
                vi.type.tensor_type.ClearField("shape")
        elif kind == "domain" and nodes:
            g.node[k].domain = draw(st.sampled_from(["", "com.microsoft", "ai.onnx.ml", "x.y"]))
    return m.SerializeToString()


def sigmoid_output_scale_1e_30() -> bytes:
    """Found by test_fuzz_graph_structure on a fresh machine (issue 30): a QDQ Sigmoid whose output
    is quantized with scale ~1e-30; emitter/ops/lut.py table() raised OverflowError."""
    from tests.test_lut_scales import lut_model

    return lut_model("Sigmoid", 1 / 32, 1e-30).SerializeToString()


# Crashes found by fuzzing, replayed first in every run (fuzz label -> builders of the case's bytes)
REGRESSIONS: dict[str, list[Callable[[], bytes]]] = {"graph": [sigmoid_output_scale_1e_30]}


def test_fuzz_graph_structure(record_property: Callable[[str, object], None]) -> None:
    fuzz(record_property, "graph", mutated_graph())


def test_seeds_compile() -> None:
    """The seeds themselves succeed, so the fuzzers start from valid models."""
    for name, raw in SEED_BYTES.items():
        assert run_case(raw) == "ok", name


if __name__ == "__main__":  # a quick manual run: python tests/test_fuzz.py
    random.seed(0)
    pytest.main([__file__, "-s", "-q"])
