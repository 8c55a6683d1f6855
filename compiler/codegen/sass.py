"""cubin -> SASS text with nvdisasm (or cuobjdump), when either tool is installed, and the
scheduling control code ptxas encodes in every sm_70+ instruction (stall cycles, yield,
scoreboards), read off nvdisasm's `-hex` listing."""
from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .toolchain import find_tool


def disassemble(cubin: bytes, line_info: bool = True, hex_words: bool = False) -> str | None:
    """The SASS of a cubin (with `//## File ... line` comments when built with line info;
    with each instruction's two 64-bit words as `/* 0x... */` comments for `hex_words`, which
    `control_codes` reads), or None when neither nvdisasm nor cuobjdump is available."""
    with tempfile.TemporaryDirectory(prefix="tile-sass-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        nvdisasm = find_tool("nvdisasm")
        if nvdisasm is not None:
            cmd = ([nvdisasm, "-c"] + (["-g"] if line_info else []) +
                   (["-hex"] if hex_words else []) + [str(path)])
        else:
            cuobjdump = find_tool("cuobjdump")
            if cuobjdump is None:
                return None
            cmd = [cuobjdump, "-sass", str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return None
        return proc.stdout


@dataclass(frozen=True)
class ControlCode:
    """The scheduling fields of one instruction (bits 105..125 of its 128-bit word): cycles
    to wait before the next instruction issues, whether the warp may yield, the scoreboard
    (0-5) its result or its source read releases (None: none) and the scoreboards it waits
    for (a bit mask). Triton's SASS dumps print the same fields as wait:read:write:yield:stall,
    e.g. `04:-:2:Y:1` (wait mask 4, no read scoreboard, write scoreboard 2, yields, 1 cycle)."""

    stall: int
    yields: bool
    write_barrier: int | None
    read_barrier: int | None
    wait_mask: int

    @classmethod
    def from_high_word(cls, high: int) -> "ControlCode":
        """Decode the upper 64-bit word of an instruction."""
        write, read = (high >> 46) & 7, (high >> 49) & 7
        return cls(stall=(high >> 41) & 0xF, yields=not (high >> 45) & 1,
                   write_barrier=None if write == 7 else write,
                   read_barrier=None if read == 7 else read, wait_mask=(high >> 52) & 0x3F)


_HEX_INSTRUCTION = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;\s*/\* 0x[0-9a-f]{16} \*/")
_HEX_SECOND = re.compile(r"^\s*/\* 0x([0-9a-f]{16}) \*/\s*$")


def control_codes(sass_hex: str) -> list:
    """(line index, instruction text, ControlCode) for every instruction of an nvdisasm `-hex`
    listing (`disassemble(..., hex_words=True)`), in program order; the line index is that of
    the instruction's first line."""
    lines = sass_hex.splitlines()
    out = []
    for i, line in enumerate(lines[:-1]):
        found = _HEX_INSTRUCTION.match(line)
        second = _HEX_SECOND.match(lines[i + 1]) if found else None
        if second:
            out.append((i, found.group(1), ControlCode.from_high_word(int(second.group(1), 16))))
    return out
