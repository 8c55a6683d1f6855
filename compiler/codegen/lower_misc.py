"""Lowering of program ids, device printing (`vprintf`) and device asserts (`__assertfail`)."""
from __future__ import annotations

from llvmlite import ir

from compiler.dialects import tt
from compiler.ir.types import TensorType

from .llvm_helpers import (F64, GENERIC_PTR, I32, I64, i32, special_register, type_bits)
from .registry import lowers

AXES = "xyz"


def _axis(op) -> str:
    axis = op.attributes["axis"].value
    return AXES[axis] if isinstance(axis, int) else str(axis)


@lowers(tt.GetProgramIdOp)
def lower_program_id(ctx, op):
    """`tt.get_program_id`: %ctaid.{x,y,z}."""
    ctx.set(op.results[0], [special_register(ctx.builder, f"ctaid.{_axis(op)}")])


@lowers(tt.GetNumProgramsOp)
def lower_num_programs(ctx, op):
    """`tt.get_num_programs`: %nctaid.{x,y,z}."""
    ctx.set(op.results[0], [special_register(ctx.builder, f"nctaid.{_axis(op)}")])


def _string(ctx, text: str):
    """A NUL-terminated constant string in global memory, as a generic pointer."""
    data = bytearray(text.encode("utf-8")) + b"\0"
    strings = getattr(ctx, "strings", None)
    if strings is None:
        strings = ctx.strings = {}
    if text not in strings:
        ty = ir.ArrayType(ir.IntType(8), len(data))
        g = ir.GlobalVariable(ctx.module, ty, f"str_{len(strings)}", addrspace=1)
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, data)
        strings[text] = g
    return ctx.builder.addrspacecast(strings[text], GENERIC_PTR)


def _printf_arg(b, value, signed: bool, hex_: bool):
    """A value promoted as C varargs promote it, with its format specifier."""
    ty = value.type
    if isinstance(ty, ir.PointerType):
        return b.ptrtoint(value, I64), "0x%llx"
    if isinstance(ty, ir.IntType):
        if ty.width == 64:
            return value, "0x%llx" if hex_ else ("%lld" if signed else "%llu")
        if ty.width < 32:
            value = b.sext(value, I32) if signed and ty.width > 1 else b.zext(value, I32)
        return value, "0x%x" if hex_ else ("%d" if signed else "%u")
    if type_bits(ty) < 64:
        value = b.fpext(value, F64)
    return value, "%f"


def vprintf(ctx, fmt: str, args: list) -> None:
    """Call CUDA's `vprintf(format, packed args)`."""
    b = ctx.builder
    fn = ctx.module.globals.get("vprintf") or ir.Function(
        ctx.module, ir.FunctionType(I32, [GENERIC_PTR, GENERIC_PTR]), name="vprintf")
    if args:
        struct = ir.LiteralStructType([a.type for a in args])
        buf = ctx.prologue.alloca(struct)
        for i, a in enumerate(args):
            b.store(a, b.gep(buf, [i32(0), i32(i)], inbounds=True))
        packed = buf
    else:
        packed = ir.Constant(GENERIC_PTR, None)
    b.call(fn, [_string(ctx, fmt), packed])


@lowers(tt.PrintOp)
def lower_print(ctx, op):
    """`tt.print`: one line per element and thread: `pid (x, y, z) idx (i, ...) prefix: v`."""
    b = ctx.builder
    prefix = op.attributes.get("prefix")
    prefix = prefix.value if prefix is not None else ""
    hex_attr = op.attributes.get("hex")
    hex_ = bool(hex_attr.value) if hex_attr is not None else False
    signed_attr = op.attributes.get("isSigned")
    signed = list(signed_attr.values) if signed_attr is not None else []
    pids = [special_register(b, f"ctaid.{a}") for a in AXES]
    if not op.operands:
        vprintf(ctx, f"pid (%u, %u, %u) {prefix}\n", pids)
        return
    first = op.operands[0].type
    coords = None
    if isinstance(first, TensorType):
        coords = ctx.indexer.coords(b, first.encoding, first.shape)
    lists = [ctx.get(v) for v in op.operands]
    for reg in range(len(lists[0])):
        args = list(pids)
        idx_fmt = ""
        if coords is not None:
            idx_fmt = " idx (" + ", ".join("%u" for _ in coords[reg]) + ")"
            args += coords[reg]
        value_fmts = []
        for k, values in enumerate(lists):
            v, f = _printf_arg(b, values[reg], bool(signed[k]) if k < len(signed) else True, hex_)
            args.append(v)
            value_fmts.append(f)
        vprintf(ctx, f"pid (%u, %u, %u){idx_fmt} {prefix}" + " ".join(value_fmts) + "\n", args)


@lowers(tt.AssumeOp)
def lower_assume(ctx, op):
    """`llvm.intr.assume`: a call of LLVM's `llvm.assume` intrinsic on the condition."""
    b = ctx.builder
    fn = ctx.module.globals.get("llvm.assume") or ir.Function(
        ctx.module, ir.FunctionType(ir.VoidType(), [ir.IntType(1)]), name="llvm.assume")
    b.call(fn, [ctx.get(op.operands[0])[0]])


@lowers(tt.AssertOp)
def lower_assert(ctx, op):
    """`tt.assert`: if any element of the condition is false, `__assertfail(message, ...)`."""
    b = ctx.builder
    conds = ctx.get(op.operands[0])
    failed = None
    for c in conds:
        if c.type.width != 1:
            c = b.icmp_unsigned("!=", c, ir.Constant(c.type, 0))
        bad = b.not_(c)
        failed = bad if failed is None else b.or_(failed, bad)

    def attr(name, default):
        a = op.attributes.get(name)
        return a.value if a is not None else default
    flc = op.loc.file_line_col()
    message = attr("message", "assertion failed")
    file_name = attr("file", flc.file if flc else "<unknown>")
    func_name = attr("function", attr("func", "kernel"))
    line = attr("line", flc.line if flc else 0)
    fn = ctx.module.globals.get("__assertfail") or ir.Function(
        ctx.module, ir.FunctionType(ir.VoidType(), [GENERIC_PTR, GENERIC_PTR, I32, GENERIC_PTR,
                                                    I64]), name="__assertfail")
    with b.if_then(failed, likely=False):
        b.call(fn, [_string(ctx, message), _string(ctx, file_name), i32(int(line)),
                    _string(ctx, func_name), ir.Constant(I64, 1)])

