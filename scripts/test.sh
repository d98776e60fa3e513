#!/usr/bin/env bash
# Run every test: unit tests, each chapter re-executed fresh under nbval, and the browser tests
# against the built book. Usage: bash scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PTLM_COMMAND=test.sh bash scripts/install.sh --browser
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# The browser tests need the book; build it from the stored (committed, executed) outputs.
$PY -c "from jupyter_book.cli.main import main; main()" build . --warningiserror --keep-going -q
# Chapters use a fresh model cache, so nothing trained earlier on this machine hides a bug.
export PTLM_CACHE="$(mktemp -d)"
trap 'rm -rf "$PTLM_CACHE"' EXIT
# One worker per core, up to 4 (pytest-xdist), one thread each: most of a chapter's time is
# Python and small matrices, so two chapters side by side finish sooner than one on two
# threads. conftest.py groups the tests (a notebook, a test file, a capped chapter run
# whole on one worker). PTLM_TEST_WORKERS=1 runs them one after another.
WORKERS=${PTLM_TEST_WORKERS:-$($PY -c "import os; print(max(1, min(4, os.cpu_count() or 1)))")}
PARALLEL=()
if [ "$WORKERS" -gt 1 ]; then
  export PTLM_THREADS=${PTLM_THREADS:-1}
  # NumPy/SciPy's BLAS (scikit-learn's probes) starts a thread per core of its own
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
  PARALLEL=(-n "$WORKERS" --dist loadgroup)
fi
$PY -m pytest tests chapters book/widgets.ipynb book/replication.ipynb --nbval-lax -p no:cacheprovider -q "${PARALLEL[@]}" "$@"
