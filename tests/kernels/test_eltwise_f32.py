"""mcu_eltwise_f32_s8 (float island): host C kernel == numpy golden (emitter/kernels/mcu_eltwise_f32_s8.py)
bit for bit, also at -O2 with and without -ffp-contract=off (and with FMA hardware enabled), and
on Cortex-M in QEMU (soft-float and FPU); the golden within 1 quantum of float64 math; division by
zero, inf and NaN follow the documented quantize rule; invalid parameters -> MCU_ERR_ARG with the
output untouched; the kernel cross-compiles warning-free without FMA or double arithmetic."""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import Bcast
from emitter.kernels.mcu_eltwise_f32_s8 import (
    F32_ADD,
    F32_DIV,
    F32_MUL,
    EltwiseF32Params,
    mcu_eltwise_f32_s8,
)
from emitter.ops.float_island import OPS, eltwise_f32_params
from emitter.render.cfmt import c_struct
from tests.harness.ckernels import (
    ARM_CPUS,
    INCLUDE,
    KERNELS,
    MCU_ERR_ARG,
    build_lib,
    call_kernel,
    call_raw,
    call_status,
    cross_compile_kernel,
    run_bundle_on_qemu,
)

KERNEL = "mcu_eltwise_f32_s8"


class Case(NamedTuple):
    size: int = 24
    in1: Bcast = Bcast(1, 24)
    in2: Bcast = Bcast(1, 24)
    op: str = "Div"
    s1: float = 0.05
    zp1: int = 3
    s2: float = 0.02
    zp2: int = -7
    s_out: float = 0.06
    zp_out: int = 1
    act: tuple[int, int] = (-128, 127)
    b_at_zp: float = 0.0  # fraction of input2 elements set to zp2 (divisor 0 for Div)


# An NHWC map [1, 2, 3, 4] (24 elements) with a second operand of various broadcast shapes.
CASES = {
    **{f"full_{op.lower()}": Case(op=op) for op in OPS},
    "div_by_zero": Case(b_at_zp=0.5),
    "div_all_zero": Case(b_at_zp=1.0),
    "div_scalar_rhs": Case(in2=Bcast(1, 1), zp2=5),
    "div_scalar_lhs": Case(in1=Bcast(1, 1)),
    "div_per_channel_rhs": Case(in2=Bcast(1, 4), b_at_zp=0.3),  # [C]
    "div_per_pixel_rhs": Case(in2=Bcast(4, 6)),  # [1, H, W, 1]
    "sub_per_row_rhs": Case(op="Sub", in2=Bcast(12, 2)),  # [1, H, 1, 1]
    "mul_both_broadcast": Case(op="Mul", in1=Bcast(4, 6), in2=Bcast(1, 4)),
    "max_broadcast": Case(op="Max", in2=Bcast(1, 4)),
    "min_broadcast": Case(op="Min", in1=Bcast(1, 1)),
    "div_small_out_scale": Case(s_out=0.001),  # saturates a lot
    "div_large_out_scale": Case(s_out=50.0),  # mostly zero point
    "tiny_vs_large_scale": Case(op="Add", s1=1e-6, s2=0.5, s_out=0.5),
    "zp_extremes": Case(zp1=-128, zp2=127, zp_out=-128),
    "zp_extremes_2": Case(zp1=127, zp2=-128, zp_out=127),
    "relu": Case(zp_out=-10, act=(-10, 127)),
    "narrow_act": Case(act=(-5, 9), b_at_zp=0.3),
    "size1": Case(size=1, in1=Bcast(1, 1), in2=Bcast(1, 1)),
    "large": Case(size=4096, in1=Bcast(1, 4096), in2=Bcast(1, 4096), b_at_zp=0.05),
}


def build(case: Case, rng: np.random.Generator) -> tuple[EltwiseF32Params, list[np.ndarray]]:
    p = eltwise_f32_params(case.size, case.in1, case.in2, case.op, case.s1, case.zp1, case.s2,
                           case.zp2, case.s_out, case.zp_out, *case.act)
    a = rng.integers(-128, 128, case.in1.period, dtype=np.int8)
    b = rng.integers(-128, 128, case.in2.period, dtype=np.int8)
    b[rng.random(b.size) < case.b_at_zp] = case.zp2
    return p, [a, b]


def check(p: EltwiseF32Params, inputs: list[np.ndarray], lib: Any = None) -> np.ndarray:
    expected = mcu_eltwise_f32_s8(p, *inputs)
    args: list[np.ndarray | None] = [*inputs]
    got = call_kernel(KERNEL, p, args, (p.size,), lib=lib)
    np.testing.assert_array_equal(got, expected)
    return expected


def float_reference(case: Case, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float64 math on the float32 scales; x/0 -> inf saturates, 0/0 -> NaN -> zero point;
    rounding half to even (onnxruntime's QuantizeLinear)."""
    idx = np.arange(case.size)
    x1 = np.float64(np.float32(case.s1)) * (
        a.astype(np.float64)[(idx // case.in1.inner) % case.in1.period] - case.zp1)
    x2 = np.float64(np.float32(case.s2)) * (
        b.astype(np.float64)[(idx // case.in2.inner) % case.in2.period] - case.zp2)
    with np.errstate(all="ignore"):
        real = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
                "Min": np.minimum, "Max": np.maximum}[case.op](x1, x2)
        q = np.round(np.clip(real / np.float64(np.float32(case.s_out)), -1e3, 1e3))
    q = np.where(np.isnan(q), 0.0, q) + case.zp_out
    return np.clip(q, *case.act)


def assert_within_one_quantum(case: Case, got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    diff = np.abs(got.astype(np.int64) - float_reference(case, a, b))
    assert diff.max() <= 1, f"{case}: max difference {diff.max()} quanta"


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    case = CASES[name]
    p, inputs = build(case, np.random.default_rng(sum(map(ord, name))))
    assert_within_one_quantum(case, check(p, inputs), *inputs)


@pytest.mark.parametrize("op", list(OPS))
def test_all_input_pairs(op: str) -> None:
    """Every (a, b) int8 pair once (b == zp2 among them: every x / 0 and 0 / 0)."""
    a = np.repeat(np.arange(-128, 128), 256).astype(np.int8)
    b = np.tile(np.arange(-128, 128), 256).astype(np.int8)
    case = Case(size=a.size, in1=Bcast(1, a.size), in2=Bcast(1, a.size), op=op, zp1=-128,
                zp2=100, s_out=0.5 if op in ("Mul", "Div") else 0.06)
    p, _ = build(case, np.random.default_rng(0))
    assert_within_one_quantum(case, check(p, [a, b]), a, b)


def test_division_by_zero_and_nan() -> None:
    """x / 0 -> +-inf saturates to act_max / act_min, 0 / 0 -> NaN -> the output zero point,
    itself clamped to [act_min, act_max]."""
    base = eltwise_f32_params(3, Bcast(1, 3), Bcast(1, 1), "Div", 0.1, 0, 0.1, 4, 0.1, -10,
                              -100, 100)
    a, b = np.array([5, -5, 0], dtype=np.int8), np.array([4], dtype=np.int8)
    assert check(base, [a, b]).tolist() == [100, -100, -10]
    relu = dataclasses.replace(base, act_min=0)
    assert check(relu, [a, b]).tolist() == [100, 0, 0]


def test_inf_minus_inf_and_inf_times_zero() -> None:
    """Scales near FLT_MAX overflow a = s1 * (x1 - z1) to inf: inf + -inf and inf * 0 are NaN
    (-> zero point), inf + finite saturates."""
    p = eltwise_f32_params(3, Bcast(1, 3), Bcast(1, 3), "Add", 3e38, 0, 3e38, 0, 1.0, 7,
                           -128, 127)
    a, b = np.array([100, 100, 1], dtype=np.int8), np.array([-100, 0, 0], dtype=np.int8)
    assert check(p, [a, b]).tolist() == [7, 127, 127]
    mul = dataclasses.replace(p, op=F32_MUL)
    assert check(mul, [a, b]).tolist() == [-128, 7, 7]


def test_round_half_away_from_zero() -> None:
    """v = 0.5 * (x1 - z1) exactly: ties round away from zero; v is clamped to [-256, 256]
    before the cast."""
    p = eltwise_f32_params(256, Bcast(1, 256), Bcast(1, 1), "Add", 0.5, 0, 1.0, 0, 1.0, 0,
                           -128, 127)
    a = np.arange(-128, 128).astype(np.int8)
    v = 0.5 * np.arange(-128, 128)
    expected = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -128, 127)
    assert check(p, [a, np.zeros(1, np.int8)]).tolist() == expected.tolist()


def test_rounding_is_float_v_plus_half() -> None:
    """The rule is (int32_t)(v + 0.5f) in float: v = 0.49999997f (the float below 0.5) rounds to
    1, because v + 0.5f rounds to 1.0f. Golden and C agree on it (within the 1-quantum tolerance
    of exact rounding)."""
    below_half = float(np.nextafter(np.float32(0.5), np.float32(0.0)))
    p = eltwise_f32_params(2, Bcast(1, 2), Bcast(1, 1), "Mul", below_half, 0, 1.0, 0, 1.0, 0,
                           -128, 127)
    assert check(p, [np.array([1, -1], np.int8), np.array([1], np.int8)]).tolist() == [1, -1]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    outer, mid, inner = (draw(st.integers(1, 5)) for _ in range(3))
    size = outer * mid * inner
    shapes = [Bcast(1, size), Bcast(1, 1), Bcast(1, inner), Bcast(inner, mid),
              Bcast(inner, outer * mid), Bcast(mid * inner, outer)]
    op = draw(st.sampled_from(list(OPS)))
    scale = st.floats(1e-4, 1.0)
    s1, s2 = draw(scale), draw(scale)
    typical = s1 * s2 * 64 if op == "Mul" else (s1 / s2 if op == "Div" else max(s1, s2))
    s_out = draw(st.floats(typical / 16, typical * 16))
    lo, hi = sorted(draw(st.integers(-128, 127)) for _ in range(2))
    return Case(size=size, in1=draw(st.sampled_from(shapes)), in2=draw(st.sampled_from(shapes)),
                op=op, s1=s1, zp1=draw(st.integers(-128, 127)), s2=s2,
                zp2=draw(st.integers(-128, 127)), s_out=s_out, zp_out=draw(st.integers(-128, 127)),
                act=(lo, hi), b_at_zp=draw(st.sampled_from([0.0, 0.2, 1.0])))


@settings(max_examples=200, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    p, inputs = build(case, np.random.default_rng(seed))
    assert_within_one_quantum(case, check(p, inputs), *inputs)


positive_f32 = st.floats(min_value=float(np.finfo(np.float32).smallest_subnormal),
                         max_value=float(np.finfo(np.float32).max), width=32)


@settings(max_examples=200, deadline=None)
@given(s1=positive_f32, s2=positive_f32, inv=positive_f32, op=st.integers(0, 5),
       zps=st.tuples(*(st.integers(-128, 127) for _ in range(3))), seed=st.integers(0, 2**32 - 1))
def test_property_raw_params(s1: float, s2: float, inv: float, op: int,
                             zps: tuple[int, int, int], seed: int) -> None:
    """Any valid float32 scale and reciprocal, subnormal to FLT_MAX: overflow to inf, inf - inf,
    0 * inf, x / 0 and underflow all agree bit for bit."""
    p, inputs = build(Case(b_at_zp=0.2), np.random.default_rng(seed))
    check(dataclasses.replace(p, op=op, input1_scale=s1, input2_scale=s2, output_inv_scale=inv,
                              input1_zero_point=zps[0], input2_zero_point=zps[1],
                              output_zero_point=zps[2]), inputs)


NAN, INF = float("nan"), float("inf")
INVALID: dict[str, dict[str, Any]] = {
    "size_0": {"size": 0},
    "in1_inner_0": {"in1": Bcast(0, 24)},
    "in2_period_0": {"in2": Bcast(1, 0)},
    "op_-1": {"op": -1},
    "op_6": {"op": 6},
    "input1_scale_0": {"input1_scale": 0.0},
    "input1_scale_neg": {"input1_scale": -0.05},
    "input1_scale_nan": {"input1_scale": NAN},
    "input2_scale_inf": {"input2_scale": INF},
    "output_inv_scale_0": {"output_inv_scale": 0.0},
    "output_inv_scale_nan": {"output_inv_scale": NAN},
    "output_inv_scale_inf": {"output_inv_scale": INF},
    "input1_zero_point_128": {"input1_zero_point": 128},
    "input2_zero_point_-129": {"input2_zero_point": -129},
    "output_zero_point_128": {"output_zero_point": 128},
    "act_min_gt_act_max": {"act_min": 10, "act_max": 9},
    "act_min_-129": {"act_min": -129},
    "act_max_128": {"act_max": 128},
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, inputs = build(Case(), np.random.default_rng(0))
    bad = dataclasses.replace(p, **INVALID[name])
    args: list[np.ndarray | None] = [*inputs]
    status, out = call_status(KERNEL, bad, args, (p.size,))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises(ValueError):
        mcu_eltwise_f32_s8(bad, *inputs)


def test_null_pointers() -> None:
    p, (a, b) = build(Case(), np.random.default_rng(0))
    out = np.zeros(p.size, dtype=np.int8)
    args: list[Any] = [p, a, b, out]
    for i in range(4):
        bad = list(args)
        bad[i] = None
        assert call_raw(KERNEL, *bad) == MCU_ERR_ARG


def test_in_place() -> None:
    p, (a, b) = build(Case(op="Sub"), np.random.default_rng(1))
    expected = mcu_eltwise_f32_s8(p, a, b)
    assert call_raw(KERNEL, p, a, b, a) == 0
    np.testing.assert_array_equal(a, expected)


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
    """The bundles compile with -std=c99, where gcc defaults to -ffp-contract=off: no a * b + c is
    fused into an FMA, so the golden holds at any optimisation level, with FMA hardware too."""
    if "-mfma" in FLAG_SETS[flags] and not _has_fma():
        pytest.skip("host CPU has no FMA")
    lib = build_lib((str(KERNELS / f"{KERNEL}.c"),), f"{KERNEL}_{flags}",
                    (*FLAG_SETS[flags], "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror"))
    if "-mfma" in FLAG_SETS[flags]:  # int8 outputs rarely expose a fused rounding: look for it
        asm = subprocess.run(["objdump", "-d", lib._name], check=True, capture_output=True,
                             text=True).stdout
        assert not re.search(r"\bvf(n?)m(add|sub)", asm), "FMA contraction"
    rng = np.random.default_rng(7)
    for op in OPS:
        p, inputs = build(Case(size=4096, in1=Bcast(1, 4096), in2=Bcast(1, 64), op=op,
                               b_at_zp=0.1), rng)
        check(p, inputs, lib=lib)


@pytest.mark.parametrize("opt", ["-O2", "-Os"])
@pytest.mark.parametrize("cpu", list(ARM_CPUS))
def test_cross_compile(cpu: str, opt: str, tmp_path: Path) -> None:
    """Warning-free under the strict flag set; no fused multiply-add, no double arithmetic
    (soft-float: no __aeabi_d* call; FPU: no .f64 instruction)."""
    asm = cross_compile_kernel(KERNEL, cpu, tmp_path, opt)
    assert not re.search(r"\bv(fma|fms|fnma|fnms)\b", asm), "FMA contraction"
    assert "__aeabi_d" not in asm and ".f64" not in asm, "double arithmetic"
    if cpu == "cortex-m0plus":
        assert "__aeabi_fdiv" in asm and not re.search(r"\bv[a-z]+\.f32\b", asm)
    else:
        assert "vdiv.f32" in asm


# ---- params rendering (emitter/render/cfmt.py) -----------------------------------------------------

def test_c_struct_renders_exact_floats(tmp_path: Path) -> None:
    """c_struct prints float fields as float32 literals that gcc reads back bit for bit."""
    assert EltwiseF32Params.CTYPE == "mcu_eltwise_f32_params_t"
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    values = [(0.1, 1.0 / 3.0, 1e-30), (tiny, float(np.finfo(np.float32).max), 33.333333),
              (1.5, 2.0, 7.0)]
    p0, _ = build(Case(), np.random.default_rng(0))
    lines = []
    for k, (s1, s2, inv) in enumerate(values):
        p = dataclasses.replace(p0, op=F32_DIV, input1_scale=s1, input2_scale=s2,
                                output_inv_scale=inv)
        lines.append(f"static const mcu_eltwise_f32_params_t p{k} = {c_struct(p, {})};")
    text = c_struct(dataclasses.replace(p0, input1_scale=1.5), {})
    assert "    .input1_scale = 1.5f,\n    .input1_zero_point = 3,\n" in text
    assert "    .in1 = {.inner = 1, .period = 24},\n    .in2 = {.inner = 1, .period = 24},\n" in text
    prints = "\n".join(f"    show(p{k}.input1_scale); show(p{k}.input2_scale); "
                       f"show(p{k}.output_inv_scale);" for k in range(len(values)))
    src = tmp_path / "floats.c"
    src.write_text(
        "#include <stdio.h>\n#include <string.h>\n#include \"mcu_nn.h\"\n" + "\n".join(lines)
        + "\nstatic void show(float f)\n{\n    uint32_t u;\n    memcpy(&u, &f, sizeof u);\n"
        "    printf(\"%lu\\n\", (unsigned long)u);\n}\n"
        f"int main(void)\n{{\n{prints}\n    return p0.op == 3 ? 0 : 1;\n}}\n")
    exe = tmp_path / "floats"
    cc = os.environ.get("CC", "gcc")
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Wdouble-promotion", "-Werror",
                    f"-I{INCLUDE}", "-o", str(exe), str(src)], check=True, capture_output=True)
    res = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
    expected = [int(np.float32(v).view(np.uint32)) for row in values for v in row]
    assert [int(v) for v in res.stdout.split()] == expected


# ---- Cortex-M in QEMU ------------------------------------------------------------------------

QEMU_N = 256  # elements per operand


def _qemu_params() -> list[EltwiseF32Params]:
    """One call per op on full operands, one broadcast Div, one with near-FLT_MAX scales."""
    full = Bcast(1, QEMU_N)
    ps = [eltwise_f32_params(QEMU_N, full, full, op, 0.05, 3, 0.02, -7,
                             0.5 if op in ("Mul", "Div") else 0.06, 1, -128, 127) for op in OPS]
    ps.append(eltwise_f32_params(QEMU_N, full, Bcast(4, 16), "Div", 0.013, -20, 0.7, -7, 0.01,
                                 -3, -100, 90))
    ps.append(dataclasses.replace(ps[0], op=F32_ADD, input1_scale=3e38, input2_scale=2e38,
                                  output_inv_scale=1e-37))
    return ps


@pytest.mark.qemu
@pytest.mark.parametrize("core", ["cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55"])
def test_qemu_bit_exact(core: str, tmp_path: Path) -> None:
    """Soft-float (M0+) and FPU (M4 single, M7 double-precision, M55 with MVE) builds of the
    kernel, at the harness's -O2 -std=c99, give the golden's bytes."""
    ps = _qemu_params()
    decls = "\n".join(f"static const mcu_eltwise_f32_params_t p{k} = {c_struct(p, {})};"
                      for k, p in enumerate(ps))
    calls = "\n".join(f"    status |= (int)mcu_eltwise_f32_s8(&p{k}, inputs[0], inputs[1], "
                      f"outputs[{k}]);" for k in range(len(ps)))
    net_c = (f"#include \"mcu_nn.h\"\n{decls}\n"
             "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);\n"
             "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)\n{\n"
             f"    int status = 0;\n{calls}\n    return status;\n}}\n")
    rng = np.random.default_rng(11)
    samples = []
    for _ in range(4):
        a = rng.integers(-128, 128, QEMU_N, dtype=np.int8)
        b = rng.integers(-128, 128, QEMU_N, dtype=np.int8)
        b[rng.random(QEMU_N) < 0.1] = -7  # the zero point of input 2: x / 0
        samples.append((a, b))
    data = b"".join(a.tobytes() + b.tobytes() for a, b in samples)
    out = run_bundle_on_qemu(core, [KERNEL], net_c, [QEMU_N, QEMU_N], [QEMU_N] * len(ps), data,
                             tmp_path)
    expected = b"".join(mcu_eltwise_f32_s8(p, a, b[:p.in2.period]).tobytes()
                        for a, b in samples for p in ps)
    assert out == expected
