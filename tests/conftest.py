"""Session checks. On CI (CI=true, as .ci/run runs) or with MCUGEN_REQUIRE_TOOLS=1 every system tool
the suite uses must be present: a test that would skip for a missing tool is a check not made, so
the run stops at once, naming the Debian packages, instead of passing with skips."""
from __future__ import annotations

import os

import pytest

from emitter.target.toolchain import QEMU_TOOLS, RISCV_QEMU_TOOLS, missing_tools
from tests.harness.cmsis import cmsis_env  # noqa: F401  (a fixture: CMSIS_NN_PATH for one test)

CI_TOOLS = QEMU_TOOLS + RISCV_QEMU_TOOLS + ("clang", "make", "cmake", "chromium", "espeak-ng")


def pytest_sessionstart(session: pytest.Session) -> None:
    if os.environ.get("CI") != "true" and os.environ.get("MCUGEN_REQUIRE_TOOLS") != "1":
        return
    missing = missing_tools(CI_TOOLS)
    if missing:
        pytest.exit("CI needs every tool the tests use; missing: " + "; ".join(missing)
                    + " (bash scripts/setup.sh installs them)", returncode=3)
