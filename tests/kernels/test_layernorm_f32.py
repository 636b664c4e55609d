"""mcu_layernorm_f32_s8 (float island): host C kernel == numpy golden
(emitter/kernels/mcu_layernorm_f32_s8.py) == a scalar np.float32 transcription of the C, bit for bit, also
at -O2 with and without -ffp-contract=off (and with FMA hardware enabled), and on Cortex-M in QEMU
(soft-float and FPU) with params rendered by emitter/render/cfmt.py; the golden within 1 quantum of
float64 LayerNormalization; NaN (var + epsilon == 0) -> the output zero point; invalid parameters
-> MCU_ERR_ARG with the output untouched; the kernel cross-compiles warning-free without FMA or
double arithmetic."""
from __future__ import annotations

import ctypes
import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.mcu_layernorm_f32_s8 import LayerNormF32Params, mcu_layernorm_f32_s8
from emitter.ops.float_island import layernorm_f32_params
from emitter.render.cfmt import c_array, c_struct
from tests.harness.ckernels import (
    ARM_CPUS,
    KERNELS,
    MCU_ERR_ARG,
    build_lib,
    call_kernel,
    call_raw,
    call_status,
    cross_compile_kernel,
    run_bundle_on_qemu,
)
from tests.harness.layernorm_cases import BASE_CASES, Case, cases

KERNEL = "mcu_layernorm_f32_s8"
F32 = np.float32


CASES = {
    **BASE_CASES,
    "relu_act": Case(zp_out=-128, act=(-128, 127), s_out=0.015),
}


def build(case: Case, rng: np.random.Generator) -> tuple[LayerNormF32Params, np.ndarray]:
    n = case.row_size
    gamma = rng.normal(1.0, case.gamma_sd, n)
    beta = rng.normal(0.0, case.gamma_sd, n) if case.beta else None
    p = layernorm_f32_params(case.rows, n, case.s_in, case.zp_in, case.eps, gamma, beta,
                             case.s_out, case.zp_out, *case.act)
    lo, hi = max(-128, case.zp_in - case.spread), min(127, case.zp_in + case.spread)
    x = rng.integers(lo, hi + 1, (case.rows, n), dtype=np.int8)
    return p, x


def check(p: LayerNormF32Params, x: np.ndarray, lib: Any = None) -> np.ndarray:
    expected = mcu_layernorm_f32_s8(p, x)
    got = call_kernel(KERNEL, p, [x], (p.rows, p.row_size), lib=lib)
    np.testing.assert_array_equal(got, expected)
    return expected


def scalar_reference(p: LayerNormF32Params, x: np.ndarray) -> np.ndarray:
    """The C kernel transcribed statement by statement with np.float32 scalars."""
    out = np.empty((p.rows, p.row_size), dtype=np.int8)
    s, z, n_f = F32(p.input_scale), p.input_zero_point, F32(p.row_size)
    with np.errstate(all="ignore"):
        for r in range(p.rows):
            q = [int(v) for v in x[r]]
            total = F32(0.0)
            for qi in q:
                total = total + s * F32(qi - z)
            mean = total / n_f
            sq_sum = F32(0.0)
            for qi in q:
                d = s * F32(qi - z) - mean
                sq_sum = sq_sum + d * d
            inv = F32(1.0) / np.sqrt(sq_sum / n_f + F32(p.epsilon))
            for i, qi in enumerate(q):
                y = (s * F32(qi - z) - mean) * inv * p.gamma[i]
                if p.beta is not None:
                    y = y + p.beta[i]
                v = y * F32(p.output_inv_scale)
                if np.isnan(v):
                    k = 0
                else:
                    c = F32(-256.0) if v < -256.0 else (F32(256.0) if v > 256.0 else v)
                    k = int(c + F32(0.5)) if c >= 0.0 else int(c - F32(0.5))
                out[r, i] = min(max(k + p.output_zero_point, p.act_min), p.act_max)
    return out


def float_reference(p: LayerNormF32Params, s_out: float, x: np.ndarray) -> np.ndarray:
    """ONNX LayerNormalization in float64 (population variance), then QuantizeLinear (round half
    to even); NaN -> zero point."""
    xs = np.float64(F32(p.input_scale)) * (x.astype(np.float64) - p.input_zero_point)
    mean = xs.mean(axis=1, keepdims=True)
    var = ((xs - mean) ** 2).mean(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        y = (xs - mean) / np.sqrt(var + np.float64(F32(p.epsilon))) * p.gamma.astype(np.float64)
        if p.beta is not None:
            y = y + p.beta.astype(np.float64)
        q = np.round(np.clip(y / np.float64(F32(s_out)), -1e3, 1e3))
    q = np.where(np.isnan(q), 0.0, q) + p.output_zero_point
    return np.clip(q, p.act_min, p.act_max)


def assert_within_one_quantum(p: LayerNormF32Params, s_out: float, got: np.ndarray,
                              x: np.ndarray) -> None:
    diff = np.abs(got.astype(np.int64) - float_reference(p, s_out, x))
    assert diff.max() <= 1, f"max difference {diff.max()} quanta"


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    case = CASES[name]
    p, x = build(case, np.random.default_rng(sum(map(ord, name))))
    got = check(p, x)
    np.testing.assert_array_equal(got, scalar_reference(p, x))
    assert_within_one_quantum(p, case.s_out, got, x)


def test_nan_gives_zero_point() -> None:
    """A row all at the input zero point with epsilon 0: var + eps = 0, inv = inf, 0 * inf = NaN
    -> the output zero point, clamped into [act_min, act_max]; other rows are unaffected."""
    p, x = build(Case(rows=3, row_size=8, eps=0.0, zp_out=-9), np.random.default_rng(3))
    x[1] = p.input_zero_point
    got = check(p, x)
    assert (got[1] == -9).all()
    assert not (got[0] == -9).all()
    clamped = dataclasses.replace(p, act_min=0)
    assert (check(clamped, x)[1] == 0).all()


def test_row_size_1_is_beta() -> None:
    """n = 1: x - mean == 0 exactly, so y = beta (epsilon > 0), or NaN -> zero point (epsilon 0)."""
    p, x = build(Case(rows=1, row_size=1), np.random.default_rng(0))
    beta = F32(0.3)
    p = dataclasses.replace(p, beta=np.array([beta], dtype=F32), output_inv_scale=10.0)
    assert check(p, x).tolist() == [[3 + p.output_zero_point]]
    assert check(dataclasses.replace(p, epsilon=0.0), x).tolist() == [[p.output_zero_point]]


def test_beta_null_equals_beta_zero() -> None:
    p, x = build(Case(beta=False), np.random.default_rng(5))
    zeros = dataclasses.replace(p, beta=np.zeros(p.row_size, dtype=F32))
    np.testing.assert_array_equal(check(p, x), check(zeros, x))


def test_non_finite_gamma_beta() -> None:
    """inf in gamma saturates (or NaN when x_i == mean), NaN in beta -> zero point."""
    p, x = build(Case(rows=2, row_size=6), np.random.default_rng(9))
    gamma = p.gamma.copy()
    gamma[0], gamma[1] = np.inf, -np.inf
    beta = np.zeros(6, dtype=F32)
    beta[2] = np.nan
    q = dataclasses.replace(p, gamma=gamma, beta=beta)
    got = check(q, x)
    assert (got[:, 2] == p.output_zero_point).all()
    np.testing.assert_array_equal(got, scalar_reference(q, x))


@settings(max_examples=200, deadline=None)
@given(case=cases(96), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    p, x = build(case, np.random.default_rng(seed))
    assert_within_one_quantum(p, case.s_out, check(p, x), x)


positive_f32 = st.floats(min_value=float(np.finfo(F32).smallest_subnormal),
                         max_value=float(np.finfo(F32).max), width=32)
any_f32 = st.floats(width=32)  # nan and +-inf included


@settings(max_examples=200, deadline=None)
@given(s_in=positive_f32, inv=positive_f32,
       eps=st.one_of(st.just(0.0), st.floats(0.0, float(np.finfo(F32).max), width=32)),
       special=st.lists(st.tuples(st.integers(0, 15), any_f32), max_size=4),
       beta=st.booleans(), zps=st.tuples(st.integers(-128, 127), st.integers(-128, 127)),
       seed=st.integers(0, 2**32 - 1))
def test_property_raw_params(s_in: float, inv: float, eps: float,
                             special: list[tuple[int, float]], beta: bool, zps: tuple[int, int],
                             seed: int) -> None:
    """Any valid float32 scale, reciprocal and epsilon (0 to FLT_MAX, scales from subnormal),
    gamma/beta with inf and NaN entries: bit for bit, including overflow and NaN."""
    p, x = build(Case(rows=3, row_size=16, beta=beta, spread=4 if seed % 2 else 128),
                 np.random.default_rng(seed))
    gamma = p.gamma.copy()
    b = None if p.beta is None else p.beta.copy()
    for i, v in special:
        if b is not None and i % 2:
            b[i] = v
        else:
            gamma[i] = v
    q = dataclasses.replace(p, input_scale=s_in, output_inv_scale=inv, epsilon=eps, gamma=gamma,
                            beta=b, input_zero_point=zps[0], output_zero_point=zps[1])
    np.testing.assert_array_equal(check(q, x), scalar_reference(q, x))


NAN, INF = float("nan"), float("inf")
INVALID: dict[str, dict[str, Any]] = {
    "rows_0": {"rows": 0},
    "row_size_0": {"row_size": 0},
    "input_scale_0": {"input_scale": 0.0},
    "input_scale_neg": {"input_scale": -0.05},
    "input_scale_nan": {"input_scale": NAN},
    "input_scale_inf": {"input_scale": INF},
    "epsilon_neg": {"epsilon": -1e-5},
    "epsilon_nan": {"epsilon": NAN},
    "epsilon_inf": {"epsilon": INF},
    "output_inv_scale_0": {"output_inv_scale": 0.0},
    "output_inv_scale_nan": {"output_inv_scale": NAN},
    "output_inv_scale_inf": {"output_inv_scale": INF},
    "input_zero_point_128": {"input_zero_point": 128},
    "output_zero_point_-129": {"output_zero_point": -129},
    "act_min_gt_act_max": {"act_min": 10, "act_max": 9},
    "act_min_-129": {"act_min": -129},
    "act_max_128": {"act_max": 128},
    "gamma_null": {"gamma": None},
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, x = build(Case(), np.random.default_rng(0))
    bad = dataclasses.replace(p, **INVALID[name])
    status, out = call_status(KERNEL, bad, [x], (p.rows, p.row_size))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_layernorm_f32_s8(bad, x)


def test_null_pointers() -> None:
    p, x = build(Case(), np.random.default_rng(0))
    out = np.zeros_like(x)
    args: list[Any] = [p, x, out]
    for i in range(3):
        bad = list(args)
        bad[i] = None
        assert call_raw(KERNEL, *bad) == MCU_ERR_ARG


def test_in_place() -> None:
    p, x = build(Case(), np.random.default_rng(2))
    expected = mcu_layernorm_f32_s8(p, x)
    assert call_raw(KERNEL, p, x, x) == 0
    np.testing.assert_array_equal(x, expected)


# ---- compiler options ------------------------------------------------------------------------

def _has_fma() -> bool:
    try:
        return " fma " in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


FLAG_SETS = {
    "c99_O2": ("-std=c99", "-O2"),
    "c99_O2_contract_off": ("-std=c99", "-O2", "-ffp-contract=off"),
    "c99_O2_fma_hw": ("-std=c99", "-O2", "-mfma"),  # FMA available, c99 keeps it unused
    "c99_O3_fma_hw_contract_off": ("-std=c99", "-O3", "-mfma", "-ffp-contract=off"),
}


@pytest.mark.parametrize("flags", list(FLAG_SETS))
def test_bit_exact_across_compile_flags(flags: str) -> None:
    """The bundles compile with -std=c99, where gcc defaults to -ffp-contract=off: sum + s * x and
    d * inv * gamma + beta are not fused into FMAs (with -std=gnu99 -mfma they would be), so the
    golden holds at any optimisation level, with FMA hardware too."""
    if "-mfma" in FLAG_SETS[flags] and not _has_fma():
        pytest.skip("host CPU has no FMA")
    lib = build_lib((str(KERNELS / f"{KERNEL}.c"),), f"{KERNEL}_{flags}",
                    (*FLAG_SETS[flags], "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror"))
    if "-mfma" in FLAG_SETS[flags]:  # int8 outputs rarely expose a fused rounding: look for it
        asm = subprocess.run(["objdump", "-d", lib._name], check=True, capture_output=True,
                             text=True).stdout
        assert not re.search(r"\bvf(n?)m(add|sub)", asm), "FMA contraction"
    rng = np.random.default_rng(7)
    for case in (Case(rows=64, row_size=96), Case(rows=8, row_size=768, beta=False),
                 Case(rows=256, row_size=8, spread=3, eps=1e-9)):
        check(*build(case, rng), lib=lib)


@pytest.mark.parametrize("opt", ["-O2", "-Os"])
@pytest.mark.parametrize("cpu", list(ARM_CPUS))
def test_cross_compile(cpu: str, opt: str, tmp_path: Path) -> None:
    """Warning-free under the strict flag set; no fused multiply-add, no double arithmetic
    (soft-float: no __aeabi_d* call; FPU: no .f64 instruction); sqrtf the only libm function."""
    asm = cross_compile_kernel(KERNEL, cpu, tmp_path, opt)
    assert not re.search(r"\bv(fma|fms|fnma|fnms)\b", asm), "FMA contraction"
    assert "__aeabi_d" not in asm and ".f64" not in asm, "double arithmetic"
    calls = set(re.findall(r"R_ARM_THM_(?:CALL|JUMP24)\s+(\S+)", asm))
    assert {c for c in calls if not c.startswith("__aeabi_")} <= {"sqrtf"}, calls
    if cpu == "cortex-m0plus":
        assert "sqrtf" in calls and not re.search(r"\bv[a-z]+\.f32\b", asm)
    else:
        assert "vdiv.f32" in asm and ("vsqrt.f32" in asm or "sqrtf" in calls)


# ---- a bundle-like caller: params rendered by emitter/render/cfmt.py, on the host and in QEMU --------

NET_ROWS, NET_N = 8, 48


def _net_params() -> list[LayerNormF32Params]:
    rng = np.random.default_rng(21)
    n = NET_N
    return [
        layernorm_f32_params(NET_ROWS, n, 0.05, 3, 1e-5, rng.normal(1, 0.3, n),
                             rng.normal(0, 0.3, n), 0.03, -2, -128, 127),
        layernorm_f32_params(NET_ROWS, n, 0.013, -20, 1e-3, rng.normal(0, 4.0, n), None, 0.02,
                             -128, -128, 127),  # no beta, saturating gamma
        layernorm_f32_params(NET_ROWS, n, 0.05, 3, 0.0, rng.normal(1, 0.3, n),
                             rng.normal(0, 0.3, n), 0.03, 5, -100, 100),  # NaN on a zp row
        layernorm_f32_params(NET_ROWS * n, 1, 0.05, 3, 1e-5, np.ones(1), rng.normal(0, 1, 1),
                             0.03, 0, -128, 127),  # row_size 1: y = beta
    ]


def _net_c(ps: list[LayerNormF32Params]) -> str:
    """net_run_multi(inputs, outputs): output k = layer norm k of input 0."""
    assert LayerNormF32Params.CTYPE == "mcu_layernorm_f32_params_t"
    parts = ["#include \"mcu_nn.h\"\n"]
    for k, p in enumerate(ps):
        refs = {}
        for field in ("gamma", "beta"):
            values = getattr(p, field)
            if values is not None:
                refs[field] = f"p{k}_{field}"
                parts.append(f"static const float p{k}_{field}[{values.size}] = {{\n"
                             f"{c_array(values)}\n}};\n")
        parts.append(f"static const mcu_layernorm_f32_params_t p{k} = {c_struct(p, refs)};\n")
    calls = "".join(f"    status |= (int)mcu_layernorm_f32_s8(&p{k}, inputs[0], outputs[{k}]);\n"
                    for k in range(len(ps)))
    return ("".join(parts) +
            "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);\n"
            "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)\n{\n"
            f"    int status = 0;\n{calls}    return status;\n}}\n")


def _net_samples() -> list[np.ndarray]:
    rng = np.random.default_rng(23)
    samples = [rng.integers(-128, 128, (NET_ROWS, NET_N), dtype=np.int8) for _ in range(3)]
    samples[0][1] = 3  # the input zero point: var 0 (NaN with epsilon 0)
    samples[1][2] = samples[1][2, 0]  # a constant row
    return samples


def _net_expected(ps: list[LayerNormF32Params], samples: list[np.ndarray]) -> bytes:
    return b"".join(mcu_layernorm_f32_s8(p, x.reshape(p.rows, p.row_size)).tobytes()
                    for x in samples for p in ps)


def test_rendered_params_host(tmp_path: Path) -> None:
    """c_struct (float fields, NULL beta) and c_array (float32 arrays) as the code generator prints
    them, compiled -std=c99 -O2 with the kernel: the golden's bytes."""
    ps = _net_params()
    src = tmp_path / "net.c"
    src.write_text(_net_c(ps))
    lib = build_lib((str(src), str(KERNELS / f"{KERNEL}.c")), "ln_net",
                    ("-std=c99", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Wconversion",
                     "-Wdouble-promotion", "-Werror"))
    out = bytearray()
    for x in _net_samples():
        outs = [np.zeros(NET_ROWS * NET_N, dtype=np.int8) for _ in ps]
        ins = (ctypes.c_void_p * 1)(x.ctypes.data)
        out_ptrs = (ctypes.c_void_p * len(ps))(*(o.ctypes.data for o in outs))
        assert lib.net_run_multi(ins, out_ptrs) == 0
        out += b"".join(o.tobytes() for o in outs)
    assert bytes(out) == _net_expected(ps, _net_samples())


@pytest.mark.qemu
@pytest.mark.parametrize("core", ["cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55"])
def test_qemu_bit_exact(core: str, tmp_path: Path) -> None:
    """Soft-float (M0+, newlib's sqrtf) and FPU (M4 single, M7 double-precision, M55 with MVE)
    builds at the harness's -O2 -std=c99 give the golden's bytes."""
    ps = _net_params()
    samples = _net_samples()
    size = NET_ROWS * NET_N
    out = run_bundle_on_qemu(core, [KERNEL], _net_c(ps), [size], [size] * len(ps),
                             b"".join(x.tobytes() for x in samples), tmp_path)
    assert out == _net_expected(ps, samples)
