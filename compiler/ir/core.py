"""The IR's structure: values, operations, blocks, regions and modules (MLIR's shape, in Python).

An `Operation` has operands (values), results (values it defines), attributes (a dict of
`Attribute`), regions (lists of blocks) and a `Location`. Dialect ops subclass `Operation` and
declare their name, printed syntax and verifier in one class (see `compiler.dialects`) and are
registered into a dialect of a `compiler.ir.context.Context`, from which the parser rebuilds them.
"""
from __future__ import annotations

from typing import Callable, ClassVar, Iterator

from .attributes import Attribute
from .context import default_context
from .location import UNKNOWN, Location
from .traits import FunctionLike, Trait, trait_closure
from .types import Type


class Value:
    """An SSA value: the result of an op or an argument of a block."""

    __slots__ = ("type", "uses", "name_hint")

    def __init__(self, type_: Type, name_hint: str | None = None):
        self.type = type_
        self.uses: list[tuple[Operation, int]] = []
        self.name_hint = name_hint

    @property
    def owner_op(self) -> "Operation | None":
        """The op that defines this value (None for block arguments)."""
        return None

    @property
    def parent_block(self) -> "Block | None":
        """The block in which this value is defined."""
        return None

    def users(self) -> list["Operation"]:
        """Ops that use this value, each once, in no particular order."""
        return list(dict.fromkeys(op for op, _ in self.uses))

    def has_uses(self) -> bool:
        return bool(self.uses)

    def replace_all_uses_with(self, new: "Value") -> None:
        """Make every user of this value use `new` instead."""
        if new is self:
            return
        for op, index in list(self.uses):
            op.set_operand(index, new)


class OpResult(Value):
    """The `index`-th result of `op`."""

    __slots__ = ("op", "index")

    def __init__(self, type_: Type, op: "Operation", index: int):
        super().__init__(type_)
        self.op = op
        self.index = index

    @property
    def owner_op(self) -> "Operation":
        return self.op

    @property
    def parent_block(self) -> "Block | None":
        return self.op.parent

    def __repr__(self) -> str:
        return f"<result {self.index} of {self.op.name}: {self.type}>"


class BlockArgument(Value):
    """The `index`-th argument of `block`."""

    __slots__ = ("block", "index", "loc", "attributes")

    def __init__(self, type_: Type, block: "Block", index: int, loc: Location = UNKNOWN):
        super().__init__(type_)
        self.block = block
        self.index = index
        self.loc = loc
        self.attributes: dict[str, Attribute] = {}

    @property
    def parent_block(self) -> "Block":
        return self.block

    def __repr__(self) -> str:
        return f"<block arg {self.index}: {self.type}>"


OP_REGISTRY: dict[str, type["Operation"]] = default_context().ops
"""Every op class of the default context by name (a live view kept for callers of old)."""


def register_op(cls: type["Operation"]) -> type["Operation"]:
    """Class decorator: register an op class into the default context, in the dialect its
    name's prefix names (`arith.addi` -> arith)."""
    return default_context().register_op(cls)


class Operation:
    """A generic operation; dialects subclass it to give it a name, syntax and verifier.

    Subclasses set:
      name: the op's full name, e.g. "arith.addi".
      syntax: an object from `compiler.ir.syntax` that prints and parses the op's custom form.
      traits: a tuple of trait classes from `compiler.ir.traits` (Pure, Terminator, ...).
    and may override `verify_op` to check their own invariants and `canonicalization_patterns`
    to offer rewrites to the canonicalize pass. `operand_count`, `result_count` and
    `region_count` (an int, or a (min, max) pair with max None for no bound) and
    `attribute_kinds` ({name: Attribute class or tuple of them}: attributes the op must carry)
    are checked by the verifier before `verify_op` runs.
    """

    name: ClassVar[str] = "builtin.unregistered"
    syntax: ClassVar[object] = None
    traits: ClassVar[tuple] = ()
    _trait_set: ClassVar[frozenset] = frozenset()
    operand_count: ClassVar[object] = None
    result_count: ClassVar[object] = None
    region_count: ClassVar[object] = None
    attribute_kinds: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._trait_set = trait_closure(cls.traits)

    def __init__(
        self,
        operands: list[Value] | tuple = (),
        result_types: list[Type] | tuple = (),
        attributes: dict[str, Attribute] | None = None,
        regions: list["Region"] | None = None,
        loc: Location = UNKNOWN,
        num_regions: int = 0,
    ):
        self.operands: list[Value] = []
        for value in operands:
            self._append_operand(value)
        self.results = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.attributes: dict[str, Attribute] = dict(attributes or {})
        self.regions: list[Region] = []
        for region in regions if regions is not None else [Region() for _ in range(num_regions)]:
            self.add_region(region)
        self.loc = loc
        self.parent: Block | None = None

    # ---- structure -------------------------------------------------------------------------
    def _append_operand(self, value: Value) -> None:
        if not isinstance(value, Value):
            raise TypeError(f"{self.name}: operand must be an IR Value, got {value!r}")
        value.uses.append((self, len(self.operands)))
        self.operands.append(value)

    def set_operand(self, index: int, value: Value) -> None:
        """Replace operand `index` with `value`, keeping use lists right."""
        old = self.operands[index]
        old.uses.remove((self, index))
        self.operands[index] = value
        value.uses.append((self, index))

    def set_operands(self, values: list[Value]) -> None:
        """Replace the whole operand list."""
        self.drop_operands()
        for v in values:
            self._append_operand(v)

    def drop_operands(self) -> None:
        """Remove this op from its operands' use lists (before erasing it)."""
        for i, v in enumerate(self.operands):
            try:
                v.uses.remove((self, i))
            except ValueError:
                pass
        self.operands = []

    def add_region(self, region: "Region") -> "Region":
        region.parent_op = self
        self.regions.append(region)
        return region

    @property
    def result(self) -> OpResult:
        """The single result of a one-result op."""
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not 1")
        return self.results[0]

    @property
    def parent_op(self) -> "Operation | None":
        """The op whose region holds this op."""
        if self.parent is None or self.parent.parent is None:
            return None
        return self.parent.parent.parent_op

    def has_trait(self, trait: type[Trait]) -> bool:
        """Whether this op's class declares `trait` (or a trait that refines it)."""
        if trait in self._trait_set:
            return True
        if trait not in _CHECKED_TRAITS:
            _check_trait(trait)
        return False

    @classmethod
    def class_has_trait(cls, trait: type[Trait]) -> bool:
        """Whether ops of this class have `trait` (asked of the class, before any op exists)."""
        if trait in cls._trait_set:
            return True
        if trait not in _CHECKED_TRAITS:
            _check_trait(trait)
        return False

    @classmethod
    def canonicalization_patterns(cls) -> tuple:
        """Rewrites `(op) -> bool` that canonicalize tries on ops of this class (none here)."""
        return ()

    def is_ancestor_of(self, other: "Operation") -> bool:
        op = other
        while op is not None:
            if op is self:
                return True
            op = op.parent_op
        return False

    def walk(self, order: str = "pre") -> Iterator["Operation"]:
        """Every op nested in this one (this one included), pre- or post-order. Each block's
        ops are listed when the walk reaches the block, so ops erased or added there by the
        caller meanwhile do not disturb it."""
        return _walk(self, _nested_ops(self), order)

    def erase(self) -> None:
        """Remove this op from its block and drop its operand uses; results must be unused."""
        for r in self.results:
            if r.uses:
                users = ", ".join(sorted({u.name for u, _ in r.uses}))
                raise ValueError(f"cannot erase {self.name}: its result is still used by {users}")
        for nested in list(self.walk("post")):
            nested.drop_operands()
        if self.parent is not None:
            self.parent.ops.remove(self)
            self.parent = None

    def replace_with(self, values: list[Value]) -> None:
        """Replace all uses of this op's results with `values`, then erase it."""
        for old, new in zip(self.results, values):
            old.replace_all_uses_with(new)
        self.erase()

    def move_before(self, other: "Operation") -> None:
        """Move this op to just before `other` (possibly in another block)."""
        if self.parent is not None:
            self.parent.ops.remove(self)
        block = other.parent
        block.ops.insert(block.ops.index(other), self)
        self.parent = block

    def clone(self, mapping: dict | None = None) -> "Operation":
        """A deep copy of this op (regions included); `mapping` maps old values to new ones."""
        mapping = {} if mapping is None else mapping
        new = self.__class__.__new__(self.__class__)
        Operation.__init__(
            new,
            [mapping.get(v, v) for v in self.operands],
            [r.type for r in self.results],
            dict(self.attributes),
            [],
            self.loc,
        )
        for old_r, new_r in zip(self.results, new.results):
            new_r.name_hint = old_r.name_hint
            mapping[old_r] = new_r
        for region in self.regions:
            new.add_region(region.clone(mapping))
        return new

    # ---- checks ------------------------------------------------------------------------------
    def verify_op(self) -> None:
        """Check this op's own invariants; raise `VerificationError` on a violation."""

    def __repr__(self) -> str:
        return f"<{self.name} at {self.loc}>"


def _nested_ops(op: Operation) -> Iterator[Operation]:
    """The ops directly inside `op`'s regions, each block's listed when it is reached."""
    for region in op.regions:
        for block in region.blocks:
            yield from list(block.ops)


def _walk(root: "Operation | None", children: Iterator[Operation], order: str) \
        -> Iterator[Operation]:
    """`root` (when given) and every op below it, from `children` (its direct ops) down, pre-
    or post-order: the order of the recursive definition, with one stack instead of a
    generator per nesting level (so an op costs the same at any depth)."""
    post = order == "post"
    if root is not None and not post:
        yield root
    stack = [(root, children)]
    while stack:
        op = next(stack[-1][1], None)
        if op is None:
            owner = stack.pop()[0]
            if post and owner is not None:
                yield owner
            continue
        if not post:
            yield op
        if op.regions:
            stack.append((op, _nested_ops(op)))
        elif post:
            yield op


def _check_trait(trait) -> None:
    """Refuse a trait given as anything but a Trait class (a name string would always say no);
    a class that passed is remembered in `_CHECKED_TRAITS`."""
    if not (isinstance(trait, type) and issubclass(trait, Trait)):
        raise TypeError(f"has_trait takes a trait class from compiler.ir.traits, got {trait!r}")
    _CHECKED_TRAITS.add(trait)


_CHECKED_TRAITS: set = set()


class Block:
    """A list of ops with typed arguments; the last op of a block in a region is its terminator."""

    def __init__(self, arg_types: list[Type] | tuple = ()):
        self.args: list[BlockArgument] = []
        self.ops: list[Operation] = []
        self.parent: Region | None = None
        for t in arg_types:
            self.add_argument(t)

    def add_argument(self, type_: Type, loc: Location = UNKNOWN) -> BlockArgument:
        arg = BlockArgument(type_, self, len(self.args), loc)
        self.args.append(arg)
        return arg

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        return self.insert(self.ops.index(anchor), op)

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops else None

    @property
    def parent_op(self) -> Operation | None:
        return self.parent.parent_op if self.parent else None


class Region:
    """A list of blocks owned by an op (scf.for's body, tt.func's body, tt.reduce's combiner)."""

    def __init__(self, blocks: list[Block] | None = None):
        self.blocks: list[Block] = []
        self.parent_op: Operation | None = None
        for b in blocks or []:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The entry (usually only) block."""
        return self.blocks[0]

    def clone(self, mapping: dict) -> "Region":
        new = Region()
        for block in self.blocks:
            nb = Block()
            for arg in block.args:
                na = nb.add_argument(arg.type, arg.loc)
                na.attributes = dict(arg.attributes)
                na.name_hint = arg.name_hint
                mapping[arg] = na
            new.add_block(nb)
        for block, nb in zip(self.blocks, new.blocks):
            for op in block.ops:
                nb.append(op.clone(mapping))
        return new


class Module:
    """The top level: a list of functions and module attributes (`ttg.num-warps`, ...)."""

    def __init__(self, attributes: dict[str, Attribute] | None = None, loc: Location = UNKNOWN):
        self.body = Block()
        self.attributes: dict[str, Attribute] = dict(attributes or {})
        self.loc = loc

    @property
    def ops(self) -> list[Operation]:
        return self.body.ops

    def append(self, op: Operation) -> Operation:
        return self.body.append(op)

    def walk(self, order: str = "pre") -> Iterator[Operation]:
        """Every op of the module (functions and all they hold), pre- or post-order."""
        return _walk(None, iter(list(self.body.ops)), order)

    def functions(self) -> list[Operation]:
        return [op for op in self.body.ops if op.has_trait(FunctionLike)]

    def lookup(self, symbol: str) -> Operation | None:
        for op in self.body.ops:
            sym = op.attributes.get("sym_name")
            if sym is not None and sym.value == symbol:
                return op
        return None

    def clone(self) -> "Module":
        new = Module(dict(self.attributes), self.loc)
        mapping: dict = {}
        for op in self.body.ops:
            new.append(op.clone(mapping))
        return new

    def __str__(self) -> str:
        from .printer import print_module
        return print_module(self)


def op_count_by_name(module: Module) -> dict[str, int]:
    """How many ops of each name the module holds (functions included)."""
    counts: dict[str, int] = {}
    for op in module.walk():
        counts[op.name] = counts.get(op.name, 0) + 1
    return counts


Rewriter = Callable[[Operation], bool]
