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


def _longest(spans: list) -> tuple | None:
    return max(spans, key=lambda s: s[1] - s[0], default=None)


def ptx_loop(ptx: str) -> list:
    """The instructions (stripped lines, no labels, comments or directives) of the PTX's main
    loop; empty when it has none."""
    lines = ptx.splitlines()
    labels, spans = {}, []
    for i, line in enumerate(lines):
        label = _PTX_LABEL.match(line)
        if label:
            labels[label.group(1)] = i
        back = _PTX_BACK.search(line)
        if back and labels.get(back.group(1), i) < i:
            spans.append((labels[back.group(1)], i))
    span = _longest(spans)
    if span is None:
        return []
    body = (line.strip() for line in lines[span[0]:span[1] + 1])
    return [line for line in body if line and not line.startswith(("//", "$", ".", "{", "}"))]


def sass_loop(sass: str) -> list:
    """The instructions of the SASS's main loop (nvdisasm text); empty when it has none."""
    labels, instructions, pending = {}, [], []
    for line in sass.splitlines():
        label = _SASS_LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        found = _SASS_INSTRUCTION.match(line)
        if found:
            address = int(found.group(1), 16)
            labels.update((name, address) for name in pending)
            pending = []
            instructions.append((address, found.group(2)))
    spans = []
    for address, text in instructions:
        back = _SASS_BACK.search(text)
        if back and labels.get(back.group(1), address) < address:
            spans.append((labels[back.group(1)], address))
    span = _longest(spans)
    if span is None:
        return []
    return [text for address, text in instructions if span[0] <= address <= span[1]]


def opcodes(instructions: list) -> Counter:
    """How many times each opcode (with its modifiers, without a guard predicate) occurs."""
    return Counter(_PREDICATE.sub("", text).split()[0].rstrip(";") for text in instructions)
