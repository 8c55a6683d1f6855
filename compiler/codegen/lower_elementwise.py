"""Lowering of elementwise ops (arith, math, a few tt ops): one LLVM instruction (or intrinsic)
per register. Fast fp32 math follows Triton's defaults: exp/log through ex2.approx/lg2.approx
with the multiply by log2(e) / ln(2), exp2 as ex2.approx.ftz, `/` as div.full.f32, sqrt as
sqrt.approx.ftz.f32. Double precision: IEEE sqrt and division in LLVM, the transcendental
functions from libdevice (`__nv_exp`, ...), as Triton."""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import arith, tt, ub
from compiler.dialects import math as math_ops
from compiler.analysis.layouts import equal_value_registers
from compiler.ir.attributes import DenseAttr
from compiler.ir.types import TensorType

from .fp8 import MIN_ARCH as FP8_MIN_ARCH, convert_fp8, is_fp8
from .libdevice import PREFIX as LIBDEVICE_PREFIX, find_libdevice
from .llvm_helpers import CONTRACT, F32, call_intrinsic, inline_ptx, llvm_type, type_bits
from .lowering import LoweringError
from .registry import lowers
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def _map(ctx, op, fn) -> None:
    """Apply `fn(builder, *scalars)` register by register and record the result."""
    lists = [ctx.get(v) for v in op.operands]
    b = ctx.builder
    ctx.set(op.results[0], [fn(b, *vals) for vals in zip(*lists)])


def _map_constant_blocks(ctx, op, fn) -> None:
    """`_map`, computing one register per block of equal values that axis info proves (a mask
    `cols < n` with n a multiple of 16 is constant over aligned runs of 16 columns, so a
    thread's columns 8j, 8j+1, 8j+8, 8j+9 of an mma tile share one compare); the others copy
    it. As Triton's elementwise lowering deduplicates by constancy."""
    result = op.results[0]
    t = result.type
    same = None
    info = ctx.axis.get(result) if ctx.axis is not None else None
    if isinstance(t, TensorType) and t.encoding is not None and info is not None:
        same = equal_value_registers(t.encoding, tuple(t.shape), tuple(info.constancy))
    if same is None:
        _map(ctx, op, fn)
        return
    lists = [ctx.get(v) for v in op.operands]
    b = ctx.builder
    out = []
    for r, vals in enumerate(zip(*lists)):
        out.append(out[same[r]] if same[r] != r else fn(b, *vals))
    ctx.set(result, out)


def _register_count(ctx, value) -> int:
    from compiler.analysis.layouts import elements_per_thread
    t = value.type
    if getattr(t, "encoding", None) is None:
        return 1
    return elements_per_thread(t.encoding, t.shape)


@lowers(arith.ConstantOp)
def lower_constant(ctx, op):
    """`arith.constant`: a scalar, or the splat value in every register of the tensor."""
    attr = op.attributes["value"]
    res = op.results[0]
    ty = llvm_type(res.type)
    value = attr.value
    if isinstance(ty, ir.IntType):
        value = int(value) & ((1 << ty.width) - 1) if ty.width > 1 else int(bool(value))
    c = ir.Constant(ty, value)
    count = _register_count(ctx, res) if isinstance(attr, DenseAttr) else 1
    ctx.set(res, [c] * count)


@lowers(ub.PoisonOp)
def lower_poison(ctx, op):
    """`ub.poison`: LLVM's `poison` in every register (the value is never defined)."""
    res = op.results[0]
    poison = ir.FormattedConstant(llvm_type(res.type), "poison")
    count = _register_count(ctx, res) if isinstance(res.type, TensorType) else 1
    ctx.set(res, [poison] * count)


# ---- integer ---------------------------------------------------------------------------------
def _ceildivsi(b, x, y):
    q = b.sdiv(x, y)
    r = b.srem(x, y)
    zero = ir.Constant(x.type, 0)
    nonzero = b.icmp_signed("!=", r, zero)
    same_sign = b.icmp_signed("==", b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero))
    bump = b.zext(b.and_(nonzero, same_sign), x.type)
    return b.add(q, bump)


def _mulhiui(b, x, y):
    wide = ir.IntType(x.type.width * 2)
    product = b.mul(b.zext(x, wide), b.zext(y, wide))
    return b.trunc(b.lshr(product, ir.Constant(wide, x.type.width)), x.type)


def _minmax(pred, signed):
    def emit(b, x, y):
        cmp = b.icmp_signed(pred, x, y) if signed else b.icmp_unsigned(pred, x, y)
        return b.select(cmp, x, y)
    return emit


INT_BINARY = {
    "addi": lambda b, x, y: b.add(x, y),
    "subi": lambda b, x, y: b.sub(x, y),
    "muli": lambda b, x, y: b.mul(x, y),
    "divsi": lambda b, x, y: b.sdiv(x, y),
    "divui": lambda b, x, y: b.udiv(x, y),
    "remsi": lambda b, x, y: b.srem(x, y),
    "remui": lambda b, x, y: b.urem(x, y),
    "andi": lambda b, x, y: b.and_(x, y),
    "ori": lambda b, x, y: b.or_(x, y),
    "xori": lambda b, x, y: b.xor(x, y),
    "shli": lambda b, x, y: b.shl(x, y),
    "shrsi": lambda b, x, y: b.ashr(x, y),
    "shrui": lambda b, x, y: b.lshr(x, y),
    "maxsi": _minmax(">", True),
    "minsi": _minmax("<", True),
    "maxui": _minmax(">", False),
    "minui": _minmax("<", False),
    "ceildivsi": _ceildivsi,
    "mulhiui": _mulhiui,
}


def _register_int_binary(name, fn):
    @lowers(arith.BINARY_OPS[name])
    def lower(ctx, op):
        _map(ctx, op, fn)
    lower.__doc__ = f"`arith.{name}` register by register."
    return lower


for _name, _fn in INT_BINARY.items():
    _register_int_binary(_name, _fn)


@lowers(tt.MulhiUIOp)
def lower_tt_mulhiui(ctx, op):
    """`tt.mulhiui`: the high half of an unsigned product."""
    _map(ctx, op, _mulhiui)


@lowers(math_ops.AbsIOp)
def lower_absi(ctx, op):
    """`math.absi`: select(x < 0, -x, x)."""
    def emit(b, x):
        zero = ir.Constant(x.type, 0)
        return b.select(b.icmp_signed("<", x, zero), b.sub(zero, x), x)
    _map(ctx, op, emit)


# ---- float -------------------------------------------------------------------------------------
def _via_f32(emit32, emit64):
    """Compute a float function in f32 for f16/bf16 operands; f64 with `emit64`."""
    def emit(b, *xs):
        ty = xs[0].type
        if ty == F32:
            return emit32(b, *xs)
        if type_bits(ty) == 16:
            wide = [b.fpext(x, F32) for x in xs]
            return b.fptrunc(emit32(b, *wide), ty)
        if isinstance(ty, ir.DoubleType):
            return emit64(b, *xs)
        raise LoweringError(f"this math function supports f16, bf16, f32 and f64, not {ty}")
    return emit


def _libdevice(name: str):
    """A call to libdevice's double-precision `__nv_<name>` (declared here; the bitcode is
    linked in before LLVM's optimizer, see codegen/libdevice.py), as Triton lowers f64 math."""
    def emit(b, *xs):
        if find_libdevice() is None:
            raise LoweringError(f"double-precision {name} needs CUDA's libdevice and "
                                f"libdevice.10.bc was not found: install the nvidia-nvvm wheel "
                                f"(a dependency of nvidia-cuda-nvcc)")
        return call_intrinsic(b, f"{LIBDEVICE_PREFIX}{name}", xs[0].type, list(xs))
    return emit


def _sqrt64(b, x):
    return call_intrinsic(b, "llvm.sqrt.f64", x.type, [x])


def _intrinsic_f(name):
    return lambda b, *xs: call_intrinsic(b, name, xs[0].type, list(xs))


def _llvm_math(name):
    """A generic LLVM math intrinsic such as llvm.fabs (suffixed with the type)."""
    def emit(b, *xs):
        suffix = {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}[str(xs[0].type)]
        return call_intrinsic(b, f"llvm.{name}.{suffix}", xs[0].type, list(xs))
    return emit


def _ex2(b, x):
    return call_intrinsic(b, "llvm.nvvm.ex2.approx.f", F32, [x])


def _ex2_ftz(b, x):
    """`ex2.approx.ftz.f32`: what Triton's exp2 becomes (libdevice's __nv_exp2f with
    flush-to-zero); without ftz ptxas wraps each MUFU.EX2 in a denormal range check and two
    multiplies."""
    return call_intrinsic(b, "llvm.nvvm.ex2.approx.ftz.f", F32, [x])


def _lg2(b, x):
    return call_intrinsic(b, "llvm.nvvm.lg2.approx.f", F32, [x])


def _exp32(b, x):
    return _ex2(b, b.fmul(x, ir.Constant(F32, LOG2E), flags=CONTRACT))


def _log32(b, x):
    return b.fmul(_lg2(b, x), ir.Constant(F32, LN2), flags=CONTRACT)


def _divf(b, x, y):
    if x.type == F32:
        return call_intrinsic(b, "llvm.nvvm.div.full", F32, [x, y])
    return b.fdiv(x, y)


def _tanh32(b, x):
    """`tanh.approx.f32` (sm_75+; LLVM has no NVVM intrinsic for it)."""
    return inline_ptx(b, F32, "tanh.approx.f32 $0, $1;", "=f,f", [x], side_effect=False)


def _expm1_32(b, x):
    return b.fsub(_exp32(b, x), ir.Constant(F32, 1.0))


def _log1p32(b, x):
    return _log32(b, b.fadd(x, ir.Constant(F32, 1.0)))


def _tan32(b, x):
    s = call_intrinsic(b, "llvm.nvvm.sin.approx.f", F32, [x])
    c = call_intrinsic(b, "llvm.nvvm.cos.approx.f", F32, [x])
    return call_intrinsic(b, "llvm.nvvm.div.full", F32, [s, c])


def _erf32(b, x):
    """erf via Abramowitz-Stegun 7.1.26 (absolute error < 1.5e-7)."""
    one = ir.Constant(F32, 1.0)
    ax = call_intrinsic(b, "llvm.fabs.f32", F32, [x])
    t = call_intrinsic(b, "llvm.nvvm.div.full", F32,
                       [one, b.fadd(one, b.fmul(ir.Constant(F32, 0.3275911), ax))])
    poly = ir.Constant(F32, 1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly = b.fadd(b.fmul(poly, t), ir.Constant(F32, c))
    poly = b.fmul(poly, t)
    e = _exp32(b, b.fneg(b.fmul(ax, ax)))
    y = b.fsub(one, b.fmul(poly, e))
    return call_intrinsic(b, "llvm.copysign.f32", F32, [y, x])


FLOAT_BINARY = {
    "addf": lambda b, x, y: b.fadd(x, y, flags=CONTRACT),
    "subf": lambda b, x, y: b.fsub(x, y, flags=CONTRACT),
    "mulf": lambda b, x, y: b.fmul(x, y, flags=CONTRACT),
    "divf": _divf,
    "remf": lambda b, x, y: b.frem(x, y),
    "maxnumf": _llvm_math("maxnum"),
    "minnumf": _llvm_math("minnum"),
    "maximumf": _llvm_math("maximum"),
    "minimumf": _llvm_math("minimum"),
}

MATH_UNARY = {
    "exp": _via_f32(_exp32, _libdevice("exp")),
    "exp2": _via_f32(_ex2_ftz, _libdevice("exp2")),
    "log": _via_f32(_log32, _libdevice("log")),
    "log2": _via_f32(_lg2, _libdevice("log2")),
    "sqrt": _via_f32(_intrinsic_f("llvm.nvvm.sqrt.approx.ftz.f"), _sqrt64),
    "rsqrt": _via_f32(_intrinsic_f("llvm.nvvm.rsqrt.approx.ftz.f"), _libdevice("rsqrt")),
    "sin": _via_f32(_intrinsic_f("llvm.nvvm.sin.approx.f"), _libdevice("sin")),
    "cos": _via_f32(_intrinsic_f("llvm.nvvm.cos.approx.f"), _libdevice("cos")),
    "tanh": _via_f32(_tanh32, _libdevice("tanh")),
    "expm1": _via_f32(_expm1_32, _libdevice("expm1")),
    "log1p": _via_f32(_log1p32, _libdevice("log1p")),
    "tan": _via_f32(_tan32, _libdevice("tan")),
    "erf": _via_f32(_erf32, _libdevice("erf")),
    "absf": _llvm_math("fabs"),
    "floor": _llvm_math("floor"),
    "ceil": _llvm_math("ceil"),
    "trunc": _llvm_math("trunc"),
    "round": _llvm_math("round"),
    "roundeven": _llvm_math("roundeven"),
}


def _register_map(op_class, fn):
    @lowers(op_class)
    def lower(ctx, op):
        _map(ctx, op, fn)
    lower.__doc__ = f"`{op_class.name}` register by register."
    return lower


for _name, _fn in FLOAT_BINARY.items():
    _register_map(arith.BINARY_OPS[_name], _fn)
for _name, _fn in MATH_UNARY.items():
    _register_map(math_ops.UNARY_OPS[_name], _fn)
_register_map(arith.NegFOp, lambda b, x: b.fneg(x))
_register_map(math_ops.FmaOp, _llvm_math("fma"))
_register_map(math_ops.CopySignOp, _llvm_math("copysign"))
_register_map(tt.PreciseSqrtOp, _via_f32(_intrinsic_f("llvm.nvvm.sqrt.rn.f"), _sqrt64))
_register_map(tt.PreciseDivFOp, _via_f32(_intrinsic_f("llvm.nvvm.div.rn.f"),
                                         lambda b, x, y: b.fdiv(x, y)))


# ---- comparisons and select ----------------------------------------------------------------------
INT_PREDICATES = {"eq": ("==", True), "ne": ("!=", True), "slt": ("<", True),
                  "sle": ("<=", True), "sgt": (">", True), "sge": (">=", True),
                  "ult": ("<", False), "ule": ("<=", False), "ugt": (">", False),
                  "uge": (">=", False)}
FLOAT_PREDICATES = {"oeq": ("==", True), "ogt": (">", True), "oge": (">=", True),
                    "olt": ("<", True), "ole": ("<=", True), "one": ("!=", True),
                    "ord": ("ord", True), "ueq": ("==", False), "ugt": (">", False),
                    "uge": (">=", False), "ult": ("<", False), "ule": ("<=", False),
                    "une": ("!=", False), "uno": ("uno", False)}


@lowers(arith.CmpIOp)
def lower_cmpi(ctx, op):
    """`arith.cmpi`: icmp with the signedness of the predicate."""
    pred, signed = INT_PREDICATES[op.attributes["predicate"].value]

    def emit(b, x, y):
        return b.icmp_signed(pred, x, y) if signed else b.icmp_unsigned(pred, x, y)
    _map_constant_blocks(ctx, op, emit)


@lowers(arith.CmpFOp)
def lower_cmpf(ctx, op):
    """`arith.cmpf`: fcmp, ordered or unordered as the predicate says."""
    name = op.attributes["predicate"].value
    if name in ("false", "true"):
        count = len(ctx.get(op.operands[0]))
        ctx.set(op.results[0], [ir.Constant(ir.IntType(1), int(name == "true"))] * count)
        return
    pred, ordered = FLOAT_PREDICATES[name]

    def emit(b, x, y):
        return b.fcmp_ordered(pred, x, y) if ordered else b.fcmp_unordered(pred, x, y)
    _map(ctx, op, emit)


@lowers(arith.SelectOp)
def lower_select(ctx, op):
    """`arith.select` register by register (a scalar condition applies to every register)."""
    c, x, y = (ctx.get(v) for v in op.operands)
    if len(c) == 1 and len(x) > 1:
        c = c * len(x)
    b = ctx.builder
    ctx.set(op.results[0], [b.select(ci, xi, yi) for ci, xi, yi in zip(c, x, y)])


# ---- casts -------------------------------------------------------------------------------------
def _cast(kind):
    def lower(ctx, op):
        to = llvm_type(op.results[0].type)
        b = ctx.builder
        src, dst = _float_kind(op.operands[0].type), _float_kind(op.results[0].type)
        if kind != "bitcast" and (is_fp8(src) or is_fp8(dst)):
            _check_fp8_arch(ctx, op)
            ctx.set(op.results[0], _fp8_int_cast(b, ctx.get(op.operands[0]), kind, src, dst, to))
            return

        def emit(bb, x):
            if kind == "index_cast":
                if x.type.width == to.width:
                    return x
                return bb.sext(x, to) if x.type.width < to.width else bb.trunc(x, to)
            if kind == "bitcast" and x.type == to:
                return x
            return getattr(bb, kind)(x, to)
        ctx.set(op.results[0], [emit(b, x) for x in ctx.get(op.operands[0])])
    return lower


def _float_kind(ty) -> str:
    """The MLIR float kind ("f16", "f8E5M2", ...) of a type's elements; "" for the others."""
    return getattr(ty.scalar, "kind", "")


def _check_fp8_arch(ctx, op) -> None:
    if ctx.arch < FP8_MIN_ARCH:
        raise LoweringError(f"converting {op.operands[0].type.scalar} to "
                            f"{op.results[0].type.scalar} needs sm_{FP8_MIN_ARCH} or newer "
                            f"(the target is sm_{ctx.arch})")


def _fp8_int_cast(b, values: list, kind: str, src: str, dst: str, to) -> list:
    """An integer <-> fp8 cast (`kind`: sitofp/uitofp/fptosi/fptoui) by way of fp32."""
    if is_fp8(src):
        return [getattr(b, kind)(x, to) for x in convert_fp8(b, values, src, "f32", F32)]
    return convert_fp8(b, [getattr(b, kind)(x, F32) for x in values], "f32", dst, to)


def _float_resize(ctx, op) -> None:
    """`arith.extf` / `arith.truncf` (and rtne `tt.fp_to_fp`): fpext/fptrunc, or the PTX fp8
    conversions when either side is an 8-bit float (a byte in LLVM)."""
    src, dst = op.operands[0].type.scalar, op.results[0].type.scalar
    to = llvm_type(op.results[0].type)
    b = ctx.builder
    values = ctx.get(op.operands[0])
    if is_fp8(src.kind) or is_fp8(dst.kind):
        _check_fp8_arch(ctx, op)
        ctx.set(op.results[0], convert_fp8(b, values, src.kind, dst.kind, to))
        return
    ctx.set(op.results[0], [b.fptrunc(x, to) if type_bits(to) < type_bits(x.type) else
                            b.fpext(x, to) for x in values])


lowers(arith.CAST_OPS["extf"])(_float_resize)
lowers(arith.CAST_OPS["truncf"])(_float_resize)
for _name, _kind in {"extsi": "sext", "extui": "zext", "trunci": "trunc",
                     "sitofp": "sitofp", "uitofp": "uitofp",
                     "fptosi": "fptosi", "fptoui": "fptoui", "bitcast": "bitcast",
                     "index_cast": "index_cast"}.items():
    lowers(arith.CAST_OPS[_name])(_cast(_kind))
@lowers(tt.FpToFpOp)
def lower_fp_to_fp(ctx, op):
    """`tt.fp_to_fp`: round-to-nearest-even is fptrunc; round-toward-zero is PTX
    `cvt.rz.{f16,bf16}.f32` (fp32 to a 16-bit float, the case Triton allows)."""
    if op.rounding == "rtne":
        _float_resize(ctx, op)
        return
    src, dst = op.operands[0].type.scalar, op.results[0].type.scalar
    to = llvm_type(op.results[0].type)
    b = ctx.builder
    values = ctx.get(op.operands[0])
    if src.kind != "f32" or dst.kind not in ("f16", "bf16"):
        raise LoweringError(f"tt.fp_to_fp rounding = rtz lowers fp32 -> fp16/bf16 only, got "
                            f"{src} -> {dst}")
    i16 = ir.IntType(16)
    asm = f"cvt.rz.{dst.kind}.f32 $0, $1;"
    ctx.set(op.results[0], [b.bitcast(inline_ptx(b, i16, asm, "=h,f", [x], side_effect=False),
                                      to) for x in values])


lowers(tt.BitcastOp)(_cast("bitcast"))
lowers(tt.IntToPtrOp)(_cast("inttoptr"))
lowers(tt.PtrToIntOp)(_cast("ptrtoint"))


# ---- inline asm ----------------------------------------------------------------------------------
def _packs_into_one(ty, pack: int) -> bool:
    """Whether `pack` elements of `ty` travel in one asm register (narrow elements, at most
    32 bits together), as Triton packs them; otherwise each element has its own register."""
    return pack > 1 and type_bits(ty) * pack <= 32


def _asm_operands(b, values: list, pack: int) -> list:
    """The asm arguments for one group of `pack` registers of one operand."""
    if not _packs_into_one(values[0].type, pack):
        return values
    vec_ty = ir.VectorType(values[0].type, pack)
    vec = ir.Constant(vec_ty, ir.Undefined)
    for i, v in enumerate(values):
        vec = b.insert_element(vec, v, ir.Constant(ir.IntType(32), i))
    return [b.bitcast(vec, ir.IntType(type_bits(values[0].type) * pack))]


def _asm_slots(ty, pack: int) -> list:
    """The LLVM types of the asm outputs for one group of `pack` elements of a result."""
    if _packs_into_one(ty, pack):
        return [ir.IntType(type_bits(ty) * pack)]
    return [ty] * pack


def _asm_results(b, ty, outputs: list, pack: int) -> list:
    """`pack` element values of a result from its asm outputs (unpacking a packed register)."""
    if not _packs_into_one(ty, pack):
        return outputs
    vec = b.bitcast(outputs[0], ir.VectorType(ty, pack))
    return [b.extract_element(vec, ir.Constant(ir.IntType(32), i)) for i in range(pack)]


@lowers(tt.ElementwiseInlineAsmOp)
def lower_inline_asm(ctx, op):
    """`tt.elementwise_inline_asm`: one inline PTX block per group of `packed_element`
    consecutive registers. Narrow elements of a group share one 32-bit register (4 x i8, 2 x
    f16), wider ones get a register each; outputs come first, then inputs, as in Triton.
    Impure blocks keep their side effect."""
    b = ctx.builder
    pack = op.packed_element
    lists = [ctx.get(v) for v in op.operands]
    count = max([len(values) for values in lists] + [1])
    lists = [values * count if len(values) == 1 else values for values in lists]
    if count % pack:
        raise LoweringError(f"tt.elementwise_inline_asm packs {pack} elements, but each thread "
                            f"holds {count} of {op.results[0].type} (not a multiple)")
    types = [llvm_type(r.type) for r in op.results]
    slots = [_asm_slots(t, pack) for t in types]
    flat = [slot for group in slots for slot in group]
    ret = flat[0] if len(flat) == 1 else ir.LiteralStructType(flat)
    outs = [[] for _ in types]
    for start in range(0, count, pack):
        args = [a for values in lists for a in _asm_operands(b, values[start:start + pack], pack)]
        value = inline_ptx(b, ret, op.asm_string, op.constraints, args,
                           side_effect=not op.pure)
        outputs = [value] if len(flat) == 1 else \
            [b.extract_value(value, i) for i in range(len(flat))]
        at = 0
        for j, ty in enumerate(types):
            group = outputs[at:at + len(slots[j])]
            at += len(slots[j])
            outs[j].extend(_asm_results(b, ty, group, pack))
    for r, values in zip(op.results, outs):
        ctx.set(r, values)
