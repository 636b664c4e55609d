"""mcugen in a user's CI (issue 31): exit codes, --inputs checked before anything is written,
`verify --junit/--json` on the digits example for cortex-m4 and cortex-m55, and report.json
against its documented schema (docs/report_json.md)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from emitter.target import missing_tools
from tests.harness.bundles import REPO

DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"
HELDOUT = REPO / "examples" / "digits_heldout.npz"
BOARDS = ("cortex-m4", "cortex-m55")
NETWORK_CHECKS = ("host_vs_golden", "qemu_vs_golden", "qemu_vs_host", "golden_vs_reference", "host_vs_reference")
needs_qemu = pytest.mark.skipif(bool(missing_tools()), reason=f"missing: {', '.join(missing_tools())}")


def mcugen(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("CMSIS_NN_PATH", None)  # the portable backend: the same cases on every machine
    return subprocess.run([sys.executable, "-m", "emitter.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)


def reference_npz(path: Path, corrupt: bool = False) -> Path:
    """16 held-out digits with reference outputs (`tflm_outputs`) equal to the golden model's, or
    with two elements off (corrupt)."""
    from emitter.compiler import compile_model, golden_run
    from emitter.verify.run import load_inputs

    c = compile_model(DIGITS)
    images = np.load(HELDOUT)["images"][:16]
    np.savez(path, images=images)
    out = np.stack([golden_run(c, s)[0] for s in load_inputs(c, path, 0)])
    if corrupt:
        out[3, 0, 7] += 5
        out[5, 0, 2] -= 2
    np.savez(path, images=images, tflm_outputs=out)
    return path


# ---- exit 2: bad --inputs, one line, nothing written ----

@pytest.mark.parametrize("case", ["wrong-shape", "wrong-key", "wrong-dtype", "wrong-reference", "missing"])
def test_bad_inputs_exit_2_with_one_line_and_nothing_written(case, tmp_path):
    npz = tmp_path / "in.npz"
    arrays = {"wrong-shape": {"images": np.zeros((3, 7, 7), np.float32)},  # 147 values: the traceback
              "wrong-key": {"pictures": np.zeros((3, 1, 8, 8), np.float32)},
              "wrong-dtype": {"images": np.zeros((3, 1, 8, 8), np.int64)},
              "wrong-reference": {"images": np.zeros((3, 1, 8, 8), np.float32),
                                  "tflm_outputs": np.zeros((3, 7), np.int8)}}.get(case)
    if arrays is not None:
        np.savez(npz, **arrays)
    before = sorted(p.name for p in tmp_path.iterdir())
    t0 = time.perf_counter()
    res = mcugen("verify", str(DIGITS), "--board", "cortex-m4", "-o", "out", "--inputs", str(npz),
                 "--junit", "results.xml", cwd=tmp_path)
    elapsed = time.perf_counter() - t0
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("mcugen: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert {"wrong-shape": "has shape [3, 7, 7]", "wrong-key": "found keys ['pictures']",
            "wrong-dtype": "is int64", "wrong-reference": "reference outputs 'tflm_outputs'",
            "missing": "is not a file"}[case] in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no bundle, no results.xml
    assert elapsed < 10, elapsed  # ~3 s measured; generous for a loaded CI machine


def test_wrong_audio_exits_2_with_one_line_and_nothing_written(tmp_path):
    pytest.importorskip("cmsisdsp")
    kws = REPO / "examples" / "keyword_audio"
    np.savez(tmp_path / "clips.npz", pcm=np.zeros((2, 100), np.int16))  # not one window of the front end
    t0 = time.perf_counter()
    res = mcugen("verify", str(kws / "keyword_int8.onnx"), "--board", "cortex-m4", "--frontend",
                 str(kws / "frontend.toml"), "--audio", "clips.npz", "-o", "out", "--junit", "r.xml", cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "clips are 100 samples long" in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clips.npz"]
    assert time.perf_counter() - t0 < 10


@needs_qemu
def test_missing_qemu_exits_3_and_the_junit_file_says_which_cases_it_stopped(tmp_path):
    """Exit 3 for a missing tool; the host checks that ran still pass in the JUnit file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for tool in Path(folder).glob("*") if Path(folder).is_dir() else ():
            if tool.name != "qemu-system-arm" and not (bin_dir / tool.name).exists():
                (bin_dir / tool.name).symlink_to(tool)
    npz = reference_npz(tmp_path / "ref.npz")
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=str(bin_dir))
    env.pop("CMSIS_NN_PATH", None)
    res = subprocess.run([sys.executable, "-m", "emitter.cli", "verify", str(DIGITS), "--board", "cortex-m4",
                          "-o", "out", "--inputs", str(npz), "--quiet", "--junit", "results.xml"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 3, res.stderr[-2000:]
    assert res.stderr.splitlines()[-1].startswith("mcugen: error: 'qemu-system-arm' was not found on PATH")
    cases = {c.get("name"): [e.tag for e in c] for c in ET.parse(tmp_path / "results.xml").getroot().iter("testcase")}
    assert cases == {"host_vs_golden": [], "golden_vs_reference": [], "host_vs_reference": [],
                     "qemu_vs_golden": ["error"], "qemu_vs_host": ["error"]}


def test_junit_without_verify_is_a_usage_error(tmp_path):
    res = mcugen("emit", str(DIGITS), "-o", "out", "--junit", "r.xml", cwd=tmp_path)
    assert res.returncode == 2 and "--junit and --json report a verification" in res.stderr
    assert not (tmp_path / "out").exists()


# ---- verify --junit on two boards ----

@pytest.fixture(scope="module")
def two_boards(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    tmp = tmp_path_factory.mktemp("ci")
    npz = reference_npz(tmp / "ref.npz")
    res = mcugen("verify", str(DIGITS), "--board", ",".join(BOARDS), "-o", "out", "--inputs", str(npz),
                 "--quiet", "--junit", "results.xml", cwd=tmp)
    return tmp, res


@needs_qemu
def test_junit_has_one_passing_case_per_check_and_board(two_boards):
    tmp, res = two_boards
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    root = ET.parse(tmp / "results.xml").getroot()
    assert root.tag == "testsuites" and root.get("failures") == "0" and root.get("errors") == "0"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [f"mcugen verify {b}" for b in BOARDS]
    for board, suite in zip(BOARDS, suites, strict=True):
        cases = suite.findall("testcase")
        assert [c.get("name") for c in cases] == list(NETWORK_CHECKS)
        assert all(c.get("classname") == f"mcugen.{board}" and len(c.findall("*")) <= 1 for c in cases)
        assert not suite.findall(".//failure") and not suite.findall(".//skipped") and not suite.findall(".//error")
        props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
        assert int(props["instructions"]) > 10_000 and int(props["code_bytes"]) > 1000
        assert 0 < int(props["stack_bytes"]) < 4096
        qemu = {p.get("name") for p in cases[1].iter("property")}
        assert {"instructions", "code_bytes", "stack_bytes"} <= qemu
        assert (tmp / "out" / board / "report.json").is_file()


@needs_qemu
def test_corrupted_reference_outputs_fail_the_named_case_with_exit_1(tmp_path):
    npz = reference_npz(tmp_path / "bad.npz", corrupt=True)
    res = mcugen("verify", str(DIGITS), "--board", "cortex-m4", "-o", "out", "--inputs", str(npz), "--quiet",
                 "--junit", "results.xml", "--json", cwd=tmp_path)
    assert res.returncode == 1, res.stderr[-2000:]
    suite = ET.parse(tmp_path / "results.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "2"
    failed = {c.get("name"): c.find("failure") for c in suite.findall("testcase") if c.find("failure") is not None}
    assert sorted(failed) == ["golden_vs_reference", "host_vs_reference"]
    message = failed["golden_vs_reference"].get("message")
    assert message.startswith("2/160 elements differ, max |diff| 5")
    assert "sample 3 output 0 [7]" in message and "sample 5 output 0 [2]" in message
    doc = json.loads(res.stdout)  # --json: stdout is the document alone
    assert doc["exit_code"] == 1 and doc["ok"] is False
    cases = {c["check"]: c for c in doc["suites"][0]["cases"]}
    assert cases["qemu_vs_golden"]["status"] == "passed" and cases["golden_vs_reference"]["status"] == "failed"
    assert cases["golden_vs_reference"]["max_diff"] == 5 and cases["golden_vs_reference"]["differ"] == 2


# ---- report.json against docs/report_json.md ----

def documented() -> dict[str, tuple[set[str], str]]:
    """key path -> (allowed types, when) from the table of docs/report_json.md."""
    rows = {}
    for line in (REPO / "docs" / "report_json.md").read_text().splitlines():
        m = re.match(r"\| `([^`]+)` \| ([a-z|\\]+) \| ([^|]+) \|", line)
        if m:
            rows[m.group(1)] = (set(m.group(2).replace("\\", "").split("|")), m.group(3).strip())
    return rows


def json_type(value: object) -> str:
    return {dict: "dict", list: "list", str: "str", bool: "bool", int: "int", float: "float",
            type(None): "null"}[type(value)]


def flatten(value: object, path: str, docs: dict[str, tuple[set[str], str]]) -> list[tuple[str, object]]:
    """(documented-style path, value) of every key and list element; a dict whose documented
    child is a placeholder (`<board>`) maps each of its keys to it."""
    out: list[tuple[str, object]] = []
    if isinstance(value, dict):
        prefix = f"{path}." if path else ""
        placeholder = next((k for k in docs if k.startswith(prefix) and re.fullmatch(r"<\w+>", k[len(prefix):])),
                           None)
        for k, v in value.items():
            child = placeholder or prefix + k
            out.append((child, v))
            out += flatten(v, child, docs)
    elif isinstance(value, list):
        for v in value:
            out += flatten(v, f"{path}[]", docs) if isinstance(v, dict | list) else [(f"{path}[]", v)]
    return out


def check_schema(report: dict) -> None:
    docs = documented()
    seen = set()
    for path, value in flatten(report, "", docs):
        assert path in docs, f"report.json key {path} is not documented in docs/report_json.md"
        allowed = docs[path][0] | ({"int"} if "float" in docs[path][0] else set())
        assert json_type(value) in allowed, f"{path}: {json_type(value)}, documented {docs[path][0]}"
        seen.add(path)
    missing = [k for k, (_, when) in docs.items() if when == "always" and k not in seen]
    assert not missing, f"documented as always present, missing: {missing}"


@needs_qemu
def test_report_json_of_a_verification_matches_its_documented_schema(two_boards):
    tmp, res = two_boards
    assert res.returncode == 0, res.stderr[-2000:]
    for board in BOARDS:
        report = json.loads((tmp / "out" / board / "report.json").read_text())
        assert set(report["measured"]) == {board}
        assert {c["check"] for c in report["measured"][board]["checks"]} == set(NETWORK_CHECKS)
        check_schema(report)


def test_report_json_of_a_two_pool_bundle_matches_its_documented_schema(tmp_path):
    """memory.pools / memory.accesses: only in a bundle whose buffers sit in several RAM pools."""
    res = mcugen(str(DIGITS), "--board", "cortex-m55", "--pool", "dtcm=1024", "-o", str(tmp_path / "out"),
                 cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [p["name"] for p in report["memory"]["pools"]] == ["dtcm", "isram"]
    check_schema(report)


def test_schema_check_fails_on_an_undocumented_key_and_a_wrong_type():
    report = {"mcugen_version": "x", "measured": {"m4": {"checks": [{"ok": True, "surprise": 1}]}}}
    with pytest.raises(AssertionError, match=r"measured.<board>.checks\[\].surprise is not documented"):
        check_schema(report)
    with pytest.raises(AssertionError, match="mcugen_version: int"):
        check_schema({"mcugen_version": 3})


# ---- docs/ci.md's job ----

def ci_job() -> str:
    """The shell job of docs/ci.md, without its set-up line (this machine is set up already)."""
    text = (REPO / "docs" / "ci.md").read_text()
    job = text[text.index("```sh\n") + 6:]
    job = job[:job.index("```")]
    assert "bash scripts/setup.sh" in job
    return "\n".join(line for line in job.splitlines() if not line.startswith("bash scripts/setup.sh"))


@needs_qemu
@pytest.mark.skipif(bool(missing_tools(("cmake",))), reason="cmake missing")
def test_ci_job_of_the_docs_runs(tmp_path):
    (tmp_path / "examples").symlink_to(REPO / "examples")  # the repository root, as the job runs there
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("CMSIS_NN_PATH", None)
    script = f'mcugen() {{ "{sys.executable}" -m emitter.cli "$@"; }}\n' + ci_job()
    res = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.endswith("sample 0: predicted 8 (label 8)\nsample 1: predicted 3 (label 3)\n")
    # the bundle's own regression test ran in QEMU through ctest, on the 359 verified samples
    assert "digits_cnn_int8_test" in res.stdout and "100% tests passed, 0 tests failed out of 1" in res.stdout
    assert (tmp_path / "out" / "verify" / "cortex-m4" / "test" / "digits_cnn_int8_test_data.c").is_file()
    root = ET.parse(tmp_path / "results" / "digits.xml").getroot()
    assert [s.get("name") for s in root] == [f"mcugen verify {b}" for b in BOARDS]
    passed = [c.get("name") for c in root.iter("testcase")
              if not any(c.find(tag) is not None for tag in ("failure", "error", "skipped"))]
    assert passed == ["host_vs_golden", "qemu_vs_golden", "qemu_vs_host"] * 2
    skipped = [(c.get("name"), c.find("skipped").get("message")) for c in root.iter("testcase")
               if c.find("skipped") is not None]  # digits_heldout.npz holds no reference outputs
    assert [name for name, _ in skipped] == ["golden_vs_reference", "host_vs_reference"] * 2
    assert "holds no reference outputs" in skipped[0][1]
    for board in BOARDS:
        assert (tmp_path / "out" / "verify" / board / "report.html").is_file()
