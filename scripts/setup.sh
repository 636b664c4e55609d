#!/usr/bin/env bash
# Installs everything mcugen needs on a fresh Debian/Ubuntu machine: the Arm cross toolchain,
# newlib, QEMU, host build tools, chromium (headless: the report.html tests), and mcugen itself
# (editable) with its test dependencies.
# Run as root, or as a user with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PKGS="gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm gcc make cmake chromium"
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
echo "== pip install -e .[test]"
# (a Debian system Python marks itself externally managed: then install next to it anyway)
$PY -m pip install -q --disable-pip-version-check -e ".[test]" ||
    $PY -m pip install -q --disable-pip-version-check --break-system-packages -e ".[test]"

# The feature front end (docs/frontend.md): the cmsisdsp package (built from its sdist where no wheel
# fits), and CMSIS-DSP's C sources from the same release, extracted outside the repository.
echo "== pip install cmsisdsp; CMSIS-DSP sources"
$PY -m pip install -q --disable-pip-version-check "cmsisdsp==1.10.3" ||
    $PY -m pip install -q --disable-pip-version-check --break-system-packages "cmsisdsp==1.10.3"
$PY -m emitter.features.sources fetch
