"""Hostile and malformed models (issue #5, item 1): every one ends in one McugenError subclass, exit
code 2, a message naming the node or tensor and saying what to do, and nothing written.

The hostile models are small valid ones bent with onnx.helper: hello_fc (the project's own
1-16-16-1 sine model in tf2onnx's layout) and the other tiny models of tests/models/tiny.py (also
the seeds of tests/test_fuzz.py and the inputs of tests/test_golden_files.py).
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH
from onnx.external_data_helper import set_external_data

from emitter.cli import main
from emitter.compiler import c_name, compile_model, golden_run
from emitter.errors import (
    McugenError,
    ModelError,
    OutputError,
    QuantError,
    ShapeError,
    UsageError,
)
from emitter.render import write as bundle_mod
from emitter.render.bundle import render_bundle
from emitter.render.cfmt import c_comment, c_string
from emitter.render.write import write_bundle
from tests.harness.bundles import STRICT, build_library, emit, run_c
from tests.models.tiny import HELLO, tiny_qdq_conv, tiny_qdq_misc, tiny_qop_add_concat

# ---- harness -------------------------------------------------------------------------------------

def save(m: onnx.ModelProto | bytes, folder: Path, name: str = "model.onnx") -> Path:
    path = folder / name
    path.write_bytes(m if isinstance(m, bytes) else m.SerializeToString())
    return path


def expect_error(m: onnx.ModelProto | bytes | Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                 error: type[McugenError], *fragments: str, args: tuple[str, ...] = ()) -> str:
    """The model fails with `error` (compile + render), and through the CLI with exit code 2, one
    message holding every fragment, no traceback, and nothing written next to the model."""
    path = m if isinstance(m, Path) else save(m, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(error):
        name = args[args.index("--name") + 1] if "--name" in args else None
        render_bundle(compile_model(path, name=name), "", "host")
    assert main([str(path), "-o", str(tmp_path / "out"), "--quiet", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcugen: error: ") and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in {err!r}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "something was written"
    return err


def init(m: onnx.ModelProto, name: str) -> onnx.TensorProto:
    return next(t for t in m.graph.initializer if t.name == name)


def set_init(m: onnx.ModelProto, name: str, value: np.ndarray) -> onnx.ModelProto:
    init(m, name).CopyFrom(NH.from_array(value, name))
    return m


def rename(m: onnx.ModelProto, old: str, new: str) -> onnx.ModelProto:
    """Rename a tensor everywhere in the graph."""
    g = m.graph
    for node in g.node:
        for seq in (node.input, node.output):
            for k, v in enumerate(seq):
                if v == old:
                    seq[k] = new
    for coll in (g.input, g.output, g.value_info, g.initializer):
        for v in coll:
            if v.name == old:
                v.name = new
    return m


def ok(path: Path, **kw: object) -> dict[str, bytes]:
    return render_bundle(compile_model(path, **kw), "", "host")  # type: ignore[arg-type]


# ---- not ONNX, truncated, corrupt ----------------------------------------------------------------

@pytest.mark.parametrize("content", [b"", b"\xff" * 64, b'{"graph": []}', b"\x08\x07\x12",
                                     b"PK\x03\x04 a zip file"], ids=["empty", "ff", "json", "stub", "zip"])
def test_not_onnx(content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(content, tmp_path, capsys, ModelError, "model.onnx", ".onnx model")


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
def test_truncated_protobuf(fraction: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = tiny_qdq_conv().SerializeToString()
    expect_error(raw[: int(len(raw) * fraction)], tmp_path, capsys, McugenError, "model.onnx")


def test_corrupt_protobuf_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = bytearray(HELLO.read_bytes())
    for k in range(0, len(raw), 97):  # a flipped bit every 97 bytes
        raw[k] ^= 0x10
    expect_error(bytes(raw), tmp_path, capsys, McugenError)


def test_invalid_utf8_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = tiny_qdq_conv().SerializeToString().replace(b"\x04conv", b"\x04\x80onv")
    expect_error(raw, tmp_path, capsys, ModelError, "not valid UTF-8", "node")


# ---- graph structure -----------------------------------------------------------------------------

def test_missing_initializer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    m.graph.initializer.remove(init(m, "w_s"))
    expect_error(m, tmp_path, capsys, ModelError, "node 'dq_w' (DequantizeLinear)", "'w_s'",
                 "missing initializer", "re-export")


def test_dangling_node_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    m.graph.node[4].input[0] = "nowhere"
    expect_error(m, tmp_path, capsys, ModelError, "node 'conv' (Conv)", "'nowhere'", "dangling")


def test_unused_graph_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    m.graph.input.append(H.make_tensor_value_info("spare", TP.FLOAT, [1, 4]))
    expect_error(m, tmp_path, capsys, ModelError, "graph input 'spare'", "read by no node", "remove it")


def test_graph_cycle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    m.graph.node[1].input[0] = "pq"  # dq_in now reads the pooled output: conv -> ... -> pool -> conv
    err = expect_error(m, tmp_path, capsys, ModelError, "cycle", "node 'conv' (Conv)", "acyclic")
    assert "dq_out" not in err  # the node after the cycle is not part of it


def test_nodes_out_of_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    nodes = list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(nodes[::-1])
    expect_error(m, tmp_path, capsys, ModelError, "topological order")


def test_tensor_written_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    m.graph.node[5].output[0] = "c"  # relu writes the conv's output name again
    expect_error(m, tmp_path, capsys, ModelError, "tensor 'c'", "node 'relu' (Relu)", "node 'conv'")


def test_graph_output_never_produced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    m.graph.output.append(H.make_tensor_value_info("ghost", TP.FLOAT, [1]))
    expect_error(m, tmp_path, capsys, ModelError, "graph output 'ghost'")


# ---- dims ----------------------------------------------------------------------------------------

def with_input_dims(dims: list[int]) -> onnx.ModelProto:
    m = tiny_qdq_conv()
    for d, v in zip(m.graph.input[0].type.tensor_type.shape.dim, dims, strict=False):
        d.dim_value = v
    del m.graph.output[0].type.tensor_type.shape.dim[:]
    return m


@pytest.mark.parametrize("dims", [[1, 3, 0, 8], [1, 3, -2, 8]], ids=["zero", "negative"])
def test_zero_or_negative_input_dims(dims: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(with_input_dims(dims), tmp_path, capsys, ShapeError, "graph input 'x'", "--input-shape x=")


@pytest.mark.parametrize("dims", [[1, 3, 1 << 16, 1 << 16], [1, 3, 1 << 40, 1 << 40], [1, 3, 1 << 62, 1 << 62]],
                         ids=["2^32", "2^80", "2^124"])
def test_huge_input_dims(dims: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(with_input_dims(dims), tmp_path, capsys, ShapeError, "graph input 'x'", "too large")


@pytest.mark.parametrize("dims", [[1 << 20, 1 << 20], [1 << 40, 1 << 40], [1 << 62, 4], [4, -3, 3, 3]],
                         ids=["2^40", "2^80-wraps-int64", "2^64-wraps-int64", "negative"])
def test_initializer_dims_overflow(dims: list[int], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    t = init(m, "w_q")
    del t.dims[:]
    t.dims.extend(dims)
    expect_error(m, tmp_path, capsys, ShapeError, "initializer 'w_q'", str(dims[0]))


def test_empty_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = set_init(tiny_qdq_conv(), "w_q", np.zeros((4, 0, 3, 3), np.int8))
    expect_error(m, tmp_path, capsys, ShapeError, "tensor 'wf'", "zero dim")


# ---- quantization parameters ---------------------------------------------------------------------

@pytest.mark.parametrize("value", [0.0, -0.1, np.nan, np.inf, -np.inf], ids=["0", "neg", "nan", "inf", "-inf"])
def test_bad_activation_scale(value: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = set_init(tiny_qdq_conv(), "c_s", np.array(value, np.float32))
    expect_error(m, tmp_path, capsys, QuantError, "tensor 'rq'", "node 'q_relu'", "finite and > 0",
                 "re-quantize")


@pytest.mark.parametrize("value", [0.0, -0.1, np.nan, np.inf], ids=["0", "neg", "nan", "inf"])
def test_bad_per_channel_weight_scale(value: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = set_init(tiny_qdq_conv(), "w_s", np.array([0.01, value, 0.01, 0.01], np.float32))
    expect_error(m, tmp_path, capsys, QuantError, "tensor 'w_q'", "node 'dq_w'", "finite and > 0")


def test_activation_zero_point_out_of_int8_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """QOperator (com.microsoft) ops have no ONNX schema: an int32 zero point 300 gets past the
    checker and must be refused for an int8 activation."""
    m = set_init(tiny_qop_add_concat(), "b_z", np.array(300, np.int32))
    expect_error(m, tmp_path, capsys, QuantError, "activation 'b'", "zero point 300", "re-quantize")


def test_int8_values_out_of_range_in_int32_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    t = H.make_tensor("c_z", TP.INT8, [], [0])
    t.int32_data[0] = 300  # ONNX keeps int8 values in int32_data: 300 would silently wrap to 44
    init(m, "c_z").CopyFrom(t)
    expect_error(m, tmp_path, capsys, QuantError, "initializer 'c_z'", "300", "re-export")


def test_per_channel_scales_of_wrong_length(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = set_init(tiny_qdq_conv(), "w_s", np.full(3, 0.01, np.float32))
    set_init(m, "w_z", np.zeros(3, np.int8))
    expect_error(m, tmp_path, capsys, QuantError, "'w_q'", "node 'dq_w'", "3 per-axis scales",
                 "length 4", "one scale per channel")


def test_per_channel_zero_points_of_wrong_length(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = set_init(tiny_qdq_conv(), "w_z", np.zeros(5, np.int8))
    expect_error(m, tmp_path, capsys, QuantError, "tensor 'w_q'", "5 zero points for 4 scales")


def test_per_channel_axis_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    m.graph.node[2].attribute[0].i = 7
    expect_error(m, tmp_path, capsys, McugenError, "dq_w")


@pytest.mark.parametrize("dtype, onnx_name", [(np.int32, "int32"), (np.float32, "float"), (np.int16, "int16")],
                         ids=["int32", "float", "int16"])
def test_int8_weights_stored_in_another_type(dtype: type, onnx_name: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    m = tiny_qdq_conv()
    set_init(m, "w_q", NH.to_array(init(m, "w_q")).astype(dtype))
    expect_error(m, tmp_path, capsys, QuantError, "node 'dq_w' (DequantizeLinear)",
                 f"'w_q' is stored as {onnx_name}", "zero point 'w_z' is int8", "QuantType.QInt8")


def test_int32_weights_with_int32_zero_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Valid ONNX (DequantizeLinear takes int32), but not int8 weights: refused at the Conv."""
    m = tiny_qdq_conv()
    set_init(m, "w_q", NH.to_array(init(m, "w_q")).astype(np.int32))
    set_init(m, "w_z", np.zeros(4, np.int32))
    expect_error(m, tmp_path, capsys, McugenError, "node 'conv'", "int8")


def test_bias_zero_point_is_folded_exactly(tmp_path: Path) -> None:
    """real = s * (q - zp): a non-zero int32 bias zero point is folded into the stored integers."""
    m = tiny_qdq_conv()
    b = NH.to_array(init(m, "b_q"))
    zp = np.array([0, 7, -3, 100], np.int32)
    set_init(m, "b_q", b + zp)
    set_init(m, "b_z", zp)
    plain, folded = save(tiny_qdq_conv(), tmp_path, "plain.onnx"), save(m, tmp_path, "folded.onnx")
    a, c = compile_model(plain), compile_model(folded)
    x = np.random.default_rng(1).integers(-128, 128, (1, 3, 8, 8)).astype(np.int8)
    np.testing.assert_array_equal(golden_run(a, [x])[0], golden_run(c, [x])[0])


# ---- external data -------------------------------------------------------------------------------

def external(folder: Path, location: str, *, write: Path | None = None, offset: int | None = None,
             length: int | None = None) -> Path:
    """tiny_qdq_conv with w_q's bytes in an external file (written to `write`, default the location
    next to the model)."""
    folder.mkdir(parents=True, exist_ok=True)
    m = tiny_qdq_conv()
    t = init(m, "w_q")
    data = NH.to_array(t).tobytes()
    target = write if write is not None else folder / location
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    set_external_data(t, location, offset=offset, length=length)
    t.ClearField("raw_data")
    t.data_location = TP.EXTERNAL
    return save(m, folder)


def test_external_data_next_to_model_works(tmp_path: Path) -> None:
    inline = ok(save(tiny_qdq_conv(), tmp_path, "inline.onnx"), name="net")
    ext = ok(external(tmp_path / "ext", "weights.bin"), name="net")
    body = [f["net_weights.c"].split(b"*/", 1)[1] for f in (inline, ext)]  # after the provenance
    assert body[0] == body[1]
    ok(external(tmp_path / "sub", "data/w.bin"))  # a subfolder of the model's folder is inside it


@pytest.mark.parametrize("location", ["../w.bin", "/abs/w.bin", "sub/../../w.bin", "link.bin", ".", ""],
                         ids=["parent", "absolute", "dotdot", "symlink-out", "dot", "empty"])
def test_external_data_outside_the_models_folder(location: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "m"
    if location == "link.bin":
        (tmp_path / "secret.bin").write_bytes(b"\0" * 108)
        folder.mkdir()
        (folder / "link.bin").symlink_to(tmp_path / "secret.bin")
        path = external(folder, location, write=tmp_path / "unused.bin")
    else:
        path = external(folder, location, write=tmp_path / "w.bin")
    expect_error(path, folder, capsys, ModelError, "initializer 'w_q'")


def test_external_data_in_a_node_attribute_is_checked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Constant node's tensor can point to external data as well: same rules."""
    m = tiny_qdq_conv()
    t = NH.from_array(np.zeros(4, np.float32), "k")
    set_external_data(t, "../../etc/passwd")
    t.ClearField("raw_data")
    t.data_location = TP.EXTERNAL
    m.graph.node.insert(0, H.make_node("Constant", [], ["k"], name="const", value=t))
    expect_error(m, tmp_path, capsys, ModelError, "'k'", "outside the model's folder")


@pytest.mark.parametrize("offset, length", [(0, 10 ** 12), (10 ** 6, None), (-5, None), (0, 50)],
                         ids=["huge-length", "offset-past-end", "negative-offset", "short"])
def test_external_data_bad_range(offset: int, length: int | None, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = external(tmp_path / "m", "w.bin", offset=None, length=None)
    m = onnx.load(path, load_external_data=False)
    t = init(m, "w_q")
    del t.external_data[:]
    t.external_data.add(key="location", value="w.bin")
    t.external_data.add(key="offset", value=str(offset))
    if length is not None:
        t.external_data.add(key="length", value=str(length))
    save(m, tmp_path / "m")
    expect_error(path, tmp_path / "m", capsys, ModelError, "initializer 'w_q'", "w.bin")


def test_external_data_file_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = external(tmp_path / "m", "w.bin")
    (tmp_path / "m" / "w.bin").unlink()
    expect_error(path, tmp_path / "m", capsys, ModelError, "'w.bin' is missing")


# ---- names from the model in the generated C -----------------------------------------------------

# Each payload would inject code if a comment or string literal could be closed early: a symbol
# `injected_*` in the library, an #error, or a compile failure under -Werror (-Wtrigraphs).
EVIL = {
    "x": 'in */ int injected_comment = 1; /* "q\\" ??/',
    "rq": "rq\n#error injected newline\n",
    "w_q": "w ??/\n*/ int injected_trigraph = 2; /*",
    "y": 'out" ; int injected_string = 3; const char *z = "\\',
    "conv": "c\u00e9\u00e9/ \u2028 \x7f \x1b[2J \\",
}


def evil_model() -> onnx.ModelProto:
    m = tiny_qdq_conv()
    for old, new in EVIL.items():
        if old == "conv":
            m.graph.node[4].name = new
        else:
            rename(m, old, new)
    for node in m.graph.node:
        if node.name != EVIL["conv"]:
            node.name += " */ int injected_node = 4; /* ??/"
    return m


def code_outside_comments_and_strings(text: str) -> str:
    """The C text with comments, string and character literals removed (C99 lexing, after
    translating trigraphs and splicing lines, as the compiler does)."""
    text = text.replace("??/", "\\").replace("\\\n", "")
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', " ", text, flags=re.DOTALL)


def test_metacharacter_names_stay_in_comments_and_strings(tmp_path: Path) -> None:
    path = save(evil_model(), tmp_path, 'evil ??) *" \u00e9 name.onnx')
    c = compile_model(path, name="evil")
    out = emit(c, tmp_path / "evil")
    for f in sorted(out.glob("*.[ch]")):
        code = code_outside_comments_and_strings(f.read_text())
        assert "injected" not in code and "#error" not in code, f.name
    lib = build_library([out], tmp_path / "libevil.so")  # -std=c99 -Wall -Wextra ... -Werror
    for symbol in ("injected_comment", "injected_trigraph", "injected_string", "injected_node"):
        with pytest.raises(AttributeError):
            getattr(lib, symbol)
    x = np.random.default_rng(0).integers(-128, 128, (1, 3, 8, 8)).astype(np.int8)
    np.testing.assert_array_equal(run_c(lib, c, [x])[0], golden_run(c, [x])[0])
    header = (out / "evil.h").read_text()
    assert "#define EVIL_INPUT0_NAME " + c_string(EVIL["x"]) in header


@pytest.mark.parametrize("text", list(EVIL.values()) + ["??=??(??)??<??>??!??'??-", "\0", "*/*/"])
def test_c_string_round_trips_exact_bytes(text: str, tmp_path: Path) -> None:
    src = tmp_path / "s.c"
    src.write_text(f"const char s[] = {c_string(text)};\nconst unsigned long n = sizeof s;\n")
    lib = tmp_path / "s.so"
    res = subprocess.run(["gcc", "-shared", "-fPIC", *STRICT, "-Wno-missing-variable-declarations",
                          str(src), "-o", str(lib)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    so = ctypes.CDLL(str(lib))
    n = ctypes.c_ulong.in_dll(so, "n").value
    assert ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(so, "s")), n - 1) == text.encode()


@pytest.mark.parametrize("text", list(EVIL.values()) + ["a*/b/*c", "/*/", "??/", "???/", "*\\"])
def test_c_comment_cannot_close_or_splice(text: str) -> None:
    safe = c_comment(text)
    assert "*/" not in safe and "/*" not in safe and "??" not in safe and "\n" not in safe
    assert all(32 <= ord(ch) < 127 for ch in safe)
    assert "*/" not in f"/* {safe} */"[2:-2]


# ---- the C prefix (--name and the default from the file name) ------------------------------------

@pytest.mark.parametrize("name", ["int", "main", "Net", "a-b", "9net", "x" * 50, "net\n", "\u00e9t\u00e9",
                                  "_net", "mcu", "mcu_nn", "mcu_math", "stdint", "string", "math",
                                  "arm_math", "glue", "harness"])
def test_bad_or_reserved_name(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(save(tiny_qdq_conv(), tmp_path), tmp_path, capsys, UsageError, "--name",
                 args=("--name", name))


@pytest.mark.parametrize("stem, prefix", [("int", "int_model"), ("9lives", "m_9lives"),
                                          ("my model-v2", "my_model_v2"), ("\u00e9t\u00e9", "t"),
                                          ("__", "model"), ("While", "while_model")])
def test_default_name_is_sanitized(stem: str, prefix: str, tmp_path: Path) -> None:
    assert c_name(stem) == prefix
    files = ok(save(tiny_qdq_conv(), tmp_path, f"{stem}.onnx"))
    assert f"{prefix}.h" in files and f"#ifndef {prefix.upper()}_H" in files[f"{prefix}.h"].decode()


def test_names_colliding_after_sanitizing_get_the_same_prefix(tmp_path: Path) -> None:
    """Two models whose file names sanitize alike ('my-model', 'my model') get the same prefix:
    to link both into one firmware, give one of them --name (documented in the README)."""
    a = ok(save(tiny_qdq_conv(), tmp_path, "my-model.onnx"))
    b = ok(save(tiny_qdq_conv(), tmp_path, "my model.onnx"))
    assert "my_model.h" in a and "my_model.h" in b
    assert "other.h" in ok(save(tiny_qdq_conv(), tmp_path, "my model.onnx"), name="other")


@pytest.mark.parametrize("stem", ["stdint", "mcu", "mcu_nn"])
def test_default_name_that_shadows_a_header_asks_for_name(stem: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    expect_error(save(tiny_qdq_conv(), tmp_path, f"{stem}.onnx"), tmp_path, capsys, UsageError,
                 f"'{stem}'", "--name")


# ---- output: atomic, inside -o only, never over a foreign folder ---------------------------------

def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_writes_only_inside_o(tmp_path: Path) -> None:
    model = save(tiny_qdq_conv(), tmp_path)
    assert main([str(model), "-o", str(tmp_path / "a" / "b" / "out"), "--quiet"]) == 0
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_relative_to(
        tmp_path / "a" / "b" / "out")) == ["a", "a/b", "model.onnx"]
    assert json.loads((tmp_path / "a" / "b" / "out" / "report.json").read_text())["mcugen_version"]


def failing_write(n: int, exc: BaseException):  # type: ignore[no-untyped-def]
    """Path.write_bytes that fails (disk full, or Ctrl-C) on its n-th call."""
    real, calls = Path.write_bytes, [0]

    def write_bytes(path: Path, data: bytes) -> int:
        calls[0] += 1
        if calls[0] == n:
            raise exc
        return real(path, data)
    return write_bytes


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()],
                         ids=["disk-full", "ctrl-c"])
@pytest.mark.parametrize("existing", [False, True], ids=["new", "over-old-bundle"])
def test_failing_write_leaves_no_trace(exc: BaseException, existing: bool, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    model = save(tiny_qdq_conv(), tmp_path)
    files = ok(model)
    out = tmp_path / "out"
    if existing:
        write_bundle(ok(save(tiny_qop_add_concat(), tmp_path, "other.onnx")), out)
    before = tree(out) if existing else None
    monkeypatch.setattr(Path, "write_bytes", failing_write(3, exc))
    with pytest.raises(OutputError if isinstance(exc, OSError) else KeyboardInterrupt):
        write_bundle(files, out)
    monkeypatch.undo()
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert leftovers == [], "a temporary folder was left behind"
    assert (tree(out) if out.exists() else None) == before


def test_failing_rename_restores_the_old_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_bundle(ok(save(tiny_qop_add_concat(), tmp_path)), out)
    before = tree(out)
    real = os.rename
    calls = []

    def rename_fails_second(src: str | Path, dst: str | Path) -> None:
        calls.append(src)
        if len(calls) == 2:
            raise OSError(18, "Invalid cross-device link")
        real(src, dst)

    monkeypatch.setattr(bundle_mod.os, "rename", rename_fails_second)
    with pytest.raises(OutputError, match="cannot write the bundle"):
        write_bundle(ok(save(tiny_qdq_conv(), tmp_path, "new.onnx")), out)
    monkeypatch.undo()
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_refuses_foreign_folder_file_symlink_and_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = ok(save(tiny_qdq_conv(), tmp_path))
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("precious")
    with pytest.raises(OutputError, match="--force"):
        write_bundle(files, foreign)
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "report.json").write_text('["mcugen_version"]')  # not a bundle's report
    with pytest.raises(OutputError, match="not an mcugen bundle"):
        write_bundle(files, tmp_path / "fake")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="not a folder"):
        write_bundle(files, tmp_path / "file")
    (tmp_path / "link").symlink_to(foreign)
    with pytest.raises(OutputError, match="symbolic link"):
        write_bundle(files, tmp_path / "link", force=True)
    monkeypatch.chdir(foreign)
    for here in (Path("."), Path(".."), foreign, tmp_path):
        with pytest.raises(OutputError):
            write_bundle(files, here, force=True)
    monkeypatch.undo()
    assert (foreign / "notes.txt").read_text() == "precious"
    for rel in ("../evil.h", "/abs/evil.h", "a/../../evil.h", ""):
        with pytest.raises(OutputError):
            write_bundle({rel: b"x"}, tmp_path / "new")
    assert not (tmp_path / "new").exists()
    write_bundle(files, foreign, force=True)
    assert not (foreign / "notes.txt").exists() and (foreign / "report.json").is_file()


# ---- messages ------------------------------------------------------------------------------------

def test_traceback_only_with_debug(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = save(b"not onnx", tmp_path)
    assert main([str(bad), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(ModelError):
        main([str(bad), "-o", str(tmp_path / "o"), "--debug"])


def test_control_characters_in_names_are_escaped_in_messages(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    m = rename(tiny_qdq_conv(), "w_s", "w_s\x1b[2J\r")
    m.graph.initializer.remove(init(m, "w_s\x1b[2J\r"))
    err = expect_error(m, tmp_path, capsys, ModelError, "'w_s\\x1b[2J\\r'")
    assert "\x1b" not in err and "\r" not in err


# ---- crashes found by tests/test_fuzz.py in mcugen's passes, not fixed yet -----------------------

def _qop_concat(edit):  # type: ignore[no-untyped-def]
    def build() -> onnx.ModelProto:
        m = tiny_qop_add_concat()
        edit(m.graph.node[1], m)
        return m
    return build


def _set(seq, k: int, value: str):  # type: ignore[no-untyped-def]
    seq[k] = value


KNOWN_CRASHES = {
    # QLinearConcat's output scale input is an activation, not a constant -> KeyError in lower_qop
    "qop-output-scale-not-constant": _qop_concat(lambda n, m: _set(n.input, 0, "a")),
    # QLinearConcat with 7 inputs (an incomplete (data, scale, zp) triple) -> IndexError in collect_quant
    "qop-concat-incomplete-triple": _qop_concat(lambda n, m: n.input.pop(6)),
    # QLinearConcat without its axis attribute -> KeyError in ops/concat.py lower
    "qop-concat-no-axis": _qop_concat(lambda n, m: n.ClearField("attribute")),
    # QLinearConcat axis=3 on rank-2 tensors -> ValueError in ops/concat.py prepare
    "qop-concat-axis-out-of-range": _qop_concat(lambda n, m: setattr(n.attribute[0], "i", 3)),
    # QLinearConcat whose first data input is a constant -> AssertionError in same_layout_plan
    "qop-concat-constant-input": _qop_concat(lambda n, m: _set(n.input, 2, "a_z")),
    # QLinearAdd with a rank-0 int8 graph input -> ValueError in layout.index_map
    "qop-add-scalar-input": _qop_concat(
        lambda n, m: m.graph.input[0].type.tensor_type.shape.ClearField("dim")),
    # QLinearAdd with an empty ints attribute -> ValueError from onnx.helper in lower.float_op_shape
    "qop-empty-ints-attribute": _qop_concat(
        lambda n, m: m.graph.node[0].attribute.add(name="pads", type=onnx.AttributeProto.INTS)),
}


def _conv_scalar_float_bias() -> onnx.ModelProto:
    m = tiny_qdq_conv()  # Conv's bias is a float scalar initializer -> ValueError in conv.bias_int32
    m.graph.node[4].input[2] = "x_s"
    return m


def _q_scale_not_constant() -> onnx.ModelProto:
    m = tiny_qdq_misc()  # the last QuantizeLinear's scale is a DQ output -> KeyError in lower_qdq
    m.graph.node[-1].input[1] = "k"
    return m


def _clip_per_channel_min() -> onnx.ModelProto:
    m = onnx.load(HELLO)  # bias Add -> Clip(x, min=the 16-value bias) -> ValueError in activation_range
    next(n for n in m.graph.node if n.name == "hello/dense_0/Add").op_type = "Clip"
    return m


def _conv_channel_mismatch() -> onnx.ModelProto:
    # weights [4, 2, 3, 3] on a 3-channel input: ONNX shape inference lets it pass; today it compiles
    # and the C kernel reads 108 bytes of a 72-byte weight array (no exception: a silent miscompile)
    return set_init(tiny_qdq_conv(), "w_q", np.ones((4, 2, 3, 3), np.int8))


KNOWN_CRASHES["conv-float-scalar-bias"] = _conv_scalar_float_bias
KNOWN_CRASHES["conv-weight-channels-mismatch"] = _conv_channel_mismatch
KNOWN_CRASHES["q-scale-not-constant"] = _q_scale_not_constant
KNOWN_CRASHES["clip-per-channel-min"] = _clip_per_channel_min


@pytest.mark.parametrize("case", sorted(KNOWN_CRASHES))
def test_known_crash(case: str, tmp_path: Path) -> None:
    path = save(KNOWN_CRASHES[case](), tmp_path)
    try:
        ok(path)
    except McugenError:
        return
    raise AssertionError(f"{case}: compiled without an error")
