#!/usr/bin/env bash
# Installs everything mcugen needs on a fresh Debian/Ubuntu machine: the Arm cross toolchain,
# newlib, QEMU, host build tools, chromium (headless: the report.html tests), and mcugen itself
# (editable) with its test dependencies at the versions in scripts/constraints.txt.
# Run as root, or as a user with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PKGS="gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm gcc clang make cmake chromium gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc"
PKGS="$PKGS espeak-ng"  # the feature front end's example speaks its keywords (examples/keyword_audio)
missing=""
for p in $PKGS; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "== apt-get install$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

PY=${PYTHON:-python3}
# Python packages at the tested versions (scripts/constraints.txt), or the newest the registry gives
# with MCUGEN_NEWEST=1. cmsisdsp (the front end's host reference) is a runtime dependency.
CONSTRAINTS=(-c scripts/constraints.txt)
if [ "${MCUGEN_NEWEST:-0}" = 1 ]; then CONSTRAINTS=(--upgrade --upgrade-strategy eager); fi
echo "== pip install -e .[test] ${CONSTRAINTS[*]}"
# (a Debian system Python marks itself externally managed: then install next to it anyway)
$PY -m pip install -q --disable-pip-version-check "${CONSTRAINTS[@]}" -e ".[test]" ||
    $PY -m pip install -q --disable-pip-version-check --break-system-packages "${CONSTRAINTS[@]}" -e ".[test]"

# The feature front end (docs/frontend.md): CMSIS-DSP's C sources from the cmsisdsp release that is
# installed, extracted outside the repository.
echo "== CMSIS-DSP sources"
$PY -m emitter.features.sources fetch
