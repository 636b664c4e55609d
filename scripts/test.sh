#!/usr/bin/env bash
# Sets up a fresh machine, lints (ruff, mypy) and runs the whole test suite (host, QEMU tier, real models).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=${PYTHON:-python3}
echo "== ruff check emitter tests"
"$PY" -m ruff check emitter tests
echo "== mypy emitter"
"$PY" -m mypy emitter
exec "$PY" -m pytest -q -p no:cacheprovider "$@"
