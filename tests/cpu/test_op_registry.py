"""Every op registered in the default context round-trips through printer and parser, has
interpreter semantics and has a lowering, or is listed here with the reason it has none.

Instances come from the IR corpus (sample kernels, the CPU tests' kernels, Triton's reference
IR); ops the corpus lacks get a minimal instance, found by trying small candidate bodies in
the op's printed form until one parses and verifies."""
from __future__ import annotations

import pytest

from compiler.ir import default_context, parse_module, print_module, verify_module
from compiler.ir.parser import ParseError
from compiler.ir.verifier_errors import VerificationError
from tests.ir_corpus import verified_corpus

# Ops the interpreter runs structurally (the op that owns the region consumes them) or that
# need no semantics of their own.
NOT_INTERPRETED = {
    "tt.func": "a function is entered by the interpreter's call machinery, not dispatched",
    "tt.return": "ends a function: the call machinery reads its operands",
    "scf.yield": "ends an scf region: scf.for/if/while read its operands",
    "scf.condition": "ends scf.while's before region: scf.while reads it",
    "tt.reduce.return": "ends a reduce combiner: tt.reduce reads it",
    "tt.scan.return": "ends a scan combiner: tt.scan reads it",
}
NOT_LOWERED = {
    "tt.func": "becomes the LLVM function itself (codegen/lowering.py), not an op lowering",
    "tt.call": "calls are inlined by the ttir pipeline before the lowering",
    "scf.yield": "lowered by the scf.for/if/while lowerings that own the region",
    "scf.condition": "lowered by the scf.while lowering",
    "tt.reduce.return": "the reduce lowering inlines its combiner",
    "tt.scan.return": "the scan lowering inlines its combiner",
    "tt.descriptor_load": "the pipeliner and tma-lowering turn it into TMA copies first",
    "tt.descriptor_store": "tma-lowering turns it into a TMA store first",
    "tt.make_tensor_descriptor": "tma-lowering turns it into a tensor map in global scratch",
}

_BLOCKED = ("#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], "
            "warpsPerCTA = [4], order = [0]}>\n"
            "#shared = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>\n"
            "#smem = #ttg.shared_memory\n")
_TTGIR = ('module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32} {\n'
          "  tt.func public @k(%p: !tt.ptr<f32>, %i: i32, %f: f32, %h: i16, %g: f16, "
          "%t: tensor<128xf32, #blocked>, %ti: tensor<128xi32, #blocked>, "
          "%tp: tensor<128x!tt.ptr<f32>, #blocked>, %m: !ttg.memdesc<128xf32, #shared, #smem, "
          "mutable>, %mm: !ttg.memdesc<2x128xf32, #shared, #smem, mutable>) {\n"
          "    BODY\n    tt.return\n  }\n}\n")
_TTIR = ("module {\n  tt.func public @k(%p: !tt.ptr<f32>, %i: i32, %f: f32, %h: i16, "
         "%g: f16, %t: tensor<4x8xf32>) {\n    BODY\n    tt.return\n  }\n}\n")

# Candidate bodies, tried in order with {op} replaced by the op's name.
_CANDIDATES = [
    "%r = {op} %f, %f : f32", "%r = {op} %i, %i : i32", "%r = {op} %f : f32",
    "%r = {op} %i : i32", "%r = {op} %f, %f, %f : f32",
    "%r = {op} %i : i32 to f32", "%r = {op} %f : f32 to i32", "%r = {op} %h : i16 to i32",
    "%r = {op} %i : i32 to i16", "%r = {op} %g : f16 to f32", "%r = {op} %f : f32 to f16",
    "%r = {op} %f : f32 to i32", "%r = {op} x : i32",
    "%r = {op} %t : tensor<4x8xf32> -> tensor<32xf32>",
    "%r = {op} %p : !tt.ptr<f32> -> i64", "%c = arith.constant 0 : i64\n    %r = {op} %c : "
    "i64 -> !tt.ptr<f32>", "%r = {op} %p : !tt.ptr<f32> -> !tt.ptr<i32>",
    "{op}", '{op} 3 "loop L12"', "%c = arith.cmpi slt, %i, %i : i32\n    {op} %c : i1", "{op} %t, %m : tensor<128xf32, #blocked> -> !ttg.memdesc<128xf32, #shared, #smem, "
    "mutable>", "{op} %m : !ttg.memdesc<128xf32, #shared, #smem, mutable>",
    "%r = {op} %mm[%i] : !ttg.memdesc<2x128xf32, #shared, #smem, mutable> -> "
    "!ttg.memdesc<128xf32, #shared, #smem, mutable>",
    "{op} %tp, %m : tensor<128x!tt.ptr<f32>, #blocked> -> !ttg.memdesc<128xf32, #shared, #smem, "
    "mutable>",
]


def _minimal_instance(name: str) -> str | None:
    """A small module holding `name` that parses and verifies, or None."""
    for body in _CANDIDATES:
        for frame in (_TTIR, _BLOCKED + _TTGIR):
            text = frame.replace("BODY", body.replace("{op}", name))
            try:
                verify_module(parse_module(text))
            except (ParseError, VerificationError):
                continue
            return text
    return None


def _instances() -> dict[str, str]:
    """For every registered op, the text of one module holding it."""
    found: dict[str, str] = {}
    for _, text in verified_corpus():
        for op in parse_module(text).walk():
            found.setdefault(op.name, text)
    for name in default_context().ops:
        if name not in found:
            text = _minimal_instance(name)
            if text is not None:
                found[name] = text
    return found


INSTANCES = _instances()
OPS = sorted(default_context().ops)


def _registered(table: dict, cls) -> bool:
    """Whether `table` (keyed by op name or by op class) holds `cls`."""
    return cls in table or cls.name in table


@pytest.mark.parametrize("name", OPS)
def test_op_round_trips_through_printer_and_parser(name):
    assert name in INSTANCES, f"{name}: no instance in the corpus and no minimal one found"
    text = print_module(parse_module(INSTANCES[name]))
    module = parse_module(text)
    verify_module(module)
    assert any(op.name == name for op in module.walk())
    assert print_module(module) == text


@pytest.mark.parametrize("name", OPS)
def test_op_declares_its_operand_result_and_region_counts(name):
    cls = default_context().lookup_op(name)
    assert None not in (cls.operand_count, cls.result_count, cls.region_count), \
        f"{name}: declare its counts with set_counts(...) in its dialect"


@pytest.mark.parametrize("name", OPS)
def test_op_has_interpreter_semantics_or_a_reason(name):
    pytest.importorskip("numpy")
    from compiler.runtime import interpreter  # noqa: F401  (registers the semantics)
    from compiler.runtime.interp.registry import SEMANTICS
    cls = default_context().lookup_op(name)
    assert _registered(SEMANTICS, cls) != (name in NOT_INTERPRETED), \
        f"{name}: semantics registered={_registered(SEMANTICS, cls)}, listed as not " \
        f"interpreted={name in NOT_INTERPRETED}"


@pytest.mark.parametrize("name", OPS)
def test_op_has_a_lowering_or_a_reason(name):
    pytest.importorskip("llvmlite")
    from compiler.codegen import registry
    registry.lowering_for(name)            # imports every lowering module
    cls = default_context().lookup_op(name)
    assert _registered(registry.LOWERINGS, cls) != (name in NOT_LOWERED), \
        f"{name}: lowering registered={_registered(registry.LOWERINGS, cls)}, listed as not " \
        f"lowered={name in NOT_LOWERED}"


def _code_strings_and_imports(path) -> list[tuple[int, str]]:
    """(line, text) of every string constant that is not a docstring, and every import."""
    import ast
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.ImportFrom):
            out.append((node.lineno, f"from {'.' * node.level}{node.module or ''}"))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
    return out


def test_ir_core_names_no_dialect():
    """compiler/ir/* imports no dialect module, and its code spells no dialect op, type or
    alias (docstrings may give examples)."""
    import re
    from pathlib import Path
    core = Path(__file__).resolve().parents[2] / "compiler" / "ir"
    pattern = re.compile(r"dialects|\b(tt|ttg|scf|arith|math|gpu|ub)\.[a-z_]+|!tt\.|!ttg\.|"
                         r"#smem|#ttg\.|\.\.dialects")
    offenders = [f"{p.name}:{line}: {text!r}" for p in sorted(core.glob("*.py"))
                 for line, text in _code_strings_and_imports(p) if pattern.search(text)]
    assert not offenders, "\n".join(offenders)
