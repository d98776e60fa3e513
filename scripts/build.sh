#!/usr/bin/env bash
# Build the book: install, execute the chapters whose code or package changed, render the HTML.
# Usage: bash scripts/build.sh [--all]    (--all re-executes every chapter)
# Everything runs offline on embedded data; the result is _build/html/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PTLM_COMMAND=build.sh bash scripts/install.sh
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
$PY scripts/execute.py ${1:+"$1"}
$PY -c "from jupyter_book.cli.main import main; main()" build . --warningiserror --keep-going
echo "book: $(pwd)/_build/html/index.html"
