"""A small SIMT evaluator of the lowered (unoptimized) llvmlite IR, for CPU tests of the codegen.

All threads of one CTA run in lockstep: every LLVM value is a numpy array with one entry per
thread. That makes warp shuffles array permutations and barriers no-ops. Branches must be
uniform, except the `if_then` shape (a block that falls through to the false target), which runs
under a mask. Inline PTX is interpreted for the forms the lowering writes (mov, predicated
ld/st.global[.vN], atom). Memory is byte arrays: kernel buffers in "global" memory and one
shared-memory array per CTA. It checks our lowering's logic (layouts, shuffles, shared memory,
masks, loops), not NVIDIA's hardware.
"""
from __future__ import annotations

import math
import re

import numpy as np
from llvmlite import ir

from compiler.codegen.llvm_helpers import BFloatType

WARP = 32
GLOBAL_SHIFT = 40
SHARED_TAG = 0xFE
LOCAL_TAG = 0xFD          # allocas (vprintf's argument buffer): written, never read back


class Unsupported(Exception):
    """The evaluator met an IR shape it does not model (e.g. a divergent branch)."""


class Misaligned(Exception):
    """An access whose address is not a multiple of its alignment: what the GPU reports as
    "misaligned address" (an LLVM load/store's `align`, or its type's size when it has none;
    an inline-PTX vector access's total width; an ldmatrix row's 16 bytes)."""


def check_aligned(addresses, align: int, active, what: str) -> None:
    """Raise `Misaligned` when an active thread's address is not a multiple of `align`."""
    bad = active & (addresses.astype(np.uint64) % np.uint64(align) != 0)
    if bad.any():
        t = int(np.nonzero(bad)[0][0])
        raise Misaligned(f"thread {t}: {what} at {int(addresses[t]):#x} is not aligned to "
                         f"{align} bytes")


def _mask(bits):
    return np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)


def _signed(a, bits):
    a = a.astype(np.uint64)
    if bits == 64:
        return a.view(np.int64)
    sign = np.uint64(1 << (bits - 1))
    return (a ^ sign).astype(np.int64) - np.int64(1 << (bits - 1))


def _float_dtype(ty):
    if isinstance(ty, ir.HalfType):
        return np.float16
    if isinstance(ty, ir.DoubleType):
        return np.float64
    return np.float32


def _bf16_round(x):
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def _flush_subnormals(x):
    """`.ftz`: f32 subnormals (inputs and results) become zero of the same sign."""
    tiny = np.float32(np.finfo(np.float32).tiny)
    return np.where(np.abs(x) < tiny, np.copysign(np.float32(0), x), x).astype(x.dtype)


def _is_float(ty):
    return isinstance(ty, (ir.HalfType, ir.FloatType, ir.DoubleType, BFloatType))


def _bits(ty):
    if isinstance(ty, ir.IntType):
        return ty.width
    if isinstance(ty, (ir.HalfType, BFloatType)):
        return 16
    if isinstance(ty, ir.FloatType):
        return 32
    return 64


def _to_bits(value, ty):
    """Float array -> its bit pattern as uint64; ints/pointers unchanged."""
    if isinstance(ty, BFloatType):
        return (value.astype(np.float32).view(np.uint32) >> 16).astype(np.uint64)
    if _is_float(ty):
        dt = _float_dtype(ty)
        return value.astype(dt).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[
            np.dtype(dt).itemsize]).astype(np.uint64)
    return value.astype(np.uint64)


def _from_bits(bits, ty):
    if isinstance(ty, BFloatType):
        return (bits.astype(np.uint32) << 16).view(np.float32)
    if _is_float(ty):
        dt = _float_dtype(ty)
        raw = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dt).itemsize]
        return bits.astype(raw).view(dt)
    return bits.astype(np.uint64) & _mask(_bits(ty))


class Memory:
    """Byte buffers addressed by 64-bit values: global buffer i lives at (i + 1) << 40."""

    def __init__(self):
        self.buffers: list = []
        self.shared = np.zeros(0, dtype=np.uint8)
        self.local = np.zeros(256, dtype=np.uint8)
        self.named: dict = {}     # kernel global name -> address of the buffer standing for it
        self.clock = 0            # %globaltimer / %clock64 read as a counter, +1 per read

    def add(self, array: np.ndarray) -> int:
        self.buffers.append(np.frombuffer(np.ascontiguousarray(array).tobytes(),
                                          dtype=np.uint8).copy())
        return (len(self.buffers)) << GLOBAL_SHIFT

    def read(self, index: int, like: np.ndarray) -> np.ndarray:
        return self.buffers[index].view(like.dtype).reshape(like.shape).copy()

    def _locate(self, address: int):
        tag = address >> GLOBAL_SHIFT
        offset = address & ((1 << GLOBAL_SHIFT) - 1)
        if tag == LOCAL_TAG:
            return self.local, offset
        if tag == SHARED_TAG:
            return self.shared, offset
        if not 1 <= tag <= len(self.buffers):
            raise IndexError(f"address {address:#x} is in no buffer")
        return self.buffers[tag - 1], offset

    def load(self, addresses, nbytes, active):
        out = np.zeros(len(addresses), dtype=np.uint64)
        for t in np.nonzero(active)[0]:
            buf, off = self._locate(int(addresses[t]))
            if off + nbytes > len(buf):
                raise IndexError(f"thread {t}: load of {nbytes} bytes at {off} past the buffer")
            out[t] = int.from_bytes(buf[off:off + nbytes].tobytes(), "little")
        return out

    def store(self, addresses, values, nbytes, active):
        for t in np.nonzero(active)[0]:
            buf, off = self._locate(int(addresses[t]))
            if off + nbytes > len(buf):
                raise IndexError(f"thread {t}: store of {nbytes} bytes at {off} past the buffer")
            buf[off:off + nbytes] = np.frombuffer(int(values[t]).to_bytes(nbytes, "little"),
                                                  dtype=np.uint8)


class CTA:
    """One CTA (program) of a kernel run in lockstep."""

    def __init__(self, fn: ir.Function, num_warps: int, memory: Memory, pid: tuple, grid: tuple,
                 args: list, shared_bytes: int):
        self.fn = fn
        self.n = num_warps * WARP
        self.memory = memory
        self.pid = pid
        self.grid = grid
        self.values: dict = {}
        self.tid = np.arange(self.n, dtype=np.uint64)
        memory.shared = np.zeros(max(shared_bytes, 16), dtype=np.uint8)
        for arg, value in zip(fn.args, args):
            self.values[id(arg)] = self._splat(value, arg.type)
        self.printed = 0
        self.assert_failed = False
        self.async_open: list = []      # cp.async copies issued since the last commit_group
        self.async_groups: list = []    # committed groups not yet waited for, oldest first

    def _splat(self, value, ty):
        if _is_float(ty):
            dt = np.float32 if isinstance(ty, BFloatType) else _float_dtype(ty)
            return np.full(self.n, value, dtype=dt)
        return np.full(self.n, int(value) & ((1 << _bits(ty)) - 1) if not isinstance(
            ty, ir.PointerType) else int(value), dtype=np.uint64)

    # ---- values ---------------------------------------------------------------------------
    def get(self, v):
        if isinstance(v, ir.Constant):
            return self._constant(v)
        if isinstance(v, ir.GlobalVariable):
            if v.name == "global_smem":
                return np.full(self.n, SHARED_TAG << GLOBAL_SHIFT, dtype=np.uint64)
            if v.name in self.memory.named:          # a global the test gave memory for
                return np.full(self.n, self.memory.named[v.name], dtype=np.uint64)
            return np.zeros(self.n, dtype=np.uint64)     # strings for vprintf: never read
        return self.values[id(v)]

    def _constant(self, c):
        ty = c.type
        if isinstance(ty, ir.VectorType):
            if c.constant is None or isinstance(c.constant, str):
                return [self._splat(0, ty.element) for _ in range(ty.count)]
            return [self._constant(x if isinstance(x, ir.Constant) else ir.Constant(ty.element, x))
                    for x in c.constant]
        if isinstance(ty, ir.PointerType):
            return np.zeros(self.n, dtype=np.uint64)
        value = c.constant
        if value is None or isinstance(value, str):
            value = 0
        if isinstance(value, bool):
            value = int(value)
        if isinstance(ty, BFloatType):
            return _bf16_round(np.full(self.n, value, dtype=np.float32))
        return self._splat(value, ty)

    # ---- running --------------------------------------------------------------------------
    def run(self):
        block = self.fn.blocks[0]
        previous = None
        active = np.ones(self.n, dtype=bool)
        steps = 0
        while block is not None:
            steps += 1
            if steps > 100_000:
                raise Unsupported("too many blocks executed")
            block, previous, active = self._run_block(block, previous, active)

    def _run_block(self, block, previous, active):
        phis = [i for i in block.instructions if isinstance(i, ir.PhiInstr)]
        incoming = {}
        for phi in phis:
            for value, pred in phi.incomings:
                if pred is previous:
                    incoming[id(phi)] = self.get(value)
        self.values.update(incoming)
        for instr in block.instructions:
            if isinstance(instr, ir.PhiInstr):
                continue
            if isinstance(instr, ir.Ret):
                return None, block, active
            if isinstance(instr, ir.Branch) and not isinstance(instr, ir.ConditionalBranch):
                return instr.operands[0], block, active
            if isinstance(instr, ir.ConditionalBranch):
                return self._cbranch(instr, block, active)
            self.values[id(instr)] = self._execute(instr, active)
        raise Unsupported(f"block {block.name} has no terminator")

    def _cbranch(self, instr, block, active):
        cond = self.get(instr.operands[0]).astype(bool)
        then, other = instr.operands[1], instr.operands[2]
        live = cond[active]
        if live.all() or not live.any():
            return (then if live.all() else other), block, active
        # divergent: only the if_then shape (then falls through to `other`) is modelled
        last = then.instructions[-1]
        if not (isinstance(last, ir.Branch) and not isinstance(last, ir.ConditionalBranch)
                and last.operands[0] is other):
            raise Unsupported("divergent branch that is not an if-then")
        self._run_block(then, block, active & cond)
        return other, then, active

    # ---- instructions ---------------------------------------------------------------------
    def _execute(self, instr, active):
        if isinstance(instr, ir.Comment):
            return None
        if isinstance(instr, ir.CallInstr):
            return self._call(instr, active)
        if isinstance(instr, ir.CompareInstr):
            return self._compare(instr)
        if isinstance(instr, ir.SelectInstr):
            c, a, b = (self.get(v) for v in instr.operands)
            return np.where(c.astype(bool), a, b)
        if isinstance(instr, ir.CastInstr):
            return self._cast(instr)
        if isinstance(instr, ir.GEPInstr):
            return self._gep(instr)
        if isinstance(instr, ir.LoadInstr):
            ty = instr.type
            check_aligned(self.get(instr.operands[0]), instr.align or _natural_align(ty), active,
                          f"load of {ty}")
            if isinstance(ty, ir.VectorType):             # element by element, consecutive
                size = max(1, _bits(ty.element) // 8)
                base = self.get(instr.operands[0])
                return [_from_bits(self.memory.load(base + np.uint64(i * size), size, active),
                                   ty.element) for i in range(ty.count)]
            nbytes = max(1, _bits(ty) // 8)
            raw = self.memory.load(self.get(instr.operands[0]), nbytes, active)
            return _from_bits(raw, ty)
        if isinstance(instr, ir.StoreInstr):
            value, ptr = instr.operands
            check_aligned(self.get(ptr), instr.align or _natural_align(value.type), active,
                          f"store of {value.type}")
            if isinstance(value.type, ir.VectorType):      # element by element, consecutive
                element = value.type.element
                size = max(1, _bits(element) // 8)
                for i, part in enumerate(self.get(value)):
                    self.memory.store(self.get(ptr) + np.uint64(i * size),
                                      _to_bits(part, element), size, active)
                return None
            nbytes = max(1, _bits(value.type) // 8)
            self.memory.store(self.get(ptr), _to_bits(self.get(value), value.type), nbytes, active)
            return None
        if isinstance(instr, ir.AllocaInstr):
            return np.full(self.n, LOCAL_TAG << GLOBAL_SHIFT, dtype=np.uint64)
        name = instr.opname
        if name == "insertelement":
            vec, value, index = instr.operands
            out = list(self.get(vec))
            out[int(index.constant)] = self.get(value)
            return out
        if name == "extractelement":
            vec, index = instr.operands
            return self.get(vec)[int(index.constant)]
        if name == "extractvalue":
            return self.get(instr.aggregate)[instr.indices[0]]
        if name == "fneg":
            return -self.get(instr.operands[0])
        return self._binary(instr)

    def _binary(self, instr):
        a, b = (self.get(v) for v in instr.operands)
        ty = instr.type
        name = instr.opname
        if _is_float(ty):
            with np.errstate(all="ignore"):
                result = {"fadd": np.add, "fsub": np.subtract, "fmul": np.multiply,
                          "fdiv": np.divide, "frem": np.fmod}[name](a, b)
            return _bf16_round(result) if isinstance(ty, BFloatType) else result
        bits = ty.width
        m = _mask(bits)
        sa, sb = _signed(a, bits), _signed(b, bits)
        with np.errstate(all="ignore"):
            if name == "add":
                r = a + b
            elif name == "sub":
                r = a - b
            elif name == "mul":
                r = a * b
            elif name == "and":
                r = a & b
            elif name == "or":
                r = a | b
            elif name == "xor":
                r = a ^ b
            elif name == "shl":
                r = a << b
            elif name == "lshr":
                r = a >> b
            elif name == "ashr":
                r = (sa >> sb.clip(0, 63)).astype(np.uint64)
            elif name == "udiv":
                r = a // np.where(b == 0, 1, b)
            elif name == "urem":
                r = a % np.where(b == 0, 1, b)
            elif name == "sdiv":
                q = np.trunc(sa / np.where(sb == 0, 1, sb)).astype(np.int64)
                r = q.astype(np.uint64)
            elif name == "srem":
                safe = np.where(sb == 0, 1, sb)
                r = (sa - np.trunc(sa / safe).astype(np.int64) * safe).astype(np.uint64)
            else:
                raise Unsupported(f"instruction {name}")
        return r & m

    def _compare(self, instr):
        a, b = (self.get(v) for v in instr.operands)
        op = instr.op
        if isinstance(instr, ir.ICMPInstr):
            bits = instr.operands[0].type.width if isinstance(
                instr.operands[0].type, ir.IntType) else 64
            if op.startswith("s"):
                a, b = _signed(a, bits), _signed(b, bits)
            table = {"eq": a == b, "ne": a != b}
            key = op[1:] if op[0] in "su" else op
            cmp = {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}
            result = table.get(op, cmp.get(key))
        else:
            ordered = ~(np.isnan(a) | np.isnan(b))
            base = {"oeq": a == b, "ogt": a > b, "oge": a >= b, "olt": a < b, "ole": a <= b,
                    "one": a != b, "ord": ordered}
            unordered = {"ueq": a == b, "ugt": a > b, "uge": a >= b, "ult": a < b,
                         "ule": a <= b, "une": a != b, "uno": ~ordered}
            if op in base:
                result = base[op] & ordered
            else:
                result = unordered[op] | ~ordered
        return result.astype(np.uint64)

    def _cast(self, instr):
        x = self.get(instr.operands[0])
        src, dst = instr.operands[0].type, instr.type
        name = instr.opname
        if name in ("zext", "trunc", "ptrtoint", "inttoptr", "addrspacecast"):
            return x.astype(np.uint64) & _mask(_bits(dst)) if not isinstance(
                dst, ir.PointerType) else x
        if name == "sext":
            return _signed(x, src.width).astype(np.uint64) & _mask(dst.width)
        if name in ("fpext", "fptrunc"):
            if isinstance(dst, BFloatType):
                return _bf16_round(x)
            return x.astype(np.float32 if isinstance(src, BFloatType) else x.dtype).astype(
                _float_dtype(dst))
        if name in ("sitofp", "uitofp"):
            ints = _signed(x, src.width) if name == "sitofp" else x
            out = ints.astype(np.float64).astype(np.float32 if isinstance(dst, BFloatType)
                                                 else _float_dtype(dst))
            return _bf16_round(out) if isinstance(dst, BFloatType) else out
        if name in ("fptosi", "fptoui"):
            return np.trunc(x.astype(np.float64)).astype(np.int64).astype(np.uint64) & \
                _mask(dst.width)
        if name == "bitcast":
            if isinstance(src, ir.VectorType):
                elem_bits = _bits(src.element)
                word = np.zeros(self.n, dtype=np.uint64)
                for i, part in enumerate(x):
                    word |= (_to_bits(part, src.element) & _mask(elem_bits)) << np.uint64(
                        i * elem_bits)
                return _from_bits(word, dst)
            if isinstance(dst, ir.VectorType):
                elem_bits = _bits(dst.element)
                word = _to_bits(x, src)
                return [_from_bits((word >> np.uint64(i * elem_bits)) & _mask(elem_bits),
                                   dst.element) for i in range(dst.count)]
            return _from_bits(_to_bits(x, src), dst)
        raise Unsupported(f"cast {name}")

    def _gep(self, instr):
        base = self.get(instr.pointer).astype(np.uint64)
        ety = instr.source_etype
        address = base.copy()
        for i, index in enumerate(instr.indices):
            idx = _signed(self.get(index), index.type.width).astype(np.int64)
            if i == 0:
                size = _size(ety)
            else:
                if isinstance(ety, ir.LiteralStructType):
                    k = int(index.constant)
                    offset = sum(_size(t) for t in ety.elements[:k])
                    address = address + np.uint64(offset)
                    ety = ety.elements[k]
                    continue
                ety = ety.element
                size = _size(ety)
            address = (address.astype(np.int64) + idx * size).astype(np.uint64)
        return address

    # ---- calls ----------------------------------------------------------------------------
    def _call(self, instr, active):
        callee = instr.callee
        args = [self.get(a) for a in instr.args]
        if isinstance(callee, ir.InlineAsm):
            return self._asm(callee, args, instr.type, active)
        name = callee.name
        lane = (self.tid % WARP).astype(np.int64)
        if name.startswith("llvm.nvvm.read.ptx.sreg."):
            reg = name.rsplit(".", 2)[-2:]
            if reg[0] == "tid":
                return self.tid.copy()
            source = self.pid if reg[0] == "ctaid" else self.grid
            return np.full(self.n, source["xyz".index(reg[1])], dtype=np.uint64)
        if name.startswith("llvm.nvvm.shfl.sync."):
            kind = name.split(".")[4]
            value, amount = args[1], args[2].astype(np.int64)
            if kind == "bfly":
                src = lane ^ amount
            elif kind == "up":
                src = np.where(lane - amount >= 0, lane - amount, lane)
            elif kind == "down":
                src = np.where(lane + amount < WARP, lane + amount, lane)
            else:
                src = amount & 31
            return value[(self.tid.astype(np.int64) - lane) + src]
        if name == "llvm.nvvm.barrier.cta.sync.aligned.all":
            return None
        if name in ("vprintf",):
            self.printed += int(active.sum())
            return np.zeros(self.n, dtype=np.uint64)
        if name == "__assertfail":
            self.assert_failed = True
            return None
        return self._math(name, args, instr.type)

    def _math(self, name, args, ty):
        x = args[0]
        with np.errstate(all="ignore"):
            table = {
                "llvm.nvvm.div.full": lambda: (x / args[1]).astype(np.float32),
                "llvm.nvvm.div.rn.f": lambda: (x / args[1]).astype(np.float32),
                "llvm.nvvm.ex2.approx.f": lambda: np.exp2(x),
                "llvm.nvvm.ex2.approx.ftz.f": lambda: _flush_subnormals(
                    np.exp2(_flush_subnormals(x))),
                "llvm.nvvm.lg2.approx.f": lambda: np.log2(x),
                "llvm.nvvm.sqrt.approx.ftz.f": lambda: np.sqrt(x),
                "llvm.nvvm.sqrt.rn.f": lambda: np.sqrt(x),
                "llvm.nvvm.rsqrt.approx.ftz.f": lambda: 1 / np.sqrt(x),
                "llvm.nvvm.sin.approx.f": lambda: np.sin(x),
                "llvm.nvvm.cos.approx.f": lambda: np.cos(x),
                "llvm.nvvm.tanh.approx.f": lambda: np.tanh(x),
            }
            if name in table:
                return table[name]().astype(x.dtype)
            base = name.split(".")[1]
            generic = {"fmuladd": lambda: x * args[1] + args[2],
                       "fma": lambda: x * args[1] + args[2],
                       "maxnum": lambda: np.fmax(x, args[1]),
                       "minnum": lambda: np.fmin(x, args[1]),
                       "maximum": lambda: np.maximum(x, args[1]),
                       "minimum": lambda: np.minimum(x, args[1]),
                       "fabs": lambda: np.abs(x), "floor": lambda: np.floor(x),
                       "ceil": lambda: np.ceil(x), "trunc": lambda: np.trunc(x),
                       "round": lambda: np.sign(x) * np.floor(np.abs(x) + 0.5),
                       "copysign": lambda: np.copysign(x, args[1]),
                       "sqrt": lambda: np.sqrt(x)}
            if base in generic:
                out = generic[base]().astype(x.dtype)
                return _bf16_round(out) if isinstance(ty, BFloatType) else out
        raise Unsupported(f"call to {name}")

    # ---- inline PTX -----------------------------------------------------------------------
    def _asm(self, asm: ir.InlineAsm, args, ret_ty, active):
        if asm.asm.startswith(("ldmatrix.", "stmatrix.", "mma.sync.")):
            if not np.all(active):
                raise Unsupported(f"warp-collective {asm.asm.split()[0]} under a partial mask")
            if asm.asm.startswith(("ldmatrix.", "stmatrix.")):
                rows = 8 * int(re.search(r"\.x(\d)", asm.asm).group(1))  # lanes giving rows
                immediate = re.search(r"\[\$\d+\+(\d+)\]", asm.asm)     # [$i+imm]
                if immediate:
                    args = [args[0] + np.uint64(int(immediate.group(1)))] + list(args[1:])
                check_aligned(args[0], 16, (self.tid % np.uint64(WARP)) < np.uint64(rows),
                              f"{asm.asm.split('.')[0]} row")
                if asm.asm.startswith("stmatrix."):
                    return self._stmatrix(asm.asm, args[0], args[1:])
                return self._ldmatrix(asm.asm, args[0])
            return self._mma(asm.asm, args)
        constraints = asm.constraint.split(",")
        n_out = sum(1 for c in constraints if c.startswith("="))
        operands = {}
        out_types = ([ret_ty] if n_out == 1 else list(ret_ty.elements)) if n_out else []
        outs = [np.zeros(self.n, dtype=np.uint64) for _ in range(n_out)]
        for i, a in enumerate(args):
            operands[n_out + i] = a
            tied = constraints[n_out + i]
            if tied.isdigit():              # an input tied to output `tied` ("+r"): its start
                outs[int(tied)] = _to_bits(a, _any_int())

        def ref(token):
            token = token.strip()
            if token.startswith("$"):
                k = int(token[1:])
                return outs[k] if k < n_out else operands[k]
            if token in ("%globaltimer", "%clock64"):
                self.memory.clock += 1
                return np.full(self.n, self.memory.clock, dtype=np.uint64)
            return np.full(self.n, int(token, 0), dtype=np.uint64)

        for line in asm.asm.split("\n"):
            line = line.strip().rstrip(";")
            if not line:
                continue
            pred = active
            m = re.match(r"@\$(\d+)\s+(.*)", line)
            if m:
                pred = active & operands[int(m.group(1))].astype(bool)
                line = m.group(2)
            op, _, rest = line.partition(" ")
            if op.startswith("mov."):
                dst, src = (t.strip() for t in rest.split(","))
                outs[int(dst[1:])] = np.where(pred, _to_bits(ref(src), _any_int()), outs[int(dst[1:])])
            elif op.startswith("ld.global"):
                regs = re.findall(r"\$(\d+)", rest.split("[")[0])
                addr = ref(re.search(r"\[\s*(\$\d+)", rest).group(1))
                size = _ptx_type_bytes(op)
                check_aligned(addr, size * len(regs), pred, op)
                for j, r in enumerate(regs):
                    loaded = self.memory.load(addr + np.uint64(j * size), size, pred)
                    outs[int(r)] = np.where(pred, loaded, outs[int(r)])
            elif op.startswith("st.global"):
                addr = ref(re.search(r"\[\s*(\$\d+)", rest).group(1))
                regs = re.findall(r"\$(\d+)", rest.split("]", 1)[1])
                size = _ptx_type_bytes(op)
                check_aligned(addr, size * len(regs), pred, op)
                for j, r in enumerate(regs):
                    self.memory.store(addr + np.uint64(j * size), operands[int(r)], size, pred)
            elif op == "tanh.approx.f32":
                return np.tanh(args[0]).astype(np.float32)
            elif op.startswith("atom."):
                self._atom(op, rest, ref, outs, pred)
            elif op.startswith("cp.async."):
                self._cp_async(op, rest, ref, pred)
            elif op.startswith("fence."):
                pass             # memory fences order nothing in lockstep
            else:
                raise Unsupported(f"inline PTX {op}")
        if n_out == 0:
            return None
        results = [o & _mask(_bits(t)) for o, t in zip(outs, out_types)]
        return results[0] if n_out == 1 else results

    # ---- asynchronous copies (cp.async): land in shared memory only at wait_group ----------
    def _cp_async(self, op, rest, ref, pred):
        """`cp.async.{ca,cg}.shared.global [dst], [src], size, src_size`: the source is read
        now (src_size bytes, the rest zero-filled); the shared write waits for the
        `cp.async.wait_group` that retires its group, so reading early sees stale data.
        `commit_group` closes a group; `wait_group N` retires all but the newest N."""
        if op == "cp.async.commit_group":
            self.async_groups.append(self.async_open)
            self.async_open = []
            return
        if op == "cp.async.wait_group":
            keep = int(rest.strip())
            retire = self.async_groups[:len(self.async_groups) - keep]
            self.async_groups = self.async_groups[len(retire):]
            for group in retire:
                for dst, data, size, active in group:
                    self.memory.store(dst, data, size, active)
            return
        if not op.startswith(("cp.async.ca.shared.global", "cp.async.cg.shared.global")):
            raise Unsupported(f"inline PTX {op}")
        dst_t, src_t, size_t, src_size_t = (t.strip() for t in rest.split(","))
        dst = ref(re.search(r"\$\d+", dst_t).group(0))
        src = ref(re.search(r"\$\d+", src_t).group(0))
        size = int(size_t)
        src_size = ref(src_size_t)
        data = np.zeros(self.n, dtype=object)
        for t in np.nonzero(pred)[0]:
            n = int(src_size[t])
            if n > size:
                raise IndexError(f"thread {t}: cp.async src_size {n} > {size}")
            buf, off = self.memory._locate(int(src[t])) if n else (None, 0)
            if n and off + n > len(buf):
                raise IndexError(f"thread {t}: cp.async of {n} bytes at {off} past the buffer")
            data[t] = int.from_bytes(buf[off:off + n].tobytes(), "little") if n else 0
        self.async_open.append((dst.copy(), data, size, pred.copy()))

    # ---- warp-collective tensor-core instructions (PTX ISA semantics) -----------------------
    def _ldmatrix(self, text, addresses):
        """`ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16`: lanes 8q..8q+7 give the
        row addresses of matrix q; lane l receives, per matrix, row l/4 elements 2(l%4) and
        2(l%4)+1 (with .trans: rows 2(l%4) and 2(l%4)+1 of column l/4)."""
        count = int(re.search(r"\.x(\d)", text).group(1))
        trans = ".trans" in text
        lane = self.tid % np.uint64(WARP)
        warp_first = self.tid - lane
        everyone = np.ones(self.n, dtype=bool)
        words = []
        for q in range(count):
            if trans:
                row0 = (warp_first + np.uint64(8 * q) + (lane % np.uint64(4)) * np.uint64(2))
                column = (lane // np.uint64(4)) * np.uint64(2)
                low = self.memory.load(addresses[row0.astype(np.int64)] + column, 2, everyone)
                high = self.memory.load(addresses[(row0 + np.uint64(1)).astype(np.int64)] + column,
                                        2, everyone)
                words.append(low | (high << np.uint64(16)))
            else:
                source = warp_first + np.uint64(8 * q) + lane // np.uint64(4)
                offset = (lane % np.uint64(4)) * np.uint64(4)
                words.append(self.memory.load(addresses[source.astype(np.int64)] + offset, 4,
                                              everyone))
        return words[0] if count == 1 else words

    def _stmatrix(self, text, addresses, words):
        """`stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16`: the inverse of ldmatrix.
        Lanes 8q..8q+7 give the row addresses of matrix q; lane l's word q holds matrix q's
        row l/4, elements 2(l%4) and 2(l%4)+1 (with .trans: rows 2(l%4) and 2(l%4)+1 of
        column l/4)."""
        trans = ".trans" in text
        lane = self.tid % np.uint64(WARP)
        warp_first = self.tid - lane
        everyone = np.ones(self.n, dtype=bool)
        for q, word in enumerate(words):
            word = word.astype(np.uint64)
            if trans:
                row0 = warp_first + np.uint64(8 * q) + (lane % np.uint64(4)) * np.uint64(2)
                column = (lane // np.uint64(4)) * np.uint64(2)
                for half in range(2):
                    rows = addresses[(row0 + np.uint64(half)).astype(np.int64)]
                    self.memory.store(rows + column, (word >> np.uint64(16 * half)) &
                                      np.uint64(0xFFFF), 2, everyone)
            else:
                source = warp_first + np.uint64(8 * q) + lane // np.uint64(4)
                offset = (lane % np.uint64(4)) * np.uint64(4)
                self.memory.store(addresses[source.astype(np.int64)] + offset, word, 4, everyone)
        return None

    def _mma(self, text, args):
        """`mma.sync.aligned` on each warp: gather the A, B and C fragments of its 32 lanes,
        D = A @ B + C. m16n8k16 `.f32.{f16,bf16}.*.f32`, or its f16 accumulator form
        (`.f16.f16.f16.f16`: C and D as two f16x2 words); m16n8k8 `.f32.tf32.tf32.f32`
        (operands fp32 bit patterns, read as tf32: the low 13 mantissa bits dropped); m16n8k32
        `.satfinite.s32.s8.s8.s32` (int8 operands, s32 accumulators clamped to the s32 range)."""
        if "m16n8k8.row.col.f32.tf32.tf32.f32" in text or \
                "m16n8k32.row.col.satfinite.s32.s8.s8.s32" in text:
            return self._mma_narrow(text, args)
        f16_acc = "m16n8k16.row.col.f16.f16.f16.f16" in text
        if "m16n8k16.row.col.f32" not in text and not f16_acc:
            raise Unsupported(f"inline PTX {text.split()[0]}")
        bf16 = ".bf16." in text
        a_words, b_words = args[0:4], args[4:6]

        def halves(word):
            low = (word & np.uint64(0xFFFF)).astype(np.uint16)
            high = ((word >> np.uint64(16)) & np.uint64(0xFFFF)).astype(np.uint16)
            if bf16:
                return [(h.astype(np.uint32) << 16).view(np.float32) for h in (low, high)]
            return [h.view(np.float16).astype(np.float32) for h in (low, high)]
        acc = [h for word in args[6:8] for h in halves(word)] if f16_acc else args[6:10]
        out = [np.zeros(self.n, dtype=np.float32) for _ in range(4)]
        for first in range(0, self.n, WARP):
            lanes = np.arange(WARP)
            g, t = lanes // 4, lanes % 4
            a = np.zeros((16, 16), np.float64)
            b = np.zeros((16, 8), np.float64)
            c = np.zeros((16, 8), np.float64)
            for j, word in enumerate(a_words):
                for h, value in enumerate(halves(word[first:first + WARP])):
                    a[g + 8 * (j % 2), 2 * t + 8 * (j // 2) + h] = value
            for j, word in enumerate(b_words):
                for h, value in enumerate(halves(word[first:first + WARP])):
                    b[2 * t + 8 * j + h, g] = value
            for i, value in enumerate(acc):
                c[g + 8 * (i // 2), 2 * t + i % 2] = value[first:first + WARP]
            d = (a @ b + c).astype(np.float32)
            for i in range(4):
                out[i][first:first + WARP] = d[g + 8 * (i // 2), 2 * t + i % 2]
        if f16_acc:
            bits = [o.astype(np.float16).view(np.uint16).astype(np.uint64) for o in out]
            return [bits[0] | (bits[1] << np.uint64(16)), bits[2] | (bits[3] << np.uint64(16))]
        return out

    def _mma_narrow(self, text, args):
        """m16n8k8 tf32 and m16n8k32 s8, from the PTX ISA's fragment tables: A word j holds
        row g + 8 (j % 2) at columns w t + 4w (j // 2) + e, B word j rows (K) w t + 4w j + e at
        column g, for w = 1 (tf32) or 4 (s8) elements e per word; C/D as for m16n8k16."""
        tf32 = ".tf32." in text
        w, k = (1, 8) if tf32 else (4, 32)

        def elements(word):
            if tf32:
                kept = (word & np.uint64(0xFFFFE000)).astype(np.uint32)
                return [kept.view(np.float32).astype(np.float64)]
            return [((word >> np.uint64(8 * e)) & np.uint64(0xFF)).astype(np.uint8)
                    .view(np.int8).astype(np.int64) for e in range(4)]
        kind = np.float64 if tf32 else np.int64
        out = [np.zeros(self.n, dtype=np.float32 if tf32 else np.uint64) for _ in range(4)]
        for first in range(0, self.n, WARP):
            lanes = np.arange(WARP)
            g, t = lanes // 4, lanes % 4
            a, b, c = np.zeros((16, k), kind), np.zeros((k, 8), kind), np.zeros((16, 8), kind)
            for j, word in enumerate(args[0:4]):
                for e, value in enumerate(elements(word[first:first + WARP])):
                    a[g + 8 * (j % 2), w * t + 4 * w * (j // 2) + e] = value
            for j, word in enumerate(args[4:6]):
                for e, value in enumerate(elements(word[first:first + WARP])):
                    b[w * t + 4 * w * j + e, g] = value
            for i, value in enumerate(args[6:10]):
                value = value[first:first + WARP]
                if not tf32:
                    value = value.astype(np.uint32).view(np.int32)
                c[g + 8 * (i // 2), 2 * t + i % 2] = value
            d = a @ b + c
            if not tf32:
                d = np.clip(d, -(1 << 31), (1 << 31) - 1).astype(np.int32).view(np.uint32)
            for i in range(4):
                out[i][first:first + WARP] = d[g + 8 * (i // 2), 2 * t + i % 2]
        return out

    def _atom(self, op, rest, ref, outs, pred):
        parts = op.split(".")
        kind, type_text = parts[-2], parts[-1]
        tokens = [t.strip() for t in re.sub(r"\[\s*(\$\d+)\s*\+\s*0\s*\]", r"\1", rest).split(",")]
        addr = ref(tokens[1])
        size = int(re.sub(r"\D", "", type_text)) // 8
        values = [ref(t) for t in tokens[2:]]
        for t in np.nonzero(pred)[0]:
            one = np.zeros(self.n, dtype=bool)
            one[t] = True
            old = int(self.memory.load(addr, size, one)[t])
            new = _atom_apply(kind, type_text, old, [int(v[t]) for v in values], size)
            self.memory.store(addr, np.full(self.n, new, dtype=np.uint64), size, one)
            outs[0][t] = old


def _any_int():
    return ir.IntType(64)


def _ptx_type_bytes(op: str) -> int:
    kind = op.split(".")[-1]
    return max(1, int(re.sub(r"\D", "", kind)) // 8)


def _atom_apply(kind, type_text, old, operands, size):
    bits = size * 8
    m = (1 << bits) - 1

    def signed(v):
        return v - (1 << bits) if v >> (bits - 1) else v
    if type_text.startswith("f") or type_text.startswith("noftz"):
        dt = {4: np.float32, 8: np.float64, 2: np.float16}[size]
        raw = {4: np.uint32, 8: np.uint64, 2: np.uint16}[size]
        a = np.array(old, dtype=raw).view(dt)
        b = np.array(operands[0], dtype=raw).view(dt)
        return int(np.array(a + b, dtype=dt).view(raw))
    v = operands[0]
    if kind == "add":
        return (old + v) & m
    if kind == "cas":
        return operands[1] if old == operands[0] else old
    if kind == "exch":
        return v
    if kind in ("and", "or", "xor"):
        return {"and": old & v, "or": old | v, "xor": old ^ v}[kind]
    if kind in ("max", "min"):
        a, b = (signed(old), signed(v)) if type_text.startswith("s") else (old, v)
        return (max(a, b) if kind == "max" else min(a, b)) & m
    raise Unsupported(f"atom {kind}")


def _size(ty) -> int:
    if isinstance(ty, ir.VectorType):
        return ty.count * _size(ty.element)
    if isinstance(ty, ir.ArrayType):
        return ty.count * _size(ty.element)
    if isinstance(ty, ir.LiteralStructType):
        return sum(_size(t) for t in ty.elements)
    if isinstance(ty, ir.PointerType):
        return 8
    return max(1, _bits(ty) // 8)


def _natural_align(ty) -> int:
    """The alignment LLVM gives an access of type `ty` that states none (its ABI alignment):
    a vector's size rounded up to a power of two, an aggregate's largest element's."""
    if isinstance(ty, ir.VectorType):
        return 1 << (_size(ty) - 1).bit_length()
    if isinstance(ty, ir.ArrayType):
        return _natural_align(ty.element)
    if isinstance(ty, ir.LiteralStructType):
        return max(_natural_align(t) for t in ty.elements)
    return _size(ty)


def run_kernel(kernel, grid: tuple, args: list, globals_: dict | None = None) -> Memory:
    """Run a `LoweredKernel` over `grid` with `args` (numpy arrays become global buffers, in
    order; scalars are passed as they are). `globals_`: kernel global name -> numpy array
    holding it (buffers after the arguments'). Returns the memory; read buffer i back with
    `memory.read(i, like=array)`."""
    memory = Memory()
    values = []
    for a in args:
        values.append(memory.add(a) if isinstance(a, np.ndarray) else a)
    for name, array in (globals_ or {}).items():
        memory.named[name] = memory.add(array)
    fn = next(f for f in kernel.llvm_module.functions if f.name == kernel.name)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                CTA(fn, kernel.num_warps, memory, (x, y, z), grid, values,
                    kernel.shared_bytes).run()
    return memory


def approx_equal(a, b, rtol=1e-5, atol=1e-6) -> bool:
    """numpy.allclose with a clearer name for tests."""
    return bool(np.allclose(a, b, rtol=rtol, atol=atol)) and not math.isnan(float(np.sum(a)))
