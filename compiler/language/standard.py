"""The `triton.language` builtins: program ids, ranges, creation, memory, shapes, arithmetic,
reductions, scans, atomics and debugging.

Each is a plain function marked `@builtin` whose first parameter `_sem` is the semantic context
(`compiler.frontend.semantic.Semantic`) that the code generator passes explicitly. Arguments
are `tensor`s (runtime values) or `constexpr`s (compile-time values).
"""
from __future__ import annotations

from compiler.frontend.errors import SemanticError, StaticAssertionFailed
from compiler.ir.attributes import BoolAttr, DenseArrayAttr, StringAttr, int_attr

from . import core
from .core import block_type, builtin, constexpr, dtype, tensor


# ---- argument helpers ---------------------------------------------------------------------------
def _const(x, what: str):
    """The Python value of a compile-time argument, or a SemanticError naming `what`."""
    if isinstance(x, constexpr):
        return x.value
    if isinstance(x, tensor):
        raise SemanticError(f"{what} must be a compile-time constant (tl.constexpr), but it is "
                            f"a runtime value of dtype {x.dtype}")
    return x


def _opt_const(x, what: str):
    return None if x is None else _const(x, what)


def _shape(args, what: str = "shape") -> tuple:
    """A static shape from `(4, 8)`, `[4, 8]` or `4, 8`, each entry constexpr."""
    if len(args) == 1:
        single = _const(args[0], what) if not isinstance(args[0], (tuple, list)) else args[0]
        args = single if isinstance(single, (tuple, list)) else (single,)
    dims = []
    for i, d in enumerate(args):
        v = _const(d, what)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise SemanticError(f"{what} entries must be positive integer constants, got {v!r}")
        if v & (v - 1):     # every block dim is a power of two (Triton's validate_block_shape)
            raise SemanticError(f"Shape element {i} must be a power of 2")
        dims.append(v)
    return tuple(dims)


def _dtype(x, what: str = "dtype") -> dtype:
    v = _const(x, what)
    if not isinstance(v, dtype):
        raise SemanticError(f"{what} must be a tl dtype such as tl.float32, got {v!r}")
    return v


def _axis(x):
    v = _opt_const(x, "axis")
    if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
        raise SemanticError(f"axis must be an integer constant or None, got {v!r}")
    return v


# ---- program ids and ranges -------------------------------------------------------------------
def _program_axis(axis, op: str) -> int:
    axis = _const(axis, "axis")
    if axis not in (0, 1, 2):
        raise SemanticError(f"{op} axis must be 0, 1, or 2 but got {axis!r}")
    return axis


@builtin
def program_id(_sem, axis=constexpr(0)) -> tensor:
    """The index of this program instance along grid axis 0, 1 or 2 (an int32 scalar)."""
    from compiler.dialects import tt
    return _sem._new(tt.GetProgramIdOp, [], core.int32, {"axis": int_attr(_program_axis(axis, "program_id"))})


@builtin
def num_programs(_sem, axis=constexpr(0)) -> tensor:
    """The number of program instances along grid axis 0, 1 or 2."""
    from compiler.dialects import tt
    return _sem._new(tt.GetNumProgramsOp, [], core.int32, {"axis": int_attr(_program_axis(axis, "num_programs"))})


@builtin
def arange(_sem, start, end) -> tensor:
    """`[start, end)` as an int32 block; both ends constexpr and `end - start` a power of two."""
    from compiler.dialects import tt
    lo, hi = _const(start, "arange's start"), _const(end, "arange's end")
    if not isinstance(lo, int) or not isinstance(hi, int):
        raise SemanticError(f"arange's bounds must be integer constants, got {lo!r} and {hi!r}")
    n = hi - lo
    if n <= 0:      # Triton's sentences, word for word (its tests compare them)
        raise SemanticError("arange's end argument must be greater than the start argument")
    if n & (n - 1):
        raise SemanticError("arange's range must be a power of 2")
    return _sem._new(tt.MakeRangeOp, [], block_type(core.int32, (n,)),
                    {"start": int_attr(lo), "end": int_attr(hi)})


# ---- creation ---------------------------------------------------------------------------------
@builtin
def full(_sem, shape, value, dtype) -> tensor:
    """A block of `shape` filled with `value` (a constant or a runtime scalar) of `dtype`."""
    dims = _shape((shape,))
    dt = _dtype(dtype)
    if isinstance(value, tensor):
        if value.is_block():
            raise SemanticError("tl.full's value must be a scalar")
        return _sem.splat(_sem.cast(value, dt), dims)
    return _sem.constant(_const(value, "value"), dt, dims)


@builtin
def zeros(_sem, shape, dtype) -> tensor:
    """A block of `shape` filled with zeros of `dtype`."""
    return _sem.constant(0, _dtype(dtype), _shape((shape,)))


@builtin
def zeros_like(_sem, input) -> tensor:
    """Zeros of `input`'s shape and dtype."""
    return _sem.constant(0, input.dtype, input.shape)


# ---- memory -----------------------------------------------------------------------------------
@builtin
def load(_sem, pointer, mask=None, other=None, boundary_check=None, padding_option=None,
         cache_modifier=None, eviction_policy=None, volatile=False) -> tensor:
    """Load from a pointer, a block of pointers or a block pointer (with `boundary_check` and
    `padding_option`); lanes where `mask` is false read `other`. `cache_modifier` (".ca",
    ".cg", ".cv"), `eviction_policy` ("evict_first", "evict_last") and `volatile` become the
    PTX load's qualifiers."""
    if isinstance(pointer, core.block_pointer):
        from . import block_pointers
        return block_pointers.load(_sem, pointer, mask, other, boundary_check, padding_option)
    _no_block_pointers(boundary_check, padding_option)
    return _sem.load(pointer, mask, other, _opt_const(cache_modifier, "cache_modifier"),
                     _opt_const(eviction_policy, "eviction_policy"),
                     bool(_const(volatile, "volatile")))


def _no_block_pointers(boundary_check, padding_option):
    if (boundary_check is not None and _const(boundary_check, "boundary_check") not in ((), [])) \
            or padding_option is not None and _const(padding_option, "padding_option") != "":
        raise SemanticError("boundary_check / padding_option belong to block pointers "
                            "(tl.make_block_ptr); use a mask with a plain pointer")


@builtin
def store(_sem, pointer, value, mask=None, boundary_check=None, cache_modifier=None,
          eviction_policy=None) -> None:
    """Store `value` (broadcast and cast to the pointee dtype) where `mask` is true, or
    through a block pointer with `boundary_check`. `cache_modifier` (".wb", ".cg", ".cs",
    ".wt") and `eviction_policy` ("evict_first", "evict_last") become the PTX store's
    qualifiers."""
    if isinstance(pointer, core.block_pointer):
        from . import block_pointers
        return block_pointers.store(_sem, pointer, value, mask, boundary_check)
    _no_block_pointers(boundary_check, None)
    _sem.store(pointer, value, mask, _opt_const(cache_modifier, "cache_modifier"),
               _opt_const(eviction_policy, "eviction_policy"))


def _atomic_kind(elt: dtype, int_signed: str, int_unsigned: str, flt: str | None) -> str:
    if elt.is_floating():
        if flt is None:
            raise SemanticError(f"this atomic does not support floating-point dtype {elt}")
        return flt
    return int_unsigned if elt.is_int_unsigned() else int_signed


def _pointee(_sem, pointer) -> dtype:
    ptr = _sem.to_tensor(pointer)
    if not ptr.dtype.is_ptr():
        raise SemanticError(f"atomics need a pointer, got a value of dtype {ptr.dtype}")
    return ptr.dtype.element_ty


ATOMIC_ORDERS = ("acquire", "release", "acq_rel", "relaxed")
ATOMIC_SCOPES = ("gpu", "cta", "sys")


def _ordering(sem, scope) -> tuple:
    """`(sem, scope)` of an atomic, checked: Triton's memory orderings and scopes (None: the
    defaults, acq_rel and gpu)."""
    sem, scope = _opt_const(sem, "sem"), _opt_const(scope, "scope")
    if sem is not None and sem not in ATOMIC_ORDERS:
        raise SemanticError(f"Memory semantic {sem} not supported: use one of "
                            + ", ".join(f"'{o}'" for o in ATOMIC_ORDERS))
    if scope is not None and scope not in ATOMIC_SCOPES:
        raise SemanticError(f"Memory scope {scope} not supported: use one of "
                            + ", ".join(f"'{o}'" for o in ATOMIC_SCOPES))
    return sem or "acq_rel", scope or "gpu"


@builtin
def atomic_add(_sem, pointer, val, mask=None, sem=None, scope=None) -> tensor:
    """Atomically add `val` at `pointer`; returns the old values."""
    kind = _atomic_kind(_pointee(_sem, pointer), "add", "add", "fadd")
    return _sem.atomic_rmw(kind, pointer, val, mask, *_ordering(sem, scope))


@builtin
def atomic_max(_sem, pointer, val, mask=None, sem=None, scope=None) -> tensor:
    """Atomically take the maximum with `val`; floats use Triton's sign trick on the bits
    (signed max for non-negative values, unsigned min for negative ones)."""
    elt = _pointee(_sem, pointer)
    return _atomic_minmax(_sem, pointer, val, mask, elt, "max", "umax", "umin",
                          *_ordering(sem, scope))


@builtin
def atomic_min(_sem, pointer, val, mask=None, sem=None, scope=None) -> tensor:
    """Atomically take the minimum with `val` (floats by the same bit trick as atomic_max)."""
    elt = _pointee(_sem, pointer)
    return _atomic_minmax(_sem, pointer, val, mask, elt, "min", "umin", "umax",
                          *_ordering(sem, scope))


def _atomic_minmax(_sem, pointer, val, mask, elt, signed, unsigned, neg_kind, order, scope):
    if not elt.is_floating():
        kind = unsigned if elt.is_int_unsigned() else signed
        return _sem.atomic_rmw(kind, pointer, val, mask, order, scope)
    if elt not in (core.float32, core.float64):
        raise SemanticError(f"float atomic min/max supports fp32 and fp64, got {elt}")
    ity = core.int32 if elt == core.float32 else core.int64
    ptr = _sem.to_tensor(pointer)
    val = _sem.cast(_sem.broadcast_to(_sem.to_tensor(val), ptr.shape), elt) \
        if isinstance(val, tensor) else _sem.constant(_const(val, "val"), elt, ptr.shape)
    iptr = _sem.cast(ptr, core.pointer_type(ity))
    ival = _sem.cast(val, ity, bitcast=True)
    zero = _sem.constant(0, elt, ptr.shape)
    pos = _sem.compare("ge", val, zero)
    neg = _sem.compare("lt", val, zero)
    if mask is not None:
        m = _sem._mask_for(ptr, mask)
        pos, neg = _sem.and_(m, pos), _sem.and_(m, neg)
    pos_ret = _sem.atomic_rmw(signed, iptr, ival, pos, order, scope)
    neg_ret = _sem.atomic_rmw(neg_kind, iptr, ival, neg, order, scope)
    return _sem.cast(_sem.where(pos, pos_ret, neg_ret), elt, bitcast=True)


@builtin
def atomic_xchg(_sem, pointer, val, mask=None, sem=None, scope=None) -> tensor:
    """Atomically exchange; returns the old values."""
    return _sem.atomic_rmw("exch", pointer, val, mask, *_ordering(sem, scope))


def _atomic_bitwise(kind):
    def impl(_sem, pointer, val, mask=None, sem=None, scope=None):
        """The builtin's implementation."""
        if not _pointee(_sem, pointer).is_int():
            raise SemanticError(f"atomic_{kind} needs an integer pointer")
        return _sem.atomic_rmw(kind, pointer, val, mask, *_ordering(sem, scope))
    impl.__name__ = f"atomic_{kind}"
    impl.__doc__ = f"Atomic bitwise {kind}; returns the old values."
    return builtin(impl)


atomic_and = _atomic_bitwise("and")
atomic_or = _atomic_bitwise("or")
atomic_xor = _atomic_bitwise("xor")


@builtin
def atomic_cas(_sem, pointer, cmp, val, sem=None, scope=None) -> tensor:
    """Atomic compare-and-swap: store `val` where the memory equals `cmp`; returns old values."""
    from compiler.dialects import tt
    ptr = _sem.to_tensor(pointer)
    elt = _pointee(_sem, ptr)
    vals = []
    for v in (cmp, val):
        if isinstance(v, tensor):
            vals.append(_sem.cast(_sem.broadcast_to(v, ptr.shape), elt))
        else:
            vals.append(_sem.constant(_const(v, "value"), elt, ptr.shape))
    order, scope = _ordering(sem, scope)
    return _sem._new(tt.AtomicCASOp, [ptr] + vals, vals[0].type,
                    {"sem": StringAttr(order), "scope": StringAttr(scope)})


# ---- shapes -----------------------------------------------------------------------------------
@builtin
def broadcast_to(_sem, input, *shape) -> tensor:
    """Broadcast `input` to `shape` (numpy rules)."""
    return _sem.broadcast_to(_sem.to_tensor(input), _shape(shape))


@builtin
def broadcast(_sem, input, other):
    """Broadcast two values to their common shape."""
    return _sem.broadcast_pair(_sem.to_tensor(input), _sem.to_tensor(other))


@builtin
def expand_dims(_sem, input, axis) -> tensor:
    """Insert dimensions of size 1 at `axis` (an int or a tuple of ints), each axis an index
    into the result (negative ones counted from its end), no axis given twice."""
    axes = _const(axis, "axis")
    axes = [_const(a, "axis") for a in (axes if isinstance(axes, (tuple, list)) else [axes])]
    t = _sem.to_tensor(input)
    rank = (len(t.shape) if t.is_block() else 0) + len(axes)
    normalized = []
    for a in axes:
        if not -rank <= a < rank:
            raise SemanticError(f"tl.expand_dims: invalid axis {a}; the result has {rank} "
                                f"dimension(s), so an axis is in [{-rank}, {rank})")
        normalized.append(a + rank if a < 0 else a)
    if len(set(normalized)) != len(normalized):
        raise SemanticError(f"tl.expand_dims: duplicate axes, normalized axes = {normalized}")
    if not t.is_block():
        t = _sem.splat(t, (1,))
        normalized = sorted(normalized)[1:]
        rank -= 1
    for a in sorted(normalized):
        t = _sem.expand_dims(t, a)
    return t


@builtin
def reshape(_sem, input, *shape, can_reorder=False) -> tensor:
    """A view of `input` with another shape of the same element count."""
    return _sem.reshape(_sem.to_tensor(input), _shape(shape), _const(can_reorder, "can_reorder"))


@builtin
def view(_sem, input, *shape) -> tensor:
    """Like reshape, with the element order left to the compiler."""
    return _sem.reshape(_sem.to_tensor(input), _shape(shape), True)


@builtin
def ravel(_sem, input, can_reorder=False) -> tensor:
    """A 1-D view of `input`."""
    t = _sem.to_tensor(input)
    return _sem.reshape(t, (t.numel,), _const(can_reorder, "can_reorder"))


@builtin
def trans(_sem, input, *dims) -> tensor:
    """Permute dimensions (reverse them when `dims` is empty)."""
    order = None
    if dims:
        order = _shape_like_ints(dims)
    return _sem.trans(_sem.to_tensor(input), order)


def _shape_like_ints(args):
    if len(args) == 1:
        v = args[0] if isinstance(args[0], (tuple, list)) else _const(args[0], "dims")
        args = v if isinstance(v, (tuple, list)) else (v,)
    return [_const(a, "dims") for a in args]


permute = trans


# ---- arithmetic -------------------------------------------------------------------------------
@builtin
def where(_sem, condition, x, y) -> tensor:
    """Elementwise `x` where `condition` is true, else `y` (broadcast and promoted together)."""
    return _sem.where(condition, x, y)


def _propagate_nan(value) -> bool:
    """True for PropagateNan.ALL, False for NONE (the default) and None."""
    v = _opt_const(value, "propagate_nan")
    v = getattr(v, "value", v)         # an enum member of Triton's spelling
    if v in (None, core.PropagateNan.NONE):
        return False
    if v == core.PropagateNan.ALL:
        return True
    raise SemanticError(f"propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL, "
                        f"got {v!r}")


@builtin
def maximum(_sem, x, y, propagate_nan=None) -> tensor:
    """Elementwise maximum (maxnumf for floats, maximumf with PropagateNan.ALL, maxsi/maxui
    for integers)."""
    return _sem.maximum(x, y, _propagate_nan(propagate_nan))


@builtin
def minimum(_sem, x, y, propagate_nan=None) -> tensor:
    """Elementwise minimum (minnumf for floats, minimumf with PropagateNan.ALL, minsi/minui
    for integers)."""
    return _sem.minimum(x, y, _propagate_nan(propagate_nan))


@builtin
def fma(_sem, x, y, z) -> tensor:
    """Fused multiply-add x * y + z."""
    return _sem.fma(x, y, z)


@builtin
def clamp(_sem, x, min, max, propagate_nan=None) -> tensor:
    """Elementwise min(max(x, min), max) of floats (integers too, an extension); a NaN `x`
    gives `min` by default and NaN with PropagateNan.ALL. The caller keeps min <= max."""
    nan = _propagate_nan(propagate_nan)
    x = _sem.to_tensor(x)
    if not x.dtype.is_floating() and not x.dtype.is_int():
        raise SemanticError(f"tl.clamp needs numbers, got {x.dtype}")
    return _sem.minimum(_sem.maximum(x, min, nan), max, nan)


@builtin
def fdiv(_sem, x, y, ieee_rounding=False) -> tensor:
    """Floating-point division x / y: arith.divf, or IEEE-rounded with `ieee_rounding=True`."""
    if _const(ieee_rounding, "ieee_rounding"):
        return _sem.precise_divf(x, y)
    return _sem.truediv(x, y)


@builtin
def div_rn(_sem, x, y) -> tensor:
    """Division rounded to nearest even, exactly as IEEE 754 says (tt.precise_divf)."""
    return _sem.precise_divf(x, y)


@builtin
def sqrt_rn(_sem, x) -> tensor:
    """Square root rounded to nearest even, exactly as IEEE 754 says (tt.precise_sqrt)."""
    return _sem.precise_sqrt(x)


def _host_cdiv(x, div):
    return (x + div - 1) // div


@builtin(host=_host_cdiv)
def cdiv(_sem, x, div) -> tensor:
    """Ceiling division (x + div - 1) // div; also usable on plain ints outside kernels."""
    if not isinstance(x, tensor) and not isinstance(div, tensor):
        return constexpr(_host_cdiv(_const(x, "x"), _const(div, "div")))
    return _sem.floordiv(_sem.sub(_sem.add(x, div), constexpr(1)), div)


@builtin
def umulhi(_sem, x, y) -> tensor:
    """The high half of the (2N-bit) product of two N-bit integers read as unsigned."""
    from compiler.dialects import tt
    a, b = _sem.operands(x, y)
    if not a.dtype.is_int():
        raise SemanticError(f"umulhi needs integer operands, got {a.dtype}")
    return _sem._new(tt.MulhiUIOp, [a, b], a.type)


@builtin
def to_tensor(_sem, x) -> tensor:
    """`x` as a runtime value (a Python number becomes a constant of its literal dtype)."""
    return _sem.to_tensor(x)


def _unary(name: str, doc: str):
    def impl(_sem, x):
        """The builtin's implementation."""
        return _sem.unary_math(name, _sem.to_tensor(x))
    impl.__name__ = name
    impl.__doc__ = doc
    return builtin(impl)


exp = _unary("exp", "Elementwise e**x.")
exp2 = _unary("exp2", "Elementwise 2**x.")
log = _unary("log", "Elementwise natural logarithm.")
log2 = _unary("log2", "Elementwise base-2 logarithm.")
sqrt = _unary("sqrt", "Elementwise square root (approximate, as Triton's tl.sqrt).")
rsqrt = _unary("rsqrt", "Elementwise 1 / sqrt(x).")
sin = _unary("sin", "Elementwise sine.")
cos = _unary("cos", "Elementwise cosine.")
floor = _unary("floor", "Elementwise floor.")
ceil = _unary("ceil", "Elementwise ceiling.")
erf = _unary("erf", "Elementwise error function.")


@builtin
def abs(_sem, x) -> tensor:
    """Elementwise absolute value (absf / absi; unsigned values pass through)."""
    return _sem.abs(_sem.to_tensor(x))


@builtin
def sigmoid(_sem, x) -> tensor:
    """1 / (1 + exp(-x))."""
    x = _sem.to_tensor(x)
    return _sem.truediv(constexpr(1), _sem.add(constexpr(1), _sem.unary_math("exp", _sem.neg(x))))


@builtin
def softmax(_sem, x, dim=None, keep_dims=False, ieee_rounding=False) -> tensor:
    """exp(x - max) / sum(exp(x - max)) along `dim` (0 when None)."""
    x = _sem.to_tensor(x)
    axis = _axis(dim) or 0
    z = _sem.sub(x, _reduce_max(_sem, x, axis, keep_dims=True))
    num = _sem.unary_math("exp", z)
    den = _reduce_sum(_sem, num, axis, keep_dims=True)
    return _sem.truediv(num, den)


# ---- reductions and scans ---------------------------------------------------------------------
def _reduce_sum(_sem, x, axis, keep_dims=False, dt=None):
    x = _sem.to_tensor(x)
    if dt is None and x.dtype.is_int() and x.dtype.int_bitwidth < 32:
        dt = core.uint32 if x.dtype.is_int_unsigned() else core.int32
    if dt is not None:
        x = _sem.cast(x, dt)
    return _sem.reduce([x], axis, lambda a: [_sem.add(a[0], a[1])], keep_dims)[0]


def _upcast_for_minmax(_sem, x):
    if x.dtype.primitive_bitwidth < 32:
        if x.dtype.is_floating():
            return _sem.cast(x, core.float32)
        return _sem.cast(x, core.uint32 if x.dtype.is_int_unsigned() else core.int32)
    return x


def _reduce_max(_sem, x, axis, keep_dims=False):
    x = _upcast_for_minmax(_sem, _sem.to_tensor(x))
    return _sem.reduce([x], axis, lambda a: [_sem.maximum(a[0], a[1])], keep_dims)[0]


def _reduce_min(_sem, x, axis, keep_dims=False):
    x = _upcast_for_minmax(_sem, _sem.to_tensor(x))
    return _sem.reduce([x], axis, lambda a: [_sem.minimum(a[0], a[1])], keep_dims)[0]


def _arg_reduce(_sem, x, axis, tie_break_left, keep_dims, pred):
    """(value, index) reduction keeping the first index on ties when `tie_break_left`."""
    x = _upcast_for_minmax(_sem, _sem.to_tensor(x))
    if not x.is_block():
        raise SemanticError("argmax/argmin need a tensor, got a scalar")
    if axis is None:
        x = _sem.reshape(x, (x.numel,), True)
        axis = 0
    if axis < 0:
        axis += len(x.shape)
    n = x.shape[axis]
    index = arange.__tile_builtin__(_sem, constexpr(0), constexpr(n))
    for _ in range(axis):
        index = _sem.expand_dims(index, 0)
    for _ in range(axis + 1, len(x.shape)):
        index = _sem.expand_dims(index, len(index.shape))
    index = _sem.broadcast_to(index, x.shape)

    def combine(args):
        """The (value, index) combine region body."""
        v1, i1, v2, i2 = args
        better = _sem.compare(pred, v1, v2)
        if _const(tie_break_left, "tie_break_left"):
            tie = _sem.and_(_sem.compare("eq", v1, v2), _sem.compare("lt", i1, i2))
            better = _sem.or_(better, tie)
        return [_sem.where(better, v1, v2), _sem.where(better, i1, i2)]
    return _sem.reduce([x, index], axis, combine, keep_dims)


@builtin
def sum(_sem, input, axis=None, keep_dims=False, dtype=None) -> tensor:
    """Sum along `axis` (all axes when None); small integers accumulate in 32 bits."""
    dt = None if dtype is None else _dtype(dtype)
    return _reduce_sum(_sem, input, _axis(axis), _const(keep_dims, "keep_dims"), dt)


@builtin
def xor_sum(_sem, input, axis=None, keep_dims=False) -> tensor:
    """Bitwise xor of the integers (or booleans) along `axis` (all axes when None), in the
    input's own dtype."""
    x = _sem.to_tensor(input)
    if not x.dtype.is_int():
        raise SemanticError(f"tl.xor_sum needs integer (or boolean) values, got {x.dtype}")
    return _sem.reduce([x], _axis(axis), lambda a: [_sem.xor_(a[0], a[1])],
                       _const(keep_dims, "keep_dims"))[0]


def _max_or_min(_sem, input, axis, return_indices, tie_break_left, keep_dims, pred, reduce):
    """Shared body of tl.max / tl.min: a plain reduction, or (value, index) with indices."""
    if _const(return_indices, "return_indices"):
        v, i = _arg_reduce(_sem, input, _axis(axis), tie_break_left,
                           _const(keep_dims, "keep_dims"), pred)
        return (v, i)
    return reduce(_sem, input, _axis(axis), _const(keep_dims, "keep_dims"))


@builtin
def max(_sem, input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False):
    """Maximum along `axis`; with `return_indices` also the index where it occurs."""
    return _max_or_min(_sem, input, axis, return_indices, return_indices_tie_break_left,
                       keep_dims, "gt", _reduce_max)


@builtin
def min(_sem, input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False):
    """Minimum along `axis`; with `return_indices` also the index where it occurs."""
    return _max_or_min(_sem, input, axis, return_indices, return_indices_tie_break_left,
                       keep_dims, "lt", _reduce_min)


@builtin
def argmax(_sem, input, axis, tie_break_left=True, keep_dims=False) -> tensor:
    """Index of the maximum along `axis` (the first one on ties)."""
    return _arg_reduce(_sem, input, _axis(axis), tie_break_left, _const(keep_dims, "keep_dims"),
                       "gt")[1]


@builtin
def argmin(_sem, input, axis, tie_break_left=True, keep_dims=False) -> tensor:
    """Index of the minimum along `axis` (the first one on ties)."""
    return _arg_reduce(_sem, input, _axis(axis), tie_break_left, _const(keep_dims, "keep_dims"),
                       "lt")[1]


def _promote_bf16(_sem, x: tensor) -> tensor:
    """`x` in fp32 when it is bf16 (a long bf16 scan would round at every step)."""
    return _sem.cast(x, core.float32) if x.dtype.is_bf16() else x


@builtin
def cumsum(_sem, input, axis=0, reverse=False, dtype=None) -> tensor:
    """Inclusive prefix sum along `axis`; bf16 accumulates in fp32 (and the result is fp32),
    integers narrower than 32 bits in (u)int32, as in Triton."""
    x = _promote_bf16(_sem, _sem.to_tensor(input))
    dt = None if dtype is None else _dtype(dtype)
    if dt is None and x.dtype.is_int() and x.dtype.int_bitwidth < 32:
        dt = core.uint32 if x.dtype.is_int_unsigned() else core.int32
    if dt is not None:
        x = _sem.cast(x, dt)
    return _sem.scan([x], _axis(axis) or 0, lambda a: [_sem.add(a[0], a[1])],
                    _const(reverse, "reverse"))[0]


@builtin
def cumprod(_sem, input, axis=0, reverse=False) -> tensor:
    """Inclusive prefix product along `axis`; bf16 multiplies in fp32 (an fp32 result), as in
    Triton."""
    x = _promote_bf16(_sem, _sem.to_tensor(input))
    return _sem.scan([x], _axis(axis) or 0, lambda a: [_sem.mul(a[0], a[1])],
                    _const(reverse, "reverse"))[0]


def _tensor_tuple(_sem, input) -> tuple:
    """(list of tensors, whether `input` was one tensor) for builtins taking a tensor or a
    tuple of tensors."""
    single = not isinstance(input, (tuple, list))
    items = [input] if single else list(input)
    if not items:
        raise SemanticError("expected a tensor or a non-empty tuple of tensors")
    return [_sem.to_tensor(t) for t in items], single


def _combine(_sem, combine_fn, inputs, what: str):
    """The region-body builder that calls the user's @jit `combine_fn`."""
    dtypes = [t.dtype for t in inputs]
    return lambda args: _sem.call_combine(combine_fn, args, dtypes, what)


@builtin
def reduce(_sem, input, axis, combine_fn, keep_dims=False):
    """Reduce `input` (a tensor or a tuple of same-shape tensors) along `axis` (all axes when
    None) with the @jit function `combine_fn(a0, .., b0, ..) -> (c0, ..)`, which must be
    associative; returns a tensor, or a tuple for a tuple input."""
    inputs, single = _tensor_tuple(_sem, input)
    _same_shapes(inputs, "tl.reduce")
    out = _sem.reduce(inputs, _axis(axis), _combine(_sem, combine_fn, inputs, "tl.reduce"),
                      _const(keep_dims, "keep_dims"))
    return out[0] if single else tuple(out)


@builtin
def associative_scan(_sem, input, axis, combine_fn, reverse=False):
    """Inclusive scan of `input` (a tensor or a tuple of same-shape tensors) along `axis` with
    the associative @jit `combine_fn`; `reverse=True` scans from the end."""
    inputs, single = _tensor_tuple(_sem, input)
    _same_shapes(inputs, "tl.associative_scan")
    ax = _axis(axis)
    if ax is None:
        raise SemanticError("tl.associative_scan needs an axis")
    out = _sem.scan(inputs, ax, _combine(_sem, combine_fn, inputs, "tl.associative_scan"),
                    _const(reverse, "reverse"))
    return out[0] if single else tuple(out)


def _same_shapes(inputs, what: str) -> None:
    shapes = {t.shape for t in inputs}
    if len(shapes) > 1:
        raise SemanticError(f"{what}'s inputs must have one shape, got "
                            + ", ".join(str(list(t.shape)) for t in inputs))


# ---- dot --------------------------------------------------------------------------------------
@builtin
def dot(_sem, input, other, acc=None, input_precision=None, allow_tf32=None,
        max_num_imprecise_acc=None, out_dtype=None) -> tensor:
    """Matrix product of two 2-D blocks plus `acc` (fp32 accumulation for floats, int32 for
    int8); `input_precision` is "tf32", "tf32x3" or "ieee" (default: the compile option
    default_dot_input_precision, "tf32" unless set; allow_tf32=False means "ieee"). Two 3-D
    blocks [B, M, K] x [B, K, N] multiply batch by batch (B 2-D products)."""
    a, b = _sem.to_tensor(input), _sem.to_tensor(other)
    if len(a.shape) != len(b.shape) or len(a.shape) not in (2, 3):
        raise SemanticError(f"tl.dot needs two 2-D (or two 3-D, batched) blocks, got shapes "
                            f"{list(a.shape)} and {list(b.shape)}")
    batched = len(a.shape) == 3
    if batched and a.shape[0] != b.shape[0]:
        raise SemanticError(f"tl.dot's batch dims differ: {list(a.shape)} x {list(b.shape)}")
    mk, kn = a.shape[-2:], b.shape[-2:]
    if mk[1] != kn[0]:
        raise SemanticError(f"tl.dot's inner dimensions differ: {list(a.shape)} x {list(b.shape)}")
    if a.dtype != b.dtype:
        raise SemanticError(f"tl.dot's operands must have the same dtype, got {a.dtype} and "
                            f"{b.dtype}; cast one with .to()")
    min_k = 32 if a.dtype.primitive_bitwidth == 8 else 16      # Triton's min_dot_size on CUDA
    if _sem.gpu_limits and mk[1] < min_k:        # small M / N are padded (Triton 3.6 too)
        raise SemanticError(f"Input shapes should have M >= 1, N >= 1 and K >= {min_k}: "
                            f"tl.dot of {a.dtype} operands {list(a.shape)} x {list(b.shape)} "
                            f"is too small for the tensor cores")
    precision = _opt_const(input_precision, "input_precision")
    if precision is None:
        tf32 = _opt_const(allow_tf32, "allow_tf32")
        precision = {False: "ieee", True: "tf32"}.get(tf32, _sem.default_dot_input_precision)
    if precision not in ("tf32", "tf32x3", "ieee"):
        raise SemanticError(f"input_precision must be 'tf32', 'tf32x3' or 'ieee', got {precision!r}")
    out = _dot_result_dtype(a.dtype, None if out_dtype is None else _dtype(out_dtype, "out_dtype"))
    shape = a.shape[:-1] + (b.shape[-1],)
    if acc is None:
        acc_t = _sem.constant(0, out, shape)
    else:
        acc_t = _sem.to_tensor(acc)
        if acc_t.shape != shape:
            raise SemanticError(f"tl.dot's accumulator has shape {list(acc_t.shape)}, expected "
                                f"{list(shape)}")
    attrs = {"inputPrecision": StringAttr(precision)}
    imprecise = _opt_const(max_num_imprecise_acc, "max_num_imprecise_acc")
    if imprecise is not None:
        if a.dtype.name.startswith("fp8") and imprecise > mk[1]:
            raise SemanticError(f"max_num_imprecise_acc ({imprecise}) must be <= K ({mk[1]})")
        if a.dtype.name.startswith("fp8") and imprecise < 0:
            raise SemanticError(f"max_num_imprecise_acc ({imprecise}) must be >= 0")
        attrs["maxNumImpreciseAcc"] = int_attr(imprecise)
    if batched:
        return _batched_dot(_sem, a, b, acc_t, attrs)
    return _dot2d(_sem, a, b, acc_t, attrs)


def _dot_result_dtype(operand: dtype, out_dtype):
    """The accumulator dtype, as Triton picks it: int32 for integer operands and fp32 for
    fp32 / bf16 ones whatever `out_dtype` says; fp16 operands accumulate in `out_dtype`
    (fp16 or fp32, fp32 by default). A bf16 out_dtype is refused, as in Triton."""
    if out_dtype is not None and out_dtype.is_bf16():
        raise SemanticError("out_dtype=bfloat16 is unsupported; use out_dtype=float32 or "
                            "float16 and cast the result with .to(tl.bfloat16)")
    if operand.is_int():
        return core.int32
    if operand in (core.float32, core.bfloat16) or out_dtype is None:
        return core.float32
    if out_dtype not in (core.float16, core.float32):
        raise SemanticError(f"tl.dot's out_dtype must be float16 or float32, got {out_dtype}")
    return out_dtype


def _dot2d(_sem, a, b, acc, attrs: dict) -> tensor:
    from compiler.dialects import tt
    return _sem._new(tt.DotOp, [a, b, acc], acc.type, dict(attrs))


def _batch_slice(_sem, x, index: int) -> tensor:
    """`x[index]` of a 3-D block: the batch entry picked exactly by a reduction over dim 0."""
    batch = arange.__tile_builtin__(_sem, constexpr(0), constexpr(x.shape[0]))
    hit = _sem.broadcast_to(_sem.expand_dims(_sem.expand_dims(
        _sem.compare("eq", batch, constexpr(index)), 1), 2), x.shape)

    def pick(args):
        """Keep the entry of the wanted batch."""
        v1, h1, v2, h2 = args
        return [_sem.where(h2, v2, v1), _sem.or_(h1, h2)]
    return _sem.reduce([x, hit], 0, pick)[0]


def _batched_dot(_sem, a, b, acc, attrs: dict) -> tensor:
    """[B, M, K] x [B, K, N] + acc as B 2-D tt.dot ops, reassembled along dim 0."""
    out = acc
    batch = arange.__tile_builtin__(_sem, constexpr(0), constexpr(a.shape[0]))
    for i in range(a.shape[0]):
        c = _dot2d(_sem, _batch_slice(_sem, a, i), _batch_slice(_sem, b, i),
                   _batch_slice(_sem, acc, i), attrs)
        here = _sem.broadcast_to(_sem.expand_dims(_sem.expand_dims(
            _sem.compare("eq", batch, constexpr(i)), 1), 2), acc.shape)
        out = _sem.where(here, _sem.broadcast_to(_sem.expand_dims(c, 0), acc.shape), out)
    return out


# ---- hints, assertions, printing ---------------------------------------------------------------
def _hint(_sem, input, values, attr_name: str) -> tensor:
    vals = _const(values, "values")
    vals = list(vals) if isinstance(vals, (tuple, list)) else [vals]
    vals = [_const(v, "values") for v in vals]
    t = _sem.to_tensor(input)
    rank = max_rank = len(t.shape) if t.is_block() else 1
    if len(vals) != max_rank:
        raise SemanticError(f"{attr_name} needs {rank} value(s), one per dimension, got {len(vals)}")
    owner = t.handle.owner_op
    if owner is not None:
        owner.attributes[attr_name] = DenseArrayAttr(tuple(int(v) for v in vals))
    return t


@builtin
def multiple_of(_sem, input, values) -> tensor:
    """Promise that `input`'s values are multiples of `values` (sets tt.divisibility)."""
    return _hint(_sem, input, values, "tt.divisibility")


@builtin
def max_contiguous(_sem, input, values) -> tensor:
    """Promise that runs of `values` consecutive elements are contiguous (tt.contiguity)."""
    return _hint(_sem, input, values, "tt.contiguity")


@builtin
def max_constancy(_sem, input, values) -> tensor:
    """Promise that runs of `values` elements are equal (tt.constancy)."""
    return _hint(_sem, input, values, "tt.constancy")


@builtin
def assume(_sem, cond) -> None:
    """A promise that the scalar condition holds (`llvm.intr.assume`): LLVM may optimize by
    it; it is not checked (a false promise is undefined behaviour, as in Triton)."""
    from compiler.dialects import tt
    c = _sem.to_tensor(cond)
    if c.is_block() or not c.dtype.is_bool():
        raise SemanticError(f"tl.assume needs a scalar boolean condition, got {c.type}")
    _sem._op(tt.AssumeOp, [c], None)


@builtin
def static_assert(_sem, cond, msg="") -> None:
    """Fail compilation when the constant `cond` is false."""
    if not _const(cond, "static_assert's condition"):
        raise StaticAssertionFailed(f"static_assert failed: {_const(msg, 'msg')}"
                                    if _const(msg, "msg") else "static_assert failed")


@builtin
def static_print(_sem, *values) -> None:
    """Print constant values at compile time."""
    print(*[_const(v, "static_print's values") for v in values])


@builtin
def device_print(_sem, prefix, *args, hex=False) -> None:
    """Print `prefix` and the values of `args` from every program instance (tt.print)."""
    from compiler.dialects import tt
    text = _const(prefix, "prefix")
    if not isinstance(text, str):
        raise SemanticError("device_print's first argument must be a string prefix")
    values = [_sem.to_tensor(a) for a in args]
    signed = tuple(1 if v.dtype.is_int_signed() else 0 for v in values)
    _sem._op(tt.PrintOp, values, None, {"prefix": StringAttr(text),
                                       "hex": BoolAttr(bool(_const(hex, "hex"))),
                                       "isSigned": DenseArrayAttr(signed)})


@builtin
def device_assert(_sem, cond, msg="") -> None:
    """Check `cond` at run time (tt.assert)."""
    from compiler.dialects import tt
    c = _sem.to_tensor(cond)
    if not c.dtype.is_bool():
        c = _sem.cast(c, core.int1)
    _sem._op(tt.AssertOp, [c], None, {"message": StringAttr(str(_const(msg, "msg")))})


# ---- tensor methods ---------------------------------------------------------------------------
@builtin
def cast(_sem, input, dtype, fp_downcast_rounding=None, bitcast=False) -> tensor:
    """Cast to `dtype` (Triton's conversions), reinterpret the bits with `bitcast=True`, or
    narrow floats with `fp_downcast_rounding` "rtne" (the default) or "rtz"."""
    x, dt = _sem.to_tensor(input), _dtype(dtype)
    bits = _const(bitcast, "bitcast")
    rounding = _opt_const(fp_downcast_rounding, "fp_downcast_rounding")
    if bits:
        if rounding is not None:
            raise SemanticError("fp_downcast_rounding does not apply to a bitcast")
        return _sem.cast(x, dt, True)
    if rounding is not None:
        return _sem.cast_rounded(x, dt, rounding)
    return _sem.cast(x, dt)


to = cast


# Method name -> builtin, for `x.name(...)` on a tensor (x becomes the first argument).
TENSOR_METHODS = {
    "to": cast, "cast": cast, "sum": sum, "max": max, "min": min, "argmax": argmax,
    "argmin": argmin, "reduce": reduce, "associative_scan": associative_scan,
    "cumsum": cumsum, "cumprod": cumprod, "reshape": reshape, "view": view, "ravel": ravel,
    "trans": trans, "permute": trans, "broadcast_to": broadcast_to, "expand_dims": expand_dims,
    "exp": exp, "exp2": exp2, "log": log, "log2": log2, "sqrt": sqrt, "rsqrt": rsqrt,
    "sin": sin, "cos": cos, "abs": abs, "sigmoid": sigmoid, "softmax": softmax,
    "floor": floor, "ceil": ceil, "erf": erf,
}
