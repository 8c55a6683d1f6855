"""Named accessors for op classes: `ptr = operand(0)`, `mask = optional_operand(1)`,
`axis = attr("axis")`, declared once on the class (as xDSL's op definitions name their fields),
so passes write `load.mask` instead of `op.operands[1] if len(op.operands) > 1 else None`."""
from __future__ import annotations

_MISSING = object()


class _Accessor:
    """A read-only descriptor; `describe()` says what it reads, for docs and the explorer."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, op, owner=None):
        if op is None:
            return self
        return self.read(op)

    def read(self, op):
        raise NotImplementedError


class operand(_Accessor):
    """Operand `index` (which must exist)."""

    def __init__(self, index: int):
        self.index = index

    def read(self, op):
        return op.operands[self.index]


class optional_operand(_Accessor):
    """Operand `index`, or None when the op has fewer operands (tt.load's mask and other)."""

    def __init__(self, index: int):
        self.index = index

    def read(self, op):
        return op.operands[self.index] if len(op.operands) > self.index else None


class variadic_operands(_Accessor):
    """Operands `start` to the end, as a list (scf.for's initial values)."""

    def __init__(self, start: int = 0):
        self.start = start

    def read(self, op):
        return op.operands[self.start:]


class result(_Accessor):
    """Result `index`."""

    def __init__(self, index: int = 0):
        self.index = index

    def read(self, op):
        return op.results[self.index]


class attr(_Accessor):
    """The Python value of attribute `key` (its `.value`, or the field named by `field`), or
    `default` when the op lacks it (without a default, a missing attribute is a KeyError)."""

    def __init__(self, key: str, field: str = "value", default=_MISSING):
        self.key, self.field, self.default = key, field, default

    def read(self, op):
        found = op.attributes.get(self.key)
        if found is None:
            if self.default is _MISSING:
                raise KeyError(f"{op.name} has no attribute '{self.key}'")
            return self.default
        return getattr(found, self.field)


class flag(_Accessor):
    """Whether the op carries the unit attribute `key` (`efficient_layout`, `tt.flatten`)."""

    def __init__(self, key: str):
        self.key = key

    def read(self, op):
        return self.key in op.attributes


class region(_Accessor):
    """Region `index`."""

    def __init__(self, index: int = 0):
        self.index = index

    def read(self, op):
        return op.regions[self.index]


class block(_Accessor):
    """The entry block of region `index` (a loop's or a function's body)."""

    def __init__(self, index: int = 0):
        self.index = index

    def read(self, op):
        return op.regions[self.index].blocks[0]


def is_accessor(value) -> bool:
    """Whether `value` is one of the accessors above (define_op puts those on the class)."""
    return isinstance(value, _Accessor)
