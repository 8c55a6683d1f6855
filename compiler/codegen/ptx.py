"""LLVM IR -> PTX with llvmlite's NVPTX backend (sm_90, PTX ISA 8.0 by default)."""
from __future__ import annotations

import re

import llvmlite.binding as llvm

from .libdevice import link_libdevice
from .target import target_machine

_TARGET_DEBUG = re.compile(r"^(\.target\s+[^\n,]+),\s*debug\s*$", re.MULTILINE)


def llvm_to_ptx(llvm_text: str, arch: str = "sm_90", features: str = "+ptx80",
                module: llvm.ModuleRef | None = None) -> str:
    """Compile LLVM IR text to PTX text; the `debug` flag is dropped from `.target` (the `.loc`
    line info stays) so ptxas does not build a debug (-G like) binary. `module`, when given,
    is the verified llvmlite module `llvm_text` was printed from: it is emitted instead of a
    parse of the text (the same PTX, one parse less); emitting changes it, so it is used once.
    A module that still declares libdevice functions (an llir pipeline without llvm-optimize)
    has libdevice linked in first."""
    if module is None:
        module = llvm.parse_assembly(llvm_text)
        module.verify()
    link_libdevice(module)
    ptx = target_machine(arch, features).emit_assembly(module)
    return _TARGET_DEBUG.sub(r"\1", ptx)


def ptx_version(ptx_text: str) -> str | None:
    """The `.version` of a PTX text (e.g. "8.0")."""
    m = re.search(r"^\.version\s+(\S+)", ptx_text, re.MULTILINE)
    return m.group(1) if m else None
