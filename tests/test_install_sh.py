"""scripts/install.sh and a Python whose distribution manages its packages (PEP 668:
Debian's and Ubuntu's own python3). pip refuses with "externally-managed-environment";
install.sh must stop there with what to do (a virtualenv), not retry from another index
and fail the same way (issue 26)."""

from __future__ import annotations

import os
import pathlib
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
INSTALL = ROOT / "scripts" / "install.sh"

# What pip 23.0.1 prints on Debian 12 for `/usr/bin/python3 -m pip install torch`
# (stderr, exit status 1), captured 2026-11-26.
REFUSAL = """\
error: externally-managed-environment

\u00d7 This environment is externally managed
\u2570\u2500> To install Python packages system-wide, try apt install
    python3-xyz, where xyz is the package you are trying to
    install.

    If you wish to install a non-Debian-packaged Python package,
    create a virtual environment using python3 -m venv path/to/venv.
    Then use path/to/venv/bin/python and path/to/venv/bin/pip. Make
    sure you have python3-full installed.

    If you wish to install a non-Debian packaged Python application,
    it may be easiest to use pipx install xyz, which will manage a
    virtual environment for you. Make sure you have pipx installed.

    See /usr/share/doc/python3.11/README.venv for more information.

note: If you believe this is a mistake, please contact your Python installation or OS \
distribution provider. You can override this, at the risk of breaking your Python \
installation or OS, by passing --break-system-packages.
hint: See PEP 668 for the detailed specification.
"""

ADVICE = ("python3 -m venv .venv", ". .venv/bin/activate", "python3-venv")


def run_install(python: str, tmp_path, command="build.sh", **env):
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PIP_BREAK_SYSTEM_PACKAGES", "PTLM_COMMAND")
    }
    # pip may download nothing, whatever happens: no index, no config file
    full.update(
        PYTHON=python,
        PTLM_COMMAND=command,
        PIP_NO_INDEX="1",
        PIP_CONFIG_FILE=os.devnull,
        PTLM_TORCH_INDEX="http://127.0.0.1:9/",
        **env,
    )
    return subprocess.run(
        ["bash", str(INSTALL)],
        check=False,
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def fake_python(tmp_path) -> pathlib.Path:
    """A Python without torch whose pip refuses as Debian's does and logs each call."""
    (tmp_path / "refusal.txt").write_text(REFUSAL, encoding="utf-8")
    script = tmp_path / "python3"
    script.write_text(
        "#!/usr/bin/env bash\n"
        'if [[ "$1 $2" == "-m pip" ]]; then\n'
        f'  echo "$*" >> "{tmp_path}/pip-calls"\n'
        f'  cat "{tmp_path}/refusal.txt" >&2\n'
        "  exit 1\n"
        "fi\n"
        'if [[ "$1" == "-c" && "$2" == "import torch" ]]; then exit 1; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_the_refusal_stops_the_install_with_what_to_do(tmp_path):
    python = fake_python(tmp_path)
    r = run_install(str(python), tmp_path, command="test.sh")
    out = r.stdout + r.stderr
    calls = (tmp_path / "pip-calls").read_text().splitlines()
    assert r.returncode == 3, out
    assert len(calls) == 1, f"pip was asked again after refusing: {calls}\n{out}"
    assert "could not be used" not in out, out
    for advice in ADVICE:
        assert advice in out, f"the message lacks {advice!r}:\n{out}"
    # PYTHON was set, so the advice keeps it pointing at the virtualenv's Python
    assert "PYTHON=.venv/bin/python bash scripts/test.sh" in out, out
    assert "Nothing was installed" in out


def test_other_pip_failures_still_fall_back(tmp_path):
    """A CPU index that cannot be reached is not a refusal: the default index is tried
    (as before), and that failure is pip's own."""
    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU machine installs from the default index only (no fallback)")
    python = fake_python(tmp_path)
    (tmp_path / "refusal.txt").write_text("ERROR: Could not find a version\n")
    r = run_install(str(python), tmp_path)
    out = r.stdout + r.stderr
    calls = (tmp_path / "pip-calls").read_text().splitlines()
    assert r.returncode == 1, out
    assert len(calls) == 2 and "--index-url" in calls[0], calls
    assert "could not be used" in out and "venv" not in out, out


def _managed_python() -> str | None:
    """The distribution's python3 when it is externally managed and its pip knows it."""
    for exe in ("/usr/bin/python3",):
        if not os.path.exists(exe):
            continue
        probe = subprocess.run(
            [
                exe,
                "-c",
                (
                    "import os, sys, sysconfig; import pip; "
                    "m = os.path.join(sysconfig.get_path('stdlib'), "
                    "'EXTERNALLY-MANAGED'); "
                    "v = tuple(int(x) for x in pip.__version__.split('.')[:2]); "
                    "sys.exit(0 if os.path.exists(m) and sys.prefix == sys.base_prefix "
                    "and v >= (23, 0) else 1)"
                ),
            ],
            check=False,
            capture_output=True,
        )
        if probe.returncode == 0:
            return exe
    return None


def test_the_distributions_own_python(tmp_path):
    """The real thing where this machine has it (Debian 12's python3 and pip 23): the
    same message, before anything is downloaded."""
    exe = _managed_python()
    if exe is None:
        pytest.skip("no externally managed system python3 with pip >= 23 here")
    r = run_install(exe, tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 3, out
    assert "externally-managed-environment" in out
    for advice in ADVICE:
        assert advice in out, f"the message lacks {advice!r}:\n{out}"
