"""A new user's first hour (issue #15): the errors and printouts they meet first."""
from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

from emitter.cli import main
from tests.harness.bundles import REPO

EXAMPLES = REPO / "examples"


def test_float_model_error_names_the_quantize_command_that_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Item 6: a float model -> exit 2, nothing written, and the exact `mcugen quantize` command;
    that command (with a real CALIB.npz) then makes a model mcugen compiles."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(EXAMPLES / "digits_cnn_fp32.onnx", "digits.onnx")
    assert main(["digits.onnx", "-o", "out"]) == 2
    err = capsys.readouterr().err
    assert "'digits.onnx' is a float model (float input 'input'" in err
    assert err.count("\n") <= 6 and "unsupported node" not in err  # one error, not one per node
    command = next(line.strip() for line in err.splitlines() if line.strip().startswith("mcugen quantize"))
    assert command == "mcugen quantize digits.onnx --calibration CALIB.npz -o digits_int8.onnx"
    assert not Path("out").exists()
    np.savez("CALIB.npz", images=np.load(EXAMPLES / "digits_heldout.npz")["images"][:64])
    assert main([*shlex.split(command)[1:], "--no-qemu"]) == 0
    then = next(line.split("then: ")[1] for line in err.splitlines() if line.startswith("then: "))
    assert then == "mcugen digits_int8.onnx --board=<your board>"
    assert main(["digits_int8.onnx", "--board=cortex-m4", "-o", "out", "--quiet"]) == 0


# ---- item 7: one way to shorten layer names; offsets with separators; full names in report.json ----

def test_short_name_keeps_head_and_tail_at_one_width() -> None:
    from emitter.report.names import NAME_WIDTH, short_name

    assert short_name("conv1") == "conv1"
    long = "sequential/dense_1/MatMul;sequential/dense_1/Relu;sequential/dense_1/BiasAdd_prequant"
    s = short_name(long)
    assert len(s) == NAME_WIDTH and s.startswith("sequentia") and s.endswith("dense_1/BiasAdd_prequant"[-20:])
    assert "..." in s and short_name(long, 16) == long[:4] + "..." + long[-9:]


def test_summary_profile_and_debug_show_the_same_layer_names(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """hello_fc's names are 60-70 characters: the summary, the profile table and `mcugen debug`
    (host run) print each layer under the same shortened name; report.json holds the full names."""
    import json

    from emitter.compiler import compile_model
    from emitter.report.names import short_name
    from emitter.verify.profile import LayerCost, Profile
    from tests.models.tiny import HELLO

    c = compile_model(HELLO, name="hello_fc")
    full = [n.name for n in c.graph.nodes]
    assert max(map(len, full)) > 60
    shown = [short_name(n) for n in full]
    assert main([str(HELLO), "-o", str(tmp_path / "b")]) == 0
    summary_rows = capsys.readouterr().out.splitlines()[2:2 + len(full)]
    assert [row.split("  ")[1].strip() for row in summary_rows] == shown
    profile = Profile("cortex-m4", tuple(LayerCost(k, n, "fc", "mcu_fully_connected_s8", 16, 100)
                                         for k, n in enumerate(full)), 400, 100).table()
    assert [row[5:5 + len(s)] for row, s in zip(profile.splitlines()[1:], shown, strict=False)] == shown
    assert main(["debug", str(HELLO), "--no-qemu", "--work", str(tmp_path / "w"), "--samples", "2"]) == 0
    debug_rows = [line for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]
    assert [row.split("  ")[1].strip() for row in debug_rows] == shown
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert [lay["name"] for lay in report["layers"]] == full


def test_summary_offsets_have_thousands_separators(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main([str(EXAMPLES / "digits_cnn_int8.onnx"), "-o", str(tmp_path / "d")]) == 0
    rows = capsys.readouterr().out.splitlines()
    offsets = [row.split()[-2] for row in rows[2:8] if "view of" not in row]
    big = [o for o in offsets if o[0].isdigit() and int(o.replace(",", "")) >= 1000]
    assert big and all(o == f"{int(o.replace(',', '')):,}" for o in big)  # 1,216 not 1216


# ---- item 8: regenerating into a bundle folder keeps what the user put there ----

def test_regenerating_keeps_the_users_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess

    from tests.models.tiny import HELLO

    out = tmp_path / "b"
    assert main([str(HELLO), "-o", str(out), "--quiet"]) == 0
    subprocess.run(["make", "-C", str(out), "-j2"], capture_output=True, check=True)
    (out / "notes.txt").write_text("mine")
    built = sorted(p.relative_to(out).as_posix() for p in (out / "build").rglob("*.o"))
    assert built and (out / "libhello_fc.a").is_file()
    capsys.readouterr()
    assert main([str(HELLO), "-o", str(out), "--quiet", "--name", "sine"]) == 0
    assert "kept what mcugen did not write there: build, libhello_fc.a, notes.txt" in capsys.readouterr().out
    assert (out / "notes.txt").read_text() == "mine" and (out / "libhello_fc.a").is_file()
    assert sorted(p.relative_to(out).as_posix() for p in (out / "build").rglob("*.o")) == built
    assert (out / "sine.c").is_file() and not (out / "hello_fc.c").exists()  # mcugen's old files go
    # a file of the user's at a path the new bundle writes: refused, named, nothing changed ...
    (out / "other.h").write_text("mine too")
    assert main([str(HELLO), "-o", str(out), "--quiet", "--name", "other"]) == 2
    assert "holds other.h, not written by mcugen" in capsys.readouterr().err
    assert (out / "other.h").read_text() == "mine too" and (out / "sine.c").is_file()
    # ... unless --force
    assert main([str(HELLO), "-o", str(out), "--quiet", "--name", "other", "--force"]) == 0
    assert "OTHER_INPUT_SIZE" in (out / "other.h").read_text() and (out / "notes.txt").is_file()


# ---- item 9: no litter, the demo's command, where the reference outputs come from ----

def test_kernel_library_builds_leave_nothing_in_tmp(tmp_path: Path) -> None:
    """The kernel libraries live in one temp folder per session (tests read them back while it
    runs) that is gone when the session ends."""
    import os
    import subprocess
    import sys

    src = tmp_path / "src" / "twice.c"
    src.parent.mkdir()
    src.write_text("int twice(int x);\nint twice(int x) { return 2 * x; }\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    code = ("from tests.harness.ckernels import CFLAGS, build_lib\n"
            f"lib = build_lib(({str(src)!r},), 'twice', CFLAGS)\n"
            "assert lib.twice(21) == 42\n"
            "import os, pathlib; assert pathlib.Path(lib._name).is_file()\n")
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False,
                         env={**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(root)})
    assert res.returncode == 0, res.stderr
    assert list(scratch.iterdir()) == []


# ---- item 2 (and 9): the README's demo output is the demo's printout ----

@pytest.mark.qemu
def test_readme_demo_block_is_what_the_demo_prints() -> None:
    """Runs the demo (about 5 s) as scripts/readme_demo.py does and compares README.md's block;
    the instruction count and firmware sizes only where the compiler and QEMU are the ones the
    block names, onnxruntime's figures only under the onnxruntime it names. The first line is the
    command the demo runs."""
    import shlex
    import sys

    from emitter.target import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))
    sys.path.insert(0, str(REPO / "scripts"))
    import readme_demo

    got = readme_demo.demo_output()
    readme = (REPO / "README.md").read_text()
    want = readme_demo.quoted(readme)
    got, want = ([readme_demo.host_neutral(line) for line in lines if not readme_demo.version_dependent(readme, line)]
                 for lines in (got, want))
    assert any("generated C, QEMU" in line for line in want)  # mcugen's own figures are compared
    assert got == want, "README.md's demo block is stale: python scripts/readme_demo.py"
    argv = shlex.split(got[0])
    assert argv[:2] == ["$", "mcugen"] and argv[2] == "examples/digits_cnn_int8.onnx"
    assert {"--verify", "--inputs", "examples/digits_heldout.npz"} <= set(argv)


def test_verify_says_where_the_reference_outputs_come_from(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from emitter.compiler import compile_model, golden_run
    from tests.models.tiny import HELLO

    c = compile_model(HELLO, name="net")
    xs = np.arange(-128, 128, 32, dtype=np.int8).reshape(-1, 1, 1)
    refs = np.stack([golden_run(c, [x])[0] for x in xs])
    np.savez(tmp_path / "ref.npz", inputs=xs, tflm_outputs=refs)
    assert main(["verify", str(HELLO), "--no-qemu", "--inputs", str(tmp_path / "ref.npz"), "-o", str(tmp_path / "b"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "golden vs TFLM outputs             bit-exact" in out and "host gcc vs TFLM outputs" in out
    assert ("TFLM outputs: array 'tflm_outputs' of ref.npz: TensorFlow Lite Micro's interpreter on the same "
            "inputs") in out
    assert "reference outputs" not in out
