"""PTX -> cubin with ptxas, and the resource report of `ptxas -v` (registers, spills, shared
memory, stack) parsed into a dict for the compile trace."""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from compiler.runtime.errors import PTXASError

from .toolchain import find_tool


class PtxasError(PTXASError):
    """ptxas rejected the PTX; the message holds its diagnostics."""


class PtxasArchUnsupported(PtxasError):
    """This ptxas cannot assemble for the requested architecture at all (CUDA 13's ptxas has
    no sm_70, for example); the PTX itself may be fine."""


def parse_ptxas_info(text: str) -> dict:
    """Registers, spill stores/loads (bytes), shared memory, stack frame, from `ptxas -v`."""
    info: dict = {}
    patterns = {
        "registers": r"Used (\d+) registers",
        "stack_frame": r"(\d+) bytes stack frame",
        "spill_stores": r"(\d+) bytes spill stores",
        "spill_loads": r"(\d+) bytes spill loads",
        "shared_memory": r"(\d+) bytes smem",
        "constant_memory": r"(\d+) bytes cmem\[0\]",
    }
    for key, pattern in patterns.items():
        m = re.search(pattern, text)
        if m:
            info[key] = int(m.group(1))
    return info


def assemble(ptx: str, arch: str = "sm_90", line_info: bool = True,
             maxnreg: int | None = None, timeout_s: float | None = None) -> tuple:
    """(cubin bytes, info) for PTX text; `maxnreg` (when given) caps the registers per thread
    (`--maxrregcount`). Raises PtxasError with ptxas's messages on failure or when ptxas runs
    past `timeout_s` seconds (None: no limit), FileNotFoundError when ptxas is not installed."""
    ptxas = find_tool("ptxas")
    if ptxas is None:
        raise FileNotFoundError("ptxas not found (set TILE_PTXAS_PATH or put it on the PATH)")
    with tempfile.TemporaryDirectory(prefix="tile-ptxas-") as tmp:
        src = Path(tmp) / "kernel.ptx"
        out = Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        cmd = [ptxas, f"-arch={arch}", "-v", "-O3", str(src), "-o", str(out)]
        if line_info:
            cmd.insert(1, "-lineinfo")
        if maxnreg is not None:
            cmd.insert(1, f"--maxrregcount={maxnreg}")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise PtxasError(f"ptxas ran past {timeout_s:g} s and was stopped (raise the limit "
                             f"with the compile option stage_timeout_s)") from None
        report = proc.stdout + proc.stderr
        if proc.returncode != 0:
            if re.search(r"Value '[^']*' is not defined for option 'gpu-name'", report):
                raise PtxasArchUnsupported(report.strip())
            raise PtxasError(report.strip())
        info = parse_ptxas_info(report)
        info["ptxas"] = ptxas
        info["report"] = report.strip()
        return out.read_bytes(), info
