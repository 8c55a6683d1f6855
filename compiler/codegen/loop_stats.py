"""The instructions of a kernel's main loop, read from PTX or SASS text and counted by opcode.

The main loop is the longest span from a label to a branch back to it. PTX is ptxas's input
(ours or Triton's dumped `.ptx`), SASS is nvdisasm's text (`compiler.codegen.sass`), so both
compilers' loops are read by the same code: bench/attention_loops.py prints the comparison,
tests/cpu/test_attention_hopper.py checks it.
"""
from __future__ import annotations

import re
from collections import Counter

_PTX_LABEL = re.compile(r"^(\$L__BB\d+_\d+):")
_PTX_BACK = re.compile(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);")
_SASS_LABEL = re.compile(r"\s*(\.L_x_\d+):")
_SASS_INSTRUCTION = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_SASS_BACK = re.compile(r"BRA\s.*`\((\.L_x_\d+)\)")
_PREDICATE = re.compile(r"^@!?U?P\w+\s+")


def _main_loop_span(instructions: list, back_branch: re.Pattern) -> tuple | None:
    """`instructions`: (labels just before it, text) in program order. The (first, last)
    indices from the label that a later branch (`back_branch`'s group 1) jumps back to,
    through that branch, for the longest such span; None without one."""
    where, best = {}, None
    for i, (labels, text) in enumerate(instructions):
        where.update((name, i) for name in labels)
        back = back_branch.search(text)
        if back and where.get(back.group(1), i) < i:
            span = (where[back.group(1)], i)
            if best is None or span[1] - span[0] > best[1] - best[0]:
                best = span
    return best


def _main_loop(instructions: list, back_branch: re.Pattern) -> list:
    """The texts of `instructions`' main loop (see `_main_loop_span`)."""
    best = _main_loop_span(instructions, back_branch)
    return [] if best is None else [text for _, text in instructions[best[0]:best[1] + 1]]


def _instructions(lines, label: re.Pattern, instruction) -> list:
    """(labels just before it, text) for each instruction `instruction(line)` finds."""
    out, pending = [], []
    for line in lines:
        found = label.match(line)
        if found:
            pending.append(found.group(1))
            continue
        text = instruction(line)
        if text:
            out.append((pending, text))
            pending = []
    return out


def _ptx_instruction(line: str) -> str | None:
    text = line.strip()
    return None if not text or text.startswith(("//", "$", ".", "{", "}")) else text


def _sass_instruction(line: str) -> str | None:
    found = _SASS_INSTRUCTION.match(line)
    return found.group(2) if found else None


def ptx_loop(ptx: str) -> list:
    """The instructions (stripped lines, no labels, comments or directives) of the PTX's main
    loop; empty when it has none."""
    return _main_loop(_instructions(ptx.splitlines(), _PTX_LABEL, _ptx_instruction),
                      _PTX_BACK)


def sass_loop(sass: str) -> list:
    """The instructions of the SASS's main loop (nvdisasm text); empty when it has none."""
    return _main_loop(_instructions(sass.splitlines(), _SASS_LABEL, _sass_instruction),
                      _SASS_BACK)


def sass_loop_controls(sass_hex: str) -> list:
    """(text, ControlCode) for each instruction of the main loop of an nvdisasm `-hex` listing
    (`compiler.codegen.sass.disassemble(..., hex_words=True)`); empty without a loop. The sum
    of the stalls is the loop's issue time for one warp that never waits on a scoreboard."""
    from .sass import control_codes
    codes = {index: (text, code) for index, text, code in control_codes(sass_hex)}
    lines = sass_hex.splitlines()
    instructions, order, pending = [], [], []
    for i, line in enumerate(lines):
        found = _SASS_LABEL.match(line)
        if found:
            pending.append(found.group(1))
        elif i in codes:
            instructions.append((pending, codes[i][0]))
            order.append(codes[i])
            pending = []
    best = _main_loop_span(instructions, _SASS_BACK)
    return [] if best is None else order[best[0]:best[1] + 1]


def opcodes(instructions: list) -> Counter:
    """How many times each opcode (with its modifiers, without a guard predicate) occurs."""
    return Counter(_PREDICATE.sub("", text).split()[0].rstrip(";") for text in instructions)
