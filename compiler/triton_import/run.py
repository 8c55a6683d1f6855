"""Running a script under the real Triton with its IR dumps on, in a subprocess with a clean
PYTHONPATH (so `import triton` finds the installed Triton, not our alias): MLIR_ENABLE_DUMP=1
and MLIR_ENABLE_TIMING=1 (the per-pass IR and times, on stderr), TRITON_KERNEL_DUMP=1 with
TRITON_DUMP_DIR (the stage files), TRITON_ALWAYS_COMPILE=1 (no cache hits, so every kernel is
dumped). The artifacts are kept in a folder that load_triton_artifacts reads back."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .merge import attach_python, load_triton_artifacts

_PROBE = "import triton, sys; sys.stdout.write(triton.__version__ + '\\n' + triton.__file__)"


def clean_environment(extra: dict | None = None) -> dict:
    """The environment for the real Triton: ours without PYTHONPATH and our own TILE_ knobs."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith("TILE_")}
    env.update(extra or {})
    return env


def find_real_triton(python: str = sys.executable) -> tuple:
    """(version, "") when `import triton` in a clean environment finds the real Triton, else
    (None, why not)."""
    try:
        proc = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True,
                              env=clean_environment(), timeout=120, cwd=tempfile.gettempdir())
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"could not start {python}: {error}"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["import triton failed"])[-1]
        return None, f"the real Triton is not installed for {python} ({last})"
    version, _, location = proc.stdout.partition("\n")
    here = str(Path(__file__).resolve().parents[2])
    if location.startswith(here):
        return None, f"`import triton` found this project ({location}), not the real Triton"
    return version.strip(), ""


@dataclass
class TritonRun:
    """What running a script under the real Triton gave."""

    traces: list = field(default_factory=list)
    messages: list = field(default_factory=list)
    error: str | None = None
    folder: str = ""


def run_under_triton(script: str | Path, script_args: list | None = None,
                     folder: str | Path | None = None, timeout_s: float = 1800,
                     python: str = sys.executable) -> TritonRun:
    """Run `script` under the real Triton and read its dumps (kept in `folder`, a new
    temporary folder when None)."""
    script = Path(script).resolve()
    result = TritonRun()
    version, why = find_real_triton(python)
    if version is None:
        result.error = f"tile-explore --triton: {why}"
        return result
    out = Path(folder or tempfile.mkdtemp(prefix="tile-triton-"))
    out.mkdir(parents=True, exist_ok=True)
    result.folder = str(out)
    env = clean_environment({
        "MLIR_ENABLE_DUMP": "1", "MLIR_ENABLE_TIMING": "1", "TRITON_KERNEL_DUMP": "1",
        "TRITON_DUMP_DIR": str(out / "kernels"), "TRITON_ALWAYS_COMPILE": "1",
        "TRITON_CACHE_DIR": str(out / "cache")})
    dump = out / "mlir-dump.txt"
    try:
        with open(dump, "w") as stderr:
            proc = subprocess.run([python, str(script), *(script_args or [])], env=env,
                                  stdout=sys.stderr, stderr=stderr, cwd=script.parent,
                                  timeout=timeout_s)
    except subprocess.TimeoutExpired:
        result.error = f"{script}: ran past {timeout_s:g} s under Triton and was stopped"
        return result
    result.messages.append(f"ran under Triton {version}; dumps in {out}")
    if proc.returncode != 0:
        tail = "\n".join(dump.read_text(errors="replace").splitlines()[-15:])
        result.error = f"{script}: exited with status {proc.returncode} under Triton:\n{tail}"
    try:
        result.traces = load_triton_artifacts(out)
    except ValueError as error:
        result.error = result.error or str(error)
        return result
    attach_python(result.traces, script)
    return result
