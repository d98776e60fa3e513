#!/usr/bin/env bash
# Install what the book needs into the current Python (a virtualenv: see the README).
# Idempotent: a second run only checks. Usage: bash scripts/install.sh [--browser]
#   --browser   also install headless Chromium (Debian packages) for the browser tests
# Environment: PYTHON (default python3); PTLM_TORCH_INDEX, the CPU wheel index tried first on a
# machine without an NVIDIA GPU (default https://download.pytorch.org/whl/cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
PIP="$PY -m pip install --disable-pip-version-check -q"
TORCH="torch==2.13.0"       # wheels for CPython 3.10-3.14 (the book is tested with 3.11)
CPU_INDEX=${PTLM_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}

say() { echo "install: $*"; }

# pip install, with pip's messages kept: a Python whose distribution manages its packages
# (PEP 668: Debian's and Ubuntu's own python3, Homebrew's) makes pip refuse every install with
# "externally-managed-environment". That stops the install here with what to do, instead of a
# second try from another index that fails the same way (tests/test_install.py).
externally_managed() {
  local again="bash scripts/${PTLM_COMMAND:-install.sh}"
  [[ -n "${PYTHON:-}" ]] && again="PYTHON=.venv/bin/python $again"
  cat >&2 <<MSG

install: pip refused to install into $PY ($($PY -c 'import sys; print(sys.executable)' 2>/dev/null || echo "$PY")):
install: "externally-managed-environment" means this Python belongs to the operating system
install: (PEP 668), and the book's packages must go into a virtualenv. From the repository root:

    python3 -m venv .venv        # Debian/Ubuntu: if this fails, sudo apt install python3-venv
    . .venv/bin/activate
    $again

install: (in a new terminal, run ". .venv/bin/activate" again first). Nothing was installed.
MSG
  exit 3
}

pip_install() {
  local log status=0
  log=$(mktemp)
  $PIP "$@" 2>"$log" || status=$?
  cat "$log" >&2
  if [[ $status -ne 0 ]] && grep -q "externally-managed-environment" "$log"; then
    rm -f "$log"
    externally_managed
  fi
  rm -f "$log"
  return "$status"
}

# 0. A Python that torch 2.13 has wheels for (pyproject.toml: requires-python >= 3.10).
$PY -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || {
  echo "install: the book needs Python >= 3.10 (torch 2.13 has no wheels for older ones); $PY is" \
       "$($PY -c 'import platform; print(platform.python_version())')" >&2
  exit 1
}

# 1. torch first, so that nothing later pulls a build of its own choosing. On Linux, PyPI's torch
#    is the CUDA build (torch plus ~17 nvidia/cuda packages and triton, several GB): a machine
#    without an NVIDIA GPU gets the CPU build from PyTorch's CPU wheel index instead, and only
#    where that index cannot be reached (a short timeout, no retries) the default index's build.
#    On macOS and Windows, PyPI's torch already is the CPU (macOS: CPU+MPS) build.
if $PY -c "import torch" 2>/dev/null; then
  say "torch $($PY -c 'import torch; print(torch.__version__)') is installed (kept)"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  say "NVIDIA GPU found: $TORCH from the default index (the CUDA build)"
  pip_install "$TORCH"
elif [[ "$(uname -s)" == Linux ]]; then
  say "no NVIDIA GPU: $TORCH, CPU build, from $CPU_INDEX"
  if ! pip_install --timeout 10 --retries 0 --index-url "$CPU_INDEX" "$TORCH"; then
    say "$CPU_INDEX could not be used; $TORCH from the default index instead"
    pip_install "$TORCH"
  fi
else
  say "$TORCH from the default index ($(uname -s): the CPU build)"
  pip_install "$TORCH"
fi

# 2. Everything else (lower bounds; the torch above satisfies torch>=2.1), and the package in
#    editable mode. Skipped when everything is already there, so a second run only checks.
if ! $PY - <<'EOF'
import pathlib, re, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:
    sys.exit(1)                                    # cannot tell: let pip decide
root = pathlib.Path.cwd()
# not the repository itself: its ptlm_lite.egg-info (a build's leftover) is not what is installed
sys.path[:] = [p for p in sys.path if p not in ("", ".") and pathlib.Path(p).resolve() != root]
missing = []
for line in (root / "requirements.txt").read_text().splitlines():
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    req = Requirement(line)
    if req.marker and not req.marker.evaluate():
        continue
    try:
        version = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        missing.append(req.name)
        continue
    if version and not req.specifier.contains(version, prereleases=True):
        missing.append(f"{req.name} {version} ({req.specifier})")
# the package: installed in editable mode from this directory, with today's pyproject metadata
try:
    dist = metadata.distribution("ptlm_lite")
    direct = dist.read_text("direct_url.json") or ""
    if pathlib.Path.cwd().as_uri() not in direct or '"editable": true' not in direct:
        missing.append("ptlm_lite (not editable from here)")
    else:
        try:
            import tomllib
        except ImportError:
            import tomli as tomllib
        project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
        wanted = {(canonicalize_name(Requirement(r).name), str(Requirement(r).specifier), extra)
                  for extra, reqs in [("", project.get("dependencies", []))]
                  + sorted(project.get("optional-dependencies", {}).items()) for r in reqs}
        have = set()
        for r in dist.requires or []:
            req = Requirement(r)
            m = re.search(r'extra == "([^"]+)"', str(req.marker or ""))
            extra = m.group(1) if m else ""
            have.add((canonicalize_name(req.name), str(req.specifier), extra))
        if wanted != have or dist.version != project["version"]:
            missing.append("ptlm_lite (pyproject.toml changed)")
except (metadata.PackageNotFoundError, ImportError, KeyError):
    missing.append("ptlm_lite")
if missing:
    print("install: to install: " + ", ".join(missing))
sys.exit(1 if missing else 0)
EOF
then
  pip_install -r requirements.txt
  pip_install --no-deps -e .
else
  say "requirements.txt and the package (editable) are installed"
fi

# 3. The JavaScript the static book serves itself (npm registry; nothing committed).
$PY scripts/assets.py

# 4. Headless Chromium for the browser tests (Debian packages; playwright drives it).
if [[ "${1:-}" == "--browser" ]] && ! command -v chromium >/dev/null 2>&1; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
