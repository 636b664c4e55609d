#!/usr/bin/env bash
# Sets up a fresh machine and runs the whole test suite (host, QEMU tier, real models).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider "$@"
