"""The codegen stages end to end (ttgir -> LLVM IR -> PTX -> cubin) with the line maps; the
backend registers the same stage functions one by one, this is the one-call form for tests and
tools."""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler.ir.core import Module
from compiler.ir.parser import parse_module

from .cubin import assemble
from .linemap import ptx_line_map, python_line_map
from .lowering import LoweredKernel, LoweringOptions, lower_module
from .ptx import llvm_to_ptx
from .toolchain import find_tool


@dataclass
class CodegenResult:
    """Every stage's output of one kernel, plus the maps the explorer shows."""

    kernel: LoweredKernel
    ptx: str
    cubin: bytes | None
    cubin_info: dict
    ttgir_to_ptx: dict                 # ttgir line -> [[first PTX line, last PTX line], ...]
    python_to_ttgir: dict              # python line -> [ttgir lines]
    notes: list = field(default_factory=list)


def compile_ttgir(ttgir, arch: str = "sm_90", options: LoweringOptions | None = None,
                  build_cubin: bool = True) -> CodegenResult:
    """Lower a ttgir module (or its text) to PTX and, when ptxas is present, a cubin."""
    module = ttgir if isinstance(ttgir, Module) else parse_module(ttgir)
    kernel = lower_module(module, options)
    ptx = llvm_to_ptx(kernel.llvm_ir, arch)
    notes = []
    cubin, info = None, {}
    if build_cubin:
        if find_tool("ptxas") is None:
            notes.append("ptxas not found: the driver will JIT-compile the PTX at load time")
        else:
            cubin, info = assemble(ptx, arch)
    return CodegenResult(kernel, ptx, cubin, info, ptx_line_map(ptx),
                         python_line_map(kernel.op_python), notes)
