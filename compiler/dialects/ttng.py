"""The `ttng` dialect (TritonNvidiaGPU): Hopper warp-group tensor-core ops.

`ttng.warp_group_dot` is a dot whose B operand (and usually A) is read by `wgmma.mma_async`
straight from a shared-memory buffer in a `#ttg.nvmma_shared` layout, with the accumulator in
a `#ttg.nvidia_mma` version 3 layout. When `isAsync` is set the result is only valid after a
`ttng.warp_group_dot_wait` that covers it: the wait passes its operands through, so every
later use of the accumulator (and the end of the buffers' reads) is ordered after the wait.
"""
from __future__ import annotations

from compiler.ir.accessors import attr, operand
from compiler.ir.parser import OpParts
from compiler.ir.syntax import Syntax
from compiler.ir.traits import LayoutAnchor, LayoutBarrier, MemoryRead, MemoryWrite
from compiler.dialects.ttg import MemDescType
from compiler.ir.types import TensorType
from compiler.ir.verifier_errors import VerificationError

from .common import define_op, dot_types_text, expect_operands, parse_dot_types, set_counts


class _WarpGroupDotSyntax(Syntax):
    """`ttng.warp_group_dot %a, %b, %c {attrs} : A * B -> R` (Triton's printed form)."""

    def print(self, p, op, indent):
        return (f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)}"
                + dot_types_text(p, op))

    def parse(self, ps, cls, num_results):
        operands = ps.operand_list()
        attrs = ps.attr_dict()
        return OpParts(operands, [parse_dot_types(ps)], attrs)


def _verify_warp_group_dot(op):
    expect_operands(op, 3)
    a, b, c = (v.type for v in op.operands)
    if not isinstance(b, MemDescType):
        raise VerificationError(op, f"operand B must be a shared !ttg.memdesc, got {b}")
    if not isinstance(a, (MemDescType, TensorType)):
        raise VerificationError(op, f"operand A must be a !ttg.memdesc or a tensor, got {a}")
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]:
        raise VerificationError(op, f"inner dimensions differ: {list(sa)} x {list(sb)}")
    if not isinstance(c, TensorType) or c.shape != (sa[0], sb[1]) or op.results[0].type != c:
        raise VerificationError(op, f"accumulator must be a {sa[0]}x{sb[1]} tensor of the "
                                    f"result type, got {c}")


WarpGroupDotOp = define_op(
    "WarpGroupDotOp", "ttng.warp_group_dot", _WarpGroupDotSyntax(),
    (MemoryRead, LayoutAnchor, LayoutBarrier), _verify_warp_group_dot,
    a=operand(0), b=operand(1), c=operand(2),
    input_precision=attr("inputPrecision", default=None),
    is_async=attr("isAsync", default=None),
    max_num_imprecise_acc=attr("maxNumImpreciseAcc", default=None),
    doc="`ttng.warp_group_dot`: D = A * B + C on Hopper tensor cores (wgmma.mma_async), B "
        "(and A unless it is a register tensor) read from shared memory.")


def _verify_wait(op):
    if not op.operands:
        raise VerificationError(op, "waits on at least one value")
    if [v.type for v in op.operands] != [r.type for r in op.results]:
        raise VerificationError(op, "results must have the operands' types")


class _WaitSyntax(Syntax):
    """`ttng.warp_group_dot_wait %acc[, %bufs...] {pendings = N : i32} : T[, ...]`: results
    have the operands' types."""

    def print(self, p, op, indent):
        return (f"{op.name} {p.values(op.operands)}{p.attr_dict(op.attributes)} : "
                f"{p.types(v.type for v in op.operands)}")

    def parse(self, ps, cls, num_results):
        operands = ps.operand_list()
        attrs = ps.attr_dict()
        ps.expect(":")
        return OpParts(operands, list(ps.type_list()), attrs)


WarpGroupDotWaitOp = define_op(
    "WarpGroupDotWaitOp", "ttng.warp_group_dot_wait", _WaitSyntax(), (MemoryRead, MemoryWrite),
    _verify_wait, pendings=attr("pendings"),
    doc="`ttng.warp_group_dot_wait {pendings}`: wait until at most `pendings` groups of "
        "asynchronous warp-group dots are in flight (wgmma.wait_group); its results are its "
        "operands, now complete.")


set_counts([WarpGroupDotOp], operands=3, results=1)
set_counts([WarpGroupDotWaitOp], operands=(1, None), results=(1, None))
