"""A fresh clone passes on its own (issue #15, item 1): the repository's files copied into a folder
with no ../shared next to it, as a user's `git clone` is. There the whole suite collects without an
error, the tests that need the shared models report "skipped" with the reason, and the tests that
only need a small real model run on the project's own (tests/models/tiny.py's hello_fc)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.harness.bundles import REPO

NO_SHARED = "../shared/models is not present"


def repo_files() -> list[str]:
    """What a clone holds: the tracked files plus new ones not ignored (so an uncommitted test
    counts too); without git, every file outside caches and build output."""
    res = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, check=False)
    if res.returncode == 0:
        return [f for f in res.stdout.decode().split("\0") if f and (REPO / f).is_file()]
    skip = ("__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache")
    return [str(p.relative_to(REPO)) for p in REPO.rglob("*")
            if p.is_file() and not any(part in skip for part in p.relative_to(REPO).parts)]


def fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "user" / "mcugen"
    for rel in repo_files():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, clone / rel)
    assert not (clone.parent / "shared").exists()
    return clone


def pytest_in(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=clone,
                          capture_output=True, text=True, check=False, timeout=600)


def test_fresh_clone_without_shared_models_collects_skips_and_passes(tmp_path: Path) -> None:
    clone = fresh_clone(tmp_path)
    collected = pytest_in(clone, "--co")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-2000:]
    assert "error" not in collected.stdout.splitlines()[-1], collected.stdout[-3000:]
    ran = pytest_in(clone, "-rs", "tests/test_golden_files.py", "tests/test_models.py", "tests/test_debug.py",
                    "tests/test_cli.py::test_card_form_default_output_folder",
                    "tests/test_cli.py::test_symbolic_dim_names_input_and_option",
                    "tests/test_cli.py::test_ram_budget_failure_names_peak_layer",
                    "tests/test_guard.py::test_cli_guard_option")
    out = ran.stdout
    assert ran.returncode == 0, out[-4000:] + ran.stderr[-2000:]
    summary = out.splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    skipped = int(re.search(r"(\d+) skipped", summary).group(1))  # type: ignore[union-attr]
    assert "failed" not in summary and "error" not in summary, summary
    # the project's own models ran: hello_fc and the two tiny models' goldens, the CLI on hello_fc
    assert passed >= 10, summary
    # every shared-model test in these files skipped, each with the reason
    reasons = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert reasons and all(NO_SHARED in line for line in reasons), "\n".join(reasons)
    counted = sum(int(m.group(1)) for m in (re.match(r"SKIPPED \[(\d+)\]", r) for r in reasons) if m)
    assert counted == skipped and skipped >= 20, summary
    assert any("test_golden_files.py" in r for r in reasons) and any("test_models.py" in r for r in reasons)
