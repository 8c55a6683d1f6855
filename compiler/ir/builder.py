"""The builder: creates ops at an insertion point with a current location (MLIR's OpBuilder)."""
from __future__ import annotations

from contextlib import contextmanager

from .core import Block, Operation, Region
from .location import UNKNOWN, Location


class Builder:
    """Inserts new ops into `block` before index `index` (the end when None)."""

    def __init__(self, block: Block | None = None, index: int | None = None):
        self.block = block
        self.index = index
        self.loc: Location = UNKNOWN

    def set_insertion_point_to_end(self, block: Block) -> None:
        self.block, self.index = block, None

    def set_insertion_point_before(self, op: Operation) -> None:
        self.block, self.index = op.parent, op.parent.ops.index(op)

    def set_insertion_point_after(self, op: Operation) -> None:
        self.block, self.index = op.parent, op.parent.ops.index(op) + 1

    def insert(self, op: Operation) -> Operation:
        if self.block is None:
            raise RuntimeError("builder has no insertion point")
        if self.index is None:
            self.block.append(op)
        else:
            self.block.insert(self.index, op)
            self.index += 1
        return op

    def create(self, cls: type[Operation], operands=(), result_types=(), attributes=None,
               regions=None, loc: Location | None = None, num_regions: int = 0) -> Operation:
        """Make an op of class `cls` at the insertion point, with the builder's location."""
        op = cls(list(operands), list(result_types), attributes, regions,
                 self.loc if loc is None else loc, num_regions=num_regions)
        return self.insert(op)

    @contextmanager
    def at_end_of(self, block: Block):
        """Temporarily build at the end of `block`."""
        saved = (self.block, self.index)
        self.set_insertion_point_to_end(block)
        try:
            yield self
        finally:
            self.block, self.index = saved

    @contextmanager
    def location(self, loc: Location):
        """Temporarily give new ops location `loc`."""
        saved = self.loc
        self.loc = loc
        try:
            yield self
        finally:
            self.loc = saved


def new_region_with_block(arg_types=()) -> Region:
    """A region holding one empty block with the given argument types."""
    return Region([Block(list(arg_types))])
