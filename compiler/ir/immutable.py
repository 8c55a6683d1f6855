"""Immutable IR values (types, layout encodings, locations, attributes) hash once.

They are frozen dataclasses, so their generated `__hash__` hashes every field, recursively (a
tensor type hashes its shape, element type and encoding, the encoding its tuples), each time
it is asked. The printer, the verifier and the passes key dicts by them over and over; with
`hash_once` the hash is worked out on first use and kept on the object. Equality is untouched
(fields only), and the kept hash is not pickled (string hashes differ between processes).
"""
from __future__ import annotations


def hash_once(cls: type) -> type:
    """Class decorator, applied over `@dataclass(frozen=True)`: the class's hash is computed
    once per object."""
    compute = cls.__hash__

    def __hash__(self) -> int:
        state = self.__dict__
        try:
            return state["_hash"]
        except KeyError:
            value = state["_hash"] = compute(self)
            return value

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    cls.__hash__ = __hash__
    cls.__getstate__ = __getstate__
    return cls
