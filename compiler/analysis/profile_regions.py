"""The in-kernel profile regions of a module: which ops each `tt.profile_enter`/`_exit` pair
covers, at which ttgir lines and Python lines.

A region is an enter op and the exit op with the same region id later in the same block; it
covers every op between them (and everything nested in those). The table is computed from the
IR itself, so it holds for any module the `instrument-regions` pass (or the front end's
`tl.profile` scopes) produced, and for a ttgir text parsed back.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler.dialects.tt import PointerType, ProfileEnterOp, ProfileExitOp, ProfileRecordOp
from compiler.ir.core import BlockArgument, Module, Operation
from compiler.ir.traits import ConstantLike, LoopLike
from compiler.ir.types import FloatType, IntegerType, TensorType

#: Module attribute the `instrument-regions` pass sets: records kept per warp (its presence
#: turns the lowering of the record ops on).
SLOTS_ATTR = "tt.profile.slots"

# The profile buffer's layout, shared by the lowering (compiler.codegen.lower_profile) and the
# host-side decoder (compiler.profiler.regions).
#: The kernel global holding the profile buffer's device address.
PROFILE_GLOBAL = "__tile_profile_buffer"
#: u64 words before a warp's records (word 0: its record count).
HEADER_WORDS = 4
#: u64 words per record: tag, program, globaltimer, clock64.
RECORD_WORDS = 4
#: Bit positions of the kind and the warp in a record's tag word.
KIND_SHIFT, WARP_SHIFT = 32, 40


def block_words(slots: int) -> int:
    """u64 words one warp's block takes."""
    return HEADER_WORDS + RECORD_WORDS * slots


@dataclass
class Region:
    """One region: id, name, kind (loop, dot, memory, scope, kernel), its enter and exit
    ttgir lines, the ttgir lines of the ops it covers and their Python lines ("file:line")."""

    id: int
    name: str
    kind: str
    enter_line: int = 0
    exit_line: int = 0
    ttgir_lines: list = field(default_factory=list)
    python_lines: list = field(default_factory=list)

    def to_dict(self) -> dict:
        """A plain dict (what the compile trace stores)."""
        return {"id": self.id, "name": self.name, "kind": self.kind,
                "enter_line": self.enter_line, "exit_line": self.exit_line,
                "ttgir_lines": list(self.ttgir_lines), "python_lines": list(self.python_lines)}


def record_ops(module: Module) -> list:
    """Every region-record op of the module, in walk order."""
    return [op for op in module.walk() if isinstance(op, ProfileRecordOp)]


def _pair(enter: Operation) -> tuple:
    """(the ops between `enter` and its exit in the same block, nested ops included; the exit)."""
    block = enter.parent
    covered = []
    for op in block.ops[block.ops.index(enter) + 1:]:
        if isinstance(op, ProfileExitOp) and op.region == enter.region:
            return covered, op
        covered.extend(op.walk())
    raise ValueError(f"tt.profile_enter {enter.region} ({enter.label!r}) has no "
                     f"tt.profile_exit {enter.region} later in its block")


def paired_exit(enter: Operation) -> Operation:
    """The `tt.profile_exit` that closes `enter`: the first later one of its block with the
    same region id (ValueError when there is none)."""
    return _pair(enter)[1]


def _tieable(value) -> bool:
    """Whether a value is computed into registers the lowering can tie to a clock read:
    scalars and tensors of them, not shared-memory descriptors (their work is ordered by
    its memory effects) nor constants (nothing computes them)."""
    ty = value.type
    element = ty.element if isinstance(ty, TensorType) else ty
    if not isinstance(element, (IntegerType, FloatType, PointerType)):
        return False
    owner = value.owner_op
    return owner is None or not owner.has_trait(ConstantLike)


def _in_a_loop_below(op: Operation, block) -> bool:
    """Whether `op` sits inside a loop nested in `block` (not counting loops around it)."""
    while op.parent is not block:
        op = op.parent_op
        if op is None:
            return False
        if op.has_trait(LoopLike):
            return True
    return False


def region_flow(enter: Operation) -> tuple:
    """(inputs, outputs) of the region `enter` opens: the values its clock reads must be
    ordered against, so that code generation cannot move the region's work out of it.

    inputs: values the covered ops use that the region's own block computes before `enter`
    (or receives as block arguments: a loop body's induction variable and iteration
    arguments); work depending on them cannot start before the enter's clock read. Left
    out: values from enclosing blocks (work on those alone is invariant here and may rightly
    be hoisted) and values only ops inside a covered loop use (they are that loop's
    invariants; a tie would hide facts LLVM hoists per-iteration address arithmetic with).
    outputs: values the covered ops define that ops after the exit use (a loop body's
    `scf.yield` operands); they must be computed before the exit's clock read.
    Record ops are not work: their own operands neither count as uses nor as definitions."""
    covered, exit_op = _pair(enter)
    work = [op for op in covered if not isinstance(op, ProfileRecordOp)]
    block = enter.parent
    before = set()
    for op in block.ops[:block.ops.index(enter)]:
        before.update(id(r) for r in op.results)
    inside = {id(r) for op in work for r in op.results}
    inside.update(id(a) for op in work for region in op.regions for b in region.blocks
                  for a in b.args)
    inputs, seen = [], set()
    for op in work:
        if _in_a_loop_below(op, block):
            continue
        for value in op.operands:
            if id(value) in seen or id(value) in inside or not _tieable(value):
                continue
            local = id(value) in before or (isinstance(value, BlockArgument)
                                            and value.block is block)
            if local:
                seen.add(id(value))
                inputs.append(value)
    covered_ids = {id(op) for op in covered}
    outputs = []
    for op in block.ops[block.ops.index(enter) + 1:block.ops.index(exit_op)]:
        for result in ([] if isinstance(op, ProfileRecordOp) else op.results):
            used_after = any(id(user) not in covered_ids
                             and not isinstance(user, ProfileRecordOp)
                             for user, _ in result.uses)
            if used_after and _tieable(result):
                outputs.append(result)
    return inputs, outputs


def region_table(module: Module, lines: dict | None = None) -> list:
    """The module's regions by id (see the module doc). `lines`: {op: ttgir line} of the
    module's printed text (`print_module_with_lines`); computed when not given."""
    if lines is None:
        from compiler.ir.printer import print_module_with_lines
        lines = print_module_with_lines(module)[1]
    regions = {}
    for enter in (op for op in record_ops(module) if isinstance(op, ProfileEnterOp)):
        covered, exit_op = _pair(enter)
        region = regions.get(enter.region)
        if region is None:
            kind = enter.attributes.get("kind")
            region = regions[enter.region] = Region(
                enter.region, enter.label, kind.value if kind is not None else "scope",
                lines.get(enter, 0))
        region.exit_line = lines.get(exit_op, 0)
        for op in covered:
            if isinstance(op, ProfileRecordOp):
                continue
            line = lines.get(op)
            if line is not None and line not in region.ttgir_lines:
                region.ttgir_lines.append(line)
            where = op.loc.file_line_col()
            text = f"{where.file}:{where.line}" if where is not None else None
            if text is not None and text not in region.python_lines:
                region.python_lines.append(text)
    return [regions[k] for k in sorted(regions)]


def region_table_of_text(ttgir: str) -> list:
    """The region table of a ttgir text (parsed back; its lines are the text's own)."""
    from compiler.ir.parser import parse_module
    from compiler.ir.printer import print_module_with_lines

    module = parse_module(ttgir)
    text, lines = print_module_with_lines(module)
    if text.strip() != ttgir.strip():
        raise ValueError("the ttgir text does not print back as itself; its line numbers "
                         "cannot be matched")
    return region_table(module, lines)
