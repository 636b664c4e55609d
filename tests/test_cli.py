"""The command line: the card's form, bad input -> one clear error, exit 2, nothing written."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from emitter.backends.cmsis_version import API_FUNCTIONS, API_TYPES, detect
from emitter.boards import load_board
from emitter.cli import choose_backend, main
from emitter.errors import UsageError
from tests.harness.bundles import SHARED_MODELS, shared_model
from tests.models.tiny import HELLO, qdq_model_with


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_card_form_default_output_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([str(HELLO), "--board=cortex-m7"]) == 0
    out = tmp_path / "hello_fc"
    assert (out / "hello_fc.h").is_file() and (out / "Makefile").is_file()
    assert (out / "CMakeLists.txt").is_file() and (out / "report.json").is_file()
    text = capsys.readouterr().out
    assert "arena" in text and "fc" in text


def test_console_script_runs(tmp_path):
    res = subprocess.run([sys.executable, "-m", "emitter.cli", str(HELLO), "-o", str(tmp_path / "b"),
                          "--name", "hw", "--quiet"], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "b" / "hw.h").is_file()


@pytest.mark.parametrize("op", ["TopK", "LSTM"])
def test_unsupported_nodes_listed_exit_2_nothing_written(op, tmp_path, capsys):
    model = qdq_model_with(op, tmp_path)
    out = tmp_path / "bundle"
    assert main([str(model), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"my_{op.lower()}" in err and op in err and "opset 13" in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == [model.name]  # no temporary folder left either


def test_every_unsupported_node_in_one_error(tmp_path, capsys):
    a = qdq_model_with("TopK", tmp_path)
    m = onnx.load(a)
    extra = helper.make_node("Hardmax", ["xf"], ["e"], name="my_hardmax")
    m.graph.node.append(extra)
    m.graph.output.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 8]))
    onnx.save(m, tmp_path / "two.onnx")
    assert main([str(tmp_path / "two.onnx"), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "my_topk" in err and "my_hardmax" in err and "2 unsupported node(s)" in err


@pytest.mark.parametrize("content", [b"", b"not an onnx file at all", b"\x08\x07\x12"])
def test_not_onnx(content, tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(content)
    assert main([str(bad), "-o", str(tmp_path / "o")]) == 2
    assert "mcugen: error:" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_truncated_model(tmp_path, capsys):
    raw = HELLO.read_bytes()
    (tmp_path / "t.onnx").write_bytes(raw[: len(raw) // 2])
    assert main([str(tmp_path / "t.onnx"), "-o", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


def test_symbolic_dim_names_input_and_option(tmp_path, capsys):
    m = onnx.load(HELLO)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(m, tmp_path / "dyn.onnx")
    assert main([str(tmp_path / "dyn.onnx"), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "serving_hello_input:0" in err and "--input-shape" in err
    assert main([str(tmp_path / "dyn.onnx"), "-o", str(tmp_path / "o"), "--quiet",
                 "--input-shape", "serving_hello_input:0=1,1"]) == 0


def test_unknown_board(capsys, tmp_path):
    assert main([str(HELLO), "--board=cortex-m99", "-o", str(tmp_path / "o")]) == 2
    assert "cortex-m7" in capsys.readouterr().err


def test_refuses_to_overwrite_foreign_folder(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("precious")
    assert main([str(HELLO), "-o", str(out)]) == 2
    assert (out / "notes.txt").read_text() == "precious"
    assert main([str(HELLO), "-o", str(out), "--force", "--quiet"]) == 0
    assert not (out / "notes.txt").exists()


def test_regenerates_over_own_bundle_byte_identical(tmp_path):
    out = tmp_path / "b"
    assert main([str(HELLO), "-o", str(out), "--quiet"]) == 0
    first = tree_digest(out)
    assert main([str(HELLO), "-o", str(out), "--quiet"]) == 0
    assert tree_digest(out) == first


@pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
def test_ram_budget_failure_names_peak_layer(tmp_path, capsys):
    model = shared_model("mlperf_ic_resnet8")
    assert main([str(model), "-o", str(tmp_path / "o"), "--ram-budget", "20K"]) == 2  # below its smallest plan
    err = capsys.readouterr().err
    assert "RAM" in err and "20,480" in err and "Peak at layer" in err and "smallest plan" in err
    assert not (tmp_path / "o").exists()


def test_flash_budget_failure_names_biggest_weights(tmp_path, capsys):
    assert main([str(HELLO), "-o", str(tmp_path / "o"), "--flash-budget", "100"]) == 2
    err = capsys.readouterr().err
    assert "flash" in err and "Largest" in err


def test_bad_name(tmp_path, capsys):
    assert main([str(HELLO), "-o", str(tmp_path / "o"), "--name", "int"]) == 2
    assert "--name" in capsys.readouterr().err


# ---- backend choice and the CMSIS-NN version check (fake header-only trees: no CMSIS-NN needed) ----

def fake_cmsis(root: Path, revision: str | None,
               functions: dict[str, tuple[str, tuple[str, ...]]] = API_FUNCTIONS) -> Path:
    """Include/arm_nnfunctions.h with `$Revision: <revision>` (None: no such line) declaring
    `functions` (parameters named p0, p1, ...), and Include/arm_nn_types.h with mcugen's types,
    laid out as CMSIS-NN does."""
    inc = root / "Include"
    inc.mkdir(parents=True)
    head = f"/*\n * Title: arm_nnfunctions.h\n * $Revision:    {revision}\n */\n" if revision else "/* no revision */\n"
    wrap = ",\n    "  # one parameter a line, as CMSIS-NN writes them
    protos = "".join(f"/**\n * @brief {n}\n */\n{ret} {n}({wrap.join(f'{t} p{k}' for k, t in enumerate(params))});\n\n"
                     for n, (ret, params) in functions.items())
    (inc / "arm_nnfunctions.h").write_text(f'{head}#include "arm_nn_types.h"\n#ifdef __cplusplus\nextern "C" {{\n'
                                           f"#endif\n{protos}#ifdef __cplusplus\n}}\n#endif\n")
    fields = {n: body.replace("; ", ";\n    ").replace(", ", wrap) for n, body in API_TYPES.items()}
    (inc / "arm_nn_types.h").write_text("".join(
        f"/** {n} */\ntypedef {'enum' if n == 'arm_cmsis_nn_status' else 'struct'}\n{{\n    {body}\n}} {n};\n\n"
        for n, body in fields.items()))
    return root


@pytest.mark.parametrize("revision, expect", [
    ("V.16.0.0", ["V.16.0.0 (v6.0.0)", "older than supported."]),
    ("V.12.4.0", ["V.12.4.0 (v5.0.0)", "older than supported."]),
    (None, ["no `$Revision: V.x.y.z` line"]),
    ("missing", ["holds no Include/arm_nnfunctions.h"]),
])
def test_unusable_cmsis_nn_exit_3_nothing_written(revision, expect, tmp_path, monkeypatch, capsys):
    tree = tmp_path / "cmsis" if revision == "missing" else fake_cmsis(tmp_path / "cmsis", revision)
    monkeypatch.setenv("CMSIS_NN_PATH", str(tree))
    for backend in ("auto", "cmsis-nn"):
        assert main([str(HELLO), "--board=cortex-m4", "-o", str(tmp_path / "o"), "--backend", backend]) == 3
        err = capsys.readouterr().err
        for text in expect + ["v7.0.0 (arm_nnfunctions.h V.18.0.0)", "git clone --branch v7.0.0", "--backend portable"]:
            assert text in err, err
        assert not (tmp_path / "o").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["cmsis"] if tree.exists() else [])


def test_newer_cmsis_nn_same_api_accepted_with_warning(tmp_path, monkeypatch, capsys):
    tree = fake_cmsis(tmp_path / "cmsis", "V.19.1.0")
    v = detect(tree)
    assert (v.revision, v.release, v.tested) == ((19, 1, 0), None, False)
    monkeypatch.setenv("CMSIS_NN_PATH", str(tree))
    backend, path, why = choose_backend("auto", load_board("cortex-m4"))
    assert (backend, path) == ("cmsis-nn", tree)
    assert "V.19.1.0 (newer than the tested v7.0.0, same API)" in why and "CMSIS_NN_PATH is set" in why
    err = capsys.readouterr().err
    assert "warning" in err and "newer than tested" in err and "V.19.1.0" in err and "--verify" in err
    tested = detect(fake_cmsis(tmp_path / "v7", "V.18.0.0"))
    assert tested.tested and str(tested) == "v7.0.0 (V.18.0.0)"


def test_newer_cmsis_nn_other_api_refused(tmp_path, monkeypatch, capsys):
    changed = dict(API_FUNCTIONS)
    changed["arm_softmax_s8"] = ("void", (*changed["arm_softmax_s8"][1], "int32_t"))
    del changed["arm_avgpool_s8_get_buffer_size_mve"]
    monkeypatch.setenv("CMSIS_NN_PATH", str(fake_cmsis(tmp_path / "cmsis", "V.20.0.0", changed)))
    assert main([str(HELLO), "--board=cortex-m4", "-o", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert "V.20.0.0, newer than tested v7.0.0" in err and "API mcugen calls changed: arm_softmax_s8" in err
    assert "int8_t*,int32_t)" in err and "(and 1 more)" in err and "v7.0.0" in err
    assert not (tmp_path / "o").exists()


def test_backend_choice_is_printed_with_its_reason(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("CMSIS_NN_PATH", raising=False)
    assert main([str(HELLO), "--board=cortex-m4", "-o", str(tmp_path / "a")]) == 0
    assert "backend portable: mcugen's C99 kernels; auto: CMSIS_NN_PATH is not set" in capsys.readouterr().out
    assert main([str(HELLO), "-o", str(tmp_path / "a"), "--backend", "cmsis-nn"]) == 3
    assert "needs CMSIS_NN_PATH" in capsys.readouterr().err
    # a RISC-V board stays portable even with CMSIS_NN_PATH set, and says why
    monkeypatch.setenv("CMSIS_NN_PATH", str(fake_cmsis(tmp_path / "cmsis", "V.18.0.0")))
    riscv = load_board("esp32-c3")
    assert choose_backend("auto", riscv)[2] == ("backend portable: mcugen's C99 kernels; auto: board esp32-c3 "
                                                "has no Arm Cortex-M core (rv32imac; CMSIS-NN is Arm-only)")
    with pytest.raises(UsageError, match="needs an Arm Cortex-M board"):
        choose_backend("cmsis-nn", riscv)
    assert choose_backend("portable", load_board("cortex-m4"))[2].endswith("; asked for")


# ---- one parser, one exit-code mapping ----

def test_help_lists_every_command_and_verify_shows_its_options(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for command in ("emit", "verify", "debug", "quantize", "boards"):
        assert f"    {command} " in out
    assert "mcugen MODEL.onnx [options]" in out
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: mcugen verify") and "--inputs" in out and "--profile" in out
    with pytest.raises(SystemExit):
        main(["debug", "--help"])
    out = capsys.readouterr().out
    assert "--bundle" in out and "--work" in out and "--backend" not in out


def test_exit_status_of_each_error_class():
    from emitter.errors import (
        BudgetError,
        OutputError,
        QuantError,
        ToolchainError,
        UnsupportedError,
        VerifyError,
        exit_status,
    )

    assert exit_status(UsageError("x")) == exit_status(QuantError("x")) == exit_status(OutputError("x")) == 2
    assert exit_status(UnsupportedError([("n", "TopK", 13, "why")])) == exit_status(BudgetError("x")) == 2
    assert exit_status(VerifyError("x")) == 1
    assert exit_status(ToolchainError("x")) == 3  # a missing or failing tool: compiler, QEMU, CMSIS-NN tree
    assert exit_status(KeyboardInterrupt()) == 130
    assert exit_status(BrokenPipeError()) == 141
    assert exit_status(ValueError("a bug")) is None


def test_interrupt_exits_130_quietly(monkeypatch, capsys):
    import emitter.boards

    def interrupted() -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(emitter.boards, "format_board_table", interrupted)
    assert main(["boards"]) == 130
    assert capsys.readouterr().err == ""


def test_closed_stdout_ends_quietly():
    """`mcugen boards | head`: the reader went away; no BrokenPipeError traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "emitter.cli", "boards"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait() == 141
    assert err == b""


def test_verify_command_and_verify_flag_agree(tmp_path, capsys):
    """`mcugen verify MODEL` and `mcugen MODEL --verify` are one code path: host build bit-exact."""
    for argv in (["verify", str(HELLO)], [str(HELLO), "--verify"]):
        out_dir = tmp_path / argv[0].replace("/", "_")[-8:]
        assert main([*argv, "-o", str(out_dir), "--quiet", "--no-qemu", "--samples", "2"]) == 0
        out = capsys.readouterr().out
        assert "verification on 2 samples:" in out and "host gcc vs golden" in out and "bit-exact" in out
        assert "measured" in (out_dir / "report.json").read_text()


@pytest.mark.qemu
def test_verify_in_qemu_records_its_figures(tmp_path, capsys):
    from emitter.target import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))
    assert main(["verify", str(HELLO), "--board=cortex-m4", "-o", str(tmp_path / "b"), "--quiet",
                 "--samples", "2"]) == 0
    out = capsys.readouterr().out
    assert "QEMU cortex-m4 vs golden" in out and "instructions per inference (cortex-m4" in out
    import json

    figures = json.loads((tmp_path / "b" / "report.json").read_text())["measured"]["cortex-m4"]
    assert len(figures["instructions"]) == 2 and figures["stack_bytes"] > 0
