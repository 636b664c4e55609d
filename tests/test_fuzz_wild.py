"""Fuzzing from real quantized graphs (issue #13): seeds written by other tools, mutated where such
tools vary (shapes, attributes, scales, zero points, weights, bias shapes, opsets, I/O types).

Seeds: onnx's own operator test cases for the quantized ops (tests/models/onnx_backend.py),
onnxruntime quantize_static outputs of small float models (QDQ and QOperator, int8 and uint8,
tests/models/ops.py), and the wild cases of tests/models/wild.py. Every seed has one quantized
op, so onnxruntime is a reference within one quantum.

Every case must end in one of:
  - a clean refusal: a McugenError (exit status 2 through the CLI), nothing else escapes;
  - a build whose golden model is within one quantum of onnxruntime on random int8 samples
    (onnxruntime refusing the mutated model itself is counted, not failed), and, for a sample of
    the builds, whose host C equals the golden bit for bit (one shared library at the end).
A fixed seed (the same cases every CI run), MCUGEN_FUZZ_WILD_EXAMPLES cases (default 500, about
20 s), the committed tests/.hypothesis-db replayed; MCUGEN_FUZZ=wide explores fresh ones (5,000 by
default) and saves failing cases there (tiers: tests/test_fuzz.py).
Counts are printed (`pytest -s`) and recorded.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto as TP
from onnx import numpy_helper as NH

from emitter.compiler import Compiled, compile_model, golden_run
from emitter.errors import McugenError
from emitter.render.bundle import render_bundle
from emitter.verify.run import diff_stats, load_inputs, ort_run
from tests.harness.bundles import build_library, emit, ort_u8s8_saturates, run_c
from tests.models.onnx_backend import backend_models
from tests.models.ops import CASES, case_model
from tests.models.wild import WILD_CASES
from tests.test_fuzz import DEADLINE_S, WIDE, deadline, mutate_attribute, tiered

EXAMPLES = int(os.environ.get("MCUGEN_FUZZ_WILD_EXAMPLES", "5000" if WIDE else "500"))
HOST_CHECKED = 24  # builds whose host C is compared with the golden model, at most
QUANTIZED = [("conv3x3_p1", "qdq", "int8"), ("conv3x3_s2", "qop", "uint8"), ("gemm_transb1", "qdq", "int8"),
             ("gemm_transb0", "qop", "int8"), ("matmul_add_bias", "qdq", "int8"),
             ("add_per_channel_const", "qop", "int8"),
             ("mul_bcast_two_acts", "qdq", "int8"), ("avgpool_k3s1_p1_excl", "qdq", "uint8"),
             ("maxpool_k3s2_p1", "qdq", "int8"), ("gap_4x4", "qop", "int8"), ("concat_3", "qdq", "int8"),
             ("convt_k3_s2_p1_op1", "qdq", "int8"), ("convt_output_shape_same_upper", "qdq", "uint8")]
OPSETS = [13, 17, 19, 21, 22, 23, 24, 25]
DIMS = [1, 2, 3, 4, 5, 8]


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, bytes]:
    out = dict(backend_models())
    out.update({name: build().SerializeToString() for name, build in WILD_CASES.items()})
    tmp = tmp_path_factory.mktemp("fuzz_seeds")
    by_id = {c.id: c for cases in CASES.values() for c in cases}
    for case_id, fmt, act in QUANTIZED:
        path, _ = case_model(by_id[case_id], fmt, tmp, activation_type=act)
        out[f"{case_id}-{fmt}-{act}"] = path.read_bytes()
    return out


def _consumers(g: onnx.GraphProto) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    uses: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for n in g.node:
        for k, i in enumerate(n.input):
            uses.setdefault(i, []).append((n, k))
    return uses


def _is_scale(uses: list[tuple[onnx.NodeProto, int]]) -> bool:
    return any((n.op_type in ("QuantizeLinear", "DequantizeLinear") and k == 1) or
               (n.op_type.startswith("QLinear") or n.op_type == "QGemm") and k in (1, 4, 6, 7) for n, k in uses)


@st.composite
def mutated(draw: st.DrawFn, seeds: dict[str, bytes]) -> tuple[str, bytes]:
    """A seed after 1-3 edits of the kinds other tools vary; shapes are left to shape inference."""
    # onnx's own cases are mostly refusals by design (float8, int4, 16-bit): one draw in four
    backend = sorted(n for n in seeds if n.startswith("test_"))
    name = draw(st.sampled_from(backend if draw(st.integers(0, 3)) == 0 else sorted(set(seeds) - set(backend))))
    m = onnx.load_model_from_string(seeds[name])
    g = m.graph
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    kinds = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["dims", "attr", "scale", "zero_point", "weights", "bias", "opset",
                                     "io_type"]))
        kinds.append(kind)
        inits = {t.name: t for t in g.initializer}
        uses = _consumers(g)
        arrays = {n: NH.to_array(t) for n, t in inits.items() if t.data_type not in (
            TP.FLOAT8E4M3FN, TP.FLOAT8E5M2, TP.INT4, TP.UINT4, TP.FLOAT4E2M1, TP.INT2, TP.UINT2)}
        if kind == "dims":
            ins = [vi for vi in g.input if vi.name not in inits]
            if ins:
                vi = ins[draw(st.integers(0, len(ins) - 1))]
                dims = vi.type.tensor_type.shape.dim
                if len(dims):
                    dims[draw(st.integers(0, len(dims) - 1))].dim_value = draw(st.sampled_from(DIMS))
                del g.value_info[:]
                for o in g.output:
                    o.type.tensor_type.ClearField("shape")
        elif kind == "attr" and len(g.node):
            mutate_attribute(draw, g.node[draw(st.integers(0, len(g.node) - 1))])
        elif kind == "scale":
            names = [n for n, a in arrays.items() if a.dtype.kind == "f" and _is_scale(uses.get(n, []))]
            if names:
                n = draw(st.sampled_from(sorted(names)))
                size = draw(st.sampled_from([arrays[n].size, 1, max(arrays[n].size, 2)]))
                vals = np.exp(rng.uniform(np.log(1e-5), np.log(10.0), size)).astype(arrays[n].dtype)
                inits[n].CopyFrom(NH.from_array(vals.reshape(arrays[n].shape) if size == arrays[n].size else vals, n))
        elif kind == "zero_point":
            names = [n for n, a in arrays.items() if a.dtype in (np.int8, np.uint8) and a.size <= 64]
            if names:
                n = draw(st.sampled_from(sorted(names)))
                a = arrays[n]
                if draw(st.booleans()):
                    info = np.iinfo(a.dtype)
                    new = rng.integers(info.min, info.max, a.shape, endpoint=True).astype(a.dtype)
                else:  # the other 8-bit type, same real values where they fit
                    new = (a.astype(np.int16) + (128 if a.dtype == np.int8 else -128)).astype(
                        np.uint8 if a.dtype == np.int8 else np.int8)
                inits[n].CopyFrom(NH.from_array(new, n))
        elif kind == "weights":
            names = [n for n, a in arrays.items() if a.dtype in (np.int8, np.uint8) and a.size > 1]
            if names:
                n = draw(st.sampled_from(sorted(names)))
                info = np.iinfo(arrays[n].dtype)
                lo = info.min + (1 if arrays[n].dtype == np.int8 else 0)
                inits[n].CopyFrom(NH.from_array(rng.integers(lo, info.max, arrays[n].shape, endpoint=True)
                                                .astype(arrays[n].dtype), n))
        elif kind == "bias":
            names = [n for n, a in arrays.items() if a.dtype == np.int32]
            if names:
                n = draw(st.sampled_from(sorted(names)))
                d = arrays[n].shape[-1] if arrays[n].ndim else 1
                shape = draw(st.sampled_from([(), (1,), (d,), (1, d), (2, 1), (3, d), (d, 1), (d + 1,)]))
                inits[n].CopyFrom(NH.from_array(rng.integers(-5000, 5000, shape).astype(np.int32), n))
        elif kind == "opset":
            for o in m.opset_import:
                if o.domain in ("", "ai.onnx"):
                    o.version = draw(st.sampled_from(OPSETS))
            m.ir_version = max(m.ir_version, 10 if max(o.version for o in m.opset_import) <= 22 else 11)
        elif kind == "io_type":
            vis = [vi for vi in list(g.input) + list(g.output)
                   if vi.type.tensor_type.elem_type in (TP.INT8, TP.UINT8)]
            if vis:
                vi = vis[draw(st.integers(0, len(vis) - 1))]
                vi.type.tensor_type.elem_type = TP.UINT8 if vi.type.tensor_type.elem_type == TP.INT8 else TP.INT8
    return f"{name} <- {'+'.join(kinds)}", m.SerializeToString()


def _uses_u8_activations(c: Compiled) -> bool:
    return any(b.from_uint8 for b in c.graph.boundaries.values())


def tolerance(c: Compiled) -> int:
    """Quanta the golden model may differ from onnxruntime: one per rounding, so one for a single
    quantized op; an intermediate tensor's one quantum becomes s_mid / s_out quanta at the output
    (the seeds' second layers, pooling, do not amplify)."""
    g = c.graph
    ends = set(g.inputs) | set(g.outputs)
    mids = [t.quant.s for name, t in g.tensors.items() if name not in ends and not t.is_const and t.quant is not None]
    if not mids:
        return 1
    out = min(g.t(o).quant.s for o in g.outputs if g.t(o).quant is not None)
    return 1 + int(np.ceil(max(mids) / out))


def check_case(label: str, raw: bytes, folder: Path, builds: dict[str, Compiled],
               stats: Counter[str], k: int) -> None:
    path = folder / f"case{k}.onnx"
    path.write_bytes(raw)
    try:
        with deadline(DEADLINE_S):
            c = compile_model(path, name=f"fz{len(builds)}")
            render_bundle(c, "", "host")
    except McugenError as exc:
        assert str(exc).strip(), f"{label}: an error without a message"
        stats[f"refused ({type(exc).__name__})"] += 1
        if os.environ.get("FUZZ_WILD_DEBUG"):
            print("REFUSED", label, "|", str(exc).replace("\n", " ")[:160])
        return
    samples = load_inputs(c, None, 2, seed=int(hashlib.sha256(raw).hexdigest()[:8], 16))
    gold = [golden_run(c, s) for s in samples]
    try:
        ort = ort_run(c, path, samples)
    except Exception as exc:  # noqa: BLE001 -- onnxruntime refusing the mutated model is its business
        stats["built (onnxruntime refuses the model)"] += 1
        if os.environ.get("FUZZ_WILD_DEBUG"):
            print("ORT-REFUSED", label, "|", str(exc).replace("\n", " ")[:300])
        return
    d, n, mx = diff_stats(gold, ort)
    if mx > 1 and _uses_u8_activations(c) and ort_u8s8_saturates():
        stats["built (onnxruntime's U8S8 saturation: no reference)"] += 1
        return
    allowed = tolerance(c)
    assert mx <= allowed, (f"{label}: built, but the golden model is {mx} quanta off onnxruntime "
                           f"({d}/{n} elements, {allowed} allowed): a silently wrong answer")
    stats["built, within one quantum of onnxruntime" if mx <= 1 else
          "built, within one quantum of onnxruntime per layer"] += 1
    digest = hashlib.sha256(raw).hexdigest()
    if len(builds) < HOST_CHECKED and digest not in builds:
        builds[digest] = c


def test_fuzz_real_quantized_graphs(seeds, tmp_path, record_property: Callable[[str, object], None]) -> None:
    stats: Counter[str] = Counter()
    builds: dict[str, Compiled] = {}
    work = Path(tempfile.mkdtemp(prefix="fuzz-wild-", dir=tmp_path))
    counter = iter(range(10 ** 9))

    @given(mutated(seeds))
    def case(labelled: tuple[str, bytes]) -> None:
        check_case(*labelled, work, builds, stats, next(counter))

    case = tiered(case, EXAMPLES)

    t0 = time.perf_counter()
    case()
    bundles = [emit(c, tmp_path / c.name) for c in builds.values()]
    lib = build_library(bundles, tmp_path / "libfuzz.so") if bundles else None
    for c in builds.values():
        sample = load_inputs(c, None, 1, seed=7)[0]
        assert lib is not None
        for h, g in zip(run_c(lib, c, sample), golden_run(c, sample), strict=True):
            np.testing.assert_array_equal(h, g, err_msg=f"{c.model.path.name}: host C differs from the golden model")
    elapsed = time.perf_counter() - t0
    total = sum(stats.values())
    record_property("wild_cases", total)
    record_property("wild_seconds", round(elapsed, 2))
    record_property("wild_outcomes", dict(stats))
    print(f"\nfuzz wild: {total} cases from {len(seeds)} seeds in {elapsed:.1f} s, host C checked on "
          f"{len(builds)} builds: {dict(sorted(stats.items()))}")
    assert total >= min(EXAMPLES, 100)
    assert stats["built, within one quantum of onnxruntime"] > 0
