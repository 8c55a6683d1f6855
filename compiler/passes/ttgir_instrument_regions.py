"""instrument-regions: timestamp records around chosen regions of a kernel (in-kernel profiling)."""
from __future__ import annotations

from compiler.analysis.profile_regions import SLOTS_ATTR, paired_exit, record_ops, region_flow
from compiler.dialects.scf import ForOp
from compiler.dialects.tt import DotOp, ProfileEnterOp, ProfileExitOp, ProfileRecordOp
from compiler.ir.attributes import IntegerAttr, StringAttr
from compiler.ir.core import Block, Module, Operation
from compiler.ir.traits import MemoryRead, MemoryWrite, ReturnLike
from compiler.ir.types import IntegerType
from compiler.ir.verifier_errors import VerificationError

from .base import Option, Pass, PassContext, register_pass
from .requirements import TTGIR

#: Values of the `loops` option: time each iteration's body, each whole loop, or no loop.
LOOP_MODES = ("body", "whole", "none")


def _line_of(op: Operation) -> str:
    where = op.loc.file_line_col()
    return f"L{where.line}" if where is not None else "L?"


def _is_memory(op: Operation) -> bool:
    return (not op.regions and not isinstance(op, ProfileRecordOp)
            and (op.has_trait(MemoryRead) or op.has_trait(MemoryWrite)))


def memory_groups(block: Block) -> list:
    """The runs of consecutive memory ops (loads, stores, atomics, shared-memory accesses)
    of `block`, each as a list of ops."""
    groups, run = [], []
    for op in block.ops:
        if _is_memory(op):
            run.append(op)
            continue
        if run:
            groups.append(run)
        run = []
    if run:
        groups.append(run)
    return groups


class _Inserter:
    """Numbers the new regions (after the ids already in the module) and inserts their ops."""

    def __init__(self, module: Module):
        self.next_id = max((op.region for op in record_ops(module)), default=-1) + 1
        self.count = {}

    def around(self, block: Block, first: Operation, last: Operation, name: str,
               kind: str) -> None:
        """Enter right before `first`, exit right after `last` (both in `block`)."""
        attrs = {"region": IntegerAttr(self.next_id, IntegerType(32)), "name": StringAttr(name),
                 "kind": StringAttr(kind)}
        self.next_id += 1
        self.count[kind] = self.count.get(kind, 0) + 1
        block.insert(block.ops.index(first), ProfileEnterOp([], [], dict(attrs), None,
                                                             first.loc))
        block.insert(block.ops.index(last) + 1, ProfileExitOp([], [], dict(attrs), None,
                                                              last.loc))

    def block_body(self, block: Block, name: str, kind: str) -> None:
        """Enter at the block's start, exit before its terminator (a block of only a
        terminator gets an empty region)."""
        ops = [op for op in block.ops if op is not block.terminator]
        if not ops:
            return
        self.around(block, ops[0], ops[-1], name, kind)


def pin_regions(module: Module) -> None:
    """Give every region's records (the pass's and the user's `tl.profile` scopes) the values
    their clock reads are ordered against (`region_flow`): the enter its inputs, the exit
    its outputs (from every enter it closes). Without them LLVM is free to sink a loop body's
    arithmetic past the exit's clock read, and the body would time as empty."""
    outputs = {}
    for enter in (op for op in record_ops(module) if isinstance(op, ProfileEnterOp)):
        try:
            exit_op = paired_exit(enter)
        except ValueError:
            raise VerificationError(enter, f"region {enter.region} ({enter.label!r}) has no "
                                    f"tt.profile_exit {enter.region} later in its block; a "
                                    "scope must start and end in the same block") from None
        inputs, out = region_flow(enter)
        enter.set_operands(inputs)
        values = outputs.setdefault(id(exit_op), (exit_op, []))[1]
        values.extend(v for v in out if all(v is not w for w in values))
    for exit_op in (op for op in record_ops(module) if isinstance(op, ProfileExitOp)):
        exit_op.set_operands(outputs.get(id(exit_op), (None, []))[1])


@register_pass
class InstrumentRegions(Pass):
    """Puts `tt.profile_enter`/`tt.profile_exit` records around chosen regions: each scf.for
    body (or whole loop), each tt.dot, each group of consecutive loads/stores and the whole
    kernel, besides the user's `tl.profile` scopes already in the IR. On the GPU, lane 0 of
    each warp stores (region, kind, warp, program, %globaltimer, %clock64) into a buffer the
    profiler hands the kernel (`profile(mode="instrumentation")`), at most `slots` records per
    warp (more are counted, not stored); the host turns them into per-region cycles."""

    name = "instrument-regions"
    stage = "ttgir"
    requires = TTGIR          # in a pipeline; the interpreter's variant runs it on ttir directly
    options_spec = (
        Option("loops", str, "body", "time each loop's body per iteration (body), each whole "
                                     "loop (whole) or no loop (none)"),
        Option("dots", bool, False, "time each tt.dot"),
        Option("memory", bool, False, "time each group of consecutive loads/stores"),
        Option("kernel", bool, True, "time the whole kernel body"),
        Option("slots", int, 256, "records kept per warp; later ones are only counted"),
    )

    def run(self, module: Module, ctx: PassContext):
        loops = self.options["loops"]
        if loops not in LOOP_MODES:
            raise ValueError(f"instrument-regions: loops={loops!r}; allowed: "
                             f"{', '.join(LOOP_MODES)}")
        if self.options["slots"] < 1:
            raise ValueError("instrument-regions: slots must be at least 1")
        inserter = _Inserter(module)
        targets = list(module.walk())            # chosen before any op is inserted
        for op in targets:
            if isinstance(op, ForOp) and loops == "body":
                inserter.block_body(op.body, f"loop {_line_of(op)} body", "loop")
            elif isinstance(op, ForOp) and loops == "whole":
                inserter.around(op.parent, op, op, f"loop {_line_of(op)}", "loop")
            elif isinstance(op, DotOp) and self.options["dots"]:
                inserter.around(op.parent, op, op, f"dot {_line_of(op)}", "dot")
        if self.options["memory"]:
            blocks = {id(op.parent): op.parent for op in targets if op.parent is not None}
            for block in blocks.values():
                for group in memory_groups(block):
                    name = f"memory {_line_of(group[0])}"
                    if _line_of(group[-1]) != _line_of(group[0]):
                        name += f"-{_line_of(group[-1])[1:]}"
                    inserter.around(block, group[0], group[-1], name, "memory")
        if self.options["kernel"]:
            for func in module.functions():
                body = func.regions[0].blocks[0]
                if body.terminator is not None and body.terminator.has_trait(ReturnLike):
                    inserter.block_body(body, "kernel", "kernel")
        pin_regions(module)
        module.attributes[SLOTS_ATTR] = IntegerAttr(self.options["slots"], IntegerType(32))
        for kind, count in inserter.count.items():
            ctx.record_pattern(f"instrument-{kind}", count)
