"""The CMSIS-NN tree the tests use: $CMSIS_NN_PATH, else the CMSIS-NN v7.0.0 of ../shared/third_party.

CMSIS-NN is the user's library and is never vendored; a fresh clone without ../shared and without
CMSIS_NN_PATH skips the cmsis-nn tests with the reason below. The environment variable is not set
for the whole session (it would switch every `--backend auto` test to cmsis-nn): tests that need it
set it with `monkeypatch.setenv("CMSIS_NN_PATH", str(CMSIS_NN))` or the `cmsis_env` fixture.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_CMSIS_NN = REPO.parent / "shared" / "third_party" / "CMSIS-NN-7.0.0"


def cmsis_nn_tree() -> Path | None:
    """$CMSIS_NN_PATH when set, else ../shared/third_party/CMSIS-NN-7.0.0 when present, else None."""
    value = os.environ.get("CMSIS_NN_PATH")
    if value:
        return Path(value)
    if (SHARED_CMSIS_NN / "Include" / "arm_nnfunctions.h").is_file():
        return SHARED_CMSIS_NN
    return None


CMSIS_NN = cmsis_nn_tree()
NO_CMSIS = ("no CMSIS-NN: CMSIS_NN_PATH is not set and ../shared/third_party/CMSIS-NN-7.0.0 is not present "
            "(CMSIS-NN is the user's library; point CMSIS_NN_PATH at a CMSIS-NN v7.0.0 tree to run these)")
needs_cmsis = pytest.mark.skipif(CMSIS_NN is None, reason=NO_CMSIS)


@pytest.fixture
def cmsis_env(monkeypatch: pytest.MonkeyPatch) -> Path:
    """CMSIS_NN_PATH set to the tests' CMSIS-NN tree for one test (skips without one)."""
    if CMSIS_NN is None:
        pytest.skip(NO_CMSIS)
    monkeypatch.setenv("CMSIS_NN_PATH", str(CMSIS_NN))
    return CMSIS_NN
