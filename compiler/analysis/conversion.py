"""How `ttg.convert_layout` moves data, decided from the two linear layouts alone.

The strategies, cheapest first (after Zhou et al., "Linear Layouts", arXiv 2505.23819, and the
conversion lowering of Triton 3.x):
  noop       every thread holds the same elements in the same registers;
  registers  the lane and warp bases agree: every thread already holds what it needs, the
             registers are renumbered at compile time;
  shuffle    the warp bases agree and the map from the destination's (register, lane) to the
             source's sends each destination register from one source register of some lane:
             one `shfl.sync.idx` per distinct destination register;
  shared     through shared memory, in a buffer laid out by a swizzle computed from both maps
             (`shared_swizzle`) so that the stores and the loads are free of bank conflicts,
             with vector accesses over the register bases the two layouts share. When the
             whole tensor would not fit in the target's shared memory (`SHARED_LIMIT_BYTES`),
             the exchange goes in rounds: coordinate bits that both layouts hold in a register
             bit of their own are iterated, each round moving the part of the tensor with those
             bits fixed through a buffer that many times smaller (barriers between rounds).
Layouts are seen with their output dims flattened (dim0 in the low bits), so a coordinate is one
int and a basis one int. The plan is plain data: the lowering emits it, the layout passes price
it (`ConversionPlan.cost`) and the bank-conflict model checks it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .linear_layout import LinearLayout, _echelon

REGISTER, LANE, WARP = "register", "lane", "warp"
WARP_BYTES = 128          # 32 banks of 4 bytes
BANK_BYTES = 4
MAX_VECTOR_BYTES = 16
#: A conversion through shared memory also waits at two barriers; counted as this many accesses.
BARRIER_COST = 4
#: Shared memory one block may use on the target (sm_90's opt-in maximum, 227 KiB); a
#: conversion whose buffer would be larger goes in rounds through a smaller one.
SHARED_LIMIT_BYTES = 232448


def flat_bases(layout: LinearLayout, in_dim: str) -> list:
    """The bases of `in_dim` as flattened coordinates (dim0 in the low bits)."""
    if in_dim not in layout.in_dims:
        return []
    return [v[0] for v in layout.flatten_outs().bases(in_dim)]


def _span_rank(vectors) -> int:
    return len(_echelon([v for v in vectors if v])[0])


def _xor_of(bases: list, index: int) -> int:
    out = 0
    for i, v in enumerate(bases):
        if index >> i & 1:
            out ^= v
    return out


@dataclass(frozen=True)
class SharedSwizzle:
    """A shared-memory buffer for a conversion: `layout` maps the buffer's element `offset` to
    the tensor coordinate it holds (a bijection); `src_vec_bits` / `dst_vec_bits` are the
    register bits of each layout that make up one vector store / load (vector element i is the
    register with bit k of i placed at bit position [k]; offset bit k is that element's bit).

    `src_round_bits` / `dst_round_bits` are the register bits (one per round coordinate, same
    order in both) iterated over rounds when the tensor does not fit at once: they are the top
    offset bits of `layout`, so one round's elements share them and the buffer holds
    `1 << buffer_bits` elements; a round's offsets are the layout's with those bits cleared."""

    layout: LinearLayout
    src_vec_bits: tuple
    dst_vec_bits: tuple
    src_round_bits: tuple = ()
    dst_round_bits: tuple = ()

    @property
    def rounds(self) -> int:
        """How many times the buffer is filled and drained."""
        return 1 << len(self.src_round_bits)

    @property
    def buffer_bits(self) -> int:
        """log2 of the buffer's elements (the tensor's bits less the round bits)."""
        return self.layout.total_in_bits - len(self.src_round_bits)

    @staticmethod
    def round_registers(registers: int, round_bits: tuple, index: int) -> list:
        """The registers (of `registers`) that round `index` moves: those whose round bits
        spell `index` (bit k of `index` at register bit round_bits[k])."""
        want = sum(((index >> k) & 1) << bit for k, bit in enumerate(round_bits))
        mask = sum(1 << bit for bit in round_bits)
        return [r for r in range(registers) if r & mask == want]

    @property
    def store_vec(self) -> int:
        return 1 << len(self.src_vec_bits)

    @property
    def load_vec(self) -> int:
        return 1 << len(self.dst_vec_bits)

    def offsets_of(self, distributed: LinearLayout) -> LinearLayout:
        """(register, lane, warp, block) -> buffer offset, for a layout over the same tensor."""
        return distributed.compose(self.layout.invert())


@dataclass(frozen=True)
class ConversionPlan:
    """The chosen strategy and what its lowering needs.

    registers: `register_map[r]` is the source register destination register r takes.
    shuffle: `rounds[r]` = (source register, constant lane part) for destination register r, and
      `lane_map` maps a destination lane to the lane part it XORs in (a 1-D layout lane -> lane).
    shared: `swizzle` is the buffer layout."""

    strategy: str
    register_map: tuple = ()
    rounds: tuple = ()
    lane_map: LinearLayout | None = None
    swizzle: SharedSwizzle | None = None
    elem_bytes: int = 4
    src_registers: int = 0
    dst_registers: int = 0
    notes: tuple = field(default=())

    @property
    def cost(self) -> float:
        """Per-thread work in memory-access units: 0 for noop and register renumbering, one per
        shuffle, one per shared vector access plus the barriers."""
        if self.strategy in ("noop", "registers"):
            return 0.0
        if self.strategy == "shuffle":
            return float(len(set(self.rounds)))
        sw = self.swizzle
        return self.src_registers / sw.store_vec + self.dst_registers / sw.load_vec + \
            BARRIER_COST * sw.rounds

    @property
    def scratch_bytes(self) -> int:
        """Shared memory the conversion needs (0 unless it goes through shared memory): one
        round's part of the tensor."""
        if self.strategy != "shared":
            return 0
        return (1 << self.swizzle.buffer_bits) * self.elem_bytes

    def describe(self) -> str:
        """One line for the LLVM IR comment and the trace."""
        if self.strategy == "shared":
            sw = self.swizzle
            offs = [v[0] for v in sw.layout.flatten_outs().bases("offset")]
            rounds = f"; {sw.rounds} rounds" if sw.rounds > 1 else ""
            return (f"convert_layout: shared (swizzled; {self.elem_bytes}-byte elements, "
                    f"stores of {sw.store_vec}, loads of {sw.load_vec}{rounds}; offset bases "
                    f"{offs})")
        if self.strategy == "shuffle":
            return f"convert_layout: shuffle ({len(set(self.rounds))} shfl.sync.idx)"
        return f"convert_layout: {self.strategy}"


def plan_conversion(src: LinearLayout, dst: LinearLayout, elem_bytes: int,
                    vectorizable: bool = True,
                    limit_bytes: int | None = None) -> ConversionPlan:
    """The cheapest way to move a tensor from layout `src` to layout `dst` (same tensor shape;
    `elem_bytes` per element in shared memory; `vectorizable` False for pointers and i1; a
    shared buffer of at most `limit_bytes`, by default `SHARED_LIMIT_BYTES`)."""
    if limit_bytes is None:
        limit_bytes = SHARED_LIMIT_BYTES
    if src.out_shape() != dst.out_shape() and src.out_dims == dst.out_dims:
        raise ValueError(f"conversion between shapes {src.out_shape()} and {dst.out_shape()}")
    src_regs, dst_regs = src.in_dim_size(REGISTER), dst.in_dim_size(REGISTER)
    common = dict(elem_bytes=elem_bytes, src_registers=src_regs, dst_registers=dst_regs)
    same_threads = all(flat_bases(src, d) == flat_bases(dst, d) for d in (LANE, WARP))
    if same_threads:
        mapping = _register_map(src, dst)
        if mapping is not None:
            if src_regs == dst_regs and mapping == tuple(range(dst_regs)):
                return ConversionPlan("noop", **common)
            return ConversionPlan("registers", register_map=mapping, **common)
    if flat_bases(src, WARP) == flat_bases(dst, WARP):
        shuffle = _shuffle_plan(src, dst)
        if shuffle is not None:
            rounds, lane_map = shuffle
            plan = ConversionPlan("shuffle", rounds=rounds, lane_map=lane_map, **common)
            shared = ConversionPlan("shared", swizzle=shared_swizzle(
                src, dst, elem_bytes, vectorizable, limit_bytes), **common)
            if plan.cost <= shared.cost:
                return plan
            return shared
    return ConversionPlan("shared", swizzle=shared_swizzle(src, dst, elem_bytes, vectorizable,
                                                           limit_bytes), **common)


def _register_map(src: LinearLayout, dst: LinearLayout):
    """For threads holding the same lane and warp part: the source register of each destination
    register, or None when some destination element is not in the thread's source registers."""
    src_bases, dst_bases = flat_bases(src, REGISTER), flat_bases(dst, REGISTER)
    first: dict = {}
    for r in range(1 << len(src_bases)):
        first.setdefault(_xor_of(src_bases, r), r)
    out = []
    for r in range(1 << len(dst_bases)):
        s = first.get(_xor_of(dst_bases, r))
        if s is None:
            return None
        out.append(s)
    return tuple(out)


def _shuffle_plan(src: LinearLayout, dst: LinearLayout):
    """(rounds, lane map) when a warp's destination registers can each be gathered with one
    `shfl.sync.idx` (every lane reads the same source register), else None."""
    names = list(src.out_dims)
    a = src.sublayout([REGISTER, LANE], names)
    b = dst.sublayout([REGISTER, LANE], names)
    try:
        c = b.invert_and_compose(a)
    except ValueError:
        return None
    if any(v[0] for v in c.bases(LANE)):
        return None          # the source register would depend on the reading lane
    rounds = tuple(c.apply_tuple(register=r, lane=0) for r in range(b.in_dim_size(REGISTER)))
    lane_map = LinearLayout({LANE: [(v[1],) for v in c.bases(LANE)]},
                            {"lane": a.in_dim_size(LANE)})
    return rounds, lane_map


# ---- the swizzle -------------------------------------------------------------------------------
def _own_register_bits(layout: LinearLayout) -> dict:
    """{coordinate bit: register bit} for the coordinate bits one register bit of `layout` sets
    alone: single-bit register bases that none of its other register, lane or warp bases touch
    (in register order)."""
    regs = flat_bases(layout, REGISTER)
    others = flat_bases(layout, LANE) + flat_bases(layout, WARP)
    out = {}
    for i, v in enumerate(regs):
        if not v or v & (v - 1):
            continue
        if any(w & v for k, w in enumerate(regs) if k != i) or any(w & v for w in others):
            continue
        out[v] = i
    return out


def _vector_bits(layout: LinearLayout, elem_bytes: int, exclude: tuple = ()) -> list:
    """The coordinate bits one layout can move in a vector access: its own register bits
    (`_own_register_bits`, in register order) up to 16 bytes, less those in `exclude`."""
    limit = max(1, MAX_VECTOR_BYTES // elem_bytes).bit_length() - 1
    return [v for v in _own_register_bits(layout) if v not in exclude][:limit]


def round_coordinates(src: LinearLayout, dst: LinearLayout, elem_bytes: int,
                      limit_bytes: int) -> list:
    """The coordinate bits a conversion iterates over in rounds so that one round's part of the
    tensor fits in `limit_bytes`: as few as needed, from those both layouts hold in a register
    bit of their own, preferring bits neither moves in vectors, high bits first. Empty when
    the whole tensor fits; ValueError when the layouts do not share enough such bits."""
    n_bits = src.total_out_bits
    need = 0
    while need < n_bits and elem_bytes << (n_bits - need) > limit_bytes:
        need += 1
    if not need:
        return []
    own_dst = _own_register_bits(dst)
    both = [v for v in _own_register_bits(src) if v in own_dst]
    vectors = set(_vector_bits(src, elem_bytes)) | set(_vector_bits(dst, elem_bytes))
    ranked = sorted(both, key=lambda v: (v in vectors, -v))
    if len(ranked) < need:
        raise ValueError(f"the conversion needs {elem_bytes << n_bits} bytes of shared memory, "
                         f"more than the {limit_bytes} the target has, and the two layouts "
                         f"share {len(ranked)} register coordinates to split it over "
                         f"({need} needed)")
    return ranked[:need]


def _vector_rank(vec: list) -> tuple:
    """How good a vector is: more elements first, then elements adjacent along one dim."""
    return len(vec), all(v == vec[0] << i for i, v in enumerate(vec))


def _register_bits(layout: LinearLayout, coords: list) -> tuple:
    """The register bit of `layout` whose basis is each of `coords`."""
    regs = flat_bases(layout, REGISTER)
    return tuple(regs.index(c) for c in coords)


def _candidates(n_bits: int, excluded_mask: int):
    """Coordinate vectors over the bits not in `excluded_mask`: single bits (high first), then
    pairs, then triples."""
    bits = [1 << i for i in reversed(range(n_bits)) if not excluded_mask >> i & 1]
    yield from bits
    for i, x in enumerate(bits):
        for y in bits[i + 1:]:
            yield x | y
    for i, x in enumerate(bits):
        for j, y in enumerate(bits[i + 1:], i + 1):
            for z in bits[j + 1:]:
                yield x | y | z


def _extend(chosen: list, count: int, n_bits: int, excluded: int, keep_apart=()) -> list:
    """Add `count` vectors to `chosen`, each independent of `chosen` and of every subspace in
    `keep_apart` (spans of vectors) together with what was added; greedy over `_candidates`."""
    added = []
    if count <= 0:
        return added
    for cand in _candidates(n_bits, excluded):
        if len(added) == count:
            break
        trial = chosen + added + [cand]
        if _span_rank(trial) != len(trial):
            continue
        if all(_span_rank(list(w) + added + [cand]) == _span_rank(list(w)) + len(added) + 1
               for w in keep_apart):
            added.append(cand)
    return added


def shared_swizzle(src: LinearLayout, dst: LinearLayout, elem_bytes: int,
                   vectorizable: bool = True,
                   limit_bytes: int | None = None) -> SharedSwizzle:
    """A buffer layout for moving a tensor from `src` to `dst` through shared memory.

    Offset bits, low to high: the vector bits (coordinates both layouts hold in consecutive
    registers), more bits filling a 4-byte word when elements are narrower, the bank bits (which
    of the 128 bytes a phase of lanes covers) and the segment bits. A phase of lanes (32 lanes
    for accesses up to 4 bytes, 16 for 8, 8 for 16) is free of conflicts when no two of its lanes
    reach addresses that differ only in segment bits, i.e. when the segment space meets neither
    layout's span of phase lane bases (plus the word bits) in more than 0. The segment bases are
    picked greedily so; the bank bases complete the basis. Wider vectors leave fewer bank bits
    to the other side, so each choice of vector widths (widest first) is priced by the
    bank-conflict model: the fewest wavefronts win, then the fewest accesses. A buffer over
    `limit_bytes` (default `SHARED_LIMIT_BYTES`) goes in rounds over `round_coordinates`,
    which then are the top offset bits and take no part in vectors."""
    from .bank_conflicts import access_conflicts
    limit = SHARED_LIMIT_BYTES if limit_bytes is None else limit_bytes
    rounds = tuple(round_coordinates(src, dst, elem_bytes, limit))
    if vectorizable:
        src_vec = _vector_bits(src, elem_bytes, rounds)
        dst_vec = _vector_bits(dst, elem_bytes, rounds)
    else:
        src_vec, dst_vec = [], []
    common = [v for v in src_vec if v in dst_vec]
    wider_is_src = _vector_rank(src_vec) > _vector_rank(dst_vec)
    extra = [v for v in (src_vec if wider_is_src else dst_vec) if v not in common]
    best = None
    for k_common in range(len(common), -1, -1):
        for k_extra in range(len(extra) if k_common == len(common) else 0, -1, -1):
            vec = common[:k_common] + extra[:k_extra]
            wide, narrow = vec, vec[:k_common]
            sv, dv = (wide, narrow) if wider_is_src else (narrow, wide)
            swizzle, conflict_free = _build_swizzle(src, dst, elem_bytes, vec, sv, dv, rounds)
            price = 0
            accesses = 0
            for layout, bits in ((src, swizzle.src_vec_bits), (dst, swizzle.dst_vec_bits)):
                phases = _phases(elem_bytes << len(bits))
                if conflict_free:
                    count = len(unique_registers(layout)) >> len(bits)
                    price += count * phases
                else:
                    counts = access_conflicts(swizzle.offsets_of(layout), elem_bytes, bits)
                    count = len(counts)
                    price += sum(c + phases for c in counts)
                accesses += count
            if best is None or (price, accesses) < best[0]:
                best = ((price, accesses), swizzle)
    return best[1]


def _phases(access_bytes: int) -> int:
    """How many phases a warp's access of `access_bytes` per lane is served in."""
    return max(1, access_bytes // BANK_BYTES)


def _build_swizzle(src: LinearLayout, dst: LinearLayout, elem_bytes: int, vec: list,
                   src_vec: list, dst_vec: list, rounds: tuple = ()) -> tuple:
    """The buffer layout for given vector coordinates (`vec`, low offset bits first; each
    side's vector a prefix of it) and round coordinates (the top offset bits), and whether its
    segment bases keep both sides free of conflicts by construction; see `shared_swizzle`."""
    names = list(src.out_dims)
    n_bits = src.total_out_bits
    free_bits = n_bits - len(rounds)        # the bits one round's buffer addresses
    vec_mask = sum(vec) | sum(rounds)
    word_bits = min(free_bits, max(0, (BANK_BYTES // elem_bytes).bit_length() - 1))
    row_bits = min(free_bits, (WARP_BYTES // elem_bytes).bit_length() - 1)
    phases = [flat_bases(src, LANE), flat_bases(dst, LANE)]
    side_low, side_lanes = [], []
    for lanes, side_vec in zip(phases, (src_vec, dst_vec)):
        access = elem_bytes << len(side_vec)
        side_low.append(max(len(side_vec), word_bits))
        side_lanes.append(lanes[:min(5, (WARP_BYTES // max(access, BANK_BYTES)).bit_length() - 1)])
    shared_lanes = [v for v in side_lanes[0] if v in side_lanes[1] and not v & vec_mask]
    low = list(vec)
    for v in shared_lanes:       # lanes of both layouts in one word: a broadcast, free
        if len(low) < word_bits and _span_rank(low + [v]) == len(low) + 1:
            low.append(v)
    low += _extend(low, word_bits - len(low), n_bits, vec_mask)
    seg_count = free_bits - max(row_bits, len(low))
    walls = [low[:k] + lanes for k, lanes in zip(side_low, side_lanes)]
    seg = _extend(low, seg_count, n_bits, vec_mask, keep_apart=walls)
    conflict_free = len(seg) == seg_count
    if not conflict_free:
        seg += _extend(low + seg, seg_count - len(seg), n_bits, vec_mask)
    bank = _extend(low + seg, free_bits - len(low) - len(seg), n_bits, vec_mask)
    offsets = low + bank + seg + list(rounds)
    dims = LinearLayout({}, {n: src.out_dim_size(n) for n in names})
    bases = [dims._unflatten_out(v) for v in offsets]
    layout = LinearLayout({"offset": bases}, {n: src.out_dim_size(n) for n in names})
    return (SharedSwizzle(layout, _register_bits(src, src_vec), _register_bits(dst, dst_vec),
                          _register_bits(src, rounds), _register_bits(dst, rounds)),
            conflict_free)


def unique_registers(layout: LinearLayout) -> list:
    """Registers holding an element no lower-numbered register of the thread holds: those whose
    free (dependent) register bits are all 0."""
    mask = layout.sublayout([REGISTER], list(layout.out_dims)).free_variable_masks()[REGISTER]
    return [r for r in range(layout.in_dim_size(REGISTER)) if not r & mask]


# ---- from IR types -----------------------------------------------------------------------------
def element_facts(tensor_type) -> tuple:
    """(bytes per element in shared memory, whether vector accesses may carry it): pointers
    move as 8-byte integers one by one, i1 one by one."""
    from compiler.dialects.tt import PointerType
    from compiler.ir.types import IntegerType
    from .shared_memory import byte_width
    element = tensor_type.element
    if isinstance(element, PointerType):
        return 8, False
    if isinstance(element, IntegerType) and element.width == 1:
        return 1, False
    return byte_width(tensor_type), True


def tensor_plan(src_type, dst_type, dst_layout: LinearLayout | None = None) -> ConversionPlan:
    """The plan for moving a value of `src_type` into `dst_type`'s layout. `dst_layout` is the
    destination's linear layout over the source's coordinates when the shapes differ (trans,
    reshape); by default it is `dst_type`'s own."""
    from .layout_to_linear import to_linear_layout
    src = to_linear_layout(src_type.encoding, src_type.shape)
    dst = dst_layout if dst_layout is not None else to_linear_layout(dst_type.encoding,
                                                                    dst_type.shape)
    return _cached_plan(src, dst, *element_facts(src_type))


_PLANS: dict = {}


def _cached_plan(src, dst, elem_bytes, vectorizable) -> ConversionPlan:
    key = (src, dst, elem_bytes, vectorizable, SHARED_LIMIT_BYTES)
    if key not in _PLANS:
        _PLANS[key] = plan_conversion(src, dst, elem_bytes, vectorizable)
    return _PLANS[key]


def transposed_in_source(dst: LinearLayout, order) -> LinearLayout:
    """A `tt.trans {order}` result's layout seen over the operand's coordinates (result dim d
    is operand dim order[d])."""
    names = list(dst.out_dims)
    renamed = LinearLayout(dst.all_bases(), {f"dim{order[d]}": dst.out_dim_size(n)
                                             for d, n in enumerate(names)})
    return renamed.transpose_outs([f"dim{d}" for d in range(len(names))])


def reshaped_in_source(dst: LinearLayout, src_shape) -> LinearLayout:
    """A row-major `tt.reshape` result's layout seen over the operand's coordinates."""
    names = list(dst.out_dims)
    flat = dst.transpose_outs(list(reversed(names))).flatten_outs()
    src_names = [f"dim{d}" for d in range(len(src_shape))]
    split = flat.reshape_outs([(n, s) for n, s in reversed(list(zip(src_names, src_shape)))])
    return split.transpose_outs(src_names)
