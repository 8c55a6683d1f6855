"""Per-thread addresses of a PTX kernel's memory instructions, by evaluating its integer code.

A small evaluator for the integer subset of PTX (mov, add, mul, mad, shifts, logic, bfe, cvt,
setp, selp, div, ld.param) runs one thread of a kernel for given %tid / %ctaid and parameter
values, follows its branches, and records the address of every cp.async, ld/st.global and
ld/st.shared it reaches. Anything it does not model (float math, wgmma, shuffles) leaves its
destination unknown; an unknown address or branch condition stops that thread. It reads ours'
and Triton's PTX alike, so bench/attention_static_compare.py can compare which thread moves
which bytes (global coalescing, shared-memory bank wavefronts) without a GPU.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_LABEL = re.compile(r"^\s*(\$?[A-Za-z_][\w$]*):")
_PARAM = re.compile(r"\.param\s+\.(\w+)(?:\s+\.ptr\s+\.\w+\s+\.align\s+\d+)?\s+(\w+)")
_SHARED = re.compile(r"^\s*\.(?:extern\s+)?\.shared\s.*?(\w+)\s*\[")
_FLOAT = re.compile(r"\.(?:f\d|bf16)")
_NUMBER = re.compile(r"-?\d+|0[xX][0-9a-fA-F]+")
_MEMORY = ("cp.async.cg.shared.global", "cp.async.ca.shared.global", "ld.global", "st.global",
           "ld.shared", "st.shared")


@dataclass
class Instruction:
    """One PTX instruction: optional guard (`%p1` / `!%p1`), opcode, operand texts."""
    guard: str | None
    opcode: str
    operands: list
    line: int


@dataclass
class Access:
    """One memory instruction as a thread executed it: `address` in bytes (shared addresses
    relative to the dynamic shared base), `size` the bytes it moves (for cp.async the src-size
    as well), `index` the instruction's position in the program, `visit` how many times that
    thread had reached it before."""
    opcode: str
    address: int
    size: int
    index: int
    visit: int
    src_size: int | None = None


@dataclass
class Program:
    """A parsed PTX kernel body: instructions, label positions, parameter names in order and
    the names of its shared-memory symbols."""
    instructions: list
    labels: dict
    params: list
    shared_symbols: set = field(default_factory=set)


def parse(ptx: str) -> Program:
    """The first .entry of `ptx` as a Program."""
    instructions, labels, params, shared = [], {}, [], set()
    in_body = False
    for number, raw in enumerate(ptx.splitlines(), 1):
        text = raw.split("//")[0].strip()
        found = _SHARED.match(raw)
        if found:
            shared.add(found.group(1))
        if not in_body:
            params += [name for _, name in _PARAM.findall(text)]
            in_body = text.startswith("{") and bool(params)
            continue
        label = _LABEL.match(text)
        if label:
            labels[label.group(1)] = len(instructions)
            continue
        if not text or text[0] in "{}." or not text.endswith(";"):
            continue
        guard = None
        if text.startswith("@"):
            guard, text = text[1:].split(None, 1)
        opcode, _, rest = text[:-1].strip().partition(" ")
        operands = [o.strip() for o in _split_operands(rest)]
        instructions.append(Instruction(guard, opcode, operands, number))
    return Program(instructions, labels, params, shared)


def _split_operands(text: str) -> list:
    """Operands split at top-level commas ({a, b} and [a + 0] stay whole)."""
    out, depth, current = [], 0, ""
    for char in text:
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        if char == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        out.append(current)
    return out


def _width(opcode: str) -> int:
    """The bit width of an integer opcode's type suffix (64 for .s64/.u64/.b64, else 32)."""
    for part in reversed(opcode.split(".")):
        found = re.fullmatch(r"[subf](\d+)", part)
        if found:
            return int(found.group(1))
    return 32


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class _Thread:
    """The register file of one thread and its evaluation of integer instructions."""

    def __init__(self, program: Program, special: dict, params: dict):
        self.program = program
        self.regs = dict(special)
        self.params = params

    def value(self, operand: str):
        """The operand's integer value, or None when unknown."""
        operand = operand.strip()
        if operand.startswith("%"):
            return self.regs.get(operand)
        if operand in self.program.shared_symbols:
            return 0
        return int(operand, 0) if _NUMBER.fullmatch(operand) else None

    def address(self, operand: str):
        """The byte address of a `[reg + imm]` operand, or None."""
        inner = operand.strip()[1:-1]
        base, _, offset = inner.partition("+")
        base_value = self.value(base)
        if base_value is None:
            return None
        return base_value + (self.value(offset) or 0 if offset.strip() else 0)

    def execute(self, ins: Instruction):
        """Evaluate one non-memory, non-branch instruction into its destination."""
        op, args = ins.opcode, ins.operands
        head = op.split(".")[0]
        if head == "ld" and ".param" in op:
            self.regs[args[0]] = self.params.get(args[1].strip("[] "))
            return
        if _FLOAT.search(op):
            self.regs[args[0]] = None
            return
        values = [self.value(a) for a in args[1:]]
        bits = _width(op)
        result = None
        if head == "setp" and None not in values:
            a, b = (_signed(v, bits) if ".s" in op else v & ((1 << bits) - 1) for v in values[:2])
            compare = op.split(".")[1]
            result = {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b,
                      "ne": a != b}.get(compare)
        elif head == "selp":
            if values[2] is not None:
                result = values[0] if values[2] else values[1]
        elif None not in values and values:
            result = _integer(head, op, values, bits)
        self.regs[args[0]] = result


def _integer(head: str, op: str, v: list, bits: int):
    """The result of an integer op on known operand values (None if not modelled)."""
    mask = (1 << bits) - 1
    if head == "mov":
        return v[0]
    if head == "cvt":
        target = op.split(".")[-2] if op.count(".") >= 2 else op.split(".")[-1]
        width = int(target[1:]) if target[1:].isdigit() else bits
        source = op.split(".")[-1]
        value = _signed(v[0], int(source[1:])) if source.startswith("s") else v[0]
        return value & ((1 << width) - 1)
    if head in ("mul", "mad"):
        if ".wide" in op:
            a, b = (_signed(x, 32) if ".s" in op else x & 0xFFFFFFFF for x in v[:2])
            product = (a * b) & 0xFFFFFFFFFFFFFFFF
            return (product + (v[2] if head == "mad" else 0)) & 0xFFFFFFFFFFFFFFFF
        if ".lo" not in op:
            return None
        return (v[0] * v[1] + (v[2] if head == "mad" else 0)) & mask
    operations = {"add": lambda: v[0] + v[1], "sub": lambda: v[0] - v[1],
                  "and": lambda: v[0] & v[1], "or": lambda: v[0] | v[1],
                  "xor": lambda: v[0] ^ v[1], "shl": lambda: v[0] << v[1],
                  "shr": lambda: ((_signed(v[0], bits) if ".s" in op else v[0] & mask)
                                  >> v[1]),
                  "bfe": lambda: ((v[0] & mask) >> v[1]) & ((1 << v[2]) - 1),
                  "min": lambda: min(_signed(v[0], bits), _signed(v[1], bits)),
                  "max": lambda: max(_signed(v[0], bits), _signed(v[1], bits)),
                  "div": lambda: _divide(v[0], v[1], bits, ".s" in op)[0],
                  "rem": lambda: _divide(v[0], v[1], bits, ".s" in op)[1]}
    if head not in operations or (head == "bfe" and ".s" in op):
        return None
    result = operations[head]()
    return None if result is None else result & mask


def _divide(a: int, b: int, bits: int, signed: bool) -> tuple:
    """PTX's integer (quotient, remainder): truncated toward zero; (None, None) for b == 0."""
    if signed:
        a, b = _signed(a, bits), _signed(b, bits)
    else:
        a, b = a & ((1 << bits) - 1), b & ((1 << bits) - 1)
    if b == 0:
        return None, None
    quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return quotient, a - b * quotient


def _vector_bytes(opcode: str) -> int:
    """Bytes moved by an ld/st opcode (`.v4.b32` -> 16)."""
    count = re.search(r"\.v(\d)", opcode)
    bits = _width(opcode)
    return (int(count.group(1)) if count else 1) * bits // 8


def run_thread(program: Program, tid: int, ctaid: tuple, params: dict,
               max_steps: int = 200_000, max_visits: int = 3) -> list:
    """The memory accesses of thread `tid` of block `ctaid` (x, y, z), with parameter values
    `params` (name -> int); stops at `ret`, at an unknown branch, after `max_steps`
    instructions, or once any instruction was reached `max_visits` times (loops)."""
    special = {"%tid.x": tid, "%tid.y": 0, "%tid.z": 0, "%ctaid.x": ctaid[0],
               "%ctaid.y": ctaid[1], "%ctaid.z": ctaid[2], "%laneid": tid % 32,
               "%warpid": tid // 32}
    thread = _Thread(program, special, params)
    visits, accesses, pc = {}, [], 0
    for _ in range(max_steps):
        if pc >= len(program.instructions):
            break
        ins = program.instructions[pc]
        visit = visits.get(pc, 0)
        if visit >= max_visits:
            break
        visits[pc] = visit + 1
        pc += 1
        if ins.guard is not None:
            flag = thread.value(ins.guard.lstrip("!"))
            if flag is None:
                if ins.opcode.startswith("bra"):
                    break
                taken = False
            else:
                taken = bool(flag) != ins.guard.startswith("!")
            if not taken:
                continue
        if ins.opcode.startswith("bra"):
            pc = program.labels[ins.operands[0]]
        elif ins.opcode == "ret" or ins.opcode == "exit":
            break
        elif ins.opcode.startswith(_MEMORY):
            accesses.extend(_access(thread, ins, pc - 1, visit))
        elif re.fullmatch(r"%\w+", ins.operands[0] if ins.operands else ""):
            thread.execute(ins)
    return accesses


def _access(thread: _Thread, ins: Instruction, index: int, visit: int) -> list:
    """The Access of one memory instruction (empty when its address is unknown)."""
    op = ins.opcode
    if op.startswith("cp.async"):
        shared, source = thread.address(ins.operands[0]), thread.address(ins.operands[1])
        size = thread.value(ins.operands[2])
        src = thread.value(ins.operands[3]) if len(ins.operands) > 3 else size
        return [] if None in (shared, source) else [
            Access("cp.async.shared", shared, size, index, visit, src),
            Access("cp.async.global", source, size, index, visit, src)]
    where = ins.operands[1] if op.startswith("ld") else ins.operands[0]
    if not where.startswith("["):
        return []
    address = thread.address(where)
    if address is None:
        return []
    kind = ("ld" if op.startswith("ld") else "st") + (".global" if ".global" in op else
                                                      ".shared")
    return [Access(kind, address, _vector_bytes(op), index, visit)]


def run_block(program: Program, threads: int, ctaid: tuple, params: dict,
              max_visits: int = 3) -> dict:
    """Every thread's accesses of one block: {(opcode, index, visit): {tid: Access}}, one
    entry per memory instruction executed (a warp-level instruction is that entry's 32 tids
    of one warp)."""
    out: dict = {}
    for tid in range(threads):
        for access in run_thread(program, tid, ctaid, params, max_visits=max_visits):
            out.setdefault((access.opcode, access.index, access.visit), {})[tid] = access
    return out


def global_sectors(addresses: list, size: int) -> int:
    """The 32-byte sectors that one warp's accesses of `size` bytes at `addresses` touch (16
    for 32 lanes x 16 B, fully coalesced)."""
    return len({byte // 32 for a in addresses for byte in range(a, a + size, 4)})


def shared_wavefronts(addresses: list, size: int) -> int:
    """Shared-memory wavefronts of one warp's accesses of `size` bytes (4 B words in 32
    banks): lanes go in phases of 128 / size (8 lanes for 16 B, all 32 for 4 B), and a phase
    takes as many wavefronts as the most distinct words any one bank serves in it. 32 lanes x
    16 B conflict-free is 4; each extra wavefront is a bank conflict."""
    phase = max(1, min(32, 128 // max(size, 1)))
    total = 0
    for start in range(0, len(addresses), phase):
        banks: dict = {}
        for address in addresses[start:start + phase]:
            for word in range(address // 4, (address + size + 3) // 4):
                banks.setdefault(word % 32, set()).add(word)
        total += max((len(words) for words in banks.values()), default=0)
    return total
