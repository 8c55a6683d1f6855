"""Helpers for IR-in / IR-out pass tests: run a pipeline on IR text and FileCheck the result."""
from __future__ import annotations

import textwrap

from compiler.ir import parse_module, print_module
from compiler.ir.verifier import verify_module
from compiler.passes.instrumentation import TraceInstrumentation
from compiler.passes.manager import PassManager
from compiler.trace import CompileTrace
from tests.cpu.filecheck import filecheck


def run_pipeline(ir: str, pipeline, stage: str = "ttir") -> tuple[str, CompileTrace]:
    """Parse `ir`, run `pipeline` with verification after each pass, and return the printed
    result (checked to parse back and verify) and the trace."""
    module = parse_module(textwrap.dedent(ir))
    verify_module(module)
    trace = CompileTrace("test")
    module = PassManager(stage, pipeline, [TraceInstrumentation(trace)]).run(module)
    text = print_module(module)
    verify_module(parse_module(text))
    return text, trace


def check_pass(ir: str, pipeline, checks: str) -> CompileTrace:
    """Run `pipeline` on `ir` and FileCheck the output against `checks`."""
    text, trace = run_pipeline(ir, pipeline)
    filecheck(text, checks)
    return trace


def patterns_fired(trace: CompileTrace) -> dict:
    """All patterns reported by all passes of the trace, summed."""
    total: dict = {}
    for record in trace.passes:
        for name, count in record.patterns.items():
            total[name] = total.get(name, 0) + count
    return total


def kernel(body: str, args: str = "%p: !tt.ptr<f32>, %n: i32, %out: !tt.ptr<i32>") -> str:
    """Wrap ops in a one-function module (body lines need no indentation). `%out` is there
    to keep a scalar i32 alive: `tt.store %out, %x : !tt.ptr<i32>`."""
    lines = "\n".join("    " + line for line in textwrap.dedent(body).strip().splitlines())
    return f"module {{\n  tt.func public @k({args}) {{\n{lines}\n    tt.return\n  }}\n}}\n"
