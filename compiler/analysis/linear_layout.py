"""Linear layouts: maps over GF(2) from the bits of named input dims to named output dims.

A layout (after Zhou et al., "Linear Layouts", arXiv 2505.23819) has input dims such as
`register`, `lane`, `warp`, `block` (or `offset` for shared memory), each of size 2**k and given
by k *bases*: basis i is the output coordinate (one int per output dim) that input value 2**i
maps to. Any other input maps to the XOR of the bases of its set bits, so the map is linear over
GF(2) and is fully described by its bases. Output dims (`dim0`, `dim1`, ...) have power-of-two
sizes. A zero basis is a *broadcast* (free) variable: flipping that input bit reaches the same
element again, which is how replication across threads or registers is expressed.

Operations (all return new layouts; layouts are immutable and hashable):
compose, invert, left/right pseudo-inverse, invert_and_compose, product (`*`), reshape and
transpose of input or output dims, sublayout (restriction), free variables, injectivity and
surjectivity. Internally the map is a matrix whose column for each input bit is the flattened
output (output dims concatenated, the first output dim in the lowest bits).
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np


def _log2(n: int) -> int:
    if n < 1 or n & (n - 1):
        raise ValueError(f"linear layout sizes must be powers of two, got {n}")
    return n.bit_length() - 1


def _size_for(values: Iterable[int]) -> int:
    """The smallest power of two holding every value."""
    top = max(values, default=0)
    return 1 << top.bit_length()


class LinearLayout:
    """A GF(2)-linear map from named input dims to named output dims, given by its bases.

    `bases`: {in_dim: [basis, ...]} with each basis a sequence of one int per output dim (or a
    bare int when there is one output dim). `out_dims`: the output dim names in order, or
    {name: size}; sizes left out are the smallest power of two covering the bases.
    """

    __slots__ = ("_bases", "_out")

    def __init__(self, bases: Mapping[str, Iterable], out_dims):
        if isinstance(out_dims, Mapping):
            names, sizes = list(out_dims), dict(out_dims)
        else:
            names, sizes = list(out_dims), {}
        if len(set(names)) != len(names):
            raise ValueError(f"repeated output dim in {names}")
        norm = {}
        for in_dim, vectors in bases.items():
            rows = []
            for vec in vectors:
                vec = (vec,) if isinstance(vec, (int, np.integer)) else tuple(int(v) for v in vec)
                if len(vec) != len(names):
                    raise ValueError(f"basis {vec} of {in_dim!r} needs one value per output "
                                     f"dim {names}")
                if any(v < 0 for v in vec):
                    raise ValueError(f"negative basis {vec} of {in_dim!r}")
                rows.append(vec)
            norm[in_dim] = tuple(rows)
        out = []
        for i, name in enumerate(names):
            needed = _size_for(vec[i] for vecs in norm.values() for vec in vecs)
            size = sizes.get(name, needed)
            _log2(size)
            if size < needed:
                raise ValueError(f"output dim {name!r} of size {size} cannot hold basis value "
                                 f"{needed // 2}")
            out.append((name, size))
        self._bases = norm
        self._out = tuple(out)

    # ---- construction ---------------------------------------------------------------------
    @classmethod
    def empty(cls) -> "LinearLayout":
        """The layout with no input and no output dims (the unit of `*`)."""
        return cls({}, [])

    @classmethod
    def identity_1d(cls, size: int, in_dim: str, out_dim: str) -> "LinearLayout":
        """in_dim value x -> out_dim value x, for x < size."""
        return cls({in_dim: [1 << i for i in range(_log2(size))]}, {out_dim: size})

    @classmethod
    def zeros_1d(cls, size: int, in_dim: str, out_dim: str, out_size: int = 1) -> "LinearLayout":
        """Every in_dim value (size of them) -> 0: a broadcast over in_dim."""
        return cls({in_dim: [0] * _log2(size)}, {out_dim: out_size})

    @classmethod
    def strided_1d(cls, size: int, stride: int, in_dim: str, out_dim: str) -> "LinearLayout":
        """in_dim value x -> x * stride (stride a power of two)."""
        _log2(stride)
        return cls({in_dim: [stride << i for i in range(_log2(size))]},
                   {out_dim: size * stride})

    # ---- shape --------------------------------------------------------------------------------
    @property
    def in_dims(self) -> tuple:
        return tuple(self._bases)

    @property
    def out_dims(self) -> tuple:
        return tuple(name for name, _ in self._out)

    def bases(self, in_dim: str) -> tuple:
        """The bases of one input dim (tuples of one int per output dim)."""
        return self._bases[in_dim]

    def all_bases(self) -> dict:
        return dict(self._bases)

    def in_dim_size_log2(self, in_dim: str) -> int:
        return len(self._bases.get(in_dim, ()))

    def in_dim_size(self, in_dim: str) -> int:
        return 1 << self.in_dim_size_log2(in_dim)

    def out_dim_size(self, out_dim: str) -> int:
        return dict(self._out)[out_dim]

    def out_dim_size_log2(self, out_dim: str) -> int:
        return _log2(self.out_dim_size(out_dim))

    def out_shape(self) -> tuple:
        return tuple(size for _, size in self._out)

    @property
    def total_in_bits(self) -> int:
        return sum(len(v) for v in self._bases.values())

    @property
    def total_out_bits(self) -> int:
        return sum(_log2(size) for _, size in self._out)

    # ---- evaluation ---------------------------------------------------------------------------
    def apply(self, coords: Mapping[str, int] | None = None, **kw) -> dict:
        """{out_dim: value} for the given input coordinates (missing input dims are 0)."""
        coords = dict(coords or {}, **kw)
        unknown = set(coords) - set(self._bases)
        if unknown:
            raise ValueError(f"unknown input dims {sorted(unknown)}; have {self.in_dims}")
        out = [0] * len(self._out)
        for in_dim, value in coords.items():
            vecs = self._bases[in_dim]
            if not 0 <= value < (1 << len(vecs)):
                raise ValueError(f"{in_dim}={value} out of range [0, {1 << len(vecs)})")
            for i, vec in enumerate(vecs):
                if value >> i & 1:
                    out = [a ^ b for a, b in zip(out, vec)]
        return dict(zip(self.out_dims, out))

    __call__ = apply

    def apply_tuple(self, **coords) -> tuple:
        """Like `apply`, the output as a tuple in output-dim order."""
        return tuple(self.apply(coords).values())

    # ---- matrix form --------------------------------------------------------------------------
    def _out_offsets(self) -> list:
        offsets, at = [], 0
        for _, size in self._out:
            offsets.append(at)
            at += _log2(size)
        return offsets

    def _flatten_out(self, vec: tuple) -> int:
        return sum(v << off for v, off in zip(vec, self._out_offsets()))

    def _unflatten_out(self, flat: int) -> tuple:
        return tuple((flat >> off) & (size - 1)
                     for off, (_, size) in zip(self._out_offsets(), self._out))

    def columns(self) -> list:
        """One int per input bit (input dims in order, low bits first): its flattened output."""
        return [self._flatten_out(vec) for vecs in self._bases.values() for vec in vecs]

    def matrix(self) -> np.ndarray:
        """The map as a (total_out_bits x total_in_bits) 0/1 matrix."""
        cols = self.columns()
        m = np.zeros((self.total_out_bits, len(cols)), dtype=np.uint8)
        for j, col in enumerate(cols):
            for i in range(self.total_out_bits):
                m[i, j] = col >> i & 1
        return m

    def rank(self) -> int:
        """The dimension of the image (the number of distinct outputs is 2**rank)."""
        return len(_echelon(self.columns())[0])

    def is_surjective(self) -> bool:
        """Whether every output coordinate is reached."""
        return self.rank() == self.total_out_bits

    def is_injective(self) -> bool:
        """Whether distinct inputs map to distinct outputs (no broadcast)."""
        return self.rank() == self.total_in_bits

    def is_invertible(self) -> bool:
        return self.is_surjective() and self.is_injective()

    def free_variable_masks(self) -> dict:
        """{in_dim: bitmask} of the input bits whose basis lies in the span of the earlier ones
        (zero bases included): flipping such a bit can be undone by other bits, so a reduction
        or a store may treat it as a copy."""
        _, free = _echelon(self.columns())
        masks, j = {}, 0
        for in_dim, vecs in self._bases.items():
            mask = 0
            for i in range(len(vecs)):
                if j in free:
                    mask |= 1 << i
                j += 1
            masks[in_dim] = mask
        return masks

    def zero_bases(self, in_dim: str) -> list:
        """Indices of the bases of `in_dim` that are zero: pure broadcast bits."""
        return [i for i, vec in enumerate(self._bases[in_dim]) if not any(vec)]

    # ---- algebra ------------------------------------------------------------------------------
    def compose(self, outer: "LinearLayout") -> "LinearLayout":
        """outer(self(x)): self's output dims are `outer`'s input dims (same names, sizes no
        larger than outer's)."""
        if set(self.out_dims) != set(outer.in_dims):
            raise ValueError(f"compose: outputs {self.out_dims} are not the inputs "
                             f"{outer.in_dims}")
        for name, size in self._out:
            if size > outer.in_dim_size(name):
                raise ValueError(f"compose: {name} has size {size} > {outer.in_dim_size(name)}")
        bases = {d: [outer.apply_tuple(**dict(zip(self.out_dims, vec))) for vec in vecs]
                 for d, vecs in self._bases.items()}
        return LinearLayout(bases, dict(outer._out))

    def __mul__(self, other: "LinearLayout") -> "LinearLayout":
        """The product: input and output dims are united; where a dim is in both, self's part is
        the low (minor) bits and other's the high bits."""
        outs = dict(self._out)
        shift = {}
        for name, size in other._out:
            shift[name] = _log2(outs.get(name, 1))
            outs[name] = outs.get(name, 1) * size
        names = list(outs)

        def widen(layout, vec, shifts):
            values = dict(zip(layout.out_dims, vec))
            return tuple(values.get(n, 0) << shifts.get(n, 0) for n in names)

        bases = {}
        for d, vecs in self._bases.items():
            bases[d] = [widen(self, v, {}) for v in vecs]
        for d, vecs in other._bases.items():
            bases.setdefault(d, []).extend(widen(other, v, shift) for v in vecs)
        return LinearLayout(bases, outs)

    def transpose_outs(self, order: Iterable[str]) -> "LinearLayout":
        """The same map with output dims listed in `order` (a permutation of out_dims)."""
        order = list(order)
        if sorted(order) != sorted(self.out_dims):
            raise ValueError(f"transpose_outs: {order} is not a permutation of {self.out_dims}")
        idx = [self.out_dims.index(n) for n in order]
        bases = {d: [tuple(v[i] for i in idx) for v in vecs] for d, vecs in self._bases.items()}
        return LinearLayout(bases, {n: self.out_dim_size(n) for n in order})

    def transpose_ins(self, order: Iterable[str]) -> "LinearLayout":
        """The same map with input dims listed in `order` (a permutation of in_dims)."""
        order = list(order)
        if sorted(order) != sorted(self.in_dims):
            raise ValueError(f"transpose_ins: {order} is not a permutation of {self.in_dims}")
        return LinearLayout({d: self._bases[d] for d in order}, dict(self._out))

    def reshape_outs(self, new_outs) -> "LinearLayout":
        """Flatten the output dims (first dim minor) and split them into `new_outs`
        ([(name, size), ...], first minor) of the same total size."""
        new_outs = list(new_outs.items() if isinstance(new_outs, Mapping) else new_outs)
        if sum(_log2(s) for _, s in new_outs) != self.total_out_bits:
            raise ValueError(f"reshape_outs: {new_outs} does not have size "
                             f"2**{self.total_out_bits}")
        target = LinearLayout({}, dict(new_outs))
        bases = {d: [target._unflatten_out(self._flatten_out(v)) for v in vecs]
                 for d, vecs in self._bases.items()}
        return LinearLayout(bases, dict(new_outs))

    def reshape_ins(self, new_ins) -> "LinearLayout":
        """Flatten the input dims (first dim minor) and split them into `new_ins`
        ([(name, size), ...], first minor) of the same total size."""
        new_ins = list(new_ins.items() if isinstance(new_ins, Mapping) else new_ins)
        flat = [v for vecs in self._bases.values() for v in vecs]
        if sum(_log2(s) for _, s in new_ins) != len(flat):
            raise ValueError(f"reshape_ins: {new_ins} does not have size 2**{len(flat)}")
        bases, at = {}, 0
        for name, size in new_ins:
            bases[name] = flat[at:at + _log2(size)]
            at += _log2(size)
        return LinearLayout(bases, dict(self._out))

    def flatten_outs(self, name: str = "dim0") -> "LinearLayout":
        return self.reshape_outs([(name, 1 << self.total_out_bits)])

    def flatten_ins(self, name: str) -> "LinearLayout":
        return self.reshape_ins([(name, 1 << self.total_in_bits)])

    def sublayout(self, in_dims: Iterable[str], out_dims: Iterable[str]) -> "LinearLayout":
        """The restriction to the input dims `in_dims` (others fixed at 0), seen only on the
        output dims `out_dims` (others dropped)."""
        in_dims, out_dims = list(in_dims), list(out_dims)
        idx = [self.out_dims.index(n) for n in out_dims]
        bases = {d: [tuple(v[i] for i in idx) for v in self._bases[d]] for d in in_dims}
        return LinearLayout(bases, {n: self.out_dim_size(n) for n in out_dims})

    def resize_in(self, in_dim: str, size: int) -> "LinearLayout":
        """Drop the high bases of `in_dim` so it has `size` values (size <= current)."""
        k = _log2(size)
        if k > self.in_dim_size_log2(in_dim):
            raise ValueError(f"resize_in: {in_dim} has only {self.in_dim_size(in_dim)} values")
        bases = dict(self._bases)
        bases[in_dim] = bases[in_dim][:k]
        return LinearLayout(bases, dict(self._out))

    def with_bases(self, in_dim: str, vectors: Iterable) -> "LinearLayout":
        """The layout with `in_dim`'s bases replaced."""
        bases = dict(self._bases)
        bases[in_dim] = list(vectors)
        return LinearLayout(bases, dict(self._out))

    def invert(self) -> "LinearLayout":
        """The inverse map (outputs -> inputs) of a bijective layout."""
        if not self.is_invertible():
            raise ValueError(f"invert: layout is not bijective (rank {self.rank()}, "
                             f"{self.total_in_bits} in bits, {self.total_out_bits} out bits)")
        return self.right_inverse()

    def right_inverse(self) -> "LinearLayout":
        """A map R (outputs -> inputs) with self(R(y)) == y for every y; needs a surjective
        layout. Free input bits are chosen 0, so R picks the smallest-bit preimage."""
        if not self.is_surjective():
            raise ValueError("right_inverse: layout is not surjective")
        cols = self.columns()
        pivots = _pivot_combinations(cols)
        bases = {}
        for name, size in self._out:
            off = self._out_offsets()[self.out_dims.index(name)]
            bases[name] = [self._unflatten_in(_express(pivots, 1 << (off + i)))
                           for i in range(_log2(size))]
        return LinearLayout(bases, {d: self.in_dim_size(d) for d in self.in_dims})

    def left_inverse(self) -> "LinearLayout":
        """A map P (outputs -> inputs) with P(self(x)) == x for every x; needs an injective
        layout. Outputs outside the image map as their projection along a complement."""
        if not self.is_injective():
            raise ValueError("left_inverse: layout is not injective")
        cols = self.columns()
        n = self.total_out_bits
        # Extend the image basis by unit vectors to a basis of the whole space; the extra
        # vectors map to 0.
        extended = list(cols)
        for i in range(n):
            trial = extended + [1 << i]
            if len(_echelon(trial)[0]) == len(trial):
                extended = trial
        pivots = _pivot_combinations(extended)
        k = len(cols)
        bases = {}
        for name, size in self._out:
            off = self._out_offsets()[self.out_dims.index(name)]
            vecs = []
            for i in range(_log2(size)):
                combo = _express(pivots, 1 << (off + i)) & ((1 << k) - 1)
                vecs.append(self._unflatten_in(combo))
            bases[name] = vecs
        return LinearLayout(bases, {d: self.in_dim_size(d) for d in self.in_dims})

    def pseudo_invert(self) -> "LinearLayout":
        """The right inverse of a surjective layout, else the left inverse of an injective one."""
        if self.is_surjective():
            return self.right_inverse()
        return self.left_inverse()

    def invert_and_compose(self, other: "LinearLayout") -> "LinearLayout":
        """C with other(C(x)) == self(x): from self's inputs to other's inputs, both layouts
        mapping onto the same output dims (`other` must reach everything self reaches; free
        inputs of `other` are chosen 0). E.g. registers of one layout -> registers of another."""
        if set(self.out_dims) != set(other.out_dims):
            raise ValueError(f"invert_and_compose: outputs {self.out_dims} vs {other.out_dims}")
        target = other.transpose_outs(self.out_dims)
        for name, size in self._out:
            if target.out_dim_size(name) != size:
                raise ValueError(f"invert_and_compose: {name} has size {size} vs "
                                 f"{target.out_dim_size(name)}")
        pivots = _pivot_combinations(target.columns())
        bases = {}
        for d, vecs in self._bases.items():
            out = []
            for vec in vecs:
                combo = _express(pivots, self._flatten_out(vec))
                if combo is None:
                    raise ValueError(f"invert_and_compose: {d} basis {vec} is not reached by "
                                     f"the other layout")
                out.append(target._unflatten_in(combo))
            bases[d] = out
        return LinearLayout(bases, {d: other.in_dim_size(d) for d in other.in_dims})

    def _unflatten_in(self, combo: int) -> tuple:
        """Input bit set (over all input dims, in order) -> one value per input dim."""
        values, at = [], 0
        for vecs in self._bases.values():
            values.append((combo >> at) & ((1 << len(vecs)) - 1))
            at += len(vecs)
        return tuple(values)

    # ---- comparison and printing --------------------------------------------------------------
    def _key(self):
        return (tuple(self._bases.items()), self._out)

    def __eq__(self, other) -> bool:
        return isinstance(other, LinearLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def equal_ignoring_out_sizes(self, other: "LinearLayout") -> bool:
        """Same bases and dims, output sizes aside."""
        return self._bases == other._bases and self.out_dims == other.out_dims

    def table(self) -> str:
        """The bases as a table: one row per input bit, one column per output dim."""
        head = ["in", "bit"] + [f"{n}({s})" for n, s in self._out]
        rows = [[d, str(i)] + [str(v) for v in vec]
                for d, vecs in self._bases.items() for i, vec in enumerate(vecs)]
        widths = [max(len(r[c]) for r in [head] + rows) for c in range(len(head))]
        lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [head] + rows]
        return "\n".join(lines)

    def __repr__(self) -> str:
        ins = ", ".join(f"{d}: {[list(v) for v in vecs]}" for d, vecs in self._bases.items())
        outs = ", ".join(f"{n}={s}" for n, s in self._out)
        return f"LinearLayout({{{ins}}} -> [{outs}])"

    def __str__(self) -> str:
        return self.table()


# ---- GF(2) linear algebra on int bit vectors -------------------------------------------------
def _echelon(columns: list) -> tuple:
    """Gaussian elimination over the columns in order: (independent column indices, the set of
    indices that depend on earlier columns)."""
    basis: dict = {}           # leading bit -> reduced vector
    independent, free = [], set()
    for j, col in enumerate(columns):
        v = col
        while v:
            top = v.bit_length() - 1
            if top not in basis:
                basis[top] = v
                independent.append(j)
                break
            v ^= basis[top]
        else:
            free.add(j)
    return independent, free


def _pivot_combinations(columns: list) -> dict:
    """{leading bit: (reduced vector, bit set of the columns combined into it)}, built from the
    columns in order so that only independent columns are used."""
    basis: dict = {}
    for j, col in enumerate(columns):
        v, combo = col, 1 << j
        while v:
            top = v.bit_length() - 1
            if top not in basis:
                basis[top] = (v, combo)
                break
            bv, bc = basis[top]
            v ^= bv
            combo ^= bc
    return basis


def _express(pivots: dict, target: int):
    """The set of columns whose XOR is `target`, or None when it is not in their span."""
    combo = 0
    v = target
    while v:
        top = v.bit_length() - 1
        if top not in pivots:
            return None
        bv, bc = pivots[top]
        v ^= bv
        combo ^= bc
    return combo
