"""<name>_run_f32 quantizes its float input as ONNX QuantizeLinear does: x / scale rounded half to
even, plus the zero point, saturated (issue 29, item 6). Ties (x / scale exactly k + 0.5, negative
and positive), the floats next to them and values just below .5 are quantized by the generated
NAME_f32.c (its `<name>_run` replaced by a stub that keeps the quantized input) and by
onnxruntime's QuantizeLinear, under -O2 and -Os; the two must agree element for element."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from emitter.compiler import compile_model
from emitter.render.bundle import render_bundle
from tests.harness.bundles import CM7_FLAGS
from tests.models.tiny import tiny_qdq_conv

NAME = "rq"
STUB = r"""
#include <stdio.h>
#include <string.h>
#include "rq.h"

static int8_t seen[RQ_INPUT_SIZE];

int rq_run(const int8_t *input, int8_t *output)
{
    memcpy(seen, input, sizeof seen);
    memset(output, 0, RQ_OUTPUT_SIZE);
    return RQ_OK;
}

int main(int argc, char **argv)
{
    static float x[RQ_INPUT_SIZE], y[RQ_OUTPUT_SIZE];
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    (void)argc;
    if (in == NULL || out == NULL) return 2;
    while (fread(x, sizeof x, 1, in) == 1) {
        if (rq_run_f32(x, y) != RQ_OK) return 3;
        fwrite(seen, sizeof seen, 1, out);
    }
    fclose(in);
    fclose(out);
    return 0;
}
"""


def ort_quantize(x: np.ndarray, scale: np.float32, zp: int) -> np.ndarray:
    """onnxruntime's QuantizeLinear of x (float32) to int8."""
    node = H.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])
    graph = H.make_graph([node], "q", [H.make_tensor_value_info("x", TP.FLOAT, [x.size])],
                         [H.make_tensor_value_info("y", TP.INT8, [x.size])],
                         [NH.from_array(np.array(scale, np.float32), "s"), NH.from_array(np.array(zp, np.int8), "z")])
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 13)])
    model.ir_version = 8
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


def tie_inputs(scale: np.float32) -> tuple[np.ndarray, int]:
    """Floats whose x / scale (in float32) is exactly k + 0.5 for k in [-140, 140), the floats on
    either side of each, and x / scale = k + 0.49999997 / k - 0.49999997; with the number of exact
    ties among them."""
    t = np.arange(-140, 140, dtype=np.float32) + np.float32(0.5)
    x = (t * scale).astype(np.float32)
    x = x[(x / scale).astype(np.float32) == t]  # exact ties only
    ties = x.size
    near = np.concatenate([np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf))])
    k = np.arange(-140, 140, dtype=np.float32)
    below = np.concatenate([(k + np.float32(0.49999997)) * scale, (k - np.float32(0.49999997)) * scale])
    return np.concatenate([x, near, below.astype(np.float32)]).astype(np.float32), ties


@pytest.mark.parametrize("opt", ["-O2", "-Os"])
def test_run_f32_rounds_half_to_even_like_onnxruntime(tmp_path: Path, opt: str) -> None:
    model = tmp_path / f"{NAME}.onnx"
    onnx.save(tiny_qdq_conv(), model)
    files = render_bundle(compile_model(model, name=NAME), CM7_FLAGS, "cortex-m7")
    for rel in (f"{NAME}.h", f"{NAME}_f32.c"):
        (tmp_path / rel).write_bytes(files[rel])
    (tmp_path / "stub.c").write_text(STUB)
    header = files[f"{NAME}.h"].decode()
    size = int(header.split("#define RQ_INPUT_SIZE ")[1].split()[0])
    scale = np.float32(float(header.split("#define RQ_INPUT0_SCALE ")[1].split()[0].rstrip("f")))
    zp = int(header.split("#define RQ_INPUT0_ZERO_POINT ")[1].split()[0])

    x, ties = tie_inputs(scale)
    assert ties > 200, "too few exact ties to test"
    q_ort = ort_quantize(x, scale, zp)
    assert np.array_equal(q_ort[:ties], np.clip(np.rint(x[:ties] / scale) + zp, -128, 127))  # half to even
    padded = np.resize(x, -(-x.size // size) * size).astype(np.float32)
    padded[x.size:] = 0.0
    (tmp_path / "x.bin").write_bytes(padded.tobytes())
    exe = tmp_path / "rq"
    subprocess.run(["gcc", "-std=c99", opt, "-Wall", "-Wextra", "-Werror", f"-I{tmp_path}", "-o", str(exe),
                    str(tmp_path / "stub.c"), str(tmp_path / f"{NAME}_f32.c")], check=True)
    subprocess.run([str(exe), str(tmp_path / "x.bin"), str(tmp_path / "q.bin")], check=True)
    q_c = np.frombuffer((tmp_path / "q.bin").read_bytes(), np.int8)[:x.size]
    bad = np.flatnonzero(q_c != q_ort)
    assert bad.size == 0, [(float(x[i]), float(x[i] / scale), int(q_c[i]), int(q_ort[i])) for i in bad[:10]]
