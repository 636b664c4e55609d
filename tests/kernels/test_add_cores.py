"""mcu_add_s8 on every core in QEMU (-O0 and -O2), bit-exact with the numpy golden: random
constants (shifts at and beyond the fast path's limits, Sub's negative multiplier, clamps), sizes
with every vector tail, broadcast operands (the reference loop) and in-place outputs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emitter.kernels.common import Bcast
from emitter.kernels.mcu_add_s8 import AddParams, mcu_add_s8
from tests.harness.ckernels import run_bundle_on_qemu

CORES = ("cortex-m3", "cortex-m4", "cortex-m7", "cortex-m55")


def cases(seed: int = 7, n: int = 200) -> list[tuple[AddParams, np.ndarray, np.ndarray, int]]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        size = int(rng.integers(1, 41)) if k % 10 else 1031
        bc = k % 7 == 6
        in2 = Bcast(1, 4) if bc else Bcast(1, size)
        if bc:
            size = 4 * max(1, size // 4)
        def shift(lo: int) -> int:
            return int(rng.choice([lo, -30, 0, -1, int(rng.integers(lo, 1)), int(rng.integers(-12, 1))]))
        m2 = int(rng.integers(1 << 30, (1 << 31) - 1))
        act = sorted(int(v) for v in rng.integers(-128, 128, 2)) if k % 3 == 0 else [-128, 127]
        p = AddParams(size=size, in1=Bcast(1, size), in2=in2,
                      input1_offset=int(rng.integers(-127, 129)), input2_offset=int(rng.integers(-127, 129)),
                      output_offset=int(rng.integers(-128, 128)), left_shift=int(rng.choice([20, 20, 0, 7])),
                      input1_multiplier=int(rng.integers(1 << 30, (1 << 31) - 1)), input1_shift=shift(-31),
                      input2_multiplier=-m2 if k % 4 == 1 else m2, input2_shift=shift(-31),
                      output_multiplier=int(rng.integers(1 << 30, (1 << 31) - 1)),
                      output_shift=int(rng.choice([-31, -30, 0, 1, int(rng.integers(-31, 1)),
                                                   int(rng.integers(-12, 1))])),
                      act_min=act[0], act_max=act[1])
        a = rng.integers(-128, 128, p.in1.period, dtype=np.int8)
        b = rng.integers(-128, 128, p.in2.period, dtype=np.int8)
        out.append((p, a, b, k % 5))  # 0: output over input1, 1: over input2, else apart
    return out


def c_bytes(v: np.ndarray) -> str:
    return ", ".join(str(int(x)) for x in v)


def net_c(cs: list[tuple[AddParams, np.ndarray, np.ndarray, int]]) -> str:
    body = []
    for p, a, b, place in cs:
        f = (f"{{{p.size}, {{{p.in1.inner}, {p.in1.period}}}, {{{p.in2.inner}, {p.in2.period}}}, "
             f"{p.input1_offset}, {p.input2_offset}, {p.output_offset}, {p.left_shift}, "
             f"{p.input1_multiplier}, {p.input1_shift}, {p.input2_multiplier}, {p.input2_shift}, "
             f"{p.output_multiplier}, {p.output_shift}, {p.act_min}, {p.act_max}}}")
        dst = "a" if place == 0 else ("b" if place == 1 and p.in2.period == p.size else "o")
        scratch = f"        static int8_t o[{p.size}];\n" if dst == "o" else ""
        body.append(f"""    {{
        static const mcu_add_params_t p = {f};
        static int8_t a[{a.size}] = {{{c_bytes(a)}}};
        static int8_t b[{b.size}] = {{{c_bytes(b)}}};
{scratch}        if (mcu_add_s8(&p, a, b, {dst}) != MCU_OK) {{
            return 1;
        }}
        memcpy(res, {dst}, {p.size});
        res += {p.size};
    }}""")
    return ("#include <stdint.h>\n#include <string.h>\n#include \"mcu_runtime/include/mcu_nn.h\"\n\n"
            "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);\n\n"
            "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)\n{\n"
            "    int8_t *res = outputs[0];\n    (void)inputs;\n" + "\n".join(body) + "\n    return 0;\n}\n")


@pytest.mark.qemu
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("core", CORES)
def test_add_cores(core: str, opt: str, tmp_path: Path) -> None:
    cs = cases()
    want = np.concatenate([np.asarray(mcu_add_s8(p, a, b), np.int8).ravel() for p, a, b, _ in cs])
    raw = run_bundle_on_qemu(core, ["mcu_add_s8"], net_c(cs), [1], [want.size], b"\0",
                             tmp_path, opt)
    got = np.frombuffer(raw[:want.size], np.int8)
    starts = np.cumsum([0] + [p.size for p, _, _, _ in cs])
    bad = [k for k in range(len(cs)) if not np.array_equal(got[starts[k]:starts[k + 1]], want[starts[k]:starts[k + 1]])]
    assert not bad, [(k, cs[k][0]) for k in bad[:3]]
