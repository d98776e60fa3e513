#!/usr/bin/env bash
# Install what the book needs into the current Python (use a virtualenv if you like).
# Idempotent: a second run only checks. Usage: bash scripts/install.sh [--browser]
#   --browser   also install headless Chromium (Debian packages) for the browser tests
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PIP="$PY -m pip install --disable-pip-version-check -q"

# 1. torch first. A bare `torch` requirement on a Linux machine pulls a multi-GB CUDA build; on a
#    machine without an NVIDIA GPU install the CPU build first (see README for other platforms).
if ! $PY -c "import torch" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1; then
    $PIP "torch>=2.1"
  else
    $PIP "torch==2.13.0"
  fi
fi

# 2. Everything else (lower bounds; the torch just installed satisfies torch>=2.1), and the package.
$PIP -r requirements.txt
$PIP --no-deps -e .

# 3. The JavaScript the static book serves itself (npm registry; nothing committed).
$PY scripts/assets.py

# 4. Headless Chromium for the browser tests (Debian packages; playwright drives it).
if [[ "${1:-}" == "--browser" ]] && ! command -v chromium >/dev/null 2>&1; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
