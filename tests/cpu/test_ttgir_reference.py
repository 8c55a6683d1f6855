"""The ttgir pipeline on Triton's own ttir reproduces Triton 3.6's layouts (reference .ttgir)."""
from __future__ import annotations

from collections import Counter

import pytest

import compiler.dialects  # noqa: F401
from compiler.dialects.ttg import (BlockedEncoding, DotOperandEncoding, NvidiaMmaEncoding,
                                   NVMMASharedEncoding)
from compiler.dialects.ttng import WarpGroupDotOp
from compiler.ir.parser import parse_module
from compiler.ir.printer import Printer
from compiler.dialects.ttg import MemDescType
from compiler.ir.types import TensorType
from compiler.passes.manager import DEFAULT_PIPELINES
from tests.cpu.pass_helpers import patterns_fired, run_pipeline

NUM_WARPS = {"add": 4, "softmax": 16, "layernorm": 8, "matmul": 8}


def ttgir_pipeline(num_warps: int) -> str:
    return DEFAULT_PIPELINES["ttgir"].replace(
        "convert-triton-to-tritongpu", f"convert-triton-to-tritongpu{{num-warps={num_warps}}}")


def compile_reference(reference_dir, name: str):
    text, trace = run_pipeline((reference_dir / f"{name}.ttir").read_text(),
                               ttgir_pipeline(NUM_WARPS[name]), stage="ttgir")
    return parse_module(text), text, trace


def tensor_encodings(module) -> set:
    found = set()
    for op in module.walk():
        for v in list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]:
            if isinstance(v.type, TensorType):
                found.add(v.type.encoding)
    return found


def op_signatures(module) -> Counter:
    """(op name, result types) of every op, layouts included, as a multiset."""
    p = Printer()
    return Counter((op.name, tuple(p.type(r.type) for r in op.results))
                   for op in module.walk() if op.name != "tt.func")


@pytest.mark.parametrize("name, size_per_thread", [("add", (4,)), ("softmax", (4,)),
                                                   ("layernorm", (8,))])
def test_same_layouts_as_triton_and_no_conversions(reference_dir, name, size_per_thread):
    ours, text, _ = compile_reference(reference_dir, name)
    ref = parse_module((reference_dir / f"{name}.ttgir").read_text())
    assert "ttg.convert_layout" not in text
    assert tensor_encodings(ours) == tensor_encodings(ref)
    (layout,) = tensor_encodings(ours)
    assert layout.size_per_thread == size_per_thread
    assert op_signatures(ours) == op_signatures(ref)
    for key in ("ttg.num-ctas", "ttg.num-warps", "ttg.target", "ttg.threads-per-warp"):
        assert ours.attributes[key] == ref.attributes[key]


def test_softmax_reductions_share_triton_scratch(reference_dir):
    ours, _, trace = compile_reference(reference_dir, "softmax")
    # Triton 3.6 (per-pass dump): ttg.shared = 64, both reductions at offset 0
    assert ours.attributes["ttg.shared"].value == 64
    reduces = [op for op in ours.walk() if op.name == "tt.reduce"]
    assert [op.attributes["allocation.offset"].value for op in reduces] == [0, 0]
    fired = patterns_fired(trace)
    assert fired["coalesce tt.load"] == 1 and fired["coalesce tt.store"] == 1


def test_matmul_gets_coalesced_loads_and_dot_operands(reference_dir):
    # The load layouts must be Triton's (#blocked / #blocked1 for num_warps 8). The dot's
    # accumulator is blocked for the FMA dot or #ttg.nvidia_mma once accelerate-matmul picks
    # tensor cores (its versions and shapes are checked by that pass's tests).
    # (the reference uses #ttg.nvmma_shared, which we do not parse: read its blocked aliases)
    ours, text, _ = compile_reference(reference_dir, "matmul")
    ref_blocked = {line.split(" = ", 1)[1].strip()
                   for line in (reference_dir / "matmul.ttgir").read_text().splitlines()
                   if line.startswith("#blocked")}
    # the K loop's two loads (cp.async copies once `pipeline` ran, as in Triton's reference)
    loads = [op for op in ours.walk()
             if op.name in ("tt.load", "ttg.async_copy_global_to_local")
             and op.parent.parent_op.name == "scf.for"]
    assert len(loads) == 2
    for load in loads:
        assert str(load.operands[0].type.encoding) in ref_blocked
    # sm_90: a warp-group dot, B (and A) read from NVMMA-swizzled shared buffers, an mma v3
    # accumulator: the same op counts as Triton's own ttgir for this kernel
    dot = next(op for op in ours.walk() if isinstance(op, WarpGroupDotOp))
    a, b, acc = (v.type for v in dot.operands)
    assert isinstance(acc.encoding, NvidiaMmaEncoding) and acc.encoding.version_major == 3
    assert all(isinstance(t, MemDescType) and isinstance(t.encoding, NVMMASharedEncoding)
               for t in (a, b))
    reference = (reference_dir / "matmul.ttgir").read_text()
    for op_name in ("ttg.local_alloc", "ttg.local_load", "ttg.convert_layout",
                    "ttng.warp_group_dot ", "ttng.warp_group_dot_wait"):
        assert text.count(op_name) == reference.count(op_name), op_name
    loop = next(op for op in ours.walk() if op.name == "scf.for")
    assert "ttg.convert_layout" not in str(
        [op.name for op in loop.walk() if op is not loop])
    assert ours.attributes["ttg.shared"].value >= 128 * 64 * 2 + 64 * 256 * 2
