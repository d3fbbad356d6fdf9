"""A virtual environment under the build folder for the Python checks that ctest runs (packages
from PyPI, installed on first use), and their way of reporting that it cannot be had: with
--skip-if-unavailable, "skipped: <reason>" and exit status 77 (ctest's SKIP_RETURN_CODE)."""
import os
import subprocess
import sys
from pathlib import Path

SKIPPED = 77


def unavailable(reason: str, skip: bool):
    """The environment cannot be had on this machine: a skip (status 77) when asked for, else a failure."""
    if skip:
        print(f"skipped: {reason}")
        sys.exit(SKIPPED)
    sys.exit(reason)


def ensure_environment(env: Path, packages, probe: str, skip: bool, what: str, probe_env=None) -> Path:
    """Creates `env` unless it is there, and pip-installs `packages` unless `probe` (Python code)
    runs in it; returns its python."""
    python = env / "bin" / "python"
    if not python.exists():
        print(f"creating {env}")
        result = subprocess.run([sys.executable, "-m", "venv", str(env)], capture_output=True, text=True)
        if result.returncode != 0:
            unavailable(f"python3 -m venv {env} failed (on Debian and Ubuntu: apt-get install python3-venv): {result.stderr.strip()}", skip)
    if subprocess.call([str(python), "-c", probe], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=probe_env or os.environ) != 0:
        print("installing " + " ".join(packages) + " from PyPI")
        result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *packages], capture_output=True, text=True)
        if result.returncode != 0:
            lines = (result.stdout + result.stderr).strip().splitlines()
            unavailable(f"pip cannot install {what}: " + (lines[-1] if lines else f"exit status {result.returncode}"), skip)
    return python
