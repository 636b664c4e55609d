#!/usr/bin/env bash
# The main job on the bundled example, on a fresh machine: set up, then emit the digits CNN for
# cortex-m7, cross-compile it, run it in QEMU, check it bit for bit, and print the accuracies.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" examples/run_demo.py --board "${BOARD:-cortex-m7}" --out out/digits
