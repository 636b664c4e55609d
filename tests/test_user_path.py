"""The user's path (issue 22, item 3), walked as a new user walks it: a wheel built from the
checkout, installed with its dependencies into a fresh virtual environment, and mcugen run from a
folder outside the repository (holding a copy of examples/, so the documents' relative paths resolve).

- every shell block of README.md, examples/README.md and docs/*.md runs as written, or is marked in
  the document with the reason (tests/harness/userpath.py: the block syntax and the markers);
  quoted outputs are compared on the figures mcugen itself produces;
- the acceptance commands of issue 22: the digits model bit-exact in QEMU cortex-m4, the keyword
  example's front end bit-exact from its own clips;
- the other commands cheaply: boards, --help, quantize, features, debug on the host.

The install is built once per session (about 30 s with pip's cache). The blocks run with
CMSIS_NN_PATH set to the tests' CMSIS-NN tree (tests/harness/cmsis.py; unset without one) and
CMSIS_DSP_PATH to what `python -m emitter.features.sources fetch` of the venv gives; the acceptance
commands run as on a fresh machine, without CMSIS-NN.

Default tier: the blocks not marked `full tier` and the checks below not marked userpath_full.
Full tier (a few minutes more): `python -m pytest tests/test_user_path.py -m userpath_full`
(or MCUGEN_USERPATH_FULL=1).
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from emitter.target.toolchain import missing_tools
from tests.harness.cmsis import CMSIS_NN
from tests.harness.userpath import REPO, Block, Install, all_blocks, build_install, comparable, docs, neutral, parse

TOOLS = ("gcc", "arm-none-eabi-gcc", "qemu-system-arm", "newlib", "make", "cmake")
MISSING = missing_tools(TOOLS)
pytestmark = [pytest.mark.qemu, pytest.mark.skipif(bool(MISSING), reason="missing tools: " + "; ".join(MISSING))]

FULL = pytest.mark.userpath_full
# A quoted-output block that cannot carry a marker: README's demo output is rewritten whole (from the
# line of its intro on) by scripts/readme_demo.py. It is the printout of demo.sh's block, compared there.
OUTPUT_OF = {"Expected demo output (": "bash scripts/demo.sh"}
# Commands that fail today through a bug in mcugen, keyed by the start of the command: (what its
# output shows, the bug, whether it needs CMSIS_NN_PATH set). The test then xfails on that output
# (any other failure fails), and fails once the command succeeds, so that the entry goes.
KNOWN_BUGS: dict[str, tuple[str, str, bool]] = {}


def known_bug(command: str, cmsis_nn: bool) -> tuple[str, str, bool] | None:
    return next((bug for key, bug in KNOWN_BUGS.items() if command.startswith(key) and (cmsis_nn or not bug[2])),
                None)


def expect(res: subprocess.CompletedProcess[str], command: str, cmsis_nn: bool, where: str = "") -> None:
    """Exit 0, or the known bug's failure (then xfail)."""
    bug = known_bug(command, cmsis_nn)
    out = res.stdout + res.stderr
    if res.returncode != 0 and bug is not None and bug[0] in out:
        pytest.xfail("known bug: " + bug[1])
    assert res.returncode == 0, (f"{where}`{command}` exited {res.returncode}:\n"
                                 f"{res.stdout[-4000:]}\n{res.stderr[-4000:]}")
    assert bug is None, f"`{command}` works now: remove its KNOWN_BUGS entry ({bug[1] if bug else ''})"


TIMEOUT = 900


@pytest.fixture(autouse=True)
def _full_tier_only_when_asked(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("userpath_full") is None:
        return
    asked = "userpath_full" in (request.config.option.markexpr or "") or os.environ.get("MCUGEN_USERPATH_FULL") == "1"
    if not asked:
        pytest.skip("full tier: python -m pytest tests/test_user_path.py -m userpath_full")


# ---- every block is run or marked (no install needed) ------------------------------------------

def test_every_block_is_run_or_marked() -> None:
    """Every candidate block either parses as runnable or carries a marker with its reason, and
    every marker in the documents sits directly above a block. Prints the counts per document."""
    problems, counts = [], {}
    for path in docs():
        blocks, orphans = parse(path)
        rel = path.relative_to(REPO).as_posix()
        problems += [f"{rel}:{n}: a user-path marker that is not directly above a block" for n in orphans]
        tally: Counter[str] = Counter()
        for b in blocks:
            kind = b.kind
            if kind is None:
                if output_of(b) is not None:
                    tally["run (quoted output, compared)"] += 1
                    continue
                why = b.problems()
                if why:
                    problems.append(f"{b.where}: not runnable as written ({'; '.join(why)}): mark it "
                                    "<!-- user-path: synopsis --> or <!-- user-path: not run: REASON --> "
                                    "(see tests/harness/userpath.py)")
                tally["run"] += 1
            elif kind == "?":
                problems.append(f"{b.where}: unknown marker {b.marker!r}")
            elif kind != "synopsis" and not b.reason:
                problems.append(f"{b.where}: marker {b.marker!r} gives no reason")
            elif kind == "run as" and b.run_as is None:
                problems.append(f"{b.where}: `run as` marker without a `command`")
            else:
                tally["run" if kind == "run as" else "run (full tier)" if kind == "full tier" else kind] += 1
        counts[rel] = tally
        markers = (REPO / rel).read_text().count("<!-- user-path:")
        assert markers == sum(1 for b in blocks if b.marker is not None) + len(orphans)
    print("\nuser-path blocks per document:")
    for rel, tally in counts.items():
        print(f"  {rel:36} " + (", ".join(f"{k} {v}" for k, v in sorted(tally.items())) or "none"))
    total = sum(counts.values(), Counter())
    print("  total: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    assert not problems, "\n".join(problems)
    assert total["run"] >= 4  # the demo, the firmware lines, the keyword example's verify, ...


def output_of(block: Block) -> str | None:
    """The command whose printout an unmarkable quoted-output block is (OUTPUT_OF), else None."""
    return next((cmd for intro, cmd in OUTPUT_OF.items() if intro in block.intro), None)


# ---- the install ---------------------------------------------------------------------------------

@dataclass
class User:
    install: Install
    cmsis_dsp: Path
    seconds: float

    def folder(self, name: str) -> Path:
        """A fresh folder outside the repository with `examples` (a link to the install's copy)."""
        where = self.install.root / "runs" / re.sub(r"[^\w.-]+", "_", name)
        where.mkdir(parents=True)
        (where / "examples").symlink_to(self.install.user / "examples")
        return where

    def env(self, cmsis_nn: bool) -> dict[str, str]:
        return self.install.env(CMSIS_NN if cmsis_nn else None, self.cmsis_dsp)

    def run(self, command: str, cwd: Path, cmsis_nn: bool = False,
            timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", "set -o pipefail\n" + command], cwd=cwd, env=self.env(cmsis_nn),
                              capture_output=True, text=True, check=False, timeout=timeout)


@pytest.fixture(scope="session")
def user(tmp_path_factory: pytest.TempPathFactory) -> User:
    """The wheel installed into a fresh venv, CMSIS-DSP's sources fetched by the venv's mcugen."""
    t0 = time.monotonic()
    install = build_install(tmp_path_factory.mktemp("userpath"))
    res = subprocess.run([str(install.python), "-m", "emitter.features.sources", "fetch"], cwd=install.user,
                         env=install.env(), capture_output=True, text=True, check=False, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    dsp = Path(res.stdout.strip().splitlines()[-1].split("=", 1)[1])
    return User(install, dsp, time.monotonic() - t0)


def test_install_is_the_wheel_alone(user: User) -> None:
    """The venv imports mcugen from its own site-packages (not the checkout), its data folders
    from the wheel, and pip finds every requirement met."""
    code = ("import emitter, emitter.resources as r, cmsisdsp, SCons; "
            "print(emitter.__file__); print(r.data_dir('templates')); print(r.data_dir('SConstruct'))")
    res = subprocess.run([str(user.install.python), "-c", code], cwd=user.install.user, env=user.env(False),
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    site = str(user.install.venv)
    assert all(line.startswith(site) for line in res.stdout.splitlines()), res.stdout
    check = subprocess.run([*user.install.pip, "check"], env=user.env(False),
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    print(f"\nwheel {user.install.wheel.name}, venv and CMSIS-DSP in {user.seconds:.0f} s")


# ---- the documents' blocks ----------------------------------------------------------------------

def runnable(full: bool) -> list[Block]:
    return [b for b in all_blocks()
            if (b.kind is None and not b.problems() and output_of(b) is None and not full)
            or (b.kind == "run as" and not full) or (b.kind == "full tier" and full)]


def block_params(full: bool) -> list[object]:
    out = []
    for b in runnable(full):
        marks = [FULL, pytest.mark.slow] if full else []
        out.append(pytest.param(b, id=b.where, marks=marks))
    return out


def run_block(user: User, block: Block) -> list[tuple[str, str]]:
    """Run the block's commands in order in a fresh folder (cd/export lines carry over), each
    checked for exit 0 and for the output quoted under it; returns (command, stdout) pairs."""
    cwd = user.folder(block.where)
    prefix: list[str] = []
    done = []
    cmds = [(block.run_as, [])] if block.run_as else [(c.text, c.output) for c in block.commands()]
    for text, quoted in cmds:
        if text.startswith(("cd ", "export ")):
            prefix.append(text)
        res = user.run("\n".join([*prefix, text]), cwd, cmsis_nn=CMSIS_NN is not None)
        expect(res, text, CMSIS_NN is not None, f"{block.where}: ")
        got = [line.rstrip() for line in res.stdout.splitlines()]
        want = [line for line in quoted if comparable(line, block.intro, ort_version(user))]
        missing = missing_in_order(want, got)
        assert not missing, f"{block.where}: `{text}` did not print {missing!r}; it printed:\n{res.stdout[-3000:]}"
        done.append((text, res.stdout))
    return done


def missing_in_order(want: list[str], got: list[str]) -> list[str]:
    """The lines of want that do not appear in got in that order (stripped)."""
    rest = [g.strip() for g in got]
    missing = []
    for line in want:
        if line.strip() in rest:
            rest = rest[rest.index(line.strip()) + 1:]
        else:
            missing.append(line)
    return missing


_ORT: dict[str, str] = {}


def ort_version(user: User) -> str:
    if "v" not in _ORT:
        res = subprocess.run([str(user.install.python), "-c", "import onnxruntime; print(onnxruntime.__version__)"],
                             env=user.env(False), capture_output=True, text=True, check=True)
        _ORT["v"] = res.stdout.strip()
    return _ORT["v"]


@pytest.mark.parametrize("block", block_params(full=False))
def test_block(user: User, block: Block) -> None:
    done = run_block(user, block)
    compare_quoted_outputs(user, block, done)


@pytest.mark.parametrize("block", block_params(full=True))
def test_block_full_tier(user: User, block: Block) -> None:
    done = run_block(user, block)
    compare_quoted_outputs(user, block, done)


def compare_quoted_outputs(user: User, block: Block, done: list[tuple[str, str]]) -> None:
    """A block whose printout another block quotes (OUTPUT_OF: README's demo output): that block's
    lines equal the run's stdout (without `wrote` lines), on the lines comparable here."""
    doc_command = block.commands()[0].text if block.commands() else ""
    for quoted in all_blocks():
        if output_of(quoted) != doc_command:
            continue
        got = [line.rstrip() for line in done[-1][1].splitlines() if not line.startswith("wrote ")]
        want = list(quoted.lines)
        got, want = ([neutral(x) for x in lines if comparable(x, quoted.intro, ort_version(user))]
                     for lines in (got, want))
        assert any("bit-exact" in x for x in want)  # mcugen's own figures are compared
        assert got == want, f"{quoted.where} differs from what `{doc_command}` prints here"


# ---- the acceptance commands (issue 22) ---------------------------------------------------------

DIGITS = "mcugen examples/digits_cnn_int8.onnx --board=cortex-m4 --verify --inputs examples/digits_heldout.npz"
KEYWORD = ("mcugen verify examples/keyword_audio/keyword_int8.onnx --board=cortex-m4 "
           "--frontend examples/keyword_audio/frontend.toml --audio examples/keyword_audio/heldout.npz")


@pytest.mark.parametrize("cmsis_nn", [False, pytest.param(True, marks=[FULL, pytest.mark.slow])],
                         ids=["fresh", "cmsis-nn"])
def test_digits_verify_bit_exact_in_qemu(user: User, cmsis_nn: bool) -> None:
    if cmsis_nn and CMSIS_NN is None:
        pytest.skip("no CMSIS-NN tree (tests/harness/cmsis.py)")
    res = user.run(DIGITS, user.folder(f"digits-{cmsis_nn}"), cmsis_nn=cmsis_nn)
    expect(res, DIGITS, cmsis_nn)
    for where in ("host gcc vs golden", "QEMU cortex-m4 vs golden", "QEMU cortex-m4 vs host"):
        assert re.search(rf"^  {where} +bit-exact: 0/3590 elements differ, max \|diff\| 0$", res.stdout, re.M), \
            res.stdout
    assert ("backend cmsis-nn" if cmsis_nn else "backend portable") in res.stdout


@pytest.mark.parametrize("cmsis_nn", [False, pytest.param(True, marks=[FULL, pytest.mark.slow])],
                         ids=["fresh", "cmsis-nn"])
def test_keyword_verify_features_bit_exact(user: User, cmsis_nn: bool) -> None:
    """The keyword example's own clips (mu-law + table) through --audio: features bit-exact with
    cmsisdsp on the host and in QEMU, the network bit-exact on them."""
    if cmsis_nn and CMSIS_NN is None:
        pytest.skip("no CMSIS-NN tree (tests/harness/cmsis.py)")
    res = user.run(KEYWORD, user.folder(f"keyword-{cmsis_nn}"), cmsis_nn=cmsis_nn)
    expect(res, KEYWORD, cmsis_nn)
    for where in ("host", "cortex-m4"):
        assert (f"front end on {where}: 36 clips; raw features vs cmsisdsp: bit-exact; model input mismatches 0; "
                "stream mismatches 0; network outputs vs golden mismatches 0") in res.stdout, res.stdout


def test_other_commands(user: User) -> None:
    """boards, --help of every command, a real quantize and features run, debug on the host."""
    cwd = user.folder("commands")
    steps = [
        ("mcugen boards", "cortex-m55"),
        ("mcugen --help", "quantize"),
        ("mcugen quantize --help", "--calibration"),
        ("mcugen features --help", "mulaw"),
        ("mcugen debug --help", "--no-qemu"),
        ("python -c \"import numpy as np; d = np.load('examples/digits_heldout.npz'); "
         "np.savez('calib.npz', images=d['images'][:64])\"", ""),
        ("mcugen quantize examples/digits_cnn_fp32.onnx --calibration calib.npz -o digits_int8.onnx --no-qemu",
         "digits_int8.onnx"),
        ("mcugen digits_int8.onnx --board=cortex-m4 --quiet", ""),
        ("mcugen features examples/keyword_audio/frontend.toml examples/keyword_audio/heldout.npz -o feats.npz "
         "--model examples/keyword_audio/keyword_int8.onnx", ""),
        ("python -c \"import numpy as np; f = np.load('feats.npz'); assert f['features'].shape == (36, 49, 10), "
         "f['features'].shape; assert f['inputs'].dtype == np.int8\"", ""),
        ("mcugen debug examples/digits_cnn_int8.onnx --board=cortex-m4 --no-qemu --samples 2",
         "all 5 layers are bit-exact with the golden model on host"),
    ]
    # a reader closing the output early: quiet, exit 0 or 141 (as SIGPIPE would; README "Errors")
    res = user.run("mcugen boards | head -2", cwd)
    assert res.returncode in (0, 141) and "cortex-m0plus" in res.stdout and not res.stderr, res
    for command, wanted in steps:
        res = user.run(command, cwd)
        assert res.returncode == 0, f"`{command}` exited {res.returncode}:\n{res.stdout[-3000:]}{res.stderr[-3000:]}"
        assert wanted in res.stdout, f"`{command}` did not print {wanted!r}:\n{res.stdout[-3000:]}"


def test_regenerating_a_front_end_bundle_in_place(user: User) -> None:
    """The same command twice (a user's second try, or after editing the spec): the bundle folder
    mcugen wrote is regenerated in place (README, Troubleshooting: "A folder holding a bundle is
    regenerated in place")."""
    cwd = user.folder("regenerate")
    command = ("mcugen examples/keyword_audio/keyword_int8.onnx --board=cortex-m4 "
               "--frontend examples/keyword_audio/frontend.toml --quiet")
    first = user.run(command, cwd)
    assert first.returncode == 0, first.stdout + first.stderr
    expect(user.run(command, cwd), command, False)
