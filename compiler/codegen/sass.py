"""cubin -> SASS text with nvdisasm (or cuobjdump), when either tool is installed."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from .toolchain import find_tool


def disassemble(cubin: bytes, line_info: bool = True) -> str | None:
    """The SASS of a cubin (with `//## File ... line` comments when built with line info), or
    None when neither nvdisasm nor cuobjdump is available."""
    with tempfile.TemporaryDirectory(prefix="tile-sass-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        nvdisasm = find_tool("nvdisasm")
        if nvdisasm is not None:
            cmd = [nvdisasm, "-c"] + (["-g"] if line_info else []) + [str(path)]
        else:
            cuobjdump = find_tool("cuobjdump")
            if cuobjdump is None:
                return None
            cmd = [cuobjdump, "-sass", str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return None
        return proc.stdout
